/**
 * Nexmon CSI (seemoo-lab/nexmon_csi): one UDP datagram per CSI measurement, read either from a
 * classic pcap capture or live from a UDP socket.
 *
 * UDP payload (little-endian, 18-byte header then NFFT u32 words; firmware struct `csi_udp_frame`):
 *
 * | payload offset | new firmware (PR #256 and later) | old firmware            |
 * |---|---|---|
 * | 0  | u16 magic 0x1111                 | u32 magic 0x11111111    |
 * | 2  | i8 rssi                          | (upper half of magic)   |
 * | 3  | u8 fc (frame control)            | (upper half of magic)   |
 * | 4  | u8[6] source MAC                 | same                    |
 * | 10 | u16 seqCnt (seq = seqCnt >> 4)   | same                    |
 * | 12 | u16 csiconf (core bits 0-2, spatial stream bits 3-5) | same |
 * | 14 | u16 chanspec                     | same                    |
 * | 16 | u16 chip                         | same                    |
 * | 18 | NFFT x u32 CSI, FFT order (index 0 = DC) | same            |
 *
 * Old-format detection: the four payload bytes 11 11 11 11. New firmware would need rssi = +17 dBm
 * and fc = 0x11 to produce that, which a receiver does not report, so the check is unambiguous in
 * practice. For old-format packets `rssi` is [NaN] and `meta.fc` is absent: those bytes are magic,
 * not measurements (CSIKit reports -1 there; a made-up number would be worse than none).
 */
import type { CsiFrame } from '../csi/frame.js';
import type { CsiDecoder, DecodeStats, DecoderOptions, DecodeResult } from '../csi/decoder.js';
import { decodeAll } from '../csi/decoder.js';
import { fftBinIndices } from './subcarriers.js';
import { PcapReader, udpPayloadOffset } from './pcap.js';

/** Bytes of the Nexmon header before the CSI words (both firmware generations). */
export const NEXMON_HEADER_LEN = 18;

/** How CSI words are encoded. */
export type NexmonEncoding = 'int16' | 'float';

/** One entry of the chip table. */
export interface NexmonChip {
  /** The u16 `chip` field as the firmware writes it. */
  readonly id: number;
  /** Broadcom chip name. */
  readonly name: string;
  readonly encoding: NexmonEncoding;
  /** Mantissa bits (packed float only). */
  readonly nman?: number;
  /** Exponent bits (packed float only). */
  readonly nexp?: number;
}

/**
 * Chip ids and their CSI encoding, as nexmon_csi's csireader.m decodes each chip (4339 and
 * 43455c0: `typecast(H,'int16')`; 4358: unpack_float format 0 = nman 9, nexp 5; 4366c0: format 1
 * = nman 12, nexp 6). The ids are those CSIKit's read_pcap.py `CHIPS` table has seen in real
 * captures: 0x0065 is the 43455c0 id in example_43455c0.pcap; 0xa6dc, 0xdead and 0xe834 were
 * written by older firmware builds, 0x006a by the RT-AC86U and GT-AC5300.
 */
export const NEXMON_CHIPS: readonly NexmonChip[] = [
  { id: 0x0001, name: '4339', encoding: 'int16' },
  { id: 0x0065, name: '43455c0', encoding: 'int16' },
  { id: 0xa6dc, name: '43455c0', encoding: 'int16' },
  { id: 0x0003, name: '4358', encoding: 'float', nman: 9, nexp: 5 },
  { id: 0xdead, name: '4358', encoding: 'float', nman: 9, nexp: 5 },
  { id: 0x006a, name: '4366c0', encoding: 'float', nman: 12, nexp: 6 },
  { id: 0xe834, name: '4366c0', encoding: 'float', nman: 12, nexp: 6 },
];

const chipById = new Map<number, NexmonChip>(NEXMON_CHIPS.map((c) => [c.id, c]));

