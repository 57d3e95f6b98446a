/**
 * A 3-D human skeleton for the simulator: COCO-17 keypoints from a small set of joint angles, body
 * dimensions scaled by height, kinematics for standing, walking, sitting, lying, falling and the
 * transitions between them, and the radar scatterers the channel model sees.
 *
 * Coordinates are room metres (x across, y depth, z up). A pose is a Float64Array of POSE_LEN
 * parameters (pelvis position, heading, trunk pitch and roll, hip/knee/shoulder/elbow angles, head
 * nod). Keypoints come from forward kinematics: every bone is its parent joint plus a fixed length
 * times a unit direction, so bone lengths are constant by construction, whatever the angles and
 * however poses are interpolated. Transitions interpolate parameters, never keypoints.
 *
 * Angles (radians) are anatomical, relative to the trunk frame (forward f, left l, up u):
 * - hip flexion swings the thigh forward from -u towards f; knee flexion bends the shin back;
 * - shoulder flexion swings the upper arm forward from -u towards f; elbow flexion continues it;
 * - abduction tilts a limb out to its own side (towards +l for the left limbs).
 * The trunk frame is the heading (yaw) frame pitched forward by PITCH about l, then rolled about f
 * (positive roll tilts the head towards the person's right).
 */

/** COCO-17 keypoint names in DECISIONS order (one list for the whole project). */
export { KEYPOINT_NAMES } from '../pose/types.js';

/** Keypoint indices. */
export const KP = {
  NOSE: 0,
  L_EYE: 1,
  R_EYE: 2,
  L_EAR: 3,
  R_EAR: 4,
  L_SHOULDER: 5,
  R_SHOULDER: 6,
  L_ELBOW: 7,
  R_ELBOW: 8,
  L_WRIST: 9,
  R_WRIST: 10,
  L_HIP: 11,
  R_HIP: 12,
  L_KNEE: 13,
  R_KNEE: 14,
  L_ANKLE: 15,
  R_ANKLE: 16,
} as const;

export const NUM_KEYPOINTS = 17;

/** Pairs of keypoints joined by a rigid bone (limbs, shoulder and hip girdles, head). */
export const RIGID_BONES: ReadonlyArray<readonly [number, number]> = [
  [KP.L_SHOULDER, KP.L_ELBOW],
  [KP.R_SHOULDER, KP.R_ELBOW],
  [KP.L_ELBOW, KP.L_WRIST],
  [KP.R_ELBOW, KP.R_WRIST],
  [KP.L_HIP, KP.L_KNEE],
  [KP.R_HIP, KP.R_KNEE],
  [KP.L_KNEE, KP.L_ANKLE],
  [KP.R_KNEE, KP.R_ANKLE],
  [KP.L_SHOULDER, KP.R_SHOULDER],
  [KP.L_HIP, KP.R_HIP],
  [KP.L_SHOULDER, KP.L_HIP],
  [KP.R_SHOULDER, KP.R_HIP],
  [KP.NOSE, KP.L_EYE],
  [KP.NOSE, KP.R_EYE],
  [KP.L_EYE, KP.L_EAR],
  [KP.R_EYE, KP.R_EAR],
  [KP.L_EAR, KP.R_EAR],
];

/** Indices into a pose parameter vector. */
export const P = {
  X: 0,
  Y: 1,
  /** Pelvis (mid-hip) height; resolved by the support rule after forward kinematics. */
  Z: 2,
  HEADING: 3,
  PITCH: 4,
  ROLL: 5,
  HIP_L: 6,
  HIP_R: 7,
  KNEE_L: 8,
  KNEE_R: 9,
  LEG_AB: 10,
  SH_L: 11,
  SH_R: 12,
  EL_L: 13,
  EL_R: 14,
  ARM_AB: 15,
  HEAD: 16,
} as const;
export const POSE_LEN = 17;

/** Segment lengths and offsets of one body, metres. */
export interface BodyDims {
  readonly height: number;
  /** height / 1.75: scales radar cross-sections and body thickness. */
  readonly scale: number;
  readonly ankleH: number;
  readonly shin: number;
  readonly thigh: number;
  /** Mid-hip to mid-shoulder. */
  readonly torso: number;
  /** Mid-shoulder to the head centre (between the ears). */
  readonly neck: number;
  readonly hipHalf: number;
  readonly shoulderHalf: number;
  readonly upperArm: number;
  readonly forearm: number;
  /** Wrist to the centre of the hand. */
  readonly hand: number;
  readonly noseFwd: number;
  readonly noseDown: number;
  readonly eyeFwd: number;
  readonly eyeUp: number;
  readonly eyeHalf: number;
  readonly earHalf: number;
  /** Hip joint centre above the seat when sitting. */
  readonly seatToHip: number;
  /** Hip joint centre above the supporting surface lying on the back or front. */
  readonly lieZ: number;
  /** Hip joint centre above the supporting surface lying on the side. */
  readonly lieSideZ: number;
}

/** Shortest and tallest supported body height, metres. */
export const MIN_HEIGHT = 1.5;
export const MAX_HEIGHT = 1.95;

/**
 * Body dimensions for a standing height, from the segment-length ratios of Drillis & Contini as
 * tabulated by Winter (Biomechanics and Motor Control of Human Movement, 4th ed., fig. 4.1):
 * ankle 0.039 H, knee 0.285 H, hip 0.530 H, shoulder 0.818 H, eye 0.936 H, upper arm 0.186 H,
 * forearm 0.146 H, hand 0.108 H. Head offsets are typical adult values expressed as fractions of H.
 *
 * @param height standing height in metres, 1.5 to 1.95
 * @returns the dimensions
 * @example bodyDims(1.75).thigh // 0.42875
 */
