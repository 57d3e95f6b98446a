import { describe, expect, it } from 'vitest';
import { ConstantVelocityKalman, type KalmanNoise } from '../../src/pose/kalman.js';
import { Rng } from '../../src/sim/rng.js';

const NOISE: KalmanNoise = { accelerationDensity: 0.3, measurementStd: 0.1, initialVelocityStd: 2 };

// Plain dense matrix helpers, independent of the filter's hand-written algebra.
type M = number[][];
const mul = (a: M, b: M): M => a.map((row) => b[0]!.map((_, j) => row.reduce((acc, v, k) => acc + v * b[k]![j]!, 0)));
const tr = (a: M): M => a[0]!.map((_, j) => a.map((row) => row[j]!));
const add = (a: M, b: M): M => a.map((row, i) => row.map((v, j) => v + b[i]![j]!));
const sub = (a: M, b: M): M => a.map((row, i) => row.map((v, j) => v - b[i]![j]!));
const inv2 = (a: M): M => {
  const d = a[0]![0]! * a[1]![1]! - a[0]![1]! * a[1]![0]!;
  return [
    [a[1]![1]! / d, -a[0]![1]! / d],
    [-a[1]![0]! / d, a[0]![0]! / d],
  ];
};
const toM = (p: Float64Array): M => [0, 1, 2, 3].map((i) => [0, 1, 2, 3].map((j) => p[i * 4 + j]!));

/** Textbook predict + update on dense matrices. */
function reference(x: number[], P: M, dt: number, z: [number, number], n: KalmanNoise): { x: number[]; P: M } {
  const F = [
    [1, 0, dt, 0],
    [0, 1, 0, dt],
    [0, 0, 1, 0],
    [0, 0, 0, 1],
  ];
  const q = n.accelerationDensity;
  const a = (q * dt ** 3) / 3;
  const b = (q * dt ** 2) / 2;
  const c = q * dt;
  const Q = [
    [a, 0, b, 0],
    [0, a, 0, b],
    [b, 0, c, 0],
    [0, b, 0, c],
  ];
  const H = [
    [1, 0, 0, 0],
    [0, 1, 0, 0],
  ];
  const r = n.measurementStd ** 2;
  const R = [
    [r, 0],
    [0, r],
  ];
  const xp = mul(
    F,
    x.map((v) => [v]),
  );
  const Pp = add(mul(mul(F, P), tr(F)), Q);
  const S = add(mul(mul(H, Pp), tr(H)), R);
  const K = mul(mul(Pp, tr(H)), inv2(S));
  const y = sub([[z[0]], [z[1]]], mul(H, xp));
  const xn = add(xp, mul(K, y)).map((row) => row[0]!);
  const Pn = mul(
    sub(
      [
        [1, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 1],
      ],
      mul(K, H),
    ),
    Pp,
  );
  return { x: xn, P: Pn };
}

/** Cholesky succeeds (all pivots positive) exactly when a symmetric matrix is positive definite. */
function isPositiveDefinite(P: Float64Array): boolean {
  const L = new Float64Array(16);
  for (let i = 0; i < 4; i++)
    for (let j = 0; j <= i; j++) {
      let s = P[i * 4 + j]!;
      for (let k = 0; k < j; k++) s -= L[i * 4 + k]! * L[j * 4 + k]!;
      if (i === j) {
        if (!(s > 0)) return false;
        L[i * 4 + i] = Math.sqrt(s);
      } else {
        L[i * 4 + j] = s / L[j * 4 + j]!;
      }
    }
  return true;
}

