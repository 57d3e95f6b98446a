/**
 * The pose model's input: one row of FEATURE_DIM float32 values per CSI window (model contract,
 * `contract.ts`). The same code builds the rows the model is trained on (`training/ts/`) and
 * the rows the live `features` operator feeds to `infer`, so training and service never disagree.
 *
 * Input: a CsiWindow (WINDOW_FRAMES frames, 1.28 s at 100 Hz; any size >= 1 is accepted) whose
 * frames went through `sanitize` (method=phasor, scope=packet): the per-packet common phase and
 * linear phase slope are gone, inter-antenna phase is kept. Any antenna layout up to 3 x 3 (further
 * antennas are ignored) and any subcarrier layout (30, 56 and 114 are the trained ones).
 *
 * Why these features: the body's paths are a small part of the CSI next to the room's own (line of
 * sight, walls), and the room's part is a fingerprint of the room that does not carry over to
 * another room. What does carry over is how the CSI CHANGES: the moving part of the channel is the
 * body alone, and its phase across antennas gives the bearing of the body from the receiver
 * (which sits beside the camera) and from the transmitter, its phase across frequency the extra
 * path length, its spectrum over time the Doppler speed. Walking shows in the last 0.32 s at the
 * full rate; a person sitting, standing or lying still still breathes (millimetres of chest motion,
 * a fraction of a radian on the torso path), which shows over the whole window once the frames are
 * averaged in blocks to take the noise down. The static channel contributes only its inter-antenna
 * correlation (the direction of the line of sight, i.e. where the transmitter is).
 *
 * ## Preprocessing (per frame t)
 * 1. Gain: P1 = mean |H|^2 over the used links and all subcarriers (finite samples only); P2 = the
 *    same mean over the samples with |H|^2 <= 9 P1 (one outlier sample does not set the gain).
 *    Every sample is multiplied by 1 / sqrt(P2), so each frame has unit power: the features do not
 *    depend on absolute gain, AGC steps inside the window, or quantisation scale. A sample still
 *    above magnitude 3 is clipped to 3 (phase kept). Non-finite samples count as 0; a frame without
 *    power is left out of every statistic.
 * 2. Frequency grid: each link's subcarriers (sorted by index) are resampled onto N_GRID = 8 points
 *    spread evenly from the lowest to the highest subcarrier index (the band edges), each a
 *    hat-weighted mean (half-width = grid spacing) of the subcarriers around it; 30, 56 and 114
 *    subcarriers all give 8 points. X[t, l, g] is complex; link l = rx * 3 + tx (rx, tx < 3);
 *    absent links stay 0.
 *
 * ## Three views of the window
 * - slow: the window cut into SLOW_BLOCKS = 16 equal blocks of frames, each block averaged (8 frames
 *   at 128: noise power / 8), D_b = block mean - mean of the block means. Breathing, slow motion.
 * - fast: the last FAST_FRAMES = 32 frames at the full rate, D_t = X_t - their mean. Walking.
 * In both, each D is then projected off the view's mean channel Mv (D -= (e^H D) e, e = Mv / |Mv|
 * over all links and grid points): sanitisation and gain normalisation leak a multiple of the
 * static channel into every frame as the body moves, which would pull bearings towards the
 * transmitter (see `leakBasis`).
 * - static: M = mean of the last RECENT_FRAMES = 8 valid frames.
 * Windows shorter than 16 frames use one frame per slow block; shorter than 32, all frames as the
 * fast view (the Doppler DFT is then zero-padded to 32 bins).
 *
 * Consecutive overlapping windows of one stream (the `window` operator's) share frames: the
 * extractor keeps the previous window's prepared frames and only prepares the new ones, after
 * checking that the overlap's times and its first frame's samples are identical. The row is the
 * same as a fresh extractor's.
 *
 * ## Layout (offsets in the row; l = link 0..8, g = grid point 0..7)
 * | offset | count | content |
 * |---|---|---|
 * | 0   | 72 | slow: ln(V + 1e-7), V = mean_b abs(D_b)^2, at 0 + l * 8 + g |
 * | 72  | 18 | slow: correlation between rx antennas, per tx n and rx pair q: 72 + (n * 3 + q) * 2 + {re, im} |
 * | 90  | 18 | slow: correlation between tx antennas, per rx m and tx pair q: 90 + (m * 3 + q) * 2 + {re, im} |
 * | 108 | 18 | slow: correlation of neighbouring grid points (delay), per link: 108 + l * 2 + {re, im} |
 * | 126 | 25 | slow: beam map, share of motion power per (rx direction u, tx direction v): 126 + iu * 5 + iv |
 * | 151 | 72 | fast: ln(V + 1e-7), as at 0 |
 * | 223 | 72 | fast: Doppler, share of the link's motion power in 8 signed bands: 223 + l * 8 + b |
 * | 295 | 18 | fast: rx correlation, as at 72 |
 * | 313 | 18 | fast: tx correlation, as at 90 |
 * | 331 | 18 | fast: grid-neighbour correlation, as at 108 |
 * | 349 | 18 | fast: correlation of consecutive frames (mean Doppler), per link: 349 + l * 2 + {re, im} |
 * | 367 | 25 | fast: beam map, as at 126 |
 * | 392 | 18 | static: rx correlation of M, as at 72 |
 * | 410 | 18 | static: tx correlation of M, as at 90 |
 * | 428 | 16 | derived geometry, see below |
 * | 444 | 2  | ln(mean V + 1e-7) over present links and grid points: slow, fast |
 * | 446 | 9  | link mask: 1 when link l is present (rx < nRx and tx < nTx), else 0 |
 * | 455 | 1  | BW40: 1 when the subcarrier indices span more than 60 (a 40 MHz layout), else 0 |
 * | 456 | 1  | SNR proxy: snrDb / 40, clamped to [-0.25, 1.5]; 0 when it cannot be estimated |
 * | 457 | 4  | slow: the 4 largest eigenvalues of the link covariance of the moving part, as shares of its trace |
 * | 461 | 4  | fast: the same |
 *
 * Eigenvalues: R = sum over time and grid points of D D^H, D the vector of the present links'
 * moving parts (up to 9 x 9, Hermitian); its eigenvalues in decreasing order divided by their sum
 * (0 beyond the number of links, all 0 without motion). One moving body fills about one
 * eigenvalue, noise spreads evenly: how many stand out is a hint of how many people move.
 *
 * Pairs q: (0, 1), (1, 2), (0, 2). The correlation of series a and b is sum(a conj b) /
 * sqrt(sum abs(a)^2 sum abs(b)^2) (0 when either has no power), summed over time and grid points
 * (slow, fast) or grid points (static); its phase is the inter-antenna phase difference
 * (-pi sin(bearing) for half-wavelength spacing), the phase step across 1/7 of the band, or the
 * phase step per frame.
 *
 * Beam map: for rx directions u and tx directions v in {-0.8, -0.4, 0, 0.4, 0.8} (sines of the
 * angle from broadside), the power of sum over links of exp(-j pi (m u + n v)) D[l = (m, n)],
 * summed over time and grid points, as a share of the sum over the 25 cells (0 without motion).
 *
 * Doppler bands: the DFT over the fast frames of each D[., l, g] times a Hann taper, power summed
 * over g, bin frequency f = bin * rateHz / 32 (bins past 16 negative; positive f = phase advancing
 * with time). Bands by |f|: (0, 4], (4, 10], (10, 20], (20, inf) Hz; b = 3 - band for f < 0,
 * 4 + band for f > 0; the DC bin is split between b = 3 and 4, the Nyquist bin between 0 and 7.
 * Shares sum to 1 per present link (0 when the link has no motion power).
 *
 * Derived geometry at 428, for s = slow (428), fast (432), static (436): rx bearing = -angle(C) / pi
 * with C = the sum of the rx correlations of pairs (0, 1) and (1, 2) over all tx, then
 * abs(C) / (number of terms) (how coherent it is); then the same for tx (pairs over all rx). At
 * 440 (slow) and 442 (fast): extra path length of the moving part relative to the sanitised
 * reference, in units of 10 m, = -angle(S) c / (2 pi df) / 10 with S = the sum of the grid-neighbour
 * correlations over links and df the grid spacing in Hz, then abs(S) / (number of links).
 *
 * SNR proxy: noise power from second differences of the normalised samples across three
 * consecutive, equally spaced subcarriers (E abs(H[k-1] - 2 H[k] + H[k+1])^2 = 6 sigma^2 for white
 * noise, the channel itself being smooth over ~1 MHz), over every frame; SNR = (1 - sigma^2)
 * / sigma^2 since frames have unit power. A proxy: channel curvature caps it near 35-40 dB.
 */
