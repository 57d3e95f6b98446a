/**
 * How many decimals each kind of figure leaves the service with (docs/service.md "Conventions").
 * A float carries 15-17 significant digits; most of them say nothing about a position measured to
 * centimetres or a confidence from a model. Each kind is rounded once, here, to what its
 * precision means, so equal figures print alike everywhere.
 *
 * A figure that is not finite (NaN, ±Infinity) leaves as 0: JSON cannot carry it (it would print
 * `null`), and every number-typed field is a number (DECISIONS "Numbers are numbers"); the docs
 * of each figure say when it can be 0 for want of data.
 */

/** Decimals per kind of figure. */
export const DECIMALS = {
  /** Metres on the floor plan: millimetres. */
  metres: 3,
  /** Metres per second: millimetres per second. */
  speed: 3,
  /** Seconds: milliseconds. */
  seconds: 3,
  /** Milliseconds (processing and response times): 10 microseconds. */
  ms: 2,
  /** Minutes: 6 ms. */
  minutes: 4,
  /** Hours: 0.36 s. */
  hours: 4,
  /** Confidences and scores 0..1: a thousandth, finer than any model's calibration. */
  confidence: 3,
  /** Shares and ratios 0..1 over many rows (conversion, efficiency, activity level): 1/10,000. */
  ratio: 4,
  /** Percentages 0..100: a hundredth of a percent. */
  percent: 2,
  /** Pixels of the reference view: a hundredth of a pixel (keypoints and boxes print so too). */
  pixels: 2,
  /** Rates (per second, per minute). */
  rate: 2,
  /** Means of counts (persons per frame, occupancy): 1/10,000 of a person. */
  mean: 4,
} as const;

/** A kind of figure of {@link DECIMALS}. */
export type FigureKind = keyof typeof DECIMALS;

const SCALE: Record<FigureKind, number> = Object.fromEntries(Object.entries(DECIMALS).map(([k, d]) => [k, 10 ** d])) as Record<FigureKind, number>;

/**
 * Rounds a figure to the decimals of its kind.
 * @param x the figure
 * @param kind what it measures
 * @returns the rounded figure; 0 for a non-finite one
 * @example figure(4.944674177964662, 'metres') // 4.945
 */
export function figure(x: number, kind: FigureKind): number {
  if (!Number.isFinite(x)) return 0;
  const s = SCALE[kind];
  const r = Math.round(x * s) / s;
  // -0 prints as 0 in JSON, but not in a test's toEqual or in a template string.
  return r === 0 ? 0 : r;
}

/** Metres, to the millimetre. */
export const metres = (x: number): number => figure(x, 'metres');
/** Seconds, to the millisecond. */
export const seconds = (x: number): number => figure(x, 'seconds');
/** Milliseconds, to 10 µs. */
export const millis = (x: number): number => figure(x, 'ms');
/** Minutes, 4 decimals. */
export const minutes = (x: number): number => figure(x, 'minutes');
/** Hours, 4 decimals. */
export const hours = (x: number): number => figure(x, 'hours');
/** A confidence 0..1, 3 decimals. */
export const confidence = (x: number): number => figure(x, 'confidence');
/** A share or ratio 0..1, 4 decimals. */
export const ratio = (x: number): number => figure(x, 'ratio');
/** A percentage, 2 decimals. */
export const percent = (x: number): number => figure(x, 'percent');
/** Pixels, 2 decimals. */
export const pixels = (x: number): number => figure(x, 'pixels');
/** A rate or a mean count, 2 decimals. */
export const rate = (x: number): number => figure(x, 'rate');
/** A mean of counts (persons per frame), 4 decimals. */
export const mean = (x: number): number => figure(x, 'mean');
/** A speed in m/s, 3 decimals. */
export const speed = (x: number): number => figure(x, 'speed');
