import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import type { DecodeResult } from '../../src/csi/decoder.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { decodeAtheros } from '../../src/decoders/atheros.js';
import { decodeNexmon } from '../../src/decoders/nexmon.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { runDecode } from '../../src/cli/decode.js';
import { ensureBuilt, ndjson, repoRoot, runCli, type CliResult } from '../helpers/cli.js';
import { type DecodedFacts, describeWithSamples, groundTruth, matlabBfeeRecords, sample, sampleBytes } from '../helpers/samples.js';
import { HeldReader } from '../helpers/heldReader.js';

/** The fields every record has, in the order DECISIONS "Decoding captures" lists them (csi last). */
const COMMON = ['format', 'index', 'timestamp', 'seq', 'rssi', 'noise', 'channel', 'bandwidth_mhz', 'n_rx', 'n_tx', 'n_sub'];

/** Format-specific fields DECISIONS names, by format. */
const SPECIFIC: Record<CaptureFormat, string[]> = {
  intel5300: ['bfee_count', 'agc', 'perm'],
  atheros: [],
  nexmon: ['core', 'stream', 'chanspec', 'mac'],
  esp32: [],
};

interface Capture {
  format: CaptureFormat;
  file: string;
  /** Key of the file in decoded_facts.json. */
  facts: string;
  records: number;
  decode: (b: Uint8Array) => DecodeResult;
}

const CAPTURES: Capture[] = [
  { format: 'intel5300', file: 'intel5300/log.all_csi.6.7.6', facts: 'log.all_csi.6.7.6', records: 29, decode: (b) => decodeIntel5300(b) },
  { format: 'atheros', file: 'atheros/ath_csi_1.dat', facts: 'ath_csi_1.dat', records: 401, decode: (b) => decodeAtheros(b) },
  { format: 'nexmon', file: 'nexmon/example_43455c0.pcap', facts: 'example_43455c0.pcap', records: 548, decode: (b) => decodeNexmon(b) },
  { format: 'esp32', file: 'esp32/example_csi.csv', facts: 'example_csi.csv', records: 13, decode: (b) => decodeEsp32(b) },
];

type Pair = [number, number];
interface Rec {
  [k: string]: unknown;
  format: string;
  index: number;
  timestamp: number;
  seq: number;
  rssi: number[];
  channel: number | null;
  bandwidth_mhz: number | null;
  n_rx: number;
  n_tx: number;
  n_sub: number;
  csi: Pair[];
}

beforeAll(() => ensureBuilt(), 120_000);

