import { describe, expect, it } from 'vitest';
import { asModelError, InferRunner } from '../../src/model/inferRunner.js';
import type { FeatureRow, InferStats } from '../../src/model/inferTypes.js';
import { HISTORY_WIDTH } from '../../src/model/history.js';
import { ModelError, type ModelOutputs, type PoseRunner, type RunOptions } from '../../src/model/runtime.js';
import { parseSite, type ModelMetadata } from '../../src/model/contract.js';

const F = 3;

/** A model whose runs wait until the test answers them: `answer(i)` resolves run i, `refuse(i, e)` rejects it. */
function heldModel(contract: 1 | 2 | 3 = 1, featureDim = F) {
  const calls: Array<{ features: Float32Array; n: number; opts: RunOptions | undefined }> = [];
  const held: Array<{ resolve: (o: ModelOutputs) => void; reject: (e: unknown) => void }> = [];
  const model: PoseRunner = {
    metadata: { model_version: 'held-1' } as ModelMetadata,
    featureDim,
    maxPersons: 2,
    contract,
    run(features, n, opts) {
      calls.push({ features, n, opts });
      return new Promise<ModelOutputs>((resolve, reject) => held.push({ resolve, reject }));
    },
  };
  /** Outputs tagged with the run they answer. */
  const outputsOf = (i: number) => ({ contract: 1, n: calls[i]!.n, tag: i }) as unknown as ModelOutputs;
  return {
    model,
    calls,
    answer: (i: number) => held[i]!.resolve(outputsOf(i)),
    refuse: (i: number, e: unknown) => held[i]!.reject(e),
  };
}

const rowsOf = (values: number[][], history?: (i: number) => Float32Array | undefined): FeatureRow[] =>
  values.map((v, i) => {
    const h = history?.(i);
    return { features: Float32Array.from(v), frameTime: i, arrival: 0, sourceId: 's', environmentId: 'e', csiQuality: 1, ...(h ? { history: h } : {}) };
  });
const zeroStats = (): Pick<InferStats, 'batches' | 'rows' | 'lastBatchMs' | 'avgBatchMs'> => ({ batches: 0, rows: 0, lastBatchMs: 0, avgBatchMs: 0 });

/** Runs a batch; the promise resolves when its `settled` callback is called, with what it was called with. */
function run<C>(runner: InferRunner<C>, rows: FeatureRow[], context: C): Promise<Error | undefined> {
  return new Promise((resolve) => runner.run(rows, null, context, resolve));
}

describe('asModelError', () => {
  const model = new ModelError('model file not found');
  const range = new RangeError('infer: batchSize must be ...');
  it.each([
    { name: 'a ModelError as it is', e: model, same: true, message: 'model file not found' },
    { name: 'a RangeError (a bad option) as it is', e: range, same: true, message: 'infer: batchSize must be ...' },
    { name: 'an Error, wrapped', e: new Error('Reshape failed'), same: false, message: 'inference failed: Reshape failed' },
    { name: 'a thrown string, wrapped', e: 'boom', same: false, message: 'inference failed: boom' },
  ])('$name', ({ e, same, message }) => {
    const got = asModelError(e);
    expect(got.message).toBe(message);
    if (same) expect(got).toBe(e);
    else {
      expect(got).toBeInstanceOf(ModelError);
      expect((got as ModelError).code).toBe('MODEL_ERROR');
      expect(got.cause).toBe(e);
    }
  });
});

describe('InferRunner: the model it takes', () => {
  it.each([
    { name: 'a v1 model', contract: 1 as const, dim: F, featureDim: undefined, error: null },
    { name: 'a v2 model of the features width', contract: 2 as const, dim: F, featureDim: F, error: null },
    {
      name: 'a v3 refiner',
      contract: 3 as const,
      dim: F,
      featureDim: undefined,
      error: /^model held-1 is a csipose-pose-v3 refiner .*: it runs in the refine stage/,
    },
    { name: 'another feature width', contract: 1 as const, dim: F, featureDim: 540, error: /^model expects feature_dim 3, the features have 540$/ },
  ])('$name', ({ contract, dim, featureDim, error }) => {
    const make = () => new InferRunner(heldModel(contract, dim).model, zeroStats(), featureDim === undefined ? {} : { featureDim });
    if (error) expect(make).toThrow(error);
    else expect(make().idle).toBe(true);
  });
});

