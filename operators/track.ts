import { Observable, type OperatorFunction } from 'rxjs';
import type { OperatorContext, OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import type { PoseFrame } from '../src/pose/types.js';
import { mergeOptions, MultiPersonTracker, TRACKER_DEFAULTS, type TrackerOptions, type TrackerOptionsInput } from '../src/pose/tracker.js';

/**
 * The defaults of every tracker option as the service runs it: the track lifecycle from the config
 * schema (`detection.tracking_min_hits`, `tracking_max_age`: stated there once), the rest the
 * tracker's own ({@link TRACKER_DEFAULTS}). The tracker, below the config, takes the lifecycle as an
 * argument.
 */
export const DEFAULT_TRACKER_OPTIONS: Readonly<TrackerOptions> = Object.freeze({
  minHits: configParam('detection.tracking_min_hits').default as number,
  maxAge: configParam('detection.tracking_max_age').default as number,
  ...TRACKER_DEFAULTS,
});

/** Options of {@link track}: the tracker's, plus a hook to reach each environment's tracker. */
export interface TrackOperatorOptions extends TrackerOptionsInput {
  /** False passes frames through untracked (config `detection.tracking_enabled`); default true. Live. */
  enabled?: boolean;
  /**
   * Called once per environment when its tracker is created (inside each subscription), so that
   * the service can read track records (`tracker.tracks()`, `tracker.track(id)`).
   */
  onTracker?: (environmentId: string, tracker: MultiPersonTracker) => void;
  /** Id of each new tracker's first track (default 1): one past the stored ids keeps ids unique across restarts. */
  firstTrackId?: number;
}

/**
 * Gives the persons of each pose frame stable track ids, ages and velocities, with one
 * {@link MultiPersonTracker} per `environmentId` (Hungarian assignment on predicted positions,
 * a constant-velocity Kalman filter per track, SORT lifecycle with `minHits` and `maxAge`).
 *
 * Options are either an object or a function returning one: the function is called for every
 * frame and, when what it returns differs from last time, the change is applied from that frame
 * (how the service makes `tracking_max_age` and `tracking_min_hits` live). Each subscription gets
 * its own trackers. Input frames and persons are never modified: every output frame and person is
 * a new object (keypoint, box and DensePose arrays are shared, unless keypoints are smoothed).
 * Values that are not objects are skipped; an exception from an options function or `onTracker`
 * goes to the subscriber as an error.
 *
 * @param options tracker options (see {@link TrackerOptionsInput}) plus `onTracker`, or a
 *   function returning them
 * @returns an operator from pose frames to tracked pose frames
 * @throws RangeError when static options are out of range (at creation, not in the stream)
 * @example
 * poses$.pipe(track({ minHits: 3, maxAge: 30, onTracker: (env, t) => trackers.set(env, t) }))
 */
export function track(options: TrackOperatorOptions | (() => TrackOperatorOptions) = {}): OperatorFunction<PoseFrame, PoseFrame> {
  if (typeof options !== 'function') {
    const { onTracker: _hook, enabled: _on, firstTrackId: _first, ...rest } = options;
    mergeOptions(DEFAULT_TRACKER_OPTIONS, rest);
  }
  const accessor = typeof options === 'function' ? options : () => options;

  return (source) =>
    new Observable<PoseFrame>((subscriber) => {
      const trackers = new Map<string, MultiPersonTracker>();
      let current: TrackOperatorOptions | undefined;
      let settings: Readonly<TrackerOptions> = DEFAULT_TRACKER_OPTIONS;

      const sub = source.subscribe({
        next(frame) {
          try {
            if (frame === null || typeof frame !== 'object') return;
            const next = accessor();
            if (next.enabled === false) {
              subscriber.next(frame);
              return;
            }
            if (current === undefined || !sameOptions(current, next)) {
              const { onTracker: _ignored, enabled: _on, firstTrackId: _first, ...rest } = next;
              // Complete options (defaults for what is left out), validated before any tracker
              // sees them, so that a bad change leaves every tracker as it was.
              settings = mergeOptions(DEFAULT_TRACKER_OPTIONS, rest);
              for (const t of trackers.values()) t.setOptions(settings);
              current = next;
            }
            const env = String(frame.environmentId);
            let tracker = trackers.get(env);
            if (tracker === undefined) {
              tracker = new MultiPersonTracker(settings, current.firstTrackId ?? 1);
              trackers.set(env, tracker);
              current.onTracker?.(env, tracker);
            }
            subscriber.next(tracker.update(frame));
          } catch (e) {
            subscriber.error(e);
          }
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => sub.unsubscribe();
    });
}

/** Same top-level values (nested groups compared by reference). */
function sameOptions(a: TrackOperatorOptions, b: TrackOperatorOptions): boolean {
  if (a === b) return true;
  const ka = Object.keys(a) as Array<keyof TrackOperatorOptions>;
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (a[k] !== b[k]) return false;
  return true;
}

/** What the service lends the track stage of a pipeline it composes (see `pipelines/build.ts`). */
export interface TrackContext extends OperatorContext {
  readonly onTracker?: (environmentId: string, tracker: MultiPersonTracker) => void;
  readonly firstTrackId?: number;
}

const PARAMS: readonly ParamSpec[] = [
  { name: 'enabled', ...configParam('detection.tracking_enabled'), description: 'False passes frames through untracked (detection.tracking_enabled)' },
  {
    name: 'minHits',
    ...configParam('detection.tracking_min_hits'),
    description: 'Consecutive matched frames before a new track is reported (detection.tracking_min_hits)',
  },
  {
    name: 'maxAge',
    ...configParam('detection.tracking_max_age'),
    description: 'Frames an unmatched track is kept and predicted before it ends (detection.tracking_max_age)',
  },
  {
    name: 'gate',
    type: 'number',
    default: DEFAULT_TRACKER_OPTIONS.gate,
    min: 0.001,
    max: 1000,
    description: 'Largest assignment cost (weighted mean of box-normalised and floor-metre distances) for a match',
  },
  {
    name: 'smoothKeypoints',
    type: 'number',
    default: DEFAULT_TRACKER_OPTIONS.smoothKeypoints,
    min: 0,
    max: 0.99,
    description: 'Exponential smoothing factor of reported keypoints (weight of the previous value); 0 = off',
  },
  {
    name: 'holdFrames',
    type: 'int',
    default: DEFAULT_TRACKER_OPTIONS.holdFrames,
    min: 0,
    max: 100_000,
    description: 'Frames a lost track is still reported as last seen (held: true), so the count holds through a missed frame; 0 = off',
  },
];

function optionsOf(params: ParamValues, ctx: TrackContext): TrackOperatorOptions {
  return {
    enabled: params.enabled !== false,
    minHits: Number(params.minHits),
    maxAge: Number(params.maxAge),
    gate: Number(params.gate),
    smoothKeypoints: Number(params.smoothKeypoints),
    holdFrames: Number(params.holdFrames),
    ...(ctx.onTracker ? { onTracker: ctx.onTracker } : {}),
    ...(ctx.firstTrackId !== undefined ? { firstTrackId: ctx.firstTrackId } : {}),
  };
}

/** Registry entry: `track minHits=3 maxAge=30 gate=1 smoothKeypoints=0` in a pipeline string. */
export const spec: OperatorSpec = {
  name: 'track',
  summary: 'Stable person ids across pose frames: Hungarian assignment, Kalman prediction, SORT lifecycle',
  input: 'pose',
  output: 'pose',
  params: PARAMS,
  create: (params, ctx: TrackContext) => {
    const live = ctx.live;
    return live ? track(() => optionsOf({ ...params, ...live('track') }, ctx)) : track(optionsOf(params, ctx));
  },
};
