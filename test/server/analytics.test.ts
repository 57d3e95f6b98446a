/**
 * The six `/analytics/*` endpoints through the real server (startServer: the real app on port 0)
 * over a real DuckDB file written beforehand with ground-truth scenarios whose figures are known
 * (test/helpers/truthStore.ts): the shop (three visitors, three zones) in the configured
 * environment `shop`, and a fall with a recovery in environment `care`. Both response forms,
 * every parameter and filter, every validation error, the `analytics` rate-limit category and
 * authentication.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../helpers/dataDir.js';
import { rateHeaders, type ApiResponse, type TestServer } from '../helpers/server.js';
import { shopScenario, startShopServer, type TruthRun } from '../helpers/truthStore.js';

/** Noon UTC two days ago: inside the default 30-day retention, the zone schedules as in the store tests. */
const DAY = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
const T0 = Date.parse(`${DAY}T12:00:00.000Z`);
const HOUR = 3_600_000;
const VIEWER_KEY = 'viewer-key-analytics-0123456789';
const iso = (ms: number) => new Date(ms).toISOString();

const shop = shopScenario();
const ENDPOINTS = ['/analytics/healthcare', '/analytics/retail', '/analytics/security', '/analytics/summary', '/analytics/events', '/analytics/occupancy'];
/** A valid query for each endpoint (summary and occupancy need their bounds). */
const VALID: Record<string, Record<string, string>> = {
  '/analytics/healthcare': { date: DAY },
  '/analytics/retail': { date: DAY },
  '/analytics/security': { date: DAY },
  '/analytics/summary': { start_time: iso(T0), end_time: iso(T0 + HOUR) },
  '/analytics/events': {},
  '/analytics/occupancy': { start_time: iso(T0), end_time: iso(T0 + HOUR) },
};

let s: TestServer;
let token: string;
let shopRun: TruthRun;
const tempDir = tempDirs('csipose-analytics-svc-');

beforeAll(async () => {
  ({ s, token, shopRun } = await startShopServer(tempDir(), shop, T0, 'care', { env: { CSIPOSE_API_KEYS: `${VIEWER_KEY}:viewer` } }));
});
afterAll(() => s?.close());

const get = (path: string, query: Record<string, string | number> = {}, form: 'a' | 'b' = 'b') => s.api('GET', path, { token, form, query });

/** Expects a 422 VALIDATION_ERROR naming `field`, in both forms. */
async function expect422(path: string, query: Record<string, string | number>, field: string): Promise<void> {
  const b = await get(path, query, 'b');
  expect(b.status, `${path} ${JSON.stringify(query)}: ${b.text}`).toBe(422);
  expect(b.body.success).toBe(false);
  expect(b.body.error.code).toBe('VALIDATION_ERROR');
  expect(
    b.body.error.details.errors.map((e: { field: string }) => e.field),
    b.text,
  ).toContain(field);
  const a = await get(path, query, 'a');
  expect(a.status).toBe(422);
  expect(a.body.error.code).toBe('VALIDATION_ERROR');
  expect(a.body.error.details.field_errors.map((e: { field: string }) => e.field)).toContain(field);
  expect(a.body.error.request_id).toEqual(expect.any(String));
}

describe('access', () => {
  it('every endpoint needs credentials (401) and takes the viewer role, the least there is (so never 403)', async () => {
    for (const path of ENDPOINTS) {
      const none = await s.api('GET', path, { query: VALID[path]! });
      expect(none.status, path).toBe(401);
      expect(none.body.error.code).toBe('AUTHENTICATION_ERROR');
      const bad = await s.api('GET', path, { token: 'not-a-token', query: VALID[path]! });
      expect(bad.status, path).toBe(401);
      const viewer = await s.api('GET', path, { apiKey: VIEWER_KEY, query: VALID[path]! });
      expect(viewer.status, `${path}: ${viewer.text}`).toBe(200);
    }
  });

  it('counts in the analytics rate-limit category: 500 per hour, on answers and refusals alike', async () => {
    for (const path of ENDPOINTS) {
      for (const r of [await get(path, VALID[path]!), await get(path, { nonsense: 1 })]) {
        const h = rateHeaders(r.headers);
        expect(h.limit, path).toBe(500);
        expect(h.window, path).toBe(3600);
        expect(h.remaining).toBeLessThan(500);
      }
    }
  });
});

