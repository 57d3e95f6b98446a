/**
 * Several capture files replayed as one environment: one file per link, merged in time order
 * (DECISIONS "Sites with several radios"; `file:a.dat?link=rx1 file:b.dat?link=rx2`).
 */
import { Observable, asyncScheduler, type SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CsiDecoder, DecodeStats } from '../csi/decoder.js';
import type { Demand } from './demand.js';
import { CaptureReader, runPaced, type PacedItem } from './replayFile.js';

/** One file of a merged replay. */
export interface MergeInput {
  /** The capture file. */
  path: string;
  /** A fresh decoder for its format (its `sourceId` names the file: each link keeps its own). */
  createDecoder: () => CsiDecoder;
  /** Read it this many times (0 = forever). Default 1. */
  loops?: number;
  /** The link its frames are on (`<tx>-<rx>`). */
  linkId?: string;
}

export interface MergeReplayOptions {
  /** 1 = recorded pace against one shared start, 2 = twice as fast, 0 = as fast as possible. Default 1. */
  speed?: number;
  /** Pace assumed where a capture has no usable device clock. Default 100 Hz. */
  nominalRateHz?: number;
  /**
   * Wall-clock time of the shared start, given to each first frame without a recorded time.
   * Default: the earliest recorded wall time of the files' first frames, else now at subscribe.
   */
  startTime?: number;
  /** Read size in bytes, per file. Default 64 KiB. */
  chunkSize?: number;
  scheduler?: SchedulerLike;
  /** The decode counts summed over the files, each time one of them has been read to its end. */
  onStats?: (stats: DecodeStats) => void;
  /** The consumer's backpressure: while it is paused no file is read (src/sources/demand.ts). */
  demand?: Demand;
}

/**
 * Replays several capture files as one stream, in time order: a k-way merge by frame time.
 *
 * Each file keeps its own replay timeline (src/decoders/replayClock.ts). A frame's time is its
 * recorded wall time where the record has one (pcap), else the shared start plus its media time
 * (ms since its file's first frame, from the device clock or the nominal rate): files without wall
 * time are taken to have started together, at the shared start. The merge always emits the
 * earliest head of the files (ties go to the file listed first), so frames come out in time order
 * whatever the speed; at speed S > 0 a frame is due (time - earliest first time) / S after
 * subscribe, one clock for all files. Each file is read only as its frames are needed (one frame
 * ahead per file), so memory stays bounded and a paused `demand` stops all reading.
 *
 * @param inputs the files, each with its decoder, loops and link
 * @param opts speed, nominal rate, start time, scheduler, stats, demand
 * @returns the merged frames; completes when every file is done; errors with the first file's
 *   error (a missing file, a DecodeError for a file ending inside a record) after the frames before it
 * @example
 * mergeReplays([
 *   { path: 'rx1.dat', createDecoder: () => createStreamDecoder('intel5300', { sourceId: 'file:rx1.dat' }), linkId: 'tx-rx1' },
 *   { path: 'rx2.dat', createDecoder: () => createStreamDecoder('intel5300', { sourceId: 'file:rx2.dat' }), linkId: 'tx-rx2' },
 * ], { speed: 0 })
 */
export function mergeReplays(inputs: readonly MergeInput[], opts: MergeReplayOptions = {}): Observable<CsiFrame> {
  const speed = opts.speed ?? 1;
  const scheduler = opts.scheduler ?? asyncScheduler;
  return new Observable<CsiFrame>((subscriber) => {
    const k = inputs.length;
    const ended: Array<DecodeStats | undefined> = new Array(k).fill(undefined);
    const sumStats = (): DecodeStats => {
      const t = { records: 0, skipped: 0, bytes: 0 };
      for (const s of ended) {
        if (!s) continue;
        t.records += s.records;
        t.skipped += s.skipped;
        t.bytes += s.bytes;
      }
      return t;
    };
    const readers = inputs.map(
      (inp, i) =>
        new CaptureReader(inp.path, inp.createDecoder, {
          ...(opts.nominalRateHz !== undefined ? { nominalRateHz: opts.nominalRateHz } : {}),
          ...(opts.chunkSize !== undefined ? { chunkSize: opts.chunkSize } : {}),
          ...(inp.loops !== undefined ? { loops: inp.loops } : {}),
          onStats: (s) => {
            // Counts of later loops add to the earlier ones'.
            const prev = ended[i];
            ended[i] = prev ? { records: prev.records + s.records, skipped: prev.skipped + s.skipped, bytes: prev.bytes + s.bytes } : s;
            opts.onStats?.(sumStats());
          },
        }),
    );
    const closeAll = () => readers.forEach((r) => r.close());
    try {
      readers.forEach((r) => r.open());
    } catch (e) {
      closeAll();
      subscriber.error(e);
      return;
    }

    /** Each file's next frame (undefined once done) and its time on the shared timeline. */
    const heads: Array<CsiFrame | undefined> = new Array(k).fill(undefined);
    const keys = new Float64Array(k);
    let wallStart = 0;
    let firstTime = 0;
    let primed = false;
    /** The file whose head was emitted last: read its next frame before choosing again. */
    let stale = -1;
    const keyOf = (r: CaptureReader, f: CsiFrame) => (r.pass === 0 && f.time > 0 ? f.time : wallStart + r.media);
    const advance = (i: number) => {
      const r = readers[i]!;
      const f = r.next();
      heads[i] = f;
      if (f) keys[i] = keyOf(r, f);
    };
    // Read lazily, inside the paced loop, so that read and decode errors reach the subscriber in order.
    const prime = () => {
      primed = true;
      let recorded = Infinity;
      for (let i = 0; i < k; i++) {
        const f = readers[i]!.next();
        heads[i] = f;
        if (f && f.time > 0 && f.time < recorded) recorded = f.time;
      }
      wallStart = opts.startTime ?? (Number.isFinite(recorded) ? recorded : scheduler.now());
      firstTime = Infinity;
      for (let i = 0; i < k; i++) {
        const f = heads[i];
        if (!f) continue;
        keys[i] = keyOf(readers[i]!, f);
        if (keys[i]! < firstTime) firstTime = keys[i]!;
      }
    };
    const item: PacedItem = { frame: undefined as unknown as CsiFrame, at: 0 };
    const pull = (): PacedItem | undefined => {
      if (!primed) prime();
      else if (stale >= 0) advance(stale);
      let best = -1;
      for (let i = 0; i < k; i++) if (heads[i] && (best < 0 || keys[i]! < keys[best]!)) best = i;
      stale = best;
      if (best < 0) return undefined;
      const r = readers[best]!;
      item.frame = r.stamp(heads[best]!, keys[best]!, inputs[best]!.linkId);
      item.at = keys[best]! - firstTime;
      return item;
    };
    return runPaced(subscriber, pull, { speed, scheduler, demand: opts.demand }, closeAll);
  });
}
