import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import type { PoseFrame } from '../src/pose/types.js';
import { AlertWatchers, requiredFallConfidence, type AlertSettings } from '../src/pose/watchers.js';
import { compileZone, type CompiledZone, type ZoneConfig } from '../src/pose/zones.js';

export type { ZoneConfig, ZoneSchedule } from '../src/pose/zones.js';
export { FALL_ROOM_REFRACTORY_MS, INACTIVITY_RADIUS_M, requiredFallConfidence, ZONE_EXIT_MARGIN_M } from '../src/pose/watchers.js';

/** Fall alerts (config `alerts.fall_detection`). */
export interface FallDetectionConfig {
  /** Default true. */
  enabled?: boolean;
  /**
   * 0..1, default 0.8. Sets the confidence a `falling` label needs (its peak over the fall) to count
   * as a fall: `requiredFallConfidence(s) = 0.95 - 0.45 s`, so 0 -> 0.95 (only clear falls),
   * 0.8 -> 0.59, 1 -> 0.5 (every fall the activity operator reports).
   */
  sensitivity?: number;
  /**
   * The alert is raised when the person is still down this long after the fall, a critical one at
   * 3x; default 0.5 s (`alerts.fall_detection.notification_delay_seconds` in the config schema). 0 raises the alert on the fall's first frame, with no escalation.
   */
  notificationDelaySeconds?: number;
  /**
   * How long after a fall a recovery is still watched for (and reported as `fall_recovery` when an
   * alert went out); default 60 s. A fall episode ends at the larger of this and 3 x the delay.
   */
  recoveryWindowSeconds?: number;
}

/** Inactivity alerts (config `alerts.inactivity_detection`). */
export interface InactivityConfig {
  /** Default true. */
  enabled?: boolean;
  /** A tracked person who stays within INACTIVITY_RADIUS_M (0.3 m) of one floor position this long raises one alert; default 30. */
  thresholdMinutes?: number;
}

/** Everything the alerts operator watches; every field has a default. */
export interface AlertsConfig {
  fallDetection?: FallDetectionConfig;
  inactivity?: InactivityConfig;
  /** Intrusion zones (metres on the floor plan); default none. */
  zones?: ZoneConfig[];
}

/** The parameters a configuration field sets: type, default and range come from the config schema. */
const FALL_ENABLED = configParam('alerts.fall_detection.enabled');
const SENSITIVITY = configParam('alerts.fall_detection.sensitivity');
const DELAY = configParam('alerts.fall_detection.notification_delay_seconds');
const INACTIVITY_ENABLED = configParam('alerts.inactivity_detection.enabled');
const INACTIVITY_MINUTES = configParam('alerts.inactivity_detection.threshold_minutes');

function num(v: unknown, fallback: number, what: string, ok: (x: number) => boolean, range: string): number {
  const x = v ?? fallback;
  if (typeof x !== 'number' || !ok(x)) throw new RangeError(`alerts: ${what} must be a number in ${range}, got ${JSON.stringify(v)}`);
  return x;
}

function bool(v: unknown, fallback: boolean, what: string): boolean {
  const x = v ?? fallback;
  if (typeof x !== 'boolean') throw new RangeError(`alerts: ${what} must be true or false, got ${JSON.stringify(v)}`);
  return x;
}

/** Validates a config and fills in the defaults: the settings the watchers are given for one frame. */
function resolveConfig(c: AlertsConfig, compiled: (zones: ZoneConfig[]) => CompiledZone[]): AlertSettings {
  if (typeof c !== 'object' || c === null) throw new RangeError('alerts: config must be an object');
  const f: FallDetectionConfig = c.fallDetection ?? {};
  const i: InactivityConfig = c.inactivity ?? {};
  if (typeof f !== 'object' || f === null) throw new RangeError('alerts: fallDetection must be an object');
  if (typeof i !== 'object' || i === null) throw new RangeError('alerts: inactivity must be an object');
  const sensitivity = num(f.sensitivity, SENSITIVITY.default as number, 'fallDetection.sensitivity', (x) => x >= 0 && x <= 1, '[0, 1]');
  const delay = num(f.notificationDelaySeconds, DELAY.default as number, 'fallDetection.notificationDelaySeconds', (x) => x >= 0 && x <= 3600, '[0, 3600]');
  const recovery = num(f.recoveryWindowSeconds, 60, 'fallDetection.recoveryWindowSeconds', (x) => x >= 0 && x <= 86_400, '[0, 86400]');
  const minutes = num(i.thresholdMinutes, INACTIVITY_MINUTES.default as number, 'inactivity.thresholdMinutes', (x) => x > 0 && x <= 10_080, '(0, 10080]');
  const zones = c.zones ?? [];
  if (!Array.isArray(zones)) throw new RangeError('alerts: zones must be an array');
  return {
    fallEnabled: bool(f.enabled, FALL_ENABLED.default as boolean, 'fallDetection.enabled'),
    required: requiredFallConfidence(sensitivity),
    delayMs: delay * 1000,
    recoveryMs: recovery * 1000,
    inactivityEnabled: bool(i.enabled, INACTIVITY_ENABLED.default as boolean, 'inactivity.enabled'),
    thresholdMinutes: minutes,
    zones: compiled(zones),
  };
}

