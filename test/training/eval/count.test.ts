import { describe, expect, it } from 'vitest';
import { addConfusion, addCount, countScores, emptyConfusion } from '../../../training/ts/eval/count.js';

describe('person count accuracy', () => {
  it('counts exact frames overall and per true count', () => {
    const m = emptyConfusion();
    addCount(m, 1, 1);
    addCount(m, 1, 1);
    addCount(m, 1, 2);
    addCount(m, 3, 3);
    addCount(m, 3, 2);
    addCount(m, 0, 0);
    const s = countScores(m);
    expect(s.frames).toBe(6);
    expect(s.exact).toBeCloseTo(4 / 6, 12);
    expect(s.exactByTrue[0]).toBe(1);
    expect(s.exactByTrue[1]).toBeCloseTo(2 / 3, 12);
    expect(s.exactByTrue[2]).toBeNaN();
    expect(s.exactByTrue[3]).toBe(0.5);
    expect(s.framesByTrue).toEqual([1, 3, 0, 2, 0]);
    expect(m[1]).toEqual([0, 2, 1, 0, 0, 0]);
  });

  it('puts 5 or more reported persons in the last column, never exact', () => {
    const m = emptyConfusion();
    addCount(m, 4, 7);
    addCount(m, 4, 5);
    expect(m[4]).toEqual([0, 0, 0, 0, 0, 2]);
    expect(countScores(m).exact).toBe(0);
  });

  it('adds matrices', () => {
    const a = emptyConfusion();
    const b = emptyConfusion();
    addCount(a, 2, 2);
    addCount(b, 2, 2);
    addCount(b, 2, 1);
    addConfusion(a, b);
    expect(a[2]).toEqual([0, 1, 2, 0, 0, 0]);
    expect(countScores(a).exact).toBeCloseTo(2 / 3, 12);
  });

  it('an empty matrix has no score', () => {
    expect(countScores(emptyConfusion()).exact).toBeNaN();
  });

  it('refuses impossible counts', () => {
    expect(() => addCount(emptyConfusion(), 5, 1)).toThrow(RangeError);
    expect(() => addCount(emptyConfusion(), 1, -1)).toThrow(RangeError);
    expect(() => addCount(emptyConfusion(), 1.5, 1)).toThrow(RangeError);
  });
});