/** Options of the Nexmon decoders. */
export interface NexmonOptions extends DecoderOptions {
  /**
   * CSI encoding. `auto` (default) picks it from the chip id via {@link NEXMON_CHIPS}; packets
   * from an unknown chip are then skipped (reason `unknown-chip`).
   */
  format?: 'auto' | 'int16' | 'float';
  /** Mantissa bits for `float`; default from the chip table (required for an unknown chip). */
  nman?: number;
  /** Exponent bits for `float`; default from the chip table (required for an unknown chip). */
  nexp?: number;
}

/** Why a packet produced no frame. */
export type NexmonSkipReason =
  /** Not IPv4/UDP on a supported link layer (pcap only). */
  | 'not-udp'
  /** Shorter than the header or without the 0x1111 magic. */
  | 'not-nexmon'
  /** The chanspec bandwidth is not 20/40/80/160 MHz. */
  | 'bandwidth'
  /** Payload length minus header is not NFFT*4 (csireader.m's rule), or the capture was truncated. */
  | 'size'
  /** `auto`/`float` without a known chip and without nman/nexp. */
  | 'unknown-chip';

/** Per-packet context: where the payload came from. */
export interface NexmonPacketContext {
  /** The frame's `index`. */
  index: number;
  /** Epoch ms, or 0 when the source stamps arrival. */
  time: number;
  /** Seconds (pcap time), or NaN. */
  deviceTime: number;
  /** Microseconds (pcap time), or NaN. */
  clockUs: number;
  /** Packet index in the pcap file or datagram count. */
  packetIndex: number;
  /** File offset of the pcap record; omitted for datagrams. */
  fileOffset?: number;
}

/**
 * Unpacks Broadcom acphy packed-float CSI words (nexmon_csi `unpack_float_acphy`, nbits = 10,
 * autoscale = 1), the way csireader.m and CSIKit decode the 4358 and 4366c0.
 *
 * Word layout: exponent e = bits [0, nexp) two's complement; imag magnitude bits
 * [nexp, nexp+nman-1), imag sign bit nexp+nman-1; real magnitude bits [nexp+nman, nexp+2nman-1),
 * real sign bit nexp+2nman-1. Every value is rescaled by one per-packet shift
 * shft = 10 - max_i(e_i + floor(log2(re_i | im_i))) over words with a non-zero mantissa, so the
 * largest magnitude lands in 10..11 bits: value = sign * m * 2^(e+shft), truncated toward zero
 * when e+shft < 0, and 0 when e+shft < -nman.
 *
 * @param view Bytes holding the words (little-endian).
 * @param byteOffset Offset of word 0 in `view`.
 * @param nfft Number of words.
 * @param nman Mantissa bits (9 for 4358, 12 for 4366c0).
 * @param nexp Exponent bits (5 for 4358, 6 for 4366c0); at most 8, since `exps` is an Int8Array.
 * @param out Receives re, im interleaved: length at least 2*nfft.
 * @param exps Scratch of length at least nfft (reused across calls to avoid allocation).
 * @example
 * const out = new Float32Array(2 * 64);
 * unpackFloatAcphy(new DataView(words.buffer), 0, 64, 9, 5, out, new Int8Array(64));
 */
