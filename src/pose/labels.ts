/**
 * Camera labels of recorded sessions: what an installer's pose detector wrote for the minutes a CSI
 * capture was recorded (docs/calibration.md "The labels file"). Both calibrations read them: the v2
 * model's fine-tuning (src/calibration/calibrate.ts) and the room calibration of the physics front end
 * (src/calibration/roomCalibration.ts).
 *
 * One JSON object per line: `{"t": 12.3, "people": [{"keypoints": [x0, y0, s0, ..., x16, y16, s16]}]}`.
 * `t` is seconds since the capture's first record (or `time`: epoch ms or ISO 8601, matched to the
 * frames' wall-clock times); keypoints are COCO-17 pixels of `environment.view` with a detector
 * score (0 = not detected); `people` lists everyone found (an empty list: nobody in view).
 */
import type { Camera } from './camera.js';
import { N_KEYPOINTS } from './types.js';

/** A label is matched to a window when their times differ by at most this, seconds. */
export const LABEL_TOLERANCE_S = 0.1;
/** Keypoints with a lower detector score are not used. */
export const MIN_SCORE = 0.3;
/** Height of the ankle joints above the floor for a standing person, metres. */
export const ANKLE_HEIGHT_M = 0.08;

const J = N_KEYPOINTS;

/** One labelled person. */
export interface LabelPerson {
  keypoints: Float32Array;
}

/** One line of a labels file. */
export interface Label {
  /** Seconds since the capture's first record, or NaN when `time` is given instead. */
  t: number;
  /** Epoch ms, or NaN. */
  time: number;
  people: LabelPerson[];
}

/**
 * Parses a labels file (format in the module comment).
 * @param text the file's content
 * @param where its name, for messages
 * @returns the labels in file order
 * @throws Error naming the line and what is wrong with it
 * @example
 * parseLabels('{"t": 1.5, "people": []}\n', 'a.jsonl'); // [{ t: 1.5, time: NaN, people: [] }]
 */
export function parseLabels(text: string, where = 'labels'): Label[] {
  const out: Label[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const at = `${where}:${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new Error(`${at}: not JSON (${(e as Error).message})`);
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${at}: expected an object {"t", "people"}`);
    const o = v as Record<string, unknown>;
    let t = NaN;
    let time = NaN;
    if (typeof o.t === 'number' && Number.isFinite(o.t)) t = o.t;
    else if (typeof o.time === 'number' && Number.isFinite(o.time)) time = o.time;
    else if (typeof o.time === 'string' && Number.isFinite(Date.parse(o.time))) time = Date.parse(o.time);
    else throw new Error(`${at}: needs "t" (seconds since the capture's first record) or "time" (epoch ms or ISO 8601)`);
    if (!Array.isArray(o.people)) throw new Error(`${at}: "people" must be an array (empty when nobody is in view)`);
    const people = o.people.map((p: unknown, k: number) => {
      const kp = (p as { keypoints?: unknown } | null)?.keypoints;
      if (!Array.isArray(kp) || kp.length !== J * 3 || kp.some((x) => typeof x !== 'number' || !Number.isFinite(x)))
        throw new Error(`${at}: people[${k}].keypoints must be ${J * 3} numbers (x, y, score per COCO-17 keypoint)`);
      return { keypoints: Float32Array.from(kp as number[]) };
    });
    out.push({ t, time, people });
  });
  return out;
}

/**
 * The labels of one session by time, for matching windows to them: by `t` (seconds since the
 * capture's first record) and by `time` (epoch ms), each the nearest within a tolerance.
 * @example
 * const idx = new LabelIndex(parseLabels(text));
 * idx.nearest(12.3, frameTimeMs); // the label within LABEL_TOLERANCE_S, or null
 */
export class LabelIndex {
  private readonly byT: Label[];
  private readonly byTime: Label[];

  /**
   * @param labels a session's labels, any order
   * @param toleranceS the largest time difference matched, seconds; default LABEL_TOLERANCE_S
   */
  constructor(
    labels: readonly Label[],
    readonly toleranceS = LABEL_TOLERANCE_S,
  ) {
    this.byT = labels.filter((l) => Number.isFinite(l.t)).sort((a, b) => a.t - b.t);
    this.byTime = labels.filter((l) => Number.isFinite(l.time)).sort((a, b) => a.time - b.time);
  }

  /**
   * The label nearest a moment: by `t` first, else by wall-clock `time`.
   * @param seconds the moment in seconds since the capture's first record
   * @param time the same moment as epoch ms (the frame's `time`)
   * @returns the label, or null when none is within the tolerance
   */
  nearest(seconds: number, time: number): Label | null {
    return nearestIn(this.byT, (l) => l.t, seconds, this.toleranceS) ?? nearestIn(this.byTime, (l) => l.time, time, this.toleranceS * 1000);
  }
}

function nearestIn(list: Label[], key: (l: Label) => number, v: number, tol: number): Label | null {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (key(list[mid]!) < v) lo = mid + 1;
    else hi = mid;
  }
  let best: Label | null = null;
  let bestD = tol;
  for (const i of [lo - 1, lo]) {
    const l = list[i];
    if (!l) continue;
    const d = Math.abs(key(l) - v);
    if (d <= bestD) {
      bestD = d;
      best = l;
    }
  }
  return best;
}

/**
 * The floor point under a labelled person: the camera ray through the mid-ankle pixel (both ankles
 * detected) meets the plane ANKLE_HEIGHT_M above the floor.
 * @param kp the person's 17 keypoints (x, y, score)
 * @param camera the view the labels were made in
 * @returns room metres, or null when the ankles are not both detected or the ray points up
 * @example
 * floorFromLabel(label.people[0].keypoints, viewCamera(config.environment.view)); // { x: 2.9, y: 3.1 }
 */
export function floorFromLabel(kp: Float32Array, camera: Camera): { x: number; y: number } | null {
  const LA = 15;
  const RA = 16;
  if (!(kp[3 * LA + 2]! >= MIN_SCORE && kp[3 * RA + 2]! >= MIN_SCORE)) return null;
  const u = 0.5 * (kp[3 * LA]! + kp[3 * RA]!);
  const v = 0.5 * (kp[3 * LA + 1]! + kp[3 * RA + 1]!);
  return camera.floorPoint(u, v, ANKLE_HEIGHT_M);
}
