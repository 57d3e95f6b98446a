/**
 * Loading and running contract pose models (see `contract.ts`) with onnxruntime-node on the CPU.
 *
 * onnxruntime-node's `session.run` returns a promise but computes on the calling thread (it only
 * defers the work with `setImmediate`), so a session in the main thread blocks the event loop for
 * the whole inference. `PoseModel` therefore keeps its session in a worker thread when the process
 * has two cores or more: the batch goes over by transfer (no copy), the outputs come back the same
 * way, and the event loop stays free while the model computes. On one core it keeps the session in
 * the calling thread (`threadFor`), and `thread: 'inline'` or `'worker'` forces either (tools and
 * comparison benchmarks).
 */
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import onnxProto from 'onnx-proto';
import type { InferenceSession } from 'onnxruntime-node';
import {
  CONTRACT_V2,
  CONTRACT_V3,
  INPUT_CANDIDATES,
  MODEL_V3_OUTPUTS,
  MODEL_V3_SHAPES,
  type ModelV3Output,
  CONTRACT_VERSION,
  INPUT_FEATURES,
  INPUT_HISTORY,
  INPUT_SITE,
  MODEL_ACTIVITIES,
  MODEL_OUTPUTS,
  MODEL_V2_OUTPUTS,
  OUTPUT_ACTIVITY,
  OUTPUT_COUNT,
  OUTPUT_FALL,
  OUTPUT_KEYPOINTS3D,
  OUTPUT_BOXES,
  OUTPUT_DENSEPOSE,
  OUTPUT_FLOOR,
  OUTPUT_KEYPOINTS,
  OUTPUT_PRESENCE,
  parseLayouts,
  RECIPE_LAYOUTS,
  SITE_DIM,
  siteVector,
  type ModelMetadata,
  type SiteGeometry,
  type TrainedLayouts,
  ROOM_CALIBRATION_KEY,
} from './contract.js';
import { N_DENSE_PARTS, N_KEYPOINTS, type PersonPose } from '../pose/types.js';
import type { Camera } from '../pose/camera.js';
import { densePoseParts } from '../pose/densepose.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES } from './history.js';
import { REFINER_FEATURE_DIM, REFINER_FEATURES, REFINER_STEPS, REFINER_STRIDE } from '../physics/refinerInput.js';
import { parseRoomCalibration, type RoomCalibration } from '../physics/calibration.js';
import { packageRoot } from '../packageRoot.js';
import { describe, type FromWorker, type RawOutput, type ToWorker, type ValueInfo, type WireFeed } from './sessionProtocol.js';

const { onnx } = onnxProto;

/**
 * A model that cannot be loaded, does not meet the contract, or failed to run. The service maps it
 * to the `error` state and HTTP 503 `MODEL_ERROR`.
 */
export class ModelError extends Error {
  readonly code = 'MODEL_ERROR';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelError';
  }
}

/** The outputs of one `run` of a v1 model: row-major float32 arrays, shapes as in the contract. */
export interface ModelOutputsV1 {
  contract: 1;
  /** Rows in the batch. */
  n: number;
  /** P, the model's person slots. */
  maxPersons: number;
  /** [n, P] */
  presence: Float32Array;
  /** [n, P, 17, 3] */
  keypoints: Float32Array;
  /** [n, P, 4] */
  boxes: Float32Array;
  /** [n, P, 2] */
  floor: Float32Array;
  /** [n, P, 24, 3] */
  densepose: Float32Array;
}

/** The outputs of one `run` of a v2 model (contract CONTRACT_V2). */
export interface ModelOutputsV2 {
  contract: 2;
  n: number;
  maxPersons: number;
  /** [n, P + 1]: probability of 0..P people */
  count: Float32Array;
  /** [n, P] */
  presence: Float32Array;
  /** [n, P, 17, 3]: metres, x and y relative to the receiver, z above the floor */
  keypoints3d: Float32Array;
  /** [n, P, 5]: MODEL_ACTIVITIES probabilities */
  activity: Float32Array;
  /** [n, 1]: a fall began in the last fall_window_s */
  fall: Float32Array;
}

/** The outputs of one `run` of a v3 refiner (contract CONTRACT_V3): one row per candidate. */
export interface ModelOutputsV3 extends Record<ModelV3Output, Float32Array> {
  contract: 3;
  /** Candidates in the batch. */
  n: number;
  maxPersons: number;
}

export type ModelOutputs = ModelOutputsV1 | ModelOutputsV2 | ModelOutputsV3;

/** Options of one `run`. */
export interface RunOptions {
  /**
   * Hand `features` (and `history`) over to the model instead of copying them: with the worker
   * thread their buffers are transferred (and detached here), so the caller must not touch the
   * arrays again. Only for arrays that span their whole buffer; others are copied anyway.
   */
  transfer?: boolean;
  /**
   * The installation's geometry for models with the `site` input (`siteVector` gives its row,
   * repeated for every window); null or absent = unknown site. Models without the input ignore it.
   */
  site?: SiteGeometry | null;
  /**
   * v2 models: n x HISTORY_WIDTH values, each row's `history` input (`HistoryRing.historyFor`);
   * absent = all zeros (no memory). Ignored by v1 models.
   */
  history?: Float32Array;
}

/** What the `infer` operator needs of a model; `PoseModel` is the implementation. */
export interface PoseRunner {
  readonly metadata: ModelMetadata;
  readonly featureDim: number;
  readonly maxPersons: number;
  /** The CSI layouts the model reads (`trainedLayoutsOf`); null or absent = not declared, any layout is run. */
  readonly trainedLayouts?: TrainedLayouts | null;
  /** Which contract the model follows (2 takes `history` and answers in metres; 3 refines the physics front end's candidates). */
  readonly contract: 1 | 2 | 3;
  /** v3: the room calibration the model carries (`csipose calibrate`); null or absent without one. */
  readonly roomCalibration?: RoomCalibration | null;
  run(features: Float32Array, n: number, opts?: RunOptions): Promise<ModelOutputs>;
}

/** Options of `PoseModel.load`. */
export interface LoadOptions {
  /**
   * Where the session runs: `worker` in its own worker thread, so inference never blocks the event
   * loop; `inline` in the calling thread (each run blocks the loop while it computes); `auto`
   * (default) picks by `threadFor`.
   */
  thread?: 'worker' | 'inline' | 'auto';
  /** The feature width the caller produces; a model that expects another is refused. */
  featureDim?: number;
}

/**
 * The thread a session runs in. `auto` is the worker thread when the process may use two cores or
 * more (inference then runs beside the event loop), and the calling thread on one core: there the
 * worker could only take turns with the event loop on the same core, and handing each batch over
 * and back cost `live.pipeline` about a quarter of its rate (bench/live.ts, pinned to one core:
 * 9,960-10,480 frames/s with the worker, 12,629-13,916 inline).
 * @param choice what the caller asked for
 * @param cores `os.availableParallelism()` (it follows the CPU affinity, so `taskset -c 0` gives 1)
 * @returns `worker` or `inline`
 */
