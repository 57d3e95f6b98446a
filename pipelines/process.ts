import { pipe, type OperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { PoseFrame } from '../src/pose/types.js';
import type { PipelineDef } from '../src/engine/pipeline.js';
import type { PoseRunner } from '../src/model/runtime.js';
import type { SiteGeometry } from '../src/model/contract.js';
import { HOP, WINDOW_FRAMES } from '../src/model/features.js';
import { sanitizePhase } from '../operators/sanitizePhase.js';
import { slidingWindow } from '../operators/slidingWindow.js';
import { features } from '../operators/features.js';
import { infer } from '../operators/infer.js';
import { track } from '../operators/track.js';
import { activity } from '../operators/activity.js';

/**
 * `process`: one CSI submission (POST /pose/process) to poses: sanitise -> window -> features ->
 * infer, then, when asked, track and activity over the submission's own frames. Every
 * submission gets fresh operator state: nothing leaks between requests.
 */
export const processDef: PipelineDef = {
  name: 'process',
  summary: 'one CSI submission to poses: sanitise, window, features, infer (+ track, activity)',
  stages: [
    ['sanitize', { method: 'phasor', scope: 'packet' }],
    ['window', { size: WINDOW_FRAMES, hop: HOP }],
    ['features', {}],
    ['infer', {}],
  ],
};

export interface ProcessOptions {
  model: PoseRunner;
  confidenceThreshold: number;
  maxPersons: number;
  viewWidth: number;
  viewHeight: number;
  includeDensePose: boolean;
  tracking: boolean;
  /** The installation's geometry for models with the `site` input; null or absent = unknown. */
  site?: SiteGeometry | null;
}

/** The process pipeline as one operator over a submission's frames. */
export function processPipeline(o: ProcessOptions): OperatorFunction<CsiFrame, PoseFrame> {
  const core = pipe(
    sanitizePhase({ method: 'phasor', scope: 'packet' }),
    slidingWindow({ size: WINDOW_FRAMES, hop: HOP }),
    features(),
    infer({
      model: o.model,
      batchSize: 32,
      maxWaitMs: 0,
      confidenceThreshold: o.confidenceThreshold,
      maxPersons: o.maxPersons,
      viewWidth: o.viewWidth,
      viewHeight: o.viewHeight,
      includeDensePose: o.includeDensePose,
      site: o.site ?? null,
    }),
  );
  return o.tracking ? pipe(core, track({ minHits: 1 }), activity()) : core;
}
