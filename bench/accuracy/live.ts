/**
 * Feeds one simulated stream through the service's own live pipeline (`livePipeline`: sanitise,
 * window, features with the history ring, ONNX inference in the model's worker thread, tracking,
 * activity, alerts) and hands every pose frame to the scorer with the ground truth of its window's
 * last CSI frame (the instant the estimate is for).
 *
 * Back-pressure: a new frame goes in only while fewer than one batch of windows waits for the
 * model, so the infer operator never drops a window and every batch but a stream's last is full:
 * two runs give identical numbers.
 */
import { Subject } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { PoseRunner } from '../../src/model/runtime.js';
import { PacedRunner } from '../../src/training/eval/pacedRunner.js';
import type { PoseFrame } from '../../src/pose/types.js';
import type { GroundTruth } from '../../src/sim/simulator.js';
import type { InferStats } from '../../operators/infer.js';
import { livePipeline } from '../../pipelines/build.js';
import type { LiveParams } from '../../pipelines/settings.js';
import type { OpenStream } from './plan.js';

/** What a stream run saw. */
export interface RunStats {
  csiFrames: number;
  poseFrames: number;
}

/**
 * Runs one stream through the live pipeline.
 * @param model the model (loaded by the caller)
 * @param settings the live parameters in force
 * @param stream the opened stream
 * @param visit called with every pose frame and the ground truth of its window's last frame
 * @param onSample called with every sample's ground truth (events of every frame)
 * @returns frames in and out
 * @throws Error when a pose frame has no ground truth or a window was dropped
 */
export async function runLive(
  model: PoseRunner,
  settings: LiveParams,
  stream: OpenStream,
  visit: (pose: PoseFrame, truth: GroundTruth) => void,
  onSample?: (truth: GroundTruth) => void,
): Promise<RunStats> {
  const runner = new PacedRunner(model);
  const stats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
  const truths = new Map<number, GroundTruth>();
  const input = new Subject<CsiFrame>();
  let failure: unknown;
  let poseFrames = 0;
  const done = new Promise<void>((resolveDone, reject) => {
    input.pipe(livePipeline({ model: runner, inferStats: stats }, () => settings)).subscribe({
      next(pose) {
        try {
          const truth = truths.get(pose.time);
          if (!truth) throw new Error(`no ground truth for the pose frame at ${pose.time}`);
          poseFrames++;
          visit(pose, truth);
          // Frames up to this one are never needed again (windows end at increasing frames).
          for (const t of truths.keys()) {
            if (t > pose.time - 100) break;
            truths.delete(t);
          }
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
  done.catch(() => undefined);
  const batch = Number(settings.infer.batchSize);
  for (let i = 0; i < stream.frames && failure === undefined; i++) {
    const s = stream.next();
    truths.set(s.frame.time, s.truth);
    onSample?.(s.truth);
    input.next(s.frame);
    // Back-pressure: with a batch in flight, queue at most one more batch of windows.
    while (failure === undefined && runner.inFlight > 0 && stats.queue >= batch) await runner.pending;
  }
  input.complete();
  await done.catch(() => undefined);
  if (failure !== undefined) throw failure;
  if (stats.dropped > 0) throw new Error(`the infer operator dropped ${stats.dropped} windows: the feeder's back-pressure failed`);
  return { csiFrames: stream.frames, poseFrames };
}
