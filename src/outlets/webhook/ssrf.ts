import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';
import { promisify } from 'node:util';

/**
 * Where webhooks may go (server-side request forgery). A webhook URL is http or https, without
 * credentials, and its host, once resolved, must be a public address: private (10/8, 172.16/12,
 * 192.168/16, fc00::/7), loopback (127/8, ::1), link-local (169.254/16, fe80::/10), shared
 * (100.64/10), unspecified (0/8, ::), multicast, reserved and documentation ranges are refused,
 * and so are IPv6 forms that carry such an IPv4 address (::ffff:a.b.c.d, 64:ff9b::/96, 2002::/16).
 * The check runs at registration and again at every connection, on the address the connection
 * is made to (the resolver of the request is {@link guardedLookup}), so a name that resolves to
 * a public address at registration and to 127.0.0.1 later (DNS rebinding) is still refused.
 * `webhooks.allow_private_networks` lifts the address rule (the scheme and credential rules stay).
 */

const V4: ReadonlyArray<readonly [string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved (IETF protocol assignments)'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved (benchmarking)'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V6: ReadonlyArray<readonly [string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'private (unique local)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'documentation'],
  ['100::', 64, 'discard'],
];

/** An IPv4 address carried in an IPv6 one (NAT64 64:ff9b::/96, 6to4 2002::/16), or undefined. */
function embeddedV4(ip6: string): string | undefined {
  const full = expand(ip6);
  if (!full) return undefined;
  const hex = (i: number) => parseInt(full[i]!, 16);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (hex(0) === 0x64 && hex(1) === 0xff9b && hex(2) === 0 && hex(3) === 0 && hex(4) === 0 && hex(5) === 0) return v4(hex(6), hex(7));
  if (hex(0) === 0x2002) return v4(hex(1), hex(2));
  return undefined;
}

/** The eight groups of an IPv6 address (a dotted IPv4 tail turned into two groups). */
function expand(ip6: string): string[] | undefined {
  let s = ip6.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    s = s.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  if (tail === undefined) return h.length === 8 ? h : undefined;
  const fill = 8 - h.length - t.length;
  return fill < 0 ? undefined : [...h, ...Array<string>(fill).fill('0'), ...t];
}

/** Checks addresses against the ranges a webhook may not reach. One per outlet (no module state). */
export class AddressPolicy {
  private readonly rules: Array<{ list: BlockList; why: string }> = [];

  constructor() {
    for (const [net, prefix, why] of V4) this.rule(why).addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix, why] of V6) this.rule(why).addSubnet(net, prefix, 'ipv6');
  }

  private rule(why: string): BlockList {
    let r = this.rules.find((x) => x.why === why);
    if (!r) this.rules.push((r = { list: new BlockList(), why }));
    return r.list;
  }

  /**
   * Why an address may not be reached, or undefined when it may.
   * @param ip an IPv4 or IPv6 address (no brackets)
   * @returns e.g. `loopback`
   * @example new AddressPolicy().refusal('169.254.169.254') // 'link-local'
   */
  refusal(ip: string): string | undefined {
    const family = isIP(ip);
    if (family === 0) return 'not an IP address';
    const type = family === 4 ? 'ipv4' : 'ipv6';
    // BlockList also matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against the IPv4 rules.
    for (const r of this.rules) if (r.list.check(ip, type)) return r.why;
    if (family === 6) {
      const v4 = embeddedV4(ip);
      if (v4 !== undefined) {
        const why = this.refusal(v4);
        if (why) return `${why} (IPv4 ${v4} inside IPv6)`;
      }
    }
    return undefined;
  }
}

/** A URL a webhook may not use; the message says why. */
export class UrlRefused extends Error {
  override readonly name = 'UrlRefused';
}

const lookupAll = promisify(dnsLookup);

/** The host of a URL as an address when it is a literal (IPv6 without brackets), else undefined. */
function literal(hostname: string): string | undefined {
  const h = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(h) ? h : undefined;
}

/**
 * Reads a webhook URL: http or https, a host, no user name or password, at most 2048 characters.
 * @param text the URL as given
 * @returns the parsed URL
 * @throws UrlRefused saying what is wrong
 */
export function readWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UrlRefused('url must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlRefused(`url must be http:// or https://, not ${url.protocol}//`);
  if (url.username || url.password) throw new UrlRefused('url must not carry a user name or password (the signature authenticates the service)');
  if (!url.hostname) throw new UrlRefused('url must name a host');
  if (url.hash) throw new UrlRefused('url must not have a #fragment');
  return url;
}

/**
 * Checks a webhook URL's host against the address rules now: a literal address as is, a name by
 * every address it resolves to (all must be allowed).
 * @param url a URL from {@link readWebhookUrl}
 * @param policy the address rules
 * @param allowPrivate `webhooks.allow_private_networks`
 * @throws UrlRefused naming the address and why
 */
export async function checkHost(url: URL, policy: AddressPolicy, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const lit = literal(url.hostname);
  const addresses = lit
    ? [lit]
    : await lookupAll(url.hostname, { all: true, verbatim: true }).then(
        (r) => r.map((a) => a.address),
        (e: NodeJS.ErrnoException) => {
          throw new UrlRefused(`url's host ${url.hostname} does not resolve (${e.code ?? e.message})`);
        },
      );
  for (const a of addresses) {
    const why = policy.refusal(a);
    if (why) throw new UrlRefused(`url's host ${url.hostname} is ${a}, a ${why} address (webhooks.allow_private_networks is false)`);
  }
}

/**
 * The resolver a delivery connects through: Node's own lookup, then the address rules on what it
 * found, so the address checked is the address connected to. Node does not call it for a literal
 * address (check those with {@link checkHost} first).
 * @param policy the address rules
 * @param allowPrivate read at each lookup (`webhooks.allow_private_networks`)
 */
export function guardedLookup(policy: AddressPolicy, allowPrivate: () => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as unknown as Array<{ address: string; family: number }>;
      if (!allowPrivate()) {
        for (const a of list) {
          const why = policy.refusal(a.address);
          if (why) {
            const e = new UrlRefused(`${hostname} resolved to ${a.address}, a ${why} address (webhooks.allow_private_networks is false)`);
            return callback(Object.assign(e, { code: 'EREFUSEDADDRESS' }), '', 0);
          }
        }
      }
      if (options.all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}
