import { closeSync, openSync, readSync } from 'node:fs';
import { Observable, asyncScheduler, type SchedulerLike, type Subscriber, type Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CsiDecoder, DecodeStats } from '../csi/decoder.js';
import { ReplayClock } from '../decoders/replayClock.js';
import { FAST_CHUNK, nextTurn } from './pace.js';
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
  /** The link every frame is on (`<tx>-<rx>`, put into `linkId`); absent = the environment's primary link. */
  linkId?: string;
}

/** What a {@link CaptureReader} takes. */
export interface CaptureReaderOptions {
  /** Pace assumed where the capture has no usable device clock. Default 100 Hz. */
  nominalRateHz?: number;
  /** Read size in bytes. Default 64 KiB. */
  chunkSize?: number;
  /** Read the file this many times (0 = forever). Default 1. */
  loops?: number;
  /** Called with the decoder's counts each time the file has been read to its end. */
  onStats?: (stats: DecodeStats) => void;
}

/**
 * A capture file read one frame at a time, decoding lazily (memory stays bounded whatever the
 * file size), looping as asked, with its replay timeline ({@link ReplayClock}): `media` is the
 * latest frame's time in ms since the file's first frame. Synchronous; the caller paces.
 */
export class CaptureReader {
  /** Media time of the latest frame, ms since the first frame of the first pass. */
  media = 0;
  /** Pass of the latest frame (0 = the first reading of the file). */
  pass = 0;
  private fd = -1;
  private decoder!: CsiDecoder;
  private eof = false;
  private readonly queue: CsiFrame[] = [];
  private head = 0;
  private indexBase = 0;
  private readonly clock: ReplayClock;
  private readonly chunk: Buffer;
  private readonly loops: number;
  private readonly push = (f: CsiFrame) => {
    this.queue.push(f);
  };

  /**
   * @param path the capture file
   * @param createDecoder a fresh decoder for the file's format (one per pass)
   * @param opts nominal rate, chunk size, loops, stats callback
   */
  constructor(
    private readonly path: string,
    private readonly createDecoder: () => CsiDecoder,
    private readonly opts: CaptureReaderOptions = {},
  ) {
    this.clock = new ReplayClock(opts.nominalRateHz ?? 100);
    this.chunk = Buffer.allocUnsafe(opts.chunkSize ?? 65536);
    this.loops = opts.loops ?? 1;
  }

  /** Opens the file for its first pass; throws what `openSync` throws. */
  open(): void {
    this.fd = openSync(this.path, 'r');
    this.decoder = this.createDecoder();
    this.eof = false;
  }

  /** Closes the file; safe to call again. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /**
   * The next frame as decoded (later passes renumbered so that indices keep counting), or
   * undefined when the file and every loop are done; sets `media` and `pass`.
   * @throws the decoder's DecodeError if the file ends inside a record, or a read error
   */
  next(): CsiFrame | undefined {
    if (!this.fill()) return undefined;
    const f = this.queue[this.head++]!;
    this.media = this.clock.advance(f);
    return this.pass > 0 ? { ...f, index: f.index + this.indexBase } : f;
  }

  /**
   * The frame stamped for output: its recorded wall time kept on the first pass, else `time`
   * (later passes are restamped on the replay timeline so that time never runs backwards), and
   * `linkId` set when given. At most one copy.
   */
  stamp(f: CsiFrame, time: number, linkId: string | undefined): CsiFrame {
    const t = this.pass === 0 && f.time > 0 ? f.time : time;
    if (linkId === undefined) return t === f.time ? f : { ...f, time: t };
    return { ...f, time: t, linkId };
  }

  /** Decodes until a frame is queued or the file (and every loop) is done. Returns false when done. */
  private fill(): boolean {
    while (this.head >= this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      if (this.eof) {
        this.pass++;
        if (this.loops !== 0 && this.pass >= this.loops) return false;
        this.indexBase += this.decoder.stats.records;
        this.open();
      }
      const n = readSync(this.fd, this.chunk, 0, this.chunk.length, null);
      if (n === 0) {
        this.eof = true;
        this.close();
        this.decoder.end(this.push);
        this.opts.onStats?.({ ...this.decoder.stats });
      } else {
        this.decoder.push(this.chunk.subarray(0, n), this.push);
      }
    }
    return true;
  }
}

