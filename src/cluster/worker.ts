/**
 * The worker role (`csipose serve --role worker --bus nats://...`): the live pipeline of each
 * environment it holds, fed from the bus (`csi.<env>.>`), publishing `pose.<env>`, `alerts.<env>`
 * and `events.<env>` (docs/scale.md).
 *
 * Environments are owned, never shared: a worker holds an environment by a lease of
 * `csipose_leases`, announces itself in `csipose_workers` and holds its fair share, by the rules of
 * src/cluster/leases.ts. It publishes for an environment only while its lease is good for more than
 * a quarter of a lease's life by its own clock; frames made past that wait for a renewal.
 *
 * Taking an environment over: the worker reads the environment's checkpoint (how far its CSI was
 * read, written every `cluster.checkpoint_interval_seconds`), replays the CSI stream from
 * `cluster.rewind_seconds` before it, and rebuilds windows, the empty-room channel and tracks on
 * the way; it publishes nothing up to the last pose frame already published for the environment
 * (read back from the stream), so a handover neither repeats nor drops what subscribers see.
 * Alerts and events go out with their ids as message ids, which the stream keeps once.
 */
import { randomUUID } from 'node:crypto';
import { Subject, type Subscription } from 'rxjs';
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type NatsError } from 'nats';
import type { CsiFrame } from '../csi/frame.js';
import type { PoseFrame } from '../pose/types.js';
import { Bus, alertsSubject, bucketKey, CSI_STREAM, csiSubjects, eventsSubject, POSE_STREAM, poseSubject, Publisher, PULL_EXPIRES_MS } from '../bus/bus.js';
import { decodeCsiFrames, decodePoseFrame, encodePoseFrame } from '../bus/codec.js';
import { PoseModel } from '../model/runtime.js';
import { resolveInstalled } from '../packageRoot.js';
import { livePipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import type { ServiceConfig } from '../config/schema.js';
import type { Logger } from '../service/service.js';
import type { EnvironmentEntry } from './ingest.js';
import { LeaseTable } from './leases.js';

/** The `cluster` settings a worker runs by. */
export type WorkerSettings = ServiceConfig['cluster'];

/** What `csipose_checkpoints` holds for an environment. */
export interface Checkpoint {
  /** The CSI stream's sequence of the last frame read, and its time in the stream (epoch ms). */
  seq: number;
  streamTime: number;
  /** The next track id to give: past every id published for the environment. */
  nextTrackId: number;
  /** The worker that wrote it. */
  worker: string;
}

/** A room's CSI read that brings no frame for this long starts again (a stalled consumer), ms. */
const STALL_MS = 5000;
/** Most bytes of CSI one pull of a room asks for (the client keeps about that much buffered). */
const PULL_MAX_BYTES = 8 * 1024 * 1024;
/** Wait before a room's CSI read starts again, ms. */
const RESTART_WAIT_MS = 500;
/** Longest stretch of frames a worker runs before it lets timers and I/O in, ms. */
const YIELD_EVERY_MS = 20;
/** Pose frames a room keeps while its lease waits for a renewal (the oldest go first): minutes of a room. */
const MAX_WAITING = 4096;

const decodeJson = <T>(data: Uint8Array): T => JSON.parse(new TextDecoder().decode(data)) as T;

/** One environment the worker holds: its consumer, pipeline and publishing. */
class Holding {
  private sub: Subscription | undefined;
  private messages: ConsumerMessages | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private seq = 0;
  /**
   * The CSI sequence of the checkpoint this holding started from: while it replays the frames up to
   * there, its own checkpoints would move the room's back (and a holder after it would replay
   * further back still), so it writes none until it has read past it.
   */
  private startedAt = 0;
  private streamTime = 0;
  private nextTrackId = 1;
  private stopped = false;
  /** Pose frames made, and published (made after the last one already published). */
  made = 0;
  published = 0;
  /** The time of the last pose frame published for the environment before this holding began. */
  publishedUpTo = -Infinity;
  /**
   * Pose frames made while the lease could not be vouched for (a process starved of CPU or stopped
   * comes back with its CSI queued and its renewal late): published, in order, once a renewal
   * confirms the lease; never, when another worker took the room meanwhile.
   */
  private waiting: PoseFrame[] = [];
  /**
   * The lease lapsed and was taken again: another worker may have published for the room
   * meanwhile, and nothing goes out until the last frame on the stream is read again.
   */
  private retaken = false;
  private readingLast = false;

  constructor(
    readonly env: string,
    private readonly node: WorkerNode,
  ) {}

  async start(): Promise<void> {
    const { bus, log } = this.node;
    const entry = await bus.environments.get(bucketKey(this.env));
    if (!entry || entry.operation !== 'PUT') throw new Error(`environment ${this.env} has no configuration on the bus`);
    const { config } = decodeJson<EnvironmentEntry>(entry.value);
    const model = await this.node.model(config.neural_network.model_path);
    const cp = await bus.checkpoints.get(bucketKey(this.env));
    const checkpoint = cp && cp.operation === 'PUT' ? decodeJson<Checkpoint>(cp.value) : undefined;
    const last = await lastPublished(bus, this.env);
    if (last) {
      this.publishedUpTo = last.time;
      for (const p of last.persons) if (p.trackId !== undefined) this.nextTrackId = Math.max(this.nextTrackId, p.trackId + 1);
    }
    if (checkpoint) {
      this.nextTrackId = Math.max(this.nextTrackId, checkpoint.nextTrackId);
      this.startedAt = checkpoint.seq;
    }
    const settings = this.node.settings;
    // From the first frame of the rewind, found by time.
    const from = checkpoint ? await firstSeqSince(bus, csiSubjects(this.env), checkpoint.streamTime - settings.rewind_seconds * 1000) : 1;
    const frames = new Subject<CsiFrame>();
    const firstTrackId = this.nextTrackId;
    this.sub = frames
      .pipe(livePipeline({ model, untrained: 'drop', firstTrackId, radios: () => config.environment.site.radios }, () => liveParams(config)))
      .subscribe({
        next: (f) => this.publish(f),
        error: (e: unknown) => {
          log('error', `worker ${this.node.id}: environment ${this.env}: pipeline failed: ${(e as Error).message}`);
          void this.node.release(this.env);
        },
      });
    this.checkpointTimer = setInterval(() => void this.checkpoint(), settings.checkpoint_interval_seconds * 1000);
    log(
      'info',
      `worker ${this.node.id}: environment ${this.env}: replays from ${checkpoint ? `${settings.rewind_seconds} s before its checkpoint (seq ${checkpoint.seq})` : 'the start of its stream'}`,
    );
    void this.read(frames, from);
  }

  /**
   * Reads the room's CSI into the pipeline from a stream sequence on, through an ordered consumer.
   * A read that ends or stalls (no frame for {@link STALL_MS}: a NATS node lost, the stream's
   * leader elected again) starts again after the last frame read, into the same pipeline.
   */
  private async read(frames: Subject<CsiFrame>, from: number): Promise<void> {
    const { bus, log } = this.node;
    let next = from;
    while (!this.stopped) {
      let watchdog: NodeJS.Timeout | undefined;
      try {
        const consumer = await bus.js.consumers.get(CSI_STREAM, { filterSubjects: csiSubjects(this.env), opt_start_seq: next });
        // The client creates the consumer inside `consume`, retrying while the stream has no
        // leader, and waits between tries up to 1.5x `expires`: a short `expires` keeps those
        // waits short, and a start that takes longer than a stall is given up and begun again.
        // Messages are batches of up to 256 KiB (src/cluster/ingest.ts): a pull is bounded by bytes.
        const starting = consumer.consume({ max_bytes: PULL_MAX_BYTES, expires: PULL_EXPIRES_MS });
        const messages = await Promise.race([starting, new Promise<undefined>((ok) => setTimeout(() => ok(undefined), STALL_MS))]);
        if (!messages) {
          void starting.then(
            (m) => m.stop(),
            () => undefined,
          );
          throw new Error(`no consumer after ${STALL_MS} ms`);
        }
        this.messages = messages;
        let last = Date.now();
        watchdog = setInterval(() => {
          if (Date.now() - last > STALL_MS) messages.stop();
        }, STALL_MS / 2);
        let slice = performance.now();
        for await (const m of messages) {
          if (this.stopped) break;
          last = Date.now();
          // A replay comes as fast as the bus sends it: give timers (lease renewals) and I/O a turn.
          if (performance.now() - slice > YIELD_EVERY_MS) {
            await new Promise((ok) => setImmediate(ok));
            slice = performance.now();
          }
          this.seq = m.seq;
          next = m.seq + 1;
          this.streamTime = m.info.timestampNanos / 1e6;
          let batch: CsiFrame[];
          try {
            batch = decodeCsiFrames(m.data);
          } catch (e) {
            this.node.badFrames++;
            log('warn', `worker ${this.node.id}: ${m.subject} seq ${m.seq}: ${(e as Error).message}`);
            continue;
          }
          for (const frame of batch) frames.next(frame);
        }
      } catch (e) {
        if (!this.stopped) log('warn', `worker ${this.node.id}: environment ${this.env}: reading CSI: ${(e as Error).message}`);
      } finally {
        clearInterval(watchdog);
      }
      if (this.stopped) break;
      this.node.restarts++;
      await new Promise((ok) => setTimeout(ok, RESTART_WAIT_MS));
    }
  }

  private publish(f: PoseFrame): void {
    this.made++;
    for (const p of f.persons) if (p.trackId !== undefined && p.trackId >= this.nextTrackId) this.nextTrackId = p.trackId + 1;
    if (this.waiting.length > 0 || this.retaken || !this.node.mayPublish(this.env)) {
      if (this.waiting.length >= MAX_WAITING) this.waiting.shift();
      this.waiting.push(f);
      return;
    }
    this.send(f);
  }

  /**
   * The lease was renewed: frames made meanwhile go out. One taken again after it lapsed goes on
   * after the last frame on the stream (read again until the stream answers).
   * @param retaken the lease had lapsed and was created again
   */
  renewed(retaken: boolean): void {
    if (retaken) this.retaken = true;
    if (!this.retaken) return this.flush();
    if (this.readingLast) return;
    this.readingLast = true;
    lastPublished(this.node.bus, this.env)
      .then(
        (last) => {
          if (last && last.time > this.publishedUpTo) this.publishedUpTo = last.time;
          this.retaken = false;
        },
        (e: unknown) =>
          this.node.log('warn', `worker ${this.node.id}: ${this.env}: reading its last pose frame: ${(e as Error).message}; again at the next renewal`),
      )
      .finally(() => {
        this.readingLast = false;
        this.flush();
      });
  }

  /** Publishes the frames that waited, once the lease is vouched for. */
  private flush(): void {
    if (this.stopped || this.retaken || !this.node.mayPublish(this.env)) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const f of waiting) this.send(f);
  }

  private send(f: PoseFrame): void {
    // Already published by the worker that held the environment before.
    if (f.time <= this.publishedUpTo) return;
    const out = this.node.publisher;
    for (const a of f.alerts ?? []) out.publish(alertsSubject(this.env), new TextEncoder().encode(JSON.stringify(a)), a.alertId);
    for (const e of f.events ?? []) out.publish(eventsSubject(this.env), new TextEncoder().encode(JSON.stringify(e)), e.eventId);
    out.publish(poseSubject(this.env), encodePoseFrame(f), `pose:${this.env}:${f.time}`);
    this.published++;
  }

  /**
   * Records how far the room's CSI was read (periodically, and once more when the room is given
   * back); never below the checkpoint the holding started from.
   */
  private async checkpoint(): Promise<void> {
    if (this.seq === 0 || this.seq <= this.startedAt) return;
    const cp: Checkpoint = { seq: this.seq, streamTime: this.streamTime, nextTrackId: this.nextTrackId, worker: this.node.id };
    try {
      await this.node.bus.checkpoints.put(bucketKey(this.env), JSON.stringify(cp));
    } catch (e) {
      this.node.log('warn', `worker ${this.node.id}: checkpoint of ${this.env}: ${(e as Error).message}`);
    }
  }

  /**
   * Stops reading and the pipeline.
   * @param handBack the lease is still this worker's (the room is given back): record how far it
   *   read, so the next holder replays from there; false when the lease was lost, since another
   *   worker's checkpoint must not be overwritten
   */
  async stop(handBack: boolean): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Not published: the room's next holder replays them from the checkpoint.
    this.waiting = [];
    clearInterval(this.checkpointTimer);
    // Reading ends first, so that the last checkpoint is how far this holding read.
    await this.messages?.close().catch(() => undefined);
    this.sub?.unsubscribe();
    if (handBack) await this.checkpoint();
  }
}

