/**
 * Per-chain phase calibration from the empty room's static channel, blind (no camera, no labels).
 *
 * Each RF chain of a real radio adds its own phase to every packet it carries (a fresh random one
 * at each power-up of the PLL, drifting slowly after: the simulator's `room` realism,
 * docs/simulator.md). Packet alignment (align.ts) takes away what is common to every chain, not
 * these: the channel of antenna pair (m, n) arrives as exp(j (alpha_m + beta_n)) times the true
 * one. Beamforming assumes the array's true phases, so random chain phases scatter the beam: in
 * `npm start`'s room 13 % of the people have a candidate within 0.6 m, against 77 % without the
 * chain phases (docs/physics.md "Blind chain calibration").
 *
 * Line of sight. The static channel holds the line of sight, whose phase on every pair is known
 * from the site: -2 pi f_k |t_n - r_m| / c. Matched over the subcarriers, each pair gives
 * c_mn = sum_k S[k,m,n] exp(+j 2 pi f_k |t_n - r_m| / c) ~ g exp(j (alpha_m + beta_n)) (g common),
 * and the chain phases are the least-squares fit of the separable model on the circle, alternating
 * alpha_m = arg sum_n c_mn exp(-j beta_n) and beta_n = arg sum_m c_mn exp(-j alpha_m). The walls'
 * reflections, which arrive from other angles, bias it.
 *
 * Room (the walls known: `environment.site` room_width x room_depth, a nominal ceiling). The static
 * channel is modelled as the line of sight plus the six first-order reflections (the transmit
 * antennas mirrored in the four walls, the floor and the ceiling), each with a free complex
 * amplitude a_p, seen through the chains: S[k,q] ~ u_q sum_p a_p E_p[k,q], with
 * E_p[k,q] = exp(-j 2 pi f_k L_p(q) / c) (L_p(q) the length of path p between pair q's antennas)
 * and u_q = exp(j (alpha_m + beta_n)). Starting from the line-of-sight fit it alternates: the
 * amplitudes by ridge least squares given the chains ((E^H E + lambda I) a = E^H (conj(u) S), the
 * Gram matrix factored once), then the chains given the amplitudes (the separable fit above on
 * c_q = sum_k S[k,q] conj(M[k,q]), M = sum_p a_p E_p). The antennas' patterns only scale a path
 * (every element of an array has the same), so they need no model. What is left out (furniture,
 * second-order reflections, the people there while the channel was learned) is the residual.
 *
 * Measured (`npm start`'s room, 3 simulated minutes, the share of people with a candidate of their
 * own within 0.6 m; the default seed and seeds 2, 3, 4 of the same room): none 13 / 25 / 12 / 14 %,
 * line of sight 41 / 47 / 36 / 40 %, room 46 / 57 / 45 / 48 %; the ideal room (no chain phases)
 * 76.8 % without, 77.0 % with the room fit. A ceiling at 2.5 m instead of the simulator's 2.8 m:
 * 47.5 % (the fit is insensitive to it).
 */

import { SPEED_OF_LIGHT } from '../csi/radios.js';
import type { LinkGeometry } from './geometry.js';
import type { MovingWindow } from './types.js';

/** Alternations of the separable fit (it settles in 3-5 on the simulator's rooms). */
const FIT_ITERATIONS = 10;
/** Alternations of the room fit between amplitudes and chains (it settles in about 20). */
const ROOM_ITERATIONS = 40;
/** Ridge of the amplitudes' least squares, relative to a path's own energy (some paths are nearly alike). */
const RIDGE = 1e-3;
/** Ceiling height assumed by the room fit, metres (the configuration has none; 2.5 m instead of 2.8 m changed nothing measurable). */
export const NOMINAL_CEILING_M = 2.7;
/** Paths of the room model: the line of sight and the six first-order reflections. */
const ROOM_PATHS = 7;

/** The walls the room fit mirrors the transmitter in: x in [0, width], y in [0, depth], floor at 0, ceiling at `height`. */
export interface ChainRoom {
  readonly width: number;
  readonly depth: number;
  /** Metres; default {@link NOMINAL_CEILING_M}. */
  readonly height?: number;
}

/**
 * The per-pair phase correction of a link from its static channel: the line-of-sight fit, or with
 * the room's walls known the room fit (module comment).
 * @param channel the static channel (interleaved complex, CsiFrame order: (k * nRx + m) * nTx + n)
 * @param geometry the link's antennas and subcarrier frequencies
 * @param room the room's walls; null or unset: the line of sight only
 * @returns nRx * nTx unit complex factors (interleaved), pair (m * nTx + n): multiply the pair's samples by it
 * @example
 * const corr = chainCorrection(st.channel, geometry, { width: 6, depth: 5 });
 * applyChainCorrection(window, corr);
 */
