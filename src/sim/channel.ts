/**
 * The multipath channel between a transmit and a receive antenna array:
 *
 *     H[k, m, n] = sum over paths p of a_p exp(-j 2 pi f_k tau_p,m,n),   f_k = f_c + s_k * 312.5 kHz
 *
 * with s_k the layout's subcarrier indices and tau = path length / c. Paths:
 * - line of sight tx n -> rx m, amplitude lambda / (4 pi d) (Friis, isotropic antennas);
 * - first-order reflections off the four walls, the floor and the ceiling by the image method
 *   (mirror the transmit antenna in the surface), amplitude Gamma * lambda / (4 pi d_image);
 * - one path per body scatterer tx n -> scatterer -> rx m, amplitude
 *   (lambda / (4 pi)) * w / (d1 d2), where w = sqrt(sigma / 4 pi) carries the scatterer's radar
 *   cross-section (bistatic radar equation; see skeleton.ts).
 * lambda is the centre wavelength for every subcarrier (the free-space loss changes by < 1 % across
 * a 40 MHz channel; the phase, which matters, uses each subcarrier's own frequency). Surface
 * reflection coefficients are real and frequency-flat. By default the antennas are isotropic and
 * there are no multiple bounces; the 'room' realism (room.ts) adds element patterns
 * (`patterns`, applied to every scatterer here), second-order reflections, furniture and body
 * shadowing through `addPath` and a static base of its own (`compute`'s `base`). Paths via a wall
 * and a body and mutual coupling are not modelled.
 *
 * The static paths (line of sight and walls) do not change while the geometry stays fixed, so they
 * are summed once. Per body scatterer and frame the cost is one distance and two phasors (base and
 * one-subcarrier step) per antenna, then one complex multiply-add per subcarrier and antenna pair:
 * exp(-j 2 pi f tau) factors into a tx leg and an rx leg, and consecutive subcarriers differ by a
 * constant factor exp(-j 2 pi (step * 312.5 kHz) tau), so no sin/cos is evaluated per subcarrier.
 */

import { elementGain, type ElementPattern } from './antenna.js';

import { SUBCARRIER_SPACING_HZ } from '../csi/frame.js';
import { SPEED_OF_LIGHT } from '../csi/radios.js';

export { SPEED_OF_LIGHT, SUBCARRIER_SPACING_HZ };

/** Room box [0, width] x [0, depth] x [0, height] with real amplitude reflection coefficients. */
export interface RoomSurfaces {
  width: number;
  depth: number;
  height: number;
  /** Walls x = 0, x = width, y = 0, y = depth. 0 removes the wall paths. */
  wall: number;
  floor: number;
  ceiling: number;
}

export interface ChannelConfig {
  /** Centre frequency (subcarrier index 0), Hz. */
  centreHz: number;
  /** Subcarrier indices, strictly increasing. */
  subcarriers: Int16Array;
  /** Transmit antenna positions, nTx * 3 (x, y, z), metres. */
  tx: Float64Array;
  /** Receive antenna positions, nRx * 3, metres. */
  rx: Float64Array;
  /** Reflecting room; null or absent for free space. */
  room?: RoomSurfaces | null;
  /** Include the line-of-sight path (default true). */
  los?: boolean;
  /**
   * Shortest leg length used in a scatterer's amplitude, metres (default 0.3): closer than that the
   * far-field point-scatterer model does not hold, and 1/(d1 d2) would blow up next to an antenna.
   */
  minLeg?: number;
  /**
   * Element patterns of the transmit and receive arrays, applied to every scatterer's legs
   * (antenna.ts); null or absent for isotropic elements (the static paths built here stay
   * isotropic: the 'room' realism builds its own).
   */
  patterns?: { tx: ElementPattern; rx: ElementPattern } | null;
}

/**
 * Computes CSI matrices for a fixed antenna geometry and moving scatterers.
 *
 * Output layout is CsiFrame's: complex index c = (sc * nRx + rx) * nTx + tx, re at 2c, im at 2c + 1.
 *
 * @example
 * const ch = new ChannelModel({ centreHz: 5.18e9, subcarriers, tx, rx, room });
 * const H = new Float64Array(ch.size);
 * ch.compute(scatterers, count, H); // scatterers: count * (x, y, z, w)
 */
