/**
 * The pose model's input: one row of FEATURE_DIM float32 values per CSI window (model contract,
 * `contract.ts`). The same code builds the rows the model was trained on (`src/model/train/`) and
 * the rows the live `features` operator feeds to `infer`, so training and service never disagree.
 *
 * Input: a CsiWindow of WINDOW_FRAMES frames (any size >= 1 works) whose frames went through
 * `sanitize` (method=phasor, scope=packet): the per-packet common phase and linear phase slope are
 * gone, inter-antenna phase is kept. Any antenna layout up to 3 x 3 (further antennas are ignored)
 * and any subcarrier layout (30, 56 and 114 are the trained ones).
 *
 * ## Preprocessing (per frame t)
 * 1. Gain: P1 = mean |H|^2 over the used links and all subcarriers (finite samples only); P2 = the
 *    same mean over the samples with |H|^2 <= 9 P1 (so that one outlier sample does not set the
 *    gain). Every sample is multiplied by 1 / sqrt(P2): each frame has unit power, which makes the
 *    features independent of absolute gain, of AGC steps inside the window and of quantisation
 *    scale. A sample still above magnitude 3 after that is clipped to 3 (phase kept): a lone
 *    outlier cannot dominate a temporal variance. Non-finite samples count as 0; a frame with no
 *    power is left out of every statistic.
 * 2. Frequency grid: each link's subcarriers (sorted by index) are resampled onto N_GRID = 8 points
 *    spread evenly from the lowest to the highest subcarrier index of the layout (the band edges),
 *    each point a hat-weighted mean (half-width = grid spacing) of the subcarriers around it. So
 *    30, 56 and 114 subcarriers all give 8 points; 40 MHz layouts span twice the Hz (flag BW40).
 *    The result X[t, l, g] is complex; link l = rx * 3 + tx (rx, tx < 3), absent links stay 0.
 *
 * ## Layout (offsets in the row; l = link 0..8 = rx * 3 + tx, g = grid point 0..7)
 * Statistics over the window use its valid frames; Xbar = mean over all of them, M = mean over the
 * last RECENT_FRAMES = 8 frames (the "now" the target refers to), D_t = X_t - Xbar (the moving part).
 * | offset | count | content |
 * |---|---|---|
 * | 0   | 144 | M re, im: index 0 + (l * 8 + g) * 2 + {0 re, 1 im} (mean complex CSI shape, now) |
 * | 144 | 72  | ln(max(abs(M), 1e-3)) at 144 + l * 8 + g (amplitude shape) |
 * | 216 | 72  | ln(V + 1e-6), V = mean_t abs(D_t)^2, at 216 + l * 8 + g (motion power per link and frequency) |
 * | 288 | 72  | Doppler: share of the link's motion power in 8 signed bands, at 288 + l * 8 + b |
 * | 360 | 18  | motion correlation between rx antennas, per tx n and rx pair q: 360 + (n * 3 + q) * 2 + {re, im} |
 * | 378 | 18  | motion correlation between tx antennas, per rx m and tx pair q: 378 + (m * 3 + q) * 2 + {re, im} |
 * | 396 | 18  | motion correlation between neighbouring grid points (delay), per link: 396 + l * 2 + {re, im} |
 * | 414 | 18  | motion correlation between consecutive frames (mean Doppler), per link: 414 + l * 2 + {re, im} |
 * | 432 | 18  | static (M) correlation between rx antennas, per tx and rx pair, as at 360 |
 * | 450 | 18  | static (M) correlation between tx antennas, per rx and tx pair, as at 378 |
 * | 468 | 9   | link mask: 1 when link l is present (rx < nRx and tx < nTx), else 0 |
 * | 477 | 1   | BW40: 1 when the subcarrier indices span more than 60 (a 40 MHz layout), else 0 |
 * | 478 | 1   | SNR proxy: snrDb / 40, clamped to [-0.25, 1.5]; 0 when it cannot be estimated |
 * | 479 | 1   | ln(mean V over present links and grid points + 1e-6) (total motion power) |
 *
 * Pairs q: (0, 1), (1, 2), (0, 2). A correlation of a and b is sum(a conj b) / sqrt(sum abs(a)^2
 * sum abs(b)^2) (0 when either side has no power), summed over frames and grid points (motion) or
 * grid points (static); its phase is the inter-antenna phase difference (angle of arrival or
 * departure), the delay difference across frequency, or the Doppler phase per frame.
 * Doppler bands: the DFT over the window of each D[., l, g] times a Hann taper, power summed over
 * g, bin frequency f = bin * rateHz / size (bins past size / 2 negative; positive f = phase
 * advancing with time). Bands by |f|: (0, 4], (4, 10], (10, 20], (20, inf) Hz; b = 3 - band for
 * f < 0 (so b runs from fast-negative 0 to fast-positive 7), 4 + band for f > 0; the DC bin is split
 * between b = 3 and 4, the Nyquist bin between 0 and 7. Shares sum to 1 per present link (0 when
 * the link has no motion power at all).
 *
 * SNR proxy: noise power from second differences of the normalised samples across three
 * consecutive, equally spaced subcarriers (E abs(H[k-1] - 2 H[k] + H[k+1])^2 = 6 sigma^2 for white
 * noise, while the channel itself is smooth over ~1 MHz); SNR = (1 - sigma^2) / sigma^2 since frames
 * have unit power. It is a proxy: channel curvature caps it near 35-40 dB.
 */
