import { describe, expect, it } from 'vitest';
import onnxProto from 'onnx-proto';
import ort from 'onnxruntime-node';
import { buildMlpPoseModel, IR_VERSION, OnnxGraphBuilder, OPSET_VERSION, PRODUCER_NAME, type MlpPoseWeights } from '../../src/calibration/onnxWriter.js';
import { CONTRACT_VERSION, MODEL_OUTPUTS } from '../../src/model/contract.js';
import { featureBatch, forward, tinyMeta, tinyWeights } from '../helpers/poseModels.js';

const { onnx } = onnxProto;

const session = (bytes: Uint8Array) => ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  expect(worst, `largest difference at index ${at}`).toBeLessThanOrEqual(tol);
}

describe('OnnxGraphBuilder', () => {
  it('writes a Gemm / MatMul / Concat / Slice graph that onnxruntime evaluates as computed by hand', async () => {
    const g = new OnnxGraphBuilder('ops');
    g.addInput('x', ['N', 3]);
    // MatMul: [N,3] x [3,2]
    const A = [1, 2, 0.5, -1, -3, 0.25];
    const mm = g.matMul('x', g.addInitializer('A', Float32Array.from(A), [3, 2]));
    // Gemm with transB, alpha and beta: 2 * x B^T + 0.5 * c, B is [2,3]
    const B = [0.5, -1, 2, 1, 1, 1];
    const C = [1, -2];
    const gm = g.gemm('x', g.addInitializer('B', Float32Array.from(B), [2, 3]), g.addInitializer('C', Float32Array.from(C), [2]), {
      alpha: 2,
      beta: 0.5,
      transB: true,
    });
    const cat = g.concat([mm, gm], 1); // [N, 4]
    const mid = g.slice(cat, [1], [3], [1]); // columns 1..2
    const stepped = g.slice(cat, [0], [4], [1], [2]); // columns 0 and 2
    const sq = g.mul(mid, mid);
    const added = g.add(sq, g.addInitializer('bias', Float32Array.from([0.25, -0.25]), [2]));
    g.identity(g.reshape(g.tanh(added), [0, 2, 1]), 'y');
    g.addOutput('y', ['N', 2, 1]);
    g.relu(stepped, 'r');
    g.addOutput('r', ['N', 2]);
    g.sigmoid(stepped, 's');
    g.addOutput('s', ['N', 2]);

    const x = [1, 2, 3, -1, 0.5, 2];
    const s = await session(g.toBytes());
    const out = await s.run({ x: new ort.Tensor('float32', Float32Array.from(x), [2, 3]) });

    const expY: number[] = [];
    const expR: number[] = [];
    const expS: number[] = [];
    for (let r = 0; r < 2; r++) {
      const xr = x.slice(r * 3, r * 3 + 3);
      const mmr = [0, 1].map((j) => xr.reduce((acc, v, i) => acc + v * A[i * 2 + j], 0));
      const gmr = [0, 1].map((j) => 2 * xr.reduce((acc, v, i) => acc + v * B[j * 3 + i], 0) + 0.5 * C[j]);
      const catr = [...mmr, ...gmr];
      expY.push(Math.tanh(catr[1] ** 2 + 0.25), Math.tanh(catr[2] ** 2 - 0.25));
      expR.push(Math.max(0, catr[0]), Math.max(0, catr[2]));
      expS.push(1 / (1 + Math.exp(-catr[0])), 1 / (1 + Math.exp(-catr[2])));
    }
    expect(out.y.dims).toEqual([2, 2, 1]);
    expectClose(out.y.data as Float32Array, expY, 1e-5);
    expectClose(out.r.data as Float32Array, expR, 1e-5);
    expectClose(out.s.data as Float32Array, expS, 1e-5);
    await s.release();
  });

  it('writes the model header, symbolic batch dimension and metadata', () => {
    const g = new OnnxGraphBuilder('hdr');
    g.addInput('x', ['N', 4]);
    g.identity('x', 'y');
    g.addOutput('y', ['N', 4]);
    g.setMetadata('feature_dim', 4);
    g.setMetadata('note', 'héllo');
    const m = onnx.ModelProto.decode(g.toBytes({ producerVersion: '9.9' }));
    expect(Number(m.irVersion)).toBe(IR_VERSION);
    expect(m.opsetImport.map((o) => [o.domain, Number(o.version)])).toEqual([['', OPSET_VERSION]]);
    expect(m.producerName).toBe(PRODUCER_NAME);
    expect(m.producerVersion).toBe('9.9');
    const dims = m.graph!.input![0].type!.tensorType!.shape!.dim!;
    expect(dims[0].dimParam).toBe('N');
    expect(Number(dims[1].dimValue)).toBe(4);
    expect(m.metadataProps.map((p) => [p.key, p.value])).toEqual([
      ['feature_dim', '4'],
      ['note', 'héllo'],
    ]);
  });

  it('refuses graphs it could not write correctly', () => {
    const g = new OnnxGraphBuilder();
    g.addInput('x', ['N', 2]);
    expect(() => g.relu('nope')).toThrow(/input "nope" is not defined/);
    expect(() => g.addInitializer('x', new Float32Array(2), [2])).toThrow(/already defined/);
    expect(() => g.addInitializer('w', new Float32Array(5), [2, 3])).toThrow(/5 values for shape \[2, 3\]/);
    expect(() => g.addInput('z', ['N', -1])).toThrow(/bad dimension/);
    g.relu('x', 'y');
    expect(() => g.relu('x', 'y')).toThrow(/already defined/);
    g.addOutput('missing', ['N', 2]);
    expect(() => g.toBytes()).toThrow(/"missing" is declared but nothing produces it/);
  });
});

