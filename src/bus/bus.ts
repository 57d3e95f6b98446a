/**
 * The NATS JetStream bus the roles of a cluster meet on (docs/scale.md): its subjects, streams and
 * key-value buckets, created alike by whichever role connects first.
 *
 * - `csi.<env>.<link>`: CSI frames from ingest nodes (stream CSIPOSE_CSI, kept
 *   `cluster.csi_retention_seconds`: a worker taking an environment over replays from it).
 * - `pose.<env>`, `alerts.<env>`, `events.<env>`: what workers make (stream CSIPOSE_POSE; the
 *   store node holding an environment reads its `pose.<env>` through the environment's durable
 *   consumer, api nodes follow it). Alerts and events are published with their ids as JetStream
 *   message ids: within the duplicate window one is stored once.
 * - buckets: `csipose_environments` (each environment's configuration, put by its ingest node),
 *   `csipose_leases` (which worker holds an environment; entries live `cluster.lease_ttl_seconds`
 *   unless renewed), `csipose_workers` (live workers, same life), `csipose_checkpoints` (how far
 *   each environment's CSI was read), `csipose_store_leases` and `csipose_stores` (the same for
 *   store nodes: which holds an environment's history, and which are live).
 */
import { connect, DiscardPolicy, Events, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection } from 'nats';

export const CSI_STREAM = 'CSIPOSE_CSI';
export const POSE_STREAM = 'CSIPOSE_POSE';
export const ENVIRONMENTS_BUCKET = 'csipose_environments';
export const LEASES_BUCKET = 'csipose_leases';
export const WORKERS_BUCKET = 'csipose_workers';
export const CHECKPOINTS_BUCKET = 'csipose_checkpoints';
/** Which store node holds an environment (its lease), and the live store nodes: as for workers, a life of `cluster.lease_ttl_seconds`. */
export const STORE_LEASES_BUCKET = 'csipose_store_leases';
export const STORES_BUCKET = 'csipose_stores';
/** How long JetStream remembers a message id to drop a repeat (alerts and events across a handover). */
const DUPLICATE_WINDOW_MS = 120_000;
/**
 * The CSI stream's: a frame is sent again within seconds of a lost acknowledgement, and the ids of
 * 300 frames a second per room are not kept longer than that needs.
 */
const CSI_DUPLICATE_WINDOW_MS = 10_000;
/** How long the pose stream keeps what workers made (the store node reads it; api nodes follow it). */
const POSE_RETENTION_MS = 3_600_000;
/**
 * How long one pull of a consumer (a worker's CSI, a store node's pose frames) waits on the server,
 * ms. The client sends heartbeats at half of it and pulls again once two are missed (a NATS node
 * lost), and waits up to 1.5x it between tries to make a consumer while a stream has no leader:
 * the client's default, 30 s, left a store's room unstored for over 20 s after its consumer's
 * leader was killed (test/cluster/storeNatsLoss.test.ts).
 */
export const PULL_EXPIRES_MS = 2000;

/** The settings of `cluster` (src/config/schema.ts) the bus itself uses. */
export interface BusSettings {
  replicas: number;
  csi_retention_seconds: number;
  lease_ttl_seconds: number;
}

/**
 * One subject token for an id (environment or link): NATS tokens cannot hold '.', '*', '>' or
 * white space, so those (and '%') are percent-encoded; everything else stays readable.
 * @param id the id
 * @returns the token
 */
export function subjectToken(id: string): string {
  if (id.length === 0) throw new Error('an empty id cannot be a subject token');
  return id.replace(/[%.*>\s]/gu, (c) => `%${c.codePointAt(0)!.toString(16).toUpperCase().padStart(2, '0')}`);
}

/**
 * A key of a key-value bucket for an id: keys allow letters, digits, '-', '_', '=', '/' and '.',
 * so anything else is written as '=' and its code point in hex.
 */
export function bucketKey(id: string): string {
  if (id.length === 0) throw new Error('an empty id cannot be a bucket key');
  return id.replace(/[^A-Za-z0-9_-]/gu, (c) => `=${c.codePointAt(0)!.toString(16)}=`);
}

export const csiSubject = (env: string, link: string): string => `csi.${subjectToken(env)}.${subjectToken(link)}`;
export const csiSubjects = (env: string): string => `csi.${subjectToken(env)}.>`;
export const poseSubject = (env: string): string => `pose.${subjectToken(env)}`;
export const alertsSubject = (env: string): string => `alerts.${subjectToken(env)}`;
export const eventsSubject = (env: string): string => `events.${subjectToken(env)}`;

