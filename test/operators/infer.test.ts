import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concat, firstValueFrom, from, lastValueFrom, mergeMap, of, ReplaySubject, skip, Subject, take, toArray, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { COUNT_HYSTERESIS, countWithHysteresis, infer, spec, type FeatureRow, type InferOptions, type InferStats } from '../../operators/infer.js';
import { buildMlpPoseModel } from '../../src/calibration/onnxWriter.js';
import { ModelError, PoseModel, type PoseRunner } from '../../src/model/runtime.js';
import { csiLayout, parseSite, SITE_DIM, siteVector, type SiteGeometry } from '../../src/model/contract.js';
import { resolveParams } from '../../src/engine/params.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { contractModel, featureRows, forward, tempDir, tinyMeta, tinyWeights } from '../helpers/poseModels.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { sanitizePhase } from '../../operators/sanitizePhase.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import { features } from '../../operators/features.js';
import { describeWithSamples, sample, sampleBytes } from '../helpers/samples.js';
import { TRAINED_MODEL } from '../helpers/server.js';
import { configParam } from '../../src/config/params.js';

const F = 6;
const P = 2;
const weights = tinyWeights(F, [8], P);
const modelBytes = buildMlpPoseModel(weights, tinyMeta(F, P));
const tmp = tempDir('csipose-infer-');
let model: PoseModel;

