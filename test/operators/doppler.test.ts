import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiWindow, DopplerSpectrum } from '../../src/csi/frame.js';
import { doppler, spec } from '../../operators/doppler.js';

const T0 = 1_767_225_600_000;

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

interface WindowInit {
  size?: number;
  nRx?: number;
  nTx?: number;
  nSub?: number;
  rateHz?: number;
  windowIndex?: number;
  /** Complex value of frame t at (sc, rx, tx). */
  value: (t: number, sc: number, rx: number, tx: number) => [number, number];
}

/** A CsiWindow built directly, laid out as the window operator lays it out. */
function makeWindow(init: WindowInit): CsiWindow {
  const { size = 64, nRx = 1, nTx = 1, nSub = 1, rateHz = 100, windowIndex = 0 } = init;
  const frameLen = nSub * nRx * nTx * 2;
  const data = new Float32Array(size * frameLen);
  for (let t = 0; t < size; t++)
    for (let sc = 0; sc < nSub; sc++)
      for (let rx = 0; rx < nRx; rx++)
        for (let tx = 0; tx < nTx; tx++) {
          const [re, im] = init.value(t, sc, rx, tx);
          const o = t * frameLen + ((sc * nRx + rx) * nTx + tx) * 2;
          data[o] = re;
          data[o + 1] = im;
        }
  return {
    sourceId: 'test',
    environmentId: 'default',
    size,
    nRx,
    nTx,
    nSub,
    subcarriers: Int16Array.from({ length: nSub }, (_, i) => i - (nSub >> 1)),
    times: Float64Array.from({ length: size }, (_, t) => T0 + (t * 1000) / rateHz),
    rateHz,
    seq: windowIndex * 8,
    windowIndex,
    data,
  };
}

const spectra = (windows: CsiWindow[], opts: Parameters<typeof doppler>[0] = {}) => lastValueFrom(from(windows).pipe(doppler(opts), toArray()));

const one = async (w: CsiWindow, opts: Parameters<typeof doppler>[0] = {}) => (await spectra([w], opts))[0];

/** exp(j 2 pi f t / rate) with amplitude a. */
const tone =
  (f: number, a = 1, rate = 100) =>
  (t: number): [number, number] => [a * Math.cos((2 * Math.PI * f * t) / rate), a * Math.sin((2 * Math.PI * f * t) / rate)];

function argmax(s: DopplerSpectrum, stream: number): number {
  let best = 0;
  for (let b = 1; b < s.nBins; b++) if (s.power[stream * s.nBins + b] > s.power[stream * s.nBins + best]) best = b;
  return best;
}

const streamPower = (s: DopplerSpectrum, stream: number) => s.power.subarray(stream * s.nBins, (stream + 1) * s.nBins).reduce((a, b) => a + b, 0);

