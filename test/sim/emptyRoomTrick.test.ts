/**
 * Issue 18, item 2: "The simulator flatters in one place. Its static channel is ideal, so 'window
 * mean minus a fitted empty-room model' finds still people in 0.32 s. No real room allows this."
 *
 * The trick (emptyRoomTrick.ts): fit the empty room's mean channel from the first 5 s of an
 * empty-room recording, then score each 0.32 s window (32 packets at 100 Hz) by
 * |window mean - model|^2 / |model|^2, every packet aligned to the model first (common phase,
 * phase slope across subcarriers, complex gain: what sanitisation removes). Windows start every
 * 10 s from 20 s to 120 s after the recording began, in the same seeded room once empty and once
 * with one still person (standing, sitting or lying anywhere at least 1 m from the walls; no
 * script: they hold still, breathing). Six rooms (seeds), 66 windows of each class.
 *
 * Measured on this commit: 'ideal' separates every window (AUC 1.000; the empty room's scores stay
 * at or under 6.3e-4, median 1.2e-4, the person's at or above 1.15e-3, median 3.5e-3); 'room' does
 * not (AUC 0.72): 15 to 115 s after its recording the empty room scores 6.9e-3 (median, up to
 * 2.3e-2), as much as a still person there (median 1.0e-2, from 3.6e-3): its static channel has
 * wandered by as much as a still person changes it.
 */
import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { Rng } from '../../src/sim/rng.js';
import type { PersonSpec } from '../../src/sim/scenario.js';
import { CsiSimulator, type SimOptions } from '../../src/sim/simulator.js';
import { auc, fitEmptyModel, trickScore } from './emptyRoomTrick.js';

const RATE = 100;
const CALIBRATION_S = 5;
const WINDOW = 32; // 0.32 s
const FIRST_S = 20;
const LAST_S = 120;
const EVERY_S = 10;
const SEEDS = [1, 2, 3, 4, 5, 6];

/** Scores of the windows of one recording; fits the model from its first seconds when none is given. */
function record(opts: SimOptions, model: Float64Array | null): { model: Float64Array; scores: number[] } {
  const sim = new CsiSimulator({ ...opts, rateHz: RATE });
  const calibration: CsiFrame[] = [];
  const scores: number[] = [];
  let window: CsiFrame[] = [];
  let next = FIRST_S;
  for (;;) {
    const { frame, truth } = sim.next();
    const t = truth.seq / RATE;
    if (t < CALIBRATION_S) {
      calibration.push(frame);
      continue;
    }
    model ??= fitEmptyModel(calibration);
    if (t < next) continue;
    window.push(frame);
    if (window.length < WINDOW) continue;
    scores.push(trickScore(model, window));
    window = [];
    next += EVERY_S;
    if (next > LAST_S) return { model, scores };
  }
}

/** A still person somewhere in the room, from a test stream of its own. */
function stillPerson(seed: number): PersonSpec {
  const r = new Rng(1000 + seed);
  return {
    x: r.uniform(1, 5),
    y: r.uniform(1, 4),
    heading: r.uniform(-Math.PI, Math.PI),
    activity: (['standing', 'sitting', 'lying'] as const)[r.int(0, 2)],
    script: [],
  };
}

function trial(realism: 'ideal' | 'room'): { empty: number[]; person: number[] } {
  const empty: number[] = [];
  const person: number[] = [];
  for (const seed of SEEDS) {
    const e = record({ seed, people: 0, realism }, null);
    // The same room (seed) at the same times, the model from its empty recording.
    const p = record({ seed, people: [stillPerson(seed)], realism }, e.model);
    empty.push(...e.scores);
    person.push(...p.scores);
  }
  return { empty, person };
}

describe('the empty-room subtraction trick on 0.32 s windows', () => {
  it("finds a still person in every window of the 'ideal' room, and no longer in the 'room' one", () => {
    const ideal = trial('ideal');
    const room = trial('room');
    const n = SEEDS.length * ((LAST_S - FIRST_S) / EVERY_S + 1);
    for (const t of [ideal, room]) {
      expect(t.empty).toHaveLength(n);
      expect(t.person).toHaveLength(n);
    }
    const aucIdeal = auc(ideal.person, ideal.empty);
    const aucRoom = auc(room.person, room.empty);
    // Ideal: a threshold separates every window (today's flattering stream).
    expect(aucIdeal).toBe(1);
    expect(Math.min(...ideal.person)).toBeGreaterThan(Math.max(...ideal.empty));
    // Room: the empty room's own wander reaches a still person's signature; the trick is little
    // better than a coin (measured 0.72).
    expect(aucRoom).toBeLessThan(0.8);
    // Not because the person vanished: their windows score as high as in the ideal room...
    const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
    expect(median(room.person)).toBeGreaterThan(median(ideal.person));
    // ...but the empty room, minutes after its recording, scores higher still: an order of
    // magnitude above the ideal empty room.
    expect(median(room.empty)).toBeGreaterThan(10 * median(ideal.empty));
  }, 300_000);
});
