/**
 * The "empty-room subtraction trick" (issue 18): fit the empty room's mean channel from an
 * empty-room recording, then score a short window by |window mean - empty model|. Every packet is
 * first aligned to the model the way sanitisation would (csi-physics.md): a common phase and a
 * linear phase slope across subcarriers (CFO, sampling time offset) fitted to the model and
 * removed, then one complex gain (AGC) by least squares.
 */
import type { CsiFrame } from '../../src/csi/frame.js';
import { lsFactor } from '../helpers/numeric.js';

/** Aligns packet y to model e in place (see above). */
export function alignTo(e: Float64Array, y: Float64Array, sub: Int16Array, nPairs: number, out: Float64Array): void {
  const nSub = sub.length;
  // Phase of the per-subcarrier correlation with the model, unwrapped, then a least-squares line.
  let prev = 0;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let sxy = 0;
  for (let k = 0; k < nSub; k++) {
    let cr = 0;
    let ci = 0;
    for (let p = 0; p < nPairs; p++) {
      const i = 2 * (k * nPairs + p);
      cr += e[i]! * y[i]! + e[i + 1]! * y[i + 1]!;
      ci += e[i]! * y[i + 1]! - e[i + 1]! * y[i]!;
    }
    let ph = Math.atan2(ci, cr);
    if (k > 0) ph += 2 * Math.PI * Math.round((prev - ph) / (2 * Math.PI));
    prev = ph;
    const x = sub[k]!;
    sx += x;
    sy += ph;
    sxx += x * x;
    sxy += x * ph;
  }
  const slope = (nSub * sxy - sx * sy) / (nSub * sxx - sx * sx);
  const icpt = (sy - slope * sx) / nSub;
  for (let k = 0; k < nSub; k++) {
    const a = -(icpt + slope * sub[k]!);
    const c = Math.cos(a);
    const s = Math.sin(a);
    for (let p = 0; p < nPairs; p++) {
      const i = 2 * (k * nPairs + p);
      const r = y[i]!;
      const im = y[i + 1]!;
      out[i] = r * c - im * s;
      out[i + 1] = r * s + im * c;
    }
  }
  // Complex least-squares gain: a = <out, e> / <out, out>.
  const { re: gr, im: gi } = lsFactor(out, e);
  for (let i = 0; i < out.length; i += 2) {
    const r = out[i]!;
    const im = out[i + 1]!;
    out[i] = r * gr - im * gi;
    out[i + 1] = r * gi + im * gr;
  }
}

/**
 * The empty room's mean channel from a recording: average of the packets aligned to the running
 * model, three passes (the first aligned to the first packet).
 */
export function fitEmptyModel(frames: readonly CsiFrame[]): Float64Array {
  const f0 = frames[0]!;
  const nPairs = f0.nRx * f0.nTx;
  let e = Float64Array.from(f0.csi);
  const y = new Float64Array(e.length);
  const a = new Float64Array(e.length);
  for (let pass = 0; pass < 3; pass++) {
    const sum = new Float64Array(e.length);
    for (const f of frames) {
      y.set(f.csi);
      alignTo(e, y, f0.subcarriers, nPairs, a);
      for (let i = 0; i < sum.length; i++) sum[i] += a[i]!;
    }
    for (let i = 0; i < sum.length; i++) sum[i] /= frames.length;
    e = sum;
  }
  return e;
}

/** |window mean - model|^2 / |model|^2 over a window of packets, each aligned to the model. */
export function trickScore(e: Float64Array, frames: readonly CsiFrame[]): number {
  const f0 = frames[0]!;
  const nPairs = f0.nRx * f0.nTx;
  const y = new Float64Array(e.length);
  const a = new Float64Array(e.length);
  const mean = new Float64Array(e.length);
  for (const f of frames) {
    y.set(f.csi);
    alignTo(e, y, f0.subcarriers, nPairs, a);
    for (let i = 0; i < mean.length; i++) mean[i] += a[i]! / frames.length;
  }
  let num = 0;
  let den = 0;
  for (let i = 0; i < e.length; i++) {
    num += (mean[i]! - e[i]!) ** 2;
    den += e[i]! ** 2;
  }
  return num / den;
}

/** Area under the ROC curve: the probability that a random positive scores above a random negative (ties count half). */
export function auc(pos: readonly number[], neg: readonly number[]): number {
  let s = 0;
  for (const p of pos) for (const n of neg) s += p > n ? 1 : p === n ? 0.5 : 0;
  return s / (pos.length * neg.length);
}
