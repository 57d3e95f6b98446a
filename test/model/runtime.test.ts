import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMlpPoseModel } from '../../src/calibration/onnxWriter.js';
import { CONTRACT_VERSION, MODEL_OUTPUTS, parseSite, SITE_COLUMNS, SITE_DIM, siteProblem, siteVector } from '../../src/model/contract.js';
import { decodeOutputs, ModelError, PoseModel, threadFor, type ModelOutputs, type ModelOutputsV1 } from '../../src/model/runtime.js';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { contractModel, featureBatch, forward, tempDir, tinyMeta, tinyWeights, type Malformation } from '../helpers/poseModels.js';

const F = 6;
const P = 2;
const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** Loads and expects a ModelError whose message matches `pattern`. */
async function refused(source: string | Uint8Array, pattern: RegExp, opts: Parameters<typeof PoseModel.load>[1] = {}): Promise<void> {
  const err = await PoseModel.load(source, opts).then(
    (m) => {
      void m.release();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ModelError);
  expect((err as ModelError).code).toBe('MODEL_ERROR');
  expect((err as ModelError).message).toMatch(pattern);
}

const malformed = (name: string, m: Malformation) => tmp.file(`${name}.onnx`, contractModel(F, P, m));

describe('threadFor: where a session runs', () => {
  it('auto: the worker thread with two cores or more, the calling thread on one; explicit choices stand', () => {
    expect(threadFor('auto', 1)).toBe('inline');
    expect(threadFor('auto', 2)).toBe('worker');
    expect(threadFor('auto', 64)).toBe('worker');
    expect(threadFor('worker', 1)).toBe('worker');
    expect(threadFor('inline', 8)).toBe('inline');
  });

  const taskset = ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p));
  it.skipIf(!taskset)('the core count auto reads follows the CPU affinity (a process pinned to one core sees 1)', () => {
    const r = spawnSync(taskset!, ['-c', '0', process.execPath, '-e', "process.stdout.write(String(require('node:os').availableParallelism()))"], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('1');
  });
});

describe('PoseModel: loading a valid model', () => {
  const weights = tinyWeights(F, [8], P);
  const bytes = buildMlpPoseModel(weights, tinyMeta(F, P));

  it.each(['worker', 'inline'] as const)('loads from a file (%s thread), exposes the metadata and runs the batch', async (thread) => {
    const path = tmp.file(`good-${thread}.onnx`, bytes);
    const model = await PoseModel.load(path, { thread, featureDim: F });
    expect(model.featureDim).toBe(F);
    expect(model.maxPersons).toBe(P);
    expect(model.warning).toBeUndefined();
    expect(model.source).toBe(path);
    expect(model.metadata).toEqual(tinyMeta(F, P));
    const x = featureBatch(3, F);
    const out = (await model.run(x, 3)) as ModelOutputsV1;
    expect(out.n).toBe(3);
    expect(out.maxPersons).toBe(P);
    const ref = forward(weights, x, 3);
    for (const name of MODEL_OUTPUTS) {
      expect(out[name].length).toBe(ref[name].length);
      out[name].forEach((v, i) => expect(v).toBeCloseTo(ref[name][i], 5));
    }
    // The caller's array is not consumed without `transfer`.
    expect(x.length).toBe(3 * F);
    await model.release();
    await expect(model.run(x, 3)).rejects.toThrow(/model released/);
  });

  it('takes a transferred batch and a view into a larger buffer', async () => {
    const size = bytes.length;
    const model = await PoseModel.load(bytes);
    expect(bytes.length).toBe(size); // the worker got a copy of the model, not the caller's buffer
    const big = featureBatch(5, F);
    const ref = forward(weights, big.subarray(F), 2);
    const viaView = (await model.run(big.subarray(F, 3 * F), 2, { transfer: true })) as ModelOutputsV1;
    expect(big.length).toBe(5 * F); // a view is copied, never transferred
    viaView.presence.forEach((v, i) => expect(v).toBeCloseTo(ref.presence[i], 5));
    const owned = big.slice(F, 3 * F);
    const viaTransfer = (await model.run(owned, 2, { transfer: true })) as ModelOutputsV1;
    expect(owned.length).toBe(0); // handed over to the worker
    expect(Array.from(viaTransfer.keypoints)).toEqual(Array.from(viaView.keypoints));
    await model.release();
  });

  it('accepts a model without metadata, with a warning, taking P and feature_dim from the shapes', async () => {
    const model = await PoseModel.load(contractModel(F, 3, { metadata: null }));
    expect(model.warning).toMatch(/no csipose_contract metadata/);
    expect(model.maxPersons).toBe(3);
    expect(model.featureDim).toBe(F);
    expect(model.metadata).toEqual({
      csipose_contract: '',
      model_version: '',
      feature_dim: F,
      max_persons: 3,
      window_frames: 0,
      trained_on: '',
    });
    const out = (await model.run(featureBatch(1, F), 1)) as ModelOutputsV1;
    expect(out.keypoints.length).toBe(3 * 51);
    await model.release();
  });

  it('rejects bad run arguments without touching the model', async () => {
    const model = await PoseModel.load(bytes, { thread: 'inline' });
    await expect(model.run(new Float32Array(F * 2 - 1), 2)).rejects.toThrow(RangeError);
    await expect(model.run(new Float32Array(0), 0)).rejects.toThrow(/positive integer/);
    await model.release();
  });

  it.each(['worker', 'inline'] as const)('turns a failure inside inference into a ModelError (%s thread)', async (thread) => {
    const model = await PoseModel.load(contractModel(F, P, { badReshape: true }), { thread });
    const err = await model.run(featureBatch(2, F), 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).message).toMatch(/^inference failed: .*Reshape/);
    // The session survives a failed run.
    await expect(model.run(featureBatch(2, F), 2)).rejects.toThrow(/inference failed/);
    await model.release();
  });
});

