import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { OperatorContext, OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam, primaryReceiverParam } from '../src/config/params.js';
import type { PoseFrame } from '../src/pose/types.js';
import { countFromProbabilities, decodeOutputs, ModelError, PoseModel, type DecodeOptions, type ModelOutputs, type PoseRunner } from '../src/model/runtime.js';
import { CONTRACT_V3, layoutText, parseSite, siteProblem, untrainedPart, type CsiLayout, type SiteGeometry, type TrainedLayouts } from '../src/model/contract.js';
import { HISTORY_WIDTH } from '../src/model/history.js';
import { resolveInstalled } from '../src/packageRoot.js';
import { viewCamera, type Camera, type ViewSettings } from '../src/pose/camera.js';

/** One feature row for the model: the features of one CSI window and where it came from. */
export interface FeatureRow {
  /** feature_dim values (the model's input row). */
  features: Float32Array;
  /** HISTORY_WIDTH values: the stream's memory for v2 models (`src/model/history.ts`); absent = none. */
  history?: Float32Array;
  /** Epoch ms of the last CSI frame of the window; becomes `PoseFrame.time`. */
  frameTime: number;
  /** Wall-clock epoch ms (`Date.now()`) when that frame arrived; 0 when unknown. */
  arrival: number;
  sourceId: string;
  environmentId: string;
  /** 0..1 CSI quality behind the window. */
  csiQuality: number;
  /** The window's CSI layout (`features` sets it): checked against the layouts the model was trained on; absent = not checked. */
  layout?: CsiLayout;
}

/** What `infer` does with a row whose layout its model was not trained on. */
export type UntrainedPolicy =
  /** End the stream with a ModelError naming the source and the layout (default). */
  | 'refuse'
  /** Drop the row (no pose frame from that link) and list the link in `InferStats.untrained`. */
  | 'drop';

/** A source whose windows were dropped because the model was not trained on their layout. */
export interface UntrainedLink {
  sourceId: string;
  environmentId: string;
  /** The layout in words (`layoutText`), e.g. '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz'. */
  layout: string;
  /** What of it the model was not trained on, and what it was trained on (`untrainedPart`). */
  reason: string;
  /** Windows dropped so far. */
  windows: number;
  /** Wall-clock epoch ms of the last one. */
  lastAt: number;
}

/** Running figures of one `infer` operator (the object is updated in place). */
export interface InferStats {
  /** Batches run to completion. */
  batches: number;
  /** Rows inferred. */
  rows: number;
  /** Queued rows dropped, oldest first, because the queue passed `maxQueue`. */
  dropped: number;
  /** Wall-clock ms of the last batch, from launch to result. */
  lastBatchMs: number;
  /** Mean wall-clock ms per batch. */
  avgBatchMs: number;
  /** Rows waiting for a batch now. */
  queue: number;
  /**
   * With `untrained: 'drop'`: the sources whose latest window had a layout the model was not trained
   * on (a source leaves the list when a window of a trained layout comes from it). Replaced, not
   * mutated, when a source joins or leaves; set at subscription.
   */
  untrained?: readonly UntrainedLink[];
}

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
  /** Rows per batch, 1..4096; default neural_network.batch_size's. Live. */
  batchSize?: number;
  /** A partial batch runs once its oldest row has waited this long (scheduler ms); default neural_network.max_wait_ms's. Live. */
  maxWaitMs?: number;
  /** Queued rows beyond this are dropped, oldest first; default 256. Live. */
  maxQueue?: number;
  /** Batches in flight at once; default 1. Read at subscription. */
  concurrency?: number;
  /** Persons with presence below this are dropped; default detection.confidence_threshold's. Live (per batch). */
  confidenceThreshold?: number;
  /** At most this many persons per frame; default detection.max_persons'. Live (per batch). */
  maxPersons?: number;
  /** Reference view in pixels; default environment.view's. Live (per batch). */
  viewWidth?: number;
  viewHeight?: number;
  /**
   * Where the reference camera is and how it looks (environment.view's other fields; defaults
   * theirs): v2 models' skeletons are projected through it. Live (per batch).
   */
  viewHfovDeg?: number;
  viewX?: number;
  viewY?: number;
  viewZ?: number;
  viewYawDeg?: number;
  viewPitchDeg?: number;
  /**
   * Where the receiver the model reads is on the floor plan (the primary receiver of
   * environment.site.radios, used whether or not the site is `known`): v2 models' skeletons are
   * relative to it. Live (per batch).
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

export const DEFAULT_MODEL_PATH = 'models/csipose-pose.onnx';
/**
 * v2 models: the weight of the newest window in the per-source moving average of the `count`
 * distribution that decides how many persons a frame has (1 = no smoothing). A window comes every
 * 80 ms at the default hop, so 0.1 averages over about 0.8 s. Chosen on VALIDATION scenarios
 * (`npm run bench:accuracy -- --split val`): against none (1), exact count 0.503 -> 0.512 and
 * identity switches 615 -> 549; 0.2 and 0.3 were in between.
 */
