/**
 * Every analytics figure of `/analytics/*` as SQL over the stored tables (`pose_frames`,
 * `pose_persons`, `activity_events`, `alerts`, `system_metrics`), aggregated inside DuckDB.
 *
 * Rules every query here follows (docs/analytics.md defines each figure):
 * - Constant SQL text, every value bound: the environment, the time bounds, thresholds and the
 *   zone polygons (as JSON parameters unnested with `from_json`). `Store.query` caches the
 *   prepared statements by text.
 * - Each scan starts with `ts >= $start AND ts < $end` on the table itself, so DuckDB's min/max
 *   zonemaps skip the row groups outside the range (rows are appended in time order), and only the
 *   columns a figure needs are read. Nothing is pulled into JS to be aggregated: a query returns a
 *   handful of rows (one per zone, bucket or event).
 * - Time a person spends doing something is counted per track: each stored person row "holds"
 *   until that track's next row, at most {@link HOLD_CAP_SECONDS} (a gap longer than that is a
 *   dropout, not presence), and the track's last row in the range holds 0 s. At the live cadence
 *   (12.5 frames/s) a stay of N seconds thus counts N minus at most one frame interval.
 * - Every figure is a number (DECISIONS "Numbers are numbers"), never null and never made up: a
 *   count or a sum over nothing is 0, and so is a ratio, average or score over nothing (no
 *   tracked time, no visitors, no frames), next to the count that says there was nothing
 *   (`frames`, `visitor_count`, `sleep_sessions`...). docs/analytics.md defines each case.
 * - Figures are rounded once, by kind (src/precision.ts: metres to the millimetre, seconds to the
 *   millisecond, confidences to 3 decimals, shares to 4, percentages to 2).
 */
import { compileZone, type CompiledZone, type ZoneConfig } from '../pose/zones.js';
import type { QueryParam, Row, Store } from './store.js';
import type { DeepReadonly } from '../config/schema.js';
import { confidence, hours, mean, metres, millis, minutes, percent, ratio, seconds } from '../precision.js';

/** Zones as the configuration holds them (read-only). */
export type Zones = ReadonlyArray<DeepReadonly<ZoneConfig>>;

/** A person row counts as present until its track's next row, at most this long (s). */
export const HOLD_CAP_SECONDS = 2;
/** A lying session needs this much lying time to count as sleep (minutes). */
export const SLEEP_MIN_MINUTES = 20;
/** Lying stretches of one track closer together than this merge into one session (minutes). */
export const SLEEP_BREAK_MINUTES = 5;
/**
 * Floor speed (m/s, the tracker's velocity) from which a person is moving: the activity operator's
 * walking speed. The stored velocity is the tracker's smoothed speed, 0 while it holds the person
 * still (`MOTION_WALK_PROBABILITY` in src/pose/tracker.ts), so the model's floor jitter is not
 * counted as movement (docs/analytics.md "How jitter is kept out").
 */
export const MOVING_SPEED = 0.3;
/** The service stores one `system_metrics` sample every this many seconds while it runs. */
export const METRICS_SAMPLE_SECONDS = 10;
/**
 * Distance (m) within which a floor position counts as on a zone's edge. src/pose/zones.ts uses
 * 1e-9 on the model's float64 positions; the store keeps them as float32 (FLOAT), which moves a
 * point by up to ~4e-6 m at 100 m from the origin, so a point the live operator saw on an edge
 * must still count as on it here: 10 micrometres, far below any real position's precision.
 */
const EDGE_EPS = 1e-5;

/** An environment and a half-open time range [start, end), epoch ms. */
export interface AnalyticsRange {
  environmentId: string;
  start: number;
  end: number;
}

export const HEALTHCARE_METRICS = ['fall_events', 'activity_summary', 'mobility_score', 'sleep_quality'] as const;
export type HealthcareMetric = (typeof HEALTHCARE_METRICS)[number];
export const RETAIL_METRICS = ['traffic', 'zones', 'conversion_funnel', 'heat_map'] as const;
export type RetailMetric = (typeof RETAIL_METRICS)[number];
export const SECURITY_METRICS = ['intrusion_events', 'perimeter_monitoring', 'crowd_analysis'] as const;
export type SecurityMetric = (typeof SECURITY_METRICS)[number];

/** The zones of the retail conversion funnel, by stage: zone ids of `environment.zones`, '' for none. */
export interface FunnelZones {
  entrance: string;
  product_interaction: string;
  checkout_area: string;
  purchase: string;
}
export const FUNNEL_STAGES = ['entrance', 'product_interaction', 'checkout_area', 'purchase'] as const;
const FUNNEL_SETTING: Record<(typeof FUNNEL_STAGES)[number], string> = {
  entrance: 'analytics.retail_entrance_zone',
  product_interaction: 'analytics.retail_product_zone',
  checkout_area: 'analytics.retail_checkout_zone',
  purchase: 'analytics.retail_purchase_zone',
};

export type Granularity = 'hour' | 'day' | 'week';
export const GRANULARITY_SECONDS: Record<Granularity, number> = { hour: 3600, day: 86_400, week: 604_800 };
export type OccupancyInterval = '5min' | '15min' | '1hour';
export const INTERVAL_SECONDS: Record<OccupancyInterval, number> = { '5min': 300, '15min': 900, '1hour': 3600 };

/** The types of `activity_events` rows, as the events carry them (src/pose/types.ts). */
export const EVENT_TYPES = ['fall_detection', 'fall_recovery', 'activity_change', 'inactivity', 'intrusion'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/**
 * The spec's `event_type` values, groups of the above, and `alert`: the alerts as raised (the
 * `alerts` table) rather than the events recorded with them.
 */
export const EVENT_GROUPS = { fall: ['fall_detection', 'fall_recovery'], activity: ['activity_change'], alert: [] } as const satisfies Record<string, readonly EventType[]>;
/** What `/analytics/events?event_type=` takes: a type name events carry, or a group. */
export type EventFilter = EventType | keyof typeof EVENT_GROUPS;
export const EVENT_FILTERS: readonly EventFilter[] = [...EVENT_TYPES, ...(Object.keys(EVENT_GROUPS) as Array<keyof typeof EVENT_GROUPS>)];
export const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

const iso = (v: unknown): string | null => (v instanceof Date ? v.toISOString() : typeof v === 'number' && Number.isFinite(v) ? new Date(v).toISOString() : null);
const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number.isFinite(num(v)) ? num(v) : null);
/** `a / b`, or 0 when there is nothing to divide by (the figure's docs say which count tells). */
const share = (a: number, b: number): number => (b > 0 ? a / b : 0);

