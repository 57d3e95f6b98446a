/**
 * Phase sanitisation of CSI frames: the phase unwrapping, least-squares line and phasor estimate
 * that remove the random common phase offset (carrier frequency offset, PLL phase) and the random
 * linear phase slope across subcarriers (sampling time offset, packet detection delay) that every
 * commodity WiFi receiver adds to each packet. The `sanitizePhase` operator
 * (operators/sanitizePhase.ts) keeps one {@link PhaseSanitizer} per subscription.
 */
import { assertFrameShape, type CsiFrame } from './frame.js';

export const SANITIZE_METHODS = ['fit', 'phasor'] as const;
export type SanitizeMethod = (typeof SANITIZE_METHODS)[number];
export const SANITIZE_SCOPES = ['packet', 'link'] as const;
export type SanitizeScope = (typeof SANITIZE_SCOPES)[number];

const TWO_PI = 2 * Math.PI;

/**
 * The subcarrier layout of a frame, sorted by index: the sample order of a frame need not be the
 * index order (Nexmon records in FFT order), and unwrapping and phasor stepping both need
 * neighbours in frequency. Rebuilt only when the subcarrier list changes.
 */
class Layout {
  readonly nSub: number;
  /** Copy of the subcarrier list this layout was built from. */
  readonly subcarriers: Int16Array;
  /** order[i] = sample position of the i-th smallest subcarrier index. */
  readonly order: Int32Array;
  /** Subcarrier index of sorted position i. */
  readonly k: Float64Array;
  /** Step class of the pair (i, i+1) in sorted order; -1 for a repeated index (step 0). */
  readonly stepClass: Int32Array;
  /** Distinct positive steps between sorted neighbours. */
  readonly steps: Float64Array;
  /** Class with the most pairs (ties: the smaller step); -1 when there is no pair. */
  readonly dominant: number;

  constructor(subcarriers: Int16Array) {
    const n = subcarriers.length;
    this.nSub = n;
    this.subcarriers = Int16Array.from(subcarriers);
    this.order = Int32Array.from({ length: n }, (_, i) => i).sort((x, y) => subcarriers[x]! - subcarriers[y]! || x - y);
    this.k = Float64Array.from(this.order, (p) => subcarriers[p]!);
    this.stepClass = new Int32Array(Math.max(0, n - 1));
    const steps: number[] = [];
    const counts: number[] = [];
    for (let i = 0; i + 1 < n; i++) {
      const d = this.k[i + 1]! - this.k[i]!;
      if (d === 0) {
        this.stepClass[i] = -1;
        continue;
      }
      let c = steps.indexOf(d);
      if (c < 0) {
        c = steps.length;
        steps.push(d);
        counts.push(0);
      }
      counts[c]!++;
      this.stepClass[i] = c;
    }
    this.steps = Float64Array.from(steps);
    let dominant = -1;
    for (let c = 0; c < steps.length; c++)
      if (dominant < 0 || counts[c]! > counts[dominant]! || (counts[c] === counts[dominant] && steps[c]! < steps[dominant]!)) dominant = c;
    this.dominant = dominant;
  }

  matches(subcarriers: Int16Array): boolean {
    if (subcarriers.length !== this.nSub) return false;
    for (let i = 0; i < this.nSub; i++) if (subcarriers[i] !== this.subcarriers[i]) return false;
    return true;
  }
}

/**
 * Removes the per-packet common phase offset and linear phase slope across subcarriers from CSI
 * frames, one frame at a time, keeping amplitude exactly (see operators/sanitizePhase.ts).
 *
 * Holds the layout cache and scratch buffers, reused across frames: one instance per stream (the
 * operator keeps one per subscription). The method and scope are taken as given; the operator
 * validates them.
 */
export class PhaseSanitizer {
  private layout: Layout | undefined;
  private lastSubcarriers: Int16Array | undefined;
  private nLinks = 0;
  /** Unwrapped phase per (link, sorted position), NaN where the sample has no usable phase. */
  private phase = new Float64Array(0);
  /** Rotation phasors per sorted position (one set per link in link scope). */
  private rot = new Float64Array(0);
  /** Per-link fit results / pair sums. */
  private linkStats = new Float64Array(0);
  /** U^step per step class, interleaved re/im. */
  private stepPow = new Float64Array(0);
  /** Phasor sum of pair products per step class, interleaved re/im. */
  private classSum = new Float64Array(0);

