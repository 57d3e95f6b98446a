/**
 * Training of the pose MLP: feature standardisation, mini-batch AdamW with a warm-up and cosine
 * learning-rate schedule, model selection on the validation loss, and export of the weights in
 * the form `buildMlpPoseModel` writes (standardisation and the floor scale folded in, so that the
 * ONNX model takes raw feature rows and returns metres).
 */
import { N_DENSE_PARTS, N_KEYPOINTS } from '../pose/types.js';
import { Rng, deriveSeed } from '../sim/rng.js';
import type { DenseWeights, MlpPoseWeights } from '../model/onnxWriter.js';
import type { Dataset } from './dataset.js';
import { emptyLoss, poseLoss, type LossParts } from './loss.js';
import { AdamW, Mlp } from './mlp.js';
import { MAX_PERSONS, OUT, OUTPUT_DIM } from './targets.js';

/** Settings of one training run. */
export interface TrainSettings {
  /** Hidden layer widths. */
  hidden: number[];
  epochs: number;
  batch: number;
  /** Peak learning rate. */
  lr: number;
  /** Final learning rate of the cosine schedule. */
  lrMin: number;
  /** Steps of linear warm-up from lr / 10. */
  warmupSteps: number;
  weightDecay: number;
  /** Standard deviation of Gaussian noise added to the standardised inputs while training. */
  inputNoise: number;
  /** Probability of zeroing each standardised input while training (inverted-dropout scaled). */
  inputDropout: number;
  /** Dropout probability of the hidden units while training. */
  dropout: number;
  seed: number;
}

/** Per-feature standardisation and the floor scale, fitted on TRAIN only. */
export interface Normalizer {
  mean: Float32Array;
  std: Float32Array;
  floorMean: [number, number];
  floorStd: [number, number];
}

/** One epoch of the training history. */
export interface EpochRecord {
  epoch: number;
  lr: number;
  trainLoss: number;
  valLoss: number;
  val: Omit<LossParts, 'total'>;
  seconds: number;
  samplesPerSecond: number;
}

/** What the progress callback is told. */
export interface TrainProgress {
  epoch: number;
  epochs: number;
  batch: number;
  batches: number;
  loss: number;
  samplesPerSecond: number;
  /** Seconds left, estimated from the pace so far. */
  etaSeconds: number;
}

/** Smallest standard deviation used to scale a feature (constant features are left as they are). */
const MIN_STD = 1e-3;

/**
 * Fits the standardisation on a dataset (normally TRAIN).
 * @param d the dataset
 * @param featureDim row width
 * @returns means and standard deviations per feature, and of the floor targets of present slots
 */
export function fitNormalizer(d: Dataset, featureDim: number): Normalizer {
  const sum = new Float64Array(featureDim);
  const sq = new Float64Array(featureDim);
  for (let r = 0; r < d.n; r++) {
    const o = r * featureDim;
    for (let j = 0; j < featureDim; j++) {
      const v = d.features[o + j]!;
      sum[j] += v;
      sq[j] += v * v;
    }
  }
  const mean = new Float32Array(featureDim);
  const std = new Float32Array(featureDim);
  for (let j = 0; j < featureDim; j++) {
    const m = d.n > 0 ? sum[j]! / d.n : 0;
    const v = d.n > 0 ? Math.max(0, sq[j]! / d.n - m * m) : 0;
    mean[j] = m;
    std[j] = Math.sqrt(v) < MIN_STD ? 1 : Math.sqrt(v);
  }
  const fs = [0, 0];
  const fq = [0, 0];
  let count = 0;
  for (let r = 0; r < d.n; r++) {
    for (let p = 0; p < MAX_PERSONS; p++) {
      if (d.targets[r * OUTPUT_DIM + OUT.presence + p]! < 0.5) continue;
      count++;
      for (let c = 0; c < 2; c++) {
        const v = d.targets[r * OUTPUT_DIM + OUT.floor + p * 2 + c]!;
        fs[c] += v;
        fq[c] += v * v;
      }
    }
  }
  const fm = fs.map((s) => (count > 0 ? s / count : 0)) as [number, number];
  const fsd = fq.map((q, c) => (count > 0 ? Math.max(0.1, Math.sqrt(Math.max(0, q / count - fm[c]! * fm[c]!))) : 1)) as [number, number];
  return { mean, std, floorMean: fm, floorStd: fsd };
}

