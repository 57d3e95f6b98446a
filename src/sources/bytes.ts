import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { Observable } from 'rxjs';
import type { Demand } from './demand.js';

/**
 * The chunks of a readable byte stream as an Observable. Unsubscribing pauses and detaches from
 * the stream (and destroys it when `destroyOnEnd` is set, as for files we opened ourselves).
 * While `demand` is paused the stream is paused too, so a slow consumer holds the reading back
 * (and, through the pipe, the writer of stdin) instead of buffering.
 */
export function readableBytes(open: () => Readable, destroyOnEnd: boolean, demand?: Demand): Observable<Uint8Array> {
  return new Observable<Uint8Array>((subscriber) => {
    let stream: Readable;
    try {
      stream = open();
    } catch (e) {
      subscriber.error(e);
      return;
    }
    let cancelWait: (() => void) | undefined;
    const resume = () => {
      cancelWait = undefined;
      if (!subscriber.closed) stream.resume();
    };
    const onData = (c: Buffer | string) => {
      subscriber.next(typeof c === 'string' ? Buffer.from(c) : c);
      if (demand?.paused && !cancelWait && !subscriber.closed) {
        stream.pause();
        cancelWait = demand.whenReady(resume);
      }
    };
    const onEnd = () => subscriber.complete();
    const onError = (e: Error) => subscriber.error(e);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    return () => {
      cancelWait?.();
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      if (destroyOnEnd) stream.destroy();
      else stream.pause();
    };
  });
}

/**
 * The bytes of a file, in chunks of up to 64 KiB, as fast as they can be read.
 * @param path file to read
 * @param demand the consumer's backpressure (src/sources/demand.ts)
 * @returns chunks in file order; errors if the file cannot be opened or read
 */
export function fileBytes(path: string, demand?: Demand): Observable<Uint8Array> {
  return readableBytes(() => createReadStream(path, { highWaterMark: 65536 }), true, demand);
}

/** The bytes arriving on standard input, read no faster than `demand` allows. */
export function stdinBytes(demand?: Demand): Observable<Uint8Array> {
  return readableBytes(() => process.stdin, false, demand);
}
