import { decodeIntel5300 } from '../src/decoders/intel5300.js';
import { decodeAtheros } from '../src/decoders/atheros.js';
import { decodeNexmon } from '../src/decoders/nexmon.js';
import { decodeEsp32 } from '../src/decoders/esp32.js';
import type { DecodeResult } from '../src/csi/decoder.js';
import { readSample, repeatBytes, repeatPcap } from './captures.js';
import { throughput, type BenchResult } from './lib.js';

const TARGET_BYTES = 8 << 20;

/**
 * Decoder throughput in records per second over the real captures, repeated to about 8 MiB so that
 * one round takes long enough to time.
 */
export async function run(): Promise<BenchResult[]> {
  const cases: Array<[string, string, (b: Uint8Array) => DecodeResult, (b: Uint8Array) => Uint8Array]> = [
    ['decode.intel5300', 'intel5300/log.all_csi.6.7.6', (b) => decodeIntel5300(b), (b) => repeatBytes(b, TARGET_BYTES)],
    ['decode.atheros', 'atheros/ath_csi_1.dat', (b) => decodeAtheros(b), (b) => repeatBytes(b, TARGET_BYTES)],
    ['decode.nexmon', 'nexmon/example_43455c0.pcap', (b) => decodeNexmon(b), (b) => repeatPcap(b, TARGET_BYTES)],
    ['decode.esp32', 'esp32/example_csi.csv', (b) => decodeEsp32(b), (b) => repeatBytes(b, TARGET_BYTES / 4)],
  ];
  const out: BenchResult[] = [];
  for (const [name, rel, fn, grow] of cases) {
    const raw = readSample(rel);
    if (!raw) {
      out.push({ name, value: NaN, unit: 'records/s', n: 0, note: 'skipped: ../shared/csi-samples not found' });
      continue;
    }
    const bytes = grow(raw);
    const records = fn(bytes).frames.length;
    const r = await throughput(name, 'records/s', () => fn(bytes).frames.length, { items: records, rounds: 5 });
    r.note = `${rel}, ${(bytes.length / 1048576).toFixed(1)} MiB, ${records} records per round`;
    out.push(r);
  }
  return out;
}
