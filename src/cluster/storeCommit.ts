/**
 * A store node's commits to a cluster's shared lake (`csipose serve --role store --lake DIR`;
 * docs/scale.md "One history"): every `cluster.lake_commit_seconds` the node's lake commits
 * (src/store/nodeLake.ts), and the pose frames it committed are acknowledged on the bus then, not
 * before. So whatever the stream counts as stored is readable by every node, and a frame a node
 * wrote but did not commit before it died is stored by the room's next holder instead (the dead
 * node's copy does not count, and is deleted when it starts again).
 *
 * A commit is fenced by the room's lease: a room is committed only while the node's lease on it
 * has at least a quarter of its life left by the local clock ({@link StoreRooms.validFor}); a
 * room still held whose renewal is late waits for the next commit; one lost has its rows past its
 * mark deleted.
 */
import type { JsMsg } from 'nats';
import type { NodeLake } from '../store/nodeLake.js';
import type { Logger } from '../service/service.js';
import type { RoomCommits } from './storeRooms.js';

/** Messages waiting for a commit past which a commit starts at once (a backlog being caught up). */
const EARLY_COMMIT_MESSAGES = 5000;

/** What a {@link LakeCommitter} runs by. */
export interface LakeCommitterOptions {
  lake: NodeLake;
  /** `cluster.lake_commit_seconds`, in ms. */
  intervalMs: number;
  /** `cluster.lease_ttl_seconds`, in ms. */
  leaseTtlMs: number;
  /** How long, from now, the node's lease on a room holds (ms; 0 when not held). */
  validFor(env: string): number;
  /** Whether the node holds a room's lease (also while giving it back), whatever its time left. */
  holds(env: string): boolean;
  /** Writes what the sink buffers. */
  flush(): Promise<void>;
  log: Logger;
}

/** Acknowledgements through the shared lake's commits. */
export class LakeCommitter implements RoomCommits {
  readonly ackWaitMs: number;
  private readonly waiting = new Map<string, JsMsg[]>();
  private waitingCount = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(private readonly o: LakeCommitterOptions) {
    // A frame waits up to one interval and a commit for its acknowledgement: the stream must not
    // deliver it again meanwhile (messages still waiting after a failed commit are marked working).
    this.ackWaitMs = Math.max(30_000, 4 * o.intervalMs);
  }

  /** Commits every interval until {@link close}. */
  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.commitNow(), this.o.intervalMs);
  }

  async prepare(env: string): Promise<void> {
    // Rows the sink still holds from an earlier holding of the room are written first.
    await this.o.flush();
    const n = await this.o.lake.trim(env);
    if (n > 0) this.o.log('info', `lake: ${n} row(s) of ${env} stored but never committed deleted (the room's next holder stored them)`);
  }

  written(env: string, messages: readonly JsMsg[]): void {
    this.wait(env, messages);
    if (this.waitingCount >= EARLY_COMMIT_MESSAGES) void this.commitNow();
  }

  private wait(env: string, messages: readonly JsMsg[]): void {
    let list = this.waiting.get(env);
    if (!list) this.waiting.set(env, (list = []));
    for (const m of messages) list.push(m);
    this.waitingCount += messages.length;
  }

  forget(env: string): void {
    this.waitingCount -= this.waiting.get(env)?.length ?? 0;
    this.waiting.delete(env);
  }

  /** A commit now; one at a time (a request while one runs makes one more after it). */
  commitNow(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.once();
      } while (this.again && !this.closed);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  private async once(): Promise<void> {
    // What waits now was written before the commit's cut is taken.
    const taken = new Map(this.waiting);
    this.waiting.clear();
    this.waitingCount = 0;
    const margin = this.o.leaseTtlMs / 4;
    try {
      const r = await this.o.lake.commit((env) => (!this.o.holds(env) ? 'gone' : this.o.validFor(env) > margin ? 'held' : 'late'));
      for (const [env, messages] of taken) {
        if (r.committed.has(env)) for (const m of messages) m.ack();
        // Not committed while the room is held (its lease's renewal is late): the next commit.
        else if (this.o.holds(env)) this.wait(env, messages);
      }
    } catch (e) {
      this.o.log('error', `lake: commit failed (the frames wait, unacknowledged, for the next one): ${(e as Error).message}`);
      for (const [env, messages] of taken) {
        for (const m of messages) m.working();
        if (this.o.holds(env)) this.wait(env, messages);
      }
    }
  }

  /** Stops the timer after a last commit. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.commitNow();
    this.closed = true;
  }
}
