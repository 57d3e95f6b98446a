import { randomBytes } from 'node:crypto';
import mqtt, { ErrorWithReasonCode, type IClientOptions, type MqttClient } from 'mqtt';
import { Observable, type Subscriber } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CaptureFormat } from '../decoders/registry.js';
import type { CsiDecoder, DecodeStats } from '../csi/decoder.js';
import { createDatagramDecoder, formatList, isCaptureFormat, mqttFormats, type MessageFormat } from '../decoders/index.js';
import { stampTime } from '../decoders/replayClock.js';
import { SourceError } from './errors.js';
import { parseLinkParam, type LinkParam } from './links.js';
import { brokerName, envCredentials, RECONNECT_MIN_MS, withBackoff } from '../mqtt/connection.js';

/** Capture formats whose records fit one MQTT message each: those with a `message` in src/decoders/registry.ts. */
export type MqttFormat = MessageFormat;

/** `esp32|nexmon`: the formats an MQTT message can carry, for usage lines. */
function mqttFormatChoices(sep: string): string {
  return formatList(
    sep,
    mqttFormats().map((e) => e.name),
  );
}

/** Subscription QoS levels the source asks for (QoS 2 buys nothing for CSI that QoS 1 does not). */
export type MqttQos = 0 | 1;

/** Distinct topics whose decoders are kept; past this the least recently used one is dropped. */
export const MAX_TOPIC_DECODERS = 1024;

/**
 * CONNACK return codes (MQTT 3.1.1) that say the broker cannot serve us now rather than that the
 * URI is wrong: 3 = server unavailable. Retried like a network failure.
 */
const TRANSIENT_CONNACK_CODES: ReadonlySet<number> = new Set([3]);

export interface MqttSourceOptions {
  /** Broker without topic or credentials, e.g. `mqtt://192.168.1.2:1883` or `mqtts://broker:8883`. */
  url: string;
  /** Topic filter; `+` and `#` wildcards allowed. Each frame's `sourceId` is its message's topic. */
  topic: string;
  /** What each message holds: one ESP32 CSI line or one Nexmon CSI UDP payload. */
  format: CaptureFormat;
  environmentId?: string;
  username?: string;
  password?: string;
  /** Subscription QoS; default 0. */
  qos?: MqttQos;
  /** Default `csipose-src-<random hex>`. */
  clientId?: string;
  /** Called once, when the broker acknowledged the first subscription (publishing is then seen). */
  onReady?: () => void;
  /** Live counters, updated as messages arrive and the connection comes and goes. */
  stats?: MqttSourceStats;
  /** The link every frame is on (`<tx>-<rx>`); absent (and no `linkOfTopic`) = the environment's primary link. */
  linkId?: string;
  /**
   * The link of a topic's messages, asked once per topic (e.g. from its last level); undefined
   * drops the topic's messages, counted in `stats.unknownLink`. Wins over `linkId`.
   */
  linkOfTopic?: (topic: string) => string | undefined;
}

/** Live counters of an MQTT source; records, skipped and bytes add up over every topic. */
export interface MqttSourceStats extends DecodeStats {
  /** Messages received. */
  messages: number;
  /** Times the connection came back after being lost. */
  reconnects: number;
  /** True while connected to the broker (CONNACK accepted, not yet closed). */
  connected: boolean;
  /** Messages dropped because their topic names no link of the site (`link=topic`). */
  unknownLink: number;
}

/** An `mqtt://` source URI taken apart; see {@link parseMqttUri}. */
export interface MqttUri {
  /** Broker URL without credentials or topic, e.g. `mqtt://127.0.0.1:1883`. */
  url: string;
  host: string;
  port: number;
  topic: string;
  format: MqttFormat;
  qos: MqttQos;
  clientId?: string;
  username?: string;
  password?: string;
  /** `link=`: a fixed receiver or `topic` (the topic's last level names it); absent without `link=`. */
  link?: LinkParam;
}

/** A fresh counter object for {@link MqttSourceOptions.stats}. */
export function newMqttStats(): MqttSourceStats {
  return { messages: 0, records: 0, skipped: 0, bytes: 0, reconnects: 0, connected: false, unknownLink: 0 };
}

/**
 * True when `topic` is a valid MQTT topic filter: not empty, `+` only as a whole level, `#` only
 * as the whole last level.
 *
 * @example
 * isTopicFilter('csi/+/esp32') // true
 * isTopicFilter('csi/#/x')     // false
 */
