import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { conflate, latestWins, spec, type ConflateStats } from '../../operators/conflate.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

describe('latestWins', () => {
  it('runs one inner at a time and then only the latest value that arrived meanwhile, counting drops', () => {
    const dropped: string[] = [];
    const stats: ConflateStats = { dropped: 0 };
    testScheduler().run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-bc-d----------|');
      const inner = (v: string) => cold('---x|', { x: v });
      const expected = ' ----a---c---d----|';
      expectObservable(src.pipe(latestWins(inner, { onDrop: (d) => dropped.push(d), stats }))).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^----------------!');
    });
    expect(dropped).toEqual(['b']);
    expect(stats.dropped).toBe(1);
  });

  it('waits for the active inner and the pending value before completing', () => {
    testScheduler().run(({ hot, cold, expectObservable }) => {
      const src = hot('  -a-b|     ');
      const inner = (v: string) => cold('---x|', { x: v });
      const expected = ' ----a---b|';
      expectObservable(src.pipe(latestWins(inner))).toBe(expected);
    });
  });

  it('propagates errors from the source while an inner is active', () => {
    testScheduler().run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-#');
      const inner = cold('  ---x|');
      const expected = ' ---#';
      expectObservable(src.pipe(latestWins(() => inner))).toBe(expected);
      expectSubscriptions(inner.subscriptions).toBe('-^-!');
    });
  });

  it('propagates errors from an inner, and from project', () => {
    testScheduler().run(({ hot, cold, expectObservable }) => {
      const src = hot('  -a---b---|');
      const inner = cold('  -#');
      const expected = ' --#';
      expectObservable(src.pipe(latestWins(() => inner))).toBe(expected);
      const throwing = latestWins<string, string>((v) => {
        if (v === 'b') throw new Error('bad b');
        return of(v);
      });
      expectObservable(src.pipe(throwing)).toBe(' -a---#', { a: 'a' }, new Error('bad b'));
    });
  });

  it('unsubscribes early, from the source and the active inner', () => {
    testScheduler().run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-b-c-d-e-|');
      const inner = cold('  ----x|');
      const unsub = '    ^-------!   ';
      const expected = ' -----x--    ';
      expectObservable(src.pipe(latestWins(() => inner)), unsub).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^-------!   ');
      expectSubscriptions(inner.subscriptions).toBe(['-^----!     ', '------^-!   ']);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-b-c-d-e-|');
      const inner = cold('  ----x|');
      const unsub = '    ^-------!   ';
      const expected = ' -----x--    ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        latestWins(() => inner),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^-------!   ');
      expectSubscriptions(inner.subscriptions).toBe(['-^----!     ', '------^-!   ']);
    });
  });

  it('handles synchronous inners without dropping anything', async () => {
    const stats: ConflateStats = { dropped: 0 };
    const out = await lastValueFrom(
      from([1, 2, 3]).pipe(
        latestWins((v) => of(v * 10, v * 10 + 1), { stats }),
        toArray(),
      ),
    );
    expect(out).toEqual([10, 11, 20, 21, 30, 31]);
    expect(stats.dropped).toBe(0);
  });

  it('with a promise per value: runs the first, then only the newest of a burst', async () => {
    const dropped: number[] = [];
    const out = await lastValueFrom(
      from([1, 2, 3, 4]).pipe(
        latestWins((v) => Promise.resolve(v), { onDrop: (d) => dropped.push(d) }),
        toArray(),
      ),
    );
    expect(out).toEqual([1, 4]);
    expect(dropped).toEqual([2, 3]);
  });
});

describe('conflate', () => {
  it('emits at once after a quiet spell, then at most one value, the latest, per interval; counts drops', () => {
    const ts = testScheduler();
    const dropped: string[] = [];
    const stats: ConflateStats = { dropped: 0 };
    ts.run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('  -abc-----d-e-|');
      const expected = ' -a--c----d--e|';
      expectObservable(src.pipe(conflate({ intervalMs: 3, scheduler: ts, onDrop: (d) => dropped.push(d), stats }))).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^------------!');
    });
    expect(dropped).toEqual(['b']);
    expect(stats.dropped).toBe(1);
  });

  it('emits the last pending value at the end of the interval, then completes', () => {
    const ts = testScheduler();
    ts.run(({ hot, expectObservable }) => {
      const src = hot('  -ab|    ');
      const expected = ' -a--(b|)';
      expectObservable(src.pipe(conflate({ intervalMs: 3, scheduler: ts }))).toBe(expected);
    });
  });

  it('completes at once when nothing is pending, even inside an interval', () => {
    const ts = testScheduler();
    ts.run(({ hot, expectObservable }) => {
      const src = hot('  -a|');
      const expected = ' -a|';
      expectObservable(src.pipe(conflate({ intervalMs: 5, scheduler: ts }))).toBe(expected);
    });
  });

  it('with intervalMs 0 collapses a synchronous burst to its first and last values', () => {
    const ts = testScheduler();
    const stats: ConflateStats = { dropped: 0 };
    ts.run(({ hot, expectObservable }) => {
      const src = hot('  -(abc)--d-|');
      const expected = ' -(ac)---d-|';
      expectObservable(src.pipe(conflate({ scheduler: ts, stats }))).toBe(expected);
    });
    expect(stats.dropped).toBe(1);
  });

  it('propagates errors, discarding a pending value', () => {
    const ts = testScheduler();
    ts.run(({ hot, expectObservable }) => {
      const src = hot('  -ab#');
      const expected = ' -a-#';
      expectObservable(src.pipe(conflate({ intervalMs: 3, scheduler: ts }))).toBe(expected);
    });
  });

  it('unsubscribes early', () => {
    const ts = testScheduler();
    ts.run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-b-c-d-|');
      const unsub = '    ^-----!   ';
      const expected = ' -a--b-    ';
      expectObservable(src.pipe(conflate({ intervalMs: 3, scheduler: ts })), unsub).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^-----!   ');
    });
  });

  it('does not break the unsubscription chain', () => {
    const ts = testScheduler();
    ts.run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('  -a-b-c-d-|');
      const unsub = '    ^-----!   ';
      const expected = ' -a--b-    ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        conflate({ intervalMs: 3, scheduler: ts }),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe(expected);
      expectSubscriptions(src.subscriptions).toBe('^-----!   ');
    });
  });

  it('uses asyncScheduler by default: a synchronous source yields its first and last values', async () => {
    const dropped: number[] = [];
    const out = await lastValueFrom(from([1, 2, 3, 4]).pipe(conflate({ onDrop: (d) => dropped.push(d) }), toArray()));
    expect(out).toEqual([1, 4]);
    expect(dropped).toEqual([2, 3]);
  });

  it('has a spec that takes the context scheduler', () => {
    expect(spec.name).toBe('conflate');
    expect(spec.input).toBe('any');
    expect(spec.output).toBe('any');
    expect(spec.params.map((p) => [p.name, p.default])).toEqual([['intervalMs', 0]]);
    const ts = testScheduler();
    ts.run(({ hot, expectObservable }) => {
      const src = hot('  -abc-----d-e-|');
      const expected = ' -a--c----d--e|';
      expectObservable(src.pipe(spec.create({ intervalMs: 3 }, { scheduler: ts }))).toBe(expected);
    });
  });

  it('rejects a bad interval at creation', () => {
    expect(() => conflate({ intervalMs: -1 })).toThrow(RangeError);
    expect(() => conflate({ intervalMs: Infinity })).toThrow(RangeError);
  });
});
