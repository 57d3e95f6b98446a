/**
 * Held-out scores of a pose model, computed from the contract outputs (as `PoseModel.run` returns
 * them, decoded with `decodeOutputs` at presence >= 0.5, exactly as the service does) against the
 * targets of each window.
 *
 * - Person count: a window counts as exact when the number of decoded persons equals the true
 *   number of people in the room (people outside the camera's view included).
 * - Matching: decoded persons are assigned to true persons by the Hungarian method on the mean pixel
 *   distance over the true person's visible keypoints (floor distance x 200 px/m for a person with
 *   none visible).
 * - PCK@0.2 (Yang & Ramanan): a visible true keypoint is correct when the matched prediction lies
 *   within 0.2 x max(box width, box height) of it, the box being the true person box. Keypoints of
 *   a true person left unmatched count as wrong. `pckTorso` uses 0.2 x the torso diameter (left
 *   shoulder to right hip, both visible) instead, the stricter convention of some WiFi papers.
 * - Mean per-joint error: pixels of the 640 x 480 view, over visible keypoints of matched persons.
 * - Floor error: metres between matched persons' floor positions.
 * Groups `one`, `two`, `three`, `four` are the windows with that many people in the room.
 */
import { decodeOutputs, type ModelOutputs } from '../model/runtime.js';
import { Hungarian } from '../pose/hungarian.js';
import { N_KEYPOINTS } from '../pose/types.js';
import { MAX_PERSONS, OUT, OUTPUT_DIM, VIEW } from './targets.js';

/** Accumulated counts of one group of windows. */
interface Tally {
  windows: number;
  countExact: number;
  kpTotal: number;
  kpCorrect: number;
  torsoTotal: number;
  torsoCorrect: number;
  errSum: number;
  errN: number;
  floorSum: number;
  floorN: number;
}

const tally = (): Tally => ({ windows: 0, countExact: 0, kpTotal: 0, kpCorrect: 0, torsoTotal: 0, torsoCorrect: 0, errSum: 0, errN: 0, floorSum: 0, floorN: 0 });

/** Scores of one group. */
export interface GroupScores {
  windows: number;
  /** Fraction of windows with exactly the right number of persons. */
  countExact: number;
  /** PCK@0.2 of the person box size; NaN when the group has no visible keypoint. */
  pck02: number;
  /** PCK@0.2 of the torso diameter. */
  pck02Torso: number;
  /** Mean per-joint error, px. */
  meanJointErrorPx: number;
  /** Mean floor position error of matched persons, m. */
  floorErrorM: number;
  /** Visible true keypoints scored. */
  keypoints: number;
}

/** All scores of a set of windows. */
export interface Scores {
  all: GroupScores;
  one: GroupScores;
  two: GroupScores;
  three: GroupScores;
  four: GroupScores;
  empty: GroupScores;
  /** confusion[true][predicted] window counts (0..MAX_PERSONS people). */
  countConfusion: number[][];
}

const finish = (t: Tally): GroupScores => ({
  windows: t.windows,
  countExact: t.windows > 0 ? t.countExact / t.windows : NaN,
  pck02: t.kpTotal > 0 ? t.kpCorrect / t.kpTotal : NaN,
  pck02Torso: t.torsoTotal > 0 ? t.torsoCorrect / t.torsoTotal : NaN,
  meanJointErrorPx: t.errN > 0 ? t.errSum / t.errN : NaN,
  floorErrorM: t.floorN > 0 ? t.floorSum / t.floorN : NaN,
  keypoints: t.kpTotal,
});

/**
 * Scores model outputs against targets.
 * @param outputs contract outputs for rows 0..n-1 (`PoseModel.run`)
 * @param targets n x OUTPUT_DIM targets (targets.ts layout, floor in metres)
 * @param personCounts true people per window
 * @param rows which rows to score (default all)
 * @returns the scores
 */
