/**
 * The 'room' realism, effect by effect (src/sim/realism.ts, room.ts, antenna.ts, shadow.ts;
 * docs/simulator.md): each does what its documentation says, on the real simulator.
 */
import { describe, expect, it } from 'vitest';
import { DIPOLE_PEAK, elementGain, elementPattern, PATCH_BACK, PATCH_PEAK } from '../../src/sim/antenna.js';
import { ChannelModel, SPEED_OF_LIGHT } from '../../src/sim/channel.js';
import { NO_IMPAIRMENTS } from '../../src/sim/impairments.js';
import { REALISM_PRESETS, resolveRealism } from '../../src/sim/realism.js';
import { TRUNK_RADIUS } from '../../src/sim/shadow.js';
import { KP } from '../../src/sim/skeleton.js';
import { CsiSimulator, SUBCARRIERS, type SimOptions } from '../../src/sim/simulator.js';
import { lsFactor } from '../helpers/numeric.js';

const SUB30 = SUBCARRIERS[30];

describe('realism options', () => {
  it("resolves presets and single effects, and refuses out-of-range values with the field's name", () => {
    expect(resolveRealism(undefined)).toEqual(REALISM_PRESETS.ideal);
    expect(resolveRealism('room')).toEqual(REALISM_PRESETS.room);
    expect(resolveRealism({ preset: 'room', door: false })).toEqual({ ...REALISM_PRESETS.room, door: false });
    expect(resolveRealism({ shadowLossDb: 12 })).toEqual({ ...REALISM_PRESETS.ideal, shadowLossDb: 12 });
    expect(() => resolveRealism('office' as never)).toThrow(/preset must be 'ideal' or 'room'/);
    expect(() => resolveRealism({ furniture: 2.5 })).toThrow(/furniture must be an integer in 0..24/);
    expect(() => resolveRealism({ shadowLossDb: -1 })).toThrow(/shadowLossDb must be a number in 0..40/);
    expect(() => resolveRealism({ reflectionOrder: 3 as never })).toThrow(/reflectionOrder must be 1 or 2/);
    expect(() => resolveRealism({ antennaPattern: 'horn' as never })).toThrow(/antennaPattern/);
    expect(() => resolveRealism({ chainTauS: 0 })).toThrow(/chainTauS/);
    expect(() => new CsiSimulator({ realism: { wanderSd: 2 } })).toThrow(RangeError);
  });
});

describe('room: seeded and independent of what it does not touch', () => {
  const opts: SimOptions = { seed: 21, people: 2, realism: { preset: 'room', doorMeanIntervalS: 10 } };

  it('gives the same stream for the same seed and options, and another for another seed', () => {
    const a = new CsiSimulator(opts);
    const b = new CsiSimulator(opts);
    const c = new CsiSimulator({ ...opts, seed: 22 });
    let differs = false;
    for (let i = 0; i < 1500; i++) {
      const fa = a.next().frame;
      const fb = b.next().frame;
      const fc = c.next().frame;
      expect(Buffer.from(fa.csi.buffer).equals(Buffer.from(fb.csi.buffer))).toBe(true);
      expect(fa.clockUs).toBe(fb.clockUs);
      if (!Buffer.from(fa.csi.buffer).equals(Buffer.from(fc.csi.buffer))) differs = true;
    }
    expect(differs).toBe(true);
    expect(a.room!.scatterers).toEqual(b.room!.scatterers);
  });

  it('moves people exactly as the ideal room does and loses the same packets', () => {
    const ideal = new CsiSimulator({ ...opts, realism: 'ideal' });
    const room = new CsiSimulator(opts);
    for (let i = 0; i < 800; i++) {
      const a = ideal.next();
      const b = room.next();
      expect(b.frame.seq).toBe(a.frame.seq);
      expect(b.truth.persons.map((p) => [p.activity, Array.from(p.keypoints3d)])).toEqual(a.truth.persons.map((p) => [p.activity, Array.from(p.keypoints3d)]));
    }
  });

  it('places the same furniture whoever is in the room, and drifts on the truth clock whichever packets are lost', () => {
    const layouts = [0, 3].map((people) => new CsiSimulator({ seed: 5, people, realism: 'room' }).room!.scatterers);
    expect(layouts[0]).toEqual(layouts[1]);
    // Without noise, a packet's CSI depends only on the room at its time: losing others changes nothing.
    const clean = { seed: 5, people: 0, realism: 'room' as const };
    const all = new CsiSimulator({ ...clean, impairments: NO_IMPAIRMENTS });
    const lossy = new CsiSimulator({ ...clean, impairments: { ...NO_IMPAIRMENTS, lossRate: 0.3, lossBurst: 20 } });
    const bySeq = new Map<number, Float32Array>();
    for (let i = 0; i < 3000; i++) {
      const f = all.next().frame;
      bySeq.set(f.seq, f.csi);
    }
    let compared = 0;
    for (let i = 0; i < 1500; i++) {
      const f = lossy.next().frame;
      if (f.seq >= 3000) break;
      expect(Buffer.from(f.csi.buffer).equals(Buffer.from(bySeq.get(f.seq)!.buffer))).toBe(true);
      compared++;
    }
    expect(lossy.packets - lossy.emitted).toBeGreaterThan(300);
    expect(compared).toBeGreaterThan(1000);
  });
});