  constructor(
    private readonly method: SanitizeMethod,
    private readonly scope: SanitizeScope,
  ) {}

  apply(frame: CsiFrame): CsiFrame {
    assertFrameShape(frame, 'sanitize', true);
    const layout = this.layoutFor(frame.subcarriers);
    const nL = frame.nRx * frame.nTx;
    const nSub = frame.nSub;
    if (nL !== this.nLinks || this.phase.length !== nL * nSub) {
      this.nLinks = nL;
      this.phase = new Float64Array(nL * nSub);
      this.rot = new Float64Array(2 * nSub * (this.scope === 'link' ? nL : 1));
      this.linkStats = new Float64Array(4 * nL);
    }
    if (this.stepPow.length < 2 * layout.steps.length) {
      this.stepPow = new Float64Array(2 * layout.steps.length);
      this.classSum = new Float64Array(2 * layout.steps.length);
    }
    const csi = frame.csi;
    const out = new Float32Array(csi.length);
    if (this.method === 'fit') this.fitLines(csi, layout, nL);
    else this.phasorLines(csi, layout, nL);
    this.rotate(csi, out, layout, nL);
    return { ...frame, csi: out };
  }

  private layoutFor(subcarriers: Int16Array): Layout {
    if (this.layout && subcarriers === this.lastSubcarriers) return this.layout;
    if (!this.layout || !this.layout.matches(subcarriers)) this.layout = new Layout(subcarriers);
    this.lastSubcarriers = subcarriers;
    return this.layout;
  }

  /**
   * Textbook fit: atan2, unwrap along increasing subcarrier index, least-squares line.
   *
   * Samples of zero (or non-finite) amplitude have no phase; they are left out of the unwrap and
   * the fit instead of contributing atan2(0, 0) = 0.
   *
   * Packet scope fits phi[l,k] = a*k + b_l: one common slope (the pooled within-link regression,
   * equal to the joint least-squares slope when all links have the same usable subcarriers) and
   * per-link intercepts. Per-link intercepts are
   * needed because each link's unwrapped phase starts in its own 2*pi branch, so a single
   * least-squares intercept over all links would depend on those arbitrary branches. The common
   * offset b is then the circular mean of the b_l (weighted by sample count), which is the
   * least-squares intercept when the links' true phases are close and is free of the branch
   * ambiguity in general. Applying one (a, b) to every link keeps inter-antenna phase differences.
   * Results go to rot via fillRotation.
   */
  private fitLines(csi: Float32Array, layout: Layout, nL: number): void {
    const { order, k } = layout;
    const nSub = layout.nSub;
    const phase = this.phase;
    const stats = this.linkStats;
    let poolKP = 0;
    let poolKK = 0;
    for (let l = 0; l < nL; l++) {
      const base = l * nSub;
      let prev = 0;
      let n = 0;
      let sumK = 0;
      let sumP = 0;
      for (let i = 0; i < nSub; i++) {
        const c = (order[i]! * nL + l) * 2;
        const re = csi[c]!;
        const im = csi[c + 1]!;
        const m2 = re * re + im * im;
        if (!(m2 > 0 && m2 < Infinity)) {
          phase[base + i] = NaN;
          continue;
        }
        let p = Math.atan2(im, re);
        if (n > 0) p += TWO_PI * Math.round((prev - p) / TWO_PI);
        phase[base + i] = p;
        prev = p;
        n++;
        sumK += k[i]!;
        sumP += p;
      }
      let kk = 0;
      let kp = 0;
      const meanK = n > 0 ? sumK / n : 0;
      const meanP = n > 0 ? sumP / n : 0;
      for (let i = 0; i < nSub; i++) {
        const p = phase[base + i]!;
        if (p !== p) continue;
        const dk = k[i]! - meanK;
        kk += dk * dk;
        kp += dk * (p - meanP);
      }
      stats[4 * l] = n;
      stats[4 * l + 1] = meanK;
      stats[4 * l + 2] = meanP;
      stats[4 * l + 3] = kk > 0 ? kp / kk : 0;
      poolKK += kk;
      poolKP += kp;
    }
    if (this.scope === 'link') {
      for (let l = 0; l < nL; l++) {
        const a = stats[4 * l + 3]!;
        this.fillRotation(layout, a, stats[4 * l + 2]! - a * stats[4 * l + 1]!, 2 * nSub * l);
      }
      return;
    }
    const a = poolKK > 0 ? poolKP / poolKK : 0;
    let cb = 0;
    let sb = 0;
    for (let l = 0; l < nL; l++) {
      const n = stats[4 * l]!;
      if (n === 0) continue;
      const bl = stats[4 * l + 2]! - a * stats[4 * l + 1]!;
      cb += n * Math.cos(bl);
      sb += n * Math.sin(bl);
    }
    this.fillRotation(layout, a, Math.atan2(sb, cb), 0);
  }

