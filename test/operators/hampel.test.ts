import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame } from '../../src/csi/frame.js';
import { hampel, spec, type HampelOn } from '../../operators/hampel.js';
import { makeFrame } from '../helpers/frames.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** 1x1x2 frame whose subcarrier sc holds the real value v*(sc+1). */
const level = (seq: number, v: number, nRx = 1) => makeFrame({ seq, nRx, nTx: 1, nSub: 2, value: (sc) => [v * (sc + 1), 0] });

const run = (frames: CsiFrame[], opts: Parameters<typeof hampel>[0] = {}) => lastValueFrom(from(frames).pipe(hampel(opts), toArray()));

/**
 * Straightforward Hampel: for every frame, the window of existing neighbours, a full sort for the
 * median, a second full sort of the absolute deviations for the MAD.
 */
function reference(frames: CsiFrame[], window: number, nSigma: number, on: HampelOn): Float32Array[] {
  const h = (window - 1) / 2;
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const n = s.length;
    return n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  };
  const values = frames.map((f) => {
    const vs: number[] = [];
    if (on === 'amplitude') for (let c = 0; c < f.csi.length; c += 2) vs.push(Math.fround(Math.sqrt(f.csi[c]! ** 2 + f.csi[c + 1]! ** 2)));
    else vs.push(...f.csi);
    return vs.map((x) => (Number.isNaN(x) ? Infinity : x));
  });
  return frames.map((f, j) => {
    const out = Float32Array.from(f.csi);
    const win = values.slice(Math.max(0, j - h), Math.min(frames.length, j + h + 1));
    values[j]!.forEach((x, v) => {
      const series = win.map((vs) => vs[v]!);
      const med = median(series);
      const mad = median(series.map((y) => Math.abs(y - med)));
      if (!(Math.abs(x - med) > nSigma * (1.4826 * mad))) return;
      if (on === 'components') out[v] = med;
      else if (x > 0 && x < Infinity) {
        out[2 * v] = f.csi[2 * v]! * (med / x);
        out[2 * v + 1] = f.csi[2 * v + 1]! * (med / x);
      } else {
        out[2 * v] = med;
        out[2 * v + 1] = 0;
      }
    });
    return out;
  });
}

