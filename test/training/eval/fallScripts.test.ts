import { describe, expect, it } from 'vitest';
import { fallScenarioPeople, walkDistance, walkSeconds, FALL_ROLES, NEGATIVE_ROLES, type FallRole } from '../../../training/ts/eval/fallScripts.js';
import { Camera } from '../../../src/pose/camera.js';
import { Rng } from '../../../src/sim/rng.js';
import { CsiSimulator, type GroundTruth } from '../../../src/sim/simulator.js';

const ROOM = { width: 7.4, depth: 6.6, height: 2.8, wallReflection: 0.4, floorReflection: 0.5, ceilingReflection: 0.3 };
const CAMERA = { position: { x: 3.7, y: 0.05, z: 1.9 }, yaw: Math.PI / 2, pitch: -0.2, focalPx: 320 };

/** Simulates scripted people for `seconds` and returns every sample's ground truth. */
function simulate(people: ReturnType<typeof fallScenarioPeople>, seconds: number): GroundTruth[] {
  const sim = new CsiSimulator({
    seed: 3,
    nSub: 30,
    nRx: 1,
    nTx: 1,
    impairments: false,
    people: people.map((p) => p.spec),
    scenario: { room: ROOM, camera: CAMERA },
  });
  const out: GroundTruth[] = [];
  for (let i = 0; i < seconds * sim.rateHz; i++) out.push(sim.next().truth);
  return out;
}

describe('walk kinematics helpers', () => {
  it('walkDistance ramps up at 1.2 m/s^2, then cruises', () => {
    expect(walkDistance(0.5, 1.2)).toBeCloseTo(0.15, 12);
    // 1 s ramp covers 0.6 m, then 1.2 m/s.
    expect(walkDistance(2, 1.2)).toBeCloseTo(0.6 + 1.2, 12);
    expect(walkSeconds(2.4, 1.2)).toBeCloseTo(3, 12);
  });
});

describe('fallScenarioPeople', () => {
  it('is deterministic for a seed', () => {
    const a = fallScenarioPeople(ROOM, new Rng(11), 'walk_fall', 2, new Camera(CAMERA));
    const b = fallScenarioPeople(ROOM, new Rng(11), 'walk_fall', 2, new Camera(CAMERA));
    expect(a).toEqual(b);
    expect(a[0]!.role).toBe('walk_fall');
    expect(a.slice(1).every((p) => NEGATIVE_ROLES.includes(p.role))).toBe(true);
  });

  it('refuses impossible companion counts', () => {
    expect(() => fallScenarioPeople(ROOM, new Rng(1), 'walk', 4)).toThrow(RangeError);
  });

  for (const role of FALL_ROLES) {
    it(`${role}: the person falls when scheduled, lands inside the room and in the camera's view`, () => {
      const people = fallScenarioPeople(ROOM, new Rng(21), role, 0, new Camera(CAMERA));
      expect(people).toHaveLength(1);
      const p = people[0]!;
      expect(p.role).toBe(role);
      expect(p.fallAt).not.toBeNull();
      const truths = simulate(people, p.fallAt! + 4);
      const start = truths[0]!.time;
      const falls = truths.flatMap((t) => t.events.filter((e) => e.type === 'fall_start'));
      expect(falls).toHaveLength(1);
      expect((falls[0]!.time - start) / 1000).toBeCloseTo(p.fallAt!, 1);
      // Walking right up to the fall (it happens mid-walk or, for stand_fall, after standing).
      const before = truths[Math.round((p.fallAt! - 0.2) * 100)]!.persons[0]!;
      expect(before.activity).toBe(role === 'stand_fall' ? 'standing' : 'walking');
      const last = truths[truths.length - 1]!.persons[0]!;
      expect(last.activity).toBe('lying');
      const kp = last.keypoints3d;
      for (let k = 0; k < 17; k++) {
        expect(kp[3 * k]!).toBeGreaterThan(0);
        expect(kp[3 * k]!).toBeLessThan(ROOM.width);
        expect(kp[3 * k + 1]!).toBeGreaterThan(0);
        expect(kp[3 * k + 1]!).toBeLessThan(ROOM.depth);
      }
      expect(last.visible.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(15);
    });
  }

  const ends: Array<[FallRole, string]> = [
    ['walk_sit', 'sitting'],
    ['walk_lie', 'lying'],
    ['walk', 'walking'],
    ['sit_stand', 'sitting, then walking'],
  ];
  for (const [role, activity] of ends) {
    it(`${role}: never falls, seen by the camera throughout, and ends ${activity}`, () => {
      const people = fallScenarioPeople(ROOM, new Rng(5), role, 0, new Camera(CAMERA));
      expect(people[0]!.role).toBe(role);
      expect(people[0]!.fallAt).toBeNull();
      const script = people[0]!.spec.script!;
      // Long enough for the last action to have happened.
      const seconds = role === 'walk' ? 14 : Math.ceil(script[script.length - 1]!.at + 1.5);
      const truths = simulate(people, seconds);
      expect(truths.some((t) => t.events.some((e) => e.type === 'fall_start'))).toBe(false);
      const seen = truths.map((t) => t.persons[0]!.visible.reduce((a, b) => a + b, 0));
      expect(Math.min(...seen)).toBeGreaterThanOrEqual(15);
      const acts = truths.map((t) => t.persons[0]!.activity);
      if (role === 'sit_stand') {
        const sat = acts.indexOf('sitting');
        expect(sat).toBeGreaterThan(0);
        expect(acts.slice(sat).includes('walking')).toBe(true);
      } else expect(acts[acts.length - 1]).toBe(activity);
    });
  }

  it('keeps everyone apart: planned starts at least 1 m from each other', () => {
    for (let seed = 0; seed < 5; seed++) {
      const people = fallScenarioPeople(ROOM, new Rng(seed), 'stand_fall', 3, new Camera(CAMERA));
      for (let i = 0; i < people.length; i++)
        for (let j = i + 1; j < people.length; j++)
          expect(Math.hypot(people[i]!.spec.x - people[j]!.spec.x, people[i]!.spec.y - people[j]!.spec.y)).toBeGreaterThanOrEqual(1);
    }
  });
});
