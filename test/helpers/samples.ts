import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));

/** `../shared/csi-samples` beside the repository (as on every developer machine and in CI). */
export const samplesDir = process.env.CSIPOSE_SAMPLES_DIR ?? resolve(here, '../../../shared/csi-samples');
export const haveSamples = existsSync(join(samplesDir, 'SOURCES.md'));

/** Path of a capture inside the samples folder, e.g. `sample('intel5300/log.all_csi.6.7.6')`. */
export function sample(rel: string): string {
  return join(samplesDir, rel);
}

/** The bytes of a capture. */
export function sampleBytes(rel: string): Uint8Array {
  return new Uint8Array(readFileSync(sample(rel)));
}

/** Parsed JSON from `ground_truth/`. */
export function groundTruth<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(samplesDir, 'ground_truth', name), 'utf8')) as T;
}

/**
 * `describe` for suites that read the real captures: skipped, with the reason in its title,
 * when `../shared/csi-samples` is absent.
 */
export const describeWithSamples: (name: string, fn: () => void) => void = haveSamples
  ? (name, fn) => describe(name, fn)
  : // The suite's body is not run at all: it reads the captures while collecting its tests.
    (name) => describe(name, () => it.skip(`skipped: real captures not found at ${samplesDir}`, () => undefined));

/** One record of `ground_truth/log.all_csi.6.7.6.matlab.json`: what MATLAB read_bf_file gives (CSI after perm). */
export interface MatlabBfeeRecord {
  timestamp_low: number;
  bfee_count: number;
  Nrx: number;
  Ntx: number;
  rssi_a: number;
  rssi_b: number;
  rssi_c: number;
  noise: number;
  agc: number;
  rate: number;
  perm: number[];
  /** csi[sc][rx][tx] = [re, im]. */
  csi_sc_rx_tx_reim: [number, number][][][];
}

/** The MATLAB read_bf_file records of the Intel 5300 capture `intel5300/log.all_csi.6.7.6`, in file order. */
export function matlabBfeeRecords(): MatlabBfeeRecord[] {
  return groundTruth<{ records: MatlabBfeeRecord[] }>('log.all_csi.6.7.6.matlab.json').records;
}

/** The lines of the ESP32 capture `esp32/example_csi.csv`, without the empty ones (no newline kept). */
export function esp32Lines(): string[] {
  return readFileSync(sample('esp32/example_csi.csv'), 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
}