/** A running worker node. */
export class WorkerNode {
  readonly id: string;
  readonly publisher: Publisher;
  /** Frames on the bus that did not decode. */
  badFrames = 0;
  /** Reads of a room's CSI started again after they ended or stalled. */
  restarts = 0;
  private readonly holdings = new Map<string, Holding>();
  private readonly models = new Map<string, Promise<PoseModel>>();
  /** The rooms' leases, by the rules of src/cluster/leases.ts. */
  private readonly table: LeaseTable;
  /**
   * A quarter of a lease's life: the worker publishes for a room only while its lease is good for
   * longer than this by its own clock (the rest is kept in hand for the publish to reach the server).
   */
  private readonly leaseMarginMs: number;

  private constructor(
    readonly bus: Bus,
    readonly settings: WorkerSettings,
    readonly log: Logger,
    id: string | undefined,
  ) {
    this.id = id ?? randomUUID().slice(0, 8);
    this.publisher = new Publisher(bus);
    this.leaseMarginMs = settings.lease_ttl_seconds * 250;
    this.table = new LeaseTable({
      id: this.id,
      ttlMs: settings.lease_ttl_seconds * 1000,
      buckets: { leases: bus.leases, members: bus.workers, items: bus.environments },
      itemOf: (e) => decodeJson<EnvironmentEntry>(e.value).id,
      work: {
        take: (env) => this.take(env),
        drop: (env, why) => this.drop(env, why),
        renewed: (env, retaken) => this.holdings.get(env)?.renewed(retaken),
      },
      log,
      label: `worker ${this.id}`,
    });
  }

