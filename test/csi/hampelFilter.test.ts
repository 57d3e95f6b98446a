import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { HampelFilter, type HampelOn } from '../../src/csi/hampelFilter.js';
import { makeFrame } from '../helpers/frames.js';

/** A 1x1x1 frame holding the one complex sample [re, im]. */
const sample = (seq: number, re: number, im = 0): CsiFrame => makeFrame({ seq, nRx: 1, nTx: 1, nSub: 1, value: () => [re, im] });

/** Every frame through one filter (push, then flush), as the samples that come out. */
function filter(samples: ReadonlyArray<readonly [number, number]>, window: number, nSigma = 3, on: HampelOn = 'components'): [number, number][] {
  const f = new HampelFilter(window, nSigma, on);
  const ready: CsiFrame[] = [];
  samples.forEach(([re, im], seq) => f.push(sample(seq, re, im), ready));
  f.flush(ready);
  expect(ready.map((r) => r.seq)).toEqual(samples.map((_, seq) => seq));
  return ready.map((r) => [r.csi[0]!, r.csi[1]!]);
}

const reals = (xs: number[]) => xs.map((x) => [x, 0] as const);

describe('HampelFilter: an outlier is replaced by the window median, an inlier kept', () => {
  const cases: ReadonlyArray<{ name: string; window: number; nSigma?: number; input: number[]; output: number[] }> = [
    { name: 'a constant series', window: 5, input: [2, 2, 2, 2, 2], output: [2, 2, 2, 2, 2] },
    { name: 'a spike in a constant series (MAD 0)', window: 5, input: [1, 1, 9, 1, 1], output: [1, 1, 1, 1, 1] },
    { name: 'a dip', window: 3, input: [4, 4, 4, -3, 4, 4], output: [4, 4, 4, 4, 4, 4] },
    { name: 'a spike among noisy values', window: 7, input: [10, 11, 9, 10, 30, 11, 9, 10], output: [10, 11, 9, 10, 10, 11, 9, 10] },
    { name: 'a ramp: every value an inlier', window: 5, input: [1, 2, 3, 4, 5, 6, 7], output: [1, 2, 3, 4, 5, 6, 7] },
    { name: 'noise within 3 robust sigma', window: 5, input: [10, 12, 9, 11, 10, 12, 9], output: [10, 12, 9, 11, 10, 12, 9] },
    { name: 'the same noise with nSigma 0: any departure from the median', window: 5, nSigma: 0, input: [10, 12, 9, 11, 10], output: [10, 10.5, 10, 10.5, 10] },
    { name: 'a spike at the start (one-sided window)', window: 5, input: [9, 1, 1, 1, 1], output: [1, 1, 1, 1, 1] },
    { name: 'a spike at the end (one-sided window, flushed)', window: 5, input: [1, 1, 1, 1, 9], output: [1, 1, 1, 1, 1] },
    // An even count of values (here a stream of two frames) has the mean of the middle two as median.
    { name: 'two frames, nSigma 0: each is off the mean of the two', window: 3, nSigma: 0, input: [1, 3], output: [2, 2] },
    { name: 'non-finite values count as +Infinity: outliers', window: 3, input: [1, NaN, 1, Infinity, 1], output: [1, 1, 1, 1, 1] },
  ];
  it.each(cases)('$name (window $window)', ({ window, nSigma, input, output }) => {
    expect(filter(reals(input), window, nSigma).map(([re]) => re)).toEqual(output);
  });

  it('components: re and im are two series, each filtered on its own', () => {
    const input: [number, number][] = [
      [1, 5],
      [1, 5],
      [8, 5],
      [1, -7],
      [1, 5],
    ];
    expect(filter(input, 3)).toEqual([
      [1, 5],
      [1, 5],
      [1, 5],
      [1, 5],
      [1, 5],
    ]);
  });

  it('amplitude: an outlier is rescaled to the median amplitude and keeps its phase; inliers are untouched', () => {
    // Amplitude 1 at changing phases, then 5 * (0.6 + 0.8j): amplitude 5, phase atan2(0.8, 0.6).
    const input: [number, number][] = [
      [1, 0],
      [0, 1],
      [3, 4],
      [-1, 0],
      [0, -1],
    ];
    const out = filter(input, 5, 3, 'amplitude');
    expect(out[2]![0]).toBeCloseTo(0.6, 6);
    expect(out[2]![1]).toBeCloseTo(0.8, 6);
    expect(out.filter((_, j) => j !== 2)).toEqual(input.filter((_, j) => j !== 2));
  });

  it('amplitude: a sample with no phase (NaN) becomes the median on the real axis', () => {
    const out = filter(
      [
        [0, 2],
        [NaN, 0],
        [2, 0],
      ],
      3,
      3,
      'amplitude',
    );
    expect(out).toEqual([
      [0, 2],
      [2, 0],
      [2, 0],
    ]);
  });
});