import type { CsiWindow } from '../csi/frame.js';

/** Frames per window the model is trained on (0.32 s at 100 Hz). */
export const WINDOW_FRAMES = 32;
/** Frames between the starts of consecutive windows in the pose pipeline (12.5 windows/s at 100 Hz). */
export const HOP = 8;
/** Antennas per side the features have room for. */
export const MAX_RX = 3;
export const MAX_TX = 3;
/** Link slots: rx * MAX_TX + tx. */
export const N_LINKS = MAX_RX * MAX_TX;
/** Points of the fixed frequency grid across the band. */
export const N_GRID = 8;
/** Frames at the end of the window averaged into the "now" CSI shape. */
export const RECENT_FRAMES = 8;
/** Signed Doppler bands. */
export const N_DOPPLER_BANDS = 8;
/** Upper edges (Hz) of the unsigned Doppler bands; the last band is open. */
export const DOPPLER_EDGES_HZ: readonly number[] = [4, 10, 20];

/** Offsets of the feature blocks (see the module comment). */
export const OFFSETS = Object.freeze({
  meanReIm: 0,
  meanLogAmp: 144,
  motionLogPow: 216,
  doppler: 288,
  motionRxCorr: 360,
  motionTxCorr: 378,
  motionFreqCorr: 396,
  motionTimeCorr: 414,
  staticRxCorr: 432,
  staticTxCorr: 450,
  linkMask: 468,
  bw40: 477,
  snr: 478,
  motionTotal: 479,
});

/** Width of one feature row. */
export const FEATURE_DIM = 480;

/** Antenna pairs of the correlation blocks, in order. */
const PAIRS: readonly (readonly [number, number])[] = [
  [0, 1],
  [1, 2],
  [0, 2],
];

/** Per-layout tables, built once per distinct subcarrier list. */
class SubcarrierLayout {
  readonly subcarriers: Int16Array;
  /** Sample positions in increasing index order. */
  readonly order: Int32Array;
  /** Hat filter per grid point: entries start[g] .. start[g + 1] of pos / weight. */
  readonly start: Int32Array;
  readonly pos: Int32Array;
  readonly weight: Float64Array;
  /** Sorted positions (i - 1, i, i + 1) whose two steps are equal: start points i - 1. */
  readonly triples: Int32Array;
  readonly bw40: boolean;

