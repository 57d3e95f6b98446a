import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { DEFAULT_TOLERANCE_MS } from '../src/csi/linkJoin.js';
import { DEFAULT_TIMEOUT_SECONDS, LinkMonitor, type LinkSet, type LinkStatsHolder } from '../src/csi/linkMonitor.js';
import { DEFAULT_RADIOS, type RadioConfig } from '../src/csi/radios.js';
import type { OperatorContext, OperatorSpec } from '../src/engine/spec.js';

/** Bounds of the parameters: a tolerance up to 1 s, a timeout from 0.1 s to an hour. */
const TOLERANCE_MAX = 1000;
const TIMEOUT_MIN = 0.1;
const TIMEOUT_MAX = 3600;

export interface LinksOptions {
  /** The site's radios (`environment.site.radios`), read at subscription; default DEFAULT_RADIOS. */
  radios?: () => readonly RadioConfig[];
  /** Join tolerance, ms; default {@link DEFAULT_TOLERANCE_MS}. */
  toleranceMs?: number;
  /** A link with no packet for this long is `stopped`, seconds; default {@link DEFAULT_TIMEOUT_SECONDS}. */
  timeoutSeconds?: number;
  /** The clock of arrivals and of `stopped` (its `now()`); default asyncScheduler. */
  scheduler?: SchedulerLike;
  /** Where to put each subscription's monitor, for the service's status. */
  stats?: LinkStatsHolder;
  /** Called with each reading frame's set once it is formed. */
  onSet?: (set: LinkSet) => void;
  /**
   * Which frames go on: `primary` (default) the reading link's, for a one-link model; `site` every
   * site link's whose layout is the site's, for the physics front end (`physics-live`), which
   * fuses them. Frames of links that are not the site's go on in neither.
   */
  pass?: LinksPass;
}

/** What the `links` stage passes on (see {@link LinksOptions.pass}). */
export type LinksPass = 'primary' | 'site';

/**
 * Takes the frames of every link of an environment and passes on those of its reading link, the
 * primary (the site's first receiver; a frame without `linkId` is the primary's), unchanged and at
 * once: the rest of the pipeline sees one link, as the one-link model reads it. Meanwhile it joins
 * the links by time: the set of a reading frame holds each other link's nearest frame within
 * `toleranceMs`. The reading link never waits for the others: its frame goes
 * on at once, and its set is formed as soon as every other sending link has a frame at or after
 * its time, or at the latest when the next reading frame arrives (or the stream ends), so a frame
 * of the same packet that reaches the service up to one packet interval after the reading link's
 * is still in it. A link whose nearest frame is further than the tolerance is left out of that
 * set; one that is behind by more than the tolerance in the median of its last 64 sets is
 * `lagging`. Frames of a link whose antenna layout differs from the site's radios (or whose
 * subcarrier count differs from the primary's) are counted and not joined; frames naming a link
 * that is not the site's are counted and dropped. Each link's figures (rate, loss, last packet,
 * lag, layout, state) are read with `stats.monitor.report()`; `stopped` is evaluated when they
 * are read, from the last packet's time on the scheduler's clock, so no timer runs. The domain
 * work is {@link LinkMonitor}'s (src/csi/linkMonitor.ts, over `LinkJoin` in src/csi/linkJoin.ts):
 * this operator keeps one per subscription. With `pass: 'site'` every site link's frames of the
 * site's layout go on, not only the primary's: the physics front end fuses them, and the figures
 * are the same.
 *
 * @param options radios, tolerance, timeout, scheduler (its clock), stats holder, set callback, what to pass
 * @returns an operator from the frames of all links to the primary link's frames
 * @throws RangeError for a tolerance or timeout out of range (at creation)
 * @example
 * frames$.pipe(links({ radios: () => config.get().environment.site.radios, stats }), sanitizePhase())
 */
export function links(options: LinksOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const toleranceMs = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (!(toleranceMs >= 0 && toleranceMs <= TOLERANCE_MAX)) throw new RangeError(`links: toleranceMs must be in [0, ${TOLERANCE_MAX}], got ${toleranceMs}`);
  if (!(timeoutSeconds >= TIMEOUT_MIN && timeoutSeconds <= TIMEOUT_MAX))
    throw new RangeError(`links: timeoutSeconds must be in [${TIMEOUT_MIN}, ${TIMEOUT_MAX}], got ${timeoutSeconds}`);
  const scheduler = options.scheduler ?? asyncScheduler;
  const pass = options.pass ?? 'primary';
  if (pass !== 'primary' && pass !== 'site') throw new RangeError(`links: pass must be primary or site, got ${JSON.stringify(pass)}`);
  const site = pass === 'site';
  return (source) =>
    new Observable<CsiFrame>((subscriber) => {
      let monitor: LinkMonitor;
      try {
        monitor = new LinkMonitor((options.radios ?? (() => DEFAULT_RADIOS))(), {
          toleranceMs,
          timeoutSeconds,
          now: () => scheduler.now(),
          ...(options.onSet ? { onSet: options.onSet } : {}),
        });
      } catch (e) {
        subscriber.error(e);
        return;
      }
      if (options.stats) options.stats.monitor = monitor;
      const sub = source.subscribe({
        next(frame) {
          try {
            const kind = monitor.take(frame);
            if (kind === 'primary' || (site && kind === 'joined')) subscriber.next(frame);
          } catch (e) {
            subscriber.error(e);
          }
        },
        error: (e) => subscriber.error(e),
        complete: () => {
          try {
            monitor.finish();
          } catch (e) {
            subscriber.error(e);
            return;
          }
          subscriber.complete();
        },
      });
      return () => sub.unsubscribe();
    });
}

/** What the service lends the `links` stage besides its parameters. */
export interface LinksContext extends OperatorContext {
  /** The site's radios, read at subscription; default DEFAULT_RADIOS. */
  readonly radios?: () => readonly RadioConfig[];
  /** Where the stage puts its monitor. */
  readonly linkStats?: LinkStatsHolder;
}

export const spec: OperatorSpec = {
  name: 'links',
  summary: "Joins an environment's links by time; passes on the primary link's frames (or every site link's); per-link rate, loss, lag, state",
  input: 'frame',
  output: 'frame',
  params: [
    {
      name: 'toleranceMs',
      type: 'number',
      default: DEFAULT_TOLERANCE_MS,
      min: 0,
      max: TOLERANCE_MAX,
      description: "A link's frame joins a primary frame within this many ms (default: half the packet interval at 100 Hz)",
    },
    {
      name: 'timeoutSeconds',
      type: 'number',
      default: DEFAULT_TIMEOUT_SECONDS,
      min: TIMEOUT_MIN,
      max: TIMEOUT_MAX,
      description: 'A link with no packet for this long is stopped',
    },
    {
      name: 'pass',
      type: 'enum',
      default: 'primary',
      values: ['primary', 'site'],
      description: "Frames passed on: the primary link's (a one-link model) or every site link's of the site's layout (the physics front end)",
    },
  ],
  create: (params, ctx: LinksContext) =>
    links({
      toleranceMs: Number(params.toleranceMs ?? DEFAULT_TOLERANCE_MS),
      timeoutSeconds: Number(params.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS),
      pass: (params.pass ?? 'primary') as LinksPass,
      ...(ctx.radios ? { radios: ctx.radios } : {}),
      ...(ctx.linkStats ? { stats: ctx.linkStats } : {}),
      ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
    }),
};
