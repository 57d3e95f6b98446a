import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame } from '../../src/csi/frame.js';
import { sanitizePhase, spec, type SanitizeMethod, type SanitizeScope } from '../../operators/sanitizePhase.js';
import { makeFrame } from '../helpers/frames.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** Intel 5300's 30 grouped subcarriers at 20 MHz. */
const INTEL = Int16Array.from([-28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28]);
const UNIFORM = Int16Array.from({ length: 30 }, (_, i) => i - 15);
const DF = 312.5e3;

type Value = (sc: number, rx: number, tx: number) => [number, number];

interface Path {
  amp: number;
  delayNs: number;
  /** Angle of arrival (rad): phase step pi*sin(aoa) between receive antennas. */
  aoa: number;
  /** Angle of departure (rad): phase step pi*sin(aod) between transmit antennas. */
  aod: number;
}

/** A few-path channel: H[k,m,n] = sum a_p exp(-j(2 pi f_k tau_p + pi m sin aoa_p + pi n sin aod_p)). */
const PATHS: Path[] = [
  { amp: 1, delayNs: 15, aoa: 0.3, aod: -0.2 },
  { amp: 0.45, delayNs: 60, aoa: -0.7, aod: 0.5 },
  { amp: 0.25, delayNs: 110, aoa: 1.1, aod: 0.1 },
];

function channel(paths: Path[], sub: Int16Array): Value {
  return (sc, rx, tx) => {
    const k = sub[sc]!;
    let re = 0;
    let im = 0;
    for (const p of paths) {
      const ph = -(2 * Math.PI * DF * k * p.delayNs * 1e-9 + Math.PI * rx * Math.sin(p.aoa) + Math.PI * tx * Math.sin(p.aod));
      re += p.amp * Math.cos(ph);
      im += p.amp * Math.sin(ph);
    }
    return [re, im];
  };
}

/** The hardware's per-packet distortion: common phase theta and slope s rad per subcarrier index. */
function distort(value: Value, sub: Int16Array, theta: number, s: number): Value {
  return (sc, rx, tx) => {
    const [re, im] = value(sc, rx, tx);
    const ph = theta + s * sub[sc]!;
    const c = Math.cos(ph);
    const d = Math.sin(ph);
    return [re * c - im * d, re * d + im * c];
  };
}

const wrap = (x: number) => x - 2 * Math.PI * Math.round(x / (2 * Math.PI));

/**
 * Independent straightforward sanitisation in double precision: per-sample atan2, classic unwrap,
 * textbook normal equations, cos/sin per sample for the output. Returns interleaved re/im.
 */