export function threadFor(choice: 'worker' | 'inline' | 'auto', cores: number): 'worker' | 'inline' {
  if (choice !== 'auto') return choice;
  return cores >= 2 ? 'worker' : 'inline';
}

/** One input tensor of a run. */
interface Feed {
  name: string;
  data: Float32Array;
  dims: number[];
  /** Built for this run (not the caller's): may always be handed over. */
  owned?: boolean;
}

/** The part of a session PoseModel uses, whichever thread it lives in. */
interface SessionLike {
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
  /** Runs the inputs; with `transfer` the first feed's buffer may be handed over. */
  run(feeds: readonly Feed[], transfer: boolean): Promise<Record<string, RawOutput>>;
  release(): Promise<void>;
}

const SESSION_OPTIONS: InferenceSession.SessionOptions = {
  executionProviders: ['cpu'],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  // Errors only: a failure reaches the caller as a ModelError with onnxruntime's message anyway.
  logSeverityLevel: 3,
};

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** A session in this thread. */
class InlineSession implements SessionLike {
  private constructor(
    private readonly ort: typeof import('onnxruntime-node'),
    private readonly session: InferenceSession,
    readonly inputs: readonly ValueInfo[],
    readonly outputs: readonly ValueInfo[],
  ) {}

  static async create(bytes: Uint8Array): Promise<InlineSession> {
    const ort = (await import('onnxruntime-node')).default;
    const session = await ort.InferenceSession.create(bytes, SESSION_OPTIONS);
    return new InlineSession(ort, session, describe(session.inputMetadata), describe(session.outputMetadata));
  }

  async run(feeds: readonly Feed[]): Promise<Record<string, RawOutput>> {
    const inputs: Record<string, import('onnxruntime-node').Tensor> = {};
    for (const f of feeds) inputs[f.name] = new this.ort.Tensor('float32', f.data, f.dims);
    const out = await this.session.run(inputs);
    const result: Record<string, RawOutput> = {};
    for (const [name, t] of Object.entries(out)) result[name] = { data: t.data, dims: t.dims, type: t.type };
    return result;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

/**
 * The compiled worker (sessionWorker.ts). Beside this module when it runs from `dist/`; from the
 * TypeScript sources (vitest) it is the one `npm run build` wrote to `dist/src/model/` of the
 * package, as for the dashboard (server/dashboard.ts), since a worker cannot run a .ts file. From
 * the sources a missing or stale build is refused with a ModelError that says to build.
 * @returns the worker's file URL
 * @throws ModelError when the compiled worker is missing or older than its sources
 */
function sessionWorkerUrl(): URL {
  const beside = new URL('./sessionWorker.js', import.meta.url);
  if (existsSync(beside)) return beside;
  const built = join(packageRoot(), 'dist', 'src', 'model', 'sessionWorker.js');
  const rebuild = `run \`npm run build\` (or load the model with thread: 'inline')`;
  if (!existsSync(built)) throw new ModelError(`the inference worker is not built: ${built} is missing; ${rebuild}`);
  const builtAt = statSync(built).mtimeMs;
  for (const source of ['./sessionWorker.ts', './sessionProtocol.ts']) {
    const path = fileURLToPath(new URL(source, import.meta.url));
    if (existsSync(path) && statSync(path).mtimeMs > builtAt) throw new ModelError(`the inference worker is stale: ${path} is newer than ${built}; ${rebuild}`);
  }
  return pathToFileURL(built);
}

interface Pending {
  resolve: (r: Record<string, RawOutput>) => void;
  reject: (e: Error) => void;
}

/**
 * A session in a worker thread. The worker is referenced only while a load or run is pending, so
 * an idle model never keeps the process alive.
 */
class WorkerSession implements SessionLike {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private dead: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    readonly inputs: readonly ValueInfo[],
    readonly outputs: readonly ValueInfo[],
  ) {
    worker.on('message', (m: FromWorker) => {
      if (m.type !== 'result' && m.type !== 'runError') return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      if (m.type === 'result') p.resolve(m.outputs);
      else p.reject(new ModelError(`inference failed: ${m.message}`));
    });
    const fail = (e: Error) => {
      this.dead ??= e;
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    worker.on('error', (e) => fail(new ModelError(`inference worker failed: ${e.message}`, { cause: e })));
    worker.on('exit', (code) => fail(new ModelError(`inference worker stopped (exit code ${code})`)));
  }

  static create(bytes: Uint8Array): Promise<WorkerSession> {
    let url: URL;
    try {
      url = sessionWorkerUrl();
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      const worker = new Worker(url);
      const onError = (e: Error) => fail(new ModelError(`inference worker failed: ${e.message}`, { cause: e }));
      const onExit = (code: number) => fail(new ModelError(`inference worker stopped while loading (exit code ${code})`));
      const onMessage = (m: FromWorker) => {
        detach();
        if (m.type !== 'loaded') {
          // A plain Error: PoseModel.load words it as a load failure.
          fail(new Error(m.type === 'loadError' ? m.message : `unexpected '${m.type}' while loading`));
          return;
        }
        const session = new WorkerSession(worker, m.inputs, m.outputs);
        // After the session's listeners exist: adding a 'message' listener re-references the port.
        worker.unref();
        resolve(session);
      };
      // Only our own listeners: Worker keeps internal ones (port referencing) that must stay.
      const detach = () => {
        worker.off('error', onError);
        worker.off('exit', onExit);
        worker.off('message', onMessage);
      };
      const fail = (e: Error) => {
        detach();
        void worker.terminate();
        reject(e);
      };
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.on('message', onMessage);
      // A copy the worker owns (not `slice`, which is a view for a Buffer): the caller's bytes stay intact.
      const own = new Uint8Array(bytes);
      const load: ToWorker = { type: 'load', bytes: own, options: SESSION_OPTIONS };
      worker.postMessage(load, [own.buffer]);
    });
  }

  run(feeds: readonly Feed[], transfer: boolean): Promise<Record<string, RawOutput>> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    // Transferring moves the whole buffer: only do it when the array is all of it, and only for
    // the caller's arrays when the caller said so (`transfer`); arrays built for this run always go.
    const sent = feeds.map((f): WireFeed => {
      const whole = f.data.byteOffset === 0 && f.data.byteLength === f.data.buffer.byteLength && f.data.buffer instanceof ArrayBuffer;
      return { name: f.name, dims: f.dims, data: (transfer || f.owned === true) && whole ? f.data : f.data.slice() };
    });
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.worker.ref();
      try {
        const run: ToWorker = { type: 'run', id, feeds: sent };
        this.worker.postMessage(
          run,
          sent.map((f) => f.data.buffer as ArrayBuffer),
        );
      } catch (e) {
        this.pending.delete(id);
        if (this.pending.size === 0) this.worker.unref();
        reject(new ModelError(`cannot send the batch to the inference worker: ${message(e)}`, { cause: e }));
      }
    });
  }

  async release(): Promise<void> {
    this.dead ??= new ModelError('model released');
    await this.worker.terminate();
  }
}