import FFT from 'fft.js';
import { SUBCARRIER_SPACING_HZ, windowShift, type CsiWindow } from '../csi/frame.js';
import { SPEED_OF_LIGHT } from '../csi/radios.js';

/** Frames per window the model is trained on (1.28 s at 100 Hz). */
export const WINDOW_FRAMES = 128;
/** Frames between the starts of consecutive windows in the pose pipeline (12.5 windows/s at 100 Hz). */
export const HOP = 8;
/** Antennas per side the features have room for. */
export const MAX_RX = 3;
export const MAX_TX = 3;
/** Link slots: rx * MAX_TX + tx. */
export const N_LINKS = MAX_RX * MAX_TX;
/** Points of the fixed frequency grid across the band. */
export const N_GRID = 8;
/** Blocks of the slow view. */
export const SLOW_BLOCKS = 16;
/** Frames of the fast view (the end of the window). */
export const FAST_FRAMES = 32;
/** Frames at the end of the window averaged into the static view. */
export const RECENT_FRAMES = 8;
/** Signed Doppler bands. */
export const N_DOPPLER_BANDS = 8;
/** Upper edges (Hz) of the unsigned Doppler bands; the last band is open. */
export const DOPPLER_EDGES_HZ: readonly number[] = [4, 10, 20];
/** Beam directions (sines of the angle from the array's broadside), per side. */
export const BEAM_DIRECTIONS: readonly number[] = [-0.8, -0.4, 0, 0.4, 0.8];

const NB = BEAM_DIRECTIONS.length * BEAM_DIRECTIONS.length;
const LG = N_LINKS * N_GRID;

/** Offsets of the feature blocks (see the module comment). */
export const OFFSETS = Object.freeze({
  slowLogPow: 0,
  slowRxCorr: 72,
  slowTxCorr: 90,
  slowFreqCorr: 108,
  slowBeam: 126,
  fastLogPow: 151,
  fastDoppler: 223,
  fastRxCorr: 295,
  fastTxCorr: 313,
  fastFreqCorr: 331,
  fastTimeCorr: 349,
  fastBeam: 367,
  staticRxCorr: 392,
  staticTxCorr: 410,
  geometry: 428,
  totals: 444,
  linkMask: 446,
  bw40: 455,
  snr: 456,
  slowEigen: 457,
  fastEigen: 461,
});

/** Width of one feature row. */
export const FEATURE_DIM = 465;

