/**
 * Alert watchers: the per-environment state machines behind the `alerts` operator.
 *
 * - {@link FallWatcher}: falls, their alerts (high, then critical), recoveries and metrics.
 * - {@link InactivityWatcher}: a person who stays in one place for too long.
 * - {@link ZoneWatcher}: a person inside an intrusion zone while it is watched.
 * - {@link AlertWatchers}: the three over one pass of each frame, as the operator runs them.
 *
 * Each watcher serves one environment and keeps its state per track id. `step` takes one labelled,
 * tracked pose frame and returns the alerts and events it raises; time is `frame.time`, never the
 * wall clock, so the same frames always give the same alerts. Settings are passed to every step
 * (already validated: see `resolveConfig` in `operators/alerts.ts`), so a change applies from the
 * next frame.
 */

import { createPostureEstimate, estimatePosture, peakDescent, PoseHistory, referenceHeight } from './posture.js';
import { ACTIVITIES, type ActivityEvent, type AlertSeverity, type PersonPose, type PoseAlert, type PoseFrame } from './types.js';
import { distanceToBoundary, inZone, scheduleActive, type CompiledZone } from './zones.js';
import { fallTriggerOf } from './activityLabeller.js';

/** A person must move this far (metres) from where they settled to re-arm inactivity. */
export const INACTIVITY_RADIUS_M = 0.3;
/** Once inside a zone, a person counts as inside until this far (metres) outside its boundary. */
export const ZONE_EXIT_MARGIN_M = 0.2;
/**
 * A fall starting this soon after another fall in the same environment is the same event and is not
 * reported again, ms, unless the person's own answer is falling (the frame's trigger, `fallTriggerOf`). A contract v2 model
 * detects falls per room ("someone began to fall in the last 3 s"), and the activity operator hands
 * each frame's detection to one person: when that person changes, one fall became episodes on
 * several tracks, each with its own alert. On VALIDATION fall scenarios (23 falls, scored per event
 * in the room) 10 s took the episodes from 70 to 36 and precision 0.114 -> 0.194, at recall 0.348
 * -> 0.304; 5 s did half as much. Checked again on VALIDATION with 97 falls and hard negatives:
 * without it the shipped model's episodes went from 131 to 252 and precision 0.519 -> 0.290 (recall
 * 0.701 -> 0.753).
 *
 * The exception: a person whose own activity probabilities give P(falling) >= FALL_TRIGGER (the
 * activity operator's; the frame's `fallTrigger` where its model names one: `fallTriggerOf`) is a fall of their own, not the room's fall
 * handed on. With the rule alone the oracle (perfect model outputs) in the live-room benchmark's
 * VALIDATION rooms alerted 103 of 112 falls, every miss a second person falling within 10 s of the
 * first; with the exception 112 of 112, and the shipped model's VALIDATION episodes, precision and
 * recall did not change (its per-person P(falling) does not reach the trigger on the tracks the
 * room's fall is handed to).
 */
export const FALL_ROOM_REFRACTORY_MS = 10_000;
/**
 * State of a track not seen for this long (ms) is dropped (a track with an open fall is kept until
 * the fall ends); a frame this much earlier than the latest one (a replay restarting) clears a
 * watcher.
 */
export const TRACK_FORGET_MS = 10_000;

/** Index of falling among a model's activity probabilities (ACTIVITIES order, as `MODEL_ACTIVITIES`). */
const FALLING = ACTIVITIES.indexOf('falling');
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

/** What a {@link FallWatcher} is told each frame (validated by the caller). */
export interface FallSettings {
  /** False: no fall is watched, and an open one is dropped (posture samples are still kept). */
  fallEnabled: boolean;
  /** Peak `falling` confidence a fall needs to count, 0..1 (see {@link requiredFallConfidence}). */
  required: number;
  /** Still down this long after the fall (ms): the high alert; 3x: the critical one. 0: at once, no escalation. */
  delayMs: number;
  /** A recovery is watched for this long after a fall (ms); the episode ends at the larger of this and 3 x `delayMs`. */
  recoveryMs: number;
}

