/**
 * A parametric 2-D stick figure in COCO-17 keypoints (pixels, y downwards) for posture and
 * activity tests, with an affine "view" to check that classification survives scaling and shear.
 *
 * Proportions are fractions of the standing height H (Drillis & Contini): torso (hip mid to
 * shoulder mid) 0.29, shoulder width 0.23, hip width 0.16, thigh 0.245, shin 0.246, upper arm
 * 0.186, forearm 0.146, nose 0.12 above the shoulders.
 */
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';

export interface Figure {
  /** Hip midpoint, pixels. */
  x: number;
  y: number;
  /** Pixels per standing height. */
  scale: number;
  /** Torso angle from the upward vertical, degrees; positive leans towards +x. */
  torso?: number;
  /** Thigh direction from the downward vertical, degrees (positive towards +x), left and right. */
  thigh?: [number, number];
  /** Knee flexion, degrees: the shin turns back from the thigh direction by this much. */
  knee?: [number, number];
  /** Image length factor of the torso and head (foreshortening), default 1. */
  torsoScale?: number;
  /** Image length factor of the thighs, default 1. */
  thighScale?: number;
  /** Image length factor of the shins, default 1. */
  shinScale?: number;
  /** Shoulder and hip width factor: 1 seen from the front, ~0.3 from the side. */
  width?: number;
  /** Keypoint confidence, default 1; per-index overrides. */
  confidence?: number;
  hide?: number[];
}

const D = Math.PI / 180;

/**
 * Keypoints of a figure.
 * @returns 17 x (x, y, confidence)
 */
export function figureKeypoints(f: Figure): Float32Array {
  const s = f.scale;
  const th = (f.torso ?? 0) * D;
  const ts = f.torsoScale ?? 1;
  const w = f.width ?? 1;
  const u = [Math.sin(th), -Math.cos(th)]; // up the torso
  const n = [Math.cos(th), Math.sin(th)]; // across it
  const kp = new Float32Array(51);
  const c = f.confidence ?? 1;
  const set = (i: number, x: number, y: number) => {
    kp[3 * i] = x;
    kp[3 * i + 1] = y;
    kp[3 * i + 2] = f.hide?.includes(i) ? 0 : c;
  };
  const sx = f.x + u[0] * 0.29 * s * ts;
  const sy = f.y + u[1] * 0.29 * s * ts;
  const nose = [sx + u[0] * 0.12 * s * ts, sy + u[1] * 0.12 * s * ts];
  set(0, nose[0], nose[1]);
  set(1, nose[0] + u[0] * 0.02 * s * ts + n[0] * 0.02 * s * w, nose[1] + u[1] * 0.02 * s * ts + n[1] * 0.02 * s * w);
  set(2, nose[0] + u[0] * 0.02 * s * ts - n[0] * 0.02 * s * w, nose[1] + u[1] * 0.02 * s * ts - n[1] * 0.02 * s * w);
  set(3, nose[0] + u[0] * 0.01 * s * ts + n[0] * 0.045 * s * w, nose[1] + u[1] * 0.01 * s * ts + n[1] * 0.045 * s * w);
  set(4, nose[0] + u[0] * 0.01 * s * ts - n[0] * 0.045 * s * w, nose[1] + u[1] * 0.01 * s * ts - n[1] * 0.045 * s * w);
  for (let side = 0; side < 2; side++) {
    const sign = side === 0 ? 1 : -1;
    const shx = sx + sign * n[0] * 0.115 * s * w;
    const shy = sy + sign * n[1] * 0.115 * s * w;
    set(5 + side, shx, shy);
    // Arms hang along the torso.
    set(7 + side, shx - u[0] * 0.186 * s * ts, shy - u[1] * 0.186 * s * ts);
    set(9 + side, shx - u[0] * 0.332 * s * ts, shy - u[1] * 0.332 * s * ts);
    const hx = f.x + sign * n[0] * 0.08 * s * w;
    const hy = f.y + sign * n[1] * 0.08 * s * w;
    set(11 + side, hx, hy);
    const a = (f.thigh?.[side] ?? 0) * D;
    const kx = hx + Math.sin(a) * 0.245 * s * (f.thighScale ?? 1);
    const ky = hy + Math.cos(a) * 0.245 * s * (f.thighScale ?? 1);
    set(13 + side, kx, ky);
    const b = a - (f.knee?.[side] ?? 0) * D;
    set(15 + side, kx + Math.sin(b) * 0.246 * s * (f.shinScale ?? 1), ky + Math.cos(b) * 0.246 * s * (f.shinScale ?? 1));
  }
  return kp;
}

