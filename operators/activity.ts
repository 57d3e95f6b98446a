import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { OperatorSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import {
  activityOf,
  createPostureEstimate,
  DEFAULT_ACTIVITY_THRESHOLDS,
  estimatePosture,
  PoseHistory,
  type ActivityEstimate,
  type ActivityThresholds,
} from '../src/pose/posture.js';
import type { Activity, ActivityEvent, PersonPose, PoseFrame } from '../src/pose/types.js';
import { MODEL_ACTIVITIES } from '../src/model/contract.js';

export interface ActivityOptions {
  /** False passes frames through unlabelled (config `analytics.enable_activity_recognition`); default true. Live. */
  enabled?: boolean;
  /** A new activity must persist this long (ms) before it is reported; `falling` is reported at once. Default 300. */
  minDurationMs?: number;
  /**
   * Span of the per-track history (ms); default 5000: the 1.5 s a fall may take plus the 3 s before
   * it in which a deliberate lie-down shows as going down in stages (kneeling first). At least 1500;
   * below 4500 that look-back is cut short and lying down on the floor may read as a fall.
   */
  historyMs?: number;
  /** A track not seen for this long (ms) is forgotten; default 10000. */
  forgetAfterMs?: number;
  /** Floor speed (m/s) from which a standing person is walking; default 0.3. */
  walkSpeed?: number;
  /** Without floor positions: box-centre speed (box heights per second) for walking; default 0.25. */
  walkBoxRate?: number;
}

interface Resolved {
  enabled: boolean;
  minDurationMs: number;
  historyMs: number;
  forgetAfterMs: number;
  thresholds: ActivityThresholds;
}

/** Samples a track's ring holds: the default 5 s of history at 60 Hz, with room to spare. */
const HISTORY_CAPACITY = 512;

function resolve(o: ActivityOptions): Resolved {
  if (!o || typeof o !== 'object') throw new RangeError('activity: options must be an object');
  for (const k of ['minDurationMs', 'historyMs', 'forgetAfterMs', 'walkSpeed', 'walkBoxRate'] as const)
    if (o[k] !== undefined && typeof o[k] !== 'number') throw new RangeError(`activity: ${k} must be a number, got ${JSON.stringify(o[k])}`);
  const minDurationMs = o.minDurationMs ?? 300;
  const historyMs = o.historyMs ?? 5000;
  const forgetAfterMs = o.forgetAfterMs ?? 10_000;
  const walkSpeed = o.walkSpeed ?? DEFAULT_ACTIVITY_THRESHOLDS.walkSpeed;
  const walkBoxRate = o.walkBoxRate ?? DEFAULT_ACTIVITY_THRESHOLDS.walkBoxRate;
  if (!(minDurationMs >= 0 && minDurationMs <= 60_000)) throw new RangeError(`activity: minDurationMs must be in [0, 60000], got ${minDurationMs}`);
  if (!(historyMs >= DEFAULT_ACTIVITY_THRESHOLDS.fallWindowMs && historyMs <= 10_000))
    throw new RangeError(`activity: historyMs must be in [${DEFAULT_ACTIVITY_THRESHOLDS.fallWindowMs}, 10000], got ${historyMs}`);
  if (!(forgetAfterMs >= 1000 && forgetAfterMs <= 3_600_000)) throw new RangeError(`activity: forgetAfterMs must be in [1000, 3600000], got ${forgetAfterMs}`);
  if (!(walkSpeed > 0 && walkSpeed <= 5)) throw new RangeError(`activity: walkSpeed must be in (0, 5] m/s, got ${walkSpeed}`);
  if (!(walkBoxRate > 0 && walkBoxRate <= 5)) throw new RangeError(`activity: walkBoxRate must be in (0, 5], got ${walkBoxRate}`);
  if (o.enabled !== undefined && typeof o.enabled !== 'boolean')
    throw new RangeError(`activity: enabled must be true or false, got ${JSON.stringify(o.enabled)}`);
  return { enabled: o.enabled !== false, minDurationMs, historyMs, forgetAfterMs, thresholds: { ...DEFAULT_ACTIVITY_THRESHOLDS, walkSpeed, walkBoxRate } };
}

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
/** ...unless that person is this sure to be upright (P(standing) + P(walking)): posture vetoes. */
export const UPRIGHT_VETO = 0.8;
const FALLING = MODEL_ACTIVITIES.indexOf('falling');
const LYING = MODEL_ACTIVITIES.indexOf('lying');
const STANDING = MODEL_ACTIVITIES.indexOf('standing');
const WALKING = MODEL_ACTIVITIES.indexOf('walking');

interface TrackState {
  readonly history: PoseHistory;
  /** v2 models: the track's smoothed activity probabilities (MODEL_ACTIVITIES order). */
  probs: Float32Array | null;
  /** Activity currently reported; null before the first valid pose. */
  reported: Activity | null;
  reportedConfidence: number;
  /** A different activity waiting out minDurationMs, and since when. */
  candidate: Activity | null;
  candidateSince: number;
  lastSeen: number;
}

/**
 * Labels every person with an activity (standing, sitting, lying, walking, falling) and a
 * confidence.
 *
 * Persons from a v2 model (`modelActivity` set) take the model's own answer: its activity
 * probabilities, smoothed per track (MODEL_ACTIVITY_SMOOTHING of the newest frame), the most
 * probable posture other than `falling`, with the hysteresis below; `falling` comes only from the
 * fall detector: when the frame's `fallProbability` (the model's fall detector over the last
 * seconds of Doppler and motion) reaches FALL_TRIGGER, the person most likely falling or down is
 * `falling` at once (confidence: the larger of the two probabilities), unless the model is
 * UPRIGHT_VETO sure that person is standing or walking; the person chosen keeps the fall while the
 * probability stays over the trigger, unless another's own P(falling) reaches it (`fallenPerson`).
 *
 * Other persons (v1 models, submitted poses) are labelled from their posture (`estimatePosture`)
 * and a short per-track history
 * (`activityOf`: walking from floor speed or box motion, falling from a fast upright-to-lying
 * change that did not follow going down in place, as lying down on the floor through kneeling does).
 *
 * Tracked persons (`trackId` set) keep a ring of the last `historyMs` of samples in this
 * subscription; a track not seen for `forgetAfterMs` is dropped (as is one whose frame time jumps
 * by more than that either way, e.g. a replay restarting). Reported activities have hysteresis: a
 * new one must persist `minDurationMs` (by frame time) before it replaces the old, except
 * `falling`, which is reported on its first frame. Each change of a tracked person's reported
 * activity adds an `activity_change` event (metadata `from`, `to`) to `frame.events`; the first
 * activity of a track is not a change. Untracked persons are classified frame by frame with no
 * history. A person whose torso is not visible passes through without an activity; so do frames
 * whose `time` is not a number. Frames and persons are never mutated: changed ones are copies.
 *
 * Time is `frame.time`, never the wall clock, so a replay gives the same labels.
 *
 * @param options thresholds (see ActivityOptions), or a function returning them, called on every
 *   frame so that a configuration change takes effect on the next frame
 * @returns an operator from pose frames to pose frames with activities
 * @throws RangeError at creation when static options are out of range; options from the function
 *   form that are out of range end the stream with that error
 * @example
 * poses$.pipe(track(), activity({ minDurationMs: 300 }), alerts(() => config.alerts))
 */
export function activity(options: ActivityOptions | (() => ActivityOptions) = {}): MonoTypeOperatorFunction<PoseFrame> {
  const fixed = typeof options === 'function' ? null : resolve(options);
  const dynamic = typeof options === 'function' ? options : null;

  return (source) =>
    new Observable<PoseFrame>((subscriber) => {
      const environments = new Map<string, Map<number, TrackState>>();
      /** Per environment: the track holding the room's fall (fallenPerson). */
      const fallHeld = new Map<string, { track: number }>();
      const est = createPostureEstimate();
      const act: ActivityEstimate = { activity: 'standing', confidence: 0, speed: NaN, floorSpeed: false };
      const single = new PoseHistory(2);

      const label = (frame: PoseFrame, cfg: Resolved, tracks: Map<number, TrackState>, p: PersonPose, events: ActivityEvent[], fallen: boolean): PersonPose => {
        const t = frame.time;
        if (p.modelActivity) return labelFromModel(frame, cfg, tracks, p, events, fallen);
        estimatePosture(p.keypoints, p.bbox, est);
        const floor = p.floor;
        const fx = floor && Number.isFinite(floor.x) && Number.isFinite(floor.y) ? floor.x : NaN;
        const fy = Number.isFinite(fx) ? floor!.y : NaN;
        const v = p.velocity;
        const speed = Number.isFinite(fx) && v ? Math.hypot(v.x, v.y) : NaN;

        const id = p.trackId;
        if (id === undefined || id === null || !Number.isFinite(id)) {
          if (!est.valid) return p;
          single.clear();
          single.push(t, est, fx, fy, speed);
          activityOf(single, cfg.thresholds, act);
          return { ...p, activity: act.activity, activityConfidence: act.confidence };
        }

        let st = tracks.get(id);
        if (!st) {
          st = {
            history: new PoseHistory(HISTORY_CAPACITY),
            probs: null,
            reported: null,
            reportedConfidence: 0,
            candidate: null,
            candidateSince: 0,
            lastSeen: t,
          };
          tracks.set(id, st);
        }
        st.lastSeen = t;
        if (!est.valid) return p;
        st.history.trim(t, cfg.historyMs);
        st.history.push(t, est, fx, fy, speed);
        activityOf(st.history, cfg.thresholds, act);

        settle(frame, cfg, st, id, act.activity, act.confidence, fx, fy, events);
        return { ...p, activity: st.reported!, activityConfidence: st.reportedConfidence };
      };

      /** Hysteresis: a new activity replaces the reported one after minDurationMs (falling at once). */
      const settle = (
        frame: PoseFrame,
        cfg: Resolved,
        st: TrackState,
        id: number,
        a: Activity,
        confidence: number,
        fx: number,
        fy: number,
        events: ActivityEvent[],
      ) => {
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
        if (a === 'falling' || t - st.candidateSince >= cfg.minDurationMs) {
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
      };

      /**
       * A v2 model's answer: its activity probabilities, smoothed per track, and the frame's fall
       * probability for the person chosen by `fallenPerson`.
       */
      const labelFromModel = (
        frame: PoseFrame,
        cfg: Resolved,
        tracks: Map<number, TrackState>,
        p: PersonPose,
        events: ActivityEvent[],
        fallen: boolean,
      ): PersonPose => {
        const t = frame.time;
        const m = p.modelActivity!;
        const fx = p.floor && Number.isFinite(p.floor.x) ? p.floor.x : NaN;
        const fy = p.floor && Number.isFinite(p.floor.y) ? p.floor.y : NaN;
        // The posture: the most probable activity other than `falling`, which only the fall
        // detector (the frame's fall probability, fused with posture in `fallenPerson`) reports.
        const posture = (v: ArrayLike<number>) => {
          let b = FALLING === 0 ? 1 : 0;
          for (let i = 0; i < MODEL_ACTIVITIES.length; i++) if (i !== FALLING && v[i]! > v[b]!) b = i;
          return b;
        };
        const fallConfidence = Math.max(frame.fallProbability ?? 0, m.probabilities[FALLING] ?? 0);
        const id = p.trackId;
        if (id === undefined || id === null || !Number.isFinite(id)) {
          if (fallen) return { ...p, activity: 'falling', activityConfidence: fallConfidence };
          const b = posture(m.probabilities);
          return { ...p, activity: MODEL_ACTIVITIES[b]!, activityConfidence: m.probabilities[b]! };
        }
        let st = tracks.get(id);
        if (!st) {
          st = { history: new PoseHistory(2), probs: null, reported: null, reportedConfidence: 0, candidate: null, candidateSince: 0, lastSeen: t };
          tracks.set(id, st);
        }
        st.lastSeen = t;
        if (!st.probs) st.probs = Float32Array.from(m.probabilities);
        else for (let i = 0; i < st.probs.length; i++) st.probs[i] = st.probs[i]! + MODEL_ACTIVITY_SMOOTHING * ((m.probabilities[i] ?? 0) - st.probs[i]!);
        const best = fallen ? FALLING : posture(st.probs);
        const a = MODEL_ACTIVITIES[best]!;
        settle(frame, cfg, st, id, a, fallen ? fallConfidence : st.probs[best]!, fx, fy, events);
        return { ...p, activity: st.reported!, activityConfidence: st.reportedConfidence };
      };

      /**
       * The person a v2 frame's fall probability points at: when it reaches FALL_TRIGGER, the person
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
       * -> 0.452.
       * @param held the track chosen on the environment's previous frame (-1: none), updated
       * @returns the index in frame.persons, or -1
       */
      const fallenPerson = (frame: PoseFrame, held: { track: number }): number => {
        if (!((frame.fallProbability ?? 0) >= FALL_TRIGGER)) {
          held.track = -1;
          return -1;
        }
        let best = -1;
        let bestDown = -1;
        let kept = -1;
        frame.persons.forEach((p, i) => {
          const pr = p?.modelActivity?.probabilities;
          if (!pr) return;
          if (held.track >= 0 && p.trackId === held.track) kept = i;
          const down = 2 * pr[FALLING]! + pr[LYING]!;
          if (down > bestDown) {
            bestDown = down;
            best = i;
          }
        });
        if (best < 0) return -1;
        if (kept >= 0 && best !== kept && !(frame.persons[best]!.modelActivity!.probabilities[FALLING]! >= FALL_TRIGGER)) best = kept;
        const chosen = frame.persons[best]!;
        const pr = chosen.modelActivity!.probabilities;
        if (pr[STANDING]! + pr[WALKING]! >= UPRIGHT_VETO) return -1;
        held.track = typeof chosen.trackId === 'number' && Number.isFinite(chosen.trackId) ? chosen.trackId : -1;
        return best;
      };

      const sub = source.subscribe({
        next(frame) {
          let cfg: Resolved;
          let out: PoseFrame;
          try {
            cfg = fixed ?? resolve(dynamic!());
            if (!cfg.enabled || !frame || !Array.isArray(frame.persons) || !Number.isFinite(frame.time)) {
              subscriber.next(frame);
              return;
            }
            const t = frame.time;
            let tracks = environments.get(frame.environmentId);
            if (!tracks) {
              tracks = new Map();
              environments.set(frame.environmentId, tracks);
            }
            for (const [id, st] of tracks) if (Math.abs(t - st.lastSeen) > cfg.forgetAfterMs) tracks.delete(id);

            const events: ActivityEvent[] = [];
            let held = fallHeld.get(frame.environmentId);
            if (!held) {
              held = { track: -1 };
              fallHeld.set(frame.environmentId, held);
            }
            const fallen = fallenPerson(frame, held);
            const persons = frame.persons.map((p, i) => (p && p.keypoints ? label(frame, cfg, tracks!, p, events, i === fallen) : p));
            out = { ...frame, persons };
            if (events.length > 0) out.events = frame.events ? [...frame.events, ...events] : events;
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

function optionsOf(params: ParamValues): ActivityOptions {
  return {
    enabled: params.enabled !== false,
    minDurationMs: Number(params.minDurationMs),
    historyMs: Number(params.historyMs),
    forgetAfterMs: Number(params.forgetAfterMs),
    walkSpeed: Number(params.walkSpeed),
    walkBoxRate: Number(params.walkBoxRate),
  };
}

export const spec: OperatorSpec = {
  name: 'activity',
  summary: 'Activity per person (standing, sitting, lying, walking, falling) from posture and a short per-track history',
  input: 'pose',
  output: 'pose',
  params: [
    {
      name: 'enabled',
      ...configParam('analytics.enable_activity_recognition'),
      description: 'False passes frames through unlabelled (analytics.enable_activity_recognition)',
    },
    {
      name: 'minDurationMs',
      type: 'int',
      default: 300,
      min: 0,
      max: 60_000,
      description: 'A new activity must persist this long before it is reported (falling is reported at once)',
    },
    {
      name: 'historyMs',
      type: 'int',
      default: 5000,
      min: 1500,
      max: 10_000,
      description: 'Span of the per-track history, ms (a fall and the 3 s before it that tell lying down in stages from falling)',
    },
    { name: 'forgetAfterMs', type: 'int', default: 10_000, min: 1000, max: 3_600_000, description: 'Forget a track not seen for this long, ms' },
    { name: 'walkSpeed', type: 'number', default: 0.3, min: 0.01, max: 5, description: 'Floor speed (m/s) from which a standing person is walking' },
    {
      name: 'walkBoxRate',
      type: 'number',
      default: 0.25,
      min: 0.01,
      max: 5,
      description: 'Without floor positions: box-centre speed in box heights per second for walking',
    },
  ],
  create: (params, ctx) => {
    const live = ctx.live;
    return live ? activity(() => optionsOf({ ...params, ...live('activity') })) : activity(optionsOf(params));
  },
};
