/**
 * Training targets: what the model should output for one window, built from the simulator's
 * ground truth of the window's last frame, in the same flat layout as the network's output vector
 * (the five contract heads concatenated, before their activations):
 *
 *   [presence P][keypoints P x 17 x 3][boxes P x 4][floor P x 2][densepose P x 24 x 3],  P = 4
 *
 * - Slots hold the true persons ordered by floor x (left to right in the view); the rest are empty.
 * - presence: 1 for a person, 0 for an empty slot.
 * - keypoints: x / view width, y / view height, and visibility (1 = in front of the camera and inside
 *   the image) as the confidence target. Invisible keypoints have x = y = 0 and weight 0.
 * - boxes: the truth box / view size; all 0 (and ignored) when no keypoint is visible.
 * - floor: pelvis floor position, metres.
 * - densepose: per DensePose part (DENSE_PART_NAMES order) a coarse PART-LOCATION target, not
 *   surface UV: confidence = the part is visible, u, v = where the part's centre projects inside the
 *   person's box (0..1 from the box's left / top edge). Part centres come from the true 3-D
 *   skeleton (torso = mean of shoulders and hips; upper/lower limb = middle of its bone; hand =
 *   wrist + 0.3 (wrist - elbow); foot = ankle; face halves = mean of nose, eye and ear of that side).
 *   A part is visible when its centre projects inside the image and it faces the camera: front parts
 *   when the chest normal (spine x shoulder line, so it holds for lying people too) points towards
 *   the camera, back parts when it points away, a face half when (chest normal +- right
 *   direction) points towards it; hands and feet need only be inside the image.
 */
import type { Camera } from '../sim/camera.js';
import type { GroundTruth } from '../sim/simulator.js';
import { N_DENSE_PARTS, N_KEYPOINTS } from '../pose/types.js';

/** Person slots of the shipped model. */
export const MAX_PERSONS = 4;
/** Offsets of the heads in the flat output / target vector. */
export const OUT = Object.freeze({
  presence: 0,
  keypoints: MAX_PERSONS,
  boxes: MAX_PERSONS + MAX_PERSONS * N_KEYPOINTS * 3,
  floor: MAX_PERSONS + MAX_PERSONS * N_KEYPOINTS * 3 + MAX_PERSONS * 4,
  densepose: MAX_PERSONS + MAX_PERSONS * N_KEYPOINTS * 3 + MAX_PERSONS * 4 + MAX_PERSONS * 2,
});
/** Length of the output / target vector: 4 + 204 + 16 + 8 + 288 = 520. */
export const OUTPUT_DIM = OUT.densepose + MAX_PERSONS * N_DENSE_PARTS * 3;
/** Reference view the targets are normalised to. */
export const VIEW = Object.freeze({ width: 640, height: 480 });

// COCO-17 indices.
const NOSE = 0;
const L_EYE = 1;
const R_EYE = 2;
const L_EAR = 3;
const R_EAR = 4;
const L_SH = 5;
const R_SH = 6;
const L_EL = 7;
const R_EL = 8;
const L_WR = 9;
const R_WR = 10;
const L_HIP = 11;
const R_HIP = 12;
const L_KN = 13;
const R_KN = 14;
const L_AN = 15;
const R_AN = 16;

type Facing = 'front' | 'back' | 'any' | 'rightFace' | 'leftFace';
type Centre = { kind: 'mid'; a: number; b: number } | { kind: 'mean'; idx: readonly number[] } | { kind: 'beyond'; a: number; b: number };

/** How each DensePose part (in DENSE_PART_NAMES order) is located and when it faces the camera. */
const PARTS: ReadonlyArray<readonly [Centre, Facing]> = [
  [{ kind: 'mean', idx: [L_SH, R_SH, L_HIP, R_HIP] }, 'back'], // torso_back
  [{ kind: 'mean', idx: [L_SH, R_SH, L_HIP, R_HIP] }, 'front'], // torso_front
  [{ kind: 'beyond', a: R_WR, b: R_EL }, 'any'], // right_hand
  [{ kind: 'beyond', a: L_WR, b: L_EL }, 'any'], // left_hand
  [{ kind: 'mean', idx: [L_AN] }, 'any'], // left_foot
  [{ kind: 'mean', idx: [R_AN] }, 'any'], // right_foot
  [{ kind: 'mid', a: R_HIP, b: R_KN }, 'back'], // right_upper_leg_back
  [{ kind: 'mid', a: L_HIP, b: L_KN }, 'back'], // left_upper_leg_back
  [{ kind: 'mid', a: R_HIP, b: R_KN }, 'front'], // right_upper_leg_front
  [{ kind: 'mid', a: L_HIP, b: L_KN }, 'front'], // left_upper_leg_front
  [{ kind: 'mid', a: R_KN, b: R_AN }, 'back'], // right_lower_leg_back
  [{ kind: 'mid', a: L_KN, b: L_AN }, 'back'], // left_lower_leg_back
  [{ kind: 'mid', a: R_KN, b: R_AN }, 'front'], // right_lower_leg_front
  [{ kind: 'mid', a: L_KN, b: L_AN }, 'front'], // left_lower_leg_front
  [{ kind: 'mid', a: L_SH, b: L_EL }, 'front'], // left_upper_arm_front
  [{ kind: 'mid', a: R_SH, b: R_EL }, 'front'], // right_upper_arm_front
  [{ kind: 'mid', a: L_SH, b: L_EL }, 'back'], // left_upper_arm_back
  [{ kind: 'mid', a: R_SH, b: R_EL }, 'back'], // right_upper_arm_back
  [{ kind: 'mid', a: L_EL, b: L_WR }, 'front'], // left_lower_arm_front
  [{ kind: 'mid', a: R_EL, b: R_WR }, 'front'], // right_lower_arm_front
  [{ kind: 'mid', a: L_EL, b: L_WR }, 'back'], // left_lower_arm_back
  [{ kind: 'mid', a: R_EL, b: R_WR }, 'back'], // right_lower_arm_back
  [{ kind: 'mean', idx: [NOSE, R_EYE, R_EAR] }, 'rightFace'], // right_face
  [{ kind: 'mean', idx: [NOSE, L_EYE, L_EAR] }, 'leftFace'], // left_face
];

