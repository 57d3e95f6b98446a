/**
 * What a store node writes (docs/scale.md "Store nodes"): the pose frames (alerts and events
 * included: a frame carries its own) of the environments it holds.
 *
 * - **Rooms by lease.** Store nodes share the environments out as workers do (src/cluster/leases.ts):
 *   leases in `csipose_store_leases`, live store nodes in `csipose_stores`, each holding its fair
 *   share. One store node holds every environment.
 * - **A durable consumer per room.** A held environment is read through the durable consumer
 *   `csipose-store-room-<env>` of the pose stream, filtered to `pose.<env>`: the consumer belongs to
 *   the room, not to a node, so whichever node holds the room next resumes at its ack floor. At each
 *   take the consumer is recreated at its first frame not acknowledged, so what a node that died
 *   took but never acknowledged comes first, in order (a consumer left as it was would deliver
 *   newer frames first and those only after its ack wait, and the skip would drop them).
 * - **Acknowledged once kept.** A batch of up to 500 frames (or what came within 250 ms) is
 *   acknowledged only once the sink has written it; while it cannot write (a full disk),
 *   consumption waits and the stream keeps the frames. With a shared lake (`csipose serve --lake`), once the lake has committed it as well
 *   (src/cluster/storeCommit.ts), so that whatever is acknowledged is readable by every node.
 * - **Skipping.** A frame this node already stored (`storedFrames`: its newest frames of the room,
 *   by time to the millisecond the store keeps, src/cluster/storedFrames.ts) is a redelivery and is
 *   skipped, exactly: one delivered late, after newer ones (a read cut short by a lost NATS node,
 *   delivered again once its acknowledgement wait ends), is still written. With a shared lake, a
 *   frame at or before what the lake committed of the room (`committedUpTo`, every node's) is
 *   acknowledged at once.
 * - **Giving a room back** (fair share, stop): its reading stops, what was taken is written (and
 *   committed), acknowledged, and the lease is given back.
 */
import { Observable, Subject } from 'rxjs';
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg, type KvEntry } from 'nats';
import type { PoseFrame } from '../pose/types.js';
import { bucketKey, POSE_STREAM, poseSubject, PULL_EXPIRES_MS, type Bus } from '../bus/bus.js';
import { decodePoseFrame } from '../bus/codec.js';
import type { Logger } from '../service/service.js';
import type { EnvironmentEntry } from './ingest.js';
import { LeaseTable } from './leases.js';
import type { StoredFrames } from './storedFrames.js';

/** Frames a store node takes from a room's consumer per batch. */
const STORE_BATCH = 500;
/** Longest a taken frame waits before its batch is written and acknowledged, ms. */
const SETTLE_MS = 250;
/** How long a store node waits between tries while its sink cannot write (a full or failing disk). */
const FLUSH_RETRY_MS = 1000;
/** Wait before a room's reading starts again after the bus failed it, ms. */
const RESTART_WAIT_MS = 1000;

/** For a `.catch` of the JetStream API: a consumer not found is undefined, any other error is thrown. */
const unlessNotFound = (e: unknown): undefined => {
  if ((e as Error).message === 'consumer not found') return undefined;
  throw e;
};

/** What a store node's rooms need of its sink. */
export interface FlushingSink {
  /** Writes what the sink buffers. */
  flush(): Promise<void>;
  /** Rows buffered, not yet written. */
  pending(): number;
  /** True while the sink's last batch failed (its rows wait for a retry). */
  failing(): boolean;
}

/**
 * Acknowledging through a shared lake: messages whose frames are written wait for the next commit
 * of the lake that holds them (src/cluster/storeCommit.ts).
 */
export interface RoomCommits {
  /** How long a message may wait for its commit before the stream would deliver it again, ms. */
  readonly ackWaitMs: number;
  /** Before a room is read: this node's rows of it that were never committed go. */
  prepare(env: string): Promise<void>;
  /** Messages of a room whose frames the sink wrote: acknowledged once committed. */
  written(env: string, messages: readonly JsMsg[]): void;
  /** Commits now (the room's last batch when it is given back), acknowledging what waits. */
  commitNow(): Promise<void>;
  /** A room lost: what waits of it is never acknowledged here (its next holder stores it). */
  forget(env: string): void;
}

/** What a store node's rooms run by. */
export interface StoreRoomsOptions {
  bus: Bus;
  /** The node's name (its leases and announcement). */
  name: string;
  /** `cluster.lease_ttl_seconds`, in ms. */
  leaseTtlMs: number;
  sink: FlushingSink;
  /** The frames of an environment this node stored lately, read when it takes the room. */
  storedFrames(env: string): Promise<StoredFrames>;
  /**
   * With a shared lake, the time up to which every node committed an environment (epoch ms, whole;
   * -Infinity without a lake or when nothing is), read when the node takes the room.
   */
  committedUpTo(env: string): Promise<number>;
  /** With a shared lake: acknowledgements wait for its commits. */
  commits?: RoomCommits;
  log: Logger;
}

/** The durable consumer of a room's pose frames (the room's, not a node's). */
export const roomConsumer = (env: string): string => `csipose-store-room-${bucketKey(env)}`;

