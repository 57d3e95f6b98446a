import type { Observable, SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CaptureFormat } from '../decoders/registry.js';
import type { DecodeStats } from '../csi/decoder.js';
import type { RadioConfig } from '../csi/radios.js';
import type { ViewSettings } from '../pose/camera.js';
import { createStreamDecoder, formatFromFileName, formatList, isCaptureFormat } from '../decoders/index.js';
import { decode } from '../../operators/decode.js';
import { fileBytes, stdinBytes } from './bytes.js';
import { replayFile } from './replayFile.js';
import { udpSource } from './udp.js';
import { mqttSource, parseMqttUri } from './mqtt.js';
import { simSource, parseSimParams } from './sim.js';
import { SourceError } from './errors.js';
import type { Demand } from './demand.js';
import { LinkResolver, linkNames, parseLinkParam, type LinkParam } from './links.js';
import { mergeReplays } from './merge.js';
import { defer, merge } from 'rxjs';

export { SourceError };

/** Settings a source takes from the command line rather than from its URI. */
export interface SourceContext {
  /** Replay speed for file sources (1 = recorded pace, 0 = as fast as possible). */
  speed?: number;
  environmentId?: string;
  scheduler?: SchedulerLike;
  /** The reference view (`environment.view`) the simulator's ground truth is projected through, read live; other sources ignore it. */
  view?: () => Readonly<ViewSettings>;
  /** The site (`environment.site.radios`) the simulator simulates, every link of it, read when the source opens; other sources ignore it. */
  radios?: () => readonly RadioConfig[];
  /** Final decode counts of byte sources (the CLI prints the skipped count). */
  onDecodeStats?: (stats: DecodeStats) => void;
  /** The consumer's backpressure, heeded by the sources that can wait (sim, file, stdin); live ones ignore it. */
  demand?: Demand;
}

/** A parsed `--source` / first pipeline stage. */
export interface SourceDef {
  readonly uri: string;
  /** What it can emit: raw bytes for a decoder stage, or decoded frames. */
  readonly emits: ReadonlyArray<'bytes' | 'frame'>;
  open(kind: 'bytes' | 'frame', ctx: SourceContext): Observable<unknown>;
}

function query(uri: string): { base: string; q: URLSearchParams } {
  const i = uri.indexOf('?');
  return i < 0 ? { base: uri, q: new URLSearchParams() } : { base: uri.slice(0, i), q: new URLSearchParams(uri.slice(i + 1)) };
}

function formatParam(q: URLSearchParams, uri: string): CaptureFormat | undefined {
  const f = q.get('format');
  if (f === null) return undefined;
  if (!isCaptureFormat(f)) throw new SourceError(`unknown format "${f}" in ${uri} (formats: ${formatList(', ')})`);
  return f;
}

/** The URI's `speed`, checked when the URI is parsed so a bad value is a usage error; undefined when absent. */
function speedParam(q: URLSearchParams): number | undefined {
  const s = q.get('speed');
  if (s === null) return undefined;
  const v = Number(s);
  if (s.trim() === '' || !Number.isFinite(v) || v < 0) throw new SourceError(`speed must be a number >= 0, got "${s}"`);
  return v;
}

