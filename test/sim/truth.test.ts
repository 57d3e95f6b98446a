import { describe, expect, it } from 'vitest';
import { KP, NUM_KEYPOINTS } from '../../src/sim/skeleton.js';
import { MIN_SEPARATION, type Activity } from '../../src/sim/scenario.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { DEFAULT_VIEW, viewCamera, viewSpec } from '../../src/pose/camera.js';
import { defaults } from '../../src/config/schema.js';

describe('ground truth', () => {
  it("is projected through the reference view: by default the configuration's default view", () => {
    const cam = viewCamera(defaults().environment.view);
    const sim = new CsiSimulator({ seed: 11, people: 3, impairments: false });
    const px = new Float32Array(NUM_KEYPOINTS * 2);
    const vis = new Uint8Array(NUM_KEYPOINTS);
    let seen = 0;
    for (let t = 0; t < 300; t++) {
      for (const p of sim.next().truth.persons) {
        seen += cam.projectKeypoints(p.keypoints3d, px, vis);
        expect(p.keypoints).toEqual(px);
        expect(p.visible).toEqual(vis);
        expect(p.bbox).toEqual(cam.bbox(px, vis));
      }
    }
    expect(seen).toBeGreaterThan(1000);
    // A view given as the scenario's camera is the one the truth uses.
    const turned = { ...DEFAULT_VIEW, yaw_deg: 25, hfov_deg: 60 };
    const other = new CsiSimulator({ seed: 11, people: 3, impairments: false, scenario: { camera: viewSpec(turned) } });
    const p = other.next().truth.persons[0]!;
    viewCamera(turned).projectKeypoints(p.keypoints3d, px, vis);
    expect(p.keypoints).toEqual(px);
  });

  it('has as many persons as configured, with ids 0..n-1 and well-formed arrays', () => {
    for (let n = 0; n <= 4; n++) {
      const sim = new CsiSimulator({ seed: 20 + n, people: n, impairments: false });
      for (let t = 0; t < 20; t++) {
        const { truth } = sim.next();
        expect(truth.personCount).toBe(n);
        expect(truth.persons.map((p) => p.id)).toEqual([...Array(n).keys()]);
        for (const p of truth.persons) {
          expect(p.keypoints).toHaveLength(NUM_KEYPOINTS * 2);
          expect(p.visible).toHaveLength(NUM_KEYPOINTS);
          expect(p.keypoints3d).toHaveLength(NUM_KEYPOINTS * 3);
          expect(p.floor.x).toBeCloseTo((p.keypoints3d[3 * KP.L_HIP]! + p.keypoints3d[3 * KP.R_HIP]!) / 2, 5);
          expect(p.floor.y).toBeCloseTo((p.keypoints3d[3 * KP.L_HIP + 1]! + p.keypoints3d[3 * KP.R_HIP + 1]!) / 2, 5);
        }
      }
    }
  });

  it('a person standing in front of the camera is fully inside the image, mirrored as seen', () => {
    // The default camera sits on the front wall (y = 0.05) looking into the room (+y).
    const sim = new CsiSimulator({ people: [{ x: 3, y: 3, heading: -Math.PI / 2, height: 1.8, script: [] }], impairments: false });
    const { truth } = sim.next();
    const p = truth.persons[0]!;
    expect(p.activity).toBe('standing');
    expect(Array.from(p.visible)).toEqual(new Array(NUM_KEYPOINTS).fill(1));
    for (let i = 0; i < NUM_KEYPOINTS; i++) {
      const u = p.keypoints[2 * i]!;
      const v = p.keypoints[2 * i + 1]!;
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(640);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(480);
      expect(u).toBeGreaterThanOrEqual(p.bbox[0]);
      expect(u).toBeLessThanOrEqual(p.bbox[0] + p.bbox[2]);
      expect(v).toBeGreaterThanOrEqual(p.bbox[1]);
      expect(v).toBeLessThanOrEqual(p.bbox[1] + p.bbox[3]);
    }
    // Centred horizontally, head above the feet, and facing the camera: the person's left
    // appears on the image's right.
    expect(p.keypoints[2 * KP.NOSE]!).toBeCloseTo(320, 0);
    expect(p.keypoints[2 * KP.NOSE + 1]!).toBeLessThan(p.keypoints[2 * KP.L_ANKLE + 1]!);
    expect(p.keypoints[2 * KP.L_SHOULDER]!).toBeGreaterThan(p.keypoints[2 * KP.R_SHOULDER]!);
  });

  it('generated people stay apart, inside the room and above the floor, and do all the activities', () => {
    const seen = new Set<Activity>();
    let falls = 0;
    for (const seed of [1, 2]) {
      const sim = new CsiSimulator({ seed, people: 4, rateHz: 50, impairments: false, scenario: { fallProbability: 0.15 } });
      const { width, depth } = sim.scenario.room;
      for (let t = 0; t < 50 * 90; t++) {
        const { truth } = sim.next();
        const ps = truth.persons;
        for (let i = 0; i < ps.length; i++) {
          const a = ps[i]!;
          seen.add(a.activity);
          for (let j = 0; j < NUM_KEYPOINTS; j++) {
            const [x, y, z] = [a.keypoints3d[3 * j]!, a.keypoints3d[3 * j + 1]!, a.keypoints3d[3 * j + 2]!];
            if (!(x > 0 && x < width && y > 0 && y < depth && z > 0)) {
              throw new Error(`seed ${seed} t ${t}: person ${a.id} keypoint ${j} at (${x}, ${y}, ${z}) outside the room`);
            }
          }
          for (let k = i + 1; k < ps.length; k++) {
            const b = ps[k]!;
            const d = Math.hypot(a.floor.x - b.floor.x, a.floor.y - b.floor.y);
            if (!(d >= MIN_SEPARATION - 1e-6)) throw new Error(`seed ${seed} t ${t}: persons ${a.id} and ${b.id} ${d.toFixed(3)} m apart`);
          }
          const speed = Math.hypot(a.velocity.x, a.velocity.y);
          if (a.activity === 'walking') expect(speed).toBeLessThanOrEqual(1.5 + 1e-9);
          if (a.activity === 'sitting' || a.activity === 'standing') expect(speed).toBeLessThan(1e-9);
        }
        falls += truth.events.filter((e) => e.type === 'fall_start').length;
      }
    }
    expect([...seen].sort()).toEqual(['falling', 'lying', 'sitting', 'standing', 'walking']);
    expect(falls).toBeGreaterThan(0);
  });

  it('respects the allowed activities', () => {
    const sim = new CsiSimulator({ seed: 8, people: 3, rateHz: 20, impairments: false, scenario: { activities: ['standing', 'walking'] } });
    const seen = new Set<Activity>();
    for (let t = 0; t < 20 * 60; t++) for (const p of sim.next().truth.persons) seen.add(p.activity);
    expect([...seen].sort()).toEqual(['standing', 'walking']);
  });
});
