import { describe, expect, it } from 'vitest';
import { Subject, from, lastValueFrom, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame, CsiWindow } from '../../src/csi/frame.js';
import { FEATURE_DIM, FeatureExtractor, HOP, N_GRID, N_LINKS, OFFSETS, WINDOW_FRAMES, hermitianEigenvalues } from '../../src/model/features.js';
import { features, MAX_STREAMS, windowQuality } from '../../operators/features.js';
import { frameMsOf, HISTORY_DIM, HISTORY_STEPS, HISTORY_WIDTH, HistoryRing } from '../../src/model/history.js';
import type { FeatureRow } from '../../operators/infer.js';
import { sanitizePhase } from '../../operators/sanitizePhase.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import { CsiSimulator, SUBCARRIERS, type SubcarrierLayout } from '../../src/sim/simulator.js';

const RATE = 100;
const T0 = Date.UTC(2026, 0, 1);

/** A window built from a function of (frame, subcarrier index, rx, tx). */
function makeWindow(
  nRx: number,
  nTx: number,
  subcarriers: Int16Array,
  size: number,
  value: (t: number, k: number, m: number, n: number) => [number, number],
  gain: (t: number) => number = () => 1,
): CsiWindow {
  const nSub = subcarriers.length;
  const frameLen = nSub * nRx * nTx * 2;
  const data = new Float32Array(size * frameLen);
  for (let t = 0; t < size; t++) {
    for (let s = 0; s < nSub; s++) {
      for (let m = 0; m < nRx; m++) {
        for (let n = 0; n < nTx; n++) {
          const [re, im] = value(t, subcarriers[s]!, m, n);
          const o = t * frameLen + ((s * nRx + m) * nTx + n) * 2;
          data[o] = re * gain(t);
          data[o + 1] = im * gain(t);
        }
      }
    }
  }
  return {
    sourceId: 'test',
    environmentId: 'room',
    size,
    nRx,
    nTx,
    nSub,
    subcarriers,
    times: Float64Array.from({ length: size }, (_, t) => T0 + (t * 1000) / RATE),
    rateHz: RATE,
    seq: 0,
    windowIndex: 0,
    data,
  };
}

/**
 * A static channel 1 + 0j plus one mover of relative amplitude A whose phase advances by
 * pi * U per rx antenna, pi * V per tx antenna and 2 pi F / RATE per frame (flat in frequency).
 * U = 2/3 makes the mover's phases over the three rx antennas sum to zero, so every frame has
 * power exactly 1 + A^2 and the per-frame gain is known.
 */
const A = 0.3;
const U = 2 / 3;
const V = 0.4;
const F = 12.5; // 4 cycles in the 32 fast frames, one cycle per 8-frame slow block
const mover = (t: number, _k: number, m: number, n: number): [number, number] => {
  const phi = (2 * Math.PI * F * t) / RATE + Math.PI * (m * U + n * V);
  return [1 + A * Math.cos(phi), A * Math.sin(phi)];
};

/** Features of `count` simulated windows (sanitised, windowed by the real operators). */
function simulatedRows(nSub: SubcarrierLayout, nRx: number, nTx: number, count: number, seed = 3): { windows: CsiWindow[]; rows: Float32Array[] } {
  const sim = new CsiSimulator({ seed, nSub, nRx, nTx, people: 2 });
  const windows: CsiWindow[] = [];
  const input = new Subject<CsiFrame>();
  input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP })).subscribe((w) => windows.push(w));
  while (windows.length < count) input.next(sim.next().frame);
  input.complete();
  const fx = new FeatureExtractor();
  return { windows, rows: windows.map((w) => fx.extract(w)) };
}

