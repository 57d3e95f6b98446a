import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATORS } from '../../operators/index.js';
import { registry } from '../../pipelines/index.js';
import { buildPipeline } from '../../src/cli/build.js';
import { PipelineError } from '../../src/engine/pipeline.js';
import { decodeAtheros } from '../../src/decoders/atheros.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { cliMain, ensureBuilt, ndjson, repoRoot, runCli } from '../helpers/cli.js';
import { describeWithSamples, matlabBfeeRecords, sample, sampleBytes } from '../helpers/samples.js';

const haveSimulator = existsSync(join(repoRoot, 'src/sim/simulator.ts'));
const itWithSimulator = haveSimulator ? it : it.skip;

interface Spectrum {
  kind: string;
  source_id: string;
  environment_id: string;
  window_index: number;
  time: string;
  rate_hz: number | null;
  bin_hz: number | null;
  n_streams: number;
  n_bins: number;
  streams: string[];
  power: number[][];
}

/**
 * Windows the `window` operator emits for a run of frames of one shape: it empties its ring buffer
 * whenever nRx, nTx, nSub (or the sender) change, so each run of equal shapes is windowed on its
 * own: a window once `size` frames are in, then one every `hop` frames; a run shorter than `size`
 * gives none (operators/slidingWindow.ts).
 */
function windowsPerRun(runLength: number, size: number, hop: number): number {
  return runLength < size ? 0 : Math.floor((runLength - size) / hop) + 1;
}

/** Lengths of the runs of equal consecutive values. */
function runs(values: readonly string[]): number[] {
  const out: number[] = [];
  values.forEach((v, i) => (i > 0 && v === values[i - 1] ? out[out.length - 1]!++ : out.push(1)));
  return out;
}

function expectWellFormedSpectra(spectra: Spectrum[]): void {
  for (const s of spectra) {
    expect(s.kind).toBe('doppler');
    expect(s.streams).toHaveLength(s.n_streams);
    expect(s.power).toHaveLength(s.n_streams);
    for (const row of s.power) {
      expect(row).toHaveLength(s.n_bins);
      expect(row.every((p) => Number.isFinite(p) && p >= 0)).toBe(true);
    }
  }
}

beforeAll(() => ensureBuilt(), 120_000);

