/**
 * Skeleton accuracy in 3-D, metres of the room: MPJPE (mean per-joint position error, reported in
 * cm) and PCK3d@0.2 (a joint is correct when it is within 0.2 x the true torso length of the true
 * joint, the torso length being the distance from the mid-shoulder to the mid-hip, about 0.5 m for
 * an adult, so the test is about 10 cm). Every joint of every true person is scored, seen by a
 * camera or not: the model answers in the room, not in an image.
 *
 * - Matching: per frame, predicted and true persons are paired by the Hungarian method on the
 *   distance between their pelvises (mid-hips), no gate. A true person left without a prediction
 *   counts all 17 joints as misses for PCK (MPJPE is over matched persons only; read it with PCK);
 *   a prediction left over costs nothing here (the person count sees it).
 * - Absolute: the joints as predicted, in room coordinates: what a user sees.
 * - Root-relative (`rel`): both skeletons moved so their pelvises coincide: the pose's shape alone,
 *   as much of the 3-D pose literature reports it.
 * - Floor: the distance between the matched pelvises on the floor plan (x, y).
 */
import { Hungarian } from '../../../src/pose/hungarian.js';
import { N_KEYPOINTS } from '../../../src/pose/types.js';

/** PCK threshold as a fraction of the true torso length. */
export const PCK3D_ALPHA = 0.2;
const L_SH = 5;
const R_SH = 6;
const L_HIP = 11;
const R_HIP = 12;

/** The counts of one frame (or, summed, of many). */
export interface Pose3dCounts {
  /** True persons scored. */
  persons: number;
  /** True persons that had a prediction. */
  matched: number;
  /** Joints scored (17 per true person). */
  joints: number;
  /** Joints within the threshold, absolute and root-relative. */
  correct: number;
  correctRel: number;
  /** Sums of joint errors (m) and how many, over matched persons. */
  errorSum: number;
  errorRelSum: number;
  errorCount: number;
  /** Floor-plan pelvis errors of matched persons, metres (for medians). */
  floorErrors: number[];
}

export function emptyPose3dCounts(): Pose3dCounts {
  return { persons: 0, matched: 0, joints: 0, correct: 0, correctRel: 0, errorSum: 0, errorRelSum: 0, errorCount: 0, floorErrors: [] };
}

/** Adds b into a. @returns a */
export function addPose3dCounts(a: Pose3dCounts, b: Pose3dCounts): Pose3dCounts {
  a.persons += b.persons;
  a.matched += b.matched;
  a.joints += b.joints;
  a.correct += b.correct;
  a.correctRel += b.correctRel;
  a.errorSum += b.errorSum;
  a.errorRelSum += b.errorRelSum;
  a.errorCount += b.errorCount;
  for (const e of b.floorErrors) a.floorErrors.push(e);
  return a;
}

/** Distance from the mid-shoulder to the mid-hip of a skeleton (17 x 3 from `at`). */
export function torsoLength(kp: ArrayLike<number>, at = 0): number {
  let s = 0;
  for (let c = 0; c < 3; c++) {
    const sh = 0.5 * (kp[at + 3 * L_SH + c]! + kp[at + 3 * R_SH + c]!);
    const hp = 0.5 * (kp[at + 3 * L_HIP + c]! + kp[at + 3 * R_HIP + c]!);
    s += (sh - hp) ** 2;
  }
  return Math.sqrt(s);
}

const pelvis = (kp: ArrayLike<number>, at: number, c: number): number => 0.5 * (kp[at + 3 * L_HIP + c]! + kp[at + 3 * R_HIP + c]!);

const solver = new Hungarian();
let cost = new Float64Array(64);

/**
 * Pairs true and predicted persons by the Hungarian method on the distance between their
 * pelvises, no gate (the module comment).
 * @param preds predicted skeletons, 17 x 3 room metres each
 * @param truths true skeletons, 17 x 3 room metres each
 * @returns per true person the index of its prediction, or -1 (its own array)
 */
export function matchByPelvis(preds: readonly ArrayLike<number>[], truths: readonly ArrayLike<number>[]): Int32Array {
  if (preds.length === 0 || truths.length === 0) return new Int32Array(truths.length).fill(-1);
  const need = truths.length * preds.length;
  if (cost.length < need) cost = new Float64Array(Math.max(need, 2 * cost.length));
  for (let r = 0; r < truths.length; r++) {
    for (let q = 0; q < preds.length; q++) {
      const d = Math.hypot(
        pelvis(truths[r]!, 0, 0) - pelvis(preds[q]!, 0, 0),
        pelvis(truths[r]!, 0, 1) - pelvis(preds[q]!, 0, 1),
        pelvis(truths[r]!, 0, 2) - pelvis(preds[q]!, 0, 2),
      );
      cost[r * preds.length + q] = Number.isFinite(d) ? d : 1e12;
    }
  }
  return Int32Array.from(solver.solve(cost, truths.length, preds.length, Infinity));
}

