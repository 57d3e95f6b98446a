/**
 * Multi-object tracking accuracy, CLEAR-MOT (Bernardin & Stiefelhagen, 2008), on box centres in
 * pixels of the reference view.
 *
 * Per frame, for one sequence:
 * 1. Every correspondence (true object -> hypothesis) of the previous frame whose two ends are both
 *    present again and still within `thresholdPx` of each other is kept.
 * 2. The remaining objects and hypotheses are paired by the Hungarian method on the centre
 *    distance, pairs farther apart than `thresholdPx` not allowed: the largest set of pairs, and
 *    among those the one with the fewest total pixels.
 * 3. A new pair whose object was last paired with a DIFFERENT hypothesis (in any earlier frame) is
 *    an identity switch.
 * 4. Objects left unpaired are misses, hypotheses left unpaired are false positives, except that
 *    up to `ignored` of them are forgiven: people who are in the room but have no visible keypoint
 *    have no box to be matched against, and a hypothesis for them is not a false alarm.
 *
 * MOTA = 1 - (misses + false positives + switches) / objects, summed over all frames (and
 * sequences); it can go below 0. MOTP here is the mean centre distance of the pairs, pixels.
 */
import { Hungarian } from '../../../src/pose/hungarian.js';

/** The CLEAR-MOT match threshold on box centre distance used by the benchmark, pixels (0.1 x the 640 px view width). */
export const MOT_THRESHOLD_PX = 64;

/** One true object or hypothesis in one frame: an id and a box centre. */
export interface MotPoint {
  id: number;
  x: number;
  y: number;
}

/** What happened in one frame. */
export interface MotFrame {
  objects: number;
  misses: number;
  falsePositives: number;
  switches: number;
  /** Pairs as [object id, hypothesis id]. */
  matches: Array<[number, number]>;
}

/** Totals of one or more sequences. */
export interface MotTotals {
  frames: number;
  objects: number;
  misses: number;
  falsePositives: number;
  switches: number;
  matches: number;
  /** Sum of the pixel distances of the pairs. */
  distanceSum: number;
}

/** Scores from totals. */
export interface MotScores {
  /** 1 - (misses + FP + switches) / objects; NaN when there were no objects. */
  mota: number;
  /** Mean centre distance of pairs, px; NaN without pairs. */
  motp: number;
  switches: number;
  objects: number;
}

/**
 * Totals with nothing in them.
 * @returns zeroed totals
 */
export function emptyMotTotals(): MotTotals {
  return { frames: 0, objects: 0, misses: 0, falsePositives: 0, switches: 0, matches: 0, distanceSum: 0 };
}

/**
 * Adds `b` into `a` (in place).
 * @param a accumulator
 * @param b totals to add
 * @returns a
 */
export function addMotTotals(a: MotTotals, b: MotTotals): MotTotals {
  a.frames += b.frames;
  a.objects += b.objects;
  a.misses += b.misses;
  a.falsePositives += b.falsePositives;
  a.switches += b.switches;
  a.matches += b.matches;
  a.distanceSum += b.distanceSum;
  return a;
}

/**
 * MOTA and MOTP of totals.
 * @param t totals
 * @returns the scores
 */
export function motScores(t: MotTotals): MotScores {
  return {
    mota: t.objects > 0 ? 1 - (t.misses + t.falsePositives + t.switches) / t.objects : NaN,
    motp: t.matches > 0 ? t.distanceSum / t.matches : NaN,
    switches: t.switches,
    objects: t.objects,
  };
}

/**
 * CLEAR-MOT over one sequence: feed it the frames in order.
 *
 * @example
 * const mot = new ClearMot(64);
 * mot.update([{ id: 0, x: 100, y: 200 }], [{ id: 7, x: 104, y: 197 }]);
 * mot.update([{ id: 0, x: 110, y: 200 }], [{ id: 9, x: 111, y: 201 }]); // switches: 1
 * motScores(mot.totals).mota // 1 - 1 / 2 = 0.5
 */
export class ClearMot {
  readonly totals: MotTotals = emptyMotTotals();
  /** Object id -> hypothesis it was last paired with. */
  private readonly lastHyp = new Map<number, number>();
  /** Hypothesis id -> object it was last paired with. */
  private readonly lastObject = new Map<number, number>();
  /** Pairs of the previous frame, object id -> hypothesis id. */
  private previous = new Map<number, number>();
  private readonly solver = new Hungarian();
  private cost = new Float64Array(16);

  /**
   * @param thresholdPx largest centre distance of a pair, pixels (> 0)
   * @throws RangeError on a threshold that is not positive
   */
  constructor(readonly thresholdPx: number = MOT_THRESHOLD_PX) {
    if (!(thresholdPx > 0)) throw new RangeError(`ClearMot: threshold must be > 0, got ${thresholdPx}`);
  }