describe('HampelFilter: when frames come out', () => {
  it.each([3, 5, 7, 31])('window %i: a frame is ready (window - 1) / 2 pushes later, the rest on flush', (window) => {
    const half = (window - 1) / 2;
    const f = new HampelFilter(window, 3, 'amplitude');
    const ready: CsiFrame[] = [];
    const readyAfter: number[] = [];
    for (let seq = 0; seq < 40; seq++) {
      f.push(sample(seq, 1), ready);
      readyAfter.push(ready.length);
    }
    expect(readyAfter).toEqual(Array.from({ length: 40 }, (_, t) => Math.max(0, t + 1 - half)));
    f.flush(ready);
    expect(ready.map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('a change of shape ends the run: the frames before it are emitted, judged against their own neighbours only', () => {
    const f = new HampelFilter(5, 3, 'components');
    const ready: CsiFrame[] = [];
    [1, 1, 9].forEach((v, seq) => f.push(sample(seq, v), ready));
    expect(ready.map((r) => r.seq)).toEqual([0]);
    f.push(makeFrame({ seq: 3, nRx: 1, nTx: 1, nSub: 2, value: () => [9, 0] }), ready);
    expect(ready.map((r) => r.seq)).toEqual([0, 1, 2]);
    f.flush(ready);
    // Frame 2's spike against frames 0..2; the 2-subcarrier frame stands alone and is kept.
    expect(ready.map((r) => [...r.csi])).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
      [9, 0, 9, 0],
    ]);
  });

  it('a new subcarrier list is a new shape too', () => {
    const f = new HampelFilter(5, 3, 'components');
    const ready: CsiFrame[] = [];
    const two = (seq: number, v: number, subcarriers?: Int16Array) => makeFrame({ seq, nRx: 1, nTx: 1, nSub: 2, subcarriers, value: () => [v, 0] });
    [two(0, 1), two(1, 1), two(2, 1), two(3, 1), two(4, 9, Int16Array.of(5, 6))].forEach((fr) => f.push(fr, ready));
    f.flush(ready);
    // Within the first run, frame 4's 9 would be a spike (window 1, 1, 9); on its own list it is kept.
    expect(ready.map((r) => r.csi[0])).toEqual([1, 1, 1, 1, 9]);
  });

  it('the input frame is not written; the output is a new frame with the same metadata', () => {
    const f = new HampelFilter(3, 3, 'components');
    const ready: CsiFrame[] = [];
    const frames = [sample(0, 1), sample(1, 9), sample(2, 1)];
    frames.forEach((fr) => f.push(fr, ready));
    f.flush(ready);
    expect(frames[1]!.csi[0]).toBe(9);
    expect(ready[1]!.csi[0]).toBe(1);
    expect({ ...ready[1]!, csi: undefined }).toEqual({ ...frames[1]!, csi: undefined });
  });

  it('a frame whose arrays disagree with its shape is refused, naming the filter', () => {
    const bad = { ...sample(4, 1), nSub: 2 };
    expect(() => new HampelFilter(3, 3, 'amplitude').push(bad, [])).toThrow(/hampel: frame 4 has 2 csi values, expected 4 for 1x1x2/);
  });
});
