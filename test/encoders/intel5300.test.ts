import { describe, expect, it } from 'vitest';
import { decodeAll } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { createStreamDecoder } from '../../src/decoders/index.js';
import { intel5300TotalRss } from '../../src/decoders/intel5300.js';
import { INTEL5300_SUBCARRIERS_20, INTEL5300_SUBCARRIERS_40 } from '../../src/decoders/subcarriers.js';
import { encodeIntel5300, encodeIntel5300Into, intel5300RecordLength, intel5300Scale } from '../../src/encoders/intel5300.js';
import { CsiSimulator, type SimOptions } from '../../src/sim/simulator.js';
import { concat, decodeChunked } from '../helpers/decoding.js';
import { describeWithSamples, sampleBytes } from '../helpers/samples.js';

const FILE = 'intel5300/log.all_csi.6.7.6';

function simFrames(opts: SimOptions, n: number): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 3, people: 2, ...opts });
  return Array.from({ length: n }, () => sim.next().frame);
}

/**
 * |<a, b>| / (|a| |b|) over the complex values of two interleaved arrays: 1 when one is the other
 * times a positive real factor.
 */
function correlation(a: Float32Array, b: Float32Array): number {
  let re = 0;
  let im = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i += 2) {
    const ar = a[i]!;
    const ai = a[i + 1]!;
    const br = b[i]!;
    const bi = b[i + 1]!;
    // a * conj(b)
    re += ar * br + ai * bi;
    im += ai * br - ar * bi;
    na += ar * ar + ai * ai;
    nb += br * br + bi * bi;
  }
  return Math.hypot(re, im) / Math.sqrt(na * nb);
}

