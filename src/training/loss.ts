/**
 * The training loss of the pose network and its gradient with respect to the network's raw outputs
 * (targets.ts layout; presence, keypoints, boxes and densepose pass through a sigmoid, floor is
 * linear in normalised units).
 *
 * Per sample, summed over the slots p:
 * - presence: W_PRESENCE * BCE(sigmoid(z), present);
 * - for present slots only:
 *   - keypoints: W_KEYPOINT / 17 * sum over VISIBLE keypoints of smoothL1(x) + smoothL1(y)
 *     (beta 0.04 of the view, about 25 px: below it the loss is quadratic, so under ambiguity, e.g.
 *     which shoulder is the left one, the network learns the mean rather than a guess) plus
 *     W_KP_CONF / 17 * sum over all keypoints of BCE(confidence, visible);
 *   - boxes (when the person has a box): W_BOX / 4 * sum of smoothL1 (beta 0.04);
 *   - floor: W_FLOOR / 2 * sum of smoothL1 of the normalised position (beta 0.5 standard
 *     deviations);
 *   - densepose: W_DP_CONF / 24 * sum BCE(confidence, part visible) plus W_DP_UV / 24 * sum over
 *     visible parts of smoothL1(u) + smoothL1(v) (beta 0.1 of the box).
 * The batch loss is the mean over samples.
 */
import { N_DENSE_PARTS, N_KEYPOINTS } from '../pose/types.js';
import { MAX_PERSONS, OUT, OUTPUT_DIM } from './targets.js';

export const LOSS_WEIGHTS = Object.freeze({
  presence: 1,
  keypoint: 12,
  keypointConf: 0.5,
  box: 6,
  floor: 1,
  denseConf: 0.5,
  denseUv: 2,
});
const BETA_KP = 0.04;
const BETA_BOX = 0.04;
const BETA_FLOOR = 0.5;
const BETA_UV = 0.1;

const sigmoid = (z: number): number => (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));
/** Binary cross-entropy of logit z against target y, computed stably. */
const bce = (z: number, y: number): number => Math.max(z, 0) - z * y + Math.log1p(Math.exp(-Math.abs(z)));

/** Loss components, summed over the batch (divide by the batch size for means). */
export interface LossParts {
  total: number;
  presence: number;
  keypoints: number;
  boxes: number;
  floor: number;
  densepose: number;
}

/** A zeroed LossParts. */
export const emptyLoss = (): LossParts => ({ total: 0, presence: 0, keypoints: 0, boxes: 0, floor: 0, densepose: 0 });

/**
 * Loss of a batch and its gradient.
 * @param y batch x OUTPUT_DIM raw network outputs
 * @param t batch x OUTPUT_DIM targets, the floor already normalised like the network's floor output
 * @param batch rows
 * @param dy receives dLoss/dy of the MEAN loss (batch x OUTPUT_DIM); null to skip the gradient
 * @param parts accumulates the summed components (optional)
 * @returns the mean loss over the batch
 */
export function poseLoss(y: Float32Array, t: Float32Array, batch: number, dy: Float32Array | null, parts?: LossParts): number {
  const W = LOSS_WEIGHTS;
  const inv = 1 / batch;
  let total = 0;
  let lp = 0;
  let lk = 0;
  let lb = 0;
  let lf = 0;
  let ld = 0;
  if (dy) dy.fill(0, 0, batch * OUTPUT_DIM);
  const g = dy ?? new Float32Array(0);
  const grad = dy !== null;
  for (let r = 0; r < batch; r++) {
    const o = r * OUTPUT_DIM;
    for (let p = 0; p < MAX_PERSONS; p++) {
      const i = o + OUT.presence + p;
      const z = y[i]!;
      const present = t[i]!;
      lp += W.presence * bce(z, present);
      if (grad) g[i] = W.presence * (sigmoid(z) - present) * inv;
      if (present < 0.5) continue;

      for (let k = 0; k < N_KEYPOINTS; k++) {
        const j = o + OUT.keypoints + (p * N_KEYPOINTS + k) * 3;
        const vis = t[j + 2]!;
        const zc = y[j + 2]!;
        lk += (W.keypointConf / N_KEYPOINTS) * bce(zc, vis);
        if (grad) g[j + 2] = (W.keypointConf / N_KEYPOINTS) * (sigmoid(zc) - vis) * inv;
        if (vis > 0) {
          const w = (W.keypoint / N_KEYPOINTS) * vis;
          for (let c = 0; c < 2; c++) {
            const s = sigmoid(y[j + c]!);
            const e = s - t[j + c]!;
            const ae = Math.abs(e);
            lk += w * (ae < BETA_KP ? (0.5 * e * e) / BETA_KP : ae - 0.5 * BETA_KP);
            if (grad) g[j + c] = w * Math.max(-1, Math.min(1, e / BETA_KP)) * s * (1 - s) * inv;
          }
        }
      }

      const jb = o + OUT.boxes + p * 4;
      if (t[jb + 2]! > 0 && t[jb + 3]! > 0) {
        const w = W.box / 4;
        for (let c = 0; c < 4; c++) {
          const s = sigmoid(y[jb + c]!);
          const e = s - t[jb + c]!;
          const ae = Math.abs(e);
          lb += w * (ae < BETA_BOX ? (0.5 * e * e) / BETA_BOX : ae - 0.5 * BETA_BOX);
          if (grad) g[jb + c] = w * Math.max(-1, Math.min(1, e / BETA_BOX)) * s * (1 - s) * inv;
        }
      }

      const jf = o + OUT.floor + p * 2;
      for (let c = 0; c < 2; c++) {
        const e = y[jf + c]! - t[jf + c]!;
        const ae = Math.abs(e);
        const w = W.floor / 2;
        lf += w * (ae < BETA_FLOOR ? (0.5 * e * e) / BETA_FLOOR : ae - 0.5 * BETA_FLOOR);
        if (grad) g[jf + c] = w * Math.max(-1, Math.min(1, e / BETA_FLOOR)) * inv;
      }

      for (let part = 0; part < N_DENSE_PARTS; part++) {
        const j = o + OUT.densepose + (p * N_DENSE_PARTS + part) * 3;
        const conf = t[j]!;
        const zc = y[j]!;
        ld += (W.denseConf / N_DENSE_PARTS) * bce(zc, conf);
        if (grad) g[j] = (W.denseConf / N_DENSE_PARTS) * (sigmoid(zc) - conf) * inv;
        if (conf > 0) {
          const w = (W.denseUv / N_DENSE_PARTS) * conf;
          for (let c = 1; c < 3; c++) {
            const s = sigmoid(y[j + c]!);
            const e = s - t[j + c]!;
            const ae = Math.abs(e);
            ld += w * (ae < BETA_UV ? (0.5 * e * e) / BETA_UV : ae - 0.5 * BETA_UV);
            if (grad) g[j + c] = w * Math.max(-1, Math.min(1, e / BETA_UV)) * s * (1 - s) * inv;
          }
        }
      }
    }
  }
  total = lp + lk + lb + lf + ld;
  if (parts) {
    parts.total += total;
    parts.presence += lp;
    parts.keypoints += lk;
    parts.boxes += lb;
    parts.floor += lf;
    parts.densepose += ld;
  }
  return total * inv;
}
