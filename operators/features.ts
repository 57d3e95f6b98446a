import { Observable, asyncScheduler, type OperatorFunction, type SchedulerLike } from 'rxjs';
import type { CsiWindow } from '../src/csi/frame.js';
import type { OperatorSpec } from '../src/engine/spec.js';
import { FeatureExtractor, FEATURE_DIM } from '../src/model/features.js';
import type { FeatureRow } from './infer.js';

export interface FeaturesOptions {
  /** Clock for `arrival` (the wall time the row was made); default asyncScheduler. */
  scheduler?: SchedulerLike;
}

/**
 * The CSI quality of a window, 0..1: the share of the frames the window's span should hold at its
 * rate that actually arrived (lost packets lower it), times an SNR factor (snrDb / 30, clamped
 * to 0..1; 1 when the SNR could not be estimated, so unknown SNR is not punished twice).
 */
export function windowQuality(w: CsiWindow, snrDb: number): number {
  const span = w.times[w.size - 1]! - w.times[0]!;
  const expected = Number.isFinite(w.rateHz) && w.rateHz > 0 && span > 0 ? (span * w.rateHz) / 1000 + 1 : w.size;
  const present = Math.min(1, w.size / expected);
  const snr = Number.isFinite(snrDb) ? Math.max(0, Math.min(1, snrDb / 30)) : 1;
  return present * snr;
}

/**
 * Turns windows of sanitised frames into the model's feature rows (`src/model/features.ts`
 * documents the layout): one FeatureExtractor per subscription, a new Float32Array per row (the
 * infer operator batches rows asynchronously, so rows must not share a buffer).
 *
 * @param options scheduler for the arrival clock
 * @returns an operator from CsiWindow to FeatureRow
 * @example
 * frames$.pipe(sanitizePhase(), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), features(), infer({ model }))
 */
export function features(options: FeaturesOptions = {}): OperatorFunction<CsiWindow, FeatureRow> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return (source) =>
    new Observable<FeatureRow>((subscriber) => {
      const fx = new FeatureExtractor();
      const sub = source.subscribe({
        next(w) {
          let row: FeatureRow;
          try {
            const f = fx.extract(w, new Float32Array(FEATURE_DIM));
            row = {
              features: f,
              frameTime: w.times[w.size - 1]!,
              arrival: scheduler.now(),
              sourceId: w.sourceId,
              environmentId: w.environmentId,
              csiQuality: windowQuality(w, fx.snrDb),
            };
          } catch (e) {
            subscriber.error(e);
            return;
          }
          subscriber.next(row);
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => sub.unsubscribe();
    });
}

export const spec: OperatorSpec = {
  name: 'features',
  summary: 'The pose model input: one feature row per window of sanitised frames (src/model/features.ts)',
  input: 'window',
  output: 'features',
  params: [],
  create: (_p, ctx) => features(ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
};
