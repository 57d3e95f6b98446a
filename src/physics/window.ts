/**
 * The moving part of one link's channel in two views (issue 19 item 1): a ring of aligned packets
 * (align.ts, static.ts) from which a caller takes, as a {@link MovingWindow} (types.ts), the
 * packets of a window minus the static channel (or minus the window's mean while there is no
 * static channel yet):
 *
 * - short: {@link SHORT_WINDOW} packets (0.64 s at 100 Hz) every {@link SHORT_HOP} packets, for motion;
 * - long: {@link LONG_WINDOW} packets (2.56 s at 100 Hz) every {@link LONG_HOP} packets, for the
 *   breathing of people who are still.
 *
 * Everything is preallocated: `push` copies into the ring, and each view writes into its own data
 * buffer, the same Float32Array every time (a window's data is valid until the next window of the
 * same view is taken; copy it to keep it). Only the small MovingWindow object is new per window.
 *
 * A packet is in four short windows (and in the other links' windows taken beside the primary's):
 * minus a static channel, its moving row is subtracted once into a cache of the last
 * SHORT_WINDOW + SHORT_HOP rows and copied out after (dropped when the channel's values change).
 * Measured: the windows of a map 0.76 -> 0.58 ms (one interleaved run, half of the maps still
 * learning, whose windows take the mean away as before), the same windows.
 */

import type { MovingWindow } from './types.js';

/** Packets of the short (motion) window: 0.64 s at 100 Hz. */
export const SHORT_WINDOW = 64;
/** Packets between two short windows: 0.16 s at 100 Hz (75 % overlap). */
export const SHORT_HOP = 16;
/** Packets of the long (breathing) window: 2.56 s at 100 Hz. */
export const LONG_WINDOW = 256;
/** Packets between two long windows: 0.64 s at 100 Hz (75 % overlap). */
export const LONG_HOP = 64;

/** The two views of {@link MovingWindows}. */
export type WindowView = 'short' | 'long';

/** Size and hop of one view, packets. */
export interface ViewSpec {
  /** Packets per window. */
  readonly snapshots: number;
  /** Packets pushed between two windows. */
  readonly hop: number;
}

/** Options of {@link MovingWindows}. */
export interface MovingWindowsOptions {
  /** Subcarriers of the link's packets. */
  nSub: number;
  /** Receive antennas. */
  nRx: number;
  /** Transmit antennas. */
  nTx: number;
  /** Short view; default SHORT_WINDOW every SHORT_HOP. */
  short?: ViewSpec;
  /** Long view; default LONG_WINDOW every LONG_HOP. */
  long?: ViewSpec;
}

/**
 * A ring of one link's aligned packets and its short and long moving windows: see the module
 * comment.
 *
 * @example
 * const win = new MovingWindows({ nSub: 30, nRx: 3, nTx: 3 });
 * st.process(frame.csi, frame.time, empty, aligned);
 * win.push(aligned, frame.time);
 * const w = win.take('short', st.ready ? st.channel : null); // null until full, then every hop
 * if (w) beamform(w);
 */
export class MovingWindows {
  /** Subcarriers per packet. */
  readonly nSub: number;
  /** Receive antennas. */
  readonly nRx: number;
  /** Transmit antennas. */
  readonly nTx: number;
  /** Packets the ring holds (the longer view's size). */
  readonly capacity: number;
  /** Size and hop of each view. */
  readonly views: Readonly<Record<WindowView, ViewSpec>>;
  private readonly size: number;
  private readonly ring: Float32Array;
  private readonly times: Float64Array;
  private readonly out: Record<WindowView, Float32Array>;
  private readonly lastTaken: Record<WindowView, number> = { short: -Infinity, long: -Infinity };
  private readonly mean: Float64Array;
  private total = 0;
  /**
   * The moving rows already taken (ring row minus a static channel), so that a packet that is in
   * several windows (each is in four short windows, 64 packets every 16) is subtracted once: row
   * `p mod cacheRows` holds packet p's moving part when cachedPacket says p, made with the static
   * channel `cachedStatic` (compared by value at every window: when it changes, e.g. while it is
   * learned, every cached row is dropped). Built on the first window minus a Float32Array channel.
   */
  private cache: Float32Array | null = null;
  private readonly cacheRows: number;
  private readonly cachedPacket: Float64Array;
  private readonly cachedStatic: Float32Array;