export function bodyDims(height: number): BodyDims {
  if (!(height >= MIN_HEIGHT && height <= MAX_HEIGHT)) {
    throw new RangeError(`body height ${height} m outside ${MIN_HEIGHT}..${MAX_HEIGHT}`);
  }
  const H = height;
  return {
    height: H,
    scale: H / 1.75,
    ankleH: 0.039 * H,
    shin: 0.246 * H,
    thigh: 0.245 * H,
    torso: 0.288 * H,
    neck: 0.107 * H,
    hipHalf: 0.06 * H,
    shoulderHalf: 0.115 * H,
    upperArm: 0.186 * H,
    forearm: 0.146 * H,
    hand: 0.054 * H,
    noseFwd: 0.06 * H,
    noseDown: 0.02 * H,
    eyeFwd: 0.045 * H,
    eyeUp: 0.011 * H,
    eyeHalf: 0.018 * H,
    earHalf: 0.043 * H,
    seatToHip: 0.05 * H,
    lieZ: 0.055 * H,
    lieSideZ: 0.125 * H,
  };
}

/** Lowest a keypoint may go when nothing else holds the body up (m); see `solvePose`. */
export const FLOOR_CLEARANCE = 0.03;

/**
 * How the pelvis height is found: `feet` puts the lower ankle at ankle height (standing, walking,
 * sitting down on a chair, kneeling up: whatever the legs do, the feet stay on the floor); `free`
 * keeps the pose's own pelvis height and only lifts the body when a keypoint would go below
 * FLOOR_CLEARANCE (lying, falling, lying down and getting up).
 */
export type Support = 'feet' | 'free';

/** Lying postures: on the back, on the front, on the left or right side. */
export type Posture = 'supine' | 'prone' | 'left' | 'right';

/** Direction of a fall relative to the person's heading. */
export type FallDirection = 'forward' | 'backward' | 'left' | 'right';

const TWO_PI = 2 * Math.PI;
const HALF_PI = Math.PI / 2;

/**
 * Angle wrapped into (-pi, pi].
 * @param a radians
 * @returns the same direction in (-pi, pi]
 */
export function wrapAngle(a: number): number {
  a = a % TWO_PI;
  if (a > Math.PI) a -= TWO_PI;
  else if (a <= -Math.PI) a += TWO_PI;
  return a;
}

/**
 * Forward kinematics: writes 17 keypoints (x, y, z) into `out` from pose parameters, with the
 * pelvis at the pose's X, Y, Z (no support rule applied).
 * @param d body dimensions
 * @param p pose parameters (POSE_LEN)
 * @param out 51 values
 */
export function forwardKinematics(d: BodyDims, p: Float64Array, out: Float64Array): void {
  const ch = Math.cos(p[P.HEADING]!);
  const sh = Math.sin(p[P.HEADING]!);
  const ct = Math.cos(p[P.PITCH]!);
  const st = Math.sin(p[P.PITCH]!);
  const cr = Math.cos(p[P.ROLL]!);
  const sr = Math.sin(p[P.ROLL]!);
  // Heading frame f0 = (ch, sh, 0), l0 = (-sh, ch, 0), z. Pitch about l0, then roll about f.
  const u1x = st * ch;
  const u1y = st * sh;
  const u1z = ct;
  const fx = ct * ch;
  const fy = ct * sh;
  const fz = -st;
  const l1x = -sh;
  const l1y = ch;
  const ux = cr * u1x - sr * l1x;
  const uy = cr * u1y - sr * l1y;
  const uz = cr * u1z;
  const lx = cr * l1x + sr * u1x;
  const ly = cr * l1y + sr * u1y;
  const lz = sr * u1z;

  const px = p[P.X]!;
  const py = p[P.Y]!;
  const pz = p[P.Z]!;

  const set = (i: number, x: number, y: number, z: number): void => {
    out[3 * i] = x;
    out[3 * i + 1] = y;
    out[3 * i + 2] = z;
  };

  // A limb direction from flexion a (forward swing from -u) and abduction b (out to side s).
  const limb = (ox: number, oy: number, oz: number, a: number, b: number, side: number, len: number, i: number): void => {
    const ca = Math.cos(a);
    const sa = Math.sin(a);
    const cb = Math.cos(b);
    const sb = Math.sin(b) * side;
    const dx = -ux * ca * cb + fx * sa * cb + lx * sb;
    const dy = -uy * ca * cb + fy * sa * cb + ly * sb;
    const dz = -uz * ca * cb + fz * sa * cb + lz * sb;
    set(i, ox + len * dx, oy + len * dy, oz + len * dz);
  };

  // Hips and legs.
  const legAb = p[P.LEG_AB]!;
  for (let s = 0; s < 2; s++) {
    const side = s === 0 ? 1 : -1;
    const hip = s === 0 ? KP.L_HIP : KP.R_HIP;
    const knee = s === 0 ? KP.L_KNEE : KP.R_KNEE;
    const ankle = s === 0 ? KP.L_ANKLE : KP.R_ANKLE;
    const hipFlex = p[s === 0 ? P.HIP_L : P.HIP_R]!;
    const kneeFlex = p[s === 0 ? P.KNEE_L : P.KNEE_R]!;
    const hx = px + side * d.hipHalf * lx;
    const hy = py + side * d.hipHalf * ly;
    const hz = pz + side * d.hipHalf * lz;
    set(hip, hx, hy, hz);
    limb(hx, hy, hz, hipFlex, legAb, side, d.thigh, knee);
    limb(out[3 * knee]!, out[3 * knee + 1]!, out[3 * knee + 2]!, hipFlex - kneeFlex, legAb, side, d.shin, ankle);
  }

  // Shoulders and arms.
  const nx = px + d.torso * ux;
  const ny = py + d.torso * uy;
  const nz = pz + d.torso * uz;
  const armAb = p[P.ARM_AB]!;
  for (let s = 0; s < 2; s++) {
    const side = s === 0 ? 1 : -1;
    const shoulder = s === 0 ? KP.L_SHOULDER : KP.R_SHOULDER;
    const elbow = s === 0 ? KP.L_ELBOW : KP.R_ELBOW;
    const wrist = s === 0 ? KP.L_WRIST : KP.R_WRIST;
    const shFlex = p[s === 0 ? P.SH_L : P.SH_R]!;
    const elFlex = p[s === 0 ? P.EL_L : P.EL_R]!;
    const sx = nx + side * d.shoulderHalf * lx;
    const sy = ny + side * d.shoulderHalf * ly;
    const sz = nz + side * d.shoulderHalf * lz;
    set(shoulder, sx, sy, sz);
    limb(sx, sy, sz, shFlex, armAb, side, d.upperArm, elbow);
    limb(out[3 * elbow]!, out[3 * elbow + 1]!, out[3 * elbow + 2]!, shFlex + elFlex, armAb, side, d.forearm, wrist);
  }

  // Head: nodded forward by HEAD about l.
  const cn = Math.cos(p[P.HEAD]!);
  const sn = Math.sin(p[P.HEAD]!);
  const hux = cn * ux + sn * fx;
  const huy = cn * uy + sn * fy;
  const huz = cn * uz + sn * fz;
  const hfx = cn * fx - sn * ux;
  const hfy = cn * fy - sn * uy;
  const hfz = cn * fz - sn * uz;
  const cx = nx + d.neck * hux;
  const cy = ny + d.neck * huy;
  const cz = nz + d.neck * huz;
  set(KP.NOSE, cx + d.noseFwd * hfx - d.noseDown * hux, cy + d.noseFwd * hfy - d.noseDown * huy, cz + d.noseFwd * hfz - d.noseDown * huz);
  for (let s = 0; s < 2; s++) {
    const side = s === 0 ? 1 : -1;
    const ex = cx + d.eyeFwd * hfx + d.eyeUp * hux + side * d.eyeHalf * lx;
    const ey = cy + d.eyeFwd * hfy + d.eyeUp * huy + side * d.eyeHalf * ly;
    const ez = cz + d.eyeFwd * hfz + d.eyeUp * huz + side * d.eyeHalf * lz;
    set(s === 0 ? KP.L_EYE : KP.R_EYE, ex, ey, ez);
    set(s === 0 ? KP.L_EAR : KP.R_EAR, cx + side * d.earHalf * lx, cy + side * d.earHalf * ly, cz + side * d.earHalf * lz);
  }
}

