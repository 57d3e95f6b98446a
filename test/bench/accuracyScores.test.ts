/**
 * The scoring helpers behind the third round's accuracy figures, against values worked out by
 * hand: the Wilson interval, the pooled quantile and bootstrap over scenarios, identity F1, and the
 * benchmark's site of three receivers.
 */
import { describe, expect, it } from 'vitest';
import { BENCH_ROLE_ROTATION, fallSimOptions, recipeRadios, simulatorBends } from '../../bench/accuracy/plan.js';
import { Camera } from '../../src/pose/camera.js';
import { Rng } from '../../src/sim/rng.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { meets, NEXT_TARGETS } from '../../bench/accuracy/report.js';
import { siteLinks } from '../../src/csi/radios.js';
import { idScores, IdentityF1 } from '../../training/ts/eval/idf1.js';
import { bootstrap, partsValue, pooledQuantile, quantileParts, ratioParts, wilson } from '../../training/ts/eval/intervals.js';
import { fallScenarioPeople, FALL_ROLES, HARD_NEGATIVE_ROLES } from '../../training/ts/eval/fallScripts.js';
import { makeRecipes } from '../../training/ts/recipe.js';

describe('wilson', () => {
  it('gives the Wilson score interval (hand-computed with z = 1.96)', () => {
    // 23 of 23: centre (1 + z^2/46) / (1 + z^2/23) = 0.92845, half width 0.07156.
    const [lo, hi] = wilson(23, 23);
    expect(lo).toBeCloseTo(0.856883, 5);
    expect(hi).toBe(1);
    // 0 of 10: [0, z^2 / (n + z^2)] = [0, 3.84146 / 13.84146].
    expect(wilson(0, 10)[0]).toBe(0);
    expect(wilson(0, 10)[1]).toBeCloseTo(0.277533, 5);
    // 5 of 10: symmetric about 0.5, half width 1.41600 x sqrt(0.025 + 3.84146 / 400) = 0.26341.
    expect(wilson(5, 10)[0]).toBeCloseTo(0.236593, 5);
    expect(wilson(5, 10)[1]).toBeCloseTo(0.763407, 5);
    // 95 of 100 cannot show 0.95 with confidence: the lower end is 0.888.
    expect(wilson(95, 100)[0]).toBeCloseTo(0.88825, 4);
  });

  it('has no interval without trials and refuses impossible counts', () => {
    expect(wilson(0, 0).every(Number.isNaN)).toBe(true);
    expect(() => wilson(3, 2)).toThrow(RangeError);
    expect(() => wilson(1.5, 2)).toThrow(RangeError);
  });
});

describe('pooled quantiles and the bootstrap over scenarios', () => {
  const a = Float64Array.of(1, 2, 3);
  const b = Float64Array.of(10);

  it('takes the nearest-rank quantile of the pool with each scenario drawn as often as its weight', () => {
    // {1, 2, 3, 10}: the 2nd of 4 is the median.
    expect(pooledQuantile([a, b], [1, 1], 0.5)).toBe(2);
    // {10, 10}
    expect(pooledQuantile([a, b], [0, 2], 0.5)).toBe(10);
    // {1, 1, 2, 2, 3, 3, 10}: the 4th of 7 is the median, the 7th the 90th percentile.
    expect(pooledQuantile([a, b], [2, 1], 0.5)).toBe(2);
    expect(pooledQuantile([a, b], [2, 1], 0.9)).toBe(10);
    expect(pooledQuantile([a, b], [1, 1], 0.25)).toBe(1);
    expect(pooledQuantile([a, b], [0, 0], 0.5)).toBeNaN();
    // A value between two pooled values is never answered.
    expect(pooledQuantile([Float64Array.of(0.1, 0.7), Float64Array.of(0.3)], [1, 1], 0.5)).toBe(0.3);
  });

  it('computes ratio figures as sums over the drawn scenarios', () => {
    const parts = ratioParts([
      [9, 10],
      [5, 10],
    ]);
    expect(partsValue(parts, [1, 1])).toBeCloseTo(0.7, 12);
    expect(partsValue(parts, [2, 1])).toBeCloseTo(23 / 30, 12);
    expect(partsValue(parts, [0, 0])).toBeNaN();
  });

  it('brackets the figure, repeats exactly with its seed, and has no width when every scenario is alike', () => {
    const parts = ratioParts([
      [9, 10],
      [5, 10],
      [7, 10],
      [8, 10],
    ]);
    const ci = bootstrap(parts, 42);
    expect(ci[0]).toBeGreaterThanOrEqual(0.5);
    expect(ci[1]).toBeLessThanOrEqual(0.9);
    expect(ci[0]).toBeLessThan(0.725);
    expect(ci[1]).toBeGreaterThan(0.725);
    expect(bootstrap(parts, 42)).toEqual(ci);
    const same = bootstrap(
      ratioParts([
        [3, 4],
        [3, 4],
        [3, 4],
      ]),
      1,
    );
    expect(same).toEqual([0.75, 0.75]);
    const q = bootstrap(quantileParts([[1, 2, 3], [10], [4, 5]], 0.5), 7);
    expect(q[0]).toBeGreaterThanOrEqual(1);
    expect(q[1]).toBeLessThanOrEqual(10);
    expect(bootstrap(ratioParts([]), 1).every(Number.isNaN)).toBe(true);
  });
});

