/**
 * Posture and activity of one person from 2-D keypoints (COCO-17, pixels of the reference view,
 * y downwards) and a box.
 *
 * A single camera view loses depth, so everything here is built from quantities that survive
 * perspective, scaling and moderate shear:
 *
 * - torso angle: the angle between the hip-midpoint -> shoulder-midpoint vector and the image's
 *   upward vertical (0 upright, 90 horizontal, 180 head down);
 * - torso inclination: the torso angle corrected for foreshortening. A torso lying along the line
 *   of sight projects short but still points up the image; its image length compared with a ruler
 *   at the same depth (the shoulder width: an adult torso is at least as long as the shoulders are
 *   wide) gives the out-of-plane part. `acos(up / L0)` with `L0 = max(image length, ruler)` equals
 *   the torso angle when the torso is not foreshortened, and grows towards 90 degrees as it is;
 * - body inclination: the same for the ankle -> head line, with a ruler of 3 shoulder widths;
 * - box aspect (height / width);
 * - thigh ratio: the vertical drop from hip to knee divided by the shin's image length. Standing,
 *   the thigh hangs as long as the shin (~1); seated, the thigh is horizontal and its vertical drop
 *   is small whether it is seen from the side (horizontal) or from the front (foreshortened);
 * - hip height: (ankle y - hip y) / (ankle y - head y), the share of the body's vertical extent
 *   below the hips (0.51-0.55 standing, mostly 0.3-0.5 seated);
 * - knee angle: hip-knee-ankle angle (180 straight; ~90 seated, seen from the side).
 *
 * The classifier turns these into three scores that sum to 1 (see `estimatePosture`); its
 * thresholds are in `POSTURE_THRESHOLDS`. `activityOf` adds motion over a short history:
 * walking, and falling (upright to lying within 1.5 s, tipping over from full height: a body that
 * went down in place, torso upright, in the 3 s before, as one kneeling to lie down on the floor
 * does, is lying down in stages, not falling).
 *
 * Known limits, measured on the simulator's bodies projected through its default camera (1.6 m
 * high, 11 degrees down; 7 places 2.5-4.5 m away x 8 headings): standing 280/280, seated 165/168
 * (the misses: a 0.55 m seat seen from the front), lying 448/448. Falls of 0.6-1.2 s in four
 * directions and from a chair (after 4 s seated) read as falling in 706/728 (694 with a confidence
 * >= 0.59, the alerts default), the misses being slow falls straight away from the camera close to
 * it and falls from the chair (45/56). Sitting down (0/56), lying down on a bed (0/56) and lying
 * down on the floor through kneeling (0/56) never read as falls. Without the staged-descent test
 * (`fallPriorDrop`) the last did (33/56, mostly facing away from the camera: from behind kneeling
 * looks like standing a head shorter, an upright start), with the same falls. Its price: a fall
 * from a chair less than ~2.4 s after sitting down reads as lying down in stages (0/56 after 1.4 s
 * seated, 3/56 after 1.9 s, 45/56 from 2.4 s), and so does a fall within ~3 s of kneeling or
 * squatting at the same place; a kneel held for more than ~2 s before lying back as fast as a fall
 * reads as a fall again (seen on stick figures; the simulator does not hold the kneel). On the
 * scripted fall scenarios of the VALIDATION recipes with true poses, fall precision went from 0.92
 * to 1.00 (2 false falls, both deliberate lie-downs on the floor, to none) at the same recall
 * (1.00) and delay; on the held-out TEST ones, measured once afterwards, from 0.82 to 1.00 (23
 * falls, all detected). (The simulator was still changing when measured.)
 */

import type { Activity } from './types.js';

const NOSE = 0;
const LAST_FACE = 4; // nose, eyes and ears are 0..4
const L_SH = 5;
const R_SH = 6;
const L_HIP = 11;
const R_HIP = 12;
const L_KNEE = 13;
const R_KNEE = 14;
const L_ANK = 15;
const R_ANK = 16;
/** Shoulders, hips, knees, ankles: what the classifier needs; their share visible is the coverage. */
const CORE = [L_SH, R_SH, L_HIP, R_HIP, L_KNEE, R_KNEE, L_ANK, R_ANK] as const;

const DEG = 180 / Math.PI;

/**
 * Every threshold of the posture classifier and of `activityOf`. Ramps go from "no evidence" (0)
 * to "full evidence" (1) linearly between the two values given.
 */
