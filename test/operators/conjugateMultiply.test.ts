import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame } from '../../src/csi/frame.js';
import { conjugateMultiply, spec } from '../../operators/conjugateMultiply.js';
import { makeFrame } from '../helpers/frames.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

const run = (frames: CsiFrame[], opts: Parameters<typeof conjugateMultiply>[0] = {}) => lastValueFrom(from(frames).pipe(conjugateMultiply(opts), toArray()));

/** Small integers so the products are exact in float32. */
const H: [number, number][] = [
  [1, 2],
  [3, -1],
  [0.5, 4],
];
/** 3 rx x 1 tx x 2 subcarriers: subcarrier 1 is subcarrier 0 times 2 (products times 4). */
const small = (seq = 0) => makeFrame({ seq, nRx: 3, nTx: 1, nSub: 2, value: (sc, rx) => [H[rx]![0] * (sc + 1), H[rx]![1] * (sc + 1)] });

/** The expected output of `small` for pairs=ref, ref 0, worked by hand (see the golden test). */
const smallRef = (seq = 0): CsiFrame => {
  const f = small(seq);
  const prods: [number, number][] = [
    [1, -7],
    [8.5, 3],
  ];
  return {
    ...makeFrame({ seq, nRx: 2, nTx: 1, nSub: 2, value: (sc, p) => [prods[p]![0] * (sc + 1) ** 2, prods[p]![1] * (sc + 1) ** 2] }),
    rssi: f.rssi,
    meta: {
      conj_pairs: [
        [1, 0],
        [2, 0],
      ],
    },
  };
};

