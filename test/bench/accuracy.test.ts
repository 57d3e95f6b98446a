/**
 * The accuracy benchmark end to end, on a tiny plan: with an oracle model that answers every
 * window with its own ground truth, the harness must find (nearly) perfect scores, which shows
 * that pose frames are scored against the right instant and persons; with the contract test model
 * it must produce the DECISIONS document, identical on a second run.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { benchRecipes, checkSidecar, defaultLiveParams, json, markdown, runAccuracy, type AccuracyPlan } from '../../bench/accuracy.js';
import { oracleRunner } from '../../bench/oracle.js';
import { FEATURE_DIM } from '../../src/model/features.js';
import { PoseModel } from '../../src/model/runtime.js';
import { isHeldOut, makeRecipes } from '../../src/training/recipe.js';
import { contractModel, tempDir } from '../helpers/poseModels.js';

const PLAN: AccuracyPlan = { seed: 4242, split: 'test', poseScenarios: 2, poseSeconds: 6, fallScenarios: 2, fallSeconds: 18 };
const P = 4;

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
    const s = defaultLiveParams();
    expect(s.infer.confidenceThreshold).toBe(0.5);
    expect(s.infer.maxPersons).toBe(4);
    expect(s.alerts.notificationDelaySeconds).toBe(5);
  });

  it('split val takes VALIDATION recipes outside the held-out bands, with seeds apart from TEST', () => {
    const test = benchRecipes(PLAN);
    const val = benchRecipes({ ...PLAN, split: 'val' });
    expect(val.pose).toHaveLength(2);
    expect(val.fall).toHaveLength(2);
    for (const r of [...val.pose, ...val.fall]) {
      expect(r.split).toBe('val');
      expect(isHeldOut(r)).toBe(false);
    }
    const testSeeds = new Set([...test.pose, ...test.fall].map((r) => r.seed));
    expect([...val.pose, ...val.fall].some((r) => testSeeds.has(r.seed))).toBe(false);
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
    const report = await runAccuracy(PLAN, oracleRunner(PLAN), 'oracle');
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
    const small: AccuracyPlan = { seed: 4242, split: 'test', poseScenarios: 2, poseSeconds: 4, fallScenarios: 1, fallSeconds: 8 };
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
