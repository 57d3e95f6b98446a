/**
 * Activity labelling: the per-environment state behind the `activity` operator.
 *
 * An {@link ActivityLabeller} serves one environment and keeps its state per track id. `label`
 * takes one pose frame and returns it with every person labelled (standing, sitting, lying,
 * walking, falling) and any `activity_change` events added; time is `frame.time`, never the wall
 * clock, so the same frames always give the same labels. Settings are validated by the operator
 * (`resolve` in `operators/activity.ts`) and may be passed again with any frame, so a change
 * applies from that frame.
 */

import {
  activityOf,
  createPostureEstimate,
  DEFAULT_ACTIVITY_THRESHOLDS,
  estimatePosture,
  PoseHistory,
  type ActivityEstimate,
  type ActivityThresholds,
} from './posture.js';
import { ACTIVITIES, type Activity, type ActivityEvent, type PersonPose, type PoseFrame } from './types.js';

/** What an {@link ActivityLabeller} needs, already validated. */
export interface ActivitySettings {
  /** A new activity must persist this long (ms) before it is reported; `falling` is reported at once. */
  readonly minDurationMs: number;
  /** Span of the per-track history, ms. */
  readonly historyMs: number;
  /** A track not seen for this long (ms) is forgotten. */
  readonly forgetAfterMs: number;
  /** Posture-history thresholds (`activityOf`). */
  readonly thresholds: ActivityThresholds;
}

/** The operator's defaults (see `ActivityOptions` in `operators/activity.ts`). */
export const DEFAULT_ACTIVITY_SETTINGS: Readonly<ActivitySettings> = Object.freeze({
  minDurationMs: 300,
  historyMs: 5000,
  forgetAfterMs: 10_000,
  thresholds: DEFAULT_ACTIVITY_THRESHOLDS,
});

/** Smoothing of a v2 model's activity probabilities per track: weight of the newest frame. */
export const MODEL_ACTIVITY_SMOOTHING = 0.35;
/**
 * A frame whose `fallProbability` reaches this makes its most fallen-looking person `falling`.
 * Chosen on VALIDATION fall scenarios: 0.5 -> 0.7 raised fall precision 0.042 -> 0.063 and activity
 * 0.433 -> 0.457 at the same recall; 0.85 lost most falls (recall 0.22 -> 0.09). Chosen again once
 * the alerts operator merged a room's falls (FALL_ROOM_REFRACTORY_MS), scored per event in the room
 * (23 falls): 0.6 precision 0.173 recall 0.391, 0.7 0.194 / 0.304, 0.75 0.233 / 0.304, 0.8
 * 0.250 / 0.304, 0.85 0.261 / 0.261. Checked again with the model retrained with the fall loss
 * weighted 3: 0.7 0.364 / 0.696, 0.75 0.421 / 0.696, 0.8 0.471 / 0.696, 0.85 0.464 / 0.565, 0.9
 * 0.520 / 0.565. Requiring 2 or 4 frames in a row over the trigger, a stricter
 * upright veto (0.5, 0.3) or a minimum time down before a recovered fall is recorded (1 s) each
 * cost more recall than they bought precision.
 */
export const FALL_TRIGGER = 0.8;
/**
 * The `fall_trigger` the refiner recipe writes into a v3 model (training/ts/refinerData.ts
 * `refinerContract`): the shipped refiner's fall head and P(falling) are higher on ordinary
 * movement than v2's fall output. Chosen on VALIDATION: `npm start`'s room at seeds 2-5
 * (`sim?realism=room&seed=N`, 10 simulated minutes each, two people, 17 true falls; seed 1, the
 * default, is the reported one), falls alerted within 3 s / false fall alerts: 0.8 8 / 18, 0.9
 * 6 / 7, 0.95 5 / 3.
 */
export const REFINER_FALL_TRIGGER = 0.9;