describe('FeatureExtractor layout', () => {
  const w = makeWindow(3, 3, SUBCARRIERS[30], WINDOW_FRAMES, mover);
  const f = new FeatureExtractor().extract(w);
  const motionPow = Math.log((A * A) / (1 + A * A) + 1e-7);

  it('has FEATURE_DIM finite values', () => {
    expect(f.length).toBe(FEATURE_DIM);
    for (const v of f) expect(Number.isFinite(v)).toBe(true);
  });

  it('fast view: motion power per link and grid point, and the total', () => {
    for (let i = 0; i < N_LINKS * N_GRID; i++) expect(f[OFFSETS.fastLogPow + i]).toBeCloseTo(motionPow, 4);
    expect(f[OFFSETS.totals + 1]).toBeCloseTo(motionPow, 4);
  });

  it('slow view: blocks of 8 frames average the 12.5 Hz mover away', () => {
    for (let i = 0; i < N_LINKS * N_GRID; i++) expect(f[OFFSETS.slowLogPow + i]).toBeCloseTo(Math.log(1e-7), 2);
  });

  it('fast correlations carry the rx, tx, delay and Doppler phases', () => {
    // corr(a, b) = sum a conj b: rx pairs (0,1) and (1,2) -> exp(-j pi U), (0,2) -> exp(-j 2 pi U).
    for (let n = 0; n < 3; n++) {
      const o = OFFSETS.fastRxCorr + n * 6;
      expect(f[o]).toBeCloseTo(Math.cos(Math.PI * U), 4);
      expect(f[o + 1]).toBeCloseTo(-Math.sin(Math.PI * U), 4);
      expect(f[o + 2]).toBeCloseTo(Math.cos(Math.PI * U), 4);
      expect(f[o + 3]).toBeCloseTo(-Math.sin(Math.PI * U), 4);
      expect(f[o + 4]).toBeCloseTo(Math.cos(2 * Math.PI * U), 4);
      expect(f[o + 5]).toBeCloseTo(-Math.sin(2 * Math.PI * U), 4);
    }
    for (let m = 0; m < 3; m++) {
      const o = OFFSETS.fastTxCorr + m * 6;
      expect(f[o]).toBeCloseTo(Math.cos(Math.PI * V), 4);
      expect(f[o + 1]).toBeCloseTo(-Math.sin(Math.PI * V), 4);
    }
    for (let l = 0; l < N_LINKS; l++) {
      // Flat in frequency: no delay; one frame later the phase is 2 pi F / RATE = pi / 4 further.
      expect(f[OFFSETS.fastFreqCorr + 2 * l]).toBeCloseTo(1, 4);
      expect(f[OFFSETS.fastFreqCorr + 2 * l + 1]).toBeCloseTo(0, 4);
      expect(f[OFFSETS.fastTimeCorr + 2 * l]).toBeCloseTo(Math.SQRT1_2, 4);
      expect(f[OFFSETS.fastTimeCorr + 2 * l + 1]).toBeCloseTo(Math.SQRT1_2, 4);
    }
  });

  it('derived geometry: bearings, coherences and the extra path length', () => {
    const g = OFFSETS.geometry;
    expect(f[g + 4]).toBeCloseTo(U, 4); // fast rx bearing
    expect(f[g + 5]).toBeCloseTo(1, 4);
    expect(f[g + 6]).toBeCloseTo(V, 4); // fast tx bearing
    expect(f[g + 7]).toBeCloseTo(1, 4);
    // Static view: the mean of the last 8 frames is the flat channel (one full mover cycle).
    expect(f[g + 8]).toBeCloseTo(0, 4);
    expect(f[g + 9]).toBeCloseTo(1, 4);
    expect(f[g + 14]).toBeCloseTo(0, 4); // fast extra path
    expect(f[g + 15]).toBeCloseTo(1, 4);
    for (let q = 0; q < 9; q++) {
      expect(f[OFFSETS.staticRxCorr + 2 * q]).toBeCloseTo(1, 4);
      expect(f[OFFSETS.staticRxCorr + 2 * q + 1]).toBeCloseTo(0, 4);
    }
  });

  it('Doppler: the +12.5 Hz mover lands in the positive 10-20 Hz band and its neighbour', () => {
    for (let l = 0; l < N_LINKS; l++) {
      const d = Array.from(f.subarray(OFFSETS.fastDoppler + l * 8, OFFSETS.fastDoppler + l * 8 + 8));
      expect(d.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      expect(d[4]! + d[5]! + d[6]! + d[7]!).toBeGreaterThan(0.999);
      expect(d[6]!).toBeGreaterThan(0.5); // 12.5 and 15.6 Hz bins
      expect(d[5]! + d[6]!).toBeGreaterThan(0.99);
    }
  });

  it('beam map: most power in the cell nearest (u, v) = (2/3, 0.4), shares summing to 1', () => {
    const b = Array.from(f.subarray(OFFSETS.fastBeam, OFFSETS.fastBeam + 25));
    expect(b.reduce((a, x) => a + x, 0)).toBeCloseTo(1, 5);
    expect(b.indexOf(Math.max(...b))).toBe(4 * 5 + 3); // u = 0.8, v = 0.4
  });

  it('eigenvalue shares: one mover fills one eigenvalue, two orthogonal movers two', () => {
    for (let i = 0; i < 4; i++) expect(f[OFFSETS.fastEigen + i]).toBeCloseTo(i === 0 ? 1 : 0, 4);
    // A second mover, 0.2 strong, at rx phase step -2/3 pi (orthogonal across rx) and 25 Hz.
    const two = new FeatureExtractor().extract(
      makeWindow(3, 3, SUBCARRIERS[30], WINDOW_FRAMES, (t, k, m, n) => {
        const [re, im] = mover(t, k, m, n);
        const phi = (2 * Math.PI * 25 * t) / RATE + Math.PI * (-m * U + n * 0.1);
        return [re + 0.2 * Math.cos(phi), im + 0.2 * Math.sin(phi)];
      }),
    );
    expect(two[OFFSETS.fastEigen]).toBeCloseTo(0.09 / 0.13, 4);
    expect(two[OFFSETS.fastEigen + 1]).toBeCloseTo(0.04 / 0.13, 4);
    expect(two[OFFSETS.fastEigen + 2]).toBeCloseTo(0, 4);
  });

  it('a common phase and gain wobble of the whole frame (what sanitisation leaks) is not motion', () => {
    const wobble = new FeatureExtractor().extract(
      makeWindow(
        3,
        3,
        SUBCARRIERS[30],
        WINDOW_FRAMES,
        (t, k, m, n) => {
          const beta = 0.3 * Math.sin((2 * Math.PI * 7 * t) / RATE);
          // A static multipath channel, the same for every frame but for the wobble.
          const phi = 0.7 * m - 0.4 * n + 0.05 * k + beta;
          const amp = 1 + 0.2 * m + 0.1 * n;
          return [amp * Math.cos(phi), amp * Math.sin(phi)];
        },
        (t) => 1 + 0.1 * Math.cos(t),
      ),
    );
    for (let i = 0; i < N_LINKS * N_GRID; i++) {
      expect(wobble[OFFSETS.fastLogPow + i]).toBeLessThan(Math.log(1e-7) + 0.01);
      expect(wobble[OFFSETS.slowLogPow + i]).toBeLessThan(Math.log(1e-7) + 0.01);
    }
  });

  it('mask, bandwidth flag and SNR proxy', () => {
    for (let l = 0; l < N_LINKS; l++) expect(f[OFFSETS.linkMask + l]).toBe(1);
    expect(f[OFFSETS.bw40]).toBe(0);
    // A channel flat in frequency has no second differences: the proxy saturates at 60 dB.
    expect(f[OFFSETS.snr]).toBeCloseTo(1.5, 6);
    const wide = new FeatureExtractor().extract(makeWindow(3, 3, SUBCARRIERS[114], WINDOW_FRAMES, mover));
    expect(wide[OFFSETS.bw40]).toBe(1);
  });

  it('SNR proxy: white noise at a known level', () => {
    // Unit channel plus deterministic pseudo-noise of power 0.01 per sample: 20 dB.
    let s = 12345;
    const rnd = () => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s / 4294967296 - 0.5;
    };
    const sd = Math.sqrt(0.01 / 2) * Math.sqrt(12);
    const noisy = makeWindow(3, 3, SUBCARRIERS[56], WINDOW_FRAMES, () => [1 + sd * rnd(), sd * rnd()]);
    const fx = new FeatureExtractor();
    fx.extract(noisy);
    expect(fx.snrDb).toBeGreaterThan(19);
    expect(fx.snrDb).toBeLessThan(21);
  });
});

