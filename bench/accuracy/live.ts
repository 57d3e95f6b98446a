/**
 * Feeds one simulated stream through the service's own live pipeline (`livePipeline`: links,
 * sanitise, window, features with the history ring, ONNX inference in the model's worker thread,
 * tracking, activity, alerts) and hands every pose frame to the scorer with the ground truth of
 * its window's last CSI frame (the instant the estimate is for).
 *
 * Several models can run on one pass of the simulator (lanes: the model under test, the oracle,
 * the uncalibrated model in the room): each lane is a pipeline of its own, fed the same frames in
 * the same order, so the simulator runs once for all of them.
 *
 * Back-pressure: a new frame goes in only while fewer than one batch of windows waits for each
 * lane's model, so the infer operator never drops a window and every batch but a stream's last is
 * full: two runs give identical numbers.
 */
import { Subject } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import type { PoseRunner } from '../../src/model/runtime.js';
import { PacedRunner } from '../../training/ts/eval/pacedRunner.js';
import type { PoseFrame } from '../../src/pose/types.js';
import type { GroundTruth } from '../../src/sim/simulator.js';
import type { InferStats } from '../../operators/infer.js';
import { livePipeline, type PipelineResources } from '../../pipelines/build.js';
import type { LiveParams } from '../../pipelines/settings.js';
import { EMPTY_ROOM_SEQ, type OpenStream } from './plan.js';

/** What a stream run saw. */
export interface RunStats {
  /** Frames fed, every link's. */
  csiFrames: number;
  /** Pose frames per lane. */
  poseFrames: number[];
}

/** One model's pipeline over the stream and what is done with its pose frames. */
export interface Lane {
  model: PoseRunner;
  /** Called with every pose frame and the ground truth of its window's last frame. */
  visit: (pose: PoseFrame, truth: GroundTruth) => void;
}

/** Ground truths older than this behind the newest frame fed are never asked for again, ms. */
const TRUTH_KEEP_MS = 60_000;

/**
 * Runs one stream through the live pipeline, once per lane.
 * @param lanes the models and their scorers
 * @param settings the live parameters in force
 * @param stream the opened stream
 * @param radios the site the `links` stage is told of (the stream's links)
 * @param onSample called with every sample's ground truth (events of every frame), before any lane sees the frame
 * @param beforeFrame called with every frame and its truth before the lanes get it (the oracle indexes its windows here)
 * @returns frames in and pose frames out per lane
 * @throws Error when a pose frame has no ground truth or a window was dropped
 */
export async function runLive(
  lanes: readonly Lane[],
  settings: LiveParams,
  stream: OpenStream,
  radios: readonly RadioConfig[],
  onSample?: (truth: GroundTruth) => void,
  beforeFrame?: (frame: CsiFrame, truth: GroundTruth) => void,
): Promise<RunStats> {
  const truths = new Map<number, GroundTruth>();
  let failure: unknown;
  const batch = Number(settings.infer.batchSize);
  const running = lanes.map((lane) => {
    const runner = new PacedRunner(lane.model);
    const stats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
    const input = new Subject<CsiFrame>();
    const state = { runner, stats, input, poseFrames: 0, done: Promise.resolve() };
    state.done = new Promise<void>((resolveDone, reject) => {
      // The links stage joins the stream's links and passes the primary one on.
      const resources: PipelineResources = { model: runner, inferStats: stats, radios: () => radios };
      input.pipe(livePipeline(resources, () => settings)).subscribe({
        next(pose) {
          try {
            const truth = truths.get(pose.time);
            if (!truth) throw new Error(`no ground truth for the pose frame at ${pose.time}`);
            // The installation's empty room before the stream is fed, never scored.
            if (truth.seq === EMPTY_ROOM_SEQ) return;
            state.poseFrames++;
            lane.visit(pose, truth);
          } catch (e) {
            failure ??= e;
          }
        },
        error(e: unknown) {
          failure ??= e;
          reject(e);
        },
        complete: () => resolveDone(),
      });
    });
    state.done.catch(() => undefined);
    return state;
  });
  let newest = -Infinity;
  let fed = 0;
  for (let s = stream.take(); s !== null && failure === undefined; s = stream.take()) {
    fed++;
    truths.set(s.frame.time, s.truth);
    if (s.frame.time > newest) {
      newest = s.frame.time;
      for (const t of truths.keys()) {
        if (t >= newest - TRUTH_KEEP_MS) break;
        truths.delete(t);
      }
    }
    onSample?.(s.truth);
    beforeFrame?.(s.frame, s.truth);
    for (const l of running) l.input.next(s.frame);
    // Back-pressure: with a batch in flight, queue at most one more batch of windows per lane.
    for (const l of running) while (failure === undefined && l.runner.inFlight > 0 && l.stats.queue >= batch) await l.runner.pending;
  }
  for (const l of running) l.input.complete();
  for (const l of running) await l.done.catch(() => undefined);
  if (failure !== undefined) throw failure;
  const dropped = running.reduce((a, l) => a + l.stats.dropped, 0);
  if (dropped > 0) throw new Error(`the infer operator dropped ${dropped} windows: the feeder's back-pressure failed`);
  return { csiFrames: fed, poseFrames: running.map((l) => l.poseFrames) };
}
