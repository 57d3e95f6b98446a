import { describe, expect, it } from 'vitest';
import {
  DOPPLER_BANDS,
  REFINER_FEATURE_DIM,
  REFINER_FEATURES,
  REFINER_STEPS,
  REFINER_STRIDE,
  RefinerInput,
  TRACK_DROP_MS,
  type RefinerMap,
} from '../../src/physics/refinerInput.js';
import type { Candidate } from '../../src/physics/candidates.js';

const NX = 10;
const NY = 8;
const HEIGHTS = [0.5, 1.0, 1.4];
const BINS = 16;
const RATES = Float64Array.from({ length: BINS }, (_, i) => (-((i - BINS / 2) * 100) / BINS) * 0.058);
const f = (name: string) => REFINER_FEATURES.indexOf(name);

/** A map of the 10 x 8 x 3 grid (0.2 m cells from the origin) with candidates at the given cells. */
function mapOf(
  time: number,
  cands: { ix: number; iy: number; layer?: number; power: number }[],
  doppler?: (i: number, b: number) => number,
  env = 'e',
): RefinerMap {
  const map = new Float32Array(NX * NY * HEIGHTS.length).fill(0.01);
  const candidates: Candidate[] = cands.map((c) => {
    const index = (c.layer ?? 1) * NX * NY + c.iy * NX + c.ix;
    map[index] = c.power;
    return { x: c.ix * 0.2, y: c.iy * 0.2, z: HEIGHTS[c.layer ?? 1]!, power: c.power, index };
  });
  const d = new Float32Array(cands.length * BINS);
  if (doppler) for (let i = 0; i < cands.length; i++) for (let b = 0; b < BINS; b++) d[i * BINS + b] = doppler(i, b);
  return {
    environmentId: env,
    time,
    grid: { nx: NX, ny: NY, heights: HEIGHTS },
    map,
    candidates,
    links: ['tx-rx1', 'tx-rx2'],
    doppler: d,
    dopplerBins: BINS,
    dopplerRates: RATES,
  };
}

const row = (features: Float32Array, cand: number, step: number) =>
  features.subarray((cand * REFINER_STEPS + step) * REFINER_FEATURE_DIM, (cand * REFINER_STEPS + step + 1) * REFINER_FEATURE_DIM);

