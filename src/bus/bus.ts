/**
 * The NATS JetStream bus the roles of a cluster meet on (docs/scale.md): its subjects, streams and
 * key-value buckets, created alike by whichever role connects first.
 *
 * - `csi.<env>.<link>`: CSI frames from ingest nodes (stream CSIPOSE_CSI, kept
 *   `cluster.csi_retention_seconds`: a worker taking an environment over replays from it).
 * - `pose.<env>`, `alerts.<env>`, `events.<env>`: what workers make (stream CSIPOSE_POSE; the store
 *   node's durable consumer reads it, api nodes follow it). Alerts and events are published with
 *   their ids as JetStream message ids: within the duplicate window one is stored once.
 * - buckets: `csipose_environments` (each environment's configuration, put by its ingest node),
 *   `csipose_leases` (which worker holds an environment; entries live `cluster.lease_ttl_seconds`
 *   unless renewed), `csipose_workers` (live workers, same life), `csipose_checkpoints` (how far
 *   each environment's CSI was read).
 */
import { connect, DiscardPolicy, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection } from 'nats';

export const CSI_STREAM = 'CSIPOSE_CSI';
export const POSE_STREAM = 'CSIPOSE_POSE';
export const ENVIRONMENTS_BUCKET = 'csipose_environments';
export const LEASES_BUCKET = 'csipose_leases';
export const WORKERS_BUCKET = 'csipose_workers';
export const CHECKPOINTS_BUCKET = 'csipose_checkpoints';
/** How long JetStream remembers a message id to drop a repeat (alerts and events across a handover). */
const DUPLICATE_WINDOW_MS = 120_000;
/** How long the pose stream keeps what workers made (the store node reads it; api nodes follow it). */
const POSE_RETENTION_MS = 3_600_000;

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
      const stream = async (cfg: { name: string; subjects: string[]; max_age: number }) => {
        try {
          await jsm.streams.info(cfg.name);
        } catch {
          await jsm.streams.add({
            ...cfg,
            retention: RetentionPolicy.Limits,
            storage: StorageType.File,
            discard: DiscardPolicy.Old,
            num_replicas: settings.replicas,
            duplicate_window: DUPLICATE_WINDOW_MS * 1e6,
          });
        }
      };
      await stream({ name: CSI_STREAM, subjects: ['csi.>'], max_age: settings.csi_retention_seconds * 1e9 });
      await stream({ name: POSE_STREAM, subjects: ['pose.>', 'alerts.>', 'events.>'], max_age: POSE_RETENTION_MS * 1e6 });
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

/**
 * JetStream publishes in flight, counted: each publish is acknowledged by the stream (stored, on
 * every replica) or fails; a repeat of a message id within the duplicate window is acknowledged
 * as a duplicate and not stored again.
 */
export class Publisher {
  published = 0;
  acked = 0;
  duplicates = 0;
  failed = 0;
  lastError: string | null = null;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly js: JetStreamClient) {}

  /** Publishes without waiting for the acknowledgement. */
  publish(subject: string, data: Uint8Array, msgID?: string): void {
    this.published++;
    const p = this.js.publish(subject, data, msgID === undefined ? undefined : { msgID }).then(
      (ack) => {
        if (ack.duplicate) this.duplicates++;
        else this.acked++;
      },
      (e: unknown) => {
        this.failed++;
        this.lastError = (e as Error).message;
      },
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Publishes not yet acknowledged or failed. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Resolves when every publish so far is acknowledged or failed. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}
