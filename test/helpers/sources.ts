import { createSocket, type Socket } from 'node:dgram';
import { afterEach, beforeEach, expect } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import { udpSource, type UdpStats } from '../../src/sources/udp.js';
import { parseSource, SourceError } from '../../src/sources/uri.js';

/**
 * The SourceError `parseSource` raises for a malformed URI (fails the test if it parses).
 * @example expect(parseError('udp://x').message).toMatch(/HOST:PORT/)
 */
export function parseError(uri: string): SourceError {
  try {
    parseSource(uri);
  } catch (e) {
    expect(e).toBeInstanceOf(SourceError);
    return e as SourceError;
  }
  throw new Error(`"${uri}" parsed without an error`);
}

/**
 * The UDP payload of each packet of a little-endian Ethernet/IPv4/UDP pcap (the Nexmon captures):
 * what a Nexmon router sends, by UDP or as an MQTT message.
 * @param pcap the capture's bytes
 */
export function pcapUdpPayloads(pcap: Uint8Array): Uint8Array[] {
  const v = new DataView(pcap.buffer, pcap.byteOffset, pcap.byteLength);
  expect(v.getUint32(0, true)).toBe(0xa1b2c3d4);
  expect(v.getUint32(20, true)).toBe(1);
  const out: Uint8Array[] = [];
  for (let o = 24; o + 16 <= pcap.length;) {
    const incl = v.getUint32(o + 8, true);
    out.push(pcap.subarray(o + 16 + 42, o + 16 + incl));
    o += 16 + incl;
  }
  return out;
}

/** A UDP port that was free a moment ago (the service binds it itself). */
export async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A listening udpSource on 127.0.0.1 (see {@link listenUdp}). */
export interface UdpListener {
  frames: CsiFrame[];
  errors: unknown[];
  stats: UdpStats;
  port: number;
  /** Resolves once `n` frames have arrived (rejects after the listener's give-up time). */
  until(n: number): Promise<void>;
  stop(): void;
}

/**
 * Subscribes a real udpSource on 127.0.0.1, an ephemeral port, collecting its frames and errors;
 * resolves once it is bound (rejects with its error if binding fails).
 * @param format the capture format the source decodes
 * @param giveUpMs how long `until` waits before failing the test instead of hanging it
 */
export async function listenUdp(format: CaptureFormat, giveUpMs: number): Promise<UdpListener> {
  const frames: CsiFrame[] = [];
  const errors: unknown[] = [];
  const stats: UdpStats = { datagrams: 0, records: 0, skipped: 0, bytes: 0 };
  let waiters: Array<{ n: number; resolve: () => void }> = [];
  let port = -1;
  let onBound!: () => void;
  const bound = new Promise<void>((resolve) => (onBound = resolve));
  const sub = udpSource({
    host: '127.0.0.1',
    port: 0,
    format,
    stats,
    onListening: (a) => {
      port = a.port;
      onBound();
    },
  }).subscribe({
    next(f) {
      frames.push(f);
      waiters = waiters.filter((w) => (frames.length >= w.n ? (w.resolve(), false) : true));
    },
    error: (e) => {
      errors.push(e);
      onBound();
    },
  });
  await bound;
  if (errors.length > 0) throw errors[0];
  return {
    frames,
    errors,
    stats,
    port,
    until: (n) =>
      frames.length >= n
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => waiters.push({ n, resolve })),
            new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`only ${frames.length} of ${n} frames arrived`)), giveUpMs).unref()),
          ]),
    stop: () => sub.unsubscribe(),
  };
}

/**
 * Sends every datagram to the listener in order, never letting more than `inFlight` be unread
 * by it (loopback buffers are finite), then waits until it has read them all.
 * @param sender a udp4 socket
 * @param giveUpMs fails the test after this long instead of hanging it
 */
export async function sendPaced(sender: Socket, l: UdpListener, datagrams: readonly Uint8Array[], inFlight: number, giveUpMs: number): Promise<void> {
  const base = l.stats.datagrams;
  const deadline = Date.now() + giveUpMs;
  const waitFor = async (n: number) => {
    while (l.stats.datagrams - base < n) {
      if (Date.now() > deadline) throw new Error(`listener got ${l.stats.datagrams - base} of ${n} datagrams`);
      await new Promise((r) => setTimeout(r, 1));
    }
  };
  for (let i = 0; i < datagrams.length; i++) {
    await waitFor(i - inFlight + 1);
    await new Promise<void>((resolve, reject) => sender.send(datagrams[i]!, l.port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
  }
  await waitFor(datagrams.length);
}

/**
 * A udp4 socket for each test of the file (or describe) it is called in: made before each test,
 * closed after it.
 * @returns a function giving the current test's socket
 * @example
 * const sender = udpSenderPerTest();
 * await sendPaced(sender(), listener, datagrams, 32, 10_000);
 */
export function udpSenderPerTest(): () => Socket {
  let sender: Socket | undefined;
  beforeEach(() => {
    sender = createSocket('udp4');
  });
  afterEach(() => {
    sender!.close();
  });
  return () => sender!;
}