  /**
   * Starts a worker: it announces itself and takes its share of the environments on the bus.
   * @param bus the bus
   * @param settings `cluster` of its configuration
   * @param log where it says what it holds
   * @param id its name (default a random one); refused while a live worker has it
   * @returns the worker; `close()` it
   */
  static async start(bus: Bus, settings: WorkerSettings, log: Logger, id?: string): Promise<WorkerNode> {
    const w = new WorkerNode(bus, settings, log, id);
    await w.table.start();
    return w;
  }

  /** The environments held now. */
  held(): string[] {
    return this.table.holds();
  }

  /** Whether the worker may publish for an environment now (see {@link leaseMarginMs}). */
  mayPublish(env: string): boolean {
    return this.table.validFor(env) > this.leaseMarginMs;
  }

  /** Pose frames made and published, per environment held. */
  figures(): Record<string, { made: number; published: number }> {
    return Object.fromEntries([...this.holdings].map(([env, h]) => [env, { made: h.made, published: h.published }]));
  }

  /** The model at a path, loaded once for every environment that runs it. */
  model(path: string): Promise<PoseModel> {
    let m = this.models.get(path);
    if (!m) {
      m = PoseModel.load(resolveInstalled(path));
      this.models.set(path, m);
      m.catch(() => this.models.delete(path));
    }
    return m;
  }