describe('encodeIntel5300: simulator frames through the real decoder', () => {
  // Three shapes interleaved in one capture, as a stream decoder meets them.
  const shapes: Array<[number, number]> = [
    [3, 3],
    [2, 1],
    [1, 1],
  ];
  const perShape = 40;
  const sets = shapes.map(([nRx, nTx]) => simFrames({ nRx, nTx }, perShape));
  const originals: CsiFrame[] = [];
  for (let i = 0; i < perShape; i++) for (const s of sets) originals.push(s[i]!);
  const records = originals.map((f) => encodeIntel5300(f));
  const bytes = concat(...records);

  it('writes one record of the documented length per frame, decoded in any chunking', () => {
    expect(records.map((r) => r.length)).toEqual(originals.map((f) => intel5300RecordLength(f.nRx, f.nTx)));
    expect(intel5300RecordLength(3, 3)).toBe(575);
    expect(intel5300RecordLength(1, 1)).toBe(95);
    const whole = decodeAll(createStreamDecoder('intel5300'), bytes);
    expect(whole.error).toBeUndefined();
    expect(whole.stats).toEqual({ records: originals.length, skipped: 0, bytes: bytes.length });
    for (const step of [1, 7, 575, 4096]) {
      // A DecodeError fails the test here, as a throw; skipped records fail it below.
      const { frames, stats, error } = decodeChunked(createStreamDecoder('intel5300'), bytes, step);
      if (error) throw error;
      expect(stats.skipped).toBe(0);
      expect(frames.length).toBe(originals.length);
      expect(frames.map((f) => Array.from(f.csi))).toEqual(whole.frames.map((f) => Array.from(f.csi)));
    }
  });

  it('keeps shape, subcarriers, seq, clock, RSSI in dBm and noise; CSI is the original times the scale to half a step', () => {
    const { frames } = decodeAll(createStreamDecoder('intel5300'), bytes);
    expect(frames.length).toBe(originals.length);
    let maxErr = 0;
    let minCorr = 1;
    originals.forEach((o, i) => {
      const d = frames[i]!;
      expect([d.nRx, d.nTx, d.nSub]).toEqual([o.nRx, o.nTx, 30]);
      // The simulator's 30-subcarrier layout is the Intel grouping.
      expect(Array.from(d.subcarriers)).toEqual(Array.from(o.subcarriers));
      expect(d.subcarriers).toBe(INTEL5300_SUBCARRIERS_20);
      expect(d.bandwidthMhz).toBe(20);
      expect(d.seq).toBe(o.seq);
      expect(d.clockUs).toBe(o.clockUs);
      expect(d.deviceTime).toBe(o.clockUs);
      // rssi comes back as the raw register value: dBm = raw - 44 - agc (get_total_rss.m).
      const agc = d.meta!.agc as number;
      expect(d.rssi.map((r) => r - 44 - agc)).toEqual(o.rssi);
      expect(Math.max(...d.rssi)).toBe(40);
      expect(d.meta!.total_rss).toBeCloseTo(10 * Math.log10(o.rssi.reduce((s, r) => s + 10 ** (r / 10), 0)), 9);
      expect(d.noise).toBe(Math.round(o.noise));
      expect(d.meta!.perm).toEqual([1, 2, 3]);
      expect(d.meta!.rate).toBe(0x100 + 8 * (o.nTx - 1));

      const scale = intel5300Scale(o.csi);
      let peak = 0;
      for (let k = 0; k < o.csi.length; k++) {
        const err = Math.abs(d.csi[k]! - o.csi[k]! * scale);
        if (err > maxErr) maxErr = err;
        peak = Math.max(peak, Math.abs(d.csi[k]!));
      }
      expect(peak).toBe(127);
      minCorr = Math.min(minCorr, correlation(o.csi, d.csi));
    });
    expect(maxErr).toBeLessThanOrEqual(0.5);
    expect(minCorr).toBeGreaterThan(0.999);
    // The figures, for the record.
    console.info(
      `intel5300 round trip of ${originals.length} simulator frames: max |decoded - original*scale| = ${maxErr.toFixed(4)}, min correlation = ${minCorr.toFixed(6)}`,
    );
  });

  it('a 40 MHz frame with the 40 MHz grouping keeps its bandwidth; a timestamp past 2^32 µs wraps', () => {
    const o = sets[0]![5]!;
    const f: CsiFrame = { ...o, bandwidthMhz: 40, subcarriers: INTEL5300_SUBCARRIERS_40, clockUs: 2 ** 32 + 1234, seq: 65536 + 17 };
    const [d] = decodeAll(createStreamDecoder('intel5300'), encodeIntel5300(f)).frames;
    expect(d!.bandwidthMhz).toBe(40);
    expect(d!.subcarriers).toBe(INTEL5300_SUBCARRIERS_40);
    expect(d!.meta!.rate).toBe(0x100 | 0x800 | 16);
    expect(d!.clockUs).toBe(1234);
    expect(d!.seq).toBe(17);
    expect(correlation(o.csi, d!.csi)).toBeGreaterThan(0.999);
  });

  it('a frame without a noise figure or with a chain without RSSI writes the card\'s "unknown" values', () => {
    const o = sets[1]![0]!; // 2x1
    const f: CsiFrame = { ...o, noise: NaN, rssi: [-50, NaN] };
    const [d] = decodeAll(createStreamDecoder('intel5300'), encodeIntel5300(f)).frames;
    expect(d!.noise).toBe(-127);
    expect(d!.rssi[0]).toBe(40);
    expect(d!.rssi[1]).toBe(0); // chain off
    expect(d!.meta!.total_rss).toBe(-50);
  });

  it('a given scale is applied as is, values beyond int8 saturating', () => {
    const o = sets[0]![0]!;
    const scale = 3 * intel5300Scale(o.csi);
    const [d] = decodeAll(createStreamDecoder('intel5300'), encodeIntel5300(o, { scale })).frames;
    let saturated = 0;
    for (let k = 0; k < o.csi.length; k++) {
      const want = Math.min(127, Math.max(-128, Math.round(o.csi[k]! * scale)));
      expect(d!.csi[k]).toBe(want + 0); // +0: Math.round gives -0, the decoder 0
      if (want === 127 || want === -128) saturated++;
    }
    expect(saturated).toBeGreaterThan(0);
  });

  it('encodeIntel5300Into writes the same bytes at an offset, and refuses a buffer too small', () => {
    const o = sets[2]![3]!;
    const target = new Uint8Array(300).fill(0xee);
    const n = encodeIntel5300Into(o, target, 100);
    expect(n).toBe(95);
    expect(Array.from(target.subarray(100, 195))).toEqual(Array.from(encodeIntel5300(o)));
    expect(target[99]).toBe(0xee);
    expect(target[195]).toBe(0xee);
    expect(() => encodeIntel5300Into(o, target, 250)).toThrow(/does not fit/);
  });
});

describe('intel5300Scale', () => {
  it('is 1 for int8 counts and 127 / max for anything else', () => {
    expect(intel5300Scale(Float32Array.of(-128, 127, 3, 0))).toBe(1);
    expect(intel5300Scale(Float32Array.of(0.5, -0.25))).toBe(254);
    expect(intel5300Scale(Float32Array.of(-200, 100))).toBe(127 / 200);
    expect(intel5300Scale(Float32Array.of(0.5, 3))).toBe(127 / 3);
    expect(intel5300Scale(new Float32Array(4))).toBe(1);
    expect(() => intel5300Scale(Float32Array.of(1, NaN))).toThrow(RangeError);
  });
});

