import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import { MODEL_ACTIVITIES } from '../src/model/contract.js';
import { FALL_TRIGGER } from './activity.js';
import { createPostureEstimate, estimatePosture, peakDescent, PoseHistory, referenceHeight } from '../src/pose/posture.js';
import type { ActivityEvent, AlertSeverity, PersonPose, PoseAlert, PoseFrame } from '../src/pose/types.js';
import { compileZone, distanceToBoundary, inZone, scheduleActive, type CompiledZone, type ZoneConfig } from '../src/pose/zones.js';

export type { ZoneConfig, ZoneSchedule } from '../src/pose/zones.js';

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
   * 3x; default 2 s (the configuration's). 0 raises the alert on the fall's first frame, with no escalation.
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
  /** A tracked person who stays within 0.3 m of one floor position this long raises one alert; default 30. */
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

/** A person must move this far (metres) from where they settled to re-arm inactivity. */
export const INACTIVITY_RADIUS_M = 0.3;
/** Once inside a zone, a person counts as inside until this far (metres) outside its boundary. */
export const ZONE_EXIT_MARGIN_M = 0.2;
/**
 * A fall starting this soon after another fall in the same environment is the same event and is not
 * reported again, ms, unless the person's own answer is falling (`ownFall`). A contract v2 model
 * detects falls per room ("someone began to fall in the last 3 s"), and the activity operator hands
 * each frame's detection to one person: when that person changes, one fall became episodes on
 * several tracks, each with its own alert. On VALIDATION fall scenarios (23 falls, scored per event
 * in the room) 10 s took the episodes from 70 to 36 and precision 0.114 -> 0.194, at recall 0.348
 * -> 0.304; 5 s did half as much. Checked again on VALIDATION with 97 falls and hard negatives:
 * without it the shipped model's episodes went from 131 to 252 and precision 0.519 -> 0.290 (recall
 * 0.701 -> 0.753).
 *
 * The exception: a person whose own activity probabilities give P(falling) >= FALL_TRIGGER is a
 * fall of their own, not the room's fall handed on. With the rule alone the oracle (perfect model
 * outputs) in the live-room benchmark's VALIDATION rooms alerted 103 of 112 falls, every miss a
 * second person falling within 10 s of the first; with the exception 112 of 112, and the shipped
 * model's VALIDATION episodes, precision and recall did not change (its per-person P(falling)
 * does not reach the trigger on the tracks the room's fall is handed to).
 */
export const FALL_ROOM_REFRACTORY_MS = 10_000;
const FALLING = MODEL_ACTIVITIES.indexOf('falling');
/** Whether a person's own (v2 model) activity probabilities say falling: see FALL_ROOM_REFRACTORY_MS. */
const ownFall = (p: PersonPose): boolean => (p.modelActivity?.probabilities[FALLING] ?? 0) >= FALL_TRIGGER;
/** Non-fall state of a track not seen for this long (ms) is dropped. */
const TRACK_FORGET_MS = 10_000;
/** Fall duration and impact are measured this long after the fall's first frame, ms. */
const FALL_SETTLE_MS = 1500;
/** Posture samples kept per track for fall measurements: onset - 1.5 s .. onset + 1.5 s at up to ~60 Hz. */
const TRACE_CAPACITY = 256;
const TRACE_MS = 4000;
/** Impact severity from the peak downward head speed, reference heights per second. */
const IMPACT_MODERATE = 1.2;
const IMPACT_HIGH = 2.0;

/**
 * The confidence a fall needs at a sensitivity: `0.95 - 0.45 * sensitivity`.
 * @param sensitivity 0..1
 * @returns 0.5..0.95
 * @example requiredFallConfidence(0.8) // 0.59
 */
export function requiredFallConfidence(sensitivity: number): number {
  return 0.95 - 0.45 * sensitivity;
}

interface Resolved {
  fallEnabled: boolean;
  required: number;
  delayMs: number;
  recoveryMs: number;
  inactivityEnabled: boolean;
  thresholdMinutes: number;
  zones: CompiledZone[];
}

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

function resolveConfig(c: AlertsConfig, compiled: (zones: ZoneConfig[]) => CompiledZone[]): Resolved {
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

/** Fall duration and impact, measured once the fall has settled. */
interface FallMetrics {
  fallDuration: number | null;
  peakHeadSpeed: number | null;
  impactSeverity: 'low' | 'moderate' | 'high' | null;
}

interface FallEpisode {
  /** Time of the first `falling` frame. */
  onset: number;
  /** Peak confidence of the `falling` labels. */
  confidence: number;
  location: { x: number; y: number };
  /** 0 no alert yet, 1 the high alert went out, 2 the critical one too. */
  alerted: number;
  firstAlertId: string;
  metrics: FallMetrics | null;
}

interface TrackState {
  lastSeen: number;
  /** Frame counter of the last frame that carried this track (duplicates in a frame are skipped). */
  seenFrame: number;
  floorX: number;
  floorY: number;
  trace: PoseHistory;
  fall: FallEpisode | null;
  anchorX: number;
  anchorY: number;
  anchorTime: number;
  inactivityAlerted: boolean;
  /** Zones the person is inside, with whether this stay was alerted. */
  zones: Map<string, boolean>;
}

/**
 * Measures a fall from a track's recent posture samples: the descent starts at the last sample
 * before the fall's first `falling` frame whose head was within 10 % of the reference height of its
 * upright level, and ends at the first sample within 10 % of the lowest head position reached;
 * `fall_duration` is the time between them (s). The peak downward head speed over >= 250 ms spans
 * (`peakDescent`), in reference heights per second, grades the impact: < 1.2 low, < 2.0 moderate,
 * else high (for a 1.7 m person: below ~2 m/s, 2-3.4 m/s, faster). Nulls when no upright sample
 * precedes the fall in the trace.
 */
function measureFall(trace: PoseHistory, onset: number, now: number): FallMetrics {
  const none: FallMetrics = { fallDuration: null, peakHeadSpeed: null, impactSeverity: null };
  let ref = -1;
  for (let k = 0; k < trace.length; k++) {
    const t = trace.time(k);
    if (t > onset) continue;
    if (onset - t > FALL_SETTLE_MS) break;
    if (trace.upright(k)) {
      ref = k;
      break;
    }
  }
  if (ref < 0) return none;
  const box = referenceHeight(trace, ref, now);
  if (!(box > 0)) return none;
  const refHead = trace.headY(ref);
  let start = ref;
  for (let k = ref - 1; k >= 0 && trace.time(k) <= onset; k--) if (trace.headY(k) - refHead <= 0.1 * box) start = k;
  let lowest = -Infinity;
  for (let k = start; k >= 0; k--) lowest = Math.max(lowest, trace.headY(k));
  let end = start;
  for (let k = start; k >= 0; k--)
    if (trace.headY(k) >= lowest - 0.1 * box) {
      end = k;
      break;
    }
  const speed = peakDescent(trace, start) / box;
  return {
    fallDuration: (trace.time(end) - trace.time(start)) / 1000,
    peakHeadSpeed: Math.round(speed * 1000) / 1000,
    impactSeverity: speed < IMPACT_MODERATE ? 'low' : speed < IMPACT_HIGH ? 'moderate' : 'high',
  };
}

/**
 * Raises alerts and records activity events from labelled, tracked pose frames:
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
 *   `peak_head_speed`, see `measureFall`), `recovery_detected`, `down_seconds`, `track_lost`.
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
      const environments = new Map<string, { lastTime: number; tracks: Map<number, TrackState>; lastFallOnset: number }>();
      const est = createPostureEstimate();
      let frameCount = 0;
      let lastZones: ZoneConfig[] | null = null;
      let lastCompiled: CompiledZone[] = [];
      const compileCached = (zones: ZoneConfig[]) => {
        if (zones !== lastZones) {
          lastCompiled = compileAll(zones);
          lastZones = zones;
        }
        return lastCompiled;
      };

      const handle = (frame: PoseFrame, cfg: Resolved): PoseFrame => {
        const t = frame.time;
        const envId = frame.environmentId;
        let env = environments.get(envId);
        if (!env || t < env.lastTime - TRACK_FORGET_MS) {
          env = { lastTime: t, tracks: new Map(), lastFallOnset: -Infinity };
          environments.set(envId, env);
        }
        env.lastTime = Math.max(env.lastTime, t);
        const tracks = env.tracks;
        const frameNo = ++frameCount;
        const newAlerts: PoseAlert[] = [];
        const newEvents: ActivityEvent[] = [];

        const event = (
          type: ActivityEvent['type'],
          severity: AlertSeverity,
          trackId: number,
          confidence: number,
          location: { x: number; y: number },
          metadata: Record<string, unknown>,
          kind: string,
          actionsTaken: string[],
        ) =>
          newEvents.push({
            eventId: `evt_${envId}_${trackId}_${t}_${kind}`,
            type,
            severity,
            time: t,
            environmentId: envId,
            personId: trackId,
            trackId,
            confidence,
            location: { ...location },
            metadata: { ...metadata },
            actionsTaken,
          });

        const raise = (
          type: PoseAlert['type'],
          severity: AlertSeverity,
          trackId: number,
          confidence: number,
          location: { x: number; y: number },
          metadata: Record<string, unknown>,
          kind: string,
          actionsRequired: string[],
          zone?: string,
        ): string => {
          const alertId = `alrt_${envId}_${trackId}_${t}_${kind}`;
          const alert: PoseAlert = {
            alertId,
            type,
            severity,
            time: t,
            environmentId: envId,
            personId: trackId,
            trackId,
            confidence,
            location: { ...location },
            metadata: { ...metadata },
            actionsRequired,
          };
          if (zone !== undefined) alert.zone = zone;
          newAlerts.push(alert);
          event(type, severity, trackId, confidence, location, metadata, kind, ['alert_sent', 'notification_dispatched']);
          return alertId;
        };

        const fallMetadata = (ep: FallEpisode, recovered: boolean, lost: boolean): Record<string, unknown> => ({
          fall_time: ep.onset,
          fall_duration: ep.metrics?.fallDuration ?? null,
          impact_severity: ep.metrics?.impactSeverity ?? null,
          peak_head_speed: ep.metrics?.peakHeadSpeed ?? null,
          recovery_detected: recovered,
          down_seconds: (t - ep.onset) / 1000,
          track_lost: lost,
        });

        /** Deadlines of an open fall for a person who has not got up (seen down, unlabelled or unseen). */
        const stillDown = (id: number, st: TrackState, lost: boolean) => {
          const ep = st.fall!;
          if (!ep.metrics && t - ep.onset >= FALL_SETTLE_MS) ep.metrics = measureFall(st.trace, ep.onset, t);
          if (ep.confidence >= cfg.required) {
            if (ep.alerted === 0 && t - ep.onset >= cfg.delayMs) {
              ep.metrics ??= measureFall(st.trace, ep.onset, t);
              ep.firstAlertId = raise('fall_detection', 'high', id, ep.confidence, ep.location, fallMetadata(ep, false, lost), 'fall', [
                'medical_response',
                'notification',
              ]);
              ep.alerted = 1;
            }
            if (ep.alerted === 1 && t - ep.onset >= 3 * cfg.delayMs && 3 * cfg.delayMs > cfg.delayMs) {
              raise('fall_detection', 'critical', id, ep.confidence, ep.location, fallMetadata(ep, false, lost), 'fall_critical', [
                'medical_response',
                'notification',
              ]);
              ep.alerted = 2;
            }
          }
          if (t - ep.onset >= Math.max(cfg.recoveryMs, 3 * cfg.delayMs)) st.fall = null;
        };

        const fall = (id: number, st: TrackState, p: PersonPose) => {
          const a = p.activity;
          if (a === 'falling') {
            const c = Number.isFinite(p.activityConfidence) ? p.activityConfidence! : 0;
            if (!st.fall) {
              if (t - env.lastFallOnset < FALL_ROOM_REFRACTORY_MS && t >= env.lastFallOnset && !ownFall(p)) return;
              env.lastFallOnset = t;
              st.fall = { onset: t, confidence: c, location: { x: st.floorX, y: st.floorY }, alerted: 0, firstAlertId: '', metrics: null };
            }
            else st.fall.confidence = Math.max(st.fall.confidence, c);
          }
          const ep = st.fall;
          if (!ep) return;
          if ((a === 'falling' || a === 'lying') && Number.isFinite(st.floorX)) ep.location = { x: st.floorX, y: st.floorY };
          if (a === 'standing' || a === 'walking' || a === 'sitting') {
            ep.metrics ??= measureFall(st.trace, ep.onset, t);
            if (ep.alerted > 0) {
              event('fall_recovery', 'low', id, ep.confidence, ep.location, { ...fallMetadata(ep, true, false), alert_id: ep.firstAlertId }, 'fall_recovery', []);
            } else if (ep.confidence >= cfg.required) {
              event('fall_detection', 'medium', id, ep.confidence, ep.location, fallMetadata(ep, true, false), 'fall', []);
            }
            st.fall = null;
            return;
          }
          stillDown(id, st, false);
        };

        const inactivity = (id: number, st: TrackState, p: PersonPose, hasFloor: boolean) => {
          if (!cfg.inactivityEnabled) {
            st.anchorTime = NaN;
            return;
          }
          if (!hasFloor) return;
          if (!Number.isFinite(st.anchorTime) || Math.hypot(st.floorX - st.anchorX, st.floorY - st.anchorY) >= INACTIVITY_RADIUS_M) {
            st.anchorX = st.floorX;
            st.anchorY = st.floorY;
            st.anchorTime = t;
            st.inactivityAlerted = false;
            return;
          }
          if (!st.inactivityAlerted && t - st.anchorTime >= cfg.thresholdMinutes * 60_000) {
            raise(
              'inactivity',
              'medium',
              id,
              Number.isFinite(p.confidence) ? p.confidence : 0,
              { x: st.floorX, y: st.floorY },
              {
                inactive_seconds: (t - st.anchorTime) / 1000,
                threshold_minutes: cfg.thresholdMinutes,
                radius_m: INACTIVITY_RADIUS_M,
                activity: p.activity ?? null,
              },
              'inactivity',
              ['notification'],
            );
            st.inactivityAlerted = true;
          }
        };

        const personCount = (z: CompiledZone) => {
          let n = 0;
          for (const q of frame.persons) if (q?.floor && inZone(z, q.floor.x, q.floor.y)) n++;
          return n;
        };

        const intrusion = (id: number, st: TrackState, p: PersonPose, hasFloor: boolean) => {
          if (st.zones.size > 0) for (const zid of st.zones.keys()) if (!cfg.zones.some((z) => z.id === zid)) st.zones.delete(zid);
          if (!hasFloor) return;
          const x = st.floorX;
          const y = st.floorY;
          for (const z of cfg.zones) {
            let alerted = st.zones.get(z.id);
            if (alerted === undefined) {
              if (!inZone(z, x, y)) continue;
              alerted = false;
              st.zones.set(z.id, false);
            } else if (!inZone(z, x, y) && distanceToBoundary(x, y, z.polygon) > ZONE_EXIT_MARGIN_M) {
              st.zones.delete(z.id);
              continue;
            }
            if (!alerted && scheduleActive(z.schedule, t)) {
              raise(
                'intrusion',
                z.severity,
                id,
                Number.isFinite(p.confidence) ? p.confidence : 0,
                { x, y },
                { zone: z.id, zone_name: z.name, person_count: personCount(z), threat_level: z.severity },
                `intrusion_${z.id}`,
                ['notification'],
                z.id,
              );
              st.zones.set(z.id, true);
            }
          }
        };

        for (const p of frame.persons) {
          if (!p) continue;
          const id = p.trackId;
          if (id === undefined || id === null || !Number.isFinite(id)) continue;
          let st = tracks.get(id);
          if (!st) {
            st = {
              lastSeen: t,
              seenFrame: 0,
              floorX: NaN,
              floorY: NaN,
              trace: new PoseHistory(TRACE_CAPACITY),
              fall: null,
              anchorX: NaN,
              anchorY: NaN,
              anchorTime: NaN,
              inactivityAlerted: false,
              zones: new Map(),
            };
            tracks.set(id, st);
          }
          if (st.seenFrame === frameNo) continue;
          st.seenFrame = frameNo;
          st.lastSeen = t;
          const floor = p.floor;
          const hasFloor = !!floor && Number.isFinite(floor.x) && Number.isFinite(floor.y);
          if (hasFloor) {
            st.floorX = floor!.x;
            st.floorY = floor!.y;
          }
          if (p.keypoints) {
            estimatePosture(p.keypoints, p.bbox, est);
            if (est.valid) {
              st.trace.trim(t, TRACE_MS);
              st.trace.push(t, est, st.floorX, st.floorY, NaN);
            }
          }
          if (cfg.fallEnabled) fall(id, st, p);
          else st.fall = null;
          inactivity(id, st, p, hasFloor);
          intrusion(id, st, p, hasFloor);
        }

        for (const [id, st] of tracks) {
          if (st.seenFrame === frameNo) continue;
          if (st.fall) {
            if (cfg.fallEnabled) stillDown(id, st, true);
            else st.fall = null;
          }
          if (!st.fall && Math.abs(t - st.lastSeen) > TRACK_FORGET_MS) tracks.delete(id);
        }

        if (newAlerts.length === 0 && newEvents.length === 0) return frame;
        const out: PoseFrame = { ...frame };
        if (newAlerts.length > 0) out.alerts = frame.alerts ? [...frame.alerts, ...newAlerts] : newAlerts;
        if (newEvents.length > 0) out.events = frame.events ? [...frame.events, ...newEvents] : newEvents;
        return out;
      };

      const sub = source.subscribe({
        next(frame) {
          let out: PoseFrame;
          try {
            const cfg = fixed ?? resolveConfig(dynamic!(), compileCached);
            out = frame && Array.isArray(frame.persons) && Number.isFinite(frame.time) ? handle(frame, cfg) : frame;
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
