/**
 * Candidate people by successive peak removal (src/physics/candidates.ts): on hand-made maps, and
 * end to end against the simulator's ground truth (geometry.ts -> beamform.ts -> fuseMaps ->
 * findCandidates) with people walking in the default site, impairments off.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS, siteLinks } from '../../src/csi/radios.js';
import { FloorBeamformer, floorGrid, fuseMaps } from '../../src/physics/beamform.js';
import { findCandidates, type Candidate } from '../../src/physics/candidates.js';
import { centreFrequencyHz, linkGeometry } from '../../src/physics/geometry.js';
import type { MovingWindow } from '../../src/physics/types.js';
import type { PersonSpec } from '../../src/sim/scenario.js';
import { CsiSimulator, type GroundTruth } from '../../src/sim/simulator.js';

const ROOM = { x0: 0, x1: 6, y0: 0, y1: 5 };

describe('findCandidates on a hand-made map', () => {
  const grid = floorGrid(ROOM);
  /** Gaussian blobs [x, y, layer, amplitude, width] summed on the grid. */
  function blobs(list: Array<[number, number, number, number, number]>): Float32Array {
    const map = new Float32Array(grid.size);
    for (let h = 0; h < 3; h++) {
      for (let iy = 0; iy < grid.ny; iy++) {
        for (let ix = 0; ix < grid.nx; ix++) {
          let v = 0.001;
          for (const [x, y, layer, a, w] of list) {
            if (layer !== h) continue;
            v += a * Math.exp(-((ix * 0.2 - x) ** 2 + (iy * 0.2 - y) ** 2) / (2 * w * w));
          }
          map[(h * grid.ny + iy) * grid.nx + ix] = v;
        }
      }
    }
    return map;
  }

  it('finds the peaks strongest first, at their heights, refined between cells', () => {
    // Peaks between grid points: without the parabolic refinement x would be off by 0.1 m.
    const map = blobs([
      [2.1, 3.3, 1, 1, 0.3],
      [4.5, 1.1, 2, 0.6, 0.3],
      [1.0, 1.0, 0, 0.3, 0.3],
    ]);
    const found = findCandidates(map, grid, { maxCandidates: 5, minFraction: 0.2 });
    expect(found.map((c) => c.z)).toEqual([1.0, 1.4, 0.5]);
    const want = [
      [2.1, 3.3],
      [4.5, 1.1],
      [1.0, 1.0],
    ];
    found.forEach((c, i) => {
      expect(Math.abs(c.x - want[i]![0]!), `candidate ${i} x ${c.x}`).toBeLessThan(0.03);
      expect(Math.abs(c.y - want[i]![1]!), `candidate ${i} y ${c.y}`).toBeLessThan(0.03);
    });
    expect(found[0]!.power).toBeGreaterThan(found[1]!.power);
    expect(found[1]!.power).toBeGreaterThan(found[2]!.power);
    expect(map[found[0]!.index]).toBe(found[0]!.power);
  });

  it('suppresses the neighbourhood of a peak on every layer, and stops below the fraction or at the maximum', () => {
    // A shoulder 0.4 m from the main peak (inside the 1 m radius), the same place on another layer,
    // and a peak at 0.15 of the first (below a 0.2 fraction).
    const map = blobs([
      [3, 2.5, 1, 1, 0.2],
      [3.4, 2.5, 1, 0.7, 0.1],
      [3, 2.5, 0, 0.9, 0.2],
      [5, 4.4, 2, 0.5, 0.2],
      [0.6, 4.4, 2, 0.15, 0.2],
    ]);
    const found = findCandidates(map, grid, { maxCandidates: 6, minFraction: 0.2 });
    expect(found.map((c): [number, number] => [Math.round(c.x * 10) / 10, Math.round(c.y * 10) / 10])).toEqual([
      [3, 2.5],
      [5, 4.4],
    ]);
    // With a small radius the shoulder and the layer below come back as candidates.
    const tight = findCandidates(map, grid, { maxCandidates: 6, minFraction: 0.2, suppressRadius: 0.1 });
    expect(tight.length).toBeGreaterThan(2);
    // The maximum count wins over the fraction; a lower fraction lets the weak peak in.
    expect(findCandidates(map, grid, { maxCandidates: 1 }).length).toBe(1);
    const all = findCandidates(map, grid, { maxCandidates: 3, minFraction: 0.1 });
    expect(Math.round(all[2]!.x * 10) / 10).toBe(0.6);
  });

  it('returns nothing for an empty map and reuses a scratch buffer', () => {
    const scratch = new Uint8Array(grid.size).fill(1);
    expect(findCandidates(new Float32Array(grid.size), grid, { scratch })).toEqual([]);
    const map = blobs([[3, 2.5, 1, 1, 0.3]]);
    expect(findCandidates(map, grid, { scratch, maxCandidates: 1 }).length).toBe(1);
  });
});

