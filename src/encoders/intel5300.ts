/**
 * Intel 5300 (Linux 802.11n CSI Tool) `log_to_file` encoder: the inverse of
 * `src/decoders/intel5300.ts`, so that frames from any source (the simulator, a replayed capture,
 * a pipeline) become a capture file that every csipose tool, and the CSI Tool's own
 * `read_bf_file.m`, reads back.
 *
 * One frame becomes one record: `u16 field_len` (big-endian, code + body), `u8 code` 0xBB, the
 * 20-byte beamforming header, then 30 groups of 3 pad bits and Nrx*Ntx (int8 re, int8 im) values,
 * LSB first, exactly as `read_bfee.c` reads them. What the format cannot carry is chosen as follows:
 *
 * - CSI: one factor per record (`intel5300Scale`) maps the frame's values to int8. Frames whose
 *   values are already integers in -128..127 (every decoded Intel 5300 frame) keep them as they are
 *   (factor 1); any other frame is scaled so that its largest |re| or |im| becomes 127 (a float
 *   factor, 127 / max, not a power of two: the whole int8 range is used). The factor is not stored,
 *   so absolute amplitude and amplitude steps between records are lost, as with the card's own
 *   AGC; `get_scaled_csi.m` rescales from the RSSI, which is written consistently (below).
 * - Antenna permutation: identity ([1, 2, 3], antenna_sel 0x24): the frame's antennas are already
 *   in their final order, so the decoder's permutation is a no-op.
 * - RSSI: Intel frames (format `intel5300` with `meta.agc`) carry the raw register values and the
 *   AGC, written back unchanged. Any other frame's `rssi` is taken as dBm per chain and written as
 *   raw = dBm + 44 + agc (`get_total_rss.m`), with the AGC chosen so that the strongest chain
 *   reads 40 (the level of the CSI Tool's sample logs) and no present chain reads below 1 (0 means
 *   "chain off"); a NaN chain, and chains beyond nRx, read 0. The decoded frame's `rssi` is then
 *   the raw value: dBm = rssi - 44 - agc, and `total_rss` is the frames' total power in dBm.
 * - noise: `frame.noise` rounded to int8; -127 (the card's "unknown") when NaN.
 * - timestamp_low: `frame.clockUs` (µs) modulo 2^32; where the frame has no device clock, its
 *   wall time in µs modulo 2^32 (`deviceTime` is left aside: its unit depends on the format).
 * - bfee_count: `frame.seq` modulo 2^16 (the index where seq is not a number).
 * - fake_rate_n_flags: an Intel frame's recorded rate when its HT40 bit agrees with the frame's
 *   bandwidth; else HT (0x100), MCS 8 * (Ntx - 1) (one spatial stream per transmit antenna, as in
 *   the CSI Tool's sample logs), plus the HT40 bit (0x800) when `bandwidthMhz` is 40.
 * - channel: not in the record (the decoder reports NaN); bandwidth only as the HT40 bit.
 */
import type { CsiFrame } from '../csi/frame.js';
import { intel5300PayloadLen } from '../decoders/intel5300.js';
import { INTEL5300_SUBCARRIERS_20, INTEL5300_SUBCARRIERS_40 } from '../decoders/subcarriers.js';

const CODE_BFEE = 0xbb;
const N_GROUPS = 30;
/** Bytes before the payload in a 0xBB body. */
const BFEE_HEADER = 20;
/** field_len (2) + code (1) + beamforming header (20). */
const RECORD_HEADER = 3 + BFEE_HEADER;
const RATE_HT = 0x100;
/** fake_rate_n_flags bit for a 40 MHz (HT40) transmission, iwl_structs.h. */
const RATE_HT40 = 0x800;
/** antenna_sel for perm = [1, 2, 3]: two bits per antenna, perm(k) - 1. */
const IDENTITY_ANTENNA_SEL = 0 | (1 << 2) | (2 << 4);
/** Raw RSSI the strongest chain is given when the RSSI comes in dBm. */
const RSSI_TARGET = 40;
/** The card's noise value for "not measured". */
const NOISE_UNKNOWN = -127;

/** What `encodeIntel5300` takes besides the frame. */
export interface Intel5300EncodeOptions {
  /**
   * Factor applied to every CSI value before rounding to int8; values beyond -128..127 saturate.
   * Default `intel5300Scale(frame.csi)`. A fixed factor keeps amplitude comparable across records.
   */
  scale?: number;
}

/**
 * Length in bytes of the record `encodeIntel5300` writes for an Nrx x Ntx frame.
 *
 * @param nRx Receive chains (1..3).
 * @param nTx Transmit streams (1..3).
 * @returns 3 + 20 + payload bytes (95, 215, 395, 575 for 1x1, 3x1, 3x2, 3x3).
 */
export function intel5300RecordLength(nRx: number, nTx: number): number {
  return RECORD_HEADER + intel5300PayloadLen(nRx, nTx);
}

