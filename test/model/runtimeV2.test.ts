/**
 * Contract v2 in the runtime: loading and checking a model with memory, running it with and
 * without its history, and decoding its metre skeletons into what the service reports (count rule,
 * projection through the view, floor, box, DensePose parts, activity).
 */
import { describe, expect, it } from 'vitest';
import { CONTRACT_V2, FALL_WINDOW_S, MODEL_ACTIVITIES, SITE_DIM, type ModelMetadata } from '../../src/model/contract.js';
import { FEATURE_DIM } from '../../src/model/features.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES, HISTORY_WIDTH } from '../../src/model/history.js';
import { buildPoseModelV2, OnnxGraphBuilder, readPoseWeightsV2, type DenseWeights, type PoseWeightsV2 } from '../../src/calibration/onnxWriter.js';
import { countFromProbabilities, decodeOutputs, ModelError, PoseModel, type ModelOutputsV2 } from '../../src/model/runtime.js';
import { DEFAULT_VIEW, viewCamera } from '../../src/pose/camera.js';
import { N_DENSE_PARTS } from '../../src/pose/types.js';
import { det } from '../helpers/poseModels.js';

const P = 4;
const A = MODEL_ACTIVITIES.length;
const IN = FEATURE_DIM + HISTORY_WIDTH + SITE_DIM;

function dense(inN: number, outN: number, seed: number): DenseWeights {
  return {
    in: inN,
    out: outN,
    w: Float32Array.from({ length: inN * outN }, (_, i) => det(i, seed, 1 / Math.sqrt(inN))),
    b: Float32Array.from({ length: outN }, (_, j) => det(j, seed + 0.5, 0.1)),
  };
}

function tinyV2(): PoseWeightsV2 {
  return {
    layers: [dense(IN, 8, 1)],
    heads: {
      count: dense(8, P + 1, 2),
      presence: dense(8, P, 3),
      root: dense(8, P * 3, 4),
      offsets: dense(8, P * 51, 5),
      activity: dense(8, P * A, 6),
      fall: dense(8, 1, 7),
    },
  };
}

const META: ModelMetadata = {
  csipose_contract: CONTRACT_V2,
  model_version: 'v2-test',
  feature_dim: FEATURE_DIM,
  max_persons: P,
  window_frames: 128,
  trained_on: 'unit-test',
  site_dim: SITE_DIM,
  history_steps: HISTORY_STEPS,
  history_dim: HISTORY_DIM,
  history_stride_frames: HISTORY_STRIDE_FRAMES,
  fall_window_s: FALL_WINDOW_S,
};
const SHAPE = { featureDim: FEATURE_DIM, historySteps: HISTORY_STEPS, historyDim: HISTORY_DIM, siteDim: SITE_DIM, maxPersons: P, activities: A };