/**
 * Forward kinematics plus the support rule: fills `out` and writes the resolved pelvis height back
 * into `p[P.Z]`, so that later interpolation starts from where the body really is.
 * @param d body dimensions
 * @param p pose parameters; P.Z is updated
 * @param support how the body is held up (see Support)
 * @param out 51 keypoint coordinates
 */
export function solvePose(d: BodyDims, p: Float64Array, support: Support, out: Float64Array): void {
  forwardKinematics(d, p, out);
  let shift: number;
  if (support === 'feet') {
    shift = d.ankleH - Math.min(out[3 * KP.L_ANKLE + 2]!, out[3 * KP.R_ANKLE + 2]!);
  } else {
    let minZ = Infinity;
    for (let i = 0; i < NUM_KEYPOINTS; i++) minZ = Math.min(minZ, out[3 * i + 2]!);
    shift = minZ < FLOOR_CLEARANCE ? FLOOR_CLEARANCE - minZ : 0;
  }
  if (shift !== 0) {
    for (let i = 0; i < NUM_KEYPOINTS; i++) out[3 * i + 2] += shift;
    p[P.Z] += shift;
  }
}

/**
 * Step frequency at a walking speed: ~1.85 steps/s at 1.3 m/s, slower for tall people (cadence
 * scales with 1/sqrt(leg length), as for a pendulum).
 * @param d body dimensions
 * @param speed m/s
 * @returns steps per second
 */
export function stepFrequency(d: BodyDims, speed: number): number {
  return (1.0 + 0.65 * speed) / Math.sqrt(d.scale);
}

/**
 * The walking pose at a gait phase (strides, fractional part used) and speed. At speed 0 this is
 * the standing pose exactly, so starting and stopping (speed ramps) are continuous.
 * @param d body dimensions
 * @param out pose parameters to fill; P.Z is a first guess, resolve with support 'feet'
 * @param x pelvis x
 * @param y pelvis y
 * @param heading facing direction, radians from +x
 * @param speed walking speed, m/s
 * @param phase gait phase in strides (0..1 is one full cycle, left heel strike at 0)
 */
export function gaitPose(d: BodyDims, out: Float64Array, x: number, y: number, heading: number, speed: number, phase: number): void {
  const v = Math.max(0, speed);
  const stepLen = v / stepFrequency(d, v);
  const legLen = d.thigh + d.shin;
  const k = Math.min(1.2, v / 1.3);
  const hipAmp = Math.asin(Math.min(0.6, stepLen / (2 * legLen)));
  const kneeAmp = 1.0 * k;
  const armAmp = 0.35 * k;
  const lean = 0.05 * k;
  const w = TWO_PI * phase;
  const cL = Math.cos(w);
  const sL = Math.sin(w);
  out[P.X] = x;
  out[P.Y] = y;
  out[P.Z] = d.ankleH + legLen;
  out[P.HEADING] = heading;
  out[P.PITCH] = lean;
  out[P.ROLL] = 0;
  // Leg angles are relative to the trunk, so the lean is added to keep the thighs' swing centred
  // on the vertical. The right leg runs half a cycle behind the left.
  out[P.HIP_L] = lean + hipAmp * cL;
  out[P.HIP_R] = lean - hipAmp * cL;
  // The knee flexes in the swing phase (hip moving forward: sin < 0 for the left leg).
  out[P.KNEE_L] = 0.05 * k + kneeAmp * Math.max(0, -sL);
  out[P.KNEE_R] = 0.05 * k + kneeAmp * Math.max(0, sL);
  out[P.LEG_AB] = 0.03;
  // Each arm swings with the opposite leg.
  out[P.SH_L] = lean - armAmp * cL;
  out[P.SH_R] = lean + armAmp * cL;
  out[P.EL_L] = 0.15 + 0.2 * k + 0.3 * Math.max(0, -armAmp * cL);
  out[P.EL_R] = 0.15 + 0.2 * k + 0.3 * Math.max(0, armAmp * cL);
  out[P.ARM_AB] = 0.1;
  out[P.HEAD] = -lean;
}