  /**
   * @param options the link's shape and the views
   * @throws RangeError on a bad shape or view
   */
  constructor(options: MovingWindowsOptions) {
    const { nSub, nRx, nTx } = options;
    for (const v of [nSub, nRx, nTx]) if (!(Number.isInteger(v) && v >= 1)) throw new RangeError('window: nSub, nRx and nTx must be integers >= 1');
    const short = options.short ?? { snapshots: SHORT_WINDOW, hop: SHORT_HOP };
    const long = options.long ?? { snapshots: LONG_WINDOW, hop: LONG_HOP };
    for (const v of [short, long]) {
      if (!(Number.isInteger(v.snapshots) && v.snapshots >= 1 && Number.isInteger(v.hop) && v.hop >= 1)) {
        throw new RangeError('window: snapshots and hop must be integers >= 1');
      }
    }
    this.nSub = nSub;
    this.nRx = nRx;
    this.nTx = nTx;
    this.views = Object.freeze({ short: Object.freeze({ ...short }), long: Object.freeze({ ...long }) });
    this.capacity = Math.max(short.snapshots, long.snapshots);
    this.size = nSub * nRx * nTx * 2;
    this.ring = new Float32Array(this.capacity * this.size);
    this.times = new Float64Array(this.capacity);
    this.out = { short: new Float32Array(short.snapshots * this.size), long: new Float32Array(long.snapshots * this.size) };
    this.mean = new Float64Array(this.size);
    // Enough rows for the short view's window and its next hop (a longer window is taken directly).
    this.cacheRows = Math.min(this.capacity, short.snapshots + short.hop);
    this.cachedPacket = new Float64Array(this.cacheRows).fill(-1);
    this.cachedStatic = new Float32Array(this.size);
  }

  /** Packets pushed since creation or the last clear. */
  get pushed(): number {
    return this.total;
  }

  /** Packets held (at most `capacity`). */
  get count(): number {
    return Math.min(this.total, this.capacity);
  }

  /** Empties the ring (e.g. after a gap in the stream). */
  clear(): void {
    this.total = 0;
    // Packet numbers start again at 0: the cached rows would pass for the new packets.
    this.cachedPacket.fill(-1);
    this.lastTaken.short = -Infinity;
    this.lastTaken.long = -Infinity;
  }

  /**
   * Adds one aligned packet (copied; nothing is allocated).
   * @param aligned the aligned packet, nSub * nRx * nTx * 2 values
   * @param time its epoch ms
   * @example
   * win.push(aligned, frame.time);
   */
  push(aligned: ArrayLike<number>, time: number): void {
    if (aligned.length !== this.size) throw new RangeError(`window: a packet has ${this.size} values, got ${aligned.length}`);
    const slot = this.total % this.capacity;
    const base = slot * this.size;
    if (aligned instanceof Float32Array) this.ring.set(aligned, base);
    else {
      const r = this.ring;
      for (let i = 0; i < this.size; i++) r[base + i] = aligned[i]!;
    }
    this.times[slot] = time;
    this.total++;
  }

  /**
   * The view's next window when it is due: once the ring holds the view's packets, the first time,
   * then whenever `hop` packets have been pushed since the last window of this view.
   * @param view 'short' or 'long'
   * @param staticChannel the static channel to take away (StaticChannel.channel), or null to take
   *   away the window's mean
   * @returns the window (its data is the view's own buffer, overwritten by the next window), or
   *   null when none is due
   * @example
   * const w = win.take('long', st.ready ? st.channel : null);
   */
  take(view: WindowView, staticChannel: ArrayLike<number> | null): MovingWindow | null {
    const spec = this.views[view];
    if (this.count < spec.snapshots) return null;
    if (this.total - this.lastTaken[view] < spec.hop) return null;
    this.lastTaken[view] = this.total;
    return this.window(spec.snapshots, staticChannel, this.out[view]);
  }