/** Reads the metadata_props of ONNX bytes; throws ModelError when the bytes are not an ONNX model. */
function readModelProps(bytes: Uint8Array, where: string): Map<string, string> {
  let model: onnxProto.onnx.ModelProto;
  try {
    model = onnx.ModelProto.decode(bytes);
  } catch (e) {
    throw new ModelError(`not an ONNX model (${where}): ${message(e)}`, { cause: e });
  }
  if (!model.graph || !model.graph.node?.length || !model.opsetImport?.length)
    throw new ModelError(`not an ONNX model (${where}): no graph or no operator set`);
  return new Map((model.metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? '']));
}

const shapeText = (shape: ReadonlyArray<number | string> | undefined) => `[${(shape ?? []).join(', ')}]`;

interface Validated {
  contract: 1 | 2 | 3;
  metadata: ModelMetadata;
  featureDim: number;
  /** Width of the `site` input, 0 without it. */
  siteDim: number;
  maxPersons: number;
  warning?: string;
  /** v3: the room calibration in the model's `room_calibration` metadata (a room model from `csipose calibrate`); null without one. */
  roomCalibration?: RoomCalibration | null;
}

/** Per-person trailing dimensions of each output. */
const TRAILING: Record<(typeof MODEL_OUTPUTS)[number], readonly number[]> = {
  [OUTPUT_PRESENCE]: [],
  [OUTPUT_KEYPOINTS]: [N_KEYPOINTS, 3],
  [OUTPUT_BOXES]: [4],
  [OUTPUT_FLOOR]: [2],
  [OUTPUT_DENSEPOSE]: [N_DENSE_PARTS, 3],
};

/** v2 outputs: whether the second dimension is P (else fixed) and the dimensions after it. */
const V2_SHAPES: Record<(typeof MODEL_V2_OUTPUTS)[number], { perPerson: boolean; extra: number; trailing: readonly number[] }> = {
  [OUTPUT_COUNT]: { perPerson: true, extra: 1, trailing: [] },
  [OUTPUT_PRESENCE]: { perPerson: true, extra: 0, trailing: [] },
  [OUTPUT_KEYPOINTS3D]: { perPerson: true, extra: 0, trailing: [N_KEYPOINTS, 3] },
  [OUTPUT_ACTIVITY]: { perPerson: true, extra: 0, trailing: [MODEL_ACTIVITIES.length] },
  [OUTPUT_FALL]: { perPerson: false, extra: 1, trailing: [] },
};

/** The dims a v2 output must have for n rows and P slots. */
function v2Dims(name: (typeof MODEL_V2_OUTPUTS)[number], n: number, P: number): number[] {
  const s = V2_SHAPES[name];
  return [n, s.perPerson ? P + s.extra : s.extra, ...s.trailing];
}

/** model_version prefix of the models `npm run train:v2` writes (and `csipose calibrate` derives from them). */
const OWN_MODEL_PREFIX = 'csipose-pose-';

/**
 * The CSI layouts a model was trained on: its `trained_layouts` metadata; else, for a model of our
 * own training (model_version `csipose-pose-...`, calibrated ones included), the training recipe's
 * (RECIPE_LAYOUTS); else null: the model does not say, and rows of every layout are run.
 * @param m the model's metadata (`trained_layouts` already checked at load)
 * @returns the layouts, or null
 */
export function trainedLayoutsOf(m: ModelMetadata): TrainedLayouts | null {
  if (m.trained_layouts) return parseLayouts(m.trained_layouts);
  return m.model_version.startsWith(OWN_MODEL_PREFIX) ? RECIPE_LAYOUTS : null;
}

/** The metadata every contract has, from the model's properties and what its shapes said. */
function commonMetadata(
  props: Map<string, string>,
  contract: string | undefined,
  featureDim: number,
  maxPersons: number,
  siteDim: number,
  fail: (msg: string) => ModelError,
): ModelMetadata {
  return {
    csipose_contract: contract ?? '',
    model_version: props.get('model_version') ?? '',
    feature_dim: featureDim,
    max_persons: maxPersons,
    window_frames: metadataNumber(props, 'window_frames', fail) ?? 0,
    trained_on: props.get('trained_on') ?? '',
    ...(siteDim > 0 ? { site_dim: siteDim } : {}),
    ...trainedLayoutsProp(props, fail),
    ...fallTriggerProp(props, fail),
  };
}

/** `fall_trigger` when the model declares it: a probability in (0, 1], or the load fails. */
function fallTriggerProp(props: Map<string, string>, fail: (msg: string) => ModelError): { fall_trigger?: number } {
  const raw = props.get('fall_trigger');
  if (raw === undefined || raw.trim() === '') return {};
  const v = Number(raw);
  if (!(v > 0 && v <= 1)) throw fail(`model metadata fall_trigger is ${JSON.stringify(raw)}, expected a probability in (0, 1]`);
  return { fall_trigger: v };
}

/** `trained_layouts` when the model declares it, checked so that a bad value fails the load. */
function trainedLayoutsProp(props: Map<string, string>, fail: (msg: string) => ModelError): { trained_layouts?: string } {
  const raw = props.get('trained_layouts');
  if (raw === undefined || raw.trim() === '') return {};
  try {
    parseLayouts(raw);
  } catch (e) {
    throw fail(`model metadata ${(e as Error).message}`);
  }
  return { trained_layouts: raw };
}

function metadataNumber(props: Map<string, string>, key: string, fail: (msg: string) => ModelError): number | undefined {
  const raw = props.get(key);
  if (raw === undefined || raw.trim() === '') return undefined;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < 0) throw fail(`model metadata ${key} is ${JSON.stringify(raw)}, expected a non-negative integer`);
  return v;
}

