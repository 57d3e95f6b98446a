/**
 * What the infer stage (`operators/infer.ts`) and its steps share: the feature rows it reads, the
 * figures it keeps, and what it does with rows of a CSI layout its model was not trained on. The
 * steps are `InferBatcher` (queueing), `LayoutGate` (layouts), `InferRunner` (the model) and
 * `InferDecoder` (pose frames).
 */
import type { CsiLayout } from './contract.js';

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

/**
 * Sources the infer stage keeps state for: count averages (`InferDecoder`) and untrained links
 * listed (`LayoutGate`); beyond it the oldest is forgotten.
 */
export const MAX_STREAMS = 64;
