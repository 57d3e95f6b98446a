/**
 * The oracle: a "model" that answers every window of the accuracy benchmark's scenarios with the
 * simulator's ground truth of the window's last frame, in the v2 contract's terms (count, presence,
 * skeletons relative to the receiver, activity, fall). `npm run bench:accuracy -- --oracle` runs
 * the benchmark with it, which scores the rest of the system (projection, tracking, activities,
 * fall alerts) as if the pose model were perfect: a check of the harness, and the ceiling that
 * tracker and alert rules reach. It recognises a window by a hash of its feature row, so it
 * answers only the windows of the scenarios it was built for (every setting's scored sessions, with
 * the same frames the benchmark feeds: `planStreams`, `openStream`; of a site with several links,
 * the primary link's frames, which the pipeline's `links` stage passes on to the model).
 *
 * It also carries the baseline's mean pose, which the benchmark otherwise reads from the model's
 * training report: the mean over every person of every window it indexed (its own truth).
 */
import { createHash } from 'node:crypto';
import { Subject } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { CONTRACT_V2, MODEL_ACTIVITIES } from '../src/model/contract.js';
import { FEATURE_DIM, HOP, WINDOW_FRAMES } from '../src/model/features.js';
import type { ModelOutputsV2, PoseRunner } from '../src/model/runtime.js';
import type { MeanPose } from '../training/ts/evaluate.js';
import { fillTargets, MAX_PERSONS, TARGET, TARGET_DIM } from '../src/calibration/targets.js';
import type { GroundTruth } from '../src/sim/simulator.js';
import { sanitizePhase } from '../operators/sanitizePhase.js';
import { slidingWindow } from '../operators/slidingWindow.js';
import { features } from '../operators/features.js';
import { N_KEYPOINTS } from '../src/pose/types.js';
import { openStream, planStreams, type AccuracyPlan, type BenchStream, type OpenStream } from './accuracy/plan.js';

const key = (f: Float32Array): string =>
  createHash('sha1')
    .update(Buffer.from(f.buffer, f.byteOffset, f.byteLength))
    .digest('hex');

/** Running sums of the mean pose. */
interface MeanSums {
  offsets: Float64Array;
  z: number;
  n: number;
}

/**
 * An indexer of one stream's windows: fed the stream's frames in order (all links; it keeps the
 * primary link's, as the pipeline's `links` stage does), it runs the pipeline's own sanitise,
 * window and features stages synchronously and maps each window's features to the targets of its
 * last frame, so the entry is there before the pipeline's infer stage asks for it.
 */
function windowIndexer(
  s: BenchStream,
  primaryLink: string | null,
  table: Map<string, Float32Array>,
  sums: MeanSums | null,
): { push(frame: CsiFrame, truth: GroundTruth): void; complete(): void } {
  const truths = new Map<number, GroundTruth>();
  // The benchmark sets the site's primary receiver to the recipe's receiver: skeletons are relative to it.
  const receiver = { x: s.recipe.rx.x, y: s.recipe.rx.y };
  const input = new Subject<CsiFrame>();
  input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), features()).subscribe((row) => {
    const out = new Float32Array(TARGET_DIM);
    fillTargets(truths.get(row.frameTime)!, receiver, out);
    table.set(key(row.features), out);
    // Frames before this window's last are never asked for again.
    for (const t of truths.keys()) {
      if (t >= row.frameTime) break;
      truths.delete(t);
    }
    if (!sums) return;
    for (let p = 0; p < MAX_PERSONS; p++) {
      if (out[TARGET.presence + p]! < 0.5) continue;
      sums.n++;
      sums.z += out[TARGET.root + p * 3 + 2]!;
      for (let i = 0; i < N_KEYPOINTS * 3; i++) sums.offsets[i] += out[TARGET.offsets + p * N_KEYPOINTS * 3 + i]!;
    }
  });
  return {
    push(frame, truth) {
      if (primaryLink !== null && frame.linkId !== primaryLink) return;
      truths.set(frame.time, truth);
      input.next(frame);
    },
    complete: () => input.complete(),
  };
}

/** Maps the features of every window of a stream to the targets of its last frame (a pass of its own). */
function indexWindows(s: BenchStream, table: Map<string, Float32Array>, sums: MeanSums): void {
  const open = openStream(s);
  const ix = windowIndexer(s, open.primaryLink, table, sums);
  for (let x = open.take(); x !== null; x = open.take()) ix.push(x.frame, x.truth);
  ix.complete();
}

