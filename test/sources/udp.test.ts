import { createSocket } from 'node:dgram';
import { firstValueFrom, timeout } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { decodeNexmon } from '../../src/decoders/nexmon.js';
import { udpSource, type UdpStats } from '../../src/sources/udp.js';
import { describeWithSamples, esp32Lines, sampleBytes } from '../helpers/samples.js';
import { listenUdp, pcapUdpPayloads, sendPaced, udpSenderPerTest, type UdpListener } from '../helpers/sources.js';

/** Safety net so a lost datagram fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 10_000;
/** Datagrams in flight before the sender waits for the listener to catch up (loopback buffers are finite). */
const IN_FLIGHT = 32;

function newStats(): UdpStats {
  return { datagrams: 0, records: 0, skipped: 0, bytes: 0 };
}

/** A listening udpSource on 127.0.0.1, an ephemeral port. */
const listen = (format: CaptureFormat): Promise<UdpListener> => listenUdp(format, GIVE_UP_MS);

const sender = udpSenderPerTest();

function send(port: number, payload: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => sender().send(payload, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
}

/** Sends every payload in order, never letting more than IN_FLIGHT be unread by the listener. */
const sendAll = (l: UdpListener, payloads: readonly Uint8Array[]): Promise<void> => sendPaced(sender(), l, payloads, IN_FLIGHT, GIVE_UP_MS);

/** Binds a fresh socket to `port` on 127.0.0.1; resolves true on success, false on an error. */
function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind(port, '127.0.0.1', () => {
      s.close();
      resolve(true);
    });
  });
}

describeWithSamples('udpSource with real captures', () => {
  for (const newline of [false, true]) {
    it(`decodes each line of example_csi.csv sent as its own datagram (${newline ? 'with' : 'without'} a newline)`, async () => {
      const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;
      const lines = esp32Lines();
      expect(lines).toHaveLength(13);
      const l = await listen('esp32');
      try {
        const before = Date.now();
        await sendAll(
          l,
          lines.map((s) => Buffer.from(newline ? s + '\n' : s)),
        );
        await l.until(13);
        expect(l.errors).toEqual([]);
        expect(l.frames).toHaveLength(13);
        l.frames.forEach((f, i) => {
          const w = want[i]!;
          expect(f.format).toBe('esp32');
          expect(f.index).toBe(i);
          expect(f.csi).toEqual(w.csi);
          expect(f.rssi).toEqual(w.rssi);
          expect(f.deviceTime).toBe(w.deviceTime);
          expect(f.nSub).toBe(64);
          // A text line carries no wall time: the source stamps arrival.
          expect(f.time).toBeGreaterThanOrEqual(before);
          expect(f.time).toBeLessThanOrEqual(Date.now());
        });
        expect(l.frames[0]!.sourceId).toMatch(/^udp:\/\/127\.0\.0\.1:/);
        expect(l.stats).toMatchObject({ datagrams: 13, records: 13, skipped: 0 });
      } finally {
        l.stop();
      }
    });
  }

  it('decodes Nexmon payloads cut out of the pcap: 548 frames, 18 wrong-size packets skipped', async () => {
    const pcap = sampleBytes('nexmon/example_43455c0.pcap');
    const payloads = pcapUdpPayloads(pcap);
    expect(payloads).toHaveLength(566);
    const want = decodeNexmon(pcap).frames;
    expect(want).toHaveLength(548);
    const l = await listen('nexmon');
    try {
      await sendAll(l, payloads);
      await l.until(548);
      expect(l.errors).toEqual([]);
      expect(l.frames).toHaveLength(548);
      l.frames.forEach((f, i) => {
        const w = want[i]!;
        expect(f.index).toBe(i);
        expect(f.seq).toBe(w.seq);
        expect(f.rssi).toEqual(w.rssi);
        expect(f.nSub).toBe(256);
        expect(f.csi).toEqual(w.csi);
        expect(f.time).toBeGreaterThan(0);
      });
      expect(l.stats).toMatchObject({ datagrams: 566, records: 548, skipped: 18 });
    } finally {
      l.stop();
    }
  });

  it('garbage datagrams do not error the stream; good ones after them still decode', async () => {
    const pcap = sampleBytes('nexmon/example_43455c0.pcap');
    const good = pcapUdpPayloads(pcap)[0]!;
    const want = decodeNexmon(pcap).frames[0]!;
    const l = await listen('nexmon');
    try {
      const junk: Uint8Array[] = [
        new Uint8Array(0),
        Buffer.from('hello'),
        good.subarray(0, 17),
        good.subarray(0, good.length - 1),
        Buffer.concat([good, Buffer.from([0])]),
        new Uint8Array(60_000).fill(0x11),
        Uint8Array.from({ length: 1042 }, (_, i) => (i * 197 + 13) & 0xff),
      ];
      await sendAll(l, [...junk, good]);
      await l.until(1);
      expect(l.errors).toEqual([]);
      expect(l.frames).toHaveLength(1);
      expect(l.frames[0]!.csi).toEqual(want.csi);
      expect(l.stats).toMatchObject({ datagrams: 8, records: 1, skipped: 7 });
    } finally {
      l.stop();
    }
  });
});

describe('udpSource', () => {
  it('garbage text datagrams on an esp32 listener are skipped, not fatal', async () => {
    const l = await listen('esp32');
    try {
      const junk = ['', 'CSI_DATA', 'CSI_DATA,AP,[1 2 3', '\u0000\u00ff\u0080binary', 'x'.repeat(65_000)];
      await sendAll(
        l,
        junk.map((s) => Buffer.from(s, 'latin1')),
      );
      expect(l.errors).toEqual([]);
      expect(l.frames).toEqual([]);
      expect(l.stats.datagrams).toBe(5);
      expect(l.stats.skipped).toBe(4);
    } finally {
      l.stop();
    }
  });

  it('closes its socket on unsubscribe: the port can be bound again', async () => {
    const l = await listen('esp32');
    const port = l.port;
    expect(port).toBeGreaterThan(0);
    expect(await canBind(port)).toBe(false);
    l.stop();
    expect(await canBind(port)).toBe(true);
  });

  it('a port already in use errors the stream instead of throwing', async () => {
    const holder = createSocket('udp4');
    await new Promise<void>((r) => holder.bind(0, '127.0.0.1', r));
    try {
      const port = holder.address().port;
      const err = await firstValueFrom(udpSource({ host: '127.0.0.1', port, format: 'esp32' }).pipe(timeout(GIVE_UP_MS))).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
    } finally {
      holder.close();
    }
  });

  it('each subscription gets its own socket and decoder', async () => {
    const ports: number[] = [];
    const src = (stats: UdpStats) => udpSource({ host: '127.0.0.1', port: 0, format: 'esp32', stats, onListening: (a) => ports.push(a.port) });
    const a = newStats();
    const b = newStats();
    const subA = src(a).subscribe();
    const subB = src(b).subscribe();
    try {
      while (ports.length < 2) await new Promise((r) => setTimeout(r, 1));
      expect(ports[0]).not.toBe(ports[1]);
      await send(ports[0]!, Buffer.from('junk'));
      while (a.datagrams < 1) await new Promise((r) => setTimeout(r, 1));
      expect(b.datagrams).toBe(0);
    } finally {
      subA.unsubscribe();
      subB.unsubscribe();
    }
  });
});
