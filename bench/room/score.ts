/**
 * The live-room scores (DECISIONS "Benchmark output", `room.*`): what a subscriber of `/ws/pose`
 * sees, matched against the simulator's ground truth on the session's own clock (session.ts). Pure
 * functions over plain arrays, so that each matching rule is tested on hand-made inputs.
 *
 * Definitions (times on the truth clock; a window's time is its last CSI frame's):
 * - count right: a received pose frame whose person count equals the true count at its window.
 * - track ids per person per 10 min: distinct track ids a session reported, over the true persons'
 *   time in the room in units of 10 minutes (1 is one id per person for a 10-minute session).
 * - fall alerts: every `high` fall alert in time order takes the earliest true fall, not yet
 *   taken, that started within 3 s before the alert's timestamp; an alert that takes none is false
 *   (a second alert for one fall is false too). Matching is by time only, not by who fell.
 * - falls alerted within 3 s: true falls taken by an alert, over the true falls that started at
 *   least 3 s before the session's last window (later ones could not be alerted in time).
 * - activity events: a reported track's activity differing from its previous reported activity;
 *   over the ground truth's activity changes (every person, `falling` and `lying` after a fall
 *   counted apart, as the truth labels them).
 * - speed error: per received frame, reported persons paired with present true persons by the
 *   Hungarian method on floor distance (gate PAIR_GATE_M); |reported speed - true speed| per pair,
 *   the true speed the pelvis' displacement over the last second (capture.ts).
 * - presence latency: a person entering who makes the count c is reported when a pose frame first
 *   reports at least c persons; from the entry to that frame. Missed when the true count falls
 *   below c first, or the session ends.
 */
import { Hungarian } from '../../src/pose/hungarian.js';
import type { SessionTruth } from './capture.js';
import type { SeenPerson, SessionSeen } from './session.js';

/** Reported and true persons further apart than this are not paired (as the speed study), metres. */
export const PAIR_GATE_M = 1.5;
/** A true person this fast walks (as the speed study's WALKING_MPS), m/s. */
export const MOVING_MPS = 0.5;
/** An alert belongs to a true fall that started at most this long before it, ms. */
export const FALL_ALERT_WINDOW_MS = 3000;
/** Window hop in ms at 100 Hz (8 frames): the time one pose frame stands for. */
const HOP_MS = 80;

/** The outcome of matching fall alerts to true falls. */
export interface FallMatch {
  /** Per true fall: the delay (ms) of the alert that took it, or NaN. */
  delays: number[];
  /** Alerts that took no fall. */
  falseAlerts: number;
}

/**
 * Matches fall alerts to true falls (module comment).
 * @param falls true fall starts, ms
 * @param alerts alert timestamps, ms
 * @param windowMs how long before an alert its fall may have started (default 3 s)
 * @returns per fall its alert's delay (NaN when none), and the false alerts
 * @example matchFallAlerts([10_000], [12_000, 12_500]) // { delays: [2000], falseAlerts: 1 }
 */
export function matchFallAlerts(falls: readonly number[], alerts: readonly number[], windowMs = FALL_ALERT_WINDOW_MS): FallMatch {
  const order = falls.map((t, i) => [t, i] as const).sort((a, b) => a[0] - b[0]);
  const delays = falls.map(() => NaN);
  let falseAlerts = 0;
  for (const a of [...alerts].sort((x, y) => x - y)) {
    const hit = order.find(([t, i]) => Number.isNaN(delays[i]!) && t <= a && t >= a - windowMs);
    if (hit) delays[hit[1]] = a - hit[0];
    else falseAlerts++;
  }
  return { delays, falseAlerts };
}

/**
 * Frames with the right count.
 * @param trueCounts per window the true count
 * @param reported per window the reported count; undefined where no frame came (not scored)
 * @returns right frames and scored frames
 */
