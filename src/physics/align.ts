/**
 * Packet alignment, the first step of the physics front end (issue 19 item 1), per link.
 *
 * Every received packet carries, on top of the channel, a random common phase (carrier frequency
 * offset, PLL), a random linear phase across subcarriers (sampling time offset, packet detection
 * delay) and an AGC gain. {@link PacketAligner} takes them away so that consecutive packets of a
 * static channel coincide:
 *
 * - blind (no reference): the phase slope across subcarriers is estimated jointly over all antenna
 *   pairs from the products H[k+1] conj(H[k]) divided by each subcarrier index step (non-uniform
 *   layouts such as the Intel 5300 grouping and the 114-subcarrier layout with its gap at DC are
 *   handled: the most common step gives a first estimate, the others refine it) and removed; then
 *   the common phase (the angle of the sum of all samples) is removed and the gain normalised.
 *   Aligned packets then carry no absolute delay: their mean delay is 0.
 * - with a reference (the empty room's static channel, static.ts): the least-squares complex gain
 *   and slope that best map the packet onto the reference, i.e. the peak of
 *   |sum_k X_k exp(-j s idx_k)| with X_k = sum over antenna pairs of R conj(H), found from the
 *   adjacent-product estimate on X refined by weighted phase regression (Gauss-Newton). The aligned
 *   packet takes the reference's absolute delay and common phase.
 *
 * Gain: `'median'` (the default) scales the median sample amplitude to 1 (with a reference, to the
 * reference's median amplitude), which a single outlier sample (the simulator's 1 % of packets
 * with one sample x4..x10) does not move; `'rms'` uses the Frobenius norm (unit RMS; with a
 * reference, the least-squares gain).
 *
 * Cost, one 3 x 3 x 30 packet on this shared machine: aligned onto a learned static channel
 * (`StaticChannel.process`, the channel's median amplitude kept) about 15 us, against 28 us before
 * the phases across subcarriers were taken by recurrence (one sin/cos per distinct index step
 * instead of one per subcarrier and iteration), the regression weights once and the layout's most
 * common step once per layout (1.8x in one interleaved run; 94 us while the median was taken by
 * sorting amplitudes from `Math.hypot`). The recurrences carry a rounding of about nSub x 1e-16.
 *
 * The blind common phase is the angle of the sum of all samples once the slope is gone: a
 * convention, stable while that sum is not small against the channel's norm (true of a channel
 * with a line of sight; a channel whose antenna pairs cancel in the sum makes it noisy).
 *
 * Measured on the simulator (test/physics/align.test.ts; tx-rx1 of the default site, empty ideal
 * room, default impairments at 25 dB SNR, outliers off, 300 packets): blindly aligned packets
 * differ from their mean by a normalised residual of 0.056 median, 0.063 (30 subcarriers) / 0.060
 * (114) at most, which is the noise floor (10^(-25/20) = 0.056), against 1.4 between consecutive
 * raw packets; at 45 dB SNR 0.009 at most. Aligned onto the clean channel, a packet's slope is the
 * clean one within 0.48 ns (30) / 0.27 ns (114) of delay, against a median 25 ns raw.
 */

/** How {@link PacketAligner} normalises the gain: see the module comment. */
export type GainMode = 'median' | 'rms';

/**
 * The correction applied to one packet: aligned = gain * exp(j (phase + slope * idx_k)) * raw, for
 * subcarrier index idx_k (312.5 kHz steps).
 */
export interface AlignEstimate {
  /** Phase slope added, radians per subcarrier index (minus the packet's slope relative to the target). */
  slope: number;
  /** Common phase added, radians. */
  phase: number;
  /** Gain applied (linear amplitude factor). */
  gain: number;
}

/**
 * Phase slope of a channel across subcarriers, radians per subcarrier index, estimated jointly over
 * all antenna pairs from the products H[k+1] conj(H[k]) (each divided by its index step). A channel
 * with a single delay tau has slope -2 pi 312.5 kHz tau.
 *
 * @param csi interleaved complex samples in CsiFrame order (nSub x nPairs)
 * @param subcarriers subcarrier indices (strictly increasing)
 * @param nPairs nRx * nTx
 * @returns the slope, radians per index (0 for fewer than two subcarriers)
 * @example
 * const s = phaseSlope(frame.csi, frame.subcarriers, frame.nRx * frame.nTx);
 * const delayS = -s / (2 * Math.PI * SUBCARRIER_SPACING_HZ);
 */
