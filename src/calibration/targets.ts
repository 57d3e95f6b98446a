/**
 * Training targets of the v2 pose model (contract `csipose-pose-v2`): what the model should answer
 * for one window, from the simulator's ground truth of the window's last frame, and the layout of
 * the network's raw output vector that the loss compares with them.
 *
 * Targets, flat (TARGET layout, P = MAX_PERSONS slots):
 *
 *   [count 1][presence P][root P x 3][offsets P x 17 x 3][activity P][fall 1]
 *
 * - Slots hold the true persons ordered by floor x (left to right seen from the receiver); the
 *   rest are empty. `count` is the true number of people, capped at P.
 * - root: the pelvis (mid-hip) in metres relative to the receiver: x - receiver_x, y - receiver_y,
 *   z above the floor. offsets: each COCO-17 joint minus the pelvis, metres (the skeleton is
 *   root + offsets, which is how the exported model composes `keypoints3d`).
 * - activity: the index of the person's activity in MODEL_ACTIVITIES; -1 for an empty slot.
 * - fall: 1 when someone's fall began within the last FALL_WINDOW_S seconds (the truth's
 *   `fallOnset`), else 0.
 *
 * Network output, flat (OUT layout): [count logits P + 1][presence logits P][root P x 3 (normalised,
 * see trainer.ts)][offsets P x 51 (metres)][activity logits P x 5][fall logit 1].
 */
import { FALL_WINDOW_S, MODEL_ACTIVITIES } from '../model/contract.js';
import type { GroundTruth } from '../sim/simulator.js';
import { N_KEYPOINTS } from '../pose/types.js';

/** Person slots of the shipped model. */
export const MAX_PERSONS = 4;
/** Activity classes. */
export const N_ACTIVITIES = MODEL_ACTIVITIES.length;
const P = MAX_PERSONS;
const J3 = N_KEYPOINTS * 3;

/** Offsets in the target vector. */
export const TARGET = Object.freeze({
  count: 0,
  presence: 1,
  root: 1 + P,
  offsets: 1 + P + 3 * P,
  activity: 1 + P + 3 * P + J3 * P,
  fall: 1 + P + 3 * P + J3 * P + P,
});
/** Length of the target vector: 1 + 4 + 12 + 204 + 4 + 1 = 226. */
export const TARGET_DIM = TARGET.fall + 1;

/** Offsets in the network's raw output vector. */
export const OUT = Object.freeze({
  count: 0,
  presence: P + 1,
  root: 2 * P + 1,
  offsets: 2 * P + 1 + 3 * P,
  activity: 2 * P + 1 + 3 * P + J3 * P,
  fall: 2 * P + 1 + 3 * P + J3 * P + N_ACTIVITIES * P,
});
/** Length of the output vector: 5 + 4 + 12 + 204 + 20 + 1 = 246. */
export const OUTPUT_DIM = OUT.fall + 1;

const L_HIP = 11;
const R_HIP = 12;
const ACTIVITY_INDEX = new Map<string, number>(MODEL_ACTIVITIES.map((a, i) => [a, i]));
const order: number[] = [];

/**
 * Writes the targets of one window (TARGET layout).
 * @param truth ground truth of the window's last frame
 * @param receiver the receive array's position on the floor plan, metres
 * @param out TARGET_DIM values, overwritten
 * @returns the number of persons written (at most MAX_PERSONS)
 */
