import { Observable, type OperatorFunction } from 'rxjs';
import type { OperatorContext, OperatorSpec, ParamSpec, ParamValues } from '../src/engine/spec.js';
import { configParam } from '../src/config/params.js';
import type { PoseFrame } from '../src/pose/types.js';
import { ModelError, PoseModel, type ModelOutputsV3, type PoseRunner } from '../src/model/runtime.js';
import { RefinerDecoder } from '../src/model/refinerDecode.js';
import { REFINER_FEATURE_DIM, REFINER_STEPS, RefinerInput } from '../src/physics/refinerInput.js';
import { resolveInstalled } from '../src/packageRoot.js';
import { viewCamera, type ViewSettings } from '../src/pose/camera.js';
import { DEFAULT_MAX_CANDIDATES, type FloorMapItem } from './floorMap.js';

/** The refiner `npm run train` ships. */
export const DEFAULT_REFINER_PATH = 'models/csipose-refiner.onnx';
/** Default bound of maps waiting for the model; beyond it the oldest are dropped. */
const DEFAULT_QUEUE = 256;
/** Most candidate rows in one model run. */
const MAX_ROWS = 4096;
const CONFIDENCE = configParam('detection.confidence_threshold');
const MAX_PERSONS = configParam('detection.max_persons');
const VIEW: Record<keyof ViewSettings, ReturnType<typeof configParam>> = {
  width: configParam('environment.view.width'),
  height: configParam('environment.view.height'),
  hfov_deg: configParam('environment.view.hfov_deg'),
  x: configParam('environment.view.x'),
  y: configParam('environment.view.y'),
  z: configParam('environment.view.z'),
  yaw_deg: configParam('environment.view.yaw_deg'),
  pitch_deg: configParam('environment.view.pitch_deg'),
};

/** Options of {@link refine}. */
export interface RefineOptions {
  /** A loaded v3 refiner (the service's), or one being loaded; without it `modelPath` is loaded. */
  model?: PoseRunner | Promise<PoseRunner>;
  /** Default {@link DEFAULT_REFINER_PATH} (relative to the package). */
  modelPath?: string;
  /** `detection.confidence_threshold`. */
  confidenceThreshold?: number;
  /** `detection.max_persons`. */
  maxPersons?: number;
  /** The reference view (environment.view); defaults from the config schema. */
  view?: Partial<ViewSettings>;
  /** Candidates per map the refiner reads (the floorMap stage's maxCandidates); default 6. */
  maxCandidates?: number;
  /** Maps waiting for the model beyond this are dropped, oldest first; default 256. */
  maxQueue?: number;
  includeDensePose?: boolean;
  /** Live threshold and person limit (the service's configuration), read per map; they win over the options. */
  live?: () => { confidenceThreshold?: number; maxPersons?: number };
}

/** One map waiting for the model: its candidates' rows, copied out of the builder. */
interface Job {
  readonly map: FloorMapItem;
  readonly count: number;
  readonly features: Float32Array;
  readonly positions: Float32Array;
  /** Date.now() when the map reached the stage. */
  readonly arrival: number;
}

const num = (v: unknown, fallback: unknown): number => (v === undefined ? (fallback as number) : Number(v));

/**
 * Turns the physics front end's floor maps into pose frames with a v3 refiner (contract v3,
 * docs/model.md): each map's candidates are followed over time (`RefinerInput`: their last 6.4 s
 * of features), the refiner says for each whether it is a person, where their pelvis is, how high,
 * their skeleton, activity and fall, and `RefinerDecoder` turns that into persons with the count's
 * hysteresis. One pose frame per map, in map order.
 *
 * Batching: while the model runs, maps wait; the next run takes every waiting map's candidates as
 * one batch (up to 4096 rows), so batches grow with the load and a lone stream waits for no timer.
 * More than `maxQueue` waiting maps drop the oldest. A map without candidates skips the model.
 *
 * Errors: a model that cannot be loaded or is not a v3 refiner errors the stream with a
 * `MODEL_ERROR` naming why; so does a failing run. State (tracks, counts, queue) lives in the
 * subscription.
 *
 * @param options model, threshold, person limit, view
 * @returns an operator from floor maps to pose frames
 * @throws RangeError for an option out of range (at creation)
 * @example
 * frames$.pipe(floorMap(), refine({ modelPath: 'models/csipose-refiner.onnx' })).subscribe((f) => f.persons.length);
 */
