import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { OperatorContext, OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam, primaryReceiverParam, type ConfigParam } from '../src/config/params.js';
import type { PoseFrame } from '../src/pose/types.js';
import { PoseModel, type DecodeOptions, type PoseRunner } from '../src/model/runtime.js';
import { parseSite, siteProblem, type SiteGeometry } from '../src/model/contract.js';
import type { FeatureRow, InferStats, UntrainedPolicy } from '../src/model/inferTypes.js';
import { InferBatcher } from '../src/model/inferBatcher.js';
import { LayoutGate } from '../src/model/layoutGate.js';
import { asModelError, InferRunner } from '../src/model/inferRunner.js';
import { InferDecoder } from '../src/model/inferDecoder.js';
import { resolveInstalled } from '../src/packageRoot.js';
import { viewCamera, type Camera, type ViewSettings } from '../src/pose/camera.js';

// The stage's domain lives in src/model (batching, layouts, the model, decoding); these names stay importable from here.
export type { FeatureRow, InferStats, UntrainedLink, UntrainedPolicy } from '../src/model/inferTypes.js';
export { COUNT_HYSTERESIS, countWithHysteresis } from '../src/model/countHysteresis.js';
export { COUNT_SMOOTHING } from '../src/model/inferDecoder.js';

/**
 * Options of {@link infer}; those marked Live are read again for every row and batch when given as a function.
 * A numeric option that a configuration setting stands behind takes that setting's type and range from the
 * config schema (named in its comment), so that `infer()` refuses what the schema refuses.
 */
export interface InferOptions {
  /**
   * A loaded model (or its loading promise). The caller owns it: the operator never releases it.
   * When omitted, the operator loads `modelPath` per subscription and releases it at teardown.
   */
  model?: PoseRunner | Promise<PoseRunner>;
  /** ONNX file to load when `model` is not given (relative to the working directory). */
  modelPath?: string;
  /** Feature width the rows have; a model expecting another width fails to load. */
  featureDim?: number;
  /** Rows per batch; range and default neural_network.batch_size's. Live. */
  batchSize?: number;
  /** A partial batch runs once its oldest row has waited this long (scheduler ms); range and default neural_network.max_wait_ms's. Live. */
  maxWaitMs?: number;
  /** Queued rows beyond this are dropped, oldest first; an integer in [1, 1000000], default 256 (no setting stands behind it). Live. */
  maxQueue?: number;
  /** Batches in flight at once; default 1. Read at subscription. */
  concurrency?: number;
  /** Persons with presence below this are dropped; range and default detection.confidence_threshold's. Live (per batch). */
  confidenceThreshold?: number;
  /** At most this many persons per frame; range and default detection.max_persons'. Live (per batch). */
  maxPersons?: number;
  /** Reference view in pixels; ranges and defaults environment.view.width's and height's. Live (per batch). */
  viewWidth?: number;
  viewHeight?: number;
  /**
   * Where the reference camera is and how it looks (environment.view's other fields; ranges and
   * defaults theirs): v2 models' skeletons are projected through it. Live (per batch).
   */
  viewHfovDeg?: number;
  viewX?: number;
  viewY?: number;
  viewZ?: number;
  viewYawDeg?: number;
  viewPitchDeg?: number;
  /**
   * Where the receiver the model reads is on the floor plan (the primary receiver of
   * environment.site.radios, used whether or not the site is `known`; range a radio's x and y in the
   * schema, default the default site's receiver): v2 models' skeletons are relative to it. Live (per batch).
   */
  receiverX?: number;
  receiverY?: number;
  /**
   * The installation's geometry, fed to models with the `site` input (see `src/model/contract.ts`);
   * null or absent = unknown. Live (per batch).
   */
  site?: SiteGeometry | null;
  /** Attach DensePose parts to each person; default true. Live (per batch). */
  includeDensePose?: boolean;
  /** Rows of a layout the model was not trained on: `refuse` (default) or `drop`. Read at subscription. */
  untrained?: UntrainedPolicy;
  /** Scheduler for the `maxWaitMs` timer; default asyncScheduler. Read at subscription. */
  scheduler?: SchedulerLike;
  /** Object to keep the figures in (zeroed at subscription); one is created when omitted. */
  stats?: InferStats;
  /** Called with the figures after every batch and every drop. */
  onStats?: (stats: Readonly<InferStats>) => void;
}