describe('csipose operators', () => {
  it('lists every operator and sink with each parameter and its default', async () => {
    const r = await runCli(['operators']);
    expect(r.code).toBe(0);
    for (const op of OPERATORS) {
      expect(r.stdout).toMatch(new RegExp(`^  ${op.name}  ${op.input} -> ${op.output}  `, 'm'));
      for (const p of op.params) expect(r.stdout).toContain(`    ${p.name}=${String(p.default)}  (${p.type}`);
    }
    for (const sink of ['ndjson', 'stats', 'null']) expect(r.stdout).toMatch(new RegExp(`^  ${sink}  `, 'm'));
    // The defaults users rely on most, spelled out.
    const section = (name: string) => r.stdout.slice(r.stdout.indexOf(`\n  ${name}  `) + 1).split(/\n {2}(?=\S)/)[0]!;
    expect(section('window')).toContain('size=64  (int [2..4096])');
    expect(section('window')).toContain('hop=8  (int');
    expect(section('doppler')).toContain('groups=3  (int');
    expect(section('sanitize')).toMatch(/method=\w+ {2}\(enum one of/);
  });

  it('--json parses and carries the same operators and parameters', async () => {
    const r = await runCli(['operators', '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      operators: Array<{ name: string; input: string; output: string; params: Array<{ name: string; default: unknown; type: string }> }>;
      sinks: Array<{ name: string }>;
    };
    expect(doc.operators.map((o) => o.name)).toEqual(OPERATORS.map((o) => o.name));
    expect(doc.sinks.map((s) => s.name)).toEqual(['ndjson', 'stats', 'null', 'capture']);
    const window = doc.operators.find((o) => o.name === 'window')!;
    expect(window).toMatchObject({ input: 'frame', output: 'window' });
    expect(window.params.find((p) => p.name === 'size')).toMatchObject({ type: 'int', default: 64 });
    expect(window.params.find((p) => p.name === 'hop')).toMatchObject({ type: 'int', default: 8 });
    const doppler = doc.operators.find((o) => o.name === 'doppler')!;
    expect(doppler.params.find((p) => p.name === 'groups')).toMatchObject({ default: 3 });
  });

  it('csipose pipelines lists sense with its stages', async () => {
    const r = await runCli(['pipelines']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^sense {2}/m);
    expect(r.stdout).toMatch(/sanitize .*\| window size=64 hop=8 \| doppler groups=3/);
  });
});

describeWithSamples('csipose pipe and run on the real captures', () => {
  const INTEL = sample('intel5300/log.all_csi.6.7.6');
  const ATHEROS = sample('atheros/ath_csi_1.dat');
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-pipe-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('file | intel5300 | sanitize | window size=8 hop=4 | doppler | ndjson: one spectrum per window of each shape', async () => {
    const r = await runCli(['pipe', `file:${INTEL} | intel5300 | sanitize | window size=8 hop=4 | doppler | ndjson`]);
    expect(r.code).toBe(0);
    // 29 records: 10 of 3x1, 9 of 3x2, 10 of 3x3 (ground truth), each run windowed on its own.
    const shapes = matlabBfeeRecords().map((t) => `${t.Nrx}x${t.Ntx}`);
    expect(runs(shapes)).toEqual([10, 9, 10]);
    const expected = runs(shapes).reduce((n, len) => n + windowsPerRun(len, 8, 4), 0);
    expect(expected).toBe(3);
    const spectra = ndjson<Spectrum>(r.stdout);
    expect(spectra).toHaveLength(expected);
    expectWellFormedSpectra(spectra);
    expect(spectra.map((s) => s.window_index)).toEqual([0, 1, 2]);
    // 3 subcarrier groups per link: 3x1, 3x2 and 3x3 links.
    expect(spectra.map((s) => s.n_streams)).toEqual([9, 18, 27]);
    // An 8-frame window is already a power of two: 8 bins.
    expect(spectra.every((s) => s.n_bins === 8)).toBe(true);
    expect(spectra[0]!.streams[0]).toMatch(/^rx0-tx0 sc\[-28\.\./);
  });

  it('run --source file:...?format=atheros --pipeline sense --sink ndjson --fast paces windows by the recorded TSF', async () => {
    const r = await runCli(['run', '--source', `file:${ATHEROS}?format=atheros`, '--pipeline', 'sense', '--sink', 'ndjson', '--fast']);
    expect(r.code).toBe(0);
    const frames = decodeAtheros(sampleBytes('atheros/ath_csi_1.dat')).frames;
    const shapeRuns = runs(frames.map((f) => `${f.nRx}x${f.nTx}x${f.nSub}`));
    expect(shapeRuns).toEqual([401]);
    const spectra = ndjson<Spectrum>(r.stdout);
    expect(spectra).toHaveLength(windowsPerRun(401, 64, 8));
    expect(spectra).toHaveLength(43);
    expectWellFormedSpectra(spectra);
    expect(spectra.every((s) => s.n_streams === 3 * 2 * 3 && s.n_bins === 64)).toBe(true);
    expect(spectra[0]!.source_id).toBe(`file:${ATHEROS}`);
    // The TSF steps of this log are all forward and short, so the replay timeline follows them
    // and each window's rate is 1e6 / (median TSF step in µs) of its 64 frames.
    const tsf = frames.map((f) => f.clockUs);
    const steps = tsf.slice(1).map((t, i) => t - tsf[i]!);
    expect(steps.every((d) => d > 0 && d < 10_000_000)).toBe(true);
    spectra.forEach((s, k) => {
      const sorted = steps.slice(k * 8, k * 8 + 63).sort((a, b) => a - b);
      const want = 1e6 / sorted[31]!;
      expect(Math.abs(s.rate_hz! - want) / want).toBeLessThan(1e-3);
      expect(s.bin_hz!).toBeCloseTo(s.rate_hz! / 64, 9);
    });
    // Spectrum times are the window's last frame: 8 frames of TSF apart.
    for (let k = 1; k < spectra.length; k++) {
      const dt = Date.parse(spectra[k]!.time) - Date.parse(spectra[k - 1]!.time);
      expect(Math.abs(dt - (tsf[k * 8 + 63]! - tsf[(k - 1) * 8 + 63]!) / 1000)).toBeLessThanOrEqual(1);
    }
  });

  it('--limit N stops after N output items', async () => {
    const r = await runCli(['run', '--source', `file:${ATHEROS}`, '--limit', '5', '--fast']);
    expect(r.code).toBe(0);
    const spectra = ndjson<Spectrum>(r.stdout);
    expect(spectra.map((s) => s.window_index)).toEqual([0, 1, 2, 3, 4]);

    const f = await runCli(['pipe', `file:${sample('nexmon/example_43455c0.pcap')}?speed=0 | ndjson`, '--limit', '7']);
    expect(f.code).toBe(0);
    expect(ndjson<{ index: number }>(f.stdout).map((x) => x.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('frames through the ndjson sink are printed as decode prints them, plus time and ids', async () => {
    const r = await runCli(['pipe', `file:${sample('esp32/example_csi.csv')} | ndjson`, '--fast', '--env', 'lab-7']);
    expect(r.code).toBe(0);
    const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;
    const lines = ndjson<{ format: string; index: number; time: string; source_id: string; environment_id: string; csi: number[][] }>(r.stdout);
    expect(lines).toHaveLength(13);
    lines.forEach((l, i) => {
      expect(l).toMatchObject({ format: 'esp32', index: i, environment_id: 'lab-7', source_id: `file:${sample('esp32/example_csi.csv')}` });
      expect(l.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(l.csi.flat()).toEqual(Array.from(want[i]!.csi));
    });
  });

  it('stdin?format=esp32 decodes what is piped in', async () => {
    const r = await runCli(['pipe', 'stdin?format=esp32 | ndjson'], { input: readFileSync(sample('esp32/example_csi.csv')) });
    expect(r.code).toBe(0);
    expect(ndjson<{ index: number }>(r.stdout).map((x) => x.index)).toEqual([...Array(13).keys()]);
    // A pipeline starting with "-" must follow "--", or the option parser takes it for an option.
    const raw = await runCli(['pipe', '--', '- | esp32 | ndjson'], { input: readFileSync(sample('esp32/example_csi.csv')) });
    expect(raw.code).toBe(0);
    expect(ndjson(raw.stdout)).toHaveLength(13);
  });

  it('the null and stats sinks count items on stderr; ndjson path= writes a file', async () => {
    const n = await runCli(['pipe', `file:${ATHEROS}?speed=0 | null`]);
    expect(n.code).toBe(0);
    expect(n.stdout).toBe('');
    expect(n.stderr).toMatch(/^done: 401 items in /m);
    const s = await runCli(['pipe', `file:${ATHEROS}?speed=0 | stats interval=3600`]);
    expect(s.code).toBe(0);
    expect(s.stderr).toMatch(/^done: 401 items in .* s \(/m);
    const out = join(tmp, 'frames.ndjson');
    const w = await runCli(['pipe', `file:${INTEL}?speed=0 | ndjson path=${out}`]);
    expect(w.code).toBe(0);
    expect(w.stdout).toBe('');
    expect(ndjson(readFileSync(out, 'utf8'))).toHaveLength(29);
  });

  it('a file source that reports skipped records prints the count on stderr', async () => {
    const r = await runCli(['pipe', `file:${sample('nexmon/example_43455c0.pcap')}?speed=0 | null`]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/done: 548 items/);
    expect(r.stderr).toMatch(/skipped 18 records/);
  });
});

describe('csipose pipe: a bad pipeline is refused with a caret under the bad stage (exit 2)', () => {
  /** Column of the first caret on the line under the echoed pipeline, relative to the pipeline text. */
  function caret(stderr: string, pipeline: string): { at: number; width: number } {
    const lines = stderr.split('\n');
    const echo = lines.findIndex((l) => l === `  ${pipeline}`);
    expect(echo).toBeGreaterThan(0);
    const marks = lines[echo + 1]!;
    const at = marks.indexOf('^');
    return { at: at - 2, width: marks.length - at };
  }

  // `cli` marks the cases also run through a real process; the rest are checked on buildPipeline,
  // whose PipelineError message is what the CLI prints after "csipose: ".
  const cases: Array<{ pipeline: string; stage: number; bad: string; message: RegExp; cli?: boolean }> = [
    { pipeline: 'sim | sanitise | ndjson', stage: 2, bad: 'sanitise', message: /unknown operator "sanitise" \(did you mean "sanitize"\?\)/, cli: true },
    {
      pipeline: 'sim | sanitize | window size=1 | ndjson',
      stage: 3,
      bad: 'window size=1',
      message: /"window": parameter "size" must be >= 2, got 1/,
      cli: true,
    },
    { pipeline: 'sim | window | sanitize | ndjson', stage: 3, bad: 'sanitize', message: /"sanitize" takes frame but the previous stage gives window/ },
    { pipeline: 'sim | doppler | ndjson', stage: 2, bad: 'doppler', message: /takes window but the previous stage gives frame \(add a window stage first\)/ },
    { pipeline: 'sim | window hop | ndjson', stage: 2, bad: 'hop', message: /expected key=value, got "hop"/ },
    { pipeline: 'sim | sanitize', stage: 2, bad: 'sanitize', message: /a pipeline ends with a sink \(ndjson, stats, null, capture\)/ },
    {
      pipeline: 'file:/tmp/x.dat?speed=fast | ndjson',
      stage: 1,
      bad: 'file:/tmp/x.dat?speed=fast',
      message: /speed must be a number >= 0, got "fast"/,
      cli: true,
    },
    { pipeline: 'udp://0.0.0.0:5500 | ndjson', stage: 1, bad: 'udp://0.0.0.0:5500', message: /needs \?format=/ },
    {
      pipeline: 'file:/tmp/capture.bin | sanitize | ndjson',
      stage: 2,
      bad: 'sanitize',
      message: /takes frame but the previous stage gives bytes \(add a decoder stage first/,
    },
    {
      pipeline: 'sim | sanitize | window size=128 | features | infer site=6,5,7,0.2,1.2,3,4.8,1.2 | ndjson',
      stage: 5,
      bad: 'infer site=6,5,7,0.2,1.2,3,4.8,1.2',
      message: /"infer": site: receiver x must be in 0..6 m \(the room width\), got 7/,
      cli: true,
    },
  ];
  for (const { pipeline, stage, bad, message, cli } of cases) {
    it(`"${pipeline}"`, async () => {
      let err: unknown;
      try {
        buildPipeline(pipeline, registry, { requireSink: true });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PipelineError);
      const pe = err as PipelineError;
      expect(pe.stage).toBe(stage);
      expect(pe.reason).toMatch(message);
      expect(caret(pe.message, pipeline)).toEqual({ at: pipeline.indexOf(bad), width: bad.length });
      if (!cli) return;
      const r = await runCli(['pipe', pipeline]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`csipose: ${pe.message}\n`);
      expect(r.stderr).toMatch(new RegExp(`^csipose: stage ${stage}: `));
    });
  }

  it('run builds "SOURCE | PIPELINE | SINK" and points into it the same way', async () => {
    const r = await runCli(['run', '--source', 'sim?nsub=31', '--fast']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/stage 1: sim: nsub must be 30, 56 or 114, got 31/);
    const k = await runCli(['run', '--source', 'sim', '--sink', 'ndjsn', '--fast']);
    expect(k.code).toBe(2);
    // The last stage is taken for the sink; a misspelt one is pointed at.
    expect(k.stderr).toMatch(/stage 3: a pipeline ends with a sink/);
    expect(caret(k.stderr, 'sim | sense | ndjsn')).toEqual({ at: 14, width: 5 });
  });
});

describe('csipose run with the simulator', () => {
  itWithSimulator('run --source sim --limit 5 --fast prints 5 spectra', async () => {
    const r = await runCli(['run', '--source', 'sim?seed=1&people=2', '--pipeline', 'sense', '--limit', '5', '--fast']);
    expect(r.code).toBe(0);
    const spectra = ndjson<Spectrum>(r.stdout);
    expect(spectra).toHaveLength(5);
    expectWellFormedSpectra(spectra);
    expect(spectra.map((s) => s.window_index)).toEqual([0, 1, 2, 3, 4]);
    // Default simulator: 3x3 links, 30 subcarriers, 3 groups; 64-frame windows.
    expect(spectra.every((s) => s.n_streams === 27 && s.n_bins === 64 && s.source_id === 'sim')).toBe(true);
    // The same seed as fast as possible gives the same stream.
    const again = await runCli(['run', '--source', 'sim?seed=1&people=2', '--pipeline', 'sense', '--limit', '5', '--fast']);
    expect(again.stdout).toBe(r.stdout);
  });

  itWithSimulator(
    'run --pipeline live --fast infers every window: every 8 frames a pose frame, none shed',
    async () => {
      // As fast as possible the source yields between small chunks, so the inference worker's
      // results get in and its queue never overflows (with 1,024-frame chunks most windows were dropped).
      const r = await runCli(['run', '--source', 'sim?seed=3&people=2', '--pipeline', 'live', '--limit', '600', '--fast']);
      expect(r.code).toBe(0);
      const frames = ndjson<{ timestamp: string; frame_id: number }>(r.stdout);
      expect(frames).toHaveLength(600);
      // The same seed windowed without inference: one pose frame per window, at the window's end.
      const w = await runCli([
        'run',
        '--source',
        'sim?seed=3&people=2',
        '--pipeline',
        'sanitize | window size=128 hop=8 | features',
        '--limit',
        '600',
        '--fast',
      ]);
      const rows = ndjson<{ frameTime: number }>(w.stdout);
      expect(frames.map((f) => Date.parse(f.timestamp))).toEqual(rows.map((x) => Math.round(x.frameTime)));
    },
    60_000,
  );

  itWithSimulator('SIGINT stops a live run cleanly: exit 0, every line complete', async () => {
    const child = spawn(process.execPath, [cliMain, 'run', '--source', 'sim'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const safety = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (out.includes('\n')) resolve();
      });
      child.on('close', () => resolve());
    });
    child.kill('SIGINT');
    const code = await closed;
    clearTimeout(safety);
    expect(code).toBe(0);
    expect(out.endsWith('\n')).toBe(true);
    const spectra = ndjson<Spectrum>(out);
    expect(spectra.length).toBeGreaterThanOrEqual(1);
    expectWellFormedSpectra(spectra);
  });

  itWithSimulator('a reader that closes the pipe early ends an endless run', async () => {
    const child = spawn(process.execPath, [cliMain, 'run', '--source', 'sim', '--fast'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const safety = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy();
    const code = await closed;
    clearTimeout(safety);
    expect(code).toBe(0);
  });
});