/**
 * Applies an affine map about a centre to visible keypoints: p' = c + A (p - c).
 * @param m [a, b, c, d] for A = [[a, b], [c, d]]
 */
export function transform(kp: Float32Array, m: [number, number, number, number], cx: number, cy: number): Float32Array {
  const out = Float32Array.from(kp);
  for (let i = 0; i < 17; i++) {
    const x = kp[3 * i] - cx;
    const y = kp[3 * i + 1] - cy;
    out[3 * i] = cx + m[0] * x + m[1] * y;
    out[3 * i + 1] = cy + m[2] * x + m[3] * y;
  }
  return out;
}

/** The box around the visible keypoints, grown by 10 % of its size on every side (as COCO boxes enclose the body). */
export function boxOf(kp: Float32Array): Float32Array {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let i = 0; i < 17; i++) {
    if (!(kp[3 * i + 2] > 0)) continue;
    x0 = Math.min(x0, kp[3 * i]);
    x1 = Math.max(x1, kp[3 * i]);
    y0 = Math.min(y0, kp[3 * i + 1]);
    y1 = Math.max(y1, kp[3 * i + 1]);
  }
  const px = 0.1 * (x1 - x0);
  const py = 0.1 * (y1 - y0);
  return Float32Array.of(x0 - px, y0 - py, x1 - x0 + 2 * px, y1 - y0 + 2 * py);
}

/** Standing, facing the view. */
export const STANDING: Omit<Figure, 'x' | 'y' | 'scale'> = {};
/** Seated, seen from the side: thighs horizontal, shins down, shoulders narrow. */
export const SITTING_SIDE: Omit<Figure, 'x' | 'y' | 'scale'> = { thigh: [90, 90], knee: [90, 90], width: 0.3 };
/** Seated, facing the view: thighs point at the camera (foreshortened), shins down. */
export const SITTING_FRONT: Omit<Figure, 'x' | 'y' | 'scale'> = { thighScale: 0.25 };
/** Lying across the view, head towards +x. */
export const LYING: Omit<Figure, 'x' | 'y' | 'scale'> = { torso: 90, thigh: [-90, -90] };
/** Mid-stride. */
export const WALKING: Omit<Figure, 'x' | 'y' | 'scale'> = { thigh: [22, -15], knee: [5, 35] };

/**
 * A straight body falling about its ankles (an inverted pendulum) from upright to `angle` degrees,
 * with the angle growing as (t / duration)^2 as under gravity.
 * @param t seconds since the fall started (clamped to 0..duration)
 * @param ankleX where the feet stay, pixels
 * @param groundY floor line (ankle y), pixels
 * @param scale pixels per standing height
 */
export function fallingFigure(t: number, duration: number, angle: number, ankleX: number, groundY: number, scale: number): Figure {
  const p = Math.min(1, Math.max(0, t / duration));
  const phi = angle * p * p;
  const leg = 0.491 * scale;
  return {
    x: ankleX + Math.sin(phi * D) * leg,
    y: groundY - Math.cos(phi * D) * leg,
    scale,
    torso: phi,
    thigh: [-phi, -phi],
  };
}

/**
 * Kneeling upright, seen from behind or from the front: thighs vertical, the shins on the floor
 * pointing along the line of sight, so they project short. Classified standing (~0.9), as a person
 * a head shorter: the way down to lying on the floor on purpose.
 */
export const KNEELING_ALONG_SIGHT: Omit<Figure, 'x' | 'y' | 'scale'> = { shinScale: 0.3 };

/**
 * A figure of a shape placed with its lowest keypoint on the floor line.
 * @param groundY floor line, pixels
 */
export function grounded(shape: Omit<Figure, 'x' | 'y' | 'scale'>, x: number, groundY: number, scale: number): Figure {
  const f: Figure = { x, y: 0, scale, ...shape };
  const kp = figureKeypoints(f);
  let low = -Infinity;
  for (let i = 0; i < 17; i++) low = Math.max(low, kp[3 * i + 1]);
  return { ...f, y: groundY - low };
}

