/**
 * The live-room figures with their 95 % intervals (DECISIONS "Benchmark output", `room.*`; the
 * oracle's, bench/room/oracle.ts, the same under `room.oracle.*`):
 * - shares of events (falls alerted within 3 s): Wilson;
 * - rates of events over exposure (false fall alerts per hour, track ids per person per 10
 *   minutes): exact Poisson (Garwood), the count taken as Poisson over the exposure;
 * - shares, ratios and medians over frames (count right, activity events per true change, speed
 *   error, presence latency): frames and events of one session share its people, room and model
 *   errors, so a seeded percentile bootstrap over sessions (training/ts/eval/intervals.ts).
 */
import { bootstrap, quantileParts, ratioParts, wilson, type Interval } from '../../training/ts/eval/intervals.js';
import type { BenchResult } from '../lib.js';
import type { SessionScore } from './score.js';

/** Seed of every bootstrap of the report. */
const BOOT_SEED = 1818;

/** P(X <= k) for X ~ Poisson(lambda). */
function poissonCdf(k: number, lambda: number): number {
  if (k < 0) return 0;
  if (lambda === 0) return 1;
  let term = Math.exp(-lambda);
  // Sum in log space where exp(-lambda) underflows.
  if (term === 0) {
    let logTerm = -lambda;
    let sum = 0;
    for (let i = 0; i <= k; i++) {
      if (i > 0) logTerm += Math.log(lambda / i);
      sum += Math.exp(logTerm);
    }
    return Math.min(1, sum);
  }
  let sum = term;
  for (let i = 1; i <= k; i++) {
    term *= lambda / i;
    sum += term;
  }
  return Math.min(1, sum);
}

/**
 * The exact (Garwood) 95 % interval of a Poisson mean from one count: the lower end solves
 * P(X >= k) = 0.025, the upper P(X <= k) = 0.025 (0 for k = 0).
 * @param k the count observed
 * @returns [lo, hi] of the mean count
 * @example poissonExact(0) // [0, 3.689]
 */
export function poissonExact(k: number): Interval {
  if (!(Number.isInteger(k) && k >= 0)) throw new RangeError(`poissonExact: k must be a count, got ${k}`);
  const solve = (f: (l: number) => number): number => {
    // f decreases in lambda from > 0 to < 0.
    let lo = 0;
    let hi = Math.max(10, 4 * k + 10);
    for (let i = 0; i < 200; i++) {
      const mid = 0.5 * (lo + hi);
      if (f(mid) > 0) lo = mid;
      else hi = mid;
    }
    return 0.5 * (lo + hi);
  };
  const lo = k === 0 ? 0 : solve((l) => poissonCdf(k - 1, l) - 0.975);
  const hi = solve((l) => poissonCdf(k, l) - 0.025);
  return [lo, hi];
}

const sum = (xs: readonly SessionScore[], f: (s: SessionScore) => number) => xs.reduce((a, s) => a + f(s), 0);
const median = (v: readonly number[]): number => {
  if (v.length === 0) return NaN;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.ceil(0.5 * s.length) - 1]!;
};
const iv = (i: Interval, digits: number) => `[${i[0].toFixed(digits)}, ${i[1].toFixed(digits)}]`;

/** Options of {@link roomResults}. */
export interface RoomResultsOptions {
  /** Name prefix: `room` (the model through the real service, default) or `room.oracle`. */
  prefix?: string;
  /** Whether the frames came from the live pipeline in-process (the oracle) rather than over the service's WebSocket. */
  inProcess?: boolean;
}

/**
 * The `room.*` results of scored sessions (`room.oracle.*` for the oracle's).
 * @param ss the sessions' scores
 * @param context what ran (rooms, people, realism, speed), for the first note
 * @param o the names' prefix and how the frames were read
 * @returns the results, each with n and its 95 % interval in the note
 */