function rangeParams(r: AnalyticsRange): Record<string, QueryParam> {
  return { start: new Date(r.start), end: new Date(r.end), env: r.environmentId };
}

const SEVERITY_RANK = `CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END`;
const RANK_SEVERITY = ['low', 'low', 'medium', 'high', 'critical'];

// ---------------------------------------------------------------------------------------------
// SQL building blocks (constant text, assembled once at load)
// ---------------------------------------------------------------------------------------------

/**
 * `p`: the tracked person rows of the range, with `speed`, the tracker's floor speed (null without
 * a floor position: the velocity is then in view pixels); `h`: the same with `hold_s`, the seconds
 * each row holds (until the track's next row, capped), and `prev_us`, the time of the track's
 * previous row (one sort serves both).
 */
const HELD_P = `
p AS (
  SELECT track_id, epoch_us(ts) AS us, activity, confidence,
         floor_x::DOUBLE AS fx, floor_y::DOUBLE AS fy,
         CASE WHEN floor_x IS NOT NULL AND floor_y IS NOT NULL AND velocity_x IS NOT NULL AND velocity_y IS NOT NULL
              THEN sqrt(velocity_x::DOUBLE * velocity_x + velocity_y::DOUBLE * velocity_y) END AS speed
  FROM pose_persons
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND track_id IS NOT NULL
)`;

const HELD = `${HELD_P},
h AS (
  SELECT *, least(coalesce(lead(us) OVER w - us, 0), $cap_us) / 1e6 AS hold_s, lag(us) OVER w AS prev_us
  FROM p WINDOW w AS (PARTITION BY track_id ORDER BY us)
)`;

/**
 * `zs`: the zones from the `$zones` JSON parameter: index, id, bounding box (grown by EDGE_EPS),
 * schedule, and `edges`, the polygon's edges from (x1, y1) to (x1 + dx, y2), with l2 = dx^2 + dy^2
 * and len = sqrt(l2).
 */
const ZONES = `
zs AS (
  SELECT s.z, s.id, s.minx, s.miny, s.maxx, s.maxy, s.sched, s.mask, s.smin, s.emin, s.off, s.edges FROM (
    SELECT unnest(from_json($zones::JSON, '[{"z":"INTEGER","id":"VARCHAR","minx":"DOUBLE","miny":"DOUBLE","maxx":"DOUBLE","maxy":"DOUBLE","sched":"BOOLEAN","mask":"INTEGER","smin":"INTEGER","emin":"INTEGER","off":"INTEGER","edges":[{"x1":"DOUBLE","y1":"DOUBLE","y2":"DOUBLE","dx":"DOUBLE","dy":"DOUBLE","l2":"DOUBLE","len":"DOUBLE"}]}]')) AS s
  )
)`;

/**
 * Whether (fx, fy) lies within EDGE_EPS of an edge: its distance to the edge's line is at most
 * EDGE_EPS (|cross product| <= EDGE_EPS x length) and its projection falls on the edge, give or take
 * EDGE_EPS at either end; a degenerate edge (a repeated vertex) is its point.
 */
const EDGE_ON = `CASE WHEN e.l2 > 0
    THEN ((fx - e.x1) * e.dy - (fy - e.y1) * e.dx) * ((fx - e.x1) * e.dy - (fy - e.y1) * e.dx) <= ${EDGE_EPS * EDGE_EPS} * e.l2
     AND (fx - e.x1) * e.dx + (fy - e.y1) * e.dy BETWEEN -${EDGE_EPS} * e.len AND e.l2 + ${EDGE_EPS} * e.len
    ELSE (fx - e.x1) * (fx - e.x1) + (fy - e.y1) * (fy - e.y1) <= ${EDGE_EPS * EDGE_EPS} END`;
/** 1 when a ray from (fx, fy) towards +x crosses the edge (half-open in y, as zones.ts). */
const EDGE_CROSS = `CASE WHEN (e.y2 > fy) <> (e.y1 > fy) AND fx < e.x1 + (fy - e.y1) * e.dx / e.dy THEN 1 ELSE 0 END`;

/**
 * Zone membership of the rows of CTE `hf` (`track_id`, `us`, `prev_us`, `hold_s`, `fx`, `fy`):
 * `inz(z, track_id, us, prev_us, hold_s)`, one row per (row, zone) with the row's floor position
 * inside the zone by the even-odd rule, a point on an edge or a vertex counting as inside (as
 * `pointInPolygon` in src/pose/zones.ts). Rows outside a zone's bounding box never reach the edge
 * test, which runs over the zone's edge list per row (no join, no grouping).
 */
const MEMBERSHIP = `
cand AS (
  SELECT hf.track_id, hf.us, hf.prev_us, hf.hold_s, hf.fx, hf.fy, zs.z, zs.edges
  FROM hf JOIN zs ON hf.fx BETWEEN zs.minx AND zs.maxx AND hf.fy BETWEEN zs.miny AND zs.maxy
),
inz AS (
  SELECT z, track_id, us, prev_us, hold_s FROM cand
  WHERE list_sum(list_transform(edges, lambda e: ${EDGE_CROSS})) % 2 = 1
     OR list_bool_or(list_transform(edges, lambda e: ${EDGE_ON}))
)`;

/** `hf`: the held rows with a floor position (a row without one is in no zone). */
const HF = `
hf AS (
  SELECT * FROM h WHERE fx IS NOT NULL AND fy IS NOT NULL
)`;

/** Whether each zone's schedule is open at the row's time (`scheduleActive` of src/pose/zones.ts). */
const SCHEDULE_OPEN = `(NOT sched OR CASE
    WHEN smin = emin THEN today = 1
    WHEN smin < emin THEN today = 1 AND minute >= smin AND minute < emin
    ELSE (today = 1 AND minute >= smin) OR (yday = 1 AND minute < emin) END)`;

