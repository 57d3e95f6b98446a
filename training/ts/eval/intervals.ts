/**
 * 95 % intervals for the accuracy benchmark's scores, so that a reader can tell a difference from
 * the noise of a small sample.
 *
 * - Proportions of independent events (falls detected, fall episodes that were real, hard negatives
 *   that raised an alert): the Wilson score interval (Wilson, 1927), which stays inside [0, 1] and
 *   is honest at 0/n and n/n, where the normal approximation collapses to a point: 23 of 23 falls
 *   detected gives [0.857, 1].
 * - Everything measured over frames (medians, means, shares of frames): the frames of one scenario
 *   are not independent (the same people, room and model errors), so the unit of resampling is the
 *   scenario: a percentile bootstrap over scenarios (Efron & Tibshirani, 1993), seeded, so that a
 *   run repeats exactly.
 */
import { Rng } from '../../../src/sim/rng.js';

/** The normal quantile of a two-sided 95 % interval. */
export const Z95 = 1.959963984540054;

/** A closed interval [lo, hi]. */
export type Interval = readonly [number, number];

/**
 * The Wilson score interval of a proportion.
 * @param k successes (0 <= k <= n)
 * @param n trials
 * @param z normal quantile (default the 95 % one)
 * @returns [lo, hi]; [NaN, NaN] without trials
 * @throws RangeError when k or n is not a count or k > n
 * @example wilson(23, 23) // [0.8569, 1]
 */
export function wilson(k: number, n: number, z = Z95): Interval {
  if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || n < 0 || k > n) throw new RangeError(`wilson: need integers 0 <= k <= n, got k=${k}, n=${n}`);
  if (n === 0) return [NaN, NaN];
  const p = k / n;
  const z2 = z * z;
  const d = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / d;
  const half = (z / d) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // Exact ends at 0/n and n/n (the formula gives them up to rounding).
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

/** Resamples of the bootstrap. */
export const BOOTSTRAP_ROUNDS = 1000;

/**
 * A ratio of sums over scenarios (a share of frames, a mean error, MOTA, IDF1): per scenario a
 * numerator and a denominator; the figure is sum(num) / sum(den).
 */
export interface RatioParts {
  kind: 'ratio';
  num: Float64Array;
  den: Float64Array;
}

/** A quantile of values pooled over scenarios: per scenario its values, sorted ascending. */
export interface QuantileParts {
  kind: 'quantile';
  sorted: Float64Array[];
  /** The quantile, in (0, 1); 0.5 for the median. */
  p: number;
}

export type ScenarioParts = RatioParts | QuantileParts;

/**
 * Ratio parts from per-scenario pairs.
 * @param pairs per scenario [numerator, denominator]
 */
export function ratioParts(pairs: ReadonlyArray<readonly [number, number]>): RatioParts {
  return { kind: 'ratio', num: Float64Array.from(pairs, (x) => x[0]), den: Float64Array.from(pairs, (x) => x[1]) };
}

/**
 * Quantile parts from per-scenario values (copied and sorted).
 * @param values per scenario its values
 * @param p the quantile
 */
export function quantileParts(values: ReadonlyArray<ArrayLike<number>>, p: number): QuantileParts {
  return { kind: 'quantile', sorted: values.map((v) => Float64Array.from(v).sort()), p };
}

/** Values <= x in an ascending array (binary search). */
function countAtMost(s: Float64Array, x: number): number {
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (s[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The quantile of the pool in which scenario i's values appear `weight[i]` times, by nearest rank
 * (the smallest value v with at least ceil(p x total) pooled values <= v). Found by bisection over
 * the scenarios' sorted values, without building the pool.
 * @param sorted per scenario its values, ascending
 * @param weight per scenario how many times it was drawn
 * @param p the quantile, in (0, 1)
 * @returns the value; NaN when the pool is empty
 */
export function pooledQuantile(sorted: readonly Float64Array[], weight: ArrayLike<number>, p: number): number {
  let total = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < sorted.length; i++) {
    const s = sorted[i]!;
    if (weight[i]! === 0 || s.length === 0) continue;
    total += weight[i]! * s.length;
    lo = Math.min(lo, s[0]!);
    hi = Math.max(hi, s[s.length - 1]!);
  }
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil(p * total));
  const atMost = (x: number) => {
    let c = 0;
    for (let i = 0; i < sorted.length; i++) if (weight[i]! > 0) c += weight[i]! * countAtMost(sorted[i]!, x);
    return c;
  };
  // Invariant: atMost(hi) >= rank; lo is the smallest value, so the answer is in [lo, hi].
  if (atMost(lo) >= rank) return lo;
  for (let it = 0; it < 200 && hi - lo > 1e-12 * Math.max(1, Math.abs(hi)); it++) {
    const mid = 0.5 * (lo + hi);
    if (atMost(mid) >= rank) hi = mid;
    else lo = mid;
  }
  // Snap to the largest pooled value <= hi: the nearest-rank quantile is one of the values.
  let best = -Infinity;
  for (let i = 0; i < sorted.length; i++) {
    if (weight[i]! === 0) continue;
    const c = countAtMost(sorted[i]!, hi);
    if (c > 0) best = Math.max(best, sorted[i]![c - 1]!);
  }
  return best;
}

/**
 * The figure of scenario parts with each scenario drawn `weight[i]` times (all 1: the figure itself).
 * @param parts the parts
 * @param weight per scenario its multiplicity
 * @returns the figure; NaN when nothing was measured
 */
export function partsValue(parts: ScenarioParts, weight: ArrayLike<number>): number {
  if (parts.kind === 'quantile') return pooledQuantile(parts.sorted, weight, parts.p);
  let num = 0;
  let den = 0;
  for (let i = 0; i < parts.num.length; i++) {
    num += weight[i]! * parts.num[i]!;
    den += weight[i]! * parts.den[i]!;
  }
  return den > 0 ? num / den : NaN;
}

/** Number of scenarios of parts. */
const scenarioCount = (parts: ScenarioParts): number => (parts.kind === 'quantile' ? parts.sorted.length : parts.num.length);

/**
 * The 95 % percentile-bootstrap interval of a figure over scenarios: scenarios are drawn with
 * replacement (as many as there are), the figure is recomputed, `rounds` times; the interval is the
 * 2.5th and 97.5th percentiles of the figures (resamples in which nothing was measured are left
 * out). Seeded: the same parts and seed give the same interval.
 * @param parts per-scenario parts of the figure
 * @param seed the generator's seed
 * @param rounds resamples (default BOOTSTRAP_ROUNDS)
 * @returns [lo, hi]; [NaN, NaN] without scenarios or measurements
 * @example bootstrap(ratioParts([[9, 10], [5, 10]]), 1) // about [0.5, 0.9]
 */
export function bootstrap(parts: ScenarioParts, seed: number, rounds = BOOTSTRAP_ROUNDS): Interval {
  const n = scenarioCount(parts);
  if (n === 0) return [NaN, NaN];
  const rng = new Rng(seed);
  const weight = new Int32Array(n);
  const values: number[] = [];
  for (let b = 0; b < rounds; b++) {
    weight.fill(0);
    for (let i = 0; i < n; i++) weight[rng.int(0, n - 1)]!++;
    const v = partsValue(parts, weight);
    if (Number.isFinite(v)) values.push(v);
  }
  if (values.length === 0) return [NaN, NaN];
  values.sort((a, b) => a - b);
  const at = (q: number) => values[Math.min(values.length - 1, Math.max(0, Math.ceil(q * values.length) - 1))]!;
  return [at(0.025), at(0.975)];
}
