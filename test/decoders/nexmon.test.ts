import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DecodeError, decodeAll } from '../../src/csi/decoder.js';
import {
  NEXMON_CHIPS,
  NexmonPcapDecoder,
  NexmonUdpDecoder,
  chanspecBandwidthMhz,
  decodeNexmon,
  decodeNexmonPayload,
  unpackFloatAcphy,
} from '../../src/decoders/nexmon.js';
import { PcapReader, udpPayloadOffset } from '../../src/decoders/pcap.js';
import { fftBinIndices } from '../../src/decoders/subcarriers.js';
import { csiSums, mulberry32 } from '../helpers/decoding.js';
import { type DecodedFacts, describeWithSamples, groundTruth, sampleBytes } from '../helpers/samples.js';

const FILE = 'nexmon/example_43455c0.pcap';

function collect(dec: { push(c: Uint8Array, e: (f: CsiFrame) => void): void; end(e: (f: CsiFrame) => void): void }, chunks: Iterable<Uint8Array>): CsiFrame[] {
  const frames: CsiFrame[] = [];
  const emit = (f: CsiFrame) => frames.push(f);
  for (const c of chunks) dec.push(c, emit);
  dec.end(emit);
  return frames;
}

function* fixedChunks(b: Uint8Array, size: number): Generator<Uint8Array> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

function* randomChunks(b: Uint8Array, seed: number, max: number): Generator<Uint8Array> {
  const rnd = mulberry32(seed);
  for (let i = 0; i < b.length;) {
    const n = 1 + Math.floor(rnd() * max);
    yield b.subarray(i, i + n);
    i += n;
  }
}

/** Everything observable about a frame, as a comparable string (NaN-safe). */
function digest(f: CsiFrame): string {
  return JSON.stringify({
    ...f,
    subcarriers: Array.from(f.subcarriers),
    csi: Buffer.from(f.csi.buffer, f.csi.byteOffset, f.csi.byteLength).toString('base64'),
    deviceTime: String(f.deviceTime),
    clockUs: String(f.clockUs),
    rssi: f.rssi.map(String),
  });
}

// ---- building captures -------------------------------------------------------------------

interface PayloadSpec {
  oldMagic?: boolean;
  rssi?: number;
  fc?: number;
  mac?: number[];
  seqCnt?: number;
  csiconf?: number;
  chanspec: number;
  chip: number;
  words: Uint32Array;
}

function nexmonPayload(s: PayloadSpec): Uint8Array {
  const b = new Uint8Array(18 + s.words.length * 4);
  const v = new DataView(b.buffer);
  if (s.oldMagic) v.setUint32(0, 0x11111111, true);
  else {
    v.setUint16(0, 0x1111, true);
    v.setInt8(2, s.rssi ?? -60);
    v.setUint8(3, s.fc ?? 0x88);
  }
  (s.mac ?? [0x02, 0x11, 0x22, 0x33, 0x44, 0x55]).forEach((x, i) => v.setUint8(4 + i, x));
  v.setUint16(10, s.seqCnt ?? 0x1230, true);
  v.setUint16(12, s.csiconf ?? 0, true);
  v.setUint16(14, s.chanspec, true);
  v.setUint16(16, s.chip, true);
  s.words.forEach((w, i) => v.setUint32(18 + 4 * i, w, true));
  return b;
}

/** Ethernet + IPv4 (ihl words, optional 802.1Q tag) + UDP around a payload, plus trailer bytes. */
function ethernetFrame(payload: Uint8Array, opts: { ihl?: number; vlan?: boolean; trailer?: number } = {}): Uint8Array {
  const ihl = opts.ihl ?? 5;
  const eth = opts.vlan ? 18 : 14;
  const ipLen = ihl * 4 + 8 + payload.length;
  const b = new Uint8Array(eth + ipLen + (opts.trailer ?? 0));
  const v = new DataView(b.buffer);
  b.fill(0xff, 0, 6);
  b.set([0x4e, 0x45, 0x58, 0x4d, 0x4f, 0x4e], 6);
  if (opts.vlan) {
    v.setUint16(12, 0x8100);
    v.setUint16(14, 7);
  }
  v.setUint16(eth - 2, 0x0800);
  const ip = eth;
  v.setUint8(ip, 0x40 | ihl);
  v.setUint16(ip + 2, ipLen);
  v.setUint8(ip + 8, 1);
  v.setUint8(ip + 9, 17);
  b.set([10, 10, 10, 10, 255, 255, 255, 255], ip + 12);
  const udp = ip + ihl * 4;
  v.setUint16(udp, 5500);
  v.setUint16(udp + 2, 5500);
  v.setUint16(udp + 4, 8 + payload.length);
  b.set(payload, udp + 8);
  return b;
}