/** What an {@link InactivityWatcher} is told each frame (validated by the caller). */
export interface InactivitySettings {
  /** False: nothing is watched, and every anchor is dropped. */
  inactivityEnabled: boolean;
  /** Minutes within {@link INACTIVITY_RADIUS_M} of one floor position before the alert, > 0. */
  thresholdMinutes: number;
}

/** What a {@link ZoneWatcher} is told each frame. */
export interface ZoneSettings {
  /** Compiled zones (`compileZone`); a stay in a zone no longer listed is forgotten. */
  zones: readonly CompiledZone[];
}

/** Everything {@link AlertWatchers} is told each frame: one flat object, so that resolving it per frame makes one allocation. */
export interface AlertSettings extends FallSettings, InactivitySettings, ZoneSettings {}

/** Where a step puts what it raises: each alert also goes to `events` as an ActivityEvent. */
export interface AlertSink {
  alerts: PoseAlert[];
  events: ActivityEvent[];
}

/**
 * Records an ActivityEvent with id `evt_<environment>_<track>_<time ms>_<kind>`; location and
 * metadata are copied.
 */
function recordEvent(
  sink: AlertSink,
  frame: PoseFrame,
  type: ActivityEvent['type'],
  severity: AlertSeverity,
  trackId: number,
  confidence: number,
  location: { x: number; y: number },
  metadata: Record<string, unknown>,
  kind: string,
  actionsTaken: string[],
): void {
  const t = frame.time;
  sink.events.push({
    eventId: `evt_${frame.environmentId}_${trackId}_${t}_${kind}`,
    type,
    severity,
    time: t,
    environmentId: frame.environmentId,
    personId: trackId,
    trackId,
    confidence,
    location: { ...location },
    metadata: { ...metadata },
    actionsTaken,
  });
}

/**
 * Raises a PoseAlert with id `alrt_<environment>_<track>_<time ms>_<kind>` and records its event
 * (`actionsTaken: ['alert_sent', 'notification_dispatched']`).
 * @returns the alert id
 */
function raiseAlert(
  sink: AlertSink,
  frame: PoseFrame,
  type: PoseAlert['type'],
  severity: AlertSeverity,
  trackId: number,
  confidence: number,
  location: { x: number; y: number },
  metadata: Record<string, unknown>,
  kind: string,
  actionsRequired: string[],
  zone?: string,
): string {
  const t = frame.time;
  const alertId = `alrt_${frame.environmentId}_${trackId}_${t}_${kind}`;
  const alert: PoseAlert = {
    alertId,
    type,
    severity,
    time: t,
    environmentId: frame.environmentId,
    personId: trackId,
    trackId,
    confidence,
    location: { ...location },
    metadata: { ...metadata },
    actionsRequired,
  };
  if (zone !== undefined) alert.zone = zone;
  sink.alerts.push(alert);
  recordEvent(sink, frame, type, severity, trackId, confidence, location, metadata, kind, ['alert_sent', 'notification_dispatched']);
  return alertId;
}

/** A new, empty sink. */
const newSink = (): AlertSink => ({ alerts: [], events: [] });

/** Whether a floor position is present and finite. */
const hasFloor = (p: PersonPose): boolean => !!p.floor && Number.isFinite(p.floor.x) && Number.isFinite(p.floor.y);

/** The bookkeeping every watcher keeps per track. */
export interface TrackSlot {
  readonly id: number;
  /** Time of the last frame that carried the track. */
  lastSeen: number;
  /** Step counter of that frame (a duplicate track id in one frame is skipped). */
  seenFrame: number;
}

/**
 * What the three watchers share: state per track id, created at a track's first frame and dropped
 * {@link TRACK_FORGET_MS} after its last one unless the watcher still holds it, and cleared when a
 * frame is more than that much earlier than the latest one. Persons without a finite `trackId`
 * are ignored; a second person with the same id in one frame is skipped.
 *
 * `step` is `begin`, `visit` for each person, then `end`. The phases are public so that
 * {@link AlertWatchers} can run several watchers over one pass of a frame's persons, which keeps
 * what they raise in person order.
 *
 * @typeParam S per-track state
 * @typeParam C settings
 */
