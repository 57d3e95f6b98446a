/**
 * The analytics figures (src/store/analytics/) on stores whose content is known: scripted people
 * from the simulator's scenario engine, seen as ground truth (no CSI, no model) at the live cadence
 * of 12.5 frames/s, through the real track -> activity -> alerts operators and the real PoseSink
 * into a real DuckDB file (test/helpers/truthStore.ts).
 *
 * Each figure is checked twice: against the script (the answer known in advance, within a
 * tolerance the cadence and the operators' labelling explain), and where it is a computation over
 * stored rows, exactly against the definition of docs/analytics.md recomputed in JS from the same
 * rows (which checks the SQL itself: windows, holds, point-in-polygon, schedules).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANALYTICS_SQL,
  HOLD_CAP_SECONDS,
  MOVING_SPEED,
  events,
  healthcare,
  mobilityScore,
  occupancy,
  retail,
  security,
  summary,
  type AnalyticsRange,
  type EventOut,
  type FunnelZones,
} from '../../src/store/analytics/index.js';
import { compileSchedule, compileZone, inZone, pointInPolygon, scheduleActive, type ZoneConfig } from '../../src/pose/zones.js';
import { PoseSink } from '../../src/store/poseSink.js';
import type { Store } from '../../src/store/store.js';
import type { PersonPose } from '../../src/pose/types.js';
import { careScenario, fallPeople, FRAME_MS, shopScenario, tempStore, writeTruthRun, type TruthRun } from '../helpers/truthStore.js';

/** A Monday, 12:00 UTC. */
const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const MIN = 60_000;
const HOUR = 3_600_000;
/** One frame interval, seconds. */
const FRAME_S = FRAME_MS / 1000;
/** Frames a new track needs before it is reported (detection.tracking_min_hits default). */
const MIN_HITS = 3;

const shop = shopScenario();
const care = careScenario();
const FUNNEL: FunnelZones = { entrance: 'E', product_interaction: 'A', checkout_area: '', purchase: 'C' };
const shopRange: AnalyticsRange = { environmentId: 'shop', start: T0, end: T0 + HOUR };
const careRange: AnalyticsRange = { environmentId: 'care', start: T0, end: T0 + care.seconds * 1000 };

let ctx: { store: Store; close: () => Promise<void> };
let shopRun: TruthRun;
let fallUp: TruthRun;
let fallDown: TruthRun;

beforeAll(async () => {
  ctx = await tempStore();
  const store = ctx.store;
  shopRun = await writeTruthRun(store, { people: shop.people, seconds: shop.seconds, startMs: T0, environmentId: 'shop', alerts: { zones: shop.zones } });
  await writeTruthRun(store, { people: care.people, seconds: care.seconds, startMs: T0, environmentId: 'care' });
  // The golden fall scenarios: falls, is alerted and gets up; falls and stays down (high, then critical).
  fallUp = await writeTruthRun(store, { people: fallPeople(1, 'fall_get_up', 2), seconds: 25, startMs: T0 + 40 * MIN, environmentId: 'care', seed: 1 });
  fallDown = await writeTruthRun(store, { people: fallPeople(4, 'walk_fall', 1), seconds: 25, startMs: T0 + 45 * MIN, environmentId: 'care', seed: 4 });
  // The service's metrics sampler: one row every 10 s for the first 30 minutes of the hour.
  for (let i = 0; i < 180; i++) {
    await store.recordMetrics({
      time: T0 + i * 10_000 + 3,
      framesPerSecond: 100,
      averageLatencyMs: 20,
      cpuUsage: 10,
      memoryUsage: 5,
      processingQueueSize: 0,
      errorRate: 0,
      activePersons: 2,
    });
  }
});

afterAll(async () => {
  await ctx?.close();
});

// ---------------------------------------------------------------------------------------------
// The definitions of docs/analytics.md, recomputed in JS from the stored rows
// ---------------------------------------------------------------------------------------------

interface StoredRow {
  track: number;
  us: number;
  activity: string | null;
  fx: number | null;
  fy: number | null;
  speed: number | null;
  hold: number;
}

/** The tracked person rows of a range, each with the seconds it holds (until the track's next row, capped). */
async function storedRows(store: Store, r: AnalyticsRange): Promise<StoredRow[]> {
  const rows = await store.query(
    `SELECT track_id, epoch_us(ts) AS us, activity, floor_x, floor_y, velocity_x, velocity_y FROM pose_persons
     WHERE environment_id = ? AND ts >= ? AND ts < ? AND track_id IS NOT NULL ORDER BY track_id, ts`,
    [r.environmentId, new Date(r.start), new Date(r.end)],
  );
  const out: StoredRow[] = rows.map((x) => ({
    track: x.track_id as number,
    us: x.us as number,
    activity: x.activity as string | null,
    fx: x.floor_x as number | null,
    fy: x.floor_y as number | null,
    speed: x.floor_x !== null && x.velocity_x !== null ? Math.hypot(x.velocity_x as number, x.velocity_y as number) : null,
    hold: 0,
  }));
  for (let i = 0; i < out.length; i++) {
    const next = out[i + 1];
    out[i]!.hold = next && next.track === out[i]!.track ? Math.min((next.us - out[i]!.us) / 1e6, HOLD_CAP_SECONDS) : 0;
  }
  return out;
}

function activitySeconds(rows: StoredRow[]): Record<string, number> {
  const s: Record<string, number> = { walking: 0, sitting: 0, lying: 0, standing: 0, falling: 0, labelled: 0, moving: 0 };
  for (const r of rows) {
    if (r.activity === null) continue;
    s[r.activity] = (s[r.activity] ?? 0) + r.hold;
    s.labelled! += r.hold;
    if (r.speed !== null && r.speed >= MOVING_SPEED) s.moving! += r.hold;
  }
  return s;
}