/**
 * Parses a source URI, or several separated by white space (one environment, several links):
 * - `sim` or `sim?seed=7&people=2&nsub=30&band=5&speed=1&links=3`: the built-in simulator (every
 *   link of the context's site, or its first `links` receivers; parseSimParams)
 * - `file:PATH[?format=F&speed=N&loop=K&link=RX]`: a capture file (format guessed from the name if
 *   absent); F names a format of src/decoders/registry.ts, e.g. intel5300
 * - `udp://HOST:PORT?format=F[&link=RX | &senders=RX@ADDR,RX@ADDR]`: live
 *   packets; `senders` shares one port among several receivers, told apart by source address
 *   (datagrams from unlisted addresses are dropped and counted); each sender has its own decoder and
 *   `sourceId` `udp://HOST:PORT#RX`
 * - `mqtt://[USER:PASS@]HOST[:PORT]/TOPIC?format=F[&qos=0|1&client_id=ID&link=RX|topic]`
 *   (or `mqtts://`): live messages from a broker, one record each (an ESP32 line, a Nexmon
 *   payload: the formats with a `message` in src/decoders/registry.ts); `+` and `#`
 *   (written `%23` or as is) in TOPIC; default port 1883 (mqtts 8883); credentials else from
 *   `CSIPOSE_MQTT_USERNAME` / `CSIPOSE_MQTT_PASSWORD`; `link=topic` names the receiver by the last
 *   level of each message's topic (messages whose last level is no receiver of the site are dropped
 *   and counted)
 * - `stdin[?format=F]` or `-`: bytes on standard input
 *
 * Links (DECISIONS "Sites with several radios"): `link=RX` names a receiver of
 * `environment.site.radios`; the frames then carry `linkId` `<tx>-<RX>`, the transmitter's id taken
 * from the site the source is opened with (`SourceContext.radios`), `tx` without one. The full link
 * id (`link=tx-rx2`) is accepted too. Without `link` the frames are on the environment's primary link.
 *
 * Several sources: `udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300&link=rx2`.
 * A new source starts where white space is followed by `file:`, `udp://`, `mqtt://` or `mqtts://`
 * (so a single file path may still hold spaces). Every listed source names its link(s), no link,
 * file or UDP port is listed twice, and sources are either all live (udp, mqtt: merged as they come)
 * or all files (merged in time order, src/sources/merge.ts, at one `speed` for all). The simulator
 * and stdin cannot be listed: the simulator brings its site's links itself.
 * @param uri the URI as written
 * @returns its definition; opening it happens later
 * @throws SourceError for a malformed URI
 */
export function parseSource(uri: string): SourceDef {
  const parts = splitSources(uri);
  for (const p of parts) {
    // Only a file path may hold white space: anything else after it is not a source.
    const gap = /\s+/.exec(p);
    if (gap && !p.startsWith('file:'))
      throw new SourceError(
        `"${shown(p.slice(gap.index + gap[0].length))}" is not a source (a list holds file:PATH, udp://HOST:PORT or mqtt://HOST/TOPIC URIs separated by white space)`,
      );
  }
  return parts.length > 1 ? parseList(uri.trim(), parts) : parseOne(parts[0] ?? uri);
}

