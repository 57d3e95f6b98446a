/**
 * Body shadowing: a body attenuates the paths whose straight segments pass through it.
 *
 * Each body is two capsules (a segment with a radius) following its keypoints: the trunk from
 * mid-hip to the head centre (radius 0.16 m for a 1.75 m person: half of a 0.4 m shoulder width and
 * a 0.25 m chest depth, averaged) and the legs from mid-hip to mid-ankle (0.10 m: two legs side by
 * side). A segment whose closest distance to a capsule's axis is rho loses
 *
 *     L(rho) = Lmax * (1 + cos(pi rho / (2 r))) / 2 dB   for rho < 2 r, else 0,
 *
 * Lmax on the axis, Lmax / 2 at the body's surface (rho = r) and 0 at twice the radius: a smooth
 * stand-in for knife-edge diffraction, which gives 6 dB at the edge of the geometric shadow and
 * fades over about a Fresnel-zone width (0.26 m in the middle of a 4.6 m link at 5.18 GHz). Within
 * one body the larger of the two capsules' losses counts; every segment of a path and every body it
 * crosses adds its loss in dB (a bounce path through a body twice loses twice).
 *
 * Lmax: measured human-body blockage of short indoor links at 3-11 GHz reaches fading depths of
 * 15 dB and more ("Human body shadowing variability in short-range indoor radio links at 3-11 GHz
 * band"); the room preset takes 12 dB.
 *
 * Segments are tested from the array centres: the arrays span a few centimetres, far less than the
 * shadow's edge zone, so every antenna pair of a path gets the same loss.
 */

import { KP } from './skeleton.js';

/** Trunk capsule radius of a 1.75 m person, metres (scaled by height). */
export const TRUNK_RADIUS = 0.16;
/** Leg capsule radius of a 1.75 m person, metres (scaled by height). */
export const LEGS_RADIUS = 0.1;
/** Values per capsule in a body buffer: x0, y0, z0, x1, y1, z1, r, and a sphere holding its reach (centre xyz, radius). */
export const CAPSULE_LEN = 11;
/** Values per body in a body buffer: 2 capsules and a bounding sphere (centre xyz, radius) around both, grown by 2 r. */
export const BODY_LEN = 2 * CAPSULE_LEN + 4;

/**
 * Writes one body's shadow volume from its keypoints.
 * @param kp 17 x 3 keypoints, metres
 * @param scale body height / 1.75
 * @param out body buffer
 * @param o offset of this body (BODY_LEN values)
 */
export function bodyVolume(kp: Float32Array, scale: number, out: Float64Array, o: number): void {
  const hx = 0.5 * (kp[3 * KP.L_HIP]! + kp[3 * KP.R_HIP]!);
  const hy = 0.5 * (kp[3 * KP.L_HIP + 1]! + kp[3 * KP.R_HIP + 1]!);
  const hz = 0.5 * (kp[3 * KP.L_HIP + 2]! + kp[3 * KP.R_HIP + 2]!);
  const ex = 0.5 * (kp[3 * KP.L_EAR]! + kp[3 * KP.R_EAR]!);
  const ey = 0.5 * (kp[3 * KP.L_EAR + 1]! + kp[3 * KP.R_EAR + 1]!);
  const ez = 0.5 * (kp[3 * KP.L_EAR + 2]! + kp[3 * KP.R_EAR + 2]!);
  const ax = 0.5 * (kp[3 * KP.L_ANKLE]! + kp[3 * KP.R_ANKLE]!);
  const ay = 0.5 * (kp[3 * KP.L_ANKLE + 1]! + kp[3 * KP.R_ANKLE + 1]!);
  const az = 0.5 * (kp[3 * KP.L_ANKLE + 2]! + kp[3 * KP.R_ANKLE + 2]!);
  const rt = TRUNK_RADIUS * scale;
  const rl = LEGS_RADIUS * scale;
  capsule(out, o, hx, hy, hz, ex, ey, ez, rt);
  capsule(out, o + CAPSULE_LEN, hx, hy, hz, ax, ay, az, rl);
  // The sphere around the head-ankle segment's midpoint that holds both capsules' reach.
  const cx = 0.5 * (ex + ax);
  const cy = 0.5 * (ey + ay);
  const cz = 0.5 * (ez + az);
  const reach = Math.max(dist(ex - cx, ey - cy, ez - cz), dist(hx - cx, hy - cy, hz - cz));
  const b = o + 2 * CAPSULE_LEN;
  out[b] = cx;
  out[b + 1] = cy;
  out[b + 2] = cz;
  out[b + 3] = reach + 2 * rt;
}