export function isTopicFilter(topic: string): boolean {
  if (topic.length === 0) return false;
  const levels = topic.split('/');
  return levels.every((l, i) => l === '+' || (l === '#' && i === levels.length - 1) || (!l.includes('+') && !l.includes('#')));
}

/**
 * Takes apart `mqtt://[USER:PASS@]HOST[:PORT]/TOPIC?format=F[&qos=0|1&client_id=ID&link=RX|topic]`
 * (or `mqtts://`). `link=RX` puts every frame on receiver RX's link, `link=topic` names the
 * receiver by the last level of each message's topic (src/sources/links.ts). F is a format whose
 * records fit one message (`message` in src/decoders/registry.ts, e.g. esp32). Parsed by hand rather than with `new URL`, because a topic filter's `#` is a
 * fragment to URL parsing: both `%23` and a literal `#` are accepted. The topic is the path after
 * the first `/`, percent-decoded. Credentials missing from the URI come from
 * `CSIPOSE_MQTT_USERNAME` / `CSIPOSE_MQTT_PASSWORD`, so a password need not be on a command line.
 *
 * @param uri the source URI as written
 * @param env where the credential variables are read; default `process.env`
 * @returns its parts, checked
 * @throws SourceError naming what is wrong (never echoing a password)
 * @example
 * parseMqttUri('mqtt://10.0.0.2/csi/%23?format=esp32')
 * // { url: 'mqtt://10.0.0.2:1883', host: '10.0.0.2', port: 1883, topic: 'csi/#', format: 'esp32', qos: 0 }
 */
export function parseMqttUri(uri: string, env: NodeJS.ProcessEnv = process.env): MqttUri {
  const usage = `mqtt://HOST:PORT/TOPIC?format=${mqttFormatChoices('|')}`;
  const scheme = uri.startsWith('mqtts://') ? 'mqtts' : uri.startsWith('mqtt://') ? 'mqtt' : undefined;
  if (!scheme) throw new SourceError(`mqtt source must be ${usage}`);
  const rest = uri.slice(scheme.length + 3);
  const qAt = rest.indexOf('?');
  const beforeQuery = qAt < 0 ? rest : rest.slice(0, qAt);
  const q = new URLSearchParams(qAt < 0 ? '' : rest.slice(qAt + 1));
  const slash = beforeQuery.indexOf('/');
  const authority = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  const topic = slash < 0 ? '' : decodePart(beforeQuery.slice(slash + 1), 'topic');
  const at = authority.lastIndexOf('@');
  const { host, port } = hostPort(at < 0 ? authority : authority.slice(at + 1), scheme === 'mqtts' ? 8883 : 1883, usage);
  if (!topic) throw new SourceError(`mqtt source needs a topic: ${usage}`);
  if (!isTopicFilter(topic)) throw new SourceError(`mqtt topic "${topic}" is not a valid filter: + and # must each be a whole level, # only the last`);
  const format = mqttFormat(q.get('format'));
  const qos = qosParam(q.get('qos'));
  const clientId = q.get('client_id');
  if (clientId === '') throw new SourceError('mqtt client_id must not be empty');
  const link = parseLinkParam(q, `mqtt topic "${topic}"`, { topic: true });
  const creds = credentials(at < 0 ? undefined : authority.slice(0, at), env);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `${scheme}://${urlHost}:${port}`,
    host,
    port,
    topic,
    format,
    qos,
    ...(clientId !== null ? { clientId } : {}),
    ...creds,
    ...(link.kind !== 'none' ? { link } : {}),
  };
}

/** Percent-decodes one part of the URI; a bad escape is a usage error, not a URIError. */
function decodePart(s: string, what: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new SourceError(`mqtt ${what} has a bad percent escape`);
  }
}

/** `HOST[:PORT]` or `[IPV6][:PORT]`, with the scheme's port when none is given. */
function hostPort(hp: string, defaultPort: number, usage: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(.*))?$/.exec(hp);
  const host = m?.[1] ?? m?.[2];
  if (!m || !host) throw new SourceError(`mqtt source needs a host: ${usage}`);
  const portText = m[3];
  if (portText === undefined) return { host, port: defaultPort };
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new SourceError(`mqtt port must be 1..65535, got "${portText}": ${usage}`);
  return { host, port };
}

