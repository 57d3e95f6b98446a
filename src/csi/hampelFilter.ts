/**
 * The Hampel outlier filter over time for CSI frames: each (subcarrier, rx, tx) element is compared
 * with the median of its own values in a centred window of frames, and replaced by that median when
 * it lies more than nSigma robust standard deviations (1.4826 * MAD) away from it. The `hampel`
 * operator (operators/hampel.ts) keeps one {@link HampelFilter} per subscription.
 */
import { assertFrameShape, type CsiFrame } from './frame.js';

export const HAMPEL_ON = ['amplitude', 'components'] as const;
export type HampelOn = (typeof HAMPEL_ON)[number];

/** MAD to standard deviation for Gaussian data. */
const MAD_SCALE = 1.4826;

/**
 * Hampel filter over time of a stream of CSI frames (see operators/hampel.ts for the behaviour at
 * the ends and at shape changes). {@link HampelFilter.push} takes frames in order and appends to
 * `ready` the frames whose window is complete; {@link HampelFilter.flush} appends the rest. The
 * window (odd, 3..31), nSigma (finite, >= 0) and `on` are taken as given; the operator validates
 * them.
 *
 * State, one instance per stream (the operator keeps one per subscription). Frames of the current
 * shape are numbered t = 0, 1, ... Each value stream v keeps its values of the frames in the
 * current window both in arrival order (`ring`, slot t % window) and sorted (`sorted`, a
 * window-long run per stream kept sorted by insertion), so a step of the window costs one removal
 * and one insertion, O(window), per stream.
 */
export class HampelFilter {
  private readonly half: number;
  private nRx = 0;
  private nTx = 0;
  private nSub = 0;
  private subcarriers: Int16Array | undefined;
  /** Value streams per frame: complex samples (amplitude) or floats (components). */
  private nV = 0;
  private readonly frames: (CsiFrame | undefined)[];
  private ring = new Float32Array(0);
  private sorted = new Float32Array(0);
  /** Frames received in this segment (the next frame's t). */
  private received = 0;
  /** Next frame to emit. */
  private emitted = 0;
  /** Oldest frame whose values are in `sorted`. */
  private lo = 0;
  /** Values per stream in `sorted` (= received - lo). */
  private count = 0;

  constructor(
    private readonly window: number,
    private readonly nSigma: number,
    private readonly on: HampelOn,
  ) {
    this.half = (window - 1) >> 1;
    this.frames = new Array<CsiFrame | undefined>(window).fill(undefined);
  }

  push(frame: CsiFrame, ready: CsiFrame[]): void {
    assertFrameShape(frame, 'hampel');
    if (this.received === 0 || !this.sameShape(frame)) {
      this.flush(ready);
      this.reshape(frame);
    }
    const t = this.received;
    this.insert(frame, t, t - this.lo >= this.window);
    this.received = t + 1;
    if (t >= this.half) ready.push(this.output(t - this.half));
  }

  /** Emits every frame not yet emitted, each with the neighbours that exist, and resets. */
  flush(ready: CsiFrame[]): void {
    for (let j = this.emitted; j < this.received; j++) {
      while (this.lo < j - this.half) this.dropOldest();
      ready.push(this.output(j));
    }
    this.received = 0;
    this.emitted = 0;
    this.lo = 0;
    this.count = 0;
    this.frames.fill(undefined);
  }

  private sameShape(frame: CsiFrame): boolean {
    if (frame.nRx !== this.nRx || frame.nTx !== this.nTx || frame.nSub !== this.nSub) return false;
    const sc = frame.subcarriers;
    const mine = this.subcarriers!;
    if (sc === mine) return true;
    if (sc.length !== mine.length) return false;
    for (let i = 0; i < sc.length; i++) if (sc[i] !== mine[i]) return false;
    this.subcarriers = sc;
    return true;
  }

  private reshape(frame: CsiFrame): void {
    this.nRx = frame.nRx;
    this.nTx = frame.nTx;
    this.nSub = frame.nSub;
    this.subcarriers = frame.subcarriers;
    const nV = this.on === 'amplitude' ? frame.csi.length >> 1 : frame.csi.length;
    if (nV !== this.nV) {
      this.nV = nV;
      this.ring = new Float32Array(nV * this.window);
      this.sorted = new Float32Array(nV * this.window);
    }
  }