describe('PoseModel: the optional site input', () => {
  const site = { roomWidth: 6, roomDepth: 5, receiver: { x: 2.5, y: 0.2, z: 1.2 }, transmitter: { x: 4, y: 4.8, z: 1.5 } };
  const weights = { ...tinyWeights(F + SITE_DIM, [8], P), siteDim: SITE_DIM };
  const bytes = buildMlpPoseModel(weights, { ...tinyMeta(F, P), site_dim: SITE_DIM });
  /** Rows of the features followed by a site row, as the network reads them. */
  const joined = (x: Float32Array, n: number, row: Float32Array) => {
    const out = new Float32Array(n * (F + SITE_DIM));
    for (let r = 0; r < n; r++) {
      out.set(x.subarray(r * F, (r + 1) * F), r * (F + SITE_DIM));
      out.set(row, r * (F + SITE_DIM) + F);
    }
    return out;
  };

  it.each(['worker', 'inline'] as const)('feeds the site row to every window, and the all-zero row when unknown (%s thread)', async (thread) => {
    const model = await PoseModel.load(bytes, { thread, featureDim: F });
    expect(model.siteDim).toBe(SITE_DIM);
    expect(model.metadata.site_dim).toBe(SITE_DIM);
    const x = featureBatch(3, F);
    const known = (await model.run(x, 3, { site })) as ModelOutputsV1;
    const unknown = (await model.run(x, 3)) as ModelOutputsV1;
    const refKnown = forward(weights, joined(x, 3, siteVector(site)), 3);
    const refUnknown = forward(weights, joined(x, 3, new Float32Array(SITE_DIM)), 3);
    for (const name of MODEL_OUTPUTS) {
      known[name].forEach((v, i) => expect(v).toBeCloseTo(refKnown[name][i], 5));
      unknown[name].forEach((v, i) => expect(v).toBeCloseTo(refUnknown[name][i], 5));
    }
    // The site reaches the network: the floor output moves with it.
    expect(Array.from(known.floor)).not.toEqual(Array.from(unknown.floor));
    await model.release();
  });

  it('a features-only model ignores the site', async () => {
    const plain = await PoseModel.load(buildMlpPoseModel(tinyWeights(F, [8], P), tinyMeta(F, P)), { thread: 'inline' });
    expect(plain.siteDim).toBe(0);
    const x = featureBatch(2, F);
    const a = (await plain.run(x, 2, { site })) as ModelOutputsV1;
    const b = (await plain.run(x, 2)) as ModelOutputsV1;
    expect(Array.from(a.keypoints)).toEqual(Array.from(b.keypoints));
    await plain.release();
  });

  it('siteVector: the documented columns, relative to the receiver', () => {
    expect(Array.from(siteVector(site))).toEqual([1, 6, 5, 2.5, 1.2, 1.5, 4.6, 0.3].map((v) => Math.fround(v)));
    expect(Array.from(siteVector(null))).toEqual(new Array(SITE_DIM).fill(0));
    expect(SITE_COLUMNS).toHaveLength(SITE_DIM);
  });

  it('parseSite and siteProblem: eight numbers, radios on the floor plan', () => {
    expect(parseSite('')).toBeNull();
    expect(parseSite('6,5,2.5,0.2,1.2,4,4.8,1.5')).toEqual(site);
    expect(() => parseSite('6,5,2.5')).toThrow(/8 comma-separated numbers/);
    expect(() => parseSite('6,5,2.5,0.2,1.2,4,x,1.5')).toThrow(/8 comma-separated numbers/);
    expect(() => parseSite('6,5,7,0.2,1.2,4,4.8,1.5')).toThrow(/receiver x must be in 0..6 m/);
    expect(() => parseSite('6,5,2.5,0.2,1.2,4,5.5,1.5')).toThrow(/transmitter y must be in 0..5 m/);
    expect(siteProblem({ ...site, roomWidth: 0.5 })).toMatch(/room width must be a number >= 1 m/);
    expect(siteProblem({ ...site, transmitter: { x: 4, y: 4.8, z: -1 } })).toMatch(/transmitter z must be in 0..20 m/);
    expect(siteProblem(site)).toBeNull();
  });
});

