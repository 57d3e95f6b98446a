import type { CsiFormat, CsiFrame } from './frame.js';

/** Options every decoder takes. */
export interface DecoderOptions {
  /** Put into each frame's `sourceId`; default `unknown`. */
  sourceId?: string;
  /** Put into each frame's `environmentId`; default `default`. */
  environmentId?: string;
}

/** Running counts of one decoder. */
export interface DecodeStats {
  /** CSI records emitted. */
  records: number;
  /** Records (or lines, or packets) skipped: not CSI, malformed, or of the wrong size. */
  skipped: number;
  /** Bytes consumed so far. */
  bytes: number;
}

/**
 * A decode failure that stops the stream: the input could not be read past `offset`
 * (a truncated record at end of input, a length field that can never be satisfied, ...).
 */
export class DecodeError extends Error {
  readonly code = 'DECODE_ERROR';
  constructor(
    message: string,
    /** Byte offset in the input where reading stopped. */
    readonly offset: number,
  ) {
    super(`${message} at byte offset ${offset}`);
    this.name = 'DecodeError';
  }
}

/**
 * An incremental decoder: bytes go in as chunks of any size (a record may span chunk boundaries),
 * frames come out through `emit`. A decoder never throws from `push` for bad data: it skips what it
 * cannot read, counts it in `stats.skipped`, and resynchronises. `end` throws a DecodeError naming
 * the byte offset when the input ended inside a record.
 *
 * Decoders for datagram transports (UDP) treat each `push` as exactly one packet.
 */
export interface CsiDecoder {
  readonly format: CsiFormat;
  readonly stats: DecodeStats;
  push(chunk: Uint8Array, emit: (frame: CsiFrame) => void): void;
  end(emit: (frame: CsiFrame) => void): void;
}

/** Result of decoding a whole buffer. */
export interface DecodeResult {
  frames: CsiFrame[];
  stats: DecodeStats;
  /** Set when the input could not be read to its end. */
  error?: DecodeError;
}

/** Runs a decoder over a whole buffer: the pure-function form of every decoder. */
export function decodeAll(decoder: CsiDecoder, bytes: Uint8Array): DecodeResult {
  const frames: CsiFrame[] = [];
  const emit = (f: CsiFrame) => {
    frames.push(f);
  };
  let error: DecodeError | undefined;
  try {
    decoder.push(bytes, emit);
    decoder.end(emit);
  } catch (e) {
    if (e instanceof DecodeError) error = e;
    else throw e;
  }
  return error ? { frames, stats: { ...decoder.stats }, error } : { frames, stats: { ...decoder.stats } };
}
