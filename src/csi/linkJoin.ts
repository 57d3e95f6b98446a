/**
 * The links of a site joined by time (DECISIONS "Sites with several radios"): the join tolerance
 * and the ring of each link's last frames. The `links` operator (operators/links.ts) keeps one
 * through {@link LinkMonitor} (./linkMonitor.ts); a multi-link front end can keep one of its own.
 */

import type { CsiFrame } from './frame.js';
import type { SiteLink } from './radios.js';

/**
 * Default join tolerance, ms: half the packet interval at 100 Hz, the rate the shipped model
 * reads. The receivers of a site all hear the same transmitted packets, so the frames of one packet
 * differ in time by the receivers' clock offsets and delivery only; half an interval is the widest
 * tolerance that can never pair a frame with a neighbouring packet's.
 */
export const DEFAULT_TOLERANCE_MS = 5;
/** Frames of each link the join keeps (at 100 Hz, 160 ms: a set settles within one reading interval). */
export const JOIN_DEPTH = 16;

/**
 * The links' frames joined by time (DECISIONS "Sites with several radios"): for a frame of the
 * reading link, the other links' nearest frames within `toleranceMs`. Each link keeps its last
 * `depth` frames in a ring (the frames themselves, not copies), so pushing and joining allocate
 * nothing. Used by the `links` operator; a multi-link front end can keep one of its own.
 *
 * @example
 * const join = new LinkJoin(siteLinks(DEFAULT_RADIOS), 5);
 * join.push(join.linkIndex(f.linkId), f);
 * const n = join.join(readingFrame, set); // set[i]: link i's nearest frame, or undefined
 */
export class LinkJoin {
  /** Link index by id. */
  private readonly index = new Map<string, number>();
  private readonly frames: Array<CsiFrame | undefined>;
  /** Frame time per ring slot, link-major (`link * depth + slot`). */
  private readonly times: Float64Array;
  /** Next slot per link. */
  private readonly heads: Int32Array;
  /** Frames held per link (up to `depth`). */
  private readonly held: Int32Array;
  /**
   * After {@link join}: per link, its nearest held frame's time minus the reading frame's, ms
   * (whether within the tolerance or not); NaN for a link holding no frame; 0 for the reading link.
   */
  readonly offsets: Float64Array;

  /**
   * @param links the site's links; link 0 is the primary (`siteLinks` order)
   * @param toleranceMs a frame joins when its time is within this of the reading frame's (>= 0)
   * @param depth frames kept per link (>= 1)
   * @throws RangeError for a negative tolerance or a depth below 1
   */
  constructor(
    readonly links: readonly SiteLink[],
    readonly toleranceMs: number,
    readonly depth = JOIN_DEPTH,
  ) {
    if (!(toleranceMs >= 0)) throw new RangeError(`links: toleranceMs must be >= 0, got ${toleranceMs}`);
    if (!Number.isInteger(depth) || depth < 1) throw new RangeError(`links: depth must be an integer >= 1, got ${depth}`);
    links.forEach((l, i) => this.index.set(l.id, i));
    const n = links.length;
    this.frames = new Array<CsiFrame | undefined>(n * depth).fill(undefined);
    this.times = new Float64Array(n * depth);
    this.heads = new Int32Array(n);
    this.held = new Int32Array(n);
    this.offsets = new Float64Array(n).fill(NaN);
  }

  /**
   * The index of a link by its id.
   * @param linkId a frame's `linkId`; undefined = the primary link (index 0)
   * @returns its index, or -1 when the site has no such link
   */
  linkIndex(linkId: string | undefined): number {
    if (linkId === undefined) return this.links.length > 0 ? 0 : -1;
    return this.index.get(linkId) ?? -1;
  }

  /** Keeps `frame` as link `i`'s newest (the oldest beyond `depth` is let go). */
  push(i: number, frame: CsiFrame): void {
    const slot = i * this.depth + this.heads[i]!;
    this.frames[slot] = frame;
    this.times[slot] = frame.time;
    this.heads[i] = (this.heads[i]! + 1) % this.depth;
    if (this.held[i]! < this.depth) this.held[i]!++;
  }

  /** Time of link `i`'s newest frame; NaN when it holds none. */
  newest(i: number): number {
    if (this.held[i] === 0) return NaN;
    return this.times[i * this.depth + ((this.heads[i]! - 1 + this.depth) % this.depth)]!;
  }

  /** Frames link `i` holds. */
  count(i: number): number {
    return this.held[i]!;
  }

  /**
   * The set of a reading frame: for every other link its held frame nearest in time (the newer of
   * two as near), when within the tolerance; `offsets` gets each link's nearest offset.
   * @param reading the reading link's frame
   * @param out filled: out[i] is link i's frame in the set, or undefined; out[readingIndex] = reading
   * @param readingIndex the reading link (default 0, the primary)
   * @returns links in the set, the reading link included
   */
  join(reading: CsiFrame, out: Array<CsiFrame | undefined>, readingIndex = 0): number {
    const t = reading.time;
    const depth = this.depth;
    let joined = 1;
    for (let i = 0; i < this.links.length; i++) {
      if (i === readingIndex) {
        out[i] = reading;
        this.offsets[i] = 0;
        continue;
      }
      const n = this.held[i]!;
      let best = -1;
      let bestD = Infinity;
      for (let k = 1; k <= n; k++) {
        const slot = i * depth + ((this.heads[i]! - k + depth) % depth);
        const d = Math.abs(this.times[slot]! - t);
        if (d < bestD) {
          bestD = d;
          best = slot;
        }
      }
      if (best < 0) {
        out[i] = undefined;
        this.offsets[i] = NaN;
        continue;
      }
      this.offsets[i] = this.times[best]! - t;
      if (bestD <= this.toleranceMs) {
        out[i] = this.frames[best];
        joined++;
      } else out[i] = undefined;
    }
    return joined;
  }
}
