import { expect } from 'vitest';
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

/**
 * The checksums decoded_facts.json gives for a capture: the sum of the real parts, the sum of
 * the imaginary parts and the count of complex values over every CSI value of `frames`.
 * @example
 * expect(csiSums(frames)).toEqual([facts.sum_real_all, facts.sum_imag_all, facts.n_complex_all]);
 */
export function csiSums(frames: readonly CsiFrame[]): [sumReal: number, sumImag: number, count: number] {
  let sr = 0;
  let si = 0;
  let n = 0;
  for (const f of frames) {
    for (let i = 0; i < f.csi.length; i += 2) {
      sr += f.csi[i]!;
      si += f.csi[i + 1]!;
      n++;
    }
  }
  return [sr, si, n];
}

/**
 * Asserts that chunking does not matter: `bytes` pushed in chunks of 1, 7 and 4096 bytes and of
 * seeded random sizes from 1 to `maxChunk` decodes without error to `whole`'s frames and stats.
 * @param decoder makes a fresh decoder
 * @param whole the input decoded in one piece
 * @param seed the mulberry32 seed of the random sizes
 */
export function expectChunkingInvariant(decoder: () => CsiDecoder, bytes: Uint8Array, whole: DecodeResult, seed: number, maxChunk: number): void {
  const r = mulberry32(seed);
  for (const size of [() => 1, () => 7, () => 4096, () => 1 + Math.floor(r() * maxChunk)]) {
    const got = decodeChunked(decoder(), bytes, size);
    expect(got.error).toBeUndefined();
    expect(got.stats).toEqual(whole.stats);
    expect(got.frames).toEqual(whole.frames);
  }
}

/**
 * Asserts what a capture cut short decodes to: for each cut inside `bytes`, no error when the cut
 * falls on a record's start, otherwise a DecodeError at the start of the record it cuts.
 * @param decode decodes a whole input
 * @param frames the whole capture's frames (their `meta.file_offset` are the record starts)
 * @param cuts the offsets to cut at, given the record starts (those outside the input are passed over)
 * @param check the test's own check of the frames decoded, given how many records end before the cut
 */
export function expectCuts(
  decode: (bytes: Uint8Array) => DecodeResult,
  bytes: Uint8Array,
  frames: readonly CsiFrame[],
  cuts: (starts: number[]) => number[],
  check: (got: CsiFrame[], complete: number) => void,
): void {
  const starts = frames.map((f) => f.meta!.file_offset as number);
  const ends = [...starts.slice(1), bytes.length];
  for (const cut of cuts(starts)) {
    if (cut <= 0 || cut >= bytes.length) continue;
    const got = decode(bytes.subarray(0, cut));
    const complete = ends.filter((e) => e <= cut).length;
    check(got.frames, complete);
    if (starts.includes(cut)) {
      expect(got.error).toBeUndefined();
    } else {
      expect(got.error).toBeInstanceOf(DecodeError);
      expect(got.error!.offset).toBe(starts[complete]);
    }
  }
}

/** What {@link expectGarbageSafe} feeds a decoder. */
export interface GarbageOptions {
  /** The mulberry32 seed of lengths, bytes and chunk sizes. */
  seed: number;
  trials: number;
  /** Inputs are 0 to `maxLen` - 1 random bytes. */
  maxLen: number;
  /** Chunks are 1 to `maxChunk` bytes. */
  maxChunk: number;
  /** A fresh decoder for a trial. */
  decoder: (trial: number) => CsiDecoder;
  /** Changes a trial's random bytes before they are pushed (e.g. to plant a believable header). */
  tamper?: (bytes: Uint8Array, trial: number, rand: () => number) => void;
}

/**
 * Asserts that a stream decoder survives seeded garbage: pushed in random chunks, `push` never
 * throws; `end` either counts every byte or throws a DecodeError at an offset inside the input;
 * and the records counted are the frames emitted.
 */
export function expectGarbageSafe(o: GarbageOptions): void {
  const r = mulberry32(o.seed);
  for (let trial = 0; trial < o.trials; trial++) {
    const len = Math.floor(r() * o.maxLen);
    const bytes = new Uint8Array(len);
    for (let i = 0; i < len; i++) bytes[i] = Math.floor(r() * 256);
    o.tamper?.(bytes, trial, r);
    const dec = o.decoder(trial);
    let emitted = 0;
    for (let pos = 0; pos < len;) {
      const n = 1 + Math.floor(r() * o.maxChunk);
      expect(() => dec.push(bytes.subarray(pos, pos + n), () => emitted++)).not.toThrow();
      pos += n;
    }
    try {
      dec.end(() => emitted++);
      expect(dec.stats.bytes).toBe(len);
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError);
      expect((e as DecodeError).offset).toBeLessThan(len);
    }
    expect(dec.stats.records).toBe(emitted);
  }
}