/** Scratch for one call. */
const centre = new Float64Array(3);
const px = new Float64Array(2);
const order: number[] = [];

function partCentre(kp: Float32Array, c: Centre): void {
  if (c.kind === 'mid') {
    for (let d = 0; d < 3; d++) centre[d] = 0.5 * (kp[3 * c.a + d]! + kp[3 * c.b + d]!);
  } else if (c.kind === 'beyond') {
    for (let d = 0; d < 3; d++) centre[d] = kp[3 * c.a + d]! + 0.3 * (kp[3 * c.a + d]! - kp[3 * c.b + d]!);
  } else {
    centre.fill(0);
    for (const i of c.idx) for (let d = 0; d < 3; d++) centre[d] += kp[3 * i + d]! / c.idx.length;
  }
}

/**
 * Writes the targets of one window (layout in the module comment).
 * @param truth ground truth of the window's last frame
 * @param camera the scenario's camera (for the DensePose part projections)
 * @param out OUTPUT_DIM values, overwritten
 * @returns the number of persons written (at most MAX_PERSONS)
 */
export function fillTargets(truth: GroundTruth, camera: Camera, out: Float32Array): number {
  out.fill(0, 0, OUTPUT_DIM);
  const persons = truth.persons;
  order.length = 0;
  for (let i = 0; i < persons.length; i++) order.push(i);
  order.sort((a, b) => persons[a]!.floor.x - persons[b]!.floor.x || a - b);
  const n = Math.min(order.length, MAX_PERSONS);
  const cam = camera.position;
  for (let p = 0; p < n; p++) {
    const tp = persons[order[p]!]!;
    out[OUT.presence + p] = 1;
    for (let k = 0; k < N_KEYPOINTS; k++) {
      const o = OUT.keypoints + (p * N_KEYPOINTS + k) * 3;
      if (tp.visible[k]) {
        out[o] = tp.keypoints[2 * k]! / VIEW.width;
        out[o + 1] = tp.keypoints[2 * k + 1]! / VIEW.height;
        out[o + 2] = 1;
      }
    }
    const [bx, by, bw, bh] = tp.bbox;
    const ob = OUT.boxes + p * 4;
    if (bw > 0 && bh > 0) {
      out[ob] = bx / VIEW.width;
      out[ob + 1] = by / VIEW.height;
      out[ob + 2] = bw / VIEW.width;
      out[ob + 3] = bh / VIEW.height;
    }
    out[OUT.floor + p * 2] = tp.floor.x;
    out[OUT.floor + p * 2 + 1] = tp.floor.y;

    // Chest normal = spine x (right shoulder - left shoulder); right = the shoulder line.
    const kp = tp.keypoints3d;
    const sx = 0.5 * (kp[3 * L_SH]! + kp[3 * R_SH]! - kp[3 * L_HIP]! - kp[3 * R_HIP]!);
    const sy = 0.5 * (kp[3 * L_SH + 1]! + kp[3 * R_SH + 1]! - kp[3 * L_HIP + 1]! - kp[3 * R_HIP + 1]!);
    const sz = 0.5 * (kp[3 * L_SH + 2]! + kp[3 * R_SH + 2]! - kp[3 * L_HIP + 2]! - kp[3 * R_HIP + 2]!);
    let rx = kp[3 * R_SH]! - kp[3 * L_SH]!;
    let ry = kp[3 * R_SH + 1]! - kp[3 * L_SH + 1]!;
    let rz = kp[3 * R_SH + 2]! - kp[3 * L_SH + 2]!;
    let fx = sy * rz - sz * ry;
    let fy = sz * rx - sx * rz;
    let fz = sx * ry - sy * rx;
    const fn = Math.hypot(fx, fy, fz) || 1;
    fx /= fn;
    fy /= fn;
    fz /= fn;
    const rn = Math.hypot(rx, ry, rz) || 1;
    rx /= rn;
    ry /= rn;
    rz /= rn;
    if (!(bw > 0 && bh > 0)) continue;
    for (let part = 0; part < N_DENSE_PARTS; part++) {
      const [c, facing] = PARTS[part]!;
      partCentre(kp, c);
      if (!camera.project(centre[0]!, centre[1]!, centre[2]!, px, 0)) continue;
      const u = px[0]!;
      const v = px[1]!;
      if (!(u >= 0 && u < camera.width && v >= 0 && v < camera.height)) continue;
      const tx = cam.x - centre[0]!;
      const ty = cam.y - centre[1]!;
      const tz = cam.z - centre[2]!;
      const front = fx * tx + fy * ty + fz * tz;
      const side = rx * tx + ry * ty + rz * tz;
      const faces =
        facing === 'any' ||
        (facing === 'front' && front > 0) ||
        (facing === 'back' && front < 0) ||
        (facing === 'rightFace' && front + side > 0) ||
        (facing === 'leftFace' && front - side > 0);
      if (!faces) continue;
      const o = OUT.densepose + (p * N_DENSE_PARTS + part) * 3;
      out[o] = 1;
      out[o + 1] = Math.max(0, Math.min(1, (u - bx) / bw));
      out[o + 2] = Math.max(0, Math.min(1, (v - by) / bh));
    }
  }
  return n;
}

