/**
 * Which link (transmitter-receiver pair, src/csi/radios.ts) a source's frames are on: the `link=`
 * and `senders=` parameters of source URIs (DECISIONS "Sites with several radios").
 *
 * A URI names receivers, since a site has one transmitter: `link=rx2` is the link `<tx>-rx2`, with
 * the transmitter's id from the site's radios (`environment.site.radios`) when the source is opened
 * with them, else `tx` (the default site's). The full link id is accepted too (`link=tx-rx2`).
 * With a site, a name that is neither one of its receivers nor one of its links is an error when
 * the source opens; without one, a name starting with `tx-` is taken as a full link id and any
 * other as a receiver id.
 */
import { isIP } from 'node:net';
import { linkId, type RadioConfig } from '../csi/radios.js';
import { SourceError } from './errors.js';

/** A receiver id or a full link id as a URI may name it: 1-65 of a-z, 0-9, `_`, `-`. */
const LINK_NAME = /^[a-z0-9_-]{1,65}$/;

/** The transmitter id links are named after when the source is opened without a site. */
export const DEFAULT_TX_ID = 'tx';

/** One `senders=` entry: datagrams from `address` are the receiver `name`'s. */
export interface SenderSpec {
  /** Receiver id (or full link id) as written. */
  readonly name: string;
  /** The sender's IP address, normalised ({@link normaliseAddress}). */
  readonly address: string;
}

/**
 * What a URI says about its links:
 * - `none`: nothing, every frame is on the environment's primary link;
 * - `fixed`: every frame is on the link of receiver `name`;
 * - `topic`: (mqtt) the last level of each message's topic names the receiver;
 * - `senders`: (udp) the datagram's source address picks the receiver.
 */
export type LinkParam =
  | { readonly kind: 'none' }
  | { readonly kind: 'fixed'; readonly name: string }
  | { readonly kind: 'topic' }
  | { readonly kind: 'senders'; readonly senders: readonly SenderSpec[] };

/**
 * Checks a receiver or link name as written in a URI.
 * @throws SourceError when it is not 1-65 of a-z, 0-9, `_`, `-`
 */
export function checkLinkName(name: string, where: string): string {
  if (!LINK_NAME.test(name)) throw new SourceError(`link "${name}" in ${where} must be a receiver id (1-65 of a-z, 0-9, _ and -), e.g. link=rx1`);
  return name;
}

/**
 * An IP address as a datagram's sender reports it: IPv4-mapped IPv6 (`::ffff:10.0.0.2`, what a
 * dual-stack socket reports for IPv4 senders) becomes plain IPv4, IPv6 is lower-cased.
 */
export function normaliseAddress(address: string): string {
  const a = address.toLowerCase();
  return a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}

/**
 * Reads `link=` and `senders=` of a URI's query.
 * @param q the query
 * @param where the source as messages name it (the URI, or for mqtt a form without credentials)
 * @param allowed what this kind of source can take: `topic` only mqtt, `senders` only udp
 * @throws SourceError for a bad name, address, duplicate, or both parameters at once
 */
export function parseLinkParam(q: URLSearchParams, where: string, allowed: { topic?: boolean; senders?: boolean }): LinkParam {
  const link = q.get('link');
  const senders = q.get('senders');
  if (link !== null && senders !== null) throw new SourceError(`${where}: give link= or senders=, not both`);
  if (senders !== null) {
    if (!allowed.senders) throw new SourceError(`${where}: senders= is for udp sources only`);
    return { kind: 'senders', senders: parseSenders(senders, where) };
  }
  if (link === null) return { kind: 'none' };
  if (link === 'topic') {
    if (!allowed.topic) throw new SourceError(`${where}: link=topic is for mqtt sources only; name a receiver, e.g. link=rx1`);
    return { kind: 'topic' };
  }
  return { kind: 'fixed', name: checkLinkName(link, where) };
}

/** `rx1@10.0.0.21,rx2@10.0.0.22` (IPv6 as `rx3@[fe80::1]` or `rx3@fe80::1`). */
function parseSenders(text: string, where: string): SenderSpec[] {
  const usage = 'senders=RX@ADDRESS,RX@ADDRESS (e.g. senders=rx1@10.0.0.21,rx2@10.0.0.22)';
  const out: SenderSpec[] = [];
  for (const entry of text.split(',')) {
    const at = entry.indexOf('@');
    if (at <= 0) throw new SourceError(`${where}: "${entry}" is not RX@ADDRESS: ${usage}`);
    const name = checkLinkName(entry.slice(0, at), where);
    const raw = entry.slice(at + 1).replace(/^\[(.*)\]$/, '$1');
    if (isIP(raw) === 0) throw new SourceError(`${where}: "${entry.slice(at + 1)}" of sender ${name} is not an IP address: ${usage}`);
    const address = normaliseAddress(raw);
    if (out.some((s) => s.address === address)) throw new SourceError(`${where}: sender address ${address} is listed twice`);
    if (out.some((s) => s.name === name)) throw new SourceError(`${where}: receiver ${name} is listed twice in senders=`);
    out.push({ name, address });
  }
  return out;
}

/** The names a link parameter gives (for duplicate checks across a list of sources). */
export function linkNames(p: LinkParam): string[] {
  return p.kind === 'fixed' ? [p.name] : p.kind === 'senders' ? p.senders.map((s) => s.name) : [];
}

/**
 * Turns receiver names into link ids against a site (or the default transmitter id without one).
 */
export class LinkResolver {
  private readonly txId: string;
  private readonly receivers: readonly string[] | undefined;

  /**
   * @param radios the site's radios (`environment.site.radios`); undefined when the site is not known
   */
  constructor(radios: readonly RadioConfig[] | undefined) {
    const tx = radios?.find((r) => r.role === 'tx');
    this.txId = tx?.id ?? DEFAULT_TX_ID;
    this.receivers = tx ? radios!.filter((r) => r.role === 'rx').map((r) => r.id) : undefined;
  }

  /**
   * The link id of a receiver name, or undefined when the site has no such receiver or link.
   * @param name a receiver id or full link id
   */
  find(name: string): string | undefined {
    if (!this.receivers) return name.startsWith(`${this.txId}-`) ? name : linkId(this.txId, name);
    if (this.receivers.includes(name)) return linkId(this.txId, name);
    return this.receivers.some((rx) => linkId(this.txId, rx) === name) ? name : undefined;
  }

  /**
   * The link id of a receiver name.
   * @param name a receiver id or full link id
   * @param where the source, for the message
   * @throws SourceError when the site has no such receiver
   */
  resolve(name: string, where: string): string {
    const id = this.find(name);
    if (id === undefined)
      throw new SourceError(`link "${name}" of ${where} is not a receiver of this site (receivers: ${this.receivers!.join(', ') || 'none'})`);
    return id;
  }
}