/** The next frame of a paced replay and when it is due: ms of replay timeline after the start. */
export interface PacedItem {
  frame: CsiFrame;
  at: number;
}

/**
 * Emits frames at their due time on `scheduler` (or, at speed 0, as fast as possible in chunks of
 * {@link FAST_CHUNK} per turn of the event loop), waiting whenever `demand` is paused.
 *
 * @param subscriber where frames go; completed when `pull` has no more, errored if it throws
 * @param pull the next frame and its due time (ms after the start, at speed 1), or undefined at the end;
 *   the item may be reused by the caller once its frame was emitted
 * @param opts speed (0 = as fast as possible), scheduler, demand
 * @param onEnd called once when the replay ends (complete, error or unsubscribe)
 * @returns the teardown
 */
export function runPaced(
  subscriber: Subscriber<CsiFrame>,
  pull: () => PacedItem | undefined,
  opts: { speed: number; scheduler: SchedulerLike; demand?: Demand | undefined },
  onEnd: () => void,
): () => void {
  const { speed, scheduler, demand } = opts;
  // Pacing runs on the scheduler's clock from subscribe.
  const clockStart = scheduler.now();
  let pending: Subscription | undefined;
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
          const item = pull();
          if (!item) {
            onEnd();
            subscriber.complete();
            return;
          }
          nextFrame = item.frame;
          nextDue = speed > 0 ? clockStart + item.at / speed : 0;
        }
        if (speed > 0) {
          const wait = nextDue - scheduler.now();
          if (wait > 0) {
            pending = scheduler.schedule(loop, wait);
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
      onEnd();
      subscriber.error(e);
    }
  };
  pending = scheduler.schedule(loop, 0);
  return () => {
    pending?.unsubscribe();
    onEnd();
  };
}

/**
 * Replays a capture file as a stream of frames, decoding lazily as it goes (memory stays bounded
 * whatever the file size) at the recorded pace, a multiple of it, or as fast as possible.
 * Frames without a recorded wall-clock time are stamped from the replay timeline.
 *
 * @param path the capture file
 * @param createDecoder a fresh decoder for the file's format
 * @param opts speed, nominal rate, loops, scheduler, link
 * @returns frames in file order; errors with the decoder's DecodeError if the file ends inside a record
 * @example
 * replayFile('log.all_csi.6.7.6', () => new Intel5300Decoder(), { speed: 0 })
 */
export function replayFile(path: string, createDecoder: () => CsiDecoder, opts: ReplayOptions = {}): Observable<CsiFrame> {
  const speed = opts.speed ?? 1;
  const scheduler = opts.scheduler ?? asyncScheduler;
  const linkId = opts.linkId;
  return new Observable<CsiFrame>((subscriber) => {
    const reader = new CaptureReader(path, createDecoder, {
      ...(opts.nominalRateHz !== undefined ? { nominalRateHz: opts.nominalRateHz } : {}),
      ...(opts.chunkSize !== undefined ? { chunkSize: opts.chunkSize } : {}),
      ...(opts.loops !== undefined ? { loops: opts.loops } : {}),
      ...(opts.onStats ? { onStats: opts.onStats } : {}),
    });
    // startTime only labels the frames, so a start time in the past (or a virtual clock at 0)
    // neither dumps the file at once nor delays the replay.
    const wallStart = opts.startTime ?? scheduler.now();
    try {
      reader.open();
    } catch (e) {
      subscriber.error(e);
      return;
    }
    const item: PacedItem = { frame: undefined as unknown as CsiFrame, at: 0 };
    const pull = (): PacedItem | undefined => {
      const f = reader.next();
      if (!f) return undefined;
      item.frame = reader.stamp(f, wallStart + reader.media, linkId);
      item.at = reader.media;
      return item;
    };
    return runPaced(subscriber, pull, { speed, scheduler, demand: opts.demand }, () => reader.close());
  });
}
