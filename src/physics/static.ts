/**
 * The empty room's static channel of one link (issue 19 item 1): the average of aligned packets
 * while the room is empty, and the reference every packet is aligned onto (align.ts).
 *
 * - Learning: the first packet is aligned blindly and starts the average; every later packet is
 *   aligned onto the current average (least squares, PacketAligner.alignTo) and, only while the
 *   caller says the room is empty, folded in with weight max(1 / n, dt / tauS): a plain mean over
 *   the first tauS seconds, then an exponential average with time constant tauS
 *   ({@link STATIC_TAU_S}, 60 s). While the room is occupied the channel is left exactly as it is.
 *   {@link StaticChannel.learn} does the same from a calibration recording (1-2 minutes of the
 *   empty room).
 * - Absolute delay (with the site known): the line-of-sight path between the centres of the tx
 *   and rx arrays has a known length ({@link losDelayS}), so the channel's linear phase is set so
 *   that its strongest delay component (the peak of the one-path least-squares fit
 *   sum over pairs |sum_k S exp(+j 2 pi idx_k 312.5 kHz tau)|^2, {@link strongestDelayS}) sits at
 *   the LoS delay; re-anchored every {@link ANCHOR_EVERY} learned packets. Packets aligned onto it
 *   then carry absolute delays. Measured (test/physics/static.test.ts, tx-rx1 of the default
 *   site, LoS 15.34 ns, 10 s of calibration at default impairments): the learned channel's slope
 *   matches the clean simulated channel's within 1.03 ns (30 subcarriers) / 0.85 ns (114) of delay
 *   in the ideal room and 1.38 / 1.31 ns in the 'room' preset (reflections inside the 50 ns / 25 ns
 *   resolution pull the fitted peak), against 16.4 ns without the anchor.
 * - Without the site (`losDelayS: null`), angles only: the channel keeps the blind alignment's
 *   frame (mean delay 0, no absolute delay); differences between packets and angles across
 *   antennas are still right, absolute path lengths are not.
 */

import type { Point3 } from './types.js';
import type { RadioConfig } from '../csi/radios.js';
import { SUBCARRIER_SPACING_HZ } from '../csi/frame.js';
import { SPEED_OF_LIGHT } from '../csi/radios.js';
import { PacketAligner, phaseSlope, type AlignEstimate, type GainMode } from './align.js';

/** Time constant of the static channel's slow update, seconds. */
export const STATIC_TAU_S = 60;

/** Learned packets between two re-anchorings of the absolute delay. */
export const ANCHOR_EVERY = 100;

/** Delays searched for the strongest component, +- seconds around the channel's mean delay. */
export const DELAY_SEARCH_S = 400e-9;

/**
 * Line-of-sight delay between two array centres.
 * @param tx the transmitter (a RadioConfig or any point, room metres)
 * @param rx the receiver
 * @returns distance / c, seconds
 * @example
 * losDelayS(DEFAULT_RADIOS[0], DEFAULT_RADIOS[1]) // 4.6 m: 15.3 ns
 */
export function losDelayS(tx: Point3 | RadioConfig, rx: Point3 | RadioConfig): number {
  return Math.hypot(tx.x - rx.x, tx.y - rx.y, tx.z - rx.z) / SPEED_OF_LIGHT;
}

/**
 * Delay of a channel's strongest component: the peak over tau of
 * sum over antenna pairs |sum_k H_k exp(+j 2 pi idx_k 312.5 kHz tau)|^2 (the least-squares fit of
 * one path with a free complex amplitude per pair), searched within +-DELAY_SEARCH_S of the
 * channel's mean delay on a grid of an eighth of the resolution, then refined by parabolas.
 * @param csi interleaved complex samples, CsiFrame order
 * @param subcarriers subcarrier indices
 * @param nPairs nRx * nTx
 * @returns the delay, seconds, in the packet's own frame (blindly aligned packets: near 0)
 * @example
 * strongestDelayS(staticChannel.channel, frame.subcarriers, 9) // ~ losDelayS(tx, rx) once anchored
 */