/**
 * Sitting on a seat (an invisible chair, bench or bed edge) of the given height: thighs level, or
 * sloping down when the seat is higher than the lower leg, shins reaching down so the feet rest on
 * the floor, hands on the thighs.
 * @param d body dimensions
 * @param out pose parameters to fill (support 'free': the seat holds the pelvis)
 * @param x pelvis x
 * @param y pelvis y
 * @param heading facing direction
 * @param seat seat height, metres
 */
export function sittingPose(d: BodyDims, out: Float64Array, x: number, y: number, heading: number, seat: number): void {
  const z = seat + d.seatToHip;
  const drop = z - d.ankleH;
  let hip = HALF_PI;
  let shinAngle: number;
  if (drop > d.shin) {
    // Seat higher than the lower leg: the thighs slope down so the feet still touch the floor.
    hip = Math.acos(Math.min(1, (drop - d.shin) / d.thigh));
    shinAngle = 0;
  } else {
    shinAngle = Math.acos(Math.max(0, drop / d.shin));
  }
  out[P.X] = x;
  out[P.Y] = y;
  out[P.Z] = z;
  out[P.HEADING] = heading;
  out[P.PITCH] = 0;
  out[P.ROLL] = 0;
  out[P.HIP_L] = hip;
  out[P.HIP_R] = hip;
  out[P.KNEE_L] = hip - shinAngle;
  out[P.KNEE_R] = hip - shinAngle;
  out[P.LEG_AB] = 0.12;
  out[P.SH_L] = 0.35;
  out[P.SH_R] = 0.35;
  out[P.EL_L] = 0.9;
  out[P.EL_R] = 0.9;
  out[P.ARM_AB] = 0.12;
  out[P.HEAD] = 0;
}

/**
 * Kneeling upright: thighs vertical, shins flat on the floor behind. The waypoint between lying on
 * the floor and standing, in both directions.
 * @param d body dimensions
 * @param out pose parameters to fill
 * @param x pelvis x
 * @param y pelvis y
 * @param heading facing direction
 */
export function kneelingPose(d: BodyDims, out: Float64Array, x: number, y: number, heading: number): void {
  const lean = 0.2;
  out[P.X] = x;
  out[P.Y] = y;
  out[P.Z] = d.ankleH + d.thigh;
  out[P.HEADING] = heading;
  out[P.PITCH] = lean;
  out[P.ROLL] = 0;
  out[P.HIP_L] = lean;
  out[P.HIP_R] = lean;
  out[P.KNEE_L] = HALF_PI;
  out[P.KNEE_R] = HALF_PI;
  out[P.LEG_AB] = 0.1;
  out[P.SH_L] = 0.5;
  out[P.SH_R] = 0.5;
  out[P.EL_L] = 0.6;
  out[P.EL_R] = 0.6;
  out[P.ARM_AB] = 0.15;
  out[P.HEAD] = 0;
}

/**
 * Lying on a surface (floor 0, a bed ~0.5 m) in one of four postures. The head lies on the floor
 * direction `lyingHeadDirection(heading, posture)` from the pelvis.
 * @param d body dimensions
 * @param out pose parameters to fill (support 'free')
 * @param x pelvis x
 * @param y pelvis y
 * @param heading the heading frame the posture is taken in (see lyingHeadDirection)
 * @param surface height of what the body lies on, metres
 * @param posture on the back, front or a side
 */
export function lyingPose(d: BodyDims, out: Float64Array, x: number, y: number, heading: number, surface: number, posture: Posture): void {
  out[P.X] = x;
  out[P.Y] = y;
  out[P.HEADING] = heading;
  out[P.HIP_L] = 0;
  out[P.HIP_R] = 0;
  out[P.KNEE_L] = 0.05;
  out[P.KNEE_R] = 0.05;
  out[P.HEAD] = 0;
  out[P.PITCH] = 0;
  out[P.ROLL] = 0;
  switch (posture) {
    case 'supine':
      out[P.PITCH] = -HALF_PI;
      out[P.Z] = surface + d.lieZ;
      out[P.LEG_AB] = 0.08;
      out[P.SH_L] = 0.1;
      out[P.SH_R] = 0.1;
      out[P.EL_L] = 0.1;
      out[P.EL_R] = 0.1;
      out[P.ARM_AB] = 0.25;
      break;
    case 'prone':
      // Arms stretched past the head, as after breaking a forward fall.
      out[P.PITCH] = HALF_PI;
      out[P.Z] = surface + d.lieZ;
      out[P.LEG_AB] = 0.1;
      out[P.SH_L] = 3.0;
      out[P.SH_R] = 3.0;
      out[P.EL_L] = 0;
      out[P.EL_R] = 0;
      out[P.ARM_AB] = 0.3;
      break;
    case 'left':
    case 'right':
      // Abduction would push the lower limbs into the floor; the side lying pose keeps limbs in the
      // sagittal plane with the arms and the upper leg a little forward.
      out[P.ROLL] = posture === 'left' ? -HALF_PI : HALF_PI;
      out[P.Z] = surface + d.lieSideZ;
      out[P.LEG_AB] = 0;
      out[P.HIP_L] = 0.35;
      out[P.HIP_R] = 0.35;
      out[P.KNEE_L] = 0.5;
      out[P.KNEE_R] = 0.5;
      out[P.SH_L] = 0.6;
      out[P.SH_R] = 0.6;
      out[P.EL_L] = 0.5;
      out[P.EL_R] = 0.5;
      out[P.ARM_AB] = 0;
      break;
  }
}

/**
 * Floor direction from the pelvis to the head for a lying posture taken in a heading frame: supine
 * lies back (head behind), prone forward, left/right to that side.
 * @param heading the heading frame, radians
 * @param posture the lying posture
 * @returns direction in radians from +x
 */
