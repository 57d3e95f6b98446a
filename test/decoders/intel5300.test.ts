import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { decodeIntel5300, Intel5300Decoder, intel5300PayloadLen, intel5300TotalRss } from '../../src/decoders/intel5300.js';
import { fftBinIndices, INTEL5300_SUBCARRIERS_20, INTEL5300_SUBCARRIERS_40, sequentialIndices } from '../../src/decoders/subcarriers.js';
import { concat, csiSums, decodeChunked, expectChunkingInvariant, expectCuts, expectGarbageSafe, mulberry32 } from '../helpers/decoding.js';
import { type DecodedFacts, describeWithSamples, groundTruth, matlabBfeeRecords, sampleBytes } from '../helpers/samples.js';

const FILE = 'intel5300/log.all_csi.6.7.6';

function re(f: CsiFrame, sc: number, rx: number, tx: number): number {
  return f.csi[((sc * f.nRx + rx) * f.nTx + tx) * 2]!;
}
function im(f: CsiFrame, sc: number, rx: number, tx: number): number {
  return f.csi[((sc * f.nRx + rx) * f.nTx + tx) * 2 + 1]!;
}

interface SyntheticRecord {
  nRx: number;
  nTx: number;
  antennaSel: number;
  rate: number;
  /** values[(sc*nRx + rx)*nTx + tx] = [re, im] in recorded (unpermuted) antenna order. */
  values: [number, number][];
  timestampLow?: number;
  bfeeCount?: number;
  rssi?: [number, number, number];
  noise?: number;
  agc?: number;
}

/**
 * An independent 0xBB encoder: writes each int8 value bit by bit into an LSB-first bit stream,
 * 3 pad bits before each group, as log_to_file/read_bfee.c lay it out.
 */
function encodeBfee(r: SyntheticRecord): Uint8Array {
  const len = Math.floor((30 * (r.nRx * r.nTx * 16 + 3) + 7) / 8);
  const body = new Uint8Array(20 + len);
  const dv = new DataView(body.buffer);
  dv.setUint32(0, r.timestampLow ?? 123456, true);
  dv.setUint16(4, r.bfeeCount ?? 7, true);
  body[8] = r.nRx;
  body[9] = r.nTx;
  const [a, b, c] = r.rssi ?? [30, 31, 32];
  body[10] = a;
  body[11] = b;
  body[12] = c;
  dv.setInt8(13, r.noise ?? -95);
  body[14] = r.agc ?? 40;
  body[15] = r.antennaSel;
  dv.setUint16(16, len, true);
  dv.setUint16(18, r.rate, true);
  const payload = body.subarray(20);
  const writeBits = (at: number, v: number) => {
    for (let i = 0; i < 8; i++) {
      if ((v >> i) & 1) payload[(at + i) >> 3]! |= 1 << ((at + i) & 7);
    }
  };
  let bit = 0;
  let k = 0;
  for (let sc = 0; sc < 30; sc++) {
    bit += 3;
    for (let j = 0; j < r.nRx * r.nTx; j++) {
      const [vr, vi] = r.values[k++]!;
      writeBits(bit, vr & 0xff);
      writeBits(bit + 8, vi & 0xff);
      bit += 16;
    }
  }
  const rec = new Uint8Array(3 + body.length);
  new DataView(rec.buffer).setUint16(0, 1 + body.length, false);
  rec[2] = 0xbb;
  rec.set(body, 3);
  return rec;
}

function randomValues(rand: () => number, n: number): [number, number][] {
  return Array.from({ length: n }, () => [Math.floor(rand() * 256) - 128, Math.floor(rand() * 256) - 128]);
}