describe('hampel: marbles', () => {
  it('emits every frame in order, (window-1)/2 frames late, flushing the tail on complete', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      // c carries a spike (5x): replaced by the median level 1. d's one-sided window (c, d) flags nothing.
      const input = { a: level(0, 1), b: level(1, 1), c: level(2, 5), d: level(3, 1) };
      const output = { a: level(0, 1), b: level(1, 1), c: level(2, 1), d: level(3, 1) };
      const src = cold('-a-b-c-d-|    ', input);
      const subs = '    ^--------!    ';
      const expected = '---a-b-c-(d|)';
      expectObservable(src.pipe(hampel({ window: 3 }))).toBe(expected, output);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('emits everything on complete when the stream is shorter than half a window', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const input = { a: level(0, 1), b: level(1, 2) };
      const src = cold('-a-b-|   ', input);
      const expected = '-----(ab|)';
      expectObservable(src.pipe(hampel({ window: 7 }))).toBe(expected, input);
    });
  });

  it('flushes the frames of the old shape when the shape changes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const input = { a: level(0, 1), b: level(1, 5), x: level(2, 3, 2) };
      // b (5) has only a (1) and itself: median 3, MAD 2, not an outlier.
      const src = cold('-a-b-x-|   ', input);
      const expected = '---a-b-(x|)';
      expectObservable(src.pipe(hampel({ window: 3 }))).toBe(expected, input);
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const input = { a: level(0, 1), b: level(1, 1) };
      const src = cold('-a-b-#', input, new Error('boom'));
      const expected = '---a-#';
      expectObservable(src.pipe(hampel({ window: 3 }))).toBe(expected, input, new Error('boom'));
    });
  });

  it('sends a malformed frame to the subscriber as an error', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const bad = { ...level(1, 1), csi: new Float32Array(3) };
      const src = cold('-a-b-c|', { a: level(0, 1), b: bad, c: level(2, 1) });
      const subs = '    ^--!   ';
      const expected = '---#   ';
      expectObservable(src.pipe(hampel({ window: 3 }))).toBe(expected, {}, new RangeError('hampel: frame 1 has 3 csi values, expected 4 for 1x1x2'));
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const input = { a: level(0, 1), b: level(1, 2), c: level(2, 3), d: level(3, 4) };
      const src = hot('--a--b--c--d--|', input);
      const subs = '   ^--------!     ';
      const unsub = '  ^--------!     ';
      const expected = '-----a--b-     ';
      expectObservable(src.pipe(hampel({ window: 3 })), unsub).toBe(expected, input);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const input = { a: level(0, 1), b: level(1, 2), c: level(2, 3), d: level(3, 4) };
      const src = hot('--a--b--c--d--|', input);
      const subs = '   ^--------!     ';
      const unsub = '  ^--------!     ';
      const expected = '-----a--b-     ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        hampel({ window: 3 }),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected, input);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('hampel: golden', () => {
  const N = 24;
  const shape = { nRx: 2, nTx: 2, nSub: 3 };
  /**
   * Amplitude on a straight trend and a turning phase per stream s = complex index, frame t. A
   * straight trend keeps the truncated windows at both ends from flagging genuine values (a curved
   * series can: near a turning point the MAD of three values is tiny).
   */
  const smooth = (t: number, s: number): [number, number] => {
    const amp = 10 + 0.15 * t + 0.3 * s;
    const ph = 0.4 * t + 0.9 * s;
    return [amp * Math.cos(ph), amp * Math.sin(ph)];
  };
  /** Planted outliers: [frame, stream] -> what happens there. */
  const spikes = new Map<string, (v: [number, number]) => [number, number]>([
    ['4,0', ([re, im]) => [re * 6, im * 6]],
    ['5,0', ([re, im]) => [re * 0.05, im * 0.05]],
    ['10,3', ([re, im]) => [re * 4, im * 4]],
    ['0,5', ([re, im]) => [re * 5, im * 5]],
    ['23,7', ([re, im]) => [re * 5, im * 5]],
    ['15,2', () => [0, 0]],
    ['18,9', () => [NaN, 1]],
  ]);
  const framesWith = (value: (t: number, s: number) => [number, number]) =>
    Array.from({ length: N }, (_, t) => makeFrame({ seq: t, ...shape, value: (sc, rx, tx) => value(t, (sc * shape.nRx + rx) * shape.nTx + tx) }));
  const spiked = framesWith((t, s) => spikes.get(`${t},${s}`)?.(smooth(t, s)) ?? smooth(t, s));

  it('amplitude: matches a sort-based reference exactly; spikes rescaled to the median keeping phase, the rest untouched', async () => {
    const before = spiked.map((f) => Float32Array.from(f.csi));
    const out = await run(spiked, { window: 5, nSigma: 3 });
    expect(out.map((f) => f.seq)).toEqual(spiked.map((f) => f.seq));
    expect(out.map((f) => f.csi)).toEqual(reference(spiked, 5, 3, 'amplitude'));
    // Inputs intact, every other field kept.
    expect(spiked.map((f) => f.csi)).toEqual(before);
    out.forEach((f, t) => expect(f).toEqual({ ...spiked[t]!, csi: f.csi }));
    for (let t = 0; t < N; t++)
      for (let s = 0; s < 12; s++) {
        const [ire, iim] = [spiked[t]!.csi[2 * s]!, spiked[t]!.csi[2 * s + 1]!];
        const [ore, oim] = [out[t]!.csi[2 * s]!, out[t]!.csi[2 * s + 1]!];
        const key = `${t},${s}`;
        if (!spikes.has(key)) {
          expect([ore, oim], key).toEqual([ire, iim]);
          continue;
        }
        // Replaced: amplitude back near the smooth level, finite, phase kept where there was one.
        const amp = Math.hypot(ore, oim);
        expect(Math.abs(amp - Math.hypot(...smooth(t, s))), key).toBeLessThan(1.5);
        if (Number.isFinite(ire) && Math.hypot(ire, iim) > 0) expect(Math.abs(Math.atan2(oim, ore) - Math.atan2(iim, ire)), key).toBeLessThan(1e-6);
        else expect(oim, key).toBe(0);
      }
  });

  it('components: re and im filtered separately match the reference exactly', async () => {
    const frames = framesWith((t, s) => {
      const amp = 10 + 2 * Math.sin(0.35 * t + s);
      const [re, im] = [amp * Math.cos(0.4 * t + s), amp * Math.sin(0.4 * t + s)];
      if (t === 6 && s === 1) return [re + 40, im];
      if (t === 7 && s === 4) return [re, im - 40];
      return [re, im];
    });
    const out = await run(frames, { window: 7, nSigma: 2.5, on: 'components' });
    const expected = reference(frames, 7, 2.5, 'components');
    expect(out.map((f) => f.csi)).toEqual(expected);
    // The spike's other component is its own series and stays put.
    expect(out[6]!.csi[3]).toBe(frames[6]!.csi[3]);
    expect(out[6]!.csi[2]).not.toBe(frames[6]!.csi[2]);
    expect(out[7]!.csi[8]).toBe(frames[7]!.csi[8]);
    expect(out[7]!.csi[9]).not.toBe(frames[7]!.csi[9]);
  });

  it('a constant series with a single spike: the spike takes the constant, MAD 0', async () => {
    const frames = [3, 3, 3, 9, 3, 3, 3].map((v, t) => level(t, v));
    const out = await run(frames, { window: 7 });
    expect(out.map((f) => Array.from(f.csi))).toEqual(frames.map(() => [3, 0, 6, 0]));
  });

  it('segments of different shapes are filtered independently (Intel 3x1 then 3x3)', async () => {
    const a = Array.from({ length: 6 }, (_, t) =>
      makeFrame({ seq: t, nRx: 3, nTx: 1, value: (sc, rx) => (t === 2 && sc === 4 ? [90, 1] : [10 + sc + rx + t * 0.1, 1]) }),
    );
    const b = Array.from({ length: 5 }, (_, t) =>
      makeFrame({ seq: 6 + t, nRx: 3, nTx: 3, value: (sc, rx, tx) => (t === 4 && tx === 2 ? [-50, 0] : [5 + sc - rx + tx, -2]) }),
    );
    const out = await run([...a, ...b], { window: 5 });
    const separately = [...(await run(a, { window: 5 })), ...(await run(b, { window: 5 }))];
    expect(out).toEqual(separately);
    expect(out.map((f) => f.csi)).toEqual([...reference(a, 5, 3, 'amplitude'), ...reference(b, 5, 3, 'amplitude')]);
    expect(out[2]!.csi[24]).not.toBe(90);
  });

  it('each subscription has its own state', async () => {
    const frames = [1, 1, 8, 1, 1].map((v, t) => level(t, v));
    const op = hampel({ window: 3 });
    const src = from(frames).pipe(op);
    const [x, y] = await Promise.all([lastValueFrom(src.pipe(toArray())), lastValueFrom(src.pipe(toArray()))]);
    expect(x).toEqual(y);
    expect(x.map((f) => f.csi[0])).toEqual([1, 1, 1, 1, 1]);
  });

  it('rejects bad parameters at construction; spec builds the operator', async () => {
    expect(() => hampel({ window: 4 })).toThrow(/odd integer/);
    expect(() => hampel({ window: 33 })).toThrow(RangeError);
    expect(() => hampel({ window: 1 })).toThrow(RangeError);
    expect(() => hampel({ nSigma: -1 })).toThrow(RangeError);
    expect(spec.name).toBe('hampel');
    expect(spec.params.map((p) => [p.name, p.default])).toEqual([
      ['window', 7],
      ['nSigma', 3],
      ['on', 'amplitude'],
    ]);
    expect(() => spec.create({ window: 6, nSigma: 3, on: 'amplitude' }, {})).toThrow('parameter "window" must be odd, got 6');
    const viaSpec = await lastValueFrom(from(spiked).pipe(spec.create({ window: 5, nSigma: 3, on: 'amplitude' }, {}), toArray()));
    expect(viaSpec).toEqual(await run(spiked, { window: 5, nSigma: 3 }));
  });
});
