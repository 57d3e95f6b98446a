import { closeSync, openSync, readSync } from 'node:fs';
import { Observable, asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CsiDecoder, DecodeStats } from '../csi/decoder.js';
import { FAST_CHUNK, ReplayClock, nextTurn, stampTime } from './replayClock.js';
import { whenReady, type Demand } from './demand.js';

export interface ReplayOptions {
  /** 1 = recorded pace, 2 = twice as fast, 0 = as fast as possible. */
  speed?: number;
  /** Pace assumed where the capture has no usable device clock. Default 100 Hz. */
  nominalRateHz?: number;
  /** Wall-clock time given to the first frame when the record has none. Default: now at subscribe. */
  startTime?: number;
  /** Read size in bytes. Default 64 KiB. */
  chunkSize?: number;
  /** Replay the file this many times (0 = forever). Default 1. */
  loops?: number;
  scheduler?: SchedulerLike;
  onStats?: (stats: DecodeStats) => void;
  /** The consumer's backpressure: while it is paused nothing more is read (src/sources/demand.ts). */
  demand?: Demand;
}

/**
 * Replays a capture file as a stream of frames, decoding lazily as it goes (memory stays bounded
 * whatever the file size) at the recorded pace, a multiple of it, or as fast as possible.
 * Frames without a recorded wall-clock time are stamped from the replay timeline.
 *
 * @param path the capture file
 * @param createDecoder a fresh decoder for the file's format
 * @param opts speed, nominal rate, loops, scheduler
 * @returns frames in file order; errors with the decoder's DecodeError if the file ends inside a record
 * @example
 * replayFile('log.all_csi.6.7.6', () => new Intel5300Decoder(), { speed: 0 })
 */
export function replayFile(path: string, createDecoder: () => CsiDecoder, opts: ReplayOptions = {}): Observable<CsiFrame> {
  const speed = opts.speed ?? 1;
  const scheduler = opts.scheduler ?? asyncScheduler;
  const chunk = Buffer.allocUnsafe(opts.chunkSize ?? 65536);
  const loops = opts.loops ?? 1;
  const demand = opts.demand;
  return new Observable<CsiFrame>((subscriber) => {
    let fd = -1;
    let decoder: CsiDecoder;
    let eof = false;
    let pass = 0;
    const queue: CsiFrame[] = [];
    let head = 0;
    const push = (f: CsiFrame) => queue.push(f);
    const clock = new ReplayClock(opts.nominalRateHz ?? 100);
    // Pacing runs on the scheduler's clock; startTime only labels the frames, so a start time in
    // the past (or a virtual clock at 0) neither dumps the file at once nor delays the replay.
    const clockStart = scheduler.now();
    const wallStart = opts.startTime ?? clockStart;
    let indexBase = 0;

    const open = () => {
      fd = openSync(path, 'r');
      decoder = createDecoder();
      eof = false;
    };
    const close = () => {
      if (fd >= 0) closeSync(fd);
      fd = -1;
    };
    /** Decodes until a frame is queued or the file (and every loop) is done. Returns false when done. */
    const fill = (): boolean => {
      while (head >= queue.length) {
        queue.length = 0;
        head = 0;
        if (eof) {
          pass++;
          if (loops !== 0 && pass >= loops) return false;
          indexBase += decoder.stats.records;
          open();
        }
        const n = readSync(fd, chunk, 0, chunk.length, null);
        if (n === 0) {
          eof = true;
          close();
          decoder.end(push);
          opts.onStats?.({ ...decoder.stats });
        } else {
          decoder.push(chunk.subarray(0, n), push);
        }
      }
      return true;
    };

    let pending: Subscription | undefined;
    const later = (delay: number) => {
      pending = scheduler.schedule(loop, delay);
    };
    let nextFrame: CsiFrame | undefined;
    let nextDue = 0;
    const loop = (): void => {
      try {
        let emitted = 0;
        while (!subscriber.closed) {
          if (demand?.paused) {
            pending = whenReady(demand, loop);
            return;
          }
          if (!nextFrame) {
            if (!fill()) {
              subscriber.complete();
              return;
            }
            let f = queue[head++]!;
            const media = clock.advance(f);
            // Later passes of a loop are restamped on the replay timeline, so time never runs backwards.
            if (pass > 0) f = { ...f, index: f.index + indexBase, time: wallStart + media };
            nextFrame = stampTime(f, wallStart + media);
            nextDue = speed > 0 ? clockStart + media / speed : 0;
          }
          if (speed > 0) {
            const wait = nextDue - scheduler.now();
            if (wait > 0) {
              later(wait);
              return;
            }
          } else if (++emitted > FAST_CHUNK) {
            pending = nextTurn(scheduler, loop);
            return;
          }
          const f = nextFrame;
          nextFrame = undefined;
          subscriber.next(f);
        }
      } catch (e) {
        close();
        subscriber.error(e);
      }
    };

    try {
      open();
    } catch (e) {
      subscriber.error(e);
      return;
    }
    later(0);
    return () => {
      pending?.unsubscribe();
      close();
    };
  });
}