export class ChannelModel {
  readonly nSub: number;
  readonly nRx: number;
  readonly nTx: number;
  /** Length of an output buffer: nSub * nRx * nTx * 2. */
  readonly size: number;
  /** Centre wavelength, metres. */
  readonly lambda: number;
  /** Frequency of the first subcarrier, Hz. */
  readonly firstHz: number;
  /** Sum of the static paths (line of sight and reflections), same layout as the output. */
  readonly staticH: Float64Array;
  private readonly centreHz: number;
  private readonly tx: Float64Array;
  private readonly rx: Float64Array;
  private readonly minLeg: number;
  private readonly patTx: ElementPattern | null;
  private readonly patRx: ElementPattern | null;
  /** Runs of equal subcarrier steps: runLen[r] steps of runStep[r] subcarrier indices each. */
  private readonly runLen: Int32Array;
  private readonly runSlot: Int32Array;
  private readonly stepValues: Int32Array;
  // Scratch, reused every frame.
  private readonly txBr: Float64Array;
  private readonly txBi: Float64Array;
  private readonly txSr: Float64Array;
  private readonly txSi: Float64Array;
  /** 1 / leg length (clamped at minLeg) per transmit antenna. */
  private readonly txD: Float64Array;
  private readonly rxBr: Float64Array;
  private readonly rxBi: Float64Array;
  private readonly rxSr: Float64Array;
  private readonly rxSi: Float64Array;
  /** 1 / leg length (clamped at minLeg) per receive antenna. */
  private readonly rxD: Float64Array;
  /** Per antenna pair: path value at the first subcarrier and one-index step phasor. */
  private readonly pzr: Float64Array;
  private readonly pzi: Float64Array;
  private readonly psr: Float64Array;
  private readonly psi: Float64Array;
  /** Per antenna pair and distinct step: the step phasor raised to that step. */
  private readonly wr: Float64Array;
  private readonly wi: Float64Array;
  /** Distance between consecutive subcarriers of one antenna pair in the output, in doubles. */
  private readonly stride: number;

  /**
   * @param cfg frequencies, antenna positions, room
   */
  constructor(cfg: ChannelConfig) {
    const sc = cfg.subcarriers;
    if (sc.length === 0) throw new RangeError('channel: no subcarriers');
    for (let i = 1; i < sc.length; i++) {
      if (!(sc[i]! > sc[i - 1]!)) throw new RangeError('channel: subcarrier indices must be strictly increasing');
    }
    if (cfg.tx.length === 0 || cfg.tx.length % 3 !== 0) throw new RangeError('channel: tx must hold x, y, z per antenna');
    if (cfg.rx.length === 0 || cfg.rx.length % 3 !== 0) throw new RangeError('channel: rx must hold x, y, z per antenna');
    if (!(cfg.centreHz > 0)) throw new RangeError('channel: centreHz must be positive');
    this.nSub = sc.length;
    this.nTx = cfg.tx.length / 3;
    this.nRx = cfg.rx.length / 3;
    this.size = this.nSub * this.nRx * this.nTx * 2;
    this.centreHz = cfg.centreHz;
    this.lambda = SPEED_OF_LIGHT / cfg.centreHz;
    this.firstHz = cfg.centreHz + sc[0]! * SUBCARRIER_SPACING_HZ;
    this.tx = Float64Array.from(cfg.tx);
    this.rx = Float64Array.from(cfg.rx);
    this.minLeg = cfg.minLeg ?? 0.3;
    const pat = cfg.patterns ?? null;
    this.patTx = pat !== null && pat.tx.kind !== 'isotropic' ? pat.tx : null;
    this.patRx = pat !== null && pat.rx.kind !== 'isotropic' ? pat.rx : null;

    // Group the subcarrier steps into runs so the inner loop has a constant step phasor.
    const lens: number[] = [];
    const slots: number[] = [];
    const values: number[] = [];
    for (let i = 1; i < sc.length; i++) {
      const step = sc[i]! - sc[i - 1]!;
      let slot = values.indexOf(step);
      if (slot < 0) {
        slot = values.length;
        values.push(step);
      }
      if (slots.length > 0 && slots[slots.length - 1] === slot) lens[lens.length - 1]!++;
      else {
        lens.push(1);
        slots.push(slot);
      }
    }
    this.runLen = Int32Array.from(lens);
    this.runSlot = Int32Array.from(slots);
    this.stepValues = Int32Array.from(values);

    this.txBr = new Float64Array(this.nTx);
    this.txBi = new Float64Array(this.nTx);
    this.txSr = new Float64Array(this.nTx);
    this.txSi = new Float64Array(this.nTx);
    this.txD = new Float64Array(this.nTx);
    this.rxBr = new Float64Array(this.nRx);
    this.rxBi = new Float64Array(this.nRx);
    this.rxSr = new Float64Array(this.nRx);
    this.rxSi = new Float64Array(this.nRx);
    this.rxD = new Float64Array(this.nRx);
    const nPairs = this.nRx * this.nTx;
    this.pzr = new Float64Array(nPairs);
    this.pzi = new Float64Array(nPairs);
    this.psr = new Float64Array(nPairs);
    this.psi = new Float64Array(nPairs);
    this.wr = new Float64Array(nPairs * Math.max(1, values.length));
    this.wi = new Float64Array(nPairs * Math.max(1, values.length));

    this.stride = this.nRx * this.nTx * 2;
    this.staticH = new Float64Array(this.size);
    this.buildStatic(cfg.los ?? true, cfg.room ?? null);
  }

