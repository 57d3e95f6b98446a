/**
 * CSI packets of the real captures in `../shared/csi-samples`, cut into the datagrams a router
 * would send to `udp://HOST:PORT?format=F` (what test/sources/udp.test.ts sends).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CaptureFormat } from '../../src/decoders/registry.js';

/** `../shared/csi-samples` beside the repository, or CSIPOSE_SAMPLES_DIR. */
export function samplesDir(root: string): string | undefined {
  const dir = process.env.CSIPOSE_SAMPLES_DIR ?? resolve(root, '../shared/csi-samples');
  return existsSync(join(dir, 'SOURCES.md')) ? dir : undefined;
}

/** ESP32-CSI-Tool lines: one line per datagram, as the firmware prints them. */
function esp32(dir: string): Buffer[] {
  return readFileSync(join(dir, 'esp32/example_csi.csv'), 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => Buffer.from(l + '\n'));
}

/** Nexmon CSI: the UDP payload of every pcap packet (after Ethernet 14 + IPv4 20 + UDP 8 bytes). */
function nexmon(dir: string): Buffer[] {
  const pcap = readFileSync(join(dir, 'nexmon/example_43455c0.pcap'));
  const out: Buffer[] = [];
  if (pcap.readUInt32LE(0) !== 0xa1b2c3d4 || pcap.readUInt32LE(20) !== 1) throw new Error('nexmon sample is not a little-endian Ethernet pcap');
  for (let o = 24; o + 16 <= pcap.length;) {
    const incl = pcap.readUInt32LE(o + 8);
    out.push(pcap.subarray(o + 16 + 42, o + 16 + incl));
    o += 16 + incl;
  }
  return out;
}

/** Intel 5300 log records (u16 big-endian length, code, body), one record per datagram. */
function intel5300(dir: string): Buffer[] {
  const log = readFileSync(join(dir, 'intel5300/log.all_csi.6.7.6'));
  const out: Buffer[] = [];
  for (let o = 0; o + 2 <= log.length;) {
    const len = log.readUInt16BE(o);
    out.push(log.subarray(o, o + 2 + len));
    o += 2 + len;
  }
  return out;
}

/**
 * The datagrams of a format's capture, in recorded order.
 * @param dir the samples folder
 * @param format esp32, nexmon or intel5300 (the formats `udp://` takes)
 */
export function datagrams(dir: string, format: CaptureFormat): Buffer[] {
  if (format === 'esp32') return esp32(dir);
  if (format === 'nexmon') return nexmon(dir);
  if (format === 'intel5300') return intel5300(dir);
  throw new Error(`no UDP datagrams for ${format}`);
}