/**
 * Raises alerts and records activity events from labelled, tracked pose frames, with one
 * {@link AlertWatchers} per `environmentId` (`src/pose/watchers.ts`: a FallWatcher, an
 * InactivityWatcher and a ZoneWatcher); this operator resolves the configuration and routes frames.
 *
 * - Falls. A fall starts at a tracked person's first `falling` frame (from the `activity`
 *   operator); it counts when the peak confidence of its `falling` labels reaches
 *   `requiredFallConfidence(sensitivity)`. If the person is still down (`lying` / `falling`, or not
 *   seen standing, walking or sitting again: a lost track or an unlabelled pose does not count as
 *   getting up) `notificationDelaySeconds` after the fall, a `fall_detection` alert (severity high,
 *   actions `medical_response`, `notification`) goes out, and a second one (critical) at 3x the
 *   delay. Getting up before the delay raises nothing but records a `fall_detection` event with
 *   `recovery_detected: true` (severity medium, no actions taken); getting up after an alert,
 *   within the recovery window, records a `fall_recovery` event. Fall metadata: `fall_time` (epoch
 *   ms of the fall), `fall_duration` (s), `impact_severity` (low / moderate / high, from
 *   `peak_head_speed`, see `measureFall` in `src/pose/watchers.ts`), `recovery_detected`, `down_seconds`, `track_lost`.
 * - Inactivity. A tracked person whose floor position stays within 0.3 m of where they settled for
 *   `thresholdMinutes` raises one `inactivity` alert (medium, `notification`); moving 0.3 m or more
 *   re-arms it.
 * - Intrusion. A tracked person whose floor position is inside a zone (even-odd rule, boundary
 *   included) while its schedule is active raises one `intrusion` alert (zone severity, default
 *   high; `notification`) per stay; the stay ends when the person is more than 0.2 m outside
 *   the zone, so jitter on the boundary does not repeat it. A person who entered while the zone was
 *   not watched is alerted when the schedule opens. Metadata: `zone`, `zone_name`, `person_count`
 *   (persons with a floor position in the zone in that frame), `threat_level`.
 *
 * Each alert goes to `frame.alerts` and, as an ActivityEvent of the same type with
 * `actionsTaken: ['alert_sent', 'notification_dispatched']`, to `frame.events`. Ids are
 * deterministic: `alrt_<environment>_<track>_<time ms>_<kind>` and `evt_...` likewise, with kind
 * `fall`, `fall_critical`, `fall_recovery`, `inactivity` or `intrusion_<zone id>`. `personId` is the
 * track id. Location is the floor position in metres (NaN when the track never had one). Time is
 * `frame.time`, never the wall clock. Persons without a track id are ignored; state is per
 * environment and track, dropped 10 s after a track was last seen (an open fall is kept until it
 * ends); a frame time more than 10 s before the previous one (a replay restarting) clears the
 * environment's state. Frames without anything new pass through as they are.
 *
 * @param config alert settings (AlertsConfig; every field defaults), or a function returning them,
 *   called on every frame so that a change takes effect on the next frame. Zones are recompiled
 *   when the `zones` array is a different object.
 * @returns an operator from pose frames to pose frames with alerts and events
 * @throws RangeError at creation when a static config is invalid; an invalid config from the
 *   function form ends the stream with that error
 * @example
 * poses$.pipe(track(), activity(), alerts(() => ({ fallDetection: { sensitivity: cfg.sensitivity } })))
 */
