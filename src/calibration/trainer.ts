/**
 * Training of the v2 pose network: input standardisation, mini-batch AdamW with a warm-up and
 * cosine learning-rate schedule, model selection on the validation loss, and export of the weights
 * in the form `buildPoseModelV2` writes (the standardisation and the root scale folded in, so that
 * the ONNX model takes raw inputs and returns metres).
 *
 * Rows are assembled batch by batch from a `RowSource` (features, history and site side by side),
 * so a split is never copied whole into network inputs.
 */
import { N_KEYPOINTS } from '../pose/types.js';
import { Rng, deriveSeed } from '../sim/rng.js';
import type { DenseWeights, PoseWeightsV2 } from './onnxWriter.js';
import { emptyLoss, poseLoss, type LossParts } from './loss.js';
import { AdamW, Mlp } from './mlp.js';
import { MAX_PERSONS, N_ACTIVITIES, OUT, OUTPUT_DIM, TARGET, TARGET_DIM } from './targets.js';

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
  /** Dropout probability of the hidden units while training. */
  dropout: number;
  seed: number;
}

/**
 * Where training rows come from: `n` rows of `dim` raw inputs, written on demand, and their
 * targets (TARGET_DIM each, raw: root in metres).
 */
export interface RowSource {
  n: number;
  dim: number;
  /** Writes the raw inputs of rows[from .. from + count) at out[0 ..). */
  fill(rows: ArrayLike<number>, from: number, count: number, out: Float32Array): void;
  targets: Float32Array;
}

/** Per-input standardisation and the root scale, fitted on TRAIN only. */
export interface Normalizer {
  mean: Float32Array;
  std: Float32Array;
  rootMean: [number, number, number];
  rootStd: [number, number, number];
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

/** Smallest standard deviation used to scale an input (constant inputs are left as they are). */
const MIN_STD = 1e-3;
/** Rows assembled at a time outside training steps. */
const CHUNK = 512;

const identity = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => i);

/**
 * Fits the standardisation on a row source (normally TRAIN).
 * @param src the rows
 * @param root the root scale to use instead of fitting it on `src.targets` (whose layout must
 *   otherwise be TARGET's)
 * @returns means and standard deviations per input, and of the root targets of present slots
 */
export function fitNormalizer(src: RowSource, root?: { mean: [number, number, number]; std: [number, number, number] }): Normalizer {
  const D = src.dim;
  const sum = new Float64Array(D);
  const sq = new Float64Array(D);
  const rows = identity(src.n);
  const buf = new Float32Array(CHUNK * D);
  for (let s = 0; s < src.n; s += CHUNK) {
    const b = Math.min(CHUNK, src.n - s);
    src.fill(rows, s, b, buf);
    for (let r = 0; r < b; r++) {
      for (let j = 0; j < D; j++) {
        const v = buf[r * D + j]!;
        sum[j] += v;
        sq[j] += v * v;
      }
    }
  }
  const mean = new Float32Array(D);
  const std = new Float32Array(D);
  for (let j = 0; j < D; j++) {
    const m = src.n > 0 ? sum[j]! / src.n : 0;
    const v = src.n > 0 ? Math.max(0, sq[j]! / src.n - m * m) : 0;
    mean[j] = m;
    std[j] = Math.sqrt(v) < MIN_STD ? 1 : Math.sqrt(v);
  }
  if (root) return { mean, std, rootMean: [...root.mean], rootStd: [...root.std] };
  const rs = [0, 0, 0];
  const rq = [0, 0, 0];
  let count = 0;
  for (let r = 0; r < src.n; r++) {
    for (let p = 0; p < MAX_PERSONS; p++) {
      if (src.targets[r * TARGET_DIM + TARGET.presence + p]! < 0.5) continue;
      count++;
      for (let c = 0; c < 3; c++) {
        const v = src.targets[r * TARGET_DIM + TARGET.root + p * 3 + c]!;
        rs[c] += v;
        rq[c] += v * v;
      }
    }
  }
  const rootMean = rs.map((s) => (count > 0 ? s / count : 0)) as [number, number, number];
  const rootStd = rq.map((q, c) => (count > 0 ? Math.max(0.05, Math.sqrt(Math.max(0, q / count - rootMean[c]! * rootMean[c]!))) : 1)) as [
    number,
    number,
    number,
  ];
  return { mean, std, rootMean, rootStd };
}

