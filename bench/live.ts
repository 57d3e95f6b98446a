import { Subject, lastValueFrom, toArray } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { PoseFrame } from '../src/pose/types.js';
import { PoseModel, threadFor } from '../src/model/runtime.js';
import { availableParallelism } from 'node:os';
import { deepFreeze, defaults } from '../src/config/schema.js';
import type { ConfigSnapshot } from '../src/config/store.js';
import { livePipeline } from '../pipelines/build.js';
import { liveParams } from '../pipelines/settings.js';
import type { InferStats } from '../operators/infer.js';
import { simFrames, siteFrames } from './frames.js';
import { repoRoot } from './serve.js';
import type { BenchResult } from './lib.js';
import { join } from 'node:path';

/** Frames handed over between yields to the event loop, as a socket would deliver them. */
const CHUNK = 64;

/**
 * `live.pipeline`: recorded CSI frames (3x3x30 from the simulator, generated before timing)
 * through the whole `live` pipeline the service runs (sanitize, window 128/8, features, infer
 * with the shipped model, track, activity, alerts) in frames per second, with every window
 * inferred (no drop: the queue bound is lifted for the run, so the figure is what the pipeline
 * sustains, not what it sheds). `npm run bench` runs this suite pinned to one core (taskset); the
 * model loads as the service loads it, so on one core its session runs in the main thread
 * (`threadFor` in src/model/runtime.ts). `live.links` is how many 100 Hz
 * links that rate serves.
 */
export async function run(): Promise<BenchResult[]> {
  return [...(await pipeline()), ...(await physics())];
}

async function pipeline(): Promise<BenchResult[]> {
  const N = 8000;
  const frames = simFrames(N);
  const model = await PoseModel.load(join(repoRoot, 'models/csipose-pose.onnx'));
  const base = liveParams(deepFreeze(defaults()) as ConfigSnapshot);
  const params = { ...base, infer: { ...base.infer, maxQueue: 1_000_000 } };
  try {
    const round = async () => {
      const stats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
      const input = new Subject<CsiFrame>();
      const done = lastValueFrom(
        input.pipe(
          livePipeline({ model, inferStats: stats }, () => params),
          toArray(),
        ),
      );
      const t0 = performance.now();
      for (let i = 0; i < frames.length; i += CHUNK) {
        for (let k = i; k < Math.min(i + CHUNK, frames.length); k++) input.next(frames[k]!);
        await new Promise((r) => setImmediate(r));
      }
      input.complete();
      const out: PoseFrame[] = await done;
      const seconds = (performance.now() - t0) / 1000;
      if (stats.dropped > 0) throw new Error(`inference dropped ${stats.dropped} windows`);
      return { seconds, poses: out.length, batches: stats.batches };
    };
    await round();
    const rounds: Array<{ seconds: number; poses: number; batches: number }> = [];
    for (let r = 0; r < 3; r++) rounds.push(await round());
    rounds.sort((a, b) => a.seconds - b.seconds);
    const med = rounds[1]!;
    const rate = N / med.seconds;
    const note = `${N} recorded 3x3x30 frames (simulator, 2 people) -> sanitize, window 128/8, features, infer (shipped model, session ${threadFor('auto', availableParallelism())} on ${availableParallelism()} core(s), batches of up to 32 as they come: ${med.batches} batches), track, activity, alerts; ${med.poses} pose frames, none dropped; median of 3 rounds`;
    return [
      { name: 'live.pipeline', value: rate, unit: 'frames/s', n: N * rounds.length, spread: (rounds[2]!.seconds - rounds[0]!.seconds) / med.seconds, note },
      {
        name: 'live.links',
        value: rate / 100,
        unit: 'links at 100 Hz',
        n: rounds.length,
        note: 'live.pipeline / 100: CSI links of 100 packets/s one core keeps up with',
      },
    ];
  } finally {
    await model.release();
  }
}

/** Simulator ticks of `live.physics`: three frames each (26.7 s of the default site). */
const PHYSICS_TICKS = 2667;

/**
 * `live.physics`: the simulator's frames of the default site's three links (DEFAULT_RADIOS, two
 * people, default impairments, generated before timing) through the `physics-live` pipeline the
 * service runs with a v3 refiner (links, floorMap with its default 10 s of learning, refine with the
 * shipped `models/csipose-refiner.onnx`, track, activity, alerts), frames per second, every map
 * refined (the refine stage's queue bound lifted for the run). Fed in chunks as `live.pipeline`
 * is; median of 3 rounds after a warm-up. `live.physics.links` is how many 100 Hz links one core
 * keeps up with through the front end. Where the time goes: bench/physics.ts.
 */
async function physics(): Promise<BenchResult[]> {
  const frames = siteFrames(PHYSICS_TICKS);
  const N = frames.length;
  const model = await PoseModel.load(join(repoRoot, 'models/csipose-refiner.onnx'));
  const base = liveParams(deepFreeze(defaults()) as ConfigSnapshot);
  const params = { ...base, refine: { ...base.refine, maxQueue: 1_000_000 } };
  try {
    const round = async () => {
      const input = new Subject<CsiFrame>();
      const done = lastValueFrom(
        input.pipe(
          livePipeline({ model }, () => params),
          toArray(),
        ),
      );
      const t0 = performance.now();
      for (let i = 0; i < frames.length; i += CHUNK) {
        for (let k = i; k < Math.min(i + CHUNK, frames.length); k++) input.next(frames[k]!);
        await new Promise((r) => setImmediate(r));
      }
      input.complete();
      const out: PoseFrame[] = await done;
      return { seconds: (performance.now() - t0) / 1000, poses: out.length };
    };
    await round();
    const rounds: Array<{ seconds: number; poses: number }> = [];
    for (let r = 0; r < 3; r++) rounds.push(await round());
    rounds.sort((a, b) => a.seconds - b.seconds);
    const med = rounds[1]!;
    const rate = N / med.seconds;
    const note = `${N} simulator frames of 3 links (3x3x30, 2 people) -> physics-live: links, floorMap, refine (shipped refiner, session ${threadFor('auto', availableParallelism())} on ${availableParallelism()} core(s)), track, activity, alerts; ${med.poses} pose frames (one per map); median of 3 rounds`;
    return [
      { name: 'live.physics', value: rate, unit: 'frames/s', n: N * rounds.length, spread: (rounds[2]!.seconds - rounds[0]!.seconds) / med.seconds, note },
      {
        name: 'live.physics.links',
        value: rate / 100,
        unit: 'links at 100 Hz',
        n: rounds.length,
        note: 'live.physics / 100: CSI links of 100 packets/s one core keeps up with through the physics front end',
      },
    ];
  } finally {
    await model.release();
  }
}
