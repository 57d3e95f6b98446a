/**
 * `GET /analytics/healthcare`, `/retail`, `/security`, `/summary`, `/events` and `/occupancy`:
 * thin routes over src/store/analytics/. Each validates its query field by field (unknown or
 * repeated parameters refused, 422 `VALIDATION_ERROR` naming the field), reads the store and
 * returns `{data}`; the HTTP core renders it in the request's form. docs/analytics.md defines
 * every figure and parameter.
 */
import type { Route } from '../core.js';
import { Checker } from '../validate.js';
import type { HasConfig, HasStore } from '../../service/face.js';
import { cursorQuery, cursorTime, decodeQueryCursor, encodeQueryCursor, type CursorValue } from '../cursor.js';
import {
  EVENT_FILTERS,
  events,
  healthcare,
  occupancy,
  retail,
  security,
  summary,
  GRANULARITY_SECONDS,
  HEALTHCARE_METRICS,
  INTERVAL_SECONDS,
  RETAIL_METRICS,
  SECURITY_METRICS,
  SEVERITIES,
  type AnalyticsRange,
  type EventFilter,
  type Granularity,
  type OccupancyInterval,
  type Severity,
} from '../../store/analytics/index.js';

/** What `/analytics/*` uses: the configuration (zones, thresholds) and the store's read functions. */
export type AnalyticsRoutesFace = HasConfig & HasStore;

/** Longest range a summary, occupancy or event query may span. */
export const MAX_RANGE_DAYS = 366;
/** Most points an occupancy time series may have (range / interval). */
export const MAX_SERIES_POINTS = 10_000;
/**
 * Paging of `/analytics/events`, per form as `/pose/history` pages (DECISIONS "Response forms",
 * "Sizes and limits"): Form A `limit` + `cursor`, Form B `page` + `per_page`.
 */
export const EVENTS_LIMIT_A = { default: 100, max: 1000 } as const;
export const EVENTS_PER_PAGE_B = { default: 50, max: 1000 } as const;

const DAY_MS = 86_400_000;
/** Length of each `period`, ending now or at the end of `date`. A month is 30 days. */
export const PERIOD_MS = { hour: 3_600_000, day: DAY_MS, week: 7 * DAY_MS, month: 30 * DAY_MS } as const;
type Period = keyof typeof PERIOD_MS;
const PERIODS = Object.keys(PERIOD_MS) as Period[];
const ENV_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A space before the offset is a `+` that came through a query string unencoded. */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+\- ]\d{2}(?::?\d{2})?)?)?$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function bad(c: Checker, field: string, message: string, received: unknown): undefined {
  c.errors.push({ field, message, received_value: received ?? null });
  return undefined;
}

/**
 * Parses an ISO 8601 date or date-time strictly: `YYYY-MM-DD`, optionally `THH:MM[:SS[.fff]]`
 * and a zone (`Z` or `+HH:MM`); a time without a zone is UTC (the spec's timestamps are UTC), and
 * a space where the offset's sign should be is `+` (an unencoded `+` in a query string).
 * @returns epoch ms, or undefined when the text is not such a time or names no real date
 * @example parseIsoTime('2026-01-05T12:00:00Z') // 1767614400000
 */