describe('PoseModel: contract validation', () => {
  it('a missing file', () => refused('/nonexistent/dir/model.onnx', /^model file not found: \/nonexistent\/dir\/model\.onnx$/));

  it('a directory', () => refused(tmp.dir, /^model path is a directory/));

  it('an empty file', () => refused(tmp.file('empty.onnx', ''), /^not an ONNX model .*: empty$/));

  it('a text file', () => refused(tmp.file('text.onnx', 'this is a README, not a model\n'), /^not an ONNX model \(.*text\.onnx\)/));

  it('a truncated model', () => {
    const good = contractModel(F, P);
    return refused(tmp.file('trunc.onnx', good.subarray(0, good.length - 100)), /^not an ONNX model \(.*trunc\.onnx\)/);
  });

  it('a protobuf that onnxruntime cannot load (unknown operator)', async () => {
    const { OnnxGraphBuilder } = await import('../../src/calibration/onnxWriter.js');
    const g = new OnnxGraphBuilder();
    g.addInput('features', ['N', F]);
    g.addNode('NoSuchOp', ['features'], ['presence']);
    g.addOutput('presence', ['N', P]);
    await refused(g.toBytes(), /^onnxruntime could not load the model \(<bytes>\): .*NoSuchOp/);
  });

  it('the wrong input name', () => refused(malformed('name', { inputName: 'x' }), /^model input is named 'x', expected 'features' \(.*name\.onnx\)$/));

  it('an input other than features and site', () =>
    refused(malformed('two', { extraInput: true }), /inputs must be 'features' and optionally 'site', it has 2: 'features', 'extra'/));

  it('a site input of the wrong width', () => {
    const w = { ...tinyWeights(F + 5, [4], P), siteDim: 5 };
    return refused(buildMlpPoseModel(w, tinyMeta(F, P)), /model input 'site' has shape \[N, 5\], expected \[N, 8\]/);
  });

  it('site_dim metadata on a model without the site input', () =>
    refused(malformed('site-meta', { metadata: { ...tinyMeta(F, P), site_dim: SITE_DIM } }), /site_dim is 8 but the model has no 'site' input/));

  it('a feature_dim other than the features have', () =>
    refused(malformed('dim', {}), /^model expects feature_dim 6, the features have 1080/, { featureDim: 1080 }));

  it('a feature_dim metadata that contradicts the input shape', () =>
    refused(malformed('meta-dim', { metadata: { ...tinyMeta(F, P), feature_dim: 9 } }), /metadata feature_dim 9 does not match its input shape \[N, 6\]/));

  it('a symbolic feature dimension is taken from the metadata, and refused without it', async () => {
    const model = await PoseModel.load(malformed('sym', { inputFeatureDim: 'F' }));
    expect(model.featureDim).toBe(F);
    await model.release();
    await refused(malformed('sym-nometa', { inputFeatureDim: 'F', metadata: null }), /feature_dim is unknown/);
  });

  it.each(MODEL_OUTPUTS.map((o) => [o]))('a missing output: %s', (name) =>
    refused(malformed(`omit-${name}`, { omit: name }), new RegExp(`^model has no output '${name}'`)),
  );

  it('an output of the wrong shape', () =>
    refused(malformed('boxes5', { trailing: { boxes: [5] } }), /model output 'boxes' has shape \[N, 2, 5\], expected \[N, P, 4\]/));

  it('outputs that disagree on the person slots', () =>
    refused(
      malformed('persons', { persons: { floor: 3 }, metadata: null }),
      /model output 'floor' has shape \[N, 3, 2\]: 3 person slots, but 'presence' has 2/,
    ));

  it('person slots that contradict max_persons metadata', () =>
    refused(malformed('meta-p', { metadata: { ...tinyMeta(F, P), max_persons: 4 } }), /2 person slots, but metadata max_persons 4/));

  it('another contract version', () =>
    refused(
      malformed('contract', { metadata: { ...tinyMeta(F, P), csipose_contract: 'csipose-pose-v0' } }),
      new RegExp(`model contract is "csipose-pose-v0", this service implements "${CONTRACT_VERSION}"`),
    ));

  it('non-numeric metadata', () =>
    refused(malformed('nan-meta', { metadata: { ...tinyMeta(F, P), window_frames: 'many' } }), /metadata window_frames is "many"/));
});

