import { pipe, type OperatorFunction, type SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { PoseFrame } from '../src/pose/types.js';
import type { PipelineDef } from '../src/engine/pipeline.js';
import type { PoseRunner } from '../src/model/runtime.js';
import type { SiteGeometry } from '../src/model/contract.js';
import type { MultiPersonTracker } from '../src/pose/tracker.js';
import { HOP, WINDOW_FRAMES } from '../src/model/features.js';
import { sanitizePhase } from '../operators/sanitizePhase.js';
import { slidingWindow } from '../operators/slidingWindow.js';
import { features } from '../operators/features.js';
import { infer, type InferStats } from '../operators/infer.js';
import { track } from '../operators/track.js';
import { activity } from '../operators/activity.js';
import { alerts, type AlertsConfig } from '../operators/alerts.js';

/**
 * `live`: CSI frames to tracked poses with activities and alerts, the default of `csipose serve`.
 * sanitise -> window (the model's WINDOW_FRAMES, every HOP frames) -> features -> infer ->
 * track -> activity -> alerts.
 */
export const live: PipelineDef = {
  name: 'live',
  summary: 'sanitise, window, features, infer (ONNX), track, activity, alerts: CSI to tracked poses',
  stages: [
    ['sanitize', { method: 'phasor', scope: 'packet' }],
    ['window', { size: WINDOW_FRAMES, hop: HOP }],
    ['features', {}],
    ['infer', {}],
    ['track', {}],
    ['activity', {}],
    ['alerts', {}],
  ],
};

/** Settings of the live pipeline that can change while it runs (read per batch or per frame). */
export interface LiveSettings {
  confidenceThreshold: number;
  maxPersons: number;
  batchSize: number;
  maxWaitMs: number;
  viewWidth: number;
  viewHeight: number;
  /** The installation's geometry for models with the `site` input; null = unknown. */
  site: SiteGeometry | null;
  minHits: number;
  maxAge: number;
  alerts: AlertsConfig;
}

export interface LiveOptions {
  model: PoseRunner;
  /** Read on every batch/frame, so configuration changes apply on the next one. */
  settings: () => LiveSettings;
  inferStats?: InferStats;
  onTracker?: (environmentId: string, tracker: MultiPersonTracker) => void;
  scheduler?: SchedulerLike;
}

/**
 * The live pipeline as one operator, wired to a loaded model and live settings (the service's
 * form of the `live` definition above).
 */
export function livePipeline(o: LiveOptions): OperatorFunction<CsiFrame, PoseFrame> {
  const s = o.settings;
  return pipe(
    sanitizePhase({ method: 'phasor', scope: 'packet' }),
    slidingWindow({ size: WINDOW_FRAMES, hop: HOP }),
    features(o.scheduler ? { scheduler: o.scheduler } : {}),
    infer(() => {
      const v = s();
      return {
        model: o.model,
        batchSize: v.batchSize,
        maxWaitMs: v.maxWaitMs,
        confidenceThreshold: v.confidenceThreshold,
        maxPersons: v.maxPersons,
        viewWidth: v.viewWidth,
        viewHeight: v.viewHeight,
        site: v.site,
        ...(o.inferStats ? { stats: o.inferStats } : {}),
        ...(o.scheduler ? { scheduler: o.scheduler } : {}),
      };
    }),
    track(() => ({
      minHits: s().minHits,
      maxAge: s().maxAge,
      ...(o.onTracker ? { onTracker: o.onTracker } : {}),
    })),
    activity(),
    alerts(() => s().alerts),
  );
}