/**
 * Standardised copies of a dataset's features and targets (floor in normalised units).
 * @param d the dataset
 * @param norm the standardisation
 * @param featureDim row width
 * @returns features and targets ready for the network
 */
export function prepare(d: Dataset, norm: Normalizer, featureDim: number): { x: Float32Array; t: Float32Array } {
  const x = new Float32Array(d.n * featureDim);
  for (let r = 0; r < d.n; r++) {
    const o = r * featureDim;
    for (let j = 0; j < featureDim; j++) x[o + j] = (d.features[o + j]! - norm.mean[j]!) / norm.std[j]!;
  }
  const t = Float32Array.from(d.targets);
  for (let r = 0; r < d.n; r++) {
    for (let p = 0; p < MAX_PERSONS; p++) {
      for (let c = 0; c < 2; c++) {
        const i = r * OUTPUT_DIM + OUT.floor + p * 2 + c;
        t[i] = (t[i]! - norm.floorMean[c]!) / norm.floorStd[c]!;
      }
    }
  }
  return { x, t };
}

/**
 * Learning rate at a step: linear warm-up from lr / 10, then cosine decay to lrMin.
 * @returns the learning rate
 */
export function learningRate(s: TrainSettings, step: number, totalSteps: number): number {
  if (step < s.warmupSteps) return s.lr * (0.1 + (0.9 * step) / Math.max(1, s.warmupSteps));
  const f = Math.min(1, (step - s.warmupSteps) / Math.max(1, totalSteps - s.warmupSteps));
  return s.lrMin + 0.5 * (s.lr - s.lrMin) * (1 + Math.cos(Math.PI * f));
}

/**
 * Mean loss of a prepared set (no gradient).
 * @returns the mean loss and its summed components
 */
export function evaluateLoss(net: Mlp, x: Float32Array, t: Float32Array, n: number, batch = 512): { loss: number; parts: LossParts } {
  const parts = emptyLoss();
  const F = net.inDim;
  for (let s = 0; s < n; s += batch) {
    const b = Math.min(batch, n - s);
    const y = net.forward(x.subarray(s * F, (s + b) * F), b);
    poseLoss(y, t.subarray(s * OUTPUT_DIM, (s + b) * OUTPUT_DIM), b, null, parts);
  }
  return { loss: n > 0 ? parts.total / n : 0, parts };
}

function snapshot(net: Mlp): Array<{ w: Float32Array; b: Float32Array }> {
  return net.layers.map((l) => ({ w: Float32Array.from(l.w), b: Float32Array.from(l.b) }));
}

function restore(net: Mlp, snap: Array<{ w: Float32Array; b: Float32Array }>): void {
  net.layers.forEach((l, i) => {
    l.w.set(snap[i]!.w);
    l.b.set(snap[i]!.b);
  });
}

/** Result of `train`. */
export interface TrainResult {
  net: Mlp;
  history: EpochRecord[];
  /** Epoch (1-based) whose weights were kept: the lowest validation loss. */
  bestEpoch: number;
  seconds: number;
  samplesPerSecond: number;
}

/**
 * Trains the network.
 * @param data prepared TRAIN (standardised features, normalised floor)
 * @param val prepared VALIDATION
 * @param featureDim row width
 * @param s settings
 * @param onProgress called every few batches
 * @returns the network with the weights of its best validation epoch, and the history
 */