/** A little-endian microsecond pcap. */
function pcap(linktype: number, packets: Uint8Array[], t0 = 1_700_000_000): Uint8Array {
  const total = 24 + packets.reduce((s, p) => s + 16 + p.length, 0);
  const b = new Uint8Array(total);
  const v = new DataView(b.buffer);
  v.setUint32(0, 0xa1b2c3d4, true);
  v.setUint16(4, 2, true);
  v.setUint16(6, 4, true);
  v.setUint32(16, 65535, true);
  v.setUint32(20, linktype, true);
  let o = 24;
  packets.forEach((p, i) => {
    v.setUint32(o, t0 + i, true);
    v.setUint32(o + 4, 250_000 * (i % 4), true);
    v.setUint32(o + 8, p.length, true);
    v.setUint32(o + 12, p.length, true);
    b.set(p, o + 16);
    o += 16 + p.length;
  });
  return b;
}

/** Independent packer for the acphy packed-float word, written from SOURCES.md's bit layout. */
function packFloat(re: number, im: number, e: number, nman: number, nexp: number): number {
  const mag = (1 << (nman - 1)) - 1;
  let w = e & ((1 << nexp) - 1);
  w += (Math.abs(im) & mag) * 2 ** nexp;
  if (im < 0) w += 2 ** (nexp + nman - 1);
  w += (Math.abs(re) & mag) * 2 ** (nexp + nman);
  if (re < 0) w += 2 ** (nexp + 2 * nman - 1);
  return w;
}

/**
 * Reference for autoscaled unpacking in floating point: value = m * 2^(e + shft), truncated
 * toward zero, 0 when e + shft < -nman, shft = 10 - max(e + floor(log2(|re| | |im|))).
 */
function referenceUnpack(vals: Array<[number, number, number]>, nman: number): number[] {
  let maxbit = -Infinity;
  for (const [re, im, e] of vals) {
    const x = Math.abs(re) | Math.abs(im);
    if (x) maxbit = Math.max(maxbit, e + Math.floor(Math.log2(x)));
  }
  const shft = 10 - maxbit;
  const out: number[] = [];
  for (const [re, im, e] of vals) {
    for (const m of [re, im]) {
      const s = e + shft;
      out.push(s < -nman ? 0 : Math.trunc(m * 2 ** s) + 0);
    }
  }
  return out;
}

const CS_20 = 0x1006; // 2.4 GHz, 20 MHz, channel 6
const CS_80 = 0xe02a; // 5 GHz, 80 MHz, channel 42

// ---- the real capture -----------------------------------------------------------------------

