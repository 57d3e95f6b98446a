import { describe, expect, it } from 'vitest';
import { Hungarian } from '../../src/pose/hungarian.js';
import { Rng } from '../../src/sim/rng.js';

/**
 * The optimum by enumeration. With a finite gate: every partial matching (each row takes an
 * unused column or none) that uses only pairs costing <= maxCost, minimising sum(cost - maxCost).
 * Without a gate: every matching of the most pairs possible, minimising the sum of costs.
 * Returns [pairs, objective].
 */
function bruteForce(cost: Float64Array, rows: number, cols: number, maxCost: number): [number, number] {
  const usedCol = new Array<boolean>(cols).fill(false);
  let bestPairs = -1;
  let best = Infinity;
  const gated = Number.isFinite(maxCost);
  const visit = (r: number, pairs: number, sum: number) => {
    if (r === rows) {
      if (gated) {
        if (sum < best - 1e-12) {
          best = sum;
          bestPairs = pairs;
        }
      } else if (pairs > bestPairs || (pairs === bestPairs && sum < best)) {
        bestPairs = pairs;
        best = sum;
      }
      return;
    }
    visit(r + 1, pairs, sum);
    for (let c = 0; c < cols; c++) {
      const v = cost[r * cols + c]!;
      if (usedCol[c] || !Number.isFinite(v) || (gated && v > maxCost)) continue;
      usedCol[c] = true;
      visit(r + 1, pairs + 1, sum + (gated ? v - maxCost : v));
      usedCol[c] = false;
    }
  };
  visit(0, 0, 0);
  return [bestPairs, best];
}

/** Checks the assignment is a valid gated matching and returns [pairs, objective]. */
function score(assign: Int32Array, cost: Float64Array, rows: number, cols: number, maxCost: number): [number, number] {
  expect(assign).toHaveLength(rows);
  const seen = new Set<number>();
  let pairs = 0;
  let sum = 0;
  for (let r = 0; r < rows; r++) {
    const c = assign[r]!;
    if (c === -1) continue;
    expect(c).toBeGreaterThanOrEqual(0);
    expect(c).toBeLessThan(cols);
    expect(seen.has(c)).toBe(false);
    seen.add(c);
    const v = cost[r * cols + c]!;
    expect(Number.isFinite(v)).toBe(true);
    if (Number.isFinite(maxCost)) expect(v).toBeLessThanOrEqual(maxCost);
    pairs++;
    sum += Number.isFinite(maxCost) ? v - maxCost : v;
  }
  return [pairs, sum];
}

function randomMatrix(rng: Rng, rows: number, cols: number, scale = 1): Float64Array {
  const m = new Float64Array(rows * cols);
  for (let i = 0; i < m.length; i++) m[i] = rng.uniform(0, scale);
  return m;
}

describe('Hungarian: optimal against brute force', () => {
  const h = new Hungarian();

  it('square matrices 1x1 .. 7x7, no gate: a full matching of least cost (all permutations checked)', () => {
    const rng = new Rng(11);
    for (let n = 1; n <= 7; n++)
      for (let trial = 0; trial < (n <= 5 ? 40 : 8); trial++) {
        const m = randomMatrix(rng, n, n, 10);
        const [pairs, best] = bruteForce(m, n, n, Infinity);
        const [gotPairs, got] = score(h.solve(m, n, n, Infinity), m, n, n, Infinity);
        expect(gotPairs).toBe(n);
        expect(pairs).toBe(n);
        expect(got).toBeCloseTo(best, 9);
      }
  });

  it('rectangular matrices both ways, no gate', () => {
    const rng = new Rng(12);
    const shapes: Array<[number, number]> = [
      [1, 5],
      [5, 1],
      [2, 7],
      [7, 2],
      [3, 6],
      [6, 3],
      [4, 7],
      [7, 5],
    ];
    for (const [rows, cols] of shapes)
      for (let trial = 0; trial < 10; trial++) {
        const m = randomMatrix(rng, rows, cols, 5);
        const [pairs, best] = bruteForce(m, rows, cols, Infinity);
        const [gotPairs, got] = score(h.solve(m, rows, cols, Infinity), m, rows, cols, Infinity);
        expect(gotPairs).toBe(Math.min(rows, cols));
        expect(gotPairs).toBe(pairs);
        expect(got).toBeCloseTo(best, 9);
      }
  });

  it('gated: never matches above the gate and maximises the total gain, square and rectangular', () => {
    const rng = new Rng(13);
    let partial = 0;
    for (let trial = 0; trial < 120; trial++) {
      const rows = rng.int(1, 7);
      const cols = rng.int(1, 7);
      const m = randomMatrix(rng, rows, cols, 1);
      const gate = rng.uniform(0.1, 0.9);
      const [, best] = bruteForce(m, rows, cols, gate);
      const [pairs, got] = score(h.solve(m, rows, cols, gate), m, rows, cols, gate);
      expect(got).toBeCloseTo(best, 9);
      if (pairs < Math.min(rows, cols)) partial++;
    }
    // The gate really bites in many of the trials.
    expect(partial).toBeGreaterThan(20);
  });

  it('gated: does not force a poor pair to raise the number of matches', () => {
    // Row 0 fits column 0 well (0.1); the only way to match both rows is 0->1 and 1->0 at 0.9
    // each. Against a gate of 1, matching 0->0 alone gains 0.9, the two poor pairs gain 0.2.
    const m = Float64Array.of(0.1, 0.9, 0.9, 5);
    expect(Array.from(h.solve(m, 2, 2, 1))).toEqual([0, -1]);
    // Without a gate, both rows are matched.
    expect(Array.from(h.solve(m, 2, 2, Infinity))).toEqual([1, 0]);
  });

  it('handles negative costs and a negative gate', () => {
    const rng = new Rng(14);
    for (let trial = 0; trial < 30; trial++) {
      const m = randomMatrix(rng, 4, 5, 2).map((v) => v - 1);
      for (const gate of [-0.5, 0, 0.5, Infinity]) {
        const [pairs, best] = bruteForce(m, 4, 5, gate);
        const [gotPairs, got] = score(h.solve(m, 4, 5, gate), m, 4, 5, gate);
        if (gate === Infinity) expect(gotPairs).toBe(pairs);
        expect(got).toBeCloseTo(best, 9);
      }
    }
  });
});

