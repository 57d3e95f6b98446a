/**
 * The floor beamformer (src/physics/beamform.ts): the factored steering against the direct
 * bistatic phase, the beam power of synthetic point scatterers, the principal-component reduction
 * against the plain sum, and the fusion of links.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { FloorBeamformer, floorGrid, fuseMaps, gridPoint } from '../../src/physics/beamform.js';
import { linkGeometry, type LinkGeometry } from '../../src/physics/geometry.js';
import type { MovingWindow } from '../../src/physics/types.js';
import { SUBCARRIERS } from '../../src/sim/simulator.js';
import { expectCloseToPeak } from '../helpers/numeric.js';

const C = 299_792_458;
const ROOM = { x0: 0, x1: 6, y0: 0, y1: 5 };
const [LINK1, LINK2] = siteLinks(DEFAULT_RADIOS);

/** Direct steering a[k,m,n] = exp(-j 2 pi f_k (|t_n - g| + |g - r_m|) / c), in double, frame order. */
function directSteering(geo: LinkGeometry, x: number, y: number, z: number): Float64Array {
  const { nTx, nRx } = geo;
  const nSub = geo.subcarriers.length;
  const out = new Float64Array(2 * nSub * nRx * nTx);
  const dist = (p: Float64Array, i: number) => Math.hypot(p[3 * i]! - x, p[3 * i + 1]! - y, p[3 * i + 2]! - z);
  for (let k = 0; k < nSub; k++) {
    const f = geo.centreHz + geo.subcarriers[k]! * 312_500;
    for (let m = 0; m < nRx; m++) {
      for (let n = 0; n < nTx; n++) {
        const cycles = (f * (dist(geo.txPositions, n) + dist(geo.rxPositions, m))) / C;
        const ph = -2 * Math.PI * (cycles - Math.floor(cycles));
        const c = 2 * ((k * nRx + m) * nTx + n);
        out[c] = Math.cos(ph);
        out[c + 1] = Math.sin(ph);
      }
    }
  }
  return out;
}

/** A window of point scatterers at grid points: snapshot s = sum_j amp[j][s] a(point_j). */
function scatterWindow(bf: FloorBeamformer, points: number[], amps: Array<(s: number) => [number, number]>, snapshots: number): MovingWindow {
  const D = bf.nSub * bf.nRx * bf.nTx;
  const data = new Float32Array(2 * D * snapshots);
  points.forEach((p, j) => {
    const a = bf.steering(p);
    for (let s = 0; s < snapshots; s++) {
      const [ar, ai] = amps[j]!(s);
      for (let c = 0; c < 2 * D; c += 2) {
        data[2 * s * D + c] = data[2 * s * D + c]! + ar * a[c]! - ai * a[c + 1]!;
        data[2 * s * D + c + 1] = data[2 * s * D + c + 1]! + ar * a[c + 1]! + ai * a[c]!;
      }
    }
  });
  return { nSub: bf.nSub, nRx: bf.nRx, nTx: bf.nTx, snapshots, data, time: 0 };
}

function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}

describe('floorGrid', () => {
  it('samples the default room every 0.2 m at three heights, layer-major', () => {
    const g = floorGrid(ROOM);
    expect([g.nx, g.ny, g.cells, g.size]).toEqual([31, 26, 806, 2418]);
    expect(Array.from(g.heights)).toEqual([0.5, 1.0, 1.4]);
    expect(gridPoint(g, 0)).toEqual({ x: 0, y: 0, z: 0.5, layer: 0 });
    const p = gridPoint(g, 806 * 2 + 31 * 3 + 5);
    expect(p.layer).toBe(2);
    expect(p.z).toBe(1.4);
    expect(p.x).toBeCloseTo(1.0, 12);
    expect(p.y).toBeCloseTo(0.6, 12);
    expect(() => floorGrid({ ...ROOM, x1: -1 })).toThrow(RangeError);
  });
});

