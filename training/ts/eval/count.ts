/**
 * Person-count accuracy: per frame, does the number of reported persons equal the number of people
 * in the room (people outside the camera's view included, as the model is trained to report
 * them)? Kept as a confusion matrix of true count x reported count.
 */

/** Largest true count kept in its own row (the simulator holds at most 4 people). */
export const MAX_TRUE_COUNT = 4;
/** Reported counts at or above this share the last column. */
export const MAX_REPORTED_COLUMN = 5;

/** confusion[true][reported] frame counts; rows 0..MAX_TRUE_COUNT, columns 0..MAX_REPORTED_COLUMN. */
export type CountConfusion = number[][];

/**
 * An empty confusion matrix.
 * @returns (MAX_TRUE_COUNT + 1) x (MAX_REPORTED_COLUMN + 1) zeros
 */
export function emptyConfusion(): CountConfusion {
  return Array.from({ length: MAX_TRUE_COUNT + 1 }, () => new Array<number>(MAX_REPORTED_COLUMN + 1).fill(0));
}

/**
 * Records one frame (in place).
 * @param m the matrix
 * @param trueCount people in the room (0..MAX_TRUE_COUNT; larger is a RangeError)
 * @param reported persons the pipeline reported (clamped into the last column)
 * @returns m
 * @example addCount(m, 2, 3) // one frame with 2 people where 3 were reported
 */
export function addCount(m: CountConfusion, trueCount: number, reported: number): CountConfusion {
  if (!Number.isInteger(trueCount) || trueCount < 0 || trueCount > MAX_TRUE_COUNT)
    throw new RangeError(`count: true count must be 0..${MAX_TRUE_COUNT}, got ${trueCount}`);
  if (!Number.isInteger(reported) || reported < 0) throw new RangeError(`count: reported count must be an integer >= 0, got ${reported}`);
  m[trueCount]![Math.min(reported, MAX_REPORTED_COLUMN)]!++;
  return m;
}

/**
 * Adds `b` into `a` (in place).
 * @param a accumulator
 * @param b matrix to add
 * @returns a
 */
export function addConfusion(a: CountConfusion, b: CountConfusion): CountConfusion {
  for (let i = 0; i < a.length; i++) for (let j = 0; j < a[i]!.length; j++) a[i]![j]! += b[i]![j]!;
  return a;
}

/** Exact-count accuracy of a matrix. */
export interface CountScores {
  /** Fraction of all frames with the exact count; NaN without frames. */
  exact: number;
  frames: number;
  /** Per true count 0..MAX_TRUE_COUNT: fraction exact (NaN where no frame had that count). */
  exactByTrue: number[];
  framesByTrue: number[];
}

/**
 * Exact-count accuracy overall and per true count. A reported count in the last column (5 or
 * more) is never exact, since no true count reaches it.
 * @param m the matrix
 * @returns the scores
 */
export function countScores(m: CountConfusion): CountScores {
  let frames = 0;
  let exact = 0;
  const exactByTrue: number[] = [];
  const framesByTrue: number[] = [];
  for (let t = 0; t <= MAX_TRUE_COUNT; t++) {
    const row = m[t]!;
    const n = row.reduce((a, b) => a + b, 0);
    frames += n;
    exact += row[t]!;
    framesByTrue.push(n);
    exactByTrue.push(n > 0 ? row[t]! / n : NaN);
  }
  return { exact: frames > 0 ? exact / frames : NaN, frames, exactByTrue, framesByTrue };
}