/** The oracle runner, with the mean pose of its truth. */
export type OracleRunner = PoseRunner & { readonly meanPose: MeanPose };

/**
 * Builds the oracle for a benchmark plan (simulates every scored scenario of the plan once).
 * @param plan the plan the benchmark will run
 * @returns a PoseRunner whose outputs are the ground truth, and its mean pose
 * @example
 * const oracle = oracleRunner(plan);
 * const report = await runAccuracy(plan, oracle, { modelPath: 'oracle', meanPose: oracle.meanPose, oracle: true });
 */
export function oracleRunner(plan: AccuracyPlan): OracleRunner {
  const table = new Map<string, Float32Array>();
  const sums: MeanSums = { offsets: new Float64Array(N_KEYPOINTS * 3), z: 0, n: 0 };
  const streams = planStreams(plan);
  for (const set of Object.values(streams)) for (const s of [...set.pose, ...set.fall]) indexWindows(s, table, sums);
  const meanPose: MeanPose = { offsets: Array.from(sums.offsets, (v) => (sums.n > 0 ? v / sums.n : 0)), pelvisZ: sums.n > 0 ? sums.z / sums.n : 0 };
  return Object.assign(
    truthRunner(() => table),
    { meanPose },
  );
}

/** The oracle that indexes each stream's windows while the benchmark feeds it (`observe`), with no pass of its own. */
export type LiveOracle = PoseRunner & {
  /**
   * Starts a stream: the frames given to the returned function (before the pipelines get them)
   * are indexed; the previous stream's index is dropped.
   */
  observe(s: BenchStream, open: OpenStream): (frame: CsiFrame, truth: GroundTruth) => void;
};

/**
 * The oracle for a benchmark run that simulates each stream once for every model: it answers
 * the windows of the stream being fed (`observe`). It has no mean pose of its own (the baseline's
 * comes from the model's training report).
 * @returns the runner
 * @example
 * const oracle = liveOracle();
 * await runAccuracy(plan, model, { modelPath, meanPose, oracleModel: oracle });
 */
export function liveOracle(): LiveOracle {
  let table = new Map<string, Float32Array>();
  return Object.assign(
    truthRunner(() => table),
    {
      observe(s: BenchStream, open: OpenStream) {
        table = new Map();
        const ix = windowIndexer(s, open.primaryLink, table, null);
        return (frame: CsiFrame, truth: GroundTruth) => ix.push(frame, truth);
      },
    },
  );
}

/** A runner whose outputs are the targets of the current table's windows. */
function truthRunner(tableOf: () => Map<string, Float32Array>): PoseRunner {
  const P = MAX_PERSONS;
  const A = MODEL_ACTIVITIES.length;
  return {
    contract: 2,
    metadata: {
      csipose_contract: CONTRACT_V2,
      model_version: 'oracle',
      feature_dim: FEATURE_DIM,
      max_persons: P,
      window_frames: WINDOW_FRAMES,
      trained_on: 'ground truth',
    },
    featureDim: FEATURE_DIM,
    maxPersons: P,
    async run(f: Float32Array, n: number): Promise<ModelOutputsV2> {
      const out: ModelOutputsV2 = {
        contract: 2,
        n,
        maxPersons: P,
        count: new Float32Array(n * (P + 1)),
        presence: new Float32Array(n * P),
        keypoints3d: new Float32Array(n * P * N_KEYPOINTS * 3),
        activity: new Float32Array(n * P * A),
        fall: new Float32Array(n),
      };
      for (let r = 0; r < n; r++) {
        const t = tableOf().get(key(f.subarray(r * FEATURE_DIM, (r + 1) * FEATURE_DIM)));
        if (!t) throw new Error('oracle: a window of a scenario it was not built for');
        out.count[r * (P + 1) + Math.round(t[TARGET.count]!)] = 1;
        out.fall[r] = t[TARGET.fall]!;
        for (let p = 0; p < P; p++) {
          out.presence[r * P + p] = t[TARGET.presence + p]!;
          const a = Math.round(t[TARGET.activity + p]!);
          if (a >= 0) out.activity[(r * P + p) * A + a] = 1;
          for (let k = 0; k < N_KEYPOINTS; k++) {
            for (let c = 0; c < 3; c++) {
              out.keypoints3d[((r * P + p) * N_KEYPOINTS + k) * 3 + c] = t[TARGET.root + p * 3 + c]! + t[TARGET.offsets + p * N_KEYPOINTS * 3 + k * 3 + c]!;
            }
          }
        }
      }
      return out;
    },
  };
}