function mqttFormat(f: string | null): MqttFormat {
  if (f === null) throw new SourceError(`mqtt source needs ?format=${mqttFormatChoices('|')}`);
  if (!isCaptureFormat(f)) throw new SourceError(`unknown format "${f}" (mqtt formats: ${mqttFormatChoices(', ')})`);
  if (!isMqttFormat(f)) {
    const holds = mqttFormats()
      .map((e) => `one ${e.name} ${e.message}`)
      .join(' or ');
    throw new SourceError(`format "${f}" cannot come over mqtt: a message holds ${holds}`);
  }
  return f;
}

function isMqttFormat(f: string): f is MqttFormat {
  return mqttFormats().some((e) => e.name === f);
}

function qosParam(s: string | null): MqttQos {
  if (s === null) return 0;
  if (s === '0' || s === '1') return Number(s) as MqttQos;
  throw new SourceError(`mqtt qos must be 0 or 1, got "${s}"`);
}

/** Username and password from the URI's userinfo, each falling back to its environment variable. */
function credentials(userinfo: string | undefined, env: NodeJS.ProcessEnv): { username?: string; password?: string } {
  const colon = userinfo === undefined ? -1 : userinfo.indexOf(':');
  const fromUri = (s: string | undefined) => (s ? decodePart(s, 'userinfo') : undefined);
  const user = fromUri(userinfo === undefined ? undefined : colon < 0 ? userinfo : userinfo.slice(0, colon));
  const pass = fromUri(userinfo === undefined || colon < 0 ? undefined : userinfo.slice(colon + 1));
  const fromEnv = envCredentials(env);
  const username = user ?? fromEnv.username;
  const password = pass ?? fromEnv.password;
  return { ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}

/** A topic's decoder and the link of its frames (`null`: not a link of the site, dropped). */
interface TopicLane {
  decoder: CsiDecoder;
  linkId: string | undefined | null;
}

/**
 * One decoder per topic, so each sender keeps its own record index and line state; bounded, the
 * least recently used decoder is dropped (a topic seen again starts a fresh one).
 */
class TopicDecoders {
  private readonly byTopic = new Map<string, TopicLane>();

  constructor(
    private readonly make: (topic: string) => TopicLane,
    private readonly max: number,
  ) {}

  get(topic: string): TopicLane {
    let d = this.byTopic.get(topic);
    // A Map iterates in insertion order: re-inserting keeps the oldest use first.
    if (d) this.byTopic.delete(topic);
    else d = this.make(topic);
    this.byTopic.set(topic, d);
    if (this.byTopic.size > this.max) this.byTopic.delete(this.byTopic.keys().next().value!);
    return d;
  }
}

/**
 * Decodes one message: counts what the decoder emitted and skipped. A message that gives no record
 * is counted as skipped even when the decoder saw nothing to count (an empty message), and a
 * decoder that throws (they are not meant to) costs that message only.
 */
function decodeMessage(decoder: CsiDecoder, payload: Uint8Array, emit: (f: CsiFrame) => void): { records: number; skipped: number } {
  const records = decoder.stats.records;
  const skipped = decoder.stats.skipped;
  try {
    decoder.push(payload, emit);
  } catch {
    return { records: decoder.stats.records - records, skipped: 1 };
  }
  const r = decoder.stats.records - records;
  const s = decoder.stats.skipped - skipped;
  return { records: r, skipped: r === 0 && s === 0 ? 1 : s };
}

/**
 * The return code of a refused CONNACK, undefined for any other client error. Network errors carry
 * a string code (ECONNREFUSED ...); MQTT.js gives a refused CONNACK's error the numeric return code.
 */
function connackCode(e: Error): number | undefined {
  return e instanceof ErrorWithReasonCode && e.message.startsWith('Connection refused') ? e.code : undefined;
}

/**
 * Live CSI from an MQTT broker: routers publish each ESP32 CSI line or Nexmon CSI UDP payload as
 * one message. Messages are decoded with one decoder per topic; each frame's `sourceId` is the
 * topic it came on and its time is the arrival time. Messages that are not CSI are skipped and
 * counted, never fatal. Frames carry `linkId` (fixed, or per topic through `linkOfTopic`); the
 * messages of a topic that names no link of the site are dropped and counted.
 *
 * The stream does not end when the broker goes away: the client reconnects with backoff (500 ms
 * doubling to 30 s) and subscribes again, also when the broker is not up yet at start. It errors
 * with a SourceError only for what the user must fix: a format that cannot come over MQTT, a broker
 * that refuses the connection (credentials, client id) before the source was ever ready, or one
 * that refuses the subscription.
 *
 * @param opts broker url, topic filter, format, credentials, qos, client id, stats
 * @returns frames as they arrive; unsubscribing closes the connection
 * @example
 * mqttSource({ url: 'mqtt://192.168.1.2:1883', topic: 'csi/+/esp32', format: 'esp32' }).subscribe(f => ...)
 */
export function mqttSource(opts: MqttSourceOptions): Observable<CsiFrame> {
  return new Observable<CsiFrame>((subscriber) => {
    if (!isMqttFormat(opts.format)) {
      subscriber.error(new SourceError(`format "${opts.format}" cannot come over mqtt (formats: ${mqttFormatChoices(', ')})`));
      return;
    }
    if (!isTopicFilter(opts.topic)) {
      subscriber.error(new SourceError(`mqtt topic "${opts.topic}" is not a valid filter`));
      return;
    }
    let client: MqttClient;
    try {
      client = connect(opts);
    } catch (e) {
      // MQTT.js throws at once for some URLs it cannot use (e.g. one without a protocol).
      subscriber.error(new SourceError(`mqtt broker ${brokerName(opts.url)} cannot be used: ${(e as Error).message}`));
      return;
    }
    wire(client, opts, subscriber);
    return () => {
      client.end(true);
    };
  });
}

/** A client that reconnects by itself but lets {@link wire} subscribe on every connection. */
function connect(opts: MqttSourceOptions): MqttClient {
  const options: IClientOptions = {
    clientId: opts.clientId ?? `csipose-src-${randomBytes(6).toString('hex')}`,
    reconnectPeriod: RECONNECT_MIN_MS,
    // Refusals after the source was ready are retried like a lost broker (see wire's error handler).
    reconnectOnConnackError: true,
    // A clean session forgets subscriptions, so every connection subscribes itself (see wire):
    // that way each SUBACK is seen, and a refused one is reported.
    resubscribe: false,
    clean: true,
    ...(opts.username !== undefined ? { username: opts.username } : {}),
    ...(opts.password !== undefined ? { password: opts.password } : {}),
  };
  return mqtt.connect(opts.url, options);
}

/** Connects the client's events to the subscriber: messages, subscriptions, backoff, errors. */
function wire(client: MqttClient, opts: MqttSourceOptions, subscriber: Subscriber<CsiFrame>): void {
  const stats = opts.stats;
  const environmentId = opts.environmentId ?? 'default';
  const linkOf = opts.linkOfTopic;
  const decoders = new TopicDecoders(
    (topic) => ({
      decoder: createDatagramDecoder(opts.format, { sourceId: topic, environmentId }),
      linkId: linkOf ? (linkOf(topic) ?? null) : opts.linkId,
    }),
    MAX_TOPIC_DECODERS,
  );
  const broker = brokerName(opts.url);
  let ready = false;
  withBackoff(client, () => {
    if (stats) stats.reconnects++;
  });

  client.on('message', (topic, payload) => {
    const arrival = Date.now();
    const lane = decoders.get(topic);
    const linkId = lane.linkId;
    if (linkId === null) {
      if (stats) {
        stats.messages++;
        stats.unknownLink++;
      }
      return;
    }
    const emit =
      linkId === undefined
        ? (f: CsiFrame) => subscriber.next(stampTime(f, arrival))
        : (f: CsiFrame) => subscriber.next({ ...f, time: f.time > 0 ? f.time : arrival, linkId });
    const counts = decodeMessage(lane.decoder, payload, emit);
    if (stats) {
      stats.messages++;
      stats.bytes += payload.length;
      stats.records += counts.records;
      stats.skipped += counts.skipped;
    }
  });

  client.on('connect', () => {
    if (stats) stats.connected = true;
    client.subscribe(opts.topic, { qos: opts.qos ?? 0 }, (err) => {
      // Any other error is the connection closing before the SUBACK: the next connection subscribes again.
      if (err && typeof (err as { code?: unknown }).code === 'number') {
        subscriber.error(new SourceError(`mqtt broker ${broker} refused the subscription to "${opts.topic}": ${err.message}`));
        return;
      }
      if (err || ready) return;
      ready = true;
      opts.onReady?.();
    });
  });

  client.on('close', () => {
    if (stats) stats.connected = false;
  });

  client.on('error', (e) => {
    // Network errors are retried by the client; only a refusal before we were ever ready is fatal.
    const code = connackCode(e);
    if (code === undefined || ready || TRANSIENT_CONNACK_CODES.has(code)) return;
    const who = opts.username !== undefined ? ` as user "${opts.username}"` : '';
    subscriber.error(new SourceError(`mqtt broker ${broker} refused the connection${who}: ${e.message}`));
  });
}