export function chainCorrection(channel: Float32Array, geometry: LinkGeometry, room?: ChainRoom | null): Float32Array {
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
  separablePhases(c, alpha, beta, FIT_ITERATIONS);
  if (room) roomFit(channel, geometry, room, alpha, beta);
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
 * The separable least-squares fit on the circle: maximises Re sum_mn conj(exp(j (alpha_m + beta_n))) c_mn
 * by alternating alpha and beta, from the values they hold.
 * @param c per pair (m * nTx + n), interleaved complex
 * @param alpha receive chains' phases (in: start, out: fit)
 * @param beta transmit chains' phases (in: start, out: fit)
 * @param iterations alternations
 */
function separablePhases(c: Float64Array, alpha: Float64Array, beta: Float64Array, iterations: number): void {
  const nRx = alpha.length;
  const nTx = beta.length;
  for (let it = 0; it < iterations; it++) {
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
}

/**
 * A transmit antenna mirrored in surface p of the room (0: none, the line of sight; 1-4: the walls
 * x = 0, x = width, y = 0, y = depth; 5: the floor; 6: the ceiling), written to out.
 */
function mirrored(x: number, y: number, z: number, p: number, width: number, depth: number, height: number, out: Float64Array): void {
  out[0] = p === 1 ? -x : p === 2 ? 2 * width - x : x;
  out[1] = p === 3 ? -y : p === 4 ? 2 * depth - y : y;
  out[2] = p === 5 ? -z : p === 6 ? 2 * height - z : z;
}

/**
 * The room fit (module comment), refining alpha and beta in place from the line-of-sight fit.
 * @param channel the static channel
 * @param geometry the link's antennas and frequencies
 * @param room the walls
 * @param alpha receive chains' phases (in: the line-of-sight fit)
 * @param beta transmit chains' phases (in: the line-of-sight fit)
 */
function roomFit(channel: Float32Array, geometry: LinkGeometry, room: ChainRoom, alpha: Float64Array, beta: Float64Array): void {
  const { nRx, nTx, frequencies: fr, txPositions: tp, rxPositions: rp } = geometry;
  const K = fr.length;
  const Q = nRx * nTx;
  const J = K * Q;
  const P = ROOM_PATHS;
  const height = room.height ?? NOMINAL_CEILING_M;
  // E[p][j], j = k * Q + q: each path's phase on every subcarrier and pair.
  const E = new Float64Array(2 * P * J);
  const img = new Float64Array(3);
  for (let p = 0; p < P; p++) {
    for (let n = 0; n < nTx; n++) {
      mirrored(tp[3 * n]!, tp[3 * n + 1]!, tp[3 * n + 2]!, p, room.width, room.depth, height, img);
      for (let m = 0; m < nRx; m++) {
        const len = Math.hypot(img[0]! - rp[3 * m]!, img[1]! - rp[3 * m + 1]!, img[2]! - rp[3 * m + 2]!);
        const q = m * nTx + n;
        for (let k = 0; k < K; k++) {
          const cycles = (fr[k]! * len) / SPEED_OF_LIGHT;
          const a = -2 * Math.PI * (cycles - Math.floor(cycles));
          const i = 2 * (p * J + k * Q + q);
          E[i] = Math.cos(a);
          E[i + 1] = Math.sin(a);
        }
      }
    }
  }
  // Gram matrix E^H E + ridge, factored once (Hermitian positive definite: complex Cholesky).
  const G = new Float64Array(2 * P * P);
  for (let a = 0; a < P; a++) {
    for (let b = a; b < P; b++) {
      let re = 0;
      let im = 0;
      for (let j = 0; j < J; j++) {
        const ar = E[2 * (a * J + j)]!;
        const ai = E[2 * (a * J + j) + 1]!;
        const br = E[2 * (b * J + j)]!;
        const bi = E[2 * (b * J + j) + 1]!;
        // conj(E_a) E_b
        re += ar * br + ai * bi;
        im += ar * bi - ai * br;
      }
      G[2 * (a * P + b)] = re;
      G[2 * (a * P + b) + 1] = im;
      G[2 * (b * P + a)] = re;
      G[2 * (b * P + a) + 1] = -im;
    }
    G[2 * (a * P + a)] += RIDGE * J;
  }
  const L = choleskyComplex(G, P);
  const rhs = new Float64Array(2 * P);
  const amp = new Float64Array(2 * P);
  const c = new Float64Array(2 * Q);
  const ur = new Float64Array(Q);
  const ui = new Float64Array(Q);
  for (let it = 0; it < ROOM_ITERATIONS; it++) {
    for (let q = 0; q < Q; q++) {
      const ph = alpha[Math.floor(q / nTx)]! + beta[q % nTx]!;
      ur[q] = Math.cos(ph);
      ui[q] = Math.sin(ph);
    }
    // rhs_p = sum_j conj(E_pj) conj(u_q) S_j
    rhs.fill(0);
    for (let k = 0; k < K; k++) {
      for (let q = 0; q < Q; q++) {
        const j = k * Q + q;
        const s0 = channel[2 * j]!;
        const s1 = channel[2 * j + 1]!;
        const vr = s0 * ur[q]! + s1 * ui[q]!;
        const vi = s1 * ur[q]! - s0 * ui[q]!;
        for (let p = 0; p < P; p++) {
          const er = E[2 * (p * J + j)]!;
          const ei = E[2 * (p * J + j) + 1]!;
          rhs[2 * p] += er * vr + ei * vi;
          rhs[2 * p + 1] += er * vi - ei * vr;
        }
      }
    }
    choleskySolve(L, P, rhs, amp);
    // c_q = sum_k S conj(M), M_j = sum_p E_pj a_p
    c.fill(0);
    for (let k = 0; k < K; k++) {
      for (let q = 0; q < Q; q++) {
        const j = k * Q + q;
        let mr = 0;
        let mi = 0;
        for (let p = 0; p < P; p++) {
          const er = E[2 * (p * J + j)]!;
          const ei = E[2 * (p * J + j) + 1]!;
          mr += er * amp[2 * p]! - ei * amp[2 * p + 1]!;
          mi += er * amp[2 * p + 1]! + ei * amp[2 * p]!;
        }
        const s0 = channel[2 * j]!;
        const s1 = channel[2 * j + 1]!;
        c[2 * q] += s0 * mr + s1 * mi;
        c[2 * q + 1] += s1 * mr - s0 * mi;
      }
    }
    separablePhases(c, alpha, beta, 4);
  }
}

/**
 * Complex Cholesky factor of a Hermitian positive definite matrix: A = L L^H.
 * @param A n x n interleaved complex, row-major
 * @param n order
 * @returns L, lower triangular, n x n interleaved complex (real diagonal)
 */
function choleskyComplex(A: Float64Array, n: number): Float64Array {
  const L = new Float64Array(2 * n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      // s = A_ij - sum_k L_ik conj(L_jk)
      let sr = A[2 * (i * n + j)]!;
      let si = A[2 * (i * n + j) + 1]!;
      for (let k = 0; k < j; k++) {
        const ar = L[2 * (i * n + k)]!;
        const ai = L[2 * (i * n + k) + 1]!;
        const br = L[2 * (j * n + k)]!;
        const bi = L[2 * (j * n + k) + 1]!;
        sr -= ar * br + ai * bi;
        si -= ai * br - ar * bi;
      }
      if (i === j) {
        L[2 * (i * n + i)] = Math.sqrt(Math.max(sr, Number.MIN_VALUE));
      } else {
        const d = L[2 * (j * n + j)]!;
        L[2 * (i * n + j)] = sr / d;
        L[2 * (i * n + j) + 1] = si / d;
      }
    }
  }
  return L;
}

/**
 * Solves L L^H x = b with a factor of {@link choleskyComplex}.
 * @param L the factor
 * @param n order
 * @param b right-hand side, interleaved complex
 * @param x the solution (written)
 */
function choleskySolve(L: Float64Array, n: number, b: Float64Array, x: Float64Array): void {
  // L y = b
  for (let i = 0; i < n; i++) {
    let sr = b[2 * i]!;
    let si = b[2 * i + 1]!;
    for (let k = 0; k < i; k++) {
      const lr = L[2 * (i * n + k)]!;
      const li = L[2 * (i * n + k) + 1]!;
      sr -= lr * x[2 * k]! - li * x[2 * k + 1]!;
      si -= lr * x[2 * k + 1]! + li * x[2 * k]!;
    }
    const d = L[2 * (i * n + i)]!;
    x[2 * i] = sr / d;
    x[2 * i + 1] = si / d;
  }
  // L^H x = y
  for (let i = n - 1; i >= 0; i--) {
    let sr = x[2 * i]!;
    let si = x[2 * i + 1]!;
    for (let k = i + 1; k < n; k++) {
      // (L^H)_ik = conj(L_ki)
      const lr = L[2 * (k * n + i)]!;
      const li = -L[2 * (k * n + i) + 1]!;
      sr -= lr * x[2 * k]! - li * x[2 * k + 1]!;
      si -= lr * x[2 * k + 1]! + li * x[2 * k]!;
    }
    const d = L[2 * (i * n + i)]!;
    x[2 * i] = sr / d;
    x[2 * i + 1] = si / d;
  }
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
