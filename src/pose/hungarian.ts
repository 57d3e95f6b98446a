/**
 * Optimal assignment with gating, for rectangular cost matrices (the tracker's tracks x
 * detections).
 *
 * The problem solved: choose a set of (row, col) pairs, each row and each column used at most
 * once, never a pair whose cost is above `maxCost` (or NaN), minimising the sum over chosen pairs
 * of `cost - maxCost`. Every allowed pair therefore "earns" `maxCost - cost`, and leaving a row or
 * a column unmatched costs nothing: a pair is only taken when it is worth more than leaving both
 * of its ends free, which is what a tracker wants (it never forces a far detection onto a track
 * just to raise the number of matches). With `maxCost = Infinity` this becomes the classical
 * rectangular assignment: as many pairs as possible (min(rows, cols) when every entry is
 * finite), and among those the cheapest.
 *
 * Method: the unmatched option is written as `rows` extra zero-cost "dummy" columns, giving a
 * rows x (cols + rows) problem in which every row is assigned, solved by the shortest augmenting
 * path form of the Hungarian method (Kuhn-Munkres with potentials, as in Jonker-Volgenant) in
 * O(rows^2 (rows + cols)). The augmented matrix is never built: entries are computed on the fly.
 */
export class Hungarian {
  /** Row potentials, 1-based (index 0 unused). */
  private u = new Float64Array(1);
  /** Column potentials, 1-based; column 0 is the virtual start column. */
  private v = new Float64Array(1);
  /** p[j] = row (1-based) assigned to column j, 0 = none. */
  private p = new Int32Array(1);
  private way = new Int32Array(1);
  private minv = new Float64Array(1);
  private used = new Uint8Array(1);
  private result = new Int32Array(0);
  /** Subarray views of `result`, one per row count, so that returning one allocates nothing. */
  private views: Int32Array[] = [];

