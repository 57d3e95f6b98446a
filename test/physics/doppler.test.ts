/**
 * Doppler spectra steered to a point (src/physics/doppler.ts): on a synthetic point scatterer built
 * from the steering model, and against the simulator's ground truth (default site, ideal room,
 * impairments off) for a person walking toward and away from rx1, standing still, and an empty spot.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS, siteLinks, SPEED_OF_LIGHT } from '../../src/csi/radios.js';
import { FloorBeamformer, floorGrid, gridPoint } from '../../src/physics/beamform.js';
import type { Candidate } from '../../src/physics/candidates.js';
import { DopplerSteerer, steerCandidates } from '../../src/physics/doppler.js';
import type { Point3 } from '../../src/physics/types.js';
import { centreFrequencyHz, linkGeometry, type LinkGeometry } from '../../src/physics/geometry.js';
import type { MovingWindow } from '../../src/physics/types.js';
import type { PersonSpec } from '../../src/sim/scenario.js';
import { CsiSimulator, SUBCARRIERS, type GroundTruth } from '../../src/sim/simulator.js';
import { expectCloseToPeak } from '../helpers/numeric.js';

const W = 64;
const RATE = 100;
const [TX_RX1] = siteLinks(DEFAULT_RADIOS);
const CENTRE = centreFrequencyHz(36, 20);
const LAMBDA = SPEED_OF_LIGHT / CENTRE;

/** The centre of an array (mean of its antennas). */
function centreOf(p: Float64Array): Point3 {
  const n = p.length / 3;
  let x = 0;
  let y = 0;
  let z = 0;
  for (let i = 0; i < n; i++) {
    x += p[3 * i]!;
    y += p[3 * i + 1]!;
    z += p[3 * i + 2]!;
  }
  return { x: x / n, y: y / n, z: z / n };
}

/** Bistatic path length |t - g| + |g - r| between the array centres, metres. */
function pathLength(g: LinkGeometry, p: Point3): number {
  const t = centreOf(g.txPositions);
  const r = centreOf(g.rxPositions);
  return Math.hypot(t.x - p.x, t.y - p.y, t.z - p.z) + Math.hypot(r.x - p.x, r.y - p.y, r.z - p.z);
}

