/**
 * Whole columns into the vectors of a DuckDB data chunk, for the pose sink's appenders.
 *
 * `@duckdb/node-api` fills a vector value by value (`setItem`: a `DuckDBValue` or BigInt per
 * cell, a validity update per cell, then one native call per string at `flush`). Here a column
 * goes in as one memory copy from a typed array in DuckDB's own layout (the C API's
 * `duckdb_vector_get_data`): int32 and float32 columns straight from the sink's buffers, int64
 * and TIMESTAMP columns as two int32 halves computed from JS numbers (exactly, no BigInt), the
 * validity mask as 64-bit words, and strings of at most 12 bytes as inlined `duckdb_string_t`s
 * (length, then the bytes, zero-padded). Longer strings and BLOBs go through
 * `duckdb_vector_assign_string_element_len`, which copies them into the vector's own heap.
 *
 * Every function writes rows `[off, off + m)` of its source into rows `[0, m)` of the vector;
 * `m` is at most the vector size (2,048). Scratch buffers are shared: each call copies them into
 * the vector before returning.
 */
import duckdb, { type Vector } from '@duckdb/node-bindings';
import { DuckDBVector } from '@duckdb/node-api';
import { HOST_LITTLE_ENDIAN } from './schema.js';

/** Rows of one data chunk. */
export const CHUNK_ROWS = DuckDBVector.standardSize();

const TWO_32 = 4294967296;
/** Int32 index of an int64's low half (the high half is the other one of the pair). */
const LO = HOST_LITTLE_ENDIAN ? 0 : 1;
const HI = 1 - LO;
/**
 * The validity mask is uint64 words, row r at bit r % 64 of word r / 64; as int32 halves, row r is
 * bit r % 32 of half r >> 5 on a little-endian host and of the other half of the word otherwise.
 */
const HALF_SWAP = HOST_LITTLE_ENDIAN ? 0 : 1;

const scratch = new ArrayBuffer(CHUNK_ROWS * 16);
const scratchI32 = new Int32Array(scratch);
const scratchU32 = new Uint32Array(scratch);
const scratchU8 = new Uint8Array(scratch);
const validity = new Int32Array(CHUNK_ROWS / 32);

/** Clears the validity scratch to all rows valid. */
function allValid(m: number): void {
  validity.fill(-1, 0, ((m + 63) >> 6) * 2);
}
function setInvalid(r: number): void {
  validity[(r >> 5) ^ HALF_SWAP]! &= ~(1 << (r & 31));
}
/** Copies the validity scratch of `m` rows into `v` (whole uint64 words). */
function flushValidity(v: Vector, m: number): void {
  duckdb.vector_ensure_validity_writable(v);
  duckdb.copy_data_to_vector_validity(v, 0, validity.buffer, 0, ((m + 63) >> 6) * 8);
}

/**
 * An int32 column straight from the source buffer (never NULL).
 * @param v the vector
 * @param src int32 values
 * @param off first source row
 * @param m rows
 */
export function writeInt32(v: Vector, src: Int32Array, off: number, m: number): void {
  duckdb.copy_data_to_vector(v, 0, src.buffer as ArrayBuffer, src.byteOffset + off * 4, m * 4);
}

/**
 * A nullable int32 column from numbers, NaN meaning NULL (values are int32 already).
 * @param v the vector
 * @param src numbers, NaN for NULL
 * @param off first source row
 * @param m rows
 */
export function writeNullableInt32(v: Vector, src: Float64Array, off: number, m: number): void {
  let nulls = false;
  allValid(m);
  for (let r = 0; r < m; r++) {
    const x = src[off + r]!;
    if (x !== x) {
      nulls = true;
      scratchI32[r] = 0;
      setInvalid(r);
    } else scratchI32[r] = x;
  }
  duckdb.copy_data_to_vector(v, 0, scratch, 0, m * 4);
  if (nulls) flushValidity(v, m);
}

/**
 * A float32 column straight from the source buffer; with `nullable`, NaN is NULL (the value is
 * still copied: DuckDB ignores data under an invalid row), else NaN is stored as NaN.
 * @param v the vector
 * @param src float32 values
 * @param off first source row
 * @param m rows
 * @param nullable whether NaN means NULL
 */
export function writeFloat32(v: Vector, src: Float32Array, off: number, m: number, nullable: boolean): void {
  duckdb.copy_data_to_vector(v, 0, src.buffer as ArrayBuffer, src.byteOffset + off * 4, m * 4);
  if (!nullable) return;
  let nulls = false;
  for (let r = 0; r < m; r++) {
    const x = src[off + r]!;
    if (x !== x) {
      if (!nulls) allValid(m);
      nulls = true;
      setInvalid(r);
    }
  }
  if (nulls) flushValidity(v, m);
}

