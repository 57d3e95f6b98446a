/**
 * `/analytics/healthcare` (docs/analytics.md "Healthcare"): falls with their recovery, time by
 * activity, the mobility score and sleep, from `activity_events` and the held `pose_persons` rows.
 */
import type { Store } from '../store.js';
import { hours, metres, minutes, ratio, seconds } from '../../precision.js';
import {
  activityTime,
  FALL_TIME_MS,
  HELD_P,
  HOLD_CAP_US,
  holdSeconds,
  iso,
  MOVING_SPEED,
  num,
  numOrNull,
  rangeParams,
  share,
  type AnalyticsRange,
} from './sql.js';

export const HEALTHCARE_METRICS = ['fall_events', 'activity_summary', 'mobility_score', 'sleep_quality'] as const;
export type HealthcareMetric = (typeof HEALTHCARE_METRICS)[number];

/** A lying session needs this much lying time to count as sleep (minutes). */
export const SLEEP_MIN_MINUTES = 20;
/** Lying stretches of one track closer together than this merge into one session (minutes). */
export const SLEEP_BREAK_MINUTES = 5;

const SEVERITY_RANK = `CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END`;
const RANK_SEVERITY = ['low', 'low', 'medium', 'high', 'critical'];

/** The healthcare SQL, by the name `ANALYTICS_SQL` lists it under. */
export const HEALTHCARE_SQL = {
  sleep: `WITH ${HELD_P},
l AS (
  SELECT track_id, us,
         ${holdSeconds('w')} AS hold_s,
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
         ${FALL_TIME_MS} AS fall_ms,
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
} as const;

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
    const rows = await store.query(HEALTHCARE_SQL.falls, base);
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
    const r = await activityTime(store, range);
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
    const [r] = await store.query(HEALTHCARE_SQL.sleep, {
      ...base,
      cap_us: HOLD_CAP_US,
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