  /**
   * The object a hypothesis was last paired with (in this or an earlier frame).
   * @param hypId hypothesis (track) id
   * @returns the object id, or undefined when it was never paired
   */
  objectOf(hypId: number): number | undefined {
    return this.lastObject.get(hypId);
  }

  /**
   * Scores one frame and adds it to `totals`.
   * @param objects true objects (ids unique within the frame)
   * @param hyps hypotheses (ids unique within the frame)
   * @param ignored objects in the scene that cannot be scored (no box): up to this many unpaired
   *   hypotheses are not counted as false positives
   * @returns the frame's counts and pairs
   */
  update(objects: readonly MotPoint[], hyps: readonly MotPoint[], ignored = 0): MotFrame {
    const T = this.thresholdPx;
    const pairs: Array<[number, number]> = [];
    const objUsed = new Uint8Array(objects.length);
    const hypUsed = new Uint8Array(hyps.length);
    const hypIndex = new Map<number, number>();
    hyps.forEach((h, j) => hypIndex.set(h.id, j));
    let distanceSum = 0;

    // 1. Keep last frame's pairs that are still close enough.
    objects.forEach((o, i) => {
      const hid = this.previous.get(o.id);
      if (hid === undefined) return;
      const j = hypIndex.get(hid);
      if (j === undefined || hypUsed[j]) return;
      const d = Math.hypot(o.x - hyps[j]!.x, o.y - hyps[j]!.y);
      if (!(d <= T)) return;
      objUsed[i] = 1;
      hypUsed[j] = 1;
      pairs.push([o.id, hid]);
      distanceSum += d;
    });

    // 2. Pair the rest within the threshold.
    const rows: number[] = [];
    const cols: number[] = [];
    objects.forEach((_, i) => objUsed[i] || rows.push(i));
    hyps.forEach((_, j) => hypUsed[j] || cols.push(j));
    let switches = 0;
    if (rows.length > 0 && cols.length > 0) {
      if (this.cost.length < rows.length * cols.length) this.cost = new Float64Array(2 * rows.length * cols.length);
      // CLEAR-MOT wants the most pairs first, then the least distance. Every allowed pair is
      // shifted down by K > T x (pairs + 1), so one more pair always outweighs any saving in
      // distance; pairs beyond the threshold (and NaN boxes) are not allowed at all.
      const K = T * (Math.min(rows.length, cols.length) + 1) + 1;
      for (let r = 0; r < rows.length; r++) {
        const o = objects[rows[r]!]!;
        for (let c = 0; c < cols.length; c++) {
          const h = hyps[cols[c]!]!;
          const d = Math.hypot(o.x - h.x, o.y - h.y);
          this.cost[r * cols.length + c] = d <= T ? d - K : NaN;
        }
      }
      const assign = this.solver.solve(this.cost, rows.length, cols.length, 0);
      for (let r = 0; r < rows.length; r++) {
        const c = assign[r]!;
        if (c < 0) continue;
        const o = objects[rows[r]!]!;
        const h = hyps[cols[c]!]!;
        objUsed[rows[r]!] = 1;
        hypUsed[cols[c]!] = 1;
        // 3. A new pair for an object that last had another hypothesis.
        const before = this.lastHyp.get(o.id);
        if (before !== undefined && before !== h.id) switches++;
        pairs.push([o.id, h.id]);
        distanceSum += Math.hypot(o.x - h.x, o.y - h.y);
      }
    }

    this.previous = new Map();
    for (const [o, h] of pairs) {
      this.previous.set(o, h);
      this.lastHyp.set(o, h);
      this.lastObject.set(h, o);
    }
    let misses = 0;
    for (let i = 0; i < objects.length; i++) if (!objUsed[i]) misses++;
    let spare = 0;
    for (let j = 0; j < hyps.length; j++) if (!hypUsed[j]) spare++;
    const falsePositives = Math.max(0, spare - Math.max(0, ignored));

    const t = this.totals;
    t.frames++;
    t.objects += objects.length;
    t.misses += misses;
    t.falsePositives += falsePositives;
    t.switches += switches;
    t.matches += pairs.length;
    t.distanceSum += distanceSum;
    return { objects: objects.length, misses, falsePositives, switches, matches: pairs };
  }
}

/**
 * The centre of an x, y, width, height box.
 * @param id the point's id
 * @param box x, y, width, height
 * @returns the centre as a MotPoint
 */
export function boxCentre(id: number, box: ArrayLike<number>): MotPoint {
  return { id, x: box[0]! + box[2]! / 2, y: box[1]! + box[3]! / 2 };
}