/** A connection to the bus with its streams and buckets in place. */
export class Bus {
  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly environments: KV,
    readonly leases: KV,
    readonly workers: KV,
    readonly checkpoints: KV,
    readonly storeLeases: KV,
    readonly stores: KV,
  ) {}

  /**
   * Connects and makes sure the streams and buckets exist (creating them as `settings` say; an
   * existing one is used as it is).
   * @param url one or more `nats://host:port`, comma-separated
   * @param settings replicas, CSI retention, lease life
   * @param name the connection's name, as the servers list it (`csipose-worker-<id>`)
   * @returns the bus
   */
  static async connect(url: string, settings: BusSettings, name: string): Promise<Bus> {
    const servers = url
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const nc = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: false });
    try {
      const jsm = await nc.jetstreamManager();
      const stream = async (cfg: { name: string; subjects: string[]; max_age: number; duplicate_window: number }) => {
        try {
          await jsm.streams.info(cfg.name);
        } catch {
          await jsm.streams.add({
            ...cfg,
            retention: RetentionPolicy.Limits,
            storage: StorageType.File,
            discard: DiscardPolicy.Old,
            num_replicas: settings.replicas,
          });
        }
      };
      await stream({ name: CSI_STREAM, subjects: ['csi.>'], max_age: settings.csi_retention_seconds * 1e9, duplicate_window: CSI_DUPLICATE_WINDOW_MS * 1e6 });
      await stream({
        name: POSE_STREAM,
        subjects: ['pose.>', 'alerts.>', 'events.>'],
        max_age: POSE_RETENTION_MS * 1e6,
        duplicate_window: DUPLICATE_WINDOW_MS * 1e6,
      });
      const js = nc.jetstream();
      const ttl = Math.round(settings.lease_ttl_seconds * 1000);
      const kv = (bucket: string, opts: { ttl?: number } = {}) => js.views.kv(bucket, { history: 1, replicas: settings.replicas, ...opts });
      return new Bus(
        nc,
        js,
        jsm,
        await kv(ENVIRONMENTS_BUCKET),
        await kv(LEASES_BUCKET, { ttl }),
        await kv(WORKERS_BUCKET, { ttl }),
        await kv(CHECKPOINTS_BUCKET),
        await kv(STORE_LEASES_BUCKET, { ttl }),
        await kv(STORES_BUCKET, { ttl }),
      );
    } catch (e) {
      await nc.close().catch(() => undefined);
      throw e;
    }
  }

  /** Drains what is being sent and closes. */
  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    await this.nc.drain().catch(() => this.nc.close());
  }
}

/** Messages a publisher holds while the stream does not take them (a NATS node lost, a leader being elected). */
const MAX_HELD = 100_000;
/** Longest wait between tries of a held message, ms. */
const MAX_RETRY_WAIT_MS = 2000;
/**
 * How long a publish waits for the stream's acknowledgement, ms: one sent to a node that died is
 * known lost after this, and what came after it waits that long at most before it is sent again.
 */
const PUBLISH_TIMEOUT_MS = 5000;

/** Held messages sent again together, oldest first, while the stream takes them. */
const DRAIN_WINDOW = 256;

interface Held {
  order: number;
  subject: string;
  data: Uint8Array;
  msgID: string | undefined;
}

/**
 * JetStream publishes in flight, counted, kept in the order they were published: each publish is
 * acknowledged by the stream (stored, on every replica) or fails; a repeat of a message id within
 * the duplicate window is acknowledged as a duplicate and not stored again.
 *
 * Publishes go out without waiting for each other. When one fails (the stream has no leader for a
 * few seconds after a NATS node is lost), or the connection drops, the publisher holds every
 * publish from then on. Once the publishes already out have ended (acknowledged, or failed and
 * held in their place), it sends the held ones again in their order, up to {@link DRAIN_WINDOW} at a
 * time on the one connection, until the stream has taken them all; then it goes back to sending
 * without waiting. So nothing is lost and the stream
 * keeps the publisher's order: readers (the worker's pipeline, the store's skip of what it
 * already wrote) rely on it. Message ids make a repeat of one that was stored after all harmless.
 * At most {@link MAX_HELD} are held; past that the oldest are dropped and counted.
 */