describe('doppler: marbles', () => {
  const w = (f: number, i: number) => makeWindow({ windowIndex: i, value: (t) => tone(f)(t) });
  const v = { a: w(12.5, 0), b: w(-25, 1), c: w(6.25, 2), d: w(0, 3) };
  /** Window index and the frequency of the strongest bin. */
  const peak = map((s: DopplerSpectrum) => `${s.windowIndex}@${(argmax(s, 0) - s.nBins / 2) * s.binHz}`);

  it('emits one spectrum per window, in order', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b--c|', v);
      const expected = '  x-y--z|';
      expectObservable(src.pipe(doppler(), peak)).toBe(expected, { x: '0@12.5', y: '1@-25', z: '2@6.25' });
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-#', v, new Error('boom'));
      const expected = '  x-y-#';
      expectObservable(src.pipe(doppler(), peak)).toBe(expected, { x: '0@12.5', y: '1@-25' }, new Error('boom'));
    });
  });

  it('ends the stream with an error for a window whose data does not match its shape', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const bad = { ...v.b, data: new Float32Array(10) };
      const src = cold('a-b-c|', { ...v, b: bad });
      const expected = '  x-#';
      expectObservable(src.pipe(doppler(), peak)).toBe(
        expected,
        { x: '0@12.5' },
        new RangeError('doppler: window 1 data length 10 / times length 64 do not match size 64 x 1x1x1'),
      );
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^------!       ';
      const unsub = '  ^------!       ';
      const expected = '--x--y---       ';
      expectObservable(src.pipe(doppler(), peak), unsub).toBe(expected, { x: '0@12.5', y: '1@-25' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^------!       ';
      const unsub = '  ^------!       ';
      const expected = '--x--y---       ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        doppler(),
        mergeMap((x) => of(x)),
        peak,
      );
      expectObservable(result, unsub).toBe(expected, { x: '0@12.5', y: '1@-25' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('doppler: golden', () => {
  it('puts a complex exponential in its bin, telling positive from negative frequencies', async () => {
    // 64 frames at 100 Hz: binHz = 1.5625, so 12.5 Hz is 8 bins above 0 Hz (bin 32 + 8).
    const pos = await one(makeWindow({ value: (t) => tone(12.5)(t) }));
    const neg = await one(makeWindow({ value: (t) => tone(-12.5)(t) }));
    expect(pos.nBins).toBe(64);
    expect(pos.binHz).toBe(100 / 64);
    expect(argmax(pos, 0)).toBe(40);
    expect(argmax(neg, 0)).toBe(24);
    // A tone exactly on a bin leaks (through the Hann window) only into its two neighbours.
    expect(pos.power[24]).toBeLessThan(1e-9 * pos.power[40]);
    expect(pos.power[39]).toBeCloseTo(pos.power[40] / 4, 3);
  });

  it('zero-pads a window whose size is not a power of two', async () => {
    // 50 frames -> 64-point FFT, binHz = 100 / 64; 20.3125 Hz is bin 13 above 0 Hz.
    const s = await one(makeWindow({ size: 50, value: (t) => tone(20.3125)(t) }));
    expect(s.nBins).toBe(64);
    expect(argmax(s, 0)).toBe(32 + 13);
  });

  it('gives zero power for a constant series (the mean is removed)', async () => {
    const s = await one(makeWindow({ nRx: 2, nSub: 6, value: (_t, sc, rx) => [0.7 + sc, -1.3 * rx] }));
    expect(s.power.every((p) => Math.abs(p) < 1e-20)).toBe(true);
  });

  it('matches an independent naive DFT of the mean-removed, Hann-windowed series to 1e-4', async () => {
    const size = 50;
    const signal = (t: number): [number, number] => [
      0.8 * Math.cos(0.9 * t) + 0.3 * Math.sin(0.037 * t * t) + 2,
      0.5 * Math.sin(2.1 * t + 0.4) - 0.2 * Math.cos(0.011 * t * t * t) - 1,
    ];
    const w = makeWindow({ size, rateHz: 80, value: (t) => signal(t) });
    const s = await one(w);

    // Reference: straight from the definitions, in float64, on the float32 values the window holds.
    const M = 64;
    const xs = Array.from({ length: size }, (_, t) => [w.data[2 * t], w.data[2 * t + 1]]);
    const mean = xs.reduce((a, x) => [a[0] + x[0] / size, a[1] + x[1] / size], [0, 0]);
    const hann = Array.from({ length: size }, (_, n) => Math.sin((Math.PI * n) / size) ** 2);
    const energy = hann.reduce((a, h) => a + h * h, 0);
    const ref: number[] = [];
    for (let b = 0; b < M; b++) {
      const f = b - M / 2; // fftshifted: output bin b is frequency index b - M/2
      let re = 0;
      let im = 0;
      for (let n = 0; n < size; n++) {
        const yr = (xs[n][0] - mean[0]) * hann[n];
        const yi = (xs[n][1] - mean[1]) * hann[n];
        const a = (-2 * Math.PI * f * n) / M;
        re += yr * Math.cos(a) - yi * Math.sin(a);
        im += yr * Math.sin(a) + yi * Math.cos(a);
      }
      ref.push((re * re + im * im) / energy);
    }
    expect(s.binHz).toBe(80 / 64);
    expect(s.rateHz).toBe(80);
    expect(s.nBins).toBe(M);
    for (let b = 0; b < M; b++) expect(Math.abs(s.power[b] - ref[b])).toBeLessThanOrEqual(1e-4 * ref[b]);
  });

  it('averages within groups: motion in one group shows only in that stream, scaled by the share of moving subcarriers', async () => {
    // 2x2 links, 30 subcarriers, 3 groups of 10: sc 10..19 are group 1.
    const still = (sc: number, rx: number, tx: number): [number, number] => [1 + 0.1 * sc + rx, 0.5 - 0.2 * tx];
    const moving = (fraction: number) =>
      makeWindow({
        nRx: 2,
        nTx: 2,
        nSub: 30,
        value: (t, sc, rx, tx) => {
          const [re, im] = still(sc, rx, tx);
          // Motion on link rx1-tx0 only, in the first `fraction` of group 1's subcarriers.
          if (rx === 1 && tx === 0 && sc >= 10 && sc < 10 + 10 * fraction) {
            const [mr, mi] = tone(9.375, 0.5)(t);
            return [re + mr, im + mi];
          }
          return [re, im];
        },
      });
    const full = await one(moving(1));
    const half = await one(moving(0.5));
    expect(full.nStreams).toBe(12);
    const target = (1 * 2 + 0) * 3 + 1; // link rx1-tx0 is link 2; group 1
    expect(full.streams[target]).toBe('rx1-tx0 sc[-5..4]');
    for (let s = 0; s < 12; s++) {
      if (s === target) continue;
      expect(streamPower(full, s)).toBeLessThan(1e-12 * streamPower(full, target));
      expect(streamPower(half, s)).toBeLessThan(1e-12 * streamPower(half, target));
    }
    expect(argmax(full, target)).toBe(32 + 6);
    // Half the subcarriers moving: the group mean carries half the amplitude, a quarter of the power.
    expect(streamPower(half, target) / streamPower(full, target)).toBeCloseTo(0.25, 4);
  });

  it('gives one stream per subcarrier with groups = 0', async () => {
    const w = makeWindow({
      nRx: 1,
      nTx: 2,
      nSub: 4,
      value: (t, sc, _rx, tx) => (sc === 2 && tx === 1 ? tone(-18.75)(t) : [1, 1]),
    });
    const s = await one(w, { groups: 0 });
    expect(s.nStreams).toBe(8);
    expect(s.streams).toEqual([
      'rx0-tx0 sc[-2]',
      'rx0-tx0 sc[-1]',
      'rx0-tx0 sc[0]',
      'rx0-tx0 sc[1]',
      'rx0-tx1 sc[-2]',
      'rx0-tx1 sc[-1]',
      'rx0-tx1 sc[0]',
      'rx0-tx1 sc[1]',
    ]);
    const moving = 4 + 2;
    expect(argmax(s, moving)).toBe(32 - 12);
    for (let i = 0; i < 8; i++) if (i !== moving) expect(streamPower(s, i)).toBeLessThan(1e-12 * streamPower(s, moving));
    // More groups than subcarriers is the same as one per subcarrier.
    expect((await one(w, { groups: 9 })).power).toEqual(s.power);
  });

  it('keeps only bins with |f| <= maxHz, laid out like a full spectrum', async () => {
    const w = makeWindow({ nSub: 2, value: (t, sc) => (sc === 0 ? tone(6.25)(t) : tone(-12.5)(t)) });
    const full = await one(w);
    const cut = await one(w, { maxHz: 10 });
    // binHz 1.5625: |f| <= 10 Hz is bins -6..6; bin -7 is kept too so 0 Hz stays at nBins / 2.
    expect(cut.nBins).toBe(14);
    expect(cut.binHz).toBe(full.binHz);
    for (let s = 0; s < 2; s++) expect(Array.from(cut.power.subarray(s * 14, (s + 1) * 14))).toEqual(Array.from(full.power.subarray(s * 64 + 25, s * 64 + 39)));
    expect((argmax(cut, 0) - cut.nBins / 2) * cut.binHz).toBe(6.25);
    // A maxHz beyond the Nyquist frequency keeps everything.
    expect((await one(w, { maxHz: 80 })).nBins).toBe(64);
  });

  it('fills the metadata and reuses the labels across windows of one shape', async () => {
    const ws = [0, 1, 2].map((i) => makeWindow({ nRx: 3, nTx: 3, nSub: 30, windowIndex: i, value: (t) => tone(3 * i)(t) }));
    const out = await spectra(ws);
    expect(out.map((s) => [s.windowIndex, s.time, s.nStreams, s.nBins, s.rateHz])).toEqual(ws.map((w, i) => [i, w.times[63], 27, 64, 100]));
    expect(out[1].streams).toBe(out[0].streams);
    expect(out[2].streams).toBe(out[0].streams);
    expect(out[1].power).not.toBe(out[0].power);
    expect(out[0].streams[0]).toBe('rx0-tx0 sc[-15..-6]');
    expect(out[0].streams[26]).toBe('rx2-tx2 sc[5..14]');
  });

  it('handles a change of shape between windows', async () => {
    const a = makeWindow({ nSub: 3, value: (t) => tone(12.5)(t) });
    const b = makeWindow({ size: 32, nRx: 2, nSub: 3, value: (t, _sc, rx) => (rx === 1 ? tone(-25)(t) : [1, 0]) });
    const [sa, sb, sa2] = await spectra([a, b, a]);
    expect([sa.nStreams, sa.nBins, sb.nStreams, sb.nBins]).toEqual([3, 64, 6, 32]);
    expect(argmax(sb, 3)).toBe(16 - 8);
    expect(sa2.power).toEqual(sa.power);
  });

  it('does not modify the window', async () => {
    const w = makeWindow({ nSub: 3, value: (t, sc) => tone(sc * 5)(t) });
    const copy = w.data.slice();
    await one(w);
    expect(w.data).toEqual(copy);
  });

  it('has a spec that builds the operator from defaults', async () => {
    expect(spec.name).toBe('doppler');
    expect(spec.input).toBe('window');
    expect(spec.output).toBe('spectrum');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({ groups: 3, maxHz: 0 });
    const w = makeWindow({ nSub: 30, value: (t) => tone(12.5)(t) });
    const [s]: DopplerSpectrum[] = await lastValueFrom(from([w]).pipe(spec.create(params, {}), toArray()));
    expect([s.nStreams, s.nBins, argmax(s, 1)]).toEqual([3, 64, 40]);
  });

  it('rejects bad options at creation', () => {
    expect(() => doppler({ groups: -1 })).toThrow(RangeError);
    expect(() => doppler({ groups: 1.5 })).toThrow(RangeError);
    expect(() => doppler({ maxHz: -1 })).toThrow(RangeError);
  });
});
