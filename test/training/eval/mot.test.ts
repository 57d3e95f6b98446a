import { describe, expect, it } from 'vitest';
import { addMotTotals, boxCentre, ClearMot, emptyMotTotals, motScores, type MotPoint } from '../../../training/ts/eval/mot.js';

const pt = (id: number, x: number, y = 100): MotPoint => ({ id, x, y });

describe('ClearMot', () => {
  it('perfect tracking: MOTA 1, no switches, MOTP 0', () => {
    const mot = new ClearMot(64);
    for (let f = 0; f < 5; f++) mot.update([pt(0, 100 + f), pt(1, 400 - f)], [pt(7, 100 + f), pt(8, 400 - f)]);
    const s = motScores(mot.totals);
    expect(s.mota).toBe(1);
    expect(s.switches).toBe(0);
    expect(s.motp).toBe(0);
    expect(mot.totals.objects).toBe(10);
  });

  it('a track whose id flips once is one identity switch', () => {
    const mot = new ClearMot(64);
    mot.update([pt(0, 100)], [pt(7, 102)]);
    mot.update([pt(0, 105)], [pt(7, 106)]);
    const f = mot.update([pt(0, 110)], [pt(9, 111)]);
    mot.update([pt(0, 115)], [pt(9, 115)]);
    expect(f.switches).toBe(1);
    expect(mot.totals.switches).toBe(1);
    expect(motScores(mot.totals).mota).toBe(1 - 1 / 4);
    expect(mot.objectOf(9)).toBe(0);
  });

  it('two tracks that swap identities are two switches', () => {
    const mot = new ClearMot(64);
    mot.update([pt(0, 100), pt(1, 400)], [pt(7, 100), pt(8, 400)]);
    const f = mot.update([pt(0, 100), pt(1, 400)], [pt(8, 100), pt(7, 400)]);
    expect(f.switches).toBe(2);
    expect(motScores(mot.totals).mota).toBe(1 - 2 / 4);
  });

  it('a hypothesis beyond the threshold is a miss plus a false positive; exactly at it is a match', () => {
    const far = new ClearMot(64);
    const f = far.update([pt(0, 100)], [pt(7, 164.5)]);
    expect([f.misses, f.falsePositives, f.matches.length]).toEqual([1, 1, 0]);
    expect(motScores(far.totals).mota).toBe(-1);
    const at = new ClearMot(64);
    const g = at.update([pt(0, 100)], [pt(7, 164)]);
    expect([g.misses, g.falsePositives, g.matches.length]).toEqual([0, 0, 1]);
    expect(motScores(at.totals).motp).toBe(64);
  });

  it('keeps a still-valid correspondence even when another hypothesis is closer', () => {
    const mot = new ClearMot(64);
    mot.update([pt(0, 100)], [pt(7, 110)]);
    const f = mot.update([pt(0, 100)], [pt(9, 101), pt(7, 110)]);
    expect(f.matches).toEqual([[0, 7]]);
    expect(f.switches).toBe(0);
    expect(f.falsePositives).toBe(1);
  });

  it('counts a switch when an object comes back under a new id after being missed', () => {
    const mot = new ClearMot(64);
    mot.update([pt(0, 100)], [pt(7, 100)]);
    mot.update([pt(0, 100)], []);
    const f = mot.update([pt(0, 100)], [pt(9, 100)]);
    expect(f.switches).toBe(1);
    const t = mot.totals;
    expect([t.objects, t.misses, t.falsePositives, t.switches]).toEqual([3, 1, 0, 1]);
    expect(motScores(t).mota).toBeCloseTo(1 - 2 / 3, 12);
  });

  it('does not count a switch when the same id comes back', () => {
    const mot = new ClearMot(64);
    mot.update([pt(0, 100)], [pt(7, 100)]);
    mot.update([pt(0, 100)], []);
    expect(mot.update([pt(0, 100)], [pt(7, 100)]).switches).toBe(0);
  });

  it('forgives up to `ignored` spare hypotheses (people without a box)', () => {
    const mot = new ClearMot(64);
    const f = mot.update([pt(0, 100)], [pt(7, 100), pt(8, 500), pt(9, 600)], 1);
    expect(f.falsePositives).toBe(1);
    expect(mot.update([], [pt(8, 500)], 2).falsePositives).toBe(0);
  });

  it('pairs optimally among new candidates', () => {
    const mot = new ClearMot(64);
    // Greedy would give object 0 to hypothesis 8 (distance 10) and leave object 1 unmatched.
    const f = mot.update([pt(0, 100), pt(1, 150)], [pt(8, 110), pt(7, 60)]);
    expect(f.matches.sort()).toEqual([
      [0, 7],
      [1, 8],
    ]);
    expect(f.misses + f.falsePositives).toBe(0);
  });

  it('never pairs a NaN box', () => {
    const mot = new ClearMot(64);
    const f = mot.update([pt(0, 100)], [pt(7, NaN)]);
    expect([f.misses, f.falsePositives]).toEqual([1, 1]);
  });

  it('refuses a non-positive threshold', () => {
    expect(() => new ClearMot(0)).toThrow(RangeError);
  });
});

describe('motScores / addMotTotals / boxCentre', () => {
  it('sums sequences before dividing', () => {
    const a = new ClearMot(64);
    a.update([pt(0, 100)], [pt(7, 100)]);
    const b = new ClearMot(64);
    b.update([pt(0, 100), pt(1, 300)], []);
    const t = addMotTotals(addMotTotals(emptyMotTotals(), a.totals), b.totals);
    expect(motScores(t).mota).toBeCloseTo(1 - 2 / 3, 12);
    expect(motScores(emptyMotTotals()).mota).toBeNaN();
  });

  it('boxCentre is the middle of x, y, w, h', () => {
    expect(boxCentre(3, [10, 20, 30, 40])).toEqual({ id: 3, x: 25, y: 40 });
  });
});
