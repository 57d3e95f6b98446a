import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_TOLERANCE_MS, JOIN_DEPTH, LinkJoin } from '../../src/csi/linkJoin.js';
import {
  DEFAULT_TIMEOUT_SECONDS,
  DEGRADING_LINK_STATES,
  LAG_SAMPLES,
  LinkCounter,
  LinkMonitor,
  MAX_UNKNOWN_LINKS,
  RATE_WINDOW_MS,
  type LinkState,
} from '../../src/csi/linkMonitor.js';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { makeFrame } from '../helpers/frames.js';

const T0 = 1_767_225_600_000;

/** A 3x3x30 frame (the default site's layout) with sequence number `seq`, at T0 + ms. */
function frame(seq: number, ms = 0, linkId?: string): CsiFrame {
  const f = makeFrame({ nRx: 3, nTx: 3, nSub: 30, seq, time: T0 + ms });
  return linkId === undefined ? f : { ...f, linkId };
}

/** A counter that took `seqs`, one every 10 ms from T0; returns it and the last arrival's time. */
function counted(seqs: readonly number[]): { c: LinkCounter; last: number } {
  const c = new LinkCounter();
  seqs.forEach((seq, k) => c.mark(frame(seq, k * 10), T0 + k * 10));
  return { c, last: T0 + (seqs.length - 1) * 10 };
}

describe('LinkCounter: packets lost, from gaps in the sequence numbers', () => {
  const cases: ReadonlyArray<{ name: string; seqs: number[]; lost: number }> = [
    { name: 'consecutive', seqs: [0, 1, 2, 3], lost: 0 },
    { name: 'a gap of one, then of two', seqs: [0, 2, 5], lost: 3 },
    { name: "802.11's 12-bit counter wrapping without loss", seqs: [4094, 4095, 0, 1], lost: 0 },
    { name: 'the 12-bit counter wrapping over a gap', seqs: [4090, 2], lost: 7 },
    { name: "Intel 5300's 16-bit counter wrapping over a gap", seqs: [65_530, 3], lost: 8 },
    { name: 'a jump of exactly the largest gap is loss', seqs: [100, 1100], lost: 999 },
    { name: 'a jump beyond it is a restart of the sender', seqs: [100, 1101], lost: 0 },
    { name: 'going back without a wrap is a restart', seqs: [5000, 10], lost: 0 },
    { name: 'a 12-bit wrap longer than the largest gap is a restart', seqs: [3000, 10], lost: 0 },
    { name: 'a repeated number loses nothing', seqs: [7, 7, 8], lost: 0 },
    { name: 'a frame without a number is skipped, the gap measured across it', seqs: [1, NaN, 3], lost: 1 },
  ];
  it.each(cases)('$name: $seqs -> $lost lost', ({ seqs, lost }) => {
    const { c, last } = counted(seqs);
    expect(c.frames).toBe(seqs.length);
    expect(c.lossRate(last)).toBeCloseTo(lost / (seqs.length + lost), 12);
  });

  it('loss counts only the rate window: a gap older than it is forgotten', () => {
    const c = new LinkCounter();
    c.mark(frame(0), T0);
    c.mark(frame(5), T0 + 10);
    expect(c.lossRate(T0 + 10)).toBeCloseTo(4 / 6, 12);
    // A gap's loss belongs to the arrival after it: with the first arrival out of the window, 4 lost of 5.
    expect(c.lossRate(T0 + 10 + RATE_WINDOW_MS)).toBeCloseTo(4 / 5, 12);
    c.mark(frame(6), T0 + 11 + RATE_WINDOW_MS);
    expect(c.lossRate(T0 + 11 + RATE_WINDOW_MS)).toBe(0);
    expect(new LinkCounter().lossRate(T0)).toBe(0);
  });
});

describe('LinkCounter: packets per second', () => {
  /** `n` arrivals every `stepMs` from T0, read at `at` ms after T0 (default: the last arrival). */
  const rateOf = (n: number, stepMs: number, at?: number): number => {
    const c = new LinkCounter();
    for (let k = 0; k < n; k++) c.mark(frame(k), T0 + k * stepMs);
    return c.rate(T0 + (at ?? (n - 1) * stepMs));
  };
  const cases: ReadonlyArray<{ name: string; n: number; stepMs: number; at?: number; hz: number }> = [
    { name: 'no packet', n: 0, stepMs: 10, at: 0, hz: 0 },
    { name: 'one packet: no interval yet', n: 1, stepMs: 10, hz: 0 },
    { name: 'a young link reads its rate from its intervals', n: 11, stepMs: 10, hz: 100 },
    { name: 'a young link read later: its intervals over its age', n: 11, stepMs: 10, at: 200, hz: 50 },
    // 10 s at 100 Hz: the last 5 s hold 501 arrivals (both ends in).
    { name: 'an older link: the arrivals of the last 5 s', n: 1001, stepMs: 10, hz: 501 / 5 },
    // Silent for longer than the window: nothing in it.
    { name: 'silent for the whole window', n: 11, stepMs: 10, at: 100 + RATE_WINDOW_MS + 1, hz: 0 },
    // 3000 packets at 1 kHz overflow the ring of 2048 arrivals: the rate is over what it holds.
    { name: 'a link beyond the ring: over the arrivals held', n: 3000, stepMs: 1, hz: (2048 * 1000) / 2047 },
  ];
  it.each(cases)('$name -> $hz Hz', ({ n, stepMs, at, hz }) => {
    expect(rateOf(n, stepMs, at)).toBeCloseTo(hz, 9);
  });

  it('keeps the last frame: times and layout', () => {
    const c = new LinkCounter();
    c.mark(frame(0), T0);
    c.mark({ ...frame(1), nRx: 2, nTx: 1, nSub: 56 }, T0 + 10);
    expect(c).toMatchObject({ frames: 2, firstAt: T0, lastAt: T0 + 10, nRx: 2, nTx: 1, nSub: 56 });
  });
});

