import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { windowShift, type CsiFrame, type CsiWindow } from '../../src/csi/frame.js';
import { slidingWindow, spec } from '../../operators/slidingWindow.js';
import { makeFrame } from '../helpers/frames.js';

const T0 = 1_767_225_600_000;

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** A 2x2x3 frame whose every value says which frame and element it is. */
const frame = (k: number, init: Partial<Parameters<typeof makeFrame>[0]> = {}) =>
  makeFrame({ nRx: 2, nTx: 2, nSub: 3, seq: k, value: (sc, rx, tx) => [k * 100 + sc * 10 + rx * 2 + tx, -k], ...init });

const windows = (frames: CsiFrame[], opts: Parameters<typeof slidingWindow>[0]) => lastValueFrom(from(frames).pipe(slidingWindow(opts), toArray()));

/** The window the operator must emit over frames[first .. first + size). */
function expectedWindow(frames: CsiFrame[], first: number, size: number, windowIndex: number, rateHz: number): CsiWindow {
  const chosen = frames.slice(first, first + size);
  const frameLen = chosen[0].csi.length;
  const data = new Float32Array(size * frameLen);
  chosen.forEach((f, i) => data.set(f.csi, i * frameLen));
  const f0 = chosen[0];
  return {
    sourceId: f0.sourceId,
    environmentId: f0.environmentId,
    size,
    nRx: f0.nRx,
    nTx: f0.nTx,
    nSub: f0.nSub,
    subcarriers: f0.subcarriers,
    times: Float64Array.from(chosen, (f) => f.time),
    rateHz,
    seq: f0.seq,
    windowIndex,
    data,
    channel: chosen[size - 1]!.channel,
  };
}

describe('window: marbles', () => {
  const v = Object.fromEntries([...'abcdef'].map((c, k) => [c, frame(k)]));
  const summary = map((w: CsiWindow) => `${w.seq}+${w.size}`);

  it('emits windows in order once full, one every hop frames', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-c-d-e-f-|', v);
      const expected = '  ----x---y---|';
      expectObservable(src.pipe(slidingWindow({ size: 3, hop: 2 }), summary)).toBe(expected, { x: '0+3', y: '2+3' });
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-c-#', v, new Error('boom'));
      const expected = '  ----x-#';
      expectObservable(src.pipe(slidingWindow({ size: 3, hop: 1 }), summary)).toBe(expected, { x: '0+3' }, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--e--|', v);
      const subs = '   ^--------!        ';
      const unsub = '  ^--------!        ';
      const expected = '-----x--y-         ';
      expectObservable(src.pipe(slidingWindow({ size: 2, hop: 1 }), summary), unsub).toBe(expected, { x: '0+2', y: '1+2' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--e--|', v);
      const subs = '   ^--------!        ';
      const unsub = '  ^--------!        ';
      const expected = '-----x--y-         ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        slidingWindow({ size: 2, hop: 1 }),
        mergeMap((x) => of(x)),
        summary,
      );
      expectObservable(result, unsub).toBe(expected, { x: '0+2', y: '1+2' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not emit an incomplete window at completion', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-c-d-e-|', v);
      const expected = '  ------x---|';
      expectObservable(src.pipe(slidingWindow({ size: 4, hop: 4 }), summary)).toBe(expected, { x: '0+4' });
    });
  });
});

