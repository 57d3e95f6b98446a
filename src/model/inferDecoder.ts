/**
 * The infer stage's decoding: a row of a batch's outputs becomes a pose frame, with its persons
 * (`decodeOutputs`), a frame id per environment, and, for v2 models, the count smoothed per source
 * and held by the hysteresis of COUNT_HYSTERESIS (`countWithHysteresis`). One decoder per
 * subscription holds that state, and the camera of the last view it was given.
 */
import { viewCamera, type Camera, type ViewSettings } from '../pose/camera.js';
import type { PoseFrame } from '../pose/types.js';
import { countWithHysteresis } from './countHysteresis.js';
import { MAX_STREAMS, type FeatureRow } from './inferTypes.js';
import { decodeOutputs, type DecodeOptions, type ModelOutputs } from './runtime.js';

/**
 * v2 models: the weight of the newest window in the per-source moving average of the `count`
 * distribution that decides how many persons a frame has (1 = no smoothing). A window comes every
 * 80 ms at the default hop, so 0.1 averages over about 0.8 s. Chosen on VALIDATION scenarios
 * (`npm run bench:accuracy -- --split val`): against none (1), exact count 0.503 -> 0.512 and
 * identity switches 615 -> 549; 0.2 and 0.3 were in between.
 */
export const COUNT_SMOOTHING = 0.1;

/** A source whose next window is more than this much later (or any earlier) starts its count average afresh, ms. */
export const COUNT_RESET_MS = 2000;

/** One source's count: the moving-average distribution, the frame time of its last window, the count shown. */
interface CountState {
  time: number;
  p: Float64Array;
  shown: number;
}

/**
 * Pose frames from model outputs, for one subscription of the infer stage.
 * @example
 * const decoder = new InferDecoder();
 * const decode = { view: { width: 640, height: 480 }, confidenceThreshold: 0.5, maxPersons: 4, includeDensePose: true,
 *   camera: decoder.cameraFor(view) };
 * for (let r = 0; r < batch.rows.length; r++) emit(decoder.frame(batch.out, r, batch.rows[r], decode, 'v2.1', Date.now()));
 */
export class InferDecoder {
  private readonly frameIds = new Map<string, number>();
  private readonly counts = new Map<string, CountState>();
  private lastView: { key: string; camera: Camera } | undefined;

  /**
   * The camera of a reference view, built once per change of the view (a live view is read per
   * row and batch).
   * @param v the view settings
   * @returns the camera; the same object while the view stays the same
   * @example
   * decoder.cameraFor(DEFAULT_VIEW) === decoder.cameraFor({ ...DEFAULT_VIEW }) // true
   */
  cameraFor(v: ViewSettings): Camera {
    const key = `${v.width},${v.height},${v.hfov_deg},${v.x},${v.y},${v.z},${v.yaw_deg},${v.pitch_deg}`;
    if (this.lastView?.key !== key) this.lastView = { key, camera: viewCamera(v) };
    return this.lastView.camera;
  }

  /**
   * v2: replaces row `r`'s count distribution in `out` by its source's moving average
   * (COUNT_SMOOTHING) and gives the count to show, with hysteresis. The average starts afresh at a
   * source's first window, after a gap of more than COUNT_RESET_MS, when time goes back, and when the
   * model's person slots change; at most MAX_STREAMS sources are kept (the oldest goes first).
   * @param out the batch's outputs (row `r` of `out.count` is overwritten)
   * @param r the row in the batch
   * @param row its feature row (source and frame time)
   * @param threshold `confidence_threshold`
   * @returns the count to show, 0..P; undefined for v1 outputs (their decoder applies its own rule)
   * @example
   * decoder.count(out, 0, row, 0.5) // 1
   */
  count(out: ModelOutputs, r: number, row: FeatureRow, threshold: number): number | undefined {
    if (out.contract !== 2) return undefined;
    const P = out.maxPersons;
    const K = P + 1;
    const counts = this.counts;
    let st = counts.get(row.sourceId);
    const fresh = !st || st.p.length !== K || Math.abs(row.frameTime - st.time) > COUNT_RESET_MS || row.frameTime < st.time;
    if (!st || st.p.length !== K) {
      if (counts.size >= MAX_STREAMS) counts.delete(counts.keys().next().value!);
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
  }

  /**
   * The pose frame of row `r` of a batch: its persons (the count of {@link count} for v2), the
   * environment's next frame id (0, 1, 2...), `processingMs` from the row's arrival to `now`.
   * @param out the batch's outputs
   * @param r the row in the batch
   * @param row its feature row
   * @param decode threshold, person limit, view and camera as the batch was launched with
   * @param modelVersion the model's version ('unknown' when it has none)
   * @param now wall-clock epoch ms of emission
   * @returns the frame
   * @throws RangeError when `r` is outside the batch or the outputs are a v3 refiner's
   * @example
   * decoder.frame(out, 0, row, decode, 'test-1', Date.now()).persons.length // 2
   */
  frame(out: ModelOutputs, r: number, row: FeatureRow, decode: DecodeOptions, modelVersion: string, now: number): PoseFrame {
    const id = this.frameIds.get(row.environmentId) ?? 0;
    this.frameIds.set(row.environmentId, id + 1);
    const count = this.count(out, r, row, decode.confidenceThreshold);
    return {
      frameId: id,
      time: row.frameTime,
      sourceId: row.sourceId,
      environmentId: row.environmentId,
      persons: decodeOutputs(out, r, count === undefined ? decode : { ...decode, count }),
      processingMs: row.arrival > 0 ? Math.max(0, now - row.arrival) : 0,
      modelVersion,
      csiQuality: row.csiQuality,
      ...(out.contract === 2 ? { fallProbability: out.fall[r]! } : {}),
    };
  }
}