/**
 * Writes a body that shadows nothing (someone not in the room): every bounding sphere of radius 0,
 * which no segment comes within.
 * @param out body buffer
 * @param o offset of this body (BODY_LEN values)
 */
export function noBody(out: Float64Array, o: number): void {
  out.fill(0, o, o + BODY_LEN);
}

function capsule(out: Float64Array, o: number, x0: number, y0: number, z0: number, x1: number, y1: number, z1: number, r: number): void {
  out[o] = x0;
  out[o + 1] = y0;
  out[o + 2] = z0;
  out[o + 3] = x1;
  out[o + 4] = y1;
  out[o + 5] = z1;
  out[o + 6] = r;
  out[o + 7] = 0.5 * (x0 + x1);
  out[o + 8] = 0.5 * (y0 + y1);
  out[o + 9] = 0.5 * (z0 + z1);
  out[o + 10] = 0.5 * dist(x1 - x0, y1 - y0, z1 - z0) + 2 * r;
}

function dist(x: number, y: number, z: number): number {
  return Math.sqrt(x * x + y * y + z * z);
}

/** True when segment A-B passes within R of point C. */
function nearPoint(ax: number, ay: number, az: number, bx: number, by: number, bz: number, cx: number, cy: number, cz: number, R: number): boolean {
  const dx = bx - ax;
  const dy = by - ay;
  const dz = bz - az;
  const px = cx - ax;
  const py = cy - ay;
  const pz = cz - az;
  const l2 = dx * dx + dy * dy + dz * dz;
  let t = l2 > 0 ? (px * dx + py * dy + pz * dz) / l2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  const qx = px - t * dx;
  const qy = py - t * dy;
  const qz = pz - t * dz;
  return qx * qx + qy * qy + qz * qz < R * R;
}

/**
 * Squared closest distance between segments P0-P1 and Q0-Q1 (Ericson, Real-Time Collision
 * Detection, 5.1.9), allocation-free.
 */
export function segmentDistance2(
  p0x: number,
  p0y: number,
  p0z: number,
  p1x: number,
  p1y: number,
  p1z: number,
  q0x: number,
  q0y: number,
  q0z: number,
  q1x: number,
  q1y: number,
  q1z: number,
): number {
  const d1x = p1x - p0x;
  const d1y = p1y - p0y;
  const d1z = p1z - p0z;
  const d2x = q1x - q0x;
  const d2y = q1y - q0y;
  const d2z = q1z - q0z;
  const rx = p0x - q0x;
  const ry = p0y - q0y;
  const rz = p0z - q0z;
  const a = d1x * d1x + d1y * d1y + d1z * d1z;
  const e = d2x * d2x + d2y * d2y + d2z * d2z;
  const f = d2x * rx + d2y * ry + d2z * rz;
  let s: number;
  let t: number;
  const EPS = 1e-12;
  if (a <= EPS && e <= EPS) {
    s = 0;
    t = 0;
  } else if (a <= EPS) {
    s = 0;
    t = clamp01(f / e);
  } else {
    const c = d1x * rx + d1y * ry + d1z * rz;
    if (e <= EPS) {
      t = 0;
      s = clamp01(-c / a);
    } else {
      const b = d1x * d2x + d1y * d2y + d1z * d2z;
      const denom = a * e - b * b;
      s = denom > EPS * a * e ? clamp01((b * f - c * e) / denom) : 0;
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = clamp01(-c / a);
      } else if (t > 1) {
        t = 1;
        s = clamp01((b - c) / a);
      }
    }
  }
  const dx = p0x + d1x * s - (q0x + d2x * t);
  const dy = p0y + d1y * s - (q0y + d2y * t);
  const dz = p0z + d1z * s - (q0z + d2z * t);
  return dx * dx + dy * dy + dz * dz;
}

