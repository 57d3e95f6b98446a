/**
 * Hampel outlier filter over time, per stream: each (subcarrier, rx, tx) element is compared with
 * the median of its own values in a centred window of frames, and replaced by that median when it
 * lies more than nSigma robust standard deviations (1.4826 * MAD) away from it.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { OperatorContext, OperatorSpec, ParamValues } from '../src/engine/spec.js';
import { ParamError } from '../src/engine/params.js';

export const HAMPEL_ON = ['amplitude', 'components'] as const;
export type HampelOn = (typeof HAMPEL_ON)[number];

export interface HampelOptions {
  /** Total window length in frames, odd, 3..31; default 7. */
  window?: number;
  /** Threshold in robust standard deviations; default 3. */
  nSigma?: number;
  /**
   * `amplitude` (default): filter |H|; an outlier is rescaled to the median amplitude and keeps
   * its phase. `components`: filter re and im as two independent series.
   */
  on?: HampelOn;
}

/** MAD to standard deviation for Gaussian data. */
const MAD_SCALE = 1.4826;

/**
 * Hampel filter over a centred window of `window` frames, per stream.
 *
 * The output is delayed by (window - 1) / 2 frames: a frame is emitted once the frames after it
 * are in. The first frames of a stream, and the last ones (flushed on complete), use the
 * neighbours that exist (a one-sided, shorter window); so does the end of a run of frames of one
 * shape when the shape (nRx, nTx, nSub or the subcarrier list) changes, since streams of
 * different shapes cannot be compared. A window of an even number of values takes the mean of the
 * two middle values as its median. A MAD of zero flags any value that differs from the median
 * (the usual definition). Non-finite values count as +Infinity and so as outliers. An error from
 * the source is passed on at once; frames still waiting for their future half are dropped.
 *
 * @param options window (odd, 3..31, default 7), nSigma (default 3), on (`amplitude` | `components`).
 * @returns An operator emitting every input frame once, in order, with outliers replaced.
 * @throws RangeError from the factory when the window is not an odd integer in 3..31 or nSigma is
 *   negative or not finite.
 * @example
 * frames$.pipe(hampel({ window: 9, nSigma: 2.5 }));
 */
export function hampel(options: HampelOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const window = options.window ?? 7;
  const nSigma = options.nSigma ?? 3;
  const on = options.on ?? 'amplitude';
  if (!Number.isInteger(window) || window < 3 || window > 31 || window % 2 === 0)
    throw new RangeError(`hampel: window must be an odd integer from 3 to 31, got ${window}`);
  if (!(Number.isFinite(nSigma) && nSigma >= 0)) throw new RangeError(`hampel: nSigma must be >= 0, got ${nSigma}`);
  if (!HAMPEL_ON.includes(on)) throw new RangeError(`hampel: unknown 'on' value '${on}' (amplitude | components)`);
  return (source) =>
    new Observable<CsiFrame>((subscriber) => {
      const filter = new HampelFilter(window, nSigma, on);
      const ready: CsiFrame[] = [];
      const drain = (): void => {
        for (let i = 0; i < ready.length && !subscriber.closed; i++) subscriber.next(ready[i]!);
        ready.length = 0;
      };
      return source.subscribe({
        next(frame) {
          if (subscriber.closed) return;
          try {
            filter.push(frame, ready);
          } catch (err) {
            ready.length = 0;
            subscriber.error(err);
            return;
          }
          drain();
        },
        error: (err) => subscriber.error(err),
        complete() {
          try {
            filter.flush(ready);
          } catch (err) {
            ready.length = 0;
            subscriber.error(err);
            return;
          }
          drain();
          subscriber.complete();
        },
      });
    });
}

export const spec: OperatorSpec = {
  name: 'hampel',
  summary: 'Hampel outlier filter over time per stream (centred window, output delayed by (window-1)/2 frames).',
  input: 'frame',
  output: 'frame',
  params: [
    { name: 'window', type: 'int', default: 7, min: 3, max: 31, description: 'total window length in frames (odd)' },
    { name: 'nSigma', type: 'number', default: 3, min: 0, max: 1000, description: 'threshold in robust standard deviations (1.4826 * MAD)' },
    {
      name: 'on',
      type: 'enum',
      default: 'amplitude',
      values: HAMPEL_ON,
      description: 'amplitude: filter |H| (outliers rescaled, phase kept); components: filter re and im separately',
    },
  ],
  create(params: ParamValues, _ctx: OperatorContext) {
    // The declared bounds cannot say "odd"; say it here in the parameter's own words.
    const w = params.window as number;
    if (w % 2 === 0) throw new ParamError('window', `parameter "window" must be odd, got ${w}`);
    return hampel({ window: params.window as number, nSigma: params.nSigma as number, on: params.on as HampelOn });
  },
};

/** Throws when a frame's declared shape does not match its arrays. */
function checkShape(frame: CsiFrame): void {
  const { nRx, nTx, nSub } = frame;
  if (!(Number.isInteger(nRx) && nRx > 0 && Number.isInteger(nTx) && nTx > 0 && Number.isInteger(nSub) && nSub > 0))
    throw new RangeError(`hampel: frame ${frame.index} has an invalid shape ${nRx}x${nTx}x${nSub}`);
  if (frame.csi.length !== nSub * nRx * nTx * 2)
    throw new RangeError(`hampel: frame ${frame.index} has ${frame.csi.length} csi values, expected ${nSub * nRx * nTx * 2} for ${nRx}x${nTx}x${nSub}`);
}

/**
 * Per-subscription state. Frames of the current shape are numbered t = 0, 1, ... Each value stream
 * v keeps its values of the frames in the current window both in arrival order (`ring`, slot
 * t % window) and sorted (`sorted`, a window-long run per stream kept sorted by insertion), so a
 * step of the window costs one removal and one insertion, O(window), per stream.
 */
class HampelFilter {
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
    checkShape(frame);
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