describe('room: furniture and clutter', () => {
  it('stands furniture along the walls and hangs clutter on them, clear of the arrays', () => {
    for (const seed of [1, 2, 3, 4]) {
      const sim = new CsiSimulator({ seed, people: 0, realism: 'room' });
      const { width: W, depth: D, height: H } = sim.scenario.room;
      const sc = sim.room!.scatterers;
      expect(sc.filter((s) => s.kind === 'furniture')).toHaveLength(REALISM_PRESETS.room.furniture);
      expect(sc.filter((s) => s.kind === 'clutter')).toHaveLength(REALISM_PRESETS.room.clutter);
      for (const s of sc) {
        const wall = Math.min(s.x, W - s.x, s.y, D - s.y);
        if (s.kind === 'furniture') {
          expect(wall).toBeGreaterThanOrEqual(0.1);
          expect(wall).toBeLessThanOrEqual(0.35);
          expect(s.z).toBeGreaterThanOrEqual(0.3);
          expect(s.z).toBeLessThanOrEqual(1.2);
          expect(s.rcs).toBeGreaterThanOrEqual(0.2);
          expect(s.rcs).toBeLessThanOrEqual(2);
          // Inside the 0.4 m wall margin people keep: nobody walks through a wardrobe.
          expect(wall).toBeLessThan(0.4);
        } else {
          expect(wall).toBeLessThanOrEqual(0.1);
          expect(s.rcs).toBeGreaterThanOrEqual(0.01);
          expect(s.rcs).toBeLessThanOrEqual(0.1);
          expect(s.z).toBeLessThanOrEqual(H - 0.2);
        }
      }
    }
  });

  it('adds exactly the bistatic paths of its scatterers to the static channel', () => {
    // Furniture only, frozen (no drift): the room's empty channel minus the ideal one is the sum of
    // the furniture paths, lambda/(4 pi) sqrt(sigma/4 pi) / (d1 d2) exp(-j 2 pi f (d1 + d2) / c).
    const base: SimOptions = { seed: 8, people: 0, impairments: false };
    const room = new CsiSimulator({ ...base, realism: { furniture: 6 } });
    const ideal = new CsiSimulator(base);
    const h = room.next().frame.csi;
    const h0 = ideal.next().frame.csi;
    const tx = room.scenario.txPositions;
    const rx = room.scenario.rxPositions;
    const lambda = SPEED_OF_LIGHT / room.centreHz;
    let worst = 0;
    let scale = 0;
    for (let k = 0; k < 30; k++) {
      const f = room.centreHz + SUB30[k]! * 312_500;
      for (let m = 0; m < 3; m++) {
        for (let n = 0; n < 3; n++) {
          let er = 0;
          let ei = 0;
          for (const s of room.room!.scatterers) {
            const d1 = Math.hypot(s.x - tx[3 * n]!, s.y - tx[3 * n + 1]!, s.z - tx[3 * n + 2]!);
            const d2 = Math.hypot(s.x - rx[3 * m]!, s.y - rx[3 * m + 1]!, s.z - rx[3 * m + 2]!);
            const a = ((lambda / (4 * Math.PI)) * Math.sqrt(s.rcs / (4 * Math.PI))) / (d1 * d2);
            const ph = (-2 * Math.PI * f * (d1 + d2)) / SPEED_OF_LIGHT;
            er += a * Math.cos(ph);
            ei += a * Math.sin(ph);
          }
          const c = 2 * ((k * 3 + m) * 3 + n);
          worst = Math.max(worst, Math.hypot(h[c]! - h0[c]! - er, h[c + 1]! - h0[c + 1]! - ei));
          scale = Math.max(scale, Math.hypot(er, ei));
        }
      }
    }
    expect(scale).toBeGreaterThan(1e-5);
    expect(worst).toBeLessThan(1e-5 * scale);
  });
});