function reference(frame: CsiFrame, method: SanitizeMethod, scope: SanitizeScope, value?: Value): Float64Array {
  const { nRx, nTx, nSub } = frame;
  const nL = nRx * nTx;
  const get = (sc: number, l: number): [number, number] => {
    if (value) return value(sc, Math.floor(l / nTx), l % nTx);
    const c = (sc * nL + l) * 2;
    return [frame.csi[c]!, frame.csi[c + 1]!];
  };
  const order = [...Array(nSub).keys()].sort((x, y) => frame.subcarriers[x]! - frame.subcarriers[y]!);
  const ks = order.map((sc) => frame.subcarriers[sc]!);
  const lines: { a: number; b: number }[] = [];
  if (method === 'fit') {
    const perLink = [];
    for (let l = 0; l < nL; l++) {
      const pts: { k: number; p: number }[] = [];
      for (let i = 0; i < nSub; i++) {
        const [re, im] = get(order[i]!, l);
        if (re * re + im * im === 0) continue;
        let p = Math.atan2(im, re);
        if (pts.length) {
          const last = pts[pts.length - 1]!.p;
          while (p - last > Math.PI) p -= 2 * Math.PI;
          while (p - last < -Math.PI) p += 2 * Math.PI;
        }
        pts.push({ k: ks[i]!, p });
      }
      const n = pts.length;
      const sk = pts.reduce((s, q) => s + q.k, 0);
      const sp = pts.reduce((s, q) => s + q.p, 0);
      const skk = pts.reduce((s, q) => s + q.k * q.k, 0);
      const skp = pts.reduce((s, q) => s + q.k * q.p, 0);
      perLink.push({ n, sk, sp, skk, skp });
    }
    if (scope === 'link') {
      for (const { n, sk, sp, skk, skp } of perLink) {
        const a = (n * skp - sk * sp) / (n * skk - sk * sk);
        lines.push({ a, b: (sp - a * sk) / n });
      }
    } else {
      // Common slope with per-link intercepts, then the circular mean of the intercepts.
      const num = perLink.reduce((s, q) => s + (q.skp - (q.sk * q.sp) / q.n), 0);
      const den = perLink.reduce((s, q) => s + (q.skk - (q.sk * q.sk) / q.n), 0);
      const a = num / den;
      let c = 0;
      let d = 0;
      for (const q of perLink) {
        const bl = (q.sp - a * q.sk) / q.n;
        c += q.n * Math.cos(bl);
        d += q.n * Math.sin(bl);
      }
      for (let l = 0; l < nL; l++) lines.push({ a, b: Math.atan2(d, c) });
    }
  } else {
    const groups = scope === 'packet' ? [[...Array(nL).keys()]] : [...Array(nL).keys()].map((l) => [l]);
    for (const links of groups) {
      const bySteps = new Map<number, { n: number; re: number; im: number }>();
      for (const l of links)
        for (let i = 0; i + 1 < nSub; i++) {
          const d = ks[i + 1]! - ks[i]!;
          const [ar, ai] = get(order[i]!, l);
          const [br, bi] = get(order[i + 1]!, l);
          const g = bySteps.get(d) ?? { n: 0, re: 0, im: 0 };
          g.n++;
          g.re += br * ar + bi * ai;
          g.im += bi * ar - br * ai;
          bySteps.set(d, g);
        }
      const classes = [...bySteps.entries()].map(([d, g]) => ({ d, ...g }));
      const dom = [...classes].sort((x, y) => y.n - x.n || x.d - y.d)[0]!;
      const a0 = Math.atan2(dom.im, dom.re) / dom.d;
      let w = 0;
      let as = 0;
      for (const g of classes) {
        const mag = Math.hypot(g.re, g.im);
        w += mag;
        as += mag * (a0 + wrap(Math.atan2(g.im, g.re) - a0 * g.d) / g.d);
      }
      const a = as / w;
      let sr = 0;
      let si = 0;
      for (const l of links)
        for (let i = 0; i < nSub; i++) {
          const [re, im] = get(order[i]!, l);
          sr += re * Math.cos(a * ks[i]!) + im * Math.sin(a * ks[i]!);
          si += im * Math.cos(a * ks[i]!) - re * Math.sin(a * ks[i]!);
        }
      const b = Math.atan2(si, sr);
      for (const _ of links) lines.push({ a, b });
    }
  }
  const out = new Float64Array(frame.csi.length);
  for (let sc = 0; sc < nSub; sc++)
    for (let l = 0; l < nL; l++) {
      const [re, im] = get(sc, l);
      const { a, b } = lines[l]!;
      const amp = Math.hypot(re, im);
      const ph = Math.atan2(im, re) - a * frame.subcarriers[sc]! - b;
      out[(sc * nL + l) * 2] = amp * Math.cos(ph);
      out[(sc * nL + l) * 2 + 1] = amp * Math.sin(ph);
    }
  return out;
}

const run = async (frames: CsiFrame[], opts: Parameters<typeof sanitizePhase>[0] = {}) => lastValueFrom(from(frames).pipe(sanitizePhase(opts), toArray()));

const one = async (frame: CsiFrame, opts: Parameters<typeof sanitizePhase>[0] = {}) => (await run([frame], opts))[0]!;

/** Largest phase error (rad) between out and expected over samples with amplitude; and largest relative amplitude error against input. */
function errors(out: Float32Array, expected: ArrayLike<number>, input: Float32Array) {
  let phase = 0;
  let amp = 0;
  for (let c = 0; c < out.length; c += 2) {
    const ai = Math.hypot(input[c]!, input[c + 1]!);
    const ao = Math.hypot(out[c]!, out[c + 1]!);
    if (ai === 0) continue;
    amp = Math.max(amp, Math.abs(ao - ai) / ai);
    phase = Math.max(phase, Math.abs(wrap(Math.atan2(out[c + 1]!, out[c]!) - Math.atan2(expected[c + 1]!, expected[c]!))));
  }
  return { phase, amp };
}

/** Round csi to 1e-4 so that float rounding of trigonometry does not decide marble equality. */
const quantize = (f: CsiFrame): CsiFrame => ({ ...f, csi: Float32Array.from(f.csi, (v) => Math.round(v * 1e4) / 1e4 + 0) });