describe('FeatureExtractor invariances and layouts', () => {
  const { windows, rows } = simulatedRows(30, 3, 3, 3);

  it('does not depend on absolute gain, nor on AGC steps between frames', () => {
    const w = windows[2]!;
    const scaled = { ...w, data: w.data.map((v, i) => v * (Math.floor(i / (w.data.length / w.size)) % 7 < 3 ? 7.3 : 0.02)) };
    const a = new FeatureExtractor().extract(w);
    const b = new FeatureExtractor().extract(scaled);
    for (let i = 0; i < FEATURE_DIM; i++) expect(b[i]).toBeCloseTo(a[i]!, 4);
  });

  it('reuses the frames overlapping windows share: same rows as a fresh extractor', () => {
    for (let k = 1; k < windows.length; k++) {
      const fresh = new FeatureExtractor().extract(windows[k]!);
      for (let i = 0; i < FEATURE_DIM; i++) expect(rows[k]![i]).toBeCloseTo(fresh[i]!, 5);
    }
  });

  it.each([30, 56, 114] as const)('%i subcarriers give FEATURE_DIM finite values with every link present', (nSub) => {
    const r = simulatedRows(nSub, 3, 3, 1).rows[0]!;
    expect(r.length).toBe(FEATURE_DIM);
    for (const v of r) expect(Number.isFinite(v)).toBe(true);
    for (let l = 0; l < N_LINKS; l++) expect(r[OFFSETS.linkMask + l]).toBe(1);
    expect(r[OFFSETS.bw40]).toBe(nSub === 114 ? 1 : 0);
  });

  it('3x1 antennas: the mask marks rx 0-2 with tx 0 only, and absent links stay 0', () => {
    const r = simulatedRows(30, 3, 1, 1).rows[0]!;
    expect(r.length).toBe(FEATURE_DIM);
    for (let m = 0; m < 3; m++) {
      for (let n = 0; n < 3; n++) {
        const l = m * 3 + n;
        expect(r[OFFSETS.linkMask + l]).toBe(n === 0 ? 1 : 0);
        if (n > 0) {
          for (let g = 0; g < N_GRID; g++) expect(r[OFFSETS.fastLogPow + l * N_GRID + g]).toBeCloseTo(Math.log(1e-7), 5);
          expect(r[OFFSETS.fastDoppler + l * 8]).toBe(0);
        }
      }
    }
    // No tx pairs: the tx correlations are 0.
    for (let i = 0; i < 18; i++) expect(r[OFFSETS.fastTxCorr + i]).toBe(0);
  });

  it('1x1 and 4x4 (extra antennas ignored) layouts', () => {
    const one = simulatedRows(56, 1, 1, 1).rows[0]!;
    expect(Array.from(one.subarray(OFFSETS.linkMask, OFFSETS.linkMask + 9))).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 0]);
    const four = simulatedRows(30, 4, 4, 1).rows[0]!;
    expect(Array.from(four.subarray(OFFSETS.linkMask, OFFSETS.linkMask + 9))).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1]);
    for (const v of four) expect(Number.isFinite(v)).toBe(true);
  });

  it('survives hostile samples: NaN, Infinity, all-zero frames', () => {
    const w = windows[0]!;
    const data = Float32Array.from(w.data);
    const frameLen = data.length / w.size;
    data[5] = NaN;
    data[frameLen * 3 + 7] = Infinity;
    data.fill(0, frameLen * 10, frameLen * 12);
    const r = new FeatureExtractor().extract({ ...w, data });
    for (const v of r) expect(Number.isFinite(v)).toBe(true);
    const zero = new FeatureExtractor().extract({ ...w, data: new Float32Array(data.length) });
    for (const v of zero) expect(Number.isFinite(v)).toBe(true);
    expect(zero[OFFSETS.linkMask]).toBe(1);
  });

  it('after windows with no power, overlapping windows still equal a fresh extractor (no stale slow blocks)', () => {
    // After a window with power, the stream goes silent: its first three windows have no valid
    // frame (nothing is computed for them), and the later ones slide into recorded frames.
    const w0 = windows[0]!;
    const frameLen = w0.data.length / w0.size;
    const silent = w0.size + 2 * HOP;
    const stream = new Float32Array((w0.size + silent) * frameLen);
    stream.set(w0.data.subarray(0), silent * frameLen);
    const times = Float64Array.from({ length: w0.size + silent }, (_, t) => T0 + (t * 1000) / RATE);
    const at = (k: number): CsiWindow => ({
      ...w0,
      data: stream.slice(k * HOP * frameLen, (k * HOP + w0.size) * frameLen),
      times: times.slice(k * HOP, k * HOP + w0.size),
    });
    const fx = new FeatureExtractor();
    fx.extract(w0);
    for (let k = 0; k <= 5; k++) {
      const row = fx.extract(at(k));
      const fresh = new FeatureExtractor().extract(at(k));
      for (let i = 0; i < FEATURE_DIM; i++) expect(row[i]).toBeCloseTo(fresh[i]!, 5);
    }
  });

  it('refuses a window whose data does not match its shape', () => {
    const w = windows[0]!;
    expect(() => new FeatureExtractor().extract({ ...w, data: w.data.subarray(0, 10) })).toThrow(RangeError);
    expect(() => new FeatureExtractor().extract({ ...w, subcarriers: new Int16Array(3) })).toThrow(RangeError);
  });
});