export function phaseSlope(csi: ArrayLike<number>, subcarriers: Int16Array, nPairs: number): number {
  const nSub = subcarriers.length;
  if (nSub < 2) return 0;
  // The most common step gives the coarse estimate (no wrap while |slope| * step < pi).
  const mode = stepMode(subcarriers);
  let zr = 0;
  let zi = 0;
  for (let k = 0; k + 1 < nSub; k++) {
    if (subcarriers[k + 1]! - subcarriers[k]! !== mode) continue;
    const [pr, pi] = adjacentProduct(csi, k, nPairs);
    zr += pr;
    zi += pi;
  }
  let s = Math.atan2(zi, zr) / mode;
  // Refine over every step: after removing s, the residual phases are small. The trig of a step
  // is taken again only where the step changes (a layout has one or two).
  for (let it = 0; it < 2; it++) {
    let wr = 0;
    let wi = 0;
    let wd = 0;
    let w = 0;
    let lastD = NaN;
    let c = 1;
    let sn = 0;
    for (let k = 0; k + 1 < nSub; k++) {
      const d = subcarriers[k + 1]! - subcarriers[k]!;
      const [pr, pi] = adjacentProduct(csi, k, nPairs);
      if (d !== lastD) {
        c = Math.cos(s * d);
        sn = Math.sin(s * d);
        lastD = d;
      }
      wr += pr * c + pi * sn;
      wi += pi * c - pr * sn;
      const m = Math.sqrt(pr * pr + pi * pi);
      wd += m * d;
      w += m;
    }
    if (!(w > 0)) break;
    s += Math.atan2(wi, wr) / (wd / w);
  }
  return s;
}

/** The most common index step of each subcarrier layout seen (a property of the layout: found once). */
const MODES = new WeakMap<Int16Array, number>();

/** The most common step between consecutive subcarrier indices (the first of equals). */
function stepMode(subcarriers: Int16Array): number {
  const hit = MODES.get(subcarriers);
  if (hit !== undefined) return hit;
  const nSub = subcarriers.length;
  let mode = 1;
  let best = 0;
  for (let k = 0; k + 1 < nSub; k++) {
    const d = subcarriers[k + 1]! - subcarriers[k]!;
    let n = 0;
    for (let j = 0; j + 1 < nSub; j++) if (subcarriers[j + 1]! - subcarriers[j]! === d) n++;
    if (n > best) {
      best = n;
      mode = d;
    }
  }
  MODES.set(subcarriers, mode);
  return mode;
}

// Scratch for adjacentProduct (no allocation per call).
const PRODUCT: [number, number] = [0, 0];

/** sum over pairs of H[k+1] conj(H[k]). */
function adjacentProduct(csi: ArrayLike<number>, k: number, nPairs: number): [number, number] {
  let pr = 0;
  let pi = 0;
  const a = 2 * k * nPairs;
  const b = a + 2 * nPairs;
  for (let p = 0; p < 2 * nPairs; p += 2) {
    const ar = csi[a + p]!;
    const ai = csi[a + p + 1]!;
    const br = csi[b + p]!;
    const bi = csi[b + p + 1]!;
    pr += br * ar + bi * ai;
    pi += bi * ar - br * ai;
  }
  PRODUCT[0] = pr;
  PRODUCT[1] = pi;
  return PRODUCT;
}

/**
 * Normalised residual between two equally shaped channels: ||a - b|| / ||b|| (Frobenius norms).
 * @param a interleaved complex samples
 * @param b interleaved complex samples, same length
 * @returns the relative error (Infinity when b is all zero and a is not)
 * @example
 * normalisedResidual(aligned, staticChannel) // 0.05 = 5 % of the static channel's norm
 */
export function normalisedResidual(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i]! - b[i]!;
    num += d * d;
    den += b[i]! * b[i]!;
  }
  return den > 0 ? Math.sqrt(num / den) : num > 0 ? Infinity : 0;
}

