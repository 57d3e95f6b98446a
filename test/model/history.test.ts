import { describe, expect, it } from 'vitest';
import { FEATURE_DIM, OFFSETS } from '../../src/model/features.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES, HISTORY_WIDTH, HistoryRing, SUMMARY, summarise } from '../../src/model/history.js';

/** A feature row whose motion totals carry `id`, so a summary says which window it came from. */
function row(id: number): Float32Array {
  const r = new Float32Array(FEATURE_DIM);
  r[OFFSETS.totals] = id;
  r[OFFSETS.totals + 1] = -id;
  return r;
}

const FRAME_MS = 10;
const STRIDE_MS = HISTORY_STRIDE_FRAMES * FRAME_MS;

/** The window ids of a history input (NaN where a step is absent). */
function ids(h: Float32Array): number[] {
  return Array.from({ length: HISTORY_STEPS }, (_, k) => (h[k * HISTORY_DIM + SUMMARY.present] === 1 ? h[k * HISTORY_DIM + SUMMARY.totals]! : NaN));
}

describe('summarise', () => {
  it('takes totals, link-averaged Doppler, geometry and eigenvalues from the row', () => {
    const r = new Float32Array(FEATURE_DIM);
    r[OFFSETS.totals] = -3;
    r[OFFSETS.totals + 1] = -4;
    // Two present links; Doppler band 5 is 0.6 on one and 0.2 on the other.
    r[OFFSETS.linkMask] = 1;
    r[OFFSETS.linkMask + 1] = 1;
    r[OFFSETS.fastDoppler + 5] = 0.6;
    r[OFFSETS.fastDoppler + 8 + 5] = 0.2;
    for (let i = 0; i < 16; i++) r[OFFSETS.geometry + i] = i / 10;
    for (let i = 0; i < 4; i++) r[OFFSETS.fastEigen + i] = 0.5 - i / 10;
    const s = new Float32Array(HISTORY_DIM);
    summarise(r, s);
    expect(s[SUMMARY.present]).toBe(1);
    expect([s[SUMMARY.totals], s[SUMMARY.totals + 1]]).toEqual([-3, -4]);
    expect(s[SUMMARY.doppler + 5]).toBeCloseTo(0.4, 6);
    expect(s[SUMMARY.doppler + 4]).toBe(0);
    for (let i = 0; i < 16; i++) expect(s[SUMMARY.geometry + i]).toBeCloseTo(i / 10, 6);
    for (let i = 0; i < 4; i++) expect(s[SUMMARY.eigen + i]).toBeCloseTo(0.5 - i / 10, 6);
  });
});

describe('HistoryRing', () => {
  it('gives the windows that ended 1..16 strides before, oldest first, and zeros before the stream began', () => {
    const ring = new HistoryRing(FRAME_MS);
    const h = new Float32Array(HISTORY_WIDTH);
    // Windows every 8 frames (the service's hop): 4 per stride.
    const t0 = 1_000_000;
    for (let i = 0; i < 40; i++) ring.push(t0 + i * 80, row(i));
    const end = t0 + 40 * 80;
    ring.historyFor(end, h);
    // Step k is the window ending (16 - k) strides before: window 40 - 4 (16 - k).
    const want = Array.from({ length: HISTORY_STEPS }, (_, k) => 40 - 4 * (HISTORY_STEPS - k)).map((w) => (w >= 0 ? w : NaN));
    expect(ids(h)).toEqual(want);
    expect(want.filter(Number.isFinite).length).toBe(10);
  });

  it('a hop of 16 frames (training data) and of 8 (the service) give the same history', () => {
    const a = new HistoryRing(FRAME_MS);
    const b = new HistoryRing(FRAME_MS);
    for (let i = 0; i < 200; i++) {
      a.push(i * 80, row(i));
      if (i % 2 === 0) b.push(i * 80, row(i));
    }
    const ha = new Float32Array(HISTORY_WIDTH);
    const hb = new Float32Array(HISTORY_WIDTH);
    a.historyFor(200 * 80, ha);
    b.historyFor(200 * 80, hb);
    expect(Array.from(hb)).toEqual(Array.from(ha));
    expect(ids(ha).every(Number.isFinite)).toBe(true);
  });

  it('tolerates frame jitter and leaves out steps that fall in a gap of the stream', () => {
    const ring = new HistoryRing(FRAME_MS);
    for (let i = 0; i < 100; i++) {
      const t = i * 80 + ((i * 37) % 11) - 5; // +-5 ms jitter
      if (i >= 60 && i < 72) continue; // ~1 s without windows
      ring.push(t, row(i));
    }
    const h = new Float32Array(HISTORY_WIDTH);
    ring.historyFor(100 * 80, h);
    const got = ids(h);
    let absent = 0;
    for (let k = 0; k < HISTORY_STEPS; k++) {
      const w = 100 - 4 * (HISTORY_STEPS - k);
      // Deep in the gap no window is within half a stride (160 ms) of the step: absent. At its
      // edges the nearest window within half a stride stands in.
      if (w >= 62 && w <= 69) {
        expect(got[k], `step ${k}`).toBeNaN();
        absent++;
      } else if (w < 60 || w >= 72) expect(got[k], `step ${k}`).toBe(w);
      else expect([59, 72]).toContain(got[k]);
    }
    expect(absent).toBe(2);
  });

  it('forgets everything when time runs backwards (a replay restarting) or the rate changes', () => {
    const ring = new HistoryRing(FRAME_MS);
    for (let i = 0; i < 50; i++) ring.push(10_000 + i * 80, row(i));
    ring.push(0, row(999));
    const h = new Float32Array(HISTORY_WIDTH);
    ring.historyFor(STRIDE_MS, h);
    expect(ids(h).filter(Number.isFinite)).toEqual([999]);
    // A wobble of the rate estimate keeps the history; another rate does not.
    ring.setFrameMs(FRAME_MS * 1.05);
    ring.historyFor(STRIDE_MS, h);
    expect(ids(h).filter(Number.isFinite)).toEqual([999]);
    ring.setFrameMs(20);
    ring.historyFor(2 * STRIDE_MS, h);
    expect(ids(h).every(Number.isNaN)).toBe(true);
  });
});