export function train(
  data: { x: Float32Array; t: Float32Array; n: number },
  val: { x: Float32Array; t: Float32Array; n: number },
  featureDim: number,
  s: TrainSettings,
  onProgress?: (p: TrainProgress) => void,
): TrainResult {
  const net = new Mlp([featureDim, ...s.hidden, OUTPUT_DIM], new Rng(deriveSeed(s.seed, 21)));
  const opt = new AdamW(net);
  const shuffle = new Rng(deriveSeed(s.seed, 22));
  const noise = new Rng(deriveSeed(s.seed, 23));
  const keep = 1 - s.inputDropout;
  const n = data.n;
  const B = s.batch;
  const batches = Math.max(1, Math.ceil(n / B));
  const totalSteps = batches * s.epochs;
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const xb = new Float32Array(B * featureDim);
  const tb = new Float32Array(B * OUTPUT_DIM);
  const dy = new Float32Array(B * OUTPUT_DIM);
  const history: EpochRecord[] = [];
  let best = Infinity;
  let bestEpoch = 0;
  let bestWeights = snapshot(net);
  let step = 0;
  const t0 = performance.now();
  for (let epoch = 1; epoch <= s.epochs; epoch++) {
    const e0 = performance.now();
    for (let i = n - 1; i > 0; i--) {
      const j = shuffle.int(0, i);
      const tmp = order[i]!;
      order[i] = order[j]!;
      order[j] = tmp;
    }
    let sum = 0;
    let lr = s.lr;
    for (let bi = 0; bi < batches; bi++) {
      const start = bi * B;
      const b = Math.min(B, n - start);
      for (let r = 0; r < b; r++) {
        const src = order[start + r]!;
        xb.set(data.x.subarray(src * featureDim, (src + 1) * featureDim), r * featureDim);
        tb.set(data.t.subarray(src * OUTPUT_DIM, (src + 1) * OUTPUT_DIM), r * OUTPUT_DIM);
      }
      if (s.inputNoise > 0 || s.inputDropout > 0) {
        for (let i = 0; i < b * featureDim; i++) {
          let v = xb[i]!;
          if (s.inputDropout > 0) v = noise.uniform() < s.inputDropout ? 0 : v / keep;
          if (s.inputNoise > 0) v += noise.gaussian(0, s.inputNoise);
          xb[i] = v;
        }
      }
      const y = net.forward(xb, b, s.dropout, noise);
      const loss = poseLoss(y, tb, b, dy);
      net.backward(dy, b);
      lr = learningRate(s, step, totalSteps);
      opt.step(lr, s.weightDecay);
      step++;
      sum += loss * b;
      if (onProgress && (bi % 8 === 0 || bi + 1 === batches)) {
        const elapsed = (performance.now() - t0) / 1000;
        const done = (epoch - 1) * n + start + b;
        const rate = done / Math.max(1e-9, elapsed);
        onProgress({
          epoch,
          epochs: s.epochs,
          batch: bi + 1,
          batches,
          loss: sum / (start + b),
          samplesPerSecond: rate,
          etaSeconds: (s.epochs * n - done) / Math.max(1e-9, rate),
        });
      }
    }
    const v = evaluateLoss(net, val.x, val.t, val.n);
    const seconds = (performance.now() - e0) / 1000;
    const vn = Math.max(1, val.n);
    history.push({
      epoch,
      lr,
      trainLoss: sum / Math.max(1, n),
      valLoss: v.loss,
      val: {
        presence: v.parts.presence / vn,
        keypoints: v.parts.keypoints / vn,
        boxes: v.parts.boxes / vn,
        floor: v.parts.floor / vn,
        densepose: v.parts.densepose / vn,
      },
      seconds,
      samplesPerSecond: n / seconds,
    });
    if (v.loss < best || val.n === 0) {
      best = v.loss;
      bestEpoch = epoch;
      bestWeights = snapshot(net);
    }
  }
  restore(net, bestWeights);
  const seconds = (performance.now() - t0) / 1000;
  return { net, history, bestEpoch, seconds, samplesPerSecond: (n * s.epochs) / seconds };
}