export function lyingHeadDirection(heading: number, posture: Posture): number {
  switch (posture) {
    case 'supine':
      return wrapAngle(heading + Math.PI);
    case 'prone':
      return heading;
    case 'left':
      return wrapAngle(heading + HALF_PI);
    case 'right':
      return wrapAngle(heading - HALF_PI);
  }
}

/**
 * The lying posture a fall in a direction ends in.
 * @param direction fall direction relative to the heading
 * @returns prone for forward, supine for backward, the side for a sideways fall
 */
export function fallPosture(direction: FallDirection): Posture {
  switch (direction) {
    case 'forward':
      return 'prone';
    case 'backward':
      return 'supine';
    case 'left':
      return 'left';
    case 'right':
      return 'right';
  }
}

/**
 * Floor distance from the pelvis to the head centre when lying.
 * @param d body dimensions
 * @returns metres
 */
export function lyingReach(d: BodyDims): number {
  return d.torso + d.neck;
}

/**
 * Floor distance the pelvis travels in a fall. A rigid body toppling over its feet would carry the
 * pelvis a full leg length; buckling knees shorten that, so 0.7 leg lengths: the feet end up a
 * little behind where they stood.
 * @param d body dimensions
 * @returns metres
 */
export function fallTravel(d: BodyDims): number {
  return 0.7 * (d.thigh + d.shin);
}

/**
 * Easing of one transition segment: `smooth` is smoothstep; `fall` starts at rest and accelerates
 * like a toppling body, e = s^2 (1.5 - 0.5 s), reaching the floor at 1.5x the mean angular rate
 * (head impact ~4-6 m/s for a 0.6-1.0 s fall, as measured in real falls) rather than the 2x of a
 * pure s^2, which would put it near 10 m/s.
 */
export type Ease = 'smooth' | 'fall';

interface Segment {
  from: Float64Array;
  to: Float64Array;
  /** Added to the interpolated pose with weight sin(pi s): the knee buckle of a fall, a sit-down lean. */
  bump: Float64Array | null;
  duration: number;
  ease: Ease;
  support: Support;
}

// Radar cross-sections (m^2) per body region, frontal aspect, 2-6 GHz, for a 1.75 m adult. Whole
// body measurements at these frequencies are 0.1-1 m^2 and vary strongly with aspect; the torso
// (the largest, flattest surface, skin with high water content) gives most of it, the head is a
// sphere of ~0.1 m radius (geometric-optics RCS pi r^2 ~ 0.03-0.06 m^2), and the limbs are
// cylinders whose broadside return grows with length x radius: a thigh (0.43 m x 0.08 m) returns
// more than a shin (0.43 m x 0.05 m), an upper arm (0.33 m x 0.045 m) more than a forearm with the
// hand (0.35 m x 0.035 m). Total here: 0.77 m^2.
const RCS_TORSO = 0.5;
const RCS_HEAD = 0.06;
const RCS_THIGH = 0.05;
const RCS_SHIN = 0.025;
const RCS_UPPER_ARM = 0.02;
const RCS_FOREARM = 0.012;

/**
 * Scatterer weight of a region: the bistatic radar equation gives a received amplitude of
 * (lambda / 4 pi) * sqrt(sigma / 4 pi) / (d1 d2), so the weight multiplying (lambda / 4 pi) / (d1 d2)
 * is sqrt(sigma / 4 pi) metres. A region modelled by n points gets sqrt(1/n) of it per point, so that
 * the points' powers (they add incoherently on average) sum to the region's cross-section.
 */
function regionWeight(rcs: number, points: number, scale: number): number {
  return (Math.sqrt(rcs / (4 * Math.PI)) * scale) / Math.sqrt(points);
}

/** Relative weights per region for a 1.75 m person (exported for documentation and tests). */
export const SCATTER_WEIGHTS = {
  torso: regionWeight(RCS_TORSO, 1, 1),
  head: regionWeight(RCS_HEAD, 1, 1),
  thigh: regionWeight(RCS_THIGH, 1, 1),
  shin: regionWeight(RCS_SHIN, 1, 1),
  upperArm: regionWeight(RCS_UPPER_ARM, 1, 1),
  forearm: regionWeight(RCS_FOREARM, 1, 1),
} as const;

const TORSO_POINTS = 6;
/** Scatterers per body: 6 torso, 1 head, 2 per upper arm, forearm, thigh and shin. */
export const SCATTERERS_PER_BODY = TORSO_POINTS + 1 + 2 * 4 * 2;

/** Chest wall displacement of quiet breathing, metres (peak). */
const BREATH_AMPLITUDE = 0.004;

/**
 * One person's body: dimensions, current pose, keypoints, and the motion in progress (a walking
 * gait driven from outside, or a queue of timed transition segments).
 *
 * @example
 * const b = new Body(1.75, 0.25, 0);
 * b.setStanding(3, 2, Math.PI / 2);
 * const dur = b.startFall('forward', 0.8);
 * while (!b.advance(0.01)) {} // lying prone on the floor now
 */
export class Body {
  readonly dims: BodyDims;
  /** Current pose parameters. */
  readonly pose = new Float64Array(POSE_LEN);
  /** Current keypoints (17 x 3, metres). */
  readonly keypoints = new Float32Array(NUM_KEYPOINTS * 3);
  private readonly kp64 = new Float64Array(NUM_KEYPOINTS * 3);
  private readonly segs: Segment[] = [];
  private segTime = 0;
  private gaitPhase = 0;
  private readonly breathHz: number;
  private readonly breathPhase: number;
  private support: Support = 'feet';

  /**
   * @param height standing height, metres (MIN_HEIGHT..MAX_HEIGHT)
   * @param breathHz breathing rate, Hz (quiet breathing is 0.2-0.3 Hz)
   * @param breathPhase breathing phase at t = 0, radians
   */
  constructor(height: number, breathHz = 0.25, breathPhase = 0) {
    this.dims = bodyDims(height);
    this.breathHz = breathHz;
    this.breathPhase = breathPhase;
    this.setStanding(0, 0, 0);
  }