export function countRight(trueCounts: ArrayLike<number>, reported: ReadonlyArray<number | undefined>): { right: number; frames: number } {
  let right = 0;
  let frames = 0;
  for (let k = 0; k < reported.length; k++) {
    const r = reported[k];
    if (r === undefined) continue;
    frames++;
    if (r === trueCounts[k]) right++;
  }
  return { right, frames };
}

/**
 * Distinct track ids and the true persons' time in the room.
 * @param frames per window the reported track ids (undefined where no frame came)
 * @param trueCounts per window the true count
 * @param hopMs time one window stands for
 * @returns the ids and the person-minutes
 */
export function trackIds(
  frames: ReadonlyArray<readonly number[] | undefined>,
  trueCounts: ArrayLike<number>,
  hopMs = HOP_MS,
): { ids: number; personMinutes: number } {
  const ids = new Set<number>();
  for (const f of frames) for (const id of f ?? []) ids.add(id);
  let personMs = 0;
  for (let k = 0; k < trueCounts.length; k++) personMs += trueCounts[k]! * hopMs;
  return { ids: ids.size, personMinutes: personMs / 60_000 };
}

/**
 * Activity events a subscriber sees: per track, a reported activity that differs from the track's
 * previous reported one (persons without an activity are skipped).
 * @param frames per window the reported persons (track and activity)
 * @returns the number of events
 */
export function activityEvents(frames: ReadonlyArray<ReadonlyArray<Pick<SeenPerson, 'track' | 'activity'>> | undefined>): number {
  const last = new Map<number, string>();
  let events = 0;
  for (const f of frames) {
    for (const p of f ?? []) {
      if (p.activity === undefined) continue;
      const before = last.get(p.track);
      if (before !== undefined && before !== p.activity) events++;
      last.set(p.track, p.activity);
    }
  }
  return events;
}

/**
 * Speed errors of the reported persons paired with the true ones (module comment).
 * @param truth the session's truth
 * @param frames per window the reported persons
 * @returns |reported - true| per pair, m/s, and those of the pairs whose true person moves at
 *   MOVING_MPS or more
 */
export function speedErrors(
  truth: Pick<SessionTruth, 'people' | 'x' | 'y' | 'speed' | 'present'>,
  frames: ReadonlyArray<readonly SeenPerson[] | undefined>,
): { errors: number[]; moving: number[] } {
  const P = truth.people;
  const solver = new Hungarian();
  const out: number[] = [];
  const moving: number[] = [];
  const cost = new Float64Array(16 * P);
  frames.forEach((f, k) => {
    const rep = (f ?? []).filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y) && Number.isFinite(p.speed));
    if (rep.length === 0) return;
    const cols: number[] = [];
    for (let j = 0; j < P; j++) if (truth.present[k * P + j]) cols.push(k * P + j);
    if (cols.length === 0) return;
    const c = rep.length * cols.length <= cost.length ? cost : new Float64Array(rep.length * cols.length);
    rep.forEach((p, r) => cols.forEach((i, j) => (c[r * cols.length + j] = Math.hypot(p.x - truth.x[i]!, p.y - truth.y[i]!))));
    const assign = solver.solve(c, rep.length, cols.length, PAIR_GATE_M);
    rep.forEach((p, r) => {
      const j = assign[r]!;
      if (j < 0) return;
      const v = truth.speed[cols[j]!]!;
      out.push(Math.abs(p.speed - v));
      if (v >= MOVING_MPS) moving.push(Math.abs(p.speed - v));
    });
  });
  return { errors: out, moving };
}

/**
 * Presence latencies (module comment).
 * @param entries people coming in: time (ms), the count before and after
 * @param times per window its time (ms)
 * @param trueCounts per window the true count
 * @param reported per window the reported count (undefined where no frame came)
 * @returns latencies in seconds of the persons reported, and how many were missed
 */