/** The default site's beamformers, the simulator and the windows of its links along a walk. */
function walkAndLocate(people: PersonSpec[], windows: number, skipTicks: number): Array<{ truth: GroundTruth; found: Candidate[] }> {
  const W = 64;
  const sim = new CsiSimulator({ seed: 5, radios: DEFAULT_RADIOS, impairments: false, realism: 'ideal', people });
  const grid = floorGrid(ROOM);
  const centre = centreFrequencyHz(sim.channelNumber, sim.bandwidthMhz, sim.subcarriers.length);
  const bfs = siteLinks(DEFAULT_RADIOS).map((l) => new FloorBeamformer(linkGeometry(l.tx, l.rx, sim.subcarriers, centre), grid));
  const maps = bfs.map(() => new Float32Array(grid.size));
  const fused = new Float32Array(grid.size);
  const len = 2 * sim.subcarriers.length * 9;
  const data = bfs.map(() => new Float32Array(W * len));
  const mean = new Float64Array(len);
  for (let i = 0; i < skipTicks; i++) sim.nextTick();
  const out: Array<{ truth: GroundTruth; found: Candidate[] }> = [];
  for (let w = 0; w < windows; w++) {
    let truth: GroundTruth | undefined;
    for (let s = 0; s < W; s++) {
      const tick = sim.nextTick();
      // Impairments off: no packet is lost, every tick has one frame per link.
      expect(tick.frames.length).toBe(3);
      tick.frames.forEach((f, l) => data[l]!.set(f.csi, s * len));
      if (s === W / 2) truth = tick.truth;
    }
    // The moving part: each complex entry's window mean taken away (the static channel is constant).
    bfs.forEach((bf, l) => {
      const d = data[l]!;
      mean.fill(0);
      for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) mean[i] = mean[i]! + d[s * len + i]!;
      for (let s = 0; s < W; s++) for (let i = 0; i < len; i++) d[s * len + i] = d[s * len + i]! - mean[i]! / W;
      const win: MovingWindow = { nSub: bf.nSub, nRx: bf.nRx, nTx: bf.nTx, snapshots: W, data: d, time: 0 };
      bf.beamform(win, maps[l]!);
    });
    fuseMaps(maps, fused);
    out.push({ truth: truth!, found: findCandidates(fused, grid, { maxCandidates: people.length + 2 }) });
  }
  return out;
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1]!;

describe('against the simulator', () => {
  it('puts the strongest candidate on one person walking across the room (measured median 0.04 m over 7 windows, limit 0.35 m)', () => {
    const runs = walkAndLocate([{ x: 1.0, y: 1.0, height: 1.75, heading: 0, script: [{ at: 0, action: 'walk', to: { x: 5.0, y: 4.0 }, speed: 0.8 }] }], 7, 60);
    // Measured: 0.08, 0.01, 0.04, 0.04, 0.07, 0.11, 0.03 m (median 0.04 m).
    const errors = runs.map(({ truth, found }) => Math.hypot(found[0]!.x - truth.persons[0]!.floor.x, found[0]!.y - truth.persons[0]!.floor.y));
    // The person covered the room diagonally: the windows are not all in one place.
    const xs = runs.map((r) => r.truth.persons[0]!.floor.x);
    expect(Math.max(...xs) - Math.min(...xs)).toBeGreaterThan(2);
    expect(median(errors), `errors ${errors.map((e) => e.toFixed(2)).join(', ')}`).toBeLessThan(0.35);
  });

  it('finds two people walking apart among the first 3 candidates (measured medians 0.11 and 0.12 m over 6 windows, limit 0.5 m)', () => {
    const runs = walkAndLocate(
      [
        { x: 1.0, y: 0.9, height: 1.75, heading: Math.PI / 2, script: [{ at: 0, action: 'walk', to: { x: 1.4, y: 4.3 }, speed: 0.7 }] },
        { x: 5.0, y: 4.3, height: 1.65, heading: -Math.PI / 2, script: [{ at: 0, action: 'walk', to: { x: 4.6, y: 0.9 }, speed: 0.7 }] },
      ],
      6,
      50,
    );
    // Measured, nearest of the first 3 candidates per window: 0.11, 0.15, 0.02, 0.04, 0.20, 0.05 m
    // and 0.33, 0.08, 0.13, 0.03, 0.05, 0.12 m (medians 0.11 and 0.12 m).
    const errs: number[][] = [[], []];
    for (const { truth, found } of runs) {
      const [a, b] = truth.persons.map((p) => p.floor);
      expect(Math.hypot(a!.x - b!.x, a!.y - b!.y)).toBeGreaterThanOrEqual(2.5);
      truth.persons.forEach((p, i) => {
        errs[i]!.push(Math.min(...found.slice(0, 3).map((c) => Math.hypot(c.x - p.floor.x, c.y - p.floor.y))));
      });
    }
    for (const e of errs) expect(median(e), `errors ${e.map((v) => v.toFixed(2)).join(', ')}`).toBeLessThan(0.5);
  });
});