/** Eigenvalue shares kept per view. */
export const N_EIGEN = 4;

const LOG_FLOOR = 1e-7;

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
  /** Sorted positions i - 1 that start a triple (i - 1, i, i + 1) with two equal steps. */
  readonly triples: Int32Array;
  readonly bw40: boolean;
  /** Spacing of the grid points, Hz. */
  readonly gridHz: number;

  constructor(subcarriers: Int16Array) {
    const n = subcarriers.length;
    this.subcarriers = Int16Array.from(subcarriers);
    this.order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => subcarriers[a]! - subcarriers[b]! || a - b);
    const k = Float64Array.from(this.order, (p) => subcarriers[p]!);
    const lo = k[0]!;
    const hi = k[n - 1]!;
    this.bw40 = hi - lo > 60;
    const step = (hi - lo) / (N_GRID - 1);
    this.gridHz = step * SUBCARRIER_SPACING_HZ;
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
  if (d > 1e-30 && d < Infinity) {
    out[at] = re / d;
    out[at + 1] = im / d;
  }
}

/** Beam steering weights exp(-j pi (m u + n v)) per beam cell and link. */
const STEER_RE = new Float64Array(NB * N_LINKS);
const STEER_IM = new Float64Array(NB * N_LINKS);
BEAM_DIRECTIONS.forEach((u, iu) =>
  BEAM_DIRECTIONS.forEach((v, iv) => {
    for (let m = 0; m < MAX_RX; m++) {
      for (let n = 0; n < MAX_TX; n++) {
        const a = -Math.PI * (m * u + n * v);
        STEER_RE[(iu * BEAM_DIRECTIONS.length + iv) * N_LINKS + m * MAX_TX + n] = Math.cos(a);
        STEER_IM[(iu * BEAM_DIRECTIONS.length + iv) * N_LINKS + m * MAX_TX + n] = Math.sin(a);
      }
    }
  }),
);

/** Where the statistics of one view go. */
interface ViewOffsets {
  logPow: number;
  rxCorr: number;
  txCorr: number;
  freqCorr: number;
  beam: number;
  /** -1 for none. */
  timeCorr: number;
  geometry: number;
  delay: number;
  total: number;
  eigen: number;
}

