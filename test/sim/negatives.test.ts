/**
 * Hard negatives and people who come and go (docs/simulator.md "Bends, and people who come and
 * go"): the `bend` script step, and PersonSpec.enterAt / leaveAt.
 */
import { describe, expect, it } from 'vitest';
import { KP } from '../../src/sim/skeleton.js';
import { BEND_DURATION_S, ENTRY_SPEED, type PersonSpec } from '../../src/sim/scenario.js';
import { CsiSimulator, type GroundTruth, type SimOptions, type TruthPerson } from '../../src/sim/simulator.js';

const T0 = Date.UTC(2026, 0, 1);

/** Every tick's truth for `seconds` (packets never lost). */
function run(opts: SimOptions, seconds: number): GroundTruth[] {
  const sim = new CsiSimulator({ ...opts, impairments: { ...(opts.impairments || {}), lossRate: 0 } });
  return Array.from({ length: Math.round(seconds * 100) }, () => sim.next().truth);
}

/** Trunk pitch from the vertical (mid-hip to mid-shoulder), degrees. */
function trunkPitch(p: TruthPerson): number {
  const k = p.keypoints3d;
  const mid = (a: number, b: number, c: number): number => 0.5 * (k[3 * a + c]! + k[3 * b + c]!);
  const v = [0, 1, 2].map((c) => mid(KP.L_SHOULDER, KP.R_SHOULDER, c) - mid(KP.L_HIP, KP.R_HIP, c));
  return (Math.acos(v[2]! / Math.hypot(v[0]!, v[1]!, v[2]!)) * 180) / Math.PI;
}

const z = (p: TruthPerson, kp: number): number => p.keypoints3d[3 * kp + 2]!;

describe('bend: a hard negative for falls', () => {
  it('pitches the trunk forward to the angle, holds about a second, straightens; standing throughout, no fall', () => {
    const truths = run({ seed: 2, people: [{ x: 3, y: 2.5, script: [{ at: 1, action: 'bend' }] }] }, 6);
    const p = truths.map((t) => t.persons[0]!);
    const pitch = p.map(trunkPitch);
    expect(Math.max(...pitch.slice(0, 100))).toBeLessThan(5);
    // The default: 70 degrees, held 1 s between 0.9 s down and 0.9 s up.
    const held = pitch.filter((a) => Math.abs(a - 70) < 0.5).length;
    expect(Math.max(...pitch)).toBeCloseTo(70, 1);
    expect(held).toBeGreaterThanOrEqual(100);
    expect(held).toBeLessThan(115);
    const above30 = pitch.filter((a) => a > 30).length / 100;
    expect(above30).toBeGreaterThan(1.5);
    expect(above30).toBeLessThan(BEND_DURATION_S);
    // Straight again after the bend.
    expect(Math.max(...pitch.slice(100 + Math.ceil(BEND_DURATION_S * 100) + 5))).toBeLessThan(5);
    // Reaching down: hands near the knees' height, feet on the floor, the pelvis high (unlike a fall).
    const bent = p[Math.round((1 + BEND_DURATION_S / 2) * 100)]!;
    expect(z(bent, KP.L_WRIST)).toBeLessThan(0.6);
    for (const q of p) {
      expect(q.activity).toBe('standing');
      expect(q.fallOnset).toBeUndefined();
      expect(Math.min(z(q, KP.L_ANKLE), z(q, KP.R_ANKLE))).toBeLessThan(0.1);
      expect(0.5 * (z(q, KP.L_HIP) + z(q, KP.R_HIP))).toBeGreaterThan(0.7);
    }
    expect(truths.flatMap((t) => t.events)).toEqual([]);
  });

  it('takes an angle and a duration, stops a walk first, and checks their ranges', () => {
    const truths = run(
      {
        seed: 2,
        people: [
          {
            x: 1,
            y: 2.5,
            script: [
              { at: 0, action: 'walk', to: { x: 5, y: 2.5 } },
              { at: 1, action: 'bend', angle: 85, duration: 4 },
            ],
          },
        ],
      },
      8,
    );
    const pitch = truths.map((t) => trunkPitch(t.persons[0]!));
    expect(Math.max(...pitch)).toBeCloseTo(85, 1);
    expect(pitch.filter((a) => a > 45).length / 100).toBeGreaterThan(2.5);
    const activities = truths.flatMap((t) => t.events).map((e) => [e.type, e.activity]);
    expect(activities).toEqual([
      ['activity_change', 'walking'],
      ['activity_change', 'standing'],
    ]);
    // It stopped before bending: no floor movement while the trunk is pitched.
    const bentAt = pitch.findIndex((a) => a > 10);
    const f0 = truths[bentAt]!.persons[0]!.floor;
    const f1 = truths[bentAt + 200]!.persons[0]!.floor;
    expect(Math.hypot(f1.x - f0.x, f1.y - f0.y)).toBeLessThan(0.01);
    const bad =
      (step: object): (() => CsiSimulator) =>
      () =>
        new CsiSimulator({ people: [{ x: 2, y: 2, script: [{ at: 1, action: 'bend', ...step }] }] });
    expect(bad({ duration: 1 })).toThrow(/bend duration must be 1\.5\.\.10 s/);
    expect(bad({ angle: 100 })).toThrow(/bend angle must be 30\.\.90 degrees/);
  });
});

