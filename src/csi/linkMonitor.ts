/**
 * The links of one environment's site as frames come (docs/service.md "Links"): which frame is
 * whose, the join ({@link LinkJoin}), and each link's figures and state as `/system/status` shows
 * them. The `links` operator (operators/links.ts) keeps one {@link LinkMonitor} per subscription.
 */

import type { CsiFrame } from './frame.js';
import { DEFAULT_TOLERANCE_MS, LinkJoin } from './linkJoin.js';
import { siteLinks, type RadioConfig, type SiteLink } from './radios.js';

/** Default silence after which a link is `stopped`, seconds: 200 packet intervals at 100 Hz. */
export const DEFAULT_TIMEOUT_SECONDS = 2;
/** Sets over which a link's lag is the median. */
export const LAG_SAMPLES = 64;
/** Rate and packet loss are over this much of the last arrivals, ms. */
export const RATE_WINDOW_MS = 5000;
/** Arrivals remembered per link for the rate (more than 5 s of a 400 Hz link: the rate then covers what the ring holds). */
const RATE_CAP = 2048;
/** Links not in the site listed at most (the least recent is forgotten beyond it). */
export const MAX_UNKNOWN_LINKS = 8;
/** A forward jump of the sequence number larger than this is a restart of the sender, not loss. */
const MAX_SEQ_GAP = 1000;
/** Sequence counters that wrap: 802.11's 12 bits, Intel 5300's 16-bit bfee_count. */
const SEQ_MODULI = [4096, 65536] as const;

/**
 * What a link is doing (docs/service.md "Links"):
 * - `live`: sending, its layout the site's, and (other links) within the tolerance of the reading link;
 * - `lagging`: sending, but its frames are more than the tolerance behind the reading link's (median over recent sets): left out of the join;
 * - `stopped`: no packet for `timeoutSeconds`;
 * - `waiting`: no packet yet;
 * - `mismatched`: its frames' antennas (or, beside the reading link, subcarriers) differ from the site's: not joined;
 * - `unknown`: frames name a link that is not the site's: counted, dropped, listed while they come.
 */
export type LinkState = 'live' | 'lagging' | 'stopped' | 'waiting' | 'mismatched' | 'unknown';

/** One link's figures, as `/system/status` shows them. */
export interface LinkReport {
  /** `<tx>-<rx>`. */
  readonly linkId: string;
  /** The transmitter's id; for an unknown link what its name gives before the first `-` (null without one). */
  readonly tx: string | null;
  readonly rx: string | null;
  readonly state: LinkState;
  /** The site's first receiver: the link the one-link model reads. */
  readonly primary: boolean;
  /** Packets per second over the last 5 s of arrivals. */
  readonly rateHz: number;
  /** Share of packets lost over the same span, from gaps in the sequence numbers (0..1). */
  readonly packetLossRate: number;
  /** Epoch ms (the operator's clock) of the last packet; null before the first. */
  readonly lastPacketAt: number | null;
  /** Median of the link's frame time minus the reading link's over the last 64 sets, ms; 0 for the reading link and while unmeasured. */
  readonly lagMs: number;
  /** `nRx x nTx x nSub` of its last frame, e.g. '3x3x30'; null before the first. */
  readonly layout: string | null;
  /** Frames received (an unknown link's: dropped). */
  readonly frames: number;
  /** Why the link is not `live`, naming it; '' when live. */
  readonly reason: string;
}

/** Per-link counters: arrivals, loss, layout, lag. Typed arrays, nothing allocated per frame. */
export class LinkCounter {
  frames = 0;
  firstAt = NaN;
  lastAt = NaN;
  private lastSeq = NaN;
  nRx = 0;
  nTx = 0;
  nSub = 0;
  mismatched = false;
  private readonly arrivals = new Float64Array(RATE_CAP);
  private readonly lostAt = new Float64Array(RATE_CAP);
  private head = 0;
  private held = 0;
  private readonly lags = new Float64Array(LAG_SAMPLES);
  private lagHead = 0;
  private lagHeld = 0;