export function strongestDelayS(csi: ArrayLike<number>, subcarriers: Int16Array, nPairs: number): number {
  const nSub = subcarriers.length;
  const span = subcarriers[nSub - 1]! - subcarriers[0]!;
  const w = 2 * Math.PI * SUBCARRIER_SPACING_HZ;
  // The channel's mean delay (adjacent products): the centre of the search.
  const centre = -phaseSlope(csi, subcarriers, nPairs) / w;
  // One sin/cos per subcarrier and delay, shared by the antenna pairs.
  const sr = new Float64Array(nPairs);
  const si = new Float64Array(nPairs);
  const power = (tau: number): number => {
    sr.fill(0);
    si.fill(0);
    for (let k = 0; k < nSub; k++) {
      const a = w * subcarriers[k]! * tau;
      const c = Math.cos(a);
      const s = Math.sin(a);
      for (let p = 0, i = 2 * k * nPairs; p < nPairs; p++, i += 2) {
        sr[p] = sr[p]! + csi[i]! * c - csi[i + 1]! * s;
        si[p] = si[p]! + csi[i]! * s + csi[i + 1]! * c;
      }
    }
    let total = 0;
    for (let p = 0; p < nPairs; p++) total += sr[p]! * sr[p]! + si[p]! * si[p]!;
    return total;
  };
  let step = 1 / (8 * span * SUBCARRIER_SPACING_HZ);
  const n = Math.ceil(DELAY_SEARCH_S / step);
  let bestTau = centre;
  let best = -1;
  for (let i = -n; i <= n; i++) {
    const t = centre + i * step;
    const v = power(t);
    if (v > best) {
      best = v;
      bestTau = t;
    }
  }
  // Parabolic refinement, halving the step.
  for (let it = 0; it < 4; it++) {
    const a = power(bestTau - step);
    const c = power(bestTau + step);
    const den = a - 2 * best + c;
    if (den < 0) {
      const off = (0.5 * (a - c)) / den;
      if (Math.abs(off) <= 1) {
        const t = bestTau + off * step;
        const v = power(t);
        if (v > best) {
          best = v;
          bestTau = t;
        }
      }
    }
    step /= 2;
  }
  return bestTau;
}

/**
 * Adds a delay to a channel in place: multiplies subcarrier idx_k by exp(-j 2 pi idx_k 312.5 kHz
 * delayS) (the centre frequency's common phase is left alone).
 * @param csi interleaved complex samples, CsiFrame order (modified)
 * @param subcarriers subcarrier indices
 * @param nPairs nRx * nTx
 * @param delayS the delay to add, seconds (negative advances)
 * @example
 * shiftDelay(channel, subcarriers, 9, losDelayS(tx, rx) - strongestDelayS(channel, subcarriers, 9));
 */
export function shiftDelay(csi: Float32Array | Float64Array, subcarriers: Int16Array, nPairs: number, delayS: number): void {
  const w = -2 * Math.PI * SUBCARRIER_SPACING_HZ * delayS;
  for (let k = 0; k < subcarriers.length; k++) {
    const c = Math.cos(w * subcarriers[k]!);
    const s = Math.sin(w * subcarriers[k]!);
    for (let p = 0, i = 2 * k * nPairs; p < nPairs; p++, i += 2) {
      const hr = csi[i]!;
      const hi = csi[i + 1]!;
      csi[i] = hr * c - hi * s;
      csi[i + 1] = hr * s + hi * c;
    }
  }
}

/** Options of {@link StaticChannel}. */
export interface StaticChannelOptions {
  /** Subcarrier indices of the link's layout. */
  subcarriers: Int16Array;
  /** Receive antennas of the link. */
  nRx: number;
  /** Transmit antennas of the link. */
  nTx: number;
  /** Time constant of the slow update, seconds; default STATIC_TAU_S (60). */
  tauS?: number;
  /**
   * The line-of-sight delay between the array centres, seconds ({@link losDelayS} of the link's
   * radios), to anchor the absolute delay; null or unset: angles only (no absolute delay).
   */
  losDelayS?: number | null;
  /** Gain normalisation of the aligner; default 'median'. */
  gain?: GainMode;
}

/**
 * The empty room's static channel of one link, and the alignment of that link's packets onto it:
 * see the module comment.
 *
 * @example
 * const st = new StaticChannel({ subcarriers: f.subcarriers, nRx: f.nRx, nTx: f.nTx, losDelayS: losDelayS(tx, rx) });
 * st.learn(calibrationFrames);                  // 1-2 minutes of the empty room
 * const aligned = new Float32Array(f.csi.length);
 * st.process(f.csi, f.time, roomEmpty, aligned); // aligned onto the static channel
 * // moving part: aligned - st.channel
 */
export class StaticChannel {
  /** The static channel, interleaved complex in CsiFrame order (updated in place; after editing it by hand, call {@link anchor}). */
  readonly channel: Float32Array;
  /** Subcarrier indices of the layout. */
  readonly subcarriers: Int16Array;
  /** Receive antennas. */
  readonly nRx: number;
  /** Transmit antennas. */
  readonly nTx: number;
  /** Time constant of the slow update, seconds. */
  readonly tauS: number;
  /** The LoS delay the channel is anchored at, seconds; null: angles only. */
  readonly losDelayS: number | null;
  /** The aligner (its `estimate` is the last packet's correction). */
  readonly aligner: PacketAligner;
  private learned = 0;
  /** The channel's median amplitude while it is unchanged; NaN once it changes. */
  private channelMedian = NaN;
  private sinceAnchor = 0;
  private lastTime = NaN;