  /**
   * Phasor estimate, no per-sample atan2.
   *
   * Write H_k = G_k exp(j(a k + b)), G the channel without the offsets. For two neighbours k and
   * k + d, H_{k+d} conj(H_k) = G_{k+d} conj(G_k) exp(j a d): the offset b cancels and the slope
   * appears as a rotation of a*d. Summing the products of all pairs with the same step d (over
   * subcarriers, and over links in packet scope) gives P_d with angle(P_d) = a d + psi_d, where
   * psi_d is the amplitude-weighted mean phase advance of G over d (a property of the channel,
   * identical for every packet with the same G, so it does not disturb sanitisation).
   *
   * Pairs of different steps cannot go into one sum: their products turn by a*d for different d,
   * so a step-1 pair added to step-2 pairs would bias the angle towards half the slope (and
   * dividing the sum's angle by either step would be wrong). Each step class therefore gives its
   * own estimate a_d = angle(P_d) / d. The class with the most pairs (the dominant step d*) fixes
   * a_0 = angle(P_{d*}) / d*, unambiguous while |a d*| < pi; the others are resolved against it,
   * a_d = a_0 + wrap(angle(P_d) - a_0 d) / d, so that a longer step cannot alias. The classes are
   * combined with weights |P_d|, the weight a single phasor sum would give them if all steps were
   * equal. With one step (uniform grids) this reduces to a = angle(sum H_{k+1} conj H_k) / d.
   *
   * The offset is then b = angle(sum_k H_k exp(-j a k)), the amplitude-weighted circular mean of
   * the residual phase; exp(-j a k) is stepped, so this costs one cos/sin pair per link.
   */
  private phasorLines(csi: Float32Array, layout: Layout, nL: number): void {
    if (this.scope === 'packet') {
      this.sumPairs(csi, layout, nL, 0, nL);
      this.phasorRotation(csi, layout, nL, 0, nL, this.slopeFromClasses(layout), 0);
      return;
    }
    for (let l = 0; l < nL; l++) {
      this.sumPairs(csi, layout, nL, l, l + 1);
      this.phasorRotation(csi, layout, nL, l, l + 1, this.slopeFromClasses(layout), 2 * layout.nSub * l);
    }
  }

  /** Accumulates sum H_{i+1} conj(H_i) per step class over links [l0, l1). */
  private sumPairs(csi: Float32Array, layout: Layout, nL: number, l0: number, l1: number): void {
    const { order, stepClass } = layout;
    const sums = this.classSum;
    sums.fill(0, 0, 2 * layout.steps.length);
    for (let l = l0; l < l1; l++) {
      let c = (order[0]! * nL + l) * 2;
      let pr = csi[c]!;
      let pi = csi[c + 1]!;
      for (let i = 1; i < layout.nSub; i++) {
        c = (order[i]! * nL + l) * 2;
        const re = csi[c]!;
        const im = csi[c + 1]!;
        const cls = stepClass[i - 1]!;
        if (cls >= 0) {
          const zr = re * pr + im * pi;
          const zi = im * pr - re * pi;
          if (Number.isFinite(zr) && Number.isFinite(zi)) {
            sums[2 * cls] += zr;
            sums[2 * cls + 1] += zi;
          }
        }
        pr = re;
        pi = im;
      }
    }
  }

  /** Combines the per-step-class pair sums into one slope (see phasorLines). */
  private slopeFromClasses(layout: Layout): number {
    const dom = layout.dominant;
    if (dom < 0) return 0;
    const sums = this.classSum;
    const steps = layout.steps;
    const a0 = Math.atan2(sums[2 * dom + 1]!, sums[2 * dom]!) / steps[dom]!;
    let wSum = 0;
    let aSum = 0;
    for (let c = 0; c < steps.length; c++) {
      const zr = sums[2 * c]!;
      const zi = sums[2 * c + 1]!;
      const w = Math.sqrt(zr * zr + zi * zi);
      if (!(w > 0 && w < Infinity)) continue;
      const d = steps[c]!;
      let r = Math.atan2(zi, zr) - a0 * d;
      r -= TWO_PI * Math.round(r / TWO_PI);
      wSum += w;
      aSum += w * (a0 + r / d);
    }
    return wSum > 0 ? aSum / wSum : 0;
  }