describe('both response forms', () => {
  it('Form B wraps the resource in {success, data, timestamp, request_id}; Form A is the resource', async () => {
    for (const path of ENDPOINTS) {
      const b = await get(path, VALID[path]!, 'b');
      expect(b.status, `${path}: ${b.text}`).toBe(200);
      expect(Object.keys(b.body).sort(), path).toEqual(
        path === '/analytics/events' ? ['data', 'pagination', 'request_id', 'success', 'timestamp'] : ['data', 'request_id', 'success', 'timestamp'],
      );
      const a = await get(path, VALID[path]!, 'a');
      expect(a.status).toBe(200);
      if (path === '/analytics/events') {
        // Each form pages its own way (Form A 100 by cursor, Form B 50 per page): the same events, newest first.
        expect(a.body.events.slice(0, b.body.data.length)).toEqual(b.body.data);
        expect(Object.keys(a.body.pagination).sort()).toEqual(['has_more', 'limit', 'next_cursor', 'returned_count', 'total_count']);
        expect(Object.keys(b.body.pagination).sort()).toEqual(['has_next', 'has_prev', 'page', 'per_page', 'total', 'total_pages']);
      } else {
        expect(a.body.success, path).toBeUndefined();
        expect(Object.keys(a.body).sort(), path).toEqual(Object.keys(b.body.data).sort());
      }
    }
  });
});

describe('GET /analytics/healthcare', () => {
  it('the fall with its recovery, for environment_id=care on the day', async () => {
    const r = await get('/analytics/healthcare', { environment_id: 'care', period: 'day', date: DAY });
    const d = r.body.data;
    expect(d.environment_id).toBe('care');
    expect(d.time_period).toEqual({ period: 'day', start: `${DAY}T00:00:00.000Z`, end: iso(Date.parse(`${DAY}T00:00:00.000Z`) + 24 * HOUR) });
    expect(d.fall_events.count).toBe(1);
    expect(d.fall_events.events[0]).toMatchObject({ severity: 'high', location: { x: expect.any(Number), y: expect.any(Number) } });
    expect(d.fall_events.events[0].response_time_seconds).toBeGreaterThan(5);
    expect(d.fall_events.events[0].response_time_seconds).toBeLessThan(12);
    expect(Object.keys(d.activity_summary).sort()).toEqual(['lying_minutes', 'sitting_minutes', 'standing_minutes', 'walking_minutes']);
    expect(d.sleep_quality).toEqual({ total_sleep_hours: 0, sleep_efficiency: 0, restlessness_events: 0, sleep_sessions: 0 });
  });

  it('defaults to the configured environment and a period of a day; metrics picks the groups', async () => {
    const r = await get('/analytics/healthcare', { date: DAY, metrics: 'activity_summary,mobility_score' });
    expect(r.body.data.environment_id).toBe('shop');
    expect(Object.keys(r.body.data).sort()).toEqual(['activity_summary', 'environment_id', 'mobility_score', 'time_period']);
    // Two visitors ~4.3 min and one 25 s, nearly all standing.
    const a = r.body.data.activity_summary;
    expect(Math.abs(a.standing_minutes + a.walking_minutes - 545 / 60)).toBeLessThan(0.05);
    expect(r.body.data.mobility_score).toBeGreaterThanOrEqual(50);
  });

  it('period hour, week and month end at the end of date; without date they end now', async () => {
    const end = Date.parse(`${DAY}T00:00:00.000Z`) + 24 * HOUR;
    for (const [period, len] of [
      ['hour', HOUR],
      ['week', 7 * 24 * HOUR],
      ['month', 30 * 24 * HOUR],
    ] as const) {
      const r = await get('/analytics/healthcare', { period, date: DAY, metrics: 'fall_events', environment_id: 'care' });
      expect(r.body.data.time_period).toEqual({ period, start: iso(end - len), end: iso(end) });
      // The last hour of the day holds no fall; a week and a month do.
      expect(r.body.data.fall_events.count).toBe(period === 'hour' ? 0 : 1);
    }
    const before = Date.now();
    const r = await get('/analytics/healthcare', { period: 'week', metrics: 'fall_events', environment_id: 'care' });
    const p = r.body.data.time_period;
    expect(Date.parse(p.end)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(p.end) - Date.parse(p.start)).toBe(7 * 24 * HOUR);
    expect(r.body.data.fall_events.count).toBe(1);
  });

  it('validates period, date, metrics and environment_id, and refuses unknown or repeated parameters', async () => {
    await expect422('/analytics/healthcare', { period: 'year' }, 'period');
    await expect422('/analytics/healthcare', { date: '2026-13-01' }, 'date');
    await expect422('/analytics/healthcare', { date: '2026-02-30' }, 'date');
    await expect422('/analytics/healthcare', { date: `${DAY}T12:00:00Z` }, 'date');
    await expect422('/analytics/healthcare', { metrics: 'fall_events,bogus' }, 'metrics');
    await expect422('/analytics/healthcare', { metrics: '' }, 'metrics');
    await expect422('/analytics/healthcare', { environment_id: 'no spaces!' }, 'environment_id');
    await expect422('/analytics/healthcare', { start_time: iso(T0) }, 'start_time');
    const twice = await s.api('GET', '/analytics/healthcare?period=day&period=week', { token });
    expect(twice.status).toBe(422);
    expect(twice.body.error.details.field).toBe('period');
  });
});

