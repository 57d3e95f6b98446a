/**
 * Keypoint accuracy of pose estimates against ground truth: PCK@0.2 of the torso diameter and the
 * mean per-joint position error (MPJPE), both in pixels of the reference view.
 *
 * Conventions (used by `npm run bench:accuracy`):
 * - Only VISIBLE true keypoints are scored (in front of the camera and inside the image, the
 *   simulator's `visible` flags). A true person with no visible keypoint is not scored at all and
 *   takes no part in the matching (there is nothing to compare).
 * - Matching: per frame, predicted and true persons are paired by the Hungarian method (optimal
 *   assignment, no gate) on the mean pixel distance over the true person's visible keypoints. A
 *   true person left without a prediction (fewer predictions than people) counts every visible
 *   keypoint as a miss; predictions left over cost nothing here (the person count and MOTA see
 *   them).
 * - PCK@0.2: a keypoint is correct when its distance to the true one is AT MOST (<=) 0.2 x the
 *   true person's torso diameter, the distance from the left shoulder to the right hip (COCO 5 and
 *   12) when both are visible. When either is not, the torso is taken as 0.35 x the diagonal of
 *   the true box instead (a standing adult's shoulder-to-opposite-hip distance is about a third of
 *   the box diagonal of the whole body; for a partly visible person the box is smaller, which makes
 *   the test stricter, never looser).
 * - MPJPE: mean pixel distance over the visible true keypoints of MATCHED persons only (a missing
 *   person has no distance), so read it together with PCK, which does count them.
 * - Also kept, for comparison with the training script's held-out report and much of the pose
 *   literature: PCK@0.2 of the true box size, max(box width, box height) (Yang & Ramanan), a
 *   reference roughly three times the torso and so a much looser test.
 */
import { Hungarian } from '../../../src/pose/hungarian.js';
import { N_KEYPOINTS } from '../../../src/pose/types.js';

/** Threshold of PCK as a fraction of the torso diameter. */
export const PCK_ALPHA = 0.2;
/** Torso diameter as a fraction of the true box diagonal when the shoulder or hip is not visible. */
export const TORSO_FROM_BOX = 0.35;
/** COCO indices of the torso diameter's ends. */
export const LEFT_SHOULDER = 5;
export const RIGHT_HIP = 12;

/** A true person: the simulator's `TruthPerson` fits. */
export interface TruePose {
  /** Stable person id within a scenario. */
  id: number;
  /** 17 x (u, v) pixels, COCO order. */
  keypoints: ArrayLike<number>;
  /** 17 flags; non-zero = visible (scored). */
  visible: ArrayLike<number>;
  /** x, y, width, height in pixels (box around the visible keypoints); zeros when none is. */
  bbox: ArrayLike<number>;
}

/** A predicted person: the pipeline's `PersonPose` fits. */
export interface PredictedPose {
  /** 17 x (x, y, confidence) pixels, COCO order. */
  keypoints: ArrayLike<number>;
  /** x, y, width, height in pixels. */
  bbox: ArrayLike<number>;
  trackId?: number;
}

/** The keypoint counts of one frame (or, summed, of many). */
export interface PoseCounts {
  /** Per keypoint: visible true keypoints scored (matched or not). */
  total: number[];
  /** Per keypoint: of those, within PCK_ALPHA x torso. */
  correct: number[];
  /** Per keypoint: of those, within PCK_ALPHA x max(box width, box height). */
  correctBox: number[];
  /** Sum of pixel errors over the visible keypoints of matched persons. */
  errorSum: number;
  /** Number of keypoints in errorSum. */
  errorCount: number;
  /** True persons with at least one visible keypoint. */
  scoredPersons: number;
  /** Of those, persons that got a prediction. */
  matchedPersons: number;
}

/**
 * Counts with nothing in them.
 * @returns zeroed counts
 */
export function emptyPoseCounts(): PoseCounts {
  return {
    total: new Array<number>(N_KEYPOINTS).fill(0),
    correct: new Array<number>(N_KEYPOINTS).fill(0),
    correctBox: new Array<number>(N_KEYPOINTS).fill(0),
    errorSum: 0,
    errorCount: 0,
    scoredPersons: 0,
    matchedPersons: 0,
  };
}

/**
 * Adds `b` into `a` (in place).
 * @param a accumulator
 * @param b counts to add
 * @returns a
 */
export function addPoseCounts(a: PoseCounts, b: PoseCounts): PoseCounts {
  for (let k = 0; k < N_KEYPOINTS; k++) {
    a.total[k]! += b.total[k]!;
    a.correct[k]! += b.correct[k]!;
    a.correctBox[k]! += b.correctBox[k]!;
  }
  a.errorSum += b.errorSum;
  a.errorCount += b.errorCount;
  a.scoredPersons += b.scoredPersons;
  a.matchedPersons += b.matchedPersons;
  return a;
}

/**
 * Number of visible keypoints of a true person.
 * @param t the true person
 * @returns 0..17
 */
export function visibleCount(t: TruePose): number {
  let n = 0;
  for (let k = 0; k < N_KEYPOINTS; k++) if (t.visible[k]) n++;
  return n;
}

/**
 * The PCK reference length of a true person: left shoulder to right hip when both are visible,
 * else TORSO_FROM_BOX x the box diagonal.
 * @param t the true person
 * @returns pixels (0 when nothing is visible)
 * @example torsoDiameter({ id: 0, keypoints, visible, bbox }) // e.g. 96.4
 */
