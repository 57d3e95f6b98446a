/**
 * Atheros CSI Tool (ath9k) `recv_csi` log decoder.
 *
 * The file has no header: records of `u16 field_len` + a 25-byte status block + CSI + the received
 * frame, written in the capturing host's byte order. One 2016 writer variant puts a single flag
 * byte first (0x00 little-endian, 0xFF big-endian). The CSI bit stream itself is the same on every
 * host: 16-bit little-endian words, read LSB first, 10-bit imaginary then real per antenna pair
 * (`read_csi.c`). See csi-samples/SOURCES.md section 3.
 */
import { decodeAll } from '../csi/decoder.js';
import type { CsiDecoder, DecodeResult } from '../csi/decoder.js';
import type { CsiFrame } from '../csi/frame.js';
import { RecordStreamDecoder, type RecordDecoderOptions } from './recordReader.js';
import { ATHEROS_SUBCARRIERS_20, ATHEROS_SUBCARRIERS_40, sequentialIndices } from './subcarriers.js';

/** Status block between field_len and the CSI. */
const STATUS_LEN = 25;
/** field_len (2) + status block: enough to judge whether a record header is believable. */
const HEADER_LEN = 2 + STATUS_LEN;
/** An optional flag byte + one header: enough to decide the byte order. */
const DETECT_LEN = 1 + HEADER_LEN;
const PAYLOAD_HEAD = 16;

// Verdicts on a record header, ordered from worst to best.
/** field_len disagrees with 25 + csi_len + payload_len: the length cannot be trusted. */
const BAD_LENGTHS = 0;
/** Lengths agree, but there is no CSI or its shape is impossible. */
const BAD_SHAPE = 1;
/** Lengths agree and csi_len fits tones x nr x nc with nr, nc in 1..3. */
const VALID = 2;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Byte order of an Atheros log: `auto` detects it (and the optional flag byte) from the first record. */
export type AtherosEndian = 'auto' | 'little' | 'big';

export interface AtherosDecoderOptions extends RecordDecoderOptions {
  /** Byte order of the multi-byte header fields; default `auto`. */
  endian?: AtherosEndian;
}

/**
 * 802.11 channel number of a centre frequency.
 *
 * @param mhz Centre frequency in MHz.
 * @returns The channel number (2437 -> 6, 2484 -> 14, 5180 -> 36), NaN when not on a channel.
 */
export function wifiChannelFromMhz(mhz: number): number {
  if (mhz === 2484) return 14;
  if (mhz >= 2412 && mhz <= 2472 && (mhz - 2407) % 5 === 0) return (mhz - 2407) / 5;
  if (mhz >= 5005 && mhz <= 5895 && mhz % 5 === 0) return (mhz - 5000) / 5;
  // 4.9 GHz public-safety / Japan channels 183-196.
  if (mhz >= 4915 && mhz <= 4980 && mhz % 5 === 0) return (mhz - 4000) / 5;
  return NaN;
}

/**
 * CSI bytes a record with this shape carries: tones x nr x nc values of 20 bits, rounded up.
 *
 * @param tones Number of tones.
 * @param nr Receive antennas.
 * @param nc Transmit streams.
 * @returns ceil(tones*nr*nc*20/8), e.g. 840 for 56 x 3 x 2.
 */
export function atherosCsiLen(tones: number, nr: number, nc: number): number {
  return Math.ceil((tones * nr * nc * 20) / 8);
}

/**
 * Incremental decoder for Atheros CSI Tool logs.
 *
 * Each record with CSI becomes one frame: num_tones x nr x nc raw 10-bit values (no scaling).
 * Records whose lengths disagree are skipped and the decoder scans forward byte by byte to the next
 * believable header; records with believable lengths but no or impossible CSI are skipped whole.
 * All are counted in `stats.skipped`. Chunks may split records anywhere; with `datagrams: true`
 * each push is instead one UDP datagram of whole records, decoded on its own (byte order included).
 *
 * @example
 * const dec = new AtherosDecoder({ sourceId: 'file:ath.dat' });
 * stream.on('data', (b) => dec.push(b, (f) => frames.push(f)));
 * stream.on('end', () => dec.end((f) => frames.push(f)));
 */
