/**
 * The links of a site as `GET /system/status` reports them (docs/service.md "Links"; DECISIONS
 * "Sites with several radios"): reading them from either form of the status, and how the
 * dashboard shows each state. The floor plan's lines, the legend under it and the System tab's
 * table all take their colours and words from here.
 */
import { duration, num } from './dom.js';

/** The states of docs/service.md "Links". */
export type LinkState = 'live' | 'lagging' | 'stopped' | 'waiting' | 'mismatched' | 'unknown';

/** One entry of `components.csi_processor.links` (Form B) or `components.csi_receiver.links` (Form A). */
export interface LinkStatus {
  /** `<tx>-<rx>`. */
  link_id: string;
  tx: string | null;
  rx: string | null;
  state: LinkState;
  /** The link the model reads (the site's first receiver). */
  primary: boolean;
  /** Packets per second over the last 5 s. */
  rate_hz: number;
  /** Share of packets lost over the last 5 s, 0..1. */
  packet_loss_rate: number;
  /** ISO 8601 (server clock); null before the first packet. */
  last_packet_time: string | null;
  /** Median time behind the primary link, ms (negative is behind). */
  lag_ms: number;
  /** `nRx x nTx x nSub` of the last frame; null before the first. */
  layout: string | null;
  frames: number;
  /** Why the link is not live ('' when it is); services before it had none. */
  reason?: string;
}

/** What one status answer said about the links, and when (the answer's `timestamp`, server clock). */
export interface LinkReading {
  links: readonly LinkStatus[];
  at: string;
}

const STATES: ReadonlySet<string> = new Set<LinkState>(['live', 'lagging', 'stopped', 'waiting', 'mismatched', 'unknown']);

/**
 * The links of a status resource, in the order the service lists them (the site's, primary first,
 * then unknown ones). A state this page does not know is shown as `unknown`.
 * @param status `GET /system/status` in either form
 * @returns the links; undefined when the service does not report them (an older service)
 */
export function readLinks(status: unknown): LinkStatus[] | undefined {
  const c = (status as { components?: Record<string, { links?: unknown } | undefined> } | undefined)?.components;
  const links = c?.csi_processor?.links ?? c?.csi_receiver?.links;
  if (!Array.isArray(links)) return undefined;
  return links
    .filter((l): l is LinkStatus => typeof l === 'object' && l !== null && typeof (l as LinkStatus).link_id === 'string')
    .map((l) => (STATES.has(l.state) ? l : { ...l, state: 'unknown' as const }));
}

/** How a state is drawn: its colour and the line's dash pattern (CSS pixels; solid when empty). */
export interface LinkStyle {
  color: string;
  dash: number[];
}

/**
 * Live links are solid green; every other state is dashed: lagging orange, stopped and waiting
 * grey, mismatched red, unknown (a link not in the site: listed, not drawn) purple. The same
 * colours are the `.link-<state>` classes of style.css.
 */
export const LINK_STYLE: Readonly<Record<LinkState, LinkStyle>> = {
  live: { color: '#3fb950', dash: [] },
  lagging: { color: '#f0883e', dash: [9, 5] },
  stopped: { color: '#8b949e', dash: [3, 5] },
  waiting: { color: '#8b949e', dash: [3, 5] },
  mismatched: { color: '#f85149', dash: [9, 5] },
  unknown: { color: '#d2a8ff', dash: [3, 5] },
};

/**
 * How long before the status was read the link's last packet came, in words.
 * @param l the link
 * @param at the status answer's `timestamp` (same clock as `last_packet_time`: the server's)
 * @returns `0.3 s ago`, `4 min 2 s ago`, `never` before the first packet
 */
export function lastPacketAge(l: LinkStatus, at: string): string {
  if (!l.last_packet_time) return 'never';
  const ms = Date.parse(at) - Date.parse(l.last_packet_time);
  if (!Number.isFinite(ms)) return '-';
  const s = Math.max(0, ms) / 1000;
  return s < 60 ? `${s.toFixed(1)} s ago` : `${duration(s)} ago`;
}

/** Packet loss as a percentage with one decimal (`1.7`). */
export function lossPercent(l: LinkStatus): string {
  return num(l.packet_loss_rate * 100, 1);
}
