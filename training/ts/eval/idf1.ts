/**
 * Identity F1 (IDF1; Ristani, Solera, Zou, Cucchiara & Tomasi, "Performance Measures and a Data
 * Set for Multi-Target, Multi-Camera Tracking", ECCV 2016 workshops): how much of the time each
 * person keeps ONE reported identity, which MOTA barely sees (an identity switch costs MOTA one
 * error; a person reported under a new track id every minute loses IDF1 in proportion to the time).
 *
 * Over one sequence:
 * 1. Every true trajectory (a true person id) is paired with at most one computed trajectory (a
 *    track id), one-to-one, so that the number of frames in which the pair is present AND within
 *    the threshold of each other is as large as possible (a maximum-weight bipartite matching,
 *    solved with the Hungarian method).
 * 2. IDTP = those frames summed over the pairs; IDFN = true detections - IDTP (frames of a person
 *    not covered by its paired track); IDFP = computed detections - IDTP.
 * 3. IDF1 = 2 IDTP / (2 IDTP + IDFP + IDFN) = 2 IDTP / (true detections + computed detections).
 *
 * Sequences are scored on their own (ids are not shared between them) and summed.
 */
import { Hungarian } from '../../../src/pose/hungarian.js';
import type { MotPoint } from './mot.js';

/** The counts of one or more sequences. */
export interface IdCounts {
  /** True detections (person-frames) and computed detections (track-frames). */
  truths: number;
  computed: number;
  /** Frames of paired trajectories that are present and within the threshold. */
  idtp: number;
}

export const emptyIdCounts = (): IdCounts => ({ truths: 0, computed: 0, idtp: 0 });

/** Adds b into a. @returns a */
export function addIdCounts(a: IdCounts, b: IdCounts): IdCounts {
  a.truths += b.truths;
  a.computed += b.computed;
  a.idtp += b.idtp;
  return a;
}

/** The scores of counts. */
export interface IdScores {
  /** 2 IDTP / (truths + computed); NaN when there was nothing at all. */
  idf1: number;
  /** IDTP / computed; NaN without computed detections. */
  idp: number;
  /** IDTP / truths; NaN without true detections. */
  idr: number;
  idfp: number;
  idfn: number;
}

export function idScores(c: IdCounts): IdScores {
  return {
    idf1: c.truths + c.computed > 0 ? (2 * c.idtp) / (c.truths + c.computed) : NaN,
    idp: c.computed > 0 ? c.idtp / c.computed : NaN,
    idr: c.truths > 0 ? c.idtp / c.truths : NaN,
    idfp: c.computed - c.idtp,
    idfn: c.truths - c.idtp,
  };
}

/**
 * IDF1 over one sequence: feed it the frames in order, then read `counts()`.
 * @example
 * const id = new IdentityF1(0.5);
 * id.update([{ id: 0, x: 1, y: 1 }], [{ id: 7, x: 1.1, y: 1 }]);
 * id.update([{ id: 0, x: 1, y: 1 }], [{ id: 9, x: 1.1, y: 1 }]); // a new track id for the same person
 * idScores(id.counts()).idf1 // 2 x 1 / (2 + 2) = 0.5
 */
export class IdentityF1 {
  private truths = 0;
  private computed = 0;
  /** Frames within the threshold, per true id, per track id. */
  private readonly overlap = new Map<number, Map<number, number>>();
  private readonly hypIds = new Set<number>();

  /**
   * @param threshold largest distance of a pair that counts as the same place (metres on the floor)
   * @throws RangeError on a threshold that is not positive
   */
  constructor(readonly threshold: number) {
    if (!(threshold > 0)) throw new RangeError(`IdentityF1: threshold must be > 0, got ${threshold}`);
  }

  /**
   * Records one frame.
   * @param objects true persons (ids unique within the frame)
   * @param hyps computed persons (ids unique within the frame)
   */
  update(objects: readonly MotPoint[], hyps: readonly MotPoint[]): void {
    this.truths += objects.length;
    this.computed += hyps.length;
    for (const h of hyps) this.hypIds.add(h.id);
    for (const o of objects) {
      let row = this.overlap.get(o.id);
      for (const h of hyps) {
        if (!(Math.hypot(o.x - h.x, o.y - h.y) <= this.threshold)) continue;
        if (!row) this.overlap.set(o.id, (row = new Map()));
        row.set(h.id, (row.get(h.id) ?? 0) + 1);
      }
    }
  }

  /**
   * The sequence's counts, with the best one-to-one pairing of trajectories.
   * @returns true and computed detections and IDTP
   */
  counts(): IdCounts {
    const rows = [...this.overlap.keys()];
    const cols = [...this.hypIds];
    let idtp = 0;
    if (rows.length > 0 && cols.length > 0) {
      const colIndex = new Map(cols.map((h, j) => [h, j]));
      // Most overlap = least cost; pairs that never overlap are not allowed (they would add nothing).
      const cost = new Float64Array(rows.length * cols.length).fill(NaN);
      rows.forEach((o, i) => {
        for (const [h, n] of this.overlap.get(o)!) cost[i * cols.length + colIndex.get(h)!] = -n;
      });
      const assign = new Hungarian().solve(cost, rows.length, cols.length, Infinity);
      for (let i = 0; i < rows.length; i++) if (assign[i]! >= 0) idtp -= cost[i * cols.length + assign[i]!]!;
    }
    return { truths: this.truths, computed: this.computed, idtp };
  }
}