export class AtherosDecoder extends RecordStreamDecoder implements CsiDecoder {
  readonly format = 'atheros' as const;

  private readonly sourceId: string;
  private readonly environmentId: string;
  private readonly endianOpt: AtherosEndian;
  private detected = false;
  private little = true;
  /**
   * False while `auto` has not yet seen a fully valid header (first record damaged): until then a
   * valid header in either byte order settles it.
   */
  private orderSure = false;
  /** Set by `end`: decide with whatever bytes there are instead of waiting for more. */
  private ending = false;
  /** Looking for the next believable header after bytes that made no sense. */
  private scanning = false;

  /**
   * @param opts `sourceId`, `environmentId`, `endian` (`auto` by default), `datagrams` for a UDP listener.
   */
  constructor(opts: AtherosDecoderOptions = {}) {
    super(opts.datagrams);
    this.sourceId = opts.sourceId ?? 'unknown';
    this.environmentId = opts.environmentId ?? 'default';
    this.endianOpt = opts.endian ?? 'auto';
  }

  /** The byte order in use once decided (after the first record header arrived), else undefined. */
  get endian(): 'little' | 'big' | undefined {
    return this.detected ? (this.little ? 'little' : 'big') : undefined;
  }

  /**
   * Signals end of input: settles the byte order if fewer bytes than one header arrived, then
   * reports anything left over.
   *
   * @param emit Receives frames that could only be decided at the end (none in practice).
   * @throws DecodeError naming the offset of a record (or unreadable tail) the input ended inside.
   */
  end(emit: (frame: CsiFrame) => void): void {
    this.ending = true;
    this.drainCarry(emit);
    this.failIfTruncated('Atheros', () =>
      this.scanning ? `no record header found in the last ${this.carryLen} bytes` : `record truncated: input holds ${this.carryLen} bytes`,
    );
  }

  /** A scan for the next header already counted the bytes it could not read. */
  protected override countedTail(): boolean {
    return this.scanning;
  }

  /** Each datagram settles its own byte order (and optional flag byte). */
  protected override resetDatagram(): void {
    this.detected = false;
    this.orderSure = false;
    this.scanning = false;
  }

  private u16(b: Uint8Array, i: number): number {
    return this.little ? b[i]! | (b[i + 1]! << 8) : (b[i]! << 8) | b[i + 1]!;
  }

  /** Judges the header at `p` (field_len first) read in the given byte order; needs HEADER_LEN bytes. */
  private static check(b: Uint8Array, p: number, little: boolean): number {
    const h = p + 2;
    const fieldLen = little ? b[p]! | (b[p + 1]! << 8) : (b[p]! << 8) | b[p + 1]!;
    const csiLen = little ? b[h + 8]! | (b[h + 9]! << 8) : (b[h + 8]! << 8) | b[h + 9]!;
    const payloadLen = little ? b[h + 23]! | (b[h + 24]! << 8) : (b[h + 23]! << 8) | b[h + 24]!;
    if (fieldLen !== STATUS_LEN + csiLen + payloadLen) return BAD_LENGTHS;
    const tones = b[h + 16]!;
    const nr = b[h + 17]!;
    const nc = b[h + 18]!;
    if (csiLen === 0 || tones < 1 || nr < 1 || nr > 3 || nc < 1 || nc > 3) return BAD_SHAPE;
    return csiLen === atherosCsiLen(tones, nr, nc) ? VALID : BAD_SHAPE;
  }