describe('ConstantVelocityKalman', () => {
  it('matches the textbook equations on dense matrices, step by step', () => {
    const kf = new ConstantVelocityKalman(NOISE);
    kf.reset(1, 2);
    let x = [1, 2, 0, 0];
    let P = toM(kf.covariance);
    const rng = new Rng(3);
    for (let step = 0; step < 25; step++) {
      const dt = rng.uniform(0.01, 0.5);
      const z: [number, number] = [1 + 0.8 * step * 0.1 + rng.gaussian(0, 0.1), 2 - 0.2 * step * 0.1 + rng.gaussian(0, 0.1)];
      kf.predict(dt);
      kf.update(z[0], z[1]);
      ({ x, P } = reference(x, P, dt, z, NOISE));
      for (let i = 0; i < 4; i++) expect(kf.state[i]).toBeCloseTo(x[i]!, 10);
      const got = toM(kf.covariance);
      for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) expect(got[i]![j]).toBeCloseTo((P[i]![j]! + P[j]![i]!) / 2, 10);
    }
  });

  it("converges to a constant-velocity target's velocity", () => {
    const vx = 0.8;
    const vy = -0.45;
    // Exact measurements: the estimate converges to the true velocity.
    const exact = new ConstantVelocityKalman(NOISE);
    exact.reset(3, 4);
    for (let k = 1; k <= 200; k++) {
      exact.predict(0.1);
      exact.update(3 + vx * k * 0.1, 4 + vy * k * 0.1);
    }
    expect(Math.abs(exact.velocity.x - vx)).toBeLessThan(1e-3);
    expect(Math.abs(exact.velocity.y - vy)).toBeLessThan(1e-3);
    // Noisy measurements (0.1 m) with a filter tuned for a steady target (low q): within 0.05 m/s,
    // and within three of the filter's own standard deviations.
    const kf = new ConstantVelocityKalman({ ...NOISE, accelerationDensity: 0.01 });
    const rng = new Rng(5);
    kf.reset(3 + rng.gaussian(0, 0.1), 4 + rng.gaussian(0, 0.1));
    for (let k = 1; k <= 300; k++) {
      const t = k * 0.1;
      kf.predict(0.1);
      kf.update(3 + vx * t + rng.gaussian(0, 0.1), 4 + vy * t + rng.gaussian(0, 0.1));
    }
    expect(Math.abs(kf.velocity.x - vx)).toBeLessThan(0.05);
    expect(Math.abs(kf.velocity.y - vy)).toBeLessThan(0.05);
    expect(Math.abs(kf.velocity.x - vx)).toBeLessThan(3 * Math.sqrt(kf.covariance[10]!));
    expect(Math.abs(kf.position.x - (3 + vx * 30))).toBeLessThan(0.1);
    expect(Math.abs(kf.position.y - (4 + vy * 30))).toBeLessThan(0.1);
  });

  it('predicts through missed updates: the position runs on at the velocity, the uncertainty grows', () => {
    const kf = new ConstantVelocityKalman(NOISE);
    kf.reset(0, 0);
    for (let k = 1; k <= 100; k++) {
      kf.predict(0.1);
      kf.update(k * 0.1, 0.5 * k * 0.1);
    }
    const v = kf.velocity;
    const p = kf.position;
    let variance = kf.covariance[0]!;
    for (let k = 1; k <= 10; k++) {
      kf.predict(0.1);
      expect(kf.covariance[0]!).toBeGreaterThan(variance);
      variance = kf.covariance[0]!;
    }
    expect(kf.position.x).toBeCloseTo(p.x + v.x * 1.0, 10);
    expect(kf.position.y).toBeCloseTo(p.y + v.y * 1.0, 10);
    // The true target is at (11, 5.5) after 1 s without measurements.
    expect(Math.abs(kf.position.x - 11)).toBeLessThan(0.05);
    expect(Math.abs(kf.position.y - 5.5)).toBeLessThan(0.05);
    // The next measurement is pulled in harder than before the gap.
    const before = kf.position.x;
    kf.update(11.5, 5.5);
    expect(kf.position.x - before).toBeGreaterThan(0.25);
  });

  it('keeps the covariance symmetric positive definite over uneven steps and long gaps', () => {
    const kf = new ConstantVelocityKalman({ accelerationDensity: 5, measurementStd: 0.02, initialVelocityStd: 10 });
    kf.reset(0, 0);
    const rng = new Rng(9);
    for (let step = 0; step < 5000; step++) {
      const dt = rng.chance(0.05) ? rng.uniform(5, 60) : rng.chance(0.1) ? 0 : rng.uniform(1e-4, 0.2);
      kf.predict(dt);
      if (rng.chance(0.8)) kf.update(rng.gaussian(0, 3), rng.gaussian(0, 3));
      const P = kf.covariance;
      let symmetric = true;
      for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) symmetric &&= P[i * 4 + j] === P[j * 4 + i];
      if (!symmetric || !isPositiveDefinite(P)) expect.fail(`covariance lost symmetry or definiteness at step ${step}`);
    }
  });

  it('ignores non-positive or non-finite time steps and non-finite measurements', () => {
    const kf = new ConstantVelocityKalman(NOISE);
    kf.reset(1, 1);
    kf.predict(0.1);
    kf.update(1.2, 1.0);
    const state = Float64Array.from(kf.state);
    const cov = Float64Array.from(kf.covariance);
    kf.predict(0);
    kf.predict(-1);
    kf.predict(NaN);
    kf.predict(Infinity);
    kf.update(NaN, 1);
    kf.update(1, Infinity);
    expect(kf.state).toEqual(state);
    expect(kf.covariance).toEqual(cov);
  });

  it('resets to the measurement variance and the initial velocity variance', () => {
    const kf = new ConstantVelocityKalman(NOISE);
    kf.reset(5, 6);
    expect(Array.from(kf.state)).toEqual([5, 6, 0, 0]);
    const P = Array.from(kf.covariance);
    expect(P[0]).toBeCloseTo(0.01, 15);
    expect(P[5]).toBeCloseTo(0.01, 15);
    expect(P[10]).toBe(4);
    expect(P[15]).toBe(4);
    expect(P.filter((v) => v !== 0)).toHaveLength(4);
  });

  it('rejects bad noise settings', () => {
    expect(() => new ConstantVelocityKalman({ ...NOISE, measurementStd: 0 })).toThrow(RangeError);
    expect(() => new ConstantVelocityKalman({ ...NOISE, accelerationDensity: -1 })).toThrow(RangeError);
    expect(() => new ConstantVelocityKalman({ ...NOISE, initialVelocityStd: NaN })).toThrow(RangeError);
    expect(() => new ConstantVelocityKalman(NOISE).setNoise({ ...NOISE, measurementStd: Infinity })).toThrow(RangeError);
  });
});