/**
 * The probability of falling from which a frame's model means a fall: its own (`fallTrigger`, the
 * model's `fall_trigger` metadata), else FALL_TRIGGER. What the activity labeller and the fall
 * watcher compare the frame's `fallProbability` and each person's P(falling) with.
 * @param frame a pose frame
 * @returns the trigger, in (0, 1]
 */
export function fallTriggerOf(frame: Pick<PoseFrame, 'fallTrigger'>): number {
  return frame.fallTrigger ?? FALL_TRIGGER;
}
/** ...unless that person is this sure to be upright (P(standing) + P(walking)): posture vetoes. */
export const UPRIGHT_VETO = 0.8;

/** Samples a track's ring holds: the default 5 s of history at 60 Hz, with room to spare. */
const HISTORY_CAPACITY = 512;
/** Indices among a model's activity probabilities (ACTIVITIES order, as `MODEL_ACTIVITIES`). */
const FALLING = ACTIVITIES.indexOf('falling');
const LYING = ACTIVITIES.indexOf('lying');
const STANDING = ACTIVITIES.indexOf('standing');
const WALKING = ACTIVITIES.indexOf('walking');

interface TrackState {
  readonly history: PoseHistory;
  /** v2 models: the track's smoothed activity probabilities (ACTIVITIES order). */
  probs: Float32Array | null;
  /** Activity currently reported; null before the first valid pose. */
  reported: Activity | null;
  reportedConfidence: number;
  /** A different activity waiting out minDurationMs, and since when. */
  candidate: Activity | null;
  candidateSince: number;
  lastSeen: number;
}

const isTrackId = (id: number | undefined | null): id is number => id !== undefined && id !== null && Number.isFinite(id);

/** The posture of a v2 model's answer: its most probable activity other than `falling`. */
function posture(v: ArrayLike<number>): number {
  let b = FALLING === 0 ? 1 : 0;
  for (let i = 0; i < ACTIVITIES.length; i++) if (i !== FALLING && v[i]! > v[b]!) b = i;
  return b;
}

/**
 * Labels the persons of one environment's pose frames with an activity and a confidence.
 *
 * Persons from a v2 model (`modelActivity` set) take the model's own answer: its activity
 * probabilities, smoothed per track (MODEL_ACTIVITY_SMOOTHING of the newest frame), the most
 * probable posture other than `falling`, with the hysteresis below; `falling` comes only from the
 * fall detector: when the frame's `fallProbability` reaches FALL_TRIGGER, the person most likely
 * falling or down is `falling` at once (confidence: the larger of the two probabilities), unless
 * the model is UPRIGHT_VETO sure that person is standing or walking (see `fallenPerson`).
 *
 * Other persons (v1 models, submitted poses) are labelled from their posture (`estimatePosture`)
 * and a short per-track history (`activityOf`).
 *
 * Tracked persons keep a ring of the last `historyMs` of samples; a track not seen for
 * `forgetAfterMs` (either way in frame time) is dropped. A new reported activity must persist
 * `minDurationMs` before it replaces the old, except `falling`; each change of a tracked person's
 * reported activity adds an `activity_change` event. Untracked persons are classified frame by
 * frame. A person whose torso is not visible passes through without an activity; so does a frame
 * whose `time` is not a number. Frames and persons are never mutated: changed ones are copies.
 *
 * @example
 * const labeller = new ActivityLabeller({ ...DEFAULT_ACTIVITY_SETTINGS, minDurationMs: 0 });
 * const labelled = labeller.label(frame);
 */
export class ActivityLabeller {
  private readonly tracks = new Map<number, TrackState>();
  /** The track holding the room's fall (fallenPerson); -1: none. */
  private heldTrack = -1;
  // Scratch, rewritten before every read.
  private readonly est = createPostureEstimate();
  private readonly act: ActivityEstimate = { activity: 'standing', confidence: 0, speed: NaN, floorSpeed: false };
  private readonly single = new PoseHistory(2);

  constructor(private settings: ActivitySettings = DEFAULT_ACTIVITY_SETTINGS) {}