  /**
   * @param options layout, time constant and LoS delay
   * @throws RangeError on a bad layout or time constant
   */
  constructor(options: StaticChannelOptions) {
    const { subcarriers, nRx, nTx } = options;
    this.tauS = options.tauS ?? STATIC_TAU_S;
    if (!(this.tauS > 0)) throw new RangeError('static: tauS must be > 0');
    const los = options.losDelayS ?? null;
    if (los !== null && !(los >= 0 && los < 1e-5)) throw new RangeError('static: losDelayS must be in [0, 10 us)');
    this.losDelayS = los;
    this.subcarriers = subcarriers;
    this.nRx = nRx;
    this.nTx = nTx;
    this.aligner = new PacketAligner(subcarriers, nRx, nTx, options.gain ?? 'median');
    this.channel = new Float32Array(subcarriers.length * nRx * nTx * 2);
  }

  /** Packets learned into the channel since the last reset. */
  get packets(): number {
    return this.learned;
  }

  /** Whether the channel holds anything (at least one learned packet). */
  get ready(): boolean {
    return this.learned > 0;
  }

  /** Forgets the channel. */
  reset(): void {
    this.channel.fill(0);
    this.channelMedian = NaN;
    this.learned = 0;
    this.sinceAnchor = 0;
    this.lastTime = NaN;
  }

  /**
   * Aligns one packet (onto the channel once there is one, blindly before) and, when the room is
   * empty, folds it into the channel.
   * @param csi the packet, nSub * nRx * nTx * 2 values
   * @param time its epoch ms (for the update weight dt / tauS)
   * @param empty whether the room is empty now (the caller knows, e.g. from presence detection)
   * @param out receives the aligned packet (a preallocated buffer of csi's length)
   * @returns the aligner's correction for this packet (overwritten by the next call)
   * @example
   * st.process(frame.csi, frame.time, true, aligned);
   */
  process(csi: ArrayLike<number>, time: number, empty: boolean, out: Float32Array): AlignEstimate {
    let est: AlignEstimate;
    if (this.learned > 0) {
      // The channel's median amplitude changes only when the channel does (fold, anchor, reset).
      if (Number.isNaN(this.channelMedian)) this.channelMedian = this.aligner.median(this.channel);
      est = this.aligner.alignTo(csi, this.channel, out, this.channelMedian);
    } else est = this.aligner.align(csi, out);
    if (empty) this.fold(out, time);
    else this.lastTime = time;
    return est;
  }

  /**
   * Learns the channel from a calibration recording of the empty room (1-2 minutes), forgetting
   * what it held, and anchors it.
   * @param frames the recording's packets of this link, in time order (`csi`, `time`)
   * @returns the number of packets learned
   * @example
   * st.learn(framesOfLink('tx-rx1'));
   */
  learn(frames: Iterable<{ readonly csi: Float32Array; readonly time: number }>): number {
    this.reset();
    const scratch = new Float32Array(this.channel.length);
    for (const f of frames) this.process(f.csi, f.time, true, scratch);
    this.anchor();
    return this.learned;
  }

  /**
   * Sets the channel's absolute delay: moves its strongest component to the LoS delay (no-op in the
   * angles-only mode or before any packet).
   * @returns the delay shift applied, seconds (0 when none)
   * @example
   * st.anchor(); // after editing st.channel by hand
   */
  anchor(): number {
    this.sinceAnchor = 0;
    this.channelMedian = NaN;
    if (this.losDelayS === null || this.learned === 0) return 0;
    const np = this.nRx * this.nTx;
    const shift = this.losDelayS - strongestDelayS(this.channel, this.subcarriers, np);
    shiftDelay(this.channel, this.subcarriers, np, shift);
    return shift;
  }

  /** Folds an aligned packet into the channel. */
  private fold(aligned: Float32Array, time: number): void {
    const dt = Number.isFinite(this.lastTime) ? Math.min(Math.max((time - this.lastTime) / 1000, 0), 1) : 0;
    this.lastTime = time;
    this.learned++;
    const a = Math.max(1 / this.learned, dt / this.tauS);
    const ch = this.channel;
    for (let i = 0; i < ch.length; i++) ch[i] = ch[i]! + a * (aligned[i]! - ch[i]!);
    this.channelMedian = NaN;
    if (++this.sinceAnchor >= ANCHOR_EVERY || this.learned === 1) this.anchor();
  }
}
