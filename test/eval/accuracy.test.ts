/**
 * The accuracy benchmark end to end, on a tiny plan: with an oracle model that answers every
 * window with its own ground truth, the harness must find (nearly) perfect scores, which shows
 * that pose frames are scored against the right instant and persons; with the contract test model
 * it must produce the DECISIONS document, identical on a second run.
 */
import { createHash } from 'node:crypto';
import { Subject } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  benchRecipes,
  checkSidecar,
  defaultLiveSettings,
  fallSimOptions,
  json,
  markdown,
  planFallScenarios,
  recipeSimulator,
  runAccuracy,
  type AccuracyPlan,
} from '../../bench/accuracy.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { FEATURE_DIM, HOP, WINDOW_FRAMES } from '../../src/model/features.js';
import { PoseModel, type ModelOutputs, type PoseRunner } from '../../src/model/runtime.js';
import { fillTargets, OUT, OUTPUT_DIM } from '../../src/model/train/targets.js';
import { makeRecipes } from '../../src/model/train/recipe.js';
import { CsiSimulator, type GroundTruth } from '../../src/sim/simulator.js';
import { sanitizePhase } from '../../operators/sanitizePhase.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import { features } from '../../operators/features.js';
import { contractModel, tempDir } from '../helpers/poseModels.js';

const PLAN: AccuracyPlan = { seed: 4242, poseScenarios: 2, poseSeconds: 6, fallScenarios: 2, fallSeconds: 18 };
const P = 4;

const key = (f: Float32Array) => createHash('sha1').update(Buffer.from(f.buffer, f.byteOffset, f.byteLength)).digest('hex');

/** Maps the features of every window of a simulated stream to the targets of its last frame. */
function indexWindows(sim: CsiSimulator, frames: number, table: Map<string, Float32Array>): void {
  const truths = new Map<number, GroundTruth>();
  const input = new Subject<CsiFrame>();
  input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), features()).subscribe((row) => {
    const out = new Float32Array(OUTPUT_DIM);
    fillTargets(truths.get(row.frameTime)!, sim.scenario.camera, out);
    table.set(key(row.features), out);
  });
  for (let i = 0; i < frames; i++) {
    const s = sim.next();
    truths.set(s.frame.time, s.truth);
    input.next(s.frame);
  }
  input.complete();
}

/** A "model" that outputs the ground truth of each window it is given. */
function oracle(plan: AccuracyPlan): PoseRunner {
  const table = new Map<string, Float32Array>();
  const recipes = benchRecipes(plan);
  for (const r of recipes.pose) {
    const { sim } = recipeSimulator(r);
    indexWindows(sim, Math.round(r.seconds * sim.rateHz), table);
  }
  const people = planFallScenarios(recipes.fall);
  recipes.fall.forEach((r, i) => {
    const sim = new CsiSimulator(fallSimOptions(r, people[i]!));
    indexWindows(sim, Math.round(r.seconds * sim.rateHz), table);
  });
  return {
    metadata: { csipose_contract: '1', model_version: 'oracle', feature_dim: FEATURE_DIM, max_persons: P, window_frames: WINDOW_FRAMES, trained_on: 'ground truth' },
    featureDim: FEATURE_DIM,
    maxPersons: P,
    async run(f: Float32Array, n: number): Promise<ModelOutputs> {
      const o: ModelOutputs = {
        n,
        maxPersons: P,
        presence: new Float32Array(n * P),
        keypoints: new Float32Array(n * P * 51),
        boxes: new Float32Array(n * P * 4),
        floor: new Float32Array(n * P * 2),
        densepose: new Float32Array(n * P * 72),
      };
      for (let r = 0; r < n; r++) {
        const t = table.get(key(f.subarray(r * FEATURE_DIM, (r + 1) * FEATURE_DIM)));
        if (!t) throw new Error('oracle: a window it never saw');
        o.presence.set(t.subarray(OUT.presence, OUT.presence + P), r * P);
        o.keypoints.set(t.subarray(OUT.keypoints, OUT.keypoints + P * 51), r * P * 51);
        o.boxes.set(t.subarray(OUT.boxes, OUT.boxes + P * 4), r * P * 4);
        o.floor.set(t.subarray(OUT.floor, OUT.floor + P * 2), r * P * 2);
      }
      return o;
    },
  };
}

const value = (results: { name: string; value: number }[], name: string) => {
  const r = results.find((x) => x.name === name);
  if (!r) throw new Error(`no result ${name}`);
  return r.value;
};