  /**
   * Labels one frame of this labeller's environment.
   * @param frame a pose frame, tracked or not
   * @param settings settings for this frame and the ones after it; default: the last ones given
   * @returns the frame with labelled persons and any change events (a copy), or the frame itself
   *   when its persons or time are unusable
   */
  label(frame: PoseFrame, settings?: ActivitySettings): PoseFrame {
    if (settings) this.settings = settings;
    if (!frame || !Array.isArray(frame.persons) || !Number.isFinite(frame.time)) return frame;
    const t = frame.time;
    for (const [id, st] of this.tracks) if (Math.abs(t - st.lastSeen) > this.settings.forgetAfterMs) this.tracks.delete(id);
    const events: ActivityEvent[] = [];
    const fallen = this.fallenPerson(frame);
    const persons = frame.persons.map((p, i) => (p && p.keypoints ? this.labelPerson(frame, p, events, i === fallen) : p));
    const out: PoseFrame = { ...frame, persons };
    if (events.length > 0) out.events = frame.events ? [...frame.events, ...events] : events;
    return out;
  }

  /** Ids of the tracks this labeller remembers. */
  trackIds(): number[] {
    return [...this.tracks.keys()];
  }

  private track(id: number, t: number, capacity: number): TrackState {
    let st = this.tracks.get(id);
    if (!st) {
      st = { history: new PoseHistory(capacity), probs: null, reported: null, reportedConfidence: 0, candidate: null, candidateSince: 0, lastSeen: t };
      this.tracks.set(id, st);
    }
    st.lastSeen = t;
    return st;
  }

  private labelPerson(frame: PoseFrame, p: PersonPose, events: ActivityEvent[], fallen: boolean): PersonPose {
    if (p.modelActivity) return this.labelFromModel(frame, p, events, fallen);
    const t = frame.time;
    const { est, act, settings } = this;
    estimatePosture(p.keypoints, p.bbox, est);
    const floor = p.floor;
    const fx = floor && Number.isFinite(floor.x) && Number.isFinite(floor.y) ? floor.x : NaN;
    const fy = Number.isFinite(fx) ? floor!.y : NaN;
    const v = p.velocity;
    const speed = Number.isFinite(fx) && v ? Math.hypot(v.x, v.y) : NaN;

    const id = p.trackId;
    if (!isTrackId(id)) {
      if (!est.valid) return p;
      this.single.clear();
      this.single.push(t, est, fx, fy, speed);
      activityOf(this.single, settings.thresholds, act);
      return { ...p, activity: act.activity, activityConfidence: act.confidence };
    }

    const st = this.track(id, t, HISTORY_CAPACITY);
    if (!est.valid) return p;
    st.history.trim(t, settings.historyMs);
    st.history.push(t, est, fx, fy, speed);
    activityOf(st.history, settings.thresholds, act);
    this.settle(frame, st, id, act.activity, act.confidence, fx, fy, events);
    return { ...p, activity: st.reported!, activityConfidence: st.reportedConfidence };
  }

  /**
   * A v2 model's answer: its activity probabilities, smoothed per track, and the frame's fall
   * probability for the person chosen by `fallenPerson`.
   */
  private labelFromModel(frame: PoseFrame, p: PersonPose, events: ActivityEvent[], fallen: boolean): PersonPose {
    const t = frame.time;
    const m = p.modelActivity!;
    const fx = p.floor && Number.isFinite(p.floor.x) ? p.floor.x : NaN;
    const fy = p.floor && Number.isFinite(p.floor.y) ? p.floor.y : NaN;
    const fallConfidence = Math.max(frame.fallProbability ?? 0, m.probabilities[FALLING] ?? 0);
    const id = p.trackId;
    if (!isTrackId(id)) {
      if (fallen) return { ...p, activity: 'falling', activityConfidence: fallConfidence };
      const b = posture(m.probabilities);
      return { ...p, activity: ACTIVITIES[b]!, activityConfidence: m.probabilities[b]! };
    }
    const st = this.track(id, t, 2);
    if (!st.probs) st.probs = Float32Array.from(m.probabilities);
    else for (let i = 0; i < st.probs.length; i++) st.probs[i] = st.probs[i]! + MODEL_ACTIVITY_SMOOTHING * ((m.probabilities[i] ?? 0) - st.probs[i]!);
    const best = fallen ? FALLING : posture(st.probs);
    this.settle(frame, st, id, ACTIVITIES[best]!, fallen ? fallConfidence : st.probs[best]!, fx, fy, events);
    return { ...p, activity: st.reported!, activityConfidence: st.reportedConfidence };
  }

