/**
 * `/analytics/occupancy` (docs/analytics.md "Occupancy"): average and peak person count,
 * person-hours, the person-count distribution and a time series, over the stored frames
 * (`pose_frames`).
 */
import type { Store } from '../store.js';
import { confidence, hours, mean, percent } from '../../precision.js';
import { FRAME_PEAK, HOLD_CAP_US, holdSeconds, iso, num, rangeParams, share, type AnalyticsRange } from './sql.js';

export type OccupancyInterval = '5min' | '15min' | '1hour';
export const INTERVAL_SECONDS: Record<OccupancyInterval, number> = { '5min': 300, '15min': 900, '1hour': 3600 };

/** The occupancy SQL, by the name `ANALYTICS_SQL` lists it under. */
export const OCCUPANCY_SQL = {
  occupancySummary: `WITH f AS (
  SELECT epoch_us(ts) AS us, seq, ts, person_count FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
),
fh AS (SELECT *, ${holdSeconds('(ORDER BY us, seq)')} AS hold_s FROM f),
${FRAME_PEAK.cte}
SELECT count(*) AS frames, avg(person_count) AS avg_occ, ${FRAME_PEAK.columns},
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
} as const;

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
  const [s] = await store.query(OCCUPANCY_SQL.occupancySummary, { ...base, cap_us: HOLD_CAP_US });
  const rows = await store.query(OCCUPANCY_SQL.occupancySeries, { ...base, width_us: INTERVAL_SECONDS[interval] * 1e6 });
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
