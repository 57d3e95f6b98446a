/**
 * How fast the sources that can wait (the simulator, file replays) emit: in small chunks, one
 * event-loop turn apart. Their replay timeline is src/decoders/replayClock.ts.
 */
import { Subscription, asyncScheduler, type SchedulerLike } from 'rxjs';

/**
 * Frames a source emits as fast as possible before yielding to the event loop. Small, so that
 * the inference worker's results and socket events get in between chunks: a downstream stage
 * that works off-thread then keeps up instead of shedding (with 1,024-frame chunks the live
 * pipeline inferred 283 windows/s and dropped the rest).
 */
export const FAST_CHUNK = 64;

/**
 * Runs `fn` on the next turn of the event loop: `setImmediate` under the default scheduler (no
 * timer clamp, I/O callbacks run first), `scheduler.schedule` under any other (tests' virtual time).
 */
export function nextTurn(scheduler: SchedulerLike, fn: () => void): Subscription {
  if (scheduler !== asyncScheduler) return scheduler.schedule(fn, 0);
  const handle = setImmediate(fn);
  return new Subscription(() => clearImmediate(handle));
}
