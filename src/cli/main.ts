#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { take } from 'rxjs';
import { readFileSync } from 'node:fs';
import { registry } from '../../pipelines/index.js';
import { buildPipeline } from './build.js';
import { PipelineError } from '../engine/pipeline.js';
import { decodeCommand } from './decode.js';
import { describeOperators, describePipelines } from './describe.js';
import type { DecodeStats } from '../csi/decoder.js';
import { serveCommand } from './serve.js';
import { calibrateCommand } from './calibrate.js';
import { keysCommand } from './keys.js';
import { queryCommand } from './query.js';
import { exportCommand } from './export.js';
import { OutputDemand, readerGone } from './sinks/output.js';
import { formatList, mqttFormats } from '../decoders/index.js';
import { defaults } from '../config/schema.js';

/** The configuration's defaults: the site and view `--site` lends the sources. */
const SITE = defaults();

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
  site?: boolean;
}

/**
 * Runs a built pipeline into its sink until the source ends, the reader of its output goes away
 * (`| head`), or SIGINT/SIGTERM; the sink then flushes what it holds before `done` settles. The
 * source and the sink share one `OutputDemand`, so a source that can wait (sim, file, stdin) runs
 * no faster than the sink's output drains: memory stays bounded behind a slow reader.
 * @returns the exit status: 0 (also after SIGINT), 1 on a stream or write error, 2 on bad usage
 */
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
  const demand = new OutputDemand();
  let stream = built.open({
    demand,
    ...(speed !== undefined ? { speed } : {}),
    ...(flags.env ? { environmentId: flags.env } : {}),
    // The configuration's default site and view (environment.site, environment.view), as `serve` lends them.
    ...(flags.site ? { radios: () => SITE.environment.site.radios, view: () => SITE.environment.view } : {}),
    onDecodeStats: (s) => (decodeStats = s),
  });
  if (flags.limit !== undefined) stream = stream.pipe(take(flags.limit));
  const running = sink.spec.run(stream, sink.params, {
    stdout: process.stdout,
    stderr: process.stderr,
    demand,
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
  const cli = new Command('csipose').description('WiFi CSI to human pose: decode captures, compose and run streaming pipelines').version(pkg.version);

  cli.addCommand(decodeCommand());

  const runFlags = (c: Command) =>
    c
      .option(
        '--speed <n>',
        'pace of file and simulator sources: 1 recorded pace / real time, 2 twice as fast, 0 as fast as the sink takes them (live udp and mqtt sources ignore it; a ?speed= in the source URI wins)',
        number(0),
      )
      .option('--fast', 'as fast as the sink takes them (same as --speed 0)')
      .option('--limit <n>', 'stop after this many output items', number(1))
      .option('--env <id>', 'environment id stamped into frames')
      .option(
        '--site',
        'sources see the default site (environment.site: a router and three receivers) and view, as `serve` lends them: sim simulates every link, each frame with its link_id; file and udp URIs may name their link=RX',
      )
      .addHelpText(
        'after',
        '\nOutput to a pipe is complete and in order: a source that can wait (sim, file, stdin) waits for a slow\n' +
          'reader; a reader that stops (| head) ends the run with status 0. Ctrl-C (SIGINT) or SIGTERM stops a\n' +
          'run cleanly: the sink writes out what it holds, every line is whole, and the exit status is 0.\n' +
          'Exit status 1 on a stream or write error, 2 on a pipeline that cannot be built.\n' +
          'Sources: sim[?seed=N&people=N&truth=1...], file:PATH[?format=F&loop=K&speed=N],\n' +
          `udp://HOST:PORT?format=F, mqtt://[USER:PASS@]HOST[:PORT]/TOPIC?format=${formatList(
            '|',
            mqttFormats().map((e) => e.name),
          )} (mqtts:// too),\n` +
          'stdin[?format=F] or -. Sinks: ndjson [path=FILE|-], stats [interval=S], null,\n' +
          'capture path=FILE|- [labels=FILE] [label_hz=N] [link=ID] (see `csipose operators`).',
      );

  runFlags(
    cli
      .command('run')
      .description('run a named pipeline from a source into a sink')
      .option('-s, --source <uri>', 'sim[?seed=..], file:PATH[?format=F], udp://HOST:PORT?format=F, mqtt://HOST[:PORT]/TOPIC?format=F, stdin[?format=F]', 'sim')
      .option('-p, --pipeline <name>', 'a pipeline (see `csipose pipelines`) or inline stages "a | b k=v"', 'sense')
      .option('-k, --sink <sink>', 'ndjson | stats | null | capture, with params: "ndjson path=out.ndjson"', 'ndjson'),
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
  // The last word on standard output: a reader that went away (`csipose operators | head -1`) ends
  // the output quietly; any other write error is a failure, with a message instead of a trace.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (readerGone(e)) return;
    process.stderr.write(`csipose: cannot write standard output: ${e.message}\n`);
    process.exitCode = 1;
  });
  program()
    .parseAsync(process.argv)
    .catch((e: unknown) => {
      process.stderr.write(`csipose: ${(e as Error).message ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