const SQL = {
  activityTime: `WITH ${HELD}
SELECT
  coalesce(sum(hold_s) FILTER (WHERE activity = 'walking'), 0) AS walking_s,
  coalesce(sum(hold_s) FILTER (WHERE activity = 'sitting'), 0) AS sitting_s,
  coalesce(sum(hold_s) FILTER (WHERE activity = 'lying'), 0) AS lying_s,
  coalesce(sum(hold_s) FILTER (WHERE activity = 'standing'), 0) AS standing_s,
  coalesce(sum(hold_s) FILTER (WHERE activity = 'falling'), 0) AS falling_s,
  coalesce(sum(hold_s) FILTER (WHERE activity IS NOT NULL), 0) AS labelled_s,
  coalesce(sum(hold_s) FILTER (WHERE activity IS NOT NULL AND speed >= $moving), 0) AS moving_s,
  coalesce(sum(hold_s), 0) AS tracked_s
FROM h`,

  sleep: `WITH ${HELD_P},
l AS (
  SELECT track_id, us,
         least(coalesce(lead(us) OVER w - us, 0), $cap_us) / 1e6 AS hold_s,
         coalesce(activity = 'lying', false) AS lying,
         coalesce(speed >= $moving, false) AS moving,
         coalesce(lag(activity) OVER w = 'lying', false) AS prev_lying,
         coalesce(lag(speed) OVER w >= $moving, false) AS prev_moving,
         -- Gaps and islands: constant along each run of lying (or not lying) rows of a track.
         row_number() OVER w - row_number() OVER (PARTITION BY track_id, coalesce(activity = 'lying', false) ORDER BY us) AS run
  FROM p WINDOW w AS (PARTITION BY track_id ORDER BY us)
),
runs AS (
  SELECT track_id, run, min(us) AS r0, max(us + hold_s * 1e6) AS r1, sum(hold_s) AS lying_s,
         count(*) FILTER (WHERE moving AND prev_lying AND NOT prev_moving) AS moves
  FROM l WHERE lying GROUP BY track_id, run
),
runs2 AS (
  SELECT *, CASE WHEN r0 - lag(r1) OVER (PARTITION BY track_id ORDER BY r0) < $break_us THEN 0 ELSE 1 END AS fresh FROM runs
),
runs3 AS (
  SELECT *, sum(fresh) OVER (PARTITION BY track_id ORDER BY r0 ROWS UNBOUNDED PRECEDING) AS session FROM runs2
),
sessions AS (
  SELECT track_id, session, min(r0) AS s0, max(r1) AS s1, sum(lying_s) AS lying_s, count(*) AS runs, sum(moves) AS moves
  FROM runs3 GROUP BY track_id, session
)
SELECT count(*) AS sessions,
       coalesce(sum(lying_s), 0) AS sleep_s,
       coalesce(sum((s1 - s0) / 1e6), 0) AS in_bed_s,
       coalesce(sum(runs - 1 + moves), 0) AS restless
FROM sessions WHERE lying_s >= $sleep_s`,

  falls: `WITH e AS (
  SELECT ts, type, severity, track_id, person_id, location_x, location_y,
         coalesce(TRY_CAST(metadata->>'$.fall_time' AS DOUBLE), epoch_ms(ts)::DOUBLE) AS fall_ms,
         TRY_CAST(metadata->>'$.down_seconds' AS DOUBLE) AS down_s,
         coalesce(TRY_CAST(metadata->>'$.recovery_detected' AS BOOLEAN), false) AS recovered
  FROM activity_events
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND type IN ('fall_detection', 'fall_recovery')
)
SELECT track_id, fall_ms, any_value(person_id) AS person_id,
       max(${SEVERITY_RANK}) FILTER (WHERE type = 'fall_detection') AS severity_rank,
       min(down_s) FILTER (WHERE recovered) AS response_s,
       arg_min(location_x, ts) AS x, arg_min(location_y, ts) AS y
FROM e GROUP BY track_id, fall_ms
HAVING count(*) FILTER (WHERE type = 'fall_detection') > 0
ORDER BY fall_ms, track_id`,

  traffic: `WITH p AS (
  SELECT track_id, ts FROM pose_persons
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND track_id IS NOT NULL
),
t AS (SELECT track_id, epoch_ms(min(ts)) AS t0, epoch_ms(max(ts)) AS t1 FROM p GROUP BY track_id),
hrs AS (SELECT date_trunc('hour', ts) AS hr, count(DISTINCT track_id) AS n FROM p GROUP BY hr)
SELECT (SELECT count(*) FROM t) AS visitors,
       (SELECT avg(t1 - t0) FROM t) AS dwell_ms,
       (SELECT hr FROM hrs ORDER BY n DESC, hr LIMIT 1) AS peak_hour,
       (SELECT n FROM hrs ORDER BY n DESC, hr LIMIT 1) AS peak_count`,

  retailZones: `WITH ${HELD}, ${ZONES}, ${HF}, ${MEMBERSHIP},
zr AS (SELECT track_id, us, hold_s, z FROM inz),
firsts AS (SELECT z, track_id, min(us) AS t_first, sum(hold_s) AS dwell_s FROM zr GROUP BY z, track_id),
buy AS (SELECT track_id, max(us) AS t_last FROM zr WHERE z = $f4 GROUP BY track_id),
s1 AS (
  SELECT track_id, min(us) AS t FROM zr WHERE z = $f1 GROUP BY track_id
  UNION ALL SELECT DISTINCT track_id, 0 AS t FROM hf WHERE $f1 < 0
),
s2 AS (
  SELECT zr.track_id, min(zr.us) AS t FROM zr JOIN s1 ON s1.track_id = zr.track_id AND zr.us >= s1.t WHERE zr.z = $f2 GROUP BY zr.track_id
  UNION ALL SELECT track_id, t FROM s1 WHERE $f2 < 0
),
s3 AS (
  SELECT zr.track_id, min(zr.us) AS t FROM zr JOIN s2 ON s2.track_id = zr.track_id AND zr.us >= s2.t WHERE zr.z = $f3 GROUP BY zr.track_id
  UNION ALL SELECT track_id, t FROM s2 WHERE $f3 < 0
),
s4 AS (
  SELECT zr.track_id, min(zr.us) AS t FROM zr JOIN s3 ON s3.track_id = zr.track_id AND zr.us >= s3.t WHERE zr.z = $f4 GROUP BY zr.track_id
  UNION ALL SELECT track_id, t FROM s3 WHERE $f4 < 0
)
SELECT 'zone' AS kind, f.z AS z, count(*) AS a, sum(f.dwell_s) AS b, count(b.track_id) FILTER (WHERE b.t_last >= f.t_first) AS c, NULL::BIGINT AS d
FROM firsts f LEFT JOIN buy b ON b.track_id = f.track_id GROUP BY f.z
UNION ALL
SELECT 'funnel', NULL,
       CASE WHEN $f1 < 0 THEN 0 ELSE (SELECT count(*) FROM s1) END,
       CASE WHEN $f2 < 0 THEN 0 ELSE (SELECT count(*) FROM s2) END,
       CASE WHEN $f3 < 0 THEN 0 ELSE (SELECT count(*) FROM s3) END,
       CASE WHEN $f4 < 0 THEN 0 ELSE (SELECT count(*) FROM s4) END`,

  intrusions: `WITH ${ZONES},
a AS (
  SELECT ts, epoch_us(ts) AS us, alert_id, zone, track_id, severity, metadata->>'$.person_count' AS pc, metadata->>'$.threat_level' AS tl
  FROM alerts
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND type = 'intrusion'
),
az AS (SELECT a.*, zs.z FROM a LEFT JOIN zs ON zs.id = a.zone),
h AS (
  SELECT track_id, epoch_us(ts) AS us, NULL::BIGINT AS prev_us, 0.0 AS hold_s, floor_x::DOUBLE AS fx, floor_y::DOUBLE AS fy
  FROM pose_persons
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND track_id IN (SELECT track_id FROM a WHERE track_id IS NOT NULL)
), ${HF}, ${MEMBERSHIP},
gone AS (
  SELECT az.alert_id, min(hf.us) AS left_us
  FROM az JOIN hf ON hf.track_id = az.track_id AND hf.us > az.us
  LEFT JOIN inz ON inz.track_id = hf.track_id AND inz.us = hf.us AND inz.z = az.z
  WHERE az.z IS NOT NULL AND inz.us IS NULL
  GROUP BY az.alert_id
)
SELECT az.ts, az.alert_id, az.zone, az.severity, az.pc, az.tl, az.track_id, (gone.left_us - az.us) / 1e6 AS response_s
FROM az LEFT JOIN gone ON gone.alert_id = az.alert_id
ORDER BY az.ts, az.alert_id`,

  perimeter: `WITH ${HELD}, ${ZONES}, ${HF}, ${MEMBERSHIP},
ent AS (
  SELECT i.z, i.us FROM inz i
  LEFT JOIN inz j ON j.track_id = i.track_id AND j.us = i.prev_us AND j.z = i.z
  WHERE j.us IS NULL
),
sa AS (SELECT ent.z, zs.sched, zs.mask, zs.smin, zs.emin, ent.us / 1000.0 + zs.off * 60000.0 AS lms FROM ent JOIN zs ON zs.z = ent.z),
sb AS (SELECT *, floor(lms / 86400000.0)::BIGINT AS dayi FROM sa),
sc AS (SELECT *, (lms - dayi * 86400000.0) / 60000.0 AS minute, ((dayi + 4) % 7 + 7) % 7 AS wd FROM sb),
sd AS (SELECT *, (mask::BIGINT >> wd) & 1 AS today, (mask::BIGINT >> ((wd + 6) % 7)) & 1 AS yday FROM sc)
SELECT z, count(*) AS entries, count(*) FILTER (WHERE ${SCHEDULE_OPEN}) AS watched
FROM sd GROUP BY z ORDER BY z`,

  crowd: `WITH f AS (
  SELECT ts, seq, person_count FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
),
g AS (
  SELECT person_count, person_count >= $threshold AS crowd, lag(person_count >= $threshold) OVER (ORDER BY ts, seq) AS prev FROM f
)
SELECT max(person_count) AS max_occ, avg(person_count) AS avg_occ, count(*) AS frames,
       count(*) FILTER (WHERE crowd AND NOT coalesce(prev, false)) AS formations
FROM g`,

  summaryFrames: `WITH f AS (
  SELECT ts, person_count, processing_ms FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
),
m AS (SELECT max(person_count) AS mx FROM f)
SELECT count(*) AS frames, avg(processing_ms) AS processing_ms, (SELECT mx FROM m) AS peak,
       (SELECT min(ts) FROM f, m WHERE f.person_count = m.mx) AS peak_ts
FROM f`,

  summaryPersons: `SELECT count(*) AS detections, count(DISTINCT track_id) AS persons, avg(confidence) AS confidence
FROM pose_persons WHERE ts >= $start AND ts < $end AND environment_id = $env`,

  summaryEvents: `SELECT
  (SELECT count(*) FROM activity_events WHERE ts >= $start AND ts < $end AND environment_id = $env AND type = 'activity_change') AS changes,
  (SELECT count(DISTINCT (track_id, coalesce(TRY_CAST(metadata->>'$.fall_time' AS DOUBLE), epoch_ms(ts)::DOUBLE)))
     FROM activity_events WHERE ts >= $start AND ts < $end AND environment_id = $env AND type = 'fall_detection') AS falls,
  (SELECT count(*) FROM alerts WHERE ts >= $start AND ts < $end AND environment_id = $env) AS alerts`,

  uptime: `SELECT count(*) AS samples, coalesce(sum(error_count), 0) AS errors FROM system_metrics WHERE ts >= $start AND ts < $end`,

  breakdown: `WITH p AS (
  SELECT time_bucket(to_microseconds($width_us), ts) AS b, track_id, confidence
  FROM pose_persons WHERE ts >= $start AND ts < $end AND environment_id = $env
),
agg AS (SELECT b, count(*) AS detections, count(DISTINCT track_id) AS persons, avg(confidence) AS confidence FROM p GROUP BY b),
buckets AS (
  SELECT b FROM generate_series(time_bucket(to_microseconds($width_us), $start::TIMESTAMP), $end::TIMESTAMP - INTERVAL 1 MICROSECOND, to_microseconds($width_us)) AS g(b)
)
SELECT buckets.b, coalesce(agg.detections, 0) AS detections, coalesce(agg.persons, 0) AS persons, agg.confidence
FROM buckets LEFT JOIN agg ON agg.b = buckets.b ORDER BY buckets.b`,

  occupancySummary: `WITH f AS (
  SELECT epoch_us(ts) AS us, seq, ts, person_count FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
),
fh AS (SELECT *, least(coalesce(lead(us) OVER (ORDER BY us, seq) - us, 0), $cap_us) / 1e6 AS hold_s FROM f),
m AS (SELECT max(person_count) AS mx FROM f)
SELECT count(*) AS frames, avg(person_count) AS avg_occ, (SELECT mx FROM m) AS peak,
       (SELECT min(ts) FROM f, m WHERE f.person_count = m.mx) AS peak_ts,
       coalesce(sum(person_count * hold_s), 0) AS person_s,
       count(*) FILTER (WHERE person_count = 0) AS n0,
       count(*) FILTER (WHERE person_count = 1) AS n1,
       count(*) FILTER (WHERE person_count = 2) AS n2,
       count(*) FILTER (WHERE person_count = 3) AS n3,
       count(*) FILTER (WHERE person_count >= 4) AS n4
FROM fh`,

  occupancySeries: `SELECT time_bucket(to_microseconds($width_us), ts) AS b, count(*) AS frames, avg(person_count) AS occ,
       sum(avg_confidence * person_count) / nullif(sum(person_count) FILTER (WHERE avg_confidence IS NOT NULL), 0) AS confidence
FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
GROUP BY b ORDER BY b`,

  eventsPage: `SELECT ts, epoch_us(ts) AS us, event_id AS id, type, severity, environment_id, person_id, track_id, confidence,
       location_x, location_y, metadata, actions_taken AS actions, NULL::VARCHAR AS zone
FROM activity_events
WHERE ts >= $start AND ts < $end AND environment_id = $env
  AND ($types = '' OR list_contains(string_split($types, ','), type))
  AND ($severity = '' OR severity = $severity)
  AND (epoch_us(ts) < $cursor_us OR (epoch_us(ts) = $cursor_us AND event_id < $cursor_id))
ORDER BY ts DESC, event_id DESC
LIMIT $limit OFFSET $offset`,

  eventsCount: `SELECT count(*) AS n FROM activity_events
WHERE ts >= $start AND ts < $end AND environment_id = $env
  AND ($types = '' OR list_contains(string_split($types, ','), type))
  AND ($severity = '' OR severity = $severity)`,

  alertsPage: `SELECT ts, epoch_us(ts) AS us, alert_id AS id, type, severity, environment_id, person_id, track_id, confidence,
       location_x, location_y, metadata, actions_required AS actions, zone
FROM alerts
WHERE ts >= $start AND ts < $end AND environment_id = $env
  AND ($severity = '' OR severity = $severity)
  AND (epoch_us(ts) < $cursor_us OR (epoch_us(ts) = $cursor_us AND alert_id < $cursor_id))
ORDER BY ts DESC, alert_id DESC
LIMIT $limit OFFSET $offset`,

  alertsCount: `SELECT count(*) AS n FROM alerts
WHERE ts >= $start AND ts < $end AND environment_id = $env AND ($severity = '' OR severity = $severity)`,
} as const;

