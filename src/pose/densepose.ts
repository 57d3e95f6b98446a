/**
 * DensePose part locations from a 3-D skeleton: for each of the 24 parts (DENSE_PART_NAMES order)
 * a confidence and where the part's centre falls inside the person's box, as seen by a camera.
 * This is a coarse PART-LOCATION answer, not surface UV: u, v are the part centre's position in the
 * box (0..1 from its left / top edge).
 *
 * Part centres come from the skeleton (torso = mean of shoulders and hips; upper or lower limb = the
 * middle of its bone; hand = wrist + 0.3 (wrist - elbow); foot = ankle; face halves = mean of nose,
 * eye and ear of that side). A part is seen when its centre projects inside the image and it faces
 * the camera: front parts when the chest normal (spine x shoulder line, so it holds for lying people
 * too) points towards the camera, back parts when it points away, a face half when (chest normal +-
 * right direction) points towards it; hands and feet need only be inside the image. A seen part
 * gets the person's confidence, an unseen one 0.
 */
import type { Camera } from './camera.js';
import { N_DENSE_PARTS } from './types.js';

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

/** How each part (DENSE_PART_NAMES order) is located and when it faces the camera. */
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

function partCentre(kp: Float32Array | Float64Array, at: number, c: Centre): void {
  if (c.kind === 'mid') {
    for (let d = 0; d < 3; d++) centre[d] = 0.5 * (kp[at + 3 * c.a + d]! + kp[at + 3 * c.b + d]!);
  } else if (c.kind === 'beyond') {
    for (let d = 0; d < 3; d++) centre[d] = kp[at + 3 * c.a + d]! + 0.3 * (kp[at + 3 * c.a + d]! - kp[at + 3 * c.b + d]!);
  } else {
    centre.fill(0);
    for (const i of c.idx) for (let d = 0; d < 3; d++) centre[d] += kp[at + 3 * i + d]! / c.idx.length;
  }
}

/**
 * Writes the part locations of one person.
 * @param kp3d 17 x (x, y, z) room metres, from `at`
 * @param at offset of the person's first joint in `kp3d`
 * @param camera the view
 * @param bbox the person's box in the view's pixels (x, y, width, height)
 * @param confidence what a seen part gets as its confidence
 * @param out receives 24 x (confidence, u, v) at `outAt`; unseen parts are (0, 0, 0)
 * @param outAt offset in `out`
 * @returns the number of parts seen
 */
export function densePoseParts(
  kp3d: Float32Array | Float64Array,
  at: number,
  camera: Camera,
  bbox: ArrayLike<number>,
  confidence: number,
  out: Float32Array,
  outAt = 0,
): number {
  out.fill(0, outAt, outAt + N_DENSE_PARTS * 3);
  const bx = bbox[0]!;
  const by = bbox[1]!;
  const bw = bbox[2]!;
  const bh = bbox[3]!;
  if (!(bw > 0 && bh > 0)) return 0;
  const k = (i: number, d: number) => kp3d[at + 3 * i + d]!;
  // Chest normal = spine x (right shoulder - left shoulder); right = the shoulder line.
  const sx = 0.5 * (k(L_SH, 0) + k(R_SH, 0) - k(L_HIP, 0) - k(R_HIP, 0));
  const sy = 0.5 * (k(L_SH, 1) + k(R_SH, 1) - k(L_HIP, 1) - k(R_HIP, 1));
  const sz = 0.5 * (k(L_SH, 2) + k(R_SH, 2) - k(L_HIP, 2) - k(R_HIP, 2));
  let rx = k(R_SH, 0) - k(L_SH, 0);
  let ry = k(R_SH, 1) - k(L_SH, 1);
  let rz = k(R_SH, 2) - k(L_SH, 2);
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
  const cam = camera.position;
  let seen = 0;
  for (let part = 0; part < N_DENSE_PARTS; part++) {
    const [c, facing] = PARTS[part]!;
    partCentre(kp3d, at, c);
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
    const o = outAt + part * 3;
    out[o] = confidence;
    out[o + 1] = Math.max(0, Math.min(1, (u - bx) / bw));
    out[o + 2] = Math.max(0, Math.min(1, (v - by) / bh));
    seen++;
  }
  return seen;
}