/** Checks a loaded session against the contract; throws ModelError naming the first violation. */
function validateContract(
  inputs: readonly ValueInfo[],
  outputs: readonly ValueInfo[],
  props: Map<string, string>,
  expectFeatureDim: number | undefined,
  where: string,
): Validated {
  const fail = (msg: string) => new ModelError(`${msg} (${where})`);
  const contract = props.get('csipose_contract');
  if (contract !== undefined && contract !== CONTRACT_VERSION && contract !== CONTRACT_V2 && contract !== CONTRACT_V3)
    throw fail(
      `model contract is ${JSON.stringify(contract)}, this service implements ${JSON.stringify(CONTRACT_VERSION)}, ${JSON.stringify(CONTRACT_V2)} and ${JSON.stringify(CONTRACT_V3)}`,
    );
  if (contract === CONTRACT_V3 || (contract === undefined && inputs.some((i) => i.name === INPUT_CANDIDATES)))
    return validateV3(inputs, outputs, props, fail, contract);
  if (contract === CONTRACT_V2 || (contract === undefined && inputs.some((i) => i.name === INPUT_HISTORY)))
    return validateV2(inputs, outputs, props, expectFeatureDim, fail, contract);

  const names = inputs.map((i) => `'${i.name}'`).join(', ');
  const input = inputs.find((i) => i.name === INPUT_FEATURES);
  const other = inputs.filter((i) => i.name !== INPUT_FEATURES && i.name !== INPUT_SITE);
  if (!input || other.length > 0 || inputs.length > 2)
    throw fail(
      inputs.length === 1
        ? `model input is named ${names}, expected '${INPUT_FEATURES}'`
        : `model inputs must be '${INPUT_FEATURES}' and optionally '${INPUT_SITE}', it has ${inputs.length}: ${names || 'none'}`,
    );
  const site = inputs.find((i) => i.name === INPUT_SITE);
  const metaSiteDim = metadataNumber(props, 'site_dim', fail);
  if (site) {
    const sshape = site.shape ?? [];
    if (!site.isTensor || site.type !== 'float32') throw fail(`model input '${INPUT_SITE}' is ${site.type ?? 'not a tensor'}, expected float32`);
    if (sshape.length !== 2 || (typeof sshape[0] === 'number' && sshape[0] !== 0) || (typeof sshape[1] === 'number' && sshape[1] !== SITE_DIM))
      throw fail(`model input '${INPUT_SITE}' has shape ${shapeText(sshape)}, expected [N, ${SITE_DIM}]`);
    if (metaSiteDim !== undefined && metaSiteDim !== SITE_DIM)
      throw fail(`model metadata site_dim ${metaSiteDim}, this service builds site rows of ${SITE_DIM}`);
  } else if (metaSiteDim !== undefined && metaSiteDim > 0) throw fail(`model metadata site_dim is ${metaSiteDim} but the model has no '${INPUT_SITE}' input`);
  const siteDim = site ? SITE_DIM : 0;
  if (!input.isTensor || input.type !== 'float32') throw fail(`model input '${INPUT_FEATURES}' is ${input.type ?? 'not a tensor'}, expected float32`);
  const ishape = input.shape ?? [];
  if (ishape.length !== 2) throw fail(`model input '${INPUT_FEATURES}' has shape ${shapeText(ishape)}, expected [N, feature_dim]`);
  if (typeof ishape[0] === 'number' && ishape[0] !== 0)
    throw fail(`model input '${INPUT_FEATURES}' has a fixed batch size ${ishape[0]}, expected a symbolic batch dimension`);
  const metaFeatureDim = metadataNumber(props, 'feature_dim', fail);
  const shapeFeatureDim = typeof ishape[1] === 'number' ? ishape[1] : undefined;
  if (metaFeatureDim !== undefined && shapeFeatureDim !== undefined && metaFeatureDim !== shapeFeatureDim)
    throw fail(`model metadata feature_dim ${metaFeatureDim} does not match its input shape ${shapeText(ishape)}`);
  const featureDim = shapeFeatureDim ?? metaFeatureDim;
  if (featureDim === undefined || featureDim < 1) throw fail(`model feature_dim is unknown: input shape ${shapeText(ishape)} and no feature_dim metadata`);
  if (expectFeatureDim !== undefined && featureDim !== expectFeatureDim)
    throw fail(`model expects feature_dim ${featureDim}, the features have ${expectFeatureDim}`);

  const byName = new Map(outputs.map((o) => [o.name, o]));
  let maxPersons = metadataNumber(props, 'max_persons', fail);
  let personSource = 'metadata max_persons';
  for (const name of MODEL_OUTPUTS) {
    const o = byName.get(name);
    if (!o) throw fail(`model has no output '${name}' (outputs: ${outputs.map((x) => `'${x.name}'`).join(', ') || 'none'})`);
    if (!o.isTensor || o.type !== 'float32') throw fail(`model output '${name}' is ${o.type ?? 'not a tensor'}, expected float32`);
    const shape = o.shape ?? [];
    // A model may leave output shapes undeclared; `run` checks the actual shapes.
    if (shape.length === 0) continue;
    const trailing = TRAILING[name];
    const expected = `[N, P${trailing.map((d) => `, ${d}`).join('')}]`;
    if (shape.length !== 2 + trailing.length || trailing.some((d, i) => shape[2 + i] !== d && typeof shape[2 + i] === 'number'))
      throw fail(`model output '${name}' has shape ${shapeText(shape)}, expected ${expected}`);
    if (typeof shape[1] === 'number') {
      if (maxPersons === undefined) {
        maxPersons = shape[1];
        personSource = `'${name}' has`;
      } else if (shape[1] !== maxPersons)
        throw fail(`model output '${name}' has shape ${shapeText(shape)}: ${shape[1]} person slots, but ${personSource} ${maxPersons}`);
    }
  }
  if (maxPersons === undefined || maxPersons < 1)
    throw fail('model max_persons is unknown: output shapes give no person dimension and no max_persons metadata');

  const metadata = commonMetadata(props, contract, featureDim, maxPersons, siteDim, fail);
  return contract === undefined
    ? {
        contract: 1,
        metadata,
        featureDim,
        siteDim,
        maxPersons,
        warning: `model has no csipose_contract metadata; accepted on its input and output names and shapes (assumed ${CONTRACT_VERSION})`,
      }
    : { contract: 1, metadata, featureDim, siteDim, maxPersons };
}

/** Checks one float32 input's shape against [N, ...rest] (symbolic dims accepted). */
function checkInput(i: ValueInfo, rest: readonly number[], fail: (msg: string) => ModelError): void {
  const shape = i.shape ?? [];
  if (!i.isTensor || i.type !== 'float32') throw fail(`model input '${i.name}' is ${i.type ?? 'not a tensor'}, expected float32`);
  const expected = `[N${rest.map((d) => `, ${d}`).join('')}]`;
  if (
    shape.length !== 1 + rest.length ||
    (typeof shape[0] === 'number' && shape[0] !== 0) ||
    rest.some((d, k) => typeof shape[k + 1] === 'number' && shape[k + 1] !== d)
  )
    throw fail(`model input '${i.name}' has shape ${shapeText(shape)}, expected ${expected}`);
}