export abstract class TrackWatcher<S extends TrackSlot, C> {
  /** Per-track state by track id, in order of first sight. */
  protected readonly tracks = new Map<number, S>();
  private lastTime = -Infinity;
  private frameNo = 0;

  /**
   * Watches one frame.
   * @param frame a labelled, tracked pose frame of this watcher's environment, with a finite `time`
   *   and a `persons` array; not modified
   * @param settings validated settings, applied from this frame
   * @param sink where alerts and events go (default a new one)
   * @returns the sink, with this frame's alerts and events appended
   * @example
   * const { alerts, events } = watcher.step(frame, settings);
   */
  step(frame: PoseFrame, settings: C, sink: AlertSink = newSink()): AlertSink {
    this.begin(frame);
    for (const p of frame.persons) this.visit(p, frame, settings, sink);
    this.end(frame, settings, sink);
    return sink;
  }

  /**
   * First phase of {@link step}: starts a frame (clears the watcher when its time is more than
   * {@link TRACK_FORGET_MS} before the latest frame's).
   * @param frame the frame being watched
   */
  begin(frame: PoseFrame): void {
    const t = frame.time;
    if (t < this.lastTime - TRACK_FORGET_MS) {
      this.tracks.clear();
      this.reset();
      this.lastTime = t;
    }
    this.lastTime = Math.max(this.lastTime, t);
    this.frameNo++;
  }

  /**
   * Second phase of {@link step}: watches one person of the frame.
   * @param p a person of `frame.persons` (skipped when empty, without a finite `trackId`, or a
   *   repeat of a track already seen in this frame)
   * @param frame the frame being watched
   * @param settings validated settings
   * @param sink where alerts and events go
   */
  visit(p: PersonPose | null | undefined, frame: PoseFrame, settings: C, sink: AlertSink): void {
    if (!p) return;
    const id = p.trackId;
    if (id === undefined || id === null || !Number.isFinite(id)) return;
    const t = frame.time;
    let st = this.tracks.get(id);
    if (!st) {
      st = this.create(id, t);
      this.tracks.set(id, st);
    }
    if (st.seenFrame === this.frameNo) return;
    st.seenFrame = this.frameNo;
    st.lastSeen = t;
    this.see(st, p, frame, settings, sink);
  }

  /**
   * Last phase of {@link step}: watches the tracks the frame did not carry, and drops those unseen
   * for longer than {@link TRACK_FORGET_MS} that the watcher does not hold.
   * @param frame the frame being watched
   * @param settings validated settings
   * @param sink where alerts and events go
   */
  end(frame: PoseFrame, settings: C, sink: AlertSink): void {
    const t = frame.time;
    for (const st of this.tracks.values()) {
      if (st.seenFrame === this.frameNo) continue;
      this.unseen(st, frame, settings, sink);
      if (!this.holds(st) && Math.abs(t - st.lastSeen) > TRACK_FORGET_MS) this.tracks.delete(st.id);
    }
  }

  /**
   * Whether the watcher has state for a track.
   * @param trackId track id
   * @returns true from the track's first frame until its state is dropped
   */
  has(trackId: number): boolean {
    return this.tracks.has(trackId);
  }