function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/**
 * Shadow loss of one capsule on a segment at closest distance rho (the profile above).
 * @param rho closest distance between the segment and the capsule's axis, metres
 * @param r capsule radius, metres
 * @param lmax loss on the axis, dB
 * @returns the loss, dB
 */
export function capsuleLossDb(rho: number, r: number, lmax: number): number {
  if (rho >= 2 * r) return 0;
  return 0.5 * lmax * (1 + Math.cos((Math.PI * rho) / (2 * r)));
}

/**
 * Loss of one segment through one body: the larger of its two capsules' losses.
 * @param bodies body buffer
 * @param o offset of the body
 * @param ax segment start x
 * @param ay segment start y
 * @param az segment start z
 * @param bx segment end x
 * @param by segment end y
 * @param bz segment end z
 * @param lmax loss on a capsule's axis, dB
 * @returns the loss, dB (0 when the segment misses the body's bounding sphere)
 */
export function segmentBodyLossDb(
  bodies: Float64Array,
  o: number,
  ax: number,
  ay: number,
  az: number,
  bx: number,
  by: number,
  bz: number,
  lmax: number,
): number {
  // Most segments pass well clear of a body, or of one capsule: distances to bounding spheres'
  // centres reject them before the exact segment-to-segment distance.
  const b = o + 2 * CAPSULE_LEN;
  if (!nearPoint(ax, ay, az, bx, by, bz, bodies[b]!, bodies[b + 1]!, bodies[b + 2]!, bodies[b + 3]!)) return 0;
  let worst = 0;
  for (let c = 0; c < 2; c++) {
    const q = o + c * CAPSULE_LEN;
    if (!nearPoint(ax, ay, az, bx, by, bz, bodies[q + 7]!, bodies[q + 8]!, bodies[q + 9]!, bodies[q + 10]!)) continue;
    const r = bodies[q + 6]!;
    const d2 = segmentDistance2(ax, ay, az, bx, by, bz, bodies[q]!, bodies[q + 1]!, bodies[q + 2]!, bodies[q + 3]!, bodies[q + 4]!, bodies[q + 5]!);
    if (d2 >= 4 * r * r) continue;
    const l = capsuleLossDb(Math.sqrt(d2), r, lmax);
    if (l > worst) worst = l;
  }
  return worst;
}

/**
 * Loss of a polyline path (its points, consecutive pairs are segments) through every body except one.
 * @param pts points, 3 values each
 * @param from index of the first point
 * @param nPts number of points (>= 2)
 * @param bodies body buffer
 * @param nBodies bodies in the buffer
 * @param skip index of a body to leave out (-1 for none)
 * @param lmax loss on a capsule's axis, dB
 * @returns the total loss, dB
 */
export function pathLossDb(pts: Float64Array, from: number, nPts: number, bodies: Float64Array, nBodies: number, skip: number, lmax: number): number {
  let total = 0;
  for (let b = 0; b < nBodies; b++) {
    if (b === skip) continue;
    const o = b * BODY_LEN;
    for (let i = from; i < from + nPts - 1; i++) {
      total += segmentBodyLossDb(bodies, o, pts[3 * i]!, pts[3 * i + 1]!, pts[3 * i + 2]!, pts[3 * i + 3]!, pts[3 * i + 4]!, pts[3 * i + 5]!, lmax);
    }
  }
  return total;
}

/**
 * Amplitude factor of a loss.
 * @param db loss, dB
 * @returns 10^(-db / 20)
 */
export function lossFactor(db: number): number {
  return db === 0 ? 1 : Math.pow(10, -db / 20);
}