/** The v2 checks of `validateContract`. */
function validateV2(
  inputs: readonly ValueInfo[],
  outputs: readonly ValueInfo[],
  props: Map<string, string>,
  expectFeatureDim: number | undefined,
  fail: (msg: string) => ModelError,
  contract: string | undefined,
): Validated {
  const allowed = new Set([INPUT_FEATURES, INPUT_HISTORY, INPUT_SITE]);
  const names = inputs.map((i) => `'${i.name}'`).join(', ');
  const features = inputs.find((i) => i.name === INPUT_FEATURES);
  const history = inputs.find((i) => i.name === INPUT_HISTORY);
  if (!features || !history || inputs.some((i) => !allowed.has(i.name)))
    throw fail(`a ${CONTRACT_V2} model takes '${INPUT_FEATURES}', '${INPUT_HISTORY}' and optionally '${INPUT_SITE}'; it has ${names || 'none'}`);
  const featureDim = typeof features.shape?.[1] === 'number' ? features.shape[1] : metadataNumber(props, 'feature_dim', fail);
  if (featureDim === undefined || featureDim < 1)
    throw fail(`model feature_dim is unknown: input shape ${shapeText(features.shape)} and no feature_dim metadata`);
  checkInput(features, [featureDim], fail);
  if (expectFeatureDim !== undefined && featureDim !== expectFeatureDim)
    throw fail(`model expects feature_dim ${featureDim}, the features have ${expectFeatureDim}`);
  checkInput(history, [HISTORY_STEPS, HISTORY_DIM], fail);
  for (const [key, want] of [
    ['history_steps', HISTORY_STEPS],
    ['history_dim', HISTORY_DIM],
    ['history_stride_frames', HISTORY_STRIDE_FRAMES],
  ] as const) {
    const v = metadataNumber(props, key, fail);
    if (v !== undefined && v !== want) throw fail(`model metadata ${key} is ${v}, this service builds history with ${want}`);
  }
  const site = inputs.find((i) => i.name === INPUT_SITE);
  if (site) checkInput(site, [SITE_DIM], fail);
  const byName = new Map(outputs.map((o) => [o.name, o]));
  let maxPersons = metadataNumber(props, 'max_persons', fail);
  for (const name of MODEL_V2_OUTPUTS) {
    const o = byName.get(name);
    if (!o) throw fail(`model has no output '${name}' (outputs: ${outputs.map((x) => `'${x.name}'`).join(', ') || 'none'})`);
    if (!o.isTensor || o.type !== 'float32') throw fail(`model output '${name}' is ${o.type ?? 'not a tensor'}, expected float32`);
    const spec = V2_SHAPES[name];
    const shape = o.shape ?? [];
    if (shape.length === 0) continue;
    if (shape.length !== 2 + spec.trailing.length || spec.trailing.some((d, k) => typeof shape[2 + k] === 'number' && shape[2 + k] !== d))
      throw fail(
        `model output '${name}' has shape ${shapeText(shape)}, expected ${shapeText(['N', spec.perPerson ? (spec.extra ? 'P + 1' : 'P') : spec.extra, ...spec.trailing])}`,
      );
    if (spec.perPerson && typeof shape[1] === 'number') {
      const p = shape[1] - spec.extra;
      if (maxPersons === undefined) maxPersons = p;
      else if (p !== maxPersons) throw fail(`model output '${name}' has shape ${shapeText(shape)}: ${p} person slots, expected ${maxPersons}`);
    }
  }
  if (maxPersons === undefined || maxPersons < 1)
    throw fail('model max_persons is unknown: output shapes give no person dimension and no max_persons metadata');
  const fallWindow = Number(props.get('fall_window_s'));
  const metadata: ModelMetadata = {
    ...commonMetadata(props, contract, featureDim, maxPersons, site ? SITE_DIM : 0, fail),
    history_steps: HISTORY_STEPS,
    history_dim: HISTORY_DIM,
    history_stride_frames: HISTORY_STRIDE_FRAMES,
    ...(Number.isFinite(fallWindow) && fallWindow > 0 ? { fall_window_s: fallWindow } : {}),
  };
  const base = { contract: 2 as const, metadata, featureDim, siteDim: site ? SITE_DIM : 0, maxPersons };
  return contract === undefined
    ? { ...base, warning: `model has no csipose_contract metadata; accepted on its input and output names and shapes (assumed ${CONTRACT_V2})` }
    : base;
}

/**
 * The v3 checks of `validateContract`: one float32 `candidates` input [N, REFINER_STEPS,
 * REFINER_FEATURE_DIM], the seven outputs with their trailing dimensions, and metadata that agrees
 * with the service's front end (steps, stride, feature names): a refiner trained on other features
 * would run and answer nonsense, so it is refused by name.
 */
function validateV3(
  inputs: readonly ValueInfo[],
  outputs: readonly ValueInfo[],
  props: Map<string, string>,
  fail: (msg: string) => ModelError,
  contract: string | undefined,
): Validated {
  const names = inputs.map((i) => `'${i.name}'`).join(', ');
  const input = inputs.find((i) => i.name === INPUT_CANDIDATES);
  if (!input || inputs.length !== 1) throw fail(`a ${CONTRACT_V3} model takes one input '${INPUT_CANDIDATES}'; it has ${names || 'none'}`);
  checkInput(input, [REFINER_STEPS, REFINER_FEATURE_DIM], fail);
  for (const [key, want] of [
    ['feature_dim', REFINER_FEATURE_DIM],
    ['steps', REFINER_STEPS],
    ['stride_maps', REFINER_STRIDE],
  ] as const) {
    const v = metadataNumber(props, key, fail);
    if (v !== undefined && v !== want) throw fail(`model metadata ${key} is ${v}, this service's front end gives ${want}`);
  }
  const featureNames = props.get('feature_names');
  if (featureNames !== undefined && featureNames !== REFINER_FEATURES.join(','))
    throw fail(
      `model metadata feature_names differ from this service's front end (${REFINER_FEATURE_DIM} features: ${REFINER_FEATURES.slice(0, 4).join(', ')}, ...)`,
    );
  const byName = new Map(outputs.map((o) => [o.name, o]));
  for (const name of MODEL_V3_OUTPUTS) {
    const o = byName.get(name);
    if (!o) throw fail(`model has no output '${name}' (outputs: ${outputs.map((x) => `'${x.name}'`).join(', ') || 'none'})`);
    if (!o.isTensor || o.type !== 'float32') throw fail(`model output '${name}' is ${o.type ?? 'not a tensor'}, expected float32`);
    const trailing = MODEL_V3_SHAPES[name];
    const shape = o.shape ?? [];
    if (shape.length === 0) continue;
    if (shape.length !== 1 + trailing.length || trailing.some((d, k) => typeof shape[1 + k] === 'number' && shape[1 + k] !== d))
      throw fail(`model output '${name}' has shape ${shapeText(shape)}, expected ${shapeText(['N', ...trailing])}`);
  }
  const maxCandidates = metadataNumber(props, 'max_candidates', fail) ?? 0;
  const fallWindow = Number(props.get('fall_window_s'));
  const calText = props.get(ROOM_CALIBRATION_KEY);
  let roomCalibration: RoomCalibration | null = null;
  if (calText !== undefined) {
    try {
      roomCalibration = parseRoomCalibration(calText);
    } catch (e) {
      throw fail(`model metadata ${ROOM_CALIBRATION_KEY}: ${(e as Error).message}`);
    }
  }
  const metadata: ModelMetadata = {
    ...commonMetadata(props, contract, REFINER_FEATURE_DIM, maxCandidates, 0, fail),
    steps: REFINER_STEPS,
    stride_maps: REFINER_STRIDE,
    max_candidates: maxCandidates,
    ...(Number.isFinite(fallWindow) && fallWindow > 0 ? { fall_window_s: fallWindow } : {}),
  };
  const base = { contract: 3 as const, metadata, featureDim: REFINER_STEPS * REFINER_FEATURE_DIM, siteDim: 0, maxPersons: maxCandidates, roomCalibration };
  return contract === undefined
    ? { ...base, warning: `model has no csipose_contract metadata; accepted on its input and output names and shapes (assumed ${CONTRACT_V3})` }
    : base;
}