/**
 * The factor the encoder applies to a frame's CSI by default: 1 when every value is already an
 * integer in -128..127 (raw Intel counts stay exact), else 127 / max(|re|, |im|) so the largest
 * component becomes 127; 1 for an all-zero frame.
 *
 * @param csi Interleaved (re, im) samples.
 * @returns The factor, finite and > 0.
 * @throws RangeError when a value is NaN or infinite.
 * @example
 * intel5300Scale(Float32Array.of(0.5, -0.25)); // 254
 */
export function intel5300Scale(csi: Float32Array): number {
  let max = 0;
  let integers = true;
  for (let i = 0; i < csi.length; i++) {
    const v = csi[i]!;
    if (v - v !== 0) throw new RangeError(`intel5300 encoder: CSI value ${i} is ${v}, not a finite number`);
    const a = v < 0 ? -v : v;
    if (a > max) max = a;
    if (integers && (v !== Math.round(v) || v < -128 || v > 127)) integers = false;
  }
  if (integers || max === 0) return 1;
  return 127 / max;
}

/**
 * Encodes one frame as one Intel 5300 0xBB record (see the module comment for every field).
 *
 * @param frame A 30-subcarrier frame (the Intel grouping at 20 MHz, or at 40 MHz when
 *   `bandwidthMhz` is 40) with 1..3 receive and 1..3 transmit antennas.
 * @param opts `scale`: the CSI factor (default `intel5300Scale(frame.csi)`).
 * @returns The record's bytes, `intel5300RecordLength(nRx, nTx)` long.
 * @throws RangeError naming the reason when the frame cannot be an Intel 5300 record.
 * @example
 * const { frame } = new CsiSimulator({ seed: 1 }).next();
 * appendFileSync('cap.dat', encodeIntel5300(frame));
 */
export function encodeIntel5300(frame: CsiFrame, opts: Intel5300EncodeOptions = {}): Uint8Array {
  checkEncodable(frame);
  const out = new Uint8Array(intel5300RecordLength(frame.nRx, frame.nTx));
  writeRecord(frame, out, 0, opts.scale ?? intel5300Scale(frame.csi));
  return out;
}

/**
 * Encodes one frame into `target` at `offset` (no allocation): the form for writing many records
 * into one buffer.
 *
 * @param frame As for `encodeIntel5300`.
 * @param target Receives the record; it needs `intel5300RecordLength(nRx, nTx)` bytes from `offset`.
 * @param offset Where the record starts.
 * @param opts As for `encodeIntel5300`.
 * @returns Bytes written.
 * @throws RangeError when the frame cannot be encoded or does not fit.
 */
export function encodeIntel5300Into(frame: CsiFrame, target: Uint8Array, offset: number, opts: Intel5300EncodeOptions = {}): number {
  checkEncodable(frame);
  const n = intel5300RecordLength(frame.nRx, frame.nTx);
  if (!(Number.isInteger(offset) && offset >= 0 && offset + n <= target.length))
    throw new RangeError(`intel5300 encoder: a ${n}-byte record does not fit at offset ${offset} of ${target.length} bytes`);
  target.fill(0, offset, offset + n);
  writeRecord(frame, target, offset, opts.scale ?? intel5300Scale(frame.csi));
  return n;
}