// ---------------------------------------------------------------------------------------------
// Zones as parameters
// ---------------------------------------------------------------------------------------------

/** A polygon's edges (vertex j to vertex i, as zones.ts walks them) in the form the SQL takes. */
function edgesOf(polygon: Float64Array): Array<{ x1: number; y1: number; y2: number; dx: number; dy: number; l2: number; len: number }> {
  const out = [];
  const n = polygon.length >> 1;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const x1 = polygon[2 * j]!;
    const y1 = polygon[2 * j + 1]!;
    const y2 = polygon[2 * i + 1]!;
    const dx = polygon[2 * i]! - x1;
    const dy = y2 - y1;
    out.push({ x1, y1, y2, dx, dy, l2: dx * dx + dy * dy, len: Math.hypot(dx, dy) });
  }
  return out;
}

/** The configured zones compiled, with the JSON parameters the zone queries take. */
export interface ZoneSet {
  zones: CompiledZone[];
  /** Configured zones that did not compile (skipped), with why. */
  invalid: Array<{ id: string; reason: string }>;
  params: { zones: string };
}

/**
 * Compiles zones (as `environment.zones` holds them) into the `$zones` JSON parameter: index,
 * id, bounding box, schedule and edges per zone.
 * @param zones the configured zones
 * @returns compiled zones and parameters; invalid zones are listed and left out
 */