/** The pose model `npm run train:v2` ships, loaded when neither `model` nor `modelPath` is given. */
export const DEFAULT_MODEL_PATH = 'models/csipose-pose.onnx';
/** Default bound of the queue: rows beyond it are dropped, oldest first. */
const DEFAULT_QUEUE = 256;
/** The queue's bound: no setting stands behind it, so its range is stated here (the spec's and the check's). */
const QUEUE: ConfigParam = { type: 'int', default: DEFAULT_QUEUE, min: 1, max: 1_000_000 };

/** The parameters a configuration field sets: type, default and range come from the config schema. */
const BATCH = configParam('neural_network.batch_size');
const MAX_WAIT = configParam('neural_network.max_wait_ms');
const CONFIDENCE = configParam('detection.confidence_threshold');
const MAX_PERSONS = configParam('detection.max_persons');
const VIEW_WIDTH = configParam('environment.view.width');
const VIEW_HEIGHT = configParam('environment.view.height');
const VIEW = {
  viewHfovDeg: configParam('environment.view.hfov_deg'),
  viewX: configParam('environment.view.x'),
  viewY: configParam('environment.view.y'),
  viewZ: configParam('environment.view.z'),
  viewYawDeg: configParam('environment.view.yaw_deg'),
  viewPitchDeg: configParam('environment.view.pitch_deg'),
} as const;
const RECEIVER_X = primaryReceiverParam('x');
const RECEIVER_Y = primaryReceiverParam('y');

/**
 * The numeric options, each with the declaration it is checked against: the config schema's for
 * those a setting stands behind (the spec's PARAMS spread the same ones), so one range holds for a
 * pipeline string, the service and a direct `infer()` call.
 */
const NUMERIC = {
  batchSize: BATCH,
  maxWaitMs: MAX_WAIT,
  maxQueue: QUEUE,
  confidenceThreshold: CONFIDENCE,
  maxPersons: MAX_PERSONS,
  viewWidth: VIEW_WIDTH,
  viewHeight: VIEW_HEIGHT,
  ...VIEW,
  receiverX: RECEIVER_X,
  receiverY: RECEIVER_Y,
} as const satisfies Record<string, ConfigParam>;
type NumericOption = keyof typeof NUMERIC;

/**
 * A numeric option's value (its default when absent), checked against its declaration.
 * @param o the options
 * @param name the option
 * @returns the value
 * @throws RangeError naming the option and its range when the value is outside it (or not an integer for an int)
 */
function checked(o: InferOptions, name: NumericOption): number {
  const p = NUMERIC[name];
  const v = o[name] ?? (p.default as number);
  const min = p.min ?? -Infinity;
  const max = p.max ?? Infinity;
  const int = p.type === 'int';
  if (!(Number.isFinite(v) && v >= min && v <= max) || (int && !Number.isInteger(v)))
    throw new RangeError(`infer: ${name} must be ${int ? 'an integer' : 'a number'} in [${min}, ${max}], got ${v}`);
  return v;
}

/** What the service lends the infer stage of a pipeline it composes (see `pipelines/build.ts`). */
export interface InferContext extends OperatorContext {
  /** The loaded model (the service owns it); without it the stage loads `modelPath` itself. */
  readonly model?: PoseRunner;
  /** Where the stage keeps its figures. */
  readonly inferStats?: InferStats;
  /** What the stage does with rows of an untrained layout (the service drops them; default refuse). */
  readonly untrained?: UntrainedPolicy;
}