/** Per zone: tracks with a row inside, and person-seconds inside (even-odd rule of src/pose/zones.ts). */
function zoneFigures(rows: StoredRow[], zones: ZoneConfig[]): Map<string, { tracks: Set<number>; seconds: number }> {
  const out = new Map<string, { tracks: Set<number>; seconds: number }>();
  for (const z of zones.map(compileZone)) {
    const f = { tracks: new Set<number>(), seconds: 0 };
    for (const r of rows) {
      if (r.fx === null || r.fy === null || !inZone(z, r.fx, r.fy)) continue;
      f.tracks.add(r.track);
      f.seconds += r.hold;
    }
    out.set(z.id, f);
  }
  return out;
}

/** Seconds a scripted person's TRUE floor position was inside a polygon (one frame interval per frame). */
function truthSecondsInside(run: TruthRun, person: number, polygon: Array<[number, number]>): number {
  const flat = polygon.flat();
  let n = 0;
  for (const frame of run.sightings) for (const s of frame) if (s.person === person && pointInPolygon(s.x, s.y, flat)) n++;
  return n * FRAME_S;
}

/** The first frame time at or after `from` at which a scripted person is seen outside a polygon. */
function truthLeaves(run: TruthRun, person: number, polygon: Array<[number, number]>, from: number): number | null {
  const flat = polygon.flat();
  for (let k = 0; k < run.times.length; k++) {
    if (run.times[k]! <= from) continue;
    const s = run.sightings[k]!.find((x) => x.person === person);
    if (s && !pointInPolygon(s.x, s.y, flat)) return run.times[k]!;
  }
  return null;
}

const zoneOf = (id: string) => shop.zones.find((z) => z.id === id)!;

// ---------------------------------------------------------------------------------------------
// Healthcare
// ---------------------------------------------------------------------------------------------

describe('healthcare', () => {
  it('fall_events: one fall with a recovery (high; response = fall to up again), one without (critical; response 0, no recovery)', async () => {
    const h = await healthcare(ctx.store, { environmentId: 'care', start: T0, end: T0 + HOUR }, ['fall_events']);
    expect(Object.keys(h)).toEqual(['fall_events']);
    expect(h.fall_events!.count).toBe(2);
    const [up, down] = h.fall_events!.events;

    // Truth of the first scenario: person 0 falls, lies, gets up.
    const start = fallUp.truthEvents.find((e) => e.type === 'fall_start' && e.person === 0)!.time;
    const upAgain = fallUp.truthEvents.find((e) => e.type === 'activity_change' && e.person === 0 && e.activity === 'standing' && e.time > start)!.time;
    const track = [...fallUp.tracksOf.get(0)!][0]!;
    expect(up!.person_id).toBe(track);
    expect(up!.track_id).toBe(track);
    expect(up!.severity).toBe('high');
    // The fall is reported on its first `falling` frame, after the truth's onset (the activity
    // operator needs the fast descent in its history): within a second.
    const fallTime = Date.parse(up!.timestamp!);
    expect(fallTime).toBeGreaterThanOrEqual(start);
    expect(fallTime - start).toBeLessThanOrEqual(1000);
    // Both ends are labelled by the activity operator, each within about a second of the truth.
    expect(Math.abs(up!.response_time_seconds - (upAgain - start) / 1000)).toBeLessThanOrEqual(1.5);
    expect(up!.recovery_detected).toBe(true);
    // Where the person lay (truth floor position at the end of the fall).
    const landed = fallUp.truthEvents.find((e) => e.type === 'fall_end' && e.person === 0)!.time;
    const k = fallUp.times.findIndex((t) => t >= landed);
    const lay = fallUp.sightings[k]!.find((s) => s.person === 0)!;
    expect(Math.hypot(up!.location!.x - lay.x, up!.location!.y - lay.y)).toBeLessThan(0.5);

    // The second scenario: person 0 falls and stays down: high then critical alerts, one fall.
    expect(down!.person_id).toBe([...fallDown.tracksOf.get(0)!][0]);
    expect(down!.severity).toBe('critical');
    expect(down!.response_time_seconds).toBe(0);
    expect(down!.recovery_detected).toBe(false);
    expect(fallDown.alerts.filter((a) => a.type === 'fall_detection').map((a) => a.severity)).toEqual(['high', 'critical']);
  });

  it('fall_events: a range without the falls counts none', async () => {
    const h = await healthcare(ctx.store, { environmentId: 'care', start: T0, end: T0 + 40 * MIN }, ['fall_events']);
    expect(h.fall_events).toEqual({ count: 0, events: [] });
  });

  it('activity_summary: 26 min lying still, and 12 + 13 min lying around 1 min standing', async () => {
    const h = await healthcare(ctx.store, careRange, ['activity_summary']);
    const a = h.activity_summary!;
    // Script: person 0 lies 26 min; person 1 lies 12, stands 1, lies 13 (the getting up and lying
    // down motions are labelled by the operator within a few seconds of the script's switch).
    const tol = 10 / 60;
    expect(Math.abs(a.lying_minutes - (26 + 12 + 13))).toBeLessThanOrEqual(tol);
    expect(Math.abs(a.standing_minutes - 1)).toBeLessThanOrEqual(tol);
    expect(a.walking_minutes).toBeLessThanOrEqual(tol);
    expect(a.sitting_minutes).toBeLessThanOrEqual(tol);
    // Exactly the definition over the stored rows.
    const s = activitySeconds(await storedRows(ctx.store, careRange));
    expect(a.lying_minutes).toBeCloseTo(s.lying! / 60, 3);
    expect(a.standing_minutes).toBeCloseTo(s.standing! / 60, 3);
    expect(a.walking_minutes).toBeCloseTo(s.walking! / 60, 3);
    expect(a.sitting_minutes).toBeCloseTo(s.sitting! / 60, 3);
  });

  it('activity_summary: two visitors standing about 4 minutes each, a third 25 s (shop)', async () => {
    const a = (await healthcare(ctx.store, shopRange, ['activity_summary'])).activity_summary!;
    // Present 260 + 260 + 25 s, of which walking between the zones about 3-4 s per walk (5 walks).
    const total = a.walking_minutes + a.standing_minutes + a.sitting_minutes + a.lying_minutes;
    expect(Math.abs(total * 60 - (260 + 260 + 25))).toBeLessThanOrEqual((MIN_HITS + 2) * FRAME_S);
    expect(a.walking_minutes * 60).toBeGreaterThan(5 * 2);
    expect(a.walking_minutes * 60).toBeLessThan(5 * 5);
  });

  it('mobility_score: lying nearly all the time scores near 0, standing around near 50; exactly the definition', async () => {
    const c = await healthcare(ctx.store, careRange, ['mobility_score']);
    const sc = activitySeconds(await storedRows(ctx.store, careRange));
    expect(c.mobility_score).toBe(mobilityScore(sc.standing!, sc.walking!, sc.moving!, sc.labelled!));
    expect(c.mobility_score).toBeLessThanOrEqual(3);
    const s = await healthcare(ctx.store, shopRange, ['mobility_score']);
    const ss = activitySeconds(await storedRows(ctx.store, shopRange));
    expect(s.mobility_score).toBe(mobilityScore(ss.standing!, ss.walking!, ss.moving!, ss.labelled!));
    expect(s.mobility_score).toBeGreaterThanOrEqual(50);
    expect(s.mobility_score).toBeLessThanOrEqual(55);
    expect(mobilityScore(0, 100, 100, 100)).toBe(100);
    expect(mobilityScore(0, 0, 0, 0)).toBe(0);
  });

  it('sleep_quality: two sleep sessions, one interrupted once; efficiency = lying / time in bed', async () => {
    const q = (await healthcare(ctx.store, careRange, ['sleep_quality'])).sleep_quality!;
    expect(q.sleep_sessions).toBe(2);
    // 26 min + (12 + 13) min lying, the two motions of person 1 labelled within a few seconds.
    expect(Math.abs(q.total_sleep_hours * 3600 - 51 * 60)).toBeLessThanOrEqual(10);
    // In bed 26 min each (person 1's minute up is inside its session).
    expect(q.sleep_efficiency!).toBeCloseTo(51 / 52, 2);
    // Person 1 got up once; nobody moved on the floor while lying.
    expect(q.restlessness_events).toBe(1);
  });

  it('sleep_quality: lying less than 20 minutes is not sleep', async () => {
    const q = (await healthcare(ctx.store, { environmentId: 'care', start: T0, end: T0 + 15 * MIN }, ['sleep_quality'])).sleep_quality!;
    expect(q).toEqual({ total_sleep_hours: 0, sleep_efficiency: 0, restlessness_events: 0, sleep_sessions: 0 });
  });
});

