import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { take } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../pipelines/index.js';
import { buildPipeline } from '../../src/cli/build.js';
import { OutputDemand } from '../../src/cli/sinks/index.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { cliMain, ensureBuilt, ndjson, repoRoot } from '../helpers/cli.js';
import { describeWithSamples, sample, sampleBytes } from '../helpers/samples.js';
import { HeldReader } from '../helpers/heldReader.js';

/**
 * How long a reader holds its end of the pipe before it reads. The assertions made after it hold
 * however slow the machine: a run that respects backpressure can never get further, and one that
 * does not is already past them after the source's first chunk of 64 items.
 */
const HOLD_MS = 500;

/** Most a sink may queue for a reader that takes nothing: its stream's high-water mark (16 KiB) plus a capture block (64 KiB) and change. */
const MAX_QUEUED = 128 * 1024;

interface HeldRun {
  /** Bytes the sink had queued for the reader when the hold ended. */
  queued: number;
  /** Whether the run had ended while the reader held. */
  endedWhileHeld: boolean;
  out: Buffer;
  stderr: string;
}

/**
 * Runs a pipeline in-process, wired as `csipose pipe` wires it (one OutputDemand for source and
 * sink), into a reader that holds for HOLD_MS and then reads everything.
 */
async function heldRun(pipeline: string, opts: { speed?: number; limit?: number } = {}): Promise<HeldRun> {
  const built = buildPipeline(pipeline, registry, { requireSink: true });
  const demand = new OutputDemand();
  const reader = new HeldReader();
  const stderr = new PassThrough();
  let err = '';
  stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  let stream = built.open({ demand, ...(opts.speed !== undefined ? { speed: opts.speed } : {}) });
  if (opts.limit !== undefined) stream = stream.pipe(take(opts.limit));
  const running = built.sink!.spec.run(stream, built.sink!.params, { stdout: reader, stderr, demand });
  let ended = false;
  running.done.then(
    () => (ended = true),
    () => (ended = true),
  );
  await sleep(HOLD_MS);
  const queued = reader.writableLength;
  const endedWhileHeld = ended;
  reader.release();
  await running.done;
  return { queued, endedWhileHeld, out: reader.bytes(), stderr: err };
}

/** The lines of NDJSON output, each parsed, after checking that the text ends with a newline. */
function lines<T>(out: Buffer | string): T[] {
  const text = out.toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  return ndjson<T>(text);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('a sink holds the source back while its reader is slow (in-process)', () => {
  it('sim --fast | ndjson: a few lines queue while the reader holds, then all 1500 arrive in order', async () => {
    // Unpaced, the simulator's first chunk alone (64 frames of ~13 KB) is 800 KB.
    const r = await heldRun('sim?seed=2 | ndjson', { speed: 0, limit: 1500 });
    expect(r.endedWhileHeld).toBe(false);
    expect(r.queued).toBeLessThan(MAX_QUEUED);
    expect(lines<{ index: number }>(r.out).map((x) => x.index)).toEqual(range(1500));
  }, 60_000);

  it('sim at 20x real time | ndjson: a paced source waits too', async () => {
    const r = await heldRun('sim?seed=2 | ndjson', { speed: 20, limit: 300 });
    expect(r.endedWhileHeld).toBe(false);
    expect(r.queued).toBeLessThan(MAX_QUEUED);
    expect(lines<{ index: number }>(r.out).map((x) => x.index)).toEqual(range(300));
  }, 60_000);

  it('sim --fast | capture path=-: the capture written to a held stdout is whole', async () => {
    const r = await heldRun('sim?seed=2 | capture path=-', { speed: 0, limit: 1000 });
    expect(r.endedWhileHeld).toBe(false);
    expect(r.queued).toBeLessThan(MAX_QUEUED);
    expect(r.stderr).toBe('capture: 1000 records -> standard output\n');
    const back = decodeIntel5300(new Uint8Array(r.out));
    expect(back.frames).toHaveLength(1000);
    expect(back.stats.skipped).toBe(0);
  }, 60_000);
});

describeWithSamples('a file source waits for a slow reader (in-process)', () => {
  const ATHEROS = sample('atheros/ath_csi_1.dat');

  it('file replay --fast (4 loops) | ndjson: every record, in order', async () => {
    const r = await heldRun(`file:${ATHEROS}?format=atheros&loop=4 | ndjson`, { speed: 0 });
    expect(r.endedWhileHeld).toBe(false);
    expect(r.queued).toBeLessThan(MAX_QUEUED);
    expect(lines<{ index: number }>(r.out).map((x) => x.index)).toEqual(range(4 * 401));
  }, 60_000);

  it('file bytes | atheros | ndjson: the file is read no faster than the output drains', async () => {
    const r = await heldRun(`file:${ATHEROS} | atheros | ndjson`);
    expect(r.endedWhileHeld).toBe(false);
    // One 64 KiB chunk of the file decodes into ~17 records of ~4 KB.
    expect(r.queued).toBeLessThan(MAX_QUEUED);
    expect(lines<{ index: number }>(r.out).map((x) => x.index)).toEqual(range(401));
  }, 60_000);
});

/** Starts `csipose ...args` with every stdio a pipe; the test decides when to read. */
function start(args: readonly string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [cliMain, ...args], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Exit code and stderr of a child, once it has closed (killed after `ms`, so a hang fails the test instead of timing it out). */
function closed(child: ChildProcessWithoutNullStreams, ms = 60_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const safety = setTimeout(() => child.kill('SIGKILL'), ms);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(safety);
      resolve({ code, signal, stderr });
    }),
  );
}

