import { createSocket } from 'node:dgram';
import { expect } from 'vitest';
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
  for (let o = 24; o + 16 <= pcap.length; ) {
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