describe('DopplerSteerer on the steering model', () => {
  const geom = linkGeometry(TX_RX1!.tx, TX_RX1!.rx, SUBCARRIERS[30], CENTRE);
  const D = 30 * 9;

  /** A window of a point scatterer h_s = alpha_s a(g_s) (count snapshots). */
  function scatterer(dop: DopplerSteerer, at: (s: number) => Point3, alpha: (s: number) => [number, number], count: number): MovingWindow {
    const data = new Float32Array(2 * D * count);
    const a = new Float64Array(2 * D);
    for (let s = 0; s < count; s++) {
      dop.steering(at(s), a);
      const [ar, ai] = alpha(s);
      for (let c = 0; c < D; c++) {
        data[2 * (s * D + c)] = a[2 * c]! * ar - a[2 * c + 1]! * ai;
        data[2 * (s * D + c) + 1] = a[2 * c]! * ai + a[2 * c + 1]! * ar;
      }
    }
    return { nSub: 30, nRx: 3, nTx: 3, snapshots: count, data, time: 0 };
  }

  /** Points along the gradient of the path length from g0 with L(g_s) = L(g0) + rate * s / RATE exactly (centre antennas). */
  function constantRate(g0: Point3, rate: number, fs: number): (s: number) => Point3 {
    const e = 1e-4;
    const gx = (pathLength(geom, { ...g0, x: g0.x + e }) - pathLength(geom, { ...g0, x: g0.x - e })) / (2 * e);
    const gy = (pathLength(geom, { ...g0, y: g0.y + e }) - pathLength(geom, { ...g0, y: g0.y - e })) / (2 * e);
    const n = Math.hypot(gx, gy);
    const L0 = pathLength(geom, g0);
    return (s: number) => {
      const want = L0 + (rate * s) / fs;
      // Newton along the floor gradient direction.
      let u = (want - L0) / n;
      for (let it = 0; it < 20; it++) {
        const p = { x: g0.x + (u * gx) / n, y: g0.y + (u * gy) / n, z: g0.z };
        const f = pathLength(geom, p) - want;
        if (Math.abs(f) < 1e-12) break;
        const p2 = { x: g0.x + ((u + e) * gx) / n, y: g0.y + ((u + e) * gy) / n, z: g0.z };
        u -= (f * e) / (pathLength(geom, p2) - pathLength(geom, p));
      }
      return { x: g0.x + (u * gx) / n, y: g0.y + (u * gy) / n, z: g0.z };
    };
  }

  it('steers a still point scatterer to exactly its complex amplitude (constant magnitude), and matches FloorBeamformer.steering on the grid', () => {
    const dop = new DopplerSteerer(geom);
    const g = { x: 2.2, y: 1.6, z: 1.0 };
    // Amplitude 0.3, phase turning 0.1 rad per snapshot: y_s must be that amplitude exactly.
    const w = scatterer(
      dop,
      () => g,
      (s) => [0.3 * Math.cos(0.1 * s), 0.3 * Math.sin(0.1 * s)],
      W,
    );
    const y = dop.steer(w, g);
    expect(dop.snapshots).toBe(W);
    let worst = 0;
    for (let s = 0; s < W; s++) worst = Math.max(worst, Math.hypot(y[2 * s]! - 0.3 * Math.cos(0.1 * s), y[2 * s + 1]! - 0.3 * Math.sin(0.1 * s)));
    // Float32 storage of h: measured 1.5e-8.
    expect(worst).toBeLessThan(1e-6);
    // All of the window's moving power is at g.
    dop.spectrum(w, g);
    expect(dop.capturedFraction).toBeGreaterThan(0.999999);
    expect(dop.capturedFraction).toBeLessThan(1.000001);
    // 1 m across the link's ellipses the beam keeps little of it (measured 0.0022); along them one
    // link cannot tell (0.5 m in y keeps 0.92), which is why links are fused.
    dop.spectrum(w, { x: g.x + 1, y: g.y, z: g.z });
    expect(dop.capturedFraction).toBeLessThan(0.02);
    // Same vector as the floor beamformer's at a grid point (its factors are float32).
    const grid = floorGrid({ x0: 0, x1: 6, y0: 0, y1: 5 });
    const bf = new FloorBeamformer(geom, grid, { method: 'factored' });
    const p = gridPoint(grid, 1234);
    const a = dop.steering({ x: p.x, y: p.y, z: p.z });
    const b = bf.steering(1234);
    let diff = 0;
    for (let i = 0; i < 2 * D; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    expect(diff).toBeLessThan(1e-5);
  });

  it("spectraFromComponents: each row is spectra's of the window projected on the beamformer's components (the window itself when its rank is at most r)", () => {
    const dop = new DopplerSteerer(geom);
    const grid = floorGrid({ x0: 0, x1: 6, y0: 0, y1: 5 });
    const turns = [-1.1, -0.4, 0.2, 0.5, 0.8, 1.3];
    const starts: Point3[] = turns.map((_, j) => ({ x: 1 + 0.7 * j, y: 1.2 + 0.5 * (j % 3), z: 0.6 + 0.15 * j }));
    /** The sum of `n` fixed scatterers (rank n), each turning at its own Doppler, of falling strength. */
    const mixed = (n: number): MovingWindow => {
      const data = new Float32Array(2 * D * W);
      for (let j = 0; j < n; j++) {
        const one = scatterer(
          dop,
          () => starts[j]!,
          (s) => [Math.cos(turns[j]! * s) / (j + 1), Math.sin(turns[j]! * s) / (j + 1)],
          W,
        );
        for (let i = 0; i < data.length; i++) data[i] = data[i]! + one.data[i]!;
      }
      return { nSub: 30, nRx: 3, nTx: 3, snapshots: W, data, time: 0 };
    };
    const pts: Point3[] = [...starts.slice(0, 3), { x: 3, y: 4, z: 1 }, { x: 5.5, y: 0.5, z: 1.4 }];
    const expectRows = (a: ArrayLike<number>, b: ArrayLike<number>, n: number) => expectCloseToPeak(a, b, 1e-5, n);
    // Rank 3, four components: the window itself.
    const w3 = mixed(3);
    const bf = new FloorBeamformer(geom, grid);
    bf.reduce(w3);
    const exact = Float64Array.from(dop.spectra(w3, pts));
    const power = dop.lastWindowPower;
    expectRows(exact, dop.spectraFromComponents(w3, pts, bf.principalComponents!), pts.length * W);
    expect(dop.lastWindowPower).toBeCloseTo(power, 12);
    // Rank 6, two components: the projection sum_j w_j q_j^H, built here, steered over its snapshots.
    const w6 = mixed(6);
    const two = new FloorBeamformer(geom, grid, { components: 2 });
    two.reduce(w6);
    const comp = two.principalComponents!;
    expect([comp.count, comp.snapshots]).toEqual([2, W]);
    const proj = new Float32Array(2 * D * W);
    for (let s = 0; s < W; s++) {
      for (let c = 0; c < D; c++) {
        let re = 0;
        let im = 0;
        for (let j = 0; j < 2; j++) {
          const wr = comp.vectors[2 * (j * D + c)]!;
          const wi = comp.vectors[2 * (j * D + c) + 1]!;
          const qr = comp.coefficients[2 * (j * W + s)]!;
          const qi = -comp.coefficients[2 * (j * W + s) + 1]!;
          re += wr * qr - wi * qi;
          im += wr * qi + wi * qr;
        }
        proj[2 * (s * D + c)] = re;
        proj[2 * (s * D + c) + 1] = im;
      }
    }
    const projected = Float64Array.from(dop.spectra({ ...w6, data: proj }, pts));
    const fromComponents = Float64Array.from(dop.spectraFromComponents(w6, pts, comp));
    expectRows(projected, fromComponents, pts.length * W);
    // ... which is not the window's own (four scatterers are mostly outside the two components).
    expect(() => expectRows(dop.spectra(w6, pts), fromComponents, pts.length * W)).toThrow();
    expect(() => dop.spectraFromComponents(mixed(1), pts, { ...comp, snapshots: W - 1 })).toThrow(RangeError);
  });

  it('puts a scatterer moving at a constant path rate at f = -(1/lambda) dL/dt within one bin, positive when the path shortens', () => {
    const g0 = { x: 1.6, y: 2.0, z: 1.0 };
    const dop = new DopplerSteerer(geom);
    const binHz = RATE / W;
    expect(dop.frequencies[0]).toBe(-RATE / 2);
    expect(dop.frequencies[W / 2]).toBe(0);
    expect(dop.frequencies[W - 1]).toBeCloseTo(RATE / 2 - binHz, 12);
    for (const rate of [-1.2, -0.5, 0.3, 0.9]) {
      const along = constantRate(g0, rate, RATE);
      const w = scatterer(dop, along, () => [1, 0], W);
      dop.spectrum(w, along(W / 2));
      const f = dop.frequencies[dop.peakBin()]!;
      const want = -rate / LAMBDA;
      expect(Math.abs(f - want), `rate ${rate}: peak ${f} Hz, expected ${want} Hz`).toBeLessThanOrEqual(binHz);
      expect(Math.sign(f)).toBe(-Math.sign(rate));
      expect(Math.abs(dop.pathRates[dop.peakBin()]! - rate)).toBeLessThanOrEqual(binHz * LAMBDA);
    }
    // Another size and rate, zero-padded: 100 snapshots at 200 Hz in a 128-point FFT.
    const big = new DopplerSteerer(geom, { bins: 128, rateHz: 200 });
    const along = constantRate(g0, -1.5, 200);
    const w = scatterer(big, along, () => [1, 0], 100);
    big.spectrum(w, along(50));
    expect(big.snapshots).toBe(100);
    expect(Math.abs(big.frequencies[big.peakBin()]! - 1.5 / LAMBDA)).toBeLessThanOrEqual(200 / 128);
  });

  it('rejects a bad size or a window of another shape', () => {
    expect(() => new DopplerSteerer(geom, { bins: 48 })).toThrow(RangeError);
    const dop = new DopplerSteerer(geom);
    const w: MovingWindow = { nSub: 56, nRx: 3, nTx: 3, snapshots: 1, data: new Float32Array(2 * 56 * 9), time: 0 };
    expect(() => dop.spectrum(w, { x: 1, y: 1, z: 1 })).toThrow(RangeError);
  });
});

/** One 64-packet window of every link of the default site, the raw frames, the truths and the empty room's channel. */
interface Recording {
  geoms: LinkGeometry[];
  raw: Float32Array[];
  truths: GroundTruth[];
  empty: Float32Array[];
}

function record(people: PersonSpec[], skip: number): Recording {
  const opts = { seed: 5, radios: DEFAULT_RADIOS, impairments: false as const, realism: 'ideal' as const };
  const sim = new CsiSimulator({ ...opts, people });
  // The empty room: the same site without people (ideal room, no impairments: a constant channel).
  const empty = new CsiSimulator({ ...opts, people: [] }).nextTick().frames.map((f) => Float32Array.from(f.csi));
  const centre = centreFrequencyHz(sim.channelNumber, sim.bandwidthMhz, sim.subcarriers.length);
  const geoms = siteLinks(DEFAULT_RADIOS).map((l) => linkGeometry(l.tx, l.rx, sim.subcarriers, centre));
  const len = 2 * sim.subcarriers.length * 9;
  const raw = geoms.map(() => new Float32Array(W * len));
  for (let i = 0; i < skip; i++) sim.nextTick();
  const truths: GroundTruth[] = [];
  for (let s = 0; s < W; s++) {
    const t = sim.nextTick();
    expect(t.frames.length).toBe(3);
    t.frames.forEach((f, l) => raw[l]!.set(f.csi, s * len));
    truths.push(t.truth);
  }
  return { geoms, raw, truths, empty };
}

/** Link l's moving window: each complex entry minus the window mean, or minus the empty room's channel. */
function movingWindow(rec: Recording, l: number, remove: 'mean' | 'static'): MovingWindow {
  const g = rec.geoms[l]!;
  const d = rec.raw[l]!;
  const len = 2 * g.subcarriers.length * g.nRx * g.nTx;
  const ref = new Float64Array(len);
  if (remove === 'static') ref.set(rec.empty[l]!);
  else for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) ref[i] = ref[i]! + d[s * len + i]! / W;
  const out = new Float32Array(d.length);
  for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) out[s * len + i] = d[s * len + i]! - ref[i]!;
  return { nSub: g.subcarriers.length, nRx: g.nRx, nTx: g.nTx, snapshots: W, data: out, time: 0 };
}

