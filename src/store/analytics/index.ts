/**
 * Every analytics figure of `/analytics/*` as SQL over the stored tables (`pose_frames`,
 * `pose_persons`, `activity_events`, `alerts`, `system_metrics`), aggregated inside DuckDB; the one
 * import for callers. One file per route: `healthcare.ts`, `retail.ts`, `security.ts`,
 * `summary.ts`, `occupancy.ts` and `events.ts` (the event pages, which belong to no one domain).
 * They share `sql.ts` (the range and its parameters, value conversion, the held person rows, the
 * activity times and the rules every query follows) and `zones.ts` (zones as a parameter and
 * point-in-zone SQL). The helpers import no domain, and no domain imports another.
 */
import { SHARED_SQL } from './sql.js';
import { HEALTHCARE_SQL } from './healthcare.js';
import { RETAIL_SQL } from './retail.js';
import { SECURITY_SQL } from './security.js';
import { SUMMARY_SQL } from './summary.js';
import { OCCUPANCY_SQL } from './occupancy.js';
import { EVENTS_SQL } from './events.js';

export { HOLD_CAP_SECONDS, MOVING_SPEED, type AnalyticsRange } from './sql.js';
export { zoneSet, type Zones, type ZoneSet } from './zones.js';
export {
  HEALTHCARE_METRICS,
  SLEEP_BREAK_MINUTES,
  SLEEP_MIN_MINUTES,
  healthcare,
  mobilityScore,
  type FallEventOut,
  type HealthcareMetric,
  type HealthcareOut,
} from './healthcare.js';
export { FUNNEL_STAGES, RETAIL_METRICS, retail, type FunnelZones, type RetailMetric, type RetailOut, type RetailSettings } from './retail.js';
export { SECURITY_METRICS, security, type SecurityMetric, type SecurityOut, type SecuritySettings } from './security.js';
export { GRANULARITY_SECONDS, METRICS_SAMPLE_SECONDS, summary, type Granularity, type SummaryOut } from './summary.js';
export { INTERVAL_SECONDS, occupancy, type OccupancyInterval, type OccupancyOut } from './occupancy.js';
export {
  EVENT_FILTERS,
  EVENT_GROUPS,
  EVENT_TYPES,
  SEVERITIES,
  events,
  type EventCursor,
  type EventFilter,
  type EventOut,
  type EventsPage,
  type EventsQuery,
  type EventType,
  type Severity,
} from './events.js';

/** The SQL texts, for tests and EXPLAIN. */
export const ANALYTICS_SQL: Readonly<Record<string, string>> = {
  ...SHARED_SQL,
  ...HEALTHCARE_SQL,
  ...RETAIL_SQL,
  ...SECURITY_SQL,
  ...SUMMARY_SQL,
  ...OCCUPANCY_SQL,
  ...EVENTS_SQL,
};