describe('encodeIntel5300 refuses what a record cannot hold', () => {
  const one = (opts: SimOptions) => new CsiSimulator({ seed: 1, people: 1, ...opts }).next().frame;

  it('56 subcarriers, 4 receive or transmit antennas, another subcarrier table, non-finite CSI', () => {
    expect(() => encodeIntel5300(one({ nSub: 56 }))).toThrow(RangeError);
    expect(() => encodeIntel5300(one({ nSub: 56 }))).toThrow(/56 subcarriers/);
    expect(() => encodeIntel5300(one({ nRx: 4 }))).toThrow(RangeError);
    expect(() => encodeIntel5300(one({ nRx: 4 }))).toThrow(/nRx 4/);
    expect(() => encodeIntel5300(one({ nTx: 4 }))).toThrow(/nTx 4/);
    const f = one({});
    expect(() => encodeIntel5300({ ...f, bandwidthMhz: 40 })).toThrow(/not the Intel 5300 grouping at 40 MHz/);
    const bad = Float32Array.from(f.csi);
    bad[7] = Infinity;
    expect(() => encodeIntel5300({ ...f, csi: bad })).toThrow(/CSI value 7 is Infinity/);
    expect(() => encodeIntel5300({ ...f, csi: f.csi.subarray(2) })).toThrow(/csi values/);
    expect(() => encodeIntel5300(f, { scale: 0 })).toThrow(/scale/);
  });
});

describeWithSamples('encodeIntel5300 on the real capture', () => {
  const bytes = sampleBytes(FILE);
  const original = decodeAll(createStreamDecoder('intel5300'), bytes);
  const reencoded = concat(...original.frames.map((f) => encodeIntel5300(f)));
  const again = decodeAll(createStreamDecoder('intel5300'), reencoded);

  it('decode, encode, decode gives every CSI integer, RSSI, noise, AGC, rate and clock back', () => {
    expect(original.error).toBeUndefined();
    expect(original.frames.length).toBe(29);
    expect(again.error).toBeUndefined();
    expect(again.stats).toEqual({ records: 29, skipped: 0, bytes: bytes.length });
    original.frames.forEach((o, i) => {
      const d = again.frames[i]!;
      expect(Array.from(d.csi)).toEqual(Array.from(o.csi));
      expect([d.nRx, d.nTx, d.nSub, d.seq, d.clockUs, d.deviceTime, d.noise, d.bandwidthMhz]).toEqual([
        o.nRx,
        o.nTx,
        o.nSub,
        o.seq,
        o.clockUs,
        o.deviceTime,
        o.noise,
        o.bandwidthMhz,
      ]);
      expect(d.rssi).toEqual(o.rssi);
      expect(d.subcarriers).toBe(o.subcarriers);
      for (const k of ['timestamp_low', 'bfee_count', 'rssi_a', 'rssi_b', 'rssi_c', 'agc', 'rate', 'len', 'total_rss'])
        expect(d.meta![k], `${k} of record ${i}`).toEqual(o.meta![k]);
      expect(d.meta!.total_rss).toBe(intel5300TotalRss(o.rssi[0]!, o.rssi[1]!, o.rssi[2]!, o.meta!.agc as number));
    });
  });

  it('rewrites every header byte as recorded except antenna_sel, which becomes the identity', () => {
    // The samples come out of the decoder already permuted (perms [3 2 1], [2 3 1] in this log);
    // written back with perm = identity they decode to the same values. The payload is the
    // recorded one with its antennas in the permuted order.
    const perms = new Set(original.frames.map((f) => String(f.meta!.perm)));
    expect(perms.has('1,2,3')).toBe(false);
    let at = 0;
    for (const o of original.frames) {
      const n = intel5300RecordLength(o.nRx, o.nTx);
      const a = bytes.subarray(at, at + 23);
      const b = reencoded.subarray(at, at + 23);
      for (let k = 0; k < 23; k++) if (k !== 3 + 15) expect(b[k], `header byte ${k} of the record at ${at}`).toBe(a[k]);
      expect(b[3 + 15]).toBe(0x24);
      at += n;
    }
    expect(at).toBe(bytes.length);
    expect(again.frames.every((f) => String(f.meta!.perm) === '1,2,3')).toBe(true);
  });
});