/**
 * Scores one frame.
 * @param preds predicted skeletons, 17 x 3 room metres each
 * @param truths true skeletons, 17 x 3 room metres each
 * @param match the pairing (default `matchByPelvis`), for a caller that also needs it
 * @returns the frame's counts
 * @example
 * const c = scorePose3dFrame(frame.persons.map((p) => p.keypoints3d!), truth.persons.map((t) => t.keypoints3d));
 */
export function scorePose3dFrame(
  preds: readonly ArrayLike<number>[],
  truths: readonly ArrayLike<number>[],
  match: ArrayLike<number> = matchByPelvis(preds, truths),
): Pose3dCounts {
  const c = emptyPose3dCounts();
  if (truths.length === 0) return c;
  for (let r = 0; r < truths.length; r++) {
    const t = truths[r]!;
    c.persons++;
    c.joints += N_KEYPOINTS;
    const q = match[r]!;
    if (q < 0) continue;
    const p = preds[q]!;
    c.matched++;
    const limit = PCK3D_ALPHA * torsoLength(t);
    const dp = [0, 1, 2].map((k) => pelvis(p, 0, k) - pelvis(t, 0, k));
    c.floorErrors.push(Math.hypot(dp[0]!, dp[1]!));
    for (let k = 0; k < N_KEYPOINTS; k++) {
      let a = 0;
      let rel = 0;
      for (let d = 0; d < 3; d++) {
        const e = p[3 * k + d]! - t[3 * k + d]!;
        a += e * e;
        rel += (e - dp[d]!) ** 2;
      }
      a = Math.sqrt(a);
      rel = Math.sqrt(rel);
      if (a <= limit) c.correct++;
      if (rel <= limit) c.correctRel++;
      if (Number.isFinite(a)) {
        c.errorSum += a;
        c.errorRelSum += rel;
        c.errorCount++;
      }
    }
  }
  return c;
}

/** Scores drawn from Pose3dCounts. */
export interface Pose3dScores {
  /** PCK3d@0.2, absolute; NaN when nothing was scored. */
  pck3d: number;
  /** PCK3d@0.2 root-relative. */
  pck3dRel: number;
  /** MPJPE in cm over matched persons, absolute and root-relative. */
  mpjpeCm: number;
  mpjpeRelCm: number;
  /** Median floor-plan pelvis error of matched persons, metres. */
  floorMedianM: number;
  /** True persons scored, and the share that had a prediction. */
  persons: number;
  matchedShare: number;
}

/** The median of a list (NaN when empty). */
export function median(v: readonly number[]): number {
  if (v.length === 0) return NaN;
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : 0.5 * (s[m - 1]! + s[m]!);
}

export function pose3dScores(c: Pose3dCounts): Pose3dScores {
  return {
    pck3d: c.joints > 0 ? c.correct / c.joints : NaN,
    pck3dRel: c.joints > 0 ? c.correctRel / c.joints : NaN,
    mpjpeCm: c.errorCount > 0 ? (100 * c.errorSum) / c.errorCount : NaN,
    mpjpeRelCm: c.errorCount > 0 ? (100 * c.errorRelSum) / c.errorCount : NaN,
    floorMedianM: median(c.floorErrors),
    persons: c.persons,
    matchedShare: c.persons > 0 ? c.matched / c.persons : NaN,
  };
}

/**
 * The trivial baseline's skeleton: a mean pose (joint offsets from the pelvis, and the pelvis
 * height) placed at a given floor position.
 * @param mean 17 x 3 offsets from the pelvis, metres
 * @param pelvisZ mean pelvis height, metres
 * @param floor where to put it
 * @returns 17 x 3 room metres
 */
export function baselineSkeleton(mean: ArrayLike<number>, pelvisZ: number, floor: { x: number; y: number }): Float32Array {
  const out = new Float32Array(N_KEYPOINTS * 3);
  for (let k = 0; k < N_KEYPOINTS; k++) {
    out[3 * k] = floor.x + mean[3 * k]!;
    out[3 * k + 1] = floor.y + mean[3 * k + 1]!;
    out[3 * k + 2] = pelvisZ + mean[3 * k + 2]!;
  }
  return out;
}
