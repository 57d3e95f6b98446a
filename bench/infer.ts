import { from, lastValueFrom, count } from 'rxjs';
import { CONTRACT_VERSION, SITE_DIM } from '../src/model/contract.js';
import { buildMlpPoseModel, POSE_HEADS, type DenseWeights, type MlpPoseWeights, type PoseHeadName } from '../src/calibration/onnxWriter.js';
import { PoseModel } from '../src/model/runtime.js';
import { Rng } from '../src/sim/rng.js';
import { infer, type FeatureRow } from '../operators/infer.js';
import { throughput, type BenchResult } from './lib.js';

const FEATURE_DIM = 1080;
const TRUNK = [512, 256];
const PERSONS = 4;
const PER_PERSON: Record<PoseHeadName, number> = { presence: 1, keypoints: 51, boxes: 4, floor: 2, densepose: 72 };

/** Gaussian weights scaled by 1 / sqrt(fan-in), so activations stay in a realistic range. */
function dense(rng: Rng, inN: number, outN: number): DenseWeights {
  const sd = 1 / Math.sqrt(inN);
  const w = new Float32Array(inN * outN);
  for (let i = 0; i < w.length; i++) w[i] = rng.gaussian(0, sd);
  const b = new Float32Array(outN);
  for (let i = 0; i < outN; i++) b[i] = rng.gaussian(0, 0.1);
  return { w, b, in: inN, out: outN };
}

/**
 * A contract MLP of the production size: 1080 -> 512 -> 256 -> heads for 4 persons; with
 * `siteDim` it also takes the `site` input (the first layer reads 1080 + siteDim values).
 */
export function benchModelBytes(seed = 1, siteDim = 0): Uint8Array {
  const rng = new Rng(seed);
  const layers: DenseWeights[] = [];
  let width = FEATURE_DIM + siteDim;
  for (const h of TRUNK) {
    layers.push(dense(rng, width, h));
    width = h;
  }
  const heads = {} as Record<PoseHeadName, DenseWeights>;
  for (const head of POSE_HEADS) heads[head.name] = dense(rng, width, PERSONS * PER_PERSON[head.name]);
  const weights: MlpPoseWeights = siteDim > 0 ? { layers, heads, siteDim } : { layers, heads };
  return buildMlpPoseModel(weights, {
    csipose_contract: CONTRACT_VERSION,
    model_version: 'bench-random',
    feature_dim: FEATURE_DIM,
    max_persons: PERSONS,
    window_frames: 64,
    trained_on: 'none (seeded random weights, speed only)',
    ...(siteDim > 0 ? { site_dim: siteDim } : {}),
  });
}

function features(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(n * FEATURE_DIM);
  for (let i = 0; i < x.length; i++) x[i] = rng.gaussian(0, 1);
  return x;
}

/**
 * Inference throughput in windows (feature rows) per second on one core: the production-size
 * contract MLP (1080-512-256, P = 4) through `PoseModel.run`, one batch in flight at a time, at
 * batch 32 and batch 1, with the session in its worker thread (the service's setting) and inline
 * for comparison; then the whole `infer` operator (batching, copy, decode to PoseFrames) at batch 32.
 * The weights come from a seeded PRNG: the figures measure speed, not accuracy.
 */
export async function run(): Promise<BenchResult[]> {
  const bytes = benchModelBytes();
  const out: BenchResult[] = [];
  const note = (extra: string) => `contract MLP 1080-512-256, P=4, seeded random weights (speed only); 1 intra-op thread; one batch in flight; ${extra}`;

  for (const thread of ['worker', 'inline'] as const) {
    const model = await PoseModel.load(bytes, { thread });
    const suffix = thread === 'worker' ? '' : '.inline';
    const perBatch: Record<number, number> = {};
    for (const batch of [32, 1]) {
      const x = features(batch, batch);
      // About a quarter of a second per round at the rates seen here.
      const runs = batch === 32 ? 600 : 3000;
      const r = await throughput(
        `infer.batch${batch}${suffix}`,
        'windows/s',
        async () => {
          let last;
          for (let i = 0; i < runs; i++) last = await model.run(x, batch);
          return last;
        },
        { items: runs * batch, rounds: 7 },
      );
      perBatch[batch] = r.value;
      r.note = note(`session in ${thread === 'worker' ? 'a worker thread' : 'the main thread'}`);
      out.push(r);
    }
    out[out.length - 2].note += `; ${(perBatch[32] / perBatch[1]).toFixed(1)}x batch 1`;
    await model.release();
  }

  // The same with the site input: the site row is repeated per window and sent beside the batch.
  {
    const model = await PoseModel.load(benchModelBytes(1, SITE_DIM));
    const x = features(32, 32);
    const site = { roomWidth: 6, roomDepth: 5, receiver: { x: 3, y: 0.2, z: 1.2 }, transmitter: { x: 3, y: 4.8, z: 1.2 } };
    const runs = 600;
    const r = await throughput(
      'infer.batch32.site',
      'windows/s',
      async () => {
        let last;
        for (let i = 0; i < runs; i++) last = await model.run(x, 32, { site });
        return last;
      },
      { items: runs * 32, rounds: 7 },
    );
    r.note = note(`session in a worker thread; with the site input (${SITE_DIM} more inputs, the site rows built per batch)`);
    out.push(r);
    await model.release();
  }

  const model = await PoseModel.load(bytes);
  const all = features(1024, 7);
  const now = Date.now();
  const rows: FeatureRow[] = Array.from({ length: 1024 }, (_, k) => ({
    features: all.subarray(k * FEATURE_DIM, (k + 1) * FEATURE_DIM),
    frameTime: now + k * 80,
    arrival: now,
    sourceId: 'bench',
    environmentId: 'bench',
    csiQuality: 1,
  }));
  const ROUNDS_OF_ROWS = 8;
  const r = await throughput(
    'infer.op.batch32',
    'windows/s',
    async () => {
      for (let i = 0; i < ROUNDS_OF_ROWS; i++) {
        const frames = await lastValueFrom(from(rows).pipe(infer({ model, batchSize: 32, maxQueue: rows.length, confidenceThreshold: 0 }), count()));
        // Every row must come out: a dropped row would make the figure meaningless.
        if (frames !== rows.length) throw new Error(`infer bench: ${frames} frames for ${rows.length} rows`);
      }
    },
    { items: rows.length * ROUNDS_OF_ROWS, rounds: 7 },
  );
  r.note = note('the infer operator end to end (batch copy, worker run, decode of 4 persons with DensePose per frame)');
  out.push(r);
  await model.release();
  return out;
}