/**
 * Aligns the packets of one link (one shape: nSub x nRx x nTx): see the module comment. Holds its
 * scratch buffers, so aligning allocates nothing; not shared between threads of work that
 * interleave.
 *
 * @example
 * const aligner = new PacketAligner(frame.subcarriers, frame.nRx, frame.nTx);
 * const out = new Float32Array(frame.csi.length);
 * aligner.align(frame.csi, out);               // blind: slope, common phase and gain removed
 * aligner.alignTo(frame.csi, reference, out);  // onto the empty room's static channel
 */
export class PacketAligner {
  /** Subcarrier indices of the layout. */
  readonly subcarriers: Int16Array;
  /** Receive antennas. */
  readonly nRx: number;
  /** Transmit antennas. */
  readonly nTx: number;
  /** The gain normalisation. */
  readonly gainMode: GainMode;
  /** The correction of the last aligned packet (overwritten by the next call). */
  readonly estimate: AlignEstimate = { slope: 0, phase: 0, gain: 1 };
  private readonly nPairs: number;
  private readonly xr: Float64Array;
  private readonly xi: Float64Array;
  private readonly amp: Float64Array;
  private readonly xs: Float64Array;
  /** |X_k| of alignTo. */
  private readonly mag: Float64Array;
  /** Scratch of derotatedSum: re, im. */
  private readonly sum = new Float64Array(2);

  /**
   * @param subcarriers subcarrier indices of the layout (strictly increasing)
   * @param nRx receive antennas
   * @param nTx transmit antennas
   * @param gain gain normalisation, default 'median'
   * @throws RangeError on an empty layout or a non-increasing one
   */
  constructor(subcarriers: Int16Array, nRx: number, nTx: number, gain: GainMode = 'median') {
    if (subcarriers.length < 2) throw new RangeError('align: need at least two subcarriers');
    for (let k = 1; k < subcarriers.length; k++) {
      if (!(subcarriers[k]! > subcarriers[k - 1]!)) throw new RangeError('align: subcarrier indices must increase');
    }
    if (!(nRx >= 1 && nTx >= 1)) throw new RangeError('align: nRx and nTx must be >= 1');
    this.subcarriers = subcarriers;
    this.nRx = nRx;
    this.nTx = nTx;
    this.gainMode = gain;
    this.nPairs = nRx * nTx;
    this.xr = new Float64Array(subcarriers.length);
    this.xi = new Float64Array(subcarriers.length);
    this.amp = new Float64Array(subcarriers.length * this.nPairs);
    this.xs = new Float64Array(2 * subcarriers.length);
    this.mag = new Float64Array(subcarriers.length);
  }

  /**
   * Blind alignment: removes the packet's phase slope and common phase and normalises its gain
   * (median amplitude 1, or unit RMS). No absolute delay survives.
   * @param csi the packet, nSub * nRx * nTx * 2 values
   * @param out receives the aligned packet (may be `csi` itself)
   * @returns the correction applied (this.estimate, overwritten by the next call)
   * @example
   * aligner.align(frame.csi, out).slope // radians per subcarrier index taken away (negated)
   */
  align(csi: ArrayLike<number>, out: Float32Array): AlignEstimate {
    const sub = this.subcarriers;
    const np = this.nPairs;
    const slope = -phaseSlope(csi, sub, np);
    // Common phase: the angle of the sum of every sample once the slope is gone.
    let sr = 0;
    let si = 0;
    for (let k = 0; k < sub.length; k++) {
      const c = Math.cos(slope * sub[k]!);
      const s = Math.sin(slope * sub[k]!);
      for (let p = 0, i = 2 * k * np; p < np; p++, i += 2) {
        const hr = csi[i]!;
        const hi = csi[i + 1]!;
        sr += hr * c - hi * s;
        si += hr * s + hi * c;
      }
    }
    const phase = -Math.atan2(si, sr);
    const g = this.gainMode === 'median' ? 1 / this.medianAmplitude(csi) : 1 / this.rms(csi);
    return this.apply(csi, out, slope, phase, Number.isFinite(g) ? g : 1);
  }