/**
 * The figure a fraction `p` of the way from `a` to `b`: every numeric field (position, scale,
 * angles, image length factors) interpolated linearly; the rest (hidden keypoints, confidence) from `a`.
 * @param p 0 (a) .. 1 (b)
 */
export function blendFigures(a: Figure, b: Figure, p: number): Figure {
  const lerp = (u: number | undefined, v: number | undefined, neutral: number) => (u ?? neutral) + ((v ?? neutral) - (u ?? neutral)) * p;
  const pair = (u: [number, number] | undefined, v: [number, number] | undefined, neutral: number): [number, number] => [
    lerp(u?.[0], v?.[0], neutral),
    lerp(u?.[1], v?.[1], neutral),
  ];
  return {
    ...a,
    x: lerp(a.x, b.x, 0),
    y: lerp(a.y, b.y, 0),
    scale: lerp(a.scale, b.scale, 0),
    torso: lerp(a.torso, b.torso, 0),
    thigh: pair(a.thigh, b.thigh, 0),
    knee: pair(a.knee, b.knee, 0),
    torsoScale: lerp(a.torsoScale, b.torsoScale, 1),
    thighScale: lerp(a.thighScale, b.thighScale, 1),
    shinScale: lerp(a.shinScale, b.shinScale, 1),
    width: lerp(a.width, b.width, 1),
  };
}

/** Smoothstep: a controlled movement, easing in and out. */
export const easeInOut = (s: number): number => s * s * (3 - 2 * s);
/** Accelerating from rest, as a body toppling under gravity. */
export const easeFall = (s: number): number => s * s;

/**
 * A motion sampled at 10 Hz: each phase goes from one figure to another over its seconds (the
 * same figure twice holds it), eased (default `easeInOut`); a phase's first sample is 100 ms in.
 * @param phases [from, to, seconds, ease?]
 * @returns one figure per 100 ms
 */
export function figureSequence(phases: ReadonlyArray<readonly [Figure, Figure, number, ((s: number) => number)?]>): Figure[] {
  const out: Figure[] = [];
  for (const [a, b, seconds, ease = easeInOut] of phases) {
    const n = Math.round(seconds * 10);
    for (let k = 1; k <= n; k++) out.push(blendFigures(a, b, ease(k / n)));
  }
  return out;
}

/**
 * Lying down on the floor on purpose, in stages, sampled at 10 Hz: `standS` seconds standing,
 * kneeling down over `kneelS` (the shins along the line of sight, see KNEELING_ALONG_SIGHT), holding
 * the kneel for `holdS`, then lying back across the view over `lieS`, then `afterS` lying still.
 * Each motion eases in and out, as a controlled movement does.
 * @returns one figure per 100 ms
 */
export function kneelThenLie(
  groundX: number,
  groundY: number,
  scale: number,
  t: { standS?: number; kneelS?: number; holdS?: number; lieS?: number; afterS?: number } = {},
): Figure[] {
  const { standS = 1, kneelS = 1.2, holdS = 0.5, lieS = 0.9, afterS = 3 } = t;
  const stand = grounded(STANDING, groundX, groundY, scale);
  const kneel = grounded(KNEELING_ALONG_SIGHT, groundX, groundY, scale);
  const lie = grounded(LYING, groundX, groundY, scale);
  return figureSequence([
    [stand, stand, standS],
    [stand, kneel, kneelS],
    [kneel, kneel, holdS],
    [kneel, lie, lieS],
    [lie, lie, afterS],
  ]);
}

/** A person for a pose frame from a figure. */
export function personOf(f: Figure, init: Partial<PersonPose> = {}): PersonPose {
  const keypoints = figureKeypoints(f);
  return { slot: 0, confidence: 0.9, keypoints, bbox: boxOf(keypoints), ...init };
}

export const T0 = Date.UTC(2026, 0, 5, 12, 0, 0); // a Monday, 12:00 UTC

/** A pose frame at T0 + ms. */
export function poseFrame(ms: number, persons: PersonPose[], init: Partial<PoseFrame> = {}): PoseFrame {
  return {
    frameId: Math.round(ms / 100),
    time: T0 + ms,
    sourceId: 'test',
    environmentId: 'lab',
    persons,
    processingMs: 1,
    modelVersion: 'test',
    csiQuality: 1,
    ...init,
  };
}
