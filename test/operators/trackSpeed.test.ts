/**
 * Speeds and statistics of the `track` operator are physical (issue 18 item 5): fed detections
 * whose floor positions carry the shipped model's measured floor error (`floorErrorProcess` of
 * training/ts/study/speed.ts: 0.65 m rms per axis, a bias that wanders and jumps, generated from
 * a fixed seed), a person lying still is reported still and a walker at about its speed: with the
 * activity probabilities a v2 model gives (the tracker's first stationary test), and without them
 * (the displacement rule).
 */
import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, toArray } from 'rxjs';
import { track } from '../../operators/track.js';
import type { MultiPersonTracker } from '../../src/pose/tracker.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { Rng } from '../../src/sim/rng.js';
import { floorErrorProcess } from '../../training/ts/study/speed.js';

const T0 = 1_767_225_600_000;
/** The live pipeline's pose rate: 12.5 frames/s. */
const DT_S = 0.08;

/** A detection at true floor position (x, y) plus the model's error `e`; a lying person's box; the model's P(walking) when given. */
function detection(x: number, y: number, e: { x: number; y: number }, walking?: number): PersonPose {
  const cx = 100 + 60 * x;
  const cy = 300 + 10 * y;
  const keypoints = new Float32Array(51);
  for (let k = 0; k < 17; k++) {
    keypoints[k * 3] = cx - 60 + (120 * k) / 16;
    keypoints[k * 3 + 1] = cy;
    keypoints[k * 3 + 2] = 0.9;
  }
  const p: PersonPose = { slot: 0, confidence: 0.9, keypoints, bbox: Float32Array.of(cx - 60, cy - 15, 120, 30), floor: { x: x + e.x, y: y + e.y } };
  if (walking !== undefined) {
    // ACTIVITIES order: standing, sitting, lying, walking, falling.
    const rest = (1 - walking) / 4;
    const probabilities = Float32Array.of(rest, rest, rest, walking, rest);
    p.modelActivity = { activity: walking > rest ? 'walking' : 'lying', confidence: Math.max(walking, rest), probabilities };
  }
  return p;
}

/**
 * Frames of one person at `path(t)` (t in s) for `seconds`, its floor seen through the model's
 * error of `seed`; with `walking(t)`, the model's probability that it walks (a v2 model's
 * activity head, uncertain: drawn around the value given).
 */
function frames(seconds: number, seed: number, path: (t: number) => { x: number; y: number }, walking?: (t: number) => number): PoseFrame[] {
  const rng = new Rng(seed);
  const err = floorErrorProcess(rng);
  const out: PoseFrame[] = [];
  for (let k = 0; k * DT_S <= seconds; k++) {
    const t = k * DT_S;
    const p = path(t);
    const w = walking ? Math.min(1, Math.max(0, walking(t) + rng.gaussian(0, 0.1))) : undefined;
    out.push({
      frameId: k,
      time: T0 + Math.round(t * 1000),
      sourceId: 'sim',
      environmentId: 'room',
      persons: [detection(p.x, p.y, err(DT_S), w)],
      processingMs: 1,
      modelVersion: 'test',
      csiQuality: 1,
    });
  }
  return out;
}

/** Runs frames through the `track` operator; returns every reported speed (m/s) and the tracker. */
async function tracked(input: PoseFrame[]): Promise<{ speeds: number[]; tracker: MultiPersonTracker }> {
  let tracker: MultiPersonTracker | undefined;
  const out = await lastValueFrom(from(input).pipe(track({ onTracker: (_env, t) => (tracker = t) }), toArray()));
  const speeds = out.flatMap((f) => f.persons.map((p) => Math.hypot(p.velocity!.x, p.velocity!.y)));
  return { speeds, tracker: tracker! };
}

