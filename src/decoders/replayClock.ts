/**
 * The replay timeline of recorded frames: how a device clock (`CsiFrame.clockUs`, as each decoder
 * of this folder reads it) becomes media time. Here, below both, because file replays and MQTT
 * (src/sources/) and the decode operator (operators/decode.ts) stamp frames with it, and the
 * command line's capture sink (src/cli/sinks/) times its labels by it.
 */
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
