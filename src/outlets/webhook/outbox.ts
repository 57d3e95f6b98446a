import { closeSync, fdatasync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** One event on its way to one webhook endpoint: pending (waiting or being sent) or dead. */
export interface Delivery {
  /** The delivery's id (`whd_...`): the body's `id` and `X-Csipose-Delivery`, the same on every attempt. */
  readonly id: string;
  readonly webhookId: string;
  /** What the body carries: `alert`, `event` or `ping`. */
  readonly type: string;
  /** The exact body, as signed and sent on every attempt. */
  readonly body: string;
  /** Epoch ms the event was queued. */
  readonly createdAt: number;
  /** Attempts made so far. */
  attempts: number;
  /** Epoch ms before which it is not tried again. */
  nextAt: number;
  state: 'pending' | 'dead';
  /** HTTP status of the last attempt (0 when it got no answer). */
  lastStatus: number;
  lastError: string;
  /** Epoch ms it went to the dead letters, 0 while pending. */
  deadAt: number;
  /** Why: `max_attempts`, `queue_full`. */
  deadReason: string;
}

type Entry = { op: 'put'; d: Delivery } | { op: 'del'; id: string };

/** Appended records past which (and past 4 x the live deliveries) the journal is rewritten. */
const COMPACT_MIN_RECORDS = 1000;

/**
 * The webhooks' outbox: every pending delivery and every dead letter, kept in memory and in an
 * append-only journal (`<dataDir>/webhooks/outbox.jsonl`, one JSON record a line, mode 0600).
 * A `put` record holds a delivery's whole state (queued, after a failed attempt, dead, re-driven),
 * a `del` record ends it (delivered, cleared). A delivery is written before its first attempt and
 * ended only after its endpoint answered 2xx, so a process that stops or crashes at any point
 * finds it again when it opens the journal (at-least-once: an attempt cut short by the crash is
 * made again; receivers deduplicate by the id). Each write reaches the file at once (`write`,
 * which outlives a crash of the process) and the disk within a moment (`fdatasync`, coalesced).
 * Opening replays the journal (a torn last line from a crash is skipped) and rewrites it compact;
 * it is rewritten again once it holds more than 1000 records and 4 times the live deliveries.
 */
export class Outbox {
  private fd: number;
  private records = 0;
  private syncing = false;
  private dirty = false;
  private closed = false;

  private constructor(
    private readonly path: string,
    private readonly live: Map<string, Delivery>,
    /** Lines of the journal that could not be read at open (a torn last write). */
    readonly skipped: number,
  ) {
    this.fd = this.rewrite();
  }

  /**
   * Opens (or creates) the journal and replays it.
   * @param path the journal file
   * @returns the outbox with every delivery the journal holds
   */
  static open(path: string): Outbox {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const live = new Map<string, Delivery>();
    let skipped = 0;
    for (const line of text.split('\n')) {
      if (!line) continue;
      let e: Entry;
      try {
        e = JSON.parse(line) as Entry;
      } catch {
        skipped++;
        continue;
      }
      if (e.op === 'put' && typeof e.d?.id === 'string') {
        live.delete(e.d.id); // keeps the map in order of each delivery's latest record
        live.set(e.d.id, e.d);
      } else if (e.op === 'del') live.delete(e.id);
    }
    return new Outbox(path, live, skipped);
  }

  /** Every delivery held, pending and dead, in the order they were last written. */
  deliveries(): IterableIterator<Delivery> {
    return this.live.values();
  }

  get(id: string): Delivery | undefined {
    return this.live.get(id);
  }

  get size(): number {
    return this.live.size;
  }

  /** Writes a delivery's whole state (new, or changed: the object held is the one passed). */
  put(d: Delivery): void {
    // Written first: a write that fails (a full disk) leaves the outbox as it was.
    this.append({ op: 'put', d });
    this.live.set(d.id, d);
    this.settle();
  }

  /** Ends a delivery (delivered, or a dead letter cleared). */
  remove(id: string): void {
    if (!this.live.delete(id)) return;
    this.append({ op: 'del', id });
    this.settle();
  }

  private append(e: Entry): void {
    if (this.closed) throw new Error('the webhook outbox is closed');
    writeSync(this.fd, JSON.stringify(e) + '\n');
    this.records++;
    this.dirty = true;
  }

  /** After a record and the map agree: rewrites the journal when it has grown, else flushes it soon. */
  private settle(): void {
    if (this.records > COMPACT_MIN_RECORDS && this.records > 4 * this.live.size) {
      // The rewrite is written and fsynced whole before it replaces the journal. An fdatasync
      // still queued for the old descriptor finds it closed (or its number taken by the new
      // journal, which it then flushes): harmless either way.
      fdatasyncSync(this.fd);
      closeSync(this.fd);
      try {
        this.fd = this.rewrite();
      } catch (e) {
        // The journal itself is whole (the rewrite replaces it only once written): append to it again.
        this.fd = openSync(this.path, 'a', 0o600);
        throw e;
      }
      this.dirty = false;
      return;
    }
    this.sync();
  }

  /** One fdatasync at a time, for whatever was written before it. */
  private sync(): void {
    if (this.syncing || !this.dirty) return;
    this.syncing = true;
    this.dirty = false;
    fdatasync(this.fd, () => {
      this.syncing = false;
      if (!this.closed) this.sync();
    });
  }

  /** Writes the live deliveries to a new journal, renames it into place and opens it for appending. */
  private rewrite(): number {
    const tmp = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    let written = false;
    try {
      let chunk = '';
      for (const d of this.live.values()) {
        chunk += JSON.stringify({ op: 'put', d } satisfies Entry) + '\n';
        if (chunk.length > 1 << 20) {
          writeSync(fd, chunk);
          chunk = '';
        }
      }
      if (chunk) writeSync(fd, chunk);
      fsyncSync(fd);
      written = true;
    } finally {
      closeSync(fd);
      if (!written) rmSync(tmp, { force: true });
    }
    renameSync(tmp, this.path);
    try {
      const dfd = openSync(dirname(this.path), 'r');
      try {
        fsyncSync(dfd);
      } finally {
        closeSync(dfd);
      }
    } catch {
      /* not every file system lets a directory be fsynced */
    }
    this.records = this.live.size;
    return openSync(this.path, 'a', 0o600);
  }

  /** Flushes the journal to disk and closes it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      fdatasyncSync(this.fd);
    } finally {
      closeSync(this.fd);
    }
  }
}