/** A store node's rooms: subscribe to {@link feed} to hold and read them; unsubscribe to give them back. */
export class StoreRooms {
  private table: LeaseTable | undefined;
  private readonly readers = new Map<string, RoomReader>();
  /** Readings being stopped, by room. */
  private readonly stopping = new Map<string, Promise<void>>();
  private closing: Promise<void> = Promise.resolve();
  /** Where frames go while the feed is subscribed. */
  private out: Subject<PoseFrame> | undefined;

  constructor(readonly o: StoreRoomsOptions) {}

  /** Environments held now. */
  held(): string[] {
    return this.table?.holds() ?? [];
  }

  /** Whether this node holds the environment's lease (also while giving it back), whatever its time left. */
  holds(env: string): boolean {
    return this.table?.has(env) ?? false;
  }

  /** How long, from now, no other store node can hold the environment (ms; 0: not held). */
  validFor(env: string): number {
    return this.table?.validFor(env) ?? 0;
  }

  /**
   * The frames of the rooms held, while subscribed: the subscription takes the node's share of the
   * rooms, its end gives them back ({@link stopped} resolves once they are).
   */
  feed(): Observable<PoseFrame> {
    return new Observable<PoseFrame>((sub) => {
      const out = new Subject<PoseFrame>();
      const inner = out.subscribe(sub);
      let ended = false;
      const started = (async () => {
        // After the previous subscription gave its rooms back.
        await this.closing;
        if (ended) return;
        this.out = out;
        try {
          // Set before it starts: a commit asks it about the rooms it takes during its first round.
          const table = new LeaseTable({
            id: this.o.name,
            ttlMs: this.o.leaseTtlMs,
            buckets: { leases: this.o.bus.storeLeases, members: this.o.bus.stores, items: this.o.bus.environments },
            itemOf: (e: KvEntry) => (JSON.parse(new TextDecoder().decode(e.value)) as EnvironmentEntry).id,
            work: { take: (env) => this.take(env), drop: (env, why) => this.drop(env, why) },
            log: this.o.log,
            label: `store ${this.o.name}`,
          });
          this.table = table;
          await table.start();
        } catch (e) {
          out.error(e);
        }
      })();
      return () => {
        ended = true;
        // From here frames go nowhere: the readers take no more (what they took and did not
        // emit stays unacknowledged, for the next holder).
        this.out = undefined;
        inner.unsubscribe();
        this.closing = (async () => {
          await started;
          await this.table?.close();
          this.table = undefined;
        })().catch((e: unknown) => this.o.log('error', `store ${this.o.name}: giving rooms back: ${(e as Error).message}`));
      };
    });
  }

  /** Resolves once the rooms of the last subscription are given back (the service's stop waits for it). */
  stopped(): Promise<void> {
    return this.closing;
  }

  private async take(env: string): Promise<void> {
    // A reading of the room that is still stopping (a lease lost a moment ago) ends first: two
    // readings of one room at once would store its frames twice.
    await this.stopping.get(env);
    await this.o.commits?.prepare(env);
    const stored = await this.o.storedFrames(env);
    const committed = this.o.commits ? await this.o.committedUpTo(env) : -Infinity;
    const r = new RoomReader(this, env, stored, committed);
    this.readers.set(env, r);
    r.start();
  }

  private async drop(env: string, why: 'released' | 'lost'): Promise<void> {
    const r = this.readers.get(env);
    this.readers.delete(env);
    // Lost: not one more frame of it is emitted (another node may store it now).
    const stopped = r?.stop(why === 'lost') ?? Promise.resolve();
    this.stopping.set(env, stopped);
    await stopped;
    if (this.stopping.get(env) === stopped) this.stopping.delete(env);
    if (why === 'lost') {
      this.o.commits?.forget(env);
      return;
    }
    // Given back: what was taken is written, committed and acknowledged before the lease goes.
    await this.flushed();
    await this.o.commits?.commitNow();
  }

  /**
   * Emits a frame into the node's pose stream (the sink takes it there).
   * @returns false when the feed has ended: the frame went nowhere
   */
  emit(f: PoseFrame): boolean {
    if (!this.out) return false;
    this.out.next(f);
    return true;
  }

  /**
   * Waits until the sink has written everything it buffers; while it cannot, keeps the messages
   * taken from being delivered again.
   */
  async flushed(taken: readonly JsMsg[] = []): Promise<void> {
    const { sink, log } = this.o;
    for (;;) {
      // Resolves once the batch holding what was buffered before the call committed or failed
      // (rows other rooms buffered since may still wait: they are theirs to flush).
      await sink.flush();
      if (!sink.failing()) return;
      log('warn', `store: ${sink.pending()} row(s) not written yet; the stream keeps the frames, retrying`);
      for (const m of taken) m.working();
      await new Promise((ok) => setTimeout(ok, FLUSH_RETRY_MS));
    }
  }
}

/**
 * One held room: its consumer, read continuously (`consume`: a fetch that ends on the client's
 * clock while the server still delivers would drop frames the server counts as delivered, and
 * those would come again only after the ack wait, behind newer ones, where the skip would take
 * them for frames already stored) into the node's pose stream, settled in batches.
 */