export function zoneSet(zones: Zones): ZoneSet {
  const out: CompiledZone[] = [];
  const invalid: Array<{ id: string; reason: string }> = [];
  for (const z of zones) {
    try {
      out.push(compileZone(z as ZoneConfig));
    } catch (e) {
      invalid.push({ id: String((z as { id?: unknown })?.id ?? ''), reason: (e as Error).message });
    }
  }
  const zrows = out.map((z, i) => ({
    z: i,
    id: z.id,
    // Grown by the edge tolerance, so points on the edge reach the edge test.
    minx: z.minX - EDGE_EPS,
    miny: z.minY - EDGE_EPS,
    maxx: z.maxX + EDGE_EPS,
    maxy: z.maxY + EDGE_EPS,
    sched: z.schedule !== null,
    mask: z.schedule?.dayMask ?? 0x7f,
    smin: z.schedule?.start ?? 0,
    emin: z.schedule?.end ?? 0,
    off: z.schedule?.offsetMinutes ?? 0,
    edges: edgesOf(z.polygon),
  }));
  return { zones: out, invalid, params: { zones: JSON.stringify(zrows) } };
}

// ---------------------------------------------------------------------------------------------
// Healthcare
// ---------------------------------------------------------------------------------------------

export interface FallEventOut {
  timestamp: string | null;
  person_id: number | null;
  track_id: number | null;
  severity: string;
  /** Seconds until the person was seen up again; 0 while `recovery_detected` is false. */
  response_time_seconds: number;
  recovery_detected: boolean;
  location: { x: number; y: number } | null;
}

