import type { Observable, SchedulerLike } from 'rxjs';
import type { CaptureFormat } from '../csi/frame.js';
import type { DecodeStats } from '../csi/decoder.js';
import type { ViewSettings } from '../pose/camera.js';
import { createStreamDecoder, formatFromFileName, isCaptureFormat } from '../decoders/index.js';
import { decode } from '../../operators/decode.js';
import { fileBytes, stdinBytes } from './bytes.js';
import { replayFile } from './replayFile.js';
import { udpSource } from './udp.js';
import { mqttSource, parseMqttUri } from './mqtt.js';
import { simSource, parseSimParams } from './sim.js';
import { SourceError } from './errors.js';
import type { Demand } from './demand.js';

export { SourceError };

/** Settings a source takes from the command line rather than from its URI. */
export interface SourceContext {
  /** Replay speed for file sources (1 = recorded pace, 0 = as fast as possible). */
  speed?: number;
  environmentId?: string;
  scheduler?: SchedulerLike;
  /** The reference view (`environment.view`) the simulator's ground truth is projected through, read live; other sources ignore it. */
  view?: () => Readonly<ViewSettings>;
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
  if (!isCaptureFormat(f)) throw new SourceError(`unknown format "${f}" in ${uri} (formats: intel5300, atheros, nexmon, esp32)`);
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
 * Parses a source URI:
 * - `sim` or `sim?seed=7&people=2&nsub=30&band=5&speed=1`: the built-in simulator
 * - `file:PATH[?format=F&speed=N&loop=K]`: a capture file (format guessed from the name if absent)
 * - `udp://HOST:PORT?format=esp32|nexmon|intel5300`: live packets
 * - `mqtt://[USER:PASS@]HOST[:PORT]/TOPIC?format=esp32|nexmon[&qos=0|1&client_id=ID]` (or `mqtts://`):
 *   live messages from a broker, one CSI line or Nexmon payload each; `+` and `#` (written `%23` or
 *   as is) in TOPIC; default port 1883 (mqtts 8883); credentials else from `CSIPOSE_MQTT_USERNAME` /
 *   `CSIPOSE_MQTT_PASSWORD`
 * - `stdin[?format=F]` or `-`: bytes on standard input
 * @param uri the URI as written
 * @returns its definition; opening it happens later
 * @throws SourceError for a malformed URI
 */
export function parseSource(uri: string): SourceDef {
  const { base, q } = query(uri);
  if (base === 'sim' || base === 'sim:') {
    const simParams = parseSimParams(q);
    const speed = speedParam(q);
    return {
      uri,
      emits: ['frame'],
      open: (_k, ctx) => simSource({ ...simParams, environmentId: ctx.environmentId ?? simParams.environmentId }, {
        speed: speed ?? ctx.speed ?? 1,
        ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
        ...(ctx.view ? { view: ctx.view } : {}),
        ...(ctx.demand ? { demand: ctx.demand } : {}),
      }),
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
    return {
      uri,
      emits: format ? ['bytes', 'frame'] : ['bytes'],
      open(kind, ctx) {
        if (kind === 'bytes') return fileBytes(path, ctx.demand);
        const f = format;
        if (!f) throw new SourceError(`cannot tell the format of ${path}: add ?format=intel5300|atheros|nexmon|esp32`);
        const opts = { sourceId: `file:${path}`, environmentId: ctx.environmentId ?? 'default' };
        return replayFile(path, () => createStreamDecoder(f, opts), {
          speed: speed ?? ctx.speed ?? 1,
          loops,
          ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
          ...(ctx.onDecodeStats ? { onStats: ctx.onDecodeStats } : {}),
          ...(ctx.demand ? { demand: ctx.demand } : {}),
        });
      },
    };
  }
  if (base.startsWith('udp://')) {
    const hp = base.slice(6);
    const colon = hp.lastIndexOf(':');
    const host = colon > 0 ? hp.slice(0, colon).replace(/^\[|\]$/g, '') : '';
    const port = Number(hp.slice(colon + 1));
    if (!host || !Number.isInteger(port) || port < 0 || port > 65535)
      throw new SourceError(`udp source must be udp://HOST:PORT?format=F, got ${uri}`);
    const format = formatParam(q, uri);
    if (!format) throw new SourceError(`udp source needs ?format=esp32|nexmon|intel5300`);
    return {
      uri,
      emits: ['frame'],
      open: (_k, ctx) => udpSource({ host, port, format, environmentId: ctx.environmentId ?? 'default' }),
    };
  }
  if (base.startsWith('mqtt://') || base.startsWith('mqtts://')) {
    const m = parseMqttUri(uri);
    return {
      uri,
      emits: ['frame'],
      open: (_k, ctx) => mqttSource({ ...m, environmentId: ctx.environmentId ?? 'default' }),
    };
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
        return bytes.pipe(
          decode(() => createStreamDecoder(format!, opts), ctx.onDecodeStats ? { onStats: ctx.onDecodeStats } : {}),
        );
      },
    };
  }
  throw new SourceError(`unknown source "${uri}" (sources: sim, file:PATH, udp://HOST:PORT?format=F, stdin, mqtt://HOST:PORT/TOPIC?format=F)`);
}
