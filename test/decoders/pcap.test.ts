import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../src/csi/decoder.js';
import { PCAP_MAX_PACKET, PcapReader, udpPayloadOffset } from '../../src/decoders/pcap.js';
import { mulberry32 } from '../helpers/decoding.js';
import { type DecodedFacts, describeWithSamples, groundTruth, sampleBytes } from '../helpers/samples.js';

interface Pkt {
  data: Uint8Array;
  sec: number;
  frac: number;
  orig?: number;
}

interface Seen {
  data: number[];
  sec: number;
  frac: number;
  orig: number;
  index: number;
  offset: number;
}

/** Builds a classic pcap in either byte order, micro- or nanosecond resolution. */
function buildPcap(packets: Pkt[], o: { le?: boolean; nanos?: boolean; snaplen?: number; linktype?: number } = {}): Uint8Array {
  const le = o.le ?? true;
  const total = 24 + packets.reduce((s, p) => s + 16 + p.data.length, 0);
  const b = new Uint8Array(total);
  const v = new DataView(b.buffer);
  v.setUint32(0, o.nanos ? 0xa1b23c4d : 0xa1b2c3d4, le);
  v.setUint16(4, 2, le);
  v.setUint16(6, 4, le);
  v.setInt32(8, -3600, le);
  v.setUint32(16, o.snaplen ?? 65535, le);
  v.setUint32(20, o.linktype ?? 1, le);
  let off = 24;
  for (const p of packets) {
    v.setUint32(off, p.sec, le);
    v.setUint32(off + 4, p.frac, le);
    v.setUint32(off + 8, p.data.length, le);
    v.setUint32(off + 12, p.orig ?? p.data.length, le);
    b.set(p.data, off + 16);
    off += 16 + p.data.length;
  }
  return b;
}

/** Reads `bytes` in the given chunk sizes; returns what the callback saw and what end() threw. */
function read(bytes: Uint8Array, sizes: (i: number) => number = () => bytes.length) {
  const seen: Seen[] = [];
  const r = new PcapReader((pkt, sec, frac, orig, index, offset) => seen.push({ data: Array.from(pkt), sec, frac, orig, index, offset }));
  for (let i = 0, k = 0; i < bytes.length; k++) {
    const n = Math.max(1, sizes(k));
    expect(() => r.push(bytes.subarray(i, i + n))).not.toThrow();
    i += n;
  }
  let error: unknown;
  try {
    r.end();
  } catch (e) {
    error = e;
  }
  return { seen, error, reader: r };
}

const packets: Pkt[] = [
  { data: Uint8Array.from([1, 2, 3, 4, 5]), sec: 100, frac: 999_999 },
  { data: new Uint8Array(0), sec: 101, frac: 0 },
  { data: Uint8Array.from({ length: 3000 }, (_, i) => i & 0xff), sec: 102, frac: 500, orig: 4000 },
];