export interface HealthcareOut {
  fall_events?: { count: number; events: FallEventOut[] };
  activity_summary?: { walking_minutes: number; sitting_minutes: number; lying_minutes: number; standing_minutes: number };
  mobility_score?: number;
  sleep_quality?: { total_sleep_hours: number; sleep_efficiency: number; restlessness_events: number; sleep_sessions: number };
}

/**
 * Healthcare figures of a range (docs/analytics.md "Healthcare").
 * @param store the open store
 * @param range environment and [start, end)
 * @param metrics the metric groups to compute (default all)
 * @returns the asked groups
 */
export async function healthcare(store: Store, range: AnalyticsRange, metrics: readonly HealthcareMetric[] = HEALTHCARE_METRICS): Promise<HealthcareOut> {
  const want = new Set(metrics);
  const base = rangeParams(range);
  const out: HealthcareOut = {};
  if (want.has('fall_events')) {
    const rows = await store.query(SQL.falls, base);
    out.fall_events = {
      count: rows.length,
      events: rows.map((r) => {
        const x = numOrNull(r.x);
        const y = numOrNull(r.y);
        const response = numOrNull(r.response_s);
        return {
          timestamp: iso(num(r.fall_ms)),
          person_id: numOrNull(r.person_id),
          track_id: numOrNull(r.track_id),
          severity: RANK_SEVERITY[num(r.severity_rank)] ?? 'high',
          response_time_seconds: seconds(response ?? 0),
          recovery_detected: response !== null,
          location: x === null || y === null ? null : { x: metres(x), y: metres(y) },
        };
      }),
    };
  }
  if (want.has('activity_summary') || want.has('mobility_score')) {
    const [r] = await store.query(SQL.activityTime, { ...base, cap_us: HOLD_CAP_SECONDS * 1e6, moving: MOVING_SPEED });
    const s = (k: string) => num(r?.[k]);
    if (want.has('activity_summary')) {
      out.activity_summary = {
        walking_minutes: minutes(s('walking_s') / 60),
        sitting_minutes: minutes(s('sitting_s') / 60),
        lying_minutes: minutes(s('lying_s') / 60),
        standing_minutes: minutes(s('standing_s') / 60),
      };
    }
    if (want.has('mobility_score')) out.mobility_score = mobilityScore(s('standing_s'), s('walking_s'), s('moving_s'), s('labelled_s'));
  }
  if (want.has('sleep_quality')) {
    const [r] = await store.query(SQL.sleep, {
      ...base,
      cap_us: HOLD_CAP_SECONDS * 1e6,
      moving: MOVING_SPEED,
      break_us: SLEEP_BREAK_MINUTES * 60e6,
      sleep_s: SLEEP_MIN_MINUTES * 60,
    });
    const sleep = num(r?.sleep_s);
    out.sleep_quality = {
      total_sleep_hours: hours(sleep / 3600),
      sleep_efficiency: ratio(share(sleep, num(r?.in_bed_s))),
      restlessness_events: num(r?.restless),
      sleep_sessions: num(r?.sessions),
    };
  }
  return out;
}

/**
 * The mobility score: 50 x the share of labelled time on one's feet (standing or walking) plus 50 x
 * the share of labelled time moving on the floor (tracker speed >= MOVING_SPEED), rounded;
 * 0 (lying or sitting still all the time) .. 100 (walking all the time). 0 without labelled time
 * (nobody seen doing anything: no mobility shown).
 */
export function mobilityScore(standingS: number, walkingS: number, movingS: number, labelledS: number): number {
  if (!(labelledS > 0)) return 0;
  const upright = Math.min(1, (standingS + walkingS) / labelledS);
  const moving = Math.min(1, movingS / labelledS);
  return Math.round(50 * upright + 50 * moving);
}

// ---------------------------------------------------------------------------------------------
// Retail
// ---------------------------------------------------------------------------------------------

export interface RetailSettings {
  zones: Zones;
  funnel: FunnelZones;
}

export interface RetailOut {
  traffic?: {
    total_visitors: number;
    unique_visitors: number;
    peak_hour: string | null;
    peak_count: number;
    average_dwell_time_minutes: number;
  };
  zones?: Array<{ zone_id: string; zone_name: string; visitor_count: number; avg_dwell_time_minutes: number; conversion_rate: number }>;
  conversion_funnel?: { entrance: number; product_interaction: number; checkout_area: number; purchase: number; zones: Record<string, string | null>; notes: string[] };
  heat_map?: { high_traffic_areas: Array<{ zone: string; zone_name: string; intensity: number; person_seconds: number }> };
}

/**
 * Retail figures of a range (docs/analytics.md "Retail").
 * @param store the open store
 * @param range environment and [start, end)
 * @param settings the zones and the funnel's zone ids
 * @param metrics the metric groups to compute (default all)
 */