/** Everything the child writes to stdout from now on, as one Buffer once it closes. */
function readAll(child: ChildProcessWithoutNullStreams): Promise<Buffer> {
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stdout.resume();
  return new Promise((resolve) => child.stdout.on('close', () => resolve(Buffer.concat(chunks))));
}

/** Reads stdout until it holds `n` lines, then closes the reading end (what `| head -n` does). */
function headLines(child: ChildProcessWithoutNullStreams, n: number): Promise<string> {
  let text = '';
  return new Promise((resolve) => {
    const onData = (c: Buffer) => {
      text += c.toString('utf8');
      if (text.split('\n').length > n) {
        child.stdout.off('data', onData);
        child.stdout.destroy();
        resolve(text.split('\n').slice(0, n).join('\n') + '\n');
      }
    };
    child.stdout.on('data', onData);
    child.on('close', () => resolve(text));
  });
}

beforeAll(() => ensureBuilt(), 120_000);

describe('csipose pipe into a pipe', () => {
  it('a reader that holds the pipe gets every line once it reads: sim --fast --limit 1500', async () => {
    const child = start(['pipe', 'sim?seed=4 | ndjson', '--fast', '--limit', '1500']);
    child.stdin.end();
    const done = closed(child);
    let exited = false;
    child.on('exit', () => (exited = true));
    child.stdout.pause();
    await sleep(2 * HOLD_MS);
    // The run waits for its reader (and never exits with output still queued).
    expect(exited).toBe(false);
    const out = await readAll(child);
    const r = await done;
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(lines<{ index: number }>(out).map((x) => x.index)).toEqual(range(1500));
  }, 60_000);

  it('a reader that stops after 3 lines (| head -3) ends an endless run: exit 0, nothing on stderr', async () => {
    const child = start(['pipe', 'sim | ndjson', '--fast']);
    child.stdin.end();
    const done = closed(child);
    const head = await headLines(child, 3);
    expect(lines<{ index: number }>(head).map((x) => x.index)).toEqual([0, 1, 2]);
    expect(await done).toMatchObject({ code: 0, signal: null, stderr: '' });
  }, 60_000);

  it('capture path=- | head -c: exit 0, nothing on stderr', async () => {
    const child = start(['pipe', 'sim | capture path=-', '--fast']);
    child.stdin.end();
    const done = closed(child);
    await new Promise<void>((resolve) => {
      child.stdout.once('data', () => resolve());
      child.on('close', () => resolve());
    });
    child.stdout.destroy();
    expect(await done).toMatchObject({ code: 0, signal: null, stderr: '' });
  }, 60_000);
});