/** Columns [from, to) of a row-major [rows][cols] matrix. */
function columns(w: Float32Array, rows: number, cols: number, from: number, to: number): Float32Array {
  const out = new Float32Array(rows * (to - from));
  for (let r = 0; r < rows; r++) out.set(w.subarray(r * cols + from, r * cols + to), r * (to - from));
  return out;
}

/**
 * The trained network as `MlpPoseWeights`: the feature standardisation folded into the first layer
 * (W' = W / std per input row, b' = b - sum(mean / std * W)), the last layer split into the five
 * heads, and the floor head scaled back to metres (W' = W * floorStd, b' = b * floorStd + floorMean).
 * @param net trained network
 * @param norm the standardisation it was trained with
 * @returns weights for buildMlpPoseModel
 */
export function toPoseWeights(net: Mlp, norm: Normalizer): MlpPoseWeights {
  const dense = net.layers.map((l) => ({ in: l.in, out: l.out, w: Float32Array.from(l.w), b: Float32Array.from(l.b) }));
  const first = dense[0]!;
  const b64 = Float64Array.from(first.b);
  for (let i = 0; i < first.in; i++) {
    const sd = norm.std[i]!;
    const mu = norm.mean[i]!;
    for (let j = 0; j < first.out; j++) {
      const w = first.w[i * first.out + j]! / sd;
      first.w[i * first.out + j] = w;
      b64[j] -= mu * w;
    }
  }
  first.b.set(b64);
  const last = dense[dense.length - 1]!;
  const H = last.in;
  const span = (from: number, to: number): DenseWeights => ({
    in: H,
    out: to - from,
    w: columns(last.w, H, last.out, from, to),
    b: last.b.slice(from, to),
  });
  const floor = span(OUT.floor, OUT.floor + MAX_PERSONS * 2);
  for (let j = 0; j < floor.out; j++) {
    const c = j % 2;
    const sd = norm.floorStd[c]!;
    for (let i = 0; i < H; i++) floor.w[i * floor.out + j] *= sd;
    floor.b[j] = floor.b[j]! * sd + norm.floorMean[c]!;
  }
  return {
    layers: dense.slice(0, -1),
    heads: {
      presence: span(OUT.presence, OUT.presence + MAX_PERSONS),
      keypoints: span(OUT.keypoints, OUT.keypoints + MAX_PERSONS * N_KEYPOINTS * 3),
      boxes: span(OUT.boxes, OUT.boxes + MAX_PERSONS * 4),
      floor,
      densepose: span(OUT.densepose, OUT.densepose + MAX_PERSONS * N_DENSE_PARTS * 3),
    },
  };
}

/**
 * The contract outputs the TypeScript network gives for raw feature rows (sigmoids applied, floor
 * in metres), in the flat targets.ts layout: the reference the exported ONNX model must match.
 * @param net trained network
 * @param norm its standardisation
 * @param features n x featureDim raw rows
 * @param n rows
 * @returns n x OUTPUT_DIM outputs
 */
export function predict(net: Mlp, norm: Normalizer, features: Float32Array, n: number): Float32Array {
  const F = net.inDim;
  const x = new Float32Array(n * F);
  for (let r = 0; r < n; r++) for (let j = 0; j < F; j++) x[r * F + j] = (features[r * F + j]! - norm.mean[j]!) / norm.std[j]!;
  const y = Float32Array.from(net.forward(x, n));
  for (let r = 0; r < n; r++) {
    const o = r * OUTPUT_DIM;
    for (let j = 0; j < OUTPUT_DIM; j++) {
      if (j >= OUT.floor && j < OUT.densepose) {
        const c = (j - OUT.floor) % 2;
        y[o + j] = y[o + j]! * norm.floorStd[c]! + norm.floorMean[c]!;
      } else y[o + j] = 1 / (1 + Math.exp(-y[o + j]!));
    }
  }
  return y;
}