  /**
   * Frequency of a subcarrier.
   * @param subcarrierIndex index relative to the centre (e.g. -28)
   * @returns Hz
   */
  frequency(subcarrierIndex: number): number {
    return this.centreHz + subcarrierIndex * SUBCARRIER_SPACING_HZ;
  }

  /**
   * Mean |H|^2 of the static channel over all subcarriers and antenna pairs (0 in free space
   * without line of sight).
   * @returns the mean power, linear
   */
  staticPower(): number {
    let p = 0;
    const h = this.staticH;
    for (let i = 0; i < h.length; i += 2) p += h[i]! * h[i]! + h[i + 1]! * h[i + 1]!;
    return p / (h.length / 2);
  }

  /**
   * The channel for the current scatterer positions: static paths plus one path per scatterer.
   * @param scat count * 4 values (x, y, z, weight)
   * @param count number of scatterers
   * @param out receives the channel (length `size`)
   * @param base the static channel to start from (default `staticH`)
   */
  compute(scat: Float64Array, count: number, out: Float64Array, base: Float64Array = this.staticH): void {
    out.set(base);
    const amp0 = this.lambda / (4 * Math.PI);
    for (let s = 0; s < count; s++) {
      const w = scat[4 * s + 3]!;
      if (w === 0) continue;
      this.addScatterer(scat[4 * s]!, scat[4 * s + 1]!, scat[4 * s + 2]!, amp0 * w, out);
    }
  }

