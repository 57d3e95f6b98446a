/**
 * Small contract models for tests: deterministic MLP weights, an independent forward pass in plain
 * JS (the reference the ONNX outputs are checked against), and a flexible writer for malformed
 * models.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTRACT_VERSION, MODEL_OUTPUTS, type ModelMetadata } from '../../src/model/contract.js';
import { OnnxGraphBuilder, POSE_HEADS, type DenseWeights, type MlpPoseWeights, type PoseHeadName } from '../../src/model/onnxWriter.js';
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
    heads[head.name] =
      head.name === 'presence' ? dense(width, out, seed + 10 + k, (p) => (p % 2 === 0 ? 3 : -3)) : dense(width, out, seed + 10 + k);
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
    const w = g.addInitializer(`${name}.w`, Float32Array.from({ length: F * width }, (_, i) => det(i, k, 0.2)), [F, width]);
    const b = g.addInitializer(`${name}.b`, Float32Array.from({ length: width }, (_, i) => det(i, k + 5, 0.1)), [width]);
    const y = g.sigmoid(g.gemm(input, w, b));
    if (trailing.length === 0) g.identity(y, name);
    else g.reshape(y, [0, persons, ...trailing], name);
    g.addOutput(name, ['N', persons, ...trailing]);
  });
  const meta = m.metadata === undefined ? { ...tinyMeta(F, P) } : m.metadata;
  if (meta) for (const [k, v] of Object.entries(meta)) g.setMetadata(k, v);
  return g.toBytes();
}