const SLOW: ViewOffsets = {
  logPow: OFFSETS.slowLogPow,
  rxCorr: OFFSETS.slowRxCorr,
  txCorr: OFFSETS.slowTxCorr,
  freqCorr: OFFSETS.slowFreqCorr,
  beam: OFFSETS.slowBeam,
  timeCorr: -1,
  geometry: OFFSETS.geometry,
  delay: OFFSETS.geometry + 12,
  total: OFFSETS.totals,
  eigen: OFFSETS.slowEigen,
};
const FAST: ViewOffsets = {
  logPow: OFFSETS.fastLogPow,
  rxCorr: OFFSETS.fastRxCorr,
  txCorr: OFFSETS.fastTxCorr,
  freqCorr: OFFSETS.fastFreqCorr,
  beam: OFFSETS.fastBeam,
  timeCorr: OFFSETS.fastTimeCorr,
  geometry: OFFSETS.geometry + 4,
  delay: OFFSETS.geometry + 14,
  total: OFFSETS.totals + 1,
  eigen: OFFSETS.fastEigen,
};

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
  /** X[t, l, g] complex: (t * LG + l * N_GRID + g) * 2, as prepared (never modified after). */
  private x = new Float64Array(0);
  private valid = new Uint8Array(0);
  /** Per frame: sum of squared second differences and their count (SNR proxy). */
  private noiseSum = new Float64Array(0);
  private noiseN = new Float64Array(0);
  /** The fast view's frames, made zero-mean in place. */
  private readonly fastBuf = new Float64Array(FAST_FRAMES * LG * 2);
  /** The previous window, whose prepared frames the next overlapping window reuses. */
  private prev: CsiWindow | undefined;
  private prevRx = 0;
  private prevTx = 0;
  /** Slow view: block means, then deviations. */
  private readonly slow = new Float64Array(SLOW_BLOCKS * LG * 2);
  private readonly slowValid = new Uint8Array(SLOW_BLOCKS);
  /**
   * Block means of the current window as computed (`slow` is overwritten by the statistics): when
   * the next window moves by whole blocks, only its new blocks are summed.
   */
  private readonly blockMean = new Float64Array(SLOW_BLOCKS * LG * 2);
  private readonly blockValid = new Uint8Array(SLOW_BLOCKS);
  /** The window whose block means `blockMean` holds. */
  private blocksOf: CsiWindow | undefined;
  private readonly mean = new Float64Array(LG * 2);
  private readonly v = new Float64Array(LG);
  private readonly beam = new Float64Array(NB);
  private readonly bandPow = new Float64Array(N_DOPPLER_BANDS);
  /** Unit vector along the mean channel of a view (the leak direction). */
  private readonly e1 = new Float64Array(LG * 2);
  /** Link covariance of a view's moving part by link slot (upper triangle): real, imaginary. */
  private readonly rRe = new Float64Array(N_LINKS * N_LINKS);
  private readonly rIm = new Float64Array(N_LINKS * N_LINKS);
  /** The same over the present links only (full Hermitian L x L), destroyed by the eigensolver. */
  private readonly covRe = new Float64Array(N_LINKS * N_LINKS);
  private readonly covIm = new Float64Array(N_LINKS * N_LINKS);
  private readonly eig = new Float64Array(N_LINKS);
  private readonly links = new Int32Array(N_LINKS);
  /** Doppler: the FFT over the fast frames, its input and output (interleaved re, im). */
  private readonly fft = new FFT(FAST_FRAMES);
  private readonly fftIn = new Float64Array(FAST_FRAMES * 2);
  private readonly fftOut = new Float64Array(FAST_FRAMES * 2);
  /** Hann taper over `taperFrames` frames. */
  private readonly taper = new Float64Array(FAST_FRAMES);
  private taperFrames = 0;
  /** Signed band of each Doppler bin at `bandRate` Hz (the DC and Nyquist bins are split). */
  private readonly binBand = new Int8Array(FAST_FRAMES);
  private bandRate = NaN;

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
    if (this.ensure(T, nSub)) this.prev = undefined;
    const shift = rxN === this.prevRx && txN === this.prevTx ? overlapShift(this.prev, w, frameLen) : 0;
    const blocksReusable = shift > 0 && this.blocksOf === this.prev;
    this.blocksOf = undefined;
    if (shift > 0) {
      // Consecutive overlapping windows: the frames they share are prepared already.
      this.x.copyWithin(0, shift * LG * 2, T * LG * 2);
      this.valid.copyWithin(0, shift, T);
      this.noiseSum.copyWithin(0, shift, T);
      this.noiseN.copyWithin(0, shift, T);
      this.prepareFrames(w, layout, rxN, txN, T - shift);
    } else this.prepareFrames(w, layout, rxN, txN, 0);
    this.prev = w;
    this.prevRx = rxN;
    this.prevTx = txN;
    this.summarise(T);

    for (let m = 0; m < rxN; m++) for (let n = 0; n < txN; n++) out[OFFSETS.linkMask + m * MAX_TX + n] = 1;
    out[OFFSETS.bw40] = layout.bw40 ? 1 : 0;
    if (Number.isFinite(this.snrDb)) out[OFFSETS.snr] = Math.max(-0.25, Math.min(1.5, this.snrDb / 40));
    for (const view of [SLOW, FAST]) {
      out[view.total] = Math.log(LOG_FLOOR);
      for (let i = 0; i < LG; i++) out[view.logPow + i] = Math.log(LOG_FLOOR);
    }
    if (this.validFrames === 0) return out;

    this.writeStatic(out, T, rxN, txN);
    // Slow view: block means of the whole window. Blocks the previous window already summed (it
    // moved by whole blocks) are shifted over; only the new ones are summed.
    const slow = this.slow;
    const x = this.x;
    const nBlocks = Math.min(SLOW_BLOCKS, T);
    const L2 = LG * 2;
    const bm = this.blockMean;
    const bv = this.blockValid;
    const blockLen = T / nBlocks;
    let firstNew = 0;
    if (blocksReusable && Number.isInteger(blockLen) && shift % blockLen === 0 && shift < T) {
      const moved = shift / blockLen;
      bm.copyWithin(0, moved * L2, nBlocks * L2);
      bv.copyWithin(0, moved, nBlocks);
      firstNew = nBlocks - moved;
    }
    for (let b = firstNew; b < nBlocks; b++) {
      const t0 = Math.floor((b * T) / nBlocks);
      const t1 = Math.floor(((b + 1) * T) / nBlocks);
      const sb = b * L2;
      bm.fill(0, sb, sb + L2);
      let cnt = 0;
      for (let t = t0; t < t1; t++) {
        if (!this.valid[t]) continue;
        cnt++;
        const xt = t * L2;
        for (let i = 0; i < L2; i++) bm[sb + i] += x[xt + i]!;
      }
      bv[b] = cnt > 0 ? 1 : 0;
      if (cnt > 0) for (let i = 0; i < L2; i++) bm[sb + i] /= cnt;
    }
    slow.set(bm.subarray(0, nBlocks * L2));
    this.slowValid.set(bv.subarray(0, nBlocks));
    this.blocksOf = w;
    this.motion(out, slow, 0, nBlocks, this.slowValid, SLOW, layout, rxN, txN);
    // Fast view: the last frames at the full rate.
    const f0 = Math.max(0, T - FAST_FRAMES);
    const fast = this.fastBuf;
    fast.set(x.subarray(f0 * LG * 2, T * LG * 2));
    this.motion(out, fast, 0, T - f0, this.valid.subarray(f0), FAST, layout, rxN, txN);
    this.writeDoppler(out, fast, 0, T - f0, rxN, txN, w.rateHz);
    return out;
  }

  private layoutFor(subcarriers: Int16Array): SubcarrierLayout {
    if (this.layout && subcarriers === this.lastSubcarriers) return this.layout;
    if (!this.layout || !this.layout.matches(subcarriers)) this.layout = new SubcarrierLayout(subcarriers);
    this.lastSubcarriers = subcarriers;
    return this.layout;
  }

  /** Grows the buffers; true when the per-frame ones were replaced (nothing to reuse then). */
  private ensure(T: number, nSub: number): boolean {
    if (this.frame.length < nSub * N_LINKS * 2) this.frame = new Float64Array(nSub * N_LINKS * 2);
    if (this.valid.length === T) return false;
    this.x = new Float64Array(T * LG * 2);
    this.valid = new Uint8Array(T);
    this.noiseSum = new Float64Array(T);
    this.noiseN = new Float64Array(T);
    return true;
  }

  /** Valid frame count and the SNR proxy of the window from the per-frame sums. */
  private summarise(T: number): void {
    let nValid = 0;
    let sum = 0;
    let n = 0;
    for (let t = 0; t < T; t++) {
      nValid += this.valid[t]!;
      sum += this.noiseSum[t]!;
      n += this.noiseN[t]!;
    }
    this.validFrames = nValid;
    if (n > 0) {
      const s2 = sum / (6 * n);
      const snr = s2 > 0 ? Math.max(1e-3, 1 - s2) / s2 : 1e6;
      this.snrDb = Math.max(-30, Math.min(60, 10 * Math.log10(snr)));
    } else this.snrDb = NaN;
  }

  /**
   * Gain-normalises, clips and grid-resamples frames from..T-1 into x, with their noise sums.
   */
  private prepareFrames(w: CsiWindow, layout: SubcarrierLayout, rxN: number, txN: number, from: number): void {
    const { nRx, nTx, nSub, size: T, data } = w;
    const frameLen = nSub * nRx * nTx * 2;
    const fr = this.frame;
    const x = this.x;
    const { start, pos, weight, order, triples } = layout;
    for (let t = from; t < T; t++) {
      const base = t * frameLen;
      const xt = t * LG * 2;
      x.fill(0, xt, xt + LG * 2);
      this.valid[t] = 0;
      this.noiseSum[t] = 0;
      this.noiseN[t] = 0;
      let noiseSum = 0;
      let noiseN = 0;
      let p1 = 0;
      let n1 = 0;
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          let i = base + (sc * nRx + m) * nTx * 2;
          for (let n = 0; n < txN; n++, i += 2) {
            const q = data[i]! * data[i]! + data[i + 1]! * data[i + 1]!;
            if (q < Infinity) {
              p1 += q;
              n1++;
            }
          }
        }
      }
      if (!(n1 > 0 && p1 > 0 && p1 < Infinity)) continue;
      const lim = (9 * p1) / n1;
      let p2 = 0;
      let n2 = 0;
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          let i = base + (sc * nRx + m) * nTx * 2;
          for (let n = 0; n < txN; n++, i += 2) {
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
      for (let sc = 0; sc < nSub; sc++) {
        for (let m = 0; m < rxN; m++) {
          let i = base + (sc * nRx + m) * nTx * 2;
          for (let n = 0; n < txN; n++, i += 2) {
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
      this.noiseSum[t] = noiseSum;
      this.noiseN[t] = noiseN;
    }
  }

  /** Static view: inter-antenna correlation of the mean of the last frames, and its bearings. */
  private writeStatic(out: Float32Array, T: number, rxN: number, txN: number): void {
    const mr = this.mean;
    const x = this.x;
    mr.fill(0);
    let cnt = 0;
    for (let t = T - 1; t >= 0 && cnt < RECENT_FRAMES; t--) {
      if (!this.valid[t]) continue;
      cnt++;
      const xt = t * LG * 2;
      for (let i = 0; i < LG * 2; i++) mr[i] += x[xt + i]!;
    }
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
    writeBearings(out, OFFSETS.staticRxCorr, OFFSETS.staticTxCorr, OFFSETS.geometry + 8, rxN, txN);
  }

  /**
   * Statistics of one view: series s (count steps of LG complex values from step `first`), made
   * zero-mean here over its valid steps.
   */
  private motion(
    out: Float32Array,
    s: Float64Array,
    first: number,
    count: number,
    valid: Uint8Array,
    o: ViewOffsets,
    layout: SubcarrierLayout,
    rxN: number,
    txN: number,
  ): void {
    const L2 = LG * 2;
    const mr = this.mean;
    const v = this.v;
    mr.fill(0);
    v.fill(0);
    let nv = 0;
    for (let k = 0; k < count; k++) {
      if (!valid[k]) continue;
      nv++;
      const st = (first + k) * L2;
      for (let i = 0; i < L2; i++) mr[i] += s[st + i]!;
    }
    if (nv === 0) return;
    for (let i = 0; i < L2; i++) mr[i] /= nv;
    const basis = this.leakBasis(mr);
    const e1 = this.e1;
    for (let k = 0; k < count; k++) {
      const st = (first + k) * L2;
      if (!valid[k]) {
        s.fill(0, st, st + L2);
        continue;
      }
      for (let i = 0; i < L2; i++) s[st + i] -= mr[i]!;
      // Remove the sanitisation and gain leak: the part along the mean channel, see leakBasis.
      if (basis > 0) {
        const e = e1;
        let pr = 0;
        let pi = 0;
        for (let i = 0; i < L2; i += 2) {
          // e^H D
          pr += e[i]! * s[st + i]! + e[i + 1]! * s[st + i + 1]!;
          pi += e[i]! * s[st + i + 1]! - e[i + 1]! * s[st + i]!;
        }
        for (let i = 0; i < L2; i += 2) {
          s[st + i] -= pr * e[i]! - pi * e[i + 1]!;
          s[st + i + 1] -= pr * e[i + 1]! + pi * e[i]!;
        }
      }
      for (let i = 0; i < L2; i += 2) v[i >> 1] += s[st + i]! * s[st + i]! + s[st + i + 1]! * s[st + i + 1]!;
    }
    let total = 0;
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        for (let g = 0; g < N_GRID; g++) {
          const p = v[l * N_GRID + g]! / nv;
          out[o.logPow + l * N_GRID + g] = Math.log(p + LOG_FLOOR);
          total += p;
        }
        // Grid neighbours (delay) and, for the fast view, consecutive frames (Doppler).
        let fr = 0;
        let fi = 0;
        let fa = 0;
        let fb = 0;
        let tr = 0;
        let ti = 0;
        let ta = 0;
        let tb = 0;
        for (let k = 0; k < count; k++) {
          const xl = (first + k) * L2 + l * N_GRID * 2;
          for (let g = 0; g + 1 < N_GRID; g++) {
            const a = xl + (g + 1) * 2;
            const b = xl + g * 2;
            fr += s[a]! * s[b]! + s[a + 1]! * s[b + 1]!;
            fi += s[a + 1]! * s[b]! - s[a]! * s[b + 1]!;
            fa += s[a]! * s[a]! + s[a + 1]! * s[a + 1]!;
            fb += s[b]! * s[b]! + s[b + 1]! * s[b + 1]!;
          }
          if (o.timeCorr >= 0 && k + 1 < count) {
            const yl = xl + L2;
            for (let g = 0; g < N_GRID; g++) {
              const a = yl + g * 2;
              const b = xl + g * 2;
              tr += s[a]! * s[b]! + s[a + 1]! * s[b + 1]!;
              ti += s[a + 1]! * s[b]! - s[a]! * s[b + 1]!;
              ta += s[a]! * s[a]! + s[a + 1]! * s[a + 1]!;
              tb += s[b]! * s[b]! + s[b + 1]! * s[b + 1]!;
            }
          }
        }
        writeCorr(out, o.freqCorr + l * 2, fr, fi, fa, fb);
        if (o.timeCorr >= 0) writeCorr(out, o.timeCorr + l * 2, tr, ti, ta, tb);
      }
    }
    out[o.total] = Math.log(total / (rxN * txN * N_GRID) + LOG_FLOOR);

    // Every cross-link statistic below is a quadratic form of the link covariance R.
    const Rr = this.rRe;
    const Ri = this.rIm;
    this.linkCovariance(s, first, count, valid, rxN, txN);
    const corr = (la: number, lb: number, at: number) =>
      writeCorr(out, at, Rr[la * N_LINKS + lb]!, Ri[la * N_LINKS + lb]!, Rr[la * N_LINKS + la]!, Rr[lb * N_LINKS + lb]!);
    for (let n = 0; n < txN; n++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < rxN) corr(a * MAX_TX + n, b * MAX_TX + n, o.rxCorr + (n * 3 + q) * 2);
      }
    }
    for (let m = 0; m < rxN; m++) {
      for (let q = 0; q < 3; q++) {
        const [a, b] = PAIRS[q]!;
        if (b < txN) corr(m * MAX_TX + a, m * MAX_TX + b, o.txCorr + (m * 3 + q) * 2);
      }
    }
    writeBearings(out, o.rxCorr, o.txCorr, o.geometry, rxN, txN);

    // Extra path length from the phase step across grid points, summed over links.
    let dr = 0;
    let di = 0;
    let nl = 0;
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        dr += out[o.freqCorr + l * 2]!;
        di += out[o.freqCorr + l * 2 + 1]!;
        nl++;
      }
    }
    const mag = Math.hypot(dr, di);
    if (mag > 0 && layout.gridHz > 0) {
      out[o.delay] = (-Math.atan2(di, dr) * SPEED_OF_LIGHT) / (2 * Math.PI * layout.gridHz) / 10;
      out[o.delay + 1] = mag / nl;
    }

    // Beam map over (rx direction, tx direction): the power of w^T D summed over time and grid
    // points is w^T R conj(w), R Hermitian, so the upper triangle suffices.
    const links = this.links;
    let L = 0;
    for (let m = 0; m < rxN; m++) for (let n = 0; n < txN; n++) links[L++] = m * MAX_TX + n;
    const beam = this.beam;
    let bsum = 0;
    for (let c = 0; c < NB; c++) {
      let p = 0;
      for (let i = 0; i < L; i++) {
        const li = links[i]!;
        p += Rr[li * N_LINKS + li]!;
        const ar = STEER_RE[c * N_LINKS + li]!;
        const ai = STEER_IM[c * N_LINKS + li]!;
        for (let j = i + 1; j < L; j++) {
          const lj = links[j]!;
          const br = STEER_RE[c * N_LINKS + lj]!;
          const bi = STEER_IM[c * N_LINKS + lj]!;
          // Re(w_i conj(w_j) R_ij), twice for the lower triangle
          p += 2 * ((ar * br + ai * bi) * Rr[li * N_LINKS + lj]! - (ai * br - ar * bi) * Ri[li * N_LINKS + lj]!);
        }
      }
      beam[c] = Math.max(0, p);
      bsum += beam[c]!;
    }
    if (bsum > 0 && bsum < Infinity) for (let c = 0; c < NB; c++) out[o.beam + c] = beam[c]! / bsum;
    this.eigenShares(out, o.eigen, L);
  }

  /**
   * R = sum over steps and grid points of D D^H over the present links (link slots l, l' of
   * N_LINKS x N_LINKS; upper triangle and diagonal), D the zero-mean series (invalid steps are 0).
   */
  private linkCovariance(s: Float64Array, first: number, count: number, valid: Uint8Array, rxN: number, txN: number): void {
    const Rr = this.rRe;
    const Ri = this.rIm;
    Rr.fill(0);
    Ri.fill(0);
    const links = this.links;
    let L = 0;
    for (let m = 0; m < rxN; m++) for (let n = 0; n < txN; n++) links[L++] = m * MAX_TX + n;
    const L2 = LG * 2;
    for (let k = 0; k < count; k++) {
      if (!valid[k]) continue;
      const st = (first + k) * L2;
      for (let i = 0; i < L; i++) {
        const li = links[i]!;
        const pa = st + li * N_GRID * 2;
        for (let j = i; j < L; j++) {
          const lj = links[j]!;
          const pb = st + lj * N_GRID * 2;
          let re = 0;
          let im = 0;
          for (let g = 0; g < N_GRID * 2; g += 2) {
            const ar = s[pa + g]!;
            const ai = s[pa + g + 1]!;
            const br = s[pb + g]!;
            const bi = s[pb + g + 1]!;
            re += ar * br + ai * bi;
            im += ai * br - ar * bi;
          }
          Rr[li * N_LINKS + lj] += re;
          Ri[li * N_LINKS + lj] += im;
        }
      }
    }
  }

  /**
   * The direction the moving part must not use. Sanitising a packet rotates it by a common phase
   * estimated from the whole packet, and normalising scales it by its power; when a body moves,
   * these estimates move a little with it, which adds to every frame a complex multiple of the mean
   * channel M. That leak has the static channel's spatial signature (the line of sight's
   * direction), not the body's, and is about as strong as the body's own change: left in, it pulls
   * every bearing towards the transmitter (with the transmitter on a side wall, bearing errors
   * triple). So the moving part is projected off M. (The phase-slope estimate leaks too, along the
   * frequency ramp of M, but projecting that off as well costs more body signal than it removes.)
   * Writes M / |M| to e1.
   * @returns 1, or 0 when the mean channel is zero
   */
  private leakBasis(mr: Float64Array): number {
    const e1 = this.e1;
    let n1 = 0;
    for (let i = 0; i < LG * 2; i++) n1 += mr[i]! * mr[i]!;
    if (!(n1 > 1e-30 && n1 < Infinity)) return 0;
    const s1 = 1 / Math.sqrt(n1);
    for (let i = 0; i < LG * 2; i++) e1[i] = mr[i]! * s1;
    return 1;
  }

  /** Eigenvalue shares of the link covariance R of the L present links (see the module comment). */
  private eigenShares(out: Float32Array, at: number, L: number): void {
    const links = this.links;
    const ar = this.covRe;
    const ai = this.covIm;
    const Rr = this.rRe;
    const Ri = this.rIm;
    for (let i = 0; i < L; i++) {
      for (let j = i; j < L; j++) {
        const r = Rr[links[i]! * N_LINKS + links[j]!]!;
        const m = Ri[links[i]! * N_LINKS + links[j]!]!;
        ar[i * L + j] = r;
        ai[i * L + j] = m;
        ar[j * L + i] = r;
        ai[j * L + i] = -m;
      }
    }
    const vals = this.eig.subarray(0, L);
    hermitianEigenvalues(ar, ai, L, vals);
    vals.sort().reverse();
    let trace = 0;
    for (let i = 0; i < L; i++) trace += Math.max(0, vals[i]!);
    if (!(trace > 0 && trace < Infinity)) return;
    for (let i = 0; i < N_EIGEN && i < L; i++) out[at + i] = Math.max(0, vals[i]!) / trace;
  }

  private writeDoppler(out: Float32Array, x: Float64Array, first: number, count: number, rxN: number, txN: number, rateHz: number): void {
    const { fftIn, fftOut, bandPow, taper, binBand } = this;
    const L2 = LG * 2;
    const N = FAST_FRAMES;
    const half = N / 2;
    const rate = rateHz > 0 && rateHz < Infinity ? rateHz : 100;
    if (count !== this.taperFrames) {
      // Zero-padded to N frames when the window is shorter; Hann taper over the frames present.
      for (let k = 0; k < count; k++) taper[k] = 0.5 - 0.5 * Math.cos((2 * Math.PI * (k + 0.5)) / count);
      this.taperFrames = count;
    }
    if (rate !== this.bandRate) {
      for (let bin = 1; bin < N; bin++) {
        if (bin === half) continue;
        const f = ((bin < half ? bin : bin - N) * rate) / N;
        const af = Math.abs(f);
        let band = DOPPLER_EDGES_HZ.length;
        for (let e = 0; e < DOPPLER_EDGES_HZ.length; e++) {
          if (af <= DOPPLER_EDGES_HZ[e]!) {
            band = e;
            break;
          }
        }
        binBand[bin] = f < 0 ? 3 - band : 4 + band;
      }
      this.bandRate = rate;
    }
    fftIn.fill(0);
    for (let m = 0; m < rxN; m++) {
      for (let n = 0; n < txN; n++) {
        const l = m * MAX_TX + n;
        bandPow.fill(0);
        for (let g = 0; g < N_GRID; g++) {
          for (let k = 0; k < count; k++) {
            const a = (first + k) * L2 + (l * N_GRID + g) * 2;
            fftIn[2 * k] = x[a]! * taper[k]!;
            fftIn[2 * k + 1] = x[a + 1]! * taper[k]!;
          }
          // F[bin] = sum_k z_k exp(-j 2 pi bin k / N)
          this.fft.transform(fftOut, fftIn);
          const p0 = fftOut[0]! * fftOut[0]! + fftOut[1]! * fftOut[1]!;
          bandPow[3] += p0 / 2;
          bandPow[4] += p0 / 2;
          const pn = fftOut[2 * half]! * fftOut[2 * half]! + fftOut[2 * half + 1]! * fftOut[2 * half + 1]!;
          bandPow[0] += pn / 2;
          bandPow[N_DOPPLER_BANDS - 1] += pn / 2;
          for (let bin = 1; bin < N; bin++) {
            if (bin === half) continue;
            bandPow[binBand[bin]!] += fftOut[2 * bin]! * fftOut[2 * bin]! + fftOut[2 * bin + 1]! * fftOut[2 * bin + 1]!;
          }
        }
        let sum = 0;
        for (let b = 0; b < N_DOPPLER_BANDS; b++) sum += bandPow[b]!;
        if (sum > 0 && sum < Infinity) {
          for (let b = 0; b < N_DOPPLER_BANDS; b++) out[OFFSETS.fastDoppler + l * N_DOPPLER_BANDS + b] = bandPow[b]! / sum;
        }
      }
    }
  }
}