export const COUNT_SMOOTHING = 0.1;
/**
 * v2 models: the count rule's threshold moves by this much away from the count shown, so that an
 * average hovering at the threshold does not flip the count from one frame to the next. The count
 * goes up to k when P(count >= k) reaches `confidence_threshold` + this, and down from k when
 * P(count >= k) falls below `confidence_threshold` - this; a person kept this way can have a
 * confidence down to `confidence_threshold` - this. 0 turns it off. The band is narrowed to half the
 * distance from the threshold to 0 or 1 when the threshold is closer to either. Chosen on
 * VALIDATION (`npm run bench:accuracy -- --split val`, nobody enters or leaves in those scenes, so
 * every change of the count is an error): with the tracker's second round (`reclaimGate` 10), 0.2
 * took the count from 24.2 changes per minute to 4.9 and exact count 0.512 -> 0.555; 0.1 left more
 * changes, 0.25 fewer (4.0 per minute) at a lower exact count (0.534). A filtered hidden count (forward algorithm, sticky switches, tempered model evidence)
 * in place of the moving average did not beat it (16-19 changes per minute without the second
 * round, against 15.4 for this rule).
 */
export const COUNT_HYSTERESIS = 0.2;
/**
 * The count to show from a (moving-average) count distribution, with the hysteresis of
 * COUNT_HYSTERESIS around the count rule (`countFromProbabilities`).
 * @param p P(count = k), k = 0..P
 * @param P person slots
 * @param threshold `confidence_threshold`
 * @param shown the count shown so far; null at the start of a stream (the plain rule then)
 * @returns the count to show, 0..P
 * @example
 * countWithHysteresis(Float64Array.of(0, 0.45, 0.55), 2, 0.5, 1) // 1: P(count >= 2) has not reached 0.7
 */
export function countWithHysteresis(p: Float64Array, P: number, threshold: number, shown: number | null): number {
  if (shown === null) return countFromProbabilities(p, 0, P, threshold);
  const h = Math.min(COUNT_HYSTERESIS, threshold / 2, (1 - threshold) / 2);
  const up = countFromProbabilities(p, 0, P, threshold + h);
  if (up > shown) return up;
  const down = countFromProbabilities(p, 0, P, threshold - h);
  return down < shown ? down : shown;
}

/** A source whose next window is this much later (or earlier) starts its count average afresh, ms. */
const COUNT_RESET_MS = 2000;
/** Sources whose count average is kept (the oldest is forgotten beyond it); also the untrained links listed. */
const COUNT_STREAMS = 64;
const MAX_BATCH = 4096;

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

/** A camera per view, remembering the last: a live view is turned into a camera once per change. One per subscription. */
function cameraCache(): (v: ViewSettings) => Camera {
  let last: { key: string; camera: Camera } | undefined;
  return (v) => {
    const key = `${v.width},${v.height},${v.hfov_deg},${v.x},${v.y},${v.z},${v.yaw_deg},${v.pitch_deg}`;
    if (last?.key !== key) last = { key, camera: viewCamera(v) };
    return last.camera;
  };
}
const DEFAULT_QUEUE = 256;

/** What the service lends the infer stage of a pipeline it composes (see `pipelines/build.ts`). */
export interface InferContext extends OperatorContext {
  /** The loaded model (the service owns it); without it the stage loads `modelPath` itself. */
  readonly model?: PoseRunner;
  /** Where the stage keeps its figures. */
  readonly inferStats?: InferStats;
  /** What the stage does with rows of an untrained layout (the service drops them; default refuse). */
  readonly untrained?: UntrainedPolicy;
}

