/**
 * `/analytics/events` (docs/analytics.md "Events"): pages of the stored events, newest first,
 * from `activity_events`, or from `alerts` for the `alert` type. Not a figure of one domain: it
 * lists the rows the healthcare (falls, activity) and security (intrusions) figures count, so it
 * has its own file, named for its route, with the event types, groups and severities it filters
 * by.
 */
import type { Store } from '../store.js';
import { confidence, metres } from '../../precision.js';
import { iso, num, numOrNull } from './sql.js';

/** The types of `activity_events` rows, as the events carry them (src/pose/types.ts). */
export const EVENT_TYPES = ['fall_detection', 'fall_recovery', 'activity_change', 'inactivity', 'intrusion'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/**
 * The spec's `event_type` values, groups of the above, and `alert`: the alerts as raised (the
 * `alerts` table) rather than the events recorded with them.
 */
export const EVENT_GROUPS = { fall: ['fall_detection', 'fall_recovery'], activity: ['activity_change'], alert: [] } as const satisfies Record<
  string,
  readonly EventType[]
>;
/** What `/analytics/events?event_type=` takes: a type name events carry, or a group. */
export type EventFilter = EventType | keyof typeof EVENT_GROUPS;
export const EVENT_FILTERS: readonly EventFilter[] = [...EVENT_TYPES, ...(Object.keys(EVENT_GROUPS) as Array<keyof typeof EVENT_GROUPS>)];
export const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** The filters of an `activity_events` page and of its count, one text so the total counts what the pages list. */
const EVENTS_WHERE = `WHERE ts >= $start AND ts < $end AND environment_id = $env
  AND ($types = '' OR list_contains(string_split($types, ','), type))
  AND ($severity = '' OR severity = $severity)`;
/** The filters of an `alerts` page and of its count (as {@link EVENTS_WHERE}). */
const ALERTS_WHERE = `WHERE ts >= $start AND ts < $end AND environment_id = $env
  AND ($severity = '' OR severity = $severity)`;

/** The events SQL, by the name `ANALYTICS_SQL` lists it under. */
export const EVENTS_SQL = {
  eventsPage: `SELECT ts, epoch_us(ts) AS us, event_id AS id, type, severity, environment_id, person_id, track_id, confidence,
       location_x, location_y, metadata, actions_taken AS actions, NULL::VARCHAR AS zone
FROM activity_events
${EVENTS_WHERE}
  AND (epoch_us(ts) < $cursor_us OR (epoch_us(ts) = $cursor_us AND event_id < $cursor_id))
ORDER BY ts DESC, event_id DESC
LIMIT $limit OFFSET $offset`,

  eventsCount: `SELECT count(*) AS n FROM activity_events
${EVENTS_WHERE}`,

  alertsPage: `SELECT ts, epoch_us(ts) AS us, alert_id AS id, type, severity, environment_id, person_id, track_id, confidence,
       location_x, location_y, metadata, actions_required AS actions, zone
FROM alerts
${ALERTS_WHERE}
  AND (epoch_us(ts) < $cursor_us OR (epoch_us(ts) = $cursor_us AND alert_id < $cursor_id))
ORDER BY ts DESC, alert_id DESC
LIMIT $limit OFFSET $offset`,

  alertsCount: `SELECT count(*) AS n FROM alerts
${ALERTS_WHERE}`,
} as const;

/** Where a page of events ends: the last event's time (epoch µs) and id. */
export interface EventCursor {
  us: number;
  id: string;
}

export interface EventsQuery {
  environmentId: string;
  /** Epoch ms; default: everything stored. */
  start?: number;
  end?: number;
  /** A type name the events carry, or a group (`fall`, `activity`, `alert`); default every event. */
  type?: EventFilter;
  severity?: Severity;
  /** 1..1000, default 100. */
  limit?: number;
  /** Events after this one (Form A); or */
  cursor?: EventCursor;
  /** events to skip (Form B pages). */
  offset?: number;
}

/** An activity event of the spec (Form B "Activity event"); `zone` on alerts. */
export interface EventOut {
  event_id: string;
  type: string;
  severity: string;
  timestamp: string | null;
  environment_id: string;
  person_id: number | null;
  track_id: number | null;
  confidence: number;
  location: { x: number; y: number } | null;
  metadata: Record<string, unknown>;
  actions_taken: string[];
  zone?: string;
}

export interface EventsPage {
  events: EventOut[];
  total_count: number;
  has_more: boolean;
  /** Where the page ended, when more follow. */
  next: EventCursor | null;
}

/** Earliest and latest times the bounds of an open range stand for. */
const ALL_TIME = { start: Date.UTC(1970, 0, 1), end: Date.UTC(9999, 11, 31) };

function parseMetadata(v: unknown): Record<string, unknown> {
  if (typeof v !== 'string') return {};
  try {
    const m: unknown = JSON.parse(v);
    return m !== null && typeof m === 'object' && !Array.isArray(m) ? (m as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * A page of events, newest first (docs/analytics.md "Events"): `activity_events` rows, or with
 * type `alert` the `alerts` table's rows in the same shape.
 * @param store the open store
 * @param q filters, page size and where the page starts (a cursor or an offset)
 * @returns the page, the total matching the filters and where the page ended
 */
export async function events(store: Store, q: EventsQuery): Promise<EventsPage> {
  const limit = Math.max(1, Math.min(1000, Math.floor(q.limit ?? 100)));
  const alertsTable = q.type === 'alert';
  const types = q.type === undefined || alertsTable ? [] : q.type in EVENT_GROUPS ? EVENT_GROUPS[q.type as keyof typeof EVENT_GROUPS] : [q.type];
  const filter = {
    start: new Date(q.start ?? ALL_TIME.start),
    end: new Date(q.end ?? ALL_TIME.end),
    env: q.environmentId,
    severity: q.severity ?? '',
  };
  const page = {
    ...filter,
    cursor_us: q.cursor?.us ?? Number.MAX_SAFE_INTEGER,
    cursor_id: q.cursor?.id ?? '',
    limit: limit + 1,
    offset: Math.max(0, Math.floor(q.offset ?? 0)),
  };
  // Type names are our constants (EVENT_TYPES), joined for the one bound parameter.
  const rows = alertsTable ? await store.query(EVENTS_SQL.alertsPage, page) : await store.query(EVENTS_SQL.eventsPage, { ...page, types: types.join(',') });
  const [c] = alertsTable
    ? await store.query(EVENTS_SQL.alertsCount, filter)
    : await store.query(EVENTS_SQL.eventsCount, { ...filter, types: types.join(',') });
  const more = rows.length > limit;
  const shown = more ? rows.slice(0, limit) : rows;
  const last = shown[shown.length - 1];
  return {
    events: shown.map((r) => {
      const x = numOrNull(r.location_x);
      const y = numOrNull(r.location_y);
      const e: EventOut = {
        event_id: String(r.id),
        type: String(r.type),
        severity: String(r.severity),
        timestamp: iso(r.ts),
        environment_id: String(r.environment_id),
        person_id: numOrNull(r.person_id),
        track_id: numOrNull(r.track_id),
        // Every event and alert of the operators has one; a row stored without is 0.
        confidence: confidence(num(r.confidence)),
        location: x === null || y === null ? null : { x: metres(x), y: metres(y) },
        metadata: parseMetadata(r.metadata),
        actions_taken: Array.isArray(r.actions) ? r.actions.map(String) : [],
      };
      if (typeof r.zone === 'string') e.zone = r.zone;
      return e;
    }),
    total_count: num(c?.n),
    has_more: more,
    next: more && last ? { us: num(last.us), id: String(last.id) } : null,
  };
}