describe('room: second-order reflections', () => {
  it('add the 18 two-bounce images of the box with their delays and reflection products', () => {
    const base: SimOptions = { seed: 2, people: 0, impairments: false };
    const second = new CsiSimulator({ ...base, realism: { reflectionOrder: 2 } });
    const first = new CsiSimulator(base);
    expect(second.room!.images.map((i) => i.order).sort()).toEqual([0, ...Array(6).fill(1), ...Array(18).fill(2)]);
    const h2 = second.next().frame.csi;
    const h1 = first.next().frame.csi;
    const { width: W, depth: D, height: H, wallReflection: gw, floorReflection: gf, ceilingReflection: gc } = second.scenario.room;
    // The images, enumerated independently: twice along one axis, or once along each of two.
    type Img = (p: [number, number, number]) => [number, number, number];
    const images: Array<[Img, number]> = [
      [([x, y, z]) => [x + 2 * W, y, z], gw * gw],
      [([x, y, z]) => [x - 2 * W, y, z], gw * gw],
      [([x, y, z]) => [x, y + 2 * D, z], gw * gw],
      [([x, y, z]) => [x, y - 2 * D, z], gw * gw],
      [([x, y, z]) => [x, y, z + 2 * H], gf * gc],
      [([x, y, z]) => [x, y, z - 2 * H], gf * gc],
    ];
    const axis = [
      { L: W, g0: gw, gL: gw },
      { L: D, g0: gw, gL: gw },
      { L: H, g0: gf, gL: gc },
    ];
    for (const [a, b] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      for (const atL of [false, true]) {
        for (const btL of [false, true]) {
          const g = (atL ? axis[a]!.gL : axis[a]!.g0) * (btL ? axis[b]!.gL : axis[b]!.g0);
          images.push([
            (p) => {
              const q: [number, number, number] = [...p];
              q[a] = atL ? 2 * axis[a]!.L - p[a] : -p[a];
              q[b] = btL ? 2 * axis[b]!.L - p[b] : -p[b];
              return q;
            },
            g,
          ]);
        }
      }
    }
    expect(images).toHaveLength(18);
    const tx = second.scenario.txPositions;
    const rx = second.scenario.rxPositions;
    const lambda = SPEED_OF_LIGHT / second.centreHz;
    let worst = 0;
    let scale = 0;
    let longest = 0;
    for (let k = 0; k < 30; k++) {
      const f = second.centreHz + SUB30[k]! * 312_500;
      for (let m = 0; m < 3; m++) {
        for (let n = 0; n < 3; n++) {
          let er = 0;
          let ei = 0;
          for (const [img, g] of images) {
            const [ix, iy, iz] = img([tx[3 * n]!, tx[3 * n + 1]!, tx[3 * n + 2]!]);
            const d = Math.hypot(ix - rx[3 * m]!, iy - rx[3 * m + 1]!, iz - rx[3 * m + 2]!);
            longest = Math.max(longest, d);
            const a = (g * lambda) / (4 * Math.PI * d);
            er += a * Math.cos((-2 * Math.PI * f * d) / SPEED_OF_LIGHT);
            ei += a * Math.sin((-2 * Math.PI * f * d) / SPEED_OF_LIGHT);
          }
          const c = 2 * ((k * 3 + m) * 3 + n);
          worst = Math.max(worst, Math.hypot(h2[c]! - h1[c]! - er, h2[c + 1]! - h1[c + 1]! - ei));
          scale = Math.max(scale, Math.hypot(er, ei));
        }
      }
    }
    // Two bounces across a 6 x 5 x 2.8 m room: paths of up to ~15 m, 50 ns.
    expect(longest).toBeGreaterThan(12);
    expect(scale).toBeGreaterThan(1e-5);
    expect(worst).toBeLessThan(1e-5 * scale);
  });
});