/** Pelvis (mid-hip, COCO 11 and 12) of the first person, room metres. */
function pelvis(t: GroundTruth): Point3 {
  const k = t.persons[0]!.keypoints3d;
  return { x: (k[33]! + k[36]!) / 2, y: (k[34]! + k[37]!) / 2, z: (k[35]! + k[38]!) / 2 };
}

/** Where to steer: the pelvis on the floor at the middle of the window, at 1.0 m (the grid's pelvis layer). */
const target = (rec: Recording): Point3 => ({ ...pelvis(rec.truths[W / 2]!), z: 1.0 });

/** Share of a spectrum's power within +-1 bin of 0 Hz. */
function nearZero(dop: DopplerSteerer): number {
  const p = dop.lastSpectrum;
  const c = dop.bins / 2;
  return (p[c - 1]! + p[c]! + p[c + 1]!) / dop.lastPower;
}

const TOWARD: PersonSpec[] = [{ x: 5.2, y: 2.4, height: 1.75, heading: 0, script: [{ at: 0, action: 'walk', to: { x: 3.2, y: 0.7 }, speed: 1.0 }] }];
const AWAY: PersonSpec[] = [{ x: 3.6, y: 0.8, height: 1.75, heading: 0, script: [{ at: 0, action: 'walk', to: { x: 5.4, y: 2.6 }, speed: 1.0 }] }];
const STILL: PersonSpec[] = [{ x: 4.2, y: 1.8, height: 1.75, heading: 0 }];