  /** True while a transition (sit down, stand up, lie down, get up, fall) is running. */
  get inTransition(): boolean {
    return this.segs.length > 0;
  }

  /** Pelvis (mid-hip) position projected on the floor: x. */
  get floorX(): number {
    return this.pose[P.X]!;
  }

  /** Pelvis (mid-hip) position projected on the floor: y. */
  get floorY(): number {
    return this.pose[P.Y]!;
  }

  /** Current heading, radians. */
  get heading(): number {
    return this.pose[P.HEADING]!;
  }

  /** Stands still at a place (cancels any transition). */
  setStanding(x: number, y: number, heading: number): void {
    this.segs.length = 0;
    gaitPose(this.dims, this.pose, x, y, heading, 0, 0);
    this.gaitPhase = 0;
    this.resolve('feet');
  }

  /** Sits at a place on a seat of the given height (cancels any transition). */
  setSitting(x: number, y: number, heading: number, seat: number): void {
    this.segs.length = 0;
    sittingPose(this.dims, this.pose, x, y, heading, seat);
    this.resolve('free');
  }

  /** Lies at a place (cancels any transition). */
  setLying(x: number, y: number, heading: number, surface: number, posture: Posture): void {
    this.segs.length = 0;
    lyingPose(this.dims, this.pose, x, y, heading, surface, posture);
    this.resolve('free');
  }

  /**
   * One walking step: places the pelvis, advances the gait phase by the distance covered and sets
   * the gait pose for the current speed (speed 0 gives the standing pose).
   * @param x pelvis x after the step
   * @param y pelvis y after the step
   * @param heading facing direction
   * @param speed current speed, m/s
   * @param dt step duration, s
   */
  walk(x: number, y: number, heading: number, speed: number, dt: number): void {
    this.segs.length = 0;
    this.gaitPhase += 0.5 * stepFrequency(this.dims, speed) * dt * (speed > 0 ? 1 : 0);
    this.gaitPhase -= Math.floor(this.gaitPhase);
    gaitPose(this.dims, this.pose, x, y, heading, speed, this.gaitPhase);
    this.resolve('feet');
  }

  /**
   * Sit down on an invisible seat where the person stands.
   * @param seat seat height, metres
   * @param duration seconds
   * @returns the duration
   */
  startSitDown(seat: number, duration = 1.4): number {
    const to = new Float64Array(POSE_LEN);
    sittingPose(this.dims, to, this.floorX, this.floorY, this.heading, seat);
    const bump = new Float64Array(POSE_LEN);
    // Lean forward while lowering; the hips flex by the same angle so the thighs do not swing.
    bump[P.PITCH] = 0.45;
    bump[P.HIP_L] = 0.45;
    bump[P.HIP_R] = 0.45;
    this.begin([{ to, bump, duration, ease: 'smooth', support: 'feet' }]);
    return duration;
  }

  /**
   * Stand up from sitting, kneeling or lying: lying on the floor goes through kneeling, lying on a
   * raised surface through sitting on its edge.
   * @returns the total duration, seconds
   */
  startStandUp(): number {
    const d = this.dims;
    const x = this.floorX;
    const y = this.floorY;
    const stand = new Float64Array(POSE_LEN);
    const pitch = this.pose[P.PITCH]!;
    const roll = this.pose[P.ROLL]!;
    const lying = Math.abs(pitch) > 1 || Math.abs(roll) > 1;
    // Keep the heading frame: from the back the person sits up facing it, from the front pushes up
    // towards it, from a side rolls back into it.
    const heading = this.heading;
    gaitPose(d, stand, x, y, heading, 0, 0);
    const lean = new Float64Array(POSE_LEN);
    lean[P.PITCH] = 0.45;
    lean[P.HIP_L] = 0.45;
    lean[P.HIP_R] = 0.45;
    if (!lying) {
      this.begin([{ to: stand, bump: lean, duration: 1.4, ease: 'smooth', support: 'feet' }]);
      return 1.4;
    }
    const surface = Math.max(0, this.pose[P.Z]! - (Math.abs(roll) > 1 ? d.lieSideZ : d.lieZ));
    if (surface > 0.25 && Math.abs(pitch) > 1 && Math.abs(roll) <= 1) {
      const sit = new Float64Array(POSE_LEN);
      sittingPose(d, sit, x, y, heading, surface);
      this.begin([
        { to: sit, bump: null, duration: 1.5, ease: 'smooth', support: 'free' },
        { to: stand, bump: lean, duration: 1.4, ease: 'smooth', support: 'feet' },
      ]);
      return 2.9;
    }
    const kneel = new Float64Array(POSE_LEN);
    kneelingPose(d, kneel, x, y, heading);
    this.begin([
      { to: kneel, bump: null, duration: 1.8, ease: 'smooth', support: 'free' },
      { to: stand, bump: null, duration: 1.4, ease: 'smooth', support: 'feet' },
    ]);
    return 3.2;
  }

  /**
   * Lie down on the back where the person stands or sits: onto a raised surface (a bed) by sitting
   * on its edge and lying back, onto the floor by kneeling first. The head ends up behind the pelvis
   * (lyingHeadDirection(heading, 'supine')).
   * @param surface height of the bed, or 0 for the floor
   * @returns the total duration, seconds
   */
  startLieDown(surface: number): number {
    const d = this.dims;
    const x = this.floorX;
    const y = this.floorY;
    const h = this.heading;
    const lie = new Float64Array(POSE_LEN);
    lyingPose(d, lie, x, y, h, surface, 'supine');
    const sitting = this.pose[P.HIP_L]! > 1.2 && Math.abs(this.pose[P.PITCH]!) < 0.3;
    if (surface > 0.25) {
      const sit = new Float64Array(POSE_LEN);
      sittingPose(d, sit, x, y, h, surface);
      const segs: Array<Omit<Segment, 'from'>> = [];
      if (!sitting || Math.abs(this.pose[P.Z]! - sit[P.Z]!) > 0.02) {
        segs.push({ to: sit, bump: null, duration: 1.4, ease: 'smooth', support: sitting ? 'free' : 'feet' });
      }
      segs.push({ to: lie, bump: null, duration: 1.6, ease: 'smooth', support: 'free' });
      this.begin(segs);
      return segs.reduce((a, s) => a + s.duration, 0);
    }
    const kneel = new Float64Array(POSE_LEN);
    kneelingPose(d, kneel, x, y, h);
    this.begin([
      { to: kneel, bump: null, duration: 1.4, ease: 'smooth', support: sitting ? 'free' : 'feet' },
      { to: lie, bump: null, duration: 1.8, ease: 'smooth', support: 'free' },
    ]);
    return 3.2;
  }

