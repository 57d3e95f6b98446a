/**
 * Floor-plan zones for intrusion alerts: polygons in metres with an optional weekly schedule.
 *
 * Point-in-polygon uses the even-odd rule (a ray crossing count), so concave and self-touching
 * polygons work as drawn; a point on an edge or a vertex counts as inside, so the answer on the
 * boundary does not depend on the direction the polygon is wound or where the ray goes.
 */

import type { AlertSeverity } from './types.js';

/** When a zone is watched. Times are local to `utcOffsetMinutes` (default 0: UTC). */
export interface ZoneSchedule {
  /** Days of the week the window starts on, 0 = Sunday .. 6 = Saturday; default every day. */
  days?: number[];
  /** 'HH:MM', 00:00..24:00. */
  start: string;
  /** 'HH:MM'; earlier than `start` runs past midnight into the next day; equal to it = all day. */
  end: string;
  /** Offset of local time from UTC in minutes (e.g. 60 for UTC+1); default 0. */
  utcOffsetMinutes?: number;
}

/** A zone as configured. */
export interface ZoneConfig {
  id: string;
  name: string;
  /** Vertices in metres on the floor plan, at least 3; closed implicitly. */
  polygon: Array<[number, number]>;
  /** Without a schedule the zone is always watched. */
  schedule?: ZoneSchedule;
  /** Severity of its intrusion alerts; default 'high'. */
  severity?: AlertSeverity;
}

/** A validated zone, ready for fast tests. */
export interface CompiledZone {
  readonly id: string;
  readonly name: string;
  readonly severity: AlertSeverity;
  /** x0, y0, x1, y1, ... */
  readonly polygon: Float64Array;
  /** Bounding box, for a quick reject. */
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
  readonly schedule: CompiledSchedule | null;
}

export interface CompiledSchedule {
  /** Bit d set = the window may start on weekday d. */
  readonly dayMask: number;
  /** Minutes after local midnight. */
  readonly start: number;
  readonly end: number;
  readonly offsetMinutes: number;
}

const SEVERITIES: readonly AlertSeverity[] = ['low', 'medium', 'high', 'critical'];
/** Distance (metres) within which a point counts as on an edge. */
const EDGE_EPS = 1e-9;

/**
 * Whether a point lies inside a polygon by the even-odd rule; points on an edge or vertex count
 * as inside.
 * @param x point, same unit as the polygon
 * @param y point
 * @param polygon flat vertices x0, y0, x1, y1, ... (at least 3 vertices; closed implicitly)
 * @returns true inside or on the boundary
 * @example pointInPolygon(1, 1, Float64Array.of(0, 0, 2, 0, 2, 2, 0, 2)) // true
 */
export function pointInPolygon(x: number, y: number, polygon: ArrayLike<number>): boolean {
  const n = polygon.length >> 1;
  if (n < 3 || !Number.isFinite(x) || !Number.isFinite(y)) return false;
  let inside = false;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = polygon[2 * i]!;
    const yi = polygon[2 * i + 1]!;
    const xj = polygon[2 * j]!;
    const yj = polygon[2 * j + 1]!;
    if (segmentDistance(x, y, xj, yj, xi, yi) <= EDGE_EPS) return true;
    // Half-open in y: a vertex exactly at the ray's height is counted for one of its two edges only.
    if (yi > y !== yj > y) {
      const cross = xj + ((y - yj) * (xi - xj)) / (yi - yj);
      if (x < cross) inside = !inside;
    }
  }
  return inside;
}

function segmentDistance(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax;
  const dy = by - ay;
  const l2 = dx * dx + dy * dy;
  const t = l2 > 0 ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / l2)) : 0;
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

/**
 * Shortest distance from a point to a polygon's boundary.
 * @param x point
 * @param y point
 * @param polygon flat vertices x0, y0, x1, y1, ...
 * @returns the distance (Infinity for fewer than 2 vertices)
 * @example distanceToBoundary(1, 1, Float64Array.of(0, 0, 2, 0, 2, 2, 0, 2)) // 1
 */
export function distanceToBoundary(x: number, y: number, polygon: ArrayLike<number>): number {
  const n = polygon.length >> 1;
  let best = Infinity;
  if (n < 2) return best;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const d = segmentDistance(x, y, polygon[2 * j]!, polygon[2 * j + 1]!, polygon[2 * i]!, polygon[2 * i + 1]!);
    if (d < best) best = d;
  }
  return best;
}

function parseClock(s: unknown, what: string): number {
  const m = typeof s === 'string' ? /^(\d{1,2}):(\d{2})$/.exec(s.trim()) : null;
  if (!m) throw new RangeError(`${what} must be 'HH:MM', got ${JSON.stringify(s)}`);
  const h = Number(m[1]);
  const min = Number(m[2]);
  if (h > 24 || min > 59 || (h === 24 && min !== 0)) throw new RangeError(`${what} must be 00:00..24:00, got ${JSON.stringify(s)}`);
  return h * 60 + min;
}

