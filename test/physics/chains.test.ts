import { describe, expect, it } from 'vitest';
import { firstValueFrom, from, toArray } from 'rxjs';
import { applyChainCorrection, chainCorrection } from '../../src/physics/chains.js';
import { linkGeometry } from '../../src/physics/geometry.js';
import { DEFAULT_RADIOS, SPEED_OF_LIGHT, siteLinks } from '../../src/csi/radios.js';
import { CsiSimulator, SUBCARRIERS } from '../../src/sim/simulator.js';
import { floorMap } from '../../operators/floorMap.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { MovingWindow } from '../../src/physics/types.js';

const link = siteLinks(DEFAULT_RADIOS)[0]!;
const geometry = linkGeometry(link.tx, link.rx, SUBCARRIERS[30], 5.18e9);
const { nRx, nTx } = geometry;
const nSub = geometry.frequencies.length;
const ALPHA = [0, 1.3, -2.1];
const BETA = [0.4, -0.9, 2.7];

/** The line of sight alone, with chain phases ALPHA (rx) and BETA (tx). */
function losChannel(): Float32Array {
  const out = new Float32Array(nSub * nRx * nTx * 2);
  const tp = geometry.txPositions;
  const rp = geometry.rxPositions;
  for (let k = 0; k < nSub; k++)
    for (let m = 0; m < nRx; m++)
      for (let n = 0; n < nTx; n++) {
        const len = Math.hypot(tp[3 * n]! - rp[3 * m]!, tp[3 * n + 1]! - rp[3 * m + 1]!, tp[3 * n + 2]! - rp[3 * m + 2]!);
        const ph = (-2 * Math.PI * geometry.frequencies[k]! * len) / SPEED_OF_LIGHT + ALPHA[m]! + BETA[n]!;
        const i = 2 * ((k * nRx + m) * nTx + n);
        out[i] = Math.cos(ph);
        out[i + 1] = Math.sin(ph);
      }
  return out;
}

describe('chainCorrection', () => {
  it('recovers the chain phases of a line-of-sight channel up to one common phase', () => {
    const corr = chainCorrection(losChannel(), geometry);
    // corrected phase of pair (m, n): ALPHA_m + BETA_n + arg(corr): the same for every pair.
    const common: number[] = [];
    for (let m = 0; m < nRx; m++)
      for (let n = 0; n < nTx; n++) {
        const p = m * nTx + n;
        expect(Math.hypot(corr[2 * p]!, corr[2 * p + 1]!)).toBeCloseTo(1, 6);
        common.push(ALPHA[m]! + BETA[n]! + Math.atan2(corr[2 * p + 1]!, corr[2 * p]!));
      }
    const wrap = (a: number) => Math.atan2(Math.sin(a), Math.cos(a));
    for (const c of common) expect(Math.abs(wrap(c - common[0]!))).toBeLessThan(1e-4);
  });

  it('refuses a channel of another layout', () => {
    expect(() => chainCorrection(new Float32Array(10), geometry)).toThrow(RangeError);
  });

  it('applyChainCorrection rotates every sample of a pair by its factor', () => {
    const data = new Float32Array(2 * nSub * nRx * nTx * 2).fill(0);
    for (let i = 0; i < data.length; i += 2) data[i] = 1;
    const w: MovingWindow = { nSub, nRx, nTx, snapshots: 2, data, time: 0 };
    const corr = new Float32Array(nRx * nTx * 2);
    for (let p = 0; p < nRx * nTx; p++) {
      corr[2 * p] = Math.cos(p);
      corr[2 * p + 1] = Math.sin(p);
    }
    applyChainCorrection(w, corr);
    // Snapshot 1, subcarrier 5, pair 4.
    const i = 2 * (1 * nSub * nRx * nTx + 5 * nRx * nTx + 4);
    expect(data[i]).toBeCloseTo(Math.cos(4), 6);
    expect(data[i + 1]).toBeCloseTo(Math.sin(4), 6);
  });

  it('finds a walker in a room with random chain phases (floorMap chainCalibration) where the uncorrected map does not', async () => {
    const start = Date.UTC(2026, 0, 1);
    const realism = { preset: 'ideal' as const, chainPhaseRandom: true };
    const frames: CsiFrame[] = [];
    const empty = new CsiSimulator({ seed: 5, people: 0, radios: DEFAULT_RADIOS, startTime: start - 10_000, realism });
    for (let i = 0; i < 1000; i++) frames.push(...empty.nextTick().frames);
    const sim = new CsiSimulator({ seed: 5, people: 1, radios: DEFAULT_RADIOS, startTime: start, realism });
    const truths = new Map<number, { x: number; y: number }>();
    for (let i = 0; i < 1500; i++) {
      const t = sim.nextTick();
      for (const f of t.frames) frames.push(f);
      truths.set(t.frames[0]!.time, t.truth.persons[0]!.floor);
    }
    const median = async (chainCalibration: boolean): Promise<number> => {
      const maps = await firstValueFrom(from(frames).pipe(floorMap({ learnSeconds: 10, chainCalibration }), toArray()));
      const errs = maps
        .filter((m) => m.time >= start + 2000 && truths.has(m.time))
        .map((m) => {
          const p = truths.get(m.time)!;
          return Math.min(...m.candidates.slice(0, 2).map((c) => Math.hypot(c.x - p.x, c.y - p.y)));
        })
        .sort((a, b) => a - b);
      return errs[errs.length >> 1]!;
    };
    const off = await median(false);
    const on = await median(true);
    expect(on).toBeLessThan(0.5);
    expect(off).toBeGreaterThan(2 * on);
  }, 120_000);
});