/**
 * A contract pose model loaded in onnxruntime-node (CPU, one intra-op thread, all graph
 * optimisations), checked against the contract at load.
 *
 * Load refuses, with a ModelError saying why: a missing or unreadable file, bytes that are not
 * ONNX or that onnxruntime cannot load, a `csipose_contract` other than CONTRACT_VERSION, inputs
 * other than one float32 `features` [N, feature_dim] and optionally `site` [N, SITE_DIM] (fed from
 * `RunOptions.site`), a feature_dim that differs from
 * `opts.featureDim` or from the model's own metadata, a missing contract output or one with the
 * wrong shape. A model without `csipose_contract` metadata but with the right names and shapes is
 * accepted, with `warning` saying so (its missing metadata strings are '' and `window_frames` 0).
 *
 * @example
 * const model = await PoseModel.load('models/csipose-pose.onnx', { featureDim: 1080 });
 * const out = await model.run(batch, 32); // batch: Float32Array of 32 x 1080
 * const persons = decodeOutputs(out, 0, { view: { width: 640, height: 480 }, confidenceThreshold: 0.5,
 *   maxPersons: 10, includeDensePose: false });
 * await model.release();
 */
export class PoseModel implements PoseRunner {
  private released = false;
  /** The CSI layouts the model was trained on (`trainedLayoutsOf`); null when it does not say. */
  readonly trainedLayouts: TrainedLayouts | null;

  private constructor(
    private readonly session: SessionLike,
    /** 1, 2 or 3: the contract the model follows. */
    readonly contract: 1 | 2 | 3,
    /** The contract metadata (from the model, or derived from its shapes when it has none). */
    readonly metadata: ModelMetadata,
    /** Width of one feature row. */
    readonly featureDim: number,
    /** Width of the `site` input (SITE_DIM), 0 when the model has none. */
    readonly siteDim: number,
    /** P, the model's person slots. */
    readonly maxPersons: number,
    /** Set when the model was accepted without contract metadata. */
    readonly warning: string | undefined,
    /** The file path, or `<bytes>`. */
    readonly source: string,
    /** v3: the room calibration the model carries (`room_calibration` metadata, `csipose calibrate`); null without one. */
    readonly roomCalibration: RoomCalibration | null = null,
  ) {
    this.trainedLayouts = trainedLayoutsOf(metadata);
  }

  /**
   * Loads and checks a model.
   * @param source path of an `.onnx` file, or the model bytes
   * @param opts `thread` (default `auto`, see `threadFor`) and the expected `featureDim`
   * @returns the loaded model
   * @throws ModelError when the model cannot be read, loaded, or does not meet the contract
   */
  static async load(source: string | Uint8Array, opts: LoadOptions = {}): Promise<PoseModel> {
    const where = typeof source === 'string' ? source : '<bytes>';
    let bytes: Uint8Array;
    if (typeof source === 'string') {
      try {
        bytes = await readFile(source);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') throw new ModelError(`model file not found: ${source}`, { cause: e });
        if (code === 'EISDIR') throw new ModelError(`model path is a directory, not an ONNX file: ${source}`, { cause: e });
        throw new ModelError(`cannot read model file ${source}: ${message(e)}`, { cause: e });
      }
    } else bytes = source;
    if (bytes.length === 0) throw new ModelError(`not an ONNX model (${where}): empty`);
    const props = readModelProps(bytes, where);

    let session: SessionLike;
    try {
      session = threadFor(opts.thread ?? 'auto', availableParallelism()) === 'inline' ? await InlineSession.create(bytes) : await WorkerSession.create(bytes);
    } catch (e) {
      if (e instanceof ModelError) throw e;
      throw new ModelError(`onnxruntime could not load the model (${where}): ${message(e)}`, { cause: e });
    }
    try {
      const v = validateContract(session.inputs, session.outputs, props, opts.featureDim, where);
      return new PoseModel(session, v.contract, v.metadata, v.featureDim, v.siteDim, v.maxPersons, v.warning, where, v.roomCalibration ?? null);
    } catch (e) {
      await session.release().catch(() => undefined);
      throw e;
    }
  }

