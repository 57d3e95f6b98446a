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

/** The default room's walls, and its ceiling as the simulator has it. */
const ROOM = { width: 6, depth: 5, height: 2.8 };

/**
 * A static channel with chain phases ALPHA (rx) and BETA (tx): the line of sight (amplitude 1)
 * and, given, reflections off the room's surfaces (the transmitter mirrored; amplitude and phase
 * per surface), written independently of chains.ts.
 */
function staticChannel(
  reflections: ReadonlyArray<{ mirror: (p: [number, number, number]) => [number, number, number]; re: number; im: number }> = [],
): Float32Array {
  const out = new Float32Array(nSub * nRx * nTx * 2);
  const tp = geometry.txPositions;
  const rp = geometry.rxPositions;
  const paths = [{ mirror: (p: [number, number, number]) => p, re: 1, im: 0 }, ...reflections];
  for (let k = 0; k < nSub; k++)
    for (let m = 0; m < nRx; m++)
      for (let n = 0; n < nTx; n++) {
        let re = 0;
        let im = 0;
        for (const path of paths) {
          const [x, y, z] = path.mirror([tp[3 * n]!, tp[3 * n + 1]!, tp[3 * n + 2]!]);
          const len = Math.hypot(x - rp[3 * m]!, y - rp[3 * m + 1]!, z - rp[3 * m + 2]!);
          const ph = (-2 * Math.PI * geometry.frequencies[k]! * len) / SPEED_OF_LIGHT + ALPHA[m]! + BETA[n]!;
          re += path.re * Math.cos(ph) - path.im * Math.sin(ph);
          im += path.re * Math.sin(ph) + path.im * Math.cos(ph);
        }
        const i = 2 * ((k * nRx + m) * nTx + n);
        out[i] = re;
        out[i + 1] = im;
      }
  return out;
}

/** The line of sight alone. */
const losChannel = (): Float32Array => staticChannel();

/** Walls, floor and ceiling of ROOM with the amplitudes of a real room's first-order reflections (0.2-0.5, any phase). */
const REFLECTIONS = [
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [-x, y, z], re: 0.3, im: 0.1 },
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [2 * ROOM.width - x, y, z], re: -0.2, im: 0.25 },
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [x, -y, z], re: 0.1, im: -0.35 },
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [x, 2 * ROOM.depth - y, z], re: -0.4, im: -0.1 },
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [x, y, -z], re: 0.35, im: 0.3 },
  { mirror: ([x, y, z]: [number, number, number]): [number, number, number] => [x, y, 2 * ROOM.height - z], re: -0.15, im: 0.2 },
];

/** The largest error of a correction's pair phases against ALPHA + BETA, after taking one common phase out, radians. */
function phaseError(corr: Float32Array): number {
  const wrap = (a: number) => Math.atan2(Math.sin(a), Math.cos(a));
  const common: number[] = [];
  for (let m = 0; m < nRx; m++)
    for (let n = 0; n < nTx; n++) common.push(ALPHA[m]! + BETA[n]! + Math.atan2(corr[2 * (m * nTx + n) + 1]!, corr[2 * (m * nTx + n)]!));
  return Math.max(...common.map((c) => Math.abs(wrap(c - common[0]!))));
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

  it("with the room's walls recovers the chain phases that the walls' reflections pull the line-of-sight fit away from", () => {
    const channel = staticChannel(REFLECTIONS);
    const los = phaseError(chainCorrection(channel, geometry));
    const room = phaseError(chainCorrection(channel, geometry, ROOM));
    expect(los).toBeGreaterThan(0.05);
    expect(room).toBeLessThan(0.005);
    expect(room).toBeLessThan(los / 10);
    // Without reflections both fits are exact; the room fit does not invent phases that are not there.
    expect(phaseError(chainCorrection(losChannel(), geometry, ROOM))).toBeLessThan(1e-3);
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

  it("in npm start's room (the `room` realism: furniture, second-order reflections, drifting chains) gives more people a candidate of their own", async () => {
    // The default room's two generated people; the first 10 s are the empty room as the stage takes it.
    const sim = new CsiSimulator({ seed: 1, people: 2, radios: DEFAULT_RADIOS, realism: 'room' });
    const frames: CsiFrame[] = [];
    const truths = new Map<number, Array<{ x: number; y: number }>>();
    for (let i = 0; i < 3000; i++) {
      const t = sim.nextTick();
      frames.push(...t.frames);
      truths.set(
        t.frames[0]!.time,
        t.truth.persons.map((p) => p.floor),
      );
    }
    const start = frames[0]!.time;
    const covered = async (chainCalibration: boolean): Promise<number> => {
      const maps = await firstValueFrom(from(frames).pipe(floorMap({ learnSeconds: 10, chainCalibration }), toArray()));
      let near = 0;
      let people = 0;
      for (const m of maps) {
        const persons = truths.get(m.time);
        if (!persons || m.time < start + 11_000) continue;
        for (const p of persons) {
          people++;
          if (m.candidates.some((c) => Math.hypot(c.x - p.x, c.y - p.y) <= 0.6)) near++;
        }
      }
      return near / people;
    };
    const off = await covered(false);
    const on = await covered(true);
    expect(on).toBeGreaterThan(off + 0.15);
  }, 180_000);
});