  /**
   * Aligns a packet onto a reference channel: the least-squares common phase and slope that best
   * map the packet onto it, and the gain (least squares for 'rms', the ratio of median amplitudes
   * for 'median'). The aligned packet takes the reference's absolute delay.
   * @param csi the packet, nSub * nRx * nTx * 2 values
   * @param reference the reference channel, same shape (e.g. StaticChannel.channel)
   * @param out receives the aligned packet (may be `csi` itself, not `reference`)
   * @param referenceMedian the reference's median amplitude ({@link median}) when the caller keeps
   *   it ('median' gain; found from the reference when omitted)
   * @returns the correction applied (this.estimate, overwritten by the next call)
   * @example
   * aligner.alignTo(frame.csi, staticChannel.channel, out);
   */
  alignTo(csi: ArrayLike<number>, reference: ArrayLike<number>, out: Float32Array, referenceMedian?: number): AlignEstimate {
    const sub = this.subcarriers;
    const nSub = sub.length;
    const np = this.nPairs;
    const xr = this.xr;
    const xi = this.xi;
    const mag = this.mag;
    let hh = 0;
    for (let k = 0; k < nSub; k++) {
      let ar = 0;
      let ai = 0;
      for (let p = 0, i = 2 * k * np; p < np; p++, i += 2) {
        const rr = reference[i]!;
        const ri = reference[i + 1]!;
        const hr = csi[i]!;
        const hi = csi[i + 1]!;
        ar += rr * hr + ri * hi;
        ai += ri * hr - rr * hi;
        hh += hr * hr + hi * hi;
      }
      xr[k] = ar;
      xi[k] = ai;
    }
    // X_k ~ c exp(j s idx_k): coarse slope from adjacent products of X, then weighted phase
    // regression of the residual phases (Gauss-Newton on the least-squares fit). The weights |X_k|
    // and their centre do not change between iterations.
    let s = phaseSlope(interleave(xr, xi, this.xs), sub, 1);
    let w = 0;
    let wi = 0;
    for (let k = 0; k < nSub; k++) {
      const m = Math.sqrt(xr[k]! * xr[k]! + xi[k]! * xi[k]!);
      mag[k] = m;
      w += m;
      wi += m * sub[k]!;
    }
    if (w > 0) {
      const mean = wi / w;
      for (let it = 0; it < 3; it++) {
        derotatedSum(xr, xi, sub, s, this.sum);
        const th = Math.atan2(this.sum[1]!, this.sum[0]!);
        let num = 0;
        let den = 0;
        // exp(-j (s idx_k + th)) by recurrence over the subcarriers (one sin/cos per distinct step).
        let er = Math.cos(s * sub[0]! + th);
        let ei = -Math.sin(s * sub[0]! + th);
        let lastD = NaN;
        let zr = 1;
        let zi = 0;
        for (let k = 0; k < nSub; k++) {
          if (k > 0) {
            const d = sub[k]! - sub[k - 1]!;
            if (d !== lastD) {
              zr = Math.cos(s * d);
              zi = -Math.sin(s * d);
              lastD = d;
            }
            const t = er * zr - ei * zi;
            ei = er * zi + ei * zr;
            er = t;
          }
          const r = Math.atan2(xi[k]! * er + xr[k]! * ei, xr[k]! * er - xi[k]! * ei);
          const d = sub[k]! - mean;
          num += mag[k]! * d * r;
          den += mag[k]! * d * d;
        }
        if (!(den > 0)) break;
        s += num / den;
      }
    }
    derotatedSum(xr, xi, sub, s, this.sum);
    const fr = this.sum[0]!;
    const fi = this.sum[1]!;
    const phase = Math.atan2(fi, fr);
    let g: number;
    if (this.gainMode === 'rms') g = hh > 0 ? Math.hypot(fr, fi) / hh : 1;
    else g = (referenceMedian ?? this.medianAmplitude(reference)) / this.medianAmplitude(csi);
    return this.apply(csi, out, s, phase, Number.isFinite(g) ? g : 1);
  }

  /** Writes gain * exp(j (phase + slope * idx)) * csi into out and records the estimate. */
  private apply(csi: ArrayLike<number>, out: Float32Array, slope: number, phase: number, gain: number): AlignEstimate {
    const sub = this.subcarriers;
    const np = this.nPairs;
    // gain * exp(j (phase + slope idx_k)) by recurrence over the subcarriers (one sin/cos per distinct step).
    let c = gain * Math.cos(phase + slope * sub[0]!);
    let s = gain * Math.sin(phase + slope * sub[0]!);
    let lastD = NaN;
    let zr = 1;
    let zi = 0;
    for (let k = 0; k < sub.length; k++) {
      if (k > 0) {
        const d = sub[k]! - sub[k - 1]!;
        if (d !== lastD) {
          zr = Math.cos(slope * d);
          zi = Math.sin(slope * d);
          lastD = d;
        }
        const t = c * zr - s * zi;
        s = c * zi + s * zr;
        c = t;
      }
      for (let p = 0, i = 2 * k * np; p < np; p++, i += 2) {
        const hr = csi[i]!;
        const hi = csi[i + 1]!;
        out[i] = hr * c - hi * s;
        out[i + 1] = hr * s + hi * c;
      }
    }
    const e = this.estimate;
    e.slope = slope;
    e.phase = phase;
    e.gain = gain;
    return e;
  }