describe('buildMlpPoseModel', () => {
  const F = 12;
  const P = 3;
  const weights = tinyWeights(F, [16, 8], P);
  const bytes = buildMlpPoseModel(weights, tinyMeta(F, P));

  it('matches an independent forward pass to 1e-5 for several batch sizes', async () => {
    const s = await session(bytes);
    expect(s.inputNames).toEqual(['features']);
    expect([...s.outputNames].sort()).toEqual([...MODEL_OUTPUTS].sort());
    for (const n of [1, 2, 5, 33]) {
      const x = featureBatch(n, F, n);
      const out = await s.run({ features: new ort.Tensor('float32', x, [n, F]) });
      const ref = forward(weights, x, n);
      expect(out.presence.dims).toEqual([n, P]);
      expect(out.keypoints.dims).toEqual([n, P, 17, 3]);
      expect(out.boxes.dims).toEqual([n, P, 4]);
      expect(out.floor.dims).toEqual([n, P, 2]);
      expect(out.densepose.dims).toEqual([n, P, 24, 3]);
      for (const name of MODEL_OUTPUTS) expectClose(out[name].data as Float32Array, ref[name], 1e-5);
    }
    await s.release();
  });

  it('puts keypoint k of person p at (p * 17 + k) * 3: the layout MlpPoseWeights documents', async () => {
    // Zero weights and a bias that encodes its own index: the output shows where each value lands.
    const zero = (inN: number, outN: number, bias: (j: number) => number) => ({
      in: inN,
      out: outN,
      w: new Float32Array(inN * outN),
      b: Float32Array.from({ length: outN }, (_, j) => bias(j)),
    });
    const w: MlpPoseWeights = {
      layers: [],
      heads: {
        presence: zero(F, P, () => 0),
        keypoints: zero(F, P * 51, () => 0),
        boxes: zero(F, P * 4, () => 0),
        floor: zero(F, P * 2, (j) => j),
        densepose: zero(F, P * 72, () => 0),
      },
    };
    const s = await session(buildMlpPoseModel(w, tinyMeta(F, P)));
    const out = await s.run({ features: new ort.Tensor('float32', featureBatch(2, F), [2, F]) });
    // floor has no activation: row r, person p, coordinate c holds p * 2 + c.
    expect(Array.from(out.floor.data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]);
    expect(Array.from(out.presence.data as Float32Array)).toEqual(new Array(2 * P).fill(0.5));
    await s.release();
  });

  it('writes the contract metadata and onnxruntime reads the declared shapes', async () => {
    const m = onnx.ModelProto.decode(bytes);
    expect(Object.fromEntries(m.metadataProps.map((p) => [p.key, p.value]))).toEqual({
      csipose_contract: CONTRACT_VERSION,
      model_version: 'test-1',
      feature_dim: String(F),
      max_persons: String(P),
      window_frames: '64',
      trained_on: 'unit-test',
    });
    expect(m.producerName).toBe('csipose');
    const s = await session(bytes);
    const shapes = Object.fromEntries(s.outputMetadata.map((o) => [o.name, o.isTensor ? o.shape : null]));
    expect(shapes).toEqual({
      presence: ['N', P],
      keypoints: ['N', P, 17, 3],
      boxes: ['N', P, 4],
      floor: ['N', P, 2],
      densepose: ['N', P, 24, 3],
    });
    expect(s.inputMetadata[0]).toMatchObject({ name: 'features', type: 'float32', shape: ['N', F] });
    await s.release();
  });

  it('works without a trunk (heads straight on the features)', async () => {
    const w = tinyWeights(F, [], 2, 7);
    const s = await session(buildMlpPoseModel(w, tinyMeta(F, 2)));
    const x = featureBatch(4, F);
    const out = await s.run({ features: new ort.Tensor('float32', x, [4, F]) });
    const ref = forward(w, x, 4);
    for (const name of MODEL_OUTPUTS) expectClose(out[name].data as Float32Array, ref[name], 1e-5);
    await s.release();
  });

  it('refuses weights that do not fit together', () => {
    const meta = tinyMeta(F, P);
    const w = tinyWeights(F, [16, 8], P);
    expect(() => buildMlpPoseModel(w, { ...meta, feature_dim: 10 })).toThrow(/trunk layer 0: in is 12, expected 10/);
    expect(() => buildMlpPoseModel(w, { ...meta, max_persons: 2 })).toThrow(/head presence: out is 3, expected 2/);
    const short = { ...w, layers: [w.layers[0], { ...w.layers[1], w: w.layers[1].w.subarray(1) }] };
    expect(() => buildMlpPoseModel(short, meta)).toThrow(/trunk layer 1: w has 127 values, expected in x out = 128/);
    const nan = tinyWeights(F, [16, 8], P);
    nan.heads.boxes.b[2] = NaN;
    expect(() => buildMlpPoseModel(nan, meta)).toThrow(/head boxes: b\[2\] is NaN/);
    const skipped = { ...w, layers: [w.layers[1]] };
    expect(() => buildMlpPoseModel(skipped, meta)).toThrow(/trunk layer 0: in is 16, expected 12/);
    // With a site input the first layer reads features and site side by side.
    expect(() => buildMlpPoseModel({ ...w, siteDim: 8 }, meta)).toThrow(/trunk layer 0: in is 12, expected 20/);
    expect(() => buildMlpPoseModel({ ...tinyWeights(F + 8, [4], P), siteDim: 8 }, { ...meta, site_dim: 4 })).toThrow(
      /site_dim 4 does not match the weights' siteDim 8/,
    );
  });

  it('declares the site input and concatenates it after the features', async () => {
    const w = { ...tinyWeights(F + 8, [16], P), siteDim: 8 };
    const bytes = buildMlpPoseModel(w, { ...tinyMeta(F, P), site_dim: 8 });
    const m = onnx.ModelProto.decode(bytes);
    expect(Object.fromEntries(m.metadataProps.map((p) => [p.key, p.value])).site_dim).toBe('8');
    const s = await session(bytes);
    expect(s.inputMetadata.map((i) => (i.isTensor ? [i.name, i.shape] : null))).toEqual([
      ['features', ['N', F]],
      ['site', ['N', 8]],
    ]);
    const x = featureBatch(3, F);
    const site = featureBatch(3, 8, 9);
    const joined = new Float32Array(3 * (F + 8));
    for (let r = 0; r < 3; r++) {
      joined.set(x.subarray(r * F, (r + 1) * F), r * (F + 8));
      joined.set(site.subarray(r * 8, (r + 1) * 8), r * (F + 8) + F);
    }
    const out = await s.run({ features: new ort.Tensor('float32', x, [3, F]), site: new ort.Tensor('float32', site, [3, 8]) });
    const ref = forward(w, joined, 3);
    for (const name of MODEL_OUTPUTS) expectClose(out[name].data as Float32Array, ref[name], 1e-5);
    await s.release();
  });
});