export async function retail(store: Store, range: AnalyticsRange, settings: RetailSettings, metrics: readonly RetailMetric[] = RETAIL_METRICS): Promise<RetailOut> {
  const want = new Set(metrics);
  const base = rangeParams(range);
  const out: RetailOut = {};
  if (want.has('traffic')) {
    const [r] = await store.query(SQL.traffic, base);
    const visitors = num(r?.visitors);
    out.traffic = {
      total_visitors: visitors,
      // Without identities a person who leaves and comes back (or whose track is lost and
      // re-acquired) is a new track: distinct tracks is all the store can count.
      unique_visitors: visitors,
      peak_hour: visitors > 0 ? iso(r?.peak_hour) : null,
      peak_count: num(r?.peak_count),
      average_dwell_time_minutes: minutes(visitors > 0 ? num(r?.dwell_ms) / 60_000 : 0),
    };
  }
  if (want.has('zones') || want.has('conversion_funnel') || want.has('heat_map')) {
    const zs = zoneSet(settings.zones);
    const notes: string[] = zs.invalid.map((z) => `zone ${z.id} is not usable: ${z.reason}`);
    const stageZone: number[] = [];
    const stageIds: Record<string, string | null> = {};
    for (const stage of FUNNEL_STAGES) {
      const id = settings.funnel[stage];
      const idx = id ? zs.zones.findIndex((z) => z.id === id) : -1;
      stageIds[stage] = idx >= 0 ? id : null;
      if (!id) notes.push(`${stage}: no zone configured (${FUNNEL_SETTING[stage]}); counted 0 and skipped in the funnel's order`);
      else if (idx < 0) notes.push(`${stage}: zone ${id} (${FUNNEL_SETTING[stage]}) is not in environment.zones; counted 0 and skipped in the funnel's order`);
      stageZone.push(idx);
    }
    const rows = await store.query(SQL.retailZones, {
      ...base,
      cap_us: HOLD_CAP_SECONDS * 1e6,
      zones: zs.params.zones,
      f1: stageZone[0]!,
      f2: stageZone[1]!,
      f3: stageZone[2]!,
      f4: stageZone[3]!,
    });
    const byZone = new Map<number, Row>();
    let funnel: Row | undefined;
    for (const r of rows) {
      if (r.kind === 'zone') byZone.set(num(r.z), r);
      else funnel = r;
    }
    const purchaseConfigured = stageZone[3]! >= 0;
    if (want.has('zones')) {
      out.zones = zs.zones.map((z, i) => {
        const r = byZone.get(i);
        const visitors = num(r?.a);
        return {
          zone_id: z.id,
          zone_name: z.name,
          visitor_count: visitors,
          avg_dwell_time_minutes: minutes(share(num(r?.b) / 60, visitors)),
          // Nobody converts without a purchase zone to reach (the funnel's notes say it is missing).
          conversion_rate: purchaseConfigured ? ratio(share(num(r?.c), visitors)) : 0,
        };
      });
    }
    if (want.has('conversion_funnel')) {
      out.conversion_funnel = {
        entrance: num(funnel?.a),
        product_interaction: num(funnel?.b),
        checkout_area: num(funnel?.c),
        purchase: num(funnel?.d),
        zones: stageIds,
        notes,
      };
    }
    if (want.has('heat_map')) {
      const held = zs.zones.map((z, i) => ({ zone: z.id, zone_name: z.name, s: num(byZone.get(i)?.b) }));
      const max = Math.max(0, ...held.map((x) => x.s));
      out.heat_map = {
        high_traffic_areas: held
          .filter((x) => x.s > 0)
          .sort((a, b) => b.s - a.s || a.zone.localeCompare(b.zone))
          .map((x) => ({ zone: x.zone, zone_name: x.zone_name, intensity: ratio(x.s / max), person_seconds: seconds(x.s) })),
      };
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------------

export interface SecuritySettings {
  zones: Zones;
  crowdThreshold: number;
}

export interface SecurityOut {
  intrusion_events?: {
    count: number;
    events: Array<{
      timestamp: string | null;
      alert_id: string;
      zone: string | null;
      person_id: number | null;
      person_count: number;
      threat_level: string;
      /** Seconds until the intruder was seen outside the zone; 0 while `resolved` is false. */
      response_time_seconds: number;
      resolved: boolean;
    }>;
  };
  perimeter_monitoring?: {
    total_detections: number;
    authorized_entries: number;
    unauthorized_attempts: number;
    false_positives: number;
    zones: Array<{ zone_id: string; entries: number; authorized_entries: number; unauthorized_attempts: number }>;
  };
  crowd_analysis?: { max_occupancy: number; average_occupancy: number; crowd_formation_events: number; crowd_threshold: number };
}

/**
 * Security figures of a range (docs/analytics.md "Security").
 * @param store the open store
 * @param range environment and [start, end)
 * @param settings the zones (with schedules) and the crowd threshold
 * @param metrics the metric groups to compute (default all)
 */
export async function security(
  store: Store,
  range: AnalyticsRange,
  settings: SecuritySettings,
  metrics: readonly SecurityMetric[] = SECURITY_METRICS,
): Promise<SecurityOut> {
  const want = new Set(metrics);
  const base = rangeParams(range);
  const out: SecurityOut = {};
  const zs = zoneSet(settings.zones);
  if (want.has('intrusion_events')) {
    const rows = await store.query(SQL.intrusions, { ...base, zones: zs.params.zones });
    out.intrusion_events = {
      count: rows.length,
      events: rows.map((r) => {
        const response = numOrNull(r.response_s);
        const pc = r.pc === null || r.pc === undefined ? null : numOrNull(Number(r.pc));
        return {
          timestamp: iso(r.ts),
          alert_id: String(r.alert_id),
          zone: r.zone === null ? null : String(r.zone),
          person_id: numOrNull(r.track_id),
          // The alert records it; one without it had at least its intruder in the zone.
          person_count: pc ?? 1,
          threat_level: typeof r.tl === 'string' && r.tl ? r.tl : String(r.severity),
          response_time_seconds: seconds(response ?? 0),
          resolved: response !== null,
        };
      }),
    };
  }
  if (want.has('perimeter_monitoring')) {
    const rows = await store.query(SQL.perimeter, { ...base, cap_us: HOLD_CAP_SECONDS * 1e6, zones: zs.params.zones });
    const byZone = new Map(rows.map((r) => [num(r.z), r]));
    const zones = zs.zones.map((z, i) => {
      const r = byZone.get(i);
      const entries = num(r?.entries);
      const watched = num(r?.watched);
      return { zone_id: z.id, entries, authorized_entries: entries - watched, unauthorized_attempts: watched };
    });
    const sum = (k: 'entries' | 'authorized_entries' | 'unauthorized_attempts') => zones.reduce((a, z) => a + z[k], 0);
    out.perimeter_monitoring = {
      total_detections: sum('entries'),
      authorized_entries: sum('authorized_entries'),
      unauthorized_attempts: sum('unauthorized_attempts'),
      // Whether an entry was real needs ground truth the store does not hold: no entry is known
      // to be false (docs/analytics.md).
      false_positives: 0,
      zones,
    };
  }
  if (want.has('crowd_analysis')) {
    const [r] = await store.query(SQL.crowd, { ...base, threshold: settings.crowdThreshold });
    out.crowd_analysis = {
      max_occupancy: num(r?.max_occ),
      average_occupancy: mean(num(r?.frames) > 0 ? num(r?.avg_occ) : 0),
      crowd_formation_events: num(r?.formations),
      crowd_threshold: settings.crowdThreshold,
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Summary
// ---------------------------------------------------------------------------------------------

export interface SummaryOut {
  time_period: { start: string; end: string; duration_hours: number };
  detection_stats: {
    total_detections: number;
    unique_persons: number;
    average_confidence: number;
    peak_occupancy: number;
    peak_occupancy_time: string | null;
  };
  activity_stats: { total_movement_events: number; fall_detections: number; alert_count: number; average_activity_level: number };
  system_stats: { uptime_percentage: number; average_processing_time: number; frames_processed: number; error_count: number };
  hourly_breakdown: Array<{ hour: string; detections: number; unique_persons: number; average_confidence: number }>;
  granularity: Granularity;
}

/**
 * The summary of a range (docs/analytics.md "Summary").
 * @param store the open store
 * @param range environment and [start, end)
 * @param granularity bucket of `hourly_breakdown`
 * @param now epoch ms taken as the present: uptime counts the period up to it only
 */
export async function summary(store: Store, range: AnalyticsRange, granularity: Granularity = 'hour', now: number = Date.now()): Promise<SummaryOut> {
  const base = rangeParams(range);
  const [f] = await store.query(SQL.summaryFrames, base);
  const [p] = await store.query(SQL.summaryPersons, base);
  const [e] = await store.query(SQL.summaryEvents, base);
  const [a] = await store.query(SQL.activityTime, { ...base, cap_us: HOLD_CAP_SECONDS * 1e6, moving: MOVING_SPEED });
  const upTo = Math.min(range.end, now);
  const [m] = upTo > range.start ? await store.query(SQL.uptime, { start: new Date(range.start), end: new Date(upTo) }) : [{ samples: 0, errors: 0 }];
  const rows = await store.query(SQL.breakdown, { ...base, width_us: GRANULARITY_SECONDS[granularity] * 1e6 });
  const covered = Math.max(0, upTo - range.start) / 1000;
  const frames = num(f?.frames);
  const labelled = num(a?.labelled_s);
  return {
    time_period: {
      start: new Date(range.start).toISOString(),
      end: new Date(range.end).toISOString(),
      duration_hours: hours((range.end - range.start) / 3_600_000),
    },
    detection_stats: {
      total_detections: num(p?.detections),
      unique_persons: num(p?.persons),
      average_confidence: confidence(num(p?.confidence)),
      peak_occupancy: num(f?.peak),
      peak_occupancy_time: frames > 0 ? iso(f?.peak_ts) : null,
    },
    activity_stats: {
      total_movement_events: num(e?.changes),
      fall_detections: num(e?.falls),
      alert_count: num(e?.alerts),
      average_activity_level: ratio(share(num(a?.walking_s), labelled)),
    },
    system_stats: {
      uptime_percentage: covered > 0 ? percent(Math.min(100, (100 * num(m?.samples) * METRICS_SAMPLE_SECONDS) / covered)) : 0,
      average_processing_time: millis(num(f?.processing_ms)),
      frames_processed: frames,
      // Errors the service logged, as each metrics sample counted them (process-wide).
      error_count: num(m?.errors),
    },
    hourly_breakdown: rows.map((r) => ({
      hour: iso(r.b) ?? '',
      detections: num(r.detections),
      unique_persons: num(r.persons),
      average_confidence: confidence(num(r.confidence)),
    })),
    granularity,
  };
}

// ---------------------------------------------------------------------------------------------
// Occupancy
// ---------------------------------------------------------------------------------------------

export interface OccupancyOut {
  summary: { average_occupancy: number; peak_occupancy: number; peak_time: string | null; total_person_hours: number; frames: number };
  time_series: Array<{ timestamp: string; occupancy: number; confidence: number; frames: number }>;
  distribution: { '0_persons': number; '1_person': number; '2_persons': number; '3_persons': number; '4_plus_persons': number };
  interval: OccupancyInterval;
}

/**
 * Occupancy of a range (docs/analytics.md "Occupancy").
 * @param store the open store
 * @param range environment and [start, end)
 * @param interval the time series' bucket
 */
export async function occupancy(store: Store, range: AnalyticsRange, interval: OccupancyInterval = '15min'): Promise<OccupancyOut> {
  const base = rangeParams(range);
  const [s] = await store.query(SQL.occupancySummary, { ...base, cap_us: HOLD_CAP_SECONDS * 1e6 });
  const rows = await store.query(SQL.occupancySeries, { ...base, width_us: INTERVAL_SECONDS[interval] * 1e6 });
  const frames = num(s?.frames);
  const pct = (k: string) => percent(share(100 * num(s?.[k]), frames));
  return {
    summary: {
      average_occupancy: mean(frames > 0 ? num(s?.avg_occ) : 0),
      peak_occupancy: num(s?.peak),
      peak_time: frames > 0 ? iso(s?.peak_ts) : null,
      total_person_hours: hours(num(s?.person_s) / 3600),
      frames,
    },
    time_series: rows.map((r) => ({
      timestamp: iso(r.b) ?? '',
      occupancy: mean(num(r.occ)),
      confidence: confidence(num(r.confidence)),
      frames: num(r.frames),
    })),
    distribution: { '0_persons': pct('n0'), '1_person': pct('n1'), '2_persons': pct('n2'), '3_persons': pct('n3'), '4_plus_persons': pct('n4') },
    interval,
  };
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

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
  const rows = alertsTable ? await store.query(SQL.alertsPage, page) : await store.query(SQL.eventsPage, { ...page, types: types.join(',') });
  const [c] = alertsTable ? await store.query(SQL.alertsCount, filter) : await store.query(SQL.eventsCount, { ...filter, types: types.join(',') });
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

/** The SQL texts, for tests and EXPLAIN. */
export const ANALYTICS_SQL: Readonly<Record<string, string>> = SQL;
