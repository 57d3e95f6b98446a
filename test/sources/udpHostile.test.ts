import { expect, it } from 'vitest';
import { decodeAll } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import { decodeAtheros } from '../../src/decoders/atheros.js';
import { createDatagramDecoder } from '../../src/decoders/index.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { mulberry32 } from '../helpers/decoding.js';
import { describeWithSamples, esp32Lines, sampleBytes } from '../helpers/samples.js';
import { listenUdp, pcapUdpPayloads, sendPaced, udpSenderPerTest, type UdpListener } from '../helpers/sources.js';

/**
 * Issue 17: one bad datagram must cost only itself. Real captures are cut into the datagrams a
 * sender would emit (one record or line each), hostile datagrams are put between them, and every
 * valid record must arrive over a real UDP socket on 127.0.0.1.
 */

/** Safety net so a lost datagram fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 20_000;
/** Datagrams unread by the listener before the sender waits: a few 64 KB ones must fit the socket buffer. */
const IN_FLIGHT = 8;
/** Valid datagrams per format (the capture's records, repeated as needed). */
const VALID = 300;

function randomBytes(rand: () => number, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
}

/** Each record of a length-prefixed log (Intel 5300, Atheros) as its own datagram. */
function recordDatagrams(bytes: Uint8Array, offsets: number[], fieldLen: (at: number) => number): Uint8Array[] {
  return offsets.map((at) => bytes.subarray(at, at + 2 + fieldLen(at)));
}

/** The datagrams a sender of each format emits, one record each, cut from the real captures. */
function validDatagrams(format: CaptureFormat): Uint8Array[] {
  switch (format) {
    case 'esp32':
      return esp32Lines().map((l) => Buffer.from(l + '\n'));
    case 'nexmon':
      // The 18 packets of the wrong size are not valid datagrams.
      return pcapUdpPayloads(sampleBytes('nexmon/example_43455c0.pcap')).filter((p) => decodeAll(createDatagramDecoder('nexmon'), p).frames.length === 1);
    case 'intel5300': {
      const b = sampleBytes('intel5300/log.all_csi.6.7.6');
      const offsets = decodeIntel5300(b).frames.map((f) => f.meta!.file_offset as number);
      return recordDatagrams(b, offsets, (at) => (b[at]! << 8) | b[at + 1]!);
    }
    case 'atheros': {
      const b = sampleBytes('atheros/ath_csi_1.dat');
      const offsets = decodeAtheros(b).frames.map((f) => f.meta!.file_offset as number);
      return recordDatagrams(b, offsets, (at) => b[at]! | (b[at + 1]! << 8));
    }
    default:
      throw new Error(`no capture for ${format}`);
  }
}

/**
 * Hostile datagrams made from a valid one: every kind the issue names. For ESP32 text a record
 * is a line: it is cut before its `]`, and the garbage goes on the line itself (after a newline
 * it would be a line of its own, and the record before it valid).
 */
function hostileDatagrams(format: CaptureFormat, good: Uint8Array, rand: () => number): Array<{ name: string; bytes: Uint8Array }> {
  const text = format === 'esp32';
  const body = text ? good.subarray(0, good.length - 1) : good;
  const out = [
    { name: 'empty', bytes: new Uint8Array(0) },
    { name: '1 byte', bytes: good.slice(0, 1) },
    { name: '2 bytes', bytes: good.slice(0, 2) },
    { name: '3 bytes', bytes: good.slice(0, 3) },
    { name: 'half a record', bytes: good.slice(0, good.length >> 1) },
    { name: 'a record cut before its end', bytes: body.slice(0, body.length - 1) },
    { name: 'a record with garbage appended', bytes: Buffer.concat([body, randomBytes(rand, 37)]) },
    { name: '200 random bytes', bytes: randomBytes(rand, 200) },
    { name: '1500 random bytes', bytes: randomBytes(rand, 1500) },
    { name: 'oversized (65000 random bytes)', bytes: randomBytes(rand, 65_000) },
  ];
  if (!text) {
    // A length field (Intel 5300, Atheros) or header (Nexmon) that promises far more than arrives.
    const claim = Uint8Array.from(good);
    claim[0] = 0xff;
    claim[1] = 0xff;
    out.push({ name: 'a record claiming 65535 bytes', bytes: claim });
  }
  return out;
}

const listen = (format: CaptureFormat): Promise<UdpListener> => listenUdp(format, GIVE_UP_MS);

const sender = udpSenderPerTest();

/** Sends every datagram in order, never more than IN_FLIGHT ahead of the listener; waits for all. */
const sendAll = (l: UdpListener, datagrams: readonly Uint8Array[]): Promise<void> => sendPaced(sender(), l, datagrams, IN_FLIGHT, GIVE_UP_MS);

describeWithSamples('udpSource: hostile datagrams between valid ones (issue 17)', () => {
  const formats: CaptureFormat[] = ['esp32', 'nexmon', 'intel5300', 'atheros'];
  for (const format of formats) {
    it(`${format}: every valid datagram's record arrives, hostile ones are skipped and counted`, async () => {
      const valid = validDatagrams(format);
      expect(valid.length).toBeGreaterThan(10);
      const rand = mulberry32(17);
      const datagrams: Uint8Array[] = [];
      /** Frames each datagram holds when decoded alone: the reference for what must arrive. */
      const want: CsiFrame[] = [];
      let wantSkipped = 0;
      let hostileCount = 0;
      let appended = 0;
      let emptyCount = 0;
      for (let i = 0; i < VALID; i++) {
        const good = valid[i % valid.length]!;
        const hostile = hostileDatagrams(format, good, rand);
        const h = hostile[i % hostile.length]!;
        for (const d of [h.bytes, good]) {
          datagrams.push(d);
          const alone = decodeAll(createDatagramDecoder(format), d);
          want.push(...alone.frames);
          wantSkipped += alone.stats.skipped;
        }
        hostileCount++;
        if (h.name === 'a record with garbage appended') appended++;
        if (h.bytes.length === 0) emptyCount++;
      }
      // Binary logs are read record by record, so the whole record in front of the garbage is
      // decoded (its tail skipped); a Nexmon payload is judged by its exact size and an ESP32 line
      // with garbage on it is malformed, so those datagrams yield nothing.
      const leading = format === 'intel5300' || format === 'atheros' ? appended : 0;
      expect(want).toHaveLength(VALID + leading);

      const l = await listen(format);
      try {
        await sendAll(l, datagrams);
        expect(l.errors).toEqual([]);
        expect(l.stats.datagrams).toBe(datagrams.length);
        expect(l.frames).toHaveLength(VALID + leading);
        l.frames.forEach((f, i) => {
          expect(f.csi, `frame ${i}`).toEqual(want[i]!.csi);
          expect(f.index).toBe(i);
        });
        expect(l.stats.records).toBe(VALID + leading);
        // Skipped exactly as when each datagram is decoded on its own, and every hostile datagram
        // at least once (an empty ESP32 datagram is a blank line, which is not counted).
        expect(l.stats.skipped).toBe(wantSkipped);
        expect(l.stats.skipped).toBeGreaterThanOrEqual(hostileCount - (format === 'esp32' ? emptyCount : 0));
      } finally {
        l.stop();
      }
    });
  }
});
