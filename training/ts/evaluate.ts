/**
 * Held-out scores of a v2 pose model on a dataset's windows, from the outputs `PoseModel.run`
 * returns (the exported ONNX file through onnxruntime-node), against each window's targets:
 *
 * - Person count: the count rule the service uses (`countFromProbabilities` at 0.5, the median of
 *   the `count` output) against the true number of people in the room; `occupied` = empty vs not.
 * - Skeletons: the `count` most present slots, in room metres, scored in 3-D (`eval/pose3d.ts`:
 *   PCK3d@0.2 of the torso length and MPJPE, absolute and root-relative, median floor error).
 * - Baseline: the mean pose of TRAIN (offsets from the pelvis and pelvis height) at each true
 *   person's floor position, scored the same way: what the model adds to knowing where people are.
 * - Activity: share of matched persons whose most probable activity is the true one.
 * - Fall windows: precision and recall of `fall` >= 0.5 against "a fall began in the last
 *   FALL_WINDOW_S" (per window; events are scored by `npm run bench:accuracy`).
 * Groups `one` .. `four` are the windows with that many people in the room.
 */
import { countFromProbabilities, type ModelOutputsV2 } from '../../src/model/runtime.js';
import { MODEL_ACTIVITIES } from '../../src/model/contract.js';
import { N_KEYPOINTS } from '../../src/pose/types.js';
import { MAX_PERSONS, TARGET, TARGET_DIM, targetSkeleton } from '../../src/calibration/targets.js';
import {
  addPose3dCounts,
  baselineSkeleton,
  emptyPose3dCounts,
  matchByPelvis,
  pose3dScores,
  scorePose3dFrame,
  type Pose3dCounts,
  type Pose3dScores,
} from './eval/pose3d.js';

/** The mean pose of a training set: joint offsets from the pelvis and the pelvis height. */
export interface MeanPose {
  offsets: number[];
  pelvisZ: number;
}

/**
 * The mean pose over the present slots of a target set.
 * @param targets n x TARGET_DIM
 * @returns mean offsets (17 x 3, metres) and mean pelvis height
 */
export function meanPose(targets: Float32Array): MeanPose {
  const n = targets.length / TARGET_DIM;
  const off = new Float64Array(N_KEYPOINTS * 3);
  let z = 0;
  let count = 0;
  for (let r = 0; r < n; r++) {
    for (let p = 0; p < MAX_PERSONS; p++) {
      const o = r * TARGET_DIM;
      if (targets[o + TARGET.presence + p]! < 0.5) continue;
      count++;
      z += targets[o + TARGET.root + p * 3 + 2]!;
      for (let i = 0; i < N_KEYPOINTS * 3; i++) off[i] += targets[o + TARGET.offsets + p * N_KEYPOINTS * 3 + i]!;
    }
  }
  return { offsets: Array.from(off, (v) => (count > 0 ? v / count : 0)), pelvisZ: count > 0 ? z / count : 0 };
}

interface Tally {
  windows: number;
  countExact: number;
  occupiedRight: number;
  pose: Pose3dCounts;
  baseline: Pose3dCounts;
  activityRight: number;
  activityTotal: number;
}

const tally = (): Tally => ({
  windows: 0,
  countExact: 0,
  occupiedRight: 0,
  pose: emptyPose3dCounts(),
  baseline: emptyPose3dCounts(),
  activityRight: 0,
  activityTotal: 0,
});

/** Scores of one group of windows. */
export interface GroupScores {
  windows: number;
  countExact: number;
  occupied: number;
  pose: Pose3dScores;
  baseline: Pose3dScores;
  activity: number;
}

/** All scores of a set of windows. */
export interface Scores {
  all: GroupScores;
  one: GroupScores;
  two: GroupScores;
  three: GroupScores;
  four: GroupScores;
  fall: { precision: number; recall: number; positives: number; windows: number };
}

function finish(t: Tally): GroupScores {
  return {
    windows: t.windows,
    countExact: t.windows > 0 ? t.countExact / t.windows : NaN,
    occupied: t.windows > 0 ? t.occupiedRight / t.windows : NaN,
    pose: pose3dScores(t.pose),
    baseline: pose3dScores(t.baseline),
    activity: t.activityTotal > 0 ? t.activityRight / t.activityTotal : NaN,
  };
}

const L_HIP = 11;
const R_HIP = 12;

/**
 * Scores a model's outputs against a dataset's targets.
 * @param out the outputs of every row (n rows)
 * @param targets n x TARGET_DIM
 * @param personCounts true people in the room per row (may exceed the slots)
 * @param receivers each row's receiver position (the skeleton targets are relative to it)
 * @param mean the baseline's mean pose
 * @param rows which rows to score (default all)
 * @returns the scores
 */