export function alerts(config: AlertsConfig | (() => AlertsConfig) = {}): MonoTypeOperatorFunction<PoseFrame> {
  const compileAll = (zones: ZoneConfig[]) => zones.map(compileZone);
  const fixed = typeof config === 'function' ? null : resolveConfig(config, compileAll);
  const dynamic = typeof config === 'function' ? config : null;

  return (source) =>
    new Observable<PoseFrame>((subscriber) => {
      const environments = new Map<string, AlertWatchers>();
      let lastZones: ZoneConfig[] | null = null;
      let lastCompiled: CompiledZone[] = [];
      const compileCached = (zones: ZoneConfig[]) => {
        if (zones !== lastZones) {
          lastCompiled = compileAll(zones);
          lastZones = zones;
        }
        return lastCompiled;
      };

      const sub = source.subscribe({
        next(frame) {
          let out: PoseFrame = frame;
          try {
            const cfg = fixed ?? resolveConfig(dynamic!(), compileCached);
            if (frame && Array.isArray(frame.persons) && Number.isFinite(frame.time)) {
              let watchers = environments.get(frame.environmentId);
              if (!watchers) {
                watchers = new AlertWatchers();
                environments.set(frame.environmentId, watchers);
              }
              out = watchers.step(frame, cfg);
            }
          } catch (e) {
            subscriber.error(e);
            return;
          }
          subscriber.next(out);
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => sub.unsubscribe();
    });
}

function parseZones(raw: unknown): ZoneConfig[] {
  if (raw === undefined || raw === '') return [];
  if (typeof raw !== 'string') throw new RangeError('alerts: zones must be a JSON array');
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new RangeError('alerts: zones must be a JSON array of {id, name, polygon, schedule?, severity?}');
  }
  if (!Array.isArray(v)) throw new RangeError('alerts: zones must be a JSON array');
  return v as ZoneConfig[];
}

const PARAMS: readonly ParamSpec[] = [
  { name: 'fallDetection', ...FALL_ENABLED, description: 'Raise fall alerts (alerts.fall_detection.enabled)' },
  {
    name: 'sensitivity',
    ...SENSITIVITY,
    description: 'Fall sensitivity: required fall confidence = 0.95 - 0.45 * sensitivity (alerts.fall_detection.sensitivity)',
  },
  {
    name: 'notificationDelaySeconds',
    ...DELAY,
    description: 'Alert when the person is still down this long after the fall, critical at 3x (alerts.fall_detection.notification_delay_seconds)',
  },
  { name: 'recoveryWindowSeconds', type: 'number', default: 60, min: 0, max: 86_400, description: 'Watch for a recovery this long after a fall' },
  { name: 'inactivity', ...INACTIVITY_ENABLED, description: 'Raise inactivity alerts (alerts.inactivity_detection.enabled)' },
  {
    name: 'thresholdMinutes',
    ...INACTIVITY_MINUTES,
    description: 'Inactivity threshold, minutes within 0.3 m (alerts.inactivity_detection.threshold_minutes)',
  },
  {
    name: 'zones',
    type: 'string',
    default: '',
    description: 'Intrusion zones as a JSON array of {id, name, polygon: [[x, y], ...] metres, schedule?, severity?} (environment.zones)',
  },
];

/** Parsed `zones` strings, by string: live zones are re-read per frame, parsed (and compiled) once. */
function zonesParser(): (raw: unknown) => ZoneConfig[] {
  let last: unknown;
  let parsed: ZoneConfig[] = [];
  return (raw) => {
    if (raw !== last) {
      parsed = parseZones(raw);
      last = raw;
    }
    return parsed;
  };
}

function configOf(params: ParamValues, zones: (raw: unknown) => ZoneConfig[]): AlertsConfig {
  return {
    fallDetection: {
      enabled: params.fallDetection !== false,
      sensitivity: Number(params.sensitivity),
      notificationDelaySeconds: Number(params.notificationDelaySeconds),
      recoveryWindowSeconds: Number(params.recoveryWindowSeconds),
    },
    inactivity: { enabled: params.inactivity !== false, thresholdMinutes: Number(params.thresholdMinutes) },
    zones: zones(params.zones),
  };
}

export const spec: OperatorSpec = {
  name: 'alerts',
  summary: 'Fall, inactivity and zone-intrusion alerts and activity events from labelled, tracked poses',
  input: 'pose',
  output: 'pose',
  params: PARAMS,
  create: (params, ctx) => {
    const zones = zonesParser();
    const live = ctx.live;
    return live ? alerts(() => configOf({ ...params, ...live('alerts') }, zones)) : alerts(configOf(params, zones));
  },
};