  constructor(subcarriers: Int16Array) {
    const n = subcarriers.length;
    this.subcarriers = Int16Array.from(subcarriers);
    this.order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => subcarriers[a]! - subcarriers[b]! || a - b);
    const k = Float64Array.from(this.order, (p) => subcarriers[p]!);
    const lo = k[0]!;
    const hi = k[n - 1]!;
    this.bw40 = hi - lo > 60;
    const step = (hi - lo) / (N_GRID - 1);
    const pos: number[] = [];
    const weight: number[] = [];
    const start = new Int32Array(N_GRID + 1);
    for (let g = 0; g < N_GRID; g++) {
      start[g] = pos.length;
      const u = lo + g * step;
      let sum = 0;
      const first = pos.length;
      if (step > 0) {
        for (let i = 0; i < n; i++) {
          const w = 1 - Math.abs(k[i]! - u) / step;
          if (w > 0) {
            pos.push(this.order[i]!);
            weight.push(w);
            sum += w;
          }
        }
      }
      if (sum === 0) {
        // Sparse layout (or a single subcarrier): the nearest subcarrier stands in.
        let best = 0;
        for (let i = 1; i < n; i++) if (Math.abs(k[i]! - u) < Math.abs(k[best]! - u)) best = i;
        pos.length = first;
        weight.length = first;
        pos.push(this.order[best]!);
        weight.push(1);
        sum = 1;
      }
      for (let j = first; j < weight.length; j++) weight[j] = weight[j]! / sum;
    }
    start[N_GRID] = pos.length;
    this.start = start;
    this.pos = Int32Array.from(pos);
    this.weight = Float64Array.from(weight);
    const triples: number[] = [];
    for (let i = 1; i + 1 < n; i++) {
      const d1 = k[i]! - k[i - 1]!;
      if (d1 > 0 && k[i + 1]! - k[i]! === d1) triples.push(i - 1);
    }
    this.triples = Int32Array.from(triples);
  }

  matches(subcarriers: Int16Array): boolean {
    if (subcarriers.length !== this.subcarriers.length) return false;
    for (let i = 0; i < subcarriers.length; i++) if (subcarriers[i] !== this.subcarriers[i]) return false;
    return true;
  }
}

/** Normalised complex correlation sum(a conj b) / sqrt(|a|^2 |b|^2), written as re, im. */
function writeCorr(out: Float32Array, at: number, re: number, im: number, ea: number, eb: number): void {
  const d = Math.sqrt(ea * eb);
  if (d > 1e-30 && Number.isFinite(d)) {
    out[at] = re / d;
    out[at + 1] = im / d;
  }
}

/**
 * Turns CSI windows into feature rows (layout in the module comment), reusing its scratch buffers
 * from one window to the next. One instance per stream; not for concurrent use.
 *
 * @example
 * const fx = new FeatureExtractor();
 * const row = fx.extract(window);   // Float32Array(FEATURE_DIM)
 * fx.snrDb;                         // SNR proxy of that window, dB (NaN when unknown)
 */
export class FeatureExtractor {
  /** SNR proxy of the last window, dB; NaN when it could not be estimated. */
  snrDb = NaN;
  /** Frames of the last window that had power (the others were left out). */
  validFrames = 0;
  private layout: SubcarrierLayout | undefined;
  private lastSubcarriers: Int16Array | undefined;
  /** Normalised, clipped samples of one frame: (sc * N_LINKS + l) * 2. */
  private frame = new Float64Array(0);
  /** X[t, l, g] complex: ((t * N_LINKS + l) * N_GRID + g) * 2. */
  private x = new Float64Array(0);
  private valid = new Uint8Array(0);
  private readonly xbar = new Float64Array(N_LINKS * N_GRID * 2);
  private readonly m = new Float64Array(N_LINKS * N_GRID * 2);
  private readonly v = new Float64Array(N_LINKS * N_GRID);
  /** DFT tables for the current window size. */
  private dftSize = 0;
  private cos = new Float64Array(0);
  private sin = new Float64Array(0);
  private hann = new Float64Array(0);
  private zr = new Float64Array(0);
  private zi = new Float64Array(0);
  private readonly bandPow = new Float64Array(N_DOPPLER_BANDS);

