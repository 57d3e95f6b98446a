import { describe, expect, it } from 'vitest';
import { KP, NUM_KEYPOINTS, RIGID_BONES, SCATTERERS_PER_BODY, SCATTER_WEIGHTS, Body, bodyDims } from '../../src/sim/skeleton.js';
import { CsiSimulator, type SimSample } from '../../src/sim/simulator.js';
import type { PersonSpec } from '../../src/sim/scenario.js';

const T0 = Date.UTC(2026, 0, 1);

function run(people: PersonSpec[], seconds: number, rateHz = 100): SimSample[] {
  const sim = new CsiSimulator({ seed: 5, people, rateHz, impairments: false });
  const out: SimSample[] = [];
  const n = Math.round(seconds * rateHz);
  for (let i = 0; i <= n; i++) out.push(sim.next());
  return out;
}

function boneLength(kp: Float32Array, a: number, b: number): number {
  return Math.hypot(kp[3 * a]! - kp[3 * b]!, kp[3 * a + 1]! - kp[3 * b + 1]!, kp[3 * a + 2]! - kp[3 * b + 2]!);
}

function z(kp: Float32Array, i: number): number {
  return kp[3 * i + 2]!;
}

const HEAD = [KP.NOSE, KP.L_EYE, KP.R_EYE, KP.L_EAR, KP.R_EAR];