describe('InferRunner: a batch', () => {
  it('copies the rows into one tensor, in order, and hands it over with the site', async () => {
    const h = heldModel(1);
    const runner = new InferRunner(h.model, zeroStats());
    const site = parseSite('6,5,2.5,0.2,1.2,4,4.8,1.5');
    runner.run(
      rowsOf([
        [1, 2, 3],
        [4, 5, 6],
      ]),
      site,
      'ctx',
      () => undefined,
    );
    expect(h.calls).toHaveLength(1);
    expect(Array.from(h.calls[0]!.features)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(h.calls[0]!.n).toBe(2);
    // v1: no history; the tensor is the model's to keep (transferred to its worker).
    expect(h.calls[0]!.opts).toEqual({ transfer: true, site });
  });

  it('v2: copies each row history beside it; a row without one (or of another width) reads zeros', () => {
    const h = heldModel(2);
    const runner = new InferRunner(h.model, zeroStats());
    const hist = (v: number) => new Float32Array(HISTORY_WIDTH).fill(v);
    const rows = rowsOf(
      [
        [1, 1, 1],
        [2, 2, 2],
        [3, 3, 3],
      ],
      (i) => (i === 0 ? hist(7) : i === 1 ? undefined : new Float32Array(HISTORY_WIDTH - 1).fill(9)),
    );
    runner.run(rows, null, 0, () => undefined);
    const history = h.calls[0]!.opts!.history!;
    expect(history).toHaveLength(3 * HISTORY_WIDTH);
    expect(history.subarray(0, HISTORY_WIDTH).every((v) => v === 7)).toBe(true);
    expect(history.subarray(HISTORY_WIDTH).every((v) => v === 0)).toBe(true);
  });

  it('refuses a row of another width before running anything', () => {
    const h = heldModel(1);
    const runner = new InferRunner(h.model, zeroStats());
    const call = () =>
      runner.run(
        rowsOf([
          [1, 2, 3],
          [1, 2, 3, 4],
        ]),
        null,
        0,
        () => undefined,
      );
    expect(call).toThrow(ModelError);
    expect(call).toThrow('feature row has 4 values, the model expects feature_dim 3');
    const noFeatures = [{ ...rowsOf([[1, 2, 3]])[0]!, features: undefined as unknown as Float32Array }];
    expect(() => runner.run(noFeatures, null, 0, () => undefined)).toThrow('feature row has no values, the model expects feature_dim 3');
    expect(h.calls).toEqual([]);
    expect(runner.inFlight).toBe(0);
  });

  it('a model that throws at once: thrown as MODEL_ERROR, nothing in flight', () => {
    const h = heldModel(1);
    h.model.run = () => {
      throw new Error('session released');
    };
    const runner = new InferRunner(h.model, zeroStats());
    expect(() => runner.run(rowsOf([[1, 2, 3]]), null, 0, () => undefined)).toThrow('inference failed: session released');
    expect(runner.inFlight).toBe(0);
    expect(runner.idle).toBe(true);
  });
});

describe('InferRunner: results', () => {
  it('gives the batches back in launch order though they finish out of order', async () => {
    const h = heldModel(1);
    const runner = new InferRunner<string>(h.model, zeroStats());
    const done = ['a', 'b', 'c'].map((ctx, i) => run(runner, rowsOf([[i, i, i]]), ctx));
    expect(runner.inFlight).toBe(3);
    h.answer(2);
    await done[2];
    h.answer(1);
    await done[1];
    // a still runs: nothing can be taken.
    expect(runner.inFlight).toBe(1);
    expect(runner.next()).toBeUndefined();
    expect(runner.idle).toBe(false);
    h.answer(0);
    expect(await done[0]).toBeUndefined();
    const order: string[] = [];
    for (let b = runner.next(); b; b = runner.next()) order.push(`${b.context}:${(b.out as unknown as { tag: number }).tag}:${b.rows[0]!.features[0]}`);
    expect(order).toEqual(['a:0:0', 'b:1:1', 'c:2:2']);
    expect(runner.idle).toBe(true);
  });

  it('keeps the batch figures with its clock', async () => {
    const h = heldModel(1);
    const stats = zeroStats();
    const times = [0, 10, 30, 35];
    const runner = new InferRunner(h.model, stats, { clock: () => times.shift()! });
    const a = run(
      runner,
      rowsOf([
        [1, 1, 1],
        [2, 2, 2],
      ]),
      0,
    ); // launched at 0
    const b = run(runner, rowsOf([[3, 3, 3]]), 0); // launched at 10
    h.answer(0);
    await a; // done at 30: 30 ms
    expect(stats).toEqual({ batches: 1, rows: 2, lastBatchMs: 30, avgBatchMs: 30 });
    h.answer(1);
    await b; // done at 35: 25 ms
    expect(stats).toEqual({ batches: 2, rows: 3, lastBatchMs: 25, avgBatchMs: 27.5 });
  });

  it.each([
    { name: 'an Error', e: new Error('Reshape: bad shape'), message: 'inference failed: Reshape: bad shape', wrapped: true },
    { name: 'a ModelError', e: new ModelError('worker exited'), message: 'worker exited', wrapped: false },
  ])('a failed run settles with $name in MODEL_ERROR form, not counted', async ({ e, message, wrapped }) => {
    const h = heldModel(1);
    const stats = zeroStats();
    const runner = new InferRunner(h.model, stats);
    const settled = run(runner, rowsOf([[1, 2, 3]]), 0);
    h.refuse(0, e);
    const err = await settled;
    expect(err).toBeInstanceOf(ModelError);
    expect(err!.message).toBe(message);
    if (wrapped) expect(err!.cause).toBe(e);
    else expect(err).toBe(e);
    expect(stats.batches).toBe(0);
    expect(runner.inFlight).toBe(0);
    expect(runner.next()).toBeUndefined();
  });

  it('after stop: finished batches are dropped, those in flight discarded and not counted, but still settled', async () => {
    const h = heldModel(1);
    const stats = zeroStats();
    const runner = new InferRunner(h.model, stats);
    const a = run(runner, rowsOf([[1, 1, 1]]), 0);
    const b = run(runner, rowsOf([[2, 2, 2]]), 0);
    h.answer(0);
    await a;
    expect(stats.batches).toBe(1);
    runner.stop();
    expect(runner.next()).toBeUndefined();
    h.answer(1);
    expect(await b).toBeUndefined();
    expect(stats.batches).toBe(1);
    expect(runner.next()).toBeUndefined();
    expect(runner.idle).toBe(true);
  });
});