describe('against the simulator (default site, link tx-rx1)', () => {
  const toward = record(TOWARD, 50);
  const away = record(AWAY, 50);
  const still = record(STILL, 50);
  const binRate = (RATE / W) * LAMBDA; // 0.0904 m/s

  it('gives opposite Doppler signs walking toward and away from rx1, within one bin (0.090 m/s) of the truth path rate (measured 0.045 and 0.038 m/s off)', () => {
    const peaks: number[] = [];
    for (const rec of [toward, away]) {
      const g = rec.geoms[0]!;
      const dop = new DopplerSteerer(g);
      dop.spectrum(movingWindow(rec, 0, 'mean'), target(rec));
      // Truth: the pelvis's bistatic path rate over the window (array centres).
      const truth = (pathLength(g, pelvis(rec.truths[W - 1]!)) - pathLength(g, pelvis(rec.truths[0]!))) / ((W - 1) / RATE);
      const peak = dop.peakBin();
      // Measured: truth -0.678 m/s toward (peak -0.723), +0.414 m/s away (peak +0.452).
      expect(Math.abs(dop.pathRates[peak]! - truth), `peak ${dop.pathRates[peak]} m/s, truth ${truth} m/s`).toBeLessThan(binRate);
      peaks.push(peak);
      // The walker's motion is not at 0 Hz (measured 8 % and 4 % within +-1 bin).
      expect(nearZero(dop)).toBeLessThan(0.2);
    }
    const dop = new DopplerSteerer(toward.geoms[0]!);
    // Toward rx1: the path shortens, positive frequency, negative rate; away: the opposite.
    expect(dop.frequencies[peaks[0]!]).toBeGreaterThan(0);
    expect(dop.pathRates[peaks[0]!]).toBeLessThan(0);
    expect(dop.frequencies[peaks[1]!]).toBeLessThan(0);
    expect(dop.pathRates[peaks[1]!]).toBeGreaterThan(0);
  });

  it('concentrates a still person within +-1 bin of 0 Hz (measured 100 % static removed, 94 % window mean removed) and a walker not (5-8 %)', () => {
    const g = still.geoms[0]!;
    const dop = new DopplerSteerer(g);
    dop.spectrum(movingWindow(still, 0, 'static'), target(still));
    expect(nearZero(dop)).toBeGreaterThan(0.95);
    // The empty room's channel is what was removed: the person's echo is most of the moving power at the person.
    expect(dop.capturedFraction).toBeGreaterThan(0.9);
    dop.spectrum(movingWindow(still, 0, 'mean'), target(still));
    expect(nearZero(dop)).toBeGreaterThan(0.85);
    for (const rec of [toward, away]) {
      dop.spectrum(movingWindow(rec, 0, 'static'), target(rec));
      expect(nearZero(dop)).toBeLessThan(0.2);
    }
  });

  it('gives much less power at an empty spot 2 m from the walker (measured 14x and 75x less)', () => {
    for (const [rec, min] of [
      [toward, 7],
      [away, 30],
    ] as const) {
      const dop = new DopplerSteerer(rec.geoms[0]!);
      const w = movingWindow(rec, 0, 'mean');
      const g = target(rec);
      const at = dop.spectrum(w, g);
      const spot = { x: g.x - 2 * Math.SQRT1_2, y: g.y + 2 * Math.SQRT1_2, z: 1.0 };
      const off = dop.spectrum(w, spot);
      expect(at / off).toBeGreaterThan(min);
    }
  });
});

