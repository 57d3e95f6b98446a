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
export function groundTruth<T = unknown>(name: string): T {
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

/** The facts of `ground_truth/decoded_facts.json` the tests read, by capture (the file has more). */
export interface DecodedFacts {
  'log.all_csi.6.7.6': {
    bytes: number;
    first: Record<string, number | number[]>;
    first_total_rss_dBm: number;
    first_csi_tx0_rx0_sc0_2_after_perm: number[][];
    first_csi_sc0_tx0_rx0_2_after_perm: number[][];
    last: Record<string, number>;
    NrxNtx_counts: Record<string, number>;
    sum_real_all: number;
    sum_imag_all: number;
    n_complex_all: number;
  };
  'example_43455c0.pcap': {
    bytes: number;
    pcap_global_header: { magic: string; version: string; snaplen: number; linktype: number };
    packets: number;
    csi_packets_orig_len_1084: number;
    skipped_other_size: number;
    skipped_indices: number[];
    first_ts: [number, number];
    first_header: {
      magic: string;
      magic4: string;
      rssi: number;
      fctl: number;
      src_mac: string;
      seq: number;
      core_stream: string;
      chanspec: string;
      chip: string;
      core: number;
      stream: number;
      udp_dst_port: number;
      ip_src: string;
    };
    first_3_csi: number[][];
    sum_real_all: number;
    sum_imag_all: number;
  };
  'ath_csi_1.dat': {
    bytes: number;
    records: number;
    first: Record<string, number>;
    first_csi_nr0_nc0_tone0_2: number[][];
    first_csi_tone0_nc0_nr0_2: number[][];
    first_payload_first16_hex: string;
    last_timestamp: number;
    sum_real_all: number;
    sum_imag_all: number;
    n_complex_all: number;
  };
  'example_csi.csv': {
    bytes: number;
    rows: number;
    first_meta: Record<string, string>;
    first_raw_12: number[];
    values_per_row: number[];
    len_field_values: Record<string, number>;
    first_3_complex_parse_csi_py: number[][];
    rssi_all: number[];
    last_real_timestamp: string;
    sum_all_raw_ints: number;
  };
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