export const POSTURE_THRESHOLDS = {
  /** Keypoints below this confidence are treated as missing. */
  minKeypointConfidence: 0.2,
  /** Smallest torso length (shoulder mid to hip mid) per shoulder width of an adult, any build. */
  torsoPerShoulder: 1.0,
  /** Smallest ankle-to-head length per shoulder width (seated people stay above it). */
  bodyPerShoulder: 3.0,
  /** Same, when the head is missing and the shoulders are the top of the body. */
  bodyToShouldersPerShoulder: 2.4,
  /** Shoulder width per hip width, used as the ruler when a shoulder is missing. */
  shoulderPerHip: 1.5,
  /** Lying evidence from the torso and body inclinations: none at 35 degrees, full at 65. */
  lyingAngleFrom: 35,
  lyingAngleTo: 65,
  /** Lying evidence from the box aspect (height / width): none at 1.2, full at 0.6. */
  lyingAspectFrom: 1.2,
  lyingAspectTo: 0.6,
  /** Weights of torso inclination, body inclination and aspect in the lying score. */
  lyingWeights: [0.6, 0.25, 0.15] as const,
  /**
   * Lying along the line of sight, feet towards the camera: evidence is the product of a torso
   * inclination ramp (30 -> 45 degrees) and a hip height ramp (0.6 -> 0.68; standing ~0.53).
   */
  sightAngleFrom: 30,
  sightAngleTo: 45,
  sightHipFrom: 0.6,
  sightHipTo: 0.68,
  /** Seated evidence from the thigh ratio: none at 0.85, full at 0.55 (standing ~1.04, walking >= 0.82). */
  sitThighFrom: 0.85,
  sitThighTo: 0.55,
  /** Seated evidence from the hip height: none at 0.5, full at 0.4 (standing 0.51-0.55). */
  sitHipFrom: 0.5,
  sitHipTo: 0.4,
  /** Seated evidence from the knee angle (degrees): none at 160, full at 120 (walking >= 140). */
  sitKneeFrom: 160,
  sitKneeTo: 120,
  /** Weights of thigh ratio, hip height and knee angle in the seated score. */
  sitWeights: [0.6, 0.15, 0.25] as const,
  /** A torso inclination at or below this (degrees) counts as upright for fall detection. */
  uprightMaxDeg: 35,
} as const;

export type Posture = 'standing' | 'sitting' | 'lying';

/** Features and classification of one pose; filled in place by `estimatePosture`. */
export interface PostureEstimate {
  /** False when shoulders and hips are missing (or the keypoints are malformed): nothing else is meaningful. */
  valid: boolean;
  posture: Posture;
  /** Winning score times coverage, 0..1. */
  confidence: number;
  /** The three scores, summing to 1. */
  standingScore: number;
  sittingScore: number;
  lyingScore: number;
  /** Degrees, 0..180; see the module comment. */
  torsoAngle: number;
  torsoInclination: number;
  /** Degrees; NaN without ankles (or knees) and a top of the body. */
  bodyInclination: number;
  /** Box height / width. */
  aspect: number;
  /** NaN without a hip and knee on one side. */
  thighRatio: number;
  hipHeight: number;
  kneeAngle: number;
  /** Image y of the head (mean of the visible face keypoints; the shoulders when none is visible). */
  headY: number;
  /** Image y of the hip midpoint (the shoulders when no hip is visible). */
  hipY: number;
  /** Box centre (keypoint mean without a box), pixels. */
  centreX: number;
  centreY: number;
  /** Box height (keypoint extent without a box), pixels. */
  boxHeight: number;
  /** Share of the 8 core keypoints (shoulders, hips, knees, ankles) visible, 0..1. */
  coverage: number;
}

/**
 * A blank estimate to pass to `estimatePosture` for reuse.
 * @returns an invalid estimate
 */
export function createPostureEstimate(): PostureEstimate {
  return {
    valid: false,
    posture: 'standing',
    confidence: 0,
    standingScore: 0,
    sittingScore: 0,
    lyingScore: 0,
    torsoAngle: NaN,
    torsoInclination: NaN,
    bodyInclination: NaN,
    aspect: NaN,
    thighRatio: NaN,
    hipHeight: NaN,
    kneeAngle: NaN,
    headY: NaN,
    hipY: NaN,
    centreX: NaN,
    centreY: NaN,
    boxHeight: NaN,
    coverage: 0,
  };
}

const ramp = (v: number, from: number, to: number): number => {
  const r = (v - from) / (to - from);
  return r <= 0 ? 0 : r >= 1 ? 1 : r;
};

function visible(kp: ArrayLike<number>, i: number): boolean {
  const c = kp[3 * i + 2]!;
  return c >= POSTURE_THRESHOLDS.minKeypointConfidence && Number.isFinite(kp[3 * i]!) && Number.isFinite(kp[3 * i + 1]!);
}

/** Midpoint of a left/right pair along one axis (0 = x, 1 = y); the visible one alone; NaN if neither. */
function mid(kp: ArrayLike<number>, a: number, b: number, axis: number): number {
  const va = visible(kp, a);
  const vb = visible(kp, b);
  if (va && vb) return 0.5 * (kp[3 * a + axis]! + kp[3 * b + axis]!);
  if (va) return kp[3 * a + axis]!;
  if (vb) return kp[3 * b + axis]!;
  return NaN;
}

function dist(kp: ArrayLike<number>, a: number, b: number): number {
  return Math.hypot(kp[3 * a]! - kp[3 * b]!, kp[3 * a + 1]! - kp[3 * b + 1]!);
}

/**
 * Angle from the upward vertical of the vector (dx, up), where up is positive towards the top of
 * the image, corrected for foreshortening against a length `ruler` the vector has at least.
 */
function inclination(dx: number, up: number, ruler: number): number {
  const l = Math.hypot(dx, up);
  const full = ruler > l ? ruler : l;
  if (!(full > 0)) return NaN;
  return Math.atan2(Math.sqrt(Math.max(0, full * full - up * up)), up) * DEG;
}

