/**
 * What calibration learns about a room for the physics front end (issue 19 item 4): per link, the
 * empty room's static channel and the phase of every antenna pair's RF chains, fitted from windows
 * in which the camera saw one person at a known floor point. `csipose calibrate` writes it into a
 * room model's metadata (`room_calibration`, src/calibration/roomCalibration.ts); `floorMap` starts
 * each link with it (operators/floorMap.ts).
 *
 * Chain phases. Each RF chain of a commodity radio adds its own phase to every packet (a fresh random
 * one at each power-up, drifting slowly after: the simulator's `room` realism), so antenna pair
 * q = (m, n) arrives as exp(j chi_q) times the true channel and the beam scatters (one walker in the
 * default site 2.5 m off, median, against 0.2 m without). A person at a known point g gives, on
 * every snapshot s of a window's moving part h_s, the pair coefficients
 *   z_s[q] = sum_k h_s[k, q] exp(+j 2 pi f_k L_q(g) / c)
 * (L_q the bistatic length of pair q through g at the person's height): the subcarriers matched to
 * that pair's delay. With the chains' phases, z_s ~ gamma_s exp(j chi) (gamma_s the person's own
 * reflection, common to the pairs). The fit accumulates the pair covariance C = sum z_s z_s^H over
 * every labelled window and takes its principal eigenvector v: the least-squares rank-one model of
 * what was seen, chi_q = arg v_q (relative to pair 0). The correction of pair q is exp(-j chi_q).
 *
 * Focus (how much of the labelled energy one steering with these phases explains): for unit
 * phasors c, c^H C c / (P trace C), in (0, 1]. `before` is with no correction (c = 1), `after` with
 * the fitted one.
 *
 * Measured (study in docs/physics.md "Calibration"): the default site in the `room` realism, one
 * person walking 32 s for the fit, another session of the same radios for the test: the first
 * candidate 2.54 -> 0.40 m off (median) and 0.99 -> 0.50 m on another seed; in the ideal room
 * 0.22 -> 0.22 m; in `room` without random chain phases 0.36 -> 0.42 m (the drift and the clutter
 * bias the fit a little). A separable fit (a phase per receive chain plus one per transmit chain)
 * did worse (0.44, 0.55, 0.48 m). The radios' positions and orientations are not fitted: with the
 * chain phases free, moving a receiver 0.3 m or turning it 15 degrees changes the focus by under
 * 1 % and its maximum is not at the true pose (measured on the same session).
 */

import { SPEED_OF_LIGHT } from '../csi/radios.js';
import type { LinkGeometry } from './geometry.js';
import type { MovingWindow } from './types.js';

/** Version of the calibration's JSON form. */
export const CALIBRATION_VERSION = 1;
/** Height of the point a labelled person is steered to, metres (the torso: most of the moving power). */
export const CALIBRATION_HEIGHT_M = 1.0;
/** Power iterations of the principal eigenvector (a 9 x 9 matrix converges in far fewer). */
const EIGEN_ITERATIONS = 200;

/** One link's calibration. */
export interface LinkCalibration {
  /** The link's id (`<tx>-<rx>`, `siteLinks`). */
  readonly id: string;
  /** Layout it was fitted for: a link whose frames differ is started without it. */
  readonly subcarriers: Int16Array;
  readonly nRx: number;
  readonly nTx: number;
  /** Phase of each antenna pair's chains (m * nTx + n), radians, pair 0 at 0; the correction is exp(-j phase). */
  readonly chainPhases: Float64Array;
  /** The empty room's static channel (interleaved complex, CsiFrame order), or null when no empty room was recorded. */
  readonly staticChannel: Float32Array | null;
  /** Labelled windows the chain phases were fitted from. */
  readonly windows: number;
  /** Focus of the labelled windows without and with the correction (module comment). */
  readonly focusBefore: number;
  readonly focusAfter: number;
}

/** A room's calibration: every link's. */
export interface RoomCalibration {
  readonly version: number;
  /** ISO 8601 time it was made. */
  readonly created: string;
  readonly links: readonly LinkCalibration[];
}

/**
 * Unit complex factors exp(-j phase) of a link's chain phases: multiply each pair's samples by them
 * (`applyChainCorrection`, chains.ts).
 * @param phases per pair, radians
 * @returns interleaved complex, one per pair
 * @example
 * applyChainCorrection(window, chainFactors(link.chainPhases));
 */