export function unpackFloatAcphy(view: DataView, byteOffset: number, nfft: number, nman: number, nexp: number, out: Float32Array, exps: Int8Array): void {
  const iqMask = (1 << (nman - 1)) - 1;
  const eMask = (1 << nexp) - 1;
  const eP = 1 << (nexp - 1);
  const reShift = nexp + nman;
  const reSignBit = nexp + 2 * nman - 1;
  const imSignBit = nexp + nman - 1;
  let maxbit = -eP;
  for (let i = 0; i < nfft; i++) {
    const w = view.getUint32(byteOffset + 4 * i, true);
    let e = w & eMask;
    if (e >= eP) e -= eP << 1;
    exps[i] = e;
    const x = ((w >>> reShift) & iqMask) | ((w >>> nexp) & iqMask);
    if (x !== 0) {
      // floor(log2(x)) = 31 - clz32(x): the C code's binary search for the top bit.
      const top = e + 31 - Math.clz32(x);
      if (top > maxbit) maxbit = top;
    }
  }
  const shft = 10 - maxbit;
  const eZero = -nman;
  for (let i = 0; i < nfft; i++) {
    const w = view.getUint32(byteOffset + 4 * i, true);
    const e = exps[i]! + shft;
    let re = (w >>> reShift) & iqMask;
    let im = (w >>> nexp) & iqMask;
    if (e < eZero) {
      re = 0;
      im = 0;
    } else if (e < 0) {
      re >>= -e;
      im >>= -e;
    } else {
      // e + top bit <= 10 by construction of shft, so this cannot overflow int32.
      re <<= e;
      im <<= e;
    }
    // 0 - m rather than -m: an integer decoder has no negative zero.
    out[2 * i] = (w >>> reSignBit) & 1 ? 0 - re : re;
    out[2 * i + 1] = (w >>> imSignBit) & 1 ? 0 - im : im;
  }
}

/** Channel bandwidth in MHz from a d11ac chanspec (bits 11-13), or NaN for 5/10 MHz and 80+80. */
export function chanspecBandwidthMhz(chanspec: number): number {
  switch (chanspec & 0x3800) {
    case 0x1000:
      return 20;
    case 0x1800:
      return 40;
    case 0x2000:
      return 80;
    case 0x2800:
      return 160;
    default:
      return NaN;
  }
}