  /** State of a track at its first frame (`seenFrame` 0). */
  protected abstract create(id: number, now: number): S;
  /** Watches a track the frame carries (`lastSeen` is already the frame's time). */
  protected abstract see(st: S, p: PersonPose, frame: PoseFrame, settings: C, sink: AlertSink): void;
  /** Watches a track the frame did not carry; default nothing. */
  protected unseen(_st: S, _frame: PoseFrame, _settings: C, _sink: AlertSink): void {}
  /** Whether a track's state must be kept however long it has been unseen. */
  protected abstract holds(st: S): boolean;
  /** Clears state beyond the tracks (on a jump back in time); default nothing. */
  protected reset(): void {}
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

interface FallTrack extends TrackSlot {
  /** Last finite floor position (NaN until the track has one). */
  floorX: number;
  floorY: number;
  trace: PoseHistory;
  fall: FallEpisode | null;
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
 * Watches one environment for falls. A fall starts at a tracked person's first `falling` frame
 * (labels from the `activity` operator) and counts when the peak confidence of its `falling`
 * labels reaches `required`. A person still down (`lying` / `falling`, or not seen standing,
 * walking or sitting again: a lost track or an unlabelled pose is not getting up) `delayMs` after
 * the fall raises a `fall_detection` alert (high, actions `medical_response`, `notification`), and
 * a critical one at 3x the delay. Getting up before the delay raises nothing but records a
 * `fall_detection` event (medium, `recovery_detected: true`, no actions); getting up after an
 * alert, within the recovery window, records a `fall_recovery` event (low, `alert_id` of the first
 * alert). A `falling` frame within {@link FALL_ROOM_REFRACTORY_MS} of the environment's last fall
 * starts no fall unless the person's own P(falling) reaches the frame's trigger (`fallTriggerOf`).
 *
 * Metadata: `fall_time` (epoch ms of the fall), `fall_duration` (s), `impact_severity` (low /
 * moderate / high) and `peak_head_speed` (reference heights per second), measured from the
 * track's posture samples 1.5 s after the fall, `recovery_detected`, `down_seconds`, `track_lost`.
 * Location: the latest floor position while falling or lying (NaN when the track never had one).
 *
 * @example
 * const falls = new FallWatcher();
 * const settings = { fallEnabled: true, required: 0.59, delayMs: 2000, recoveryMs: 60_000 };
 * for (const frame of frames) alerts.push(...falls.step(frame, settings).alerts);
 */
export class FallWatcher extends TrackWatcher<FallTrack, FallSettings> {
  /** Onset of the environment's latest fall (for the room refractory). */
  private lastFallOnset = -Infinity;
  /** Scratch posture estimate. */
  private readonly est = createPostureEstimate();

  /**
   * Whether a track has a fall being watched (not yet recovered from, ended or dropped).
   * @param trackId track id
   * @returns true while the fall is open
   * @example falls.isOpen(3) // true from track 3's first falling frame until it gets up
   */
  isOpen(trackId: number): boolean {
    const st = this.tracks.get(trackId);
    return st !== undefined && st.fall !== null;
  }

  protected override create(id: number, now: number): FallTrack {
    return { id, lastSeen: now, seenFrame: 0, floorX: NaN, floorY: NaN, trace: new PoseHistory(TRACE_CAPACITY), fall: null };
  }

  protected override reset(): void {
    this.lastFallOnset = -Infinity;
  }

  protected override holds(st: FallTrack): boolean {
    return st.fall !== null;
  }

  protected override see(st: FallTrack, p: PersonPose, frame: PoseFrame, cfg: FallSettings, sink: AlertSink): void {
    const t = frame.time;
    if (hasFloor(p)) {
      st.floorX = p.floor!.x;
      st.floorY = p.floor!.y;
    }
    if (p.keypoints) {
      const est = this.est;
      estimatePosture(p.keypoints, p.bbox, est);
      if (est.valid) {
        st.trace.trim(t, TRACE_MS);
        st.trace.push(t, est, st.floorX, st.floorY, NaN);
      }
    }
    if (cfg.fallEnabled) this.label(st, p, frame, cfg, sink);
    else st.fall = null;
  }

  protected override unseen(st: FallTrack, frame: PoseFrame, cfg: FallSettings, sink: AlertSink): void {
    if (!st.fall) return;
    if (cfg.fallEnabled) this.stillDown(st, true, frame, cfg, sink);
    else st.fall = null;
  }

