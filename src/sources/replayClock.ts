import { Subscription, asyncScheduler, type SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';

/** Largest device-clock step (µs) still taken as real time; longer steps are treated as a clock jump. */
const MAX_STEP_US = 10_000_000;

/**
 * Turns recorded device clocks into a replay timeline. Frames advance the media time by their
 * device-clock step when the clock moves forward by a plausible amount; otherwise (no clock, a
 * clock that stands still like the Intel 5300 sample's constant timestamp_low, a wrap or a jump)
 * by one period of the nominal rate.
 */
export class ReplayClock {
  private lastClock = NaN;
  /** Media time of the latest frame, ms since the first frame. */
  media = 0;
  private first = true;

  /**
   * @param nominalRateHz rate assumed where the device clock cannot be used
   */
  constructor(private readonly nominalRateHz: number) {}

  /**
   * Advances over one frame.
   * @param f the frame
   * @returns its media time in ms since the first frame
   */
  advance(f: CsiFrame): number {
    return this.advanceUs(f.clockUs);
  }

  /**
   * Advances over one frame given only its device clock.
   * @param c the frame's `clockUs`
   * @returns its media time in ms since the first frame
   */
  advanceUs(c: number): number {
    if (this.first) {
      this.first = false;
    } else {
      const step = c - this.lastClock;
      this.media += step > 0 && step <= MAX_STEP_US ? step / 1000 : 1000 / this.nominalRateHz;
    }
    this.lastClock = c;
    return this.media;
  }
}

/** A copy of `f` whose wall-clock time is `time`, unless the record carried its own. */
export function stampTime(f: CsiFrame, time: number): CsiFrame {
  return f.time > 0 ? f : { ...f, time };
}

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