  /**
   * Runs the model on `n` feature rows.
   * @param features n x featureDim values, row-major
   * @param n number of rows (>= 1)
   * @param opts `transfer`: hand the array over instead of copying it (worker thread only);
   *   `site`: the installation's geometry, for models with the `site` input
   * @returns the five contract outputs
   * @throws RangeError when `features` does not hold n rows; ModelError (as a rejection) when
   *   inference fails, the outputs break the contract, or the model was released
   */
  async run(features: Float32Array, n: number, opts: RunOptions = {}): Promise<ModelOutputs> {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`run: n must be a positive integer, got ${n}`);
    if (features.length !== n * this.featureDim) throw new RangeError(`run: ${features.length} values for ${n} rows of ${this.featureDim}`);
    if (this.released) throw new ModelError(`model released (${this.source})`);
    let raw: Record<string, RawOutput>;
    try {
      const feeds: Feed[] =
        this.contract === 3
          ? [{ name: INPUT_CANDIDATES, data: features, dims: [n, REFINER_STEPS, REFINER_FEATURE_DIM] }]
          : [{ name: INPUT_FEATURES, data: features, dims: [n, this.featureDim] }];
      if (this.contract === 2) {
        const width = HISTORY_STEPS * HISTORY_DIM;
        const h = opts.history;
        if (h !== undefined && h.length !== n * width) throw new RangeError(`run: history has ${h.length} values for ${n} rows of ${width}`);
        feeds.push({ name: INPUT_HISTORY, data: h ?? new Float32Array(n * width), dims: [n, HISTORY_STEPS, HISTORY_DIM], owned: h === undefined });
      }
      if (this.siteDim > 0) {
        const row = siteVector(opts.site ?? null);
        const rows = new Float32Array(n * this.siteDim);
        for (let r = 0; r < n; r++) rows.set(row, r * this.siteDim);
        feeds.push({ name: INPUT_SITE, data: rows, dims: [n, this.siteDim], owned: true });
      }
      raw = await this.session.run(feeds, opts.transfer === true);
    } catch (e) {
      if (e instanceof ModelError || e instanceof RangeError) throw e;
      throw new ModelError(`inference failed: ${message(e)}`, { cause: e });
    }
    const P = this.maxPersons;
    const take = (name: string, dims: readonly number[]): Float32Array => {
      const o = raw[name];
      if (!o || !(o.data instanceof Float32Array)) throw new ModelError(`model output '${name}' is missing or not float32 (${this.source})`);
      if (o.dims.length !== dims.length || o.dims.some((d, i) => d !== dims[i]))
        throw new ModelError(`model output '${name}' has shape ${shapeText(o.dims)}, expected ${shapeText(dims)} (${this.source})`);
      return o.data;
    };
    if (this.contract === 3) {
      const out = { contract: 3, n, maxPersons: P } as ModelOutputsV3;
      for (const name of MODEL_V3_OUTPUTS) out[name] = take(name, [n, ...MODEL_V3_SHAPES[name]]);
      return out;
    }
    if (this.contract === 2) {
      return {
        contract: 2,
        n,
        maxPersons: P,
        count: take(OUTPUT_COUNT, v2Dims(OUTPUT_COUNT, n, P)),
        presence: take(OUTPUT_PRESENCE, v2Dims(OUTPUT_PRESENCE, n, P)),
        keypoints3d: take(OUTPUT_KEYPOINTS3D, v2Dims(OUTPUT_KEYPOINTS3D, n, P)),
        activity: take(OUTPUT_ACTIVITY, v2Dims(OUTPUT_ACTIVITY, n, P)),
        fall: take(OUTPUT_FALL, v2Dims(OUTPUT_FALL, n, P)),
      };
    }
    const v1 = (name: (typeof MODEL_OUTPUTS)[number]) => take(name, [n, P, ...TRAILING[name]]);
    return {
      contract: 1,
      n,
      maxPersons: P,
      presence: v1(OUTPUT_PRESENCE),
      keypoints: v1(OUTPUT_KEYPOINTS),
      boxes: v1(OUTPUT_BOXES),
      floor: v1(OUTPUT_FLOOR),
      densepose: v1(OUTPUT_DENSEPOSE),
    };
  }

  /** Frees the session (and stops its worker). Runs after this reject with ModelError. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.session.release();
  }
}

/** Options of `decodeOutputs`. */
export interface DecodeOptions {
  /** The reference view keypoints and boxes are scaled to, in pixels (v1 models). */
  view: { width: number; height: number };
  /**
   * v1: slots with presence below this are dropped (NaN presence is always dropped). v2: the
   * count rule: as many persons as the model's probability that AT LEAST that many are present
   * is >= this (0.5 takes the median of the `count` output).
   */
  confidenceThreshold: number;
  /** At most this many persons, highest presence first. */
  maxPersons: number;
  /**
   * v2: report this many persons (still at most `maxPersons`) instead of applying the count rule;
   * the infer operator's count hysteresis decides it from the rule over time.
   */
  count?: number;
  /** Attach each person's DensePose parts. */
  includeDensePose: boolean;
  /** v2: the reference view's camera (`environment.view`), through which skeletons are projected. */
  camera?: Camera;
  /** v2: where the receiver is on the floor plan (`environment.site`); skeletons are relative to it. */
  receiver?: { x: number; y: number };
}

/**
 * The number of persons a v2 row reports: the largest k with P(count >= k) >= threshold.
 * @param count the row's count probabilities (P + 1 values from `at`)
 * @param at offset of the row
 * @param P slots
 * @param threshold 0..1
 * @returns 0..P
 */
export function countFromProbabilities(count: Float32Array | Float64Array, at: number, P: number, threshold: number): number {
  let tail = 0;
  for (let k = P; k >= 1; k--) {
    tail += count[at + k]!;
    if (tail >= threshold) return k;
  }
  return 0;
}

/** Scratch of the v2 decoder (one person at a time). */
const room3d = new Float64Array(N_KEYPOINTS * 3);
const px2d = new Float64Array(N_KEYPOINTS * 2);
const inView = new Uint8Array(N_KEYPOINTS);
const L_HIP = 11;
const R_HIP = 12;

/**
 * The persons of one row of model outputs, highest presence first (ties by slot), at most
 * `maxPersons`.
 *
 * v1: slots with presence >= `confidenceThreshold`; keypoint x, y and boxes are scaled from 0..1 to
 * view pixels; keypoint confidences, floor metres and DensePose values are kept as the model gave
 * them.
 *
 * v2: the count rule of `confidenceThreshold` (see DecodeOptions) picks how many slots, by
 * presence; the k-th person's confidence is P(count >= k), so every reported person's confidence
 * reaches the threshold, as for v1. Each skeleton is moved from receiver-relative to room metres (`keypoints3d`), its floor
 * position is the pelvis (mid-hip) on the floor, its keypoints are projected through `camera`
 * (confidence = presence for a keypoint in the view, 0 outside it), its box is the padded box of
 * the keypoints in view (`Camera.bbox`), its DensePose parts come from the skeleton
 * (`densePoseParts`), and its activity is the most probable of the `activity` output.
 *
 * @param outputs the result of `PoseModel.run`
 * @param row which row of the batch
 * @param opts view size, threshold, person limit, whether to include DensePose; camera and
 *   receiver for v2
 * @returns the persons, each with its own arrays
 * @throws RangeError when `row` is outside the batch, a v2 row is decoded without a camera, or the outputs are a v3 refiner's
 * @example
 * decodeOutputs(out, 0, { view: { width: 640, height: 480 }, confidenceThreshold: 0.5, maxPersons: 4,
 *   includeDensePose: true })[0].bbox // Float32Array [x, y, w, h] in pixels
 */
