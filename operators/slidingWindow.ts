import { Observable, type OperatorFunction } from 'rxjs';
import type { CsiFrame, CsiWindow } from '../src/csi/frame.js';
import type { OperatorSpec } from '../src/engine/spec.js';

export interface SlidingWindowOptions {
  /** Frames per window; default 64, 2..4096. */
  size?: number;
  /** Frames between the starts of consecutive windows; default 8, 1..size. */
  hop?: number;
  /**
   * Nominal sampling rate to put in `rateHz` (for frames that were resampled onto a grid);
   * default 0 = estimate from the frame times.
   */
  rateHz?: number;
}

const MAX_SIZE = 4096;

/**
 * Cuts a frame stream into overlapping windows of `size` consecutive frames, one every `hop`
 * frames once the first window is full.
 *
 * Frames are appended to a segment buffer (one Float32Array holding several windows' worth of
 * frames) and never overwritten there: each emitted CsiWindow's `data` and `times` are views of
 * `size` consecutive frames of it, in time order, so emitting copies nothing and windows stay
 * valid after the stream moves on. When a segment is full the last size - 1 frames are copied to
 * the start of a fresh one (the old segment lives on while windows reference it); with segments
 * of 8 windows that is one frame copied per 7 frames appended instead of `size / hop` per frame. `rateHz` is `options.rateHz` when given, else 1000 divided by the
 * median interval between the window's frame times: the median is not thrown off by a lost
 * packet or by jitter the way (last - first) / (size - 1) is; NaN when the times do not give a
 * positive interval. A change of shape (nRx, nTx, nSub), of `sourceId` or of `linkId` empties the
 * buffer, so a window never mixes shapes, senders or links (interleaved links go through the
 * `links` stage first, which passes on one); the window carries its frames' `linkId`. Frames whose csi length does not match their shape are
 * skipped. A window still incomplete when the source completes is not emitted.
 *
 * @param options `size` (default 64), `hop` (default 8), `rateHz` (default 0 = estimate)
 * @returns an operator from frames to windows
 * @throws RangeError when `size` or `hop` is out of range (at creation, not in the stream)
 * @example
 * frames$.pipe(resample({ rate: 100 }), slidingWindow({ size: 64, hop: 8, rateHz: 100 }))
 */
export function slidingWindow(options: SlidingWindowOptions = {}): OperatorFunction<CsiFrame, CsiWindow> {
  const size = options.size ?? 64;
  const hop = options.hop ?? 8;
  const nominalRate = options.rateHz ?? 0;
  if (!Number.isInteger(size) || size < 2 || size > MAX_SIZE) throw new RangeError(`window: size must be an integer in [2, ${MAX_SIZE}], got ${size}`);
  if (!Number.isInteger(hop) || hop < 1 || hop > size) throw new RangeError(`window: hop must be an integer in [1, size=${size}], got ${hop}`);
  if (!(nominalRate >= 0)) throw new RangeError(`window: rateHz must be >= 0, got ${nominalRate}`);

  return (source) =>
    new Observable<CsiWindow>((subscriber) => {
      let frameLen = 0;
      let nRx = 0;
      let nTx = 0;
      let nSub = 0;
      let sourceId = '';
      let linkId: string | undefined;
      let subcarriers: Int16Array = new Int16Array(0);
      let seg = new Float32Array(0);
      let segTimes = new Float64Array(0);
      let segSeqs = new Float64Array(0);
      /** Frames a segment holds (at least size + hop; about 8 windows, at most ~32 MB). */
      let cap = 0;
      const intervals = new Float64Array(size - 1);
      /** Next frame slot of the segment. */
      let write = 0;
      /** Frames written since the last reset. */
      let count = 0;
      let windowIndex = 0;

      const newSegment = () => {
        seg = new Float32Array(cap * frameLen);
        segTimes = new Float64Array(cap);
        segSeqs = new Float64Array(cap);
      };

      const reset = (frame: CsiFrame) => {
        nRx = frame.nRx;
        nTx = frame.nTx;
        nSub = frame.nSub;
        sourceId = frame.sourceId;
        linkId = frame.linkId;
        subcarriers = frame.subcarriers;
        frameLen = frame.csi.length;
        const byMemory = Math.floor((32 << 20) / (frameLen * 4));
        cap = Math.max(size + hop, Math.min(8 * size, byMemory));
        newSegment();
        write = 0;
        count = 0;
      };

      /** Moves the newest size - 1 frames to the start of a fresh segment. */
      const rollover = () => {
        const keep = size - 1;
        const from = write - keep;
        const old = seg;
        const oldTimes = segTimes;
        const oldSeqs = segSeqs;
        newSegment();
        seg.set(old.subarray(from * frameLen, write * frameLen));
        segTimes.set(oldTimes.subarray(from, write));
        segSeqs.set(oldSeqs.subarray(from, write));
        write = keep;
      };

      const estimateRate = (times: Float64Array): number => {
        for (let i = 0; i < size - 1; i++) intervals[i] = times[i + 1] - times[i];
        intervals.sort();
        const mid = (size - 1) >> 1;
        const median = (size - 1) % 2 === 1 ? intervals[mid] : (intervals[mid - 1] + intervals[mid]) / 2;
        return median > 0 && Number.isFinite(median) ? 1000 / median : NaN;
      };

      const emit = (frame: CsiFrame) => {
        const first = write - size;
        const times = segTimes.subarray(first, write);
        const window: CsiWindow = {
          sourceId,
          environmentId: frame.environmentId,
          ...(linkId !== undefined ? { linkId } : {}),
          size,
          nRx,
          nTx,
          nSub,
          subcarriers,
          times,
          rateHz: nominalRate > 0 ? nominalRate : estimateRate(times),
          seq: segSeqs[first],
          windowIndex: windowIndex++,
          data: seg.subarray(first * frameLen, write * frameLen),
          channel: frame.channel,
        };
        subscriber.next(window);
      };

      const sub = source.subscribe({
        next(frame) {
          try {
            const len = frame.csi.length;
            if (len === 0 || len !== frame.nSub * frame.nRx * frame.nTx * 2) return;
            if (len !== frameLen || frame.nRx !== nRx || frame.nTx !== nTx || frame.nSub !== nSub || frame.sourceId !== sourceId || frame.linkId !== linkId)
              reset(frame);
            if (write === cap) rollover();
            seg.set(frame.csi, write * frameLen);
            segTimes[write] = frame.time;
            segSeqs[write] = frame.seq;
            write++;
            count++;
            if (count >= size && (count - size) % hop === 0) emit(frame);
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

export const spec: OperatorSpec = {
  name: 'window',
  summary: 'Overlapping windows of consecutive frames (ring buffer), one every hop frames',
  input: 'frame',
  output: 'window',
  params: [
    { name: 'size', type: 'int', default: 64, min: 2, max: MAX_SIZE, description: 'Frames per window' },
    {
      name: 'hop',
      type: 'int',
      default: 8,
      min: 1,
      max: MAX_SIZE,
      description: 'Frames between the starts of consecutive windows (at most size)',
    },
    {
      name: 'rateHz',
      type: 'number',
      default: 0,
      min: 0,
      max: 100_000,
      description: 'Nominal frame rate to report (use after resample); 0 = estimate from frame times',
    },
  ],
  create: (params) =>
    slidingWindow({
      size: Number(params.size ?? 64),
      hop: Number(params.hop ?? 8),
      rateHz: Number(params.rateHz ?? 0),
    }),
};