  /**
   * Bend forward from standing, as to pick something up, hold, and straighten: the trunk pitches
   * forward by `pitch` with the hips flexing by as much and a little more (the thighs lean slightly
   * forward, the knees give 0.4 rad), the arms hang straight down towards the floor, the head lifts
   * a little to look ahead; then the standing pose again. Down and up take min(0.9, duration / 3) s
   * each, the hold the rest. The feet stay on the floor throughout.
   * @param pitch forward pitch of the trunk, radians (60-80 degrees picks something off the floor)
   * @param duration seconds, the whole movement
   * @returns the duration
   */
  startBend(pitch: number, duration: number): number {
    const d = this.dims;
    const stand = new Float64Array(POSE_LEN);
    gaitPose(d, stand, this.floorX, this.floorY, this.heading, 0, 0);
    const bent = Float64Array.from(stand);
    bent[P.PITCH] = pitch;
    bent[P.HIP_L] = pitch + 0.2;
    bent[P.HIP_R] = pitch + 0.2;
    bent[P.KNEE_L] = 0.4;
    bent[P.KNEE_R] = 0.4;
    bent[P.SH_L] = pitch;
    bent[P.SH_R] = pitch;
    bent[P.EL_L] = 0.1;
    bent[P.EL_R] = 0.1;
    bent[P.HEAD] = -0.3;
    const move = Math.min(0.9, duration / 3);
    this.begin([
      { to: bent, bump: null, duration: move, ease: 'smooth', support: 'feet' },
      { to: bent, bump: null, duration: duration - 2 * move, ease: 'smooth', support: 'feet' },
      { to: stand, bump: null, duration: move, ease: 'smooth', support: 'feet' },
    ]);
    return duration;
  }

  /**
   * Fall to the floor from whatever the body is doing: the trunk rotates with gravity-like
   * acceleration (see Ease), the knees and hips buckle mid-way, the pelvis travels
   * fallTravel() in the fall direction, and the body ends lying in fallPosture(direction).
   * @param direction relative to the current heading
   * @param duration seconds (0.6-1.2 for real falls)
   * @returns the duration
   */
  startFall(direction: FallDirection, duration: number): number {
    const d = this.dims;
    const h = this.heading;
    const dir = direction === 'forward' ? h : direction === 'backward' ? h + Math.PI : direction === 'left' ? h + HALF_PI : h - HALF_PI;
    const travel = fallTravel(d);
    const to = new Float64Array(POSE_LEN);
    lyingPose(d, to, this.floorX + travel * Math.cos(dir), this.floorY + travel * Math.sin(dir), h, 0, fallPosture(direction));
    const bump = new Float64Array(POSE_LEN);
    bump[P.KNEE_L] = 0.9;
    bump[P.KNEE_R] = 0.9;
    bump[P.HIP_L] = direction === 'backward' ? 0.5 : 0.7;
    bump[P.HIP_R] = bump[P.HIP_L]!;
    bump[P.ARM_AB] = direction === 'left' || direction === 'right' ? 0 : 0.5;
    bump[P.HEAD] = direction === 'backward' ? 0.25 : -0.2;
    this.begin([{ to, bump, duration, ease: 'fall', support: 'free' }]);
    return duration;
  }

  /**
   * Advances a running transition by dt.
   * @returns true on the call that completes the last segment
   */
  advance(dt: number): boolean {
    if (this.segs.length === 0) return false;
    this.segTime += dt;
    for (;;) {
      const seg = this.segs[0]!;
      // The tolerance absorbs the rounding of summed ticks (0.01 * 80 < 0.8), so a segment of a
      // whole number of ticks ends on its last tick.
      if (this.segTime < seg.duration - 1e-9) {
        this.interpolate(seg, this.segTime / seg.duration);
        return false;
      }
      this.interpolate(seg, 1);
      this.segTime -= seg.duration;
      this.segs.shift();
      if (this.segs.length === 0) {
        this.segTime = 0;
        return true;
      }
      this.segs[0]!.from = Float64Array.from(this.pose);
    }
  }