describe('PcapReader', () => {
  it('reads little-endian microsecond files: header, packets, timestamps, offsets', () => {
    const { seen, error, reader } = read(buildPcap(packets, { snaplen: 4096 }));
    expect(error).toBeUndefined();
    expect(reader.header).toEqual({
      magic: 0xa1b2c3d4,
      littleEndian: true,
      nanosecond: false,
      versionMajor: 2,
      versionMinor: 4,
      thiszone: -3600,
      sigfigs: 0,
      snaplen: 4096,
      linktype: 1,
    });
    expect(seen.map((s) => [s.sec, s.frac, s.orig, s.index, s.offset, s.data.length])).toEqual([
      [100, 999_999, 5, 0, 24, 5],
      [101, 0, 0, 1, 45, 0],
      [102, 500, 4000, 2, 61, 3000],
    ]);
    expect(seen[0]!.data).toEqual([1, 2, 3, 4, 5]);
    expect(seen[2]!.data).toEqual(Array.from(packets[2]!.data));
    expect(reader.packets).toBe(3);
    expect(reader.bytes).toBe(24 + 21 + 16 + 3016);
  });

  it('reads big-endian (magic d4c3b2a1 on disk as a1 b2 c3 d4) and nanosecond files', () => {
    const ref = read(buildPcap(packets)).seen;
    const be = read(buildPcap(packets, { le: false }));
    expect(be.reader.header!.littleEndian).toBe(false);
    expect(be.seen).toEqual(ref);

    const ns = packets.map((p, i) => ({ ...p, frac: [123_456_789, 0, 999_999_999][i]! }));
    for (const le of [true, false]) {
      const r = read(buildPcap(ns, { le, nanos: true }));
      expect(r.reader.header!.nanosecond).toBe(true);
      expect(r.seen.map((s) => s.frac)).toEqual([123_456.789, 0, 999_999.999]);
    }
  });

  it('gives the same packets whatever the chunking', () => {
    const bytes = buildPcap(packets);
    const whole = read(bytes).seen;
    expect(read(bytes, () => 1).seen).toEqual(whole);
    expect(read(bytes, () => 13).seen).toEqual(whole);
    expect(read(bytes, () => 17).seen).toEqual(whole);
    const rnd = mulberry32(42);
    for (let t = 0; t < 20; t++) expect(read(bytes, () => 1 + Math.floor(rnd() * 64)).seen).toEqual(whole);
  });

  it('stops at incl_len above snaplen, reporting the record offset from end(), and consumes no more', () => {
    const bytes = buildPcap(packets, { snaplen: 2000 });
    for (const size of [bytes.length, 1, 7]) {
      const { seen, error, reader } = read(bytes, () => size);
      expect(seen).toHaveLength(2);
      expect(error).toBeInstanceOf(DecodeError);
      expect((error as DecodeError).offset).toBe(61);
      expect((error as DecodeError).message).toMatch(/incl_len 3000.*snaplen 2000.*at byte offset 61/);
      expect(reader.bytes).toBe(61);
    }
  });

  it('stops at incl_len above 256 KiB even when snaplen is unset', () => {
    const bytes = buildPcap([{ data: new Uint8Array(10), sec: 1, frac: 0 }], { snaplen: 0 });
    new DataView(bytes.buffer).setUint32(24 + 8, PCAP_MAX_PACKET + 1, true);
    const { error, seen } = read(bytes);
    expect(seen).toHaveLength(0);
    expect(error).toBeInstanceOf(DecodeError);
    expect((error as DecodeError).offset).toBe(24);
    // Exactly 256 KiB is allowed.
    const big = buildPcap([{ data: new Uint8Array(PCAP_MAX_PACKET), sec: 1, frac: 0 }], { snaplen: 0 });
    expect(read(big, () => 10_000).seen).toHaveLength(1);
  });

  it('refuses a bad magic, pcapng, an empty or short header at offset 0', () => {
    const cases: Array<[Uint8Array, RegExp]> = [
      [new Uint8Array(0), /empty input/],
      [buildPcap([]).subarray(0, 23), /truncated pcap global header/],
      [Uint8Array.from([0x0a, 0x0d, 0x0d, 0x0a, ...new Array(40).fill(0)]), /pcapng/],
      [new TextEncoder().encode('CSI_DATA,AP,3C:71:BF:6D:2A:78,-73,11,1,0,1'), /not a pcap file/],
    ];
    for (const [bytes, re] of cases) {
      const { error, seen } = read(bytes);
      expect(seen).toHaveLength(0);
      expect(error).toBeInstanceOf(DecodeError);
      expect((error as DecodeError).offset).toBe(0);
      expect((error as DecodeError).message).toMatch(re);
    }
  });

  it('reports a file cut inside a record header or a packet at the record start', () => {
    const bytes = buildPcap(packets);
    // Record starts: 24, 45, 61; end 3077.
    for (const [cut, offset] of [
      [30, 24],
      [44, 24],
      [50, 45],
      [61 + 15, 61],
      [61 + 16 + 2999, 61],
    ] as const) {
      for (const size of [cut, 1, 5]) {
        const { error, seen } = read(bytes.subarray(0, cut), () => size);
        expect(error).toBeInstanceOf(DecodeError);
        expect((error as DecodeError).offset).toBe(offset);
        expect(seen.length).toBe(offset === 24 ? 0 : offset === 45 ? 1 : 2);
      }
    }
    expect(read(bytes.subarray(0, 24)).error).toBeUndefined();
    expect(read(bytes.subarray(0, 61)).error).toBeUndefined();
  });

  it('push never throws on seeded garbage; end throws only DecodeError', () => {
    const rnd = mulberry32(1234);
    const header = buildPcap([]);
    for (let t = 0; t < 200; t++) {
      const junk = Uint8Array.from({ length: Math.floor(rnd() * 3000) }, () => Math.floor(rnd() * 256));
      const bytes = t % 2 ? junk : Uint8Array.from([...header, ...junk]);
      const { error } = read(bytes, () => 1 + Math.floor(rnd() * 100));
      if (error !== undefined) expect(error).toBeInstanceOf(DecodeError);
    }
  });
});

