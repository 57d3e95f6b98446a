import { machine, table, type BenchResult } from './lib.js';
import * as decode from './decode.js';
import * as operators from './operators.js';
import * as sense from './sense.js';
import * as track from './track.js';
import * as infer from './infer.js';
import * as http from './http.js';
import * as store from './store.js';

/**
 * `npm run bench [-- --json] [-- --only NAME]`: every stage benchmark, as a table or as the JSON
 * document of DECISIONS "Benchmark output".
 */
async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const suites = { decode, operators, sense, infer, track, store, http };
  const results: BenchResult[] = [];
  for (const [name, suite] of Object.entries(suites)) {
    if (only && only !== name) continue;
    if (!json) process.stderr.write(`running ${name}...\n`);
    results.push(...(await suite.run()));
  }
  const m = machine();
  if (json) {
    const clean = results.map((r) => ({ ...r, value: Number.isFinite(r.value) ? r.value : null }));
    process.stdout.write(JSON.stringify({ node: m.node, cpu: m.cpu, results: clean }, null, 2) + '\n');
  } else {
    process.stdout.write(`node ${m.node}, ${m.cpu}\n\n${table(results)}\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