  private async take(env: string): Promise<void> {
    const h = new Holding(env, this);
    this.holdings.set(env, h);
    try {
      await h.start();
    } catch (e) {
      this.holdings.delete(env);
      await h.stop(false);
      throw e;
    }
  }

  private async drop(env: string, why: 'released' | 'lost'): Promise<void | 'lapse'> {
    const h = this.holdings.get(env);
    this.holdings.delete(env);
    if (why === 'lost' || !h) {
      // Another worker's now: its checkpoint is not overwritten.
      await h?.stop(false);
      return;
    }
    await h.stop(true);
    // What it published must be in the stream before the lease goes: the next holder publishes
    // after the last frame it finds there. Held longer than the lease's life, the lease lapses.
    if ((await this.publisher.taken(this.settings.lease_ttl_seconds * 1000)) > 0) return 'lapse';
  }

  /** Stops an environment's pipeline and gives its lease back (a pipeline that failed). */
  release(env: string): Promise<void> {
    return this.table.release(env);
  }

  /** Gives every environment back (for another worker to take at once) and stops. */
  async close(): Promise<void> {
    await this.table.close();
    await this.publisher.settled();
    for (const m of this.models.values()) await (await m.catch(() => undefined))?.release();
  }
}

/** JetStream's error code for a stream holding no message of the subject asked for. */
const NO_MESSAGE_FOUND = 10037;

/**
 * The last pose frame published for an environment, read back from the pose stream.
 * @returns it, or undefined when the stream holds none for the environment
 * @throws Error when the stream cannot say (no leader while one is elected, the connection
 *   lost): a worker taking the room over then waits for its next round rather than publish again
 *   what was published
 */
export async function lastPublished(bus: Bus, env: string): Promise<PoseFrame | undefined> {
  try {
    const last = await bus.jsm.streams.getMessage(POSE_STREAM, { last_by_subj: poseSubject(env) });
    return decodePoseFrame(last.data);
  } catch (e) {
    if ((e as NatsError).api_error?.err_code === NO_MESSAGE_FOUND) return undefined;
    throw e;
  }
}

/**
 * The CSI stream's sequence of the first frame of a subject filter at or after a time (NATS 2.9
 * has no lookup by time: a throwaway consumer starting at that time reads one message).
 * @returns that sequence, or the stream's next one when nothing is that recent
 */
async function firstSeqSince(bus: Bus, filter: string, timeMs: number): Promise<number> {
  const ci = await bus.jsm.consumers.add(CSI_STREAM, {
    filter_subject: filter,
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(timeMs).toISOString(),
    ack_policy: AckPolicy.None,
    mem_storage: true,
    inactive_threshold: 10_000_000_000,
  });
  try {
    const m = await (await bus.js.consumers.get(CSI_STREAM, ci.name)).next({ expires: 1000 });
    return m ? m.seq : (await bus.jsm.streams.info(CSI_STREAM)).state.last_seq + 1;
  } finally {
    await bus.jsm.consumers.delete(CSI_STREAM, ci.name).catch(() => undefined);
  }
}