/** Standardises `count` rows of raw inputs in place. */
export function standardise(x: Float32Array, count: number, norm: Normalizer): void {
  const D = norm.mean.length;
  for (let r = 0; r < count; r++) {
    const o = r * D;
    for (let j = 0; j < D; j++) x[o + j] = (x[o + j]! - norm.mean[j]!) / norm.std[j]!;
  }
}

/** Targets with the root standardised like the network's root output. */
export function normaliseTargets(t: Float32Array, norm: Normalizer): Float32Array {
  const out = Float32Array.from(t);
  const n = t.length / TARGET_DIM;
  for (let r = 0; r < n; r++) {
    for (let p = 0; p < MAX_PERSONS; p++) {
      for (let c = 0; c < 3; c++) {
        const i = r * TARGET_DIM + TARGET.root + p * 3 + c;
        out[i] = (out[i]! - norm.rootMean[c]!) / norm.rootStd[c]!;
      }
    }
  }
  return out;
}

/**
 * What a training run minimises: the targets' width, how they are prepared once (e.g. the root
 * standardised) and the loss with its gradient. `POSE_OBJECTIVE` is the model's own training;
 * `csipose calibrate` brings another (camera labels, see calibrate.ts).
 */
export interface Objective {
  targetDim: number;
  prepare(targets: Float32Array, norm: Normalizer): Float32Array;
  loss(y: Float32Array, t: Float32Array, batch: number, dy: Float32Array | null, parts?: LossParts): number;
}

export const POSE_OBJECTIVE: Objective = { targetDim: TARGET_DIM, prepare: normaliseTargets, loss: poseLoss };

/**
 * Learning rate at a step: linear warm-up from lr / 10, then cosine decay to lrMin.
 * @returns the learning rate
 */
export function learningRate(s: Pick<TrainSettings, 'lr' | 'lrMin' | 'warmupSteps'>, step: number, totalSteps: number): number {
  if (step < s.warmupSteps) return s.lr * (0.1 + (0.9 * step) / Math.max(1, s.warmupSteps));
  const f = Math.min(1, (step - s.warmupSteps) / Math.max(1, totalSteps - s.warmupSteps));
  return s.lrMin + 0.5 * (s.lr - s.lrMin) * (1 + Math.cos(Math.PI * f));
}

/**
 * Mean loss of a row source (no gradient).
 * @param t its targets, root standardised
 * @returns the mean loss and its summed components
 */