  mark(f: CsiFrame, now: number): void {
    let lost = 0;
    const seq = f.seq;
    if (Number.isFinite(seq)) {
      if (!Number.isNaN(this.lastSeq)) {
        let d = seq - this.lastSeq;
        if (d < 0) {
          for (const m of SEQ_MODULI) {
            if (this.lastSeq < m && seq < m && d + m <= MAX_SEQ_GAP) {
              d += m;
              break;
            }
          }
        }
        if (d > 1 && d <= MAX_SEQ_GAP) lost = d - 1;
      }
      this.lastSeq = seq;
    }
    this.frames++;
    if (this.frames === 1) this.firstAt = now;
    this.lastAt = now;
    this.nRx = f.nRx;
    this.nTx = f.nTx;
    this.nSub = f.nSub;
    this.arrivals[this.head] = now;
    this.lostAt[this.head] = lost;
    this.head = (this.head + 1) % RATE_CAP;
    if (this.held < RATE_CAP) this.held++;
  }

  lag(offset: number): void {
    this.lags[this.lagHead] = offset;
    this.lagHead = (this.lagHead + 1) % LAG_SAMPLES;
    if (this.lagHeld < LAG_SAMPLES) this.lagHeld++;
  }

  /** Forgets the lag samples: the next one is the first (the ring starts again at its head). */
  clearLag(): void {
    this.lagHeld = 0;
    this.lagHead = 0;
  }

  /** Median lag, ms; 0 while unmeasured. */
  lagMedian(): number {
    if (this.lagHeld === 0) return 0;
    const v = Array.from(this.lags.subarray(0, this.lagHeld)).sort((a, b) => a - b);
    const mid = v.length >> 1;
    return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  }

  /** Arrivals and packets lost within the rate window before `now`, and the oldest arrival in it. */
  private recent(now: number): { count: number; lost: number; oldest: number } {
    let count = 0;
    let lost = 0;
    let oldest = now;
    for (let k = 1; k <= this.held; k++) {
      const j = (this.head - k + RATE_CAP) % RATE_CAP;
      const t = this.arrivals[j]!;
      if (now - t > RATE_WINDOW_MS) break;
      count++;
      lost += this.lostAt[j]!;
      oldest = t;
    }
    return { count, lost, oldest };
  }

  /**
   * Packets per second: over the last RATE_WINDOW_MS; for a link younger than that, its intervals
   * since the first packet ((n - 1) / (now - first)), so a steady link reads its rate from the start.
   */
  rate(now: number): number {
    const { count, oldest } = this.recent(now);
    if (count === 0) return 0;
    if (count === this.held && this.held === RATE_CAP) return (count * 1000) / Math.max(now - oldest, 1);
    if (now - this.firstAt < RATE_WINDOW_MS) return count > 1 && now > this.firstAt ? ((count - 1) * 1000) / (now - this.firstAt) : 0;
    return (count * 1000) / RATE_WINDOW_MS;
  }

  /** Lost / (received + lost) over the rate window; 0 without packets. */
  lossRate(now: number): number {
    const { count, lost } = this.recent(now);
    return count + lost > 0 ? lost / (count + lost) : 0;
  }
}

/** The set of one reading frame, as `onSet` sees it (one object, reused: valid during the call). */
export interface LinkSet {
  /** The reading link's frame. */
  reading: CsiFrame;
  /** Per site link (`siteLinks` order): its frame in the set, or undefined (lagging, stopped, mismatched, none near). */
  readonly frames: Array<CsiFrame | undefined>;
  /** Links in the set, the reading link included. */
  joined: number;
}

/** Holds the monitor of the running `links` stage (replaced at each subscription). */
export interface LinkStatsHolder {
  monitor?: LinkMonitor;
}

function layoutOf(c: { nRx: number; nTx: number; nSub: number; frames: number }): string | null {
  return c.frames > 0 ? `${c.nRx}x${c.nTx}x${c.nSub}` : null;
}

function seconds(ms: number): string {
  return `${(Math.round(ms / 100) / 10).toFixed(1)} s`;
}

/**
 * The links of one environment's site, as frames come: which frame is whose, the join, and the
 * per-link figures. The `links` operator keeps one per subscription; `report()` reads it.
 */