  /**
   * Writes this body's scatterers as (x, y, z, weight) quadruples: 6 on the torso, 1 at the head
   * centre, 2 on each upper arm, forearm(+hand), thigh and shin. The torso points move with
   * breathing along the body's forward direction.
   * @param out destination
   * @param offset first index to write (SCATTERERS_PER_BODY * 4 values follow)
   * @param t simulation time, seconds (drives breathing)
   */
  fillScatterers(out: Float64Array, offset: number, t: number): void {
    const k = this.keypoints;
    const s = this.dims.scale;
    let o = offset;
    const put = (x: number, y: number, z: number, w: number): void => {
      out[o++] = x;
      out[o++] = y;
      out[o++] = z;
      out[o++] = w;
    };
    const lerpPut = (a: number, b: number, f: number, w: number): void => {
      put(k[3 * a]! + f * (k[3 * b]! - k[3 * a]!), k[3 * a + 1]! + f * (k[3 * b + 1]! - k[3 * a + 1]!), k[3 * a + 2]! + f * (k[3 * b + 2]! - k[3 * a + 2]!), w);
    };
    // Body forward = left x up, from the keypoints.
    const lx = k[3 * KP.L_SHOULDER]! - k[3 * KP.R_SHOULDER]!;
    const ly = k[3 * KP.L_SHOULDER + 1]! - k[3 * KP.R_SHOULDER + 1]!;
    const lz = k[3 * KP.L_SHOULDER + 2]! - k[3 * KP.R_SHOULDER + 2]!;
    const ux = k[3 * KP.L_SHOULDER]! + k[3 * KP.R_SHOULDER]! - k[3 * KP.L_HIP]! - k[3 * KP.R_HIP]!;
    const uy = k[3 * KP.L_SHOULDER + 1]! + k[3 * KP.R_SHOULDER + 1]! - k[3 * KP.L_HIP + 1]! - k[3 * KP.R_HIP + 1]!;
    const uz = k[3 * KP.L_SHOULDER + 2]! + k[3 * KP.R_SHOULDER + 2]! - k[3 * KP.L_HIP + 2]! - k[3 * KP.R_HIP + 2]!;
    let fx = ly * uz - lz * uy;
    let fy = lz * ux - lx * uz;
    let fz = lx * uy - ly * ux;
    const fn = Math.hypot(fx, fy, fz) || 1;
    const breath = BREATH_AMPLITUDE * s * Math.sin(TWO_PI * this.breathHz * t + this.breathPhase);
    fx = (fx / fn) * breath;
    fy = (fy / fn) * breath;
    fz = (fz / fn) * breath;
    const wT = regionWeight(RCS_TORSO, TORSO_POINTS, s);
    for (let i = 0; i < 3; i++) {
      const a = 0.15 + 0.35 * i; // along the trunk: chest, waist, pelvis
      // Chest moves most with breathing, the pelvis hardly.
      const bw = 1 - 0.45 * i;
      for (let j = 0; j < 2; j++) {
        const b = j === 0 ? 0.25 : 0.75; // across: left, right of the midline
        const sx = k[3 * KP.L_SHOULDER]! + b * (k[3 * KP.R_SHOULDER]! - k[3 * KP.L_SHOULDER]!);
        const sy = k[3 * KP.L_SHOULDER + 1]! + b * (k[3 * KP.R_SHOULDER + 1]! - k[3 * KP.L_SHOULDER + 1]!);
        const sz = k[3 * KP.L_SHOULDER + 2]! + b * (k[3 * KP.R_SHOULDER + 2]! - k[3 * KP.L_SHOULDER + 2]!);
        const hx = k[3 * KP.L_HIP]! + b * (k[3 * KP.R_HIP]! - k[3 * KP.L_HIP]!);
        const hy = k[3 * KP.L_HIP + 1]! + b * (k[3 * KP.R_HIP + 1]! - k[3 * KP.L_HIP + 1]!);
        const hz = k[3 * KP.L_HIP + 2]! + b * (k[3 * KP.R_HIP + 2]! - k[3 * KP.L_HIP + 2]!);
        put(sx + a * (hx - sx) + bw * fx, sy + a * (hy - sy) + bw * fy, sz + a * (hz - sz) + bw * fz, wT);
      }
    }
    put(
      0.5 * (k[3 * KP.L_EAR]! + k[3 * KP.R_EAR]!),
      0.5 * (k[3 * KP.L_EAR + 1]! + k[3 * KP.R_EAR + 1]!),
      0.5 * (k[3 * KP.L_EAR + 2]! + k[3 * KP.R_EAR + 2]!),
      regionWeight(RCS_HEAD, 1, s),
    );
    const wUA = regionWeight(RCS_UPPER_ARM, 2, s);
    const wFA = regionWeight(RCS_FOREARM, 2, s);
    const wTh = regionWeight(RCS_THIGH, 2, s);
    const wSh = regionWeight(RCS_SHIN, 2, s);
    // The hand centre lies past the wrist along the forearm: f = 1 + hand / forearm.
    const handF = 1 + this.dims.hand / this.dims.forearm;
    for (const [sh, el, wr, hip, kn, an] of SIDES) {
      lerpPut(sh, el, 0.25, wUA);
      lerpPut(sh, el, 0.75, wUA);
      lerpPut(el, wr, 0.5, wFA);
      lerpPut(el, wr, handF, wFA);
      lerpPut(hip, kn, 0.25, wTh);
      lerpPut(hip, kn, 0.75, wTh);
      lerpPut(kn, an, 0.25, wSh);
      lerpPut(kn, an, 0.75, wSh);
    }
  }

  private begin(segs: Array<Omit<Segment, 'from'>>): void {
    this.segs.length = 0;
    this.segTime = 0;
    for (const s of segs) this.segs.push({ ...s, from: new Float64Array(0) });
    if (this.segs.length > 0) this.segs[0]!.from = Float64Array.from(this.pose);
  }

  private interpolate(seg: Segment, s: number): void {
    const e = seg.ease === 'fall' ? s * s * (1.5 - 0.5 * s) : s * s * (3 - 2 * s);
    const bumpW = Math.sin(Math.PI * s);
    const p = this.pose;
    for (let i = 0; i < POSE_LEN; i++) {
      const a = seg.from[i]!;
      const b = seg.to[i]!;
      p[i] = i === P.HEADING ? wrapAngle(a + wrapAngle(b - a) * e) : a + (b - a) * e;
      if (seg.bump !== null) p[i] += seg.bump[i]! * bumpW;
    }
    this.resolve(seg.support);
  }

  private resolve(support: Support): void {
    this.support = support;
    solvePose(this.dims, this.pose, support, this.kp64);
    this.keypoints.set(this.kp64);
  }

  /** How the body is currently held up (for tests and diagnostics). */
  get currentSupport(): Support {
    return this.support;
  }
}

const SIDES: ReadonlyArray<readonly [number, number, number, number, number, number]> = [
  [KP.L_SHOULDER, KP.L_ELBOW, KP.L_WRIST, KP.L_HIP, KP.L_KNEE, KP.L_ANKLE],
  [KP.R_SHOULDER, KP.R_ELBOW, KP.R_WRIST, KP.R_HIP, KP.R_KNEE, KP.R_ANKLE],
];