/** The live options, checked, with the decode options of the next batch. */
interface Resolved {
  batchSize: number;
  maxWaitMs: number;
  maxQueue: number;
  decode: DecodeOptions;
  site: SiteGeometry | null;
}

/** Reads and checks the live options; throws RangeError naming a bad one and its range. */
function resolve(o: InferOptions, cameraOf: (v: ViewSettings) => Camera = viewCamera): Resolved {
  const batchSize = checked(o, 'batchSize');
  const maxWaitMs = checked(o, 'maxWaitMs');
  const maxQueue = checked(o, 'maxQueue');
  const confidenceThreshold = checked(o, 'confidenceThreshold');
  const maxPersons = checked(o, 'maxPersons');
  const width = checked(o, 'viewWidth');
  const height = checked(o, 'viewHeight');
  const site = o.site ?? null;
  const problem = site ? siteProblem(site) : null;
  if (problem) throw new RangeError(`infer: site: ${problem}`);
  const view: ViewSettings = {
    width,
    height,
    hfov_deg: checked(o, 'viewHfovDeg'),
    x: checked(o, 'viewX'),
    y: checked(o, 'viewY'),
    z: checked(o, 'viewZ'),
    yaw_deg: checked(o, 'viewYawDeg'),
    pitch_deg: checked(o, 'viewPitchDeg'),
  };
  const receiver = { x: checked(o, 'receiverX'), y: checked(o, 'receiverY') };
  return {
    site,
    batchSize,
    maxWaitMs,
    maxQueue,
    decode: { view: { width, height }, confidenceThreshold, maxPersons, includeDensePose: o.includeDensePose ?? true, camera: cameraOf(view), receiver },
  };
}

/**
 * Runs the pose model on feature rows in batches and emits one PoseFrame per row, in input order.
 *
 * Rows queue until `batchSize` of them are waiting, or until the oldest has waited `maxWaitMs` on
 * the scheduler, or the source completes; then they are copied into one batch tensor and handed to
 * `model.run`, which computes off the event loop (PoseModel's worker thread). At most
 * `concurrency` batches (default 1) are in flight; rows keep queueing meanwhile. When inference
 * cannot keep up and more than `maxQueue` rows wait, the OLDEST are dropped and counted in
 * `stats.dropped`, so the queue is bounded and the output stays as fresh as the model allows.
 *
 * Each frame carries the persons `decodeOutputs` finds in its row (threshold, person limit, view
 * and DensePose as the options said when its batch was launched), `frameId` 0, 1, 2... per
 * environment, `processingMs` from the row's `arrival` to emission, and the model's version.
 *
 * Options may be given as a function, read again for every row and batch: batching, queue and
 * decode options then change on the fly (e.g. a new `confidenceThreshold` applies from the next
 * batch). `model`, `modelPath`, `concurrency`, `scheduler`, `stats` and `onStats` are read once
 * per subscription.
 *
 * Layouts: a row whose `layout` (antennas, subcarriers, band) is not one the model was trained on
 * (`PoseModel.trainedLayouts`; models that do not say are not checked) is never run. A model fed a
 * layout it never saw answers with confidence all the same (13 ESP32 packets gave a person at
 * confidence 1). With `untrained: 'refuse'` (default) the rows before it are run and emitted, then
 * the stream ends with a ModelError naming the source, its layout and what the model was trained
 * on (rows after it are ignored); with `'drop'` (the service's live pipeline) the row is dropped
 * and its source listed in `stats.untrained`, so that one such link cannot stop the others.
 *
 * Errors: a model that cannot be loaded (missing file, not ONNX, contract mismatch), a failing
 * `run`, or a row whose width is not the model's feature_dim end the stream with a ModelError
 * (code MODEL_ERROR), which the service turns into its `error` state; nothing is thrown out of the
 * stream and the process keeps running. A bad option is a RangeError (thrown at creation for a
 * plain options object). Source errors pass through. On completion the queued rows are flushed
 * and the stream completes after the last frame. Unsubscribing stops further runs (a batch
 * already in flight finishes in the worker and is discarded) and releases a model the operator
 * loaded itself.
 *
 * The work is done by the steps in src/model, one of each per subscription: `InferBatcher` (the
 * queue, its bound and when a batch is due), `LayoutGate` (layouts), `InferRunner` (the model, in
 * launch order, MODEL_ERROR) and `InferDecoder` (frames, the count's smoothing and hysteresis, the
 * camera); the operator holds them, the scheduler's timer and the model's loading and release.
 *
 * @param options options, or a function returning them (read live)
 * @returns an operator from feature rows to pose frames
 * @example
 * rows$.pipe(infer({ modelPath: 'models/csipose-pose.onnx', batchSize: 32, onStats: (s) => gauge.set(s.queue) }))
 */