describe('subcarrier tables', () => {
  it('Intel 5300 20 MHz is the Ng=2 grouping -28,-26..-2,-1,1,3..27,28', () => {
    expect(Array.from(INTEL5300_SUBCARRIERS_20)).toEqual([
      -28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28,
    ]);
  });

  it('Intel 5300 40 MHz is -58..-2 and 2..58 in steps of 4', () => {
    expect(INTEL5300_SUBCARRIERS_40.length).toBe(30);
    expect(Array.from(INTEL5300_SUBCARRIERS_40.subarray(0, 3))).toEqual([-58, -54, -50]);
    expect(Array.from(INTEL5300_SUBCARRIERS_40.subarray(13, 17))).toEqual([-6, -2, 2, 6]);
    expect(INTEL5300_SUBCARRIERS_40[29]).toBe(58);
  });

  it('fftBinIndices puts DC first and the negative half last, one shared table per size', () => {
    expect(Array.from(fftBinIndices(8))).toEqual([0, 1, 2, 3, -4, -3, -2, -1]);
    const t64 = fftBinIndices(64);
    expect(t64[31]).toBe(31);
    expect(t64[32]).toBe(-32);
    expect(t64[63]).toBe(-1);
    expect(fftBinIndices(64)).toBe(t64);
    expect(fftBinIndices(256)[128]).toBe(-128);
    expect(() => fftBinIndices(0)).toThrow(RangeError);
    expect(() => fftBinIndices(12.5)).toThrow(RangeError);
  });

  it('sequentialIndices is 0..n-1 and shared', () => {
    expect(Array.from(sequentialIndices(4))).toEqual([0, 1, 2, 3]);
    expect(sequentialIndices(4)).toBe(sequentialIndices(4));
  });
});

describe('Intel 5300 helpers', () => {
  it('payload length matches read_bfee.c calc_len', () => {
    expect(intel5300PayloadLen(3, 1)).toBe(192);
    expect(intel5300PayloadLen(3, 2)).toBe(372);
    expect(intel5300PayloadLen(3, 3)).toBe(552);
    expect(intel5300PayloadLen(1, 1)).toBe(72);
  });

  it('total RSS leaves out chains reading 0', () => {
    expect(intel5300TotalRss(30, 0, 0, 10)).toBeCloseTo(30 - 44 - 10, 10);
    expect(intel5300TotalRss(30, 30, 0, 0)).toBeCloseTo(30 + 10 * Math.log10(2) - 44, 10);
    expect(intel5300TotalRss(0, 0, 0, 0)).toBe(-Infinity);
  });
});