/** COCO-17 left/right keypoint pairs. */
const KP_SWAP: readonly (readonly [number, number])[] = [
  [1, 2],
  [3, 4],
  [5, 6],
  [7, 8],
  [9, 10],
  [11, 12],
  [13, 14],
  [15, 16],
];
/** DensePose parts (0-based, DENSE_PART_NAMES order) that swap under a left-right mirror. */
const PART_SWAP: readonly (readonly [number, number])[] = [
  [2, 3],
  [4, 5],
  [6, 7],
  [8, 9],
  [10, 11],
  [12, 13],
  [14, 15],
  [16, 17],
  [18, 19],
  [20, 21],
  [22, 23],
];

const swapScratch = new Float32Array(OUTPUT_DIM);

/**
 * Targets of the scene mirrored left to right (room x -> width - x, which with the camera beside the
 * receiver also mirrors the view: u -> 1 - u): left and right keypoints and DensePose parts swap,
 * boxes and part u mirror, floor x becomes width - x, and the slots are re-ordered by floor x.
 * The CSI of the mirrored scene is the same CSI with the antenna order of every array that runs
 * along x reversed (see dataset.ts).
 * @param t OUTPUT_DIM targets, rewritten in place
 * @param roomWidth room width, metres
 */
export function mirrorTargets(t: Float32Array, roomWidth: number): void {
  const s = swapScratch;
  s.set(t.subarray(0, OUTPUT_DIM));
  t.fill(0, 0, OUTPUT_DIM);
  let n = 0;
  while (n < MAX_PERSONS && s[OUT.presence + n]! > 0.5) n++;
  for (let p = 0; p < n; p++) {
    // Floor x order reverses under the mirror: slot p takes person n - 1 - p.
    const q = n - 1 - p;
    t[OUT.presence + p] = 1;
    for (let k = 0; k < N_KEYPOINTS; k++) {
      let src = k;
      for (const [a, b] of KP_SWAP) {
        if (k === a) src = b;
        else if (k === b) src = a;
      }
      const i = OUT.keypoints + (q * N_KEYPOINTS + src) * 3;
      const o = OUT.keypoints + (p * N_KEYPOINTS + k) * 3;
      if (s[i + 2]! > 0) {
        t[o] = 1 - s[i]!;
        t[o + 1] = s[i + 1]!;
        t[o + 2] = s[i + 2]!;
      }
    }
    const ib = OUT.boxes + q * 4;
    const ob = OUT.boxes + p * 4;
    if (s[ib + 2]! > 0 && s[ib + 3]! > 0) {
      t[ob] = 1 - s[ib]! - s[ib + 2]!;
      t[ob + 1] = s[ib + 1]!;
      t[ob + 2] = s[ib + 2]!;
      t[ob + 3] = s[ib + 3]!;
    }
    t[OUT.floor + p * 2] = roomWidth - s[OUT.floor + q * 2]!;
    t[OUT.floor + p * 2 + 1] = s[OUT.floor + q * 2 + 1]!;
    for (let part = 0; part < N_DENSE_PARTS; part++) {
      let src = part;
      for (const [a, b] of PART_SWAP) {
        if (part === a) src = b;
        else if (part === b) src = a;
      }
      const i = OUT.densepose + (q * N_DENSE_PARTS + src) * 3;
      const o = OUT.densepose + (p * N_DENSE_PARTS + part) * 3;
      if (s[i]! > 0) {
        t[o] = s[i]!;
        t[o + 1] = 1 - s[i + 1]!;
        t[o + 2] = s[i + 2]!;
      }
    }
  }
}
