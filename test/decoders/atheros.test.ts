import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { AtherosDecoder, atherosCsiLen, decodeAtheros, wifiChannelFromMhz } from '../../src/decoders/atheros.js';
import { ATHEROS_SUBCARRIERS_20, ATHEROS_SUBCARRIERS_40, sequentialIndices } from '../../src/decoders/subcarriers.js';
import { concat, csiSums, decodeChunked, expectChunkingInvariant, expectCuts, expectGarbageSafe, mulberry32 } from '../helpers/decoding.js';
import { type DecodedFacts, describeWithSamples, groundTruth, sampleBytes } from '../helpers/samples.js';

const FILE = 'atheros/ath_csi_1.dat';

function at(f: CsiFrame, sc: number, rx: number, tx: number): [number, number] {
  const o = ((sc * f.nRx + rx) * f.nTx + tx) * 2;
  return [f.csi[o]!, f.csi[o + 1]!];
}

/** Splits a little-endian, flag-less log into its records (test-side, independent of the decoder). */
function splitLittle(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let pos = 0; pos + 2 <= bytes.length;) {
    const total = 2 + (bytes[pos]! | (bytes[pos + 1]! << 8));
    out.push(bytes.subarray(pos, pos + total));
    pos += total;
  }
  return out;
}

/** Re-encodes one little-endian record with big-endian header fields; CSI and payload stay as they are. */
function toBigEndian(rec: Uint8Array): Uint8Array {
  const out = rec.slice();
  const flip = (off: number, n: number) => {
    for (let i = 0; i < n; i++) out[off + i] = rec[off + n - 1 - i]!;
  };
  flip(0, 2); // field_len
  flip(2, 8); // timestamp
  flip(10, 2); // csi_len
  flip(12, 2); // channel
  flip(25, 2); // payload_len
  return out;
}

interface SyntheticAth {
  tones: number;
  nr: number;
  nc: number;
  bandwidth: number;
  channelMhz: number;
  timestamp: bigint;
  /** values[(tone*nr + r)*nc + c] = [re, im] */
  values: [number, number][];
  payload: Uint8Array;
  little: boolean;
}

/** An independent encoder: 10-bit two's complement values written bit by bit, LSB first, imag before real. */
function encodeAth(s: SyntheticAth): Uint8Array {
  const csiLen = Math.ceil((s.tones * s.nr * s.nc * 20) / 8);
  const csi = new Uint8Array(csiLen);
  let bit = 0;
  const put = (v: number) => {
    for (let i = 0; i < 10; i++) {
      if ((v >> i) & 1) csi[(bit + i) >> 3]! |= 1 << ((bit + i) & 7);
    }
    bit += 10;
  };
  for (let t = 0; t < s.tones; t++) {
    for (let c = 0; c < s.nc; c++) {
      for (let r = 0; r < s.nr; r++) {
        const [vr, vi] = s.values[(t * s.nr + r) * s.nc + c]!;
        put(vi & 0x3ff);
        put(vr & 0x3ff);
      }
    }
  }
  const rec = new Uint8Array(2 + 25 + csiLen + s.payload.length);
  const dv = new DataView(rec.buffer);
  dv.setUint16(0, 25 + csiLen + s.payload.length, s.little);
  dv.setBigUint64(2, s.timestamp, s.little);
  dv.setUint16(10, csiLen, s.little);
  dv.setUint16(12, s.channelMhz, s.little);
  rec.set([0, 160, 0x8f, s.bandwidth, s.tones, s.nr, s.nc, 40, 41, 42, 43], 14);
  dv.setUint16(25, s.payload.length, s.little);
  rec.set(csi, 27);
  rec.set(s.payload, 27 + csiLen);
  return rec;
}

function randomValues(rand: () => number, n: number): [number, number][] {
  return Array.from({ length: n }, () => [Math.floor(rand() * 1024) - 512, Math.floor(rand() * 1024) - 512]);
}

