/**
 * Intel 5300 (Linux 802.11n CSI Tool) `log_to_file` decoder.
 *
 * The file is a bare sequence of records: `u16 field_len` (big-endian, counts code + body),
 * `u8 code`, body. Code 0xBB is a beamforming report carrying CSI for 30 subcarrier groups; every
 * other code (0xC1 received frames, ...) is skipped. Fields, bit layout and the antenna
 * permutation follow the tool's own readers, `read_bfee.c` and `read_bf_file.m`
 * (see csi-samples/SOURCES.md section 1).
 */
import { decodeAll } from '../csi/decoder.js';
import type { CsiDecoder, DecodeResult, DecoderOptions } from '../csi/decoder.js';
import type { CsiFrame } from '../csi/frame.js';
import { RecordStreamDecoder, type RecordDecoderOptions } from './recordReader.js';
import { INTEL5300_SUBCARRIERS_20, INTEL5300_SUBCARRIERS_40 } from './subcarriers.js';

const CODE_BFEE = 0xbb;
const N_GROUPS = 30;
/** Bytes before the payload in a 0xBB body. */
const BFEE_HEADER = 20;
/** field_len (2) + code (1) + beamforming header (20). */
const RECORD_HEADER = 3 + BFEE_HEADER;
/** fake_rate_n_flags bit for a 40 MHz (HT40, "FAT") transmission, iwl_structs.h. */
const RATE_HT40 = 0x800;
/** What perm(1:Nrx) sums to when it is a permutation of 1..Nrx (read_bf_file.m `triangle`). */
const TRIANGLE = [1, 3, 6] as const;

/**
 * Payload length read_bfee.c requires for an Nrx x Ntx report: 30 groups of 3 pad bits plus
 * Nrx*Ntx 16-bit complex values, rounded up to bytes.
 *
 * @param nRx Receive chains (1..3).
 * @param nTx Transmit streams (1..3).
 * @returns Expected value of the record's `len` field (192, 372, 552 for 3x1, 3x2, 3x3).
 */
export function intel5300PayloadLen(nRx: number, nTx: number): number {
  return Math.floor((N_GROUPS * (nRx * nTx * 16 + 3) + 7) / 8);
}

/**
 * Total received power in dBm as the tool's `get_total_rss.m` computes it: the per-chain RSSI
 * (zero means "chain off" and is left out) summed in linear power, minus 44 dB and the AGC gain.
 *
 * @param rssiA Chain A RSSI as recorded.
 * @param rssiB Chain B RSSI as recorded.
 * @param rssiC Chain C RSSI as recorded.
 * @param agc Automatic gain control setting as recorded.
 * @returns dBm; -Infinity when every chain reads 0.
 * @example
 * intel5300TotalRss(33, 37, 41, 38); // -39.0782...
 */
export function intel5300TotalRss(rssiA: number, rssiB: number, rssiC: number, agc: number): number {
  // Three pow and a log10 per record were 40 % of decoding; the inputs are bytes and repeat.
  const key = ((rssiA & 255) << 24) | ((rssiB & 255) << 16) | ((rssiC & 255) << 8) | (agc & 255);
  const hit = TOTAL_RSS_CACHE.get(key);
  if (hit !== undefined) return hit;
  const v = totalRss(rssiA, rssiB, rssiC, agc);
  if (TOTAL_RSS_CACHE.size >= 4096) TOTAL_RSS_CACHE.clear();
  TOTAL_RSS_CACHE.set(key, v);
  return v;
}

const TOTAL_RSS_CACHE = new Map<number, number>();

function totalRss(rssiA: number, rssiB: number, rssiC: number, agc: number): number {
  let mag = 0;
  if (rssiA !== 0) mag += Math.pow(10, rssiA / 10);
  if (rssiB !== 0) mag += Math.pow(10, rssiB / 10);
  if (rssiC !== 0) mag += Math.pow(10, rssiC / 10);
  return 10 * Math.log10(mag) - 44 - agc;
}

/**
 * Incremental decoder for Intel 5300 CSI Tool logs.
 *
 * Each 0xBB record becomes one frame: 30 subcarrier groups x Nrx x Ntx raw 8-bit values (no
 * scaling), receive antennas reordered by the record's antenna permutation exactly as
 * `read_bf_file.m` does. Records with another code, and 0xBB records whose size fields are
 * inconsistent, are skipped and counted in `stats.skipped`. Chunks may split records anywhere;
 * with `datagrams: true` each push is instead one UDP datagram of whole records, decoded on its own
 * (`RecordStreamDecoder`).
 *
 * @example
 * const dec = new Intel5300Decoder({ sourceId: 'file:log.dat' });
 * socket.on('data', (b) => dec.push(b, (f) => frames.push(f)));
 * socket.on('end', () => dec.end((f) => frames.push(f)));
 */