describe('skeleton kinematics', () => {
  it('keeps bone lengths constant within 1e-4 m during 10 s of walking, with a real gait', () => {
    const samples = run(
      [
        {
          x: 1.5,
          y: 2,
          heading: 0,
          height: 1.8,
          script: [
            { at: 0, action: 'walk', to: { x: 4.5, y: 3 }, speed: 1.2 },
            { at: 4, action: 'walk', to: { x: 1.5, y: 3.5 }, speed: 1.4 },
            { at: 7.5, action: 'walk', to: { x: 3, y: 1.5 }, speed: 0.8 },
          ],
        },
      ],
      10,
    );
    const ref = samples[0]!.truth.persons[0]!.keypoints3d;
    let worst = 0;
    let maxAnkleGap = 0;
    for (const s of samples) {
      const kp = s.truth.persons[0]!.keypoints3d;
      for (const [a, b] of RIGID_BONES) worst = Math.max(worst, Math.abs(boneLength(kp, a, b) - boneLength(ref, a, b)));
      maxAnkleGap = Math.max(maxAnkleGap, Math.hypot(kp[3 * KP.L_ANKLE]! - kp[3 * KP.R_ANKLE]!, kp[3 * KP.L_ANKLE + 1]! - kp[3 * KP.R_ANKLE + 1]!));
      for (let i = 0; i < NUM_KEYPOINTS; i++) expect(z(kp, i)).toBeGreaterThan(0);
    }
    expect(worst).toBeLessThan(1e-4);
    // Steps of ~0.6 m at 1.2-1.4 m/s put the ankles well apart at some point of the gait.
    expect(maxAnkleGap).toBeGreaterThan(0.4);
    // Cruising at the scripted speed, labelled walking, velocity along the motion.
    const mid = samples[200]!.truth.persons[0]!;
    expect(mid.activity).toBe('walking');
    expect(Math.hypot(mid.velocity.x, mid.velocity.y)).toBeCloseTo(1.2, 1);
    // Arrived at the first waypoint and stopped before the second walk started.
    const arrived = samples[395]!.truth.persons[0]!;
    expect(arrived.activity).toBe('standing');
    expect(Math.hypot(arrived.floor.x - 4.5, arrived.floor.y - 3)).toBeLessThan(0.06);
    expect(Math.hypot(arrived.velocity.x, arrived.velocity.y)).toBe(0);
  });

  it('a scripted fall ends lying with the head below 0.4 m and emits fall_start / fall_end for that person', () => {
    const samples = run(
      [
        { x: 2, y: 2.5, heading: Math.PI / 2, script: [] },
        {
          x: 4,
          y: 2.5,
          heading: Math.PI / 2,
          height: 1.75,
          script: [
            { at: 1, action: 'fall', direction: 'forward', duration: 0.8 },
            { at: 6, action: 'stand' },
          ],
        },
      ],
      10,
    );
    const events = samples.flatMap((s) => s.truth.events);
    const falls = events.filter((e) => e.type !== 'activity_change');
    expect(falls).toEqual([
      { type: 'fall_start', personId: 1, time: T0 + 1000 },
      { type: 'fall_end', personId: 1, time: T0 + 1800 },
    ]);
    const changes = events.filter((e) => e.type === 'activity_change' && e.personId === 1).map((e) => [e.activity, e.time - T0]);
    expect(changes).toEqual([
      ['falling', 1000],
      ['lying', 1800],
      ['standing', 6000],
    ]);
    let maxHeadSpeed = 0;
    for (let i = 0; i < samples.length; i++) {
      const s = samples[i]!;
      const t = s.truth.time - T0;
      const p = s.truth.persons[1]!;
      const kp = p.keypoints3d;
      for (let j = 0; j < NUM_KEYPOINTS; j++) expect(z(kp, j)).toBeGreaterThan(0);
      if (t < 1000) expect(p.activity).toBe('standing');
      else if (t < 1800) expect(p.activity).toBe('falling');
      else if (t < 6000) expect(p.activity).toBe('lying');
      else expect(p.activity).toBe('standing');
      if (t >= 1000 && t < 6000) expect(p.fallOnset).toBe(T0 + 1000);
      else expect(p.fallOnset).toBeUndefined();
      if (t >= 1800 && t < 6000) for (const h of HEAD) expect(z(kp, h)).toBeLessThan(0.4);
      if (i > 0) {
        const prev = samples[i - 1]!.truth.persons[1]!.keypoints3d;
        maxHeadSpeed = Math.max(maxHeadSpeed, ((z(prev, KP.NOSE) - z(kp, KP.NOSE)) * 1000) / (s.truth.time - samples[i - 1]!.truth.time));
      }
      // The other person is untouched.
      expect(s.truth.persons[0]!.activity).toBe('standing');
    }
    // The head hits the floor fast (real falls: 2-5 m/s).
    expect(maxHeadSpeed).toBeGreaterThan(2);
    // Forward fall: the body lies ahead (+y) of where it stood.
    const lying = samples[500]!.truth.persons[1]!;
    expect(lying.floor.y).toBeGreaterThan(2.7);
    expect(z(lying.keypoints3d, KP.NOSE)).toBeLessThan(z(lying.keypoints3d, KP.L_EAR));
    // Up again after getting up (3.2 s).
    const up = samples[1000]!.truth.persons[1]!;
    expect(z(up.keypoints3d, KP.NOSE)).toBeGreaterThan(1.5);
    // Bone lengths survived fall and get-up.
    const ref = samples[0]!.truth.persons[1]!.keypoints3d;
    for (const s of samples) {
      for (const [a, b] of RIGID_BONES) {
        expect(Math.abs(boneLength(s.truth.persons[1]!.keypoints3d, a, b) - boneLength(ref, a, b))).toBeLessThan(1e-4);
      }
    }
  });

  it('sitting puts the hips at about chair height with the feet on the floor; lying on a bed stays on it', () => {
    const H = 1.75;
    const d = bodyDims(H);
    const samples = run(
      [
        {
          x: 2,
          y: 2.5,
          height: H,
          script: [
            { at: 0.5, action: 'sit', seat: 0.45 },
            { at: 4, action: 'stand' },
          ],
        },
        { x: 4.2, y: 2.5, height: H, heading: -Math.PI / 2, script: [{ at: 0.5, action: 'lie', surface: 0.5 }] },
      ],
      7,
    );
    const seated = samples[300]!.truth.persons[0]!;
    expect(seated.activity).toBe('sitting');
    for (const hip of [KP.L_HIP, KP.R_HIP]) {
      expect(z(seated.keypoints3d, hip)).toBeGreaterThan(0.45);
      expect(z(seated.keypoints3d, hip)).toBeLessThan(0.45 + 0.12);
    }
    for (const ankle of [KP.L_ANKLE, KP.R_ANKLE]) expect(z(seated.keypoints3d, ankle)).toBeCloseTo(d.ankleH, 2);
    // Knees forward of the hips, thighs about level.
    expect(Math.abs(z(seated.keypoints3d, KP.L_KNEE) - z(seated.keypoints3d, KP.L_HIP))).toBeLessThan(0.1);
    const standing = samples[650]!.truth.persons[0]!;
    expect(standing.activity).toBe('standing');
    expect(z(standing.keypoints3d, KP.L_HIP)).toBeCloseTo(0.53 * H, 2);

    const onBed = samples[500]!.truth.persons[1]!;
    expect(onBed.activity).toBe('lying');
    for (let j = 0; j < NUM_KEYPOINTS; j++) {
      expect(z(onBed.keypoints3d, j)).toBeGreaterThan(0.5);
      expect(z(onBed.keypoints3d, j)).toBeLessThan(0.5 + 0.35);
    }
  });

  it('scatterers cover the body with torso >> head > thigh > shin > upper arm > forearm weights', () => {
    const w = SCATTER_WEIGHTS;
    expect(w.torso).toBeGreaterThan(2 * w.head);
    expect(w.head).toBeGreaterThan(w.thigh);
    expect(w.thigh).toBeGreaterThan(w.shin);
    expect(w.shin).toBeGreaterThan(w.upperArm);
    expect(w.upperArm).toBeGreaterThan(w.forearm);
    const b = new Body(1.75);
    b.setStanding(3, 2, 0);
    const out = new Float64Array(SCATTERERS_PER_BODY * 4);
    b.fillScatterers(out, 0, 0);
    let torsoPower = 0;
    for (let i = 0; i < SCATTERERS_PER_BODY; i++) {
      const [x, y, zz, wt] = [out[4 * i]!, out[4 * i + 1]!, out[4 * i + 2]!, out[4 * i + 3]!];
      expect(wt).toBeGreaterThan(0);
      // Within the body's reach of the pelvis.
      expect(Math.hypot(x - 3, y - 2)).toBeLessThan(0.5);
      expect(zz).toBeGreaterThan(0);
      expect(zz).toBeLessThan(1.75);
      if (i < 6) torsoPower += wt * wt;
    }
    // The six torso points together carry the torso's cross-section.
    expect(torsoPower).toBeCloseTo(w.torso * w.torso, 10);
  });
});

describe('slow packet rates', () => {
  it('fallOnset equals the time of the fall_start event at 5 Hz (behaviour runs in sub-steps)', () => {
    const sim = new CsiSimulator({
      seed: 3,
      rateHz: 5,
      impairments: false,
      people: [{ x: 3, y: 2.5, script: [{ at: 1.03, action: 'fall', direction: 'backward', duration: 0.7 }] }],
    });
    let start: number | undefined;
    let end: number | undefined;
    for (let i = 0; i < 20; i++) {
      const { truth } = sim.next();
      for (const e of truth.events) {
        if (e.type === 'fall_start') start = e.time;
        if (e.type === 'fall_end') end = e.time;
      }
      if (start !== undefined) expect(truth.persons[0]!.fallOnset).toBe(start);
    }
    // Reported on the first tick at or after the onset, and the 0.7 s fall ends 0.7 s later,
    // rounded up to the 200 ms tick.
    expect(start).toBe(T0 + 1200);
    expect(end).toBe(T0 + 1800);
  });
});