  /**
   * Decides the byte order and whether a flag byte leads, from the first record's header.
   * Returns 1 when a flag byte is present (to be consumed), else 0.
   */
  private detect(b: Uint8Array, p: number, avail: number): number {
    const forced = this.endianOpt !== 'auto';
    const orders = forced ? [this.endianOpt === 'little'] : [true, false];
    const candidates: [flag: number, little: boolean][] = orders.map((o) => [0, o]);
    const first = b[p];
    if (forced) {
      if (first === 0x00 || first === 0xff) candidates.push([1, orders[0]!]);
    } else if (first === 0x00) {
      candidates.push([1, true]);
    } else if (first === 0xff) {
      candidates.push([1, false]);
    }
    let best: [number, boolean] = [0, orders[0]!];
    let bestScore = 0;
    for (const [flag, little] of candidates) {
      if (avail - flag < HEADER_LEN) continue;
      // The verdicts are ordered BAD_LENGTHS < BAD_SHAPE < VALID, so they serve as the score.
      const score = AtherosDecoder.check(b, p + flag, little);
      if (score > bestScore) {
        bestScore = score;
        best = [flag, little];
      }
    }
    this.detected = true;
    this.little = best[1];
    this.orderSure = forced || bestScore === VALID;
    return best[0];
  }

  private scan(): number {
    if (!this.scanning) {
      this.scanning = true;
      this.stats.skipped++;
    }
    return 1;
  }

  /**
   * Reads what it can at `b[p..end)`, where `p` is at stream offset `stats.bytes`.
   * Returns the bytes consumed, or 0 after setting `need` when more input is required.
   */
  protected step(b: Uint8Array, p: number, end: number): number {
    const avail = end - p;
    const skipped = this.continueSkip(avail);
    if (skipped > 0) return skipped;
    if (!this.detected) {
      if (avail < DETECT_LEN && !this.ending) {
        this.need = DETECT_LEN;
        return 0;
      }
      // The flag byte is part of the format, not a skipped record.
      if (this.detect(b, p, avail) === 1) return 1;
    }
    if (avail < 2) {
      this.need = 2;
      return 0;
    }
    if (this.orderSure && this.u16(b, p) < STATUS_LEN) return this.scan();
    if (avail < HEADER_LEN) {
      this.need = HEADER_LEN;
      return 0;
    }
    let verdict = AtherosDecoder.check(b, p, this.little);
    if (!this.orderSure && verdict !== VALID && AtherosDecoder.check(b, p, !this.little) === VALID) {
      this.little = !this.little;
      verdict = VALID;
    }
    if (verdict === VALID) this.orderSure = true;
    // While resynchronising only a fully valid header ends the search: a lengths-only match in
    // noise is far likelier than one that also has a consistent CSI shape.
    if (verdict === BAD_LENGTHS || (this.scanning && verdict !== VALID)) return this.scan();
    this.scanning = false;
    const total = 2 + this.u16(b, p);
    if (verdict !== VALID) return this.skip(total, avail);
    if (avail < total) {
      this.need = total;
      return 0;
    }
    this.pending = this.decode(b, p);
    return total;
  }

