import { expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import { decodeAtheros } from '../../src/decoders/atheros.js';
import { createDatagramDecoder } from '../../src/decoders/index.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { mulberry32 } from '../helpers/decoding.js';
import { describeWithSamples, esp32Lines, sampleBytes } from '../helpers/samples.js';
import { pcapUdpPayloads } from '../helpers/sources.js';

/**
 * Datagram decoders (what the UDP and MQTT sources use) decode each datagram on its own: whatever
 * one datagram holds, the next is decoded as if it came first (issue 17).
 */

/** One record (or line, or payload) per datagram, cut from the real captures. */
function records(format: CaptureFormat): Uint8Array[] {
  if (format === 'esp32') return esp32Lines().map((l) => Buffer.from(l));
  if (format === 'nexmon') return pcapUdpPayloads(sampleBytes('nexmon/example_43455c0.pcap')).filter((p) => p.length === 1042);
  const b = sampleBytes(format === 'intel5300' ? 'intel5300/log.all_csi.6.7.6' : 'atheros/ath_csi_1.dat');
  const frames = format === 'intel5300' ? decodeIntel5300(b).frames : decodeAtheros(b).frames;
  const len = (at: number) => (format === 'intel5300' ? (b[at]! << 8) | b[at + 1]! : b[at]! | (b[at + 1]! << 8));
  return frames.map((f) => {
    const at = f.meta!.file_offset as number;
    return b.subarray(at, at + 2 + len(at));
  });
}

const FORMATS: CaptureFormat[] = ['intel5300', 'atheros', 'nexmon', 'esp32'];

describeWithSamples('datagram decoders (issue 17)', () => {
  it('intel5300: after one 3-byte datagram, all of the next 3,000 valid records decode', () => {
    const recs = records('intel5300');
    const dec = createDatagramDecoder('intel5300');
    const frames: CsiFrame[] = [];
    dec.push(recs[0]!.subarray(0, 3), (f) => frames.push(f));
    expect(frames).toHaveLength(0);
    expect(dec.stats.skipped).toBe(1);
    for (let i = 0; i < 3000; i++) dec.push(recs[i % recs.length]!, (f) => frames.push(f));
    expect(frames).toHaveLength(3000);
    expect(dec.stats).toMatchObject({ records: 3000, skipped: 1 });
    expect(() => dec.end(() => undefined)).not.toThrow();
  });

  for (const format of FORMATS) {
    it(`${format}: each hostile datagram yields nothing, is counted, and leaves the next valid one intact`, () => {
      const recs = records(format);
      const good = recs[1]!;
      const rand = mulberry32(5);
      const random = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
      const hostile: Array<[string, Uint8Array]> = [
        ['1 byte', good.slice(0, 1)],
        ['2 bytes', good.slice(0, 2)],
        ['3 bytes', good.slice(0, 3)],
        ['half a record', good.slice(0, good.length >> 1)],
        ['random bytes', random(700)],
        ['oversized', random(65_000)],
      ];
      if (format !== 'esp32') hostile.push(['empty', new Uint8Array(0)], ['a record less its last byte', good.slice(0, good.length - 1)]);
      const dec = createDatagramDecoder(format);
      const want = (() => {
        const frames: CsiFrame[] = [];
        createDatagramDecoder(format).push(good, (f) => frames.push(f));
        expect(frames).toHaveLength(1);
        return frames[0]!;
      })();
      for (const [name, bytes] of hostile) {
        const before = { ...dec.stats };
        const frames: CsiFrame[] = [];
        dec.push(bytes, (f) => frames.push(f));
        expect(frames, name).toHaveLength(0);
        expect(dec.stats.skipped, name).toBeGreaterThan(before.skipped);
        expect(dec.stats.bytes - before.bytes, name).toBe(bytes.length);
        dec.push(good, (f) => frames.push(f));
        expect(frames, `${name}, then a valid datagram`).toHaveLength(1);
        expect(frames[0]!.csi).toEqual(want.csi);
        expect(() => dec.end(() => undefined)).not.toThrow();
      }
    });
  }

  for (const format of ['intel5300', 'atheros'] as const) {
    it(`${format}: a datagram of several whole records yields each; a truncated last one is skipped once`, () => {
      const recs = records(format);
      const dec = createDatagramDecoder(format);
      const frames: CsiFrame[] = [];
      dec.push(Buffer.concat([recs[0]!, recs[1]!, recs[2]!.subarray(0, 40)]), (f) => frames.push(f));
      expect(frames).toHaveLength(2);
      expect(dec.stats).toMatchObject({ records: 2, skipped: 1 });
      dec.push(recs[3]!, (f) => frames.push(f));
      expect(frames).toHaveLength(3);
      expect(dec.stats).toMatchObject({ records: 3, skipped: 1 });
    });
  }

  it('intel5300: a datagram of zeros counts once, not once per two bytes', () => {
    const dec = createDatagramDecoder('intel5300');
    dec.push(new Uint8Array(60_000), () => undefined);
    expect(dec.stats).toMatchObject({ records: 0, skipped: 1, bytes: 60_000 });
  });
});
