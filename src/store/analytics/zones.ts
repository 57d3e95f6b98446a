/**
 * Zones in SQL, for the figures counted per zone (retail zones, funnel and heat map; security
 * intrusions and perimeter): the configured zones compiled into the `$zones` JSON parameter
 * ({@link zoneSet}), and the SQL that decides, row by row, whether a floor position is inside a
 * zone and whether its schedule is open. This is the SQL twin of src/pose/zones.ts (what the live
 * operators use) and must agree with it point for point. It imports no domain.
 */
import { compileZone, type CompiledZone, type ZoneConfig } from '../../pose/zones.js';
import type { DeepReadonly } from '../../config/schema.js';

/** Zones as the configuration holds them (read-only). */
export type Zones = ReadonlyArray<DeepReadonly<ZoneConfig>>;

/**
 * Distance (m) within which a floor position counts as on a zone's edge. src/pose/zones.ts uses
 * 1e-9 on the model's float64 positions; the store keeps them as float32 (FLOAT), which moves a
 * point by up to ~4e-6 m at 100 m from the origin, so a point the live operator saw on an edge
 * must still count as on it here: 10 micrometres, far below any real position's precision.
 */
const EDGE_EPS = 1e-5;

// ---------------------------------------------------------------------------------------------
// SQL building blocks (constant text, assembled once at load)
// ---------------------------------------------------------------------------------------------

/**
 * `zs`: the zones from the `$zones` JSON parameter: index, id, bounding box (grown by EDGE_EPS),
 * schedule, and `edges`, the polygon's edges from (x1, y1) to (x1 + dx, y2), with l2 = dx^2 + dy^2
 * and len = sqrt(l2).
 */
export const ZONES = `
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
export const MEMBERSHIP = `
cand AS (
  SELECT hf.track_id, hf.us, hf.prev_us, hf.hold_s, hf.fx, hf.fy, zs.z, zs.edges
  FROM hf JOIN zs ON hf.fx BETWEEN zs.minx AND zs.maxx AND hf.fy BETWEEN zs.miny AND zs.maxy
),
inz AS (
  SELECT z, track_id, us, prev_us, hold_s FROM cand
  WHERE list_sum(list_transform(edges, lambda e: ${EDGE_CROSS})) % 2 = 1
     OR list_bool_or(list_transform(edges, lambda e: ${EDGE_ON}))
)`;

/** `hf`: the held rows of CTE `h` with a floor position (a row without one is in no zone). */
export const HF = `
hf AS (
  SELECT * FROM h WHERE fx IS NOT NULL AND fy IS NOT NULL
)`;

/**
 * Whether each zone's schedule is open at the row's time (`scheduleActive` of src/pose/zones.ts),
 * over the zone's `sched`, `smin` and `emin` and the row's local `minute` of the day and whether
 * the schedule's days hold `today` and `yday` (1 or 0).
 */
export const SCHEDULE_OPEN = `(NOT sched OR CASE
    WHEN smin = emin THEN today = 1
    WHEN smin < emin THEN today = 1 AND minute >= smin AND minute < emin
    ELSE (today = 1 AND minute >= smin) OR (yday = 1 AND minute < emin) END)`;

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