describe('v2 models in the runtime', () => {
  const bytes = buildPoseModelV2(tinyV2(), SHAPE, META);

  it('loads as contract 2 with its memory, and its weights read back as written', async () => {
    const m = await PoseModel.load(bytes, { thread: 'inline', featureDim: FEATURE_DIM });
    try {
      expect(m.contract).toBe(2);
      expect(m.siteDim).toBe(SITE_DIM);
      expect(m.metadata).toMatchObject({
        history_steps: HISTORY_STEPS,
        history_dim: HISTORY_DIM,
        history_stride_frames: HISTORY_STRIDE_FRAMES,
        fall_window_s: FALL_WINDOW_S,
      });
      expect(m.warning).toBeUndefined();
    } finally {
      await m.release();
    }
    const back = readPoseWeightsV2(bytes);
    expect(Array.from(back.heads.offsets.w)).toEqual(Array.from(tinyV2().heads.offsets.w));
    expect(back.layers[0]!.in).toBe(IN);
  });

  it('runs with and without history (zeros), in the worker and inline alike, and refuses a wrong history width', async () => {
    const features = Float32Array.from({ length: 2 * FEATURE_DIM }, (_, i) => det(i, 9));
    const history = Float32Array.from({ length: 2 * HISTORY_WIDTH }, (_, i) => det(i, 10));
    const w = await PoseModel.load(bytes, { featureDim: FEATURE_DIM });
    const inl = await PoseModel.load(bytes, { thread: 'inline', featureDim: FEATURE_DIM });
    try {
      const a = await w.run(features, 2, { history });
      const b = await inl.run(features, 2, { history });
      const z = await w.run(features, 2);
      const zz = await w.run(features, 2, { history: new Float32Array(2 * HISTORY_WIDTH) });
      if (a.contract !== 2 || b.contract !== 2 || z.contract !== 2 || zz.contract !== 2) throw new Error('expected v2 outputs');
      expect(Array.from(a.keypoints3d)).toEqual(Array.from(b.keypoints3d));
      expect(Array.from(z.keypoints3d)).toEqual(Array.from(zz.keypoints3d));
      expect(Array.from(z.keypoints3d)).not.toEqual(Array.from(a.keypoints3d));
      expect(a.count.length).toBe(2 * (P + 1));
      expect(a.activity.length).toBe(2 * P * A);
      expect(a.fall.length).toBe(2);
      // The caller's history is copied, not taken (no `transfer`).
      expect(history.length).toBe(2 * HISTORY_WIDTH);
      await expect(w.run(features, 2, { history: new Float32Array(5) })).rejects.toThrow(RangeError);
    } finally {
      await w.release();
      await inl.release();
    }
  });

  it('refuses v2 models that break the contract, naming what is wrong', async () => {
    const noHistory = new OnnxGraphBuilder('bad');
    noHistory.addInput('features', ['N', FEATURE_DIM]);
    noHistory.identity('features', 'count');
    noHistory.addOutput('count', ['N', FEATURE_DIM]);
    noHistory.setMetadata('csipose_contract', CONTRACT_V2);
    await expect(PoseModel.load(noHistory.toBytes(), { thread: 'inline' })).rejects.toThrow(/takes 'features', 'history' and optionally 'site'/);

    const wrongSteps = buildPoseModelV2(
      { ...tinyV2(), layers: [dense(FEATURE_DIM + 8 * HISTORY_DIM + SITE_DIM, 8, 1)] },
      { ...SHAPE, historySteps: 8 },
      { ...META, history_steps: 8 },
    );
    const e = await PoseModel.load(wrongSteps, { thread: 'inline' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelError);
    expect((e as Error).message).toMatch(/input 'history' has shape \[N, 8, 31\], expected \[N, 16, 31\]/);
  });
});

describe('decodeOutputs v2', () => {
  const camera = viewCamera(DEFAULT_VIEW);
  const receiver = { x: 3, y: 0.2 };

  /** One row: slots 0 and 2 hold people (presence 0.9 and 0.7), standing 3 m in front of the receiver. */
  function outputs(count: number[]): ModelOutputsV2 {
    const out: ModelOutputsV2 = {
      contract: 2,
      n: 1,
      maxPersons: P,
      count: Float32Array.from(count),
      presence: Float32Array.of(0.9, 0.1, 0.7, 0.05),
      keypoints3d: new Float32Array(P * 51),
      activity: new Float32Array(P * A),
      fall: Float32Array.of(0.2),
    };
    for (const [p, dx] of [
      [0, -0.8],
      [2, 0.8],
    ] as const) {
      // A standing skeleton facing the camera: joint heights from the ankles (0.08 m) to the head.
      const z = [1.65, 1.7, 1.7, 1.68, 1.68, 1.45, 1.45, 1.15, 1.15, 0.9, 0.9, 0.95, 0.95, 0.5, 0.5, 0.08, 0.08];
      const x = [0, 0.03, -0.03, 0.08, -0.08, 0.2, -0.2, 0.25, -0.25, 0.27, -0.27, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1];
      // Left is +x here: the person faces -y, towards the camera.
      for (let k = 0; k < 17; k++) out.keypoints3d.set([dx + x[k]!, 3, z[k]!], (p * 17 + k) * 3);
      out.activity[p * A + MODEL_ACTIVITIES.indexOf(p === 0 ? 'standing' : 'walking')] = 0.8;
      out.activity[p * A + MODEL_ACTIVITIES.indexOf('sitting')] = 0.2;
    }
    return out;
  }

  it('reports as many people as the count says at the threshold: the median at 0.5', () => {
    const c = Float32Array.of(0.1, 0.2, 0.5, 0.15, 0.05);
    expect(countFromProbabilities(c, 0, P, 0.5)).toBe(2);
    expect(countFromProbabilities(c, 0, P, 0.69)).toBe(2);
    expect(countFromProbabilities(c, 0, P, 0.71)).toBe(1);
    expect(countFromProbabilities(c, 0, P, 0.95)).toBe(0);
    expect(countFromProbabilities(c, 0, P, 0.1)).toBe(3);
    expect(countFromProbabilities(c, 0, P, 0.05)).toBe(4);
    const o = { view: { width: 640, height: 480 }, maxPersons: 4, includeDensePose: true, camera, receiver };
    expect(decodeOutputs(outputs(Array.from(c)), 0, { ...o, confidenceThreshold: 0.5 }).map((p) => p.slot)).toEqual([0, 2]);
    expect(decodeOutputs(outputs(Array.from(c)), 0, { ...o, confidenceThreshold: 0.71 }).map((p) => p.slot)).toEqual([0]);
    expect(decodeOutputs(outputs(Array.from(c)), 0, { ...o, confidenceThreshold: 0.5, maxPersons: 1 })).toHaveLength(1);
    // The k-th person's confidence is P(count >= k): each reported person reaches the threshold.
    const conf = decodeOutputs(outputs(Array.from(c)), 0, { ...o, confidenceThreshold: 0.5 }).map((p) => p.confidence);
    const tails = Array.from(c).map((_, k) =>
      Array.from(c)
        .slice(k + 1)
        .reduce((x, v) => x + v, 0),
    );
    expect(conf).toHaveLength(2);
    conf.forEach((v, k) => expect(v).toBeCloseTo(tails[k]!, 6));
    for (const v of conf) expect(v).toBeGreaterThanOrEqual(0.5);
  });

  it('moves skeletons to the room, projects them through the view, and derives floor, box, parts and activity', () => {
    // P(count >= 1) = P(count >= 2) = 0.9: both persons' confidence.
    const [a, b] = decodeOutputs(outputs([0.1, 0, 0.9, 0, 0]), 0, {
      view: { width: 640, height: 480 },
      confidenceThreshold: 0.5,
      maxPersons: 4,
      includeDensePose: true,
      camera,
      receiver,
    });
    expect(a!.confidence).toBeCloseTo(0.9, 6);
    expect(b!.confidence).toBeCloseTo(0.9, 6);
    // Room metres: x + receiver x, y + receiver y, z as given.
    expect(a!.keypoints3d![0]).toBeCloseTo(3 - 0.8, 5);
    expect(a!.keypoints3d![1]).toBeCloseTo(3.2, 5);
    expect(a!.floor!.x).toBeCloseTo(2.2, 5);
    expect(a!.floor!.y).toBeCloseTo(3.2, 5);
    // Pixels: exactly the camera's projection, confidence = the person's inside the view.
    const px = new Float64Array(2);
    camera.project(2.2, 3.2, 1.65, px, 0);
    expect(a!.keypoints[0]).toBeCloseTo(px[0]!, 3);
    expect(a!.keypoints[1]).toBeCloseTo(px[1]!, 3);
    expect(a!.keypoints[2]).toBeCloseTo(0.9, 6);
    // Left of centre, and the second person right of it.
    expect(a!.bbox[0]! + a!.bbox[2]! / 2).toBeLessThan(320);
    expect(b!.bbox[0]! + b!.bbox[2]! / 2).toBeGreaterThan(320);
    expect(a!.bbox[3]).toBeGreaterThan(a!.bbox[2]!);
    // Facing the camera: the torso's front is seen, its back is not.
    const dp = a!.densePose!;
    expect(dp).toHaveLength(N_DENSE_PARTS * 3);
    expect(dp[1 * 3]).toBeCloseTo(0.9, 6); // torso_front
    expect(dp[0]).toBe(0); // torso_back
    expect(a!.modelActivity!.activity).toBe('standing');
    expect(b!.modelActivity!.activity).toBe('walking');
    expect(b!.modelActivity!.confidence).toBeCloseTo(0.8, 6);
  });

  it('needs the view camera', () => {
    expect(() =>
      decodeOutputs(outputs([0, 1, 0, 0, 0]), 0, { view: { width: 640, height: 480 }, confidenceThreshold: 0.5, maxPersons: 4, includeDensePose: false }),
    ).toThrow(/needs the view camera/);
  });
});