beforeAll(async () => {
  model = await PoseModel.load(modelBytes);
});
afterAll(async () => {
  await model.release();
  tmp.cleanup();
});

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));
const zeroStats = (): InferStats => ({ batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The longest wait the schema allows (neural_network.max_wait_ms): longer than these tests, so no timer cuts their batches. */
const LONGEST_WAIT = configParam('neural_network.max_wait_ms').max!;

/** A real model whose runs are recorded (batch size and scheduler time of each call). */
function recording(inner: PoseRunner, now: () => number = () => 0, delay?: (call: number) => number) {
  const calls: Array<{ n: number; at: number }> = [];
  const runs: Array<Promise<unknown>> = [];
  const runner: PoseRunner = {
    metadata: inner.metadata,
    featureDim: inner.featureDim,
    maxPersons: inner.maxPersons,
    contract: inner.contract,
    run(features, n, opts) {
      const call = calls.length;
      calls.push({ n, at: now() });
      let p = inner.run(features, n, opts);
      const ms = delay?.(call) ?? 0;
      if (ms > 0) p = p.then(async (out) => (await sleep(ms), out));
      runs.push(p.catch(() => undefined));
      return p;
    },
  };
  return { runner, calls, runs };
}

/** The persons the model must report for a row at threshold 0 (both slots, highest presence first). */
function expectPersonsOf(frame: PoseFrame, row: FeatureRow): void {
  const ref = forward(weights, row.features, 1);
  const order = [0, 1].sort((a, b) => ref.presence[b] - ref.presence[a]);
  expect(frame.persons.map((p) => p.slot)).toEqual(order);
  for (const person of frame.persons) {
    const s = person.slot;
    expect(person.confidence).toBeCloseTo(ref.presence[s], 5);
    for (let j = 0; j < 17; j++) {
      expect(person.keypoints[j * 3]).toBeCloseTo(ref.keypoints[s * 51 + j * 3] * 640, 3);
      expect(person.keypoints[j * 3 + 1]).toBeCloseTo(ref.keypoints[s * 51 + j * 3 + 1] * 480, 3);
      expect(person.keypoints[j * 3 + 2]).toBeCloseTo(ref.keypoints[s * 51 + j * 3 + 2], 5);
    }
    expect(person.bbox[2]).toBeCloseTo(ref.boxes[s * 4 + 2] * 640, 3);
    expect(person.floor?.x).toBeCloseTo(ref.floor[s * 2], 5);
    expect(person.densePose?.[71]).toBeCloseTo(ref.densepose[s * 72 + 71], 5);
  }
}

describe('infer: the count shown, with hysteresis', () => {
  // P(count = 0..3) with P(count >= 2) = q.
  const dist = (q: number) => Float64Array.of(0, 1 - q, q, 0);

  it('a distribution hovering at the threshold does not flip the count; a clear one moves it', () => {
    expect(COUNT_HYSTERESIS).toBeGreaterThan(0);
    const h = COUNT_HYSTERESIS;
    // The start of a stream takes the plain rule.
    expect(countWithHysteresis(dist(0.55), 3, 0.5, null)).toBe(2);
    expect(countWithHysteresis(dist(0.45), 3, 0.5, null)).toBe(1);
    // Hovering within the band keeps what is shown, either way.
    const shown: number[] = [];
    let c: number | null = null;
    for (const q of [0.45, 0.55, 0.5 + h - 0.01, 0.5 - h + 0.01, 0.55, 0.45]) shown.push((c = countWithHysteresis(dist(q), 3, 0.5, c)));
    expect(shown).toEqual([1, 1, 1, 1, 1, 1]);
    // Up once P(count >= 2) reaches threshold + h, down once it is below threshold - h.
    expect(countWithHysteresis(dist(0.5 + h), 3, 0.5, 1)).toBe(2);
    expect(countWithHysteresis(dist(0.5 - h + 0.01), 3, 0.5, 2)).toBe(2);
    expect(countWithHysteresis(dist(0.5 - h - 0.01), 3, 0.5, 2)).toBe(1);
    // Several steps at once when the evidence is clear.
    expect(countWithHysteresis(Float64Array.of(0.95, 0.05, 0, 0), 3, 0.5, 3)).toBe(0);
    expect(countWithHysteresis(Float64Array.of(0, 0, 0.05, 0.95), 3, 0.5, 0)).toBe(3);
  });

  it('narrows the band near a threshold of 0 or 1, so that the count can still go both ways', () => {
    // Threshold 0.05: the band is +-0.025; P(count >= 1) = 0.01 takes a shown 1 down to 0.
    expect(countWithHysteresis(Float64Array.of(0.99, 0.01, 0, 0), 3, 0.05, 1)).toBe(0);
    expect(countWithHysteresis(Float64Array.of(0.96, 0.04, 0, 0), 3, 0.05, 1)).toBe(1);
    expect(countWithHysteresis(Float64Array.of(0.92, 0.08, 0, 0), 3, 0.05, 0)).toBe(1);
    // Threshold 0.95: up needs P(count >= 1) >= 0.975.
    expect(countWithHysteresis(Float64Array.of(0.03, 0.97, 0, 0), 3, 0.95, 0)).toBe(0);
    expect(countWithHysteresis(Float64Array.of(0.02, 0.98, 0, 0), 3, 0.95, 0)).toBe(1);
  });
});

describe('infer: marbles', () => {
  const rows = featureRows(4, F);
  const v = { a: rows[0], b: rows[1], c: rows[2], d: rows[3] };
  // Batches that never fill and a wait longer than the test: nothing reaches the model.
  const idle = (): InferOptions => ({ model, batchSize: 32, maxWaitMs: 1000 });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('-a-b-#', v, new Error('boom'));
      expectObservable(src.pipe(infer(idle()))).toBe('-----#', undefined, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', v);
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      expectObservable(src.pipe(infer(idle())), unsub).toBe('-------');
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--|', v);
      const subs = '   ^-----!     ';
      const unsub = '  ^-----!     ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        infer(idle()),
        mergeMap((x) => of(x)),
      );
      expectObservable(result, unsub).toBe('-------');
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('completes with an empty source', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<FeatureRow>('--|').pipe(infer(idle()))).toBe('--|');
    });
  });

  it('runs a partial batch when its oldest row has waited maxWaitMs, a full one at once', () => {
    const ts = testScheduler();
    const rec = recording(model, () => ts.now());
    ts.run(({ cold }) => {
      // a@0 b@2 c@12 d@14: partial batches at 0 + 5 and 12 + 5.
      const sub = cold('a-b---------c-d', v)
        .pipe(infer({ model: rec.runner, batchSize: 32, maxWaitMs: 5, concurrency: 2, scheduler: ts }))
        .subscribe();
      ts.schedule(() => sub.unsubscribe(), 100);
    });
    expect(rec.calls).toEqual([
      { n: 2, at: 5 },
      { n: 2, at: 17 },
    ]);

    const ts2 = testScheduler();
    const rec2 = recording(model, () => ts2.now());
    ts2.run(({ cold }) => {
      // The third row fills the batch at 4; d@9 then waits until 14.
      const sub = cold('a-b-c----d', v)
        .pipe(infer({ model: rec2.runner, batchSize: 3, maxWaitMs: 5, concurrency: 2, scheduler: ts2 }))
        .subscribe();
      ts2.schedule(() => sub.unsubscribe(), 100);
    });
    expect(rec2.calls).toEqual([
      { n: 3, at: 4 },
      { n: 1, at: 14 },
    ]);
  });
});