  /**
   * Computes the feature row of one window.
   * @param w a window of sanitised frames
   * @param out where to write (at least FEATURE_DIM values); a new array when omitted
   * @returns `out`, FEATURE_DIM values, all finite
   * @throws RangeError when the window's shape and data do not agree
   */
  extract(w: CsiWindow, out: Float32Array = new Float32Array(FEATURE_DIM)): Float32Array {
    if (out.length < FEATURE_DIM) throw new RangeError(`features: output has ${out.length} values, need ${FEATURE_DIM}`);
    const { nRx, nTx, nSub, size: T } = w;
    if (!(Number.isInteger(nRx) && nRx > 0 && Number.isInteger(nTx) && nTx > 0 && Number.isInteger(nSub) && nSub > 0 && Number.isInteger(T) && T > 0))
      throw new RangeError(`features: invalid window shape ${nRx}x${nTx}x${nSub}, ${T} frames`);
    const frameLen = nSub * nRx * nTx * 2;
    if (w.data.length < T * frameLen) throw new RangeError(`features: window data has ${w.data.length} values, expected ${T * frameLen}`);
    if (w.subcarriers.length !== nSub) throw new RangeError(`features: ${w.subcarriers.length} subcarrier indices for ${nSub} subcarriers`);
    out.fill(0, 0, FEATURE_DIM);
    const layout = this.layoutFor(w.subcarriers);
    const rxN = Math.min(nRx, MAX_RX);
    const txN = Math.min(nTx, MAX_TX);
    this.ensure(T, nSub);
    this.prepareFrames(w, layout, rxN, txN);
    const nValid = this.validFrames;

    for (let m = 0; m < rxN; m++) for (let n = 0; n < txN; n++) out[OFFSETS.linkMask + m * MAX_TX + n] = 1;
    out[OFFSETS.bw40] = layout.bw40 ? 1 : 0;
    if (Number.isFinite(this.snrDb)) out[OFFSETS.snr] = Math.max(-0.25, Math.min(1.5, this.snrDb / 40));
    if (nValid === 0) {
      out[OFFSETS.motionTotal] = Math.log(1e-6);
      for (let i = 0; i < N_LINKS * N_GRID; i++) {
        out[OFFSETS.meanLogAmp + i] = Math.log(1e-3);
        out[OFFSETS.motionLogPow + i] = Math.log(1e-6);
      }
      return out;
    }

    this.moments(T);
    this.writeStatic(out, rxN, txN);
    this.writeMotion(out, T, rxN, txN);
    this.writeDoppler(out, T, rxN, txN, w.rateHz);
    return out;
  }

  private layoutFor(subcarriers: Int16Array): SubcarrierLayout {
    if (this.layout && subcarriers === this.lastSubcarriers) return this.layout;
    if (!this.layout || !this.layout.matches(subcarriers)) this.layout = new SubcarrierLayout(subcarriers);
    this.lastSubcarriers = subcarriers;
    return this.layout;
  }

