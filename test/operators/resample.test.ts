import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, mergeMap, of, take, tap, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame } from '../../src/csi/frame.js';
import { resample, spec, type ResampleStats } from '../../operators/resample.js';
import { makeFrame } from '../helpers/frames.js';

const T0 = 1_767_225_600_000;

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** A frame on the 100 Hz grid (makeFrame puts seq k at T0 + 10k) with csi depending on k. */
const gridFrame = (k: number) => makeFrame({ nRx: 2, nSub: 3, seq: k, value: (sc, rx) => [k + sc, rx - k] });

const run = (frames: CsiFrame[], opts: Parameters<typeof resample>[0] = {}) => lastValueFrom(from(frames).pipe(resample(opts), toArray()));

describe('resample: marbles', () => {
  it('passes frames already on the grid through unchanged, in order', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const v = { a: gridFrame(0), b: gridFrame(1), c: gridFrame(2) };
      const src = cold('a-b--c|', v);
      const expected = '  a-b--c|';
      expectObservable(src.pipe(resample())).toBe(expected, v);
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const v = { a: gridFrame(0), b: gridFrame(1) };
      const src = cold('a-b-#', v, new Error('boom'));
      const expected = '  a-b-#';
      expectObservable(src.pipe(resample())).toBe(expected, v, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const v = { a: gridFrame(0), b: gridFrame(1), c: gridFrame(2), d: gridFrame(3) };
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^------!       ';
      const unsub = '  ^------!       ';
      const expected = '--a--b---       ';
      expectObservable(src.pipe(resample()), unsub).toBe(expected, v);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const v = { a: gridFrame(0), b: gridFrame(1), c: gridFrame(2), d: gridFrame(3) };
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^------!       ';
      const unsub = '  ^------!       ';
      const expected = '--a--b---       ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        resample(),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected, v);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('emits every tick a frame spans at the time of that frame, none before the first', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // 30 ms between a and b: ticks 1, 2 and 3 are all produced when b arrives.
      const a = gridFrame(0);
      const b = { ...gridFrame(3), index: 1 };
      const src = cold('a--(b|)  ', { a, b });
      const expected = '  a--(xyz|)';
      const ticks = {
        a,
        x: { ...a, csi: gridFrame(1).csi, time: T0 + 10, seq: 1, index: 1 },
        y: { ...b, csi: gridFrame(2).csi, time: T0 + 20, seq: 2, index: 2 },
        z: { ...b, time: T0 + 30, seq: 3, index: 3 },
      };
      expectObservable(src.pipe(resample())).toBe(expected, ticks);
    });
  });
});