describeWithSamples('csipose decode on the real captures', () => {
  const runs = new Map<CaptureFormat, Promise<CliResult>>();
  /** One process per capture, shared by the tests that look at its output. */
  const decodeRun = (c: Capture) => {
    let r = runs.get(c.format);
    if (!r) {
      r = runCli(['decode', '--format', c.format, sample(c.file)]);
      runs.set(c.format, r);
    }
    return r;
  };
  const parsed = new Map<CaptureFormat, Rec[]>();
  const records = async (c: Capture): Promise<Rec[]> => {
    const out = parsed.get(c.format) ?? ndjson<Rec>((await decodeRun(c)).stdout);
    parsed.set(c.format, out);
    return out;
  };

  for (const c of CAPTURES) {
    describe(c.format, () => {
      it(`exits 0 and prints ${c.records} records, one JSON object per line`, async () => {
        const r = await decodeRun(c);
        expect(r.timedOut).toBe(false);
        expect(r.code).toBe(0);
        expect(r.stdout.endsWith('\n')).toBe(true);
        const lines = r.stdout.split('\n').filter((l) => l.length > 0);
        expect(lines).toHaveLength(c.records);
        lines.forEach((l) => expect(l.startsWith('{') && l.endsWith('}')).toBe(true));
      });

      it('prints exactly the DECISIONS fields, then format-specific ones, csi last', async () => {
        for (const rec of await records(c)) {
          const keys = Object.keys(rec);
          expect(keys.slice(0, COMMON.length)).toEqual(COMMON);
          expect(keys[keys.length - 1]).toBe('csi');
          for (const k of SPECIFIC[c.format]) expect(keys).toContain(k);
          // Extras are snake_case and never the streaming sinks' wall-clock fields.
          for (const k of keys) expect(k).toMatch(/^[a-z][a-z0-9_]*$/);
          expect(keys).not.toContain('time');
          expect(keys).not.toContain('source_id');
          expect(rec.format).toBe(c.format);
        }
      });

      it('prints csi as [re, im] pairs, n_sub*n_rx*n_tx of them, in file order with indices 0..n-1', async () => {
        const recs = await records(c);
        recs.forEach((rec, i) => {
          expect(rec.index).toBe(i);
          expect(rec.csi).toHaveLength(rec.n_sub * rec.n_rx * rec.n_tx);
          // Counted rather than asserted one by one: nexmon alone has 140,288 pairs.
          const bad = rec.csi.filter((p) => !Array.isArray(p) || p.length !== 2 || !Number.isInteger(p[0]) || !Number.isInteger(p[1]));
          expect(bad).toEqual([]);
        });
      });

      it('prints the same values as the library decoder, record for record', async () => {
        const want = c.decode(sampleBytes(c.file)).frames;
        const recs = await records(c);
        expect(recs).toHaveLength(want.length);
        recs.forEach((rec, i) => {
          const w = want[i]!;
          expect(rec.seq).toBe(w.seq);
          expect(rec.csi.flat()).toEqual(Array.from(w.csi));
        });
      });

      it('checksums of every value match decoded_facts.json', async () => {
        const recs = await records(c);
        let re = 0;
        let im = 0;
        for (const rec of recs)
          for (const [a, b] of rec.csi) {
            re += a;
            im += b;
          }
        const facts = groundTruth<Record<string, { sum_all_raw_ints?: number; sum_real_all?: number; sum_imag_all?: number }>>('decoded_facts.json')[c.facts]!;
        if (c.format === 'esp32') {
          expect(re + im).toBe(facts.sum_all_raw_ints);
          // The file's values come imaginary first: odd positions are the real parts.
          let wantRe = 0;
          let wantIm = 0;
          for (const line of readFileSync(sample(c.file), 'utf8').split('\n')) {
            const list = /\[([^\]]*)\]/.exec(line);
            if (!list) continue;
            list[1]!
              .trim()
              .split(/\s+/)
              .map(Number)
              .forEach((v, k) => (k % 2 === 1 ? (wantRe += v) : (wantIm += v)));
          }
          expect([re, im]).toEqual([wantRe, wantIm]);
        } else {
          expect([re, im]).toEqual([facts.sum_real_all, facts.sum_imag_all]);
        }
      });
    });
  }

  it('intel5300: every record equals the MATLAB read_bf_file output (after perm)', async () => {
    const truth = matlabBfeeRecords();
    const recs = await records(CAPTURES[0]!);
    expect(recs).toHaveLength(truth.length);
    recs.forEach((rec, i) => {
      const t = truth[i]!;
      expect(rec.timestamp).toBe(t.timestamp_low);
      expect(rec.seq).toBe(t.bfee_count);
      expect(rec.bfee_count).toBe(t.bfee_count);
      expect([rec.n_rx, rec.n_tx, rec.n_sub]).toEqual([t.Nrx, t.Ntx, 30]);
      expect(rec.rssi).toEqual([t.rssi_a, t.rssi_b, t.rssi_c].slice(0, t.Nrx));
      expect(rec.noise).toBe(t.noise);
      expect(rec.agc).toBe(t.agc);
      expect(rec.perm).toEqual(t.perm);
      // index (sc * n_rx + rx) * n_tx + tx is exactly the flattening of csi[sc][rx][tx].
      expect(rec.csi).toEqual(t.csi_sc_rx_tx_reim.flat(2));
    });
  });

  it('intel5300: first record as SOURCES.md gives it', async () => {
    const [first] = await records(CAPTURES[0]!);
    expect(first).toMatchObject({ timestamp: 4, seq: 72, rssi: [33, 37, 41], noise: -127, n_rx: 3, n_tx: 1, n_sub: 30, agc: 38, perm: [3, 2, 1] });
    // sc0 rx0..2, then rx0 at sc1 and sc2: index (sc * 3 + rx).
    expect([first!.csi[0], first!.csi[1], first!.csi[2]]).toEqual([
      [11, -3],
      [10, 6],
      [-5, 14],
    ]);
    expect([first!.csi[3], first!.csi[6]]).toEqual([
      [3, -13],
      [-11, -8],
    ]);
  });

  it('atheros: first and last records as SOURCES.md gives them', async () => {
    const recs = await records(CAPTURES[1]!);
    const first = recs[0]!;
    expect(first).toMatchObject({ timestamp: 1461024888, channel: 6, bandwidth_mhz: 20, n_rx: 3, n_tx: 2, n_sub: 56 });
    // tone t, nr r, nc c at (t * 3 + r) * 2 + c.
    expect([first.csi[0], first.csi[6], first.csi[12]]).toEqual([
      [-177, 84],
      [-172, 109],
      [-162, 131],
    ]);
    expect([first.csi[0], first.csi[2], first.csi[4]]).toEqual([
      [-177, 84],
      [-33, 103],
      [41, -21],
    ]);
    expect(recs[400]!.timestamp).toBe(1461896418);
  });

  it('nexmon: first record, rssi spread, and "skipped 18 records" on stderr', async () => {
    const r = await decodeRun(CAPTURES[2]!);
    expect(r.stderr).toMatch(/skipped 18 records/);
    const recs = ndjson<Rec>(r.stdout);
    const first = recs[0]!;
    expect(first.timestamp).toBeCloseTo(1600957690.355509, 6);
    expect(first).toMatchObject({ rssi: [-58], channel: 42, bandwidth_mhz: 80, n_rx: 1, n_tx: 1, n_sub: 256, core: 0, stream: 0, mac: '98:de:d0:48:92:66' });
    expect(String(first.chanspec).toLowerCase()).toBe('0xe02a');
    expect(first.csi.slice(0, 3)).toEqual([
      [14373, 0],
      [-14848, -32640],
      [128, 0],
    ]);
    expect(recs.filter((x) => x.rssi[0] === -58)).toHaveLength(294);
    expect(recs.filter((x) => x.rssi[0] === -59)).toHaveLength(254);
  });

  it('esp32: imaginary-first pairs are printed as [re, im]; rssi per row as recorded', async () => {
    const r = await decodeRun(CAPTURES[3]!);
    expect(r.stderr).toMatch(/skipped 0 records/);
    const recs = ndjson<Rec>(r.stdout);
    expect(recs[0]!.csi.slice(0, 3)).toEqual([
      [-48, 101],
      [0, 5],
      [0, 0],
    ]);
    expect(recs[0]!.timestamp).toBe(80272146);
    expect(recs.map((x) => x.rssi[0])).toEqual(groundTruth<DecodedFacts>('decoded_facts.json')['example_csi.csv'].rssi_all);
    expect(recs.every((x) => x.n_sub === 64)).toBe(true);
  });

  describe('truncated and bad input', () => {
    let tmp: string;
    beforeAll(() => {
      tmp = mkdtempSync(join(tmpdir(), 'csipose-decode-'));
    });
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));

    it('a truncated Intel log exits 1 naming the byte offset, after printing the complete records', async () => {
      const path = join(tmp, 'truncated.dat');
      // The last record starts at 10880 (SOURCES.md); cut it short.
      writeFileSync(path, sampleBytes('intel5300/log.all_csi.6.7.6').subarray(0, 11_000));
      const r = await runCli(['decode', '--format', 'intel5300', path]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/byte offset 10880/);
      const recs = ndjson<Rec>(r.stdout);
      expect(recs).toHaveLength(28);
      expect(recs[27]!.index).toBe(27);
    });

    it('a truncated Nexmon pcap exits 1 naming the byte offset, after printing the complete records', async () => {
      const path = join(tmp, 'truncated.pcap');
      writeFileSync(path, sampleBytes('nexmon/example_43455c0.pcap').subarray(0, 622_696 - 500));
      const r = await runCli(['decode', '--format', 'nexmon', path]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/byte offset 621596/);
      expect(r.stderr).toMatch(/skipped 18 records/);
      expect(ndjson(r.stdout)).toHaveLength(547);
    });
  });
});

