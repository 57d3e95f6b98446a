/**
 * One link's front end (issue 19 item 1), as the `floorMap` stage and room calibration both run
 * it: the link's geometry from the site's radios and its first frame, the empty room's static
 * channel (static.ts, anchored at the line-of-sight delay), the ring of aligned packets
 * (window.ts), and the moving window handed out minus the static channel (minus the window's mean
 * while the room is still being learned), with the chain correction (chains.ts) when it has one.
 *
 * What the callers do with the window (beamforming, Doppler, fitting chain phases) stays with them.
 */

import type { CsiFrame } from '../csi/frame.js';
import type { SiteLink } from '../csi/radios.js';
import { calibrationFits, chainFactors, type RoomCalibration } from './calibration.js';
import { applyChainCorrection, chainCorrection, type ChainRoom } from './chains.js';
import { centreFrequencyHz, linkGeometry, type LinkGeometry } from './geometry.js';
import { losDelayS, StaticChannel } from './static.js';
import type { MovingWindow } from './types.js';
import { MovingWindows, SHORT_WINDOW } from './window.js';

/** Channel assumed for frames that do not say theirs (NaN): 36, the 5 GHz channel the default arrays are spaced for. */
export const DEFAULT_CHANNEL = 36;
/** A silence longer than this (or time going back) empties a link's window ring, ms. */
export const GAP_MS = 1000;
/** A link whose newest packet is older than this before the primary window's last packet is left out of the map, ms. */
export const STALE_MS = 1000;

/** Options of {@link LinkFrontEnd}. */
export interface LinkFrontEndOptions {
  /** Ms from the link's first packet taken as the empty room (learned, then frozen); default 0: none (the window mean is taken away until a static channel is given). */
  learnMs?: number;
  /**
   * The room's calibration: the link's entry (same id, antennas and subcarriers) gives the
   * recorded empty room (nothing to learn) and the chain phases (applied from the first window).
   */
  calibration?: RoomCalibration | null;
  /** A recorded empty room's static channel (e.g. room calibration's own `--empty` pass), when the calibration gives none. */
  emptyRoom?: Float32Array | null;
  /**
   * Fit the chain phases blindly from the learned static channel once learned (chains.ts): against
   * the line of sight and, with `room` given, its walls' reflections too; default false.
   */
  chainCalibration?: boolean;
  /** The room's walls for the chain fit (`environment.site` room_width x room_depth); null or unset: the line of sight only. */
  room?: ChainRoom | null;
  /** A silence longer than this, ms (or time going back), empties the ring (the static channel is kept); default {@link GAP_MS}; null: never. */
  gapMs?: number | null;
}

/**
 * One link's front end: see the module comment. Nothing is allocated per packet (the aligner, the
 * ring and the window buffers are built with it); a window is the small MovingWindow object over a
 * buffer it owns, valid until the next window of the same kind.
 *
 * @example
 * const fe = new LinkFrontEnd(link, firstFrame, { learnMs: 10_000 });
 * for (const f of framesOfLink) {
 *   if (!fe.fits(f)) fe = new LinkFrontEnd(link, f, { learnMs: 10_000 }); // a new layout: start again
 *   fe.push(f.csi, f.time);
 *   const w = fe.take(); // every 16 packets once 64 are in
 *   if (w) beamform(w);
 * }
 */
export class LinkFrontEnd {
  /** The link's antennas and subcarrier frequencies (the frames' antenna counts win over the radios'). */
  readonly geometry: LinkGeometry;
  /** Layout of the frames it was built for (see {@link fits}). */
  readonly subcarriers: Int16Array;
  readonly nRx: number;
  readonly nTx: number;
  readonly channel: number;
  readonly bandwidthMhz: number;
  readonly staticChannel: StaticChannel;
  readonly windows: MovingWindows;
  /** The last packet aligned onto the static channel. */
  readonly aligned: Float32Array;
  /** Whether the static channel comes from a recorded empty room (nothing to learn). */
  readonly recordedEmpty: boolean;
  /** Whether the chain phases come from the room calibration (applied from the first window). */
  readonly calibratedChains: boolean;
  /** Per-pair chain phase correction: the room calibration's, or fitted from the static channel once learned; null before (or never). */
  chains: Float32Array | null = null;
  /** Epoch ms of the first and the newest packet (NaN before any). */
  firstTime = NaN;
  lastTime = NaN;
  /** Packets pushed since it was built. */
  packets = 0;
  private readonly learnMs: number;
  private readonly gapMs: number | null;
  private readonly chainCalibration: boolean;
  private readonly room: ChainRoom | null;
  /** The last SHORT_WINDOW packets, for {@link latest}. */
  private readonly buffer: Float32Array;

