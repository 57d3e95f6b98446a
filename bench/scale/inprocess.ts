/**
 * The in-process side of `scale.bus_overhead` (bench/scale/busOverhead.ts), forked as a child: a
 * room's source opened as an ingest node opens it, straight into the live pipeline a worker runs
 * for it, in one process, with no bus between them. The configuration, the model (loaded once,
 * as a worker keeps it), the pipeline's resources and its parameters are a worker's (src/cluster/
 * worker.ts, Holding.start): `livePipeline({ model, untrained: 'drop', firstTrackId: 1, radios })`
 * with `liveParams(config)`, so a floor map the refiner cannot take in time is dropped here as
 * it would be there.
 *
 * argv: DATA_DIR CONFIG_FILE (the room's `--config` overlay, as its ingest node reads it).
 * Commands: `run { uri }` -> {@link InProcessRound}; `stop`.
 */
import { lastValueFrom, tap, toArray, type Observable } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { ConfigStore } from '../../src/config/store.js';
import { PoseModel } from '../../src/model/runtime.js';
import { resolveInstalled } from '../../src/packageRoot.js';
import { parseSource } from '../../src/sources/uri.js';
import { livePipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import { announce, serve } from '../stream/ipc.js';

/** One in-process round. */
export interface InProcessRound {
  /** CSI frames the source gave. */
  frames: number;
  poseFrames: number;
  /** From subscribing to the source to the pipeline's completion, s. */
  seconds: number;
  /** CPU time of this process over the round (user + system), s. */
  cpuSeconds: number;
}

async function main(): Promise<void> {
  const [dataDir, configFile] = process.argv.slice(2);
  if (!dataDir || !configFile) throw new Error('usage: inprocess.js DATA_DIR CONFIG_FILE');
  const store = await ConfigStore.open({ dataDir, configFile });
  const config = store.get();
  const radios = config.environment.site.radios;
  const model = await PoseModel.load(resolveInstalled(config.neural_network.model_path));
  serve({
    async run(a: { uri: string }): Promise<InProcessRound> {
      let frames = 0;
      const source = parseSource(a.uri).open('frame', {
        environmentId: config.environment.id,
        view: () => config.environment.view,
        radios: () => radios,
      }) as Observable<CsiFrame>;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const out = await lastValueFrom(
        source.pipe(
          tap(() => frames++),
          livePipeline({ model, untrained: 'drop', firstTrackId: 1, radios: () => radios }, () => liveParams(config)),
          toArray(),
        ),
      );
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      return { frames, poseFrames: out.length, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
    },
    stop() {
      void model.release().finally(() => {
        store.close();
        setTimeout(() => process.exit(0), 20);
      });
      return {};
    },
  });
  announce({ pid: process.pid });
}

main().catch((e: unknown) => {
  process.stderr.write(`inprocess: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