  /**
   * Writes frame t's values into its ring slot and into every stream's sorted run. When the window
   * is full (`replace`), the slot still holds frame t - window's values, the ones leaving: each is
   * found in its run and slid to the new value's place in one pass, which moves only the values
   * ranked between the two (few, as CSI amplitude changes slowly from packet to packet).
   */
  private insert(frame: CsiFrame, t: number, replace: boolean): void {
    const W = this.window;
    const nV = this.nV;
    const csi = frame.csi;
    const ring = this.ring;
    const sorted = this.sorted;
    const slot = (t % W) * nV;
    const n = this.count;
    const amplitude = this.on === 'amplitude';
    this.frames[t % W] = frame;
    for (let v = 0; v < nV; v++) {
      let x: number;
      if (amplitude) {
        const re = csi[2 * v]!;
        const im = csi[2 * v + 1]!;
        x = Math.sqrt(re * re + im * im);
      } else x = csi[v]!;
      // NaN has no place in an order; as +Infinity it sorts last and reads as an outlier.
      if (x !== x) x = Infinity;
      const old = ring[slot + v]!;
      ring[slot + v] = x;
      x = ring[slot + v]!;
      const base = v * W;
      if (replace) {
        const last = base + n - 1;
        // The leaving value is in the run (stored from the same Float32 slot); the bound only guards.
        let i = base;
        while (i < last && sorted[i] !== old) i++;
        if (x > old) {
          while (i < last && sorted[i + 1]! < x) {
            sorted[i] = sorted[i + 1]!;
            i++;
          }
        } else {
          while (i > base && sorted[i - 1]! > x) {
            sorted[i] = sorted[i - 1]!;
            i--;
          }
        }
        sorted[i] = x;
        continue;
      }
      let i = base + n;
      while (i > base && sorted[i - 1]! > x) {
        sorted[i] = sorted[i - 1]!;
        i--;
      }
      sorted[i] = x;
    }
    if (replace) this.lo++;
    else this.count = n + 1;
  }

  /** Removes the values of frame `lo` from every stream's sorted run. */
  private dropOldest(): void {
    const W = this.window;
    const nV = this.nV;
    const ring = this.ring;
    const sorted = this.sorted;
    const slot = (this.lo % W) * nV;
    const n = this.count;
    for (let v = 0; v < nV; v++) {
      const x = ring[slot + v]!;
      const base = v * W;
      // Lower bound of x; the value is there, stored from the same Float32 slot.
      let a = base;
      let b = base + n;
      while (a < b) {
        const m = (a + b) >> 1;
        if (sorted[m]! < x) a = m + 1;
        else b = m;
      }
      // A plain loop: copyWithin's call overhead dominates for runs this short.
      for (const end = base + n - 1; a < end; a++) sorted[a] = sorted[a + 1]!;
    }
    this.lo++;
    this.count = n - 1;
  }

  /** Frame j filtered against the values currently in `sorted`. */
  private output(j: number): CsiFrame {
    const W = this.window;
    const nV = this.nV;
    const frame = this.frames[j % W]!;
    const csi = frame.csi;
    const out = new Float32Array(csi);
    const ring = this.ring;
    const sorted = this.sorted;
    const slot = (j % W) * nV;
    const n = this.count;
    const mid = n >> 1;
    const odd = (n & 1) === 1;
    const amplitude = this.on === 'amplitude';
    const nSigma = this.nSigma;
    for (let v = 0; v < nV; v++) {
      const base = v * W;
      const med = odd ? sorted[base + mid]! : (sorted[base + mid - 1]! + sorted[base + mid]!) / 2;
      const x = ring[slot + v]!;
      const dev = Math.abs(x - med);
      if (!(dev > 0)) continue;
      // Cheap exit before the MAD: the MAD is at least the smallest nonzero-rank deviation
      // (odd n: the nearer neighbour of the median; even n: the nearer middle value), so a value
      // within nSigma * 1.4826 times that gap cannot be flagged.
      const gap =
        n < 2
          ? 0
          : odd
            ? Math.min(med - sorted[base + mid - 1]!, sorted[base + mid + 1]! - med)
            : Math.min(med - sorted[base + mid - 1]!, sorted[base + mid]! - med);
      if (dev <= nSigma * (MAD_SCALE * gap)) continue;
      const mad = this.medianAbsDeviation(base, n, med);
      if (!(dev > nSigma * (MAD_SCALE * mad))) continue;
      if (!amplitude) {
        out[v] = med;
        continue;
      }
      if (x > 0 && x < Infinity) {
        const scale = med / x;
        out[2 * v] = csi[2 * v]! * scale;
        out[2 * v + 1] = csi[2 * v + 1]! * scale;
      } else {
        // No phase to keep (zero or non-finite amplitude): the median on the real axis.
        out[2 * v] = med;
        out[2 * v + 1] = 0;
      }
    }
    this.emitted = j + 1;
    return { ...frame, csi: out };
  }

  /**
   * Median of |x - med| over a sorted run: the deviations below and above med are each already
   * sorted (walking outwards from med), so merging the two walks reaches the middle rank in
   * O(n) without a second sort.
   */
  private medianAbsDeviation(base: number, n: number, med: number): number {
    const sorted = this.sorted;
    let p = base;
    let q = base + n;
    while (p < q) {
      const m = (p + q) >> 1;
      if (sorted[m]! < med) p = m + 1;
      else q = m;
    }
    let lo = p - 1;
    let hi = p;
    const end = base + n;
    const target = n >> 1;
    let prev = 0;
    let cur = 0;
    for (let r = 0; r <= target; r++) {
      prev = cur;
      const dl = lo >= base ? med - sorted[lo]! : Infinity;
      const dh = hi < end ? sorted[hi]! - med : Infinity;
      if (dl <= dh) {
        cur = dl;
        lo--;
      } else {
        cur = dh;
        hi++;
      }
    }
    return (n & 1) === 1 ? cur : (prev + cur) / 2;
  }
}