export function parseIsoTime(s: string): number | undefined {
  const m = ISO_TIME.exec(s);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [h, mi, sec] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const ms = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return undefined;
  if (h > 24 || mi > 59 || sec > 59 || (h === 24 && (mi > 0 || sec > 0 || ms > 0))) return undefined;
  let offset = 0;
  const z = m[8];
  if (z && z !== 'Z' && z !== 'z') {
    const zm = /^([+\- ])(\d{2}):?(\d{2})?$/.exec(z);
    if (!zm) return undefined;
    const oh = Number(zm[2]);
    const om = Number(zm[3] ?? 0);
    if (oh > 23 || om > 59) return undefined;
    offset = (zm[1] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const t = Date.UTC(y, mo - 1, d, h, mi, sec, ms) - offset * 60_000;
  // Date.UTC maps years 0-99 to 1900-1999; such years are not what anyone means here.
  return y < 1970 || y > 9999 || !Number.isFinite(t) ? undefined : t;
}

/** Refuses unknown and repeated parameters. */
function checkParams(c: Checker, q: URLSearchParams, known: readonly string[]): void {
  c.onlyQuery(q, known);
  const seen = new Set<string>();
  for (const k of q.keys()) {
    if (seen.has(k)) continue;
    seen.add(k);
    if (known.includes(k) && q.getAll(k).length > 1) bad(c, k, `${k} must be given once`, q.getAll(k));
  }
}

/** `environment_id` as sent, undefined when not. */
function environmentSent(c: Checker, q: URLSearchParams): string | undefined {
  const v = c.queryString(q, 'environment_id', 64);
  if (v !== undefined && !ENV_PATTERN.test(v))
    return bad(c, 'environment_id', 'environment_id must be letters, digits, ".", "_" and "-", starting with a letter or digit', v);
  return v;
}

function environment(c: Checker, q: URLSearchParams, svc: AnalyticsRoutesFace): string {
  return environmentSent(c, q) ?? svc.config.get().environment.id;
}

/** The parameters of an events listing, by request name, as its Form A cursor carries them. */
const EVENTS_QUERY: Readonly<Record<string, (v: CursorValue) => boolean>> = {
  environment_id: (v) => typeof v === 'string' && v.length <= 64 && ENV_PATTERN.test(v),
  start_time: cursorTime,
  end_time: cursorTime,
  event_type: (v) => v === null || (EVENT_FILTERS as readonly CursorValue[]).includes(v),
  severity: (v) => v === null || (SEVERITIES as readonly CursorValue[]).includes(v),
};
/** A Form A position in an events listing: the last event's time (epoch µs) and id. */
const isEventPosition = (v: unknown): v is [number, string] =>
  Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && v[1].length <= 512;

/** The paging parameters of the other form, refused with a message that says which to use. */
export function otherFormPaging(c: Checker, q: URLSearchParams, form: 'a' | 'b'): void {
  const [theirs, ours] = form === 'a' ? [['page', 'per_page'], 'limit and cursor'] : [['limit', 'cursor'], 'page and per_page'];
  for (const name of theirs) {
    if (q.has(name)) {
      bad(
        c,
        name,
        `${name} pages Form ${form === 'a' ? 'B' : 'A'} listings; Form ${form.toUpperCase()} pages with ${ours} (or send X-Response-Form: ${form === 'a' ? 'b' : 'a'})`,
        q.get(name),
      );
    }
  }
}

function time(c: Checker, q: URLSearchParams, name: string, required: boolean): number | undefined {
  const s = q.get(name);
  if (s === null) return required ? bad(c, name, `${name} is required (ISO 8601, e.g. 2026-01-05T12:00:00Z)`, null) : undefined;
  const t = parseIsoTime(s);
  return t === undefined ? bad(c, name, `${name} must be an ISO 8601 date or time, e.g. 2026-01-05T12:00:00Z`, s) : t;
}

/** `start_time` and `end_time`: end after start, at most MAX_RANGE_DAYS apart. */
function timeRange(c: Checker, q: URLSearchParams, required: boolean): { start?: number; end?: number } {
  const start = time(c, q, 'start_time', required);
  const end = time(c, q, 'end_time', required);
  if (start !== undefined && end !== undefined) {
    if (end <= start) bad(c, 'end_time', 'end_time must be after start_time', q.get('end_time'));
    else if (end - start > MAX_RANGE_DAYS * DAY_MS) bad(c, 'end_time', `end_time may be at most ${MAX_RANGE_DAYS} days after start_time`, q.get('end_time'));
  }
  return { start, end };
}

/** `period` (default day) ending now, or at the end of the UTC day `date`. */
function periodRange(c: Checker, q: URLSearchParams): { period: Period; start: number; end: number } {
  const period = (c.queryString(q, 'period', 16, PERIODS) as Period | undefined) ?? 'day';
  const dateText = q.get('date');
  let end = Date.now();
  if (dateText !== null) {
    const m = ISO_DATE.exec(dateText);
    const t = m ? parseIsoTime(dateText) : undefined;
    if (t === undefined) bad(c, 'date', 'date must be an ISO 8601 date, YYYY-MM-DD', dateText);
    else end = t + DAY_MS;
  }
  return { period, start: end - PERIOD_MS[period], end };
}

/** A comma-separated list of metric groups, each one of `known`; default all. */
function metricList<T extends string>(c: Checker, q: URLSearchParams, known: readonly T[]): T[] {
  const s = q.get('metrics');
  if (s === null) return [...known];
  const names = s.split(',').map((x) => x.trim());
  const unknown = names.filter((x) => !(known as readonly string[]).includes(x));
  if (names.length === 0 || unknown.length > 0) {
    bad(
      c,
      'metrics',
      `metrics must be a comma-separated list of ${known.join(', ')}${unknown.length ? ` (unknown: ${unknown.map((x) => JSON.stringify(x)).join(', ')})` : ''}`,
      s,
    );
    return [...known];
  }
  return [...new Set(names)] as T[];
}

function periodInfo(range: AnalyticsRange, period: Period) {
  return { period, start: new Date(range.start).toISOString(), end: new Date(range.end).toISOString() };
}

/** A healthcare, retail or security request: environment, period and metrics, validated. */
function periodRequest<T extends string>(
  svc: AnalyticsRoutesFace,
  q: URLSearchParams,
  known: readonly T[],
): { range: AnalyticsRange; period: Period; metrics: T[] } {
  const c = new Checker();
  checkParams(c, q, ['period', 'date', 'metrics', 'environment_id']);
  const env = environment(c, q, svc);
  const p = periodRange(c, q);
  const metrics = metricList(c, q, known);
  c.done();
  return { range: { environmentId: env, start: p.start, end: p.end }, period: p.period, metrics };
}

/** The six `/analytics/*` endpoints (category `analytics`, role `viewer`). */
export function analyticsRoutes(svc: AnalyticsRoutesFace): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/analytics/healthcare',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const { range, period, metrics } = periodRequest(svc, ctx.query, HEALTHCARE_METRICS);
        const figures = await healthcare(svc.store, range, metrics);
        return { data: { environment_id: range.environmentId, time_period: periodInfo(range, period), ...figures } };
      },
    },
    {
      method: 'GET',
      pattern: '/analytics/retail',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const { range, period, metrics } = periodRequest(svc, ctx.query, RETAIL_METRICS);
        const cfg = svc.config.get();
        const figures = await retail(
          svc.store,
          range,
          {
            zones: cfg.environment.zones,
            funnel: {
              entrance: cfg.analytics.retail_entrance_zone,
              product_interaction: cfg.analytics.retail_product_zone,
              checkout_area: cfg.analytics.retail_checkout_zone,
              purchase: cfg.analytics.retail_purchase_zone,
            },
          },
          metrics,
        );
        return { data: { environment_id: range.environmentId, time_period: periodInfo(range, period), ...figures } };
      },
    },
    {
      method: 'GET',
      pattern: '/analytics/security',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const { range, period, metrics } = periodRequest(svc, ctx.query, SECURITY_METRICS);
        const cfg = svc.config.get();
        const figures = await security(svc.store, range, { zones: cfg.environment.zones, crowdThreshold: cfg.analytics.crowd_threshold }, metrics);
        return { data: { environment_id: range.environmentId, time_period: periodInfo(range, period), ...figures } };
      },
    },
    {
      method: 'GET',
      pattern: '/analytics/summary',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const c = new Checker();
        checkParams(c, ctx.query, ['start_time', 'end_time', 'environment_id', 'granularity']);
        const env = environment(c, ctx.query, svc);
        const { start, end } = timeRange(c, ctx.query, true);
        const granularity = (c.queryString(ctx.query, 'granularity', 16, Object.keys(GRANULARITY_SECONDS)) as Granularity | undefined) ?? 'hour';
        c.done();
        const data = await summary(svc.store, { environmentId: env, start: start!, end: end! }, granularity);
        return { data: { environment_id: env, ...data } };
      },
    },
    {
      method: 'GET',
      pattern: '/analytics/events',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const c = new Checker();
        const formA = ctx.form === 'a';
        checkParams(c, ctx.query, ['start_time', 'end_time', 'event_type', 'severity', 'environment_id', 'limit', 'cursor', 'page', 'per_page']);
        otherFormPaging(c, ctx.query, formA ? 'a' : 'b');
        const { start, end } = timeRange(c, ctx.query, false);
        // What the request sent, undefined where it sent nothing.
        const sent: Record<string, CursorValue | undefined> = {
          environment_id: environmentSent(c, ctx.query),
          start_time: start,
          end_time: end,
          event_type: c.queryString(ctx.query, 'event_type', 32, EVENT_FILTERS),
          severity: c.queryString(ctx.query, 'severity', 16, SEVERITIES),
        };
        let q: Record<string, CursorValue> = {
          environment_id: sent.environment_id ?? svc.config.get().environment.id,
          start_time: start ?? null,
          end_time: end ?? null,
          event_type: sent.event_type ?? null,
          severity: sent.severity ?? null,
        };
        let limit: number;
        let after: [number, string] | undefined;
        let offset = 0;
        let page = 1;
        if (formA) {
          const sentLimit = c.queryInt(ctx.query, 'limit', 1, EVENTS_LIMIT_A.max);
          limit = sentLimit ?? EVENTS_LIMIT_A.default;
          const raw = ctx.query.get('cursor');
          if (raw !== null) {
            const cursor = decodeQueryCursor(raw, EVENTS_QUERY, isEventPosition, EVENTS_LIMIT_A.max);
            if (!cursor) bad(c, 'cursor', 'cursor must be a next_cursor of an earlier page of this listing', raw.slice(0, 64));
            else {
              // The cursor carries the listing's query: it continues alone; what is sent with it must agree.
              q = cursorQuery(c, sent, cursor);
              after = cursor.at;
              limit = sentLimit ?? cursor.limit;
            }
          }
        } else {
          page = c.queryInt(ctx.query, 'page', 1, 2 ** 31 - 1) ?? 1;
          limit = c.queryInt(ctx.query, 'per_page', 1, EVENTS_PER_PAGE_B.max) ?? EVENTS_PER_PAGE_B.default;
          offset = (page - 1) * limit;
        }
        c.done();
        const found = await events(svc.store, {
          environmentId: q.environment_id as string,
          ...(q.start_time !== null ? { start: q.start_time as number } : {}),
          ...(q.end_time !== null ? { end: q.end_time as number } : {}),
          ...(q.event_type !== null ? { type: q.event_type as EventFilter } : {}),
          ...(q.severity !== null ? { severity: q.severity as Severity } : {}),
          limit,
          ...(after ? { cursor: { us: after[0], id: after[1] } } : {}),
          offset,
        });
        if (formA) {
          const next = found.next ? encodeQueryCursor([found.next.us, found.next.id], q, limit) : null;
          // Form A: the resource is the body, the events and their cursor paging.
          return {
            data: {
              events: found.events,
              pagination: { limit, returned_count: found.events.length, total_count: found.total_count, has_more: found.has_more, next_cursor: next },
            },
          };
        }
        const totalPages = Math.ceil(found.total_count / limit);
        return {
          data: found.events,
          extra: { pagination: { page, per_page: limit, total: found.total_count, total_pages: totalPages, has_next: page < totalPages, has_prev: page > 1 } },
        };
      },
    },
    {
      method: 'GET',
      pattern: '/analytics/occupancy',
      category: 'analytics',
      role: 'viewer',
      async handler(ctx) {
        const c = new Checker();
        checkParams(c, ctx.query, ['start_time', 'end_time', 'environment_id', 'interval']);
        const env = environment(c, ctx.query, svc);
        const { start, end } = timeRange(c, ctx.query, true);
        const interval = (c.queryString(ctx.query, 'interval', 16, Object.keys(INTERVAL_SECONDS)) as OccupancyInterval | undefined) ?? '15min';
        if (c.errors.length === 0 && start !== undefined && end !== undefined) {
          const points = Math.ceil((end - start) / (INTERVAL_SECONDS[interval] * 1000));
          if (points > MAX_SERIES_POINTS) {
            bad(
              c,
              'interval',
              `interval ${interval} over this range gives ${points} points, at most ${MAX_SERIES_POINTS}: choose a longer interval or a shorter range`,
              interval,
            );
          }
        }
        c.done();
        const data = await occupancy(svc.store, { environmentId: env, start: start!, end: end! }, interval);
        return {
          data: {
            environment_id: env,
            time_period: { start: new Date(start!).toISOString(), end: new Date(end!).toISOString() },
            ...data,
          },
        };
      },
    },
  ];
}