export function chainFactors(phases: Float64Array): Float32Array {
  const out = new Float32Array(phases.length * 2);
  for (let q = 0; q < phases.length; q++) {
    out[2 * q] = Math.cos(phases[q]!);
    out[2 * q + 1] = -Math.sin(phases[q]!);
  }
  return out;
}

/** What {@link ChainPhaseFit.fit} found. */
export interface ChainPhaseResult {
  /** Per pair, radians, pair 0 at 0. */
  readonly phases: Float64Array;
  readonly focusBefore: number;
  readonly focusAfter: number;
}

/**
 * The chain phase fit of one link from windows with one person at a known floor point: see the
 * module comment. Allocates its buffers once; `add` allocates nothing.
 *
 * @example
 * const fit = new ChainPhaseFit(linkGeometry(tx, rx, f.subcarriers, centreHz));
 * fit.add(window, 2.4, 3.1);   // for every labelled window
 * const { phases } = fit.fit();
 */
export class ChainPhaseFit {
  private readonly pairs: number;
  private readonly nSub: number;
  /** Pair covariance, P x P complex interleaved (Hermitian; the full matrix is kept). */
  private readonly cov: Float64Array;
  /** conj steering of the current point, per subcarrier and pair: (k * P + q), interleaved. */
  private readonly steer: Float64Array;
  private readonly z: Float64Array;
  private count = 0;

  /**
   * @param geometry the link's antennas and subcarriers (the configured radios)
   * @param height height the people are steered to, metres; default CALIBRATION_HEIGHT_M
   */
  constructor(
    readonly geometry: LinkGeometry,
    readonly height = CALIBRATION_HEIGHT_M,
  ) {
    this.pairs = geometry.nRx * geometry.nTx;
    this.nSub = geometry.frequencies.length;
    this.cov = new Float64Array(2 * this.pairs * this.pairs);
    this.steer = new Float64Array(2 * this.nSub * this.pairs);
    this.z = new Float64Array(2 * this.pairs);
  }

  /** Windows added so far. */
  get windows(): number {
    return this.count;
  }

  /**
   * Adds one window in which the person stood at (x, y).
   * @param w the window's moving part (static channel removed), this link's layout
   * @param x floor point, metres
   * @param y floor point, metres
   * @throws RangeError when the window's layout is not the geometry's
   */
  add(w: MovingWindow, x: number, y: number): void {
    const { nRx, nTx, frequencies: fr, txPositions: tp, rxPositions: rp } = this.geometry;
    const P = this.pairs;
    const K = this.nSub;
    if (w.nRx !== nRx || w.nTx !== nTx || w.nSub !== K)
      throw new RangeError(`ChainPhaseFit: a ${w.nSub} x ${w.nRx} x ${w.nTx} window for a ${K} x ${nRx} x ${nTx} link`);
    const z0 = this.height;
    const st = this.steer;
    for (let m = 0; m < nRx; m++) {
      const dr = Math.hypot(rp[3 * m]! - x, rp[3 * m + 1]! - y, rp[3 * m + 2]! - z0);
      for (let n = 0; n < nTx; n++) {
        const L = dr + Math.hypot(tp[3 * n]! - x, tp[3 * n + 1]! - y, tp[3 * n + 2]! - z0);
        const q = m * nTx + n;
        for (let k = 0; k < K; k++) {
          const cycles = (fr[k]! * L) / SPEED_OF_LIGHT;
          const a = 2 * Math.PI * (cycles - Math.floor(cycles));
          st[2 * (k * P + q)] = Math.cos(a);
          st[2 * (k * P + q) + 1] = Math.sin(a);
        }
      }
    }
    const d = w.data;
    const per = K * P;
    const z = this.z;
    const C = this.cov;
    for (let s = 0; s < w.snapshots; s++) {
      z.fill(0);
      const base = 2 * s * per;
      for (let k = 0; k < K; k++) {
        for (let q = 0; q < P; q++) {
          const i = base + 2 * (k * P + q);
          const j = 2 * (k * P + q);
          const hr = d[i]!;
          const hi = d[i + 1]!;
          const cr = st[j]!;
          const ci = st[j + 1]!;
          z[2 * q] += hr * cr - hi * ci;
          z[2 * q + 1] += hr * ci + hi * cr;
        }
      }
      for (let a = 0; a < P; a++) {
        const ar = z[2 * a]!;
        const ai = z[2 * a + 1]!;
        for (let b = 0; b < P; b++) {
          const br = z[2 * b]!;
          const bi = z[2 * b + 1]!;
          // z_a conj(z_b)
          C[2 * (a * P + b)] += ar * br + ai * bi;
          C[2 * (a * P + b) + 1] += ai * br - ar * bi;
        }
      }
    }
    this.count++;
  }

