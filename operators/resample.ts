import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { OperatorSpec } from '../src/engine/spec.js';

/** Running counts of one `resample` operator; the caller owns the object and reads it any time. */
export interface ResampleStats {
  /** Gaps longer than `maxGapMs` that were not bridged (the grid restarted after each). */
  gaps: number;
  /** Grid ticks not emitted because they fell in an unbridged gap or across a shape change. */
  ticks: number;
  /** Frames dropped because their time was not finite or not after the previous frame's, or their csi length did not match their shape. */
  dropped?: number;
  /** Grid restarts caused by a change of shape (nRx, nTx, nSub) or of source. */
  restarts?: number;
}

export interface ResampleOptions {
  /** Output rate in Hz; default 100. */
  rate?: number;
  /** Longest interval between two input frames that is still interpolated; default 100 ms. */
  maxGapMs?: number;
  /** Counts are added to this object (it is not reset). */
  stats?: ResampleStats;
}

/** Highest accepted `rate` and `maxGapMs`: together they bound the ticks one input frame can produce. */
const MAX_RATE = 5000;
const MAX_GAP_MS = 10_000;

/**
 * Resamples frames with jittery timestamps and lost packets onto a fixed time grid.
 *
 * The grid starts at the first frame's `time` (epoch ms) with a tick every `1000 / rate` ms. Each
 * tick that falls between two consecutive input frames a and b (a.time < tick <= b.time) gets one
 * output frame whose csi is linearly interpolated element by element (re and im separately)
 * between a and b; `time` is exactly the tick time, `seq` the tick number, `index` the count of
 * frames emitted so far, and every other field (rssi, meta, ...) comes from the nearer of a and b
 * (a on a tie). Emission is driven by the data alone: nothing waits on a timer, and ticks after
 * the last frame are not emitted.
 *
 * Not interpolated, each restarting the grid at the next frame's time:
 * - a gap longer than `maxGapMs` between consecutive frames (counted in `stats.gaps`);
 * - a change of shape (nRx, nTx, nSub) or of `sourceId` (counted in `stats.restarts`).
 * The ticks the old grid would have placed before that frame are counted in `stats.ticks`, and
 * tick numbering continues as if the old grid had run on, so a gap shows up downstream as a jump
 * in `seq`, just as a lost packet does in a raw capture.
 *
 * Frames whose time is not finite, is equal to or before the previous frame's, or whose csi
 * length does not match nSub*nRx*nTx*2 are dropped and counted in `stats.dropped`.
 *
 * @param options `rate` (Hz, default 100), `maxGapMs` (default 100), `stats` (counts are added)
 * @returns an operator from frames to frames on the grid
 * @throws RangeError when `rate` or `maxGapMs` is out of range (at creation, not in the stream)
 * @example
 * const stats = { gaps: 0, ticks: 0 };
 * frames$.pipe(resample({ rate: 100, maxGapMs: 100, stats }))
 */
export function resample(options: ResampleOptions = {}): MonoTypeOperatorFunction<CsiFrame> {
  const rate = options.rate ?? 100;
  const maxGapMs = options.maxGapMs ?? 100;
  if (!(rate > 0 && rate <= MAX_RATE)) throw new RangeError(`resample: rate must be in (0, ${MAX_RATE}] Hz, got ${rate}`);
  if (!(maxGapMs >= 0 && maxGapMs <= MAX_GAP_MS)) throw new RangeError(`resample: maxGapMs must be in [0, ${MAX_GAP_MS}], got ${maxGapMs}`);
  const stats = options.stats;
  const period = 1000 / rate;

  return (source) =>
    new Observable<CsiFrame>((subscriber) => {
      let prev: CsiFrame | undefined;
      /** The grid: tick k is at gridTime + (k - gridTick) * period. */
      let gridTime = 0;
      let gridTick = 0;
      let nextTick = 0;
      let emitted = 0;

      const drop = () => {
        if (stats) stats.dropped = (stats.dropped ?? 0) + 1;
      };

      /** Starts a grid whose tick `tick` is at the frame's own time, and emits that tick. */
      const startGrid = (frame: CsiFrame, tick: number) => {
        gridTime = frame.time;
        gridTick = tick;
        nextTick = tick + 1;
        prev = frame;
        subscriber.next({ ...frame, seq: tick, index: emitted++ });
      };

      /** Restarts the grid at `frame`, counting the old grid's ticks that lie before it. */
      const restart = (frame: CsiFrame) => {
        const nextTime = gridTime + (nextTick - gridTick) * period;
        // The epsilon keeps a tick that lands exactly on frame.time (up to rounding) out of the count.
        const skipped = frame.time > nextTime ? Math.max(0, Math.ceil((frame.time - nextTime) / period - 1e-9)) : 0;
        if (stats) stats.ticks += skipped;
        startGrid(frame, nextTick + skipped);
      };

      const interpolate = (a: CsiFrame, b: CsiFrame, t: number, tick: number): CsiFrame => {
        const w = (t - a.time) / (b.time - a.time);
        const ca = a.csi;
        const cb = b.csi;
        const out = new Float32Array(ca.length);
        for (let i = 0; i < out.length; i++) out[i] = ca[i] + w * (cb[i] - ca[i]);
        const nearer = w <= 0.5 ? a : b;
        return { ...nearer, csi: out, time: t, seq: tick, index: emitted++ };
      };

      const sub = source.subscribe({
        next(frame) {
          try {
            const t = frame.time;
            if (!Number.isFinite(t) || frame.csi.length !== frame.nSub * frame.nRx * frame.nTx * 2) {
              drop();
              return;
            }
            if (prev === undefined) {
              startGrid(frame, 0);
              return;
            }
            if (t <= prev.time) {
              drop();
              return;
            }
            if (frame.nRx !== prev.nRx || frame.nTx !== prev.nTx || frame.nSub !== prev.nSub || frame.sourceId !== prev.sourceId) {
              if (stats) stats.restarts = (stats.restarts ?? 0) + 1;
              restart(frame);
              return;
            }
            if (t - prev.time > maxGapMs) {
              if (stats) stats.gaps++;
              restart(frame);
              return;
            }
            const a = prev;
            prev = frame;
            for (;;) {
              const tickTime = gridTime + (nextTick - gridTick) * period;
              if (tickTime > t || subscriber.closed) break;
              subscriber.next(interpolate(a, frame, tickTime, nextTick));
              nextTick++;
            }
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
  name: 'resample',
  summary: 'Resample frames with jittery times and lost packets onto a fixed grid by linear interpolation',
  input: 'frame',
  output: 'frame',
  params: [
    { name: 'rate', type: 'number', default: 100, min: 1, max: MAX_RATE, description: 'Output rate in Hz' },
    {
      name: 'maxGapMs',
      type: 'number',
      default: 100,
      min: 0,
      max: MAX_GAP_MS,
      description: 'Longest interval between frames that is interpolated; longer gaps restart the grid',
    },
  ],
  create: (params) => resample({ rate: Number(params.rate ?? 100), maxGapMs: Number(params.maxGapMs ?? 100) }),
};