describe('room: antenna patterns', () => {
  it('dipole and patch gains follow their formulas and keep the radiated power of an isotropic element', () => {
    const dip = elementPattern('dipole', 0, 0, 1);
    expect(elementGain(dip, 1, 0, 0, 1)).toBeCloseTo(Math.sqrt(1.64), 12);
    const th = Math.PI / 3;
    expect(elementGain(dip, Math.sin(th), 0, Math.cos(th), 1)).toBeCloseTo((DIPOLE_PEAK * Math.cos((Math.PI / 2) * Math.cos(th))) / Math.sin(th), 12);
    expect(elementGain(dip, 0, 0, 2, 2)).toBe(0);
    const patch = elementPattern('patch', 0, 1, 0);
    expect(elementGain(patch, 0, 3, 0, 3)).toBeCloseTo(PATCH_PEAK, 12);
    expect(elementGain(patch, 0, -1, 0, 1)).toBeCloseTo(PATCH_PEAK * PATCH_BACK, 12);
    // Half power at 37.5 degrees off boresight: a 75 degree beam.
    const psi = (37.5 * Math.PI) / 180;
    expect((elementGain(patch, Math.sin(psi), Math.cos(psi), 0, 1) / PATCH_PEAK) ** 2).toBeCloseTo(0.5, 2);
    // Mean power gain over the sphere: 1 for a lossless dipole (directivity 1.64), ~1 for the patch
    // (its -20 dB back hemisphere adds 1 %).
    const mean = (p: ReturnType<typeof elementPattern>): number => {
      let s = 0;
      const n = 400;
      for (let i = 0; i < n; i++) {
        const t = ((i + 0.5) / n) * Math.PI;
        for (let j = 0; j < 2 * n; j++) {
          const f = ((j + 0.5) / (2 * n)) * 2 * Math.PI;
          s += elementGain(p, Math.sin(t) * Math.cos(f), Math.sin(t) * Math.sin(f), Math.cos(t), 1) ** 2 * Math.sin(t);
        }
      }
      return (s * (Math.PI / n) * (Math.PI / n)) / (4 * Math.PI);
    };
    expect(mean(dip)).toBeCloseTo(1, 2);
    expect(Math.abs(mean(patch) - 1)).toBeLessThan(0.05);
  });

  it('weights each scatterer path by the gains towards it at both ends', () => {
    const tx = new Float64Array([0, 0, 1.2]);
    const rx = new Float64Array([4, 0, 1.2]);
    const iso = new ChannelModel({ centreHz: 5.18e9, subcarriers: SUB30, tx, rx });
    const dip = elementPattern('dipole', 0, 0, 1);
    const withDipoles = new ChannelModel({ centreHz: 5.18e9, subcarriers: SUB30, tx, rx, patterns: { tx: dip, rx: dip } });
    for (const [x, y, z] of [
      [2, 1.5, 1.2], // broadside of both dipoles: 1.64 in power at each end
      [1, 0.5, 2.6], // above the transmitter
      [3.8, 0.2, 0.1], // near the floor under the receiver
    ] as const) {
      const a = new Float64Array(iso.size);
      const b = new Float64Array(iso.size);
      iso.addScatterer(x, y, z, 1e-3, a);
      withDipoles.addScatterer(x, y, z, 1e-3, b);
      const want = elementGain(dip, x - 0, y - 0, z - 1.2, Math.hypot(x, y, z - 1.2)) * elementGain(dip, x - 4, y, z - 1.2, Math.hypot(x - 4, y, z - 1.2));
      const r = lsFactor(a, b);
      expect(r.re).toBeCloseTo(want, 9);
      expect(r.im).toBeCloseTo(0, 9);
    }
  });
});

