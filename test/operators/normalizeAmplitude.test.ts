import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame } from '../../src/csi/frame.js';
import { normalizeAmplitude, spec } from '../../operators/normalizeAmplitude.js';
import { makeFrame } from '../helpers/frames.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

const run = (frames: CsiFrame[], opts: Parameters<typeof normalizeAmplitude>[0] = {}) => lastValueFrom(from(frames).pipe(normalizeAmplitude(opts), toArray()));

/**
 * A 3x1x4 frame whose samples are g times a pattern of unit-magnitude values (1, j, -1, ...), so
 * its RMS amplitude is exactly |g| and power-of-two gains normalise without rounding.
 */
const unit = (seq: number, g: number) =>
  makeFrame({ seq, nRx: 3, nTx: 1, nSub: 4, value: (sc, rx) => (((sc + rx) & 1) === 0 ? [g * (sc - 1.5 > 0 ? 1 : -1), 0] : [0, g]) });

/** A frame with varied amplitudes and phases across links and subcarriers. */
const varied = (g = 1) =>
  makeFrame({
    nRx: 3,
    nTx: 2,
    nSub: 30,
    value: (sc, rx, tx) => {
      const amp = g * (0.5 + ((sc * 7 + rx * 3 + tx) % 11) / 4) * (1 + rx);
      const ph = sc * 0.3 - rx * 1.1 + tx * 0.4;
      return [amp * Math.cos(ph), amp * Math.sin(ph)];
    },
  });

const rms = (csi: Float32Array, from = 0, step = 2) => {
  let e = 0;
  let n = 0;
  for (let c = from; c < csi.length; c += step) {
    e += csi[c]! ** 2 + csi[c + 1]! ** 2;
    n++;
  }
  return Math.sqrt(e / n);
};

