import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { argValue, printResults, type BenchResult } from './lib.js';

type Suite = { run(): Promise<BenchResult[]> };

/** Every stage benchmark, in this order; each runs in a process of its own. */
const SUITES: Record<string, () => Promise<Suite>> = {
  decode: () => import('./decode.js'),
  operators: () => import('./operators.js'),
  sense: () => import('./sense.js'),
  infer: () => import('./infer.js'),
  track: () => import('./track.js'),
  store: () => import('./store.js'),
  http: () => import('./http.js'),
  live: () => import('./live.js'),
  beamform: () => import('./beamform.js'),
  physics: () => import('./physics.js'),
};

/** Suites measured on one core: the process is pinned with taskset where there is one. */
const ONE_CORE = new Set(['live', 'beamform', 'physics']);
const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p));

/**
 * `npm run bench [-- --json] [-- --only NAME]`: every stage benchmark, as a table or as the JSON
 * document of DECISIONS "Benchmark output". Each suite runs in a fresh Node process so that one
 * suite's heap and JIT state (the simulator frames of another, say) cannot skew the next.
 */
async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const only = argValue('--only');
  const inChild = process.argv.includes('--child');
  if (only && !SUITES[only]) throw new Error(`unknown suite ${only} (suites: ${Object.keys(SUITES).join(', ')})`);
  const results: BenchResult[] = [];
  if (inChild && only) {
    results.push(...(await (await SUITES[only]!()).run()));
    process.stdout.write(JSON.stringify(results) + '\n');
    return;
  }
  for (const name of Object.keys(SUITES)) {
    if (only && only !== name) continue;
    if (!json) process.stderr.write(`running ${name}...\n`);
    const args = [process.execPath, fileURLToPath(import.meta.url), '--child', '--only', name];
    const pinned = ONE_CORE.has(name) && TASKSET ? [TASKSET, '-c', '0', ...args] : args;
    const child = spawnSync(pinned[0]!, pinned.slice(1), {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 << 20,
    });
    if (child.status !== 0) throw new Error(`suite ${name} failed (exit ${child.status})`);
    results.push(...(JSON.parse(child.stdout.trim().split('\n').pop()!) as BenchResult[]));
  }
  printResults(results, json);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