  /** Fills rot at rotBase with exp(-j(a k + b)), b = angle(sum over links [l0, l1) of H_k exp(-j a k)). */
  private phasorRotation(csi: Float32Array, layout: Layout, nL: number, l0: number, l1: number, a: number, rotBase: number): void {
    this.fillRotation(layout, a, 0, rotBase);
    const { order } = layout;
    const rot = this.rot;
    let sr = 0;
    let si = 0;
    for (let i = 0; i < layout.nSub; i++) {
      const rr = rot[rotBase + 2 * i]!;
      const ri = rot[rotBase + 2 * i + 1]!;
      for (let l = l0; l < l1; l++) {
        const c = (order[i]! * nL + l) * 2;
        const re = csi[c]!;
        const im = csi[c + 1]!;
        const zr = re * rr - im * ri;
        const zi = re * ri + im * rr;
        if (Number.isFinite(zr) && Number.isFinite(zi)) {
          sr += zr;
          si += zi;
        }
      }
    }
    const b = Math.atan2(si, sr);
    const br = Math.cos(b);
    const bi = -Math.sin(b);
    for (let i = 0; i < layout.nSub; i++) {
      const rr = rot[rotBase + 2 * i]!;
      const ri = rot[rotBase + 2 * i + 1]!;
      rot[rotBase + 2 * i] = rr * br - ri * bi;
      rot[rotBase + 2 * i + 1] = rr * bi + ri * br;
    }
  }

  /**
   * Writes exp(-j(a k_i + b)) for every sorted position i into rot at base. Starts from one
   * cos/sin at the lowest index and steps by U^d, U = exp(-j a), d the index difference to the
   * next subcarrier; U^d per step class comes from binary powering. In double precision the
   * stepping error over a few hundred subcarriers stays near 1e-14.
   */
  private fillRotation(layout: Layout, a: number, b: number, base: number): void {
    const { k, stepClass, steps } = layout;
    const pow = this.stepPow;
    const ur = Math.cos(a);
    const ui = -Math.sin(a);
    for (let c = 0; c < steps.length; c++) {
      // Binary powering of U for the integer step.
      let e = steps[c]!;
      let xr = ur;
      let xi = ui;
      let pr = 1;
      let pi = 0;
      while (e > 0) {
        if (e & 1) {
          const t = pr * xr - pi * xi;
          pi = pr * xi + pi * xr;
          pr = t;
        }
        e >>>= 1;
        if (e > 0) {
          const t = xr * xr - xi * xi;
          xi = 2 * xr * xi;
          xr = t;
        }
      }
      pow[2 * c] = pr;
      pow[2 * c + 1] = pi;
    }
    const rot = this.rot;
    const ang = -(a * k[0]! + b);
    let rr = Math.cos(ang);
    let ri = Math.sin(ang);
    rot[base] = rr;
    rot[base + 1] = ri;
    for (let i = 1; i < layout.nSub; i++) {
      const cls = stepClass[i - 1]!;
      if (cls >= 0) {
        const sr = pow[2 * cls]!;
        const si = pow[2 * cls + 1]!;
        const t = rr * sr - ri * si;
        ri = rr * si + ri * sr;
        rr = t;
      }
      rot[base + 2 * i] = rr;
      rot[base + 2 * i + 1] = ri;
    }
  }

  /** out = csi * rot, per sample; in link scope each link has its own rotation set. */
  private rotate(csi: Float32Array, out: Float32Array, layout: Layout, nL: number): void {
    const { order } = layout;
    const nSub = layout.nSub;
    const rot = this.rot;
    const perLink = this.scope === 'link';
    for (let i = 0; i < nSub; i++) {
      const rowBase = order[i]! * nL;
      for (let l = 0; l < nL; l++) {
        const r = perLink ? 2 * (nSub * l + i) : 2 * i;
        const rr = rot[r]!;
        const ri = rot[r + 1]!;
        const c = (rowBase + l) * 2;
        const re = csi[c]!;
        const im = csi[c + 1]!;
        out[c] = re * rr - im * ri;
        out[c + 1] = re * ri + im * rr;
      }
    }
  }
}