export function fillTargets(truth: GroundTruth, receiver: { x: number; y: number }, out: Float32Array): number {
  out.fill(0, 0, TARGET_DIM);
  const persons = truth.persons;
  order.length = 0;
  for (let i = 0; i < persons.length; i++) order.push(i);
  order.sort((a, b) => persons[a]!.floor.x - persons[b]!.floor.x || a - b);
  const n = Math.min(order.length, P);
  out[TARGET.count] = n;
  for (let p = 0; p < P; p++) out[TARGET.activity + p] = -1;
  let fall = 0;
  for (const tp of persons) if (tp.fallOnset !== undefined && truth.time - tp.fallOnset >= 0 && truth.time - tp.fallOnset <= FALL_WINDOW_S * 1000) fall = 1;
  out[TARGET.fall] = fall;
  for (let p = 0; p < n; p++) {
    const tp = persons[order[p]!]!;
    const kp = tp.keypoints3d;
    out[TARGET.presence + p] = 1;
    const px = 0.5 * (kp[3 * L_HIP]! + kp[3 * R_HIP]!);
    const py = 0.5 * (kp[3 * L_HIP + 1]! + kp[3 * R_HIP + 1]!);
    const pz = 0.5 * (kp[3 * L_HIP + 2]! + kp[3 * R_HIP + 2]!);
    out[TARGET.root + p * 3] = px - receiver.x;
    out[TARGET.root + p * 3 + 1] = py - receiver.y;
    out[TARGET.root + p * 3 + 2] = pz;
    const o = TARGET.offsets + p * J3;
    for (let k = 0; k < N_KEYPOINTS; k++) {
      out[o + 3 * k] = kp[3 * k]! - px;
      out[o + 3 * k + 1] = kp[3 * k + 1]! - py;
      out[o + 3 * k + 2] = kp[3 * k + 2]! - pz;
    }
    out[TARGET.activity + p] = ACTIVITY_INDEX.get(tp.activity) ?? -1;
  }
  return n;
}

/** COCO-17 index of each joint's mirror image (left <-> right). */
export const KP_MIRROR: readonly number[] = [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15];

const scratch = new Float32Array(TARGET_DIM);

/**
 * Targets of the scene mirrored left to right (room x -> width - x, receiver with it, so x relative
 * to the receiver changes sign): left and right joints swap and the slots are re-ordered by floor
 * x. The CSI of the mirrored scene is the same CSI with the antenna order of every array that runs
 * along x reversed (see training/ts/dataset.ts).
 * @param t TARGET_DIM targets, rewritten in place
 */
export function mirrorTargets(t: Float32Array): void {
  const s = scratch;
  s.set(t.subarray(0, TARGET_DIM));
  const n = Math.round(s[TARGET.count]!);
  t.fill(0, TARGET.presence, TARGET.fall);
  for (let p = 0; p < P; p++) t[TARGET.activity + p] = -1;
  for (let p = 0; p < n; p++) {
    // Floor x order reverses under the mirror: slot p takes person n - 1 - p.
    const q = n - 1 - p;
    t[TARGET.presence + p] = 1;
    t[TARGET.root + p * 3] = -s[TARGET.root + q * 3]!;
    t[TARGET.root + p * 3 + 1] = s[TARGET.root + q * 3 + 1]!;
    t[TARGET.root + p * 3 + 2] = s[TARGET.root + q * 3 + 2]!;
    for (let k = 0; k < N_KEYPOINTS; k++) {
      const i = TARGET.offsets + q * J3 + 3 * KP_MIRROR[k]!;
      const o = TARGET.offsets + p * J3 + 3 * k;
      t[o] = -s[i]!;
      t[o + 1] = s[i + 1]!;
      t[o + 2] = s[i + 2]!;
    }
    t[TARGET.activity + p] = s[TARGET.activity + q]!;
  }
}

/**
 * The skeleton of a slot in room metres from its targets: root + offsets + receiver.
 * @param t TARGET_DIM targets
 * @param p slot
 * @param receiver receiver position on the floor plan
 * @param out receives 17 x 3 values at `at`
 * @param at offset in `out`
 */
export function targetSkeleton(t: Float32Array, p: number, receiver: { x: number; y: number }, out: Float32Array | Float64Array, at = 0): void {
  const rx = t[TARGET.root + p * 3]! + receiver.x;
  const ry = t[TARGET.root + p * 3 + 1]! + receiver.y;
  const rz = t[TARGET.root + p * 3 + 2]!;
  const o = TARGET.offsets + p * J3;
  for (let k = 0; k < N_KEYPOINTS; k++) {
    out[at + 3 * k] = rx + t[o + 3 * k]!;
    out[at + 3 * k + 1] = ry + t[o + 3 * k + 1]!;
    out[at + 3 * k + 2] = rz + t[o + 3 * k + 2]!;
  }
}
