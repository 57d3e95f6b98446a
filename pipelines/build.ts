import type { OperatorFunction, SchedulerLike } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import type { PoseFrame } from '../src/pose/types.js';
import type { ParamValues } from '../src/engine/spec.js';
import { pipelineOperator, type PipelineDef } from '../src/engine/pipeline.js';
import type { PoseRunner } from '../src/model/runtime.js';
import type { MultiPersonTracker } from '../src/pose/tracker.js';
import type { InferContext, InferStats, UntrainedPolicy } from '../operators/infer.js';
import type { TrackContext } from '../operators/track.js';
import type { RefineContext } from '../operators/refine.js';
import type { FloorMapContext, FloorMapItem } from '../operators/floorMap.js';
import type { LinksContext } from '../operators/links.js';
import type { LinkStatsHolder } from '../src/csi/linkMonitor.js';
import type { RadioConfig } from '../src/csi/radios.js';
import { registry } from './index.js';
import { live } from './live.js';
import { physicsLive } from './physicsLive.js';
import { processDef } from './process.js';
import type { LiveParams } from './settings.js';

/** What the service lends a pipeline it runs. */
export interface PipelineResources {
  /** The loaded pose model (the caller owns it). */
  model: PoseRunner;
  /** Where the infer stage keeps its figures. */
  inferStats?: InferStats;
  /** Rows of a layout the model was not trained on: `refuse` (default) or `drop` (a live service). */
  untrained?: UntrainedPolicy;
  /** Called with each environment's tracker when it is made. */
  onTracker?: (environmentId: string, tracker: MultiPersonTracker) => void;
  /** Id of the first track (default 1). */
  firstTrackId?: number;
  /** The site's radios (`environment.site.radios`), read when the pipeline is subscribed; default DEFAULT_RADIOS. */
  radios?: () => readonly RadioConfig[];
  /** Where the `links` stage puts its per-link figures. */
  linkStats?: LinkStatsHolder;
  /** Called with each floor map of the `floorMap` stage (physics-live only), before it goes on. */
  onMap?: (item: FloorMapItem) => void;
  scheduler?: SchedulerLike;
}

function run(def: typeof live, r: PipelineResources, params: () => Partial<Record<string, Readonly<ParamValues>>>): OperatorFunction<CsiFrame, PoseFrame> {
  const ctx: InferContext & TrackContext & LinksContext & RefineContext & FloorMapContext = {
    model: r.model,
    // A v3 room model's calibration (csipose calibrate) goes to the front end.
    ...(r.model.contract === 3 ? { refiner: r.model, calibration: () => r.model.roomCalibration ?? null } : {}),
    live: (op) => params()[op],
    ...(r.inferStats ? { inferStats: r.inferStats } : {}),
    ...(r.untrained ? { untrained: r.untrained } : {}),
    ...(r.onTracker ? { onTracker: r.onTracker } : {}),
    ...(r.firstTrackId !== undefined ? { firstTrackId: r.firstTrackId } : {}),
    ...(r.radios ? { radios: r.radios } : {}),
    ...(r.linkStats ? { linkStats: r.linkStats } : {}),
    ...(r.onMap ? { onMap: r.onMap } : {}),
    ...(r.scheduler ? { scheduler: r.scheduler } : {}),
  };
  return pipelineOperator(def, registry, 'frame', ctx) as OperatorFunction<CsiFrame, PoseFrame>;
}

/**
 * The `live` pipeline as one operator: the stages `csipose pipelines` prints, with a loaded model
 * and live parameters read per batch and frame, so a configuration change applies on the next one.
 * Its first stage, `links`, takes the frames of every link of the site (`r.radios`) and passes on
 * the primary link's; its figures go to `r.linkStats`. With a v3 refiner (contract csipose-pose-v3)
 * it is `physics-live` instead: floorMap over every link of the site, refine, track, activity, alerts.
 * @param r the model, the site's radios and hooks
 * @param params the parameters in force (`liveParams(config.get())`), read again per batch or frame
 * @returns CSI frames to tracked, labelled pose frames with alerts and events
 * @example frames$.pipe(livePipeline({ model }, () => liveParams(config.get())))
 */
export function livePipeline(r: PipelineResources, params: () => LiveParams): OperatorFunction<CsiFrame, PoseFrame> {
  return run(liveDef(r.model), r, params);
}

/**
 * Which pipeline {@link livePipeline} runs for a model: `physics-live` for a v3 refiner (it reads
 * the physics front end's candidates, not window features), else `live`.
 * @param model the loaded model
 * @returns the pipeline's definition (its stages say, e.g., whether floor maps are made)
 * @example liveDef(model).stages.some(([op]) => op === 'floorMap')
 */
export function liveDef(model: Pick<PoseRunner, 'contract'>): PipelineDef {
  return model.contract === 3 ? physicsLive : live;
}

/** A submission's settings (`processing_options` over the configuration). */
export interface ProcessSettings {
  confidenceThreshold: number;
  maxPersons: number;
  viewWidth: number;
  viewHeight: number;
  /** The compact site string ('' = unknown). */
  site: string;
  includeDensePose: boolean;
  tracking: boolean;
}

/**
 * The `process` pipeline as one operator over a submission's frames, with fresh state.
 * @param r the model
 * @param s the submission's settings
 * @returns its pose frames
 */
export function processPipeline(r: PipelineResources, s: ProcessSettings): OperatorFunction<CsiFrame, PoseFrame> {
  const params = {
    infer: {
      confidenceThreshold: s.confidenceThreshold,
      maxPersons: s.maxPersons,
      viewWidth: s.viewWidth,
      viewHeight: s.viewHeight,
      site: s.site,
      includeDensePose: s.includeDensePose,
    },
    track: { enabled: s.tracking },
    activity: { enabled: s.tracking },
  };
  return run(processDef, r, () => params);
}