class RoomReader {
  private stopping = false;
  private halted = false;
  private done: Promise<void> = Promise.resolve();
  private messages: ConsumerMessages | undefined;
  /** Messages taken and not yet settled (written, then acknowledged or handed to the commits). */
  private taken: JsMsg[] = [];
  private takenAt = 0;
  private settling: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rooms: StoreRooms,
    private readonly env: string,
    /** The frames of the room this node stored lately; kept up as frames are emitted. */
    private readonly stored: StoredFrames,
    /**
     * With a shared lake: the time up to which the room is committed already (this node's rows
     * after its mark were deleted before the take): a redelivery up to it is acknowledged at once.
     */
    private readonly committedUpTo: number,
  ) {}

  start(): void {
    // A batch is settled once it is full, or once its first frame waited SETTLE_MS.
    this.timer = setInterval(() => {
      if (this.taken.length > 0 && performance.now() - this.takenAt >= SETTLE_MS) void this.settle();
    }, SETTLE_MS / 2);
    this.done = this.run().finally(() => clearInterval(this.timer));
  }

  /** Stops reading and settles what was taken; `halt`: not one more frame is emitted. */
  async stop(halt = false): Promise<void> {
    this.stopping = true;
    if (halt) this.halted = true;
    this.messages?.stop();
    await this.done;
  }

  /** Writes the frames taken, then acknowledges them (or hands them to the commits); one batch at a time. */
  private settle(): Promise<void> {
    const batch = this.taken;
    this.taken = [];
    if (batch.length === 0) return this.settling;
    const { commits } = this.rooms.o;
    this.settling = this.settling.then(async () => {
      await this.rooms.flushed(batch);
      if (commits) commits.written(this.env, batch);
      else for (const m of batch) m.ack();
    });
    return this.settling;
  }

  private async run(): Promise<void> {
    const { log, name } = this.rooms.o;
    for (let first = true; !this.stopping; first = false) {
      // Only the room's lease holder may make its consumer again: while this node cannot say it
      // holds the lease (its renewal is late), it waits; a lease lost stops this reading.
      if (!first && this.rooms.validFor(this.env) <= 0) {
        await new Promise((ok) => setTimeout(ok, RESTART_WAIT_MS));
        continue;
      }
      try {
        await this.read();
      } catch (e) {
        if (this.stopping) break;
        log('warn', `store ${name}: environment ${this.env}: reading its pose frames: ${(e as Error).message}; again in ${RESTART_WAIT_MS} ms`);
        await new Promise((ok) => setTimeout(ok, RESTART_WAIT_MS));
      }
    }
    await this.settle();
  }

  private async read(): Promise<void> {
    const { bus, log, commits } = this.rooms.o;
    // What was taken is settled before the consumer is made again at its ack floor.
    await this.settle();
    const durable = roomConsumer(this.env);
    // The room's first store reads from the start of the stream (what is stored already is
    // skipped). Any other failure (no leader yet after a NATS node was lost) is tried again: a
    // consumer that is there cannot be made again at another start.
    let from = 1;
    const info = await bus.jsm.consumers.info(POSE_STREAM, durable).catch(unlessNotFound);
    if (info) {
      from = info.ack_floor.stream_seq + 1;
      await bus.jsm.consumers.delete(POSE_STREAM, durable).catch(unlessNotFound);
    }
    const ackWaitMs = commits?.ackWaitMs ?? 10_000;
    await bus.jsm.consumers.add(POSE_STREAM, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      filter_subject: poseSubject(this.env),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
      ack_wait: ackWaitMs * 1e6,
      // Frames waiting for a commit are not acknowledged yet: room for a backlog being caught up.
      max_ack_pending: 20_000,
    });
    const consumer = await bus.js.consumers.get(POSE_STREAM, durable);
    const messages = await consumer.consume({ max_messages: STORE_BATCH, expires: PULL_EXPIRES_MS });
    this.messages = messages;
    if (this.stopping) messages.stop();
    for await (const m of messages) {
      // The feed ended, or the room is lost: the rest stays unacknowledged, for the next holder.
      if (this.halted || this.stopping) break;
      let f: PoseFrame | undefined;
      try {
        f = decodePoseFrame(m.data);
      } catch (e) {
        log('warn', `${m.subject} seq ${m.seq}: ${(e as Error).message}`);
      }
      if (f) {
        // Compared as the store keeps times: to the millisecond.
        const t = Math.round(f.time);
        if (t <= this.committedUpTo) {
          m.ack();
          continue;
        }
        if (f.environmentId === this.env && !this.stored.has(this.env, t)) {
          if (!this.rooms.emit(f)) {
            this.stopping = true;
            break;
          }
          this.stored.add(this.env, t);
        }
      }
      if (this.taken.length === 0) this.takenAt = performance.now();
      this.taken.push(m);
      // A full batch waits for its write: a sink that cannot write holds consumption back.
      if (this.taken.length >= STORE_BATCH) await this.settle();
    }
    messages.stop();
  }
}