describe('features operator', () => {
  const w = makeWindow(3, 3, SUBCARRIERS[30], WINDOW_FRAMES, mover);

  it('emits one row per window with frame time, arrival, ids and quality', () => {
    const scheduler = new TestScheduler((a, b) => expect(a).toEqual(b));
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('--a--b|', { a: w, b: { ...w, sourceId: 'other' } });
      const rows = source.pipe(features({ scheduler }));
      expectObservable(rows).toBe('--x--y|', {
        x: expect.objectContaining({ frameTime: w.times[WINDOW_FRAMES - 1], arrival: 2, sourceId: 'test', environmentId: 'room', csiQuality: 1 }),
        y: expect.objectContaining({ arrival: 5, sourceId: 'other' }),
      });
    });
  });

  it('gives every row its own array with the extractor values', async () => {
    const rows = await lastValueFrom(from([w, w]).pipe(features(), toArray()));
    expect(rows[0]!.features).not.toBe(rows[1]!.features);
    const ref = new FeatureExtractor().extract(w);
    expect(Array.from(rows[1]!.features)).toEqual(Array.from(ref));
  });

  it("gives each row the model's memory of its own source's earlier windows", async () => {
    // Two sources interleaved: each row's history is what a ring fed with that source alone says.
    const sims = ['a', 'b'].map((id, i) => ({ id, sim: new CsiSimulator({ seed: 30 + i, people: 1, sourceId: id }) }));
    const perSource = await Promise.all(
      sims.map(({ sim }) => {
        const frames = Array.from({ length: 1400 }, () => sim.next().frame);
        return lastValueFrom(
          from(frames).pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), toArray()),
        );
      }),
    );
    const interleaved = perSource[0]!.flatMap((w, i) => [w, perSource[1]![i]!]);
    const rows: FeatureRow[] = await lastValueFrom(from(interleaved).pipe(features(), toArray()));
    expect(rows).toHaveLength(interleaved.length);
    const rings = new Map<string, HistoryRing>();
    const want = new Float32Array(HISTORY_WIDTH);
    let full = 0;
    for (const [i, r] of rows.entries()) {
      const rate = interleaved[i]!.rateHz;
      const ring = rings.get(r.sourceId) ?? new HistoryRing(frameMsOf(rate));
      rings.set(r.sourceId, ring);
      ring.setFrameMs(frameMsOf(rate));
      ring.historyFor(r.frameTime, want);
      ring.push(r.frameTime, r.features);
      expect(Array.from(r.history!)).toEqual(Array.from(want));
      let present = 0;
      for (let k = 0; k < HISTORY_STEPS; k++) present += r.history![k * HISTORY_DIM]!;
      if (present === HISTORY_STEPS) full++;
    }
    // 14 s per source: the last rows of each remember all 16 steps.
    expect(full).toBeGreaterThan(40);
    expect(MAX_STREAMS).toBeGreaterThanOrEqual(2);
  });

  it('drops a malformed window instead of ending the stream', async () => {
    const drops: string[] = [];
    const bad = { ...w, data: w.data.subarray(0, 7) };
    const rows: FeatureRow[] = await lastValueFrom(from([w, bad, w]).pipe(features({ onDrop: (_w, r) => drops.push(r) }), toArray()));
    expect(rows).toHaveLength(2);
    expect(drops).toHaveLength(1);
  });

  it('propagates errors and unsubscribes from the source', () => {
    const scheduler = new TestScheduler((a, b) => expect(a).toEqual(b));
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const e = cold('--a--#', { a: w });
      expectObservable(e.pipe(features({ scheduler }))).toBe('--x--#', { x: expect.anything() });
      const s = cold('--a--a--a', { a: w });
      expectObservable(s.pipe(features({ scheduler })), '^---!').toBe('--x--', { x: expect.anything() });
      expectSubscriptions(s.subscriptions).toBe('^---!');
    });
  });

  it('quality: lost frames and low SNR lower it', () => {
    expect(windowQuality(w, NaN)).toBe(1);
    expect(windowQuality(w, 30)).toBe(1);
    expect(windowQuality(w, 17.5)).toBeCloseTo(0.5, 10);
    expect(windowQuality(w, 0)).toBe(0);
    // The same frames spread over twice the time: half of the expected frames arrived.
    const sparse = { ...w, times: w.times.map((t, i) => t + (i * 1000) / RATE) };
    expect(windowQuality(sparse, 30)).toBeCloseTo(WINDOW_FRAMES / (1 + 2 * (WINDOW_FRAMES - 1)), 10);
  });
});

