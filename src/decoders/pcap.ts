/**
 * An incremental reader for classic libpcap capture files, and the link-layer walk that finds a
 * UDP payload inside a captured packet.
 *
 * Layout (https://wiki.wireshark.org/Development/LibpcapFileFormat): a 24-byte global header
 * (magic, version major/minor, thiszone, sigfigs, snaplen, linktype) in the writer's byte order,
 * then records of a 16-byte header (ts_sec, ts_usec or ts_nsec, incl_len, orig_len) followed by
 * incl_len captured bytes. pcapng is a different format and is refused.
 *
 * pcap has no record markers, so a corrupt incl_len cannot be resynchronised past: the reader
 * stops there and reports a DecodeError naming the record's offset from `end()`.
 */
import { DecodeError } from '../csi/decoder.js';

// Linktypes whose packets `udpPayloadOffset` can walk (tcpdump.org/linktypes.html).
/** Ethernet II (with optional 802.1Q / 802.1ad tags). */
export const LINKTYPE_ETHERNET = 1;
/** Raw IP: the packet starts with the IP header. */
export const LINKTYPE_RAW = 101;
/** Linux cooked capture v1 (`tcpdump -i any`): 16-byte header, protocol at bytes 14-15. */
export const LINKTYPE_LINUX_SLL = 113;
/** Raw IPv4. */
export const LINKTYPE_IPV4 = 228;
/** Linux cooked capture v2: 20-byte header, protocol at bytes 0-1. */
export const LINKTYPE_LINUX_SLL2 = 276;

/** Largest incl_len accepted whatever snaplen says (libpcap's own ceiling for most linktypes). */
export const PCAP_MAX_PACKET = 256 * 1024;

const GLOBAL_HEADER_LEN = 24;
const RECORD_HEADER_LEN = 16;

/** The fields of a pcap global header. */
export interface PcapGlobalHeader {
  /** The magic as written in the file, read in the file's own byte order (0xa1b2c3d4 or 0xa1b23c4d). */
  readonly magic: number;
  /** True when the file was written little-endian (magic bytes d4 c3 b2 a1 or 4d 3c b2 a1). */
  readonly littleEndian: boolean;
  /** True for the nanosecond-resolution variant (magic a1b23c4d). */
  readonly nanosecond: boolean;
  readonly versionMajor: number;
  readonly versionMinor: number;
  readonly thiszone: number;
  readonly sigfigs: number;
  /** Largest captured length the writer promised; 0 when the writer left it unset. */
  readonly snaplen: number;
  readonly linktype: number;
}

/**
 * Called once per captured packet.
 *
 * @param packet The captured bytes (incl_len of them). A view that is only valid during the call:
 *   it may point into the chunk being pushed or into the reader's reassembly buffer. Copy what you keep.
 * @param tsSec Timestamp seconds.
 * @param tsFracUs Sub-second part in microseconds (fractional for nanosecond files).
 * @param origLen The packet's length on the wire (may exceed `packet.length` when truncated by snaplen).
 * @param index Zero-based packet index in the file.
 * @param offset File offset of the packet's 16-byte record header.
 */
export type PcapPacketHandler = (packet: Uint8Array, tsSec: number, tsFracUs: number, origLen: number, index: number, offset: number) => void;

/**
 * Incremental classic-pcap reader. Push chunks of any size; each complete packet is handed to the
 * callback as soon as its last byte arrives. `push` never throws for bad data: the first
 * unrecoverable problem (bad magic, impossible incl_len) stops consumption and is thrown by `end()`,
 * as is input that ends inside a header or a packet.
 *
 * @example
 * const reader = new PcapReader((pkt, sec, us) => console.log(sec, us, pkt.length));
 * for await (const chunk of stream) reader.push(chunk);
 * reader.end(); // throws DecodeError if the file was cut short
 */
export class PcapReader {
  /** Packets handed to the callback so far. */
  packets = 0;
  /** Bytes consumed so far; after a failure, the offset where reading stopped. */
  bytes = 0;
  /** The global header once its 24 bytes have arrived. */
  header: PcapGlobalHeader | undefined;
  /** The error that stopped the reader, if any; `end()` throws it. */
  failure: DecodeError | undefined;

  private readonly onPacket: PcapPacketHandler;
  private readonly globalBuf = new Uint8Array(GLOBAL_HEADER_LEN);
  private globalLen = 0;
  /** Reassembly buffer for a record that spans chunks (header + data). */
  private pending = new Uint8Array(2048);
  private pendingView = new DataView(this.pending.buffer);
  private pendingLen = 0;
  /** incl_len of the pending record once its header is complete, else -1. */
  private pendingIncl = -1;
  /** Absolute offset of the record being assembled or, at a boundary, of the next record. */
  private recordOffset = GLOBAL_HEADER_LEN;

  /**
   * @param onPacket Receives each packet; see {@link PcapPacketHandler}.
   */
  constructor(onPacket: PcapPacketHandler) {
    this.onPacket = onPacket;
  }