export class LinkMonitor {
  readonly join: LinkJoin;
  readonly toleranceMs: number;
  readonly timeoutMs: number;
  private readonly counters: LinkCounter[];
  private readonly unknown = new Map<string, LinkCounter>();
  private readonly set: LinkSet;
  /** The reading frame whose set is not formed yet. */
  private pending: CsiFrame | undefined;
  private readonly now: () => number;
  private readonly onSet: ((set: LinkSet) => void) | undefined;

  /**
   * @param radios the site's radios (one tx, one or more rx)
   * @param opts tolerance, timeout, clock, set callback
   * @throws RangeError when the site has no link or a figure is out of range
   */
  constructor(
    radios: readonly RadioConfig[],
    opts: { toleranceMs?: number; timeoutSeconds?: number; now?: () => number; onSet?: (set: LinkSet) => void } = {},
  ) {
    const links = siteLinks(radios);
    if (links.length === 0) throw new RangeError('links: the site has no link (its radios need one tx and at least one rx)');
    this.toleranceMs = opts.toleranceMs ?? DEFAULT_TOLERANCE_MS;
    const timeout = opts.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    if (!(timeout > 0)) throw new RangeError(`links: timeoutSeconds must be > 0, got ${timeout}`);
    this.timeoutMs = timeout * 1000;
    this.join = new LinkJoin(links, this.toleranceMs);
    this.counters = links.map(() => new LinkCounter());
    this.now = opts.now ?? (() => Date.now());
    this.onSet = opts.onSet;
    this.set = { reading: undefined as unknown as CsiFrame, frames: new Array<CsiFrame | undefined>(links.length).fill(undefined), joined: 0 };
  }

  get links(): readonly SiteLink[] {
    return this.join.links;
  }

  /**
   * Takes one frame of any link.
   * @returns true when it is the reading (primary) link's, to be passed on; false when it is
   *   another link's (kept for the join) or an unknown link's (dropped)
   */
  accept(f: CsiFrame): boolean {
    return this.take(f) === 'primary';
  }

  /**
   * Takes one frame of any link, as {@link accept}, and says what it was.
   * @returns `primary` (the reading link's), `joined` (another site link's, its layout the site's:
   *   kept for the join), `mismatched` (another site link's whose layout differs) or `unknown` (a
   *   link that is not the site's)
   */
  take(f: CsiFrame): 'primary' | 'joined' | 'mismatched' | 'unknown' {
    const now = this.now();
    const i = this.join.linkIndex(f.linkId);
    if (i < 0) {
      this.markUnknown(f, now);
      return 'unknown';
    }
    const c = this.counters[i]!;
    c.mark(f, now);
    const link = this.join.links[i]!;
    const primary = this.counters[0]!;
    c.mismatched = f.nRx !== link.rx.antennas || f.nTx !== link.tx.antennas || (i !== 0 && primary.frames > 0 && f.nSub !== primary.nSub);
    if (i === 0) {
      // The next reading frame forms the previous one's set with whatever has come by now.
      if (this.pending) this.settle(now);
      this.join.push(0, f);
      this.pending = f;
    } else if (!c.mismatched) this.join.push(i, f);
    if (this.pending && this.caughtUp(now)) this.settle(now);
    return i === 0 ? 'primary' : c.mismatched ? 'mismatched' : 'joined';
  }

  /** Forms the pending set now (the stream ended). */
  finish(): void {
    if (this.pending) this.settle(this.now());
  }

  /** True when every link that could join has a frame at or after the pending reading frame's time: nothing nearer can come. */
  private caughtUp(now: number): boolean {
    const t = this.pending!.time;
    for (let i = 1; i < this.counters.length; i++) {
      const c = this.counters[i]!;
      if (c.frames === 0 || c.mismatched || now - c.lastAt > this.timeoutMs) continue;
      if (!(this.join.newest(i) >= t)) return false;
    }
    return true;
  }

  private settle(now: number): void {
    const reading = this.pending!;
    this.pending = undefined;
    const set = this.set;
    set.reading = reading;
    set.joined = this.join.join(reading, set.frames, 0);
    const offsets = this.join.offsets;
    for (let i = 1; i < this.counters.length; i++) {
      const c = this.counters[i]!;
      // A stopped or mismatched link's old frames say nothing of its lag.
      if (c.mismatched || now - c.lastAt > this.timeoutMs) c.clearLag();
      else if (Number.isFinite(offsets[i]!)) c.lag(offsets[i]!);
    }
    this.onSet?.(set);
  }