/**
 * Torso angle from the vertical: hip midpoint to shoulder midpoint against the image's up
 * direction, in degrees (0 upright, 90 horizontal, 180 upside down). A missing side is replaced by
 * the visible one.
 * @param kp 17 x (x, y, confidence), pixels, y downwards
 * @returns degrees 0..180, NaN when no shoulder or no hip is visible
 * @example torsoAngle(kp) // ~0 for a standing person, ~90 lying across the view
 */
export function torsoAngle(kp: ArrayLike<number>): number {
  if (kp.length < 51) return NaN;
  const sx = mid(kp, L_SH, R_SH, 0);
  const sy = mid(kp, L_SH, R_SH, 1);
  const hx = mid(kp, L_HIP, R_HIP, 0);
  const hy = mid(kp, L_HIP, R_HIP, 1);
  const up = hy - sy;
  const dx = sx - hx;
  if (!Number.isFinite(up) || !Number.isFinite(dx) || (up === 0 && dx === 0)) return NaN;
  return Math.atan2(Math.abs(dx), up) * DEG;
}

/**
 * Computes the posture features of one pose and classifies it as standing, sitting or lying.
 *
 * Scores: lying `L` is the weighted mean (weights 0.6 / 0.25 / 0.15) of three ramps: torso
 * inclination 35 -> 65 degrees, body inclination 35 -> 65 degrees, box aspect 1.2 -> 0.6 (a
 * missing feature's weight goes to the others), or, when larger, the along-the-line-of-sight
 * evidence (torso inclination 30 -> 45 times hip height 0.6 -> 0.68). Seated evidence `s` is the
 * weighted mean (0.6 / 0.15 / 0.25) of thigh ratio 0.85 -> 0.55, hip height 0.5 -> 0.4 and knee
 * angle 160 -> 120 degrees (0.5 when no leg is visible: undecided). Then lying = L, sitting = (1 - L) s,
 * standing = (1 - L)(1 - s); the largest wins (ties in the order standing, sitting, lying), and
 * the confidence is the winning score times the share of the core keypoints visible.
 *
 * @param kp 17 x (x, y, confidence), pixels, y downwards
 * @param bbox x, y, width, height in pixels (the keypoints' extent is used when it is not positive)
 * @param out estimate to fill (reused to avoid allocation)
 * @returns `out`, with `valid` false when the torso cannot be found
 * @example
 * const est = estimatePosture(person.keypoints, person.bbox);
 * if (est.valid) console.log(est.posture, est.confidence);
 */