  /**
   * Feeds the next chunk of the file. Never throws for bad data (exceptions thrown by the
   * callback itself propagate).
   *
   * @param chunk Next bytes of the file, in order.
   */
  push(chunk: Uint8Array): void {
    if (this.failure) return;
    const n = chunk.length;
    let p = 0;
    if (!this.header) {
      const take = Math.min(GLOBAL_HEADER_LEN - this.globalLen, n);
      this.globalBuf.set(chunk.subarray(0, take), this.globalLen);
      this.globalLen += take;
      this.bytes += take;
      p = take;
      if (this.globalLen < GLOBAL_HEADER_LEN) return;
      this.header = parseGlobalHeader(this.globalBuf);
      if (!this.header) {
        this.failure = new DecodeError(describeBadMagic(this.globalBuf), 0);
        this.bytes = 0;
        return;
      }
    }
    const h = this.header;
    const le = h.littleEndian;
    // Only needed when a record header sits wholly inside this chunk.
    let view: DataView | undefined;
    while (p < n) {
      if (this.pendingLen > 0) {
        p = this.continuePending(chunk, p);
        if (this.failure) return;
        continue;
      }
      // At a record boundary: read straight from the chunk when the whole record is in it.
      const avail = n - p;
      if (avail < RECORD_HEADER_LEN) {
        this.startPending(chunk, p, avail);
        p = n;
        break;
      }
      view ??= new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const incl = view.getUint32(p + 8, le);
      if (!this.checkIncl(incl)) return;
      if (avail < RECORD_HEADER_LEN + incl) {
        this.startPending(chunk, p, avail);
        this.pendingIncl = incl;
        this.ensurePending(RECORD_HEADER_LEN + incl);
        p = n;
        break;
      }
      const offset = this.recordOffset;
      const tsSec = view.getUint32(p, le);
      const tsFrac = view.getUint32(p + 4, le);
      const orig = view.getUint32(p + 12, le);
      const start = p + RECORD_HEADER_LEN;
      p = start + incl;
      this.bytes += RECORD_HEADER_LEN + incl;
      this.recordOffset += RECORD_HEADER_LEN + incl;
      this.onPacket(chunk.subarray(start, p), tsSec, h.nanosecond ? tsFrac / 1000 : tsFrac, orig, this.packets++, offset);
    }
  }

  /**
   * Declares the end of input.
   *
   * @throws DecodeError naming the offset when the reader stopped on bad data, or when the input
   *   ended before the global header or inside a record.
   */
  end(): void {
    if (this.failure) throw this.failure;
    if (!this.header) {
      throw new DecodeError(this.globalLen === 0 ? 'empty input: no pcap global header' : `truncated pcap global header (${this.globalLen} of 24 bytes)`, 0);
    }
    if (this.pendingLen > 0) {
      const what =
        this.pendingIncl < 0
          ? `truncated pcap record header (${this.pendingLen} of 16 bytes)`
          : `truncated pcap packet ${this.packets} (${this.pendingLen - RECORD_HEADER_LEN} of ${this.pendingIncl} bytes)`;
      throw new DecodeError(what, this.recordOffset);
    }
  }

  /** Validates incl_len of the record at `recordOffset`; records the failure when it is impossible. */
  private checkIncl(incl: number): boolean {
    const snap = this.header!.snaplen;
    if (incl > PCAP_MAX_PACKET || (snap > 0 && incl > snap)) {
      this.failure = new DecodeError(
        `pcap packet ${this.packets} claims incl_len ${incl}, above ${snap > 0 && snap < PCAP_MAX_PACKET ? `snaplen ${snap}` : `the ${PCAP_MAX_PACKET}-byte limit`}; pcap cannot resynchronise`,
        this.recordOffset,
      );
      // Consumption ends where reading stopped, however the input was chunked.
      this.bytes = this.recordOffset;
      return false;
    }
    return true;
  }

  private startPending(chunk: Uint8Array, p: number, count: number): void {
    this.ensurePending(Math.max(count, RECORD_HEADER_LEN));
    this.pending.set(chunk.subarray(p, p + count), 0);
    this.pendingLen = count;
    this.pendingIncl = -1;
    this.bytes += count;
  }

  /** Adds bytes to the record being reassembled; returns the new chunk position. */
  private continuePending(chunk: Uint8Array, p: number): number {
    const le = this.header!.littleEndian;
    if (this.pendingIncl < 0) {
      // Header still incomplete: the header bytes may already be here (startPending with >=16 bytes).
      if (this.pendingLen < RECORD_HEADER_LEN) {
        const take = Math.min(RECORD_HEADER_LEN - this.pendingLen, chunk.length - p);
        this.pending.set(chunk.subarray(p, p + take), this.pendingLen);
        this.pendingLen += take;
        this.bytes += take;
        p += take;
        if (this.pendingLen < RECORD_HEADER_LEN) return p;
      }
      const incl = this.pendingView.getUint32(8, le);
      if (!this.checkIncl(incl)) return chunk.length;
      this.pendingIncl = incl;
      this.ensurePending(RECORD_HEADER_LEN + incl);
    }
    const total = RECORD_HEADER_LEN + this.pendingIncl;
    const take = Math.min(total - this.pendingLen, chunk.length - p);
    this.pending.set(chunk.subarray(p, p + take), this.pendingLen);
    this.pendingLen += take;
    this.bytes += take;
    p += take;
    if (this.pendingLen === total) {
      const v = this.pendingView;
      const offset = this.recordOffset;
      const tsSec = v.getUint32(0, le);
      const tsFrac = v.getUint32(4, le);
      const orig = v.getUint32(12, le);
      this.pendingLen = 0;
      this.pendingIncl = -1;
      this.recordOffset += total;
      this.onPacket(this.pending.subarray(RECORD_HEADER_LEN, total), tsSec, this.header!.nanosecond ? tsFrac / 1000 : tsFrac, orig, this.packets++, offset);
    }
    return p;
  }