export function refine(options: RefineOptions = {}): OperatorFunction<FloorMapItem, PoseFrame> {
  const threshold = options.confidenceThreshold ?? (CONFIDENCE.default as number);
  const maxPersons = options.maxPersons ?? (MAX_PERSONS.default as number);
  const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
  const maxQueue = options.maxQueue ?? DEFAULT_QUEUE;
  if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`refine: confidenceThreshold must be in [0, 1], got ${threshold}`);
  if (!(Number.isInteger(maxPersons) && maxPersons >= 0)) throw new RangeError(`refine: maxPersons must be an integer >= 0, got ${maxPersons}`);
  if (!(Number.isInteger(maxQueue) && maxQueue >= 1)) throw new RangeError(`refine: maxQueue must be a positive integer, got ${maxQueue}`);
  const view = {} as ViewSettings;
  for (const k of Object.keys(VIEW) as (keyof ViewSettings)[]) {
    view[k] = num(options.view?.[k], VIEW[k].default);
    if (!Number.isFinite(view[k])) throw new RangeError(`refine: view ${k} must be a number, got ${options.view?.[k]}`);
  }
  const camera = viewCamera(view);
  const includeDensePose = options.includeDensePose ?? true;
  const rowSize = REFINER_STEPS * REFINER_FEATURE_DIM;

  return (source) =>
    new Observable<PoseFrame>((subscriber) => {
      const input = new RefinerInput(maxCandidates);
      /** Per environment: its count's decoder and its next frame id. */
      const envs = new Map<string, { decoder: RefinerDecoder; frames: number }>();
      const queue: Job[] = [];
      let model: PoseRunner | undefined;
      let owned: PoseModel | undefined;
      let running = false;
      let sourceDone = false;
      let closed = false;

      const fail = (e: unknown) => {
        if (closed) return;
        closed = true;
        subscriber.error(
          e instanceof ModelError || e instanceof RangeError ? e : new ModelError(`refine: ${e instanceof Error ? e.message : String(e)}`, { cause: e }),
        );
      };

      /** One pose frame for a map: rows start .. start + job.count - 1 of `out` (a map without candidates has none). */
      const emit = (job: Job, out: ModelOutputsV3, start: number) => {
        const env = job.map.environmentId;
        let state = envs.get(env);
        if (!state) envs.set(env, (state = { decoder: new RefinerDecoder(), frames: 0 }));
        const now = options.live?.();
        const decode = { confidenceThreshold: now?.confidenceThreshold ?? threshold, maxPersons: now?.maxPersons ?? maxPersons, camera, includeDensePose };
        const reading = state.decoder.decode(out, start, job.count, job.positions, decode);
        subscriber.next({
          frameId: state.frames++,
          time: job.map.time,
          sourceId: job.map.sourceId,
          environmentId: env,
          persons: reading.persons,
          processingMs: Math.max(0, Date.now() - job.arrival),
          modelVersion: model?.metadata.model_version || 'unknown',
          csiQuality: job.map.quality,
          fallProbability: reading.fallProbability,
          ...(model?.metadata.fall_trigger !== undefined ? { fallTrigger: model.metadata.fall_trigger } : {}),
        });
      };

      const pump = () => {
        if (closed || running || !model) return;
        if (queue.length === 0) {
          if (sourceDone) subscriber.complete();
          return;
        }
        // Maps without candidates go straight out, in order, as long as they head the queue.
        while (queue.length > 0 && queue[0]!.count === 0) emit(queue.shift()!, EMPTY, 0);
        if (queue.length === 0) return pump();
        let rows = 0;
        let take = 0;
        while (take < queue.length && rows + queue[take]!.count <= MAX_ROWS && queue[take]!.count > 0) rows += queue[take++]!.count;
        const jobs = queue.splice(0, take);
        const batch = new Float32Array(rows * rowSize);
        let at = 0;
        for (const j of jobs) {
          batch.set(j.features, at * rowSize);
          at += j.count;
        }
        running = true;
        model.run(batch, rows, { transfer: true }).then(
          (out) => {
            running = false;
            if (closed) return;
            if (out.contract !== 3) return fail(new ModelError('refine: the model is not a v3 refiner'));
            let start = 0;
            for (const j of jobs) {
              emit(j, out, start);
              start += j.count;
            }
            pump();
          },
          (e: unknown) => {
            running = false;
            fail(e);
          },
        );
      };

      const accept = (m: PoseRunner) => {
        if (m.contract !== 3) {
          fail(
            new ModelError(
              `refine: the model is a ${m.metadata.csipose_contract || `v${m.contract}`} model of window features; the refine stage needs a csipose-pose-v3 refiner`,
            ),
          );
          return;
        }
        model = m;
        pump();
      };
      const given = options.model;
      if (given !== undefined && !(given instanceof Promise)) accept(given);
      else {
        (given ?? PoseModel.load(resolveInstalled(options.modelPath ?? DEFAULT_REFINER_PATH)).then((m) => (owned = m))).then((m) => {
          // Unsubscribed while it loaded: a model of our own is released now, nobody else will.
          if (closed) owned?.release().catch(() => undefined);
          else accept(m);
        }, fail);
      }

      const sub = source.subscribe({
        next(map) {
          if (closed) return;
          try {
            const b = input.push(map);
            queue.push({ map, count: b.count, features: b.features.slice(), positions: b.positions.slice(), arrival: Date.now() });
            if (queue.length > maxQueue) queue.splice(0, queue.length - maxQueue);
            pump();
          } catch (e) {
            fail(e);
          }
        },
        error: (e) => {
          // The source's own error goes on as it is; only the model's become MODEL_ERROR.
          if (closed) return;
          closed = true;
          subscriber.error(e);
        },
        complete: () => {
          sourceDone = true;
          if (!running && model) pump();
        },
      });
      return () => {
        closed = true;
        sub.unsubscribe();
        owned?.release().catch(() => undefined);
      };
    });
}

