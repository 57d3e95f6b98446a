/**
 * Pose history, the pose query and tracks, through the real server over a real DuckDB file: a
 * scripted store whose answers are known, and the live pipeline storing while a client pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activity, PersonPose, PoseFrame } from '../../src/pose/types.js';
import { seededDataDir, tempDirs } from '../helpers/dataDir.js';
import { startServer, until, waitForStatus, type TestServer } from '../helpers/server.js';

const T0 = Date.parse('2026-11-20T10:00:00.000Z');
/** The live cadence: a pose frame every 80 ms. */
const DT = 80;
/** 15 s of frames. */
const N = 188;
const iso = (ms: number) => new Date(ms).toISOString();
const tempDir = tempDirs('csipose-history-');

/** A person at a floor position with a box and 17 keypoints, as the pipeline stores one. */
function person(slot: number, trackId: number, confidence: number, x: number, y: number, activity: Activity): PersonPose {
  const kp = new Float32Array(51);
  for (let k = 0; k < 17; k++) kp.set([100 + 10 * x + k, 200 + k, 0.9], 3 * k);
  return {
    slot,
    trackId,
    trackAge: 1,
    confidence,
    keypoints: kp,
    bbox: Float32Array.of(100 * x, 100, 60, 160),
    floor: { x, y },
    activity,
    activityConfidence: 0.9,
  };
}

/**
 * Track 1 walks along x at 1 m/s for 10 s, then stands still for 5 s (confidence 0.9); track 2
 * sits at (4, 4) the whole time (confidence 0.4). Environment `lab`.
 */
function scripted(): PoseFrame[] {
  const frames: PoseFrame[] = [];
  for (let i = 0; i < N; i++) {
    const t = T0 + i * DT;
    const s = (i * DT) / 1000;
    const walking = s < 10;
    const x = walking ? 1 + s : 11;
    frames.push({
      frameId: i,
      time: t,
      sourceId: 'scripted',
      environmentId: 'lab',
      persons: [person(0, 1, 0.9, x, 2, walking ? 'walking' : 'standing'), person(1, 2, 0.4, 4, 4, 'sitting')],
      processingMs: 5,
      modelVersion: 'scripted',
      csiQuality: 1,
    });
  }
  return frames;
}