export class Publisher {
  published = 0;
  acked = 0;
  duplicates = 0;
  /** Tries the stream refused or did not answer (the message was held and sent again). */
  failed = 0;
  /** Messages dropped because too many were held. */
  dropped = 0;
  lastError: string | null = null;
  /** Publishes sent without waiting, not yet ended. */
  private readonly sending = new Map<Promise<void>, number>();
  private held: Held[] = [];
  private order = 0;
  /** Set from a failure or a lost connection until the held messages are all taken. */
  private draining: Promise<void> | undefined;
  private readonly js: JetStreamClient;

  /**
   * @param bus the connection (its drops are followed) and its JetStream client
   */
  constructor(bus: { nc: NatsConnection; js: JetStreamClient }) {
    this.js = bus.js;
    void (async () => {
      for await (const s of bus.nc.status()) if (s.type === Events.Disconnect) this.holdFromNow();
    })().catch(() => undefined);
  }

  /** Publishes without waiting for the acknowledgement. */
  publish(subject: string, data: Uint8Array, msgID?: string): void {
    this.published++;
    const m: Held = { order: this.order++, subject, data, msgID };
    if (this.draining) {
      this.insert(m);
      return;
    }
    const p = this.send(m).catch((e: unknown) => {
      this.failed++;
      this.lastError = (e as Error).message;
      this.insert(m);
      this.holdFromNow();
    });
    this.sending.set(p, m.order);
    void p.finally(() => this.sending.delete(p));
  }

  private async send(m: Held): Promise<void> {
    const ack = await this.js.publish(m.subject, m.data, { timeout: PUBLISH_TIMEOUT_MS, ...(m.msgID === undefined ? {} : { msgID: m.msgID }) });
    if (ack.duplicate) this.duplicates++;
    else this.acked++;
  }

  /** Holds a message in its order. */
  private insert(m: Held): void {
    let k = this.held.length;
    while (k > 0 && this.held[k - 1]!.order > m.order) k--;
    this.held.splice(k, 0, m);
    if (this.held.length > MAX_HELD) this.dropped += this.held.splice(0, this.held.length - MAX_HELD).length;
  }

  /** From now on every publish is held, until the held ones are all taken. */
  private holdFromNow(): void {
    this.draining ??= this.drain().finally(() => (this.draining = undefined));
  }

  private async drain(): Promise<void> {
    // What is out already ends first: acknowledged, or failed and held in its place.
    while (this.sending.size > 0) await Promise.allSettled([...this.sending.keys()]);
    let wait = 100;
    while (this.held.length > 0) {
      // The oldest held, sent together in their order on the one connection; those taken leave
      // the queue, those refused stay at its front for the next try.
      const batch = this.held.slice(0, DRAIN_WINDOW);
      const results = await Promise.allSettled(batch.map((m) => this.send(m)));
      const refused = new Set<Held>();
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') return;
        this.failed++;
        this.lastError = (r.reason as Error).message;
        refused.add(batch[i]!);
      });
      this.held.splice(0, batch.length, ...batch.filter((m) => refused.has(m)));
      if (refused.size === 0) {
        wait = 100;
        continue;
      }
      await new Promise((ok) => setTimeout(ok, wait));
      wait = Math.min(MAX_RETRY_WAIT_MS, wait * 2);
    }
  }

  /** Messages held for sending again. */
  get holding(): number {
    return this.held.length;
  }

  /** Publishes sent without waiting, not yet acknowledged or failed. */
  get inFlight(): number {
    return this.sending.size;
  }

  /**
   * Resolves when every publish made before the call is acknowledged, whatever is published
   * after it, or after `giveUpMs`.
   * @returns how many of those are still held or unanswered
   */
  async taken(giveUpMs: number): Promise<number> {
    const mark = this.order;
    const deadline = Date.now() + giveUpMs;
    const open = () => [...this.sending.values()].filter((o) => o < mark).length + this.held.filter((m) => m.order < mark).length;
    while (open() > 0 && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 20));
    return open();
  }

  /**
   * Resolves when every publish so far is acknowledged, or after `giveUpMs` (a node closing while
   * the stream takes nothing); what is still held then is lost with the process.
   * @returns messages still held
   */
  async settled(giveUpMs = 5000): Promise<number> {
    const deadline = Date.now() + giveUpMs;
    const busy = () => [...this.sending.keys(), ...(this.draining ? [this.draining] : [])];
    while (busy().length > 0 && Date.now() < deadline) {
      await Promise.race([Promise.allSettled(busy()), new Promise((ok) => setTimeout(ok, Math.max(1, deadline - Date.now())))]);
    }
    return this.held.length;
  }
}
