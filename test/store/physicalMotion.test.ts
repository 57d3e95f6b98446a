/**
 * The figures derived from tracks are physical (issue 18 item 5): two people who stay still for
 * 10 minutes (one lying, one standing), seen as a v2 model sees them (floor positions with the
 * shipped model's measured floor error, `floorErrorProcess` of training/ts/study/speed.ts, from
 * fixed seeds; an activity head that is right), through the real track -> activity -> alerts
 * operators and the real PoseSink into a real DuckDB file (test/helpers/truthStore.ts). Their
 * stored tracks move no distance and spend no time moving; the mobility score counts no movement.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthcare, retail, summary, type AnalyticsRange } from '../../src/store/analytics/index.js';
import { trackRecord } from '../../src/store/history.js';
import type { Store } from '../../src/store/store.js';
import { Rng } from '../../src/sim/rng.js';
import { floorErrorProcess } from '../../training/ts/study/speed.js';
import { tempStore, writeTruthRun, type ScriptedPerson, type TruthRun } from '../helpers/truthStore.js';

/** A Monday, 12:00 UTC. */
const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const SECONDS = 600;
const range: AnalyticsRange = { environmentId: 'still', start: T0, end: T0 + SECONDS * 1000 };

/** Lying still at (1.4, 3.6); standing still at (4.2, 5.0), 2.9 m away. */
const PEOPLE: ScriptedPerson[] = [
  { spec: { height: 1.7, x: 1.4, y: 3.6, heading: 0, activity: 'lying', script: [] } },
  { spec: { height: 1.75, x: 4.2, y: 5.0, heading: 0, activity: 'standing', script: [] } },
];

let ctx: { store: Store; close: () => Promise<void> };
let run: TruthRun;

beforeAll(async () => {
  ctx = await tempStore();
  run = await writeTruthRun(ctx.store, {
    people: PEOPLE,
    seconds: SECONDS,
    startMs: T0,
    environmentId: 'still',
    floorError: [floorErrorProcess(new Rng(101)), floorErrorProcess(new Rng(202))],
    modelActivity: true,
  });
});

afterAll(async () => {
  await ctx?.close();
});

describe('still people seen through the model floor error', () => {
  it('each keeps one track (2 unique persons, 2 visitors)', async () => {
    expect([...run.tracksOf.values()].map((s) => s.size)).toEqual([1, 1]);
    const s = await summary(ctx.store, range, 'hour', range.end);
    expect(s.detection_stats.unique_persons).toBe(2);
    const r = await retail(ctx.store, range, { zones: [], funnel: { entrance: '', product_interaction: '', checkout_area: '', purchase: '' } }, ['traffic']);
    expect(r.traffic!.total_visitors).toBe(2);
  });

  it('their stored tracks: no distance, no time moving, all the time stationary', async () => {
    for (const set of run.tracksOf.values()) {
      const [id] = [...set];
      const rec = await trackRecord(ctx.store, 'still', id!, { from: range.start, to: range.end });
      expect(rec!.distanceUnit).toBe('m');
      // As it was (raw stored floor positions): hundreds of metres, most of the time moving.
      expect(rec!.movementDistance).toBeLessThan(1);
      expect(rec!.timeMoving).toBeLessThan(5);
      expect(rec!.timeStationary).toBeGreaterThan(SECONDS - 6);
      expect(rec!.averageSpeed).toBeLessThan(0.002);
    }
  });

  it('mobility_score counts no movement: 50 x the upright share (one of two standing) and nothing for moving', async () => {
    const h = await healthcare(ctx.store, range, ['activity_summary', 'mobility_score']);
    expect(h.activity_summary!.walking_minutes).toBe(0);
    expect(h.activity_summary!.lying_minutes).toBeGreaterThan(9.9);
    expect(h.activity_summary!.standing_minutes).toBeGreaterThan(9.9);
    // As it was: about 25 + 50 x 0.8 = 65 (the jitter read as movement most of the time).
    expect(h.mobility_score).toBe(25);
  });
});