describe('history over a scripted store', () => {
  let s: TestServer;
  let token: string;

  beforeAll(async () => {
    const dataDir = await seededDataDir(tempDir, scripted());
    s = await startServer({ dataDir, rateLimitScale: 100, config: { environment: { id: 'lab' } } });
    token = await s.login();
  });
  afterAll(async () => {
    await s?.close();
  });

  const range = { start_time: iso(T0), end_time: iso(T0 + N * DT) };

  it('Form B pages person records in storage order, with the spec pagination, readable although the system never ran', async () => {
    const r = await s.api('GET', '/pose/history', { token, query: { ...range, per_page: 50, page: 2 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.pagination).toEqual({ page: 2, per_page: 50, total: 2 * N, total_pages: Math.ceil((2 * N) / 50), has_next: true, has_prev: true });
    expect(r.body.data).toHaveLength(50);
    const first = r.body.data[0];
    // Row 50 in storage order: frame 25, its first person (track 1).
    expect(first).toMatchObject({
      timestamp: iso(T0 + 25 * DT),
      frame_id: 25,
      environment_id: 'lab',
      person_id: 1,
      track_id: 1,
      confidence: 0.9,
      activity: 'walking',
    });
    expect(first.keypoints).toHaveLength(17);
    expect(first.keypoints[0]).toMatchObject({ name: 'nose', confidence: 0.9, visible: true });
    expect(first.bounding_box).toEqual({ x: 300, y: 100, width: 60, height: 160 });
    const last = await s.api('GET', '/pose/history', { token, query: { ...range, per_page: 50, page: 8 } });
    expect(last.body.pagination).toMatchObject({ has_next: false, has_prev: true });
    expect(last.body.data).toHaveLength(2 * N - 7 * 50);
  });

  it('applies every filter: person, track, confidence, environment, time', async () => {
    const two = await s.api('GET', '/pose/history', { token, query: { ...range, person_id: 2, per_page: 1000 } });
    expect(two.body.pagination.total).toBe(N);
    expect(new Set(two.body.data.map((d: { track_id: number }) => d.track_id))).toEqual(new Set([2]));
    const conf = await s.api('GET', '/pose/history', { token, query: { ...range, min_confidence: 0.5, per_page: 1000 } });
    expect(conf.body.pagination.total).toBe(N);
    expect(conf.body.data.every((d: { confidence: number }) => d.confidence >= 0.5)).toBe(true);
    const track = await s.api('GET', '/pose/history', { token, query: { ...range, track_id: 1, per_page: 1 } });
    expect(track.body.pagination.total).toBe(N);
    const slice = await s.api('GET', '/pose/history', { token, query: { start_time: iso(T0 + 10 * DT), end_time: iso(T0 + 19 * DT), per_page: 1000 } });
    expect(slice.body.data.map((d: { frame_id: number }) => d.frame_id)).toEqual([
      10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19,
    ]);
    const other = await s.api('GET', '/pose/history', { token, query: { ...range, environment_id: 'elsewhere' } });
    expect(other.status).toBe(404);
  });

  it('Form A pages frames by cursor: each frame with its persons, every frame once', async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) {
      const r = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 40, ...(cursor ? { cursor } : {}) } });
      expect(r.status, r.text).toBe(200);
      for (const p of r.body.poses) seen.push(p.frame_id);
      expect(r.body.pagination).toMatchObject({ total_count: N, returned_count: r.body.poses.length });
      if (!r.body.pagination.has_more) {
        expect(r.body.pagination.next_cursor).toBeNull();
        break;
      }
      cursor = r.body.pagination.next_cursor;
    }
    expect(seen).toEqual(Array.from({ length: N }, (_, i) => i));
    const one = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 1, person_id: 2, confidence_threshold: 0.3 } });
    expect(one.body.poses[0]).toMatchObject({ frame_id: 0, metadata: { environment_id: 'lab' } });
    expect(one.body.poses[0].persons.map((p: { id: number }) => p.id)).toEqual([2]);
    // A frame holding no person above the threshold still lists; its persons are filtered.
    const high = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 1, confidence_threshold: 0.95 } });
    expect(high.body.poses[0].persons).toEqual([]);
  });

  it('a Form A cursor carries its query: following next_cursor alone continues the same listing', async () => {
    const query = { start_time: iso(T0 + 10 * DT), end_time: iso(T0 + 150 * DT), person_id: 2, confidence_threshold: 0.3 };
    const first = await s.api('GET', '/pose/history', { token, form: 'a', query: { ...query, limit: 30 } });
    expect(first.status, first.text).toBe(200);
    const frames: number[] = first.body.poses.map((p: { frame_id: number }) => p.frame_id);
    let cursor: string | null = first.body.pagination.next_cursor;
    while (cursor) {
      // Nothing but the cursor: the filters, the range and the page size travel in it.
      const r = await s.api('GET', '/pose/history', { token, form: 'a', query: { cursor } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.pagination).toMatchObject({ total_count: 141 });
      expect(r.body.poses.length).toBeLessThanOrEqual(30);
      for (const p of r.body.poses) {
        frames.push(p.frame_id);
        expect(p.persons.map((x: { id: number }) => x.id)).toEqual([2]);
      }
      cursor = r.body.pagination.next_cursor;
    }
    expect(frames).toEqual(Array.from({ length: 141 }, (_, i) => 10 + i));
    // Sent again with the cursor: the same values (a time in another notation is the same instant) and another page size are fine.
    const same = await s.api('GET', '/pose/history', {
      token,
      form: 'a',
      query: { ...query, start_time: iso(T0 + 10 * DT).replace('Z', '+00:00'), limit: 5, cursor: first.body.pagination.next_cursor },
    });
    expect(same.status, same.text).toBe(200);
    expect(same.body.poses.map((p: { frame_id: number }) => p.frame_id)).toEqual([40, 41, 42, 43, 44]);
    // A parameter that disagrees with the cursor's query, or that its query did not have: 422 naming it.
    for (const [field, value] of [
      ['person_id', 1],
      ['confidence_threshold', 0.5],
      ['end_time', iso(T0 + 151 * DT)],
      ['track_id', 2],
      ['environment_id', 'elsewhere'],
    ] as const) {
      const r = await s.api('GET', '/pose/history', { token, form: 'a', query: { cursor: first.body.pagination.next_cursor, [field]: value } });
      expect(r.status, `${field}: ${r.text}`).toBe(422);
      expect(r.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual([field]);
      expect(r.body.error.details.field_errors[0].message).toMatch(/cursor/);
    }
    // A cursor made up or altered is a 422 naming it, never a 5xx: it is checked as strictly as parameters are.
    const q = { environment_id: 'lab', start_time: null, end_time: null, person_id: null, track_id: null, confidence_threshold: 0 };
    const forged = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const bad of [
      forged({ v: 1, at: 5, q: { ...q, start_time: 9e15 }, n: 10 }),
      forged({ v: 1, at: -1, q, n: 10 }),
      forged({ v: 1, at: 5, q, n: 1001 }),
      forged({ v: 1, at: 5, q: { ...q, confidence_threshold: 2 }, n: 10 }),
      forged({ v: 1, at: 5, q: { ...q, extra: 1 }, n: 10 }),
      forged({ v: 2, at: 5, q, n: 10 }),
      forged([1, 'x']),
      'A'.repeat(3000),
    ]) {
      const r = await s.api('GET', '/pose/history', { token, form: 'a', query: { cursor: bad } });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual(['cursor']);
    }
    const fine = await s.api('GET', '/pose/history', { token, form: 'a', query: { cursor: forged({ v: 1, at: 0, q, n: 3 }) } });
    expect(fine.body.poses.map((p: { frame_id: number }) => p.frame_id)).toEqual([0, 1, 2]);
  });

  it('answers 404 POSE_DATA_NOT_FOUND with the requested and available ranges, 422 for bad ranges, bounds and parameters', async () => {
    const empty = await s.api('GET', '/pose/history', { token, query: { start_time: '2020-01-01T00:00:00Z', end_time: '2020-01-02T00:00:00Z' } });
    expect(empty.status).toBe(404);
    expect(empty.body.error.code).toBe('POSE_DATA_NOT_FOUND');
    expect(empty.body.error.details).toMatchObject({
      requested_range: { start: '2020-01-01T00:00:00.000Z', end: '2020-01-02T00:00:00.000Z' },
      available_range: { start: iso(T0), end: iso(T0 + (N - 1) * DT) },
    });
    const a = await s.api('GET', '/pose/history', { token, form: 'a', query: { start_time: '2020-01-01T00:00:00Z', end_time: '2020-01-02T00:00:00Z' } });
    expect(a.status).toBe(404);
    expect(a.body.error.details.available_range.start).toBe(iso(T0));
    const cases: Array<[Record<string, string | number>, string, 'a' | 'b']> = [
      [{ end_time: range.end_time }, 'start_time', 'b'],
      [{ start_time: range.start_time }, 'end_time', 'b'],
      [{ start_time: range.end_time, end_time: range.start_time }, 'start_time', 'b'],
      [{ ...range, per_page: 1001 }, 'per_page', 'b'],
      [{ ...range, page: 0 }, 'page', 'b'],
      [{ ...range, min_confidence: 1.5 }, 'min_confidence', 'b'],
      [{ ...range, person_id: 'x' }, 'person_id', 'b'],
      [{ ...range, limit: 10 }, 'limit', 'b'],
      [{ limit: 1001 }, 'limit', 'a'],
      [{ cursor: 'not-a-cursor' }, 'cursor', 'a'],
      [{ page: 2 }, 'page', 'a'],
      [{ confidence_threshold: -0.1 }, 'confidence_threshold', 'a'],
      [{ start_time: 'yesterday' }, 'start_time', 'a'],
    ];
    for (const [query, field, form] of cases) {
      const r = await s.api('GET', '/pose/history', { token, form, query });
      expect(r.status, `${form} ${JSON.stringify(query)}`).toBe(422);
      const fields = form === 'a' ? r.body.error.details.field_errors.map((e: { field: string }) => e.field) : [r.body.error.details.field];
      expect(fields, JSON.stringify(query)).toContain(field);
    }
    // A cursor of another query (other filters) is refused too.
    const first = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 1 } });
    const mixed = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 1, person_id: 2, cursor: first.body.pagination.next_cursor } });
    expect(mixed.status).toBe(422);
  });

  it('POST /pose/query summarises per minute, hour or day, and returns raw frames, with the metrics asked for', async () => {
    const query = (q: Record<string, unknown>) =>
      s.api('POST', '/pose/query', { token, body: { query: { time_range: { start: range.start_time, end: range.end_time }, ...q } } });
    const minute = await query({ aggregation: { type: 'minute_summary' } });
    expect(minute.status, minute.text).toBe(200);
    const [bucket] = minute.body.data.results;
    const walkFrames = 125; // frames within the first 10 s
    expect(bucket).toEqual({
      timestamp: '2026-11-20T10:00:00.000Z',
      frames: N,
      person_count: 2,
      avg_confidence: 0.65,
      max_confidence: 0.9,
      // Shares to 4 decimals (docs/service.md "Conventions").
      activities: {
        walking: Math.round((walkFrames / (2 * N)) * 10_000) / 10_000,
        standing: Math.round(((N - walkFrames) / (2 * N)) * 10_000) / 10_000,
        sitting: 0.5,
      },
    });
    expect(minute.body.data.query_metadata).toMatchObject({
      total_records_scanned: 3 * N,
      cache_hit: false,
      aggregation: 'minute_summary',
      returned_count: 1,
      truncated: false,
    });
    expect(minute.body.data.query_metadata.execution_time_ms).toBeGreaterThan(0);
    const sitting = await query({
      filters: { activity: ['sitting'], confidence: { min: 0.3 } },
      aggregation: { type: 'hourly_summary', metrics: ['avg_confidence', 'activities'] },
    });
    expect(sitting.body.data.results).toEqual([{ timestamp: '2026-11-20T10:00:00.000Z', frames: N, avg_confidence: 0.4, activities: { sitting: 1 } }]);
    const raw = await query({ filters: { confidence: { min: 0.5 } }, aggregation: { type: 'none', metrics: ['person_count', 'max_confidence'] }, limit: 3 });
    expect(raw.body.data.results).toEqual(
      [0, 1, 2].map((i) => ({ timestamp: iso(T0 + i * DT), frame_id: i, frames: 1, person_count: 2, max_confidence: 0.9 })),
    );
    expect(raw.body.data.query_metadata.truncated).toBe(true);
    const none = await query({ filters: { person_count: { min: 3 } }, aggregation: { type: 'daily_summary' } });
    expect(none.body.data.results).toEqual([]);
    const a = await s.api('POST', '/pose/query', {
      token,
      form: 'a',
      body: { query: { time_range: { start: range.start_time, end: range.end_time }, aggregation: { type: 'daily_summary', metrics: ['person_count'] } } },
    });
    expect(a.body).toMatchObject({ results: [{ timestamp: '2026-11-20T00:00:00.000Z', person_count: 2, frames: N }], query_metadata: { cache_hit: false } });
    const bad: Array<[unknown, string]> = [
      [{}, 'query'],
      [{ query: {} }, 'query.time_range'],
      [{ query: { time_range: { start: range.end_time, end: range.start_time } } }, 'query.time_range.start'],
      [{ query: { time_range: { start: range.start_time, end: range.end_time }, aggregation: { type: 'weekly_summary' } } }, 'query.aggregation.type'],
      [{ query: { time_range: { start: range.start_time, end: range.end_time }, aggregation: { metrics: ['mood'] } } }, 'query.aggregation.metrics'],
      [{ query: { time_range: { start: range.start_time, end: range.end_time }, filters: { activity: ['dancing'] } } }, 'query.filters.activity'],
      [
        { query: { time_range: { start: range.start_time, end: range.end_time }, filters: { person_count: { min: 3, max: 1 } } } },
        'query.filters.person_count.min',
      ],
      [{ query: { time_range: { start: range.start_time, end: range.end_time }, filters: { confidence: { min: 2 } } } }, 'query.filters.confidence.min'],
      [{ query: { time_range: { start: range.start_time, end: range.end_time }, limit: 5000 } }, 'query.limit'],
    ];
    for (const [body, field] of bad) {
      const r = await s.api('POST', '/pose/query', { token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field, JSON.stringify(body)).toBe(field);
    }
  });

  it('GET /pose/tracking/{id}: the track record with its movement statistics and an evenly spread trajectory', async () => {
    const r = await s.api('GET', '/pose/tracking/1', { token, query: { include_trajectory: true, max_points: 10 } });
    expect(r.status, r.text).toBe(200);
    const t = r.body.data;
    expect(t).toMatchObject({
      track_id: 1,
      person_id: 1,
      environment_id: 'lab',
      first_seen: iso(T0),
      last_seen: iso(T0 + (N - 1) * DT),
      duration_seconds: 15,
      total_frames: N,
      average_confidence: 0.9,
      status: 'ended',
      last_activity: 'standing',
    });
    // 1 m/s for 10 s, then still: steps of 0.08 m every 80 ms.
    expect(t.statistics.distance_unit).toBe('m');
    expect(t.statistics.movement_distance).toBeCloseTo(10, 1);
    expect(t.statistics.time_moving).toBeCloseTo(10, 0);
    expect(t.statistics.time_stationary).toBeCloseTo(5, 0);
    expect(t.statistics.time_moving + t.statistics.time_stationary).toBeCloseTo(((N - 1) * DT) / 1000, 5);
    expect(t.statistics.average_speed).toBeCloseTo(10 / 14.96, 2);
    expect(t.trajectory_points).toBe(N);
    expect(t.trajectory.length).toBeLessThanOrEqual(10);
    expect(t.trajectory[0]).toEqual({ timestamp: iso(T0), center_x: 130, center_y: 180, in_view: true, confidence: 0.9, floor_x: 1, floor_y: 2 });
    const noTrajectory = await s.api('GET', '/pose/tracking/2', { token, form: 'a' });
    expect(noTrajectory.body.trajectory).toBeUndefined();
    expect(noTrajectory.body.statistics).toMatchObject({ movement_distance: 0, time_moving: 0 });
    const outside = await s.api('GET', '/pose/tracking/1', { token, query: { start_time: '2020-01-01T00:00:00Z', end_time: '2020-01-02T00:00:00Z' } });
    expect(outside.status).toBe(404);
    expect(outside.body.error).toMatchObject({ code: 'POSE_DATA_NOT_FOUND', details: { available_range: { start: iso(T0) } } });
    const unknown = await s.api('GET', '/pose/tracking/99');
    expect(unknown.status).toBe(401);
    const missing = await s.api('GET', '/pose/tracking/99', { token });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('RESOURCE_NOT_FOUND');
    for (const [path, field] of [
      ['/pose/tracking/abc', 'track_id'],
      ['/pose/tracking/-1', 'track_id'],
    ] as const) {
      const bad = await s.api('GET', path, { token });
      expect(bad.status, path).toBe(422);
      expect(bad.body.error.details.field).toBe(field);
    }
    const badQuery = await s.api('GET', '/pose/tracking/1', { token, query: { include_trajectory: 'yes' } });
    expect(badQuery.body.error.details.field).toBe('include_trajectory');
  });
});