describe('steerCandidates (three links fused)', () => {
  it("fills one row per candidate: the walker with its Doppler away from 0 and most of each link's moving power, an empty spot with little", () => {
    const rec = record(TOWARD, 50);
    const dops = rec.geoms.map((g) => new DopplerSteerer(g));
    const windows = rec.geoms.map((_, l) => movingWindow(rec, l, 'mean'));
    const g = target(rec);
    const cands: Candidate[] = [
      { ...g, power: 1, index: 0 },
      { x: g.x - 2 * Math.SQRT1_2, y: g.y + 2 * Math.SQRT1_2, z: 1.0, power: 0.1, index: 1 },
    ];
    const rows = new Float32Array(3 * W).fill(-1);
    steerCandidates(dops, windows, cands, rows);
    const sum = (i: number): number => rows.subarray(i * W, (i + 1) * W).reduce((a, b) => a + b, 0);
    // Row sums: the captured shares of the three links, each at most 1; measured 2.91 at the walker
    // and 0.38 at the empty spot (7.7x less; of it 0.30 from tx-rx2, whose ellipse through the
    // walker passes near the spot).
    expect(sum(0)).toBeGreaterThan(2.5);
    expect(sum(0)).toBeLessThanOrEqual(3 + 1e-6);
    expect(sum(1)).toBeLessThan(0.6);
    expect(sum(0) / sum(1)).toBeGreaterThan(5);
    // The third row was not a candidate: untouched.
    expect(rows[2 * W]).toBe(-1);
    // Fused peak off 0 Hz.
    let peak = 0;
    for (let b = 1; b < W; b++) if (rows[b]! > rows[peak]!) peak = b;
    expect(Math.abs(peak - W / 2)).toBeGreaterThan(1);
    // 'spectrum': each link one unit; a missing window leaves its link out.
    steerCandidates(dops, [windows[0], null, windows[2]], cands, rows, { normalise: 'spectrum' });
    expect(sum(0)).toBeCloseTo(2, 4);
    expect(sum(1)).toBeCloseTo(2, 4);
    // 'none': raw powers, the sum of the links' lastPower.
    steerCandidates(dops, windows, cands.slice(0, 1), rows, { normalise: 'none' });
    let raw = 0;
    for (let l = 0; l < 3; l++) raw += dops[l]!.spectrum(windows[l]!, g);
    expect(sum(0) / raw).toBeCloseTo(1, 4);
    expect(() => steerCandidates([dops[0]!, new DopplerSteerer(rec.geoms[1]!, { bins: 32 })], windows.slice(0, 2), cands, rows)).toThrow(RangeError);
  });

  it('spectra steers one window to several points at once exactly as spectrum does one at a time', () => {
    const rec = record(TOWARD, 50);
    const dop = new DopplerSteerer(rec.geoms[0]!);
    const win = movingWindow(rec, 0, 'static');
    const g = target(rec);
    // Five points: a group of four and one more (padded).
    const pts: Point3[] = [0, 1, 2, 3, 4].map((i) => ({ x: g.x + 0.3 * i - 0.6, y: g.y - 0.2 * i, z: 0.5 + 0.2 * i }));
    const rows = new Float64Array(6 * W).fill(-1);
    dop.spectra(win, pts, rows, W);
    const windowPower = dop.lastWindowPower;
    expect(rows[0]).toBe(-1);
    pts.forEach((p, i) => {
      dop.spectrum(win, p);
      const one = dop.lastSpectrum;
      let peak = 0;
      for (let b = 0; b < W; b++) peak = Math.max(peak, one[b]!);
      for (let b = 0; b < W; b++) expect(Math.abs(rows[W + i * W + b]! - one[b]!)).toBeLessThan(1e-9 * peak);
      expect(dop.lastWindowPower).toBeCloseTo(windowPower, 12);
    });
    // Its own buffer when no output is given; nothing for no points.
    expect(dop.spectra(win, pts).length).toBeGreaterThanOrEqual(5 * W);
    expect(() => dop.spectra(win, pts, new Float64Array(4 * W))).toThrow(RangeError);
  });
});