  /** A seen person's activity label: starts, grows, ends (recovery) or keeps watching a fall. */
  private label(st: FallTrack, p: PersonPose, frame: PoseFrame, cfg: FallSettings, sink: AlertSink): void {
    const t = frame.time;
    const a = p.activity;
    if (a === 'falling') {
      const c = Number.isFinite(p.activityConfidence) ? p.activityConfidence! : 0;
      if (!st.fall) {
        const own = (p.modelActivity?.probabilities[FALLING] ?? 0) >= fallTriggerOf(frame);
        if (t - this.lastFallOnset < FALL_ROOM_REFRACTORY_MS && t >= this.lastFallOnset && !own) return;
        this.lastFallOnset = t;
        st.fall = { onset: t, confidence: c, location: { x: st.floorX, y: st.floorY }, alerted: 0, firstAlertId: '', metrics: null };
      } else st.fall.confidence = Math.max(st.fall.confidence, c);
    }
    const ep = st.fall;
    if (!ep) return;
    if ((a === 'falling' || a === 'lying') && Number.isFinite(st.floorX)) ep.location = { x: st.floorX, y: st.floorY };
    if (a === 'standing' || a === 'walking' || a === 'sitting') {
      ep.metrics ??= measureFall(st.trace, ep.onset, t);
      if (ep.alerted > 0) {
        recordEvent(
          sink,
          frame,
          'fall_recovery',
          'low',
          st.id,
          ep.confidence,
          ep.location,
          { ...fallMetadata(ep, true, false, t), alert_id: ep.firstAlertId },
          'fall_recovery',
          [],
        );
      } else if (ep.confidence >= cfg.required) {
        recordEvent(sink, frame, 'fall_detection', 'medium', st.id, ep.confidence, ep.location, fallMetadata(ep, true, false, t), 'fall', []);
      }
      st.fall = null;
      return;
    }
    this.stillDown(st, false, frame, cfg, sink);
  }

  /** Deadlines of an open fall for a person who has not got up (seen down, unlabelled or unseen). */
  private stillDown(st: FallTrack, lost: boolean, frame: PoseFrame, cfg: FallSettings, sink: AlertSink): void {
    const t = frame.time;
    const ep = st.fall!;
    if (!ep.metrics && t - ep.onset >= FALL_SETTLE_MS) ep.metrics = measureFall(st.trace, ep.onset, t);
    if (ep.confidence >= cfg.required) {
      if (ep.alerted === 0 && t - ep.onset >= cfg.delayMs) {
        ep.metrics ??= measureFall(st.trace, ep.onset, t);
        ep.firstAlertId = raiseAlert(sink, frame, 'fall_detection', 'high', st.id, ep.confidence, ep.location, fallMetadata(ep, false, lost, t), 'fall', [
          'medical_response',
          'notification',
        ]);
        ep.alerted = 1;
      }
      if (ep.alerted === 1 && t - ep.onset >= 3 * cfg.delayMs && 3 * cfg.delayMs > cfg.delayMs) {
        raiseAlert(sink, frame, 'fall_detection', 'critical', st.id, ep.confidence, ep.location, fallMetadata(ep, false, lost, t), 'fall_critical', [
          'medical_response',
          'notification',
        ]);
        ep.alerted = 2;
      }
    }
    if (t - ep.onset >= Math.max(cfg.recoveryMs, 3 * cfg.delayMs)) st.fall = null;
  }
}

function fallMetadata(ep: FallEpisode, recovered: boolean, lost: boolean, now: number): Record<string, unknown> {
  return {
    fall_time: ep.onset,
    fall_duration: ep.metrics?.fallDuration ?? null,
    impact_severity: ep.metrics?.impactSeverity ?? null,
    peak_head_speed: ep.metrics?.peakHeadSpeed ?? null,
    recovery_detected: recovered,
    down_seconds: (now - ep.onset) / 1000,
    track_lost: lost,
  };
}

interface InactivityTrack extends TrackSlot {
  /** Where and when the person settled (NaN time: not anchored). */
  anchorX: number;
  anchorY: number;
  anchorTime: number;
  alerted: boolean;
}

/**
 * Watches one environment for inactivity: a tracked person whose floor position stays within
 * {@link INACTIVITY_RADIUS_M} of where they settled for `thresholdMinutes` raises one `inactivity`
 * alert (medium, `notification`; metadata `inactive_seconds`, `threshold_minutes`, `radius_m`,
 * `activity`); moving that far or more settles them anew and re-arms it. Frames without a floor
 * position change nothing.
 *
 * @example
 * const still = new InactivityWatcher();
 * still.step(frame, { inactivityEnabled: true, thresholdMinutes: 30 }).alerts; // [] until 30 min in place
 */
export class InactivityWatcher extends TrackWatcher<InactivityTrack, InactivitySettings> {
  /**
   * @param keep tracks for which this says true are kept however long unseen (as
   *   {@link AlertWatchers} keeps every state of a track with an open fall); default none
   */
  constructor(private readonly keep: (trackId: number) => boolean = () => false) {
    super();
  }