interface Resolved {
  batchSize: number;
  maxWaitMs: number;
  maxQueue: number;
  decode: DecodeOptions;
  site: SiteGeometry | null;
}

/** Reads and checks the live options; throws RangeError naming a bad one. */
function resolve(o: InferOptions, cameraOf: (v: ViewSettings) => Camera = viewCamera): Resolved {
  const batchSize = o.batchSize ?? (BATCH.default as number);
  const maxWaitMs = o.maxWaitMs ?? (MAX_WAIT.default as number);
  const maxQueue = o.maxQueue ?? DEFAULT_QUEUE;
  const confidenceThreshold = o.confidenceThreshold ?? (CONFIDENCE.default as number);
  const maxPersons = o.maxPersons ?? (MAX_PERSONS.default as number);
  const width = o.viewWidth ?? (VIEW_WIDTH.default as number);
  const height = o.viewHeight ?? (VIEW_HEIGHT.default as number);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH)
    throw new RangeError(`infer: batchSize must be an integer in [1, ${MAX_BATCH}], got ${batchSize}`);
  if (!(maxWaitMs >= 0 && Number.isFinite(maxWaitMs))) throw new RangeError(`infer: maxWaitMs must be >= 0, got ${maxWaitMs}`);
  if (!Number.isInteger(maxQueue) || maxQueue < 1) throw new RangeError(`infer: maxQueue must be a positive integer, got ${maxQueue}`);
  if (!(confidenceThreshold >= 0 && confidenceThreshold <= 1))
    throw new RangeError(`infer: confidenceThreshold must be in [0, 1], got ${confidenceThreshold}`);
  if (!Number.isInteger(maxPersons) || maxPersons < 0) throw new RangeError(`infer: maxPersons must be an integer >= 0, got ${maxPersons}`);
  if (!(width > 0 && height > 0)) throw new RangeError(`infer: view must be positive, got ${width}x${height}`);
  const site = o.site ?? null;
  const problem = site ? siteProblem(site) : null;
  if (problem) throw new RangeError(`infer: site: ${problem}`);
  const num = (v: number | undefined, spec: { default?: unknown }) => v ?? (spec.default as number);
  const view: ViewSettings = {
    width,
    height,
    hfov_deg: num(o.viewHfovDeg, VIEW.viewHfovDeg),
    x: num(o.viewX, VIEW.viewX),
    y: num(o.viewY, VIEW.viewY),
    z: num(o.viewZ, VIEW.viewZ),
    yaw_deg: num(o.viewYawDeg, VIEW.viewYawDeg),
    pitch_deg: num(o.viewPitchDeg, VIEW.viewPitchDeg),
  };
  for (const [k, v] of Object.entries(view)) if (!Number.isFinite(v)) throw new RangeError(`infer: view ${k} must be a number, got ${v}`);
  const receiver = { x: num(o.receiverX, RECEIVER_X), y: num(o.receiverY, RECEIVER_Y) };
  if (!(Number.isFinite(receiver.x) && Number.isFinite(receiver.y))) throw new RangeError(`infer: receiver must be finite, got ${receiver.x}, ${receiver.y}`);
  return {
    site,
    batchSize,
    maxWaitMs,
    maxQueue,
    decode: { view: { width, height }, confidenceThreshold, maxPersons, includeDensePose: o.includeDensePose ?? true, camera: cameraOf(view), receiver },
  };
}

/** FIFO of rows with their enqueue times: a ring that grows, so taking and dropping are O(1). */
class RowQueue {
  private rows: Array<FeatureRow | undefined> = new Array(16);
  private times = new Float64Array(16);
  private head = 0;
  length = 0;

  push(row: FeatureRow, time: number): void {
    if (this.length === this.rows.length) this.grow();
    const i = (this.head + this.length) & (this.rows.length - 1);
    this.rows[i] = row;
    this.times[i] = time;
    this.length++;
  }

  /** Enqueue time of the oldest row. */
  headTime(): number {
    return this.times[this.head];
  }

  shift(): FeatureRow {
    const row = this.rows[this.head] as FeatureRow;
    this.rows[this.head] = undefined;
    this.head = (this.head + 1) & (this.rows.length - 1);
    this.length--;
    return row;
  }