export function evaluateLoss(net: Mlp, src: RowSource, t: Float32Array, norm: Normalizer, obj: Objective = POSE_OBJECTIVE): { loss: number; parts: LossParts } {
  const parts = emptyLoss();
  const T = obj.targetDim;
  const rows = identity(src.n);
  const buf = new Float32Array(CHUNK * src.dim);
  for (let s = 0; s < src.n; s += CHUNK) {
    const b = Math.min(CHUNK, src.n - s);
    src.fill(rows, s, b, buf);
    standardise(buf, b, norm);
    const y = net.forward(buf, b);
    obj.loss(y, t.subarray(s * T, (s + b) * T), b, null, parts);
  }
  return { loss: src.n > 0 ? parts.total / src.n : 0, parts };
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

/** Options of `train` beyond the settings. */
export interface TrainOptions {
  /** Start from these weights (fine-tuning) instead of a fresh initialisation. */
  init?: Mlp;
  /** What to minimise; default POSE_OBJECTIVE. */
  objective?: Objective;
  onProgress?: (p: TrainProgress) => void;
}

/**
 * Trains the network.
 * @param data TRAIN rows
 * @param val VALIDATION rows (may be empty: then the last epoch is kept)
 * @param norm the standardisation (fitted on TRAIN)
 * @param s settings
 * @param opts initial network, progress callback
 * @returns the network with the weights of its best validation epoch, and the history
 */
export function train(data: RowSource, val: RowSource, norm: Normalizer, s: TrainSettings, opts: TrainOptions = {}): TrainResult {
  const D = data.dim;
  const net = opts.init ?? new Mlp([D, ...s.hidden, OUTPUT_DIM], new Rng(deriveSeed(s.seed, 21)));
  const opt = new AdamW(net);
  const shuffle = new Rng(deriveSeed(s.seed, 22));
  const noise = new Rng(deriveSeed(s.seed, 23));
  const n = data.n;
  const B = s.batch;
  const batches = Math.max(1, Math.ceil(n / B));
  const totalSteps = batches * s.epochs;
  const order = identity(n);
  const obj = opts.objective ?? POSE_OBJECTIVE;
  const T = obj.targetDim;
  const xb = new Float32Array(B * D);
  const tb = new Float32Array(B * T);
  const dy = new Float32Array(B * OUTPUT_DIM);
  const tTrain = obj.prepare(data.targets, norm);
  const tVal = obj.prepare(val.targets, norm);
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
      data.fill(order, start, b, xb);
      standardise(xb, b, norm);
      for (let r = 0; r < b; r++) {
        const src = order[start + r]!;
        tb.set(tTrain.subarray(src * T, (src + 1) * T), r * T);
      }
      const y = net.forward(xb, b, s.dropout, noise);
      const loss = obj.loss(y, tb, b, dy);
      net.backward(dy, b);
      lr = learningRate(s, step, totalSteps);
      opt.step(lr, s.weightDecay);
      step++;
      sum += loss * b;
      if (opts.onProgress && (bi % 8 === 0 || bi + 1 === batches)) {
        const elapsed = (performance.now() - t0) / 1000;
        const done = (epoch - 1) * n + start + b;
        const rate = done / Math.max(1e-9, elapsed);
        opts.onProgress({
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
    const v = evaluateLoss(net, val, tVal, norm, obj);
    const seconds = (performance.now() - e0) / 1000;
    const vn = Math.max(1, val.n);
    const { total: _total, ...parts } = v.parts;
    history.push({
      epoch,
      lr,
      trainLoss: sum / Math.max(1, n),
      valLoss: v.loss,
      val: Object.fromEntries(Object.entries(parts).map(([k, x]) => [k, x / vn])) as Omit<LossParts, 'total'>,
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
 * The trained network as `PoseWeightsV2`: the input standardisation folded into the first layer
 * (W' = W / std per input row, b' = b - sum(mean / std * W)), the last layer split into the heads,
 * and the root head scaled back to metres (W' = W * rootStd, b' = b * rootStd + rootMean).
 * @param net trained network
 * @param norm the standardisation it was trained with
 * @returns weights for buildPoseModelV2
 */
export function toPoseWeights(net: Mlp, norm: Normalizer): PoseWeightsV2 {
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
  const root = span(OUT.root, OUT.root + MAX_PERSONS * 3);
  for (let j = 0; j < root.out; j++) {
    const c = j % 3;
    const sd = norm.rootStd[c]!;
    for (let i = 0; i < H; i++) root.w[i * root.out + j] *= sd;
    root.b[j] = root.b[j]! * sd + norm.rootMean[c]!;
  }
  return {
    layers: dense.slice(0, -1),
    heads: {
      count: span(OUT.count, OUT.count + MAX_PERSONS + 1),
      presence: span(OUT.presence, OUT.presence + MAX_PERSONS),
      root,
      offsets: span(OUT.offsets, OUT.offsets + MAX_PERSONS * N_KEYPOINTS * 3),
      activity: span(OUT.activity, OUT.activity + MAX_PERSONS * N_ACTIVITIES),
      fall: span(OUT.fall, OUT.fall + 1),
    },
  };
}

/**
 * The inverse of `toPoseWeights` for fine-tuning a shipped model: a network whose raw outputs are
 * those of `weights` given standardised inputs (the standardisation unfolded from the first layer,
 * the root head put back into normalised units, the heads joined into one last layer).
 * @param weights a v2 model's weights (e.g. read back from its ONNX file)
 * @param norm the standardisation to train with from now on
 * @returns a network ready for `train({ init })`
 */
export function fromPoseWeights(weights: PoseWeightsV2, norm: Normalizer): Mlp {
  const layers = weights.layers;
  const heads = weights.heads;
  const H = layers.length > 0 ? layers[layers.length - 1]!.out : norm.mean.length;
  const sizes = [norm.mean.length, ...layers.map((l) => l.out), OUTPUT_DIM];
  const net = new Mlp(sizes, new Rng(1));
  layers.forEach((l, i) => {
    net.layers[i]!.w.set(l.w);
    net.layers[i]!.b.set(l.b);
  });
  // Unfold the standardisation: W = W' * std, b = b' + sum(mean * W').
  const first = net.layers[0]!;
  const b64 = Float64Array.from(first.b);
  for (let i = 0; i < first.in; i++) {
    for (let j = 0; j < first.out; j++) {
      const w = first.w[i * first.out + j]!;
      b64[j] += norm.mean[i]! * w;
      first.w[i * first.out + j] = w * norm.std[i]!;
    }
  }
  first.b.set(b64);
  const last = net.layers[net.layers.length - 1]!;
  const put = (d: DenseWeights, at: number, scale?: (j: number) => { sd: number; mu: number }) => {
    for (let j = 0; j < d.out; j++) {
      const s = scale?.(j);
      for (let i = 0; i < H; i++) last.w[i * OUTPUT_DIM + at + j] = s ? d.w[i * d.out + j]! / s.sd : d.w[i * d.out + j]!;
      last.b[at + j] = s ? (d.b[j]! - s.mu) / s.sd : d.b[j]!;
    }
  };
  put(heads.count, OUT.count);
  put(heads.presence, OUT.presence);
  put(heads.root, OUT.root, (j) => ({ sd: norm.rootStd[j % 3]!, mu: norm.rootMean[j % 3]! }));
  put(heads.offsets, OUT.offsets);
  put(heads.activity, OUT.activity);
  put(heads.fall, OUT.fall);
  return net;
}

/** The v2 contract outputs of a batch, flat, as the exported model gives them. */
export interface FlatOutputsV2 {
  n: number;
  count: Float32Array;
  presence: Float32Array;
  keypoints3d: Float32Array;
  activity: Float32Array;
  fall: Float32Array;
}

/**
 * The contract outputs the TypeScript network gives for raw input rows (softmaxes and sigmoids
 * applied, skeleton = root + offsets in metres): the reference the exported ONNX model must match.
 * @param net trained network
 * @param norm its standardisation
 * @param src the rows
 * @returns the outputs of every row
 */
export function predict(net: Mlp, norm: Normalizer, src: RowSource): FlatOutputsV2 {
  const n = src.n;
  const P = MAX_PERSONS;
  const out: FlatOutputsV2 = {
    n,
    count: new Float32Array(n * (P + 1)),
    presence: new Float32Array(n * P),
    keypoints3d: new Float32Array(n * P * N_KEYPOINTS * 3),
    activity: new Float32Array(n * P * N_ACTIVITIES),
    fall: new Float32Array(n),
  };
  const rows = identity(n);
  const buf = new Float32Array(CHUNK * src.dim);
  const softmax = (y: Float32Array, at: number, k: number, dst: Float32Array, to: number) => {
    let m = -Infinity;
    for (let i = 0; i < k; i++) m = Math.max(m, y[at + i]!);
    let s = 0;
    for (let i = 0; i < k; i++) s += Math.exp(y[at + i]! - m);
    for (let i = 0; i < k; i++) dst[to + i] = Math.exp(y[at + i]! - m) / s;
  };
  const sig = (z: number) => 1 / (1 + Math.exp(-z));
  for (let s = 0; s < n; s += CHUNK) {
    const b = Math.min(CHUNK, n - s);
    src.fill(rows, s, b, buf);
    standardise(buf, b, norm);
    const y = net.forward(buf, b);
    for (let r = 0; r < b; r++) {
      const row = s + r;
      const o = r * OUTPUT_DIM;
      softmax(y, o + OUT.count, P + 1, out.count, row * (P + 1));
      out.fall[row] = sig(y[o + OUT.fall]!);
      for (let p = 0; p < P; p++) {
        out.presence[row * P + p] = sig(y[o + OUT.presence + p]!);
        softmax(y, o + OUT.activity + p * N_ACTIVITIES, N_ACTIVITIES, out.activity, (row * P + p) * N_ACTIVITIES);
        const root = [0, 1, 2].map((c) => y[o + OUT.root + p * 3 + c]! * norm.rootStd[c]! + norm.rootMean[c]!);
        for (let k = 0; k < N_KEYPOINTS; k++) {
          for (let c = 0; c < 3; c++) {
            out.keypoints3d[((row * P + p) * N_KEYPOINTS + k) * 3 + c] = root[c]! + y[o + OUT.offsets + p * N_KEYPOINTS * 3 + k * 3 + c]!;
          }
        }
      }
    }
  }
  return out;
}