export function decodeOutputs(outputs: ModelOutputs, row: number, opts: DecodeOptions): PersonPose[] {
  if (!Number.isInteger(row) || row < 0 || row >= outputs.n) throw new RangeError(`row ${row} outside a batch of ${outputs.n}`);
  if (outputs.contract === 2) return decodeV2(outputs, row, opts);
  if (outputs.contract === 3) throw new RangeError('decodeOutputs: a v3 refiner answers per candidate; its frames are decoded by the refine stage');
  const P = outputs.maxPersons;
  const base = row * P;
  const presence = outputs.presence;
  const chosen: number[] = [];
  for (let p = 0; p < P; p++) if (presence[base + p]! >= opts.confidenceThreshold) chosen.push(p);
  chosen.sort((a, b) => presence[base + b]! - presence[base + a]! || a - b);
  const limit = Math.max(0, Math.min(chosen.length, Math.floor(opts.maxPersons)));
  const { width, height } = opts.view;
  const persons: PersonPose[] = [];
  for (let k = 0; k < limit; k++) {
    const p = chosen[k]!;
    const slot = base + p;
    const keypoints = new Float32Array(N_KEYPOINTS * 3);
    const kp = outputs.keypoints;
    const kOff = slot * N_KEYPOINTS * 3;
    for (let j = 0; j < N_KEYPOINTS; j++) {
      keypoints[j * 3] = kp[kOff + j * 3]! * width;
      keypoints[j * 3 + 1] = kp[kOff + j * 3 + 1]! * height;
      keypoints[j * 3 + 2] = kp[kOff + j * 3 + 2]!;
    }
    const b = outputs.boxes;
    const bOff = slot * 4;
    const bbox = new Float32Array([b[bOff]! * width, b[bOff + 1]! * height, b[bOff + 2]! * width, b[bOff + 3]! * height]);
    const person: PersonPose = {
      slot: p,
      confidence: presence[slot]!,
      keypoints,
      bbox,
      floor: { x: outputs.floor[slot * 2]!, y: outputs.floor[slot * 2 + 1]! },
    };
    if (opts.includeDensePose) {
      const dOff = slot * N_DENSE_PARTS * 3;
      person.densePose = outputs.densepose.slice(dOff, dOff + N_DENSE_PARTS * 3);
    }
    persons.push(person);
  }
  return persons;
}

function decodeV2(outputs: ModelOutputsV2, row: number, opts: DecodeOptions): PersonPose[] {
  const camera = opts.camera;
  if (!camera) throw new RangeError('decodeOutputs: a v2 model needs the view camera to project its skeletons');
  const P = outputs.maxPersons;
  const A = MODEL_ACTIVITIES.length;
  const base = row * P;
  const presence = outputs.presence;
  const rule =
    opts.count !== undefined
      ? Math.max(0, Math.min(P, Math.floor(opts.count)))
      : countFromProbabilities(outputs.count, row * (P + 1), P, opts.confidenceThreshold);
  const n = Math.min(rule, Math.max(0, Math.floor(opts.maxPersons)));
  const order: number[] = [];
  for (let p = 0; p < P; p++) if (!Number.isNaN(presence[base + p]!)) order.push(p);
  order.sort((a, b) => presence[base + b]! - presence[base + a]! || a - b);
  const rx = opts.receiver?.x ?? 0;
  const ry = opts.receiver?.y ?? 0;
  const persons: PersonPose[] = [];
  for (let k = 0; k < Math.min(n, order.length); k++) {
    const p = order[k]!;
    const slot = base + p;
    // The k-th person (1-based) is there with the probability that at least k people are: the
    // count rule above is then "persons whose confidence reaches the threshold", as for v1.
    let conf = 0;
    for (let i = k + 1; i <= P; i++) conf += outputs.count[row * (P + 1) + i]!;
    conf = Math.min(1, conf);
    const kOff = slot * N_KEYPOINTS * 3;
    const kp3 = outputs.keypoints3d;
    for (let j = 0; j < N_KEYPOINTS; j++) {
      room3d[3 * j] = kp3[kOff + 3 * j]! + rx;
      room3d[3 * j + 1] = kp3[kOff + 3 * j + 1]! + ry;
      room3d[3 * j + 2] = kp3[kOff + 3 * j + 2]!;
    }
    const person = personFromSkeleton(room3d, conf, outputs.activity.subarray(slot * A, slot * A + A), p, camera, opts.includeDensePose);
    persons.push(person);
  }
  return persons;
}

/**
 * One reported person from a skeleton in room metres: keypoints projected through the view
 * (confidence `conf` for a keypoint in the image, 0 outside), the padded box of those in view, the
 * floor position of the pelvis (mid-hip), the most probable model activity, DensePose parts from
 * the skeleton when asked. What v2 and v3 answers become.
 * @param skeleton 17 x (x, y, z) room metres (read, not kept)
 * @param conf the person's confidence
 * @param activity MODEL_ACTIVITIES probabilities (copied)
 * @param slot the person's slot or candidate index
 * @param camera the reference view
 * @param includeDensePose whether to add DensePose parts
 * @returns a person with arrays of its own
 */
export function personFromSkeleton(
  skeleton: Float32Array | Float64Array,
  conf: number,
  activity: Float32Array,
  slot: number,
  camera: Camera,
  includeDensePose: boolean,
): PersonPose {
  const A = MODEL_ACTIVITIES.length;
  const keypoints3d = new Float32Array(N_KEYPOINTS * 3);
  // Projected from the float64 values (a v2 skeleton is float32 plus the receiver's float64 position).
  if (skeleton !== room3d) for (let i = 0; i < N_KEYPOINTS * 3; i++) room3d[i] = skeleton[i]!;
  for (let i = 0; i < N_KEYPOINTS * 3; i++) keypoints3d[i] = room3d[i]!;
  camera.projectKeypoints(room3d, px2d, inView);
  const keypoints = new Float32Array(N_KEYPOINTS * 3);
  for (let j = 0; j < N_KEYPOINTS; j++) {
    const u = px2d[2 * j]!;
    const v = px2d[2 * j + 1]!;
    const finite = Number.isFinite(u) && Number.isFinite(v);
    keypoints[3 * j] = finite ? u : 0;
    keypoints[3 * j + 1] = finite ? v : 0;
    keypoints[3 * j + 2] = inView[j] ? conf : 0;
  }
  const bbox = Float32Array.from(camera.bbox(px2d, inView));
  let best = 0;
  for (let a = 1; a < A; a++) if (activity[a]! > activity[best]!) best = a;
  const person: PersonPose = {
    slot,
    confidence: conf,
    keypoints,
    bbox,
    floor: { x: 0.5 * (room3d[3 * L_HIP]! + room3d[3 * R_HIP]!), y: 0.5 * (room3d[3 * L_HIP + 1]! + room3d[3 * R_HIP + 1]!) },
    keypoints3d,
    modelActivity: { activity: MODEL_ACTIVITIES[best]!, confidence: activity[best]!, probabilities: activity.slice(0, A) },
  };
  if (includeDensePose) {
    const dp = new Float32Array(N_DENSE_PARTS * 3);
    densePoseParts(room3d, 0, camera, bbox, conf, dp);
    person.densePose = dp;
  }
  return person;
}