  drop(n: number): void {
    for (let i = 0; i < n; i++) this.shift();
  }

  clear(): void {
    this.drop(this.length);
  }

  private grow(): void {
    const cap = this.rows.length;
    const rows: Array<FeatureRow | undefined> = new Array(cap * 2);
    const times = new Float64Array(cap * 2);
    for (let i = 0; i < this.length; i++) {
      const j = (this.head + i) & (cap - 1);
      rows[i] = this.rows[j];
      times[i] = this.times[j];
    }
    this.rows = rows;
    this.times = times;
    this.head = 0;
  }
}

const asModelError = (e: unknown): Error =>
  e instanceof ModelError || e instanceof RangeError
    ? e
    : new ModelError(`inference failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });

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
      const cameraOf = cameraCache();
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
      const policy: UntrainedPolicy = init.untrained ?? 'refuse';
      if (policy !== 'refuse' && policy !== 'drop') {
        subscriber.error(new RangeError(`infer: untrained must be 'refuse' or 'drop', got ${String(policy)}`));
        return;
      }
      /** What of each layout (one object per shape, from `features`) the model was not trained on; null = trained. */
      const verdicts = new WeakMap<CsiLayout, string | null>();
      const untrained = new Map<string, UntrainedLink>();
      /** The refusal of a row's layout: the rows before it are still run and emitted, then the stream ends with it. */
      let refusal: ModelError | undefined;
      const listUntrained = () => {
        stats.untrained = [...untrained.values()];
      };
      /** Whether the row's layout is one the model was trained on; else refuses (sets `refusal`) or drops it. */
      const admit = (m: PoseRunner, trained: TrainedLayouts, row: FeatureRow, layout: CsiLayout): boolean => {
        let why = verdicts.get(layout);
        if (why === undefined) {
          why = untrainedPart(trained, layout);
          verdicts.set(layout, why);
        }
        if (why === null) {
          if (untrained.size > 0 && untrained.delete(row.sourceId)) listUntrained();
          return true;
        }
        const text = layoutText(layout);
        if (policy === 'refuse') {
          refusal = new ModelError(
            `the model ${m.metadata.model_version || '(no version)'} was not trained on the CSI layout of ${row.sourceId}: ${text}; not trained on ${why}`,
          );
          return false;
        }
        let link = untrained.get(row.sourceId);
        if (!link || link.layout !== text) {
          if (!link && untrained.size >= COUNT_STREAMS) untrained.delete(untrained.keys().next().value!);
          link = { sourceId: row.sourceId, environmentId: row.environmentId, layout: text, reason: why, windows: 0, lastAt: 0 };
          untrained.set(row.sourceId, link);
          listUntrained();
        }
        link.windows++;
        link.lastAt = Date.now();
        return false;
      };

      const queue = new RowQueue();
      let model: PoseRunner | undefined;
      let closed = false;
      let sourceDone = false;
      let inFlight = 0;
      let totalMs = 0;
      /** Batches launched so far; each batch's results are emitted in launch order. */
      let launched = 0;
      let nextToEmit = 0;
      const finished = new Map<number, { rows: FeatureRow[]; out: ModelOutputs; decode: DecodeOptions }>();
      const frameIds = new Map<string, number>();
      const counts = new Map<string, { time: number; p: Float64Array; shown: number }>();
      /**
       * Replaces row r's count distribution by its source's moving average and returns the count
       * to show, with hysteresis (v2); undefined for v1 rows (their decoder applies its own rule).
       */
      const smoothCount = (out: ModelOutputs, r: number, row: FeatureRow, threshold: number): number | undefined => {
        if (out.contract !== 2) return undefined;
        const P = out.maxPersons;
        const K = P + 1;
        let st = counts.get(row.sourceId);
        const fresh = !st || st.p.length !== K || Math.abs(row.frameTime - st.time) > COUNT_RESET_MS || row.frameTime < st.time;
        if (!st || st.p.length !== K) {
          if (counts.size >= COUNT_STREAMS) counts.delete(counts.keys().next().value!);
          st = { time: row.frameTime, p: new Float64Array(K), shown: 0 };
          counts.set(row.sourceId, st);
        }
        const c = out.count;
        const alpha = Math.min(1, COUNT_SMOOTHING);
        for (let k = 0; k < K; k++) {
          const v = c[r * K + k]!;
          st.p[k] = fresh ? v : st.p[k]! + alpha * (v - st.p[k]!);
          c[r * K + k] = st.p[k]!;
        }
        st.time = row.frameTime;
        st.shown = countWithHysteresis(st.p, P, threshold, fresh ? null : st.shown);
        return st.shown;
      };
      let timer: Subscription | undefined;
      let timerDue = Infinity;

      const fail = (e: unknown) => {
        if (closed) return;
        closed = true;
        subscriber.error(asModelError(e));
      };

      const report = () => {
        stats.queue = queue.length;
        onStats?.(stats);
      };

      const cancelTimer = () => {
        timer?.unsubscribe();
        timer = undefined;
        timerDue = Infinity;
      };

      const emitReady = () => {
        let ready = finished.get(nextToEmit);
        while (ready && !closed) {
          finished.delete(nextToEmit++);
          const { rows, out, decode } = ready;
          const now = Date.now();
          const version = model?.metadata.model_version || 'unknown';
          for (let r = 0; r < rows.length && !closed; r++) {
            const row = rows[r];
            const id = frameIds.get(row.environmentId) ?? 0;
            frameIds.set(row.environmentId, id + 1);
            const count = smoothCount(out, r, row, decode.confidenceThreshold);
            subscriber.next({
              frameId: id,
              time: row.frameTime,
              sourceId: row.sourceId,
              environmentId: row.environmentId,
              persons: decodeOutputs(out, r, count === undefined ? decode : { ...decode, count }),
              processingMs: row.arrival > 0 ? Math.max(0, now - row.arrival) : 0,
              modelVersion: version,
              csiQuality: row.csiQuality,
              ...(out.contract === 2 ? { fallProbability: out.fall[r]! } : {}),
            });
          }
          ready = finished.get(nextToEmit);
        }
      };

      /** Takes `take` rows off the queue and runs those the model can read as one batch. */
      const launch = (m: PoseRunner, take: number, decode: DecodeOptions, site: SiteGeometry | null) => {
        const F = m.featureDim;
        const trained = m.trainedLayouts;
        const rows: FeatureRow[] = [];
        for (let i = 0; i < take; i++) {
          const row = queue.shift();
          if (trained && row.layout && !admit(m, trained, row, row.layout)) {
            if (!refusal) continue;
            queue.clear();
            break;
          }
          const len = row.features?.length;
          if (len !== F) throw new ModelError(`feature row has ${len ?? 'no'} values, the model expects feature_dim ${F}`);
          rows.push(row);
        }
        const k = rows.length;
        if (k === 0) return;
        const batch = new Float32Array(k * F);
        const history = m.contract === 2 ? new Float32Array(k * HISTORY_WIDTH) : undefined;
        for (let i = 0; i < k; i++) {
          const row = rows[i]!;
          batch.set(row.features, i * F);
          if (history && row.history?.length === HISTORY_WIDTH) history.set(row.history, i * HISTORY_WIDTH);
        }
        const seq = launched++;
        inFlight++;
        const t0 = performance.now();
        let pending: Promise<ModelOutputs>;
        try {
          pending = m.run(batch, k, history ? { transfer: true, site, history } : { transfer: true, site });
        } catch (e) {
          inFlight--;
          throw e;
        }
        pending.then(
          (out) => {
            inFlight--;
            if (closed) return settleOwned();
            const ms = performance.now() - t0;
            totalMs += ms;
            stats.batches++;
            stats.rows += k;
            stats.lastBatchMs = ms;
            stats.avgBatchMs = totalMs / stats.batches;
            finished.set(seq, { rows, out, decode });
            emitReady();
            report();
            pump();
          },
          (e: unknown) => {
            inFlight--;
            if (closed) return settleOwned();
            fail(e);
          },
        );
      };

      const pump = () => {
        if (closed || !model) return;
        try {
          const o = resolve(read(), cameraOf);
          while (inFlight < concurrency && queue.length > 0 && !closed) {
            const due = queue.headTime() + o.maxWaitMs;
            if (queue.length >= o.batchSize || sourceDone || due <= scheduler.now())
              launch(model, Math.min(queue.length, o.batchSize), o.decode, o.site);
            else break;
          }
          if (closed) return;
          if (refusal) {
            // The rows before the refused one are out once their batches are: then the error.
            cancelTimer();
            if (inFlight === 0 && finished.size === 0) fail(refusal);
            return;
          }
          stats.queue = queue.length;
          if (queue.length > 0 && inFlight < concurrency) {
            const due = queue.headTime() + o.maxWaitMs;
            if (due !== timerDue) {
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
            }
          } else cancelTimer();
          if (sourceDone && queue.length === 0 && inFlight === 0 && finished.size === 0) {
            closed = true;
            subscriber.complete();
          }
        } catch (e) {
          fail(e);
        }
      };

      let modelToRelease: PoseModel | undefined;
      /** Releases a self-loaded model once nothing runs on it (after teardown). */
      const settleOwned = () => {
        if (inFlight === 0 && modelToRelease) {
          const m = modelToRelease;
          modelToRelease = undefined;
          m.release().catch(() => undefined);
        }
      };

      /** Takes a loaded model into use; false (and the stream errored) when it does not fit the rows. */
      const accept = (m: PoseRunner): boolean => {
        if (m.contract === 3) {
          const name = m.metadata.model_version ? `model ${m.metadata.model_version}` : 'the model';
          fail(new ModelError(`${name} is a ${CONTRACT_V3} refiner of the physics front end's candidates: it runs in the refine stage, not on window features`));
          return false;
        }
        if (init.featureDim !== undefined && m.featureDim !== init.featureDim) {
          fail(new ModelError(`model expects feature_dim ${m.featureDim}, the features have ${init.featureDim}`));
          return false;
        }
        model = m;
        return true;
      };
      const given = init.model;
      if (given !== undefined && !(given instanceof Promise)) {
        // Already loaded: start at once, so a full batch launches on the row that fills it.
        if (!accept(given)) return;
      } else {
        const loading: Promise<PoseRunner> =
          given ??
          PoseModel.load(resolveInstalled(init.modelPath ?? DEFAULT_MODEL_PATH), init.featureDim !== undefined ? { featureDim: init.featureDim } : {}).then(
            (m) => {
              modelToRelease = m;
              return m;
            },
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
          if (closed || refusal) return;
          try {
            queue.push(row, scheduler.now());
            const o = resolve(read(), cameraOf);
            if (queue.length > o.maxQueue) {
              const n = queue.length - o.maxQueue;
              queue.drop(n);
              stats.dropped += n;
              report();
            }
          } catch (e) {
            fail(e);
            return;
          }
          pump();
        },
        error(e) {
          if (closed) return;
          closed = true;
          subscriber.error(e);
        },
        complete() {
          sourceDone = true;
          pump();
        },
      });

      return () => {
        closed = true;
        cancelTimer();
        queue.clear();
        finished.clear();
        sub.unsubscribe();
        settleOwned();
      };
    });
}

const PARAMS: readonly ParamSpec[] = [
  { name: 'modelPath', type: 'string', default: DEFAULT_MODEL_PATH, description: 'ONNX model file (the model contract); the service lends its loaded model instead' },
  { name: 'batchSize', ...BATCH, description: 'Rows per batch (neural_network.batch_size)' },
  { name: 'maxWaitMs', ...MAX_WAIT, description: 'A partial batch runs once its oldest row has waited this long (neural_network.max_wait_ms)' },
  { name: 'maxQueue', type: 'int', default: DEFAULT_QUEUE, min: 1, max: 1_000_000, description: 'Queued rows beyond this are dropped, oldest first' },
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
  { name: 'receiverX', ...RECEIVER_X, description: "Receiver x on the floor plan, m: v2 skeletons are relative to it (environment.site.radios: the primary receiver's x)" },
  { name: 'receiverY', ...RECEIVER_Y, description: "Receiver y on the floor plan, m (environment.site.radios: the primary receiver's y)" },
  {
    name: 'site',
    type: 'string',
    default: '',
    description:
      'Site geometry for models with the site input: width,depth,rx_x,rx_y,rx_z,tx_x,tx_y,tx_z in metres (empty = unknown; environment.site)',
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