describe('IdentityF1', () => {
  it('pairs trajectories one to one for the most frames together (hand-computed)', () => {
    // Frames 1-5: A with track 1, B with track 2. Frames 6-9: the tracks swap people.
    // Overlaps A-1 5, A-2 4, B-2 5, B-1 4: the best pairing A-1, B-2 covers 10 of 18 frames each side.
    const id = new IdentityF1(0.5);
    for (let f = 0; f < 9; f++) {
      const [ha, hb] = f < 5 ? [1, 2] : [2, 1];
      id.update(
        [
          { id: 0, x: 0, y: 0 },
          { id: 1, x: 5, y: 0 },
        ],
        [
          { id: ha, x: 0.1, y: 0 },
          { id: hb, x: 5, y: 0.2 },
        ],
      );
    }
    const c = id.counts();
    expect(c).toEqual({ truths: 18, computed: 18, idtp: 10 });
    const s = idScores(c);
    expect(s.idf1).toBeCloseTo(20 / 36, 12);
    expect(s.idfn).toBe(8);
    expect(s.idfp).toBe(8);
  });

  it('counts a new track id for the same person, a track elsewhere, and frames beyond the threshold against it', () => {
    const id = new IdentityF1(0.5);
    // Person 0 for 4 frames: track 1 twice, then track 2 twice; track 3 in frame 1 is nowhere near anyone;
    // in frame 4 track 2 is 0.6 m off (beyond the threshold).
    id.update(
      [{ id: 0, x: 0, y: 0 }],
      [
        { id: 1, x: 0, y: 0 },
        { id: 3, x: 4, y: 4 },
      ],
    );
    id.update([{ id: 0, x: 0, y: 0 }], [{ id: 1, x: 0.2, y: 0 }]);
    id.update([{ id: 0, x: 0, y: 0 }], [{ id: 2, x: 0, y: 0.3 }]);
    id.update([{ id: 0, x: 0, y: 0 }], [{ id: 2, x: 0.6, y: 0 }]);
    // Truths 4, computed 5; person 0 with track 1 covers 2 frames (track 2 also 1, fewer).
    expect(id.counts()).toEqual({ truths: 4, computed: 5, idtp: 2 });
    expect(idScores(id.counts()).idf1).toBeCloseTo(4 / 9, 12);
  });

  it('is 1 when the tracks are the truth, and NaN with nothing at all', () => {
    const id = new IdentityF1(0.5);
    const people = [
      { id: 4, x: 1, y: 1 },
      { id: 9, x: 3, y: 2 },
    ];
    for (let f = 0; f < 5; f++) id.update(people, people);
    expect(idScores(id.counts()).idf1).toBe(1);
    expect(idScores(new IdentityF1(0.5).counts()).idf1).toBeNaN();
    expect(() => new IdentityF1(0)).toThrow(RangeError);
  });
});

