/**
 * Per-chain phase calibration from the empty room's static channel.
 *
 * Each RF chain of a real radio adds its own phase to every packet it carries (a fresh random one
 * at each power-up of the PLL, drifting slowly after: the simulator's `room` realism,
 * docs/simulator.md). Packet alignment (align.ts) takes away what is common to every chain, not
 * these: the channel of antenna pair (m, n) arrives as exp(j (alpha_m + beta_n)) times the true
 * one. Beamforming assumes the array's true phases, so random chain phases scatter the beam: on the
 * simulator, one walker in the default site is found 1.45 m off (median) with random chain phases
 * against 0.11 m without (`room` realism without the chain phases: 0.30 m).
 *
 * The empty room's static channel holds the line of sight, whose phase on every antenna pair is
 * known from the site: -2 pi f_k |t_n - r_m| / c. Matched over the subcarriers, each pair gives
 * c_mn = sum_k S[k,m,n] exp(+j 2 pi f_k |t_n - r_m| / c) ~ g exp(j (alpha_m + beta_n)) (g common;
 * reflections add a bias that the sum over subcarriers only partly averages away). The chain
 * phases are then the least-squares fit of the separable model on the circle, alternating
 * alpha_m = arg sum_n c_mn exp(-j beta_n) and beta_n = arg sum_m c_mn exp(-j alpha_m): nRx + nTx
 * unknowns from nRx nTx pairs, so a pair's multipath bias is shared out rather than taken whole.
 * The correction of pair (m, n) is exp(-j (alpha_m + beta_n)).
 */

import { SPEED_OF_LIGHT } from '../csi/radios.js';
import type { LinkGeometry } from './geometry.js';
import type { MovingWindow } from './types.js';

/** Alternations of the separable fit (it settles in 3-5 on the simulator's rooms). */
const FIT_ITERATIONS = 10;

/**
 * The per-pair phase correction of a link from its static channel.
 * @param channel the static channel (interleaved complex, CsiFrame order: (k * nRx + m) * nTx + n)
 * @param geometry the link's antennas and subcarrier frequencies
 * @returns nRx * nTx unit complex factors (interleaved), pair (m * nTx + n): multiply the pair's samples by it
 * @example
 * const corr = chainCorrection(st.channel, geometry);
 * applyChainCorrection(window, corr);
 */
export function chainCorrection(channel: Float32Array, geometry: LinkGeometry): Float32Array {
  const { nRx, nTx, frequencies, txPositions: tp, rxPositions: rp } = geometry;
  const nSub = frequencies.length;
  if (channel.length !== nSub * nRx * nTx * 2)
    throw new RangeError(`chainCorrection: the channel has ${channel.length} values, the geometry needs ${nSub * nRx * nTx * 2}`);
  const c = new Float64Array(nRx * nTx * 2);
  for (let m = 0; m < nRx; m++) {
    for (let n = 0; n < nTx; n++) {
      const len = Math.hypot(tp[3 * n]! - rp[3 * m]!, tp[3 * n + 1]! - rp[3 * m + 1]!, tp[3 * n + 2]! - rp[3 * m + 2]!);
      let re = 0;
      let im = 0;
      for (let k = 0; k < nSub; k++) {
        const cycles = (frequencies[k]! * len) / SPEED_OF_LIGHT;
        const a = 2 * Math.PI * (cycles - Math.floor(cycles));
        const cr = Math.cos(a);
        const ci = Math.sin(a);
        const i = 2 * ((k * nRx + m) * nTx + n);
        const sr = channel[i]!;
        const si = channel[i + 1]!;
        re += sr * cr - si * ci;
        im += sr * ci + si * cr;
      }
      c[2 * (m * nTx + n)] = re;
      c[2 * (m * nTx + n) + 1] = im;
    }
  }
  const alpha = new Float64Array(nRx);
  const beta = new Float64Array(nTx);
  for (let it = 0; it < FIT_ITERATIONS; it++) {
    for (let m = 0; m < nRx; m++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < nTx; n++) {
        const cr = Math.cos(beta[n]!);
        const ci = -Math.sin(beta[n]!);
        const pr = c[2 * (m * nTx + n)]!;
        const pi = c[2 * (m * nTx + n) + 1]!;
        re += pr * cr - pi * ci;
        im += pr * ci + pi * cr;
      }
      alpha[m] = Math.atan2(im, re);
    }
    for (let n = 0; n < nTx; n++) {
      let re = 0;
      let im = 0;
      for (let m = 0; m < nRx; m++) {
        const cr = Math.cos(alpha[m]!);
        const ci = -Math.sin(alpha[m]!);
        const pr = c[2 * (m * nTx + n)]!;
        const pi = c[2 * (m * nTx + n) + 1]!;
        re += pr * cr - pi * ci;
        im += pr * ci + pi * cr;
      }
      beta[n] = Math.atan2(im, re);
    }
  }
  const out = new Float32Array(nRx * nTx * 2);
  for (let m = 0; m < nRx; m++) {
    for (let n = 0; n < nTx; n++) {
      const a = -(alpha[m]! + beta[n]!);
      out[2 * (m * nTx + n)] = Math.cos(a);
      out[2 * (m * nTx + n) + 1] = Math.sin(a);
    }
  }
  return out;
}

/**
 * Multiplies every sample of a window by its pair's correction, in place. No allocation.
 * @param w the window (its data is rewritten)
 * @param correction nRx * nTx unit complex factors ({@link chainCorrection})
 * @returns w
 */
export function applyChainCorrection<W extends MovingWindow>(w: W, correction: Float32Array): W {
  const pairs = w.nRx * w.nTx;
  if (correction.length !== pairs * 2) throw new RangeError('applyChainCorrection: one factor per antenna pair');
  const d = w.data;
  const per = w.nSub * pairs;
  for (let s = 0; s < w.snapshots; s++) {
    for (let k = 0; k < w.nSub; k++) {
      const base = 2 * (s * per + k * pairs);
      for (let p = 0; p < pairs; p++) {
        const i = base + 2 * p;
        const cr = correction[2 * p]!;
        const ci = correction[2 * p + 1]!;
        const re = d[i]!;
        const im = d[i + 1]!;
        d[i] = re * cr - im * ci;
        d[i + 1] = re * ci + im * cr;
      }
    }
  }
  return w;
}
