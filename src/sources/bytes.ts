import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { Observable } from 'rxjs';

/**
 * The chunks of a readable byte stream as an Observable. Unsubscribing pauses and detaches from
 * the stream (and destroys it when `destroyOnEnd` is set, as for files we opened ourselves).
 */
export function readableBytes(open: () => Readable, destroyOnEnd: boolean): Observable<Uint8Array> {
  return new Observable<Uint8Array>((subscriber) => {
    let stream: Readable;
    try {
      stream = open();
    } catch (e) {
      subscriber.error(e);
      return;
    }
    const onData = (c: Buffer | string) => subscriber.next(typeof c === 'string' ? Buffer.from(c) : c);
    const onEnd = () => subscriber.complete();
    const onError = (e: Error) => subscriber.error(e);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    return () => {
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
 * @returns chunks in file order; errors if the file cannot be opened or read
 */
export function fileBytes(path: string): Observable<Uint8Array> {
  return readableBytes(() => createReadStream(path, { highWaterMark: 65536 }), true);
}

/** The bytes arriving on standard input. */
export function stdinBytes(): Observable<Uint8Array> {
  return readableBytes(() => process.stdin, false);
}