describe('normalize: marbles', () => {
  it('passes values through in order, each at RMS 1', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const input = { a: unit(0, 4), b: unit(1, 0.25), c: unit(2, 1) };
      const output = { a: unit(0, 1), b: unit(1, 1), c: unit(2, 1) };
      const src = cold('-a-b--c-|', input);
      const subs = '    ^-------!';
      const expected = '-a-b--c-|';
      expectObservable(src.pipe(normalizeAmplitude())).toBe(expected, output);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-#', { a: unit(0, 2) }, new Error('boom'));
      const expected = '-a-#';
      expectObservable(src.pipe(normalizeAmplitude())).toBe(expected, { a: unit(0, 1) }, new Error('boom'));
    });
  });

  it('sends a malformed frame to the subscriber as an error', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('-a-b-c|', { a: unit(0, 2), b: { ...unit(1, 2), nSub: 5 }, c: unit(2, 2) });
      const subs = '    ^--!   ';
      const expected = '-a-#   ';
      expectObservable(src.pipe(normalizeAmplitude())).toBe(
        expected,
        { a: unit(0, 1) },
        new RangeError('normalize: frame 1 has 24 csi values, expected 30 for 3x1x5'),
      );
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', { a: unit(0, 2), b: unit(1, 8), c: unit(2, 2) });
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-     ';
      expectObservable(src.pipe(normalizeAmplitude()), unsub).toBe(expected, { a: unit(0, 1), b: unit(1, 1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', { a: unit(0, 2), b: unit(1, 8), c: unit(2, 2) });
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-     ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        normalizeAmplitude({ scope: 'link' }),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected, { a: unit(0, 1), b: unit(1, 1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('normalize: golden', () => {
  it('hand-computed: (3+4j, 0) has mean power 12.5, so it becomes (3+4j)/sqrt(12.5)', async () => {
    const f = makeFrame({ nRx: 1, nTx: 1, nSub: 2, value: (sc) => (sc === 0 ? [3, 4] : [0, 0]) });
    const [out] = await run([f]);
    const g = 1 / Math.sqrt(12.5);
    expect(out!.csi).toEqual(Float32Array.from([3 * g, 4 * g, 0, 0]));
  });

  it('a frame scaled by an AGC gain g normalises to the same values as the unscaled one', async () => {
    const base = varied();
    const before = Float32Array.from(base.csi);
    for (const scope of ['packet', 'link'] as const) {
      const outs = await run([base, varied(7.3), varied(0.013), varied(2)], { scope });
      for (const o of outs.slice(1)) for (let i = 0; i < o.csi.length; i++) expect(Math.abs(o.csi[i]! - outs[0]!.csi[i]!)).toBeLessThan(1e-6);
      expect(rms(outs[0]!.csi)).toBeCloseTo(1, 6);
      expect(outs[0]).toEqual({ ...base, csi: outs[0]!.csi });
    }
    expect(base.csi).toEqual(before);
  });

  it('packet scope keeps the amplitude ratios between antennas; link scope puts every link at RMS 1', async () => {
    const f = varied(3);
    const [packet] = await run([f]);
    const [link] = await run([f], { scope: 'link' });
    const nL = 6;
    const g = rms(packet!.csi) / rms(f.csi);
    for (let l = 0; l < nL; l++) {
      expect(rms(link!.csi, 2 * l, 2 * nL)).toBeCloseTo(1, 6);
      // Same factor on every link in packet scope.
      expect(rms(packet!.csi, 2 * l, 2 * nL) / rms(f.csi, 2 * l, 2 * nL)).toBeCloseTo(g, 6);
    }
    // The links of varied() differ in level, so the two scopes really differ.
    expect(Math.abs(rms(packet!.csi, 0, 2 * nL) - rms(packet!.csi, 2 * 4, 2 * nL))).toBeGreaterThan(0.5);
    // Phases untouched by either scope.
    for (let c = 0; c < f.csi.length; c += 2) {
      const p = Math.atan2(f.csi[c + 1]!, f.csi[c]!);
      expect(Math.atan2(packet!.csi[c + 1]!, packet!.csi[c]!)).toBeCloseTo(p, 6);
      expect(Math.atan2(link!.csi[c + 1]!, link!.csi[c]!)).toBeCloseTo(p, 6);
    }
  });

  it('zero-energy frames and links pass unchanged, never NaN', async () => {
    const silent = makeFrame({ nRx: 2, nTx: 1, nSub: 4, value: () => [0, 0] });
    const [p] = await run([silent]);
    const [l] = await run([silent], { scope: 'link' });
    expect(p).toBe(silent);
    expect(l).toBe(silent);
    // One dead antenna: the live one is normalised, the dead one stays zero.
    const half = makeFrame({ nRx: 2, nTx: 1, nSub: 4, value: (_, rx) => (rx === 0 ? [0, 0] : [0, 8]) });
    const [hl] = await run([half], { scope: 'link' });
    expect(Array.from(hl!.csi)).toEqual([0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]);
    const [hp] = await run([half]);
    expect(hp!.csi.every(Number.isFinite)).toBe(true);
    expect(rms(hp!.csi)).toBeCloseTo(1, 6);
  });

  it('follows shape changes mid-stream', async () => {
    const outs = await run([unit(0, 4), varied(2), unit(2, 0.5)], { scope: 'link' });
    expect(outs.map((f) => [f.nRx, f.nTx, f.nSub])).toEqual([
      [3, 1, 4],
      [3, 2, 30],
      [3, 1, 4],
    ]);
    expect(outs[0]!.csi).toEqual(unit(0, 1).csi);
    expect(outs[2]!.csi).toEqual(unit(2, 1).csi);
    for (let l = 0; l < 6; l++) expect(rms(outs[1]!.csi, 2 * l, 12)).toBeCloseTo(1, 6);
  });

  it('spec declares the operator', async () => {
    expect(spec.name).toBe('normalize');
    expect(spec.params).toEqual([expect.objectContaining({ name: 'scope', type: 'enum', default: 'packet', values: ['packet', 'link'] })]);
    const [viaSpec] = await lastValueFrom(of(varied(3)).pipe(spec.create({ scope: 'link' }, {}), toArray()));
    expect(viaSpec).toEqual((await run([varied(3)], { scope: 'link' }))[0]);
  });
});