export function presenceLatencies(
  entries: ReadonlyArray<{ time: number; before: number; after: number }>,
  times: ArrayLike<number>,
  trueCounts: ArrayLike<number>,
  reported: ReadonlyArray<number | undefined>,
): { latencies: number[]; missed: number } {
  const latencies: number[] = [];
  let missed = 0;
  for (const e of entries) {
    for (let c = e.before + 1; c <= e.after; c++) {
      let found = NaN;
      for (let k = 0; k < reported.length; k++) {
        if (times[k]! < e.time) continue;
        if (trueCounts[k]! < c) break;
        if ((reported[k] ?? -1) >= c) {
          found = (times[k]! - e.time) / 1000;
          break;
        }
      }
      if (Number.isNaN(found)) missed++;
      else latencies.push(found);
    }
  }
  return { latencies, missed };
}

/** Everything the figures need from one session. */
export interface SessionScore {
  id: string;
  room: string;
  people: number;
  hours: number;
  countRight: number;
  framesScored: number;
  trackIds: number;
  personMinutes: number;
  falls: number;
  /** Falls that started at least 3 s before the last window. */
  fallsScored: number;
  fallsAlerted3s: number;
  fallAlertDelays: number[];
  fallAlerts: number;
  falseFallAlerts: number;
  activityEvents: number;
  trueActivityChanges: number;
  speedErrors: number[];
  /** Of pairs whose true person walks (MOVING_MPS). */
  speedErrorsMoving: number[];
  latencies: number[];
  presenceMissed: number;
  hardNegatives: { lieDowns: number; sitDowns: number; bends: number };
  service: { received: number; windows: number; unmapped: number; droppedWindows: number; wsDropped: number; wallSeconds: number; speed: number };
}

/**
 * Scores one session.
 * @param truth its ground truth
 * @param seen what the subscriber saw
 * @returns its parts of every figure
 */
export function scoreSession(truth: SessionTruth, seen: SessionSeen): SessionScore {
  const reported = seen.frames.map((f) => f?.length);
  const count = countRight(truth.count, reported);
  const tracks = trackIds(
    seen.frames.map((f) => f?.map((p) => p.track)),
    truth.count,
  );
  const last = truth.windows ? truth.time[truth.windows - 1]! : 0;
  const falls = Array.from(truth.falls);
  const scoredFalls = falls.filter((t) => t <= last - FALL_ALERT_WINDOW_MS);
  const alertTimes = seen.alerts.map((a) => truth.time[a.window]!);
  const m = matchFallAlerts(scoredFalls, alertTimes);
  // Alerts matched to falls too late to score are neither hits nor false alarms.
  const late = matchFallAlerts(falls, alertTimes);
  const speed = speedErrors(truth, seen.frames);
  const presence = presenceLatencies(truth.entries, truth.time, truth.count, reported);
  return {
    id: truth.id,
    room: truth.room,
    people: truth.people,
    hours: truth.seconds / 3600,
    countRight: count.right,
    framesScored: count.frames,
    trackIds: tracks.ids,
    personMinutes: tracks.personMinutes,
    falls: falls.length,
    fallsScored: scoredFalls.length,
    fallsAlerted3s: m.delays.filter((d) => !Number.isNaN(d)).length,
    fallAlertDelays: m.delays.filter((d) => !Number.isNaN(d)).map((d) => d / 1000),
    fallAlerts: alertTimes.length,
    falseFallAlerts: late.falseAlerts,
    activityEvents: activityEvents(seen.frames),
    trueActivityChanges: truth.activityChanges,
    speedErrors: speed.errors,
    speedErrorsMoving: speed.moving,
    latencies: presence.latencies,
    presenceMissed: presence.missed,
    hardNegatives: { lieDowns: truth.lieDowns, sitDowns: truth.sitDowns, bends: truth.bends },
    service: {
      received: seen.received,
      windows: truth.windows,
      unmapped: seen.unmapped,
      droppedWindows: seen.droppedWindows,
      wsDropped: seen.wsDropped,
      wallSeconds: seen.wallSeconds,
      speed: seen.speed,
    },
  };
}