function sameTable(a: Int16Array, b: Int16Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** @throws RangeError naming what keeps `frame` from being an Intel 5300 record. */
function checkEncodable(frame: CsiFrame): void {
  const { nRx, nTx, nSub } = frame;
  const what = `intel5300 encoder: frame ${frame.index}`;
  if (nSub !== N_GROUPS) throw new RangeError(`${what} has ${nSub} subcarriers; an Intel 5300 record holds exactly 30 groups`);
  if (!(Number.isInteger(nRx) && nRx >= 1 && nRx <= 3)) throw new RangeError(`${what} has nRx ${nRx}; an Intel 5300 record holds 1 to 3 receive antennas`);
  if (!(Number.isInteger(nTx) && nTx >= 1 && nTx <= 3)) throw new RangeError(`${what} has nTx ${nTx}; an Intel 5300 record holds 1 to 3 transmit antennas`);
  if (frame.csi.length !== nSub * nRx * nTx * 2)
    throw new RangeError(`${what} has ${frame.csi.length} csi values, expected ${nSub * nRx * nTx * 2} for ${nRx}x${nTx}x${nSub}`);
  const ht40 = frame.bandwidthMhz === 40;
  if (!sameTable(frame.subcarriers, ht40 ? INTEL5300_SUBCARRIERS_40 : INTEL5300_SUBCARRIERS_20))
    throw new RangeError(
      `${what} lists subcarriers [${Array.from(frame.subcarriers.subarray(0, 4)).join(', ')}, ...], not the Intel 5300 grouping at ${ht40 ? 40 : 20} MHz`,
    );
  if (!(Number.isFinite(frame.clockUs) || frame.time > 0))
    throw new RangeError(`${what} has neither a device clock (clockUs) nor a wall time for timestamp_low`);
}

function clampByte(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/** Writes a checked frame's record at `o`; the bytes there are zero. */
function writeRecord(frame: CsiFrame, b: Uint8Array, o: number, scale: number): void {
  if (!(scale > 0 && Number.isFinite(scale))) throw new RangeError(`intel5300 encoder: scale must be a finite number > 0, got ${scale}`);
  const { nRx, nTx } = frame;
  const len = intel5300PayloadLen(nRx, nTx);
  const fieldLen = 1 + BFEE_HEADER + len;
  b[o] = fieldLen >> 8;
  b[o + 1] = fieldLen & 255;
  b[o + 2] = CODE_BFEE;
  const h = o + 3;

  const stamp = Number.isFinite(frame.clockUs) ? Math.round(frame.clockUs) : Math.round(frame.time * 1000);
  const ts = ((stamp % 2 ** 32) + 2 ** 32) % 2 ** 32;
  b[h] = ts & 255;
  b[h + 1] = (ts >>> 8) & 255;
  b[h + 2] = (ts >>> 16) & 255;
  b[h + 3] = (ts >>> 24) & 255;
  const seqSrc = Number.isFinite(frame.seq) ? Math.round(frame.seq) : frame.index;
  const seq = ((seqSrc % 65536) + 65536) % 65536;
  b[h + 4] = seq & 255;
  b[h + 5] = seq >> 8;
  b[h + 8] = nRx;
  b[h + 9] = nTx;

  const meta = frame.meta;
  const intel = frame.format === 'intel5300' && typeof meta?.agc === 'number';
  const rssi = [0, 0, 0];
  let agc: number;
  if (intel) {
    // Raw register values as the decoder gave them; chains beyond nRx as recorded when known.
    agc = clampByte(Math.round(meta!.agc as number));
    const recorded = [meta!.rssi_a, meta!.rssi_b, meta!.rssi_c];
    for (let k = 0; k < 3; k++) {
      const v = k < nRx ? frame.rssi[k] : recorded[k];
      rssi[k] = typeof v === 'number' && Number.isFinite(v) ? clampByte(Math.round(v)) : 0;
    }
  } else {
    let hi = -Infinity;
    let lo = Infinity;
    for (let k = 0; k < nRx; k++) {
      const d = frame.rssi[k];
      if (d === undefined || !Number.isFinite(d)) continue;
      const r = Math.round(d);
      if (r > hi) hi = r;
      if (r < lo) lo = r;
    }
    agc = hi === -Infinity ? 0 : clampByte(Math.max(RSSI_TARGET - 44 - hi, 1 - 44 - lo));
    for (let k = 0; k < nRx; k++) {
      const d = frame.rssi[k];
      // Clamped to 1..255: a present chain never reads 0 ("off").
      if (d !== undefined && Number.isFinite(d)) rssi[k] = Math.min(255, Math.max(1, Math.round(d) + 44 + agc));
    }
  }
  b[h + 10] = rssi[0]!;
  b[h + 11] = rssi[1]!;
  b[h + 12] = rssi[2]!;
  const noise = Number.isFinite(frame.noise) ? Math.min(127, Math.max(-128, Math.round(frame.noise))) : NOISE_UNKNOWN;
  b[h + 13] = noise & 255;
  b[h + 14] = agc;
  b[h + 15] = IDENTITY_ANTENNA_SEL;
  b[h + 16] = len & 255;
  b[h + 17] = len >> 8;
  const ht40 = frame.bandwidthMhz === 40;
  const recordedRate = intel && typeof meta!.rate === 'number' ? (meta!.rate as number) : NaN;
  const rate =
    Number.isInteger(recordedRate) && recordedRate >= 0 && recordedRate <= 0xffff && ((recordedRate & RATE_HT40) !== 0) === ht40
      ? recordedRate
      : RATE_HT | (8 * (nTx - 1)) | (ht40 ? RATE_HT40 : 0);
  b[h + 18] = rate & 255;
  b[h + 19] = rate >> 8;

  // Payload: per group 3 zero pad bits, then Nrx*Ntx (re, im) int8 pairs, LSB first, in the
  // frame's (sc, rx, tx) order (read_bfee.c). Each 16-bit pair straddles at most three bytes.
  const csi = frame.csi;
  const nn = nRx * nTx;
  const payload = h + BFEE_HEADER;
  let bit = 0;
  let k = 0;
  for (let sc = 0; sc < N_GROUPS; sc++) {
    bit += 3;
    for (let j = 0; j < nn; j++) {
      let re = Math.round(csi[k++]! * scale);
      let im = Math.round(csi[k++]! * scale);
      re = re < -128 ? -128 : re > 127 ? 127 : re;
      im = im < -128 ? -128 : im > 127 ? 127 : im;
      const pair = (re & 255) | ((im & 255) << 8);
      const q = payload + (bit >> 3);
      const r = bit & 7;
      const v = pair << r; // at most 23 bits
      b[q] = b[q]! | (v & 255);
      b[q + 1] = (v >> 8) & 255;
      if (r !== 0) b[q + 2] = (v >> 16) & 255;
      bit += 16;
    }
  }
}
