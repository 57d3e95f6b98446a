/**
 * `/analytics/summary` (docs/analytics.md "Summary"): detections and persons, activity, falls and
 * alerts, the service's own uptime and processing time (from `system_metrics`), and detections per
 * time bucket, over every stored table of a range.
 */
import type { Store } from '../store.js';
import { confidence, hours, millis, percent, ratio } from '../../precision.js';
import { activityTime, FALL_TIME_MS, FRAME_PEAK, iso, num, rangeParams, share, type AnalyticsRange } from './sql.js';

export type Granularity = 'hour' | 'day' | 'week';
export const GRANULARITY_SECONDS: Record<Granularity, number> = { hour: 3600, day: 86_400, week: 604_800 };

/** The service stores one `system_metrics` sample every this many seconds while it runs. */
export const METRICS_SAMPLE_SECONDS = 10;

/** The summary SQL, by the name `ANALYTICS_SQL` lists it under. */
export const SUMMARY_SQL = {
  summaryFrames: `WITH f AS (
  SELECT ts, person_count, processing_ms FROM pose_frames WHERE ts >= $start AND ts < $end AND environment_id = $env
),
${FRAME_PEAK.cte}
SELECT count(*) AS frames, avg(processing_ms) AS processing_ms, ${FRAME_PEAK.columns}
FROM f`,

  summaryPersons: `SELECT count(*) AS detections, count(DISTINCT track_id) AS persons, avg(confidence) AS confidence
FROM pose_persons WHERE ts >= $start AND ts < $end AND environment_id = $env`,

  summaryEvents: `SELECT
  (SELECT count(*) FROM activity_events WHERE ts >= $start AND ts < $end AND environment_id = $env AND type = 'activity_change') AS changes,
  (SELECT count(DISTINCT (track_id, ${FALL_TIME_MS}))
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
} as const;

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
  const [f] = await store.query(SUMMARY_SQL.summaryFrames, base);
  const [p] = await store.query(SUMMARY_SQL.summaryPersons, base);
  const [e] = await store.query(SUMMARY_SQL.summaryEvents, base);
  const a = await activityTime(store, range);
  const upTo = Math.min(range.end, now);
  const [m] = upTo > range.start ? await store.query(SUMMARY_SQL.uptime, { start: new Date(range.start), end: new Date(upTo) }) : [{ samples: 0, errors: 0 }];
  const rows = await store.query(SUMMARY_SQL.breakdown, { ...base, width_us: GRANULARITY_SECONDS[granularity] * 1e6 });
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