describeWithSamples('Nexmon pcap: example_43455c0.pcap', () => {
  const bytes = sampleBytes(FILE);
  const facts = groundTruth<DecodedFacts>('decoded_facts.json')['example_43455c0.pcap'];
  const dec = new NexmonPcapDecoder({ sourceId: 'example', environmentId: 'lab' });
  const frames = collect(dec, [bytes]);

  it('reads the global header and every packet', () => {
    const h = dec.pcapHeader!;
    expect(h.magic.toString(16)).toBe(facts.pcap_global_header.magic.slice(2));
    expect(`${h.versionMajor}.${h.versionMinor}`).toBe(facts.pcap_global_header.version);
    expect(h.snaplen).toBe(facts.pcap_global_header.snaplen);
    expect(h.linktype).toBe(facts.pcap_global_header.linktype);
    expect(dec.packets).toBe(facts.packets);
    expect(dec.stats.bytes).toBe(facts.bytes);
  });

  it('keeps 548 CSI frames and skips exactly the 18 wrong-size packets csireader.m skips', () => {
    expect(frames).toHaveLength(facts.csi_packets_orig_len_1084);
    expect(dec.stats.records).toBe(548);
    expect(dec.stats.skipped).toBe(facts.skipped_other_size);
    expect(dec.skippedPackets).toEqual(facts.skipped_indices);
    expect(dec.skipReasons.size).toBe(18);
    const kept = frames.map((f) => f.meta!.packet_index as number);
    const expectedKept = Array.from({ length: 566 }, (_, i) => i).filter((i) => !facts.skipped_indices.includes(i));
    expect(kept).toEqual(expectedKept);
    expect(frames.map((f) => f.index)).toEqual(Array.from({ length: 548 }, (_, i) => i));
  });

  it('decodes the first packet header and timestamp', () => {
    const f = frames[0]!;
    const h = facts.first_header;
    const [sec, usec] = facts.first_ts as [number, number];
    expect(f.format).toBe('nexmon');
    expect(f.sourceId).toBe('example');
    expect(f.environmentId).toBe('lab');
    expect(f.deviceTime).toBe(sec + usec / 1e6);
    expect(f.clockUs).toBe(sec * 1e6 + usec);
    expect(f.time).toBe(sec * 1000 + usec / 1000);
    expect(f.rssi).toEqual([h.rssi]);
    expect(f.seq).toBe(h.seq);
    expect(f.noise).toBeNaN();
    expect(f.channel).toBe(42);
    expect(f.bandwidthMhz).toBe(80);
    expect([f.nRx, f.nTx, f.nSub]).toEqual([1, 1, 256]);
    expect(f.subcarriers).toBe(fftBinIndices(256));
    expect(f.meta).toMatchObject({
      magic: '0x' + h.magic,
      fc: h.fctl,
      mac: h.src_mac,
      seq_cnt: 0,
      core: h.core,
      stream: h.stream,
      chanspec: h.chanspec,
      nfft: 256,
      encoding: 'int16',
      chip_name: '43455c0',
      packet_index: 0,
      file_offset: 24,
    });
    expect(parseInt(f.meta!.chip as string, 16)).toBe(parseInt(h.chip, 16));
  });

  it('decodes the first CSI values', () => {
    const f = frames[0]!;
    const first3 = [0, 1, 2].map((i) => [f.csi[2 * i], f.csi[2 * i + 1]]);
    expect(first3).toEqual(facts.first_3_csi);
  });

  it('matches the rssi histogram and the checksums over all kept values', () => {
    const hist = new Map<number, number>();
    for (const f of frames) hist.set(f.rssi[0]!, (hist.get(f.rssi[0]!) ?? 0) + 1);
    expect(Object.fromEntries(hist)).toEqual({ '-58': 294, '-59': 254 });
    const [sr, si] = csiSums(frames);
    expect(sr).toBe(facts.sum_real_all);
    expect(si).toBe(facts.sum_imag_all);
  });

  it('decodeNexmon is decodeAll over the pcap decoder', () => {
    const r = decodeNexmon(bytes);
    expect(r.error).toBeUndefined();
    expect(r.stats).toEqual({ records: 548, skipped: 18, bytes: bytes.length });
    expect(r.frames.map(digest)).toEqual(collect(new NexmonPcapDecoder(), [bytes]).map(digest));
  });

  it('gives identical frames whatever the chunking', () => {
    const whole = collect(new NexmonPcapDecoder(), [bytes]).map(digest);
    expect(collect(new NexmonPcapDecoder(), fixedChunks(bytes, 1)).map(digest)).toEqual(whole);
    expect(collect(new NexmonPcapDecoder(), fixedChunks(bytes, 13)).map(digest)).toEqual(whole);
    for (const seed of [1, 2, 3]) {
      expect(collect(new NexmonPcapDecoder(), randomChunks(bytes, seed, 3000)).map(digest)).toEqual(whole);
    }
  });

  it('the UDP decoder fed each datagram gives the same CSI as the pcap decoder', () => {
    // What a UDP socket would have received: the datagram as the UDP length field bounds it.
    const datagrams: Uint8Array[] = [];
    const captured: Uint8Array[] = [];
    const reader = new PcapReader((pkt) => {
      const off = udpPayloadOffset(1, pkt);
      const udpLen = (pkt[off - 4]! << 8) | pkt[off - 3]!;
      datagrams.push(pkt.slice(off, off - 8 + udpLen));
      captured.push(pkt.slice(off));
    });
    reader.push(bytes);
    reader.end();
    expect(datagrams).toHaveLength(566);

    const udp = new NexmonUdpDecoder({ sourceId: 'example', environmentId: 'lab' });
    const udpFrames = collect(udp, datagrams);
    // A socket never sees Ethernet trailer bytes, so all 566 datagrams are exact.
    expect(udpFrames).toHaveLength(566);
    expect(udp.stats).toEqual({ records: 566, skipped: 0, bytes: 566 * 1042 });
    for (const f of frames) {
      const u = udpFrames[f.meta!.packet_index as number]!;
      expect(u.csi).toEqual(f.csi);
      expect([u.seq, u.rssi, u.channel, u.bandwidthMhz, u.nSub]).toEqual([f.seq, f.rssi, f.channel, f.bandwidthMhz, f.nSub]);
      const { file_offset: _drop, ...rest } = f.meta!;
      expect(u.meta).toEqual(rest);
      expect(u.time).toBe(0);
      expect(u.deviceTime).toBeNaN();
      expect(u.clockUs).toBeNaN();
    }

    // The captured payloads (trailer included) are skipped exactly as the pcap decoder skips them.
    const udp2 = new NexmonUdpDecoder();
    expect(collect(udp2, captured)).toHaveLength(548);
    expect(udp2.skippedPackets).toEqual(facts.skipped_indices);
  });

  it('survives truncation at many offsets: push never throws, end throws DecodeError at the cut record', () => {
    const full = frames.map(digest);
    const boundaries: number[] = [24];
    new PcapReader((pkt, _s, _u, _o, _i, off) => boundaries.push(off + 16 + pkt.length)).push(bytes);
    const rnd = mulberry32(7);
    const cuts = [0, 1, 23, 24, 25, 39, 40, 41, 1123, 1124, 1125, bytes.length - 1];
    for (let i = 0; i < 150; i++) cuts.push(Math.floor(rnd() * bytes.length));
    for (const cut of cuts) {
      const d = new NexmonPcapDecoder({ sourceId: 'example', environmentId: 'lab' });
      const got: CsiFrame[] = [];
      d.push(bytes.subarray(0, cut), (f) => got.push(f));
      let err: unknown;
      try {
        d.end(() => {});
      } catch (e) {
        err = e;
      }
      expect(got.map(digest)).toEqual(full.slice(0, got.length));
      if (boundaries.includes(cut)) {
        expect(err).toBeUndefined();
      } else {
        expect(err).toBeInstanceOf(DecodeError);
        const recordStart = cut < 24 ? 0 : Math.max(...boundaries.filter((b) => b <= cut));
        expect((err as DecodeError).offset).toBe(recordStart);
      }
    }
  });

  it('survives seeded corruption: push never throws, end throws only DecodeError', () => {
    const rnd = mulberry32(99);
    for (let trial = 0; trial < 40; trial++) {
      const b = bytes.slice(0, 60_000);
      for (let k = 0; k < 20; k++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
      const d = new NexmonPcapDecoder();
      for (const c of randomChunks(b, trial, 5000)) expect(() => d.push(c, () => {})).not.toThrow();
      try {
        d.end(() => {});
      } catch (e) {
        expect(e).toBeInstanceOf(DecodeError);
      }
    }
  });
});

// ---- packed float ---------------------------------------------------------------------------

describe('unpackFloatAcphy (autoscale = 1)', () => {
  function unpack(words: number[], nfft: number, nman: number, nexp: number): number[] {
    const v = new DataView(new ArrayBuffer(nfft * 4));
    words.forEach((w, i) => v.setUint32(i * 4, w, true));
    const out = new Float32Array(2 * nfft);
    unpackFloatAcphy(v, 0, nfft, nman, nexp, out, new Int8Array(nfft));
    return Array.from(out);
  }

  it('4358 (nman 9, nexp 5): hand-derived golden words and values', () => {
    // [re, im, e] -> word (by hand from the bit layout):
    //   (200, -3, -2): e=0b11110, im 3<<5 | sign bit 13, re 200<<14           = 0x0032207e
    //   (-1, 1, 4):    e=4, im 1<<5, re 1<<14 | sign bit 22                   = 0x00404024
    //   (5, 100, -10): e=0b10110, im 100<<5, re 5<<14                         = 0x00014c96
    //   (255, 0, -16): e=0b10000, re 255<<14                                  = 0x003fc010
    //   (-7, 9, -7):   e=0b11001, im 9<<5, re 7<<14 | sign bit 22             = 0x0041c139
    const words = [0x0032207e, 0x00404024, 0x00014c96, 0x003fc010, 0x0041c139];
    expect([
      packFloat(200, -3, -2, 9, 5),
      packFloat(-1, 1, 4, 9, 5),
      packFloat(5, 100, -10, 9, 5),
      packFloat(255, 0, -16, 9, 5),
      packFloat(-7, 9, -7, 9, 5),
    ]).toEqual(words);
    // max(e + floor(log2(re|im))) = max(-2+7, 4+0, -10+6, -16+7, -7+3) = 5, so shft = 10 - 5 = 5:
    //   word 0: shift 3  -> 1600, -24
    //   word 1: shift 9  -> -512, 512
    //   word 2: shift -5 -> 5>>5 = 0, 100>>5 = 3 (3.125 truncated)
    //   word 3: shift -11 < -9 -> 0, 0
    //   word 4: shift -2 -> -(7>>2) = -1 (toward zero, not -2), 9>>2 = 2
    const got = unpack([...words, ...new Array(59).fill(0)], 64, 9, 5);
    expect(got.slice(0, 10)).toEqual([1600, -24, -512, 512, 0, 3, 0, 0, -1, 2]);
    expect(got.slice(10).every((x) => Object.is(x, 0))).toBe(true);
  });

  it('4366c0 (nman 12, nexp 6): hand-derived golden values, including the zero rule', () => {
    // (1, -1, 31): top bit 31+0 = 31 is the maximum, so shft = 10 - 31 = -21.
    //   word 0: shift 10 -> 1024, -1024
    //   word 1 (2047, -1000, 20): shift -1 -> 1023, -500
    //   word 2 (-2047, 3, -12): shift -33 < -12 -> 0, 0. A bare `>> 33` in JS would shift by 1
    //     and give -1023, 1: the zero rule is what makes this right.
    //   word 3 (1500, -7, 19): shift -2 -> 375, -(7>>2) = -1
    const vals: Array<[number, number, number]> = [
      [1, -1, 31],
      [2047, -1000, 20],
      [-2047, 3, -12],
      [1500, -7, 19],
    ];
    const words = vals.map(([re, im, e]) => packFloat(re, im, e, 12, 6));
    expect(words).toEqual([0x0006005f, 0x1ffefa14, 0x3ffc00f4, 0x177201d3]);
    const got = unpack([...words, ...new Array(60).fill(0)], 64, 12, 6);
    expect(got.slice(0, 8)).toEqual([1024, -1024, 1023, -500, 0, 0, 375, -1]);
  });

  it('an all-zero packet unpacks to zeros', () => {
    expect(unpack(new Array(64).fill(0), 64, 9, 5).every((x) => Object.is(x, 0))).toBe(true);
  });

  it('agrees with a floating-point reference of the formula on seeded random words', () => {
    const rnd = mulberry32(2024);
    for (const [nman, nexp] of [
      [9, 5],
      [12, 6],
    ] as const) {
      for (let trial = 0; trial < 50; trial++) {
        const nfft = 64;
        const mmax = (1 << (nman - 1)) - 1;
        const emin = -(1 << (nexp - 1));
        const vals: Array<[number, number, number]> = [];
        for (let i = 0; i < nfft; i++) {
          const sparse = rnd() < 0.1;
          const re = sparse ? 0 : Math.round((rnd() * 2 - 1) * mmax);
          const im = sparse ? 0 : Math.round((rnd() * 2 - 1) * mmax);
          vals.push([re, im, emin + Math.floor(rnd() * (1 << nexp))]);
        }
        const words = vals.map(([re, im, e]) => packFloat(re, im, e, nman, nexp));
        expect(unpack(words, nfft, nman, nexp)).toEqual(referenceUnpack(vals, nman));
      }
    }
  });

  it('recovers packed mantissas exactly when the exponent is shared', () => {
    const rnd = mulberry32(5);
    for (const [nman, nexp] of [
      [9, 5],
      [12, 6],
    ] as const) {
      const mmax = (1 << (nman - 1)) - 1;
      const ms = Array.from({ length: 128 }, () => Math.round((rnd() * 2 - 1) * mmax));
      const e = 3;
      const words = Array.from({ length: 64 }, (_, i) => packFloat(ms[2 * i]!, ms[2 * i + 1]!, e, nman, nexp));
      const top = Math.floor(Math.log2(ms.reduce((a, m) => a | Math.abs(m), 0)));
      const scale = 2 ** (10 - top);
      expect(unpack(words, 64, nman, nexp).map((x) => x / scale)).toEqual(ms.map((m) => m + 0));
    }
  });
});

// ---- payload and capture variants -----------------------------------------------------------

describe('decodeNexmonPayload', () => {
  it('maps chip ids to encodings as the documented table says', () => {
    const byName = (n: string) => NEXMON_CHIPS.filter((c) => c.name === n).map((c) => [c.id, c.encoding, c.nman, c.nexp]);
    expect(byName('43455c0')).toEqual([
      [0x0065, 'int16', undefined, undefined],
      [0xa6dc, 'int16', undefined, undefined],
    ]);
    expect(byName('4339')).toEqual([[0x0001, 'int16', undefined, undefined]]);
    expect(byName('4358')).toEqual([
      [0x0003, 'float', 9, 5],
      [0xdead, 'float', 9, 5],
    ]);
    expect(byName('4366c0')).toEqual([
      [0x006a, 'float', 12, 6],
      [0xe834, 'float', 12, 6],
    ]);
  });

  it('reads chanspec bandwidth bits 11-13', () => {
    expect(chanspecBandwidthMhz(0xe02a)).toBe(80);
    expect(chanspecBandwidthMhz(0x1006)).toBe(20);
    expect(chanspecBandwidthMhz(0xd826)).toBe(40);
    expect(chanspecBandwidthMhz(0xe832)).toBe(160);
    expect(chanspecBandwidthMhz(0xc024)).toBeNaN(); // 5 MHz
  });

  it('decodes 4358 and 4366c0 packed float payloads with the chip defaults', () => {
    const words4358 = new Uint32Array(64);
    words4358.set([0x0032207e, 0x00404024, 0x00014c96, 0x003fc010, 0x0041c139]);
    const f = decodeNexmonPayload(nexmonPayload({ chanspec: CS_20, chip: 0x0003, words: words4358, csiconf: 0b001_010, seqCnt: 0x0a51 }));
    if (typeof f === 'string') throw new Error(f);
    expect(Array.from(f.csi.subarray(0, 10))).toEqual([1600, -24, -512, 512, 0, 3, 0, 0, -1, 2]);
    expect(f.meta).toMatchObject({ encoding: 'float', chip: '0x0003', chip_name: '4358', core: 2, stream: 1, seq_cnt: 0x0a51, nfft: 64 });
    expect(f.seq).toBe(0xa5);
    expect([f.channel, f.bandwidthMhz, f.nSub]).toEqual([6, 20, 64]);
    expect(f.subcarriers).toBe(fftBinIndices(64));

    const words4366 = new Uint32Array(64);
    words4366.set([0x0006005f, 0x1ffefa14, 0x3ffc00f4, 0x177201d3]);
    const g = decodeNexmonPayload(nexmonPayload({ chanspec: CS_20, chip: 0x006a, words: words4366 }));
    if (typeof g === 'string') throw new Error(g);
    expect(Array.from(g.csi.subarray(0, 8))).toEqual([1024, -1024, 1023, -500, 0, 0, 375, -1]);
  });

  it('honours format/nman/nexp overrides and skips unknown chips in auto mode', () => {
    const words = new Uint32Array(64);
    words.set([0x0032207e, 0x00404024]);
    const unknown = nexmonPayload({ chanspec: CS_20, chip: 0x4242, words });
    expect(decodeNexmonPayload(unknown)).toBe('unknown-chip');
    expect(decodeNexmonPayload(unknown, { format: 'float' })).toBe('unknown-chip');
    const asFloat = decodeNexmonPayload(unknown, { format: 'float', nman: 9, nexp: 5 });
    if (typeof asFloat === 'string') throw new Error(asFloat);
    expect(Array.from(asFloat.csi.subarray(0, 4))).toEqual([1600, -24, -512, 512]);
    const asInt = decodeNexmonPayload(unknown, { format: 'int16' });
    if (typeof asInt === 'string') throw new Error(asInt);
    // 0x0032207e: low half 0x207e = 8318 real, high half 0x0032 = 50 imag.
    expect(Array.from(asInt.csi.subarray(0, 2))).toEqual([8318, 50]);
    expect(asInt.meta!.encoding).toBe('int16');
  });

  it('skips wrong magic, unsupported bandwidth and wrong sizes', () => {
    const words = new Uint32Array(64);
    const ok = nexmonPayload({ chanspec: CS_20, chip: 0x0065, words });
    expect(typeof decodeNexmonPayload(ok)).toBe('object');
    const bad = ok.slice();
    bad[0] = 0x12;
    expect(decodeNexmonPayload(bad)).toBe('not-nexmon');
    expect(decodeNexmonPayload(ok.subarray(0, 17))).toBe('not-nexmon');
    expect(decodeNexmonPayload(ok.subarray(0, ok.length - 4))).toBe('size');
    expect(decodeNexmonPayload(nexmonPayload({ chanspec: CS_80, chip: 0x0065, words }))).toBe('size');
    expect(decodeNexmonPayload(nexmonPayload({ chanspec: 0xc024, chip: 0x0065, words }))).toBe('bandwidth');
  });

  it('decodes 160 MHz payloads as NFFT 512', () => {
    const words = new Uint32Array(512).map((_, i) => ((i & 0xffff) << 16) | (i & 0x7fff));
    const f = decodeNexmonPayload(nexmonPayload({ chanspec: 0xe832, chip: 0x0065, words }));
    if (typeof f === 'string') throw new Error(f);
    expect([f.nSub, f.bandwidthMhz, f.channel]).toEqual([512, 160, 50]);
    expect([f.csi[2 * 300], f.csi[2 * 300 + 1]]).toEqual([300, 300]);
    expect(f.subcarriers[256]).toBe(-256);
  });
});

describe('NexmonPcapDecoder on built captures', () => {
  it('reads the old 4-byte magic: rssi NaN, no fc, still decodes the float CSI', () => {
    const words = new Uint32Array(256);
    words.set([0x0032207e, 0x00404024, 0x00014c96, 0x003fc010, 0x0041c139]);
    const payload = nexmonPayload({ oldMagic: true, chanspec: CS_80, chip: 0xdead, words, mac: [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x0f], seqCnt: 0x0010 });
    const r = decodeNexmon(pcap(1, [ethernetFrame(payload)]));
    expect(r.error).toBeUndefined();
    expect(r.frames).toHaveLength(1);
    const f = r.frames[0]!;
    expect(f.rssi).toHaveLength(1);
    expect(f.rssi[0]).toBeNaN();
    expect(f.meta!.magic).toBe('0x11111111');
    expect('fc' in f.meta!).toBe(false);
    expect(f.meta).toMatchObject({ mac: 'aa:bb:cc:dd:ee:0f', chip: '0xdead', chip_name: '4358', encoding: 'float', nfft: 256, seq_cnt: 16 });
    expect(f.seq).toBe(1);
    expect(Array.from(f.csi.subarray(0, 10))).toEqual([1600, -24, -512, 512, 0, 3, 0, 0, -1, 2]);
    expect(f.deviceTime).toBe(1_700_000_000);
  });

  it('uses the real IPv4 header length, walks VLAN tags, and skips trailer-padded frames', () => {
    const words = new Uint32Array(64).map((_, i) => ((-i & 0xffff) << 16) | i);
    const payload = nexmonPayload({ chanspec: CS_20, chip: 0x0065, words });
    const dec = new NexmonPcapDecoder();
    const frames = collect(dec, [
      pcap(1, [ethernetFrame(payload), ethernetFrame(payload, { ihl: 6 }), ethernetFrame(payload, { vlan: true }), ethernetFrame(payload, { trailer: 4 })]),
    ]);
    expect(frames.map((f) => f.meta!.packet_index)).toEqual([0, 1, 2]);
    for (const f of frames) {
      expect(f.csi[2 * 5]).toBe(5);
      expect(f.csi[2 * 5 + 1]).toBe(-5);
    }
    expect(dec.skippedPackets).toEqual([3]);
    expect(dec.skipReasons.size).toBe(1);
    // Time from the pcap records: packet i at t0 + i s + 250 ms * (i % 4).
    expect(frames.map((f) => f.time)).toEqual([1_700_000_000_000, 1_700_000_001_250, 1_700_000_002_500]);
  });

  it('reads raw IPv4 (101, 228) and Linux cooked (113) captures', () => {
    const words = new Uint32Array(64).map((_, i) => i * 3);
    const payload = nexmonPayload({ chanspec: CS_20, chip: 0x0065, words });
    const eth = ethernetFrame(payload);
    const ipOnly = eth.subarray(14);
    const sll = new Uint8Array(16 + ipOnly.length);
    sll[14] = 0x08;
    sll.set(ipOnly, 16);
    const ref = decodeNexmon(pcap(1, [eth])).frames[0]!;
    for (const [lt, pkt] of [
      [101, ipOnly],
      [228, ipOnly],
      [113, sll],
    ] as const) {
      const r = decodeNexmon(pcap(lt, [pkt]));
      expect(r.frames).toHaveLength(1);
      expect(r.frames[0]!.csi).toEqual(ref.csi);
    }
  });

  it('counts non-UDP and non-Nexmon packets as skipped', () => {
    const words = new Uint32Array(64);
    const good = ethernetFrame(nexmonPayload({ chanspec: CS_20, chip: 0x0065, words }));
    const tcp = good.slice();
    tcp[14 + 9] = 6;
    const arp = good.slice();
    arp[12] = 0x08;
    arp[13] = 0x06;
    const other = ethernetFrame(new TextEncoder().encode('hello, not nexmon'));
    const dec = new NexmonPcapDecoder();
    expect(collect(dec, [pcap(1, [tcp, arp, other, good])])).toHaveLength(1);
    expect(dec.skippedPackets).toEqual([0, 1, 2]);
    expect(dec.skipReasons).toMatchObject({ 'not-udp': 2, 'not-nexmon': 1 });
  });

  it('UDP decoder: garbage datagrams never throw and are counted', () => {
    const rnd = mulberry32(3);
    const dec = new NexmonUdpDecoder();
    let frames = 0;
    for (let i = 0; i < 500; i++) {
      const len = Math.floor(rnd() * 1200);
      const d = new Uint8Array(len).map(() => Math.floor(rnd() * 256));
      if (i % 3 === 0 && len >= 2) d.set([0x11, 0x11]);
      expect(() => dec.push(d, () => frames++)).not.toThrow();
    }
    expect(() => dec.end(() => {})).not.toThrow();
    expect(dec.stats.records + dec.stats.skipped).toBe(500);
    expect(frames).toBe(dec.stats.records);
  });

  it('seeded garbage input: push never throws, end throws only DecodeError', () => {
    const rnd = mulberry32(11);
    const header = pcap(1, []);
    for (let trial = 0; trial < 60; trial++) {
      const len = Math.floor(rnd() * 4000);
      const junk = new Uint8Array(len).map(() => Math.floor(rnd() * 256));
      const input = trial % 2 ? junk : new Uint8Array([...header, ...junk]);
      const d = new NexmonPcapDecoder();
      for (const c of randomChunks(input, trial, 300)) expect(() => d.push(c, () => {})).not.toThrow();
      let err: unknown;
      try {
        d.end(() => {});
      } catch (e) {
        err = e;
      }
      if (trial % 2)
        expect(err).toBeInstanceOf(DecodeError); // no valid pcap magic
      else if (err !== undefined) expect(err).toBeInstanceOf(DecodeError);
    }
    const r = decodeAll(new NexmonPcapDecoder(), new Uint8Array(0));
    expect(r.error).toBeInstanceOf(DecodeError);
    expect(r.error!.offset).toBe(0);
  });
});
