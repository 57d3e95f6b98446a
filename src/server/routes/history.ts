import { ApiError } from '../../errors.js';
import type { Ctx, Route } from '../core.js';
import { Checker } from '../validate.js';
import type { HasConfig, HasStore, HasSystemView } from '../../service/face.js';
import { frameBody, renderPerson, type Form } from '../../render/frame.js';
import { isoTime } from '../../csi/frame.js';
import {
  AGGREGATION_TYPES,
  availableRange,
  framePage,
  OPEN_FROM,
  OPEN_TO,
  personPage,
  poseQuery,
  QUERY_METRICS,
  trackRecord,
  trajectory,
  type AggregationType,
  type HistoryFilter,
  type QueryMetric,
  type TimeRange,
} from '../../store/history.js';
import { ACTIVITIES } from '../../pose/types.js';
import { bodyObject } from './body.js';
import { confidence, mean, metres, millis, pixels, ratio, seconds, speed } from '../../precision.js';
import { cursorQuery, cursorTime, decodeQueryCursor, encodeQueryCursor, type CursorValue } from '../cursor.js';

/** What `/pose/history`, `/pose/query` and the track routes use: the configuration, the store's read functions and the system's state. */
export type HistoryRoutesFace = HasConfig & HasStore & HasSystemView;

/** Paging bounds (spec Limits, DECISIONS "Sizes and limits"). */
const LIMIT_A = { default: 100, max: 1000 };
const PER_PAGE_B = { default: 50, max: 1000 };
/** Trajectory points a track answer carries at most (spread evenly over the track). */
const TRAJECTORY_POINTS = { default: 1000, max: 10_000 };
/** A pose frame every HOP / rate seconds: 80 ms at the default 100 Hz with a hop of 8. */
const FRAME_SECONDS = 0.08;
/** Rows reach the store within a second of their frame (the sink flushes every 250 ms). */
const STORE_DELAY_S = 1;

const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined || !Number.isFinite(ms) ? null : isoTime(ms));

/** 404 for a range that holds nothing, with what is stored (spec `POSE_DATA_NOT_FOUND`). */
async function notFound(svc: HistoryRoutesFace, env: string, requested: Partial<TimeRange>, what: string): Promise<never> {
  const available = await availableRange(svc.store, env);
  throw new ApiError('POSE_DATA_NOT_FOUND', `no pose data ${what}`, {
    environment_id: env,
    requested_range: { start: iso(requested.from), end: iso(requested.to) },
    available_range: available ? { start: iso(available.from), end: iso(available.to) } : null,
  });
}