describeWithSamples('csipose pipe from stdin into a slow reader', () => {
  it('stops reading its stdin while its stdout is held, then decodes every record', async () => {
    // 300 copies of the Intel 5300 log (29 records each, 3.4 MB), as `cat ... | csipose pipe ... | slow`.
    const copies = 300;
    const log = sampleBytes('intel5300/log.all_csi.6.7.6');
    const input = Buffer.concat(Array.from({ length: copies }, () => log));
    const child = start(['pipe', 'stdin?format=intel5300 | ndjson']);
    const done = closed(child);
    child.stdin.on('error', () => undefined);
    child.stdin.write(input);
    child.stdin.end();
    // Its first output shows it is up and decoding; from then on nothing is read.
    const first = await new Promise<Buffer>((resolve) => {
      child.stdout.once('data', (c: Buffer) => {
        child.stdout.pause();
        resolve(c);
      });
      child.on('close', () => resolve(Buffer.alloc(0)));
    });
    await sleep(4 * HOLD_MS);
    // The child wrote until its stdout was full and stopped reading: most of the input still
    // waits on our side of its stdin. (Before, it read and decoded all of it into memory.)
    expect(child.stdin.writableLength).toBeGreaterThan(input.length / 2);
    const out = Buffer.concat([first, await readAll(child)]);
    const r = await done;
    expect(r).toMatchObject({ code: 0 });
    const recs = lines<{ index: number; seq: number }>(out);
    expect(recs).toHaveLength(copies * 29);
    expect(recs.map((x) => x.index)).toEqual(range(copies * 29));
  }, 60_000);
});

describeWithSamples('csipose decode into a pipe', () => {
  it('| head -1: exit 0, nothing on stderr (it printed an EPIPE stack trace)', async () => {
    const child = start(['decode', '--format', 'nexmon', sample('nexmon/example_43455c0.pcap')]);
    child.stdin.end();
    const done = closed(child);
    const head = await headLines(child, 1);
    expect(lines<{ index: number }>(head).map((x) => x.index)).toEqual([0]);
    expect(await done).toMatchObject({ code: 0, signal: null, stderr: '' });
  }, 60_000);
});

describe('Ctrl-C stops a running pipeline cleanly (sinks are flushed)', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-sigint-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  /** Waits until `path` holds at least one complete line. */
  async function untilLine(path: string, child: ChildProcessWithoutNullStreams): Promise<void> {
    while (child.exitCode === null && !(existsSync(path) && readFileSync(path, 'utf8').includes('\n'))) await sleep(50);
  }

  for (const pipeline of ['sense', 'live']) {
    it(`run --source sim --pipeline ${pipeline} --sink "ndjson path=FILE": exit 0, the file ends with a whole line`, async () => {
      const path = join(tmp, `${pipeline}.ndjson`);
      const child = start(['run', '--source', 'sim', '--pipeline', pipeline, '--sink', `ndjson path=${path}`]);
      child.stdin.end();
      child.stdout.resume();
      const done = closed(child);
      await untilLine(path, child);
      child.kill('SIGINT');
      const r = await done;
      expect(r).toMatchObject({ code: 0, signal: null, stderr: '' });
      const recs = lines<Record<string, unknown>>(readFileSync(path));
      expect(recs.length).toBeGreaterThanOrEqual(1);
    }, 60_000);
  }

  it('to a held stdout: what was queued is still delivered, every line whole and none missing', async () => {
    const child = start(['pipe', 'sim?seed=9 | ndjson', '--fast']);
    child.stdin.end();
    const done = closed(child);
    let first = '';
    await new Promise<void>((resolve) => {
      child.stdout.once('data', (c: Buffer) => {
        first = c.toString('utf8');
        child.stdout.pause();
        resolve();
      });
      child.on('close', () => resolve());
    });
    // Let the output back up behind the held reader, then interrupt.
    await sleep(HOLD_MS);
    child.kill('SIGINT');
    await sleep(HOLD_MS);
    const rest = await readAll(child);
    const r = await done;
    expect(r).toMatchObject({ code: 0, signal: null, stderr: '' });
    const recs = lines<{ index: number }>(Buffer.concat([Buffer.from(first), rest]));
    expect(recs.length).toBeGreaterThanOrEqual(1);
    expect(recs.map((x) => x.index)).toEqual(range(recs.length));
  }, 60_000);
});