export function infer(options: InferOptions | (() => InferOptions) = {}): OperatorFunction<FeatureRow, PoseFrame> {
  const read = typeof options === 'function' ? options : () => options;
  if (typeof options !== 'function') resolve(options);

  return (source) =>
    new Observable<PoseFrame>((subscriber) => {
      const init = read();
      const concurrency = init.concurrency ?? 1;
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        subscriber.error(new RangeError(`infer: concurrency must be a positive integer, got ${concurrency}`));
        return;
      }
      const scheduler = init.scheduler ?? asyncScheduler;
      const stats: InferStats = init.stats ?? { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
      Object.assign(stats, { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0, untrained: [] });
      const onStats = init.onStats;
      let gate: LayoutGate;
      try {
        gate = new LayoutGate(init.untrained ?? 'refuse', stats);
      } catch (e) {
        subscriber.error(e);
        return;
      }
      const batcher = new InferBatcher<FeatureRow>(stats);
      const decoder = new InferDecoder();
      const cameraOf = (v: ViewSettings) => decoder.cameraFor(v);
      /** Set once the model is loaded and accepted. */
      let runner: InferRunner<DecodeOptions> | undefined;
      /** A model the operator loaded itself: released once nothing runs on it after teardown. */
      let owned: PoseModel | undefined;
      let closed = false;
      let sourceDone = false;
      let timer: Subscription | undefined;
      let timerDue = Infinity;

      const close = () => {
        closed = true;
        runner?.stop();
      };
      const fail = (e: unknown) => {
        if (closed) return;
        close();
        subscriber.error(asModelError(e));
      };
      const report = () => {
        stats.queue = batcher.length;
        onStats?.(stats);
      };
      const settleOwned = () => {
        if (owned && !runner?.inFlight) {
          const m = owned;
          owned = undefined;
          m.release().catch(() => undefined);
        }
      };
      const cancelTimer = () => {
        timer?.unsubscribe();
        timer = undefined;
        timerDue = Infinity;
      };
      /** Calls pump when the oldest row's wait ends (one timer, moved when that time changes). */
      const wakeAt = (due: number) => {
        if (due === timerDue) return;
        cancelTimer();
        timerDue = due;
        timer = scheduler.schedule(
          () => {
            timer = undefined;
            timerDue = Infinity;
            pump();
          },
          Math.max(0, due - scheduler.now()),
        );
      };

      /** Emits the finished batches' frames, in launch order. */
      const emitReady = (r: InferRunner<DecodeOptions>) => {
        for (let b = r.next(); b && !closed; b = r.next()) {
          const now = Date.now();
          const version = r.model.metadata.model_version || 'unknown';
          const trigger = r.model.metadata.fall_trigger;
          for (let i = 0; i < b.rows.length && !closed; i++) {
            const f = decoder.frame(b.out, i, b.rows[i]!, b.context, version, now);
            if (trigger !== undefined) f.fallTrigger = trigger;
            subscriber.next(f);
          }
        }
      };

      /** Takes `take` rows off the queue and runs those the model can read as one batch. */
      const launch = (r: InferRunner<DecodeOptions>, take: number, o: Resolved) => {
        const rows = gate.admitted(r.model, batcher.take(take));
        if (gate.refusal) batcher.clear();
        if (rows.length === 0) return;
        r.run(rows, o.site, o.decode, (error) => {
          if (closed) return settleOwned();
          if (error) return fail(error);
          emitReady(r);
          report();
          pump();
        });
      };

      const pump = () => {
        const r = runner;
        if (closed || !r) return;
        try {
          const o = resolve(read(), cameraOf);
          while (r.inFlight < concurrency && !closed) {
            const take = batcher.due(scheduler.now(), o, sourceDone);
            if (take === 0) break;
            launch(r, take, o);
          }
          if (closed) return;
          if (gate.refusal) {
            // The rows before the refused one are out once their batches are: then the error.
            cancelTimer();
            if (r.idle) fail(gate.refusal);
            return;
          }
          stats.queue = batcher.length;
          if (batcher.length > 0 && r.inFlight < concurrency) wakeAt(batcher.dueAt(o.maxWaitMs));
          else cancelTimer();
          if (sourceDone && batcher.length === 0 && r.idle) {
            close();
            subscriber.complete();
          }
        } catch (e) {
          fail(e);
        }
      };

      /** Takes a loaded model into use; false (and the stream errored) when it does not fit the rows. */
      const accept = (m: PoseRunner): boolean => {
        try {
          runner = new InferRunner<DecodeOptions>(m, stats, init.featureDim !== undefined ? { featureDim: init.featureDim } : {});
          return true;
        } catch (e) {
          fail(e);
          return false;
        }
      };
      const given = init.model;
      if (given !== undefined && !(given instanceof Promise)) {
        // Already loaded: start at once, so a full batch launches on the row that fills it.
        if (!accept(given)) return;
      } else {
        const loading: Promise<PoseRunner> =
          given ??
          PoseModel.load(resolveInstalled(init.modelPath ?? DEFAULT_MODEL_PATH), init.featureDim !== undefined ? { featureDim: init.featureDim } : {}).then(
            (m) => (owned = m),
          );
        loading.then(
          (m) => {
            if (closed) return settleOwned();
            if (accept(m)) pump();
          },
          (e: unknown) => fail(e),
        );
      }

      const sub = source.subscribe({
        next(row) {
          if (closed || gate.refusal) return;
          try {
            const { maxQueue } = resolve(read(), cameraOf);
            if (batcher.push(row, scheduler.now(), maxQueue) > 0) report();
          } catch (e) {
            fail(e);
            return;
          }
          pump();
        },
        error(e) {
          if (closed) return;
          close();
          subscriber.error(e);
        },
        complete() {
          sourceDone = true;
          pump();
        },
      });

      return () => {
        close();
        cancelTimer();
        batcher.clear();
        sub.unsubscribe();
        settleOwned();
      };
    });
}