export function scoreOutputs(
  out: ModelOutputsV2,
  targets: Float32Array,
  personCounts: Uint8Array,
  receivers: ReadonlyArray<{ x: number; y: number }>,
  mean: MeanPose,
  rows?: ArrayLike<number>,
): Scores {
  const P = out.maxPersons;
  const A = MODEL_ACTIVITIES.length;
  const groups = [tally(), tally(), tally(), tally(), tally()];
  let fallTp = 0;
  let fallFp = 0;
  let fallPos = 0;
  let windows = 0;
  const n = rows ? rows.length : out.n;
  for (let k = 0; k < n; k++) {
    const r = rows ? rows[k]! : k;
    const t = targets.subarray(r * TARGET_DIM, (r + 1) * TARGET_DIM);
    const rec = receivers[r]!;
    const trueCount = personCounts[r]!;
    const reported = countFromProbabilities(out.count, r * (P + 1), P, 0.5);
    const order = Array.from({ length: P }, (_, p) => p).sort((a, b) => out.presence[r * P + b]! - out.presence[r * P + a]! || a - b);
    const preds: Float32Array[] = [];
    const predSlots: number[] = [];
    for (let q = 0; q < reported; q++) {
      const p = order[q]!;
      const kp = new Float32Array(N_KEYPOINTS * 3);
      for (let j = 0; j < N_KEYPOINTS; j++) {
        const i = ((r * P + p) * N_KEYPOINTS + j) * 3;
        kp[3 * j] = out.keypoints3d[i]! + rec.x;
        kp[3 * j + 1] = out.keypoints3d[i + 1]! + rec.y;
        kp[3 * j + 2] = out.keypoints3d[i + 2]!;
      }
      preds.push(kp);
      predSlots.push(p);
    }
    const truths: Float32Array[] = [];
    const baseline: Float32Array[] = [];
    const trueActivity: number[] = [];
    for (let p = 0; p < MAX_PERSONS; p++) {
      if (t[TARGET.presence + p]! < 0.5) continue;
      const kp = new Float32Array(N_KEYPOINTS * 3);
      targetSkeleton(t, p, rec, kp);
      truths.push(kp);
      trueActivity.push(Math.round(t[TARGET.activity + p]!));
      baseline.push(
        baselineSkeleton(mean.offsets, mean.pelvisZ, { x: 0.5 * (kp[3 * L_HIP]! + kp[3 * R_HIP]!), y: 0.5 * (kp[3 * L_HIP + 1]! + kp[3 * R_HIP + 1]!) }),
      );
    }
    const match = matchByPelvis(preds, truths);
    const frame = scorePose3dFrame(preds, truths, match);
    const base = scorePose3dFrame(baseline, truths);
    // Activity of the prediction paired with each true person (the same pelvis matching).
    let actRight = 0;
    let actTotal = 0;
    for (let i = 0; i < truths.length; i++) {
      const q = match[i]!;
      if (q < 0 || trueActivity[i]! < 0) continue;
      const aOff = (r * P + predSlots[q]!) * A;
      let arg = 0;
      for (let a = 1; a < A; a++) if (out.activity[aOff + a]! > out.activity[aOff + arg]!) arg = a;
      actTotal++;
      if (arg === trueActivity[i]) actRight++;
    }
    const fall = t[TARGET.fall]! > 0.5;
    const said = out.fall[r]! >= 0.5;
    windows++;
    if (fall) fallPos++;
    if (said && fall) fallTp++;
    if (said && !fall) fallFp++;
    for (const g of [groups[0]!, trueCount >= 1 && trueCount <= 4 ? groups[trueCount]! : null]) {
      if (!g) continue;
      g.windows++;
      if (reported === trueCount) g.countExact++;
      if (reported > 0 === trueCount > 0) g.occupiedRight++;
      addPose3dCounts(g.pose, frame);
      addPose3dCounts(g.baseline, base);
      g.activityRight += actRight;
      g.activityTotal += actTotal;
    }
  }
  return {
    all: finish(groups[0]!),
    one: finish(groups[1]!),
    two: finish(groups[2]!),
    three: finish(groups[3]!),
    four: finish(groups[4]!),
    fall: {
      precision: fallTp + fallFp > 0 ? fallTp / (fallTp + fallFp) : NaN,
      recall: fallPos > 0 ? fallTp / fallPos : NaN,
      positives: fallPos,
      windows,
    },
  };
}