describe('Atheros tables and helpers', () => {
  it('has 56 HT20 and 114 HT40 tones without DC', () => {
    expect(Array.from(ATHEROS_SUBCARRIERS_20)).toEqual([...Array.from({ length: 28 }, (_, i) => i - 28), ...Array.from({ length: 28 }, (_, i) => i + 1)]);
    expect(Array.from(ATHEROS_SUBCARRIERS_40)).toEqual([...Array.from({ length: 57 }, (_, i) => i - 58), ...Array.from({ length: 57 }, (_, i) => i + 2)]);
  });

  it('maps centre frequencies to channel numbers', () => {
    expect([2412, 2437, 2472, 2484, 5180, 5825, 4920].map(wifiChannelFromMhz)).toEqual([1, 6, 13, 14, 36, 165, 184]);
    expect(wifiChannelFromMhz(0)).toBeNaN();
    expect(wifiChannelFromMhz(2438)).toBeNaN();
  });

  it('computes csi_len as ceil(tones*nr*nc*20/8)', () => {
    expect(atherosCsiLen(56, 3, 2)).toBe(840);
    expect(atherosCsiLen(114, 3, 3)).toBe(2565);
    expect(atherosCsiLen(1, 1, 1)).toBe(3);
  });
});

describe('AtherosDecoder on synthetic records', () => {
  const rand = mulberry32(9300);

  for (const little of [true, false]) {
    it(`decodes a 114-tone HT40 record at 5180 MHz (${little ? 'little' : 'big'}-endian)`, () => {
      const values = randomValues(rand, 114 * 2);
      values[0] = [-512, 511];
      values[1] = [-1, 0];
      const payload = Uint8Array.from({ length: 20 }, (_, i) => 0xa0 + i);
      const rec = encodeAth({
        tones: 114,
        nr: 1,
        nc: 2,
        bandwidth: 1,
        channelMhz: 5180,
        timestamp: 0x1_2345_6789n,
        values,
        payload,
        little,
      });
      const { frames, stats, error } = decodeAtheros(rec);
      expect(error).toBeUndefined();
      expect(stats).toEqual({ records: 1, skipped: 0, bytes: rec.length });
      const f = frames[0]!;
      expect([f.nSub, f.nRx, f.nTx, f.channel, f.bandwidthMhz]).toEqual([114, 1, 2, 36, 40]);
      expect(f.subcarriers).toBe(ATHEROS_SUBCARRIERS_40);
      expect(f.deviceTime).toBe(0x123456789);
      expect(f.clockUs).toBe(0x123456789);
      expect(f.rssi).toEqual([41]);
      expect(f.meta).toMatchObject({
        endian: little ? 'little' : 'big',
        csi_len: 570,
        channel_mhz: 5180,
        noise_floor: 160,
        rate: 0x8f,
        rssi: 40,
        rssi1: 41,
        rssi2: 42,
        rssi3: 43,
        payload_len: 20,
        payload_hex_head: 'a0a1a2a3a4a5a6a7a8a9aaabacadaeaf',
      });
      expect(Array.from(f.csi)).toEqual(values.flat());
    });
  }

  it('uses a sequential table for an unusual tone count', () => {
    const values = randomValues(rand, 3);
    const rec = encodeAth({
      tones: 3,
      nr: 1,
      nc: 1,
      bandwidth: 0,
      channelMhz: 2412,
      timestamp: 5n,
      values,
      payload: new Uint8Array(4),
      little: true,
    });
    const f = decodeAtheros(rec).frames[0]!;
    expect(f.subcarriers).toBe(sequentialIndices(3));
    expect(f.meta!.payload_hex_head).toBe('00000000');
    expect(Array.from(f.csi)).toEqual(values.flat());
  });

  it('never throws from push on seeded garbage, and end throws only DecodeError', () => {
    expectGarbageSafe({
      seed: 0xa7e0,
      trials: 200,
      maxLen: 6000,
      maxChunk: 500,
      decoder: (trial) => new AtherosDecoder({ endian: (['auto', 'little', 'big'] as const)[trial % 3]! }),
    });
  });

  it('finds a valid record hidden after garbage, and reports a huge length as a DecodeError', () => {
    const values = randomValues(rand, 56);
    const rec = encodeAth({
      tones: 56,
      nr: 1,
      nc: 1,
      bandwidth: 0,
      channelMhz: 2437,
      timestamp: 77n,
      values,
      payload: new Uint8Array(0),
      little: true,
    });
    const junk = Uint8Array.from({ length: 300 }, (_, i) => (i * 73 + 11) & 0xff);
    const got = decodeAtheros(concat(rec, junk, rec));
    expect(got.frames).toHaveLength(2);
    expect(got.stats.skipped).toBe(1);
    expect(got.frames[1]!.meta!.file_offset).toBe(rec.length + junk.length);
    expect(got.frames[1]!.csi).toEqual(got.frames[0]!.csi);
    expect(got.error).toBeUndefined();

    const huge = rec.slice(0, 60);
    new DataView(huge.buffer).setUint16(0, 65535, true);
    new DataView(huge.buffer).setUint16(27 - 2, 65535 - 25 - 140, true);
    const bad = decodeAtheros(concat(rec, huge));
    expect(bad.frames).toHaveLength(1);
    expect(bad.error).toBeInstanceOf(DecodeError);
    expect(bad.error!.offset).toBe(rec.length);
  });

  it('decodes empty input to nothing and a few bytes as a truncated record', () => {
    expect(decodeAtheros(new Uint8Array(0))).toEqual({ frames: [], stats: { records: 0, skipped: 0, bytes: 0 } });
    for (const n of [1, 2, 10, 27]) {
      const got = decodeAtheros(new Uint8Array(n).fill(0x30));
      expect(got.frames).toHaveLength(0);
      expect(got.error).toBeInstanceOf(DecodeError);
    }
  });
});