describe('Intel5300Decoder on synthetic records', () => {
  const rand = mulberry32(5300);

  it('decodes a 2x2 HT40 record, swapping antennas for perm [2,1]', () => {
    const values = randomValues(rand, 30 * 4);
    // antenna_sel 0b11_00_01: perm = [2, 1, 4]; only perm(1:2) counts for Nrx = 2.
    const rec = encodeBfee({ nRx: 2, nTx: 2, antennaSel: 0b110001, rate: 0x911, values, bfeeCount: 9 });
    const dec = new Intel5300Decoder({ sourceId: 'syn', environmentId: 'lab' });
    const { frames, stats } = decodeIntel5300(rec, { sourceId: 'syn', environmentId: 'lab' });
    expect(stats).toEqual({ records: 1, skipped: 0, bytes: rec.length });
    const f = frames[0]!;
    expect(f.meta?.perm).toEqual([2, 1, 4]);
    expect(f.bandwidthMhz).toBe(40);
    expect(f.subcarriers).toBe(INTEL5300_SUBCARRIERS_40);
    expect([f.sourceId, f.environmentId, f.seq, f.nRx, f.nTx, f.nSub]).toEqual(['syn', 'lab', 9, 2, 2, 30]);
    expect(f.rssi).toEqual([30, 31]);
    expect(f.noise).toBe(-95);
    for (let sc = 0; sc < 30; sc++) {
      for (let rx = 0; rx < 2; rx++) {
        for (let tx = 0; tx < 2; tx++) {
          // Recorded antenna k moves to position perm(k): 0 -> 1, 1 -> 0.
          const [vr, vi] = values[(sc * 2 + (1 - rx)) * 2 + tx]!;
          expect([re(f, sc, rx, tx), im(f, sc, rx, tx)]).toEqual([vr, vi]);
        }
      }
    }
    dec.push(rec, () => undefined);
    expect(dec.permWarnings).toBe(0);
  });

  it('leaves the order unchanged and counts a warning when perm(1:Nrx) is not a permutation', () => {
    const values = randomValues(rand, 30 * 2);
    // perm = [1, 1, 1]: sums to 2 over Nrx = 2, not 3.
    const rec = encodeBfee({ nRx: 2, nTx: 1, antennaSel: 0, rate: 0x100, values });
    const dec = new Intel5300Decoder();
    const frames: CsiFrame[] = [];
    dec.push(rec, (f) => frames.push(f));
    dec.end(() => undefined);
    expect(dec.permWarnings).toBe(1);
    expect(frames[0]!.subcarriers).toBe(INTEL5300_SUBCARRIERS_20);
    expect(Array.from(frames[0]!.csi)).toEqual(values.flat());
  });

  it('refuses perm entries beyond Nrx even when the sum matches ([4,1,1])', () => {
    const values = randomValues(rand, 30 * 3);
    const rec = encodeBfee({ nRx: 3, nTx: 1, antennaSel: 3, rate: 0x100, values });
    const dec = new Intel5300Decoder();
    const frames: CsiFrame[] = [];
    dec.push(rec, (f) => frames.push(f));
    expect(dec.permWarnings).toBe(1);
    expect(frames[0]!.meta?.perm).toEqual([4, 1, 1]);
    expect(Array.from(frames[0]!.csi)).toEqual(values.flat());
  });

  it('replays MATLAB assignment for the degenerate perm [2,2,2] (sum 6 passes the check)', () => {
    const values = randomValues(rand, 30 * 3);
    const rec = encodeBfee({ nRx: 3, nTx: 1, antennaSel: 0b010101, rate: 0x100, values });
    const dec = new Intel5300Decoder();
    const frames: CsiFrame[] = [];
    dec.push(rec, (f) => frames.push(f));
    expect(dec.permWarnings).toBe(0);
    const f = frames[0]!;
    // csi(:,[2 2 2],:) = csi(:,1:3,:): position 2 ends with antenna 3, positions 1 and 3 unchanged.
    for (let sc = 0; sc < 30; sc++) {
      expect(re(f, sc, 0, 0)).toBe(values[sc * 3]![0]);
      expect(re(f, sc, 1, 0)).toBe(values[sc * 3 + 2]![0]);
      expect(im(f, sc, 1, 0)).toBe(values[sc * 3 + 2]![1]);
      expect(re(f, sc, 2, 0)).toBe(values[sc * 3 + 2]![0]);
    }
  });

  it('does not permute a single receive antenna', () => {
    const values = randomValues(rand, 30);
    const rec = encodeBfee({ nRx: 1, nTx: 1, antennaSel: 0b111111, rate: 0x100, values, rssi: [20, 0, 0] });
    const dec = new Intel5300Decoder();
    const frames: CsiFrame[] = [];
    dec.push(rec, (f) => frames.push(f));
    expect(dec.permWarnings).toBe(0);
    expect(frames[0]!.rssi).toEqual([20]);
    expect(Array.from(frames[0]!.csi)).toEqual(values.flat());
  });

  it('skips 0xBB records with bad sizes or antenna counts, and zero field lengths', () => {
    const good = encodeBfee({ nRx: 1, nTx: 2, antennaSel: 0, rate: 0x100, values: randomValues(rand, 60) });
    const badLen = good.slice();
    badLen[3 + 16] ^= 1;
    const badNrx = encodeBfee({ nRx: 1, nTx: 1, antennaSel: 0, rate: 0x100, values: randomValues(rand, 30) });
    badNrx[3 + 8] = 4;
    const badNtx = good.slice();
    badNtx[3 + 9] = 0;
    // Claims a 1x2 payload but the record ends after 50 payload bytes.
    const short = good.slice(0, 3 + 20 + 50);
    new DataView(short.buffer).setUint16(0, short.length - 2, false);
    const tiny = Uint8Array.of(0, 5, 0xbb, 1, 2, 3, 4); // too short even for the header
    const zero = Uint8Array.of(0, 0);
    const input = concat(zero, badLen, good, badNrx, short, tiny, badNtx, zero, good);
    const { frames, stats, error } = decodeIntel5300(input);
    expect(error).toBeUndefined();
    expect(frames).toHaveLength(2);
    expect(stats).toEqual({ records: 2, skipped: 7, bytes: input.length });
    expect(frames[0]!.meta?.file_offset).toBe(2 + badLen.length);
    expect(frames[1]!.csi).toEqual(frames[0]!.csi);
  });

  it('reports a huge length field that the input cannot satisfy as a DecodeError at its offset', () => {
    const good = encodeBfee({ nRx: 1, nTx: 1, antennaSel: 0, rate: 0x100, values: randomValues(rand, 30) });
    const input = concat(good, Uint8Array.of(0xff, 0xff, 0xbb, 1, 2, 3));
    const { frames, error } = decodeIntel5300(input);
    expect(frames).toHaveLength(1);
    expect(error).toBeInstanceOf(DecodeError);
    expect(error!.offset).toBe(good.length);
    expect(error!.message).toContain(`offset ${good.length}`);
  });

  it('decodes empty input to nothing without error, and a lone byte as truncated', () => {
    expect(decodeIntel5300(new Uint8Array(0))).toEqual({ frames: [], stats: { records: 0, skipped: 0, bytes: 0 } });
    const one = decodeIntel5300(Uint8Array.of(0));
    expect(one.error?.offset).toBe(0);
  });

  it('never throws from push on seeded garbage, and end throws only DecodeError', () => {
    expectGarbageSafe({
      seed: 0xbad5300,
      trials: 200,
      maxLen: 4000,
      maxChunk: 300,
      decoder: () => new Intel5300Decoder(),
      // Bias some trials toward believable headers so the deeper paths run too.
      tamper: (bytes, trial, r) => {
        if (trial % 2 === 0 && bytes.length > 3) {
          bytes[0] = 0;
          bytes[1] = Math.floor(r() * 256);
          bytes[2] = 0xbb;
        }
      },
    });
  });
});

