import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import type { Subscription } from 'rxjs';
import type { ActivityEvent, PoseAlert } from '../pose/types.js';
import type { PoseFrameView } from '../render/view.js';
import { renderAlert, renderEvent } from '../render/events.js';
import type { ConfigSnapshot } from '../config/store.js';
import type { ComponentReport, ConfigReader, ServiceSnapshot } from '../service/face.js';
import { renderStatusMessage } from '../service/status.js';
import { brokerName, envCredentials, RECONNECT_MIN_MS, withBackoff } from '../mqtt/connection.js';
import { attachOutlet, type Outlet, type OutletStreams } from './outlet.js';
import { haDiscovery, HaEnvironment, type EnvironmentTopics } from './homeassistant.js';

/** QoS 1 messages (alerts, events) held while the broker is away; past it the oldest are dropped and counted. */
export const MAX_QUEUED = 1000;
/** Unsent bytes on the broker connection past which pose frames are dropped (latest wins). */
export const MAX_PENDING_BYTES = 1024 * 1024;
/** Person-count changes reach the Home Assistant state at most this often. */
const STATE_MIN_INTERVAL_MS = 1000;
/** What the last will and a clean shutdown leave on the status topic. */
export const OFFLINE = '{"status":"offline"}';
/** The pose frame as the MQTT `pose` topic carries it: the Form B pose frame, as `GET /pose/latest` serves it. */
const POSE_SHAPE = { form: 'b', minConfidence: 0, includeKeypoints: true, includeDensePose: false } as const;

/** The settings the publisher runs on (config `streaming.mqtt_*`). */
interface Settings {
  url: string;
  prefix: string;
  homeassistant: boolean;
  haPrefix: string;
  /** The environment the service runs (its status topic and last will). */
  environmentId: string;
  environmentName: string;
}

function settingsOf(c: ConfigSnapshot): Settings | undefined {
  const s = c.streaming;
  if (!s.mqtt_enabled) return undefined;
  return {
    url: s.mqtt_url,
    prefix: s.mqtt_topic_prefix,
    homeassistant: s.mqtt_homeassistant,
    haPrefix: s.mqtt_homeassistant_prefix,
    environmentId: c.environment.id,
    environmentName: c.environment.name,
  };
}

const same = (a: Settings | undefined, b: Settings | undefined) => JSON.stringify(a) === JSON.stringify(b);

interface Counters {
  published: { pose: number; alerts: number; events: number; status: number; state: number; discovery: number };
  dropped: { pose_disconnected: number; pose_backpressure: number; queue_overflow: number };
  reconnects: number;
}

/**
 * The MQTT publisher, an outlet of the service's streams (DECISIONS "MQTT"). Under
 * `{prefix}/{environment_id}/`: `pose` (the Form B pose frame, QoS 0), `alerts` (the WebSocket
 * `alert` message, QoS 1), `events` (the activity event, QoS 1), `status` (the `system_status`
 * message, retained, QoS 1; the connection's last will and a clean shutdown leave
 * `{"status":"offline"}`). With `streaming.mqtt_homeassistant`, Home Assistant discovery for each
 * environment and its retained `state` topic.
 *
 * It never stalls the pipeline: publishing is asynchronous; while the broker is away pose frames
 * are dropped and alerts and events wait in a bounded queue; a connection that cannot keep up
 * drops pose frames past {@link MAX_PENDING_BYTES}. The client reconnects with backoff; the
 * state goes to `/health/detailed` (`mqtt`). Configuration changes apply live: switching it on
 * or off, a new broker, prefix or discovery setting reconnects.
 */
export class MqttOutlet implements Outlet {
  readonly name = 'mqtt';
  private client: MqttClient | undefined;
  private settings: Settings | undefined;
  private readonly subs: Subscription[] = [];
  private readonly queue: Array<{ topic: string; payload: string }> = [];
  private readonly environments = new Map<string, HaEnvironment>();
  private readonly announced = new Set<string>();
  private readonly lastState = new Map<string, { json: string; at: number }>();
  private readonly stateTimers = new Map<string, NodeJS.Timeout>();
  private unreport: (() => void) | undefined;
  private state: 'disabled' | 'connecting' | 'connected' | 'disconnected' = 'disabled';
  private lastError: string | undefined;
  private lastStatus: ServiceSnapshot | undefined;
  private closed = false;
  private readonly counters: Counters = {
    published: { pose: 0, alerts: 0, events: 0, status: 0, state: 0, discovery: 0 },
    dropped: { pose_disconnected: 0, pose_backpressure: 0, queue_overflow: 0 },
    reconnects: 0,
  };

  /**
   * @param config the configuration (`streaming.mqtt_*`, the environment), read-only
   * @param version the service's version (Home Assistant discovery names it)
   * @param env where CSIPOSE_MQTT_USERNAME and CSIPOSE_MQTT_PASSWORD are read
   * @param log the service's logger
   */
  constructor(
    private readonly config: ConfigReader,
    private readonly version: string,
    private readonly env: Record<string, string | undefined>,
    private readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void,
  ) {}

