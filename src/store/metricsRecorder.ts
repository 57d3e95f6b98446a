import { StoreError, type Store, type StoreWriteFailure, type SystemMetricsSample } from './store.js';

/** Bounds and error reporting of a MetricsRecorder. */
export interface MetricsRecorderOptions {
  /**
   * Samples held while the store cannot take them. Past it the oldest is given up, counted and
   * reported. Default 8,640: a day of samples at one every 10 s (about 1 MB).
   */
  maxPending?: number;
  /** Receives every write failure and every sample given up; the recorder never throws them. */
  onError?: (error: StoreError) => void;
}

/** What the recorder has done so far. */
export interface MetricsRecorderStats {
  /** Samples in the store. */
  written: number;
  /** Samples waiting for the store. */
  pending: number;
  /** Samples given up (buffer full, or unwritten at close); each was reported. */
  dropped: number;
  /** Write attempts the store refused. */
  failedWrites: number;
}

/**
 * Writes the service's `system_metrics` samples (one every 10 s), and keeps them while the store
 * cannot take them (a full disk, a failing device): every sample waits in a bounded queue, oldest
 * first, and each `record` writes everything waiting, so an outage leaves no gap once the store
 * takes writes again (the summary's uptime and error count read these rows). Nothing throws.
 *
 * Attached to the store: `store.close()` makes one last attempt, and while samples wait after a
 * failure the store's health says so (`degraded`, or `unhealthy` once samples are given up).
 *
 * @example
 * const recorder = new MetricsRecorder(store, { onError: (e) => log('error', `metrics: ${e.message}`) });
 * setInterval(() => void recorder.record(sample()), 10_000);
 */
export class MetricsRecorder {
  private readonly maxPending: number;
  private readonly onError: (e: StoreError) => void;
  private readonly pending: SystemMetricsSample[] = [];
  private readonly s = { written: 0, dropped: 0, failedWrites: 0 };
  /** The message of the last failed write, while samples wait for a retry. */
  private failure: string | undefined;
  /** Samples given up since the last successful write. */
  private lostSinceWrite = 0;
  private draining: Promise<void> | undefined;
  private isClosed = false;
  private readonly detach: () => void;

  /**
   * @param store the open store; the recorder attaches to it
   * @param options queue bound and error callback
   */
  constructor(
    private readonly store: Store,
    options: MetricsRecorderOptions = {},
  ) {
    this.maxPending = Math.max(1, Math.floor(options.maxPending ?? 8640));
    const cb = options.onError;
    this.onError = (e) => {
      try {
        cb?.(e);
      } catch {
        // A throwing error handler must not stop the recording.
      }
    };
    this.detach = store.attach(this);
  }

  /** A snapshot of the counters. */
  get stats(): MetricsRecorderStats {
    return { ...this.s, pending: this.pending.length };
  }

  /**
   * Queues one sample and writes everything waiting, oldest first. Never rejects.
   * @param sample the sample
   * @returns when the write has committed or failed
   */
  record(sample: SystemMetricsSample): Promise<void> {
    if (this.isClosed) {
      this.giveUp(1, new StoreError('closed', `metrics recorder is closed: the sample of ${new Date(sample.time).toISOString()} was not stored`));
      return Promise.resolve();
    }
    this.pending.push(sample);
    return this.drain();
  }

  /** Writes what waits, one drain at a time (a record during a drain is written by the next). */
  private drain(): Promise<void> {
    this.draining = (this.draining ?? Promise.resolve()).then(() => this.writePending());
    return this.draining;
  }

  private async writePending(): Promise<void> {
    while (this.pending.length > 0) {
      try {
        await this.store.recordMetrics(this.pending[0]!);
      } catch (e) {
        this.s.failedWrites++;
        const err = e instanceof StoreError ? e : new StoreError('io', (e as Error)?.message ?? String(e), { cause: e });
        this.failure = err.message;
        // Bounded: past it the oldest go (the newest say the most about the present).
        const lost = this.pending.length > this.maxPending ? this.pending.splice(0, this.pending.length - this.maxPending) : [];
        this.onError(new StoreError(err.reason, `metrics sample not written, ${this.pending.length} kept for retry: ${err.message}`, { cause: err }));
        if (lost.length > 0) {
          this.giveUp(
            lost.length,
            new StoreError(
              'io',
              `${lost.length} metrics sample(s) from ${new Date(lost[0]!.time).toISOString()} given up: ${this.maxPending} already wait for the database`,
            ),
          );
        }
        return;
      }
      this.pending.shift();
      this.s.written++;
      this.failure = undefined;
      this.lostSinceWrite = 0;
    }
  }

  private giveUp(n: number, error: StoreError): void {
    this.s.dropped += n;
    this.lostSinceWrite += n;
    this.onError(error);
  }

  /**
   * For the store's health: the last write failure while samples wait for a retry, and whether
   * samples have been given up since the last write that succeeded.
   */
  writeFailure(): StoreWriteFailure | undefined {
    if (this.failure === undefined || this.pending.length === 0) return undefined;
    return { message: `metrics: ${this.failure}`, losing: this.lostSinceWrite > 0 };
  }

  /**
   * Writes what waits (one last attempt), then refuses further samples; what is still unwritten
   * is counted and reported. Idempotent; never rejects.
   */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    await this.drain();
    if (this.pending.length > 0) {
      const n = this.pending.length;
      this.pending.length = 0;
      this.giveUp(n, new StoreError('io', `${n} metrics sample(s) given up at close: ${this.failure ?? 'not written'}`));
    }
    this.detach();
  }
}