  private markUnknown(f: CsiFrame, now: number): void {
    const id = f.linkId!;
    let c = this.unknown.get(id);
    if (c) this.unknown.delete(id);
    else {
      if (this.unknown.size >= MAX_UNKNOWN_LINKS) this.unknown.delete(this.unknown.keys().next().value!);
      c = new LinkCounter();
    }
    // Re-inserted: the map stays in order of the last packet, the least recent first.
    this.unknown.set(id, c);
    c.mark(f, now);
  }

  /**
   * Every link of the site, then the unknown links still sending (silent for `timeoutSeconds`, one
   * is forgotten), with their state and figures.
   * @param now the clock's time (default its now)
   */
  report(now = this.now()): LinkReport[] {
    const links = this.join.links;
    const primaryId = links[0]!.id;
    const primary = this.counters[0]!;
    const out: LinkReport[] = links.map((l, i) => {
      const c = this.counters[i]!;
      const isPrimary = i === 0;
      const silent = now - c.lastAt;
      const lag = isPrimary ? 0 : c.lagMedian();
      let state: LinkState;
      let reason = '';
      const reads = isPrimary
        ? 'the model reads this link: no poses while it is'
        : `poses go on from ${primaryId}, this link is left out of the join while it is`;
      if (c.frames === 0) {
        state = 'waiting';
        reason = `${l.id} waiting: no packet yet`;
      } else if (silent > this.timeoutMs) {
        state = 'stopped';
        reason = `${l.id} stopped: no packet for ${seconds(silent)} (timeout ${seconds(this.timeoutMs)}); ${reads} stopped`;
      } else if (c.mismatched) {
        state = 'mismatched';
        const want = `${l.rx.antennas}x${l.tx.antennas}` + (isPrimary ? ' antennas' : ` antennas and ${primary.nSub} subcarriers as ${primaryId}`);
        reason = `${l.id} mismatched: it sends ${layoutOf(c)} (rx x tx x subcarriers), the site says ${want}; ${
          isPrimary ? 'the model reads it as it comes' : `poses go on from ${primaryId}, this link is not joined`
        }`;
      } else if (!isPrimary && lag < -this.toleranceMs) {
        state = 'lagging';
        reason = `${l.id} lagging: its frames are ${Math.round(-lag)} ms behind ${primaryId}'s (tolerance ${this.toleranceMs} ms); poses go on from ${primaryId}, this link is left out of the join`;
      } else state = 'live';
      return {
        linkId: l.id,
        tx: l.tx.id,
        rx: l.rx.id,
        state,
        primary: isPrimary,
        rateHz: c.rate(now),
        packetLossRate: c.lossRate(now),
        lastPacketAt: c.frames > 0 ? c.lastAt : null,
        lagMs: lag,
        layout: layoutOf(c),
        frames: c.frames,
        reason,
      };
    });
    const known = links.map((l) => l.id).join(', ');
    for (const [id, c] of [...this.unknown]) {
      if (now - c.lastAt > this.timeoutMs) {
        this.unknown.delete(id);
        continue;
      }
      const dash = id.indexOf('-');
      out.push({
        linkId: id,
        tx: dash > 0 ? id.slice(0, dash) : null,
        rx: dash > 0 ? id.slice(dash + 1) : null,
        state: 'unknown',
        primary: false,
        rateHz: c.rate(now),
        packetLossRate: c.lossRate(now),
        lastPacketAt: c.lastAt,
        lagMs: 0,
        layout: layoutOf(c),
        frames: c.frames,
        reason: `${id} unknown: not a link of the site (${known}); its ${c.frames} frame(s) were dropped`,
      });
    }
    return out;
  }
}

/** Link states that make the service `degraded`. */
export const DEGRADING_LINK_STATES: ReadonlySet<LinkState> = new Set<LinkState>(['stopped', 'lagging', 'mismatched', 'unknown']);