describe('room: body shadowing', () => {
  /**
   * The line of sight's amplitude factor with one still person at floor position x on the line
   * between the arrays (y = 2.5, 1.75 m tall), and the person's trunk axis distance from the line.
   * Only the line of sight is static here (no surfaces, furniture or drift), so shadowed minus
   * unshadowed is (a - 1) times the empty room's line of sight.
   */
  function losFactor(x: number): { a: number; rho: number } {
    const scenario = { room: { wallReflection: 0, floorReflection: 0, ceilingReflection: 0 } };
    const base: SimOptions = { seed: 4, impairments: false, scenario };
    const person = [{ x, y: 2.5, height: 1.75, heading: 0, script: [] }];
    // clockPpm only: the room machinery with nothing that changes the channel.
    const empty = new CsiSimulator({ ...base, people: 0, realism: { clockPpm: 1 } }).next().frame.csi;
    const plain = new CsiSimulator({ ...base, people: person, realism: { clockPpm: 1 } });
    const shadowed = new CsiSimulator({ ...base, people: person, realism: { clockPpm: 1, shadowLossDb: 12 } });
    const h0 = plain.next().frame.csi;
    const h1 = shadowed.next().frame.csi;
    const d = Float64Array.from(h1, (v, i) => v - h0[i]!);
    const r = lsFactor(empty, d);
    expect(Math.abs(r.im)).toBeLessThan(1e-4);
    // Closest distance from the line of sight (array centres) to the trunk axis, mid-hip to head
    // centre, by brute force.
    const k = plain.scenario.persons[0]!.body.keypoints;
    const mid = (a: number, b: number, c: number): number => 0.5 * (k[3 * a + c]! + k[3 * b + c]!);
    const hip = [0, 1, 2].map((c) => mid(KP.L_HIP, KP.R_HIP, c));
    const head = [0, 1, 2].map((c) => mid(KP.L_EAR, KP.R_EAR, c));
    const txc = [3, 4.8, 1.2];
    const rxc = [3, 0.2, 1.2];
    let rho = Infinity;
    for (let i = 0; i <= 2000; i++) {
      const p = txc.map((v, c) => v + (i / 2000) * (rxc[c]! - v));
      for (let j = 0; j <= 200; j++) {
        const q = hip.map((v, c) => v + (j / 200) * (head[c]! - v));
        rho = Math.min(rho, Math.hypot(p[0]! - q[0]!, p[1]! - q[1]!, p[2]! - q[2]!));
      }
    }
    return { a: 1 + r.re, rho };
  }

  it('takes 12 dB from a path through the middle of a body, 6 dB at its surface, nothing clear of it', () => {
    const r = TRUNK_RADIUS;
    const profile = (rho: number): number => (rho >= 2 * r ? 0 : 6 * (1 + Math.cos((Math.PI * rho) / (2 * r))));
    for (const [dx, approx] of [
      [0, 12],
      [r, 6],
      [0.6, 0],
    ] as const) {
      const { a, rho } = losFactor(3 + dx);
      const lossDb = -20 * Math.log10(a);
      expect(lossDb).toBeCloseTo(profile(rho), 1);
      expect(Math.abs(lossDb - approx)).toBeLessThan(1);
    }
  });
});