  protected override create(id: number, now: number): InactivityTrack {
    return { id, lastSeen: now, seenFrame: 0, anchorX: NaN, anchorY: NaN, anchorTime: NaN, alerted: false };
  }

  protected override holds(st: InactivityTrack): boolean {
    return this.keep(st.id);
  }

  protected override see(st: InactivityTrack, p: PersonPose, frame: PoseFrame, cfg: InactivitySettings, sink: AlertSink): void {
    if (!cfg.inactivityEnabled) {
      st.anchorTime = NaN;
      return;
    }
    if (!hasFloor(p)) return;
    const t = frame.time;
    const x = p.floor!.x;
    const y = p.floor!.y;
    if (!Number.isFinite(st.anchorTime) || Math.hypot(x - st.anchorX, y - st.anchorY) >= INACTIVITY_RADIUS_M) {
      st.anchorX = x;
      st.anchorY = y;
      st.anchorTime = t;
      st.alerted = false;
      return;
    }
    if (!st.alerted && t - st.anchorTime >= cfg.thresholdMinutes * 60_000) {
      raiseAlert(
        sink,
        frame,
        'inactivity',
        'medium',
        st.id,
        Number.isFinite(p.confidence) ? p.confidence : 0,
        { x, y },
        {
          inactive_seconds: (t - st.anchorTime) / 1000,
          threshold_minutes: cfg.thresholdMinutes,
          radius_m: INACTIVITY_RADIUS_M,
          activity: p.activity ?? null,
        },
        'inactivity',
        ['notification'],
      );
      st.alerted = true;
    }
  }
}

interface ZoneTrack extends TrackSlot {
  /** Zones the person is inside, with whether this stay was alerted. */
  inside: Map<string, boolean>;
}

/** Whether a zone id is among the zones. */
function listed(zones: readonly CompiledZone[], id: string): boolean {
  for (const z of zones) if (z.id === id) return true;
  return false;
}

/** Persons of a frame with a floor position inside a zone. */
function personCount(z: CompiledZone, persons: readonly PersonPose[]): number {
  let n = 0;
  for (const q of persons) if (q?.floor && inZone(z, q.floor.x, q.floor.y)) n++;
  return n;
}

/**
 * Watches one environment's intrusion zones: a tracked person whose floor position is inside a
 * zone (even-odd rule, boundary included) while its schedule is active raises one `intrusion`
 * alert (zone severity; `notification`; `zone` set) per stay. The stay ends when the person is
 * more than {@link ZONE_EXIT_MARGIN_M} outside the zone, so jitter on the boundary does not repeat
 * it; a person who entered while the zone was not watched is alerted when the schedule opens.
 * Metadata: `zone`, `zone_name`, `person_count` (persons of the frame with a floor position in the
 * zone), `threat_level`. Frames without a floor position change nothing.
 *
 * @example
 * const zones = new ZoneWatcher();
 * zones.step(frame, { zones: [compileZone({ id: 'vault', name: 'Vault', polygon: [[0, 0], [4, 0], [4, 4]] })] }).alerts;
 */
export class ZoneWatcher extends TrackWatcher<ZoneTrack, ZoneSettings> {
  /**
   * @param keep tracks for which this says true are kept however long unseen (as
   *   {@link AlertWatchers} keeps every state of a track with an open fall); default none
   */
  constructor(private readonly keep: (trackId: number) => boolean = () => false) {
    super();
  }