describe('bench:accuracy', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('uses held-out TEST recipes and the service default settings', () => {
    const r = benchRecipes(PLAN);
    expect(r.pose.map((x) => x.people).sort()).toEqual([1, 3]);
    expect(r.pose.every((x) => x.split === 'test')).toBe(true);
    expect(r.fall).toHaveLength(2);
    const s = defaultLiveSettings();
    expect(s.confidenceThreshold).toBe(0.5);
    expect(s.alerts.fallDetection?.notificationDelaySeconds).toBe(5);
  });

  it('rebuilds the training scenarios from the training report and finds shared seeds', () => {
    const report = {
      recipe: { master_seed: 7, scenario_seconds: 8 },
      scenario_counts: { train: 40, val: 5, test: 10 },
      test_scores: { all: { one: { pck02: 0.5 }, three: { pck02: 0.25 }, all: { pck02: 0.4, countExact: 0.8 } } },
    };
    const ours = benchRecipes(PLAN);
    const clean = checkSidecar(report, [...ours.pose, ...ours.fall]);
    expect(clean.trainScenarios).toBe(45);
    expect(clean.sharedSeeds).toBe(0);
    expect(clean.own).toEqual({ pckOne: 0.5, pckThree: 0.25, pckAll: 0.4, countExact: 0.8 });
    // A benchmark that reused two training scenarios would be caught.
    const leaked = makeRecipes(7, { train: 40, val: 5, test: 0, seconds: 8 }).slice(3, 5);
    expect(checkSidecar(report, [...ours.pose, ...leaked]).sharedSeeds).toBe(2);
    const unknown = checkSidecar({}, ours.pose);
    expect([unknown.trainScenarios, unknown.sharedSeeds, unknown.own]).toEqual([0, 0, null]);
  });

  it('scores an oracle (the ground truth as model output) as (nearly) perfect', async () => {
    const report = await runAccuracy(PLAN, oracle(PLAN), 'oracle');
    const res = report.results;
    // Perfect keypoints; the few misses are frames where a brand-new track is not yet confirmed.
    expect(value(res, 'accuracy.pck02.one')).toBeGreaterThan(0.97);
    expect(value(res, 'accuracy.pck02.three')).toBeGreaterThan(0.97);
    expect(value(res, 'accuracy.mpjpe_px')).toBeLessThan(0.01);
    expect(value(res, 'accuracy.count_exact')).toBeGreaterThan(0.97);
    expect(value(res, 'accuracy.mota')).toBeGreaterThan(0.97);
    expect(value(res, 'accuracy.id_switches')).toBe(0);
    // Scenario 0 is a walk and fall, scenario 1 a deliberate lie-down (and a companion).
    expect(report.falls.scores.falls).toBe(1);
    expect(report.falls.people.map((p) => p.role).slice(0, 2)).toEqual(['walk_fall', 'walk_lie']);
    expect(value(res, 'accuracy.fall_recall')).toBe(1);
    // The alert goes out after the 5 s notification delay.
    const delay = value(res, 'accuracy.fall_delay_s');
    expect(delay).toBeGreaterThanOrEqual(5);
    expect(delay).toBeLessThanOrEqual(10);
    expect(markdown(report)).toContain('held-out');
  });

  it('runs the shipped code path on an ONNX model and prints the DECISIONS document, identically twice', async () => {
    const path = tmp.file('contract.onnx', contractModel(FEATURE_DIM, P));
    const small: AccuracyPlan = { seed: 4242, poseScenarios: 2, poseSeconds: 4, fallScenarios: 1, fallSeconds: 8 };
    const docs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const model = await PoseModel.load(path, { featureDim: FEATURE_DIM });
      try {
        const report = await runAccuracy(small, model, path);
        expect(report.contractTestModel).toBe(true);
        expect(markdown(report)).toContain('CONTRACT TEST MODEL');
        docs.push(json(report));
      } finally {
        await model.release();
      }
    }
    expect(docs[1]).toBe(docs[0]);
    const doc = JSON.parse(docs[0]!) as { node: string; cpu: string; results: Array<{ name: string; value: number | null; unit: string; n: number }> };
    expect(Object.keys(doc).sort()).toEqual(['cpu', 'node', 'results']);
    const names = doc.results.map((r) => r.name);
    for (const n of ['accuracy.pck02.one', 'accuracy.pck02.three', 'accuracy.count_exact', 'accuracy.fall_precision', 'accuracy.fall_recall']) {
      expect(names).toContain(n);
    }
    for (const r of doc.results) {
      expect(typeof r.unit).toBe('string');
      expect(Number.isInteger(r.n)).toBe(true);
      if (r.unit === 'fraction' && r.value !== null) {
        expect(r.value).toBeGreaterThanOrEqual(0);
        expect(r.value).toBeLessThanOrEqual(1);
      }
    }
    expect(doc.results.find((r) => r.name === 'accuracy.pck02.one')!.n).toBe(1);
  });
});