describe('GET /analytics/retail', () => {
  it('traffic, zones, the funnel of the configured zones and the heat map', async () => {
    const d = (await get('/analytics/retail', { date: DAY })).body.data;
    expect(d.traffic).toMatchObject({ total_visitors: 3, unique_visitors: 3, peak_hour: iso(T0), peak_count: 3 });
    expect(Math.abs(d.traffic.average_dwell_time_minutes * 60 - 545 / 3)).toBeLessThan(0.3);
    expect(d.zones.map((z: { zone_id: string; visitor_count: number; conversion_rate: number }) => [z.zone_id, z.visitor_count, z.conversion_rate])).toEqual([
      ['E', 3, 0.6667],
      ['A', 2, 1],
      ['C', 3, 1],
    ]);
    expect(Math.abs(d.zones[1].avg_dwell_time_minutes - 3)).toBeLessThan(0.05);
    expect([d.conversion_funnel.entrance, d.conversion_funnel.product_interaction, d.conversion_funnel.checkout_area, d.conversion_funnel.purchase]).toEqual([
      3, 2, 0, 2,
    ]);
    expect(d.conversion_funnel.notes.join(' ')).toMatch(/checkout_area/);
    expect(d.heat_map.high_traffic_areas.map((h: { zone: string }) => h.zone)).toEqual(['A', 'C', 'E']);
    expect(d.heat_map.high_traffic_areas[0].intensity).toBe(1);
  });

  it('metrics=traffic answers that group only; another environment or day answers zeros, not 404', async () => {
    const r = await get('/analytics/retail', { date: DAY, metrics: 'traffic' });
    expect(Object.keys(r.body.data).sort()).toEqual(['environment_id', 'time_period', 'traffic']);
    const none = await get('/analytics/retail', { date: '2020-01-01' });
    expect(none.status).toBe(200);
    expect(none.body.data.traffic).toEqual({ total_visitors: 0, unique_visitors: 0, peak_hour: null, peak_count: 0, average_dwell_time_minutes: 0 });
    const other = await get('/analytics/retail', { date: DAY, environment_id: 'nowhere', metrics: 'zones' });
    expect(other.body.data.zones.every((z: { visitor_count: number }) => z.visitor_count === 0)).toBe(true);
    await expect422('/analytics/retail', { metrics: 'fall_events' }, 'metrics');
    await expect422('/analytics/retail', { foo: 'bar' }, 'foo');
  });
});

