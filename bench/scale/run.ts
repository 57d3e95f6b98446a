/**
 * `npm run bench:scale [-- --json] [-- --quick] [-- --only bus,e2e,...]`: the cluster's figures
 * (issue 21, item 7; docs/scale.md "Benchmarks"), every node a real process on a real nats-server.
 *
 * Parts, in this order (`--only` takes their names, comma-separated):
 * - `bus`: `scale.bus_overhead`, CSI frames/s through ingest -> NATS JetStream -> worker over the
 *   same pipeline in one process (bench/scale/busOverhead.ts);
 * - `e2e`: `scale.e2e_p99_ms`, UDP packet to `/ws/pose` through a cluster, beside one process
 *   (bench/scale/e2e.ts);
 * - `handover`: `scale.handover_s`, a worker SIGKILLed to the other's first frame of its room
 *   (bench/scale/handover.ts);
 * - `alerts`: `scale.alerts_lost` and `scale.alerts_duplicated` across 20 worker kills
 *   (bench/scale/alerts.ts);
 * - `revocation`: `scale.revocation_s`, a token revoked on one api node to its refusal by another
 *   through Redis (bench/scale/revocation.ts);
 * - `fanout`: `scale.fanout_p99_ratio`, an api node's `/ws/pose` fan-out to 1,000 subscribers
 *   against a plain ws broadcast of the same bytes (bench/scale/fanout.ts).
 *
 * Each part runs in a process of its own, in a process group of its own: whatever a part started
 * and left behind (a node, nats-server, redis-server) is killed with its group when it ends, fails
 * or passes its give-up bound, and when this process is interrupted. Its temp dirs are made under
 * one folder of its own (TMPDIR), removed when it ends. One JSON document on stdout
 * with `--json` (bench/lib.ts printResults), a table otherwise; progress on stderr. A part that
 * fails gives no figure: the others are still printed and the exit status is 1.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { argValue, printResults, type BenchResult } from '../lib.js';
import type { ScaleOptions } from './cluster.js';

type Run = (o: ScaleOptions) => Promise<BenchResult[]>;

/** The parts by name, in running order. */
const PARTS: Record<string, () => Promise<Run>> = {
  bus: async () => (await import('./busOverhead.js')).run,
  e2e: async () => (await import('./e2e.js')).run,
  handover: async () => (await import('./handover.js')).run,
  alerts: async () => (await import('./alerts.js')).run,
  revocation: async () => {
    const { run } = await import('./revocation.js');
    return (o) => run({ rounds: o.quick ? 10 : 40 });
  },
  fanout: async () => (await import('./fanout.js')).run,
};

/** A part's give-up bound (a safety net: the whole run is meant to take about 10 minutes, `--quick` 3). */
const GIVE_UP_MS = { full: 15 * 60_000, quick: 5 * 60_000 };

/** Marks the results line of a part's process. */
const RESULTS = 'bench-scale-results ';

/** In a part's process: runs it and writes its results as one line. */
async function child(name: string, quick: boolean): Promise<void> {
  const load = PARTS[name];
  if (!load) throw new Error(`unknown part ${name}`);
  const results = await (await load())({ quick, log: (s) => process.stderr.write(`${s}\n`) });
  process.stdout.write(`${RESULTS}${JSON.stringify(results)}\n`);
}

/** The process group running a part now and its temp folder (killed and removed on interruption). */
let running: number | undefined;
let runningTmp: string | undefined;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
}

/** Runs a part in a process group of its own; resolves with its results, rejects when it fails. */
function runPart(name: string, quick: boolean, log: (s: string) => void): Promise<BenchResult[]> {
  return new Promise((resolve, reject) => {
    const args = [fileURLToPath(import.meta.url), '--part', name, ...(quick ? ['--quick'] : [])];
    // Its temp dirs (nats-server's store, data directories) go under one of its own, removed once
    // its group is gone: a part that was killed cleans nothing up itself.
    const tmp = mkdtempSync(join(tmpdir(), 'csipose-bench-scale-'));
    runningTmp = tmp;
    const proc = spawn(process.execPath, args, { detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, TMPDIR: tmp } });
    running = proc.pid;
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const bound = quick ? GIVE_UP_MS.quick : GIVE_UP_MS.full;
    const timer = setTimeout(() => {
      log(`${name}: gave up after ${bound / 60_000} min; killing it`);
      killGroup(proc.pid);
    }, bound);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      // Whatever the part left running goes with its group, and its files with their folder.
      killGroup(proc.pid);
      running = undefined;
      runningTmp = undefined;
      rmSync(tmp, { recursive: true, force: true });
      const line = out.split('\n').find((l) => l.startsWith(RESULTS));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULTS.length)) as BenchResult[]);
      else reject(new Error(`part ${name} failed (exit ${code ?? signal})`));
    });
  });
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const part = argValue('--part');
  if (part) return child(part, quick);
  const json = process.argv.includes('--json');
  const only = argValue('--only')
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of only ?? []) if (!(name in PARTS)) throw new Error(`unknown part ${name} (parts: ${Object.keys(PARTS).join(', ')})`);
  const log = (s: string) => process.stderr.write(`${s}\n`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      killGroup(running);
      if (runningTmp) rmSync(runningTmp, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const t0 = Date.now();
  const results: BenchResult[] = [];
  const failed: string[] = [];
  for (const name of Object.keys(PARTS)) {
    if (only && !only.includes(name)) continue;
    const t = Date.now();
    log(`\n== ${name}${quick ? ' (--quick)' : ''}`);
    try {
      results.push(...(await runPart(name, quick, log)));
      log(`${name}: ${Math.round((Date.now() - t) / 1000)} s`);
    } catch (e) {
      log(`${name}: ${(e as Error).message}`);
      failed.push(name);
    }
  }
  log(
    `\nbench:scale took ${Math.round((Date.now() - t0) / 1000)} s${quick ? ' (--quick)' : ''}${failed.length ? `; no figures from: ${failed.join(', ')}` : ''}`,
  );
  printResults(results, json);
  if (failed.length) process.exitCode = 1;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:scale failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