export function roomResults(ss: readonly SessionScore[], context: string, o: RoomResultsOptions = {}): BenchResult[] {
  const prefix = o.prefix ?? 'room';
  const hours = sum(ss, (s) => s.hours);
  const frames = sum(ss, (s) => s.framesScored);
  const right = sum(ss, (s) => s.countRight);
  const countIv = bootstrap(ratioParts(ss.map((s) => [s.countRight, s.framesScored])), BOOT_SEED);

  const ids = sum(ss, (s) => s.trackIds);
  const tenMin = sum(ss, (s) => s.personMinutes) / 10;
  const idsIv = poissonExact(ids).map((v) => v / tenMin) as unknown as Interval;

  const falseAlerts = sum(ss, (s) => s.falseFallAlerts);
  const alerts = sum(ss, (s) => s.fallAlerts);
  const falseIv = poissonExact(falseAlerts).map((v) => v / hours) as unknown as Interval;

  const falls = sum(ss, (s) => s.fallsScored);
  const alerted = sum(ss, (s) => s.fallsAlerted3s);
  const fallsIv = wilson(alerted, falls);
  const delays = ss.flatMap((s) => s.fallAlertDelays);

  const events = sum(ss, (s) => s.activityEvents);
  const changes = sum(ss, (s) => s.trueActivityChanges);
  const actIv = bootstrap(ratioParts(ss.map((s) => [s.activityEvents, s.trueActivityChanges])), BOOT_SEED + 1);

  const speedAll = ss.flatMap((s) => s.speedErrors);
  const speedIv = bootstrap(
    quantileParts(
      ss.map((s) => s.speedErrors),
      0.5,
    ),
    BOOT_SEED + 2,
  );

  const movingAll = ss.flatMap((s) => s.speedErrorsMoving);
  const movingIv = bootstrap(
    quantileParts(
      ss.map((s) => s.speedErrorsMoving),
      0.5,
    ),
    BOOT_SEED + 4,
  );

  const lat = ss.flatMap((s) => s.latencies);
  const missed = sum(ss, (s) => s.presenceMissed);
  const latIv = bootstrap(
    quantileParts(
      ss.map((s) => s.latencies),
      0.5,
    ),
    BOOT_SEED + 3,
  );

  const lies = sum(ss, (s) => s.hardNegatives.lieDowns);
  const sits = sum(ss, (s) => s.hardNegatives.sitDowns);
  const bends = sum(ss, (s) => s.hardNegatives.bends);
  const received = sum(ss, (s) => s.service.received);
  const windows = sum(ss, (s) => s.service.windows);
  const dropped = sum(ss, (s) => s.service.droppedWindows);
  const wsDropped = sum(ss, (s) => s.service.wsDropped);
  const unmapped = sum(ss, (s) => s.service.unmapped);

  return [
    { name: `${prefix}.hours`, value: hours, unit: 'h', n: ss.length, note: `${context}; ${ss.length} sessions` },
    {
      name: `${prefix}.count_right_share`,
      value: right / frames,
      unit: 'fraction',
      n: frames,
      note: `${right} of ${frames} pose frames report the true count; 95 % ${iv(countIv, 3)} (bootstrap over ${ss.length} sessions)`,
    },
    {
      name: `${prefix}.tracks_per_person`,
      value: ids / tenMin,
      unit: 'ids per person per 10 min',
      n: ids,
      note: `${ids} track ids over ${(tenMin * 10).toFixed(0)} person-minutes (1 = one id per person for a 10-minute session); 95 % ${iv(idsIv, 2)} (exact Poisson)`,
    },
    {
      name: `${prefix}.false_falls_per_hour`,
      value: falseAlerts / hours,
      unit: 'per hour',
      n: falseAlerts,
      note:
        `${falseAlerts} of ${alerts} high fall alerts with no true fall starting within 3 s before them, in ${hours.toFixed(2)} h; 95 % ${iv(falseIv, 1)} (exact Poisson); ` +
        `the hard negatives in that time: ${lies} deliberate lie-downs, ${sits} sit-downs, ${bends} bends (${((lies + sits + bends) / hours).toFixed(0)} an hour)`,
    },
    {
      name: `${prefix}.falls_alerted_3s`,
      value: alerted / falls,
      unit: 'fraction',
      n: falls,
      note: `${alerted} of ${falls} true falls alerted within 3 s (median delay ${median(delays).toFixed(2)} s); 95 % ${iv(fallsIv, 3)} (Wilson)`,
    },
    {
      name: `${prefix}.activity_events_ratio`,
      value: events / changes,
      unit: 'events per true change',
      n: changes,
      note: `${events} reported activity changes (per track) for ${changes} true ones; 95 % ${iv(actIv, 2)} (bootstrap over sessions)`,
    },
    {
      name: `${prefix}.speed_error_mps`,
      value: median(speedAll),
      unit: 'm/s',
      n: speedAll.length,
      note: `median |reported - true speed| over ${speedAll.length} person-frames paired within 1.5 m; 95 % ${iv(speedIv, 3)} (bootstrap over sessions)`,
    },
    {
      name: `${prefix}.speed_error_mps.moving`,
      value: median(movingAll),
      unit: 'm/s',
      n: movingAll.length,
      note: `the same over the pairs whose true person walks at 0.5 m/s or more; 95 % ${iv(movingIv, 3)} (bootstrap over sessions)`,
    },
    {
      name: `${prefix}.presence_latency_s`,
      value: median(lat),
      unit: 's',
      n: lat.length,
      note:
        `median over ${lat.length} persons from coming in to the count first reaching them (everyone comes in at the session's start: the first window ends 1.27 s in); ` +
        `${missed} never reached; 95 % ${iv(latIv, 2)} (bootstrap over sessions)`,
    },
    {
      name: `${prefix}.service.windows_seen`,
      value: received / windows,
      unit: 'fraction',
      n: windows,
      note: o.inProcess
        ? `pose frames the live pipeline made (in-process, fed with back-pressure: none dropped) of the windows in the captures; ${unmapped} named no window`
        : `pose frames the subscriber received of the windows in the captures; inference dropped ${dropped}, the WebSocket dropped ${wsDropped} for this client, ${unmapped} messages named no window`,
    },
  ];
}
