/**
 * Small contract models for tests: deterministic MLP weights, an independent forward pass in plain
 * JS (the reference the ONNX outputs are checked against), a flexible writer for malformed
 * models, and a v2 model with its training report (`contractModelV2`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTRACT_V2, CONTRACT_VERSION, FALL_WINDOW_S, MODEL_ACTIVITIES, MODEL_OUTPUTS, SITE_DIM, type ModelMetadata } from '../../src/model/contract.js';
import { FEATURE_DIM, WINDOW_FRAMES } from '../../src/model/features.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES } from '../../src/model/history.js';
import {
  buildPoseModelV2,
  OnnxGraphBuilder,
  POSE_HEADS,
  type DenseWeights,
  type MlpPoseWeights,
  type PoseHeadName,
  type PoseWeightsV2,
} from '../../src/calibration/onnxWriter.js';
import { N_KEYPOINTS } from '../../src/pose/types.js';
import type { FeatureRow } from '../../operators/infer.js';

/** A deterministic value in [-scale, scale] for index i of stream `seed` (no PRNG: a fixed formula). */
export const det = (i: number, seed: number, scale = 1): number => Math.sin(i * 12.9898 + seed * 78.233 + 0.5) * scale;

function dense(inN: number, outN: number, seed: number, bias: (j: number) => number = (j) => det(j, seed + 0.5, 0.1)): DenseWeights {
  const scale = 1 / Math.sqrt(inN);
  return {
    in: inN,
    out: outN,
    w: Float32Array.from({ length: inN * outN }, (_, i) => det(i, seed, scale)),
    b: Float32Array.from({ length: outN }, (_, j) => bias(j)),
  };
}

/** Values per person of each head. */
export const PER_PERSON: Record<PoseHeadName, number> = { presence: 1, keypoints: 51, boxes: 4, floor: 2, densepose: 72 };

/**
 * Weights of a tiny MLP contract model. The presence bias makes slot 0 clearly present (about
 * 0.95), slot 1 clearly absent (about 0.05), and further slots alternate.
 */
export function tinyWeights(featureDim: number, hidden: readonly number[], persons: number, seed = 1): MlpPoseWeights {
  const layers: DenseWeights[] = [];
  let width = featureDim;
  hidden.forEach((h, i) => {
    layers.push(dense(width, h, seed + i));
    width = h;
  });
  const heads = {} as Record<PoseHeadName, DenseWeights>;
  POSE_HEADS.forEach((head, k) => {
    const out = persons * PER_PERSON[head.name];
    heads[head.name] = head.name === 'presence' ? dense(width, out, seed + 10 + k, (p) => (p % 2 === 0 ? 3 : -3)) : dense(width, out, seed + 10 + k);
  });
  return { layers, heads };
}

export const tinyMeta = (featureDim: number, persons: number, extra: Partial<ModelMetadata> = {}): ModelMetadata => ({
  csipose_contract: CONTRACT_VERSION,
  model_version: 'test-1',
  feature_dim: featureDim,
  max_persons: persons,
  window_frames: 64,
  trained_on: 'unit-test',
  ...extra,
});

const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

function denseForward(d: DenseWeights, x: ArrayLike<number>): number[] {
  const y = new Array<number>(d.out);
  for (let j = 0; j < d.out; j++) {
    let s = d.b[j];
    for (let i = 0; i < d.in; i++) s += x[i] * d.w[i * d.out + j];
    y[j] = s;
  }
  return y;
}

/** The reference forward pass, in doubles, of `rows` (n x featureDim): flat outputs per head. */
export function forward(weights: MlpPoseWeights, features: Float32Array, n: number): Record<PoseHeadName, number[]> {
  const F = weights.layers[0]?.in ?? weights.heads.presence.in;
  const out: Record<PoseHeadName, number[]> = { presence: [], keypoints: [], boxes: [], floor: [], densepose: [] };
  for (let r = 0; r < n; r++) {
    let x: number[] = Array.from(features.subarray(r * F, (r + 1) * F));
    for (const layer of weights.layers) x = denseForward(layer, x).map((v) => Math.max(0, v));
    for (const head of POSE_HEADS) {
      const y = denseForward(weights.heads[head.name], x);
      out[head.name].push(...(head.sigmoid ? y.map(sigmoid) : y));
    }
  }
  return out;
}