export function torsoDiameter(t: TruePose): number {
  const kp = t.keypoints;
  if (t.visible[LEFT_SHOULDER] && t.visible[RIGHT_HIP]) {
    return Math.hypot(kp[2 * LEFT_SHOULDER]! - kp[2 * RIGHT_HIP]!, kp[2 * LEFT_SHOULDER + 1]! - kp[2 * RIGHT_HIP + 1]!);
  }
  return TORSO_FROM_BOX * Math.hypot(t.bbox[2]!, t.bbox[3]!);
}

/**
 * Mean pixel distance between a prediction and a true person over the true visible keypoints.
 * @param p prediction
 * @param t true person
 * @returns pixels; NaN when the true person has no visible keypoint
 */
export function poseDistance(p: PredictedPose, t: TruePose): number {
  let sum = 0;
  let n = 0;
  for (let k = 0; k < N_KEYPOINTS; k++) {
    if (!t.visible[k]) continue;
    sum += Math.hypot(p.keypoints[3 * k]! - t.keypoints[2 * k]!, p.keypoints[3 * k + 1]! - t.keypoints[2 * k + 1]!);
    n++;
  }
  return n > 0 ? sum / n : NaN;
}

const solver = new Hungarian();
let costScratch = new Float64Array(64);

/**
 * Pairs predictions with true persons: Hungarian assignment (no gate) on `poseDistance`, over the
 * true persons with at least one visible keypoint.
 * @param preds predicted persons
 * @param truths true persons
 * @returns for each true person the index of its prediction, or -1 (none left, or nothing visible)
 * @example matchPoses([pa, pb], [ta, tb]) // [1, 0]: pb is ta's, pa is tb's
 */
export function matchPoses(preds: readonly PredictedPose[], truths: readonly TruePose[]): number[] {
  const out = new Array<number>(truths.length).fill(-1);
  const rows: number[] = [];
  for (let i = 0; i < truths.length; i++) if (visibleCount(truths[i]!) > 0) rows.push(i);
  if (rows.length === 0 || preds.length === 0) return out;
  const need = rows.length * preds.length;
  if (costScratch.length < need) costScratch = new Float64Array(Math.max(need, 2 * costScratch.length));
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < preds.length; c++) {
      const d = poseDistance(preds[c]!, truths[rows[r]!]!);
      // A prediction with non-finite keypoints is matched last (never preferred), not refused.
      costScratch[r * preds.length + c] = Number.isFinite(d) ? d : 1e12;
    }
  }
  const assign = solver.solve(costScratch, rows.length, preds.length, Infinity);
  for (let r = 0; r < rows.length; r++) out[rows[r]!] = assign[r]!;
  return out;
}

/**
 * Scores the keypoints of one frame.
 * @param preds predicted persons
 * @param truths true persons
 * @returns the frame's counts (PCK numerators and denominators per keypoint, error sums)
 * @example
 * const c = scorePoseFrame(frame.persons, truth.persons);
 * c.correct[0] / c.total[0] // PCK@0.2 of the nose in this frame
 */
export function scorePoseFrame(preds: readonly PredictedPose[], truths: readonly TruePose[]): PoseCounts {
  const c = emptyPoseCounts();
  const match = matchPoses(preds, truths);
  for (let i = 0; i < truths.length; i++) {
    const t = truths[i]!;
    if (visibleCount(t) === 0) continue;
    c.scoredPersons++;
    const q = match[i]!;
    const p = q >= 0 ? preds[q]! : null;
    if (p) c.matchedPersons++;
    const limit = PCK_ALPHA * torsoDiameter(t);
    const boxLimit = PCK_ALPHA * Math.max(t.bbox[2]!, t.bbox[3]!);
    for (let k = 0; k < N_KEYPOINTS; k++) {
      if (!t.visible[k]) continue;
      c.total[k]!++;
      if (!p) continue;
      const d = Math.hypot(p.keypoints[3 * k]! - t.keypoints[2 * k]!, p.keypoints[3 * k + 1]! - t.keypoints[2 * k + 1]!);
      // NaN (a broken prediction) fails the test and is left out of the error mean.
      if (d <= limit) c.correct[k]!++;
      if (d <= boxLimit) c.correctBox[k]!++;
      if (Number.isFinite(d)) {
        c.errorSum += d;
        c.errorCount++;
      }
    }
  }
  return c;
}

/** Scores drawn from PoseCounts. */
export interface PoseScores {
  /** PCK@0.2 over all keypoints (the micro mean); NaN when nothing was scored. */
  pck: number;
  /** PCK@0.2 per keypoint; NaN where none was scored. */
  pckPerKeypoint: number[];
  /** PCK@0.2 of the box size, max(box width, box height), over all keypoints; NaN when nothing was scored. */
  pckBox: number;
  /** Mean per-joint error, px, over matched persons; NaN when none was matched. */
  mpjpe: number;
  /** Visible true keypoints scored. */
  keypoints: number;
}

/**
 * The scores of accumulated counts.
 * @param c counts
 * @returns PCK (mean over all scored keypoints), PCK per keypoint, box-size PCK, MPJPE
 */
export function poseScores(c: PoseCounts): PoseScores {
  let total = 0;
  let correct = 0;
  let correctBox = 0;
  const per = c.total.map((t, k) => {
    total += t;
    correct += c.correct[k]!;
    correctBox += c.correctBox[k]!;
    return t > 0 ? c.correct[k]! / t : NaN;
  });
  return {
    pck: total > 0 ? correct / total : NaN,
    pckPerKeypoint: per,
    pckBox: total > 0 ? correctBox / total : NaN,
    mpjpe: c.errorCount > 0 ? c.errorSum / c.errorCount : NaN,
    keypoints: total,
  };
}