describeWithSamples('AtherosDecoder on ath_csi_1.dat', () => {
  const bytes = sampleBytes(FILE);
  const facts = groundTruth<DecodedFacts>('decoded_facts.json')['ath_csi_1.dat'];
  const whole = decodeAtheros(bytes);
  const frames = whole.frames;

  it('reads all 401 records to the end of the file, little-endian', () => {
    expect(whole.error).toBeUndefined();
    expect(whole.stats).toEqual({ records: 401, skipped: 0, bytes: bytes.length });
    expect(facts.records).toBe(401);
    expect(frames.every((f) => f.meta!.endian === 'little')).toBe(true);
    expect(frames.map((f) => f.seq)).toEqual(Array.from({ length: 401 }, (_, i) => i));
    // Records follow each other exactly and the last one ends at EOF.
    let off = 0;
    for (const f of frames) {
      const m = f.meta!;
      expect(m.file_offset).toBe(off);
      expect(m.csi_len).toBe(atherosCsiLen(f.nSub, f.nRx, f.nTx));
      expect(f.csi.length).toBe(f.nSub * f.nRx * f.nTx * 2);
      off += 2 + 25 + (m.csi_len as number) + (m.payload_len as number);
    }
    expect(off).toBe(bytes.length);
  });

  it('matches the first record facts', () => {
    const f = frames[0]!;
    const first = facts.first;
    expect(f.meta).toMatchObject({
      timestamp: first.timestamp,
      csi_len: first.csi_len,
      channel_mhz: first.channel,
      err_info: first.err_info,
      noise_floor: first.noise_floor,
      rate: first.rate,
      bandwidth: first.bandwidth,
      num_tones: first.num_tones,
      nr: first.nr,
      nc: first.nc,
      rssi: first.rssi,
      rssi1: first.rssi1,
      rssi2: first.rssi2,
      rssi3: first.rssi3,
      payload_len: first.payload_len,
      file_offset: 0,
      payload_hex_head: facts.first_payload_first16_hex,
    });
    expect(2 + 25 + first.csi_len + first.payload_len).toBe(first.field_len + 2);
    expect(f.meta!.payload_hex_head).toBe('88012c0004f0211ec9d904f0212c7937');
    expect([f.format, f.sourceId, f.environmentId, f.index, f.time]).toEqual(['atheros', 'unknown', 'default', 0, 0]);
    expect(f.deviceTime).toBe(1461024888);
    expect(f.clockUs).toBe(1461024888);
    expect([f.channel, f.bandwidthMhz, f.nSub, f.nRx, f.nTx, f.noise]).toEqual([6, 20, 56, 3, 2, 0]);
    expect(f.rssi).toEqual([38, 52, 36]);
    expect(f.subcarriers).toBe(ATHEROS_SUBCARRIERS_20);
    // csi[nr0][nc0][tone0..2] and csi[tone0][nc0][nr0..2]
    expect([0, 1, 2].map((t) => at(f, t, 0, 0))).toEqual(facts.first_csi_nr0_nc0_tone0_2);
    expect([0, 1, 2].map((r) => at(f, 0, r, 0))).toEqual(facts.first_csi_tone0_nc0_nr0_2);
    expect(at(f, 0, 1, 0)).toEqual([-33, 103]);
  });

  it('matches the last timestamp and the checksums', () => {
    expect(frames[400]!.deviceTime).toBe(facts.last_timestamp);
    expect(frames[400]!.meta!.timestamp).toBe(1461896418);
    const [sr, si, n] = csiSums(frames);
    expect([sr, si, n]).toEqual([-71521, -206143, 134736]);
    expect([sr, si, n]).toEqual([facts.sum_real_all, facts.sum_imag_all, facts.n_complex_all]);
  });

  it('decodes the same file with endian forced to little', () => {
    expect(decodeAtheros(bytes, { endian: 'little' }).frames).toEqual(frames);
  });

  const records = splitLittle(bytes);
  const sameContent = (got: CsiFrame[], endian: string, shift: number) => {
    expect(got).toHaveLength(401);
    got.forEach((f, i) => {
      const want = frames[i]!;
      expect(f.csi).toEqual(want.csi);
      expect({ ...f.meta, endian: 'x', file_offset: 0 }).toEqual({ ...want.meta, endian: 'x', file_offset: 0 });
      expect(f.meta!.endian).toBe(endian);
      expect(f.meta!.file_offset).toBe((want.meta!.file_offset as number) + shift);
      expect([f.deviceTime, f.channel, f.rssi, f.seq]).toEqual([want.deviceTime, want.channel, want.rssi, want.seq]);
    });
  };

  it('detects a big-endian file with a leading 0xFF flag byte and decodes identical CSI', () => {
    expect(records).toHaveLength(401);
    const big = concat(Uint8Array.of(0xff), ...records.map(toBigEndian));
    expect(big.length).toBe(bytes.length + 1);
    const got = decodeAtheros(big);
    expect(got.error).toBeUndefined();
    expect(got.stats).toEqual({ records: 401, skipped: 0, bytes: big.length });
    sameContent(got.frames, 'big', 1);
    sameContent(decodeAtheros(big, { endian: 'big' }).frames, 'big', 1);
    sameContent(decodeChunked(new AtherosDecoder(), big, () => 13).frames, 'big', 1);
  });

  it('detects a big-endian file without a flag byte (HEAD read_log_file.m layout)', () => {
    const big = concat(...records.map(toBigEndian));
    const got = decodeAtheros(big);
    expect(got.stats).toEqual({ records: 401, skipped: 0, bytes: big.length });
    sameContent(got.frames, 'big', 0);
  });

  it('settles the byte order on the first valid header when the first record is damaged', () => {
    const bigRecords = records.map(toBigEndian);
    const first = bigRecords[0]!.slice();
    first[2 + 9] ^= 0x01; // big-endian csi_len 840 -> 841: lengths disagree in both orders
    for (const lead of [new Uint8Array(0), Uint8Array.of(0xff)]) {
      const big = concat(lead, first, ...bigRecords.slice(1));
      const got = decodeAtheros(big);
      expect(got.error).toBeUndefined();
      expect(got.stats).toEqual({ records: 400, skipped: 1, bytes: big.length });
      expect(got.frames.every((f) => f.meta!.endian === 'big')).toBe(true);
      expect(got.frames.map((f) => f.csi)).toEqual(frames.slice(1).map((f) => f.csi));
      expect(got.frames[0]!.meta!.file_offset).toBe(lead.length + first.length);
    }
  });

  it('detects a little-endian file with a leading 0x00 flag byte', () => {
    const flagged = concat(Uint8Array.of(0x00), bytes);
    const got = decodeAtheros(flagged);
    expect(got.stats).toEqual({ records: 401, skipped: 0, bytes: flagged.length });
    sameContent(got.frames, 'little', 1);
    sameContent(decodeChunked(new AtherosDecoder(), flagged, () => 1).frames, 'little', 1);
  });

  it('gives the same frames whatever the chunk sizes', () => {
    expectChunkingInvariant(() => new AtherosDecoder(), bytes, whole, 7, 5000);
  });

  it('returns the records before a cut and a DecodeError naming the cut record', () => {
    expectCuts(
      decodeAtheros,
      bytes,
      frames,
      // Every 97th byte through the first 12 records, then coarser steps over the whole file.
      (starts) => [
        ...Array.from({ length: Math.ceil(starts[12]! / 97) }, (_, i) => i * 97 + 1),
        ...Array.from({ length: 76 }, (_, i) => (i + 1) * 9973),
        ...starts.slice(1, 20),
      ],
      (got, complete) => {
        expect(got).toHaveLength(complete);
        if (complete > 0) expect(got[complete - 1]).toEqual(frames[complete - 1]);
      },
    );
  });

  it('skips a record whose csi_len disagrees with field_len and resynchronises on the next', () => {
    const copy = bytes.slice();
    const off = frames[5]!.meta!.file_offset as number;
    copy[off + 2 + 8] ^= 0x01; // csi_len 840 -> 841
    const got = decodeAtheros(copy);
    expect(got.error).toBeUndefined();
    expect(got.stats).toEqual({ records: 400, skipped: 1, bytes: bytes.length });
    expect(got.frames.map((f) => f.meta!.file_offset)).toEqual(frames.filter((_, i) => i !== 5).map((f) => f.meta!.file_offset));
    expect(got.frames[5]!.csi).toEqual(frames[6]!.csi);
  });

  it('skips whole a record with consistent lengths but an impossible shape', () => {
    const copy = bytes.slice();
    copy[(frames[7]!.meta!.file_offset as number) + 2 + 17] = 4; // nr = 4
    const got = decodeAtheros(copy);
    expect(got.stats).toEqual({ records: 400, skipped: 1, bytes: bytes.length });
    expect(got.frames[7]!.csi).toEqual(frames[8]!.csi);
  });

  it('skips and counts a record without CSI', () => {
    const noCsi = new Uint8Array(2 + 25 + 30);
    const dv = new DataView(noCsi.buffer);
    dv.setUint16(0, 25 + 30, true);
    dv.setBigUint64(2, 1461024900n, true);
    dv.setUint16(10, 0, true); // csi_len 0
    dv.setUint16(12, 2437, true);
    noCsi.set([0, 0, 0x8f, 0, 56, 3, 2, 52, 38, 52, 36], 14);
    dv.setUint16(25, 30, true);
    const at3 = frames[3]!.meta!.file_offset as number;
    const spliced = concat(bytes.subarray(0, at3), noCsi, bytes.subarray(at3));
    const got = decodeAtheros(spliced);
    expect(got.error).toBeUndefined();
    expect(got.stats).toEqual({ records: 401, skipped: 1, bytes: spliced.length });
    expect(got.frames[3]!.meta!.file_offset).toBe(at3 + noCsi.length);
    expect(got.frames.map((f) => f.csi)).toEqual(frames.map((f) => f.csi));
  });

  it('never throws when the byte order is forced wrong', () => {
    const dec = new AtherosDecoder({ endian: 'big' });
    let n = 0;
    expect(() => dec.push(bytes, () => n++)).not.toThrow();
    try {
      dec.end(() => n++);
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError);
    }
    expect(n).toBeLessThan(401);
    expect(dec.stats.skipped).toBeGreaterThan(0);
  });
});