  /**
   * The chain phases: the principal eigenvector's phases of the pair covariance.
   * @returns phases and the focus before and after
   * @throws RangeError when no window with power was added
   */
  fit(): ChainPhaseResult {
    const P = this.pairs;
    const C = this.cov;
    let trace = 0;
    for (let a = 0; a < P; a++) trace += C[2 * (a * P + a)]!;
    if (!(trace > 0)) throw new RangeError('ChainPhaseFit: no labelled window with moving power');
    let v = new Float64Array(2 * P);
    let u = new Float64Array(2 * P);
    for (let q = 0; q < P; q++) v[2 * q] = 1 / Math.sqrt(P);
    for (let it = 0; it < EIGEN_ITERATIONS; it++) {
      u.fill(0);
      for (let a = 0; a < P; a++) {
        for (let b = 0; b < P; b++) {
          const cr = C[2 * (a * P + b)]!;
          const ci = C[2 * (a * P + b) + 1]!;
          u[2 * a] += cr * v[2 * b]! - ci * v[2 * b + 1]!;
          u[2 * a + 1] += cr * v[2 * b + 1]! + ci * v[2 * b]!;
        }
      }
      let norm = 0;
      for (let i = 0; i < u.length; i++) norm += u[i]! * u[i]!;
      norm = Math.sqrt(norm);
      if (!(norm > 0)) break;
      for (let i = 0; i < u.length; i++) u[i]! /= norm;
      [v, u] = [u, v];
    }
    const ref = Math.atan2(v[1]!, v[0]!);
    const phases = new Float64Array(P);
    for (let q = 0; q < P; q++) phases[q] = wrap(Math.atan2(v[2 * q + 1]!, v[2 * q]!) - ref);
    return { phases, focusBefore: this.focus(new Float64Array(P)), focusAfter: this.focus(phases) };
  }

  /** c^H C c / (P trace C) for c = exp(j phases). */
  private focus(phases: Float64Array): number {
    const P = this.pairs;
    const C = this.cov;
    let num = 0;
    let trace = 0;
    for (let a = 0; a < P; a++) {
      trace += C[2 * (a * P + a)]!;
      for (let b = 0; b < P; b++) {
        // Re(conj(c_a) C_ab c_b) = Re(C_ab exp(j (phi_b - phi_a)))
        const ph = phases[b]! - phases[a]!;
        num += C[2 * (a * P + b)]! * Math.cos(ph) - C[2 * (a * P + b) + 1]! * Math.sin(ph);
      }
    }
    return trace > 0 ? num / (P * trace) : 0;
  }
}

function wrap(a: number): number {
  return a - 2 * Math.PI * Math.round(a / (2 * Math.PI));
}

/**
 * A room calibration as JSON text (the room model's `room_calibration` metadata): numbers to 7
 * significant digits, the static channel as a plain array.
 * @param c the calibration
 * @returns JSON text
 * @example
 * roomCalibrationToJson({ version: CALIBRATION_VERSION, created: new Date().toISOString(), links });
 */
export function roomCalibrationToJson(c: RoomCalibration): string {
  const num = (v: number) => Number(v.toPrecision(7));
  return JSON.stringify({
    version: c.version,
    created: c.created,
    links: c.links.map((l) => ({
      id: l.id,
      subcarriers: Array.from(l.subcarriers),
      nrx: l.nRx,
      ntx: l.nTx,
      chain_phases_rad: Array.from(l.chainPhases, num),
      static_channel: l.staticChannel ? Array.from(l.staticChannel, num) : null,
      windows: l.windows,
      focus_before: num(l.focusBefore),
      focus_after: num(l.focusAfter),
    })),
  });
}