export class Intel5300Decoder extends RecordStreamDecoder implements CsiDecoder {
  readonly format = 'intel5300' as const;
  /**
   * Records with Nrx > 1 whose permutation failed read_bf_file.m's check
   * (sum(perm(1:Nrx)) must be 1, 3, 6 for Nrx = 1, 2, 3): their antenna order was left as recorded.
   */
  permWarnings = 0;

  private readonly sourceId: string;
  private readonly environmentId: string;
  /** Raw (unpermuted) values of one record: 30 groups x up to 3x3 antennas x (re, im). */
  private readonly raw = new Float32Array(N_GROUPS * 9 * 2);
  /** For each output receive antenna, the recorded antenna it takes its values from. */
  private readonly srcOf = new Int32Array(3);

  /**
   * @param opts `sourceId` and `environmentId` copied into every frame; `datagrams` for a UDP listener.
   */
  constructor(opts: RecordDecoderOptions = {}) {
    super(opts.datagrams);
    this.sourceId = opts.sourceId ?? 'unknown';
    this.environmentId = opts.environmentId ?? 'default';
  }

  /**
   * Signals end of input.
   *
   * @param _emit Unused: every complete record was already emitted by `push`.
   * @throws DecodeError naming the start offset of a record the input ended inside.
   */
  end(_emit: (frame: CsiFrame) => void): void {
    this.failIfTruncated('Intel 5300', () => `record truncated: needs ${this.need} bytes, input holds ${this.carryLen}`);
  }

  /**
   * Reads what it can at `b[p..end)`, where `p` is at stream offset `stats.bytes`.
   * Returns the bytes consumed, or 0 after setting `need` when more input is required.
   */
  protected step(b: Uint8Array, p: number, end: number): number {
    const avail = end - p;
    const skipped = this.continueSkip(avail);
    if (skipped > 0) return skipped;
    if (avail < 3) {
      if (avail === 2 && b[p] === 0 && b[p + 1] === 0) {
        // field_len 0 cannot even hold the code byte: drop the length field and read on.
        this.stats.skipped++;
        return 2;
      }
      this.need = avail < 2 ? 2 : 3;
      return 0;
    }
    const fieldLen = (b[p]! << 8) | b[p + 1]!;
    if (fieldLen === 0) {
      this.stats.skipped++;
      // A stream steps over the empty field to resynchronise; in a datagram, zeros where a record
      // should start end it (counted once, not once per two bytes).
      return this.datagrams ? avail : 2;
    }
    const total = 2 + fieldLen;
    if (b[p + 2] !== CODE_BFEE || fieldLen - 1 < BFEE_HEADER) return this.skip(total, avail);
    if (avail < RECORD_HEADER) {
      this.need = RECORD_HEADER;
      return 0;
    }
    const h = p + 3;
    const nRx = b[h + 8]!;
    const nTx = b[h + 9]!;
    const len = b[h + 16]! | (b[h + 17]! << 8);
    if (nRx < 1 || nRx > 3 || nTx < 1 || nTx > 3 || len !== intel5300PayloadLen(nRx, nTx) || fieldLen - 1 < BFEE_HEADER + len) {
      return this.skip(total, avail);
    }
    if (avail < total) {
      this.need = total;
      return 0;
    }
    this.pending = this.decode(b, h, nRx, nTx, len);
    return total;
  }