describe('decodeOutputs', () => {
  // Two rows, three slots. Values chosen so each field's scaling is visible.
  const n = 2;
  const Pn = 3;
  const presence = Float32Array.from([0.2, 0.9, 0.6, NaN, 0.5, 0.4]);
  const keypoints = Float32Array.from({ length: n * Pn * 51 }, (_, i) => ((i % 51) + 1) / 100);
  const boxes = Float32Array.from({ length: n * Pn * 4 }, (_, i) => [0.25, 0.5, 0.125, 0.75][i % 4] + Math.floor(i / 4) / 1000);
  const floor = Float32Array.from({ length: n * Pn * 2 }, (_, i) => i - 3);
  const densepose = Float32Array.from({ length: n * Pn * 72 }, (_, i) => i / 1000);
  const outputs: ModelOutputs = { contract: 1, n, maxPersons: Pn, presence, keypoints, boxes, floor, densepose };
  const opts = { view: { width: 640, height: 480 }, confidenceThreshold: 0.5, maxPersons: 10, includeDensePose: true };

  it('keeps slots at or above the threshold, highest presence first, scaled to the view', () => {
    const persons = decodeOutputs(outputs, 0, opts);
    expect(persons.map((p) => [p.slot, p.confidence])).toEqual([
      [1, presence[1]],
      [2, presence[2]],
    ]);
    const [first] = persons;
    // Slot 1 of row 0: keypoint j has x = (3j + 1) / 100, y = (3j + 2) / 100, c = (3j + 3) / 100.
    for (let j = 0; j < 17; j++) {
      expect(first.keypoints[j * 3]).toBeCloseTo(((((j * 3) % 51) + 1) / 100) * 640, 3);
      expect(first.keypoints[j * 3 + 1]).toBeCloseTo(((((j * 3 + 1) % 51) + 1) / 100) * 480, 3);
      expect(first.keypoints[j * 3 + 2]).toBeCloseTo((((j * 3 + 2) % 51) + 1) / 100, 6);
    }
    // Slot 1 of row 0 is box 1: x, y, w, h = 0.25, 0.5, 0.125, 0.75 plus 1 / 1000.
    const box = [0.251 * 640, 0.501 * 480, 0.126 * 640, 0.751 * 480];
    first.bbox.forEach((v, i) => expect(v).toBeCloseTo(box[i], 3));
    expect(first.floor).toEqual({ x: -1, y: 0 });
    expect(first.densePose?.length).toBe(72);
    expect(first.densePose?.[0]).toBeCloseTo(72 / 1000, 6);
  });

  it('drops NaN presence, applies maxPersons and leaves DensePose out on request', () => {
    const persons = decodeOutputs(outputs, 1, opts);
    expect(persons.map((p) => p.slot)).toEqual([1]); // NaN dropped, 0.4 below threshold, 0.5 kept
    expect(decodeOutputs(outputs, 0, { ...opts, maxPersons: 1 }).map((p) => p.slot)).toEqual([1]);
    expect(decodeOutputs(outputs, 0, { ...opts, maxPersons: 0 })).toEqual([]);
    expect(decodeOutputs(outputs, 0, { ...opts, confidenceThreshold: 0 }).map((p) => p.slot)).toEqual([1, 2, 0]);
    expect(decodeOutputs(outputs, 0, { ...opts, includeDensePose: false })[0].densePose).toBeUndefined();
    expect(() => decodeOutputs(outputs, 2, opts)).toThrow(RangeError);
  });

  it('gives each person its own arrays', () => {
    const a = decodeOutputs(outputs, 0, opts);
    a[0].keypoints[0] = -1;
    expect(decodeOutputs(outputs, 0, opts)[0].keypoints[0]).not.toBe(-1);
    expect(keypoints[51]).toBeCloseTo(0.01, 6);
  });
});

describe('PoseModel: the worker thread', () => {
  let model: PoseModel;
  beforeAll(async () => {
    model = await PoseModel.load(buildMlpPoseModel(tinyWeights(F, [8], P), tinyMeta(F, P)));
  });
  afterAll(() => model.release());

  it('runs several batches at once and resolves each with its own rows', async () => {
    const batches = [1, 4, 2, 7].map((k, i) => featureBatch(k, F, 10 + i));
    const outs = (await Promise.all(batches.map((b) => model.run(b, b.length / F)))) as ModelOutputsV1[];
    const weights = tinyWeights(F, [8], P);
    outs.forEach((out, i) => {
      const ref = forward(weights, batches[i], batches[i].length / F);
      expect(out.n).toBe(batches[i].length / F);
      out.floor.forEach((v, j) => expect(v).toBeCloseTo(ref.floor[j], 5));
    });
  });
});