describe('people who come and go', () => {
  const STAY: PersonSpec = { x: 1.5, y: 1.5, script: [] };
  const VISITOR: PersonSpec = { x: 2, y: 2.5, enterAt: 2, leaveAt: 12, script: [] };
  const ENTRY = { x: 5, y: 4.6 }; // the default room's: (width - 1, depth - margin)

  it('is not in the room before enterAt, walks in from the entry, walks out at leaveAt and is gone', () => {
    const truths = run({ seed: 3, people: [STAY, VISITOR] }, 20);
    const at = (s: number): GroundTruth => truths[Math.round(s * 100)]!;
    expect(at(1.99).personCount).toBe(1);
    expect(at(1.99).persons.map((p) => p.id)).toEqual([0]);
    const enter = truths.findIndex((t) => t.personCount === 2);
    expect(enter).toBe(200);
    expect(at(2).events).toContainEqual({ type: 'enter', personId: 1, time: T0 + 2000 });
    const first = at(2).persons[1]!;
    expect(first.floor.x).toBeCloseTo(ENTRY.x, 6);
    expect(first.floor.y).toBeCloseTo(ENTRY.y, 6);
    expect(first.velocity).toEqual({ x: 0, y: 0 });
    expect(first.activity).toBe('walking');
    // At their place after about distance / ENTRY_SPEED (plus speeding up and braking).
    const walkS = Math.hypot(ENTRY.x - VISITOR.x, ENTRY.y - VISITOR.y) / ENTRY_SPEED;
    const home = at(2 + walkS + 2).persons[1]!;
    expect(Math.hypot(home.floor.x - VISITOR.x, home.floor.y - VISITOR.y)).toBeLessThan(0.06);
    expect(home.activity).toBe('standing');
    expect(at(11.99).persons[1]!.activity).toBe('standing');
    expect(at(12.5).persons[1]!.activity).toBe('walking');
    const leave = truths.findIndex((t, i) => i > enter && t.personCount === 1);
    expect(leave / 100).toBeGreaterThan(12 + walkS - 0.5);
    expect(leave / 100).toBeLessThan(12 + walkS + 2.5);
    expect(truths[leave]!.events).toContainEqual({ type: 'leave', personId: 1, time: T0 + leave * 10 });
    const last = truths[leave - 1]!.persons[1]!;
    expect(Math.hypot(last.floor.x - ENTRY.x, last.floor.y - ENTRY.y)).toBeLessThan(0.1);
    for (const t of truths.slice(leave)) expect(t.persons.map((p) => p.id)).toEqual([0]);
  });

  it.each([['ideal'], ['room']] as const)('out of the room means no body at all: the same CSI as without the visitor (%s)', (realism) => {
    const opts = (people: PersonSpec[]): SimOptions => ({ seed: 5, people, realism, impairments: { lossRate: 0 } });
    const [alone, visited] = [new CsiSimulator(opts([STAY])), new CsiSimulator(opts([STAY, { ...VISITOR, enterAt: 1, leaveAt: 3 }]))];
    let same = 0;
    let differs = 0;
    let out = 0;
    for (let i = 0; i < 1200; i++) {
      const [a, v] = [alone.next(), visited.next()];
      const eq = Buffer.from(a.frame.csi.buffer).equals(Buffer.from(v.frame.csi.buffer));
      if (v.truth.personCount === 1) {
        expect(eq).toBe(true);
        same++;
        if (i > 300) out++;
      } else if (!eq) differs++;
    }
    // Compared before and after the visit, and the visit did change the channel.
    expect(same).toBeGreaterThan(600);
    expect(out).toBeGreaterThan(300);
    expect(differs).toBeGreaterThan(100);
  });

  it('stands up to leave, walks around the others, and checks its times and the entry', () => {
    const sitter: PersonSpec = { x: 2, y: 2, enterAt: 0, leaveAt: 8, script: [{ at: 4, action: 'sit' }] };
    const truths = run({ seed: 4, people: [sitter, { x: 3.5, y: 3.5, script: [] }] }, 18);
    const changes = truths
      .flatMap((t) => t.events)
      .filter((e) => e.personId === 0)
      .map((e) => (e.type === 'activity_change' ? e.activity : e.type));
    expect(changes).toEqual(['enter', 'walking', 'standing', 'sitting', 'standing', 'walking', 'standing', 'leave']);
    // Never closer than the spacing people keep to the one standing in the way.
    for (const t of truths) {
      if (t.personCount < 2) continue;
      const [a, b] = t.persons;
      expect(Math.hypot(a!.floor.x - b!.floor.x, a!.floor.y - b!.floor.y)).toBeGreaterThan(0.4);
    }
    const sim = (p: Partial<PersonSpec>, entry?: { x: number; y: number }) => () =>
      new CsiSimulator({ people: [{ x: 2, y: 2, ...p }], ...(entry ? { scenario: { entry } } : {}) });
    expect(sim({ enterAt: -1 })).toThrow(/enterAt must be a number of seconds >= 0/);
    expect(sim({ enterAt: 5, leaveAt: 5 })).toThrow(/leaveAt must be .* after enterAt/);
    expect(sim({ enterAt: 1 }, { x: 0.1, y: 2 })).toThrow(/entry must be inside the walls' margin/);
    // A custom entry: appears there.
    const t = run({ seed: 1, people: [{ x: 2, y: 2, enterAt: 0 }], scenario: { entry: { x: 0.5, y: 1 } } }, 0.01)[0]!;
    expect(t.persons[0]!.floor).toEqual({ x: 0.5, y: 1 });
  });
});
