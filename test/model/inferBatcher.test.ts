import { describe, expect, it } from 'vitest';
import { InferBatcher } from '../../src/model/inferBatcher.js';

/** A batcher of numbers with `rows` pushed at the given clock times. */
function filled(times: number[], maxQueue = 1000, stats = { dropped: 0 }): InferBatcher<number> {
  const b = new InferBatcher<number>(stats);
  times.forEach((t, i) => b.push(i, t, maxQueue));
  return b;
}

describe('InferBatcher: the bound', () => {
  it.each([
    { name: 'under the bound nothing goes', pushes: 3, maxQueue: 3, dropped: 0, kept: [0, 1, 2] },
    { name: 'one past the bound drops the oldest', pushes: 4, maxQueue: 3, dropped: 1, kept: [1, 2, 3] },
    { name: 'a burst keeps only the newest', pushes: 10, maxQueue: 3, dropped: 7, kept: [7, 8, 9] },
    { name: 'a bound of 1 keeps the last row', pushes: 5, maxQueue: 1, dropped: 4, kept: [4] },
  ])('$name', ({ pushes, maxQueue, dropped, kept }) => {
    const stats = { dropped: 0 };
    const b = new InferBatcher<number>(stats);
    const perPush = Array.from({ length: pushes }, (_, i) => b.push(i, i, maxQueue));
    expect(stats.dropped).toBe(dropped);
    expect(perPush.reduce((a, n) => a + n, 0)).toBe(dropped);
    expect(b.length).toBe(kept.length);
    expect(b.take(100)).toEqual(kept);
  });

  it('adds to the drops already counted (the stats object is the stage figures)', () => {
    const stats = { dropped: 5 };
    filled([0, 0, 0], 2, stats);
    expect(stats.dropped).toBe(6);
  });

  it('clears without counting drops', () => {
    const stats = { dropped: 0 };
    const b = filled([0, 1, 2], 10, stats);
    b.clear();
    expect(b.length).toBe(0);
    expect(stats.dropped).toBe(0);
    expect(b.dueAt(5)).toBe(Infinity);
  });
});

describe('InferBatcher: when a batch is due', () => {
  // Rows pushed at `times`; `due` asked at `now` with batch size 3 and a wait of 5.
  const rule = { batchSize: 3, maxWaitMs: 5 };
  it.each([
    { name: 'nothing waits', times: [], now: 100, flush: false, due: 0 },
    { name: 'a partial batch before its wait', times: [10, 12], now: 14, flush: false, due: 0 },
    { name: 'a partial batch one tick before its wait', times: [10, 12], now: 14.999, flush: false, due: 0 },
    { name: 'a partial batch once the oldest has waited maxWaitMs', times: [10, 12], now: 15, flush: false, due: 2 },
    { name: 'a full batch at once', times: [10, 11, 12], now: 12, flush: false, due: 3 },
    { name: 'more than a batch: cut at batchSize', times: [10, 10, 10, 10, 10], now: 10, flush: false, due: 3 },
    { name: 'more than a batch after the wait: still cut at batchSize', times: [0, 1, 2, 3, 4, 5, 6], now: 50, flush: false, due: 3 },
    { name: 'the source done: a partial batch at once', times: [10], now: 10, flush: true, due: 1 },
  ])('$name', ({ times, now, flush, due }) => {
    expect(filled(times).due(now, rule, flush)).toBe(due);
  });

  it('the wait counts from the oldest row still queued', () => {
    const b = filled([10, 20, 30]);
    expect(b.dueAt(5)).toBe(15);
    b.take(1);
    expect(b.dueAt(5)).toBe(25);
    expect(b.due(24, { batchSize: 32, maxWaitMs: 5 })).toBe(0);
    expect(b.due(25, { batchSize: 32, maxWaitMs: 5 })).toBe(2);
    // Dropping the oldest moves the wait too.
    b.push(99, 40, 2);
    expect(b.dueAt(5)).toBe(35);
  });

  it('a wait of 0 makes any row due at once', () => {
    expect(filled([7]).due(7, { batchSize: 32, maxWaitMs: 0 })).toBe(1);
  });
});

describe('InferBatcher: the ring', () => {
  it('keeps order and enqueue times through growth and wrap-around', () => {
    const b = new InferBatcher<number>();
    let next = 0;
    let expected = 0;
    // Interleave pushes and takes so that the head wraps before and after the ring doubles (16 -> 32 -> 64).
    for (const [push, take] of [
      [10, 6],
      [12, 4],
      [30, 20],
      [40, 62],
    ]) {
      for (let i = 0; i < push!; i++, next++) b.push(next, 1000 + next, 1000);
      if (b.length > 0) expect(b.dueAt(0)).toBe(1000 + expected);
      const got = b.take(take!);
      expect(got).toEqual(Array.from({ length: got.length }, (_, i) => expected + i));
      expected += got.length;
    }
    expect(expected).toBe(next);
    expect(b.length).toBe(0);
  });

  it('take gives fewer rows when fewer wait', () => {
    const b = filled([0, 0]);
    expect(b.take(5)).toEqual([0, 1]);
    expect(b.take(5)).toEqual([]);
  });
});