  /**
   * Solves one assignment problem.
   *
   * @param cost row-major costs, `cost[r * cols + c]`; at least rows x cols entries. NaN and
   *   infinite entries are never matched; finite negative costs are allowed.
   * @param rows number of rows (>= 0)
   * @param cols number of columns (>= 0)
   * @param maxCost gate: pairs costing more are never matched; `Infinity` for no gate
   * @returns for each row the matched column, or -1. The array belongs to the solver and is
   *   overwritten by the next call: copy it to keep it.
   * @throws RangeError when the sizes are not non-negative integers, `cost` is too short,
   *   `maxCost` is NaN, or the costs are so large (beyond ~1e300) that double arithmetic overflows
   * @example
   * const h = new Hungarian();
   * h.solve(Float64Array.of(4, 1, 3, 2, 0, 5), 2, 3, Infinity); // [1, 0]: total cost 1 + 2
   * h.solve(Float64Array.of(4, 1, 3, 2, 0, 5), 2, 3, 1.5);      // [1, -1]: 2 is over the gate
   */
  solve(cost: Float64Array, rows: number, cols: number, maxCost: number): Int32Array {
    if (!Number.isInteger(rows) || rows < 0 || !Number.isInteger(cols) || cols < 0)
      throw new RangeError(`Hungarian: rows and cols must be non-negative integers, got ${rows} x ${cols}`);
    if (cost.length < rows * cols) throw new RangeError(`Hungarian: cost has ${cost.length} entries, need ${rows * cols}`);
    if (Number.isNaN(maxCost)) throw new RangeError('Hungarian: maxCost is NaN');
    const out = this.output(rows);
    if (rows === 0) return out;
    if (cols === 0) {
      out.fill(-1);
      return out;
    }
    const limit = maxCost === Infinity ? this.cardinalityLimit(cost, rows, cols) : maxCost;
    // maxCost = -Infinity, or an ungated matrix with no finite entry: nothing can be matched.
    if (limit === -Infinity) {
      out.fill(-1);
      return out;
    }
    const n = rows;
    const m = cols + rows;
    this.ensure(n, m);
    const { u, v, p, way, minv, used } = this;
    u.fill(0, 0, n + 1);
    v.fill(0, 0, m + 1);
    p.fill(0, 0, m + 1);
    way.fill(0, 0, m + 1);

    for (let i = 1; i <= n; i++) {
      p[0] = i;
      let j0 = 0;
      minv.fill(Infinity, 0, m + 1);
      used.fill(0, 0, m + 1);
      do {
        used[j0] = 1;
        const i0 = p[j0]!;
        const rowBase = (i0 - 1) * cols;
        const ui0 = u[i0]!;
        let delta = Infinity;
        let j1 = 0;
        for (let j = 1; j <= m; j++) {
          if (used[j] === 1) continue;
          let c: number;
          if (j <= cols) {
            const raw = cost[rowBase + j - 1]!;
            // The comparisons also reject NaN.
            c = raw <= limit && raw > -Infinity ? raw - limit : Infinity;
          } else {
            c = 0;
          }
          const cur = c - ui0 - v[j]!;
          if (cur < minv[j]!) {
            minv[j] = cur;
            way[j] = j0;
          }
          if (minv[j]! < delta) {
            delta = minv[j]!;
            j1 = j;
          }
        }
        // An unused dummy column always has a finite reduced cost, so j1 is found unless the
        // arithmetic overflowed; stop rather than loop forever.
        if (j1 === 0) throw new RangeError('Hungarian: costs too large to solve in double precision');
        for (let j = 0; j <= m; j++) {
          if (used[j] === 1) {
            u[p[j]!] += delta;
            v[j] -= delta;
          } else {
            minv[j] -= delta;
          }
        }
        j0 = j1;
      } while (p[j0] !== 0);
      do {
        const j1 = way[j0]!;
        p[j0] = p[j1]!;
        j0 = j1;
      } while (j0 !== 0);
    }

    out.fill(-1);
    for (let j = 1; j <= cols; j++) {
      const i = p[j]!;
      if (i !== 0) out[i - 1] = j - 1;
    }
    return out;
  }

  /**
   * A finite stand-in for an infinite gate: large enough that one more matched pair always
   * outweighs any difference in cost, so the solution has the most pairs possible and, among
   * those, the least cost.
   */
  private cardinalityLimit(cost: Float64Array, rows: number, cols: number): number {
    let lo = Infinity;
    let hi = -Infinity;
    const len = rows * cols;
    for (let k = 0; k < len; k++) {
      const c = cost[k]!;
      if (!Number.isFinite(c)) continue;
      if (c < lo) lo = c;
      if (c > hi) hi = c;
    }
    if (hi === -Infinity) return -Infinity;
    // A matching with d more pairs gains d * limit and can cost at most k * (hi - lo) + d * hi more.
    const k = Math.min(rows, cols);
    const limit = hi + k * (hi - lo) + Math.max(1, Math.abs(hi), Math.abs(lo));
    if (!(Math.abs(limit) < 1e300)) throw new RangeError('Hungarian: costs too large for an ungated solve');
    return limit;
  }

  private output(rows: number): Int32Array {
    if (this.result.length < rows) {
      this.result = new Int32Array(Math.max(rows, this.result.length * 2));
      this.views = [];
    }
    let view = this.views[rows];
    if (view === undefined) {
      view = this.result.subarray(0, rows);
      this.views[rows] = view;
    }
    return view;
  }

  private ensure(n: number, m: number): void {
    if (this.u.length < n + 1) this.u = new Float64Array(Math.max(n + 1, this.u.length * 2));
    if (this.v.length < m + 1) {
      const size = Math.max(m + 1, this.v.length * 2);
      this.v = new Float64Array(size);
      this.p = new Int32Array(size);
      this.way = new Int32Array(size);
      this.minv = new Float64Array(size);
      this.used = new Uint8Array(size);
    }
  }
}