describe('resample: golden', () => {
  // Jitter in ms for each packet; dyadic values keep the times exact in float64.
  const jitter = [0, 3.25, -2.5, 1.25, 4, -3.75, 2, -1, 0.5, -4.5, 2.75, -0.25, 3.5, -2, 1.5];
  /** A signal linear in time, different for every element: exact at any time. */
  const signal = (dt: number, sc: number, rx: number): [number, number] => [
    1 + 0.25 * sc + (0.01 + 0.002 * rx) * dt,
    -2 + 0.5 * rx - (0.003 + 0.001 * sc) * dt,
  ];
  const jittered = (k: number, t: number, rssi: number) => ({
    ...makeFrame({ nRx: 2, nSub: 4, seq: 1000 + k, time: t, value: (sc, rx) => signal(t - T0, sc, rx) }),
    rssi: [rssi, rssi],
    deviceTime: rssi,
  });

  it('reconstructs a linear-in-time signal exactly at grid times from jittered packets', async () => {
    const frames = jitter.map((j, k) => jittered(k, T0 + 10 * k + j, k));
    const out = await run(frames);
    const last = frames[frames.length - 1].time - T0;
    expect(out).toHaveLength(Math.floor(last / 10) + 1);
    out.forEach((f, k) => {
      expect(f.time).toBe(T0 + 10 * k);
      expect(f.seq).toBe(k);
      expect(f.index).toBe(k);
      const want = makeFrame({ nRx: 2, nSub: 4, value: (sc, rx) => signal(10 * k, sc, rx) }).csi;
      for (let i = 0; i < want.length; i++) expect(Math.abs(f.csi[i] - want[i])).toBeLessThanOrEqual(1e-6 * Math.abs(want[i]));
    });
  });

  it('takes rssi and the other fields from the nearer frame', async () => {
    // Frames at 0, 14 and 27 ms: tick 10 is nearer 14 (frame 1), tick 20 nearer 14 too (6 < 7).
    const frames = [jittered(0, T0, 0), jittered(1, T0 + 14, 1), jittered(2, T0 + 27, 2)];
    const out = await run(frames);
    expect(out.map((f) => f.rssi[0])).toEqual([0, 1, 1]);
    expect(out.map((f) => f.deviceTime)).toEqual([0, 1, 1]);
    expect(out[1].csi).not.toBe(frames[1].csi);
  });

  it('does not bridge a gap longer than maxGapMs: restarts the grid at the next frame and counts the lost ticks', async () => {
    const stats: ResampleStats = { gaps: 0, ticks: 0 };
    const times = [0, 10, 20, 253, 265, 271];
    const frames = times.map((t, k) => jittered(k, T0 + t, k));
    const out = await run(frames, { maxGapMs: 100, stats });
    // Old grid: ticks 0..2 at 0, 10, 20; ticks 3..25 (30..250 ms) lie in the gap and are lost.
    // New grid: tick 26 at 253 (the frame itself), tick 27 at 263, interpolated between 253 and 265.
    expect(out.map((f) => f.time - T0)).toEqual([0, 10, 20, 253, 263]);
    expect(out.map((f) => f.seq)).toEqual([0, 1, 2, 26, 27]);
    expect(out.map((f) => f.index)).toEqual([0, 1, 2, 3, 4]);
    expect(stats).toEqual({ gaps: 1, ticks: 23 });
    expect(out[3].csi).toEqual(frames[3].csi);
    const want = makeFrame({ nRx: 2, nSub: 4, value: (sc, rx) => signal(263, sc, rx) }).csi;
    for (let i = 0; i < want.length; i++) expect(out[4].csi[i]).toBeCloseTo(want[i], 5);
  });

  it('bridges a gap of exactly maxGapMs', async () => {
    const stats: ResampleStats = { gaps: 0, ticks: 0 };
    const out = await run([jittered(0, T0, 0), jittered(1, T0 + 100, 1)], { maxGapMs: 100, stats });
    expect(out.map((f) => f.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(stats).toEqual({ gaps: 0, ticks: 0 });
  });

  it('drops and counts frames whose time goes backwards, repeats or is not finite', async () => {
    const stats: ResampleStats = { gaps: 0, ticks: 0 };
    const times = [0, 10, 5, 10, NaN, 20];
    const out = await run(
      times.map((t, k) => jittered(k, T0 + t, k)),
      { stats },
    );
    expect(out.map((f) => f.time - T0)).toEqual([0, 10, 20]);
    expect(out.map((f) => f.rssi[0])).toEqual([0, 1, 5]);
    expect(stats.dropped).toBe(3);
  });

  it('drops a frame whose csi does not match its shape', async () => {
    const stats: ResampleStats = { gaps: 0, ticks: 0 };
    const bad = { ...jittered(1, T0 + 10, 1), csi: new Float32Array(5) };
    const out = await run([jittered(0, T0, 0), bad, jittered(2, T0 + 20, 2)], { stats });
    expect(out.map((f) => f.time - T0)).toEqual([0, 10, 20]);
    expect(out.every((f) => f.csi.length === 16)).toBe(true);
    expect(stats.dropped).toBe(1);
  });

  it('restarts the grid on a shape change without interpolating across shapes', async () => {
    const stats: ResampleStats = { gaps: 0, ticks: 0 };
    const wide = makeFrame({ nRx: 3, nSub: 2, time: T0 + 35, value: () => [7, 7] });
    const out = await run([jittered(0, T0, 0), jittered(1, T0 + 10, 1), wide, { ...wide, time: T0 + 45 }], { stats });
    expect(out.map((f) => [f.time - T0, f.seq, f.nRx])).toEqual([
      [0, 0, 2],
      [10, 1, 2],
      [35, 4, 3],
      [45, 5, 3],
    ]);
    expect(stats).toEqual({ gaps: 0, ticks: 2, restarts: 1 });
  });

  it('stops emitting the ticks of a long span when the consumer unsubscribes', async () => {
    const frames = [jittered(0, T0, 0), jittered(1, T0 + 5000, 1)];
    const seen: number[] = [];
    let produced = 0;
    from(frames)
      .pipe(
        resample({ maxGapMs: 10_000 }),
        tap(() => produced++),
        take(4),
      )
      .subscribe((f) => seen.push(f.seq));
    expect(produced).toBe(4);
    expect(seen).toEqual([0, 1, 2, 3]);
  });

  it('has a spec that builds the operator from defaults', async () => {
    expect(spec.name).toBe('resample');
    expect(spec.input).toBe('frame');
    expect(spec.output).toBe('frame');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({ rate: 100, maxGapMs: 100 });
    const out = await lastValueFrom(from([jittered(0, T0, 0), jittered(1, T0 + 20, 1)]).pipe(spec.create(params, {}), toArray()));
    expect(out.map((f: CsiFrame) => f.time - T0)).toEqual([0, 10, 20]);
  });

  it('rejects bad options at creation', () => {
    expect(() => resample({ rate: 0 })).toThrow(RangeError);
    expect(() => resample({ maxGapMs: -1 })).toThrow(RangeError);
  });
});