/** One source URI; see {@link parseSource}. */
function parseOne(uri: string): SourceDef {
  const { base, q } = query(uri);
  if (base === 'sim' || base === 'sim:') {
    const simParams = parseSimParams(q);
    const speed = speedParam(q);
    return {
      uri,
      emits: ['frame'],
      open: (_k, ctx) =>
        simSource(
          { ...simParams, environmentId: ctx.environmentId ?? simParams.environmentId },
          {
            speed: speed ?? ctx.speed ?? 1,
            ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
            ...(ctx.view ? { view: ctx.view } : {}),
            ...(ctx.demand ? { demand: ctx.demand } : {}),
            ...(ctx.radios ? { radios: ctx.radios } : {}),
          },
        ),
    };
  }
  if (base.startsWith('file:')) {
    const path = base.slice(5);
    if (!path) throw new SourceError(`file source needs a path: file:PATH`);
    // Without a format that the URI or the file name gives, only a decoder stage can read it.
    const format = formatParam(q, uri) ?? formatFromFileName(path);
    const speed = speedParam(q);
    const loops = q.has('loop') ? Number(q.get('loop')) : 1;
    if (!Number.isInteger(loops) || loops < 0) throw new SourceError(`loop must be an integer >= 0 (0 = forever)`);
    const link = parseLinkParam(q, uri, {});
    const def: SourceDef = {
      uri,
      emits: format ? ['bytes', 'frame'] : ['bytes'],
      open(kind, ctx) {
        if (kind === 'bytes') return fileBytes(path, ctx.demand);
        const f = format;
        if (!f) throw new SourceError(`cannot tell the format of ${path}: add ?format=${formatList('|')}`);
        const opts = { sourceId: `file:${path}`, environmentId: ctx.environmentId ?? 'default' };
        return defer(() => {
          const linkId = fixedLink(link, uri, ctx);
          return replayFile(path, () => createStreamDecoder(f, opts), {
            speed: speed ?? ctx.speed ?? 1,
            loops,
            ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
            ...(ctx.onDecodeStats ? { onStats: ctx.onDecodeStats } : {}),
            ...(ctx.demand ? { demand: ctx.demand } : {}),
            ...(linkId !== undefined ? { linkId } : {}),
          });
        });
      },
    };
    PARTS.set(def, { kind: 'file', link, key: `file:${path}`, file: { path, format, loops, speed } });
    return def;
  }
  if (base.startsWith('udp://')) {
    const hp = base.slice(6);
    const colon = hp.lastIndexOf(':');
    const host = colon > 0 ? hp.slice(0, colon).replace(/^\[|\]$/g, '') : '';
    const port = Number(hp.slice(colon + 1));
    if (!host || !Number.isInteger(port) || port < 0 || port > 65535) throw new SourceError(`udp source must be udp://HOST:PORT?format=F, got ${uri}`);
    const format = formatParam(q, uri);
    if (!format) throw new SourceError(`udp source needs ?format=${formatList('|')}`);
    const link = parseLinkParam(q, uri, { senders: true });
    const def: SourceDef = {
      uri,
      emits: ['frame'],
      open: (_k, ctx) =>
        defer(() => {
          const resolver = new LinkResolver(ctx.radios?.());
          const linkId = fixedLink(link, uri, ctx);
          const senders =
            link.kind === 'senders' ? link.senders.map((s) => ({ address: s.address, name: s.name, linkId: resolver.resolve(s.name, uri) })) : undefined;
          return udpSource({
            host,
            port,
            format,
            environmentId: ctx.environmentId ?? 'default',
            ...(linkId !== undefined ? { linkId } : {}),
            ...(senders ? { senders } : {}),
          });
        }),
    };
    // Port 0 picks a free port each time: never the same port twice.
    PARTS.set(def, { kind: 'live', link, key: port === 0 ? undefined : `udp port ${port}` });
    return def;
  }
  if (base.startsWith('mqtt://') || base.startsWith('mqtts://')) {
    const m = parseMqttUri(uri);
    const where = `mqtt topic "${m.topic}"`;
    const link: LinkParam = m.link ?? { kind: 'none' };
    const def: SourceDef = {
      uri,
      emits: ['frame'],
      open: (_k, ctx) =>
        defer(() => {
          const resolver = new LinkResolver(ctx.radios?.());
          const linkId = fixedLink(link, where, ctx);
          return mqttSource({
            ...m,
            environmentId: ctx.environmentId ?? 'default',
            ...(linkId !== undefined ? { linkId } : {}),
            ...(link.kind === 'topic' ? { linkOfTopic: (topic: string) => resolver.find(lastLevel(topic)) } : {}),
          });
        }),
    };
    PARTS.set(def, { kind: 'live', link, key: undefined });
    return def;
  }
  if (base === 'stdin' || base === '-') {
    const format = formatParam(q, uri);
    return {
      uri,
      emits: format ? ['bytes', 'frame'] : ['bytes'],
      open(kind, ctx) {
        const bytes = stdinBytes(ctx.demand);
        if (kind === 'bytes') return bytes;
        const opts = { sourceId: 'stdin', environmentId: ctx.environmentId ?? 'default' };
        return bytes.pipe(decode(() => createStreamDecoder(format!, opts), ctx.onDecodeStats ? { onStats: ctx.onDecodeStats } : {}));
      },
    };
  }
  throw new SourceError(`unknown source "${uri}" (sources: sim, file:PATH, udp://HOST:PORT?format=F, stdin, mqtt://HOST:PORT/TOPIC?format=F)`);
}

/** What a list of sources needs to know of each parsed source. */
interface Parts {
  kind: 'file' | 'live';
  link: LinkParam;
  /** What must not be listed twice (a file, a UDP port); undefined when nothing. */
  key: string | undefined;
  file?: { path: string; format: CaptureFormat | undefined; loops: number; speed: number | undefined };
}

const PARTS = new WeakMap<SourceDef, Parts>();