describe('conj: marbles', () => {
  it('passes values through in order', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('-a-b--c-|', { a: small(0), b: small(1), c: small(2) });
      const subs = '    ^-------!';
      const expected = '-a-b--c-|';
      expectObservable(src.pipe(conjugateMultiply())).toBe(expected, { a: smallRef(0), b: smallRef(1), c: smallRef(2) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-#', { a: small(0) }, new Error('boom'));
      const expected = '-a-#';
      expectObservable(src.pipe(conjugateMultiply())).toBe(expected, { a: smallRef(0) }, new Error('boom'));
    });
  });

  it('errors on a single-antenna frame with a clear message', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const single = makeFrame({ seq: 1, nRx: 1, nTx: 1, nSub: 2 });
      const src = cold('-a-b-c|', { a: small(0), b: single, c: small(2) });
      const subs = '    ^--!   ';
      const expected = '-a-#   ';
      expectObservable(src.pipe(conjugateMultiply())).toBe(
        expected,
        { a: smallRef(0) },
        new RangeError('conj: needs at least 2 receive antennas, frame 1 has 1'),
      );
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('errors when the reference antenna does not exist', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a|', { a: small(4) });
      const expected = '-#';
      expectObservable(src.pipe(conjugateMultiply({ ref: 3 }))).toBe(
        expected,
        {},
        new RangeError('conj: reference antenna 3 does not exist, frame 4 has 3 rx'),
      );
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', { a: small(0), b: small(1), c: small(2) });
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-     ';
      expectObservable(src.pipe(conjugateMultiply()), unsub).toBe(expected, { a: smallRef(0), b: smallRef(1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', { a: small(0), b: small(1), c: small(2) });
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-     ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        conjugateMultiply(),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected, { a: smallRef(0), b: smallRef(1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('conj: golden', () => {
  it('hand-computed products for ref and adjacent pairs', async () => {
    // (3 - j)(1 - 2j) = 1 - 7j; (0.5 + 4j)(1 - 2j) = 8.5 + 3j; (0.5 + 4j)(3 + j) = -2.5 + 12.5j;
    // (1 + 2j)(0.5 - 4j) = 8.5 - 3j; (3 - j)(0.5 - 4j) = -2.5 - 12.5j.
    const f = small();
    const before = Float32Array.from(f.csi);
    const [ref0] = await run([f]);
    expect(Array.from(ref0!.csi)).toEqual([1, -7, 8.5, 3, 4, -28, 34, 12]);
    const [adj] = await run([f], { pairs: 'adjacent' });
    expect(Array.from(adj!.csi)).toEqual([1, -7, -2.5, 12.5, 4, -28, -10, 50]);
    expect(adj!.meta).toEqual({
      conj_pairs: [
        [1, 0],
        [2, 1],
      ],
    });
    const [ref2] = await run([f], { ref: 2 });
    expect(Array.from(ref2!.csi)).toEqual([8.5, -3, -2.5, -12.5, 34, -12, -10, -50]);
    expect(ref2!.meta).toEqual({
      conj_pairs: [
        [0, 2],
        [1, 2],
      ],
    });
    expect(f.csi).toEqual(before);
  });

  it('keeps nTx/nSub/subcarriers, sets nRx to the pair count, and spreads the input meta', async () => {
    const f = { ...makeFrame({ nRx: 4, nTx: 3, nSub: 30, value: (sc, rx, tx) => [sc + rx, tx - rx] }), meta: { bfee_count: 7, perm: [2, 0, 1] } };
    const [out] = await run([f], { pairs: 'adjacent' });
    expect(out).toEqual({
      ...f,
      nRx: 3,
      csi: out!.csi,
      meta: {
        bfee_count: 7,
        perm: [2, 0, 1],
        conj_pairs: [
          [1, 0],
          [2, 1],
          [3, 2],
        ],
      },
    });
    expect(out!.csi.length).toBe(30 * 3 * 3 * 2);
    // Straightforward per-sample check of the layout: out(sc, p, tx) = H(sc, p+1, tx) conj H(sc, p, tx).
    for (let sc = 0; sc < 30; sc++)
      for (let p = 0; p < 3; p++)
        for (let tx = 0; tx < 3; tx++) {
          const [ar, ai] = [sc + p + 1, tx - p - 1];
          const [br, bi] = [sc + p, tx - p];
          const o = ((sc * 3 + p) * 3 + tx) * 2;
          expect([out!.csi[o], out!.csi[o + 1]]).toEqual([ar * br + ai * bi, ai * br - ar * bi]);
        }
  });

  it('a common phase per packet (e^{j theta} on every value) leaves the output unchanged', async () => {
    const value = (sc: number, rx: number, tx: number): [number, number] => [Math.cos(sc * 0.2 + rx) * (1 + rx), Math.sin(sc * 0.3 - tx) + 0.5];
    const rotated = (theta: number) =>
      makeFrame({
        nRx: 3,
        nTx: 2,
        nSub: 30,
        value: (sc, rx, tx) => {
          const [re, im] = value(sc, rx, tx);
          return [re * Math.cos(theta) - im * Math.sin(theta), re * Math.sin(theta) + im * Math.cos(theta)];
        },
      });
    const outs = await run([rotated(0), rotated(2.1), rotated(-0.7), rotated(5.9)]);
    for (const o of outs.slice(1)) for (let i = 0; i < o.csi.length; i++) expect(Math.abs(o.csi[i]! - outs[0]!.csi[i]!)).toBeLessThan(1e-5);
    // The rotation really changed the input.
    expect(Math.abs(rotated(2.1).csi[0]! - rotated(0).csi[0]!)).toBeGreaterThan(0.5);
  });

  it('follows a change in the number of antennas mid-stream (3x1 to 2x3)', async () => {
    const a = small(0);
    const b = makeFrame({ seq: 1, nRx: 2, nTx: 3, nSub: 2, value: (sc, rx, tx) => [rx + 1, sc + tx] });
    const outs = await run([a, b, small(2)]);
    expect(outs.map((f) => [f.nRx, f.nTx, f.nSub, f.meta?.conj_pairs])).toEqual([
      [
        2,
        1,
        2,
        [
          [1, 0],
          [2, 0],
        ],
      ],
      [1, 3, 2, [[1, 0]]],
      [
        2,
        1,
        2,
        [
          [1, 0],
          [2, 0],
        ],
      ],
    ]);
    // With m = sc + tx: (2 + jm) * conj(1 + jm) = (2 + jm)(1 - jm) = 2 + m^2 - jm.
    expect(Array.from(outs[1]!.csi)).toEqual([2, 0, 3, -1, 6, -2, 3, -1, 6, -2, 11, -3]);
    expect(outs[2]).toEqual(smallRef(2));
  });

  it('rejects bad parameters at construction; spec builds the operator', async () => {
    expect(() => conjugateMultiply({ ref: -1 })).toThrow(RangeError);
    expect(() => conjugateMultiply({ ref: 1.5 })).toThrow(RangeError);
    expect(spec.name).toBe('conj');
    expect(spec.params.map((p) => [p.name, p.default])).toEqual([
      ['pairs', 'ref'],
      ['ref', 0],
    ]);
    const viaSpec = await lastValueFrom(of(small()).pipe(spec.create({ pairs: 'adjacent', ref: 0 }, {})));
    expect(viaSpec).toEqual((await run([small()], { pairs: 'adjacent' }))[0]);
  });
});
