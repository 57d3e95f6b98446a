import { describe, expect, it } from 'vitest';
import { COUNT_HYSTERESIS, countWithHysteresis, hysteresisBand, hysteresisStep } from '../../src/model/countHysteresis.js';

describe('hysteresisBand', () => {
  it.each([
    { threshold: 0.5, band: 0.2, h: 0.2 },
    { threshold: 0.3, band: 0.2, h: 0.15 }, // closer to 0: half the distance
    { threshold: 0.05, band: 0.2, h: 0.025 },
    { threshold: 0.9, band: 0.2, h: 0.05 }, // closer to 1
    { threshold: 0, band: 0.2, h: 0 },
    { threshold: 1, band: 0.2, h: 0 },
    { threshold: 0.5, band: 0, h: 0 }, // band 0 turns it off
  ])('threshold $threshold, band $band: $h', ({ threshold, band, h }) => {
    expect(hysteresisBand(threshold, band)).toBeCloseTo(h, 12);
  });
});

describe('hysteresisStep', () => {
  it.each([
    { shown: 1, up: 1, down: 1, next: 1, why: 'within the band' },
    { shown: 1, up: 2, down: 2, next: 2, why: 'up reached' },
    { shown: 1, up: 3, down: 3, next: 3, why: 'several up at once' },
    { shown: 2, up: 1, down: 1, next: 1, why: 'down reached' },
    { shown: 2, up: 1, down: 2, next: 2, why: 'up lower but down holds' },
    { shown: 3, up: 0, down: 0, next: 0, why: 'several down at once' },
  ])('$shown with up $up, down $down: $next ($why)', ({ shown, up, down, next }) => {
    expect(hysteresisStep(shown, up, down)).toBe(next);
  });
});

describe('countWithHysteresis: the band edges', () => {
  // P(count = 0..3) with P(count >= 2) = q; threshold 0.5.
  const dist = (q: number) => Float64Array.of(0, 1 - q, q, 0);
  const h = COUNT_HYSTERESIS;
  it.each([
    { q: 0.5 + h, shown: 1, next: 2, why: 'up at exactly threshold + band' },
    { q: 0.5 + h - 1e-6, shown: 1, next: 1, why: 'not up just under it' },
    { q: 0.5 - h, shown: 2, next: 2, why: 'kept at exactly threshold - band' },
    { q: 0.5 - h - 1e-6, shown: 2, next: 1, why: 'down just under it' },
    { q: 0.55, shown: null, next: 2, why: 'the plain rule at the start' },
    { q: 0.45, shown: null, next: 1, why: 'the plain rule at the start' },
  ])('q $q from $shown: $next ($why)', ({ q, shown, next }) => {
    expect(countWithHysteresis(dist(q), 3, 0.5, shown)).toBe(next);
  });
});