/** The link id of a `link=RX` parameter against the context's site; undefined without one. */
function fixedLink(link: LinkParam, where: string, ctx: SourceContext): string | undefined {
  return link.kind === 'fixed' ? new LinkResolver(ctx.radios?.()).resolve(link.name, where) : undefined;
}

/** The last level of an MQTT topic, which `link=topic` takes as the receiver id. */
function lastLevel(topic: string): string {
  return topic.slice(topic.lastIndexOf('/') + 1);
}

/** Where white space starts another source of a list (a file path may hold spaces before anything else). */
const NEXT_SOURCE = /\s+(?=file:|udp:\/\/|mqtts?:\/\/|sim(?:[?:]|\s|$)|stdin(?:\?|\s|$))/;

/** The URIs of a source list; one element for a single URI. */
function splitSources(uri: string): string[] {
  return uri
    .trim()
    .split(NEXT_SOURCE)
    .filter((u) => u.length > 0);
}

/** A URI as messages may show it: without the credentials of an mqtt:// URI. */
function shown(uri: string): string {
  return uri.replace(/^(mqtts?:\/\/)[^/?]*@/, '$1');
}

/** Several sources of one environment; see {@link parseSource}. */
function parseList(uri: string, uris: readonly string[]): SourceDef {
  const parsed = uris.map((u) => {
    if (/^(sim|stdin|-)([?:]|$)/.test(u))
      throw new SourceError(
        `${u.startsWith('sim') ? 'sim' : 'stdin'} cannot be listed with other sources: the simulator brings its site's links itself, stdin is one stream`,
      );
    const def = parseOne(u);
    return { uri: u, def, parts: PARTS.get(def)! };
  });
  const byLink = new Map<string, string>();
  const byKey = new Map<string, string>();
  for (const p of parsed) {
    if (p.parts.link.kind === 'none') throw new SourceError(`each of several sources names its link: add &link=RX (a receiver id) to ${shown(p.uri)}`);
    for (const name of linkNames(p.parts.link)) {
      const other = byLink.get(name);
      if (other !== undefined) throw new SourceError(`link "${name}" is given by two sources: ${other} and ${shown(p.uri)}`);
      byLink.set(name, shown(p.uri));
    }
    const key = p.parts.key;
    if (key !== undefined) {
      if (byKey.has(key)) throw new SourceError(`${key} is listed twice`);
      byKey.set(key, p.uri);
    }
  }
  const files = parsed.filter((p) => p.parts.kind === 'file');
  if (files.length > 0 && files.length < parsed.length) throw new SourceError('file replays and live sources (udp, mqtt) cannot be listed together');
  if (files.length === 0) {
    return {
      uri,
      emits: ['frame'],
      open: (_k, ctx) => merge(...parsed.map((p) => p.def.open('frame', ctx) as Observable<CsiFrame>)),
    };
  }
  let speed: number | undefined;
  for (const p of files) {
    const f = p.parts.file!;
    if (!f.format) throw new SourceError(`cannot tell the format of ${f.path}: add ?format=${formatList('|')}`);
    if (f.speed !== undefined && speed !== undefined && f.speed !== speed)
      throw new SourceError(`listed files replay at one speed: got speed=${speed} and speed=${f.speed}`);
    speed ??= f.speed;
  }
  return {
    uri,
    emits: ['frame'],
    open: (_k, ctx) =>
      defer(() => {
        const environmentId = ctx.environmentId ?? 'default';
        const inputs = files.map((p) => {
          const f = p.parts.file!;
          const format = f.format!;
          const linkId = fixedLink(p.parts.link, p.uri, ctx);
          const opts = { sourceId: `file:${f.path}`, environmentId };
          return { path: f.path, createDecoder: () => createStreamDecoder(format, opts), loops: f.loops, ...(linkId !== undefined ? { linkId } : {}) };
        });
        return mergeReplays(inputs, {
          speed: speed ?? ctx.speed ?? 1,
          ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
          ...(ctx.onDecodeStats ? { onStats: ctx.onDecodeStats } : {}),
          ...(ctx.demand ? { demand: ctx.demand } : {}),
        });
      }),
  };
}