describe('infer: batching and order', () => {
  it('emits one frame per row in input order, each decoded from its own row', async () => {
    const rows = featureRows(21, F);
    const rec = recording(model);
    const stats = zeroStats();
    const frames = await lastValueFrom(
      // A wait far longer than the test: batches are cut by size and by the end of the input alone, never by a timer on a loaded machine.
      from(rows).pipe(infer({ model: rec.runner, batchSize: 4, maxWaitMs: LONGEST_WAIT, concurrency: 3, confidenceThreshold: 0, stats }), toArray()),
    );
    expect(frames.map((f) => f.time)).toEqual(rows.map((r) => r.frameTime));
    expect(rec.calls.map((c) => c.n)).toEqual([4, 4, 4, 4, 4, 1]);
    expect(stats).toMatchObject({ batches: 6, rows: 21, dropped: 0, queue: 0 });
    expect(stats.avgBatchMs).toBeGreaterThan(0);
    // frameId counts per environment: even rows are env-a, odd rows env-b.
    expect(frames.filter((f) => f.environmentId === 'env-a').map((f) => f.frameId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(frames.filter((f) => f.environmentId === 'env-b').map((f) => f.frameId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    frames.forEach((f, k) => {
      expect(f).toMatchObject({ sourceId: 'src', modelVersion: 'test-1', csiQuality: 0.9 });
      expect(f.processingMs).toBeGreaterThanOrEqual(0);
      expectPersonsOf(f, rows[k]);
    });
  });

  it('with the default wait (0), runs a row at once when the model is idle and batches what arrives while it runs', async () => {
    const rows = featureRows(9, F);
    // The first batch takes 40 ms: the eight rows behind it queue and go out together.
    const rec = recording(model, undefined, (call) => (call === 0 ? 40 : 0));
    const frames = await lastValueFrom(from(rows).pipe(infer({ model: rec.runner, batchSize: 32 }), toArray()));
    expect(rec.calls.map((c) => c.n)).toEqual([1, 8]);
    expect(frames.map((f) => f.time)).toEqual(rows.map((r) => r.frameTime));
  });

  it('keeps input order when batches finish out of order', async () => {
    const rows = featureRows(9, F);
    // The first batch is held back 40 ms, so batches 2 and 3 finish before it.
    const rec = recording(model, undefined, (call) => (call === 0 ? 40 : 0));
    const frames = await lastValueFrom(from(rows).pipe(infer({ model: rec.runner, batchSize: 3, maxWaitMs: 5, concurrency: 3 }), toArray()));
    expect(rec.calls.map((c) => c.n)).toEqual([3, 3, 3]);
    expect(frames.map((f) => f.time)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('batches by size: a full batch runs without waiting', async () => {
    const rec = recording(model);
    const stats = zeroStats();
    const rows = new Subject<FeatureRow>();
    const out = firstValueFrom(rows.pipe(infer({ model: rec.runner, batchSize: 4, maxWaitMs: LONGEST_WAIT, stats }), take(8), toArray()));
    featureRows(8, F).forEach((r) => rows.next(r));
    const frames = await out;
    expect(frames.map((f) => f.time)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(rec.calls.map((c) => c.n)).toEqual([4, 4]);
    expect(stats).toMatchObject({ batches: 2, rows: 8 });
  });

  it('batches by time: a partial batch runs after maxWaitMs though the source stays open', async () => {
    const rec = recording(model);
    const stats = zeroStats();
    const rows = new Subject<FeatureRow>();
    const out = firstValueFrom(rows.pipe(infer({ model: rec.runner, batchSize: 32, maxWaitMs: 5, stats }), take(3), toArray()));
    featureRows(3, F).forEach((r) => rows.next(r));
    expect(rec.calls).toEqual([]); // not before the wait
    const frames = await out;
    expect(frames.map((f) => f.time)).toEqual([0, 1, 2]);
    expect(rec.calls.map((c) => c.n)).toEqual([3]);
    expect(stats.batches).toBe(1);
  });

  it('flushes the queue when the source completes', async () => {
    const rec = recording(model);
    const frames = await lastValueFrom(from(featureRows(5, F)).pipe(infer({ model: rec.runner, maxWaitMs: LONGEST_WAIT }), toArray()));
    expect(frames).toHaveLength(5);
    expect(rec.calls.map((c) => c.n)).toEqual([5]);
  });

  it('queues rows that arrive while the model loads', async () => {
    let rec: ReturnType<typeof recording> | undefined;
    const loading = PoseModel.load(modelBytes, { thread: 'inline' }).then((m) => (rec = recording(m)).runner);
    const frames = await lastValueFrom(from(featureRows(7, F)).pipe(infer({ model: loading, batchSize: 4 }), toArray()));
    expect(frames.map((f) => f.time)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(rec?.calls.map((c) => c.n)).toEqual([4, 3]);
  });
});

describe('infer: lag, live options, errors, teardown', () => {
  it('drops the oldest queued rows under a burst and counts them', async () => {
    const rec = recording(model);
    const stats = zeroStats();
    let maxQueueSeen = 0;
    const rows = new Subject<FeatureRow>();
    const out = lastValueFrom(
      rows.pipe(
        infer({
          model: rec.runner,
          batchSize: 2,
          maxQueue: 3,
          maxWaitMs: LONGEST_WAIT,
          stats,
          onStats: (s) => (maxQueueSeen = Math.max(maxQueueSeen, s.queue)),
        }),
        toArray(),
      ),
    );
    // Rows 0 and 1 fill a batch at once; rows 2..9 queue behind it and only the newest 3 survive.
    featureRows(10, F).forEach((r) => rows.next(r));
    rows.complete();
    const frames = await out;
    expect(frames.map((f) => f.time)).toEqual([0, 1, 7, 8, 9]);
    expect(rec.calls.map((c) => c.n)).toEqual([2, 2, 1]);
    expect(stats).toMatchObject({ batches: 3, rows: 5, dropped: 5, queue: 0 });
    expect(maxQueueSeen).toBeLessThanOrEqual(3);
  });

  it('reads options live: threshold, person limit and batch size apply from the next batch', async () => {
    const rec = recording(model);
    // A fresh object on every read, as a config store would hand out.
    const live = { confidenceThreshold: 0, maxPersons: 10, batchSize: 2 };
    const rows = new Subject<FeatureRow>();
    const frames = new ReplaySubject<PoseFrame>();
    const sub = rows.pipe(infer(() => ({ model: rec.runner, maxWaitMs: LONGEST_WAIT, ...live }))).subscribe(frames);
    const input = featureRows(9, F);
    const step = async (seen: number, batch: FeatureRow[]) => {
      const next = firstValueFrom(frames.pipe(skip(seen), take(batch.length), toArray()));
      batch.forEach((r) => rows.next(r));
      return (await next).map((f) => f.persons.length);
    };
    expect(await step(0, input.slice(0, 2))).toEqual([2, 2]);
    live.confidenceThreshold = 0.5; // slot 1 (presence about 0.05) goes
    expect(await step(2, input.slice(2, 4))).toEqual([1, 1]);
    // Both slots pass threshold 0 again; the person limit (the schema's least, 1) keeps one.
    live.confidenceThreshold = 0;
    live.maxPersons = 1;
    live.batchSize = 3;
    expect(await step(4, input.slice(4, 7))).toEqual([1, 1, 1]);
    expect(rec.calls.map((c) => c.n)).toEqual([2, 2, 3]);
    sub.unsubscribe();
  });

  it('errors with ModelError when the model file is missing, and the process goes on', async () => {
    const err = await lastValueFrom(from(featureRows(2, F)).pipe(infer({ modelPath: '/nonexistent/csipose.onnx' }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ code: 'MODEL_ERROR', message: 'model file not found: /nonexistent/csipose.onnx' });
  });

  it('errors with ModelError for a file that is not a model (built from the spec)', async () => {
    const path = tmp.file('notes.onnx', 'not a model at all');
    const op = spec.create(resolveParams(spec.params, { modelPath: path }), {});
    const err = await lastValueFrom(from(featureRows(2, F)).pipe(op)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).message).toMatch(/^not an ONNX model/);
  });

  it('errors with ModelError when a run fails', async () => {
    const broken = await PoseModel.load(contractModel(F, P, { badReshape: true }));
    const err = await lastValueFrom(from(featureRows(3, F)).pipe(infer({ model: broken }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).message).toMatch(/^inference failed: .*Reshape/);
    await broken.release();
  });

  it('errors with ModelError when the rows do not have the model feature_dim', async () => {
    const rows = featureRows(2, F + 1);
    const err = await lastValueFrom(from(rows).pipe(infer({ model }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).message).toBe('feature row has 7 values, the model expects feature_dim 6');
    const rec = recording(model);
    const err2 = await lastValueFrom(from(featureRows(2, F)).pipe(infer({ model: rec.runner, featureDim: 540 }))).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(ModelError);
    expect((err2 as ModelError).message).toBe('model expects feature_dim 6, the features have 540');
    expect(rec.calls).toEqual([]);
  });

  it('stops running once unsubscribed: no timer fires, no queued row is run after the batch in flight', async () => {
    const rec = recording(model);
    const rows = new Subject<FeatureRow>();
    const input = featureRows(3, F);
    // A lone row waiting for its timer: unsubscribing cancels it.
    const sub1 = rows.pipe(infer({ model: rec.runner, batchSize: 2, maxWaitMs: 5 })).subscribe();
    rows.next(input[0]);
    sub1.unsubscribe();
    await sleep(30);
    expect(rec.calls).toEqual([]);
    // A batch in flight and a row queued behind it: the batch finishes, the queued row never runs.
    const got: PoseFrame[] = [];
    const sub2 = rows.pipe(infer({ model: rec.runner, batchSize: 2, maxWaitMs: 5 })).subscribe((f) => got.push(f));
    input.forEach((r) => rows.next(r));
    expect(rec.calls.map((c) => c.n)).toEqual([2]);
    sub2.unsubscribe();
    await Promise.all(rec.runs);
    await sleep(30);
    expect(rec.calls.map((c) => c.n)).toEqual([2]);
    expect(got).toEqual([]);
  });

  it('has a spec named infer that loads its model from modelPath', async () => {
    expect(spec.name).toBe('infer');
    expect(spec.input).toBe('features');
    expect(spec.output).toBe('pose');
    expect(Object.fromEntries(spec.params.map((p) => [p.name, p.default]))).toEqual({
      modelPath: 'models/csipose-pose.onnx',
      batchSize: 32,
      maxWaitMs: 0,
      maxQueue: 256,
      confidenceThreshold: 0.5,
      // The configuration's defaults (detection.max_persons is 4), stated once in the schema.
      maxPersons: 4,
      viewWidth: 640,
      viewHeight: 480,
      // The reference camera and the receiver (environment.view, environment.site): v2 skeletons
      // are projected through the one and are relative to the other.
      viewHfovDeg: 90,
      viewX: 3,
      viewY: 0.05,
      viewZ: 1.6,
      viewYawDeg: 0,
      viewPitchDeg: -10,
      receiverX: 3,
      receiverY: 0.2,
      site: '',
      includeDensePose: true,
    });
    const path = tmp.file('model.onnx', modelBytes);
    const op = spec.create(resolveParams(spec.params, { modelPath: path, batchSize: 2, viewWidth: 100, viewHeight: 50 }), {});
    const rows = featureRows(3, F);
    const frames: PoseFrame[] = await lastValueFrom(from(rows).pipe(op, toArray()));
    expect(frames.map((f) => [f.time, f.persons.length])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
    const ref = forward(weights, rows[0].features, 1);
    expect(frames[0].persons[0].bbox[0]).toBeCloseTo(ref.boxes[0] * 100, 3);
    expect(frames[0].persons[0].bbox[1]).toBeCloseTo(ref.boxes[1] * 50, 3);
  });

  it('rejects bad options at creation', () => {
    expect(() => infer({ batchSize: 0 })).toThrow(RangeError);
    expect(() => infer({ maxQueue: 0 })).toThrow(RangeError);
    expect(() => infer({ confidenceThreshold: 1.5 })).toThrow(RangeError);
    expect(() => infer({ maxWaitMs: -1 })).toThrow(RangeError);
    const site = { roomWidth: 4, roomDepth: 4, receiver: { x: 2, y: 0.2, z: 1 }, transmitter: { x: 5, y: 3.8, z: 1 } };
    expect(() => infer({ site })).toThrow(/infer: site: transmitter x must be in 0..4 m/);
    expect(() => spec.create(resolveParams(spec.params, { site: '4,4,2' }), {})).toThrow(/site must be 8 comma-separated numbers/);
  });

  it('feeds the site to a model with the site input, live, from the options or the site parameter', async () => {
    const siteWeights = { ...tinyWeights(F + SITE_DIM, [8], P), siteDim: SITE_DIM };
    const bytes = buildMlpPoseModel(siteWeights, { ...tinyMeta(F, P), site_dim: SITE_DIM });
    const siteModel = await PoseModel.load(bytes);
    const site = parseSite('6,5,2.5,0.2,1.2,4,4.8,1.5')!;
    const rows = featureRows(2, F);
    const floorOf = (frames: PoseFrame[]) => frames.map((f) => f.persons.map((p) => [p.slot, p.floor?.x, p.floor?.y]));
    /** The model's own answer for a row with a site row (null = unknown). */
    const expected = (row: FeatureRow, siteRow: Float32Array) => {
      const x = new Float32Array(F + SITE_DIM);
      x.set(row.features);
      x.set(siteRow, F);
      return forward(siteWeights, x, 1).floor;
    };
    let current: SiteGeometry | null = site;
    const live = await lastValueFrom(
      from(rows).pipe(
        infer(() => ({ model: siteModel, batchSize: 1, confidenceThreshold: 0, site: current })),
        toArray(),
      ),
    );
    live[0].persons.forEach((p) => expect(p.floor?.x).toBeCloseTo(expected(rows[0], siteVector(site))[p.slot * 2], 4));
    current = null;
    const unknown = await lastValueFrom(
      from(rows).pipe(
        infer(() => ({ model: siteModel, batchSize: 1, confidenceThreshold: 0, site: current })),
        toArray(),
      ),
    );
    unknown[0].persons.forEach((p) => expect(p.floor?.x).toBeCloseTo(expected(rows[0], siteVector(null))[p.slot * 2], 4));
    expect(floorOf(live)).not.toEqual(floorOf(unknown));
    const path = tmp.file('site-model.onnx', bytes);
    const op = spec.create(resolveParams(spec.params, { modelPath: path, confidenceThreshold: 0, site: '6,5,2.5,0.2,1.2,4,4.8,1.5' }), {});
    expect(floorOf(await lastValueFrom(from(rows).pipe(op, toArray())))).toEqual(floorOf(live));
    await siteModel.release();
  });
});

/**
 * Issue 17, item 12a: 13 ESP32 packets (1x1, 64 subcarriers) through `features | infer` gave a
 * person at confidence 1. A layout the model was not trained on is refused, or, for a live
 * service, dropped and its link listed.
 */
describeWithSamples('infer: CSI layouts the model was not trained on', () => {
  const ESP32 = `file:${sample('esp32/example_csi.csv')}`;
  /** The 13 ESP32 packets of the real capture, 10 ms apart, from `sourceId`. */
  const esp32Frames = (sourceId = ESP32): CsiFrame[] =>
    decodeEsp32(sampleBytes('esp32/example_csi.csv'), { sourceId }).frames.map((f, i) => ({ ...f, time: 1_000 + 10 * i }));
  /** Simulated frames of the default room: 3x3 antennas, 30 subcarriers, 5 GHz (a trained layout). */
  const simFrames = (n: number, sourceId: string): CsiFrame[] => {
    const sim = new CsiSimulator({ seed: 3, people: 1, sourceId });
    return Array.from({ length: n }, () => ({ ...sim.next().frame }));
  };
  /** Frames to feature rows as the pose pipelines build them (8-frame windows, hop 1: 13 packets give 6). */
  const rowsOf = (frames: Observable<CsiFrame>): Observable<FeatureRow> =>
    frames.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: 8, hop: 1 }), features());

  let shipped: PoseModel | undefined;
  beforeAll(async () => {
    if (existsSync(TRAINED_MODEL)) shipped = await PoseModel.load(TRAINED_MODEL);
  });
  afterAll(async () => {
    await shipped?.release();
  });

  it('features mark each row with its layout: the ESP32 capture is 1x1, 64 subcarriers spanning 20 MHz, 2.4 GHz', async () => {
    const rows = await lastValueFrom(rowsOf(from(esp32Frames())).pipe(toArray()));
    expect(rows).toHaveLength(6);
    for (const r of rows) expect(r.layout).toEqual({ nRx: 1, nTx: 1, nSub: 64, bandwidthMhz: 20, band: '2.4' });
    // One layout object per shape: the check is a lookup per row, not a scan of the subcarriers.
    expect(new Set(rows.map((r) => r.layout)).size).toBe(1);
  });

  it.skipIf(!existsSync(TRAINED_MODEL))('refuses the ESP32 packets with the shipped model: MODEL_ERROR naming the source and the layout, no pose', async () => {
    const got: PoseFrame[] = [];
    const err = await lastValueFrom(rowsOf(from(esp32Frames())).pipe(infer({ model: shipped! }), toArray())).then(
      (frames) => (got.push(...frames), undefined),
      (e: unknown) => e,
    );
    expect(got).toEqual([]);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('MODEL_ERROR');
    expect((err as Error).message).toBe(
      `the model ${shipped!.metadata.model_version} was not trained on the CSI layout of ${ESP32}: 1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz; ` +
        'not trained on 64 subcarriers spanning 20 MHz (trained: 30 spanning 20 MHz, 56 spanning 20 MHz, 114 spanning 40 MHz); 2.4 GHz (trained: 5 GHz)',
    );
  });

  it.skipIf(!existsSync(TRAINED_MODEL))(
    'drop: no pose from the untrained link, the trained one goes on, and the link is listed until it sends a trained layout',
    async () => {
      const stats: InferStats = zeroStats();
      const snapshots: Array<InferStats['untrained']> = [];
      const frames = concat(from(esp32Frames('esp32-link')), from(simFrames(12, 'sim-link')), from(simFrames(10, 'esp32-link')));
      const out = await lastValueFrom(
        rowsOf(frames).pipe(infer({ model: shipped!, untrained: 'drop', stats, batchSize: 1, onStats: (s) => snapshots.push(s.untrained) }), toArray()),
      );
      // 12 simulated frames give 5 windows, 10 give 3: only those are inferred.
      expect(out.map((f) => f.sourceId)).toEqual([...Array(5).fill('sim-link'), ...Array(3).fill('esp32-link')]);
      expect(stats.rows).toBe(8);
      // While the ESP32 link sent ESP32 CSI it was listed, with the reason; its trained windows took it off.
      const listed = snapshots.find((u) => u && u.length > 0)!;
      expect(listed).toEqual([
        {
          sourceId: 'esp32-link',
          environmentId: 'default',
          layout: '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz',
          reason: '64 subcarriers spanning 20 MHz (trained: 30 spanning 20 MHz, 56 spanning 20 MHz, 114 spanning 40 MHz); 2.4 GHz (trained: 5 GHz)',
          windows: 6,
          lastAt: expect.any(Number),
        },
      ]);
      expect(stats.untrained).toEqual([]);
    },
  );

  it('a model that declares no layouts runs rows of any layout (it cannot be checked)', async () => {
    expect(model.trainedLayouts).toBeNull();
    const esp32 = csiLayout(esp32Frames()[0]!);
    const rows = featureRows(3, F).map((r) => ({ ...r, layout: esp32 }));
    const out = await lastValueFrom(from(rows).pipe(infer({ model, confidenceThreshold: 0 }), toArray()));
    expect(out).toHaveLength(3);
  });

  it('a model declaring trained_layouts reads those and refuses the others', async () => {
    const bytes = buildMlpPoseModel(weights, tinyMeta(F, P, { trained_layouts: 'antennas=1x1;subcarriers=64/20;bands=2.4' }));
    const m = await PoseModel.load(bytes);
    try {
      const esp32 = csiLayout(esp32Frames()[0]!);
      const room = csiLayout(simFrames(1, 'sim')[0]!);
      const ok = await lastValueFrom(from(featureRows(2, F).map((r) => ({ ...r, layout: esp32 }))).pipe(infer({ model: m }), toArray()));
      expect(ok).toHaveLength(2);
      const err = await lastValueFrom(from(featureRows(2, F).map((r) => ({ ...r, layout: room }))).pipe(infer({ model: m }), toArray())).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as Error).message).toMatch(
        /CSI layout of src: 3x3 antennas, 30 subcarriers spanning 20 MHz, 5 GHz; not trained on 3x3 antennas \(trained: 1x1\); 30 subcarriers spanning 20 MHz \(trained: 64 spanning 20 MHz\); 5 GHz \(trained: 2\.4 GHz\)$/,
      );
    } finally {
      await m.release();
    }
  });

  it('refuse: the rows before the refused one still come out (same batch), then the error; nothing after it', async () => {
    const bytes = buildMlpPoseModel(weights, tinyMeta(F, P, { trained_layouts: 'antennas=1x1;subcarriers=64/20;bands=2.4' }));
    const m = await PoseModel.load(bytes);
    try {
      const esp32 = csiLayout(esp32Frames()[0]!);
      const room = csiLayout(simFrames(1, 'sim')[0]!);
      const rows = featureRows(5, F).map((r, i) => ({ ...r, layout: i === 3 ? room : esp32 }));
      const got: PoseFrame[] = [];
      const rec = recording(m);
      const err = await new Promise<unknown>((resolve) => {
        const src = new Subject<FeatureRow>();
        src.pipe(infer({ model: { ...rec.runner, trainedLayouts: m.trainedLayouts }, batchSize: 32, maxWaitMs: 1000 })).subscribe({
          next: (f) => got.push(f),
          error: resolve,
          complete: () => resolve(undefined),
        });
        rows.forEach((r) => src.next(r));
        src.complete();
      });
      expect(got.map((f) => f.time)).toEqual([0, 1, 2]);
      expect(rec.calls.map((c) => c.n)).toEqual([3]);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as Error).message).toMatch(/not trained on the CSI layout of src: 3x3 antennas/);
    } finally {
      await m.release();
    }
  });

  it('rejects an unknown policy', async () => {
    const err = await lastValueFrom(from(featureRows(1, F)).pipe(infer({ model, untrained: 'ignore' as 'drop' }))).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/untrained must be 'refuse' or 'drop'/);
  });
});