/** Outputs of no rows: what a map without candidates is decoded from. */
const EMPTY: ModelOutputsV3 = {
  contract: 3,
  n: 0,
  maxPersons: 0,
  person: new Float32Array(0),
  offset: new Float32Array(0),
  height: new Float32Array(0),
  heading: new Float32Array(0),
  activity: new Float32Array(0),
  fall: new Float32Array(0),
  skeleton: new Float32Array(0),
};

/** What the service lends the refine stage. */
export interface RefineContext extends OperatorContext {
  /** The service's loaded refiner; without it the stage loads `modelPath`. */
  readonly refiner?: PoseRunner;
}

const PARAMS: readonly ParamSpec[] = [
  { name: 'modelPath', type: 'string', default: DEFAULT_REFINER_PATH, description: 'ONNX refiner (contract v3); the service lends its loaded model instead' },
  {
    name: 'confidenceThreshold',
    ...CONFIDENCE,
    description: 'A candidate is a person when its probability reaches this, with a band of 0.2 (detection.confidence_threshold)',
  },
  { name: 'maxPersons', ...MAX_PERSONS, description: 'At most this many persons per frame (detection.max_persons)' },
  {
    name: 'maxCandidates',
    type: 'int',
    default: DEFAULT_MAX_CANDIDATES,
    min: 1,
    max: 64,
    description: "Candidates per map read (the floorMap stage's maxCandidates)",
  },
  {
    name: 'maxQueue',
    type: 'int',
    default: DEFAULT_QUEUE,
    min: 1,
    max: 1_000_000,
    description: 'Maps waiting for the model beyond this are dropped, oldest first',
  },
  { name: 'includeDensePose', type: 'boolean', default: true, description: 'Attach the DensePose parts to each person' },
  ...(Object.entries(VIEW) as [keyof ViewSettings, ReturnType<typeof configParam>][]).map(([k, spec]) => ({
    ...spec,
    name: viewParam(k),
    description: `Reference view ${k} (environment.view.${k})`,
  })),
];

/** The parameter name of a view setting: viewWidth, viewHfovDeg, ... (as the infer stage's). */
function viewParam(k: keyof ViewSettings): string {
  return 'view' + k.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

function optionsOf(params: ParamValues, ctx: RefineContext): RefineOptions {
  const live = ctx.live;
  return {
    ...(live
      ? {
          live: () => {
            const v = live('refine');
            return v
              ? { confidenceThreshold: Number(v.confidenceThreshold ?? params.confidenceThreshold), maxPersons: Number(v.maxPersons ?? params.maxPersons) }
              : {};
          },
        }
      : {}),
    modelPath: String(params.modelPath),
    confidenceThreshold: Number(params.confidenceThreshold),
    maxPersons: Number(params.maxPersons),
    maxCandidates: Number(params.maxCandidates),
    maxQueue: Number(params.maxQueue),
    includeDensePose: params.includeDensePose !== false,
    view: Object.fromEntries((Object.keys(VIEW) as (keyof ViewSettings)[]).map((k) => [k, Number(params[viewParam(k)])])) as Partial<ViewSettings>,
    ...(ctx.refiner ? { model: ctx.refiner } : {}),
  };
}

export const spec: OperatorSpec = {
  name: 'refine',
  summary: "Runs the v3 refiner on each floor map's candidates (their last 6.4 s): persons, skeletons, activity, falls",
  input: 'floormap',
  output: 'pose',
  params: PARAMS,
  create: (params, ctx: RefineContext) => {
    const view = ctx.live?.('refine');
    // The view is read once, at creation: a camera is built from it (a restart applies a new view).
    return refine(optionsOf(view ? { ...params, ...view } : params, ctx));
  },
};