  /** Decodes a validated 0xBB body starting at `h`. */
  private decode(b: Uint8Array, h: number, nRx: number, nTx: number, len: number): CsiFrame {
    const timestampLow = (b[h]! | (b[h + 1]! << 8) | (b[h + 2]! << 16) | (b[h + 3]! << 24)) >>> 0;
    const bfeeCount = b[h + 4]! | (b[h + 5]! << 8);
    const rssiA = b[h + 10]!;
    const rssiB = b[h + 11]!;
    const rssiC = b[h + 12]!;
    const noise = (b[h + 13]! << 24) >> 24;
    const agc = b[h + 14]!;
    const antennaSel = b[h + 15]!;
    const rate = b[h + 18]! | (b[h + 19]! << 8);

    // read_bfee.c: per group 3 pad bits, then Nrx*Ntx values of (int8 re, int8 im), tx fastest;
    // that is already the frame's (sc, rx, tx) order. The shift stays within one group.
    const raw = this.raw;
    const nn = nRx * nTx;
    const payload = h + BFEE_HEADER;
    let bit = 0;
    let k = 0;
    for (let sc = 0; sc < N_GROUPS; sc++) {
      bit += 3;
      const r = bit & 7;
      const l = 8 - r;
      for (let j = 0; j < nn; j++) {
        const q = payload + (bit >> 3);
        const b1 = b[q + 1]!;
        raw[k++] = (((b[q]! >> r) | (b1 << l)) << 24) >> 24;
        raw[k++] = (((b1 >> r) | (b[q + 2]! << l)) << 24) >> 24;
        bit += 16;
      }
    }

    // read_bf_file.m: csi(:, perm(1:Nrx), :) = csi(:, 1:Nrx, :) when sum(perm(1:Nrx)) matches.
    // srcOf replays that assignment (later antennas overwrite earlier ones, unassigned positions
    // keep their own values) so even degenerate perms such as [2 2 2] come out as MATLAB's.
    const p0 = (antennaSel & 3) + 1;
    const p1 = ((antennaSel >> 2) & 3) + 1;
    const p2 = ((antennaSel >> 4) & 3) + 1;
    const perm = [p0, p1, p2];
    const srcOf = this.srcOf;
    srcOf[0] = 0;
    srcOf[1] = 1;
    srcOf[2] = 2;
    if (nRx > 1) {
      let sum = 0;
      let fits = true;
      for (let i = 0; i < nRx; i++) {
        sum += perm[i]!;
        // MATLAB would grow the matrix for an index beyond Nrx; a frame cannot, so treat it as invalid.
        if (perm[i]! > nRx) fits = false;
      }
      if (sum === TRIANGLE[nRx - 1] && fits) {
        for (let i = 0; i < nRx; i++) srcOf[perm[i]! - 1] = i;
      } else {
        this.permWarnings++;
      }
    }

    const csi = new Float32Array(N_GROUPS * nn * 2);
    const rowLen = nTx * 2;
    for (let sc = 0; sc < N_GROUPS; sc++) {
      const base = sc * nRx;
      for (let rx = 0; rx < nRx; rx++) {
        const out = (base + rx) * rowLen;
        const src = (base + srcOf[rx]!) * rowLen;
        for (let t = 0; t < rowLen; t++) csi[out + t] = raw[src + t]!;
      }
    }

    const fileOffset = this.stats.bytes;
    const index = this.stats.records++;
    const rssiAll = [rssiA, rssiB, rssiC];
    return {
      format: 'intel5300',
      sourceId: this.sourceId,
      environmentId: this.environmentId,
      index,
      time: 0,
      deviceTime: timestampLow,
      clockUs: timestampLow,
      seq: bfeeCount,
      rssi: rssiAll.slice(0, nRx),
      noise,
      channel: NaN,
      bandwidthMhz: rate & RATE_HT40 ? 40 : 20,
      nRx,
      nTx,
      nSub: N_GROUPS,
      subcarriers: rate & RATE_HT40 ? INTEL5300_SUBCARRIERS_40 : INTEL5300_SUBCARRIERS_20,
      csi,
      meta: {
        timestamp_low: timestampLow,
        bfee_count: bfeeCount,
        rssi_a: rssiA,
        rssi_b: rssiB,
        rssi_c: rssiC,
        agc,
        antenna_sel: antennaSel,
        perm,
        rate,
        len,
        total_rss: intel5300TotalRss(rssiA, rssiB, rssiC, agc),
        file_offset: fileOffset,
      },
    };
  }
}

/**
 * Decodes a whole Intel 5300 log held in memory.
 *
 * @param bytes The file's bytes.
 * @param opts Decoder options (`sourceId`, `environmentId`).
 * @returns Frames, counts, and a DecodeError when the input ended inside a record.
 * @example
 * const { frames, stats, error } = decodeIntel5300(readFileSync('log.all_csi.6.7.6'));
 */
export function decodeIntel5300(bytes: Uint8Array, opts?: DecoderOptions): DecodeResult {
  return decodeAll(new Intel5300Decoder(opts), bytes);
}
