import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** `../shared/csi-samples` beside the repository (dist/bench and bench/ both resolve to it). */
export function samplesDir(): string | undefined {
  const candidates = [process.env.CSIPOSE_SAMPLES_DIR, resolve(here, '../../shared/csi-samples'), resolve(here, '../../../shared/csi-samples')];
  return candidates.find((d): d is string => !!d && existsSync(join(d, 'SOURCES.md')));
}

export function readSample(rel: string): Uint8Array | undefined {
  const d = samplesDir();
  return d ? new Uint8Array(readFileSync(join(d, rel))) : undefined;
}

/** Concatenates `parts` until the result holds at least `minBytes`. */
export function repeatBytes(parts: Uint8Array, minBytes: number): Uint8Array {
  const n = Math.max(1, Math.ceil(minBytes / parts.length));
  const out = new Uint8Array(parts.length * n);
  for (let i = 0; i < n; i++) out.set(parts, i * parts.length);
  return out;
}

/** The records of an Intel 5300 log (u16 big-endian length, code, body) that satisfy `keep`. */
export function intelRecords(log: Uint8Array, keep: (body: Uint8Array, code: number) => boolean): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let o = 0; o + 3 <= log.length;) {
    const len = (log[o]! << 8) | log[o + 1]!;
    const end = o + 2 + len;
    if (len === 0 || end > log.length) break;
    if (keep(log.subarray(o + 3, end), log[o + 2]!)) {
      chunks.push(log.subarray(o, end));
      total += end - o;
    }
    o = end;
  }
  const out = new Uint8Array(total);
  let p = 0;
  for (const c of chunks) {
    out.set(c, p);
    p += c.length;
  }
  return out;
}

/** A pcap file whose packets are repeated: the global header once, then the packet section `times` times. */
export function repeatPcap(pcap: Uint8Array, minBytes: number): Uint8Array {
  const header = pcap.subarray(0, 24);
  const body = pcap.subarray(24);
  const n = Math.max(1, Math.ceil(minBytes / body.length));
  const out = new Uint8Array(24 + body.length * n);
  out.set(header, 0);
  for (let i = 0; i < n; i++) out.set(body, 24 + i * body.length);
  return out;
}