const PARAMS: readonly ParamSpec[] = [
  {
    name: 'modelPath',
    type: 'string',
    default: DEFAULT_MODEL_PATH,
    description: 'ONNX model file (the model contract); the service lends its loaded model instead',
  },
  { name: 'batchSize', ...BATCH, description: 'Rows per batch (neural_network.batch_size)' },
  { name: 'maxWaitMs', ...MAX_WAIT, description: 'A partial batch runs once its oldest row has waited this long (neural_network.max_wait_ms)' },
  { name: 'maxQueue', ...QUEUE, description: 'Queued rows beyond this are dropped, oldest first' },
  { name: 'confidenceThreshold', ...CONFIDENCE, description: 'Persons with presence below this are dropped (detection.confidence_threshold)' },
  { name: 'maxPersons', ...MAX_PERSONS, description: 'At most this many persons per frame (detection.max_persons)' },
  { name: 'viewWidth', ...VIEW_WIDTH, description: 'Reference view width in pixels (environment.view.width)' },
  { name: 'viewHeight', ...VIEW_HEIGHT, description: 'Reference view height in pixels (environment.view.height)' },
  { name: 'viewHfovDeg', ...VIEW.viewHfovDeg, description: 'Reference view horizontal field of view, degrees (environment.view.hfov_deg)' },
  { name: 'viewX', ...VIEW.viewX, description: 'Reference camera x on the floor plan, m (environment.view.x)' },
  { name: 'viewY', ...VIEW.viewY, description: 'Reference camera y on the floor plan, m (environment.view.y)' },
  { name: 'viewZ', ...VIEW.viewZ, description: 'Reference camera height, m (environment.view.z)' },
  { name: 'viewYawDeg', ...VIEW.viewYawDeg, description: 'Reference camera yaw, degrees, 0 = into the room (environment.view.yaw_deg)' },
  { name: 'viewPitchDeg', ...VIEW.viewPitchDeg, description: 'Reference camera pitch, degrees, negative = down (environment.view.pitch_deg)' },
  {
    name: 'receiverX',
    ...RECEIVER_X,
    description: "Receiver x on the floor plan, m: v2 skeletons are relative to it (environment.site.radios: the primary receiver's x)",
  },
  { name: 'receiverY', ...RECEIVER_Y, description: "Receiver y on the floor plan, m (environment.site.radios: the primary receiver's y)" },
  {
    name: 'site',
    type: 'string',
    default: '',
    description: 'Site geometry for models with the site input: width,depth,rx_x,rx_y,rx_z,tx_x,tx_y,tx_z in metres (empty = unknown; environment.site)',
  },
  { name: 'includeDensePose', type: 'boolean', default: true, description: 'Attach the DensePose parts to each person' },
];