  /**
   * The median sample amplitude of a packet or channel (what 'median' gain matches): for a caller
   * that aligns many packets onto one reference and keeps its median (StaticChannel).
   * @param csi interleaved complex samples of this layout
   * @returns the median of |csi|
   * @example
   * const m = aligner.median(staticChannel); aligner.alignTo(csi, staticChannel, out, m);
   */
  median(csi: ArrayLike<number>): number {
    return this.medianAmplitude(csi);
  }

  private rms(csi: ArrayLike<number>): number {
    const n = this.subcarriers.length * this.nPairs;
    let p = 0;
    for (let i = 0; i < 2 * n; i++) p += csi[i]! * csi[i]!;
    return Math.sqrt(p / n);
  }

  /** The median sample amplitude: the median of the squared amplitudes found by selection (no sort), then one square root per middle value. */
  private medianAmplitude(csi: ArrayLike<number>): number {
    const a = this.amp;
    const n = a.length;
    for (let c = 0; c < n; c++) {
      const re = csi[2 * c]!;
      const im = csi[2 * c + 1]!;
      a[c] = re * re + im * im;
    }
    const hi = n >> 1;
    const upper = select(a, hi);
    if (n % 2 === 1) return Math.sqrt(upper);
    // The lower middle value: the largest of the elements left of position hi after selection.
    let lower = -Infinity;
    for (let i = 0; i < hi; i++) if (a[i]! > lower) lower = a[i]!;
    return 0.5 * (Math.sqrt(lower) + Math.sqrt(upper));
  }
}

/** Writes (re, im) pairs into `out` (at least 2 * re.length long) and returns it. */
function interleave(re: Float64Array, im: Float64Array, out: Float64Array): Float64Array {
  for (let k = 0; k < re.length; k++) {
    out[2 * k] = re[k]!;
    out[2 * k + 1] = im[k]!;
  }
  return out;
}

/**
 * sum_k X_k exp(-j s idx_k): the fit of X_k = c exp(j s idx_k) for a given slope s, into out (re, im).
 * @param xr real parts of X, per subcarrier
 * @param xi imaginary parts
 * @param sub subcarrier indices
 * @param s slope, radians per index
 * @param out 2 numbers: re, im
 */
function derotatedSum(xr: Float64Array, xi: Float64Array, sub: Int16Array, s: number, out: Float64Array): void {
  let fr = 0;
  let fi = 0;
  // exp(-j s idx_k) by recurrence (one sin/cos per distinct step).
  let c = Math.cos(s * sub[0]!);
  let sn = Math.sin(s * sub[0]!);
  let lastD = NaN;
  let zc = 1;
  let zs = 0;
  for (let k = 0; k < sub.length; k++) {
    if (k > 0) {
      const d = sub[k]! - sub[k - 1]!;
      if (d !== lastD) {
        zc = Math.cos(s * d);
        zs = Math.sin(s * d);
        lastD = d;
      }
      const t = c * zc - sn * zs;
      sn = c * zs + sn * zc;
      c = t;
    }
    fr += xr[k]! * c + xi[k]! * sn;
    fi += xi[k]! * c - xr[k]! * sn;
  }
  out[0] = fr;
  out[1] = fi;
}

/**
 * The k-th smallest value of `a` (0-based), by Hoare's selection with a median-of-three pivot: `a`
 * is reordered so that a[k] holds it, everything before it is <= and everything after >=.
 * @param a values (reordered in place)
 * @param k position, 0 <= k < a.length
 * @returns a[k] after selection
 */
function select(a: Float64Array, k: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    const mid = (lo + hi) >> 1;
    // Median of three as the pivot.
    const x = a[lo]!;
    const y = a[mid]!;
    const z = a[hi]!;
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}