export function scoreOutputs(outputs: ModelOutputs, targets: Float32Array, personCounts: Uint8Array, rows?: ArrayLike<number>): Scores {
  const groups = [tally(), tally(), tally(), tally(), tally()];
  const all = tally();
  const confusion = Array.from({ length: MAX_PERSONS + 1 }, () => new Array<number>(MAX_PERSONS + 1).fill(0));
  const hungarian = new Hungarian();
  const cost = new Float64Array(MAX_PERSONS * MAX_PERSONS);
  const decode = { view: VIEW, confidenceThreshold: 0.5, maxPersons: MAX_PERSONS, includeDensePose: false };
  const n = rows ? rows.length : outputs.n;
  for (let i = 0; i < n; i++) {
    const r = rows ? rows[i]! : i;
    const pred = decodeOutputs(outputs, r, decode);
    const o = r * OUTPUT_DIM;
    const nTrue = Math.min(personCounts[r]!, MAX_PERSONS);
    const g = groups[nTrue]!;
    for (const t of [g, all]) {
      t.windows++;
      if (pred.length === personCounts[r]) t.countExact++;
    }
    confusion[nTrue]![Math.min(pred.length, MAX_PERSONS)]!++;
    if (nTrue === 0) continue;
    // Cost of true slot p against prediction q.
    for (let p = 0; p < nTrue; p++) {
      let visible = 0;
      for (let k = 0; k < N_KEYPOINTS; k++) if (targets[o + OUT.keypoints + (p * N_KEYPOINTS + k) * 3 + 2]! > 0) visible++;
      for (let q = 0; q < pred.length; q++) {
        const kp = pred[q]!.keypoints;
        let c = 0;
        if (visible > 0) {
          for (let k = 0; k < N_KEYPOINTS; k++) {
            const j = o + OUT.keypoints + (p * N_KEYPOINTS + k) * 3;
            if (!(targets[j + 2]! > 0)) continue;
            c += Math.hypot(kp[3 * k]! - targets[j]! * VIEW.width, kp[3 * k + 1]! - targets[j + 1]! * VIEW.height);
          }
          c /= visible;
        } else {
          const f = pred[q]!.floor!;
          c = 200 * Math.hypot(f.x - targets[o + OUT.floor + p * 2]!, f.y - targets[o + OUT.floor + p * 2 + 1]!);
        }
        cost[p * pred.length + q] = c;
      }
    }
    const match = hungarian.solve(cost, nTrue, pred.length, Infinity);
    for (let p = 0; p < nTrue; p++) {
      const q = match[p]!;
      const jb = o + OUT.boxes + p * 4;
      const size = Math.max(targets[jb + 2]! * VIEW.width, targets[jb + 3]! * VIEW.height);
      const ls = o + OUT.keypoints + (p * N_KEYPOINTS + 5) * 3;
      const rh = o + OUT.keypoints + (p * N_KEYPOINTS + 12) * 3;
      const torso =
        targets[ls + 2]! > 0 && targets[rh + 2]! > 0
          ? Math.hypot((targets[ls]! - targets[rh]!) * VIEW.width, (targets[ls + 1]! - targets[rh + 1]!) * VIEW.height)
          : NaN;
      for (let k = 0; k < N_KEYPOINTS; k++) {
        const j = o + OUT.keypoints + (p * N_KEYPOINTS + k) * 3;
        if (!(targets[j + 2]! > 0)) continue;
        let d = Infinity;
        if (q >= 0) {
          const kp = pred[q]!.keypoints;
          d = Math.hypot(kp[3 * k]! - targets[j]! * VIEW.width, kp[3 * k + 1]! - targets[j + 1]! * VIEW.height);
        }
        for (const t of [g, all]) {
          t.kpTotal++;
          if (d <= 0.2 * size) t.kpCorrect++;
          if (torso === torso) {
            t.torsoTotal++;
            if (d <= 0.2 * torso) t.torsoCorrect++;
          }
          if (q >= 0) {
            t.errSum += d;
            t.errN++;
          }
        }
      }
      if (q >= 0) {
        const f = pred[q]!.floor!;
        const e = Math.hypot(f.x - targets[o + OUT.floor + p * 2]!, f.y - targets[o + OUT.floor + p * 2 + 1]!);
        for (const t of [g, all]) {
          t.floorSum += e;
          t.floorN++;
        }
      }
    }
  }
  return {
    all: finish(all),
    empty: finish(groups[0]!),
    one: finish(groups[1]!),
    two: finish(groups[2]!),
    three: finish(groups[3]!),
    four: finish(groups[4]!),
    countConfusion: confusion,
  };
}

/**
 * Contract outputs from the flat targets.ts layout (e.g. the TypeScript forward pass), so the same
 * scoring runs on either.
 * @param flat n x OUTPUT_DIM values with activations applied
 * @param n rows
 * @returns the outputs as PoseModel.run would give them
 */
export function outputsFromFlat(flat: Float32Array, n: number): ModelOutputs {
  const take = (off: number, per: number) => {
    const a = new Float32Array(n * MAX_PERSONS * per);
    for (let r = 0; r < n; r++) a.set(flat.subarray(r * OUTPUT_DIM + off, r * OUTPUT_DIM + off + MAX_PERSONS * per), r * MAX_PERSONS * per);
    return a;
  };
  return {
    n,
    maxPersons: MAX_PERSONS,
    presence: take(OUT.presence, 1),
    keypoints: take(OUT.keypoints, N_KEYPOINTS * 3),
    boxes: take(OUT.boxes, 4),
    floor: take(OUT.floor, 2),
    densepose: take(OUT.densepose, 24 * 3),
  };
}