  /**
   * Adds one scattered path tx -> (x, y, z) -> rx with amplitude scale / (d1 d2).
   * @param x scatterer x
   * @param y scatterer y
   * @param z scatterer z
   * @param scale amplitude numerator, (lambda / 4 pi) * weight
   * @param out channel accumulator
   */
  addScatterer(x: number, y: number, z: number, scale: number, out: Float64Array): void {
    const nTx = this.nTx;
    const nRx = this.nRx;
    const tx = this.tx;
    const rx = this.rx;
    const f0c = this.firstHz / SPEED_OF_LIGHT;
    const dfc = SUBCARRIER_SPACING_HZ / SPEED_OF_LIGHT;
    const minLeg = this.minLeg;
    const txD = this.txD;
    const rxD = this.rxD;
    for (let n = 0; n < nTx; n++) {
      const dx = x - tx[3 * n]!;
      const dy = y - tx[3 * n + 1]!;
      const dz = z - tx[3 * n + 2]!;
      const d = Math.sqrt(dx * dx + dy * dy + dz * dz);
      txD[n] = 1 / (d < minLeg ? minLeg : d);
      if (this.patTx !== null && d > 0) txD[n] *= elementGain(this.patTx, dx, dy, dz, d);
      legPhasor(d, f0c, dfc, this.txBr, this.txBi, this.txSr, this.txSi, n);
    }
    for (let m = 0; m < nRx; m++) {
      const dx = x - rx[3 * m]!;
      const dy = y - rx[3 * m + 1]!;
      const dz = z - rx[3 * m + 2]!;
      const d = Math.sqrt(dx * dx + dy * dy + dz * dz);
      rxD[m] = 1 / (d < minLeg ? minLeg : d);
      if (this.patRx !== null && d > 0) rxD[m] *= elementGain(this.patRx, dx, dy, dz, d);
      legPhasor(d, f0c, dfc, this.rxBr, this.rxBi, this.rxSr, this.rxSi, m);
    }
    const txBr = this.txBr;
    const txBi = this.txBi;
    const txSr = this.txSr;
    const txSi = this.txSi;
    const rxBr = this.rxBr;
    const rxBi = this.rxBi;
    const rxSr = this.rxSr;
    const rxSi = this.rxSi;
    const zr = this.pzr;
    const zi = this.pzi;
    const sr = this.psr;
    const si = this.psi;
    for (let m = 0; m < nRx; m++) {
      for (let n = 0; n < nTx; n++) {
        const p = m * nTx + n;
        const a = scale * txD[n]! * rxD[m]!;
        zr[p] = a * (txBr[n]! * rxBr[m]! - txBi[n]! * rxBi[m]!);
        zi[p] = a * (txBr[n]! * rxBi[m]! + txBi[n]! * rxBr[m]!);
        sr[p] = txSr[n]! * rxSr[m]! - txSi[n]! * rxSi[m]!;
        si[p] = txSr[n]! * rxSi[m]! + txSi[n]! * rxSr[m]!;
      }
    }
    this.walkPairs(out);
  }

  /**
   * Adds one path given per antenna pair: amp[p] exp(-j 2 pi f_k len[p] / c) at every subcarrier,
   * for pair p = m * nTx + n. The caller works out the geometry (lengths, reflection coefficients,
   * element gains); this does the stepping across subcarriers.
   * @param len path length per antenna pair, metres (nRx * nTx)
   * @param amp amplitude per antenna pair, linear (nRx * nTx)
   * @param out channel accumulator (length `size`)
   */
  addPath(len: Float64Array, amp: Float64Array, out: Float64Array): void {
    const f0c = this.firstHz / SPEED_OF_LIGHT;
    const dfc = SUBCARRIER_SPACING_HZ / SPEED_OF_LIGHT;
    const nPairs = this.nRx * this.nTx;
    for (let p = 0; p < nPairs; p++) {
      legPhasor(len[p]!, f0c, dfc, this.pzr, this.pzi, this.psr, this.psi, p);
      this.pzr[p] *= amp[p]!;
      this.pzi[p] *= amp[p]!;
    }
    this.walkPairs(out);
  }

  /**
   * Accumulates, for every antenna pair p, z_k = z_0 * prod(step phasors) over the subcarriers,
   * from z_0 = (pzr, pzi)[p] and the one-index step (psr, psi)[p].
   *
   * One complex multiply per subcarrier depends on the previous one, so a single chain is bound
   * by multiply latency; three pairs are walked side by side to give the CPU independent work.
   */
  private walkPairs(out: Float64Array): void {
    const nPairs = this.nRx * this.nTx;
    const steps = this.stepValues;
    const nV = steps.length;
    const wr = this.wr;
    const wi = this.wi;
    const sr = this.psr;
    const si = this.psi;
    for (let p = 0; p < nPairs; p++) {
      for (let v = 0; v < nV; v++) {
        // Integer power of the one-index step by repeated multiplication (steps are 1, 2 or 4).
        const r1 = sr[p]!;
        const i1 = si[p]!;
        let pr = r1;
        let pi = i1;
        for (let e = steps[v]!; e > 1; e--) {
          const t = pr * r1 - pi * i1;
          pi = pr * i1 + pi * r1;
          pr = t;
        }
        wr[p * nV + v] = pr;
        wi[p * nV + v] = pi;
      }
    }
    let p = 0;
    for (; p + 3 <= nPairs; p += 3) this.walk3(p, out);
    for (; p < nPairs; p++) this.walk1(p, out);
  }

