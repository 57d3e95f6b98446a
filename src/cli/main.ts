#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { take } from 'rxjs';
import { readFileSync } from 'node:fs';
import { registry } from '../../operators/index.js';
import { buildPipeline } from '../engine/build.js';
import { PipelineError } from '../engine/pipeline.js';
import { runDecode } from './decode.js';
import { describeOperators, describePipelines } from './describe.js';
import type { DecodeStats } from '../csi/decoder.js';
import { serveCommand } from './serve.js';
import { calibrateCommand } from './calibrate.js';
import { keysCommand } from './keys.js';
import { queryCommand } from './query.js';
import { exportCommand } from './export.js';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

function number(min: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`must be a number >= ${min}`);
    return n;
  };
}

interface RunFlags {
  speed?: number;
  fast?: boolean;
  limit?: number;
  env?: string;
}

/** Runs a built pipeline into its sink until the source ends or SIGINT/SIGTERM. */
async function execute(text: string, flags: RunFlags): Promise<number> {
  let built;
  try {
    built = buildPipeline(text, registry, { requireSink: true });
  } catch (e) {
    if (e instanceof PipelineError) {
      process.stderr.write(`csipose: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const sink = built.sink!;
  let decodeStats: DecodeStats | undefined;
  const speed = flags.fast ? 0 : flags.speed;
  let stream = built.open({
    ...(speed !== undefined ? { speed } : {}),
    ...(flags.env ? { environmentId: flags.env } : {}),
    onDecodeStats: (s) => (decodeStats = s),
  });
  if (flags.limit !== undefined) stream = stream.pipe(take(flags.limit));
  const running = sink.spec.run(stream, sink.params, {
    stdout: process.stdout,
    stderr: process.stderr,
  });
  const stop = () => running.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await running.done;
    if (decodeStats?.skipped) process.stderr.write(`skipped ${decodeStats.skipped} records\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`csipose: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** Builds the `csipose` command line. Exported for tests. */
export function program(): Command {
  const cli = new Command('csipose')
    .description('WiFi CSI to human pose: decode captures, compose and run streaming pipelines')
    .version(pkg.version);

  cli
    .command('decode')
    .description('print every CSI record of a capture as NDJSON, values exactly as recorded')
    .requiredOption('-f, --format <format>', 'intel5300 | atheros | nexmon | esp32')
    .argument('<file>', 'capture file')
    .action(async (file: string, o: { format: string }) => {
      process.exitCode = await runDecode(o.format, file, process.stdout, process.stderr);
    });

  const runFlags = (c: Command) =>
    c
      .option('--speed <n>', 'replay speed for file sources: 1 recorded pace, 0 as fast as possible', number(0))
      .option('--fast', 'replay as fast as possible (same as --speed 0)')
      .option('--limit <n>', 'stop after this many output items', number(1))
      .option('--env <id>', 'environment id stamped into frames');

  runFlags(
    cli
      .command('run')
      .description('run a named pipeline from a source into a sink')
      .option('-s, --source <uri>', 'sim[?seed=..], file:PATH[?format=F], udp://HOST:PORT?format=F, stdin?format=F', 'sim')
      .option('-p, --pipeline <name>', 'a pipeline (see `csipose pipelines`) or inline stages "a | b k=v"', 'sense')
      .option('-k, --sink <sink>', 'ndjson | stats | null (with params: "ndjson path=out.ndjson")', 'ndjson'),
  ).action(async (o: RunFlags & { source: string; pipeline: string; sink: string }) => {
    process.exitCode = await execute(`${o.source} | ${o.pipeline} | ${o.sink}`, o);
  });

  runFlags(
    cli
      .command('pipe')
      .description('run an inline pipeline: "SOURCE | stage k=v | ... | SINK"')
      .argument('<pipeline>', 'e.g. "file:cap.dat | intel5300 | sanitize | window size=64 hop=8 | doppler | ndjson"'),
  ).action(async (text: string, o: RunFlags) => {
    process.exitCode = await execute(text, o);
  });

  cli
    .command('operators')
    .description('list every operator with its parameters and defaults')
    .option('--json', 'as JSON')
    .action((o: { json?: boolean }) => {
      process.stdout.write(describeOperators(registry, !!o.json));
    });

  cli
    .command('pipelines')
    .description('list the named pipelines and their stages')
    .option('--json', 'as JSON')
    .action((o: { json?: boolean }) => {
      process.stdout.write(describePipelines(registry, !!o.json));
    });

  cli.addCommand(serveCommand());
  cli.addCommand(keysCommand());
  cli.addCommand(queryCommand());
  cli.addCommand(exportCommand());
  cli.addCommand(calibrateCommand());
  return cli;
}

const invoked = process.argv[1] ? new URL(`file://${process.argv[1]}`).pathname : '';
if (invoked.endsWith('/cli/main.js') || invoked.endsWith('/csipose')) {
  program()
    .parseAsync(process.argv)
    .catch((e: unknown) => {
      process.stderr.write(`csipose: ${(e as Error).message ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