  /** Hysteresis: a new activity replaces the reported one after minDurationMs (falling at once). */
  private settle(frame: PoseFrame, st: TrackState, id: number, a: Activity, confidence: number, fx: number, fy: number, events: ActivityEvent[]): void {
    const t = frame.time;
    if (st.reported === null || a === st.reported) {
      st.reported = a;
      st.reportedConfidence = confidence;
      st.candidate = null;
      return;
    }
    if (st.candidate !== a) {
      st.candidate = a;
      st.candidateSince = t;
    }
    if (a === 'falling' || t - st.candidateSince >= this.settings.minDurationMs) {
      events.push({
        eventId: `evt_${frame.environmentId}_${id}_${t}_activity`,
        type: 'activity_change',
        severity: 'low',
        time: t,
        environmentId: frame.environmentId,
        personId: id,
        trackId: id,
        confidence,
        location: { x: fx, y: fy },
        metadata: { from: st.reported, to: a },
        actionsTaken: [],
      });
      st.reported = a;
      st.reportedConfidence = confidence;
      st.candidate = null;
    }
  }

  /**
   * The person a v2 frame's fall probability points at: when it reaches the frame's `fallTrigger`
   * (the model's; FALL_TRIGGER when it names none), the person
   * most likely falling or down (2 P(falling) + P(lying): one falling now before one already
   * lying), unless that person is UPRIGHT_VETO sure to be up. While the fall probability stays
   * over the trigger, the track chosen before keeps it, unless another person's own P(falling)
   * reaches FALL_TRIGGER and ranks higher: the room's one fall is not handed from track to
   * track as probabilities wobble (nor to someone who lay down on purpose and ties with the
   * faller now lying), but a second person falling takes it. Chosen on VALIDATION: the oracle
   * in the live-room benchmark (`bench:room --split val`, 112 falls) alerted 103 when a tie
   * alone kept the fall, 112 with this hold and the alert operator's own-fall exception
   * (FALL_ROOM_REFRACTORY_MS); the shipped model's fall precision and recall on VALIDATION
   * scenarios (`bench:accuracy --split val`, 97 falls) stayed 0.519 / 0.701 from the former
   * rule (P(falling) + P(lying), the first in the frame on a tie), its activity score 0.450
   * -> 0.452. Updates `heldTrack`.
   * @returns the index in frame.persons, or -1
   */
  private fallenPerson(frame: PoseFrame): number {
    const trigger = fallTriggerOf(frame);
    if (!((frame.fallProbability ?? 0) >= trigger)) {
      this.heldTrack = -1;
      return -1;
    }
    const held = this.heldTrack;
    let best = -1;
    let bestDown = -1;
    let kept = -1;
    frame.persons.forEach((p, i) => {
      const pr = p?.modelActivity?.probabilities;
      if (!pr) return;
      if (held >= 0 && p.trackId === held) kept = i;
      const down = 2 * pr[FALLING]! + pr[LYING]!;
      if (down > bestDown) {
        bestDown = down;
        best = i;
      }
    });
    if (best < 0) return -1;
    if (kept >= 0 && best !== kept && !(frame.persons[best]!.modelActivity!.probabilities[FALLING]! >= trigger)) best = kept;
    const chosen = frame.persons[best]!;
    const pr = chosen.modelActivity!.probabilities;
    if (pr[STANDING]! + pr[WALKING]! >= UPRIGHT_VETO) return -1;
    this.heldTrack = isTrackId(chosen.trackId) ? chosen.trackId : -1;
    return best;
  }
}