  private walk3(p: number, out: Float64Array): void {
    const zr = this.pzr;
    const zi = this.pzi;
    const wr = this.wr;
    const wi = this.wi;
    const nV = this.stepValues.length;
    let ar = zr[p]!;
    let ai = zi[p]!;
    let br = zr[p + 1]!;
    let bi = zi[p + 1]!;
    let cr = zr[p + 2]!;
    let ci = zi[p + 2]!;
    const stride = this.stride;
    let idx = p * 2;
    out[idx] += ar;
    out[idx + 1] += ai;
    out[idx + 2] += br;
    out[idx + 3] += bi;
    out[idx + 4] += cr;
    out[idx + 5] += ci;
    const runLen = this.runLen;
    const runSlot = this.runSlot;
    const nRuns = runLen.length;
    for (let r = 0; r < nRuns; r++) {
      const slot = runSlot[r]!;
      const war = wr[p * nV + slot]!;
      const wai = wi[p * nV + slot]!;
      const wbr = wr[(p + 1) * nV + slot]!;
      const wbi = wi[(p + 1) * nV + slot]!;
      const wcr = wr[(p + 2) * nV + slot]!;
      const wci = wi[(p + 2) * nV + slot]!;
      for (let j = runLen[r]!; j > 0; j--) {
        const ta = ar * war - ai * wai;
        ai = ar * wai + ai * war;
        ar = ta;
        const tb = br * wbr - bi * wbi;
        bi = br * wbi + bi * wbr;
        br = tb;
        const tc = cr * wcr - ci * wci;
        ci = cr * wci + ci * wcr;
        cr = tc;
        idx += stride;
        out[idx] += ar;
        out[idx + 1] += ai;
        out[idx + 2] += br;
        out[idx + 3] += bi;
        out[idx + 4] += cr;
        out[idx + 5] += ci;
      }
    }
  }

  private walk1(p: number, out: Float64Array): void {
    const wr = this.wr;
    const wi = this.wi;
    const nV = this.stepValues.length;
    let ar = this.pzr[p]!;
    let ai = this.pzi[p]!;
    const stride = this.stride;
    let idx = p * 2;
    out[idx] += ar;
    out[idx + 1] += ai;
    const runLen = this.runLen;
    const runSlot = this.runSlot;
    const nRuns = runLen.length;
    for (let r = 0; r < nRuns; r++) {
      const slot = runSlot[r]!;
      const war = wr[p * nV + slot]!;
      const wai = wi[p * nV + slot]!;
      for (let j = runLen[r]!; j > 0; j--) {
        const ta = ar * war - ai * wai;
        ai = ar * wai + ai * war;
        ar = ta;
        idx += stride;
        out[idx] += ar;
        out[idx + 1] += ai;
      }
    }
  }