describe('udpPayloadOffset', () => {
  function ipv4Udp(ihl = 5, proto = 17, frag = 0): Uint8Array {
    const b = new Uint8Array(ihl * 4 + 8 + 4);
    b[0] = 0x40 | ihl;
    b[6] = frag >> 8;
    b[7] = frag & 0xff;
    b[9] = proto;
    b.set([1, 2, 3, 4], ihl * 4 + 8);
    return b;
  }
  function eth(type: number, body: Uint8Array, vlans: number[] = []): Uint8Array {
    const b = new Uint8Array(12 + vlans.length * 4 + 2 + body.length);
    let o = 12;
    for (const tpid of vlans) {
      b[o] = tpid >> 8;
      b[o + 1] = tpid & 0xff;
      o += 4;
    }
    b[o] = type >> 8;
    b[o + 1] = type & 0xff;
    b.set(body, o + 2);
    return b;
  }

  it('walks Ethernet, IHL, VLAN tags, raw IPv4 and Linux cooked headers', () => {
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp()))).toBe(42);
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(6)))).toBe(46);
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(15)))).toBe(82);
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(), [0x8100]))).toBe(46);
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(), [0x88a8, 0x8100]))).toBe(50);
    expect(udpPayloadOffset(101, ipv4Udp())).toBe(28);
    expect(udpPayloadOffset(228, ipv4Udp(7))).toBe(36);
    const sll = new Uint8Array(16 + 32);
    sll[14] = 0x08;
    sll.set(ipv4Udp(), 16);
    expect(udpPayloadOffset(113, sll)).toBe(44);
    const sll2 = new Uint8Array(20 + 32);
    sll2[0] = 0x08;
    sll2.set(ipv4Udp(), 20);
    expect(udpPayloadOffset(276, sll2)).toBe(48);
  });

  it('rejects what is not a whole unfragmented IPv4/UDP packet', () => {
    expect(udpPayloadOffset(1, eth(0x86dd, ipv4Udp()))).toBe(-1); // IPv6 ethertype
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(5, 6)))).toBe(-1); // TCP
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(5, 17, 0x2000)))).toBe(-1); // more fragments
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(5, 17, 0x0010)))).toBe(-1); // fragment offset
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(5, 17, 0x4000)))).toBe(42); // don't-fragment is fine
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp(4)))).toBe(-1); // IHL below 5
    const v6 = ipv4Udp();
    v6[0] = 0x65;
    expect(udpPayloadOffset(101, v6)).toBe(-1);
    expect(udpPayloadOffset(1, eth(0x0800, ipv4Udp()).subarray(0, 41))).toBe(-1); // cut in UDP header
    expect(udpPayloadOffset(1, new Uint8Array(5))).toBe(-1);
    expect(udpPayloadOffset(105, ipv4Udp())).toBe(-1); // 802.11 linktype: unsupported
  });
});

describeWithSamples('PcapReader on example_43455c0.pcap', () => {
  it('sees 566 packets with the recorded lengths and first timestamp', () => {
    const facts = groundTruth<DecodedFacts>('decoded_facts.json')['example_43455c0.pcap'];
    const { seen, error } = read(sampleBytes('nexmon/example_43455c0.pcap'), () => 4096);
    expect(error).toBeUndefined();
    expect(seen).toHaveLength(facts.packets);
    expect([seen[0]!.sec, seen[0]!.frac]).toEqual(facts.first_ts);
    const long = seen.filter((s) => s.orig === 1088).map((s) => s.index);
    expect(long).toEqual(facts.skipped_indices);
    expect(seen.filter((s) => s.orig === 1084)).toHaveLength(facts.csi_packets_orig_len_1084);
    expect(seen.every((s) => s.data.length === s.orig)).toBe(true);
    expect(seen.every((s) => udpPayloadOffset(1, Uint8Array.from(s.data)) === 42)).toBe(true);
  });
});