// ---------------------------------------------------------------------------------------------
// Retail
// ---------------------------------------------------------------------------------------------

describe('retail', () => {
  const settings = { zones: shop.zones, funnel: FUNNEL };

  it('traffic: three visitors, peak hour 12:00 with 3, average dwell (260 + 260 + 25) / 3 s', async () => {
    const t = (await retail(ctx.store, shopRange, settings, ['traffic'])).traffic!;
    expect(t.total_visitors).toBe(3);
    expect(t.unique_visitors).toBe(3);
    expect(t.peak_hour).toBe('2026-01-05T12:00:00.000Z');
    expect(t.peak_count).toBe(3);
    // Per track: the last row holds nothing, a new track is reported after MIN_HITS frames.
    expect(Math.abs(t.average_dwell_time_minutes! * 60 - (260 + 260 + 25) / 3)).toBeLessThanOrEqual((MIN_HITS * FRAME_S) / 1 + 0.01);
  });

  it('zones: two visitors about 3 minutes in the shelf zone A; visitor counts and conversion to the purchase zone', async () => {
    const z = (await retail(ctx.store, shopRange, settings, ['zones'])).zones!;
    expect(z.map((x) => [x.zone_id, x.zone_name, x.visitor_count])).toEqual([
      ['E', 'Entrance', 3],
      ['A', 'Shelf', 2],
      ['C', 'Checkout', 3],
    ]);
    const a = z[1]!;
    // Script: they stand in A from arriving (~13 s) until leaving at 190 s: about 3 minutes.
    expect(Math.abs(a.avg_dwell_time_minutes! - 3)).toBeLessThanOrEqual(3 / 60);
    // Against the truth's own floor positions in A, per person within a frame interval.
    const truthA = (truthSecondsInside(shopRun, 0, zoneOf('A').polygon) + truthSecondsInside(shopRun, 1, zoneOf('A').polygon)) / 2;
    expect(Math.abs(a.avg_dwell_time_minutes! * 60 - truthA)).toBeLessThanOrEqual(FRAME_S + 0.01);
    // Conversion: later seen in the purchase zone C. Visitor 2 was in C before E only.
    expect(z.map((x) => x.conversion_rate)).toEqual([0.6667, 1, 1]);
  });

  it('zones and heat map: exactly the definition (even-odd rule, holds) over the stored rows', async () => {
    const r = await retail(ctx.store, shopRange, settings, ['zones', 'heat_map']);
    const ref = zoneFigures(await storedRows(ctx.store, shopRange), shop.zones);
    for (const z of r.zones!) {
      const f = ref.get(z.zone_id)!;
      expect(z.visitor_count, z.zone_id).toBe(f.tracks.size);
      expect(z.avg_dwell_time_minutes!, z.zone_id).toBeCloseTo(f.seconds / f.tracks.size / 60, 3);
    }
    const heat = r.heat_map!.high_traffic_areas;
    expect(heat.map((h) => h.zone)).toEqual(['A', 'C', 'E']);
    const max = ref.get('A')!.seconds;
    for (const h of heat) {
      expect(h.person_seconds).toBeCloseTo(ref.get(h.zone)!.seconds, 2);
      expect(h.intensity).toBeCloseTo(ref.get(h.zone)!.seconds / max, 3);
    }
    expect(heat[0]!.intensity).toBe(1);
    // About 2 x 3 minutes in A.
    expect(Math.abs(heat[0]!.person_seconds - 360)).toBeLessThanOrEqual(6);
  });

  it('conversion_funnel: stages in order; an unconfigured stage counts 0 with a note and is skipped', async () => {
    const f = (await retail(ctx.store, shopRange, settings, ['conversion_funnel'])).conversion_funnel!;
    // E: all three; A after E: visitors 0 and 1; checkout unset; purchase (C) after A: 0 and 1.
    expect([f.entrance, f.product_interaction, f.checkout_area, f.purchase]).toEqual([3, 2, 0, 2]);
    expect(f.zones).toEqual({ entrance: 'E', product_interaction: 'A', checkout_area: null, purchase: 'C' });
    expect(f.notes).toHaveLength(1);
    expect(f.notes[0]).toMatch(/checkout_area.*analytics\.retail_checkout_zone/);

    const g = (
      await retail(ctx.store, shopRange, { zones: shop.zones, funnel: { entrance: 'C', product_interaction: 'E', checkout_area: 'A', purchase: 'nowhere' } }, [
        'conversion_funnel',
      ])
    ).conversion_funnel!;
    // C first: all three; E after C: only visitor 2 (0 and 1 were in E before C); A after that: none.
    expect([g.entrance, g.product_interaction, g.checkout_area, g.purchase]).toEqual([3, 1, 0, 0]);
    expect(g.notes.join('\n')).toMatch(/purchase: zone nowhere .* not in environment\.zones/);
  });

  it('zones: no purchase zone -> conversion_rate 0 (nobody can convert); no zones at all -> empty lists', async () => {
    const r = await retail(ctx.store, shopRange, { zones: shop.zones, funnel: { entrance: 'E', product_interaction: '', checkout_area: '', purchase: '' } }, [
      'zones',
      'conversion_funnel',
    ]);
    expect(r.zones!.every((z) => z.conversion_rate === 0 && z.visitor_count > 0)).toBe(true);
    expect(r.conversion_funnel!.notes.join('\n')).toMatch(/purchase: no zone configured/);
    const none = await retail(ctx.store, shopRange, { zones: [], funnel: FUNNEL }, ['zones', 'heat_map', 'conversion_funnel']);
    expect(none.zones).toEqual([]);
    expect(none.heat_map).toEqual({ high_traffic_areas: [] });
    expect([none.conversion_funnel!.entrance, none.conversion_funnel!.purchase]).toEqual([0, 0]);
  });

  it('point in polygon on the edge, on a vertex and in the notch of a concave zone (even-odd rule)', async () => {
    const store = ctx.store;
    const sink = new PoseSink(store);
    // Zone A of the shop is an L: (3,4.6)-(4,4.6)-(4,5)-(4.8,5)-(4.8,6.1)-(3,6.1); the notch x > 4, y < 5 is outside.
    const points: Array<[number, number, boolean]> = [
      [3.0, 5.0, true], // on the left edge
      [4.0, 4.8, true], // on the notch's vertical edge
      [4.4, 4.8, false], // in the notch
      [4.8, 6.1, true], // a vertex
      [4.9, 5.5, false], // just right of the zone
      [3.5, 5.5, true], // inside
      [4.4, 5.0, true], // on the notch's horizontal edge
      [2.99, 5.5, false], // just left
    ];
    const t0 = T0 + 3 * HOUR;
    for (let k = 0; k < 3; k++) {
      const persons: PersonPose[] = points.map(([x, y], i) => ({
        slot: i,
        trackId: 900 + i,
        confidence: 0.8,
        keypoints: new Float32Array(51),
        bbox: Float32Array.of(0, 0, 10, 10),
        floor: { x, y },
      }));
      sink.write({ frameId: k, time: t0 + k * FRAME_MS, sourceId: 't', environmentId: 'pip', persons, processingMs: 1, modelVersion: 't', csiQuality: 1 });
    }
    await sink.flush();
    const range = { environmentId: 'pip', start: t0, end: t0 + MIN };
    const z = (await retail(store, range, { zones: [zoneOf('A')], funnel: FUNNEL }, ['zones'])).zones!;
    const inside = points.filter((p) => p[2]).length;
    expect(z[0]!.visitor_count).toBe(inside);
    // zones.ts agrees on every point.
    const compiled = compileZone(zoneOf('A'));
    for (const [x, y, want] of points) expect(inZone(compiled, x, y), `${x},${y}`).toBe(want);
    // Each inside track holds 2 frame intervals (its last row holds nothing); minutes have 4 decimals.
    expect(Math.abs(z[0]!.avg_dwell_time_minutes! * 60 - 2 * FRAME_S)).toBeLessThanOrEqual(0.003);
  });
});