  private ensurePending(size: number): void {
    if (size <= this.pending.length) return;
    let cap = this.pending.length;
    while (cap < size) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.pending.subarray(0, this.pendingLen));
    this.pending = next;
    this.pendingView = new DataView(next.buffer);
  }
}

function parseGlobalHeader(b: Uint8Array): PcapGlobalHeader | undefined {
  const v = new DataView(b.buffer, b.byteOffset, GLOBAL_HEADER_LEN);
  let littleEndian: boolean;
  let magic = v.getUint32(0, true);
  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) littleEndian = true;
  else {
    magic = v.getUint32(0, false);
    if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) littleEndian = false;
    else return undefined;
  }
  return {
    magic,
    littleEndian,
    nanosecond: magic === 0xa1b23c4d,
    versionMajor: v.getUint16(4, littleEndian),
    versionMinor: v.getUint16(6, littleEndian),
    thiszone: v.getInt32(8, littleEndian),
    sigfigs: v.getUint32(12, littleEndian),
    snaplen: v.getUint32(16, littleEndian),
    linktype: v.getUint32(20, littleEndian) & 0x0fffffff, // upper bits carry FCS flags
  };
}

function describeBadMagic(b: Uint8Array): string {
  const hex = Array.from(b.subarray(0, 4), (x) => x.toString(16).padStart(2, '0')).join(' ');
  if (hex === '0a 0d 0d 0a') return 'pcapng files are not supported (convert with `editcap -F pcap`)';
  return `not a pcap file (magic bytes ${hex})`;
}

/**
 * Finds the UDP payload in one captured packet: walks the link layer (Ethernet with up to two
 * VLAN tags, Linux cooked v1/v2, or raw IPv4), then IPv4 using its real header length (IHL), then
 * the 8-byte UDP header. The payload runs from the returned offset to the end of the captured
 * bytes, trailer included: callers that must judge sizes the way nexmon's csireader.m does rely
 * on that.
 *
 * @param linktype The file's linktype (1, 101, 113, 228 or 276).
 * @param packet The captured bytes.
 * @returns Offset of the UDP payload in `packet`, or -1 when the packet is not an unfragmented
 *   IPv4/UDP packet on a supported link, or is cut short before the end of the UDP header.
 * @example
 * const off = udpPayloadOffset(LINKTYPE_ETHERNET, pkt); // 42 for Ethernet + 20-byte IPv4 + UDP
 */
export function udpPayloadOffset(linktype: number, packet: Uint8Array): number {
  const n = packet.length;
  let ip: number;
  switch (linktype) {
    case LINKTYPE_ETHERNET: {
      let o = 12;
      if (n < o + 2) return -1;
      let type = (packet[o]! << 8) | packet[o + 1]!;
      // 802.1Q / 802.1ad tags: skip up to two.
      for (let tags = 0; tags < 2 && (type === 0x8100 || type === 0x88a8); tags++) {
        o += 4;
        if (n < o + 2) return -1;
        type = (packet[o]! << 8) | packet[o + 1]!;
      }
      if (type !== 0x0800) return -1;
      ip = o + 2;
      break;
    }
    case LINKTYPE_LINUX_SLL:
      if (n < 16 || ((packet[14]! << 8) | packet[15]!) !== 0x0800) return -1;
      ip = 16;
      break;
    case LINKTYPE_LINUX_SLL2:
      if (n < 20 || ((packet[0]! << 8) | packet[1]!) !== 0x0800) return -1;
      ip = 20;
      break;
    case LINKTYPE_RAW:
    case LINKTYPE_IPV4:
      ip = 0;
      break;
    default:
      return -1;
  }
  if (n < ip + 20) return -1;
  const vihl = packet[ip]!;
  if (vihl >> 4 !== 4) return -1;
  const ihl = (vihl & 0x0f) * 4;
  if (ihl < 20) return -1;
  if (packet[ip + 9] !== 17) return -1;
  // A fragment (more-fragments flag or non-zero offset) does not hold one whole UDP payload.
  const frag = (packet[ip + 6]! << 8) | packet[ip + 7]!;
  if ((frag & 0x3fff) !== 0) return -1;
  const udp = ip + ihl;
  if (n < udp + 8) return -1;
  return udp + 8;
}
