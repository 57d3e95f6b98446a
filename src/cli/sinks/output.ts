/**
 * The streams a command-line sink writes to (src/cli/sinks/index.ts, `csipose decode`): their
 * backpressure for the source (src/sources/demand.ts) and how their end and failures are told apart.
 */
import type { Writable } from 'node:stream';
import type { Demand } from '../../sources/demand.js';

/**
 * Bytes an output may lag behind the stream. Sources that can wait never get near it (they pause
 * at the stream's high-water mark); live sources cannot wait, and a reader slower than them would
 * otherwise grow the process without bound, so the run stops there rather than drop records.
 */
export const MAX_BEHIND = 256 * 1024 * 1024;

/**
 * Backpressure from the streams a sink writes to, for the source (src/sources/demand.ts): paused
 * while any of them holds more than its high-water mark (its `write()` returned false), ready
 * again on its 'drain', or when it closes or fails (the sink then stops the run).
 */
export class OutputDemand implements Demand {
  private readonly outs: Writable[] = [];

  /** Adds a stream the sink writes to. */
  watch(w: Writable): void {
    this.outs.push(w);
  }

  get paused(): boolean {
    for (let i = 0; i < this.outs.length; i++) {
      const w = this.outs[i]!;
      if (w.writableNeedDrain && !w.destroyed) return true;
    }
    return false;
  }

  whenReady(fn: () => void): () => void {
    const w = this.outs.find((o) => o.writableNeedDrain && !o.destroyed);
    if (!w) {
      const h = setImmediate(fn);
      return () => clearImmediate(h);
    }
    const cancel = () => {
      w.off('drain', go);
      w.off('close', go);
      w.off('error', go);
    };
    const go = () => {
      cancel();
      fn();
    };
    w.on('drain', go);
    w.on('close', go);
    w.on('error', go);
    return cancel;
  }
}

/** True for the errors of a write whose reader went away (`| head`): the end of output, not a failure. */
export function readerGone(e: NodeJS.ErrnoException): boolean {
  return e.code === 'EPIPE' || e.code === 'ECONNRESET' || e.code === 'ERR_STREAM_DESTROYED';
}

/**
 * One stream a sink writes to, standard output or a file it opened: registers it for backpressure
 * and tells a reader that went away (`| head -3`: output ends, quietly) from a write that failed
 * (a full disk: the run fails with a message naming the output).
 */
export class SinkOutput {
  /** Set once the stream takes no more writes. */
  closed = false;
  /** Why, when it is not a reader that went away. */
  failure: Error | undefined;

  /**
   * @param stream where to write
   * @param name the output in messages: a path, or "standard output"
   * @param sink the sink's name, the prefix of its messages
   * @param demand where the source learns to wait for this stream
   * @param onClosed called once (not synchronously) when the stream closes or fails: stop the run
   */
  constructor(
    readonly stream: Writable,
    readonly name: string,
    private readonly sink: string,
    demand: OutputDemand | undefined,
    private readonly onClosed: () => void,
  ) {
    demand?.watch(stream);
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (readerGone(e)) this.close();
      else this.fail(new Error(`${sink}: cannot write ${name}: ${e.message}`));
    });
  }

  /** Writes, unless closed; a stream that falls `MAX_BEHIND` behind stops the run. */
  write(chunk: string | Uint8Array): void {
    if (this.closed) return;
    this.stream.write(chunk);
    if (this.stream.writableLength > MAX_BEHIND)
      this.fail(
        new Error(
          `${this.sink}: ${this.name} fell ${(this.stream.writableLength / 2 ** 20).toFixed(0)} MiB behind the stream; stopped rather than drop records`,
        ),
      );
  }

  /** Stops the run with an error (the first one wins). */
  fail(e: Error): void {
    if (!this.failure && !this.closed) this.failure = e;
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    // Deferred: a source may emit while it is being subscribed, before the run exists.
    queueMicrotask(this.onClosed);
  }

  /**
   * Ends a file (`end`) or waits until everything written to standard output has reached it, so
   * the process exits with all output delivered and a late write error still counts.
   * @param end true for a stream the sink opened
   */
  finish(end: boolean): Promise<void> {
    return end ? ended(this.stream) : flushed(this.stream);
  }
}

/**
 * Resolves once everything written to `w` so far has been handed to the OS (or `w` failed or was
 * destroyed); `w` stays open. For standard output, whose end a command must not decide.
 */
export function flushed(w: Writable): Promise<void> {
  return new Promise<void>((resolve) => {
    if (w.destroyed || w.writableEnded || w.writableLength === 0) return resolve();
    // Write callbacks run in order: this one once every earlier write is done, or on an error.
    w.write('', () => resolve());
  });
}

/** Ends `w` and resolves once it has finished (or failed). */
function ended(w: Writable): Promise<void> {
  return new Promise<void>((resolve) => {
    if (w.destroyed || w.writableFinished) return resolve();
    w.end(() => resolve());
  });
}