describe('GET /analytics/security', () => {
  it('intrusions of the watched zones, zone entries by schedule, crowds of analytics.crowd_threshold', async () => {
    const d = (await get('/analytics/security', { date: DAY })).body.data;
    expect(d.intrusion_events.count).toBe(6);
    expect(d.intrusion_events.events.map((e: { zone: string }) => e.zone)).toEqual(['E', 'E', 'C', 'C', 'C', 'E']);
    expect(d.intrusion_events.events[0]).toMatchObject({ timestamp: iso(T0), person_count: 2, threat_level: 'medium' });
    expect(d.perimeter_monitoring).toMatchObject({ total_detections: 8, authorized_entries: 2, unauthorized_attempts: 6, false_positives: 0 });
    expect(d.crowd_analysis).toMatchObject({ max_occupancy: 3, crowd_formation_events: 1, crowd_threshold: 2 });
    const mean = shopRun.tracked.reduce((a, b) => a + b, 0) / shopRun.tracked.length;
    expect(d.crowd_analysis.average_occupancy).toBeCloseTo(mean, 3);
    const only = await get('/analytics/security', { date: DAY, metrics: 'crowd_analysis,crowd_analysis' });
    expect(Object.keys(only.body.data).sort()).toEqual(['crowd_analysis', 'environment_id', 'time_period']);
    await expect422('/analytics/security', { period: 'fortnight' }, 'period');
  });
});