/**
 * Validates a schedule.
 * @param s the schedule as configured
 * @param where prefix for error messages
 * @returns the compiled schedule
 * @throws RangeError naming the bad field
 */
export function compileSchedule(s: ZoneSchedule, where = 'schedule'): CompiledSchedule {
  if (!s || typeof s !== 'object') throw new RangeError(`${where} must be an object`);
  const start = parseClock(s.start, `${where}.start`);
  const end = parseClock(s.end, `${where}.end`);
  let dayMask = 0x7f;
  if (s.days !== undefined) {
    if (!Array.isArray(s.days) || s.days.length === 0) throw new RangeError(`${where}.days must be a non-empty array of 0..6`);
    dayMask = 0;
    for (const d of s.days) {
      if (!Number.isInteger(d) || d < 0 || d > 6) throw new RangeError(`${where}.days must hold integers 0..6 (0 = Sunday), got ${JSON.stringify(d)}`);
      dayMask |= 1 << d;
    }
  }
  const offsetMinutes = s.utcOffsetMinutes ?? 0;
  if (!Number.isFinite(offsetMinutes) || Math.abs(offsetMinutes) > 14 * 60)
    throw new RangeError(`${where}.utcOffsetMinutes must be within +-840, got ${JSON.stringify(s.utcOffsetMinutes)}`);
  return { dayMask, start, end, offsetMinutes };
}

const DAY_MS = 86_400_000;

/**
 * Whether a schedule is active at a time. The window opens at `start` on each listed day and
 * closes at `end` the same day, or the next day when `end` is earlier than `start`; `start` equal
 * to `end` means the whole listed day.
 * @param s compiled schedule (null = always)
 * @param timeMs epoch ms
 * @returns true while the window is open
 * @example scheduleActive(compileSchedule({ start: '22:00', end: '06:00' }), Date.UTC(2026, 0, 1, 23)) // true
 */
export function scheduleActive(s: CompiledSchedule | null, timeMs: number): boolean {
  if (s === null) return true;
  if (!Number.isFinite(timeMs)) return false;
  const local = timeMs + s.offsetMinutes * 60_000;
  const dayIndex = Math.floor(local / DAY_MS);
  const minute = (local - dayIndex * DAY_MS) / 60_000;
  // 1970-01-01 was a Thursday (4).
  const weekday = (((dayIndex + 4) % 7) + 7) % 7;
  const today = (s.dayMask >> weekday) & 1;
  if (s.start === s.end) return today === 1;
  if (s.start < s.end) return today === 1 && minute >= s.start && minute < s.end;
  // Past midnight: the evening part belongs to today's window, the morning part to yesterday's.
  const yesterday = (s.dayMask >> ((weekday + 6) % 7)) & 1;
  return (today === 1 && minute >= s.start) || (yesterday === 1 && minute < s.end);
}

/**
 * Validates a zone and packs its polygon.
 * @param z the zone as configured
 * @returns the compiled zone
 * @throws RangeError when the id, name, polygon, schedule or severity is invalid
 */
export function compileZone(z: ZoneConfig): CompiledZone {
  const where = `zone ${JSON.stringify(z?.id)}`;
  if (!z || typeof z !== 'object') throw new RangeError('zone must be an object');
  if (typeof z.id !== 'string' || z.id === '') throw new RangeError('zone id must be a non-empty string');
  if (z.name !== undefined && typeof z.name !== 'string') throw new RangeError(`${where}: name must be a string`);
  if (!Array.isArray(z.polygon) || z.polygon.length < 3) throw new RangeError(`${where}: polygon needs at least 3 vertices`);
  const polygon = new Float64Array(z.polygon.length * 2);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  z.polygon.forEach((v, i) => {
    const x = Array.isArray(v) ? v[0] : NaN;
    const y = Array.isArray(v) ? v[1] : NaN;
    if (!Number.isFinite(x) || !Number.isFinite(y)) throw new RangeError(`${where}: vertex ${i} must be [x, y] in metres`);
    polygon[2 * i] = x;
    polygon[2 * i + 1] = y;
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x);
    maxY = Math.max(maxY, y);
  });
  const severity = z.severity ?? 'high';
  if (!SEVERITIES.includes(severity)) throw new RangeError(`${where}: severity must be one of ${SEVERITIES.join(', ')}`);
  return {
    id: z.id,
    name: z.name ?? z.id,
    severity,
    polygon,
    minX,
    minY,
    maxX,
    maxY,
    schedule: z.schedule === undefined ? null : compileSchedule(z.schedule, `${where} schedule`),
  };
}

/**
 * Whether a floor position is inside a compiled zone (boundary included).
 * @param z compiled zone
 * @param x metres
 * @param y metres
 * @returns true inside
 */
export function inZone(z: CompiledZone, x: number, y: number): boolean {
  if (!(x >= z.minX && x <= z.maxX && y >= z.minY && y <= z.maxY)) return false;
  return pointInPolygon(x, y, z.polygon);
}