// ---------------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------------

describe('security', () => {
  const settings = { zones: shop.zones, crowdThreshold: 2 };

  it('intrusion_events: the alerts of the watched zones; response = alert to first frame outside the zone', async () => {
    const s = (await security(ctx.store, shopRange, settings, ['intrusion_events'])).intrusion_events!;
    expect(s.count).toBe(6);
    expect(s.count).toBe(shopRun.alerts.filter((a) => a.type === 'intrusion').length);
    const owner = (track: number | null) => [...shopRun.tracksOf].find(([, ids]) => ids.has(track!))?.[0];
    const rows = s.events.map((e) => [e.zone, owner(e.person_id), e.threat_level]);
    expect(rows).toEqual([
      ['E', 0, 'medium'],
      ['E', 1, 'medium'],
      ['C', 1, 'high'],
      ['C', 0, 'high'],
      ['C', 2, 'high'],
      ['E', 2, 'medium'],
    ]);
    // Person counts: both visitors in E at the start; visitor 2 joins two others in C.
    expect(s.events.map((e) => e.person_count)).toEqual(shopRun.alerts.filter((a) => a.type === 'intrusion').map((a) => a.metadata.person_count));
    expect(s.events[0]!.person_count).toBe(2);
    expect(s.events[4]!.person_count).toBe(3);
    for (const e of s.events) {
      const who = owner(e.person_id)!;
      const alertAt = Date.parse(e.timestamp!);
      const left = truthLeaves(shopRun, who, zoneOf(e.zone!).polygon, alertAt);
      // Visitors 0 and 1 never leave C, visitor 2 never leaves E (they vanish there).
      const stays = (e.zone === 'C' && who !== 2) || (e.zone === 'E' && who === 2);
      expect(e.resolved, `${e.zone} ${who}`).toBe(!stays);
      if (stays) expect(e.response_time_seconds, `${e.zone} ${who}`).toBe(0);
      else expect(Math.abs(e.response_time_seconds - (left! - alertAt) / 1000), `${e.zone} ${who}`).toBeLessThanOrEqual(FRAME_S + 1e-6);
    }
    // Visitors 0 and 1 leave E on their walk at 10 s.
    expect(s.events[0]!.response_time_seconds!).toBeGreaterThan(10);
    expect(s.events[0]!.response_time_seconds!).toBeLessThan(13);
  });

  it('perimeter_monitoring: zone entries inside vs outside each zone schedule; no entry known to be false (0)', async () => {
    const p = (await security(ctx.store, shopRange, settings, ['perimeter_monitoring'])).perimeter_monitoring!;
    // E (always watched): 3 entries; A (watched 22:00-06:00, the run is at noon): 2 entries,
    // authorized; C (watched 08:00-18:00): 3 entries.
    expect(p.zones).toEqual([
      { zone_id: 'E', entries: 3, authorized_entries: 0, unauthorized_attempts: 3 },
      { zone_id: 'A', entries: 2, authorized_entries: 2, unauthorized_attempts: 0 },
      { zone_id: 'C', entries: 3, authorized_entries: 0, unauthorized_attempts: 3 },
    ]);
    expect([p.total_detections, p.authorized_entries, p.unauthorized_attempts, p.false_positives]).toEqual([8, 2, 6, 0]);
  });

  it('perimeter_monitoring: the schedule rule in SQL agrees with scheduleActive (overnight, days, UTC offsets, all day)', async () => {
    const store = ctx.store;
    const square: Array<[number, number]> = [
      [0, 0],
      [1, 0],
      [1, 1],
      [0, 1],
    ];
    const schedules = [
      undefined,
      { start: '08:00', end: '18:00' },
      { start: '22:00', end: '06:00', days: [1, 3], utcOffsetMinutes: 60 },
      { start: '09:00', end: '09:00', days: [0, 6] },
      { start: '23:30', end: '00:15', utcOffsetMinutes: -330 },
      { start: '00:00', end: '24:00', days: [2], utcOffsetMinutes: 840 },
    ];
    const zones: ZoneConfig[] = schedules.map((s, i) => ({ id: `Z${i}`, name: `Z${i}`, polygon: square, ...(s ? { schedule: s } : {}) }));
    const sink = new PoseSink(store);
    const t0 = Date.UTC(2026, 1, 2, 0, 0, 0);
    const times: number[] = [];
    for (let i = 0; i < 130; i++) {
      const t = t0 + i * 97 * MIN + 13_000;
      times.push(t);
      const p: PersonPose = {
        slot: 0,
        trackId: 5000 + i,
        confidence: 0.8,
        keypoints: new Float32Array(51),
        bbox: Float32Array.of(0, 0, 10, 10),
        floor: { x: 0.5, y: 0.5 },
      };
      sink.write({ frameId: i, time: t, sourceId: 't', environmentId: 'sched', persons: [p], processingMs: 1, modelVersion: 't', csiQuality: 1 });
    }
    // One more track going in, out and in again: two entries into every zone.
    const t1 = t0 + 10 * 24 * HOUR + 12 * HOUR;
    [
      [0.5, 0.5],
      [2, 2],
      [0.5, 0.5],
    ].forEach(([x, y], k) => {
      const p: PersonPose = {
        slot: 0,
        trackId: 6000,
        confidence: 0.8,
        keypoints: new Float32Array(51),
        bbox: Float32Array.of(0, 0, 10, 10),
        floor: { x: x!, y: y! },
      };
      sink.write({
        frameId: 1000 + k,
        time: t1 + k * FRAME_MS,
        sourceId: 't',
        environmentId: 'sched',
        persons: [p],
        processingMs: 1,
        modelVersion: 't',
        csiQuality: 1,
      });
    });
    await sink.flush();
    const p = (await security(store, { environmentId: 'sched', start: t0, end: t0 + 12 * 24 * HOUR }, { zones, crowdThreshold: 2 }, ['perimeter_monitoring']))
      .perimeter_monitoring!;
    const again = [t1, t1 + 2 * FRAME_MS];
    schedules.forEach((s, i) => {
      const compiled = s ? compileSchedule(s) : null;
      const watched = [...times, ...again].filter((t) => scheduleActive(compiled, t)).length;
      expect(p.zones[i], `Z${i}`).toEqual({
        zone_id: `Z${i}`,
        entries: times.length + 2,
        authorized_entries: times.length + 2 - watched,
        unauthorized_attempts: watched,
      });
    });
    // The schedules are neither always nor never open over these times.
    for (const z of p.zones.slice(1)) expect(z.unauthorized_attempts * z.authorized_entries).toBeGreaterThan(0);
  });

  it('crowd_analysis: runs of frames with at least crowd_threshold persons; occupancy from the frames', async () => {
    const c = async (threshold: number) => (await security(ctx.store, shopRange, { zones: [], crowdThreshold: threshold }, ['crowd_analysis'])).crowd_analysis!;
    const two = await c(2);
    expect(two.max_occupancy).toBe(3);
    // Two visitors from the first frame to 260 s (visitor 2 joins meanwhile): one crowd of 2.
    expect(two.crowd_formation_events).toBe(1);
    expect(two.crowd_threshold).toBe(2);
    const mean = shopRun.tracked.reduce((a, b) => a + b, 0) / shopRun.tracked.length;
    expect(two.average_occupancy!).toBeCloseTo(mean, 4);
    // Known from the script: (260 + 260 + 25) s of presence over 300 s.
    expect(Math.abs(two.average_occupancy! - 545 / 300)).toBeLessThanOrEqual((MIN_HITS * FRAME_S) / 300 + 1e-4);
    expect((await c(3)).crowd_formation_events).toBe(1);
    expect((await c(4)).crowd_formation_events).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Summary and occupancy
// ---------------------------------------------------------------------------------------------

describe('summary', () => {
  it('detections, persons, occupancy peak, events, alerts, processing, uptime, and the hourly breakdown', async () => {
    const s = await summary(ctx.store, { environmentId: 'shop', start: T0 - HOUR, end: T0 + 2 * HOUR }, 'hour', T0 + 24 * HOUR);
    expect(s.time_period).toEqual({ start: '2026-01-05T11:00:00.000Z', end: '2026-01-05T14:00:00.000Z', duration_hours: 3 });
    const detections = shopRun.tracked.reduce((a, b) => a + b, 0);
    expect(s.detection_stats).toEqual({
      total_detections: detections,
      unique_persons: 3,
      average_confidence: 0.9,
      peak_occupancy: 3,
      // Visitor 2 appears at 200 s and is reported from its third frame on.
      peak_occupancy_time: new Date(T0 + 200_000 + (MIN_HITS - 1) * FRAME_MS).toISOString(),
    });
    expect(s.activity_stats.total_movement_events).toBe(shopRun.events.filter((e) => e.type === 'activity_change').length);
    expect(s.activity_stats.fall_detections).toBe(0);
    expect(s.activity_stats.alert_count).toBe(6);
    const a = activitySeconds(await storedRows(ctx.store, shopRange));
    expect(s.activity_stats.average_activity_level!).toBeCloseTo(a.walking! / a.labelled!, 4);
    // 180 samples of 10 s over 3 hours: 1/6.
    expect(s.system_stats).toEqual({ uptime_percentage: 16.67, average_processing_time: 5, frames_processed: shop.seconds * 12.5, error_count: 0 });
    expect(s.hourly_breakdown).toEqual([
      { hour: '2026-01-05T11:00:00.000Z', detections: 0, unique_persons: 0, average_confidence: 0 },
      { hour: '2026-01-05T12:00:00.000Z', detections, unique_persons: 3, average_confidence: 0.9 },
      { hour: '2026-01-05T13:00:00.000Z', detections: 0, unique_persons: 0, average_confidence: 0 },
    ]);
  });

  it('falls count once per fall; uptime counts the period up to now only; day and week buckets', async () => {
    const s = await summary(ctx.store, { environmentId: 'care', start: T0, end: T0 + HOUR }, 'day', T0 + 30 * MIN);
    expect(s.activity_stats.fall_detections).toBe(2);
    expect(s.activity_stats.alert_count).toBe(3);
    // The first 30 minutes are all the period that has happened, and every 10 s has its sample.
    expect(s.system_stats.uptime_percentage).toBe(100);
    expect(s.hourly_breakdown.map((b) => b.hour)).toEqual(['2026-01-05T00:00:00.000Z']);
    const w = await summary(ctx.store, { environmentId: 'care', start: T0 - 2 * 24 * HOUR, end: T0 + 24 * HOUR }, 'week');
    // Weeks start on Monday (2026-01-05 is one).
    expect(w.hourly_breakdown.map((b) => b.hour)).toEqual(['2025-12-29T00:00:00.000Z', '2026-01-05T00:00:00.000Z']);
    expect(w.hourly_breakdown[0]!.detections).toBe(0);
    expect(w.hourly_breakdown[1]!.unique_persons).toBe(2 + 3 + 2);
  });
});

describe('occupancy', () => {
  it('summary, person-hours, distribution over frames and the time series', async () => {
    const o = await occupancy(ctx.store, { environmentId: 'shop', start: T0 - HOUR, end: T0 + HOUR }, '1hour');
    const n = shopRun.tracked.length;
    const mean = shopRun.tracked.reduce((a, b) => a + b, 0) / n;
    expect(o.summary.frames).toBe(n);
    expect(o.summary.average_occupancy!).toBeCloseTo(mean, 4);
    expect(o.summary.peak_occupancy).toBe(3);
    expect(o.summary.peak_time).toBe(new Date(T0 + 200_000 + (MIN_HITS - 1) * FRAME_MS).toISOString());
    // Each frame holds one interval (the last none): (260 + 260 + 25) person-seconds, less the frames of confirmation.
    const personSeconds = shopRun.tracked.slice(0, -1).reduce((a, b) => a + b, 0) * FRAME_S;
    expect(o.summary.total_person_hours).toBeCloseTo(personSeconds / 3600, 4);
    expect(Math.abs(o.summary.total_person_hours * 3600 - 545)).toBeLessThanOrEqual(MIN_HITS * FRAME_S + 1);
    const pct = (f: (c: number) => boolean) => Math.round((10000 * shopRun.tracked.filter(f).length) / n) / 100;
    expect(o.distribution).toEqual({
      '0_persons': pct((c) => c === 0),
      '1_person': pct((c) => c === 1),
      '2_persons': pct((c) => c === 2),
      '3_persons': pct((c) => c === 3),
      '4_plus_persons': pct((c) => c >= 4),
    });
    // Nobody for the last 40 s of 300.
    expect(o.distribution['0_persons']).toBeCloseTo((100 * 40) / 300, 1);
    // One bucket holds frames (the hour before has none and is not listed).
    expect(o.time_series).toEqual([{ timestamp: '2026-01-05T12:00:00.000Z', occupancy: Math.round(mean * 1e4) / 1e4, confidence: 0.9, frames: n }]);
    expect(o.interval).toBe('1hour');
  });

  it('5-minute buckets of the care run', async () => {
    const o = await occupancy(ctx.store, careRange, '5min');
    expect(o.time_series.map((b) => b.timestamp)).toEqual([0, 5, 10, 15, 20, 25].map((m) => new Date(T0 + m * MIN).toISOString()));
    expect(o.time_series.map((b) => b.frames)).toEqual([3750, 3750, 3750, 3750, 3750, 750]);
    for (const b of o.time_series) expect(b.occupancy).toBe(2);
    expect(o.distribution['2_persons']).toBe(100);
  });
});

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

describe('events', () => {
  async function all(q: Parameters<typeof events>[1]): Promise<EventOut[]> {
    const out: EventOut[] = [];
    let cursor = q.cursor;
    for (let i = 0; i < 100; i++) {
      const page = await events(ctx.store, { ...q, ...(cursor ? { cursor } : {}) });
      out.push(...page.events);
      if (!page.has_more) {
        expect(page.next).toBeNull();
        return out;
      }
      cursor = page.next!;
    }
    throw new Error('no end of pages');
  }

  it('pages through every stored event, newest first, with a cursor; nothing repeated or skipped', async () => {
    const first = await events(ctx.store, { environmentId: 'shop', limit: 5 });
    expect(first.events).toHaveLength(5);
    expect(first.total_count).toBe(shopRun.events.length);
    expect(first.has_more).toBe(true);
    const got = await all({ environmentId: 'shop', limit: 5 });
    expect(got.map((e) => e.event_id).sort()).toEqual(shopRun.events.map((e) => e.eventId).sort());
    const keys = got.map((e) => [Date.parse(e.timestamp!), e.event_id] as const);
    for (let i = 1; i < keys.length; i++)
      expect(keys[i - 1]![0] > keys[i]![0] || (keys[i - 1]![0] === keys[i]![0] && keys[i - 1]![1] > keys[i]![1])).toBe(true);
    const intrusion = got.find((e) => e.type === 'intrusion')!;
    expect(intrusion.actions_taken).toEqual(['alert_sent', 'notification_dispatched']);
    expect(intrusion.metadata).toMatchObject({ zone: expect.any(String), threat_level: expect.any(String) });
    expect(intrusion.environment_id).toBe('shop');
  });

  it('event_type fall / activity / alert, severity and time bounds', async () => {
    const falls = await all({ environmentId: 'care', type: 'fall' });
    expect(falls.map((e) => [e.type, e.severity])).toEqual([
      ['fall_detection', 'critical'],
      ['fall_detection', 'high'],
      ['fall_recovery', 'low'],
      ['fall_detection', 'high'],
    ]);
    expect(falls[2]!.metadata).toMatchObject({ recovery_detected: true });
    const activity = await all({ environmentId: 'shop', type: 'activity' });
    expect(activity.length).toBe(shopRun.events.filter((e) => e.type === 'activity_change').length);
    expect(activity.every((e) => e.type === 'activity_change' && typeof e.metadata.to === 'string')).toBe(true);
    const alerts = await all({ environmentId: 'shop', type: 'alert', limit: 4 });
    expect(alerts.map((a) => a.event_id).sort()).toEqual(shopRun.alerts.map((a) => a.alertId).sort());
    expect(alerts.every((a) => a.type === 'intrusion' && typeof a.zone === 'string' && a.actions_taken.includes('notification'))).toBe(true);
    const high = await all({ environmentId: 'shop', type: 'alert', severity: 'high' });
    expect(high.map((a) => a.zone)).toEqual(['C', 'C', 'C']);
    const critical = await all({ environmentId: 'care', severity: 'critical' });
    expect(critical.map((e) => e.type)).toEqual(['fall_detection']);
    const early = await all({ environmentId: 'shop', start: T0, end: T0 + 100_000 });
    expect(early.length).toBe(shopRun.events.filter((e) => e.time < T0 + 100_000).length);
    expect(early.length).toBeGreaterThan(0);
  });

  it('event_type as the events carry it: each type name alone; an offset pages as the cursor does', async () => {
    const detections = await all({ environmentId: 'care', type: 'fall_detection' });
    expect(detections.map((e) => e.type)).toEqual(['fall_detection', 'fall_detection', 'fall_detection']);
    const recoveries = await all({ environmentId: 'care', type: 'fall_recovery' });
    expect(recoveries.map((e) => e.type)).toEqual(['fall_recovery']);
    const intrusions = await all({ environmentId: 'shop', type: 'intrusion' });
    expect(intrusions.length).toBe(shopRun.events.filter((e) => e.type === 'intrusion').length);
    const byCursor = await all({ environmentId: 'shop', limit: 7 });
    const byOffset: EventOut[] = [];
    for (let offset = 0; offset < byCursor.length; offset += 7) byOffset.push(...(await events(ctx.store, { environmentId: 'shop', limit: 7, offset })).events);
    expect(byOffset).toEqual(byCursor);
  });
});

// ---------------------------------------------------------------------------------------------
// Edges
// ---------------------------------------------------------------------------------------------

describe('a range without data', () => {
  const empty: AnalyticsRange = { environmentId: 'shop', start: Date.UTC(2020, 0, 1), end: Date.UTC(2020, 0, 2) };

  it('answers zeros and empty lists: a ratio or average over nothing is 0, next to the count that says so', async () => {
    expect(await healthcare(ctx.store, empty)).toEqual({
      fall_events: { count: 0, events: [] },
      activity_summary: { walking_minutes: 0, sitting_minutes: 0, lying_minutes: 0, standing_minutes: 0 },
      mobility_score: 0,
      sleep_quality: { total_sleep_hours: 0, sleep_efficiency: 0, restlessness_events: 0, sleep_sessions: 0 },
    });
    const r = await retail(ctx.store, empty, { zones: shop.zones, funnel: FUNNEL });
    expect(r.traffic).toEqual({ total_visitors: 0, unique_visitors: 0, peak_hour: null, peak_count: 0, average_dwell_time_minutes: 0 });
    expect(r.zones!.map((z) => [z.visitor_count, z.avg_dwell_time_minutes, z.conversion_rate])).toEqual([
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);
    expect([r.conversion_funnel!.entrance, r.conversion_funnel!.product_interaction, r.conversion_funnel!.purchase]).toEqual([0, 0, 0]);
    expect(r.heat_map!.high_traffic_areas).toEqual([]);
    const s = await security(ctx.store, empty, { zones: shop.zones, crowdThreshold: 2 });
    expect(s.intrusion_events).toEqual({ count: 0, events: [] });
    expect([s.perimeter_monitoring!.total_detections, s.perimeter_monitoring!.false_positives]).toEqual([0, 0]);
    expect(s.crowd_analysis).toEqual({ max_occupancy: 0, average_occupancy: 0, crowd_formation_events: 0, crowd_threshold: 2 });
    const m = await summary(ctx.store, empty, 'day');
    expect(m.detection_stats).toEqual({ total_detections: 0, unique_persons: 0, average_confidence: 0, peak_occupancy: 0, peak_occupancy_time: null });
    expect(m.activity_stats).toEqual({ total_movement_events: 0, fall_detections: 0, alert_count: 0, average_activity_level: 0 });
    expect(m.system_stats).toEqual({ uptime_percentage: 0, average_processing_time: 0, frames_processed: 0, error_count: 0 });
    expect(m.hourly_breakdown).toEqual([{ hour: '2020-01-01T00:00:00.000Z', detections: 0, unique_persons: 0, average_confidence: 0 }]);
    const o = await occupancy(ctx.store, empty);
    expect(o.summary).toEqual({ average_occupancy: 0, peak_occupancy: 0, peak_time: null, total_person_hours: 0, frames: 0 });
    expect(o.time_series).toEqual([]);
    expect(Object.values(o.distribution)).toEqual([0, 0, 0, 0, 0]);
    expect(await events(ctx.store, { environmentId: 'shop', start: empty.start, end: empty.end })).toEqual({
      events: [],
      total_count: 0,
      has_more: false,
      next: null,
    });
  });

  it('an unknown environment is a range without data', async () => {
    const t = (await retail(ctx.store, { ...shopRange, environmentId: 'elsewhere' }, { zones: shop.zones, funnel: FUNNEL }, ['traffic'])).traffic!;
    expect(t.total_visitors).toBe(0);
  });
});

describe('the SQL', () => {
  it('every statement reads its tables through a ts range filter (zonemap pruning), with bound parameters only', async () => {
    for (const [name, sql] of Object.entries(ANALYTICS_SQL)) {
      // No literal times or environment ids in the text: every value is a parameter.
      expect(sql, name).not.toMatch(/'\d{4}-\d{2}-\d{2}/);
      for (const table of ['pose_frames', 'pose_persons', 'activity_events', 'alerts', 'system_metrics']) {
        const uses = sql.split(new RegExp(`FROM ${table}\\b`)).length - 1;
        if (uses === 0) continue;
        const filtered = sql.split(new RegExp(`FROM ${table}\\s+WHERE ts >= \\$start AND ts < \\$end`)).length - 1;
        expect(filtered, `${name}: every scan of ${table} starts with the ts range`).toBe(uses);
      }
    }
  });
});