const quantile = (v: number[], q: number): number => {
  const s = v.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

describe('track: physical speeds through the model floor error, with the model activity probabilities', () => {
  it('a person lying still for 2 minutes is reported still: speed 0, no distance, no time moving (5 seeds)', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      // The model is fairly sure nobody walks (about 0.05 of walking).
      const { speeds, tracker } = await tracked(
        frames(
          120,
          seed,
          () => ({ x: 2.5, y: 3 }),
          () => 0.05,
        ),
      );
      expect(speeds.length).toBeGreaterThan(1400);
      // As it was: a median 0.5-0.6 m/s, and 0.3 m/s or more about 80% of the time.
      expect(quantile(speeds, 0.5), `seed ${seed}`).toBe(0);
      expect(speeds.filter((s) => s >= 0.3).length / speeds.length, `seed ${seed}`).toBeLessThan(0.01);
      const [rec] = tracker.tracks();
      expect(rec!.statisticsUnit).toBe('m');
      // As it was: 120-140 m and 107-111 s moving.
      expect(rec!.statistics.movementDistance, `seed ${seed}`).toBeLessThan(0.5);
      expect(rec!.statistics.timeMoving, `seed ${seed}`).toBeLessThan(2);
      expect(rec!.statistics.timeStationary, `seed ${seed}`).toBeGreaterThan(118);
    }
  });

  it('a walker at 1 m/s through the same error is reported at about 1 m/s, and its distance is about what it walked', async () => {
    for (const seed of [1, 2, 3]) {
      // 20 s along a 20 m corridor; the model gives walking about 0.6.
      const { speeds, tracker } = await tracked(
        frames(
          20,
          seed,
          (t) => ({ x: 1 + t, y: 2 }),
          () => 0.6,
        ),
      );
      // Past the first 3 s: the motion filter, tuned to the model's error, takes its time.
      const walking = speeds.slice(Math.round(3 / DT_S));
      expect(quantile(walking, 0.5), `seed ${seed}`).toBeGreaterThan(0.85);
      expect(quantile(walking, 0.5), `seed ${seed}`).toBeLessThan(1.15);
      const s = tracker.tracks()[0]!.statistics;
      expect(s.movementDistance, `seed ${seed}`).toBeGreaterThan(17);
      expect(s.movementDistance, `seed ${seed}`).toBeLessThan(22);
      expect(s.timeMoving, `seed ${seed}`).toBeGreaterThan(17);
    }
  });

  it('lying still for 30 s, then getting up and walking at 1 m/s: 0 while lying, about 1 m/s while walking', async () => {
    const walkFrom = 30;
    const { speeds } = await tracked(
      frames(
        40,
        11,
        (t) => ({ x: 2 + Math.max(0, t - walkFrom), y: 3 }),
        (t) => (t < walkFrom ? 0.05 : 0.6),
      ),
    );
    expect(quantile(speeds.slice(0, Math.round(walkFrom / DT_S)), 0.5)).toBe(0);
    const walking = speeds.slice(Math.round((walkFrom + 3) / DT_S));
    expect(quantile(walking, 0.5)).toBeGreaterThan(0.8);
    expect(quantile(walking, 0.5)).toBeLessThan(1.2);
  });
});

describe('track: physical speeds through the model floor error, without activity probabilities (the displacement rule)', () => {
  it('a person lying still for 2 minutes: median speed 0, moving a third of the time at most (5 seeds)', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { speeds, tracker } = await tracked(frames(120, seed, () => ({ x: 2.5, y: 3 })));
      // As it was: a median 0.5-0.6 m/s, 0.3 m/s or more about 80% of the time, about 1 m/s on average.
      expect(quantile(speeds, 0.5), `seed ${seed}`).toBe(0);
      expect(speeds.filter((s) => s >= 0.3).length / speeds.length, `seed ${seed}`).toBeLessThan(0.45);
      const s = tracker.tracks()[0]!.statistics;
      expect(s.timeMoving / 120, `seed ${seed}`).toBeLessThan(0.5);
      expect(s.averageSpeed, `seed ${seed}`).toBeLessThan(0.3);
    }
  });

  it('a walker at 1 m/s: about 1 m/s', async () => {
    for (const seed of [1, 2, 3]) {
      const { speeds } = await tracked(frames(20, seed, (t) => ({ x: 1 + t, y: 2 })));
      const walking = speeds.slice(Math.round(3 / DT_S));
      expect(quantile(walking, 0.5), `seed ${seed}`).toBeGreaterThan(0.85);
      expect(quantile(walking, 0.5), `seed ${seed}`).toBeLessThan(1.15);
    }
  });
});