describe('factored steering', () => {
  const diag: RadioConfig = { ...DEFAULT_RADIOS[1]!, id: 'diag', x: 0.5, y: 0.7, z: 0.9, yaw_deg: 45, antennas: 2 };
  // [layout, centre, tx, rx, fixed grid indices]: corners, the middle, points right by an array.
  const cases: Array<[string, Int16Array, number, RadioConfig, RadioConfig]> = [
    ['30 subcarriers at 5180 MHz, tx-rx1', SUBCARRIERS[30], 5.18e9, LINK1!.tx, LINK1!.rx],
    ['114 subcarriers at 5190 MHz (HT40+), tx-rx2', SUBCARRIERS[114], 5.19e9, LINK2!.tx, LINK2!.rx],
    ['56 subcarriers at 2437 MHz, 2-antenna rx at yaw 45', SUBCARRIERS[56], 2.437e9, LINK1!.tx, diag],
  ];
  it.each(cases)('equals the direct bistatic phase to 1e-4: %s', (_name, subs, centre, tx, rx) => {
    const geo = linkGeometry(tx, rx, subs, centre);
    const bf = new FloorBeamformer(geo, ROOM);
    const points = [0, 30, 806 - 1, 403, 806 + 15 * 31 + 15, 2 * 806 + 31 + 15, 2417];
    for (const p of points) {
      const g = gridPoint(bf.grid, p);
      const want = directSteering(geo, g.x, g.y, g.z);
      const got = bf.steering(p);
      expect(got.length).toBe(want.length);
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
      expect(worst, `point ${p} (${g.x}, ${g.y}, ${g.z})`).toBeLessThan(1e-4);
    }
    // The phase really varies across subcarriers and antennas (a constant steering would fail the
    // beam tests below but pass a sloppy check here).
    const a = bf.steering(403);
    expect(Math.abs(a[0]! - a[2 * (bf.nSub - 1) * bf.nRx * bf.nTx]!)).toBeGreaterThan(1e-3);
  });
});

