import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike } from 'rxjs';
import type { CsiWindow } from '../src/csi/frame.js';
import type { OperatorSpec } from '../src/engine/spec.js';
import { FeatureExtractor } from '../src/model/features.js';
import { frameMsOf, HISTORY_WIDTH, HistoryRing } from '../src/model/history.js';
import { csiLayout, type CsiLayout } from '../src/model/contract.js';
import type { FeatureRow } from './infer.js';

export interface FeaturesOptions {
  /** Clock for `arrival` (wall-clock ms when the window was processed); default asyncScheduler. */
  scheduler?: SchedulerLike;
  /** Called with each window dropped because it was malformed (and the reason). */
  onDrop?: (window: CsiWindow, reason: string) => void;
}

/** Sources whose history one `features` operator keeps at once. */
export const MAX_STREAMS = 64;

/** SNR (dB) at and below which the SNR factor of csiQuality is 0, and at and above which it is 1. */
export const QUALITY_SNR_DB = Object.freeze({ low: 5, high: 30 });

/**
 * The 0..1 CSI quality of a window: completeness x SNR factor.
 * - completeness: frames present / frames expected, expected = 1 + (last time - first time) *
 *   rateHz / 1000 (the window's own rate, estimated from its median frame interval, so lost
 *   packets lengthen the span without changing the rate); 1 when the rate or times are unusable.
 * - SNR factor: (snrDb - 5) / 25 clamped to 0..1, snrDb being the feature extractor's SNR proxy;
 *   1 when it could not be estimated.
 *
 * @param w the window
 * @param snrDb SNR proxy of the window, dB (NaN when unknown)
 * @returns quality in [0, 1]
 */
export function windowQuality(w: CsiWindow, snrDb: number): number {
  let completeness = 1;
  const span = w.size > 1 ? w.times[w.size - 1]! - w.times[0]! : 0;
  if (w.rateHz > 0 && w.rateHz < Infinity && span > 0 && span < Infinity) {
    const expected = 1 + (span * w.rateHz) / 1000;
    completeness = Math.max(0, Math.min(1, w.size / expected));
  }
  const snr = Number.isFinite(snrDb) ? Math.max(0, Math.min(1, (snrDb - QUALITY_SNR_DB.low) / (QUALITY_SNR_DB.high - QUALITY_SNR_DB.low))) : 1;
  return completeness * snr;
}

/**
 * Turns each CSI window into the pose model's feature row (`src/model/features.ts`: FEATURE_DIM
 * values; the windows should be WINDOW_FRAMES frames of `sanitize method=phasor scope=packet`
 * frames, which is what the model was trained on).
 *
 * Each row carries `frameTime` = the time of the window's last frame, `arrival` = the scheduler's
 * clock (wall-clock ms) when the window was processed, the window's source and environment, and
 * `csiQuality` (see `windowQuality`), `layout` (antennas, subcarriers, band: `infer` refuses the
 * layouts its model was not trained on), and `history`: the model's memory of the stream's earlier
 * windows (`src/model/history.ts`), from a ring kept per source (at most MAX_STREAMS sources; the
 * least recently seen is forgotten first). Each subscription has its own extractor, whose scratch
 * buffers (and the prepared frames shared by overlapping windows) are reused from window to window;
 * each row gets its own Float32Arrays, since `infer` batches rows asynchronously.
 * A malformed window (shape and data disagree) is dropped, not turned into an error: a bad packet
 * must not stop a live stream.
 *
 * @param options scheduler (default asyncScheduler) and an optional drop callback
 * @returns an operator from windows to feature rows
 * @example
 * frames$.pipe(sanitizePhase({ method: 'phasor' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), features(), infer())
 */
export function features(options: FeaturesOptions = {}): OperatorFunction<CsiWindow, FeatureRow> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return (source) =>
    new Observable<FeatureRow>((subscriber) => {
      const fx = new FeatureExtractor();
      const rings = new Map<string, HistoryRing>();
      // The layout of the last window, reused while the shape and channel stay (infer checks it).
      let layout: CsiLayout | undefined;
      let layoutSubs: Int16Array | undefined;
      let layoutChannel: number | undefined;
      const layoutFor = (w: CsiWindow): CsiLayout => {
        const l = layout;
        if (!l || layoutSubs !== w.subcarriers || l.nRx !== w.nRx || l.nTx !== w.nTx || l.nSub !== w.nSub || !Object.is(layoutChannel, w.channel)) {
          layout = csiLayout(w);
          layoutSubs = w.subcarriers;
          layoutChannel = w.channel;
        }
        return layout!;
      };
      const ringOf = (w: CsiWindow): HistoryRing => {
        const frameMs = frameMsOf(w.rateHz);
        let ring = rings.get(w.sourceId);
        if (ring) {
          // Most recently seen last, so the first key is the one to forget.
          rings.delete(w.sourceId);
          ring.setFrameMs(frameMs);
        } else {
          ring = new HistoryRing(frameMs);
          if (rings.size >= MAX_STREAMS) rings.delete(rings.keys().next().value!);
        }
        rings.set(w.sourceId, ring);
        return ring;
      };
      return source.subscribe({
        next(w) {
          let row: FeatureRow;
          try {
            const f = fx.extract(w);
            const end = w.size > 0 ? w.times[w.size - 1]! : 0;
            const ring = ringOf(w);
            const history = new Float32Array(HISTORY_WIDTH);
            ring.historyFor(end, history);
            ring.push(end, f);
            row = {
              features: f,
              history,
              frameTime: end,
              arrival: scheduler.now(),
              sourceId: w.sourceId,
              environmentId: w.environmentId,
              csiQuality: windowQuality(w, fx.snrDb),
              layout: layoutFor(w),
            };
          } catch (e) {
            options.onDrop?.(w, e instanceof Error ? e.message : String(e));
            return;
          }
          subscriber.next(row);
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
    });
}

export const spec: OperatorSpec = {
  name: 'features',
  summary: 'CSI window -> pose-model feature row (motion bearings, delay, Doppler, beam maps; see src/model/features.ts)',
  input: 'window',
  output: 'features',
  params: [],
  create: (_params, ctx) => (ctx.scheduler ? features({ scheduler: ctx.scheduler }) : features()),
};