  /**
   * The last `snapshots` packets minus the static channel (or their mean), oldest first, whatever
   * the hops.
   * @param snapshots packets, 1..count
   * @param staticChannel the static channel, or null for the window's mean
   * @param out receives the data, at least snapshots * nSub * nRx * nTx * 2 values
   * @returns the window over `out`
   * @throws RangeError when the ring holds fewer packets or `out` is too short
   * @example
   * const w = win.window(32, null, new Float32Array(32 * 30 * 9 * 2));
   */
  window(snapshots: number, staticChannel: ArrayLike<number> | null, out: Float32Array): MovingWindow {
    if (!(Number.isInteger(snapshots) && snapshots >= 1 && snapshots <= this.count)) {
      throw new RangeError(`window: snapshots must be 1..${this.count}`);
    }
    if (out.length < snapshots * this.size) throw new RangeError('window: out is too short');
    if (staticChannel !== null && staticChannel.length !== this.size) throw new RangeError('window: the static channel has the wrong length');
    const size = this.size;
    const first = this.total - snapshots;
    const ring = this.ring;
    if (staticChannel === null) {
      const m = this.mean;
      m.fill(0);
      for (let s = 0; s < snapshots; s++) {
        const base = ((first + s) % this.capacity) * size;
        for (let i = 0; i < size; i++) m[i] = m[i]! + ring[base + i]!;
      }
      for (let i = 0; i < size; i++) m[i] = m[i]! / snapshots;
      subtractRows(ring, first, snapshots, this.capacity, size, m, out);
    } else if (staticChannel instanceof Float32Array) {
      if (snapshots <= this.cacheRows) this.cachedRows(first, snapshots, staticChannel, out);
      else subtractRows(ring, first, snapshots, this.capacity, size, staticChannel, out);
    } else {
      subtractRows(ring, first, snapshots, this.capacity, size, Float64Array.from(staticChannel), out);
    }
    return {
      nSub: this.nSub,
      nRx: this.nRx,
      nTx: this.nTx,
      snapshots,
      data: out,
      time: this.times[(this.total - 1) % this.capacity]!,
    };
  }

  /**
   * out row s = packet first + s minus the static channel, through the cache of moving rows:
   * the rows not cached yet (or made with another channel) are subtracted into it, then every row
   * is copied out (TypedArray.set, a memory copy). The same float32 subtraction as
   * {@link subtractRows}, so the same window.
   */
  private cachedRows(first: number, snapshots: number, staticChannel: Float32Array, out: Float32Array): void {
    const size = this.size;
    const cache = (this.cache ??= new Float32Array(this.cacheRows * size));
    const known = this.cachedStatic;
    let same = true;
    for (let i = 0; i < size; i++) {
      if (known[i] !== staticChannel[i]) {
        same = false;
        break;
      }
    }
    if (!same) {
      known.set(staticChannel);
      this.cachedPacket.fill(-1);
    }
    const ring = this.ring;
    const rows = this.cacheRows;
    for (let s = 0; s < snapshots; s++) {
      const p = first + s;
      if (this.cachedPacket[p % rows] === p) continue;
      const c = (p % rows) * size;
      const base = (p % this.capacity) * size;
      for (let i = 0; i < size; i++) cache[c + i] = ring[base + i]! - known[i]!;
      this.cachedPacket[p % rows] = p;
    }
    // Copied out in at most two runs (the window's rows wrap around the cache at most once).
    const start = first % rows;
    const head = Math.min(snapshots, rows - start);
    out.set(cache.subarray(start * size, (start + head) * size), 0);
    if (head < snapshots) out.set(cache.subarray(0, (snapshots - head) * size), head * size);
  }

  /**
   * Epoch ms of the packets of the last window of `snapshots` packets, oldest first.
   * @param snapshots packets, 1..count
   * @param out receives the times (length >= snapshots)
   * @returns out
   * @example
   * win.timesOf(64, new Float64Array(64)) // strictly increasing for a live stream
   */
  timesOf(snapshots: number, out: Float64Array): Float64Array {
    if (!(snapshots >= 1 && snapshots <= this.count)) throw new RangeError(`window: snapshots must be 1..${this.count}`);
    const first = this.total - snapshots;
    for (let s = 0; s < snapshots; s++) out[s] = this.times[(first + s) % this.capacity]!;
    return out;
  }
}

/**
 * out row s = ring row (first + s) mod capacity minus `sub`, for s < snapshots: one loop per kind
 * of `sub` (Float32Array: the static channel; Float64Array: the window mean), so that each stays
 * monomorphic.
 */
function subtractRows(
  ring: Float32Array,
  first: number,
  snapshots: number,
  capacity: number,
  size: number,
  sub: Float32Array | Float64Array,
  out: Float32Array,
): void {
  if (sub instanceof Float32Array) {
    for (let s = 0; s < snapshots; s++) {
      const base = ((first + s) % capacity) * size;
      const o = s * size;
      for (let i = 0; i < size; i++) out[o + i] = ring[base + i]! - sub[i]!;
    }
  } else {
    for (let s = 0; s < snapshots; s++) {
      const base = ((first + s) % capacity) * size;
      const o = s * size;
      for (let i = 0; i < size; i++) out[o + i] = ring[base + i]! - sub[i]!;
    }
  }
}