export function estimatePosture(kp: ArrayLike<number>, bbox: ArrayLike<number> | undefined, out: PostureEstimate = createPostureEstimate()): PostureEstimate {
  const T = POSTURE_THRESHOLDS;
  out.valid = false;
  out.confidence = 0;
  out.standingScore = out.sittingScore = out.lyingScore = 0;
  if (!kp || kp.length < 51) return out;

  let coverage = 0;
  for (const i of CORE) if (visible(kp, i)) coverage++;
  out.coverage = coverage / CORE.length;

  const sx = mid(kp, L_SH, R_SH, 0);
  const sy = mid(kp, L_SH, R_SH, 1);
  const hx = mid(kp, L_HIP, R_HIP, 0);
  const hy = mid(kp, L_HIP, R_HIP, 1);
  if (!Number.isFinite(sy) || !Number.isFinite(hy)) return out;

  let headX = 0;
  let headY = 0;
  let headN = 0;
  for (let i = NOSE; i <= LAST_FACE; i++)
    if (visible(kp, i)) {
      headX += kp[3 * i]!;
      headY += kp[3 * i + 1]!;
      headN++;
    }
  out.headY = headN > 0 ? headY / headN : sy;
  out.hipY = hy;

  // The ruler: shoulder width, or the hip width scaled to it.
  let ruler = NaN;
  if (visible(kp, L_SH) && visible(kp, R_SH)) ruler = dist(kp, L_SH, R_SH);
  else if (visible(kp, L_HIP) && visible(kp, R_HIP)) ruler = dist(kp, L_HIP, R_HIP) * T.shoulderPerHip;

  out.torsoAngle = torsoAngle(kp);
  out.torsoInclination = inclination(sx - hx, hy - sy, ruler * T.torsoPerShoulder);

  // Bottom of the body: the lower ankle (body inclination and hip height need the whole body).
  let bottomY = NaN;
  let bottomX = NaN;
  if (visible(kp, L_ANK) || visible(kp, R_ANK)) {
    bottomY = Math.max(visible(kp, L_ANK) ? kp[3 * L_ANK + 1]! : -Infinity, visible(kp, R_ANK) ? kp[3 * R_ANK + 1]! : -Infinity);
    bottomX = mid(kp, L_ANK, R_ANK, 0);
  }
  const topY = out.headY;
  const topX = headN > 0 ? headX / headN : sx;
  out.bodyInclination = Number.isFinite(bottomY)
    ? inclination(topX - bottomX, bottomY - topY, ruler * (headN > 0 ? T.bodyPerShoulder : T.bodyToShouldersPerShoulder))
    : NaN;
  out.hipHeight = Number.isFinite(bottomY) && bottomY - topY > 0 ? (bottomY - hy) / (bottomY - topY) : NaN;

  // Legs, per side, averaged over the visible ones. The thigh's vertical drop is measured against
  // the shin's image length, or without an ankle against 0.85 torso lengths (shin / torso ~ 0.85).
  const torsoLen = Math.hypot(sx - hx, hy - sy);
  let thigh = 0;
  let legs = 0;
  let knee = 0;
  let knees = 0;
  for (let side = 0; side < 2; side++) {
    const h = side === 0 ? L_HIP : R_HIP;
    const k = side === 0 ? L_KNEE : R_KNEE;
    const a = side === 0 ? L_ANK : R_ANK;
    if (!visible(kp, h) || !visible(kp, k)) continue;
    const upper = dist(kp, h, k);
    if (!(upper > 0)) continue;
    const withAnkle = visible(kp, a) && dist(kp, k, a) > 0;
    const ruler = withAnkle ? dist(kp, k, a) : torsoLen * 0.85;
    if (!(ruler > 0)) continue;
    thigh += (kp[3 * k + 1]! - kp[3 * h + 1]!) / ruler;
    legs++;
    if (!withAnkle) continue;
    const shin = dist(kp, k, a);
    const dot = (kp[3 * h]! - kp[3 * k]!) * (kp[3 * a]! - kp[3 * k]!) + (kp[3 * h + 1]! - kp[3 * k + 1]!) * (kp[3 * a + 1]! - kp[3 * k + 1]!);
    knee += Math.acos(Math.max(-1, Math.min(1, dot / (shin * upper)))) * DEG;
    knees++;
  }
  out.thighRatio = legs > 0 ? thigh / legs : NaN;
  out.kneeAngle = knees > 0 ? knee / knees : NaN;

  // Box, or the extent of the visible keypoints.
  let bw = bbox && bbox.length >= 4 ? bbox[2]! : NaN;
  let bh = bbox && bbox.length >= 4 ? bbox[3]! : NaN;
  if (bw > 0 && bh > 0 && Number.isFinite(bbox![0]!) && Number.isFinite(bbox![1]!)) {
    out.centreX = bbox![0]! + bw / 2;
    out.centreY = bbox![1]! + bh / 2;
  } else {
    let x0 = Infinity;
    let x1 = -Infinity;
    let y0 = Infinity;
    let y1 = -Infinity;
    for (let i = 0; i < 17; i++) {
      if (!visible(kp, i)) continue;
      const x = kp[3 * i]!;
      const y = kp[3 * i + 1]!;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
    bw = x1 - x0;
    bh = y1 - y0;
    out.centreX = (x0 + x1) / 2;
    out.centreY = (y0 + y1) / 2;
  }
  out.boxHeight = bh;
  out.aspect = bw > 0 && bh > 0 ? bh / bw : NaN;

  // Lying score.
  const [wt, wb, wa] = T.lyingWeights;
  let num = 0;
  let den = 0;
  if (Number.isFinite(out.torsoInclination)) {
    num += wt * ramp(out.torsoInclination, T.lyingAngleFrom, T.lyingAngleTo);
    den += wt;
  }
  if (Number.isFinite(out.bodyInclination)) {
    num += wb * ramp(out.bodyInclination, T.lyingAngleFrom, T.lyingAngleTo);
    den += wb;
  }
  if (Number.isFinite(out.aspect)) {
    num += wa * ramp(out.aspect, T.lyingAspectFrom, T.lyingAspectTo);
    den += wa;
  }
  if (den === 0) return out;
  // A body lying along the line of sight with the feet towards the camera keeps an upright image
  // torso angle, but its torso is foreshortened while the nearer legs are magnified: the hips sit
  // unusually high in the body's vertical extent.
  const alongSight = Number.isFinite(out.hipHeight)
    ? ramp(out.torsoInclination, T.sightAngleFrom, T.sightAngleTo) * ramp(out.hipHeight, T.sightHipFrom, T.sightHipTo)
    : 0;
  const lying = Math.max(num / den, alongSight);

  // Seated evidence.
  const [st, sh, sk] = T.sitWeights;
  num = 0;
  den = 0;
  if (Number.isFinite(out.thighRatio)) {
    num += st * ramp(out.thighRatio, T.sitThighFrom, T.sitThighTo);
    den += st;
  }
  if (Number.isFinite(out.hipHeight)) {
    num += sh * ramp(out.hipHeight, T.sitHipFrom, T.sitHipTo);
    den += sh;
  }
  if (Number.isFinite(out.kneeAngle)) {
    num += sk * ramp(out.kneeAngle, T.sitKneeFrom, T.sitKneeTo);
    den += sk;
  }
  const seated = den > 0 ? num / den : 0.5;

  out.lyingScore = lying;
  out.sittingScore = (1 - lying) * seated;
  out.standingScore = (1 - lying) * (1 - seated);
  let best: Posture = 'standing';
  let score = out.standingScore;
  if (out.sittingScore > score) {
    best = 'sitting';
    score = out.sittingScore;
  }
  if (out.lyingScore > score) {
    best = 'lying';
    score = out.lyingScore;
  }
  out.posture = best;
  out.confidence = score * out.coverage;
  out.valid = true;
  return out;
}

/**
 * Classifies one pose; a convenience over `estimatePosture`.
 * @param kp 17 x (x, y, confidence), pixels, y downwards
 * @param bbox x, y, width, height in pixels
 * @returns posture and confidence (0 when the torso is not visible; posture is then 'standing')
 * @example classifyPosture(kp, box) // { posture: 'sitting', confidence: 0.82 }
 */
export function classifyPosture(kp: ArrayLike<number>, bbox?: ArrayLike<number>): { posture: Posture; confidence: number } {
  const e = estimatePosture(kp, bbox);
  return { posture: e.posture, confidence: e.valid ? e.confidence : 0 };
}

// History columns.
const C_TIME = 0;
const C_INCL = 1;
const C_HEAD = 2;
const C_HIP = 3;
const C_CX = 4;
const C_CY = 5;
const C_BOXH = 6;
const C_FX = 7;
const C_FY = 8;
const C_SPEED = 9;
const C_POSTURE = 10;
const C_CONF = 11;
const C_COVER = 12;
const C_STAND = 13;
const NCOL = 14;
const POSTURE_CODES: readonly Posture[] = ['standing', 'sitting', 'lying'];

/**
 * A ring of the recent posture samples of one tracked person (time, torso inclination, head and
 * hip height, box centre and height, floor position and speed, posture), held in one Float64Array.
 * Index 0 is the newest sample.
 *
 * @example
 * const h = new PoseHistory(64);
 * h.push(frame.time, estimatePosture(p.keypoints, p.bbox), p.floor?.x ?? NaN, p.floor?.y ?? NaN, NaN);
 * activityOf(h).activity;
 */
export class PoseHistory {
  readonly capacity: number;
  private readonly data: Float64Array;
  /** Slot the next push writes. */
  private write = 0;
  private count = 0;
  /**
   * Box height and time of the last sample clearly standing (standing score >= 0.8), kept beyond
   * the ring: the person's full height in the view, which falls are measured against.
   */
  standingBox = NaN;
  standingTime = NaN;

  /**
   * @param capacity samples kept (2..4096); the oldest is overwritten when full
   */
  constructor(capacity = 64) {
    if (!Number.isInteger(capacity) || capacity < 2 || capacity > 4096)
      throw new RangeError(`PoseHistory: capacity must be an integer in [2, 4096], got ${capacity}`);
    this.capacity = capacity;
    this.data = new Float64Array(capacity * NCOL);
  }

  /** Samples held. */
  get length(): number {
    return this.count;
  }

  /** Forgets every sample. */
  clear(): void {
    this.write = 0;
    this.count = 0;
    this.standingBox = NaN;
    this.standingTime = NaN;
  }

  /**
   * Appends one valid estimate.
   * @param time epoch ms
   * @param est a valid estimate from `estimatePosture`
   * @param floorX floor position, metres (NaN when unknown)
   * @param floorY floor position, metres (NaN when unknown)
   * @param speed floor speed in m/s when known (from the tracker), else NaN
   */
  push(time: number, est: PostureEstimate, floorX: number, floorY: number, speed: number): void {
    const o = this.write * NCOL;
    const d = this.data;
    d[o + C_TIME] = time;
    d[o + C_INCL] = est.torsoInclination;
    d[o + C_HEAD] = est.headY;
    d[o + C_HIP] = est.hipY;
    d[o + C_CX] = est.centreX;
    d[o + C_CY] = est.centreY;
    d[o + C_BOXH] = est.boxHeight;
    d[o + C_FX] = floorX;
    d[o + C_FY] = floorY;
    d[o + C_SPEED] = speed;
    d[o + C_POSTURE] = POSTURE_CODES.indexOf(est.posture);
    d[o + C_CONF] = est.confidence;
    d[o + C_COVER] = est.coverage;
    d[o + C_STAND] = est.standingScore;
    this.write = this.write + 1 === this.capacity ? 0 : this.write + 1;
    if (this.count < this.capacity) this.count++;
    if (est.standingScore >= STANDING_REFERENCE_SCORE && est.boxHeight > 0) {
      this.standingBox = est.boxHeight;
      this.standingTime = time;
    }
  }

  /**
   * Drops samples older than `now - maxAgeMs` (and any from the future of `now`, after a clock
   * jump backwards).
   * @param now epoch ms
   * @param maxAgeMs age limit
   */
  trim(now: number, maxAgeMs: number): void {
    while (this.count > 0) {
      const t = this.time(this.count - 1);
      if (now - t > maxAgeMs) this.count--;
      else break;
    }
    if (this.count > 0 && this.time(0) > now) this.clear();
  }

  private get(k: number, col: number): number {
    if (k < 0 || k >= this.count) return NaN;
    let slot = this.write - 1 - k;
    if (slot < 0) slot += this.capacity;
    return this.data[slot * NCOL + col]!;
  }

  /** Epoch ms of sample k (0 = newest). */
  time(k: number): number {
    return this.get(k, C_TIME);
  }
  /** Torso inclination of sample k, degrees. */
  inclination(k: number): number {
    return this.get(k, C_INCL);
  }
  /** Head image y of sample k. */
  headY(k: number): number {
    return this.get(k, C_HEAD);
  }
  /** Hip image y of sample k. */
  hipY(k: number): number {
    return this.get(k, C_HIP);
  }
  centreX(k: number): number {
    return this.get(k, C_CX);
  }
  centreY(k: number): number {
    return this.get(k, C_CY);
  }
  boxHeight(k: number): number {
    return this.get(k, C_BOXH);
  }
  floorX(k: number): number {
    return this.get(k, C_FX);
  }
  floorY(k: number): number {
    return this.get(k, C_FY);
  }
  /** Floor speed given with sample k (m/s), NaN when none was given. */
  speed(k: number): number {
    return this.get(k, C_SPEED);
  }
  posture(k: number): Posture {
    return POSTURE_CODES[this.get(k, C_POSTURE)] ?? 'standing';
  }
  /** Posture confidence of sample k. */
  confidence(k: number): number {
    return this.get(k, C_CONF);
  }
  coverage(k: number): number {
    return this.get(k, C_COVER);
  }
  /** Standing score of sample k. */
  standingScore(k: number): number {
    return this.get(k, C_STAND);
  }
  /**
   * Whether sample k is a clear upright posture a fall can start from: torso inclination <= 35
   * degrees and either classified sitting or standing with a standing score >= 0.8 (kneeling
   * upright, the way down to lying on the floor on purpose, scores ~0.65 seen from the side and is
   * not a start; seen along the shins it scores ~0.9, and `priorDrop` tells the lie-down from a fall).
   */
  upright(k: number): boolean {
    if (!(this.get(k, C_INCL) <= POSTURE_THRESHOLDS.uprightMaxDeg)) return false;
    const p = this.get(k, C_POSTURE);
    return p === 1 || (p === 0 && this.get(k, C_STAND) >= STANDING_REFERENCE_SCORE);
  }
}

/** Thresholds of `activityOf`. */
export interface ActivityThresholds {
  /** Floor speed (m/s) at which a standing-like person is walking; default 0.3. */
  walkSpeed: number;
  /** Without floor positions: box-centre speed in box heights per second; default 0.25. */
  walkBoxRate: number;
  /** Longest time from upright to down for a fall, ms; default 1500. */
  fallWindowMs: number;
  /** Smallest rise of the torso inclination in a fall, degrees; default 50. */
  fallAngleDeg: number;
  /**
   * Smallest head/hip drop in a fall, as a share of the upright box height; default 0.4. The drop
   * is 2/3 of the head's plus 1/3 of the hip's: the head moves most in every fall, the hips tell a
   * fall from bending over.
   */
  fallDrop: number;
  /**
   * Smallest peak downward head speed in a fall, in reference heights per second over >= 250 ms;
   * default 0.8 (a 1.7 m person's head at ~1.4 m/s). In simulated views falls reach 0.8-6, sitting
   * down stays below 0.35 and lying down on a bed below 0.7; lying down on the floor from kneeling
   * reaches 0.85-1.35, as fast as a slow fall, and is told apart by `fallPriorDrop` instead.
   */
  fallSpeed: number;
  /** How far back before a fall's upright start `fallPriorDrop` looks, ms; default 3000. */
  fallPriorMs: number;
  /**
   * Largest drop of the head, in place, in the `fallPriorMs` before a fall's upright start, as a
   * share of the reference height; default 0.15. A fall tips over from full height; a person lying
   * down on the floor on purpose goes down in stages (kneels, crouches or sits on the floor first)
   * and tips over from there (in the simulator: kneels, half straightens up and lies back). In
   * simulated validation views the head goes down 0.22-0.30 of the reference height in place in
   * the 3 s before such a lie-down tips over, and < 0.04 before a fall from standing or walking
   * (gait, sway; 0.08 at most). See `priorDrop`.
   */
  fallPriorDrop: number;
}

export const DEFAULT_ACTIVITY_THRESHOLDS: Readonly<ActivityThresholds> = Object.freeze({
  walkSpeed: 0.3,
  walkBoxRate: 0.25,
  fallWindowMs: 1500,
  fallAngleDeg: 50,
  fallDrop: 0.4,
  fallSpeed: 0.8,
  fallPriorMs: 3000,
  fallPriorDrop: 0.15,
});

/** Shortest span over which a head descent speed is measured, ms: smooths keypoint jitter. */
const DESCENT_SPAN_MS = 250;

/**
 * Peak downward speed of the head (pixels per second) between sample `upTo` and the newest, each
 * measured over at least DESCENT_SPAN_MS (or what there is of it).
 * @param h history
 * @param upTo oldest sample to consider
 * @returns pixels per second, 0 when the head did not go down
 */
export function peakDescent(h: PoseHistory, upTo: number): number {
  let peak = 0;
  for (let k = 0; k < upTo; k++) {
    const tk = h.time(k);
    let i = k + 1;
    while (i < upTo && tk - h.time(i) < DESCENT_SPAN_MS) i++;
    const dt = (tk - h.time(i)) / 1000;
    if (!(dt > 0)) continue;
    const v = (h.headY(k) - h.headY(i)) / dt;
    if (v > peak) peak = v;
  }
  return peak;
}

/** Floor distance (m) within which a sample is at the place of a fall's upright start (`priorDrop`). */
const SAME_PLACE_M = 0.5;
/** Without floor positions: largest horizontal box-centre offset, in reference heights, for the same place. */
const SAME_PLACE_BOX = 0.25;

/**
 * The largest drop of the head (pixels) that happened in place, torso upright, in the `spanMs`
 * before sample k, up to and including k: the most the head of one sample was below the head of
 * an earlier one, both within the span, with a torso inclination <= `uprightMaxDeg`, and at the
 * place of sample k (floor positions within 0.5 m; without floor positions, box centres within
 * 0.25 reference heights of each other horizontally). Comparing only samples at one place keeps
 * the perspective change of a walk (the head's image height changes as the person walks towards
 * or away from the camera) out of it; leaving out inclined samples keeps bending over out of it.
 *
 * A fall tips over from full height, so this is small (gait, sway); a deliberate lie-down on the
 * floor goes down in stages, and the kneel or crouch before the tip-over shows as a drop of a
 * quarter of the body height. So does sitting down: a fall from a chair within ~2.4 s of sitting
 * down is taken for lying down in stages (see the module comment).
 * @param h history
 * @param k index of the upright sample a fall would start from (0 = newest)
 * @param spanMs look-back before sample k, ms
 * @param ref reference height (pixels), for the horizontal same-place test without floor positions
 * @returns pixels, 0 when the head only rose or held its height
 * @example priorDrop(h, k, 3000, box) / box // >= 0.15: lowered first, lying down in stages
 */
export function priorDrop(h: PoseHistory, k: number, spanMs: number, ref: number): number {
  const tk = h.time(k);
  const fx = h.floorX(k);
  const fy = h.floorY(k);
  const cx = h.centreX(k);
  const floor = Number.isFinite(fx) && Number.isFinite(fy);
  let oldest = k;
  while (oldest + 1 < h.length && tk - h.time(oldest + 1) <= spanMs) oldest++;
  // From the oldest sample towards k: the highest head so far (smallest image y) and the largest
  // drop below it.
  let highest = Infinity;
  let drop = 0;
  for (let j = oldest; j >= k; j--) {
    const jx = h.floorX(j);
    const jy = h.floorY(j);
    const here =
      floor && Number.isFinite(jx) && Number.isFinite(jy) ? Math.hypot(jx - fx, jy - fy) <= SAME_PLACE_M : Math.abs(h.centreX(j) - cx) <= SAME_PLACE_BOX * ref;
    if (!here || !(h.inclination(j) <= POSTURE_THRESHOLDS.uprightMaxDeg)) continue;
    const y = h.headY(j);
    if (y - highest > drop) drop = y - highest;
    if (y < highest) highest = y;
  }
  return drop;
}

/**
 * Standing score a sample needs to set the standing reference height: clear standing and walking
 * poses score >= 0.95; kneeling upright, which the classifier calls standing at ~0.65, must not.
 */
const STANDING_REFERENCE_SCORE = 0.8;

/** How long the last standing box height stays the reference for falls, ms. */
const STANDING_REFERENCE_MS = 10_000;

/**
 * The height a fall from sample k is measured against: the larger of k's box height and the box
 * height the person had when last clearly standing (within STANDING_REFERENCE_MS). A person who
 * lowers themselves first (kneels, crouches) and then lies down moves fast relative to the lowered
 * box, but not relative to their standing height; a fall from a chair is measured against the
 * seated box once the person has sat for longer than that.
 * @param h history
 * @param k index of the upright sample (0 = newest)
 * @param now epoch ms of the newest sample
 * @returns pixels
 */
export function referenceHeight(h: PoseHistory, k: number, now: number): number {
  const box = h.boxHeight(k);
  if (now - h.standingTime <= STANDING_REFERENCE_MS && h.standingBox > box) return h.standingBox;
  return box;
}

/** Span over which a speed is estimated from positions when none is given, ms. */
const SPEED_SPAN_MS = 1000;
/** Shortest span that gives a usable speed estimate, ms. */
const MIN_SPEED_SPAN_MS = 250;

export interface ActivityEstimate {
  activity: Activity;
  confidence: number;
  /** Speed used for walking: m/s on the floor, or box heights per second; NaN when unknown. */
  speed: number;
  /** Whether `speed` is a floor speed (m/s) rather than box heights per second. */
  floorSpeed: boolean;
}

/**
 * Speed of the newest sample: the given floor speed, else the floor displacement over the last
 * second, else the box-centre displacement in box heights per second.
 */
function speedOf(h: PoseHistory, out: ActivityEstimate): void {
  out.speed = NaN;
  out.floorSpeed = false;
  const given = h.speed(0);
  if (Number.isFinite(given)) {
    out.speed = given;
    out.floorSpeed = true;
    return;
  }
  const t0 = h.time(0);
  let k = -1;
  for (let i = 1; i < h.length; i++) {
    if (t0 - h.time(i) > SPEED_SPAN_MS) break;
    k = i;
  }
  if (k < 0) return;
  const span = t0 - h.time(k);
  if (span < MIN_SPEED_SPAN_MS) return;
  const fx0 = h.floorX(0);
  const fxk = h.floorX(k);
  if (Number.isFinite(fx0) && Number.isFinite(fxk)) {
    out.speed = Math.hypot(fx0 - fxk, h.floorY(0) - h.floorY(k)) / (span / 1000);
    out.floorSpeed = true;
    return;
  }
  const bh = 0.5 * (h.boxHeight(0) + h.boxHeight(k));
  if (!(bh > 0)) return;
  out.speed = Math.hypot(h.centreX(0) - h.centreX(k), h.centreY(0) - h.centreY(k)) / bh / (span / 1000);
}

/**
 * The activity of the newest sample of a history: posture plus motion.
 *
 * - falling: some sample within `fallWindowMs` before the newest was upright (`PoseHistory.upright`:
 *   torso inclination <= 35 degrees, seated or clearly standing), and from it to the newest the torso inclination rose
 *   by >= `fallAngleDeg`, the head and hip dropped (2/3 of the head's drop plus 1/3 of the hip's,
 *   pixels, over the reference height: the upright sample's box height, or the box height the
 *   person had when last standing, within 10 s, when that is larger) by >= `fallDrop`, the head went
 *   down at >= `fallSpeed` reference heights per second at some point (`peakDescent`), and in the
 *   `fallPriorMs` before the upright sample the head had not already gone down in place by
 *   `fallPriorDrop` reference heights or more (`priorDrop`: a fall tips over from full height, lying
 *   down on purpose goes down in stages, kneeling first). Confidence: 0.5 at the thresholds,
 *   rising to 1 as the angle change reaches 90 degrees (weight 0.4), the drop twice its threshold
 *   (0.4) and the speed twice its threshold (0.2), times the coverage of the newest sample:
 *   `(0.5 + 0.5 (0.4 a + 0.4 d + 0.2 v)) * coverage`; the best upright sample counts. The history
 *   must reach `fallWindowMs + fallPriorMs` back for the staged lie-down test to see all of its span.
 * - walking: classified standing and a speed >= `walkSpeed` m/s on the floor (the given speed, else
 *   from floor positions over the last second), or without floor positions a box-centre speed
 *   >= `walkBoxRate` box heights per second. Confidence: posture confidence times
 *   `clamp(speed / (2 threshold), 0.5, 1)`.
 * - otherwise the posture of the newest sample, with its confidence.
 *
 * @param h the history (newest sample last pushed); must not be empty
 * @param thresholds defaults in DEFAULT_ACTIVITY_THRESHOLDS
 * @param out estimate to fill (reused to avoid allocation)
 * @returns `out`
 * @example
 * history.push(frame.time, estimatePosture(p.keypoints, p.bbox), p.floor.x, p.floor.y, speed);
 * const { activity, confidence } = activityOf(history);
 */
export function activityOf(
  h: PoseHistory,
  thresholds: Readonly<ActivityThresholds> = DEFAULT_ACTIVITY_THRESHOLDS,
  out: ActivityEstimate = { activity: 'standing', confidence: 0, speed: NaN, floorSpeed: false },
): ActivityEstimate {
  out.speed = NaN;
  out.floorSpeed = false;
  if (h.length === 0) {
    out.activity = 'standing';
    out.confidence = 0;
    return out;
  }
  const t0 = h.time(0);
  const incl0 = h.inclination(0);
  const head0 = h.headY(0);
  const hip0 = h.hipY(0);

  let fall = 0;
  for (let k = 1; k < h.length; k++) {
    const dt = t0 - h.time(k);
    if (dt > thresholds.fallWindowMs) break;
    if (!(dt > 0)) continue;
    if (!h.upright(k)) continue;
    const dAngle = incl0 - h.inclination(k);
    if (!(dAngle >= thresholds.fallAngleDeg)) continue;
    const box = referenceHeight(h, k, t0);
    if (!(box > 0)) continue;
    const drop = ((2 * (head0 - h.headY(k))) / box + (hip0 - h.hipY(k)) / box) / 3;
    if (!(drop >= thresholds.fallDrop)) continue;
    const speed = peakDescent(h, k) / box;
    if (!(speed >= thresholds.fallSpeed)) continue;
    // Went down in place just before (kneeling, crouching): lying down in stages, not a fall.
    if (priorDrop(h, k, thresholds.fallPriorMs, box) / box >= thresholds.fallPriorDrop) continue;
    const a = ramp(dAngle, thresholds.fallAngleDeg, 90);
    const d = ramp(drop, thresholds.fallDrop, 2 * thresholds.fallDrop);
    const v = ramp(speed, thresholds.fallSpeed, 2 * thresholds.fallSpeed);
    const c = 0.5 + 0.5 * (0.4 * a + 0.4 * d + 0.2 * v);
    if (c > fall) fall = c;
  }
  if (fall > 0) {
    out.activity = 'falling';
    out.confidence = fall * h.coverage(0);
    return out;
  }

  const posture = h.posture(0);
  const conf = h.confidence(0);
  if (posture === 'standing') {
    speedOf(h, out);
    const limit = out.floorSpeed ? thresholds.walkSpeed : thresholds.walkBoxRate;
    if (out.speed >= limit) {
      out.activity = 'walking';
      out.confidence = conf * Math.min(1, Math.max(0.5, out.speed / (2 * limit)));
      return out;
    }
  }
  out.activity = posture;
  out.confidence = conf;
  return out;
}
