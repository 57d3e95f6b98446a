/**
 * `/analytics/retail` (docs/analytics.md "Retail"): visitor traffic, visitors and dwell per zone,
 * the conversion funnel over the configured stage zones, and the heat map, from the held
 * `pose_persons` rows and their zone membership (./zones.ts).
 */
import type { Row, Store } from '../store.js';
import { minutes, ratio, seconds } from '../../precision.js';
import { HELD, HOLD_CAP_US, iso, num, rangeParams, share, type AnalyticsRange } from './sql.js';
import { HF, MEMBERSHIP, ZONES, zoneSet, type Zones } from './zones.js';

export const RETAIL_METRICS = ['traffic', 'zones', 'conversion_funnel', 'heat_map'] as const;
export type RetailMetric = (typeof RETAIL_METRICS)[number];

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

/** The retail SQL, by the name `ANALYTICS_SQL` lists it under. */
export const RETAIL_SQL = {
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
} as const;

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
  conversion_funnel?: {
    entrance: number;
    product_interaction: number;
    checkout_area: number;
    purchase: number;
    zones: Record<string, string | null>;
    notes: string[];
  };
  heat_map?: { high_traffic_areas: Array<{ zone: string; zone_name: string; intensity: number; person_seconds: number }> };
}

/**
 * Retail figures of a range (docs/analytics.md "Retail").
 * @param store the open store
 * @param range environment and [start, end)
 * @param settings the zones and the funnel's zone ids
 * @param metrics the metric groups to compute (default all)
 */
export async function retail(
  store: Store,
  range: AnalyticsRange,
  settings: RetailSettings,
  metrics: readonly RetailMetric[] = RETAIL_METRICS,
): Promise<RetailOut> {
  const want = new Set(metrics);
  const base = rangeParams(range);
  const out: RetailOut = {};
  if (want.has('traffic')) {
    const [r] = await store.query(RETAIL_SQL.traffic, base);
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
    const rows = await store.query(RETAIL_SQL.retailZones, {
      ...base,
      cap_us: HOLD_CAP_US,
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
