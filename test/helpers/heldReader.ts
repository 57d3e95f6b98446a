import { Writable } from 'node:stream';

/**
 * A reader that takes nothing until released: what `| (sleep 5; wc -l)` is to the writer. Writes
 * queue in the stream (`writableLength`) as they would for a pipe nobody reads; `release()` lets
 * them through and takes everything after at once.
 */
export class HeldReader extends Writable {
  private readonly chunks: Buffer[] = [];
  private held = true;
  private waiting: (() => void) | undefined;

  constructor() {
    // The default high-water mark, as process.stdout has on a pipe.
    super({ highWaterMark: 16 * 1024 });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.chunks.push(chunk);
    if (this.held) this.waiting = cb;
    else cb();
  }

  /** Starts reading: everything queued, and all that comes after. */
  release(): void {
    this.held = false;
    const cb = this.waiting;
    this.waiting = undefined;
    cb?.();
  }

  /** Everything written so far. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