/** A start/end pair from the query: both required in Form B, start not after end. */
function readRange(c: Checker, q: URLSearchParams, required: boolean): Partial<TimeRange> {
  const from = c.queryTime(q, 'start_time', required);
  const to = c.queryTime(q, 'end_time', required);
  if (from !== undefined && to !== undefined && from > to)
    c.errors.push({ field: 'start_time', message: 'start_time must not be after end_time', received_value: q.get('start_time') });
  return { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
}

/** The parameters of a Form A history listing, by request name, as a cursor carries them. */
const HISTORY_A_QUERY: Readonly<Record<string, (v: CursorValue) => boolean>> = {
  environment_id: (v) => typeof v === 'string' && v.length > 0 && v.length <= 64,
  start_time: cursorTime,
  end_time: cursorTime,
  person_id: (v) => v === null || (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 2 ** 31 - 1),
  track_id: (v) => v === null || (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 2 ** 31 - 1),
  confidence_threshold: (v) => typeof v === 'number' && v >= 0 && v <= 1,
};
/** A Form A position: the storage order (`seq`) of the last frame returned. */
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function historyA(svc: HistoryRoutesFace): (ctx: Ctx) => Promise<{ data: unknown }> {
  return async (ctx) => {
    const c = new Checker();
    c.onlyQuery(ctx.query, ['start_time', 'end_time', 'limit', 'cursor', 'person_id', 'track_id', 'confidence_threshold', 'environment_id']);
    const range = readRange(c, ctx.query, false);
    const sentLimit = c.queryInt(ctx.query, 'limit', 1, LIMIT_A.max);
    // What the request sent, undefined where it sent nothing.
    const sent: Record<string, CursorValue | undefined> = {
      environment_id: c.queryString(ctx.query, 'environment_id', 64),
      start_time: range.from,
      end_time: range.to,
      person_id: c.queryInt(ctx.query, 'person_id', 0, 2 ** 31 - 1),
      track_id: c.queryInt(ctx.query, 'track_id', 0, 2 ** 31 - 1),
      confidence_threshold: c.queryNumber(ctx.query, 'confidence_threshold', 0, 1),
    };
    const raw = ctx.query.get('cursor');
    let after = 0;
    let limit = sentLimit ?? LIMIT_A.default;
    let q: Record<string, CursorValue>;
    if (raw !== null) {
      const cursor = decodeQueryCursor(raw, HISTORY_A_QUERY, isSeq, LIMIT_A.max);
      if (!cursor) {
        c.errors.push({ field: 'cursor', message: 'cursor must be a next_cursor of an earlier page of this listing', received_value: raw.slice(0, 64) });
        q = {};
      } else {
        // The cursor carries the listing's query: it continues alone; what is sent with it must agree.
        q = cursorQuery(c, sent, cursor);
        after = cursor.at;
        limit = sentLimit ?? cursor.limit;
      }
    } else {
      q = {
        environment_id: sent.environment_id ?? svc.config.get().environment.id,
        start_time: sent.start_time ?? null,
        end_time: sent.end_time ?? null,
        person_id: sent.person_id ?? null,
        track_id: sent.track_id ?? null,
        confidence_threshold: sent.confidence_threshold ?? 0,
      };
    }
    c.done();
    const env = q.environment_id as string;
    const f: HistoryFilter = {
      environmentId: env,
      from: (q.start_time as number | null) ?? OPEN_FROM,
      to: (q.end_time as number | null) ?? OPEN_TO,
      minConfidence: q.confidence_threshold as number,
      ...(q.person_id !== null ? { personId: q.person_id as number } : {}),
      ...(q.track_id !== null ? { trackId: q.track_id as number } : {}),
    };
    const page = await framePage(svc.store, f, after, limit);
    if (page.total === 0) {
      const requested = { ...(q.start_time !== null ? { from: q.start_time as number } : {}), ...(q.end_time !== null ? { to: q.end_time as number } : {}) };
      return notFound(svc, env, requested, 'in the requested range');
    }
    const last = page.frames.at(-1);
    return {
      data: {
        poses: page.frames.map(({ frame }) =>
          frameBody(
            frame,
            'a',
            { routerCount: 1, pipeline: 'live' },
            frame.persons.map((p) => renderPerson(p, 'a', { includeKeypoints: true, includeDensePose: false })),
          ),
        ),
        pagination: {
          total_count: page.total,
          returned_count: page.frames.length,
          has_more: page.hasMore,
          next_cursor: page.hasMore && last ? encodeQueryCursor(last.seq, q, limit) : null,
        },
      },
    };
  };
}

function historyB(svc: HistoryRoutesFace): (ctx: Ctx) => Promise<{ data: unknown; extra: Record<string, unknown> }> {
  return async (ctx) => {
    const c = new Checker();
    c.onlyQuery(ctx.query, ['start_time', 'end_time', 'environment_id', 'person_id', 'track_id', 'min_confidence', 'page', 'per_page']);
    const range = readRange(c, ctx.query, true);
    const env = c.queryString(ctx.query, 'environment_id', 64) ?? svc.config.get().environment.id;
    const pid = c.queryInt(ctx.query, 'person_id', 0, 2 ** 31 - 1);
    const tid = c.queryInt(ctx.query, 'track_id', 0, 2 ** 31 - 1);
    const conf = c.queryNumber(ctx.query, 'min_confidence', 0, 1) ?? 0;
    const page = c.queryInt(ctx.query, 'page', 1, 2 ** 31 - 1) ?? 1;
    const perPage = c.queryInt(ctx.query, 'per_page', 1, PER_PAGE_B.max) ?? PER_PAGE_B.default;
    c.done();
    const f: HistoryFilter = {
      environmentId: env,
      from: range.from!,
      to: range.to!,
      minConfidence: conf,
      ...(pid !== undefined ? { personId: pid } : {}),
      ...(tid !== undefined ? { trackId: tid } : {}),
    };
    const r = await personPage(svc.store, f, (page - 1) * perPage, perPage);
    if (r.total === 0) return notFound(svc, env, range, 'in the requested range');
    const totalPages = Math.ceil(r.total / perPage);
    return {
      data: r.persons.map((s) => ({
        timestamp: isoTime(s.time),
        frame_id: s.frameId,
        environment_id: s.environmentId,
        ...renderPerson(s.person, 'b', { includeKeypoints: true, includeDensePose: false }),
      })),
      extra: { pagination: { page, per_page: perPage, total: r.total, total_pages: totalPages, has_next: page < totalPages, has_prev: page > 1 } },
    };
  };
}

/** `POST /pose/query`: the body's `query` object, validated field by field. */
function readQuery(svc: HistoryRoutesFace, ctx: Ctx) {
  const b = bodyObject(ctx);
  const c = new Checker();
  c.only(b, '', ['query']);
  const q = c.object(b.query, 'query', true);
  c.done();
  c.only(q, 'query', ['time_range', 'filters', 'aggregation', 'environment_id', 'limit']);
  const tr = c.object(q!.time_range, 'query.time_range', true);
  c.only(tr, 'query.time_range', ['start', 'end']);
  const from = c.time(tr?.start, 'query.time_range.start', true);
  const to = c.time(tr?.end, 'query.time_range.end', true);
  if (from !== undefined && to !== undefined && from > to)
    c.errors.push({ field: 'query.time_range.start', message: 'query.time_range.start must not be after query.time_range.end', received_value: tr!.start });
  const filters = c.object(q!.filters, 'query.filters', false);
  c.only(filters, 'query.filters', ['person_count', 'confidence', 'activity']);
  const pc = c.object(filters?.person_count, 'query.filters.person_count', false);
  c.only(pc, 'query.filters.person_count', ['min', 'max']);
  const pmin = c.int(pc?.min, 'query.filters.person_count.min', 0, 1000);
  const pmax = c.int(pc?.max, 'query.filters.person_count.max', 0, 1000);
  if (pmin !== undefined && pmax !== undefined && pmin > pmax)
    c.errors.push({ field: 'query.filters.person_count.min', message: 'query.filters.person_count.min must not be above max', received_value: pmin });
  const conf = c.object(filters?.confidence, 'query.filters.confidence', false);
  c.only(conf, 'query.filters.confidence', ['min']);
  const minConf = c.number(conf?.min, 'query.filters.confidence.min', 0, 1) ?? 0;
  let activities: string[] | undefined;
  if (filters?.activity !== undefined) {
    const a = filters.activity;
    if (!Array.isArray(a) || a.length === 0 || a.some((x) => !(ACTIVITIES as readonly unknown[]).includes(x)))
      c.errors.push({
        field: 'query.filters.activity',
        message: `query.filters.activity must be a non-empty array of: ${ACTIVITIES.join(', ')}`,
        received_value: a,
      });
    else activities = [...new Set(a as string[])];
  }
  const agg = c.object(q!.aggregation, 'query.aggregation', false);
  c.only(agg, 'query.aggregation', ['type', 'metrics']);
  const type = (c.string(agg?.type, 'query.aggregation.type', 32, false, AGGREGATION_TYPES) ?? 'none') as AggregationType;
  let metrics: QueryMetric[] = [...QUERY_METRICS];
  if (agg?.metrics !== undefined) {
    const m = agg.metrics;
    if (!Array.isArray(m) || m.length === 0 || m.some((x) => !(QUERY_METRICS as readonly unknown[]).includes(x)))
      c.errors.push({
        field: 'query.aggregation.metrics',
        message: `query.aggregation.metrics must be a non-empty array of: ${QUERY_METRICS.join(', ')}`,
        received_value: m,
      });
    else metrics = [...new Set(m as QueryMetric[])];
  }
  const env = c.string(q!.environment_id, 'query.environment_id', 64) ?? svc.config.get().environment.id;
  const limit = c.int(q!.limit, 'query.limit', 1, LIMIT_A.max) ?? LIMIT_A.max;
  c.done();
  return {
    metrics,
    query: {
      environmentId: env,
      from: from!,
      to: to!,
      minConfidence: minConf,
      aggregation: type,
      limit,
      ...(pmin !== undefined ? { personCountMin: pmin } : {}),
      ...(pmax !== undefined ? { personCountMax: pmax } : {}),
      ...(activities ? { activities } : {}),
    },
  };
}

/** A track as the spec's Track resource. */
async function trackAnswer(svc: HistoryRoutesFace, ctx: Ctx): Promise<Record<string, unknown>> {
  const c = new Checker();
  const tid = Number(ctx.params.track_id);
  if (!/^\d+$/.test(ctx.params.track_id ?? '') || !Number.isSafeInteger(tid) || tid > 2 ** 31 - 1)
    c.errors.push({ field: 'track_id', message: 'track_id must be a non-negative integer', received_value: ctx.params.track_id ?? null });
  c.onlyQuery(ctx.query, ['start_time', 'end_time', 'include_trajectory', 'environment_id', 'max_points']);
  const range = readRange(c, ctx.query, false);
  const withTrajectory = c.queryBool(ctx.query, 'include_trajectory') ?? false;
  const maxPoints = c.queryInt(ctx.query, 'max_points', 1, TRAJECTORY_POINTS.max) ?? TRAJECTORY_POINTS.default;
  const env = c.queryString(ctx.query, 'environment_id', 64) ?? svc.config.get().environment.id;
  c.done();
  const r: TimeRange = { from: range.from ?? OPEN_FROM, to: range.to ?? OPEN_TO };
  const t = await trackRecord(svc.store, env, tid, r);
  if (!t) {
    const whole = await trackRecord(svc.store, env, tid, { from: OPEN_FROM, to: OPEN_TO });
    if (!whole) throw new ApiError('RESOURCE_NOT_FOUND', `no track ${tid} in environment ${env}`, { track_id: tid, environment_id: env });
    throw new ApiError('POSE_DATA_NOT_FOUND', `track ${tid} has no pose data in the requested range`, {
      track_id: tid,
      requested_range: { start: iso(range.from), end: iso(range.to) },
      available_range: { start: iso(whole.firstSeen), end: iso(whole.lastSeen) },
    });
  }
  const cfg = svc.config.get();
  // Active: the system runs and the tracker may still hold it (seen within its max age, plus the store's delay).
  const horizon = (cfg.detection.tracking_max_age * FRAME_SECONDS + STORE_DELAY_S) * 1000;
  const active = svc.system.state === 'running' && Date.now() - t.lastSeen <= horizon;
  const out: Record<string, unknown> = {
    track_id: t.trackId,
    person_id: t.trackId,
    environment_id: t.environmentId,
    first_seen: isoTime(t.firstSeen),
    last_seen: isoTime(t.lastSeen),
    duration_seconds: Math.round((t.lastSeen - t.firstSeen) / 1000),
    total_frames: t.frames,
    average_confidence: confidence(t.averageConfidence),
    status: active ? 'active' : 'ended',
    last_activity: t.lastActivity,
    statistics: {
      // Metres and m/s on the floor plan, else pixels and pixels per second of the view.
      movement_distance: t.distanceUnit === 'm' ? metres(t.movementDistance) : pixels(t.movementDistance),
      average_speed: t.distanceUnit === 'm' ? speed(t.averageSpeed) : pixels(t.averageSpeed),
      time_stationary: seconds(t.timeStationary),
      time_moving: seconds(t.timeMoving),
      distance_unit: t.distanceUnit,
    },
  };
  if (withTrajectory) {
    const tr = await trajectory(svc.store, env, tid, r, maxPoints);
    out.trajectory = tr.points.map((p) => ({
      timestamp: isoTime(p.time),
      // Out of the view there is no box, so no centre (docs/service.md "Reference view").
      ...(p.centerX !== null && p.centerY !== null ? { center_x: pixels(p.centerX), center_y: pixels(p.centerY) } : {}),
      in_view: p.inView,
      confidence: confidence(p.confidence),
      ...(p.floorX !== null && p.floorY !== null ? { floor_x: metres(p.floorX), floor_y: metres(p.floorY) } : {}),
    }));
    out.trajectory_points = tr.total;
  }
  return out;
}

/** `GET /pose/history` (both paging styles), `POST /pose/query`, `GET /pose/tracking/{track_id}`. */
export function historyRoutes(svc: HistoryRoutesFace): Route[] {
  const a = historyA(svc);
  const b = historyB(svc);
  return [
    {
      method: 'GET',
      pattern: '/pose/history',
      category: 'pose_data',
      role: 'viewer',
      // Form A pages by cursor, Form B by page and per_page (DECISIONS "Response forms").
      handler: (ctx) => ((ctx.form as Form) === 'a' ? a(ctx) : b(ctx)),
    },
    {
      method: 'POST',
      pattern: '/pose/query',
      category: 'pose_data',
      role: 'viewer',
      async handler(ctx) {
        const { query, metrics } = readQuery(svc, ctx);
        const r = await poseQuery(svc.store, query);
        const want = new Set(metrics);
        return {
          data: {
            results: r.rows.map((row) => ({
              timestamp: isoTime(row.time),
              ...(row.frameId !== undefined ? { frame_id: row.frameId } : {}),
              frames: row.frames,
              ...(want.has('person_count') ? { person_count: mean(row.personCount) } : {}),
              // 0 when no person of the row passes the confidence floor (docs/service.md).
              ...(want.has('avg_confidence') ? { avg_confidence: confidence(row.avgConfidence ?? 0) } : {}),
              ...(want.has('max_confidence') ? { max_confidence: confidence(row.maxConfidence ?? 0) } : {}),
              ...(want.has('activities') ? { activities: Object.fromEntries(Object.entries(row.activities).map(([k, v]) => [k, ratio(v)])) } : {}),
            })),
            query_metadata: {
              execution_time_ms: millis(r.executionMs),
              total_records_scanned: r.scanned,
              cache_hit: false,
              aggregation: query.aggregation,
              returned_count: r.rows.length,
              truncated: r.truncated,
            },
          },
        };
      },
    },
    {
      method: 'GET',
      pattern: '/pose/tracking/:track_id',
      category: 'pose_data',
      role: 'viewer',
      handler: async (ctx) => ({ data: await trackAnswer(svc, ctx) }),
    },
  ];
}