  protected override create(id: number, now: number): ZoneTrack {
    return { id, lastSeen: now, seenFrame: 0, inside: new Map() };
  }

  protected override holds(st: ZoneTrack): boolean {
    return this.keep(st.id);
  }

  protected override see(st: ZoneTrack, p: PersonPose, frame: PoseFrame, cfg: ZoneSettings, sink: AlertSink): void {
    const inside = st.inside;
    const zones = cfg.zones;
    if (inside.size > 0) for (const zid of inside.keys()) if (!listed(zones, zid)) inside.delete(zid);
    if (!hasFloor(p)) return;
    const x = p.floor!.x;
    const y = p.floor!.y;
    for (const z of zones) {
      let alerted = inside.get(z.id);
      if (alerted === undefined) {
        if (!inZone(z, x, y)) continue;
        alerted = false;
        inside.set(z.id, false);
      } else if (!inZone(z, x, y) && distanceToBoundary(x, y, z.polygon) > ZONE_EXIT_MARGIN_M) {
        inside.delete(z.id);
        continue;
      }
      if (!alerted && scheduleActive(z.schedule, frame.time)) {
        raiseAlert(
          sink,
          frame,
          'intrusion',
          z.severity,
          st.id,
          Number.isFinite(p.confidence) ? p.confidence : 0,
          { x, y },
          { zone: z.id, zone_name: z.name, person_count: personCount(z, frame.persons), threat_level: z.severity },
          `intrusion_${z.id}`,
          ['notification'],
          z.id,
        );
        inside.set(z.id, true);
      }
    }
  }
}

/**
 * The three watchers of one environment, run over one pass of each frame's persons: for each
 * person its fall, inactivity and intrusion alerts in that order, then those of tracks the frame
 * did not carry. Every state of a track is kept while its fall is open, and dropped together
 * {@link TRACK_FORGET_MS} after the track was last seen.
 *
 * @example
 * const watchers = new AlertWatchers();
 * const out = watchers.step(frame, settings); // frame itself when nothing was raised
 */
export class AlertWatchers {
  readonly fall = new FallWatcher();
  readonly inactivity: InactivityWatcher;
  readonly zones: ZoneWatcher;
  /** Reused between frames: a frame that raises nothing allocates nothing here. */
  private readonly sink: AlertSink = { alerts: [], events: [] };

  constructor() {
    const open = (trackId: number) => this.fall.isOpen(trackId);
    this.inactivity = new InactivityWatcher(open);
    this.zones = new ZoneWatcher(open);
  }

  /**
   * Watches one frame.
   * @param frame a labelled, tracked pose frame of this environment, with a finite `time` and a
   *   `persons` array; not modified
   * @param settings validated settings, applied from this frame
   * @returns the frame itself when nothing was raised, else a copy whose `alerts` and `events` are
   *   the frame's followed by the new ones
   * @example
   * poseFrames.map((f) => watchers.step(f, settings)).flatMap((f) => f.alerts ?? []);
   */
  step(frame: PoseFrame, settings: AlertSettings): PoseFrame {
    const { fall, inactivity, zones, sink } = this;
    sink.alerts.length = 0;
    sink.events.length = 0;
    fall.begin(frame);
    inactivity.begin(frame);
    zones.begin(frame);
    for (const p of frame.persons) {
      fall.visit(p, frame, settings, sink);
      inactivity.visit(p, frame, settings, sink);
      zones.visit(p, frame, settings, sink);
    }
    fall.end(frame, settings, sink);
    inactivity.end(frame, settings, sink);
    zones.end(frame, settings, sink);

    const nAlerts = sink.alerts.length;
    const nEvents = sink.events.length;
    if (nAlerts === 0 && nEvents === 0) return frame;
    const out: PoseFrame = { ...frame };
    if (nAlerts > 0) out.alerts = frame.alerts ? [...frame.alerts, ...sink.alerts] : sink.alerts.slice();
    if (nEvents > 0) out.events = frame.events ? [...frame.events, ...sink.events] : sink.events.slice();
    sink.alerts.length = 0;
    sink.events.length = 0;
    return out;
  }
}