describe('Hungarian: special cases', () => {
  it('solves a known 3x3 problem', () => {
    // Optimum 1 + 2 + 2 = 5 at (0,1), (1,0), (2,2).
    const m = Float64Array.of(4, 1, 3, 2, 0, 5, 3, 2, 2);
    expect(Array.from(new Hungarian().solve(m, 3, 3, Infinity))).toEqual([1, 0, 2]);
  });

  it('ties: all-equal costs give a full matching; duplicate rows are split between their columns', () => {
    const h = new Hungarian();
    const flat = new Float64Array(36).fill(2);
    const [pairs, sum] = score(h.solve(flat, 6, 6, Infinity), flat, 6, 6, Infinity);
    expect([pairs, sum]).toEqual([6, 12]);
    // At the gate exactly a pair is allowed (it gains nothing, so matching it is optional).
    const atGate = score(h.solve(flat, 6, 6, 2), flat, 6, 6, 2);
    expect(atGate[1]).toBe(0);
    const dup = Float64Array.of(1, 5, 1, 5, 3, 3);
    const got = Array.from(h.solve(dup, 3, 2, 4));
    // Rows 0 and 1 are identical; one takes column 0 (1) and the other column 1 (5 > gate 4),
    // so only one of them is matched, and row 2 takes column 1 (3).
    expect(got.filter((c) => c === 0)).toHaveLength(1);
    expect(got[2]).toBe(1);
    expect(got.filter((c) => c === -1)).toHaveLength(1);
  });

  it('never matches NaN or infinite entries', () => {
    const h = new Hungarian();
    const m = Float64Array.of(NaN, 1, Infinity, 2, -Infinity, NaN);
    expect(Array.from(h.solve(m, 2, 3, Infinity))).toEqual([1, 0]);
    expect(Array.from(h.solve(Float64Array.of(NaN, NaN, NaN, NaN), 2, 2, Infinity))).toEqual([-1, -1]);
    expect(Array.from(h.solve(Float64Array.of(NaN, 0.5), 1, 2, 1))).toEqual([1]);
  });

  it('zero-size problems', () => {
    const h = new Hungarian();
    expect(h.solve(new Float64Array(0), 0, 0, 1)).toHaveLength(0);
    expect(h.solve(new Float64Array(0), 0, 5, 1)).toHaveLength(0);
    expect(Array.from(h.solve(new Float64Array(0), 3, 0, 1))).toEqual([-1, -1, -1]);
    expect(Array.from(h.solve(Float64Array.of(0.5, 0.5), 1, 2, -Infinity))).toEqual([-1]);
  });

  it('reuses its work arrays across calls of different sizes and gives the same answers', () => {
    const rng = new Rng(15);
    const shared = new Hungarian();
    for (let trial = 0; trial < 60; trial++) {
      const rows = rng.int(0, 9);
      const cols = rng.int(0, 9);
      const m = randomMatrix(rng, rows, cols);
      const gate = rng.chance(0.5) ? Infinity : 0.5;
      expect(Array.from(shared.solve(m, rows, cols, gate))).toEqual(Array.from(new Hungarian().solve(m, rows, cols, gate)));
    }
  });

  it('scales to a 60x80 problem with a gate', () => {
    const rng = new Rng(16);
    const m = randomMatrix(rng, 60, 80);
    const out = new Hungarian().solve(m, 60, 80, 0.3);
    const [pairs, sum] = score(out, m, 60, 80, 0.3);
    expect(pairs).toBeGreaterThan(30);
    // Greedy is a lower bound on the gain an optimum achieves.
    const taken = new Set<number>();
    let greedy = 0;
    const order = Array.from({ length: 60 * 80 }, (_, k) => k).sort((a, b) => m[a]! - m[b]!);
    const rowDone = new Set<number>();
    for (const k of order) {
      const r = Math.floor(k / 80);
      const c = k % 80;
      if (m[k]! > 0.3 || rowDone.has(r) || taken.has(c)) continue;
      rowDone.add(r);
      taken.add(c);
      greedy += m[k]! - 0.3;
    }
    expect(sum).toBeLessThanOrEqual(greedy + 1e-12);
  });

  it('rejects malformed arguments', () => {
    const h = new Hungarian();
    expect(() => h.solve(new Float64Array(3), 2, 2, 1)).toThrow(RangeError);
    expect(() => h.solve(new Float64Array(4), -1, 2, 1)).toThrow(RangeError);
    expect(() => h.solve(new Float64Array(4), 1.5, 2, 1)).toThrow(RangeError);
    expect(() => h.solve(new Float64Array(4), 2, 2, NaN)).toThrow(RangeError);
  });
});
