import { DecodeError } from '../csi/decoder.js';
import type { DecodeStats, DecoderOptions } from '../csi/decoder.js';
import type { CsiFrame } from '../csi/frame.js';

/** Options of the length-prefixed record decoders (Intel 5300, Atheros). */
export interface RecordDecoderOptions extends DecoderOptions {
  /**
   * Each `push` is one whole datagram (UDP) instead of the next bytes of a stream: nothing is
   * carried from one push to the next. Default false.
   */
  datagrams?: boolean;
}

/**
 * The chunk handling shared by decoders of length-prefixed binary records (Intel 5300 and
 * Atheros logs): whole records inside a chunk are decoded in place; a record split across chunks
 * is carried over, copying only the bytes it still needs; a skipped record that has not fully
 * arrived is dropped as its bytes come in. Subclasses read one record at a time in `step`.
 *
 * In datagram mode (`datagrams: true`, a UDP listener) each push is decoded on its own: its whole
 * records are read from its start, and whatever it does not hold completely (a truncated record, a
 * length that points past its end, trailing garbage) is dropped at its end and counted once in
 * `stats.skipped`, as is an empty datagram. Nothing carries over, so a bad datagram costs only
 * itself: in stream mode a 3-byte datagram would leave a partial header behind that swallowed the
 * following datagrams.
 */
export abstract class RecordStreamDecoder {
  readonly stats: DecodeStats = { records: 0, skipped: 0, bytes: 0 };
  /** Each push is one datagram (see the class comment). */
  protected readonly datagrams: boolean;
  /** Bytes of a record split across chunks; always fewer than `need`. */
  protected carry = new Uint8Array(256);
  protected carryLen = 0;
  /** Bytes, from the current position, that the last `step` wanted and did not have. */
  protected need = 0;
  /** Bytes still to drop of a skipped record that has not fully arrived. */
  protected skipLeft = 0;
  protected skipStart = 0;
  /** The frame the last `step` decoded, emitted once its bytes are counted. */
  protected pending: CsiFrame | null = null;

  /** @param datagrams each push is one whole datagram (default false: a byte stream) */
  constructor(datagrams = false) {
    this.datagrams = datagrams;
  }

  /**
   * Reads what it can at `b[p..end)`, where `p` is at stream offset `stats.bytes`.
   * @returns the bytes consumed, or 0 after setting `need` when more input is required
   */
  protected abstract step(b: Uint8Array, p: number, end: number): number;

  /**
   * Feeds bytes; emits one frame per complete CSI record. Never throws for bad data.
   *
   * @param chunk Next bytes of the log, any length.
   * @param emit Receives each decoded frame, in file order.
   */
  push(chunk: Uint8Array, emit: (frame: CsiFrame) => void): void {
    if (this.datagrams) return this.pushDatagram(chunk, emit);
    const n = chunk.length;
    let pos = 0;
    // Finish a record begun in an earlier chunk, copying only the bytes it still needs.
    while (this.carryLen > 0) {
      const used = this.step(this.carry, 0, this.carryLen);
      if (used > 0) {
        this.carry.copyWithin(0, used, this.carryLen);
        this.carryLen -= used;
        this.advance(used, emit);
        continue;
      }
      if (pos >= n) return;
      const take = Math.min(this.need - this.carryLen, n - pos);
      this.append(chunk, pos, take);
      pos += take;
    }
    // Whole records inside the chunk are decoded in place.
    while (pos < n) {
      const used = this.step(chunk, pos, n);
      if (used === 0) {
        this.append(chunk, pos, n - pos);
        return;
      }
      pos += used;
      this.advance(used, emit);
    }
  }

  /** Decodes one datagram on its own: its whole records, then drops and counts what is left. */
  private pushDatagram(d: Uint8Array, emit: (frame: CsiFrame) => void): void {
    const n = d.length;
    let pos = 0;
    while (pos < n) {
      const used = this.step(d, pos, n);
      if (used === 0) break;
      pos += used;
      this.advance(used, emit);
    }
    // A record `skip` or a resynchronising scan already counted is not counted again.
    if (n === 0 || (pos < n && this.skipLeft === 0 && !this.countedTail())) this.stats.skipped++;
    this.stats.bytes += n - pos;
    this.skipLeft = 0;
    this.need = 0;
    this.carryLen = 0;
    this.resetDatagram();
  }

  /** Datagram mode: whether the bytes `step` left unread at the end are already counted as skipped. */
  protected countedTail(): boolean {
    return false;
  }

  /** Datagram mode: forgets what a subclass learnt from the datagram just read. */
  protected resetDatagram(): void {}

  /** Decodes what the carried bytes still hold (at the end of input, when `step` stops waiting). */
  protected drainCarry(emit: (frame: CsiFrame) => void): void {
    while (this.carryLen > 0) {
      const used = this.step(this.carry, 0, this.carryLen);
      if (used === 0) break;
      this.carry.copyWithin(0, used, this.carryLen);
      this.carryLen -= used;
      this.advance(used, emit);
    }
  }

  /**
   * Throws the DecodeError of an input that ended inside a record: a skipped record still
   * missing bytes, or carried bytes that never completed one (`carried` describes them).
   */
  protected failIfTruncated(format: string, carried: () => string): void {
    if (this.skipLeft > 0) {
      const at = this.skipStart;
      const missing = this.skipLeft;
      this.skipLeft = 0;
      throw new DecodeError(`${format} record truncated: ${missing} more bytes expected`, at);
    }
    if (this.carryLen > 0) {
      const at = this.stats.bytes;
      const msg = `${format} ${carried()}`;
      this.carryLen = 0;
      throw new DecodeError(msg, at);
    }
  }

  /** Skips a record of `total` bytes of which `avail` are here; counts it. */
  protected skip(total: number, avail: number): number {
    this.stats.skipped++;
    const k = Math.min(total, avail);
    this.skipLeft = total - k;
    this.skipStart = this.stats.bytes;
    return k;
  }

  /** Drops bytes of a record being skipped; 0 when none is. */
  protected continueSkip(avail: number): number {
    if (this.skipLeft === 0) return 0;
    const k = Math.min(this.skipLeft, avail);
    this.skipLeft -= k;
    return k;
  }

  private advance(used: number, emit: (frame: CsiFrame) => void): void {
    this.stats.bytes += used;
    const frame = this.pending;
    if (frame) {
      this.pending = null;
      emit(frame);
    }
  }

  private append(src: Uint8Array, from: number, count: number): void {
    const want = this.carryLen + count;
    if (want > this.carry.length) {
      const grown = new Uint8Array(Math.max(want, this.carry.length * 2));
      grown.set(this.carry.subarray(0, this.carryLen));
      this.carry = grown;
    }
    this.carry.set(src.subarray(from, from + count), this.carryLen);
    this.carryLen = want;
  }
}
