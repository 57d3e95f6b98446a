import { DecodeError } from '../../src/csi/decoder.js';
import type { CsiDecoder, DecodeResult } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';

/**
 * A small seeded PRNG (mulberry32), so "random" inputs (chunk sizes, junk bytes, hostile
 * datagrams) are the same on every run and a failure can be replayed.
 * @param seed any 32-bit integer; the same seed always gives the same sequence
 * @returns a function giving the next number in [0, 1) on each call
 * @example
 * const rand = mulberry32(7);
 * const junk = Uint8Array.from({ length: 64 }, () => Math.floor(rand() * 256));
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Joins byte arrays end to end into one new array.
 * @param parts the arrays, in order (none is changed)
 * @returns a new array holding every byte of `parts`
 * @example
 * const input = concat(goodRecord, Uint8Array.of(0xff, 0xff), goodRecord);
 */
export function concat(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Runs a stream decoder over `bytes` pushed in chunks, then ends it: the chunked counterpart of
 * `decodeAll`, for checking that records split across chunk boundaries decode the same.
 * @param decoder a fresh decoder (it is pushed to and ended)
 * @param bytes the whole input
 * @param size the chunk size: a fixed number of bytes, or `size(i)` for the i-th chunk (values
 *   below 1 count as 1)
 * @returns the frames emitted, a copy of the decoder's stats after `end`, and the DecodeError
 *   `end` threw, if any (any other error is rethrown)
 * @example
 * const rand = mulberry32(42);
 * const got = decodeChunked(new Intel5300Decoder(), bytes, () => 1 + Math.floor(rand() * 600));
 * expect(got.frames).toEqual(decodeAll(new Intel5300Decoder(), bytes).frames);
 */
export function decodeChunked(decoder: CsiDecoder, bytes: Uint8Array, size: number | ((i: number) => number)): DecodeResult {
  const sizeOf = typeof size === 'number' ? () => size : size;
  const frames: CsiFrame[] = [];
  const emit = (f: CsiFrame) => frames.push(f);
  for (let pos = 0, i = 0; pos < bytes.length; i++) {
    const n = Math.max(1, sizeOf(i));
    decoder.push(bytes.subarray(pos, pos + n), emit);
    pos += n;
  }
  try {
    decoder.end(emit);
  } catch (e) {
    if (e instanceof DecodeError) return { frames, stats: { ...decoder.stats }, error: e };
    throw e;
  }
  return { frames, stats: { ...decoder.stats } };
}
