/**
 * The uninterrupted reference of the alerts benchmark (bench/scale/alerts.ts), forked as a child:
 * a room's whole CSI stream, read back from the bus after the run (stream CSIPOSE_CSI, from its
 * first frame of the room to its last), through the live pipeline a worker runs for that room (the
 * configuration its ingest node put in `csipose_environments`, the model it names, track ids from
 * 1), in one pass with nobody killed. What it raises is what one process that never stopped would
 * have raised from the same CSI.
 *
 * It differs from a worker in one setting: the refiner's queue bound is lifted, so that reading
 * faster than real time drops no floor map (a worker in real time keeps up and drops none either).
 *
 * Command `replay { bus, env }` -> {@link ReferenceResult}; `stop`.
 */
import { Subject, lastValueFrom, toArray } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { Bus, bucketKey, CSI_STREAM, csiSubjects } from '../../src/bus/bus.js';
import { decodeCsiFrames } from '../../src/bus/codec.js';
import { defaults } from '../../src/config/schema.js';
import { PoseModel } from '../../src/model/runtime.js';
import { resolveInstalled } from '../../src/packageRoot.js';
import { livePipeline } from '../../pipelines/build.js';
import { liveParams, type LiveParams } from '../../pipelines/settings.js';
import type { EnvironmentEntry } from '../../src/cluster/ingest.js';
import { announce, serve } from '../stream/ipc.js';
import { alertKey, type AlertKey } from './alertKeys.js';

/** What the reference made of a room. */
export interface ReferenceResult {
  csiFrames: number;
  poseFrames: number;
  alerts: AlertKey[];
  /** The last CSI frame's time, epoch ms. */
  lastCsiTime: number;
}

/** Frames fed between two turns of the event loop (as a source emits, src/sources/pace.ts). */
const CHUNK = 64;

async function replay(a: { bus: string; env: string }): Promise<ReferenceResult> {
  const cluster = defaults().cluster;
  const bus = await Bus.connect(a.bus, cluster, 'csipose-bench-reference');
  try {
    const entry = await bus.environments.get(bucketKey(a.env));
    if (!entry || entry.operation !== 'PUT') throw new Error(`environment ${a.env} has no configuration on the bus`);
    const { config } = JSON.parse(entry.string()) as EnvironmentEntry;
    const model = await PoseModel.load(resolveInstalled(config.neural_network.model_path));
    try {
      const base = liveParams(config);
      const params: LiveParams = {
        ...base,
        ...(base.refine ? { refine: { ...base.refine, maxQueue: 1_000_000 } } : {}),
        ...(base.infer ? { infer: { ...base.infer, maxQueue: 1_000_000 } } : {}),
      };
      // The last frame of the room: the highest sequence among its links' last messages.
      const info = await bus.jsm.streams.info(CSI_STREAM, { subjects_filter: csiSubjects(a.env) });
      const subjects = Object.keys(info.state.subjects ?? {});
      if (subjects.length === 0) throw new Error(`no CSI of ${a.env} in the stream`);
      let last = 0;
      for (const s of subjects) last = Math.max(last, (await bus.jsm.streams.getMessage(CSI_STREAM, { last_by_subj: s })).seq);
      const input = new Subject<CsiFrame>();
      const done = lastValueFrom(
        input.pipe(
          livePipeline({ model, untrained: 'drop', firstTrackId: 1, radios: () => config.environment.site.radios }, () => params),
          toArray(),
        ),
      );
      const consumer = await bus.js.consumers.get(CSI_STREAM, { filterSubjects: csiSubjects(a.env), opt_start_seq: 1 });
      const messages = await consumer.consume({ max_messages: 1024 });
      let n = 0;
      let lastCsiTime = NaN;
      for await (const m of messages) {
        for (const f of decodeCsiFrames(m.data)) {
          lastCsiTime = f.time;
          input.next(f);
        }
        if (++n % CHUNK === 0) await new Promise((ok) => setImmediate(ok));
        if (m.seq >= last) break;
      }
      await messages.close();
      input.complete();
      const out: PoseFrame[] = await done;
      return { csiFrames: n, poseFrames: out.length, alerts: out.flatMap((f) => (f.alerts ?? []).map(alertKey)), lastCsiTime };
    } finally {
      await model.release();
    }
  } finally {
    await bus.close();
  }
}

serve({
  replay,
  stop() {
    setTimeout(() => process.exit(0), 20);
    return {};
  },
});
announce({ pid: process.pid });