/** A single-path frame: amplitude varying over subcarriers, linear phase theta + s*k, same on all links. */
const linearFrame = (seq: number, theta: number, s: number) =>
  makeFrame({
    seq,
    nRx: 3,
    nTx: 1,
    nSub: 8,
    value: (sc) => {
      const amp = 1 + sc * 0.5;
      const ph = theta + s * (sc - 4);
      return [amp * Math.cos(ph), amp * Math.sin(ph)];
    },
  });
/** What sanitising a linearFrame gives: the amplitude on the real axis. */
const flatFrame = (seq: number) => makeFrame({ seq, nRx: 3, nTx: 1, nSub: 8, value: (sc) => [1 + sc * 0.5, 0] });

describe('sanitize: marbles', () => {
  for (const method of ['fit', 'phasor'] as const) {
    it(`${method}: passes values through in order, each sanitised`, () => {
      testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
        const input = { a: linearFrame(0, 1, 0.4), b: linearFrame(1, -2.5, -0.9), c: linearFrame(2, 3, 1.2) };
        const output = { a: flatFrame(0), b: flatFrame(1), c: flatFrame(2) };
        const src = cold('-a-b--c-|', input);
        const subs = '    ^-------!';
        const expected = '-a-b--c-|';
        expectObservable(src.pipe(sanitizePhase({ method }), map(quantize))).toBe(expected, output);
        expectSubscriptions(src.subscriptions).toBe(subs);
      });
    });
  }

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-#', { a: linearFrame(0, 1, 0.4) }, new Error('boom'));
      const expected = '-a-#';
      expectObservable(src.pipe(sanitizePhase(), map(quantize))).toBe(expected, { a: flatFrame(0) }, new Error('boom'));
    });
  });

  it('sends a malformed frame to the subscriber as an error and unsubscribes from the source', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const bad = { ...linearFrame(1, 0, 0), csi: new Float32Array(5) };
      const src = cold('-a-b-c|', { a: linearFrame(0, 1, 0.4), b: bad, c: linearFrame(2, 0, 0) });
      const subs = '    ^--!   ';
      const expected = '-a-#   ';
      expectObservable(src.pipe(sanitizePhase(), map(quantize))).toBe(
        expected,
        { a: flatFrame(0) },
        new RangeError('sanitize: frame 1 has 5 csi values, expected 48 for 3x1x8'),
      );
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const input = { a: linearFrame(0, 1, 0.4), b: linearFrame(1, 2, 0.1), c: linearFrame(2, 0, 0.3) };
      const src = hot('--a--b--c--|', input);
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-      ';
      expectObservable(src.pipe(sanitizePhase(), map(quantize)), unsub).toBe(expected, { a: flatFrame(0), b: flatFrame(1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const input = { a: linearFrame(0, 1, 0.4), b: linearFrame(1, 2, 0.1), c: linearFrame(2, 0, 0.3) };
      const src = hot('--a--b--c--|', input);
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const expected = '--a--b-      ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        sanitizePhase({ method: 'phasor' }),
        mergeMap((x) => of(x)),
        map(quantize),
      );
      expectObservable(result, unsub).toBe(expected, { a: flatFrame(0), b: flatFrame(1) });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('sanitize: golden', () => {
  // 0.5 rad per index: 28 rad (about 4.5 turns) across Intel's band, and with a common phase too.
  const THETA = 2.4;
  const SLOPE = 0.5;

  for (const method of ['fit', 'phasor'] as const)
    for (const [name, sub] of [
      ['uniform', UNIFORM],
      ['Intel 5300 (non-uniform)', INTEL],
    ] as const)
      for (const scope of ['packet', 'link'] as const)
        it(`${method}, ${scope} scope, ${name} indices: recovers the clean multipath phase shape`, async () => {
          const clean = channel(PATHS, sub);
          const frame = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: sub, value: distort(clean, sub, THETA, SLOPE) });
          const before = Float32Array.from(frame.csi);
          const out = await one(frame, { method, scope });
          // The clean channel sanitised by the independent computation.
          const expected = reference(frame, method, scope, clean);
          const err = errors(out.csi, expected, frame.csi);
          expect(err.phase).toBeLessThan(1e-3);
          expect(err.amp).toBeLessThan(1e-5);
          expect(out.csi).not.toBe(frame.csi);
          expect(frame.csi).toEqual(before);
          expect(out).toEqual({ ...frame, csi: out.csi });
          // And what the operator does to the clean channel is the same: the distortion is gone.
          const outClean = await one(makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: sub, value: clean }), { method, scope });
          expect(errors(out.csi, outClean.csi, frame.csi).phase).toBeLessThan(1e-3);
        });

  it('the reference itself is not trivially satisfied: the distortion is large and the shape is not flat', () => {
    const clean = channel(PATHS, INTEL);
    const frame = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: INTEL, value: distort(clean, INTEL, THETA, SLOPE) });
    const expected = reference(frame, 'fit', 'packet', clean);
    // The unsanitised frame is far from the expected output...
    expect(errors(frame.csi, expected, frame.csi).phase).toBeGreaterThan(1);
    // ...and the expected output is far from a flat phase (multipath shape and antenna phases).
    const flat = Float64Array.from(frame.csi, (_, i) => (i % 2 === 0 ? 1 : 0));
    expect(errors(Float32Array.from(expected), flat, frame.csi).phase).toBeGreaterThan(0.3);
  });

  it('on a single path both methods agree and leave a flat phase per antenna', async () => {
    const single = channel([PATHS[0]!], INTEL);
    const frame = makeFrame({ nRx: 3, nTx: 1, nSub: 30, subcarriers: INTEL, value: distort(single, INTEL, -1.1, -0.6) });
    const fit = await one(frame, { method: 'fit' });
    const phasor = await one(frame, { method: 'phasor' });
    expect(errors(fit.csi, phasor.csi, frame.csi).phase).toBeLessThan(1e-5);
    for (let sc = 1; sc < 30; sc++)
      for (let rx = 0; rx < 3; rx++) {
        const c = (sc * 3 + rx) * 2;
        const p = Math.atan2(fit.csi[c + 1]!, fit.csi[c]!);
        const p0 = Math.atan2(fit.csi[rx * 2 + 1]!, fit.csi[rx * 2]!);
        expect(Math.abs(wrap(p - p0))).toBeLessThan(1e-5);
      }
  });

  for (const method of ['fit', 'phasor'] as const) {
    it(`${method}: packet scope preserves the inter-antenna phase differences of the clean channel, link scope does not`, async () => {
      const clean = channel(PATHS, INTEL);
      const cleanFrame = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: INTEL, value: clean });
      const frame = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: INTEL, value: distort(clean, INTEL, THETA, SLOPE) });
      const packet = await one(frame, { method, scope: 'packet' });
      const link = await one(frame, { method, scope: 'link' });
      const diff = (csi: Float32Array, sc: number, rx: number, tx: number) => {
        const a = ((sc * 3 + rx) * 2 + tx) * 2;
        const b = ((sc * 3 + 0) * 2 + 0) * 2;
        return Math.atan2(csi[a + 1]!, csi[a]!) - Math.atan2(csi[b + 1]!, csi[b]!);
      };
      let packetErr = 0;
      let linkErr = 0;
      for (let sc = 0; sc < 30; sc++)
        for (let rx = 0; rx < 3; rx++)
          for (let tx = 0; tx < 2; tx++) {
            const truth = diff(cleanFrame.csi, sc, rx, tx);
            packetErr = Math.max(packetErr, Math.abs(wrap(diff(packet.csi, sc, rx, tx) - truth)));
            linkErr = Math.max(linkErr, Math.abs(wrap(diff(link.csi, sc, rx, tx) - truth)));
          }
      expect(packetErr).toBeLessThan(1e-3);
      expect(linkErr).toBeGreaterThan(0.1);
    });
  }

  for (const method of ['fit', 'phasor'] as const) {
    it(`${method}: zero-amplitude samples give no NaN and stay zero; the rest is still sanitised`, async () => {
      const clean = channel(PATHS, INTEL);
      const zeros = new Set([0, 7, 15, 29]);
      const holed: Value = (sc, rx, tx) => (zeros.has(sc) && rx === 1 ? [0, 0] : clean(sc, rx, tx));
      const frame = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: INTEL, value: distort(holed, INTEL, THETA, SLOPE) });
      for (const scope of ['packet', 'link'] as const) {
        const out = await one(frame, { method, scope });
        expect(out.csi.every(Number.isFinite)).toBe(true);
        for (const sc of zeros)
          for (let tx = 0; tx < 2; tx++) {
            expect(Math.abs(out.csi[((sc * 3 + 1) * 2 + tx) * 2]!)).toBe(0);
            expect(Math.abs(out.csi[((sc * 3 + 1) * 2 + tx) * 2 + 1]!)).toBe(0);
          }
        const err = errors(out.csi, reference(frame, method, scope, holed), frame.csi);
        expect(err.phase).toBeLessThan(1e-3);
        expect(err.amp).toBeLessThan(1e-5);
      }
      const silent = makeFrame({ nRx: 3, nTx: 2, nSub: 30, subcarriers: INTEL, value: () => [0, 0] });
      for (const scope of ['packet', 'link'] as const) expect(Array.from((await one(silent, { method, scope })).csi, Math.abs)).toEqual(Array.from(silent.csi));
    });
  }

  for (const method of ['fit', 'phasor'] as const) {
    it(`${method}: samples stored out of index order (FFT order) give the same per-subcarrier result`, async () => {
      const clean = channel(PATHS, UNIFORM);
      const value = distort(clean, UNIFORM, THETA, SLOPE);
      const sorted = makeFrame({ nRx: 2, nTx: 1, nSub: 30, subcarriers: UNIFORM, value });
      // FFT order: non-negative indices first, then the negative ones.
      const perm = [...Array(30).keys()].map((i) => (i + 15) % 30);
      const shuffled = makeFrame({
        nRx: 2,
        nTx: 1,
        nSub: 30,
        subcarriers: Int16Array.from(perm, (p) => UNIFORM[p]!),
        value: (sc, rx, tx) => value(perm[sc]!, rx, tx),
      });
      const a = await one(sorted, { method });
      const b = await one(shuffled, { method });
      const back = new Float32Array(a.csi.length);
      for (let sc = 0; sc < 30; sc++) for (let i = 0; i < 4; i++) back[perm[sc]! * 4 + i] = b.csi[sc * 4 + i]!;
      for (let i = 0; i < back.length; i++) expect(back[i]).toBeCloseTo(a.csi[i]!, 5);
    });
  }

  it('handles frames whose shape changes mid-stream (Intel 3x1 then 3x3, then back)', async () => {
    const v = distort(channel(PATHS, INTEL), INTEL, THETA, SLOPE);
    const f31 = makeFrame({ seq: 0, nRx: 3, nTx: 1, subcarriers: INTEL, value: v });
    const f33 = makeFrame({ seq: 1, nRx: 3, nTx: 3, subcarriers: INTEL, value: v });
    const f56 = makeFrame({ seq: 2, nRx: 2, nTx: 1, nSub: 56, value: (sc, rx) => [Math.cos(sc * 0.7 + rx), Math.sin(sc * 0.7 + rx) + 0.1] });
    for (const method of ['fit', 'phasor'] as const) {
      const outs = await run([f31, f33, f56, f31], { method });
      const alone = await Promise.all([f31, f33, f56, f31].map((f) => one(f, { method })));
      expect(outs.map((f) => [f.nRx, f.nTx, f.nSub])).toEqual([
        [3, 1, 30],
        [3, 3, 30],
        [2, 1, 56],
        [3, 1, 30],
      ]);
      expect(outs).toEqual(alone);
      expect(errors(outs[1]!.csi, reference(f33, method, 'packet'), f33.csi).phase).toBeLessThan(1e-3);
    }
  });

  it('spec declares the operator and builds it from parameter values', async () => {
    expect(spec.name).toBe('sanitize');
    expect(spec.input).toBe('frame');
    expect(spec.output).toBe('frame');
    expect(spec.params.map((p) => [p.name, p.default, p.values])).toEqual([
      ['method', 'fit', ['fit', 'phasor']],
      ['scope', 'packet', ['packet', 'link']],
    ]);
    const frame = makeFrame({ nRx: 3, nTx: 2, subcarriers: INTEL, value: distort(channel(PATHS, INTEL), INTEL, THETA, SLOPE) });
    const viaSpec = await lastValueFrom(of(frame).pipe(spec.create({ method: 'phasor', scope: 'link' }, {})));
    expect(viaSpec).toEqual(await one(frame, { method: 'phasor', scope: 'link' }));
    expect(() => sanitizePhase({ method: 'nope' as SanitizeMethod })).toThrow(RangeError);
  });
});
