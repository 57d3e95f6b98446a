import {
  asyncScheduler,
  from,
  Observable,
  Subscription,
  type MonoTypeOperatorFunction,
  type ObservableInput,
  type OperatorFunction,
  type SchedulerLike,
} from 'rxjs';
import type { OperatorSpec } from '../src/engine/spec.js';

/** Count of values a conflating operator overwrote before they could be emitted or projected. */
export interface ConflateStats {
  dropped: number;
}

export interface LatestWinsOptions<T> {
  /** Called with every pending value that a newer one overwrote. */
  onDrop?: (dropped: T) => void;
  /** `dropped` is incremented for every overwritten value (the object is not reset). */
  stats?: ConflateStats;
}

/**
 * Counts a pending value that a newer one overwrites and hands it to `onDrop`.
 * @returns false when `onDrop` threw: the stream has been errored with that error
 */
function overwritten<T>(o: LatestWinsOptions<T>, value: T, subscriber: { error(e: unknown): void }): boolean {
  if (o.stats) o.stats.dropped++;
  try {
    o.onDrop?.(value);
    return true;
  } catch (e) {
    subscriber.error(e);
    return false;
  }
}

/**
 * Like `exhaustMap`, but a value that arrives while an inner observable is running is kept
 * instead of ignored: only the most recent such value is kept, and it is projected as soon as the
 * running inner completes. Each pending value that a newer one overwrites is passed to `onDrop`
 * and counted in `stats.dropped`. This is "latest wins" for a slow consumer (a socket write, an
 * inference call): it never queues, never runs two inners at once, and always ends on the newest
 * value. Completion waits for the running inner and then the pending value; an error from the
 * source, an inner, `project` or `onDrop` ends the stream.
 *
 * @param project maps a value to the work to run for it (Observable, Promise, array, ...)
 * @param opts `onDrop` callback and `stats` counter for overwritten values
 * @returns an operator emitting what the inners emit
 * @example
 * poses$.pipe(latestWins((pose) => sendToClient(pose), { onDrop: () => metrics.dropped++ }))
 */
export function latestWins<T, R>(project: (value: T) => ObservableInput<R>, opts: LatestWinsOptions<T> = {}): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((subscriber) => {
      let innerActive = false;
      let inner: Subscription | undefined;
      let hasPending = false;
      let pending: T | undefined;
      let sourceDone = false;

      const run = (value: T) => {
        let input: ObservableInput<R>;
        try {
          input = project(value);
        } catch (e) {
          subscriber.error(e);
          return;
        }
        innerActive = true;
        // The holder exists before subscribing, so an inner that completes synchronously (and
        // starts the pending value's inner from its complete handler) cannot be confused with it.
        const holder = new Subscription();
        inner = holder;
        holder.add(
          from(input).subscribe({
            next: (r) => subscriber.next(r),
            error: (e) => subscriber.error(e),
            complete: () => {
              innerActive = false;
              holder.unsubscribe();
              if (hasPending) {
                const next = pending as T;
                hasPending = false;
                pending = undefined;
                run(next);
              } else if (sourceDone) subscriber.complete();
            },
          }),
        );
      };

      const sub = source.subscribe({
        next(value) {
          if (!innerActive) {
            run(value);
            return;
          }
          if (hasPending && !overwritten(opts, pending as T, subscriber)) return;
          pending = value;
          hasPending = true;
        },
        error: (e) => subscriber.error(e),
        complete() {
          sourceDone = true;
          if (!innerActive && !hasPending) subscriber.complete();
        },
      });
      return () => {
        sub.unsubscribe();
        inner?.unsubscribe();
      };
    });
}

export interface ConflateOptions<T> {
  /** Shortest time between two emissions in ms; default 0 = at most one per scheduler tick. */
  intervalMs?: number;
  /** Scheduler for the interval; default asyncScheduler. */
  scheduler?: SchedulerLike;
  /** Called with every pending value that a newer one overwrote. */
  onDrop?: (dropped: T) => void;
  /** `dropped` is incremented for every overwritten value. */
  stats?: ConflateStats;
}

/**
 * Rate-limits a stream to at most one value per `intervalMs`, always the latest: the first value
 * after a quiet spell goes out at once and opens an interval; values arriving during the interval
 * overwrite each other (each overwritten one goes to `onDrop` and `stats.dropped`), and the last
 * of them goes out when the interval ends, opening the next one. A value is never emitted after a
 * newer one has arrived. With `intervalMs` 0 the interval lasts until the scheduler's next tick,
 * which collapses a synchronous burst to its first and last values. When the source completes,
 * a pending value is still emitted at the end of the current interval and the stream completes
 * right after it; with nothing pending it completes at once.
 *
 * @param options `intervalMs` (default 0), `scheduler` (default asyncScheduler), `onDrop`, `stats`
 * @returns an operator passing through a thinned-out stream of the same values
 * @throws RangeError when `intervalMs` is negative or not finite (at creation)
 * @example
 * poses$.pipe(conflate({ intervalMs: 100 })) // at most 10 poses/s to a slow client, never stale
 */
export function conflate<T>(options: ConflateOptions<T> = {}): MonoTypeOperatorFunction<T> {
  const intervalMs = options.intervalMs ?? 0;
  const scheduler = options.scheduler ?? asyncScheduler;
  if (!(intervalMs >= 0 && Number.isFinite(intervalMs))) throw new RangeError(`conflate: intervalMs must be a finite number >= 0, got ${intervalMs}`);

  return (source) =>
    new Observable<T>((subscriber) => {
      let timer: Subscription | undefined;
      let hasPending = false;
      let pending: T | undefined;
      let sourceDone = false;

      const open = () => {
        timer = scheduler.schedule(() => {
          timer = undefined;
          if (hasPending) {
            const value = pending as T;
            hasPending = false;
            pending = undefined;
            if (!sourceDone) open();
            subscriber.next(value);
          }
          if (sourceDone) subscriber.complete();
        }, intervalMs);
      };

      const sub = source.subscribe({
        next(value) {
          if (timer === undefined) {
            // Open the interval before emitting: a consumer that unsubscribes synchronously then
            // tears the timer down too.
            open();
            subscriber.next(value);
            return;
          }
          if (hasPending && !overwritten(options, pending as T, subscriber)) return;
          pending = value;
          hasPending = true;
        },
        error: (e) => subscriber.error(e),
        complete() {
          sourceDone = true;
          if (!hasPending) subscriber.complete();
        },
      });
      return () => {
        sub.unsubscribe();
        timer?.unsubscribe();
      };
    });
}

export const spec: OperatorSpec = {
  name: 'conflate',
  summary: 'At most one value per interval, always the latest (for slow consumers)',
  input: 'any',
  output: 'any',
  params: [
    {
      name: 'intervalMs',
      type: 'number',
      default: 0,
      min: 0,
      max: 3_600_000,
      description: 'Shortest time between emissions in ms (0 = one per scheduler tick)',
    },
  ],
  create: (params, ctx) => conflate({ intervalMs: Number(params.intervalMs ?? 0), ...(ctx.scheduler ? { scheduler: ctx.scheduler } : {}) }),
};