describe('window: golden', () => {
  const frames = Array.from({ length: 23 }, (_, k) => frame(k));

  const cases: Array<[size: number, hop: number]> = [
    [4, 1],
    [4, 3],
    [4, 4],
    [5, 2],
    [3, 3],
    [5, 5],
    [7, 5],
    [2, 1],
  ];
  it.each(cases)('size %i hop %i: each window is the concatenation of its frames, across several wraps', async (size, hop) => {
    const out = await windows(frames, { size, hop });
    const count = Math.floor((frames.length - size) / hop) + 1;
    expect(out).toHaveLength(count);
    // 23 frames wrap a ring of at most 7 at least three times.
    out.forEach((w, i) => expect(w).toEqual(expectedWindow(frames, i * hop, size, i, 100)));
  });

  it('never overwrites an emitted window: earlier windows keep their contents across segment rollovers', async () => {
    // size 4 -> segments of 32 frames: 100 frames roll over three times.
    const many = Array.from({ length: 100 }, (_, k) => frame(k));
    const out = await windows(many, { size: 4, hop: 1 });
    expect(out).toHaveLength(97);
    for (let i = 0; i < out.length; i++) {
      expect(out[i].data).toEqual(expectedWindow(many, i, 4, i, 100).data);
      expect(Array.from(out[i].times)).toEqual(many.slice(i, i + 4).map((f) => f.time));
    }
  });

  it('estimates the rate from the median interval, robust to jitter and a lost packet', async () => {
    // Intervals 10 +- jitter with one packet lost (a 20 ms interval): the median is 10.
    const times = [0, 9, 21, 30, 50, 61, 70, 80];
    const fs = times.map((t, k) => frame(k, { time: T0 + t }));
    const [w] = await windows(fs, { size: 8, hop: 8 });
    expect(w.rateHz).toBe(100);
    expect(Array.from(w.times)).toEqual(times.map((t) => T0 + t));
    // An even number of intervals: the median is the mean of the middle two (9 and 12 -> 10.5 ms).
    const [w2] = await windows(fs.slice(0, 5), { size: 5, hop: 5 });
    expect(w2.rateHz).toBeCloseTo(1000 / 10.5, 12);
  });

  it('reports the nominal rate when given one, NaN when the times give none', async () => {
    const [w] = await windows(frames.slice(0, 4), { size: 4, hop: 4, rateHz: 50 });
    expect(w.rateHz).toBe(50);
    const still = frames.slice(0, 4).map((f) => ({ ...f, time: 0 }));
    const [w2] = await windows(still, { size: 4, hop: 4 });
    expect(w2.rateHz).toBeNaN();
  });

  it('resets on a shape change: no window mixes shapes', async () => {
    const wide = Array.from({ length: 5 }, (_, k) => frame(10 + k, { nRx: 3 }));
    const out = await windows([...frames.slice(0, 5), ...wide], { size: 3, hop: 1 });
    expect(out.map((w) => [w.seq, w.nRx, w.data.length])).toEqual([
      [0, 2, 72],
      [1, 2, 72],
      [2, 2, 72],
      [10, 3, 108],
      [11, 3, 108],
      [12, 3, 108],
    ]);
    expect(out[3]).toEqual(expectedWindow(wide, 0, 3, 3, 100));
  });

  it('resets on a source change', async () => {
    const other = Array.from({ length: 3 }, (_, k) => ({ ...frame(20 + k), sourceId: 'other' }));
    const out = await windows([...frames.slice(0, 4), ...other, frames[4]], { size: 3, hop: 1 });
    expect(out.map((w) => [w.sourceId, w.seq])).toEqual([
      ['test', 0],
      ['test', 1],
      ['other', 20],
    ]);
  });

  it('skips frames whose csi does not match their shape', async () => {
    const bad = { ...frames[2], csi: new Float32Array(7) };
    const out = await windows([frames[0], frames[1], bad, frames[3]], { size: 3, hop: 1 });
    expect(out).toHaveLength(1);
    expect(Array.from(out[0].times)).toEqual([frames[0].time, frames[1].time, frames[3].time]);
  });

  it('has a spec named window that builds the operator from defaults', async () => {
    expect(spec.name).toBe('window');
    expect(spec.input).toBe('frame');
    expect(spec.output).toBe('window');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({ size: 64, hop: 8, rateHz: 0 });
    const many = Array.from({ length: 80 }, (_, k) => frame(k));
    const out: CsiWindow[] = await lastValueFrom(from(many).pipe(spec.create(params, {}), toArray()));
    expect(out.map((w) => w.seq)).toEqual([0, 8, 16]);
  });

  it('rejects bad options at creation', () => {
    expect(() => slidingWindow({ size: 1 })).toThrow(RangeError);
    expect(() => slidingWindow({ size: 4, hop: 5 })).toThrow(RangeError);
    expect(() => slidingWindow({ size: 4, hop: 0 })).toThrow(RangeError);
  });
});

describe('windowShift', () => {
  it('finds the hop between consecutive windows of one stream and refuses anything else', async () => {
    const many = Array.from({ length: 12 }, (_, k) => frame(k));
    const w = await windows(many, { size: 6, hop: 2 });
    const frameLen = w[0]!.data.length / w[0]!.size;
    expect(windowShift(w[0], w[1]!, frameLen)).toBe(2);
    expect(windowShift(w[0], w[2]!, frameLen)).toBe(4);
    expect(windowShift(undefined, w[1]!, frameLen)).toBe(0);
    expect(windowShift(w[1], w[0]!, frameLen)).toBe(0);
    // The same times but other samples in the first frame: not the same stream.
    const data = Float32Array.from(w[1]!.data);
    data[3] += 1;
    expect(windowShift(w[0], { ...w[1]!, data }, frameLen)).toBe(0);
    // NaN samples match NaN samples at the same place.
    const a = Float32Array.from(w[0]!.data);
    const b = Float32Array.from(w[1]!.data);
    a[2 * frameLen] = NaN;
    b[0] = NaN;
    expect(windowShift({ ...w[0]!, data: a }, { ...w[1]!, data: b }, frameLen)).toBe(2);
  });
});