function hex(v: number, digits: number): string {
  return '0x' + v.toString(16).padStart(digits, '0');
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

const sharedExps = new Int8Array(512);

/**
 * Decodes one Nexmon UDP payload (the bytes after the UDP header, what a UDP listener receives).
 * Never throws for bad data: it returns the reason instead of a frame.
 *
 * @param payload The UDP payload; its length is judged exactly (18 + NFFT*4).
 * @param opts Encoding choice plus source/environment ids.
 * @param ctx Timing and position; defaults to a datagram with unknown time (index 0).
 * @returns The frame, or a {@link NexmonSkipReason}.
 * @example
 * const r = decodeNexmonPayload(datagram, { sourceId: 'udp://0.0.0.0:5500' });
 * if (typeof r !== 'string') emit(r);
 */
export function decodeNexmonPayload(payload: Uint8Array, opts: NexmonOptions = {}, ctx?: NexmonPacketContext): CsiFrame | NexmonSkipReason {
  if (payload.length < NEXMON_HEADER_LEN || payload[0] !== 0x11 || payload[1] !== 0x11) return 'not-nexmon';
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const chanspec = v.getUint16(14, true);
  const bw = chanspecBandwidthMhz(chanspec);
  if (Number.isNaN(bw)) return 'bandwidth';
  const nfft = bw * 3.2;
  if (payload.length - NEXMON_HEADER_LEN !== nfft * 4) return 'size';
  const chipId = v.getUint16(16, true);
  const chip = chipById.get(chipId);
  const format = opts.format ?? 'auto';
  let encoding: NexmonEncoding;
  if (format === 'auto') {
    if (!chip) return 'unknown-chip';
    encoding = chip.encoding;
  } else encoding = format;

  const csi = new Float32Array(2 * nfft);
  if (encoding === 'int16') {
    for (let i = 0, o = NEXMON_HEADER_LEN; i < 2 * nfft; i++, o += 2) csi[i] = v.getInt16(o, true);
  } else {
    const nman = opts.nman ?? chip?.nman;
    const nexp = opts.nexp ?? chip?.nexp;
    if (nman === undefined || nexp === undefined || !validFloatLayout(nman, nexp)) return 'unknown-chip';
    unpackFloatAcphy(v, NEXMON_HEADER_LEN, nfft, nman, nexp, csi, sharedExps);
  }

  const oldMagic = payload[2] === 0x11 && payload[3] === 0x11;
  const mac =
    HEX[payload[4]!]! + ':' + HEX[payload[5]!]! + ':' + HEX[payload[6]!]! + ':' + HEX[payload[7]!]! + ':' + HEX[payload[8]!]! + ':' + HEX[payload[9]!]!;
  const seqCnt = v.getUint16(10, true);
  const csiconf = v.getUint16(12, true);
  const meta: Record<string, unknown> = {
    magic: oldMagic ? '0x11111111' : '0x1111',
    ...(oldMagic ? {} : { fc: payload[3]! }),
    mac,
    seq_cnt: seqCnt,
    core: csiconf & 7,
    stream: (csiconf >> 3) & 7,
    chanspec: hex(chanspec, 4),
    chip: hex(chipId, 4),
    ...(chip ? { chip_name: chip.name } : {}),
    nfft,
    encoding,
    packet_index: ctx?.packetIndex ?? 0,
    ...(ctx?.fileOffset !== undefined ? { file_offset: ctx.fileOffset } : {}),
  };
  return {
    format: 'nexmon',
    sourceId: opts.sourceId ?? 'unknown',
    environmentId: opts.environmentId ?? 'default',
    index: ctx?.index ?? 0,
    time: ctx?.time ?? 0,
    deviceTime: ctx?.deviceTime ?? NaN,
    clockUs: ctx?.clockUs ?? NaN,
    seq: seqCnt >> 4,
    rssi: [oldMagic ? NaN : v.getInt8(2)],
    noise: NaN,
    channel: chanspec & 0xff,
    bandwidthMhz: bw,
    nRx: 1,
    nTx: 1,
    nSub: nfft,
    subcarriers: fftBinIndices(nfft),
    csi,
    meta,
  };
}

/** Mantissas and exponent must fit the 32-bit word with both sign bits; exponents fit an int8. */
function validFloatLayout(nman: number, nexp: number): boolean {
  return Number.isInteger(nman) && Number.isInteger(nexp) && nman >= 2 && nexp >= 1 && nexp <= 8 && nexp + 2 * nman <= 32;
}

/** Skip bookkeeping shared by both decoders. */
abstract class NexmonDecoderBase {
  readonly format = 'nexmon' as const;
  readonly stats: DecodeStats = { records: 0, skipped: 0, bytes: 0 };
  /** Skipped packets per reason. */
  readonly skipReasons: Record<NexmonSkipReason, number> = {
    'not-udp': 0,
    'not-nexmon': 0,
    bandwidth: 0,
    size: 0,
    'unknown-chip': 0,
  };
  /**
   * Indices (pcap packet index or datagram count) of skipped packets, in order. Only the first
   * {@link MAX_SKIPPED_LISTED} are listed so a long live run cannot grow it without bound;
   * `stats.skipped` keeps the full count.
   */
  readonly skippedPackets: number[] = [];
  protected readonly opts: NexmonOptions;

  constructor(opts: NexmonOptions) {
    this.opts = opts;
  }

  protected skip(reason: NexmonSkipReason, packetIndex: number): void {
    this.stats.skipped++;
    this.skipReasons[reason]++;
    if (this.skippedPackets.length < MAX_SKIPPED_LISTED) this.skippedPackets.push(packetIndex);
  }
}

/** How many skipped packet indices a decoder lists. */
export const MAX_SKIPPED_LISTED = 100_000;

/**
 * Decodes Nexmon CSI from a classic pcap capture (linktypes Ethernet, raw IPv4, Linux cooked).
 * For each packet it walks Ethernet/IPv4 (real IHL)/UDP and decodes the payload; as csireader.m
 * does, the size is judged on the captured packet, so a frame carrying trailer bytes after the
 * datagram (orig_len 1088 instead of 1084 in example_43455c0.pcap) is skipped as `size`, and so
 * is a packet cut short by snaplen. Frames get the pcap timestamp: deviceTime in seconds, time in
 * epoch ms, clockUs in µs.
 *
 * Frame `index` counts emitted frames; `meta.packet_index` is the packet's index in the file.
 *
 * @example
 * const dec = new NexmonPcapDecoder({ sourceId: 'capture.pcap' });
 * dec.push(bytes, emit); dec.end(emit);
 * dec.skippedPackets; // [118, 120, ...]
 */
export class NexmonPcapDecoder extends NexmonDecoderBase implements CsiDecoder {
  private readonly reader: PcapReader;
  private emit: ((frame: CsiFrame) => void) | undefined;

  /** @param opts Encoding choice plus source/environment ids. */
  constructor(opts: NexmonOptions = {}) {
    super(opts);
    this.reader = new PcapReader((pkt, sec, fracUs, origLen, index, offset) => this.onPacket(pkt, sec, fracUs, origLen, index, offset));
  }

  /** The pcap global header, once read. */
  get pcapHeader() {
    return this.reader.header;
  }

  /** Pcap packets read so far (CSI or not). */
  get packets(): number {
    return this.reader.packets;
  }

  /**
   * @param chunk Next bytes of the pcap file (any size).
   * @param emit Receives each decoded frame.
   */
  push(chunk: Uint8Array, emit: (frame: CsiFrame) => void): void {
    this.emit = emit;
    this.reader.push(chunk);
    this.emit = undefined;
    this.stats.bytes = this.reader.bytes;
  }

  /**
   * @param _emit Unused: every frame is emitted as soon as its packet is complete.
   * @throws DecodeError when the pcap could not be read to its end (bad header, impossible
   *   incl_len, input ending inside a record).
   */
  end(_emit: (frame: CsiFrame) => void): void {
    this.reader.end();
  }

  private onPacket(pkt: Uint8Array, sec: number, fracUs: number, origLen: number, index: number, offset: number): void {
    const off = udpPayloadOffset(this.reader.header!.linktype, pkt);
    if (off < 0) return this.skip('not-udp', index);
    if (pkt.length < origLen) return this.skip('size', index);
    const r = decodeNexmonPayload(pkt.subarray(off), this.opts, {
      index: this.stats.records,
      time: sec * 1000 + fracUs / 1000,
      deviceTime: sec + fracUs / 1e6,
      clockUs: sec * 1e6 + fracUs,
      packetIndex: index,
      fileOffset: offset,
    });
    if (typeof r === 'string') return this.skip(r, index);
    this.stats.records++;
    this.emit!(r);
  }
}

/**
 * Decodes Nexmon CSI datagrams as a UDP listener receives them: each `push` is exactly one UDP
 * payload. Frames have no recorded time (time 0, deviceTime and clockUs NaN): the source stamps
 * arrival. `end` never throws, since a datagram is always complete.
 *
 * @example
 * socket.on('message', (msg) => dec.push(msg, emit));
 */
export class NexmonUdpDecoder extends NexmonDecoderBase implements CsiDecoder {
  private datagrams = 0;

  /** @param opts Encoding choice plus source/environment ids. */
  constructor(opts: NexmonOptions = {}) {
    super(opts);
  }

  /**
   * @param datagram One UDP payload.
   * @param emit Receives the frame, if the datagram holds one.
   */
  push(datagram: Uint8Array, emit: (frame: CsiFrame) => void): void {
    const index = this.datagrams++;
    this.stats.bytes += datagram.length;
    const r = decodeNexmonPayload(datagram, this.opts, {
      index: this.stats.records,
      time: 0,
      deviceTime: NaN,
      clockUs: NaN,
      packetIndex: index,
    });
    if (typeof r === 'string') return this.skip(r, index);
    this.stats.records++;
    emit(r);
  }

  /** @param _emit Unused: datagrams never leave partial state behind. */
  end(_emit: (frame: CsiFrame) => void): void {}
}

/**
 * Decodes a whole Nexmon pcap capture.
 *
 * @param bytes The pcap file.
 * @param opts Encoding choice plus source/environment ids.
 * @returns Frames, counts, and a DecodeError when the file could not be read to its end.
 */
export function decodeNexmon(bytes: Uint8Array, opts: NexmonOptions = {}): DecodeResult {
  return decodeAll(new NexmonPcapDecoder(opts), bytes);
}