  /** Decodes a validated, complete record starting at `p` (its field_len). */
  private decode(b: Uint8Array, p: number): CsiFrame {
    const h = p + 2;
    const little = this.little;
    const w0 = little
      ? (b[h]! | (b[h + 1]! << 8) | (b[h + 2]! << 16) | (b[h + 3]! << 24)) >>> 0
      : ((b[h]! << 24) | (b[h + 1]! << 16) | (b[h + 2]! << 8) | b[h + 3]!) >>> 0;
    const w1 = little
      ? (b[h + 4]! | (b[h + 5]! << 8) | (b[h + 6]! << 16) | (b[h + 7]! << 24)) >>> 0
      : ((b[h + 4]! << 24) | (b[h + 5]! << 16) | (b[h + 6]! << 8) | b[h + 7]!) >>> 0;
    // Exact up to 2^53 us (285 years of TSF); beyond that the nearest double.
    const timestamp = little ? w1 * 4294967296 + w0 : w0 * 4294967296 + w1;
    const csiLen = this.u16(b, h + 8);
    const channelMhz = this.u16(b, h + 10);
    const errInfo = b[h + 12]!;
    const noiseFloor = b[h + 13]!;
    const rate = b[h + 14]!;
    const bandwidth = b[h + 15]!;
    const tones = b[h + 16]!;
    const nr = b[h + 17]!;
    const nc = b[h + 18]!;
    const rssi = b[h + 19]!;
    const rssi1 = b[h + 20]!;
    const rssi2 = b[h + 21]!;
    const rssi3 = b[h + 22]!;
    const payloadLen = this.u16(b, h + 23);

    // read_csi.c reads 16-bit LE words LSB first, which is the same bit stream as bytes LSB first;
    // pulling bytes one at a time never reads past the csi_len bytes the values occupy.
    const csi = new Float32Array(tones * nr * nc * 2);
    let q = h + STATUS_LEN;
    let acc = 0;
    let bits = 0;
    for (let t = 0; t < tones; t++) {
      for (let c = 0; c < nc; c++) {
        for (let r = 0; r < nr; r++) {
          while (bits < 10) {
            acc |= b[q++]! << bits;
            bits += 8;
          }
          const im = ((acc & 0x3ff) << 22) >> 22;
          acc >>>= 10;
          bits -= 10;
          while (bits < 10) {
            acc |= b[q++]! << bits;
            bits += 8;
          }
          const re = ((acc & 0x3ff) << 22) >> 22;
          acc >>>= 10;
          bits -= 10;
          const o = ((t * nr + r) * nc + c) * 2;
          csi[o] = re;
          csi[o + 1] = im;
        }
      }
    }

    const payload = h + STATUS_LEN + csiLen;
    const headLen = Math.min(PAYLOAD_HEAD, payloadLen);
    let hex = '';
    for (let i = 0; i < headLen; i++) hex += HEX[b[payload + i]!];

    const fileOffset = this.stats.bytes;
    const index = this.stats.records++;
    const perChain = [rssi1, rssi2, rssi3];
    return {
      format: 'atheros',
      sourceId: this.sourceId,
      environmentId: this.environmentId,
      index,
      time: 0,
      deviceTime: timestamp,
      clockUs: timestamp,
      seq: index,
      rssi: perChain.slice(0, nr),
      noise: noiseFloor,
      channel: wifiChannelFromMhz(channelMhz),
      bandwidthMhz: bandwidth === 0 ? 20 : bandwidth === 1 ? 40 : NaN,
      nRx: nr,
      nTx: nc,
      nSub: tones,
      subcarriers: tones === 56 ? ATHEROS_SUBCARRIERS_20 : tones === 114 ? ATHEROS_SUBCARRIERS_40 : sequentialIndices(tones),
      csi,
      meta: {
        timestamp,
        csi_len: csiLen,
        channel_mhz: channelMhz,
        err_info: errInfo,
        noise_floor: noiseFloor,
        rate,
        bandwidth,
        num_tones: tones,
        nr,
        nc,
        rssi,
        rssi1,
        rssi2,
        rssi3,
        payload_len: payloadLen,
        endian: little ? 'little' : 'big',
        file_offset: fileOffset,
        payload_hex_head: hex,
      },
    };
  }
}

/**
 * Decodes a whole Atheros CSI Tool log held in memory.
 *
 * @param bytes The file's bytes.
 * @param opts Decoder options (`sourceId`, `environmentId`, `endian`).
 * @returns Frames, counts, and a DecodeError when the input ended inside a record.
 * @example
 * const { frames } = decodeAtheros(readFileSync('ath_csi_1.dat'));
 * frames[0].meta?.endian; // 'little'
 */
export function decodeAtheros(bytes: Uint8Array, opts?: AtherosDecoderOptions): DecodeResult {
  return decodeAll(new AtherosDecoder(opts), bytes);
}