describe('hermitianEigenvalues', () => {
  /** A = U diag(lambda) U^H with U unitary (Gram-Schmidt of fixed complex vectors). */
  function hermitian(lambda: number[]): { re: Float64Array; im: Float64Array } {
    const n = lambda.length;
    const ur: number[][] = [];
    const ui: number[][] = [];
    for (let c = 0; c < n; c++) {
      let vr = Array.from({ length: n }, (_, k) => Math.sin(1.3 * (c + 1) * (k + 1) + 0.2 * c));
      let vi = Array.from({ length: n }, (_, k) => Math.cos(0.7 * (c + 2) * (k + 1) - 0.1 * k));
      for (let p = 0; p < c; p++) {
        // v -= (u_p^H v) u_p
        let dr = 0;
        let di = 0;
        for (let k = 0; k < n; k++) {
          dr += ur[p]![k]! * vr[k]! + ui[p]![k]! * vi[k]!;
          di += ur[p]![k]! * vi[k]! - ui[p]![k]! * vr[k]!;
        }
        vr = vr.map((x, k) => x - (dr * ur[p]![k]! - di * ui[p]![k]!));
        vi = vi.map((x, k) => x - (dr * ui[p]![k]! + di * ur[p]![k]!));
      }
      const norm = Math.sqrt(vr.reduce((a, x, k) => a + x * x + vi[k]! * vi[k]!, 0));
      ur.push(vr.map((x) => x / norm));
      ui.push(vi.map((x) => x / norm));
    }
    const re = new Float64Array(n * n);
    const im = new Float64Array(n * n);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++)
        for (let c = 0; c < n; c++) {
          // u_c[i] conj(u_c[j]) lambda_c
          re[i * n + j] += lambda[c]! * (ur[c]![i]! * ur[c]![j]! + ui[c]![i]! * ui[c]![j]!);
          im[i * n + j] += lambda[c]! * (ui[c]![i]! * ur[c]![j]! - ur[c]![i]! * ui[c]![j]!);
        }
    return { re, im };
  }

  it('recovers the spectrum of a 9 x 9 Hermitian matrix with complex entries', () => {
    const lambda = [5, 3.5, 2, 1, 0.5, 0.25, 0.1, 0.01, 0];
    const { re, im } = hermitian(lambda);
    expect(Math.max(...Array.from(im, Math.abs))).toBeGreaterThan(0.1);
    const out = new Float64Array(9);
    hermitianEigenvalues(re, im, 9, out);
    const got = Array.from(out).sort((a, b) => b - a);
    for (let i = 0; i < 9; i++) expect(got[i]).toBeCloseTo(lambda[i]!, 9);
  });

  it('handles repeated eigenvalues and a 1 x 1 matrix', () => {
    const { re, im } = hermitian([2, 2, 1, 1]);
    const out = new Float64Array(4);
    hermitianEigenvalues(re, im, 4, out);
    expect(
      Array.from(out)
        .sort((a, b) => b - a)
        .map((x) => +x.toFixed(9)),
    ).toEqual([2, 2, 1, 1]);
    const one = new Float64Array(1);
    hermitianEigenvalues(Float64Array.of(3), Float64Array.of(0), 1, one);
    expect(one[0]).toBe(3);
  });
});
