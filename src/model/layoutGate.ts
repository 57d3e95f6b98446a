/**
 * Which rows the infer stage lets reach its model: a row whose CSI layout (antennas, subcarriers,
 * band) is not one the model was trained on (`PoseRunner.trainedLayouts`; models that do not say
 * are not checked) is never run. A model fed a layout it never saw answers with confidence all the
 * same (13 ESP32 packets gave a person at confidence 1). `refuse` stops at the first such row with
 * a ModelError naming the source, the layout and what the model was trained on; `drop` drops the
 * row and lists its source in `InferStats.untrained`, so that one such link cannot stop the others.
 */
import { layoutText, untrainedPart, type CsiLayout } from './contract.js';
import { MAX_STREAMS, type FeatureRow, type InferStats, type UntrainedLink, type UntrainedPolicy } from './inferTypes.js';
import { ModelError, type PoseRunner } from './runtime.js';

/**
 * The layout check of one subscription: a verdict per layout object (one per shape, from
 * `features`, so a row costs a lookup), the untrained links listed, and the refusal once there is one.
 * @example
 * const gate = new LayoutGate('drop', stats);
 * const rows = gate.admitted(model, batcher.take(n)); // the untrained ones gone, their links in stats.untrained
 */
export class LayoutGate {
  /** What of each layout the model was not trained on; null = trained. */
  private readonly verdicts = new WeakMap<CsiLayout, string | null>();
  private readonly links = new Map<string, UntrainedLink>();
  private refused: ModelError | undefined;

  /**
   * @param policy `refuse` or `drop`
   * @param stats where the untrained links are listed (`untrained` is replaced when the list changes)
   * @param clock wall-clock epoch ms, for `UntrainedLink.lastAt`
   * @throws RangeError for another policy
   */
  constructor(
    private readonly policy: UntrainedPolicy,
    private readonly stats: Pick<InferStats, 'untrained'>,
    private readonly clock: () => number = Date.now,
  ) {
    if (policy !== 'refuse' && policy !== 'drop') throw new RangeError(`infer: untrained must be 'refuse' or 'drop', got ${String(policy)}`);
  }

  /** With `refuse`: the error of the first row refused (the stream ends with it once the rows before it are out); undefined until then. */
  get refusal(): ModelError | undefined {
    return this.refused;
  }

  /**
   * Whether the model may read the row. A row of a trained layout takes its source off the untrained
   * list; one of an untrained layout sets {@link refusal} (`refuse`) or is counted against its
   * source's link (`drop`), and is not admitted.
   * @param model the model (its `trainedLayouts` and version)
   * @param row the row
   * @returns true to run it
   * @example
   * gate.admit(model, row) // false for an ESP32 row and a model trained on 5 GHz only
   */
  admit(model: Pick<PoseRunner, 'metadata' | 'trainedLayouts'>, row: FeatureRow): boolean {
    const trained = model.trainedLayouts;
    const layout = row.layout;
    if (!trained || !layout) return true;
    let why = this.verdicts.get(layout);
    if (why === undefined) {
      why = untrainedPart(trained, layout);
      this.verdicts.set(layout, why);
    }
    if (why === null) {
      if (this.links.size > 0 && this.links.delete(row.sourceId)) this.list();
      return true;
    }
    const text = layoutText(layout);
    if (this.policy === 'refuse') {
      this.refused = new ModelError(
        `the model ${model.metadata.model_version || '(no version)'} was not trained on the CSI layout of ${row.sourceId}: ${text}; not trained on ${why}`,
      );
      return false;
    }
    let link = this.links.get(row.sourceId);
    if (!link || link.layout !== text) {
      if (!link && this.links.size >= MAX_STREAMS) this.links.delete(this.links.keys().next().value!);
      link = { sourceId: row.sourceId, environmentId: row.environmentId, layout: text, reason: why, windows: 0, lastAt: 0 };
      this.links.set(row.sourceId, link);
      this.list();
    }
    link.windows++;
    link.lastAt = this.clock();
    return false;
  }

  /**
   * The rows of a batch the model may read, kept in place and in order; at a refused row the rest
   * of the batch goes too (see {@link admit}).
   * @param model the model
   * @param rows the batch's rows (shortened in place)
   * @returns `rows`
   * @example
   * const rows = gate.admitted(model, batcher.take(n));
   * if (gate.refusal) batcher.clear();
   */
  admitted(model: Pick<PoseRunner, 'metadata' | 'trainedLayouts'>, rows: FeatureRow[]): FeatureRow[] {
    let k = 0;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (this.admit(model, row)) rows[k++] = row;
      else if (this.refused) break;
    }
    rows.length = k;
    return rows;
  }

  private list(): void {
    this.stats.untrained = [...this.links.values()];
  }
}
