import { expect } from 'vitest';

/**
 * Complex least-squares factor a with y ~ a x over whole interleaved [re, im, re, im, ...]
 * vectors (the CsiFrame layout): a = <x, y> / <x, x>.
 * @example const g = lsFactor(measured, model); // measured * (g.re + i g.im) ~ model
 */
export function lsFactor(x: ArrayLike<number>, y: ArrayLike<number>): { re: number; im: number } {
  let nr = 0;
  let ni = 0;
  let d = 0;
  for (let i = 0; i < x.length; i += 2) {
    nr += x[i]! * y[i]! + x[i + 1]! * y[i + 1]!;
    ni += x[i]! * y[i + 1]! - x[i + 1]! * y[i]!;
    d += x[i]! * x[i]! + x[i + 1]! * x[i + 1]!;
  }
  return { re: nr / d, im: ni / d };
}

/**
 * Asserts that map `b` equals map `a` over their first `n` values to within `tol` of `a`'s peak,
 * and that `a` has a positive peak (two ways of computing one beamformed floor map).
 * @example expectCloseToPeak(exact, fast, 1e-5);
 */
export function expectCloseToPeak(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, n = a.length): void {
  let peak = 0;
  let worst = 0;
  for (let i = 0; i < n; i++) {
    peak = Math.max(peak, a[i]!);
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  }
  expect(peak).toBeGreaterThan(0);
  expect(worst / peak).toBeLessThan(tol);
}
