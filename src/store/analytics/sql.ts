/**
 * What every analytics domain shares: the range type and its parameters, turning DuckDB values
 * into numbers, and the SQL fragments more than one figure is built from (the held person rows,
 * the activity times, a fall's identity, the frames' peak). Domains import this; it imports no
 * domain.
 *
 * Rules every analytics query follows (docs/analytics.md defines each figure):
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
import type { QueryParam, Row, Store } from '../store.js';

/** An environment and a half-open time range [start, end), epoch ms. */
export interface AnalyticsRange {
  environmentId: string;
  start: number;
  end: number;
}

/** A person row counts as present until its track's next row, at most this long (s). */
export const HOLD_CAP_SECONDS = 2;
/** {@link HOLD_CAP_SECONDS} as the `$cap_us` parameter (µs). */
export const HOLD_CAP_US = HOLD_CAP_SECONDS * 1e6;
/**
 * Floor speed (m/s, the tracker's velocity) from which a person is moving: the activity operator's
 * walking speed. The stored velocity is the tracker's smoothed speed, 0 while it holds the person
 * still (`MOTION_WALK_PROBABILITY` in src/pose/tracker.ts), so the model's floor jitter is not
 * counted as movement (docs/analytics.md "How jitter is kept out").
 */
export const MOVING_SPEED = 0.3;

// ---------------------------------------------------------------------------------------------
// Values in and out
// ---------------------------------------------------------------------------------------------

export const iso = (v: unknown): string | null =>
  v instanceof Date ? v.toISOString() : typeof v === 'number' && Number.isFinite(v) ? new Date(v).toISOString() : null;
export const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : v === null || v === undefined ? 0 : Number(v));
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number.isFinite(num(v)) ? num(v) : null);
/** `a / b`, or 0 when there is nothing to divide by (the figure's docs say which count tells). */
export const share = (a: number, b: number): number => (b > 0 ? a / b : 0);

/** The `$start`, `$end` and `$env` parameters of a range. */
export function rangeParams(r: AnalyticsRange): Record<string, QueryParam> {
  return { start: new Date(r.start), end: new Date(r.end), env: r.environmentId };
}

// ---------------------------------------------------------------------------------------------
// SQL building blocks (constant text, assembled once at load)
// ---------------------------------------------------------------------------------------------

/**
 * The seconds a row holds: until the next row of its window `over` (a named window or an `OVER`
 * clause's parentheses), at most `$cap_us`; the window's last row holds 0.
 */
export const holdSeconds = (over: string): string => `least(coalesce(lead(us) OVER ${over} - us, 0), $cap_us) / 1e6`;

/**
 * `p`: the tracked person rows of the range, with `speed`, the tracker's floor speed (null without
 * a floor position: the velocity is then in view pixels).
 */
export const HELD_P = `
p AS (
  SELECT track_id, epoch_us(ts) AS us, activity, confidence,
         floor_x::DOUBLE AS fx, floor_y::DOUBLE AS fy,
         CASE WHEN floor_x IS NOT NULL AND floor_y IS NOT NULL AND velocity_x IS NOT NULL AND velocity_y IS NOT NULL
              THEN sqrt(velocity_x::DOUBLE * velocity_x + velocity_y::DOUBLE * velocity_y) END AS speed
  FROM pose_persons
  WHERE ts >= $start AND ts < $end AND environment_id = $env AND track_id IS NOT NULL
)`;

/**
 * {@link HELD_P}, and `h`: the same rows with `hold_s`, the seconds each row holds (until the
 * track's next row, capped), and `prev_us`, the time of the track's previous row (one sort serves
 * both).
 */
export const HELD = `${HELD_P},
h AS (
  SELECT *, ${holdSeconds('w')} AS hold_s, lag(us) OVER w AS prev_us
  FROM p WINDOW w AS (PARTITION BY track_id ORDER BY us)
)`;

/**
 * A fall's time (epoch ms, DOUBLE) on an `activity_events` row: the fall the row belongs to, as
 * the operator recorded it, else the row's own time. With the track it identifies one fall, so
 * the healthcare fall list and the summary's fall count agree.
 */
export const FALL_TIME_MS = `coalesce(TRY_CAST(metadata->>'$.fall_time' AS DOUBLE), epoch_ms(ts)::DOUBLE)`;

/**
 * The peak occupancy of CTE `f` (`ts`, `person_count`, one row per stored frame) and the first
 * time it was reached: `cte` is the CTE `m` to add to the WITH list, `columns` the `peak` and
 * `peak_ts` columns of a SELECT over `f`.
 */
export const FRAME_PEAK = {
  cte: `m AS (SELECT max(person_count) AS mx FROM f)`,
  columns: `(SELECT mx FROM m) AS peak,
       (SELECT min(ts) FROM f, m WHERE f.person_count = m.mx) AS peak_ts`,
} as const;

/** The SQL shared between domains, by the name `ANALYTICS_SQL` lists it under. */
export const SHARED_SQL = {
  /** Seconds held per activity, labelled, moving and tracked (healthcare and summary). */
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
} as const;

/**
 * The held seconds of a range by activity (`walking_s`, `sitting_s`, `lying_s`, `standing_s`,
 * `falling_s`), with activity (`labelled_s`), moving with activity (`moving_s`) and in all
 * (`tracked_s`).
 * @param store the open store
 * @param range environment and [start, end)
 * @returns the row (an aggregate without GROUP BY always returns one)
 */
export async function activityTime(store: Store, range: AnalyticsRange): Promise<Row | undefined> {
  const [r] = await store.query(SHARED_SQL.activityTime, { ...rangeParams(range), cap_us: HOLD_CAP_US, moving: MOVING_SPEED });
  return r;
}
