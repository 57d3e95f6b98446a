/**
 * The infer stage's batching: rows wait in a bounded FIFO until a batch is due, which is when
 * `batchSize` of them wait, when the oldest has waited `maxWaitMs`, or when no more will come.
 * Past `maxQueue` the OLDEST rows are dropped and counted, so the queue stays bounded and what
 * runs is as fresh as the model allows. Time is the caller's clock (the operator's scheduler), given
 * to each call, so the rules run the same under a test clock.
 */
import type { InferStats } from './inferTypes.js';

/** When a batch is due (the infer stage's live options). */
export interface BatchRule {
  /** Rows per batch: that many waiting make a batch at once. */
  readonly batchSize: number;
  /** A partial batch is due once its oldest row has waited this long (clock ms). */
  readonly maxWaitMs: number;
}

/**
 * A FIFO of rows with their enqueue times, bounded on push, cut into batches by a {@link BatchRule}.
 * A ring that grows by doubling, so that pushing, taking and dropping are O(1) per row.
 * @example
 * const batcher = new InferBatcher<FeatureRow>(stats);
 * batcher.push(row, scheduler.now(), 256);
 * const n = batcher.due(scheduler.now(), { batchSize: 32, maxWaitMs: 5 });
 * if (n > 0) run(batcher.take(n));
 */
export class InferBatcher<T> {
  private rows: Array<T | undefined> = new Array(16);
  private times = new Float64Array(16);
  private head = 0;
  private size = 0;

  /**
   * @param stats where dropped rows are counted (`dropped` is added to, never reset here)
   */
  constructor(private readonly stats: Pick<InferStats, 'dropped'> = { dropped: 0 }) {}

  /** Rows waiting. */
  get length(): number {
    return this.size;
  }

  /**
   * Queues a row; when more than `maxQueue` wait, drops the oldest and counts them in `stats.dropped`.
   * @param row the row
   * @param now the clock's time of its arrival
   * @param maxQueue most rows kept, >= 1
   * @returns the rows dropped (0 almost always)
   * @example
   * batcher.push(row, 12, 3) // 1 when three rows were already waiting
   */
  push(row: T, now: number, maxQueue: number): number {
    if (this.size === this.rows.length) this.grow();
    const i = (this.head + this.size) & (this.rows.length - 1);
    this.rows[i] = row;
    this.times[i] = now;
    this.size++;
    const n = this.size - maxQueue;
    if (n <= 0) return 0;
    this.drop(n);
    this.stats.dropped += n;
    return n;
  }

  /**
   * How many rows to cut into a batch now: `min(length, batchSize)` when `batchSize` rows wait,
   * when the oldest has waited `maxWaitMs`, or when `flush` says no more will come; else 0.
   * @param now the clock's time
   * @param rule batch size and longest wait
   * @param flush true once the source has completed
   * @returns rows to take, 0 = not yet (or nothing waits)
   * @example
   * batcher.due(5, { batchSize: 32, maxWaitMs: 5 }) // the rows waiting (at most 32) when the oldest came at 0
   */
  due(now: number, rule: BatchRule, flush = false): number {
    if (this.size === 0) return 0;
    if (this.size >= rule.batchSize || flush || this.dueAt(rule.maxWaitMs) <= now) return Math.min(this.size, rule.batchSize);
    return 0;
  }

  /**
   * When the oldest row's wait ends: its enqueue time + `maxWaitMs`.
   * @param maxWaitMs the longest wait
   * @returns the clock's time, Infinity when nothing waits
   * @example
   * batcher.dueAt(5) // 17 when the oldest row came at 12
   */
  dueAt(maxWaitMs: number): number {
    return this.size === 0 ? Infinity : this.times[this.head]! + maxWaitMs;
  }

  /**
   * Takes the oldest rows off the queue.
   * @param n how many (fewer when fewer wait)
   * @returns the rows, oldest first, in an array of their own
   * @example
   * const rows = batcher.take(batcher.due(now, rule));
   */
  take(n: number): T[] {
    const k = Math.min(n, this.size);
    const out: T[] = new Array(k);
    for (let i = 0; i < k; i++) out[i] = this.shift();
    return out;
  }

  /**
   * Drops every waiting row (not counted as dropped: the stream is ending).
   * @example
   * batcher.clear(); // batcher.length === 0
   */
  clear(): void {
    this.drop(this.size);
  }

  private shift(): T {
    const row = this.rows[this.head] as T;
    this.rows[this.head] = undefined;
    this.head = (this.head + 1) & (this.rows.length - 1);
    this.size--;
    return row;
  }

  private drop(n: number): void {
    for (let i = 0; i < n; i++) this.shift();
  }

  private grow(): void {
    const cap = this.rows.length;
    const rows: Array<T | undefined> = new Array(cap * 2);
    const times = new Float64Array(cap * 2);
    for (let i = 0; i < this.size; i++) {
      const j = (this.head + i) & (cap - 1);
      rows[i] = this.rows[j];
      times[i] = this.times[j]!;
    }
    this.rows = rows;
    this.times = times;
    this.head = 0;
  }
}