/**
 * A BIGINT column from safe integers (never NULL).
 * @param v the vector
 * @param src integers within ±2^53
 * @param off first source row
 * @param m rows
 */
export function writeInt64(v: Vector, src: Float64Array, off: number, m: number): void {
  for (let r = 0; r < m; r++) {
    const x = src[off + r]!;
    scratchI32[2 * r + LO] = x % TWO_32;
    scratchI32[2 * r + HI] = Math.floor(x / TWO_32);
  }
  duckdb.copy_data_to_vector(v, 0, scratch, 0, m * 8);
}

/**
 * A TIMESTAMP column (microseconds) from integer epoch milliseconds (never NULL), exact for every
 * millisecond a JS Date holds although their microseconds pass 2^53: ms = hi * 2^32 + lo, so
 * µs = 1000 hi * 2^32 + 1000 lo, the second term split again.
 * @param v the vector
 * @param src integer epoch ms within ±8.64e15
 * @param off first source row
 * @param m rows
 */
export function writeTimestampMs(v: Vector, src: Float64Array, off: number, m: number): void {
  for (let r = 0; r < m; r++) {
    const ms = src[off + r]!;
    const hi = Math.floor(ms / TWO_32);
    const lo = (ms - hi * TWO_32) * 1000;
    const carry = Math.floor(lo / TWO_32);
    scratchI32[2 * r + LO] = lo - carry * TWO_32;
    scratchI32[2 * r + HI] = hi * 1000 + carry;
  }
  duckdb.copy_data_to_vector(v, 0, scratch, 0, m * 8);
}

const encoder = new TextEncoder();

/** UTF-8 bytes of the strings a sink writes again and again (environments, activities, models). */
export class Utf8Cache {
  private readonly map = new Map<string, Uint8Array>();
  constructor(private readonly max = 4096) {}
  /** The UTF-8 bytes of `s` (lone surrogates as U+FFFD, as DuckDB's own binding encodes them). */
  get(s: string): Uint8Array {
    let b = this.map.get(s);
    if (b === undefined) {
      b = encoder.encode(s);
      if (this.map.size >= this.max) this.map.clear();
      this.map.set(s, b);
    }
    return b;
  }
}

/**
 * A VARCHAR column; null is NULL.
 * @param v the vector
 * @param src strings
 * @param off first source row
 * @param m rows
 * @param utf8 the encoding cache
 */
export function writeVarchar(v: Vector, src: readonly (string | null)[], off: number, m: number, utf8: Utf8Cache): void {
  let nulls = false;
  let long = false;
  scratchU8.fill(0, 0, m * 16);
  for (let r = 0; r < m; r++) {
    const s = src[off + r];
    if (s === null || s === undefined) {
      if (!nulls) allValid(m);
      nulls = true;
      setInvalid(r);
      continue;
    }
    const b = utf8.get(s);
    if (b.length <= 12) {
      scratchU32[4 * r] = b.length;
      scratchU8.set(b, 16 * r + 4);
    } else long = true;
  }
  duckdb.copy_data_to_vector(v, 0, scratch, 0, m * 16);
  if (long) {
    for (let r = 0; r < m; r++) {
      const s = src[off + r];
      if (s === null || s === undefined) continue;
      const b = utf8.get(s);
      if (b.length > 12) duckdb.vector_assign_string_element_len(v, r, b);
    }
  }
  if (nulls) flushValidity(v, m);
}

/**
 * A BLOB column of fixed-size slots in one buffer: row i is `bytes[i * stride, i * stride +
 * length(i))`; a length of -1 is NULL.
 * @param v the vector
 * @param bytes the slots
 * @param stride bytes per slot
 * @param length bytes of row i, or -1 for NULL
 * @param off first source row
 * @param m rows
 */
export function writeBlobs(v: Vector, bytes: Uint8Array, stride: number, length: (i: number) => number, off: number, m: number): void {
  let nulls = false;
  let inline = false;
  for (let r = 0; r < m; r++) {
    const i = off + r;
    const n = length(i);
    if (n < 0) {
      if (!nulls) allValid(m);
      nulls = true;
      setInvalid(r);
    } else if (n > 12) duckdb.vector_assign_string_element_len(v, r, bytes.subarray(i * stride, i * stride + n));
    else inline = true;
  }
  if (inline) {
    // Short values (an anonymised person's empty keypoints) go in as inlined strings; the rows
    // assigned above are left as they are.
    for (let r = 0; r < m; r++) {
      const i = off + r;
      const n = length(i);
      if (n < 0 || n > 12) continue;
      scratchU8.fill(0, 0, 16);
      scratchU32[0] = n;
      scratchU8.set(bytes.subarray(i * stride, i * stride + n), 4);
      duckdb.copy_data_to_vector(v, r * 16, scratch, 0, 16);
    }
  }
  if (nulls) flushValidity(v, m);
}