describe('LinkCounter: lag, the median of the last sets', () => {
  const cases: ReadonlyArray<{ name: string; lags: number[]; median: number }> = [
    { name: 'unmeasured', lags: [], median: 0 },
    { name: 'one set', lags: [-3], median: -3 },
    { name: 'odd: the middle one', lags: [5, -1, 3], median: 3 },
    { name: 'even: the mean of the middle two', lags: [4, 1, 3, 2], median: 2.5 },
    { name: 'the last 64 sets only', lags: [...new Array<number>(LAG_SAMPLES).fill(100), ...new Array<number>(LAG_SAMPLES).fill(-7)], median: -7 },
  ];
  it.each(cases)('$name -> $median', ({ lags, median }) => {
    const c = new LinkCounter();
    for (const l of lags) c.lag(l);
    expect(c.lagMedian()).toBe(median);
  });

  it('clearLag forgets them', () => {
    const c = new LinkCounter();
    c.lag(-20);
    c.lag(-30);
    c.clearLag();
    expect(c.lagMedian()).toBe(0);
    // What comes after the clear is measured alone: the samples before it are gone, not read again.
    c.lag(4);
    expect(c.lagMedian()).toBe(4);
    c.lag(6);
    expect(c.lagMedian()).toBe(5);
  });
});

describe('LinkJoin and LinkMonitor: their figures checked at construction', () => {
  const site = siteLinks(DEFAULT_RADIOS);
  const joins: ReadonlyArray<{ toleranceMs: number; depth?: number; ok: boolean }> = [
    { toleranceMs: 0, depth: 1, ok: true },
    { toleranceMs: DEFAULT_TOLERANCE_MS, ok: true },
    { toleranceMs: -1, ok: false },
    { toleranceMs: NaN, ok: false },
    { toleranceMs: 5, depth: 0, ok: false },
    { toleranceMs: 5, depth: 1.5, ok: false },
  ];
  it.each(joins)('LinkJoin(tolerance $toleranceMs, depth $depth): ok $ok', ({ toleranceMs, depth, ok }) => {
    const make = () => new LinkJoin(site, toleranceMs, depth);
    if (ok) expect(make().depth).toBe(depth ?? JOIN_DEPTH);
    else expect(make).toThrow(RangeError);
  });

  const noRx: RadioConfig[] = [DEFAULT_RADIOS[0]!];
  const noTx: RadioConfig[] = DEFAULT_RADIOS.slice(1);
  const monitors: ReadonlyArray<{ name: string; radios: readonly RadioConfig[]; opts: { toleranceMs?: number; timeoutSeconds?: number }; error?: RegExp }> = [
    { name: 'the defaults', radios: DEFAULT_RADIOS, opts: {} },
    { name: 'a site without a receiver', radios: noRx, opts: {}, error: /the site has no link/ },
    { name: 'a site without a transmitter', radios: noTx, opts: {}, error: /the site has no link/ },
    { name: 'a zero timeout', radios: DEFAULT_RADIOS, opts: { timeoutSeconds: 0 }, error: /timeoutSeconds must be > 0/ },
    { name: 'a NaN timeout', radios: DEFAULT_RADIOS, opts: { timeoutSeconds: NaN }, error: /timeoutSeconds must be > 0/ },
    { name: 'a negative tolerance', radios: DEFAULT_RADIOS, opts: { toleranceMs: -1 }, error: /toleranceMs must be >= 0/ },
  ];
  it.each(monitors)('LinkMonitor with $name', ({ radios, opts, error }) => {
    const make = () => new LinkMonitor(radios, opts);
    if (error) expect(make).toThrow(error);
    else expect(make()).toMatchObject({ toleranceMs: DEFAULT_TOLERANCE_MS, timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000 });
  });
});

describe('LinkMonitor: unknown links', () => {
  const cases: ReadonlyArray<{ name: string; ids: string[]; listed: string[] }> = [
    { name: 'listed in order of their last packet', ids: ['a', 'b', 'a'], listed: ['b', 'a'] },
    {
      name: `at most ${MAX_UNKNOWN_LINKS}, the least recent forgotten`,
      ids: Array.from({ length: MAX_UNKNOWN_LINKS + 2 }, (_, k) => `u${k}`),
      listed: Array.from({ length: MAX_UNKNOWN_LINKS }, (_, k) => `u${k + 2}`),
    },
    {
      name: 'one that sends again is kept over older ones',
      ids: ['u0', ...Array.from({ length: MAX_UNKNOWN_LINKS - 1 }, (_, k) => `u${k + 1}`), 'u0', 'new'],
      listed: [...Array.from({ length: MAX_UNKNOWN_LINKS - 2 }, (_, k) => `u${k + 2}`), 'u0', 'new'],
    },
  ];
  it.each(cases)('$name', ({ ids, listed }) => {
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: () => T0 });
    ids.forEach((id, k) => expect(m.accept(frame(k, 0, id))).toBe(false));
    const unknown = m.report(T0).filter((r) => r.state === 'unknown');
    expect(unknown.map((r) => r.linkId)).toEqual(listed);
  });
});

describe('DEGRADING_LINK_STATES', () => {
  const cases: ReadonlyArray<[LinkState, boolean]> = [
    ['live', false],
    ['waiting', false],
    ['lagging', true],
    ['stopped', true],
    ['mismatched', true],
    ['unknown', true],
  ];
  it.each(cases)('%s degrades the service: %s', (state, degrades) => {
    expect(DEGRADING_LINK_STATES.has(state)).toBe(degrades);
  });
});
