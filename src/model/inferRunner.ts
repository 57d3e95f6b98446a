/**
 * The infer stage's model step: checks that a model reads window features, copies a batch's rows
 * into one tensor (and their history, for v2 models), hands it to `PoseRunner.run` (which computes
 * off the event loop in PoseModel's worker thread), keeps the batch figures, and gives the results
 * back in launch order however the runs finish. Every error comes out as a ModelError (code
 * MODEL_ERROR), which the service turns into its `error` state.
 */
import { CONTRACT_V3, type SiteGeometry } from './contract.js';
import { HISTORY_WIDTH } from './history.js';
import type { FeatureRow, InferStats } from './inferTypes.js';
import { ModelError, type ModelOutputs, type PoseRunner } from './runtime.js';

/**
 * An error as the infer stage reports it: a ModelError or a RangeError (a bad option) as it is,
 * anything else as a ModelError `inference failed: ...` with the original as its cause.
 * @param e what was thrown or rejected
 * @returns the error to send downstream
 * @example
 * asModelError(new Error('Reshape')).message // 'inference failed: Reshape'
 */
export function asModelError(e: unknown): Error {
  return e instanceof ModelError || e instanceof RangeError
    ? e
    : new ModelError(`inference failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}

/** A batch run to completion: its rows, the model's outputs and what the caller launched it with. */
export interface InferBatch<C> {
  readonly rows: readonly FeatureRow[];
  readonly out: ModelOutputs;
  /** The caller's context of the batch (the infer stage: the decode options of its launch). */
  readonly context: C;
}

/** Options of {@link InferRunner}. */
export interface InferRunnerOptions {
  /** The feature width the rows have; a model expecting another is refused. Absent = not checked. */
  readonly featureDim?: number;
  /** Milliseconds for the batch figures; default `performance.now`. */
  readonly clock?: () => number;
}

/**
 * Runs one model on batches of feature rows, any number in flight, their results taken in launch
 * order with {@link next}.
 * @example
 * const runner = new InferRunner<DecodeOptions>(model, stats, { featureDim: 540 });
 * runner.run(rows, null, decode, (error) => {
 *   if (error) return fail(error);
 *   for (let b = runner.next(); b; b = runner.next()) emit(b.rows, b.out, b.context);
 * });
 */
export class InferRunner<C> {
  private running = 0;
  private launched = 0;
  private nextOut = 0;
  private totalMs = 0;
  private stopped = false;
  private readonly done = new Map<number, InferBatch<C>>();
  private readonly clock: () => number;

  /**
   * @param model the loaded model (not released here: whoever loaded it does)
   * @param stats where the batch figures go (`batches`, `rows`, `lastBatchMs`, `avgBatchMs`)
   * @param options feature width to check, clock
   * @throws ModelError when the model is a v3 refiner (it reads candidates, not windows) or expects
   *   another feature width than `options.featureDim`
   */
  constructor(
    readonly model: PoseRunner,
    private readonly stats: Pick<InferStats, 'batches' | 'rows' | 'lastBatchMs' | 'avgBatchMs'>,
    options: InferRunnerOptions = {},
  ) {
    if (model.contract === 3) {
      const name = model.metadata.model_version ? `model ${model.metadata.model_version}` : 'the model';
      throw new ModelError(`${name} is a ${CONTRACT_V3} refiner of the physics front end's candidates: it runs in the refine stage, not on window features`);
    }
    if (options.featureDim !== undefined && model.featureDim !== options.featureDim)
      throw new ModelError(`model expects feature_dim ${model.featureDim}, the features have ${options.featureDim}`);
    this.clock = options.clock ?? (() => performance.now());
  }

  /** Batches handed to the model and not yet answered. */
  get inFlight(): number {
    return this.running;
  }

  /** Nothing in flight and no finished batch waiting to be taken. */
  get idle(): boolean {
    return this.running === 0 && this.done.size === 0;
  }

  /**
   * Runs rows as one batch. The rows' features (and history, for v2 models) are copied into one
   * tensor that is handed over to the model (transferred to its worker thread).
   * @param rows the batch's rows, each with the model's feature_dim values
   * @param site the installation's geometry for models with the `site` input; null = unknown
   * @param context kept with the batch and given back by {@link next}
   * @param settled called once, in the tick the model answers: with no argument when the outputs
   *   are stored for {@link next} (or discarded, after {@link stop}), with the error (as
   *   {@link asModelError} gives it) when the run failed
   * @throws ModelError when a row does not have the model's feature_dim values, or the model
   *   refuses the batch at once
   * @example
   * runner.run(rows, site, decode, (error) => (error ? fail(error) : emitReady()));
   */
  run(rows: readonly FeatureRow[], site: SiteGeometry | null, context: C, settled: (error?: Error) => void): void {
    const m = this.model;
    const F = m.featureDim;
    const k = rows.length;
    for (let i = 0; i < k; i++) {
      const len = rows[i]!.features?.length;
      if (len !== F) throw new ModelError(`feature row has ${len ?? 'no'} values, the model expects feature_dim ${F}`);
    }
    const batch = new Float32Array(k * F);
    const history = m.contract === 2 ? new Float32Array(k * HISTORY_WIDTH) : undefined;
    for (let i = 0; i < k; i++) {
      const row = rows[i]!;
      batch.set(row.features, i * F);
      if (history && row.history?.length === HISTORY_WIDTH) history.set(row.history, i * HISTORY_WIDTH);
    }
    const t0 = this.clock();
    let pending: Promise<ModelOutputs>;
    try {
      pending = m.run(batch, k, history ? { transfer: true, site, history } : { transfer: true, site });
    } catch (e) {
      throw asModelError(e);
    }
    const seq = this.launched++;
    this.running++;
    pending.then(
      (out) => {
        this.running--;
        if (!this.stopped) {
          const ms = this.clock() - t0;
          this.totalMs += ms;
          this.stats.batches++;
          this.stats.rows += k;
          this.stats.lastBatchMs = ms;
          this.stats.avgBatchMs = this.totalMs / this.stats.batches;
          this.done.set(seq, { rows, out, context });
        }
        settled();
      },
      (e: unknown) => {
        this.running--;
        settled(asModelError(e));
      },
    );
  }

  /**
   * The next finished batch in launch order: undefined while the one launched before it still runs.
   * @returns the batch, taken off the runner, or undefined
   * @example
   * for (let b = runner.next(); b; b = runner.next()) emit(b);
   */
  next(): InferBatch<C> | undefined {
    const b = this.done.get(this.nextOut);
    if (b) this.done.delete(this.nextOut++);
    return b;
  }

  /**
   * Stops taking results: finished batches are dropped, those in flight are discarded when they
   * finish (not counted in the figures); their `settled` callbacks are still called.
   * @example
   * runner.stop(); // at teardown
   */
  stop(): void {
    this.stopped = true;
    this.done.clear();
  }
}
