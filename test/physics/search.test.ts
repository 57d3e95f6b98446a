/**
 * Coarse-to-fine candidate search (src/physics/candidates.ts, CandidateSearch) and the beamformer's
 * split into reduce and scan over listed points (src/physics/beamform.ts), against the plain
 * search: real simulator windows of the default site, and the floorMap operator over the walk of
 * test/operators/floorMap.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, toArray } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS, siteLinks } from '../../src/csi/radios.js';
import { floorMap, type FloorMapItem } from '../../operators/floorMap.js';
import { FloorBeamformer, floorGrid, fuseMaps } from '../../src/physics/beamform.js';
import { CandidateSearch, findCandidates } from '../../src/physics/candidates.js';
import { centreFrequencyHz, linkGeometry } from '../../src/physics/geometry.js';
import type { MovingWindow } from '../../src/physics/types.js';
import { CsiSimulator, type GroundTruth } from '../../src/sim/simulator.js';
import { expectCloseToPeak } from '../helpers/numeric.js';
import { LEARN, WALKER } from '../helpers/walker.js';

const ROOM = { x0: 0, x1: 6, y0: 0, y1: 5 };
const W = 64;

/** One window of each link of the default site (window mean removed), two people walking. */
function siteWindows(): { bfs: FloorBeamformer[]; wins: MovingWindow[] } {
  const sim = new CsiSimulator({ seed: 5, radios: DEFAULT_RADIOS, impairments: false, realism: 'ideal', people: 2 });
  for (let i = 0; i < 200; i++) sim.nextTick();
  const grid = floorGrid(ROOM);
  const centre = centreFrequencyHz(sim.channelNumber, sim.bandwidthMhz, sim.subcarriers.length);
  const bfs = siteLinks(DEFAULT_RADIOS).map((l) => new FloorBeamformer(linkGeometry(l.tx, l.rx, sim.subcarriers, centre), grid));
  const len = 2 * sim.subcarriers.length * 9;
  const data = bfs.map(() => new Float32Array(W * len));
  for (let s = 0; s < W; s++) sim.nextTick().frames.forEach((f, l) => data[l]!.set(f.csi, s * len));
  const wins = data.map((d) => {
    const mean = new Float64Array(len);
    for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) mean[i] = mean[i]! + d[s * len + i]! / W;
    for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) d[s * len + i] = d[s * len + i]! - mean[i]!;
    return { nSub: sim.subcarriers.length, nRx: 3, nTx: 3, snapshots: W, data: d, time: 0 };
  });
  return { bfs, wins };
}

describe('FloorBeamformer.reduce and scan', () => {
  const { bfs, wins } = siteWindows();
  const grid = bfs[0]!.grid;

  it('scans listed points to exactly the values of the full map and leaves the others alone', () => {
    const full = bfs[0]!.beamform(wins[0]!, new Float32Array(grid.size));
    const some = Int32Array.from([0, 17, 806 + 400, 2 * 806 + 400, 2417, 1000]);
    const part = new Float32Array(grid.size).fill(-1);
    bfs[0]!.reduce(wins[0]!);
    bfs[0]!.scan(part, some, 5);
    for (let i = 0; i < 5; i++) expect(part[some[i]!]).toBe(full[some[i]!]);
    // The sixth was not in the count: untouched; so is everything else.
    expect(part[1000]).toBe(-1);
    expect(part.filter((v) => v === -1).length).toBe(grid.size - 5);
  });

  it("beamforms the layers mirrored about the radios' common height once: 1.4 m equals 1.0 m, and a grid of 1.4 m alone", () => {
    // DEFAULT_RADIOS hang at 1.2 m: the 1.0 and 1.4 m layers are at the same distance from every antenna.
    const map = bfs[1]!.beamform(wins[1]!, new Float32Array(grid.size));
    for (let c = 0; c < grid.cells; c++) expect(map[2 * grid.cells + c]).toBe(map[grid.cells + c]);
    const geo = bfs[1]!.geometry;
    const single = new FloorBeamformer(geo, { ...ROOM, heights: [1.4] }).beamform(wins[1]!, new Float32Array(grid.cells));
    let peak = 0;
    let worst = 0;
    for (let c = 0; c < grid.cells; c++) {
      peak = Math.max(peak, single[c]!);
      worst = Math.max(worst, Math.abs(single[c]! - map[2 * grid.cells + c]!));
    }
    expect(worst / peak).toBeLessThan(1e-6);
  });

  it.each([1, 2, 3, 5])("with %i components the 'delay' scan equals the 'factored' one to 1e-5 of the peak", (r) => {
    const geo = bfs[2]!.geometry;
    const a = new FloorBeamformer(geo, grid, { components: r, method: 'factored' }).beamform(wins[2]!, new Float32Array(grid.size));
    const b = new FloorBeamformer(geo, grid, { components: r }).beamform(wins[2]!, new Float32Array(grid.size));
    expectCloseToPeak(a, b, 1e-5, grid.size);
  });
});

