import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { ModelError, PoseModel, type ModelOutputsV2 } from '../../src/model/runtime.js';
import { HISTORY_WIDTH } from '../../src/model/history.js';
import { MODEL_V2_OUTPUTS } from '../../src/model/contract.js';
import type { FromWorker, ToWorker } from '../../src/model/sessionProtocol.js';
import { contractModel, featureBatch } from '../helpers/poseModels.js';
import { repoRoot } from '../helpers/cli.js';

const SHIPPED = join(repoRoot, 'models/csipose-pose.onnx');
/** What `npm run build` compiles src/model/sessionWorker.ts to (the tests run after a build). */
const WORKER_JS = join(repoRoot, 'dist/src/model/sessionWorker.js');
const site = { roomWidth: 6, roomDepth: 5, receiver: { x: 2.5, y: 0.2, z: 1.2 }, transmitter: { x: 4, y: 4.8, z: 1.5 } };

describe.skipIf(!existsSync(SHIPPED))('the worker session on the shipped model', () => {
  let worker: PoseModel;
  let inline: PoseModel;
  beforeAll(async () => {
    [worker, inline] = await Promise.all([PoseModel.load(SHIPPED, { thread: 'worker' }), PoseModel.load(SHIPPED, { thread: 'inline' })]);
  });
  afterAll(async () => {
    await Promise.all([worker?.release(), inline?.release()]);
  });

  it('loads it with the same description as the inline session', () => {
    expect(worker.contract).toBe(2);
    expect(worker.featureDim).toBe(inline.featureDim);
    expect(worker.siteDim).toBe(inline.siteDim);
    expect(worker.maxPersons).toBe(inline.maxPersons);
    expect(worker.metadata).toEqual(inline.metadata);
    expect(worker.trainedLayouts).toEqual(inline.trainedLayouts);
  });

  it('runs a batch (features, history, site) to the inline outputs within 1e-6, transferring when asked', async () => {
    const n = 5;
    const F = worker.featureDim;
    const x = featureBatch(n, F, 7);
    const history = featureBatch(n, HISTORY_WIDTH, 8).map((v) => v * 0.5);
    const ref = (await inline.run(x, n, { site, history: history.slice() })) as ModelOutputsV2;
    const copied = (await worker.run(x, n, { site, history })) as ModelOutputsV2;
    expect(x.length).toBe(n * F); // not consumed without `transfer`
    const given = x.slice();
    const moved = (await worker.run(given, n, { site, history: history.slice(), transfer: true })) as ModelOutputsV2;
    expect(given.length).toBe(0); // handed over to the worker
    for (const out of [copied, moved]) {
      expect(out.n).toBe(n);
      for (const name of MODEL_V2_OUTPUTS) {
        const a = out[name];
        const b = ref[name];
        expect(a, name).toBeInstanceOf(Float32Array);
        expect(a.length, name).toBe(b.length);
        let worst = 0;
        for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
        expect(worst, name).toBeLessThanOrEqual(1e-6);
      }
    }
  });

  it('keeps concurrent runs apart', async () => {
    const F = worker.featureDim;
    const sizes = [1, 3, 2];
    const batches = sizes.map((k, i) => featureBatch(k, F, 20 + i));
    const outs = await Promise.all(batches.map((b, i) => worker.run(b, sizes[i]!)));
    const refs = await Promise.all(batches.map((b, i) => inline.run(b, sizes[i]!)));
    outs.forEach((o, i) => {
      expect(o.n).toBe(sizes[i]);
      const a = (o as ModelOutputsV2).count;
      const b = (refs[i] as ModelOutputsV2).count;
      a.forEach((v, j) => expect(Math.abs(v - b[j]!)).toBeLessThanOrEqual(1e-6));
    });
  });
});

describe('the worker session: failures and release', () => {
  it('forwards a failure inside inference as a ModelError, survives it, and releases', async () => {
    const model = await PoseModel.load(contractModel(6, 2, { badReshape: true }), { thread: 'worker' });
    const err = await model.run(featureBatch(2, 6), 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('MODEL_ERROR');
    expect((err as ModelError).message).toMatch(/^inference failed: .*Reshape/);
    await expect(model.run(featureBatch(1, 6), 1)).rejects.toThrow(/^inference failed/);
    await model.release();
    await expect(model.run(featureBatch(1, 6), 1)).rejects.toThrow(/model released/);
    await model.release(); // twice is harmless
  });
});

describe.skipIf(!existsSync(SHIPPED))('the compiled worker speaks the protocol of sessionProtocol.ts', () => {
  /** Starts the compiled worker and collects what it answers. */
  function start() {
    const w = new Worker(WORKER_JS);
    const next = () =>
      new Promise<FromWorker>((ok, fail) => {
        w.once('message', ok);
        w.once('error', fail);
      });
    const send = (m: ToWorker, transfer: ArrayBuffer[] = []) => w.postMessage(m, transfer);
    return { w, next, send };
  }

  it('answers a run before any load, and a run with wrong dims, with runError and the same id', async () => {
    const { w, next, send } = start();
    try {
      send({ type: 'run', id: 4, feeds: [{ name: 'features', data: new Float32Array(6), dims: [1, 6] }] });
      expect(await next()).toEqual({ type: 'runError', id: 4, message: 'no model loaded' });
      const bytes = new Uint8Array(await readFile(SHIPPED));
      send({ type: 'load', bytes, options: { executionProviders: ['cpu'], logSeverityLevel: 3 } }, [bytes.buffer]);
      const loaded = await next();
      expect(loaded.type).toBe('loaded');
      if (loaded.type === 'loaded') expect(loaded.inputs.map((i) => i.name)).toContain('features');
      send({ type: 'run', id: 9, feeds: [{ name: 'features', data: new Float32Array(6), dims: [1, 6] }] });
      const bad = await next();
      expect(bad).toMatchObject({ type: 'runError', id: 9, message: expect.any(String) });
    } finally {
      await w.terminate();
    }
  });

  it('refuses bytes that are not a model with loadError', async () => {
    const { w, next, send } = start();
    try {
      const bytes = new Uint8Array([1, 2, 3, 4]);
      send({ type: 'load', bytes, options: {} }, [bytes.buffer]);
      expect(await next()).toMatchObject({ type: 'loadError', message: expect.any(String) });
    } finally {
      await w.terminate();
    }
  });
});