describeWithSamples('Intel5300Decoder on log.all_csi.6.7.6', () => {
  const bytes = sampleBytes(FILE);
  const gt = matlabBfeeRecords();
  const facts = groundTruth<DecodedFacts>('decoded_facts.json')['log.all_csi.6.7.6'];
  const whole = decodeIntel5300(bytes);
  const frames = whole.frames;

  it('reads all 29 records to the end of the file', () => {
    expect(gt).toHaveLength(29);
    expect(whole.error).toBeUndefined();
    expect(whole.stats).toEqual({ records: 29, skipped: 0, bytes: 11455 });
    expect(frames.map((f) => f.index)).toEqual(Array.from({ length: 29 }, (_, i) => i));
  });

  it('matches MATLAB read_bf_file header fields for every record', () => {
    frames.forEach((f, i) => {
      const g = gt[i]!;
      const m = f.meta!;
      expect([m.timestamp_low, m.bfee_count, f.nRx, f.nTx]).toEqual([g.timestamp_low, g.bfee_count, g.Nrx, g.Ntx]);
      expect([m.rssi_a, m.rssi_b, m.rssi_c, f.noise, m.agc, m.rate]).toEqual([g.rssi_a, g.rssi_b, g.rssi_c, g.noise, g.agc, g.rate]);
      expect(m.perm).toEqual(g.perm);
      expect(f.seq).toBe(g.bfee_count);
      expect(f.deviceTime).toBe(g.timestamp_low);
      expect(f.clockUs).toBe(g.timestamp_low);
      expect(f.rssi).toEqual([g.rssi_a, g.rssi_b, g.rssi_c].slice(0, g.Nrx));
    });
  });

  it('matches MATLAB read_bf_file CSI (after perm) for every value of every record', () => {
    let compared = 0;
    frames.forEach((f, i) => {
      const g = gt[i]!.csi_sc_rx_tx_reim;
      expect(g).toHaveLength(30);
      const got: number[][][][] = [];
      for (let sc = 0; sc < 30; sc++) {
        const rows: number[][][] = [];
        for (let rx = 0; rx < f.nRx; rx++) {
          const cols: number[][] = [];
          for (let tx = 0; tx < f.nTx; tx++) cols.push([re(f, sc, rx, tx), im(f, sc, rx, tx)]);
          rows.push(cols);
          compared += f.nTx;
        }
        got.push(rows);
      }
      expect(got).toEqual(g);
      expect(f.csi.length).toBe(30 * f.nRx * f.nTx * 2);
    });
    expect(compared).toBe(5220);
  });

  it('has the documented shape counts, first and last record facts', () => {
    const counts: Record<string, number> = {};
    for (const f of frames) counts[`${f.nRx}x${f.nTx}`] = (counts[`${f.nRx}x${f.nTx}`] ?? 0) + 1;
    expect(counts).toEqual({ '3x1': 10, '3x2': 9, '3x3': 10 });
    expect(counts).toEqual(facts.NrxNtx_counts);

    const f0 = frames[0]!;
    const first = facts.first;
    expect(f0.meta).toMatchObject({
      file_offset: 0,
      timestamp_low: 4,
      bfee_count: 72,
      rssi_a: 33,
      rssi_b: 37,
      rssi_c: 41,
      agc: 38,
      antenna_sel: 6,
      perm: [3, 2, 1],
      rate: 0x100,
      len: 192,
    });
    expect(f0.meta).toMatchObject({ antenna_sel: first.antenna_sel, len: first.len, rate: first.rate });
    expect(f0.meta!.total_rss as number).toBeCloseTo(-39.07824, 4);
    expect(Math.abs((f0.meta!.total_rss as number) - facts.first_total_rss_dBm)).toBeLessThan(1e-4);
    expect(f0.noise).toBe(-127);
    expect(f0.rssi).toEqual([33, 37, 41]);
    expect(f0.channel).toBeNaN();
    expect(f0.bandwidthMhz).toBe(20);
    expect(f0.subcarriers).toBe(INTEL5300_SUBCARRIERS_20);
    expect([f0.format, f0.sourceId, f0.environmentId, f0.time, f0.nSub]).toEqual(['intel5300', 'unknown', 'default', 0, 30]);
    // After perm: tx0 rx0 groups 0..2, then group 0 rx0..2.
    expect([0, 1, 2].map((sc) => [re(f0, sc, 0, 0), im(f0, sc, 0, 0)])).toEqual(facts.first_csi_tx0_rx0_sc0_2_after_perm);
    expect([0, 1, 2].map((rx) => [re(f0, 0, rx, 0), im(f0, 0, rx, 0)])).toEqual(facts.first_csi_sc0_tx0_rx0_2_after_perm);

    const last = frames[28]!;
    expect(last.meta).toMatchObject({ file_offset: 10880, bfee_count: 100 });
    expect([last.nRx, last.nTx]).toEqual([3, 3]);
    expect(last.meta).toMatchObject({ file_offset: facts.last.file_offset, bfee_count: facts.last.bfee_count });
    // Each record's offset is the previous one's plus its size.
    for (let i = 1; i < 29; i++) {
      const prev = frames[i - 1]!;
      expect(frames[i]!.meta!.file_offset).toBe((prev.meta!.file_offset as number) + 3 + 20 + intel5300PayloadLen(prev.nRx, prev.nTx));
    }
  });

  it('sums to the documented checksums', () => {
    const [sr, si, n] = csiSums(frames);
    expect([sr, si, n]).toEqual([85, 4469, 5220]);
    expect([sr, si, n]).toEqual([facts.sum_real_all, facts.sum_imag_all, facts.n_complex_all]);
  });

  it('puts the options into every frame', () => {
    const { frames: named } = decodeIntel5300(bytes, { sourceId: 'file:x', environmentId: 'room-2' });
    expect(named.every((f) => f.sourceId === 'file:x' && f.environmentId === 'room-2')).toBe(true);
  });

  it('gives the same frames whatever the chunk sizes', () => {
    expectChunkingInvariant(() => new Intel5300Decoder(), bytes, whole, 42, 700);
  });

  it('returns the records before a cut and a DecodeError naming the cut record', () => {
    expectCuts(
      decodeIntel5300,
      bytes,
      frames,
      (starts) => [...Array.from({ length: Math.ceil(bytes.length / 97) }, (_, i) => i * 97 + 1), ...starts],
      (got, complete) => expect(got).toEqual(frames.slice(0, complete)),
    );
  });

  it('skips and counts a 0xC1 record between 0xBB records', () => {
    const at = frames[10]!.meta!.file_offset as number;
    // 0xC1: fc, dur, addr1-3, seq (24 bytes) and a short frame body.
    const c1Body = new Uint8Array(24 + 10).map((_, i) => (i * 37) & 0xff);
    const c1 = concat(Uint8Array.of(0, 1 + c1Body.length, 0xc1), c1Body);
    const spliced = concat(bytes.subarray(0, at), c1, bytes.subarray(at));
    const got = decodeIntel5300(spliced);
    expect(got.error).toBeUndefined();
    expect(got.stats).toEqual({ records: 29, skipped: 1, bytes: bytes.length + c1.length });
    got.frames.forEach((f, i) => {
      expect(f.csi).toEqual(frames[i]!.csi);
      expect(f.meta!.file_offset).toBe((frames[i]!.meta!.file_offset as number) + (i >= 10 ? c1.length : 0));
    });
    // The same when the 0xC1 record arrives a byte at a time.
    expect(decodeChunked(new Intel5300Decoder(), spliced, () => 1).frames).toEqual(got.frames);
  });

  it('skips a record with a corrupted len and keeps the rest', () => {
    const copy = bytes.slice();
    copy[3 + 16] = 193; // record 0 len 192 -> 193
    const got = decodeIntel5300(copy);
    expect(got.stats).toEqual({ records: 28, skipped: 1, bytes: bytes.length });
    expect(got.frames.map((f) => f.seq)).toEqual(frames.slice(1).map((f) => f.seq));
    expect(got.frames.map((f) => f.csi)).toEqual(frames.slice(1).map((f) => f.csi));
  });

  it('keeps the recorded antenna order and counts a warning when a 3-antenna perm fails the check', () => {
    const i = 19; // 3x3 with perm [2,3,1]
    expect(gt[i]!.perm).toEqual([2, 3, 1]);
    const copy = bytes.slice();
    copy[(frames[i]!.meta!.file_offset as number) + 3 + 15] = 0; // perm [1,1,1]: sums to 3, not 6
    const dec = new Intel5300Decoder();
    const got: CsiFrame[] = [];
    dec.push(copy, (f) => got.push(f));
    dec.end(() => undefined);
    expect(dec.permWarnings).toBe(1);
    const f = got[i]!;
    expect(f.meta!.perm).toEqual([1, 1, 1]);
    // Unpermuted: recorded antenna k is the one MATLAB moved to position perm(k).
    const perm = gt[i]!.perm;
    for (let sc = 0; sc < 30; sc++) {
      for (let k = 0; k < 3; k++) {
        for (let tx = 0; tx < 3; tx++) {
          expect([re(f, sc, k, tx), im(f, sc, k, tx)]).toEqual(gt[i]!.csi_sc_rx_tx_reim[sc]![perm[k]! - 1]![tx]);
        }
      }
    }
  });
});
