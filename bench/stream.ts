/**
 * `npm run bench:stream [-- --json] [-- --quick]`: the streaming outlet under load.
 * Also `--only fanout|e2e` (one part), `--counts 100,10000` (only these client counts),
 * `--client-procs N` (client processes for the fan-out, default 1), `--e2e-format F`.
 *
 * 1. Fan-out: `/ws/pose` (uWebSockets.js topics) against a plain `ws` broadcast of the same frames
 *    of the real pipeline to the same clients, 100 / 1,000 / 10,000 clients, 1 and 10 filter sets,
 *    A B A B (`bench/stream/fanout.ts`).
 * 2. End to end: CSI packets by UDP into `csipose serve` -> the pose_update a client receives
 *    (`bench/stream/e2e.ts`).
 *
 * One JSON document on stdout with `--json` (DECISIONS "Benchmark output"), a table otherwise;
 * progress and the verdict on the targets on stderr.
 */
import { argValue, printResults, type BenchResult } from './lib.js';
import { runFanout } from './stream/fanout.js';
import { FULL, QUICK } from './stream/plan.js';
import { runE2e } from './stream/e2e.js';
import { verdict } from './stream/targets.js';

/** Runs the parts asked for and prints the results. */
async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const quick = process.argv.includes('--quick');
  const only = argValue('--only');
  const procs = Number(argValue('--client-procs') ?? 1);
  const counts = argValue('--counts')?.split(',').map(Number);
  if (only && only !== 'fanout' && only !== 'e2e') throw new Error(`--only fanout|e2e, got ${only}`);
  if (!Number.isInteger(procs) || procs < 1 || procs > 4) throw new Error('--client-procs must be 1..4');
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const t0 = Date.now();
  const results: BenchResult[] = [];
  const base = quick ? QUICK : FULL;
  const rates = base.rates.map((r) => ({ ...r, counts: r.counts.filter((n) => !counts || counts.includes(n)) })).filter((r) => r.counts.length > 0);
  if (only !== 'e2e') results.push(...(await runFanout({ ...base, rates, clientProcs: procs }, log)));
  if (only !== 'fanout') results.push(...(await runE2e({ frames: quick ? 60 : 250, warmupFrames: 10 }, log)));
  log(`\nbench:stream took ${Math.round((Date.now() - t0) / 1000)} s${quick ? ' (--quick)' : ''}`);
  log(verdict(results));
  printResults(results, json);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench:stream failed: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