describe('RefinerInput', () => {
  it('names every feature once', () => {
    expect(REFINER_FEATURES.length).toBe(REFINER_FEATURE_DIM);
    expect(new Set(REFINER_FEATURES).size).toBe(REFINER_FEATURE_DIM);
  });

  it('follows a walker: every step present, positions relative to now, speed from the last step', () => {
    const input = new RefinerInput(6);
    const maps = REFINER_STEPS * REFINER_STRIDE;
    let b = input.push(mapOf(0, [{ ix: 0, iy: 4, power: 1 }]));
    for (let k = 1; k < maps; k++) b = input.push(mapOf(k * 160, [{ ix: Math.min(9, Math.floor(k / 4)), iy: 4, power: 1 }]));
    expect(b.count).toBe(1);
    const now = Math.min(9, Math.floor((maps - 1) / 4)) * 0.2;
    expect(b.positions[0]).toBeCloseTo(now, 5);
    for (let s = 0; s < REFINER_STEPS; s++) expect(row(b.features, 0, s)[f('present')]).toBe(1);
    // The oldest step is the map (REFINER_STEPS - 1) * REFINER_STRIDE maps back: map 1.
    const oldestMap = maps - 1 - (REFINER_STEPS - 1) * REFINER_STRIDE;
    expect(row(b.features, 0, 0)[f('dx')]).toBeCloseTo(Math.min(9, Math.floor(oldestMap / 4)) * 0.2 - now, 5);
    expect(row(b.features, 0, REFINER_STEPS - 1)[f('dx')]).toBe(0);
    expect(row(b.features, 0, 0)[f('dy')]).toBeCloseTo(0, 6);
  });

  it('measures speed over one step of REFINER_STRIDE maps', () => {
    const input = new RefinerInput(6);
    let b = input.push(mapOf(0, [{ ix: 0, iy: 0, power: 1 }]));
    for (let k = 1; k <= REFINER_STRIDE; k++) b = input.push(mapOf(k * 160, [{ ix: k, iy: 0, power: 1 }]));
    // REFINER_STRIDE cells of 0.2 m in REFINER_STRIDE x 0.16 s.
    expect(row(b.features, 0, REFINER_STEPS - 1)[f('speed')]).toBeCloseTo((REFINER_STRIDE * 0.2) / (REFINER_STRIDE * 0.16), 4);
  });

  it('keeps each candidate on its own track when their order by power swaps', () => {
    const input = new RefinerInput(6);
    let b = input.push(
      mapOf(0, [
        { ix: 1, iy: 1, power: 2 },
        { ix: 8, iy: 6, power: 1 },
      ]),
    );
    for (let k = 1; k < 2 * REFINER_STRIDE; k++) {
      const a = { ix: 1, iy: 1, power: k % 2 ? 1 : 2 };
      const c = { ix: 8, iy: 6, power: k % 2 ? 2 : 1 };
      b = input.push(mapOf(k * 160, k % 2 ? [c, a] : [a, c]));
    }
    // Every recorded step of either candidate is at its own place: dx, dy 0 (a swap would give +-1.4 m).
    for (let i = 0; i < 2; i++) {
      for (let s = 0; s < REFINER_STEPS; s++) {
        const r = row(b.features, i, s);
        if (r[f('present')] !== 1) continue;
        expect(Math.abs(r[f('dx')]!) + Math.abs(r[f('dy')]!)).toBeLessThan(1e-6);
      }
    }
  });

  it('starts a new track for a candidate beyond the gate: its past steps are absent (all zeros)', () => {
    const input = new RefinerInput(6);
    for (let k = 0; k < 2 * REFINER_STEPS; k++) input.push(mapOf(k * 160, [{ ix: 0, iy: 0, power: 1 }]));
    const b = input.push(
      mapOf(2 * REFINER_STEPS * 160, [
        { ix: 0, iy: 0, power: 1 },
        { ix: 9, iy: 7, power: 0.5 },
      ]),
    );
    expect(row(b.features, 0, REFINER_STEPS - 2)[f('present')]).toBe(1);
    expect(row(b.features, 1, REFINER_STEPS - 1)[f('present')]).toBe(1);
    for (let s = 0; s < REFINER_STEPS - 1; s++) expect(Array.from(row(b.features, 1, s)).every((v) => v === 0)).toBe(true);
    expect(row(b.features, 1, REFINER_STEPS - 1)[f('relative_power')]).toBeCloseTo(0.5, 6);
    expect(row(b.features, 1, REFINER_STEPS - 1)[f('rank')]).toBeCloseTo(1 / 6, 6);
  });

  it('forgets a track not seen for TRACK_DROP_MS, and everything when time goes back', () => {
    const input = new RefinerInput(6);
    for (let k = 0; k < 10; k++) input.push(mapOf(k * 160, [{ ix: 3, iy: 3, power: 1 }]));
    // Silence at that place (another candidate elsewhere) past the drop time, then back: a new track.
    input.push(mapOf(1600 + TRACK_DROP_MS + 1, [{ ix: 9, iy: 7, power: 1 }]));
    input.push(mapOf(1600 + TRACK_DROP_MS + 2, [{ ix: 9, iy: 7, power: 1 }]));
    let b = input.push(mapOf(1600 + TRACK_DROP_MS + 160, [{ ix: 3, iy: 3, power: 1 }]));
    expect(row(b.features, 0, REFINER_STEPS - 1 - 1)[f('present')]).toBe(0);
    expect(row(b.features, 0, REFINER_STEPS - 1 - 2)[f('present')]).toBe(0);
    // Time back: no past at all.
    b = input.push(mapOf(0, [{ ix: 3, iy: 3, power: 1 }]));
    for (let s = 0; s < REFINER_STEPS - 1; s++) expect(row(b.features, 0, s)[f('present')]).toBe(0);
  });

  it('keeps environments apart', () => {
    const input = new RefinerInput(6);
    for (let k = 0; k < 8; k++) input.push(mapOf(k * 160, [{ ix: 3, iy: 3, power: 1 }], undefined, 'a'));
    const b = input.push(mapOf(8 * 160, [{ ix: 3, iy: 3, power: 1 }], undefined, 'b'));
    for (let s = 0; s < REFINER_STEPS - 1; s++) expect(row(b.features, 0, s)[f('present')]).toBe(0);
  });

  it('writes the patch around the peak over its power, layer by layer, zero outside the grid', () => {
    const input = new RefinerInput(6);
    const m = mapOf(0, [{ ix: 0, iy: 3, layer: 2, power: 4 }]);
    m.map[1 * NX * NY + 3 * NX + 1] = 2; // layer 1, right neighbour
    const r = row(input.push(m).features, 0, REFINER_STEPS - 1);
    const patch = f('patch_0');
    // Layer 0: first row of 3 (iy 2): x -1 outside (0), x 0 and 1 at 0.01 / 4.
    expect(r[patch]).toBe(0);
    expect(r[patch + 1]).toBeCloseTo(0.0025, 6);
    // Layer 1 centre row: the neighbour at x + 1 is 2 / 4.
    expect(r[patch + 9 + 5]).toBeCloseTo(0.5, 6);
    // Layer 2 centre: the peak itself, 1.
    expect(r[patch + 18 + 4]).toBeCloseTo(1, 6);
    expect(r[f('z')]).toBeCloseTo(1.4, 6);
    expect(r[f('log_power')]).toBeCloseTo(Math.log10(4), 5);
    expect(r[f('links')]).toBeCloseTo(0.5, 6);
  });

  it('summarises the Doppler row: bands over the links, total, share at 0 Hz, mean |rate|', () => {
    const input = new RefinerInput(6);
    // Candidate 0 all at 0 Hz (bin BINS / 2); candidate 1 split between the first bin and 0 Hz.
    const m = mapOf(
      0,
      [
        { ix: 2, iy: 2, power: 1 },
        { ix: 8, iy: 6, power: 1 },
      ],
      (i, b) => (i === 0 ? (b === BINS / 2 ? 1.2 : 0) : b === 0 || b === BINS / 2 ? 0.5 : 0),
    );
    const b = input.push(m);
    const r0 = row(b.features, 0, REFINER_STEPS - 1);
    const r1 = row(b.features, 1, REFINER_STEPS - 1);
    const band0 = f('doppler_band_0');
    const per = BINS / DOPPLER_BANDS;
    expect(r0[band0 + BINS / 2 / per]).toBeCloseTo(0.6, 6); // 1.2 over 2 links
    expect(r0[f('doppler_total')]).toBeCloseTo(0.6, 6);
    expect(r0[f('doppler_still')]).toBeCloseTo(1, 6);
    expect(r0[f('doppler_mean_rate')]).toBeCloseTo(0, 6);
    expect(r1[band0]).toBeCloseTo(0.25, 6);
    expect(r1[f('doppler_still')]).toBeCloseTo(0.5, 6);
    expect(r1[f('doppler_mean_rate')]).toBeCloseTo(0.5 * Math.abs(RATES[0]!), 5);
  });

  it('reads at most maxCandidates candidates', () => {
    const input = new RefinerInput(2);
    const b = input.push(
      mapOf(0, [
        { ix: 1, iy: 1, power: 3 },
        { ix: 5, iy: 5, power: 2 },
        { ix: 9, iy: 1, power: 1 },
      ]),
    );
    expect(b.count).toBe(2);
    expect(b.features.length).toBe(2 * REFINER_STEPS * REFINER_FEATURE_DIM);
    expect(() => new RefinerInput(0)).toThrow(RangeError);
  });
});