/** n deterministic feature rows of width F, flattened. */
export function featureBatch(n: number, F: number, seed = 3): Float32Array {
  return Float32Array.from({ length: n * F }, (_, i) => det(i, seed, 2));
}

/** Feature rows for the operator: row k has frameTime k. */
export function featureRows(n: number, F: number, env = (k: number) => (k % 2 === 0 ? 'env-a' : 'env-b')): FeatureRow[] {
  const all = featureBatch(n, F);
  return Array.from({ length: n }, (_, k) => ({
    features: all.slice(k * F, (k + 1) * F),
    frameTime: k,
    arrival: Date.now(),
    sourceId: 'src',
    environmentId: env(k),
    csiQuality: 0.9,
  }));
}

/** A temp dir under os.tmpdir(), removed by the returned cleanup. */
export function tempDir(prefix = 'csipose-model-'): { dir: string; file: (name: string, bytes: Uint8Array | string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    file: (name, bytes) => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Ways to break a contract model. */
export interface Malformation {
  inputName?: string;
  /** A second input. */
  extraInput?: boolean;
  /** Declared feature width of the input (default the real one). */
  inputFeatureDim?: number | string;
  /** Leave this output out. */
  omit?: string;
  /** Per-output override of the declared and real per-person trailing shape. */
  trailing?: Partial<Record<string, number[]>>;
  /** Per-output person slots (default P). */
  persons?: Partial<Record<string, number>>;
  /** Metadata to write; null writes none. */
  metadata?: Record<string, string | number> | null;
  /** Reshape keypoints to a shape whose element count does not fit (fails at run, not at load). */
  badReshape?: boolean;
}

/**
 * A contract-shaped model (one Gemm + activation + Reshape per head on the features), broken as
 * `m` says. With no malformation it is a valid contract model.
 */
export function contractModel(F: number, P: number, m: Malformation = {}): Uint8Array {
  const g = new OnnxGraphBuilder('contract_test');
  const input = m.inputName ?? 'features';
  g.addInput(input, ['N', m.inputFeatureDim ?? F]);
  if (m.extraInput) g.addInput('extra', ['N', 2]);
  const trailingOf: Record<string, number[]> = { presence: [], keypoints: [17, 3], boxes: [4], floor: [2], densepose: [24, 3] };
  MODEL_OUTPUTS.forEach((name, k) => {
    if (name === m.omit) return;
    const trailing = m.trailing?.[name] ?? trailingOf[name];
    const persons = m.persons?.[name] ?? P;
    const per = trailing.reduce((a, b) => a * b, 1);
    const width = name === 'keypoints' && m.badReshape ? persons * per - 1 : persons * per;
    const w = g.addInitializer(
      `${name}.w`,
      Float32Array.from({ length: F * width }, (_, i) => det(i, k, 0.2)),
      [F, width],
    );
    const b = g.addInitializer(
      `${name}.b`,
      Float32Array.from({ length: width }, (_, i) => det(i, k + 5, 0.1)),
      [width],
    );
    const y = g.sigmoid(g.gemm(input, w, b));
    if (trailing.length === 0) g.identity(y, name);
    else g.reshape(y, [0, persons, ...trailing], name);
    g.addOutput(name, ['N', persons, ...trailing]);
  });
  const meta = m.metadata === undefined ? { ...tinyMeta(F, P) } : m.metadata;
  if (meta) for (const [k, v] of Object.entries(meta)) g.setMetadata(k, v);
  return g.toBytes();
}

/**
 * A standing adult's joints relative to the pelvis (x across, y in depth, z up; metres), COCO-17
 * order: the mean pose `contractModelV2` writes into its sidecar and biases its skeletons towards.
 */
export const STANDING_OFFSETS: readonly number[] = Object.freeze([
  0, -0.08, 0.62, 0.03, -0.07, 0.66, -0.03, -0.07, 0.66, 0.07, 0, 0.64, -0.07, 0, 0.64, 0.18, 0, 0.45, -0.18, 0, 0.45, 0.22, 0, 0.18, -0.22, 0, 0.18, 0.24, 0,
  -0.07, -0.24, 0, -0.07, 0.1, 0, 0, -0.1, 0, 0, 0.1, 0, -0.45, -0.1, 0, -0.45, 0.1, 0, -0.85, -0.1, 0, -0.85,
]);
export const STANDING_PELVIS_Z = 0.93;

/** A v2 contract test model and the training report that would sit beside it. */
export interface ContractModelV2 {
  bytes: Uint8Array;
  /** `<model>.json`: metadata and the `mean_pose` the accuracy benchmark's baseline needs. */
  sidecar: Record<string, unknown>;
}

/**
 * A tiny v2 contract model with deterministic (fixed formula, never trained) weights, written by
 * `buildPoseModelV2` as the training script writes its models (so `calibrate` can read it back),
 * with the sidecar a training run would leave (`mean_pose`). The biases make its answers
 * plausible in shape: mostly one person (count), slot 0 present, skeletons near a standing pose
 * about 2.5 m in front of the receiver, mostly standing, no fall; the small weights add some
 * dependence on the input. Metadata `trained_on` is 'unit-test'.
 * @param opts hidden widths (default [16]), seed, person slots (default 4), site width (default SITE_DIM)
 * @returns the ONNX bytes and the sidecar
 */
export function contractModelV2(opts: { hidden?: readonly number[]; seed?: number; persons?: number; siteDim?: number } = {}): ContractModelV2 {
  const P = opts.persons ?? 4;
  const seed = opts.seed ?? 7;
  const G = opts.siteDim ?? SITE_DIM;
  const A = MODEL_ACTIVITIES.length;
  const F = FEATURE_DIM;
  const layers: DenseWeights[] = [];
  let width = F + HISTORY_STEPS * HISTORY_DIM + G;
  (opts.hidden ?? [16]).forEach((h, i) => {
    layers.push(dense(width, h, seed + i));
    width = h;
  });
  const head = (out: number, k: number, bias: (j: number) => number): DenseWeights => {
    const d = dense(width, out, seed + 20 + k, bias);
    for (let i = 0; i < d.w.length; i++) d.w[i] = d.w[i]! * 0.05;
    return d;
  };
  const heads: PoseWeightsV2['heads'] = {
    count: head(P + 1, 0, (j) => (j === 1 ? 3 : 0)),
    presence: head(P, 1, (p) => (p === 0 ? 3 : -3)),
    root: head(P * 3, 2, (j) => [0.6 * ((j / 3) | 0) - 0.9, 2.5, STANDING_PELVIS_Z][j % 3]!),
    offsets: head(P * N_KEYPOINTS * 3, 3, (j) => STANDING_OFFSETS[j % (N_KEYPOINTS * 3)]!),
    activity: head(P * A, 4, (j) => (j % A === 0 ? 2 : 0)),
    fall: head(1, 5, () => -3),
  };
  const metadata: ModelMetadata = {
    csipose_contract: CONTRACT_V2,
    model_version: 'test-v2',
    feature_dim: F,
    max_persons: P,
    window_frames: WINDOW_FRAMES,
    trained_on: 'unit-test',
    ...(G > 0 ? { site_dim: G } : {}),
    history_steps: HISTORY_STEPS,
    history_dim: HISTORY_DIM,
    history_stride_frames: HISTORY_STRIDE_FRAMES,
    fall_window_s: FALL_WINDOW_S,
  };
  const bytes = buildPoseModelV2(
    { layers, heads },
    { featureDim: F, historySteps: HISTORY_STEPS, historyDim: HISTORY_DIM, siteDim: G, maxPersons: P, activities: A },
    metadata,
  );
  const sidecar = {
    model: { path: 'csipose-pose.onnx', ...metadata },
    configuration: 'contract-test',
    mean_pose: { note: 'a standing stick figure (contract test model)', offsets: [...STANDING_OFFSETS], pelvis_z: STANDING_PELVIS_Z },
  };
  return { bytes, sidecar };
}