  /**
   * @param link the site's link (its radios)
   * @param f the link's first frame of this layout (subcarriers, antennas, channel, bandwidth)
   * @param options learning, recorded empty room, chain correction, gap
   * @throws RangeError for a channel whose centre frequency is not placed (centreFrequencyHz)
   */
  constructor(
    readonly link: SiteLink,
    f: CsiFrame,
    options: LinkFrontEndOptions = {},
  ) {
    this.learnMs = options.learnMs ?? 0;
    this.gapMs = options.gapMs === undefined ? GAP_MS : options.gapMs;
    this.chainCalibration = options.chainCalibration ?? false;
    this.room = options.room ?? null;
    this.subcarriers = Int16Array.from(f.subcarriers);
    this.nRx = f.nRx;
    this.nTx = f.nTx;
    this.channel = f.channel;
    this.bandwidthMhz = f.bandwidthMhz;
    // The frames' antenna counts win over the radios' (as the simulator's nrx / ntx do): same centre, spacing and axis.
    const tx = f.nTx === link.tx.antennas ? link.tx : { ...link.tx, antennas: f.nTx };
    const rx = f.nRx === link.rx.antennas ? link.rx : { ...link.rx, antennas: f.nRx };
    const centre = centreFrequencyHz(Number.isFinite(f.channel) ? f.channel : DEFAULT_CHANNEL, f.bandwidthMhz, f.nSub);
    this.staticChannel = new StaticChannel({ subcarriers: this.subcarriers, nRx: f.nRx, nTx: f.nTx, losDelayS: losDelayS(tx, rx) });
    this.windows = new MovingWindows({ nSub: f.nSub, nRx: f.nRx, nTx: f.nTx });
    this.aligned = new Float32Array(f.csi.length);
    this.buffer = new Float32Array(SHORT_WINDOW * f.csi.length);
    this.geometry = linkGeometry(tx, rx, this.subcarriers, centre);
    const cal = options.calibration?.links.find((c) => c.id === link.id && calibrationFits(c, f.subcarriers, f.nRx, f.nTx));
    this.calibratedChains = cal !== undefined;
    if (cal) this.chains = chainFactors(cal.chainPhases);
    const empty = cal?.staticChannel ?? options.emptyRoom ?? null;
    this.recordedEmpty = empty !== null && empty.length === f.csi.length;
    if (this.recordedEmpty) this.staticChannel.learn([{ csi: empty!, time: f.time }]);
  }

  /** Whether the link is still taking its packets as the empty room (its newest packet within learnMs of its first). */
  get learning(): boolean {
    return !this.recordedEmpty && this.learnMs > 0 && this.lastTime - this.firstTime < this.learnMs;
  }

  /** Whether its windows are taken minus the static channel: one is there and it is no longer learning (else minus the window's mean). */
  get ready(): boolean {
    return !this.learning && this.staticChannel.ready;
  }

  /** Whether `f` has this link's layout (antennas, subcarriers, channel, bandwidth); when not, build a new one from `f`. No allocation. */
  fits(f: CsiFrame): boolean {
    if (f.nRx !== this.nRx || f.nTx !== this.nTx || f.subcarriers.length !== this.subcarriers.length) return false;
    if (!sameNumber(f.channel, this.channel) || !sameNumber(f.bandwidthMhz, this.bandwidthMhz)) return false;
    const s = f.subcarriers;
    for (let k = 0; k < s.length; k++) if (s[k] !== this.subcarriers[k]) return false;
    return f.csi.length === this.aligned.length;
  }

  /**
   * Takes one packet: after a gap (or time going back) the ring is emptied; the packet is aligned
   * onto the static channel (folded into it while learning) and pushed into the ring. No allocation.
   * @param csi the packet, in the layout it was built for
   * @param time its epoch ms
   */
  push(csi: ArrayLike<number>, time: number): void {
    if (Number.isNaN(this.firstTime)) this.firstTime = time;
    else if (this.gapMs !== null && (time < this.lastTime || time - this.lastTime > this.gapMs)) this.windows.clear();
    this.lastTime = time;
    this.packets++;
    this.staticChannel.process(csi, time, this.learning, this.aligned);
    this.windows.push(this.aligned, time);
  }

  /**
   * The short window when it is due (MovingWindows.take: once SHORT_WINDOW packets are in, then
   * every SHORT_HOP), minus the static channel (or the window's mean), chains corrected.
   * @returns the window (over the ring's short buffer), or null when none is due
   */
  take(): MovingWindow | null {
    const learning = this.learning;
    const w = this.windows.take('short', learning || !this.staticChannel.ready ? null : this.staticChannel.channel);
    return w && this.corrected(w, learning);
  }

  /**
   * The last SHORT_WINDOW packets whatever the hops (another link's window beside the primary's),
   * minus the static channel (or the window's mean), chains corrected.
   * @returns the window (over a buffer of its own), or null while the ring holds fewer packets
   */
  latest(): MovingWindow | null {
    if (this.windows.count < SHORT_WINDOW) return null;
    const learning = this.learning;
    return this.corrected(this.windows.window(SHORT_WINDOW, learning || !this.staticChannel.ready ? null : this.staticChannel.channel, this.buffer), learning);
  }

  /** The window with its chain phases corrected: the calibration's always, the fitted ones once the static channel is learned (fitted then, once). */
  private corrected(w: MovingWindow, learning: boolean): MovingWindow {
    if (this.calibratedChains) return applyChainCorrection(w, this.chains!);
    if (!this.chainCalibration || learning || !this.staticChannel.ready) return w;
    this.chains ??= chainCorrection(this.staticChannel.channel, this.geometry, this.room);
    return applyChainCorrection(w, this.chains);
  }
}

function sameNumber(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}
