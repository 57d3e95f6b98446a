import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { OperatorSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import { ActivityLabeller, DEFAULT_ACTIVITY_SETTINGS, type ActivitySettings } from '../src/pose/activityLabeller.js';
import { DEFAULT_ACTIVITY_THRESHOLDS } from '../src/pose/posture.js';
import type { PoseFrame } from '../src/pose/types.js';

export { FALL_TRIGGER, MODEL_ACTIVITY_SMOOTHING, UPRIGHT_VETO } from '../src/pose/activityLabeller.js';

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

interface Resolved extends ActivitySettings {
  enabled: boolean;
}

function resolve(o: ActivityOptions): Resolved {
  if (!o || typeof o !== 'object') throw new RangeError('activity: options must be an object');
  for (const k of ['minDurationMs', 'historyMs', 'forgetAfterMs', 'walkSpeed', 'walkBoxRate'] as const)
    if (o[k] !== undefined && typeof o[k] !== 'number') throw new RangeError(`activity: ${k} must be a number, got ${JSON.stringify(o[k])}`);
  const minDurationMs = o.minDurationMs ?? DEFAULT_ACTIVITY_SETTINGS.minDurationMs;
  const historyMs = o.historyMs ?? DEFAULT_ACTIVITY_SETTINGS.historyMs;
  const forgetAfterMs = o.forgetAfterMs ?? DEFAULT_ACTIVITY_SETTINGS.forgetAfterMs;
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

/**
 * Labels every person with an activity (standing, sitting, lying, walking, falling) and a
 * confidence.
 *
 * Persons from a v2 model (`modelActivity` set) take the model's own answer, its activity
 * probabilities smoothed per track; `falling` comes from the frame's `fallProbability`, handed to
 * the person most likely down unless the model is sure they are up (FALL_TRIGGER, UPRIGHT_VETO).
 * Other persons (v1 models, submitted poses) are labelled from their posture and a short
 * per-track history (walking from floor speed or box motion, falling from a fast upright-to-lying
 * change that did not follow going down in place, as lying down on the floor through kneeling does).
 * Reported activities have hysteresis: a new one must persist `minDurationMs` (by frame time),
 * except `falling`; each change of a tracked person's reported activity adds an `activity_change`
 * event (metadata `from`, `to`) to `frame.events`. Frames and persons are never mutated. Time is
 * `frame.time`, never the wall clock, so a replay gives the same labels. The domain work is
 * {@link ActivityLabeller}'s (src/pose/activityLabeller.ts): this operator keeps one per
 * environment in each subscription.
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
      const labellers = new Map<string, ActivityLabeller>();
      const sub = source.subscribe({
        next(frame) {
          let out: PoseFrame;
          try {
            const cfg = fixed ?? resolve(dynamic!());
            if (!cfg.enabled || !frame || !Array.isArray(frame.persons) || !Number.isFinite(frame.time)) {
              subscriber.next(frame);
              return;
            }
            let labeller = labellers.get(frame.environmentId);
            if (!labeller) labellers.set(frame.environmentId, (labeller = new ActivityLabeller(cfg)));
            out = labeller.label(frame, cfg);
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