describe('CandidateSearch', () => {
  const { bfs, wins } = siteWindows();
  const grid = bfs[0]!.grid;
  const full = bfs.map((b, l) => b.beamform(wins[l]!, new Float32Array(grid.size)));
  const fusedFull = fuseMaps(full, new Float32Array(grid.size));
  const plain = findCandidates(fusedFull, grid, { maxCandidates: 6 });

  it('with step 1 is the plain search: every point, fused, searched', () => {
    const maps = bfs.map(() => new Float32Array(grid.size));
    const fused = new Float32Array(grid.size);
    bfs.forEach((b, l) => b.reduce(wins[l]!));
    const search = new CandidateSearch(grid, { step: 1 });
    expect(search.run(bfs, maps, fused, { maxCandidates: 6 })).toEqual(plain);
    expect(Array.from(fused)).toEqual(Array.from(fusedFull));
    expect(search.lastScanned).toBe(grid.size);
  });

  it('coarse-to-fine: the exact beam power wherever it beamformed, the same strong candidates, under half the points', () => {
    const maps = bfs.map(() => new Float32Array(grid.size));
    const fused = new Float32Array(grid.size);
    bfs.forEach((b, l) => b.reduce(wins[l]!));
    const search = new CandidateSearch(grid);
    const clock = { scan: 0, candidates: 0 };
    const found = search.run(bfs, maps, fused, { maxCandidates: 6 }, clock);
    expect(clock.scan).toBeGreaterThan(0);
    // Nodes every 0.4 m (16 x 14 with the last row, 3 layers), then the cells around the peaks.
    expect(search.coarse.length).toBe(16 * 14 * 3);
    expect(search.lastScanned).toBeGreaterThan(search.coarse.length);
    expect(search.lastScanned).toBeLessThan(grid.size / 2);
    let exact = 0;
    for (let p = 0; p < grid.size; p++) {
      if (!search.computed(p)) continue;
      exact++;
      for (let l = 0; l < bfs.length; l++) expect(maps[l]![p]).toBe(full[l]![p]);
    }
    expect(exact).toBe(search.lastScanned);
    // Each candidate's point and its 3 x 3 neighbourhood on every layer are exact.
    for (const c of found) {
      const cell = c.index % grid.cells;
      const iy = Math.floor(cell / grid.nx);
      const ix = cell - iy * grid.nx;
      for (let h = 0; h < 3; h++)
        for (let y = Math.max(0, iy - 1); y <= Math.min(grid.ny - 1, iy + 1); y++)
          for (let x = Math.max(0, ix - 1); x <= Math.min(grid.nx - 1, ix + 1); x++) expect(search.computed(h * grid.cells + y * grid.nx + x)).toBe(true);
    }
    // The plain search's candidates of at least 0.8 of the first are found within one cell.
    for (const c of plain.filter((c) => c.power >= 0.8 * plain[0]!.power)) {
      expect(Math.min(...found.map((f) => Math.hypot(f.x - c.x, f.y - c.y)))).toBeLessThanOrEqual(0.2 + 1e-9);
    }
  });

  it('refuses a step or reach that is not a positive integer', () => {
    expect(() => new CandidateSearch(grid, { step: 0 })).toThrow(RangeError);
    expect(() => new CandidateSearch(grid, { reach: 1.5 })).toThrow(RangeError);
  });
});

describe('floorMap coarseStep 2 against the plain search (the default site, default impairments)', () => {
  const sim = new CsiSimulator({ seed: 3, radios: DEFAULT_RADIOS, realism: 'ideal', people: [WALKER] });
  const frames: CsiFrame[] = [];
  const truth: GroundTruth[] = [];
  for (let i = 0; i < 1900; i++) {
    const t = sim.nextTick();
    frames.push(...t.frames);
    truth.push(t.truth);
  }
  const run = (coarseStep: number): Promise<FloorMapItem[]> => lastValueFrom(from(frames).pipe(floorMap({ learnSeconds: LEARN, coarseStep }), toArray()));

  it('keeps the strong candidates within one cell (measured: 145 of 146 of at least 0.8 of the first, every first one within 3 mm) and the walker as near', async () => {
    const [a, b] = [await run(1), await run(2)];
    expect(b.length).toBe(a.length);
    let strong = 0;
    let kept = 0;
    const firstMoved: number[] = [];
    for (let i = 0; i < a.length; i++) {
      const ca = a[i]!.candidates;
      const cb = b[i]!.candidates;
      if (ca.length === 0) continue;
      firstMoved.push(cb.length ? Math.hypot(ca[0]!.x - cb[0]!.x, ca[0]!.y - cb[0]!.y) : Infinity);
      for (const c of ca) {
        if (c.power < 0.8 * ca[0]!.power) continue;
        strong++;
        if (cb.some((d) => Math.hypot(c.x - d.x, c.y - d.y) <= 0.2 + 1e-9)) kept++;
      }
    }
    expect(Math.max(...firstMoved)).toBeLessThanOrEqual(0.2);
    expect(strong).toBeGreaterThan(100);
    expect(kept / strong).toBeGreaterThanOrEqual(0.98);
    // The first candidate's distance to the walker (measured median 0.143 m both ways).
    const t0 = truth[0]!.time;
    const err = (items: FloorMapItem[]): number[] =>
      items.flatMap((m) => {
        const p = truth[Math.round((m.time - t0) / 10) - W / 2]?.persons[0];
        const c = m.candidates[0];
        return p && c ? [Math.hypot(c.x - p.floor.x, c.y - p.floor.y)] : [];
      });
    const median = (v: number[]): number => [...v].sort((x, y) => x - y)[v.length >> 1]!;
    expect(Math.abs(median(err(b)) - median(err(a)))).toBeLessThan(0.02);
  }, 120_000);
});