describe('GET /analytics/summary', () => {
  it('the figures of the hour, by hour, day or week', async () => {
    const r = await get('/analytics/summary', { start_time: iso(T0 - HOUR), end_time: iso(T0 + 2 * HOUR) });
    const d = r.body.data;
    expect(d.time_period).toEqual({ start: iso(T0 - HOUR), end: iso(T0 + 2 * HOUR), duration_hours: 3 });
    expect(d.detection_stats).toMatchObject({
      total_detections: shopRun.tracked.reduce((a, b) => a + b, 0),
      unique_persons: 3,
      average_confidence: 0.9,
      peak_occupancy: 3,
    });
    expect(d.activity_stats).toMatchObject({ fall_detections: 0, alert_count: 6 });
    expect(d.system_stats).toMatchObject({ average_processing_time: 5, frames_processed: 3750, error_count: 0 });
    expect(d.hourly_breakdown.map((b: { hour: string }) => b.hour)).toEqual([iso(T0 - HOUR), iso(T0), iso(T0 + HOUR)]);
    const day = await get('/analytics/summary', { start_time: iso(T0), end_time: iso(T0 + HOUR), granularity: 'day', environment_id: 'care' }, 'a');
    expect(day.body.activity_stats.fall_detections).toBe(1);
    expect(day.body.hourly_breakdown.map((b: { hour: string }) => b.hour)).toEqual([`${DAY}T00:00:00.000Z`]);
    const week = await get('/analytics/summary', { start_time: iso(T0), end_time: iso(T0 + HOUR), granularity: 'week' });
    expect(week.body.data.hourly_breakdown).toHaveLength(1);
    // A time with an offset is the same instant.
    const offset = await get('/analytics/summary', { start_time: `${DAY}T13:00:00+01:00`, end_time: `${DAY}T14:00:00+01:00` });
    expect(offset.body.data.time_period.start).toBe(iso(T0));
    // The same with the `+` left unencoded in the URL (it arrives as a space).
    const raw = await s.api('GET', `/analytics/summary?start_time=${DAY}T13:00:00+01:00&end_time=${DAY}T14:00:00+01:00`, { token });
    expect(raw.status, raw.text).toBe(200);
    expect(raw.body.data.time_period.start).toBe(iso(T0));
  });

  it('requires start_time and end_time, end after start, at most 366 days apart; granularity hour|day|week', async () => {
    const missing = await get('/analytics/summary', {}, 'a');
    expect(missing.status).toBe(422);
    expect(missing.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual(['start_time', 'end_time']);
    await expect422('/analytics/summary', { end_time: iso(T0) }, 'start_time');
    await expect422('/analytics/summary', { start_time: iso(T0) }, 'end_time');
    await expect422('/analytics/summary', { start_time: iso(T0), end_time: iso(T0) }, 'end_time');
    await expect422('/analytics/summary', { start_time: iso(T0 + HOUR), end_time: iso(T0) }, 'end_time');
    await expect422('/analytics/summary', { start_time: '2024-01-01T00:00:00Z', end_time: '2025-01-02T00:00:01Z' }, 'end_time');
    await expect422('/analytics/summary', { start_time: 'yesterday', end_time: iso(T0) }, 'start_time');
    await expect422('/analytics/summary', { start_time: '2026-01-05T25:00:00Z', end_time: iso(T0) }, 'start_time');
    await expect422('/analytics/summary', { start_time: iso(T0), end_time: iso(T0 + HOUR), granularity: 'minute' }, 'granularity');
    await expect422('/analytics/summary', { start_time: iso(T0), end_time: iso(T0 + HOUR), period: 'day' }, 'period');
    const ok = await get('/analytics/summary', { start_time: '2024-01-01T00:00:00Z', end_time: '2025-01-01T00:00:00Z', granularity: 'week' });
    expect(ok.status).toBe(200);
    expect(ok.body.data.detection_stats.total_detections).toBe(0);
  });
});

describe('GET /analytics/events', () => {
  /** Every page of a listing: Form A by cursor (limit), Form B by page (per_page). */
  const pageAll = async (query: Record<string, string | number>, form: 'a' | 'b' = 'b', size = 100) => {
    const out: Array<Record<string, unknown>> = [];
    let cursor: string | undefined;
    for (let page = 1; page <= 50; page++) {
      const q = form === 'a' ? { ...query, limit: size, ...(cursor ? { cursor } : {}) } : { ...query, per_page: size, page };
      // Form A: following next_cursor alone continues the listing (the cursor carries its query).
      const r: ApiResponse = await get('/analytics/events', form === 'a' && cursor ? { cursor, limit: size } : q, form);
      expect(r.status, r.text).toBe(200);
      const items = form === 'a' ? r.body.events : r.body.data;
      const p = r.body.pagination;
      out.push(...items);
      if (form === 'a') {
        expect(p.returned_count).toBe(items.length);
        if (!p.has_more) return { out, total: p.total_count as number };
        cursor = p.next_cursor;
      } else {
        expect(p).toMatchObject({ page, per_page: size, has_prev: page > 1 });
        expect(p.total_pages).toBe(Math.ceil(p.total / size));
        if (!p.has_next) return { out, total: p.total as number };
      }
    }
    throw new Error('no last page');
  };

  it('pages the configured environment newest first: Form A by limit and cursor, Form B by page and per_page', async () => {
    const first = await get('/analytics/events', { limit: 4 }, 'a');
    expect(first.body.pagination).toMatchObject({
      limit: 4,
      returned_count: 4,
      total_count: shopRun.events.length,
      has_more: true,
      next_cursor: expect.any(String),
    });
    expect(first.body.events[0]).toMatchObject({
      event_id: expect.any(String),
      type: expect.any(String),
      environment_id: 'shop',
      metadata: expect.any(Object),
      actions_taken: expect.any(Array),
    });
    const firstB = await get('/analytics/events', { per_page: 4, page: 2 }, 'b');
    expect(firstB.body.pagination).toEqual({
      page: 2,
      per_page: 4,
      total: shopRun.events.length,
      total_pages: Math.ceil(shopRun.events.length / 4),
      has_next: true,
      has_prev: true,
    });
    for (const form of ['a', 'b'] as const) {
      const { out, total } = await pageAll({}, form, 4);
      expect(total).toBe(shopRun.events.length);
      expect(out.map((e) => e.event_id).sort()).toEqual(shopRun.events.map((e) => e.eventId).sort());
      const times = out.map((e) => Date.parse(e.timestamp as string));
      for (let i = 1; i < times.length; i++) expect(times[i]!).toBeLessThanOrEqual(times[i - 1]!);
    }
    const all = await get('/analytics/events', {}, 'a');
    expect(all.body.pagination).toMatchObject({ limit: 100, has_more: false, next_cursor: null });
    const allB = await get('/analytics/events', {}, 'b');
    expect(allB.body.pagination).toMatchObject({ page: 1, per_page: 50 });
  });

  it('event_type fall | alert | activity, severity (critical included), environment and time bounds', async () => {
    const falls = await pageAll({ event_type: 'fall', environment_id: 'care' });
    expect(falls.out.map((e) => e.type)).toEqual(['fall_recovery', 'fall_detection']);
    const alerts = await pageAll({ event_type: 'alert', severity: 'high' });
    expect(alerts.out.map((e) => [e.type, e.zone])).toEqual([
      ['intrusion', 'C'],
      ['intrusion', 'C'],
      ['intrusion', 'C'],
    ]);
    const activity = await pageAll({ event_type: 'activity' });
    expect(activity.total).toBe(shopRun.events.filter((e) => e.type === 'activity_change').length);
    const critical = await pageAll({ severity: 'critical' });
    expect(critical.total).toBe(0);
    const early = await pageAll({ start_time: iso(T0), end_time: iso(T0 + 100_000) });
    expect(early.total).toBe(shopRun.events.filter((e) => e.time < T0 + 100_000).length);
    const late = await pageAll({ start_time: iso(T0 + 100_000) });
    expect(late.total + early.total).toBe(shopRun.events.length);
  });

  it('event_type takes the type names the events carry, and refuses others listing the valid ones', async () => {
    const types = [...new Set(shopRun.events.map((e) => e.type))];
    expect(types).toEqual(expect.arrayContaining(['activity_change', 'intrusion']));
    for (const type of types) {
      for (const form of ['a', 'b'] as const) {
        const { out, total } = await pageAll({ event_type: type }, form);
        expect(total, type).toBe(shopRun.events.filter((e) => e.type === type).length);
        expect(new Set(out.map((e) => e.type)), type).toEqual(new Set([type]));
      }
    }
    const detections = await pageAll({ event_type: 'fall_detection', environment_id: 'care' });
    expect(detections.out.map((e) => e.type)).toEqual(['fall_detection']);
    const recoveries = await pageAll({ event_type: 'fall_recovery', environment_id: 'care' });
    expect(recoveries.out.map((e) => e.type)).toEqual(['fall_recovery']);
    const bad = await get('/analytics/events', { event_type: 'fall_alarm' }, 'a');
    expect(bad.status).toBe(422);
    const message = bad.body.error.details.field_errors[0].message as string;
    for (const valid of ['fall_detection', 'fall_recovery', 'activity_change', 'inactivity', 'intrusion', 'fall', 'alert', 'activity'])
      expect(message).toContain(valid);
  });

  it('a Form A cursor carries its query: following next_cursor alone continues the same listing', async () => {
    const query = { event_type: 'activity_change', start_time: iso(T0), end_time: iso(T0 + HOUR) };
    const whole = await pageAll(query, 'b', 1000);
    expect(whole.total).toBeGreaterThan(3);
    const first = await get('/analytics/events', { ...query, limit: 2 }, 'a');
    const seen = first.body.events.map((e: { event_id: string }) => e.event_id);
    let cursor = first.body.pagination.next_cursor as string | null;
    while (cursor) {
      const r = await get('/analytics/events', { cursor }, 'a');
      expect(r.status, r.text).toBe(200);
      // The page size travels with the cursor too.
      expect(r.body.pagination).toMatchObject({ limit: 2, total_count: whole.total });
      seen.push(...r.body.events.map((e: { event_id: string }) => e.event_id));
      cursor = r.body.pagination.next_cursor;
    }
    expect(seen).toEqual(whole.out.map((e) => e.event_id));
    // The same parameters sent again (a time in another notation is the same instant), or another page size: fine.
    const again = await get(
      '/analytics/events',
      { ...query, start_time: iso(T0).replace('Z', '+00:00'), limit: 5, cursor: first.body.pagination.next_cursor },
      'a',
    );
    expect(again.status, again.text).toBe(200);
    expect(again.body.events.map((e: { event_id: string }) => e.event_id)).toEqual(whole.out.slice(2, 7).map((e) => e.event_id));
    // A parameter that disagrees with the cursor's query, or one the cursor's query did not have: 422 naming it.
    for (const [field, value] of [
      ['event_type', 'intrusion'],
      ['severity', 'high'],
      ['end_time', iso(T0 + 2 * HOUR)],
      ['environment_id', 'care'],
    ] as const) {
      const r = await get('/analytics/events', { cursor: first.body.pagination.next_cursor, [field]: value }, 'a');
      expect(r.status, `${field}: ${r.text}`).toBe(422);
      expect(r.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual([field]);
      expect(r.body.error.details.field_errors[0].message).toMatch(/cursor/);
    }
    // A cursor made up or altered is a 422 naming it, never a 5xx.
    const q = { environment_id: 'shop', start_time: null, end_time: null, event_type: null, severity: null };
    const forged = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const bad of [
      forged({ v: 1, at: [1, 'x'], q: { ...q, end_time: -9e15 }, n: 10 }),
      forged({ v: 1, at: [1.5, 'x'], q, n: 10 }),
      forged({ v: 1, at: [1, 'x'], q: { ...q, event_type: 'fall_alarm' }, n: 10 }),
      forged({ v: 1, at: [1, 'x'], q: { ...q, environment_id: 'no spaces!' }, n: 10 }),
      forged({ v: 1, at: [1, 'x'], q, n: 0 }),
    ]) {
      const r = await get('/analytics/events', { cursor: bad }, 'a');
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual(['cursor']);
    }
  });

  it('validates limit, cursor, page, per_page, event_type, severity and the bounds; each form takes its own paging', async () => {
    await expect422('/analytics/events', { limit: 0 }, 'limit');
    await expect422('/analytics/events', { limit: 1001 }, 'limit');
    await expect422('/analytics/events', { limit: 2.5 }, 'limit');
    await expect422('/analytics/events', { cursor: 'not-a-cursor' }, 'cursor');
    await expect422('/analytics/events', { event_type: 'fall_alarm' }, 'event_type');
    await expect422('/analytics/events', { severity: 'urgent' }, 'severity');
    await expect422('/analytics/events', { start_time: iso(T0 + HOUR), end_time: iso(T0) }, 'end_time');
    for (const [query, field, form] of [
      [{ page: 2 }, 'page', 'a'],
      [{ per_page: 10 }, 'per_page', 'a'],
      [{ limit: 10 }, 'limit', 'b'],
      [{ cursor: 'x' }, 'cursor', 'b'],
      [{ per_page: 0 }, 'per_page', 'b'],
      [{ per_page: 1001 }, 'per_page', 'b'],
      [{ page: 0 }, 'page', 'b'],
    ] as const) {
      const r = await get('/analytics/events', query, form);
      expect(r.status, `${form} ${JSON.stringify(query)}: ${r.text}`).toBe(422);
      const fields = form === 'a' ? r.body.error.details.field_errors.map((e: { field: string }) => e.field) : [r.body.error.details.field];
      expect(fields).toContain(field);
    }
    expect((await get('/analytics/events', { limit: 1000 }, 'a')).status).toBe(200);
    expect((await get('/analytics/events', { per_page: 1000 }, 'b')).status).toBe(200);
  });

  it('figures leave rounded to their precision: confidences 3 decimals, metres to the millimetre', async () => {
    const decimals = (x: number) => (String(x).split('.')[1] ?? '').length;
    const { out } = await pageAll({});
    const located = out.filter((e) => e.location);
    expect(located.length).toBeGreaterThan(0);
    for (const e of out) {
      expect(decimals(e.confidence as number), String(e.confidence)).toBeLessThanOrEqual(3);
      const l = e.location as { x: number; y: number } | null;
      if (l) expect(Math.max(decimals(l.x), decimals(l.y)), JSON.stringify(l)).toBeLessThanOrEqual(3);
    }
  });
});

describe('GET /analytics/occupancy', () => {
  it('summary, time series per interval and distribution', async () => {
    const r = await get('/analytics/occupancy', { start_time: iso(T0), end_time: iso(T0 + HOUR), interval: '5min' });
    const d = r.body.data;
    expect(d.interval).toBe('5min');
    expect(d.summary).toMatchObject({ peak_occupancy: 3, frames: 3750 });
    expect(Math.abs(d.summary.total_person_hours * 3600 - 545)).toBeLessThan(2);
    expect(d.time_series).toEqual([{ timestamp: iso(T0), occupancy: d.summary.average_occupancy, confidence: 0.9, frames: 3750 }]);
    expect(d.distribution['0_persons']).toBeCloseTo((100 * 40) / 300, 1);
    const sum = Object.values(d.distribution as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(100, 1);
    const def = await get('/analytics/occupancy', { start_time: iso(T0), end_time: iso(T0 + HOUR) }, 'a');
    expect(def.body.interval).toBe('15min');
    expect(def.body.time_series.map((b: { timestamp: string }) => b.timestamp)).toEqual([iso(T0)]);
  });

  it('requires its bounds, takes 5min | 15min | 1hour, and at most 10,000 points', async () => {
    await expect422('/analytics/occupancy', {}, 'start_time');
    await expect422('/analytics/occupancy', { start_time: iso(T0) }, 'end_time');
    await expect422('/analytics/occupancy', { start_time: iso(T0), end_time: iso(T0 + HOUR), interval: '10min' }, 'interval');
    await expect422('/analytics/occupancy', { start_time: '2025-01-01T00:00:00Z', end_time: '2025-12-31T00:00:00Z', interval: '5min' }, 'interval');
    const year = await get('/analytics/occupancy', { start_time: '2025-01-01T00:00:00Z', end_time: '2025-12-31T00:00:00Z', interval: '1hour' });
    expect(year.status).toBe(200);
    expect(year.body.data.time_series).toEqual([]);
    expect(year.body.data.summary).toMatchObject({ average_occupancy: 0, frames: 0 });
  });
});

describe('rate limit', () => {
  it('answers 429 RATE_LIMIT_EXCEEDED once the analytics category is used up (limit lowered live)', async () => {
    const put = await s.api('PUT', '/config', { token, form: 'a', body: { rate_limits: { analytics: { points: 2 } } } });
    expect(put.status, put.text).toBe(200);
    let refused: ApiResponse | undefined;
    for (let i = 0; i < 5 && !refused; i++) {
      const r = await get('/analytics/events', { limit: 1 });
      if (r.status === 429) refused = r;
      else expect(rateHeaders(r.headers).limit).toBe(2);
    }
    expect(refused, 'a request past the limit').toBeDefined();
    expect(refused!.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refused!.body.error.details).toMatchObject({ limit: 2, window: 3600 });
  });
});