  private ensure(T: number, nSub: number): void {
    if (this.frame.length < nSub * N_LINKS * 2) this.frame = new Float64Array(nSub * N_LINKS * 2);
    if (this.x.length < T * N_LINKS * N_GRID * 2) {
      this.x = new Float64Array(T * N_LINKS * N_GRID * 2);
      this.valid = new Uint8Array(T);
    }
    if (this.dftSize !== T) {
      this.dftSize = T;
      this.cos = new Float64Array(T);
      this.sin = new Float64Array(T);
      this.hann = new Float64Array(T);
      this.zr = new Float64Array(T);
      this.zi = new Float64Array(T);
      for (let i = 0; i < T; i++) {
        this.cos[i] = Math.cos((2 * Math.PI * i) / T);
        this.sin[i] = Math.sin((2 * Math.PI * i) / T);
        this.hann[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 0.5)) / T);
      }
    }
  }

  /** Gain-normalises, clips and grid-resamples every frame into x; estimates the SNR. */
  private prepareFrames(w: CsiWindow, layout: SubcarrierLayout, rxN: number, txN: number): void {
    const { nRx, nTx, nSub, size: T, data } = w;
    const frameLen = nSub * nRx * nTx * 2;
    const fr = this.frame;
    const x = this.x;
    const { start, pos, weight, order, triples } = layout;
    let noiseSum = 0;
    let noiseN = 0;
    let nValid = 0;
    for (let t = 0; t < T; t++) {
      const base = t * frameLen;
      let p1 = 0;
      let n1 = 0;
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          for (let n = 0; n < txN; n++) {
            const i = base + ((sc * nRx + m) * nTx + n) * 2;
            const q = data[i]! * data[i]! + data[i + 1]! * data[i + 1]!;
            if (q < Infinity) {
              p1 += q;
              n1++;
            }
          }
        }
      }
      const xt = t * N_LINKS * N_GRID * 2;
      x.fill(0, xt, xt + N_LINKS * N_GRID * 2);
      this.valid[t] = 0;
      if (!(n1 > 0 && p1 > 0 && p1 < Infinity)) continue;
      const lim = (9 * p1) / n1;
      let p2 = 0;
      let n2 = 0;
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          for (let n = 0; n < txN; n++) {
            const i = base + ((sc * nRx + m) * nTx + n) * 2;
            const q = data[i]! * data[i]! + data[i + 1]! * data[i + 1]!;
            if (q <= lim) {
              p2 += q;
              n2++;
            }
          }
        }
      }
      if (!(p2 > 0)) continue;
      const g = 1 / Math.sqrt(p2 / n2);
      // Normalised, clipped copy: (sc * N_LINKS + l) * 2.
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          for (let n = 0; n < txN; n++) {
            const i = base + ((sc * nRx + m) * nTx + n) * 2;
            let re = data[i]! * g;
            let im = data[i + 1]! * g;
            const a2 = re * re + im * im;
            if (!(a2 < Infinity)) {
              re = 0;
              im = 0;
            } else if (a2 > 9) {
              const s = 3 / Math.sqrt(a2);
              re *= s;
              im *= s;
            }
            const j = (sc * N_LINKS + m * MAX_TX + n) * 2;
            fr[j] = re;
            fr[j + 1] = im;
          }
        }
      }
      this.valid[t] = 1;
      nValid++;
      for (let m = 0; m < rxN; m++) {
        for (let n = 0; n < txN; n++) {
          const l = m * MAX_TX + n;
          const xl = xt + l * N_GRID * 2;
          for (let gi = 0; gi < N_GRID; gi++) {
            let sr = 0;
            let si = 0;
            for (let e = start[gi]!; e < start[gi + 1]!; e++) {
              const j = (pos[e]! * N_LINKS + l) * 2;
              sr += weight[e]! * fr[j]!;
              si += weight[e]! * fr[j + 1]!;
            }
            x[xl + gi * 2] = sr;
            x[xl + gi * 2 + 1] = si;
          }
          for (let e = 0; e < triples.length; e++) {
            const i0 = triples[e]!;
            const a = (order[i0]! * N_LINKS + l) * 2;
            const b = (order[i0 + 1]! * N_LINKS + l) * 2;
            const c = (order[i0 + 2]! * N_LINKS + l) * 2;
            const dr = fr[a]! - 2 * fr[b]! + fr[c]!;
            const di = fr[a + 1]! - 2 * fr[b + 1]! + fr[c + 1]!;
            noiseSum += dr * dr + di * di;
            noiseN++;
          }
        }
      }
    }
    this.validFrames = nValid;
    if (noiseN > 0) {
      const s2 = noiseSum / (6 * noiseN);
      const snr = s2 > 0 ? Math.max(1e-3, 1 - s2) / s2 : 1e6;
      this.snrDb = Math.max(-30, Math.min(60, 10 * Math.log10(snr)));
    } else this.snrDb = NaN;
  }

  /** Xbar, M (recent mean) and V over the valid frames. */
  private moments(T: number): void {
    const { x, xbar, m: mr, v, valid } = this;
    const L2 = N_LINKS * N_GRID * 2;
    xbar.fill(0);
    mr.fill(0);
    v.fill(0);
    let nAll = 0;
    let nRecent = 0;
    const recentFrom = Math.max(0, T - RECENT_FRAMES);
    for (let t = 0; t < T; t++) {
      if (!valid[t]) continue;
      nAll++;
      const recent = t >= recentFrom;
      if (recent) nRecent++;
      const xt = t * L2;
      for (let i = 0; i < L2; i++) {
        xbar[i] += x[xt + i]!;
        if (recent) mr[i] += x[xt + i]!;
      }
    }
    for (let i = 0; i < L2; i++) xbar[i] /= nAll;
    if (nRecent > 0) for (let i = 0; i < L2; i++) mr[i] /= nRecent;
    else mr.set(xbar);
    // D_t = X_t - Xbar in place (0 for frames without power), then V.
    for (let t = 0; t < T; t++) {
      const xt = t * L2;
      if (!valid[t]) {
        x.fill(0, xt, xt + L2);
        continue;
      }
      for (let i = 0; i < L2; i += 2) {
        const dr = x[xt + i]! - xbar[i]!;
        const di = x[xt + i + 1]! - xbar[i + 1]!;
        x[xt + i] = dr;
        x[xt + i + 1] = di;
        v[i >> 1] += dr * dr + di * di;
      }
    }
    for (let i = 0; i < N_LINKS * N_GRID; i++) v[i] /= nAll;
  }

  private writeStatic(out: Float32Array, rxN: number, txN: number): void {
    const mr = this.m;
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        for (let g = 0; g < N_GRID; g++) {
          const i = (l * N_GRID + g) * 2;
          out[OFFSETS.meanReIm + i] = mr[i]!;
          out[OFFSETS.meanReIm + i + 1] = mr[i + 1]!;
          out[OFFSETS.meanLogAmp + l * N_GRID + g] = Math.log(Math.max(Math.hypot(mr[i]!, mr[i + 1]!), 1e-3));
        }
      }
    }
    // Static correlations over grid points.
    const corr = (la: number, lb: number, at: number) => {
      let re = 0;
      let im = 0;
      let ea = 0;
      let eb = 0;
      for (let g = 0; g < N_GRID; g++) {
        const a = (la * N_GRID + g) * 2;
        const b = (lb * N_GRID + g) * 2;
        re += mr[a]! * mr[b]! + mr[a + 1]! * mr[b + 1]!;
        im += mr[a + 1]! * mr[b]! - mr[a]! * mr[b + 1]!;
        ea += mr[a]! * mr[a]! + mr[a + 1]! * mr[a + 1]!;
        eb += mr[b]! * mr[b]! + mr[b + 1]! * mr[b + 1]!;
      }
      writeCorr(out, at, re, im, ea, eb);
    };
    for (let n = 0; n < txN; n++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < rxN) corr(a * MAX_TX + n, b * MAX_TX + n, OFFSETS.staticRxCorr + (n * 3 + q) * 2);
      }
    }
    for (let m = 0; m < rxN; m++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < txN) corr(m * MAX_TX + a, m * MAX_TX + b, OFFSETS.staticTxCorr + (m * 3 + q) * 2);
      }
    }
  }

  private writeMotion(out: Float32Array, T: number, rxN: number, txN: number): void {
    const { x, v } = this;
    const L2 = N_LINKS * N_GRID * 2;
    let total = 0;
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        for (let g = 0; g < N_GRID; g++) {
          out[OFFSETS.motionLogPow + l * N_GRID + g] = Math.log(v[l * N_GRID + g]! + 1e-6);
          total += v[l * N_GRID + g]!;
        }
        // Delay: neighbouring grid points; Doppler: consecutive frames.
        let fr = 0;
        let fi = 0;
        let fa = 0;
        let fb = 0;
        let tr = 0;
        let ti = 0;
        let ta = 0;
        let tb = 0;
        for (let t = 0; t < T; t++) {
          const xl = t * L2 + l * N_GRID * 2;
          for (let g = 0; g + 1 < N_GRID; g++) {
            const a = xl + (g + 1) * 2;
            const b = xl + g * 2;
            fr += x[a]! * x[b]! + x[a + 1]! * x[b + 1]!;
            fi += x[a + 1]! * x[b]! - x[a]! * x[b + 1]!;
            fa += x[a]! * x[a]! + x[a + 1]! * x[a + 1]!;
            fb += x[b]! * x[b]! + x[b + 1]! * x[b + 1]!;
          }
          if (t + 1 < T) {
            const yl = xl + L2;
            for (let g = 0; g < N_GRID; g++) {
              const a = yl + g * 2;
              const b = xl + g * 2;
              tr += x[a]! * x[b]! + x[a + 1]! * x[b + 1]!;
              ti += x[a + 1]! * x[b]! - x[a]! * x[b + 1]!;
              ta += x[a]! * x[a]! + x[a + 1]! * x[a + 1]!;
              tb += x[b]! * x[b]! + x[b + 1]! * x[b + 1]!;
            }
          }
        }
        writeCorr(out, OFFSETS.motionFreqCorr + l * 2, fr, fi, fa, fb);
        writeCorr(out, OFFSETS.motionTimeCorr + l * 2, tr, ti, ta, tb);
      }
    }
    out[OFFSETS.motionTotal] = Math.log(total / (rxN * txN * N_GRID) + 1e-6);
    const corr = (la: number, lb: number, at: number) => {
      let re = 0;
      let im = 0;
      let ea = 0;
      let eb = 0;
      for (let t = 0; t < T; t++) {
        const xt = t * L2;
        for (let g = 0; g < N_GRID; g++) {
          const a = xt + (la * N_GRID + g) * 2;
          const b = xt + (lb * N_GRID + g) * 2;
          re += x[a]! * x[b]! + x[a + 1]! * x[b + 1]!;
          im += x[a + 1]! * x[b]! - x[a]! * x[b + 1]!;
          ea += x[a]! * x[a]! + x[a + 1]! * x[a + 1]!;
          eb += x[b]! * x[b]! + x[b + 1]! * x[b + 1]!;
        }
      }
      writeCorr(out, at, re, im, ea, eb);
    };
    for (let n = 0; n < txN; n++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < rxN) corr(a * MAX_TX + n, b * MAX_TX + n, OFFSETS.motionRxCorr + (n * 3 + q) * 2);
      }
    }
    for (let m = 0; m < rxN; m++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < txN) corr(m * MAX_TX + a, m * MAX_TX + b, OFFSETS.motionTxCorr + (m * 3 + q) * 2);
      }
    }
  }

  private writeDoppler(out: Float32Array, T: number, rxN: number, txN: number, rateHz: number): void {
    const { x, cos, sin, hann, zr, zi, bandPow } = this;
    const L2 = N_LINKS * N_GRID * 2;
    const rate = rateHz > 0 && rateHz < Infinity ? rateHz : 100;
    const half = T / 2;
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        bandPow.fill(0);
        for (let g = 0; g < N_GRID; g++) {
          for (let t = 0; t < T; t++) {
            const a = t * L2 + (l * N_GRID + g) * 2;
            zr[t] = x[a]! * hann[t]!;
            zi[t] = x[a + 1]! * hann[t]!;
          }
          for (let k = 0; k < T; k++) {
            // F_k = sum_t z_t exp(-j 2 pi k t / T)
            let fr = 0;
            let fi = 0;
            let idx = 0;
            for (let t = 0; t < T; t++) {
              const c = cos[idx]!;
              const s = sin[idx]!;
              fr += zr[t]! * c + zi[t]! * s;
              fi += zi[t]! * c - zr[t]! * s;
              idx += k;
              if (idx >= T) idx -= T;
            }
            const p = fr * fr + fi * fi;
            if (k === 0) {
              bandPow[3] += p / 2;
              bandPow[4] += p / 2;
            } else if (k === half) {
              bandPow[0] += p / 2;
              bandPow[N_DOPPLER_BANDS - 1] += p / 2;
            } else {
              const f = ((k < half ? k : k - T) * rate) / T;
              const af = Math.abs(f);
              let band = DOPPLER_EDGES_HZ.length;
              for (let e = 0; e < DOPPLER_EDGES_HZ.length; e++) {
                if (af <= DOPPLER_EDGES_HZ[e]!) {
                  band = e;
                  break;
                }
              }
              bandPow[f < 0 ? 3 - band : 4 + band] += p;
            }
          }
        }
        let sum = 0;
        for (let b = 0; b < N_DOPPLER_BANDS; b++) sum += bandPow[b]!;
        if (sum > 0 && sum < Infinity) {
          for (let b = 0; b < N_DOPPLER_BANDS; b++) out[OFFSETS.doppler + l * N_DOPPLER_BANDS + b] = bandPow[b]! / sum;
        }
      }
    }
  }
}