  private buildStatic(los: boolean, room: RoomSurfaces | null): void {
    const amp0 = this.lambda / (4 * Math.PI);
    const f0c = this.firstHz / SPEED_OF_LIGHT;
    const dfc = SUBCARRIER_SPACING_HZ / SPEED_OF_LIGHT;
    const br = new Float64Array(1);
    const bi = new Float64Array(1);
    const sr = new Float64Array(1);
    const si = new Float64Array(1);
    // One path at a time through walkPairs: every other pair gets a zero amplitude.
    const addDirect = (n: number, m: number, sx: number, sy: number, sz: number, gain: number): void => {
      if (gain === 0) return;
      const dx = sx - this.rx[3 * m]!;
      const dy = sy - this.rx[3 * m + 1]!;
      const dz = sz - this.rx[3 * m + 2]!;
      const d = Math.sqrt(dx * dx + dy * dy + dz * dz);
      if (d === 0) throw new RangeError('channel: a transmit and a receive antenna coincide');
      legPhasor(d, f0c, dfc, br, bi, sr, si, 0);
      const a = (gain * amp0) / d;
      this.pzr.fill(0);
      this.pzi.fill(0);
      this.psr.fill(1);
      this.psi.fill(0);
      const p = m * this.nTx + n;
      this.pzr[p] = a * br[0]!;
      this.pzi[p] = a * bi[0]!;
      this.psr[p] = sr[0]!;
      this.psi[p] = si[0]!;
      this.walkPairs(this.staticH);
    };
    for (let n = 0; n < this.nTx; n++) {
      const x = this.tx[3 * n]!;
      const y = this.tx[3 * n + 1]!;
      const z = this.tx[3 * n + 2]!;
      for (let m = 0; m < this.nRx; m++) {
        if (los) addDirect(n, m, x, y, z, 1);
        if (room !== null) {
          addDirect(n, m, -x, y, z, room.wall);
          addDirect(n, m, 2 * room.width - x, y, z, room.wall);
          addDirect(n, m, x, -y, z, room.wall);
          addDirect(n, m, x, 2 * room.depth - y, z, room.wall);
          addDirect(n, m, x, y, -z, room.floor);
          addDirect(n, m, x, y, 2 * room.height - z, room.ceiling);
        }
      }
    }
  }
}

/**
 * exp(-j 2 pi f0 d / c) and exp(-j 2 pi df d / c) for one leg of length d.
 *
 * The base phase is reduced to a fraction of a cycle (d f0 / c is ~100 cycles; the fraction is
 * exact to ~1e-14 cycles), then to the nearest quarter cycle, leaving |r| <= pi/4, where the Taylor
 * series of sin (to r^15) and cos (to r^16) are exact to double precision (next terms < 5e-17).
 * Math.sin/cos would give the same values but cost several times more, and this runs six times per
 * scatterer per frame.
 * The step angle is tiny (0.0066 rad per metre for 312.5 kHz), so its series to the r^11 / r^10
 * terms is exact to double precision below 0.2 rad (legs up to 30 m); longer legs use Math.sin/cos.
 */
function legPhasor(d: number, f0c: number, dfc: number, br: Float64Array, bi: Float64Array, sr: Float64Array, si: Float64Array, i: number): void {
  const cycles = d * f0c;
  const frac = cycles - Math.floor(cycles);
  const q = Math.round(frac * 4); // quadrant 0..4
  const r = (frac - q * 0.25) * (2 * Math.PI);
  const z = r * r;
  const sn = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * (S6 + z * S7))))));
  const cs = 1 + z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * (C6 + z * (C7 + z * C8)))))));
  // angle = 2 pi frac = q pi/2 + r; the phasor is exp(-j angle) = cos(angle) - j sin(angle).
  let c: number;
  let s: number;
  switch (q & 3) {
    case 0:
      c = cs;
      s = sn;
      break;
    case 1:
      c = -sn;
      s = cs;
      break;
    case 2:
      c = -cs;
      s = -sn;
      break;
    default:
      c = sn;
      s = -cs;
      break;
  }
  br[i] = c;
  bi[i] = -s;
  const b = -2 * Math.PI * d * dfc;
  if (b > -0.2) {
    const b2 = b * b;
    sr[i] = 1 + b2 * (C1 + b2 * (C2 + b2 * (C3 + b2 * (C4 + b2 * C5))));
    si[i] = b + b * b2 * (S1 + b2 * (S2 + b2 * (S3 + b2 * (S4 + b2 * S5))));
  } else {
    sr[i] = Math.cos(b);
    si[i] = Math.sin(b);
  }
}

// Taylor coefficients of sin (r^3..r^15) and cos (r^2..r^16): (-1)^k / n!.
const S1 = -1 / 6;
const S2 = 1 / 120;
const S3 = -1 / 5040;
const S4 = 1 / 362880;
const S5 = -1 / 39916800;
const S6 = 1 / 6227020800;
const S7 = -1 / 1307674368000;
const C1 = -1 / 2;
const C2 = 1 / 24;
const C3 = -1 / 720;
const C4 = 1 / 40320;
const C5 = -1 / 3628800;
const C6 = 1 / 479001600;
const C7 = -1 / 87178291200;
const C8 = 1 / 20922789888000;