/**
 * Eigenvalues of a Hermitian n x n matrix (row-major real and imaginary parts, both triangles;
 * destroyed) by cyclic complex Jacobi rotations, until the off-diagonal part is below 1e-8 of
 * the diagonal (at most 30 sweeps). Each rotation first turns a_pq real with a phase on row and
 * column q, then zeroes it with a real plane rotation.
 */
export function hermitianEigenvalues(ar: Float64Array, ai: Float64Array, n: number, out: Float64Array): void {
  for (let sweep = 0; sweep < 30; sweep++) {
    let off = 0;
    let diag = 0;
    for (let i = 0; i < n; i++) {
      diag += ar[i * n + i]! * ar[i * n + i]!;
      for (let j = i + 1; j < n; j++) off += ar[i * n + j]! * ar[i * n + j]! + ai[i * n + j]! * ai[i * n + j]!;
    }
    if (!(off > 1e-16 * diag)) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const r = Math.hypot(ar[p * n + q]!, ai[p * n + q]!);
        if (r === 0) continue;
        // Phase: column q times e^{-j phi}, row q times e^{j phi}, phi = angle(a_pq).
        const er = ar[p * n + q]! / r;
        const ei = ai[p * n + q]! / r;
        for (let k = 0; k < n; k++) {
          if (k === q) continue;
          const xr = ar[k * n + q]!;
          const xi = ai[k * n + q]!;
          ar[k * n + q] = xr * er + xi * ei;
          ai[k * n + q] = xi * er - xr * ei;
          ar[q * n + k] = ar[k * n + q]!;
          ai[q * n + k] = -ai[k * n + q]!;
        }
        ai[p * n + q] = 0;
        ai[q * n + p] = 0;
        ar[p * n + q] = r;
        ar[q * n + p] = r;
        const app = ar[p * n + p]!;
        const aqq = ar[q * n + q]!;
        const theta = (aqq - app) / (2 * r);
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const sn = t * c;
        // Columns p, q then rows p, q (A J, then J^T A), keeping the matrix Hermitian.
        for (let k = 0; k < n; k++) {
          const kpR = ar[k * n + p]!;
          const kpI = ai[k * n + p]!;
          const kqR = ar[k * n + q]!;
          const kqI = ai[k * n + q]!;
          ar[k * n + p] = c * kpR - sn * kqR;
          ai[k * n + p] = c * kpI - sn * kqI;
          ar[k * n + q] = sn * kpR + c * kqR;
          ai[k * n + q] = sn * kpI + c * kqI;
        }
        for (let k = 0; k < n; k++) {
          const pkR = ar[p * n + k]!;
          const pkI = ai[p * n + k]!;
          const qkR = ar[q * n + k]!;
          const qkI = ai[q * n + k]!;
          ar[p * n + k] = c * pkR - sn * qkR;
          ai[p * n + k] = c * pkI - sn * qkI;
          ar[q * n + k] = sn * pkR + c * qkR;
          ai[q * n + k] = sn * pkI + c * qkI;
        }
      }
    }
  }
  for (let i = 0; i < n; i++) out[i] = ar[i * n + i]!;
}