describe('FloorBeamformer', () => {
  const subs = SUBCARRIERS[30];
  const geo = linkGeometry(LINK1!.tx, LINK1!.rx, subs, 5.18e9);
  const full = new FloorBeamformer(geo, ROOM, { components: 0 });
  const pca = new FloorBeamformer(geo, full.grid);
  const D = 30 * 9;

  it('peaks at a single moving point scatterer with power |a|^2 sum |alpha_s|^2', () => {
    const p0 = 806 + 12 * 31 + 20; // (4.0, 2.4, 1.0)
    const w = scatterWindow(full, [p0], [(s) => [Math.cos(0.3 * s) * (1 + 0.01 * s), Math.sin(0.3 * s)]], 64);
    const map = new Float32Array(full.grid.size);
    full.beamform(w, map);
    expect(argmax(map)).toBe(p0);
    let want = 0;
    for (let s = 0; s < 64; s++) want += (1 + 0.01 * s) ** 2 * Math.cos(0.3 * s) ** 2 + Math.sin(0.3 * s) ** 2;
    expect(map[p0]! / (want * D)).toBeCloseTo(1, 3);
    // A point 1 m away is clearly weaker.
    expect(map[p0 - 5]!).toBeLessThan(0.9 * map[p0]!);
  });

  it('with 4 principal components equals the plain sum on a window of rank 3, and writes in place', () => {
    const pts = [806 + 12 * 31 + 20, 10 * 31 + 5, 2 * 806 + 20 * 31 + 10];
    const w = scatterWindow(
      full,
      pts,
      [
        (s) => [Math.cos(0.2 * s), Math.sin(0.2 * s)],
        (s) => [0.5 * Math.cos(-0.5 * s + 1), 0.5 * Math.sin(-0.5 * s + 1)],
        (s) => [0.2 * Math.sin(0.05 * s), 0],
      ],
      64,
    );
    const a = new Float32Array(full.grid.size);
    const b = new Float32Array(full.grid.size).fill(123);
    full.beamform(w, a);
    const ret = pca.beamform(w, b);
    expect(ret).toBe(b);
    expect(pca.capturedFraction).toBeGreaterThan(0.9999);
    let peak = 0;
    for (let i = 0; i < a.length; i++) peak = Math.max(peak, a[i]!);
    for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-4 * peak);
  });

  it.each([
    ['30 subcarriers at 5180 MHz', SUBCARRIERS[30], 5.18e9],
    ['114 subcarriers at 5190 MHz', SUBCARRIERS[114], 5.19e9],
  ])("the 'delay' method equals the exactly 'factored' contraction to 1e-5 of the peak: %s", (_n, sc, centre) => {
    const g = linkGeometry(LINK2!.tx, LINK2!.rx, sc, centre);
    const exact = new FloorBeamformer(g, ROOM, { method: 'factored', components: 0 });
    const fast = new FloorBeamformer(g, exact.grid, { method: 'delay', components: 0 });
    expect([exact.method, fast.method]).toEqual(['factored', 'delay']);
    // Scatterers off the grid points too: (x, y, z) anywhere, built from the direct formula.
    const pts: Array<[number, number, number]> = [
      [2.37, 1.91, 1.13],
      [4.62, 3.05, 0.71],
      [0.93, 4.4, 1.52],
    ];
    const nSubs = sc.length;
    const D = nSubs * 9;
    const data = new Float32Array(2 * D * 16);
    pts.forEach(([x, y, z], j) => {
      const a = directSteering(g, x, y, z);
      for (let s = 0; s < 16; s++) {
        const ar = Math.cos((j + 1) * 0.4 * s) / (j + 1);
        const ai = Math.sin((j + 1) * 0.4 * s) / (j + 1);
        for (let c = 0; c < 2 * D; c += 2) {
          data[2 * s * D + c] = data[2 * s * D + c]! + ar * a[c]! - ai * a[c + 1]!;
          data[2 * s * D + c + 1] = data[2 * s * D + c + 1]! + ar * a[c + 1]! + ai * a[c]!;
        }
      }
    });
    const w: MovingWindow = { nSub: nSubs, nRx: 3, nTx: 3, snapshots: 16, data, time: 0 };
    const a = exact.beamform(w, new Float32Array(exact.grid.size));
    const b = fast.beamform(w, new Float32Array(exact.grid.size));
    expectCloseToPeak(a, b, 1e-5);
    expect(argmax(b)).toBe(argmax(a));
  });

  it.each([
    ['30 subcarriers', SUBCARRIERS[30], 11],
    ['114 subcarriers', SUBCARRIERS[114], 14],
  ])("the 'delay' tables through Chebyshev samples: U V equals the expansion E to 1e-11 (%s)", (_n, sc, points) => {
    const bf = new FloorBeamformer(linkGeometry(LINK1!.tx, LINK1!.rx, sc, 5.18e9), ROOM);
    const inner = bf as unknown as { chebPoints: number; chebWeights: Float64Array; chebSteer: Float64Array; expansion: Float64Array; nodes: number };
    const { chebPoints: N, chebWeights: U, chebSteer: V, expansion: E, nodes } = inner;
    const n = sc.length;
    expect(N).toBe(points);
    let worst = 0;
    for (let jo = 0; jo < nodes * 4; jo++) {
      for (let k = 0; k < n; k++) {
        let re = 0;
        let im = 0;
        for (let i = 0; i < N; i++) {
          re += U[jo * N + i]! * V[2 * (i * n + k)]!;
          im += U[jo * N + i]! * V[2 * (i * n + k) + 1]!;
        }
        worst = Math.max(worst, Math.hypot(re - E[2 * (jo * n + k)]!, im - E[2 * (jo * n + k) + 1]!));
      }
    }
    // Measured 1.7e-12 (30) and 5.1e-12 (114); the order-0 entries have modulus 1.
    expect(worst).toBeLessThan(1e-11);
  });

  it('keeps only the strongest directions of a window of higher rank', () => {
    // Six scatterers of falling strength: 2 components keep the two strongest.
    const pts = [100, 400, 700, 1000, 1300, 1600];
    const amps = pts.map((_, j) => (s: number): [number, number] => [Math.cos((j + 1) * 0.37 * s) / (j + 1) ** 2, Math.sin((j + 1) * 0.37 * s) / (j + 1) ** 2]);
    const w = scatterWindow(full, pts, amps, 64);
    const two = new FloorBeamformer(geo, full.grid, { components: 2 });
    const map = new Float32Array(full.grid.size);
    two.beamform(w, map);
    expect(two.capturedFraction).toBeGreaterThan(0.9);
    expect(two.capturedFraction).toBeLessThan(0.999);
    expect(argmax(map)).toBe(100);
  });

  it('warm start: the next window starts from the last components, so a window seen twice is the cold start with one pass more', () => {
    // Six scatterers of falling strength (rank 6 > 4 components): one pass does not converge.
    const pts = [100, 400, 700, 1000, 1300, 1600];
    const amps = pts.map((_, j) => (s: number): [number, number] => [Math.cos((j + 1) * 0.37 * s) / (j + 1), Math.sin((j + 1) * 0.37 * s) / (j + 1)]);
    const w = scatterWindow(full, pts, amps, 64);
    const zero: MovingWindow = { ...w, data: new Float32Array(w.data.length) };
    const warm = new FloorBeamformer(geo, full.grid, { warmStart: true, iterations: 0 });
    const cold0 = new FloorBeamformer(geo, full.grid, { iterations: 0 });
    const cold1 = new FloorBeamformer(geo, full.grid, { iterations: 1 });
    const map = (bf: FloorBeamformer, win: MovingWindow) => bf.beamform(win, new Float32Array(full.grid.size));
    const first = map(cold0, w);
    const second = map(cold1, w);
    // The first window has nothing to start from: the strongest snapshots, as cold.
    expectCloseToPeak(first, map(warm, w), 1e-6);
    // The same window again: one more pass from the first's components.
    expectCloseToPeak(second, map(warm, w), 1e-6);
    expect(warm.capturedFraction).toBeCloseTo(cold1.capturedFraction, 9);
    // (and the pass matters here: the maps of one and two passes differ.)
    expect(() => expectCloseToPeak(first, second, 1e-4)).toThrow();
    // A window without power leaves zero components: the next window starts cold again.
    map(warm, zero);
    expectCloseToPeak(first, map(warm, w), 1e-6);
  });

  it('gives a zero map for an empty or all-zero window and refuses a window of another shape', () => {
    const map = new Float32Array(pca.grid.size).fill(7);
    pca.beamform({ nSub: 30, nRx: 3, nTx: 3, snapshots: 64, data: new Float32Array(2 * D * 64), time: 0 }, map);
    expect(map.every((v) => v === 0)).toBe(true);
    map.fill(7);
    pca.beamform({ nSub: 30, nRx: 3, nTx: 3, snapshots: 0, data: new Float32Array(0), time: 0 }, map);
    expect(map.every((v) => v === 0)).toBe(true);
    expect(() => pca.beamform({ nSub: 56, nRx: 3, nTx: 3, snapshots: 1, data: new Float32Array(2 * 56 * 9), time: 0 }, map)).toThrow(RangeError);
  });
});

describe('fuseMaps', () => {
  it('sums the maps each divided by its own total', () => {
    const a = Float32Array.from([1, 3, 0, 0]);
    const b = Float32Array.from([0, 100, 100, 0]);
    const z = new Float32Array(4);
    const out = fuseMaps([a, b, z], new Float32Array(4));
    expect(Array.from(out)).toEqual([0.25, 0.75 + 0.5, 0.5, 0]);
  });
});