describeWithSamples('csipose decode into a slow reader', () => {
  it('waits for the reader instead of holding the whole output in memory, then writes every record', async () => {
    // 548 Nexmon records of ~2.8 KB: 1.5 MB of output, all queued at once before.
    const out = new HeldReader();
    const err = new PassThrough();
    let stderr = '';
    err.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    let status: number | undefined;
    const run = runDecode('nexmon', sample('nexmon/example_43455c0.pcap'), out, err).then((s) => (status = s));
    await sleep(500);
    expect(status).toBeUndefined();
    // What one 64 KiB chunk of the pcap decodes into (~160 KB of JSON), not the whole 1.5 MB.
    expect(out.writableLength).toBeLessThan(512 * 1024);
    out.release();
    await run;
    expect(status).toBe(0);
    expect(stderr).toBe('skipped 18 records\n');
    expect(ndjson<{ index: number }>(out.bytes().toString('utf8')).map((x) => x.index)).toEqual(Array.from({ length: 548 }, (_, i) => i));
  });
});

describe('csipose decode usage errors', () => {
  it('an unknown format exits 2 and names the formats', async () => {
    const r = await runCli(['decode', '--format', 'pcapng', 'whatever.bin']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/unknown format "pcapng"/);
    expect(r.stderr).toMatch(/intel5300/);
  });

  it('a missing file exits 1 with a message naming it', async () => {
    const missing = join(tmpdir(), 'csipose-no-such-capture.dat');
    const r = await runCli(['decode', '--format', 'intel5300', missing]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(missing);
  });

  it('an empty file holds no record: exit 1 with a message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'csipose-decode-empty-'));
    try {
      const path = join(dir, 'empty.dat');
      writeFileSync(path, new Uint8Array(0));
      const r = await runCli(['decode', '--format', 'intel5300', path]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`csipose decode: no CSI records of format intel5300 in ${path}\nskipped 0 records\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a file with no CSI in it (the README, as esp32) exits 1 with a message, not 0 with no output', async () => {
    const readme = join(repoRoot, 'README.md');
    const r = await runCli(['decode', '--format', 'esp32', readme]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(`^csipose decode: no CSI records of format esp32 in ${readme.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\nskipped [1-9]\\d* records\n$`),
    );
  });

  it('--format is required', async () => {
    const r = await runCli(['decode', 'x.dat']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--format/);
  });
});