  /** Subscribes to the streams and the configuration, and connects when `streaming.mqtt_enabled`. */
  start(streams: OutletStreams): void {
    const fail = (what: string) => (e: unknown) => this.log('error', `mqtt ${what}: ${(e as Error)?.stack ?? String(e)}`);
    this.subs.push(
      attachOutlet(streams.pose$, (v) => this.pose(v), fail('pose')),
      attachOutlet(streams.alerts$, (a) => this.alert(a), fail('alert')),
      attachOutlet(streams.events$, (e) => this.event(e), fail('event')),
      attachOutlet(streams.status$, (s) => this.status(s), fail('status')),
      attachOutlet(this.config.changes$, (e) => this.configure(e.config), fail('config')),
    );
    this.unreport = streams.report('mqtt', () => this.report());
    this.configure(this.config.get());
  }

  private topic(environmentId: string, leaf: string): string {
    return `${this.settings!.prefix}/${environmentId}/${leaf}`;
  }

  private topics(environmentId: string): EnvironmentTopics {
    return { status: this.topic(environmentId, 'status'), state: this.topic(environmentId, 'state') };
  }

  /** (Re)connects when the publisher's settings changed. */
  private configure(c: ConfigSnapshot): void {
    const next = settingsOf(c);
    if (same(next, this.settings) || this.closed) return;
    const previous = this.settings;
    void this.disconnect(previous && next && previous.homeassistant && !next.homeassistant ? previous : undefined);
    this.settings = next;
    this.queue.length = 0;
    if (next) this.connect(next);
    else this.state = 'disabled';
  }

  private connect(s: Settings): void {
    this.state = 'connecting';
    this.announced.clear();
    this.lastState.clear();
    const client = mqtt.connect(s.url, {
      clientId: `csipose-${s.environmentId}-${randomBytes(4).toString('hex')}`.slice(0, 64),
      clean: true,
      reconnectPeriod: RECONNECT_MIN_MS,
      connectTimeout: 10_000,
      // Pose frames are worth nothing late: never queued by the client while offline.
      queueQoSZero: false,
      will: { topic: this.topic(s.environmentId, 'status'), payload: Buffer.from(OFFLINE), qos: 1, retain: true },
      ...envCredentials(this.env),
    });
    this.client = client;
    withBackoff(client, () => this.counters.reconnects++);
    client.on('connect', () => {
      if (client !== this.client) return;
      this.state = 'connected';
      this.lastError = undefined;
      this.log('info', `mqtt: connected to ${brokerName(s.url)}`);
      this.announced.clear();
      if (this.lastStatus) this.status(this.lastStatus);
      for (const m of this.queue.splice(0)) this.publish(m.topic, m.payload, 1, false);
      for (const id of this.environments.keys()) this.announce(id);
    });
    const lost = () => {
      if (client !== this.client || this.state === 'disconnected') return;
      if (this.state === 'connected') this.log('warn', `mqtt: lost ${brokerName(s.url)}; reconnecting with backoff`);
      this.state = 'disconnected';
    };
    client.on('close', lost);
    client.on('offline', lost);
    client.on('error', (e) => {
      if (client !== this.client) return;
      this.lastError = e.message;
      if (this.state !== 'connected') this.state = 'disconnected';
    });
  }

  /** Ends the current connection, leaving `offline` on its status topic (and, when asked, removing its discovery). */
  private async disconnect(removeDiscoveryOf?: Settings): Promise<void> {
    const client = this.client;
    const s = this.settings;
    this.client = undefined;
    for (const t of this.stateTimers.values()) clearTimeout(t);
    this.stateTimers.clear();
    if (!client || !s) return;
    if (client.connected) {
      const sends: Array<Promise<unknown>> = [client.publishAsync(this.topic(s.environmentId, 'status'), OFFLINE, { qos: 1, retain: true })];
      // An empty retained config removes the entity from Home Assistant.
      if (removeDiscoveryOf)
        for (const id of this.environments.keys())
          for (const m of haDiscovery(removeDiscoveryOf.haPrefix, id, '', this.topics(id), this.version))
            sends.push(client.publishAsync(m.topic, '', { qos: 1, retain: true }));
      await Promise.race([Promise.allSettled(sends), new Promise((r) => setTimeout(r, 2000))]);
    }
    await client.endAsync(false).catch(() => client.end(true));
  }

  private connected(): boolean {
    return this.state === 'connected' && this.client?.connected === true;
  }

  private publish(topic: string, payload: string, qos: 0 | 1, retain: boolean): void {
    this.client!.publish(topic, payload, { qos, retain }, (e) => {
      if (e) this.lastError = e.message;
    });
  }