/**
 * Reads a room calibration written by {@link roomCalibrationToJson}, checking every field.
 * @param text JSON text
 * @returns the calibration
 * @throws RangeError naming the field that is wrong
 * @example
 * const cal = parseRoomCalibration(model.metadata.room_calibration);
 */
export function parseRoomCalibration(text: string): RoomCalibration {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new RangeError(`room calibration: not JSON (${(e as Error).message})`);
  }
  const bad = (what: string): never => {
    throw new RangeError(`room calibration: ${what}`);
  };
  if (!v || typeof v !== 'object' || Array.isArray(v)) return bad('expected an object');
  const o = v as Record<string, unknown>;
  if (o.version !== CALIBRATION_VERSION) bad(`version ${JSON.stringify(o.version)}, this service reads ${CALIBRATION_VERSION}`);
  if (typeof o.created !== 'string') bad('created must be an ISO 8601 string');
  if (!Array.isArray(o.links) || o.links.length === 0 || o.links.length > 64) bad('links must be a list of 1-64 links');
  const ids = new Set<string>();
  const links = (o.links as unknown[]).map((raw, i): LinkCalibration => {
    const at = `links[${i}]`;
    if (!raw || typeof raw !== 'object') return bad(`${at} must be an object`);
    const l = raw as Record<string, unknown>;
    if (typeof l.id !== 'string' || l.id === '') bad(`${at}.id must be a link id`);
    if (ids.has(l.id as string)) bad(`${at}.id ${JSON.stringify(l.id)} is listed twice`);
    ids.add(l.id as string);
    const int = (x: unknown, lo: number, hi: number, name: string): number =>
      typeof x === 'number' && Number.isInteger(x) && x >= lo && x <= hi ? x : bad(`${at}.${name} must be an integer ${lo}-${hi}`);
    const nRx = int(l.nrx, 1, 8, 'nrx');
    const nTx = int(l.ntx, 1, 8, 'ntx');
    const subs = l.subcarriers;
    if (!Array.isArray(subs) || subs.length < 1 || subs.length > 2048 || subs.some((s) => !Number.isInteger(s) || Math.abs(s as number) > 1024))
      bad(`${at}.subcarriers must be 1-2048 subcarrier indices`);
    const nSub = (subs as number[]).length;
    const finite = (x: unknown, n: number, name: string): number[] =>
      Array.isArray(x) && x.length === n && x.every((e) => typeof e === 'number' && Number.isFinite(e))
        ? (x as number[])
        : bad(`${at}.${name} must be ${n} finite numbers`);
    const phases = finite(l.chain_phases_rad, nRx * nTx, 'chain_phases_rad');
    const stat = l.static_channel === null ? null : finite(l.static_channel, nSub * nRx * nTx * 2, 'static_channel');
    const windows = int(l.windows, 0, Number.MAX_SAFE_INTEGER, 'windows');
    const unit = (x: unknown, name: string): number => (typeof x === 'number' && x >= 0 && x <= 1.000001 ? x : bad(`${at}.${name} must be in [0, 1]`));
    return {
      id: l.id as string,
      subcarriers: Int16Array.from(subs as number[]),
      nRx,
      nTx,
      chainPhases: Float64Array.from(phases),
      staticChannel: stat ? Float32Array.from(stat) : null,
      windows,
      focusBefore: unit(l.focus_before, 'focus_before'),
      focusAfter: unit(l.focus_after, 'focus_after'),
    };
  });
  return { version: CALIBRATION_VERSION, created: o.created as string, links };
}

/**
 * Whether a link's frames have the layout a calibration was fitted for.
 * @param c the link's calibration
 * @param subcarriers the frames' subcarrier indices
 * @param nRx the frames' receive antennas
 * @param nTx the frames' transmit antennas
 * @returns true when antennas and subcarriers are the same
 */
export function calibrationFits(c: LinkCalibration, subcarriers: ArrayLike<number>, nRx: number, nTx: number): boolean {
  if (c.nRx !== nRx || c.nTx !== nTx || c.subcarriers.length !== subcarriers.length) return false;
  for (let k = 0; k < subcarriers.length; k++) if (c.subcarriers[k] !== subcarriers[k]) return false;
  return true;
}