describe('room: drifts, door and clock', () => {
  it('per-chain phase and gain drift with the stated time constant and spread', () => {
    // A short time constant so that a test sees many of them: 5 s, at 10 packets/s (a snapshot
    // every 0.2 s = 2 ticks, so tick 2j holds snapshot j).
    const tau = 5;
    const sim = new CsiSimulator({
      seed: 9,
      people: 0,
      rateHz: 10,
      impairments: false,
      realism: { chainTauS: tau, chainPhaseSdRad: 0.3, chainGainSdDb: 1 },
    });
    const phase: number[][] = Array.from({ length: 6 }, () => []);
    const gain: number[][] = Array.from({ length: 6 }, () => []);
    for (let t = 0; t < 40_000; t++) {
      sim.next();
      if (t % 2 !== 0) continue;
      const c = sim.room!.chainFactors('A');
      for (let i = 0; i < 6; i++) {
        phase[i]!.push(Math.atan2(c[2 * i + 1]!, c[2 * i]!));
        gain[i]!.push(20 * Math.log10(Math.hypot(c[2 * i]!, c[2 * i + 1]!)));
      }
    }
    const stats = (series: number[][], lag: number): { sd: number; rho: number } => {
      let s0 = 0;
      let sl = 0;
      let n0 = 0;
      let nl = 0;
      for (const x of series) {
        for (let i = 0; i < x.length; i++) {
          s0 += x[i]! * x[i]!;
          n0++;
          if (i + lag < x.length) {
            sl += x[i]! * x[i + lag]!;
            nl++;
          }
        }
      }
      return { sd: Math.sqrt(s0 / n0), rho: sl / nl / (s0 / n0) };
    };
    const lag = tau / 0.2;
    const p = stats(phase, lag);
    const g = stats(gain, lag);
    expect(p.sd).toBeGreaterThan(0.27);
    expect(p.sd).toBeLessThan(0.33);
    expect(g.sd).toBeGreaterThan(0.9);
    expect(g.sd).toBeLessThan(1.1);
    // Correlation after one time constant: e^-1.
    expect(Math.abs(p.rho - Math.exp(-1))).toBeLessThan(0.07);
    expect(Math.abs(g.rho - Math.exp(-1))).toBeLessThan(0.07);
    expect(stats(phase, 4 * lag).rho).toBeLessThan(0.1);
  });

  it("gives each chain a session's random phase, which the room's packets carry between antennas", () => {
    const opts: SimOptions = { seed: 3, people: 0, impairments: false };
    const room = new CsiSimulator({ ...opts, realism: { chainPhaseRandom: true } });
    const plain = new CsiSimulator({ ...opts, realism: { clockPpm: 1 } });
    const h = room.next().frame.csi;
    const h0 = plain.next().frame.csi;
    const c = room.room!.chainFactors('A');
    // Pair (m, n) is rotated by the phases of rx chain m and tx chain n, on every subcarrier.
    for (let k = 0; k < 30; k += 7) {
      for (let m = 0; m < 3; m++) {
        for (let n = 0; n < 3; n++) {
          const i = 2 * ((k * 3 + m) * 3 + n);
          const want = Math.atan2(c[2 * m + 1]!, c[2 * m]!) + Math.atan2(c[2 * (3 + n) + 1]!, c[2 * (3 + n)]!);
          const got = Math.atan2(h[i + 1]!, h[i]!) - Math.atan2(h0[i + 1]!, h0[i]!);
          expect(Math.cos(got - want)).toBeCloseTo(1, 5);
        }
      }
    }
    expect(new Set(Array.from({ length: 6 }, (_, i) => Math.atan2(c[2 * i + 1]!, c[2 * i]!).toFixed(3))).size).toBe(6);
  });

  it('opens and closes the door as events, each swing 1-2.5 s, and the channel follows it', () => {
    const sim = new CsiSimulator({ seed: 6, people: 0, rateHz: 10, impairments: false, realism: { door: true, doorMeanIntervalS: 10 } });
    const scene = sim.room!;
    expect(scene.door).not.toBeNull();
    const angles: number[] = [];
    const csi: Float32Array[] = [];
    for (let t = 0; t < 6000; t++) {
      const s = sim.next();
      angles.push(scene.doorAngle(s.truth.seq / 10));
      csi.push(s.frame.csi);
    }
    // Swings: runs of ticks where the angle changes; a swing ends when the angle rests.
    const whole: Array<{ start: number; end: number; from: number; to: number }> = [];
    let i = 1;
    while (i < angles.length) {
      if (angles[i] === angles[i - 1]) {
        i++;
        continue;
      }
      const start = i - 1;
      while (i < angles.length && angles[i] !== angles[i - 1]) i++;
      whole.push({ start, end: i - 1, from: angles[start]!, to: angles[i - 1]! });
    }
    // 600 s at one event per ~10 s plus the swing: about 50.
    expect(whole.length).toBeGreaterThan(30);
    expect(whole.length).toBeLessThan(80);
    for (const w of whole) {
      expect((w.end - w.start) / 10).toBeGreaterThanOrEqual(0.9);
      expect((w.end - w.start) / 10).toBeLessThanOrEqual(2.6);
      // Open to 30-90 degrees, or closed.
      const open = Math.max(w.from, w.to);
      expect(Math.min(w.from, w.to)).toBe(0);
      expect(open).toBeGreaterThanOrEqual(Math.PI / 6 - 1e-9);
      expect(open).toBeLessThanOrEqual(Math.PI / 2 + 1e-9);
    }
    // The channel at rest before and after a swing differs (the door moved its paths).
    const w = whole[0]!;
    const before = csi[w.start]!;
    const after = csi[w.end + 1]!;
    let diff = 0;
    let pow = 0;
    for (let j = 0; j < before.length; j++) {
      diff += (after[j]! - before[j]!) ** 2;
      pow += before[j]! ** 2;
    }
    expect(diff / pow).toBeGreaterThan(1e-4);
  });

  it("runs the link's device clock from a random offset with a skew within +-clockPpm", () => {
    const a = new CsiSimulator({ seed: 12, people: 0, realism: 'room', impairments: { lossRate: 0 } });
    const first = a.next().frame;
    let last = first;
    for (let i = 0; i < 5000; i++) last = a.next().frame;
    const nominal = ((last.seq - first.seq) * 1e6) / 100;
    const skew = (last.clockUs - first.clockUs) / nominal - 1;
    expect(Math.abs(skew)).toBeLessThanOrEqual(20e-6 + 2 / nominal);
    expect(Math.abs(skew)).toBeGreaterThan(0);
    expect(first.clockUs).toBeGreaterThan(0);
    expect(last.deviceTime).toBe(last.clockUs);
    // The same seed, the same clock; the ideal room keeps its exact one.
    expect(new CsiSimulator({ seed: 12, people: 0, realism: 'room' }).next().frame.clockUs).toBe(first.clockUs);
    expect(new CsiSimulator({ seed: 12, people: 0 }).next().frame.clockUs).toBe(0);
  });
});