  /** QoS 1 now, or later when the broker is back (bounded). */
  private publishReliably(topic: string, payload: string): boolean {
    if (this.connected()) {
      this.publish(topic, payload, 1, false);
      return true;
    }
    if (this.queue.length >= MAX_QUEUED) {
      this.queue.shift();
      this.counters.dropped.queue_overflow++;
    }
    this.queue.push({ topic, payload });
    return false;
  }

  private environment(id: string): HaEnvironment {
    let e = this.environments.get(id);
    if (!e) {
      e = new HaEnvironment();
      if (this.lastStatus) e.status = this.lastStatus.system.state;
      this.environments.set(id, e);
      if (this.connected()) this.announce(id);
    }
    return e;
  }

  /** Home Assistant discovery for an environment's device, once per connection. */
  private announce(id: string): void {
    const s = this.settings;
    if (!s?.homeassistant || this.announced.has(id) || !this.connected()) return;
    this.announced.add(id);
    const name = id === s.environmentId ? s.environmentName : id;
    for (const m of haDiscovery(s.haPrefix, id, name, this.topics(id), this.version)) {
      this.publish(m.topic, m.payload, 1, true);
      this.counters.published.discovery++;
    }
    this.publishState(id, true);
  }

  /** The retained state of an environment's device, when it changed; person-count changes at most once a second. */
  private publishState(id: string, now = false): void {
    const s = this.settings;
    if (!s?.homeassistant || !this.connected()) return;
    const json = JSON.stringify(this.environment(id).state(Date.now()));
    const last = this.lastState.get(id);
    if (last?.json === json) return;
    const wait = last ? last.at + STATE_MIN_INTERVAL_MS - Date.now() : 0;
    if (!now && wait > 0) {
      if (!this.stateTimers.has(id))
        this.stateTimers.set(
          id,
          setTimeout(() => {
            this.stateTimers.delete(id);
            this.publishState(id, true);
          }, wait).unref(),
        );
      return;
    }
    this.lastState.set(id, { json, at: Date.now() });
    this.publish(this.topic(id, 'state'), json, 1, true);
    this.counters.published.state++;
  }

  private pose(v: PoseFrameView): void {
    if (!this.settings) return;
    const id = v.frame.environmentId;
    this.environment(id).frame(v.frame);
    if (!this.connected()) {
      this.counters.dropped.pose_disconnected++;
      return;
    }
    // A broker that cannot take them: stale frames go, the newest comes through when it can.
    if ((this.client!.stream?.writableLength ?? 0) > MAX_PENDING_BYTES) {
      this.counters.dropped.pose_backpressure++;
      return;
    }
    this.publish(this.topic(id, 'pose'), v.json(POSE_SHAPE), 0, false);
    this.counters.published.pose++;
    this.publishState(id);
  }

  private alert(a: PoseAlert): void {
    if (!this.settings) return;
    this.environment(a.environmentId).alert(a);
    if (this.publishReliably(this.topic(a.environmentId, 'alerts'), JSON.stringify(renderAlert(a)))) this.counters.published.alerts++;
    this.publishState(a.environmentId, true);
  }

  private event(e: ActivityEvent): void {
    if (!this.settings) return;
    this.environment(e.environmentId).event(e);
    if (this.publishReliably(this.topic(e.environmentId, 'events'), JSON.stringify(renderEvent(e)))) this.counters.published.events++;
    this.publishState(e.environmentId, true);
  }

  private status(snapshot: ServiceSnapshot): void {
    this.lastStatus = snapshot;
    const s = this.settings;
    if (!s) return;
    for (const env of this.environments.values()) env.status = snapshot.system.state;
    this.environment(s.environmentId).status = snapshot.system.state;
    if (!this.connected()) return;
    this.publish(this.topic(s.environmentId, 'status'), JSON.stringify(renderStatusMessage(snapshot)), 1, true);
    this.counters.published.status++;
    for (const id of this.environments.keys()) this.publishState(id, true);
  }

  /** The `mqtt` component of `/health/detailed` and `/metrics`. */
  report(): ComponentReport {
    const s = this.settings;
    return {
      status: this.state,
      ...(s ? { broker: brokerName(s.url), topic_prefix: s.prefix, homeassistant: s.homeassistant } : {}),
      published: { ...this.counters.published },
      dropped: { ...this.counters.dropped },
      queued: this.queue.length,
      reconnects: this.counters.reconnects,
      ...(this.lastError ? { last_error: this.lastError } : {}),
    };
  }

  /** Leaves `offline` on the status topic and disconnects. */
  async close(): Promise<void> {
    this.closed = true;
    for (const sub of this.subs) sub.unsubscribe();
    this.subs.length = 0;
    this.unreport?.();
    this.unreport = undefined;
    await this.disconnect();
    this.settings = undefined;
    this.state = 'disabled';
  }
}