/** Parsed `site` strings, by string: a live site is re-read per batch, parsed once. */
function siteParser(): (raw: unknown) => SiteGeometry | null {
  let last: unknown;
  let parsed: SiteGeometry | null = null;
  return (raw) => {
    if (raw !== last) {
      parsed = parseSite(String(raw ?? ''));
      last = raw;
    }
    return parsed;
  };
}

/** Options from validated parameter values (every one present: defaults filled in). */
function optionsOf(params: ParamValues, site: (raw: unknown) => SiteGeometry | null, ctx: InferContext): InferOptions {
  const o: InferOptions = {
    modelPath: String(params.modelPath),
    batchSize: Number(params.batchSize),
    maxWaitMs: Number(params.maxWaitMs),
    maxQueue: Number(params.maxQueue),
    confidenceThreshold: Number(params.confidenceThreshold),
    maxPersons: Number(params.maxPersons),
    viewWidth: Number(params.viewWidth),
    viewHeight: Number(params.viewHeight),
    viewHfovDeg: Number(params.viewHfovDeg),
    viewX: Number(params.viewX),
    viewY: Number(params.viewY),
    viewZ: Number(params.viewZ),
    viewYawDeg: Number(params.viewYawDeg),
    viewPitchDeg: Number(params.viewPitchDeg),
    receiverX: Number(params.receiverX),
    receiverY: Number(params.receiverY),
    site: site(params.site),
    includeDensePose: params.includeDensePose !== false,
  };
  if (ctx.model) o.model = ctx.model;
  if (ctx.inferStats) o.stats = ctx.inferStats;
  if (ctx.untrained) o.untrained = ctx.untrained;
  if (ctx.scheduler) o.scheduler = ctx.scheduler;
  return o;
}

/** Registry entry: `infer modelPath=models/csipose-pose.onnx batchSize=32` in a pipeline string. */
export const spec: OperatorSpec = {
  name: 'infer',
  summary: 'Batched pose inference with the ONNX model (worker thread); drops the oldest rows under lag',
  input: 'features',
  output: 'pose',
  params: PARAMS,
  create: (params, ctx: InferContext) => {
    const site = siteParser();
    const live = ctx.live;
    // Live parameters (the service's configuration) are read again for every row and batch.
    return live ? infer(() => optionsOf({ ...params, ...live('infer') }, site, ctx)) : infer(optionsOf(params, site, ctx));
  },
};