describe('history while the pipeline stores', () => {
  it('pages without skipping or repeating a record while new frames keep arriving', async () => {
    const s = await startServer({ model: true, autostart: true, rateLimitScale: 100 });
    try {
      const token = await s.login();
      await waitForStatus(s, token, 'running');
      const start = iso(Date.now() - 60_000);
      const end = iso(Date.now() + 600_000);
      await until(
        async () =>
          (await s.api('GET', '/pose/history', { token, query: { start_time: start, end_time: end, per_page: 1 } })).body.pagination?.total > 30
            ? true
            : undefined,
        'stored persons',
      );
      // Form B: small pages while the store grows, as a client does: the next page once this one
      // is full (has_next); the last, partial page again later, for what arrived meanwhile.
      const keys: string[] = [];
      let page = 1;
      for (let request = 0; request < 16; request++) {
        const r = await s.api('GET', '/pose/history', { token, query: { start_time: start, end_time: end, per_page: 5, page } });
        expect(r.status, r.text).toBe(200);
        const rows = r.body.data.map((d: { timestamp: string; frame_id: number; person_id: number }) => `${d.timestamp}|${d.frame_id}|${d.person_id}`);
        const known = keys.length - (page - 1) * 5;
        // A page read again starts with what it held before: rows never move.
        expect(rows.slice(0, known)).toEqual(keys.slice((page - 1) * 5));
        keys.push(...rows.slice(known));
        if (r.body.pagination.has_next) page++;
        await new Promise((ok) => setTimeout(ok, 60));
      }
      expect(new Set(keys).size).toBe(keys.length);
      // The pages read are the first rows of the store in storage order, none missing.
      const stored = await s.svc.store.query<{ ts: Date; frame_id: number; person_id: number }>(
        'SELECT ts, frame_id, person_id FROM pose_persons WHERE environment_id = ? ORDER BY seq, slot LIMIT ?',
        ['default', keys.length],
      );
      expect(keys).toEqual(stored.map((r) => `${r.ts.toISOString()}|${r.frame_id}|${r.person_id}`));

      // Form A: the cursor walks every frame once while frames keep coming.
      const frames: number[] = [];
      const times: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 8; i++) {
        const r = await s.api('GET', '/pose/history', { token, form: 'a', query: { limit: 7, ...(cursor ? { cursor } : {}) } });
        for (const p of r.body.poses) {
          frames.push(p.frame_id);
          times.push(p.timestamp);
        }
        if (!r.body.pagination.has_more) break;
        cursor = r.body.pagination.next_cursor;
        await new Promise((ok) => setTimeout(ok, 60));
      }
      const all = await s.svc.store.query<{ ts: Date }>('SELECT ts FROM pose_frames WHERE environment_id = ? ORDER BY seq LIMIT ?', ['default', times.length]);
      expect(times).toEqual(all.map((r) => r.ts.toISOString()));
      expect(new Set(times).size).toBe(times.length);
    } finally {
      await s.close();
    }
  });
});