describe('the benchmark plan', () => {
  it('puts three receivers in each held-out room: the recipe own receiver first, one on each side wall', () => {
    for (const r of makeRecipes(4242, { train: 0, val: 0, test: 12, seconds: 1 })) {
      const radios = recipeRadios(r);
      const links = siteLinks(radios);
      expect(links.map((l) => l.id)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
      const [tx, rx1, rx2, rx3] = radios;
      expect([tx!.x, tx!.y, tx!.z]).toEqual([r.tx.x, r.tx.y, r.tx.z]);
      expect([rx1!.x, rx1!.y, rx1!.z, rx1!.yaw_deg]).toEqual([r.rx.x, r.rx.y, r.rx.z, 90]);
      expect(rx2!.x).toBeCloseTo(0.2, 12);
      expect(rx3!.x).toBeCloseTo(r.room.width - 0.2, 12);
      expect([rx2!.yaw_deg, rx3!.yaw_deg]).toEqual([0, 180]);
      // Never next to a transmitter on the same wall.
      for (const rx of [rx2!, rx3!]) expect(Math.hypot(rx.x - tx!.x, rx.y - tx!.y)).toBeGreaterThan(0.25 * r.room.depth);
      expect(radios.every((x) => x.antennas === (x.role === 'tx' ? r.nTx : r.nRx))).toBe(true);
    }
  });

  it('rotates two falls in three with hard negatives, and knows the next issue targets', () => {
    const falls = BENCH_ROLE_ROTATION.filter((x) => FALL_ROLES.includes(x)).length;
    expect(falls / BENCH_ROLE_ROTATION.length).toBeCloseTo(2 / 3, 12);
    expect(BENCH_ROLE_ROTATION.filter((x) => !FALL_ROLES.includes(x)).every((x) => HARD_NEGATIVE_ROLES.includes(x))).toBe(true);
    expect(NEXT_TARGETS['floor_median_m.one']).toEqual({ unseen: '<= 0.25', room: '<= 0.10', unseen1: '<= 0.35' });
    expect(meets(0.2, '<= 0.25')).toBe(true);
    expect(meets(0.3, '<= 0.25')).toBe(false);
    expect(meets(0.95, '>= 0.95')).toBe(true);
    expect(meets(NaN, '>= 0.95')).toBeNull();
    expect(meets(1, undefined)).toBeNull();
  });

  it('scripts a bend as a hard negative: the head goes down and up again, and nobody falls', () => {
    expect(simulatorBends()).toBe(true);
    const recipe = makeRecipes(4242, { train: 0, val: 0, test: 1, seconds: 16 })[0]!;
    const [p] = fallScenarioPeople(recipe.room, new Rng(3), 'walk_bend', 0, new Camera(recipe.camera));
    expect(p!.role).toBe('walk_bend');
    expect(p!.fallAt).toBeNull();
    const at = p!.negativeAt!;
    expect(at).toBeGreaterThan(2);
    const sim = new CsiSimulator(fallSimOptions(recipe, [p!]));
    let t0 = NaN;
    let standingHead = NaN;
    let lowest = Infinity;
    let falls = 0;
    let last = NaN;
    for (let i = 0; i < Math.round((at + 5) * sim.rateHz); i++) {
      const { truth } = sim.next();
      if (Number.isNaN(t0)) t0 = truth.time;
      falls += truth.events.filter((e) => e.type === 'fall_start').length;
      const head = truth.persons[0]!.keypoints3d[2]!;
      last = head;
      const t = (truth.time - t0) / 1000;
      if (t < at - 0.2) standingHead = head;
      else lowest = Math.min(lowest, head);
    }
    expect(standingHead - lowest).toBeGreaterThan(0.3);
    // Bent for at most BEND_SECONDS[1] = 3 s: upright again 5 s after the bend began.
    expect(Math.abs(last - standingHead)).toBeLessThan(0.05);
    expect(falls).toBe(0);
  });
});