/**
 * `windowShift` for windows of the same stream, shape and subcarrier list (else 0): the extractor
 * keeps per-frame values of the overlap only when all of these match.
 */
function overlapShift(prev: CsiWindow | undefined, w: CsiWindow, frameLen: number): number {
  if (!prev || prev.sourceId !== w.sourceId || prev.size !== w.size || prev.nRx !== w.nRx || prev.nTx !== w.nTx || prev.nSub !== w.nSub) return 0;
  if (prev.subcarriers !== w.subcarriers) {
    if (prev.subcarriers.length !== w.subcarriers.length) return 0;
    for (let i = 0; i < w.subcarriers.length; i++) if (prev.subcarriers[i] !== w.subcarriers[i]) return 0;
  }
  return windowShift(prev, w, frameLen);
}

/**
 * Bearings from the correlation blocks at rxAt / txAt: -angle(C) / pi and coherence abs(C) / terms,
 * C summing pairs (0, 1) and (1, 2) (the half-wavelength neighbours) over the other side's antennas.
 */
function writeBearings(out: Float32Array, rxAt: number, txAt: number, at: number, rxN: number, txN: number): void {
  let re = 0;
  let im = 0;
  let k = 0;
  for (let n = 0; n < txN; n++) {
    for (let q = 0; q < 2; q++) {
      if (PAIRS[q]![1] >= rxN) continue;
      re += out[rxAt + (n * 3 + q) * 2]!;
      im += out[rxAt + (n * 3 + q) * 2 + 1]!;
      k++;
    }
  }
  if (k > 0 && (re !== 0 || im !== 0)) {
    out[at] = -Math.atan2(im, re) / Math.PI;
    out[at + 1] = Math.hypot(re, im) / k;
  }
  re = 0;
  im = 0;
  k = 0;
  for (let m = 0; m < rxN; m++) {
    for (let q = 0; q < 2; q++) {
      if (PAIRS[q]![1] >= txN) continue;
      re += out[txAt + (m * 3 + q) * 2]!;
      im += out[txAt + (m * 3 + q) * 2 + 1]!;
      k++;
    }
  }
  if (k > 0 && (re !== 0 || im !== 0)) {
    out[at + 2] = -Math.atan2(im, re) / Math.PI;
    out[at + 3] = Math.hypot(re, im) / k;
  }
}
