/**
 * The accuracy benchmark end to end, on tiny plans: with an oracle model that answers every
 * window with its own ground truth, the harness must find (nearly) perfect scores in both settings,
 * which shows that pose frames are scored against the right instant and persons; with a v2
 * contract test model it must produce the DECISIONS document, calibration included, identical on a
 * second run; and the same-room path (record, calibrate, load the room model, score it and the
 * model as it came) must run on a model trained by the training script.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  benchRecipes,
  checkSidecar,
  defaultLiveParams,
  json,
  markdown,
  meanPoseOf,
  planRecipes,
  roomRecipes,
  runAccuracy,
  type AccuracyPlan,
} from '../../bench/accuracy.js';
import { oracleRunner } from '../../bench/oracle.js';
import { FEATURE_DIM } from '../../src/model/features.js';
import { PoseModel } from '../../src/model/runtime.js';
import { isHeldOut, makeRecipes } from '../../src/training/recipe.js';
import { runTraining } from '../../src/training/run.js';
import type { LiveParams } from '../../pipelines/settings.js';
import { contractModel, contractModelV2, tempDir } from '../helpers/poseModels.js';

const PLAN: AccuracyPlan = {
  seed: 4242,
  split: 'test',
  poseScenarios: 2,
  poseSeconds: 10,
  fallScenarios: 2,
  fallSeconds: 18,
  room: { calibrationSeconds: 40, calibrationPeople: [1, 2], calibrationEpochs: 1, poseScenarios: 2, poseSeconds: 10, fallScenarios: 2, fallSeconds: 18 },
};

/** Issue 11's notification delay (2 s), which the 3 s fall window is meant for; the schema's default follows it. */
const withDelay = (s: LiveParams, seconds: number): LiveParams => ({ ...s, alerts: { ...s.alerts, notificationDelaySeconds: seconds } });

const value = (results: { name: string; value: number }[], name: string) => {
  const r = results.find((x) => x.name === name);
  if (!r) throw new Error(`no result ${name}`);
  return r.value;
};

const quiet = { write: () => true };

describe('bench:accuracy', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('uses held-out TEST recipes, one held-out Intel 5300 room with sessions of their own, and the service default settings', () => {
    const r = benchRecipes(PLAN);
    expect(r.pose.map((x) => x.people).sort()).toEqual([1, 3]);
    expect(r.pose.every((x) => x.split === 'test')).toBe(true);
    expect(r.fall).toHaveLength(2);
    const room = roomRecipes(PLAN);
    expect(isHeldOut(room.room)).toBe(true);
    expect([room.room.nSub, room.room.nRx, room.room.nTx]).toEqual([30, 3, 3]);
    expect(room.calibration.map((x) => [x.people, x.seconds])).toEqual([
      [1, 20],
      [2, 20],
    ]);
    expect(room.pose.map((x) => x.people)).toEqual([1, 3]);
    expect(room.fall).toHaveLength(2);
    // Every session is the same room and layout with a seed of its own.
    for (const x of [...room.calibration, ...room.pose, ...room.fall]) {
      expect([x.room, x.rx, x.tx, x.camera, x.snrDb]).toEqual([room.room.room, room.room.rx, room.room.tx, room.room.camera, room.room.snrDb]);
    }
    const seeds = planRecipes(PLAN).map((x) => x.seed);
    expect(new Set(seeds).size).toBe(seeds.length);
    expect(planRecipes({ ...PLAN, settings: ['room'] })).toHaveLength(6);
    const s = defaultLiveParams();
    expect(s.infer.confidenceThreshold).toBe(0.5);
    expect(s.infer.maxPersons).toBe(4);
  });

  it('split val takes VALIDATION recipes outside the held-out bands, with seeds apart from TEST', () => {
    const test = benchRecipes(PLAN);
    const val = benchRecipes({ ...PLAN, split: 'val' });
    expect(val.pose).toHaveLength(2);
    expect(val.fall).toHaveLength(2);
    const valRoom = roomRecipes({ ...PLAN, split: 'val' });
    for (const r of [...val.pose, ...val.fall, valRoom.room]) {
      expect(r.split).toBe('val');
      expect(isHeldOut(r)).toBe(false);
    }
    const testSeeds = new Set([...test.pose, ...test.fall].map((r) => r.seed));
    expect([...val.pose, ...val.fall].some((r) => testSeeds.has(r.seed))).toBe(false);
  });

  it('rebuilds the training scenarios from the v2 training report, finds shared seeds, and reads its mean pose', () => {
    const report = {
      recipe: { master_seed: 7, scenario_seconds: 8 },
      scenario_counts: { train: 40, val: 5, test: 10 },
      test_scores: {
        all: { countExact: 0.8, occupied: 0.97, pose: { pck3d: 0.4, floorMedianM: 0.6 } },
        one: { pose: { pck3d: 0.5 }, baseline: { pck3d: 0.1 } },
        three: { pose: { pck3d: 0.25 } },
      },
      mean_pose: { offsets: Array.from({ length: 51 }, (_, i) => i / 100), pelvis_z: 0.9 },
    };
    const ours = planRecipes(PLAN);
    const clean = checkSidecar(report, ours);
    expect(clean.trainScenarios).toBe(45);
    expect(clean.sharedSeeds).toBe(0);
    expect(clean.own).toEqual({ pck3dOne: 0.5, pck3dThree: 0.25, baselinePck3dOne: 0.1, countExact: 0.8, occupied: 0.97, floorMedianM: 0.6 });
    // A benchmark that reused two training scenarios would be caught.
    const leaked = makeRecipes(7, { train: 40, val: 5, test: 0, seconds: 8 }).slice(3, 5);
    expect(checkSidecar(report, [...ours, ...leaked]).sharedSeeds).toBe(2);
    const unknown = checkSidecar({}, ours);
    expect([unknown.trainScenarios, unknown.sharedSeeds, unknown.own]).toEqual([0, 0, null]);
    expect(meanPoseOf(report)).toEqual({ offsets: report.mean_pose.offsets, pelvisZ: 0.9 });
    expect(meanPoseOf({})).toBeNull();
    expect(meanPoseOf({ mean_pose: { offsets: [1, 2, 3], pelvis_z: 1 } })).toBeNull();
  });

  it('refuses a contract v1 model', async () => {
    const model = await PoseModel.load(contractModel(FEATURE_DIM, 4), { featureDim: FEATURE_DIM });
    try {
      await expect(runAccuracy(PLAN, model, { modelPath: 'v1.onnx', meanPose: { offsets: new Array(51).fill(0), pelvisZ: 1 } })).rejects.toThrow(/v1 model/);
    } finally {
      await model.release();
    }
  });

  it('scores an oracle (the ground truth as model output) as (nearly) perfect in both settings', async () => {
    const oracle = oracleRunner(PLAN);
    const report = await runAccuracy(PLAN, oracle, { modelPath: 'oracle', meanPose: oracle.meanPose, oracle: true, settings: withDelay(defaultLiveParams(), 2) });
    const res = report.results;
    for (const s of ['unseen', 'room']) {
      // Perfect skeletons; the few misses are frames where a brand-new track is not yet confirmed.
      expect(value(res, `accuracy.${s}.pck3d.one`)).toBeGreaterThan(0.97);
      expect(value(res, `accuracy.${s}.pck3d.three`)).toBeGreaterThan(0.97);
      expect(value(res, `accuracy.${s}.mpjpe_cm`)).toBeLessThan(0.01);
      expect(value(res, `accuracy.${s}.floor_median_m`)).toBeLessThan(0.001);
      expect(value(res, `accuracy.${s}.pck2d.one`)).toBeGreaterThan(0.97);
      expect(value(res, `accuracy.${s}.count_exact`)).toBeGreaterThan(0.97);
      expect(value(res, `accuracy.${s}.occupied`)).toBeGreaterThan(0.97);
      expect(value(res, `accuracy.${s}.mota`)).toBeGreaterThan(0.97);
      // Not 0.9: while the frame's fall probability is up (FALL_WINDOW_S = 3 s after a fall began)
      // the activity operator labels the person most likely down `falling`, though the truth
      // says `lying` once the ~1 s fall is over; a generated fall in a short scenario weighs.
      expect(value(res, `accuracy.${s}.activity`)).toBeGreaterThan(0.85);
      // The baseline knows where people stand, not how they stand.
      expect(value(res, `accuracy.${s}.baseline.pck3d.one`)).toBeLessThan(0.5);
      // Scenario 0 is a walk and fall, scenario 1 a deliberate lie-down (and a companion).
      expect(value(res, `accuracy.${s}.fall_recall`)).toBe(1);
      expect(value(res, `accuracy.${s}.fall_precision`)).toBe(1);
      // The alert goes out after the 2 s notification delay, within the 3 s window.
      const delay = value(res, `accuracy.${s}.fall_delay_s`);
      expect(delay).toBeGreaterThanOrEqual(2);
      expect(delay).toBeLessThanOrEqual(3);
    }
    expect(report.unseen!.falls.people.map((p) => p.role).slice(0, 2)).toEqual(['walk_fall', 'walk_lie']);
    expect(report.room!.falls.scores.falls).toBe(1);
    // The oracle is scored directly in the room: nothing to calibrate, no uncalibrated figures.
    expect(report.room!.calibration).toBeNull();
    expect(res.some((r) => r.name.startsWith('accuracy.room.uncalibrated.'))).toBe(false);
    // The first round's names are the unseen setting's.
    expect(value(res, 'accuracy.pck02.one')).toBe(value(res, 'accuracy.unseen.pck2d.one'));
    expect(value(res, 'accuracy.count_exact')).toBe(value(res, 'accuracy.unseen.count_exact'));
    expect(value(res, 'accuracy.fall_recall')).toBe(value(res, 'accuracy.unseen.fall_recall'));
    const md = markdown(report);
    expect(md).toContain('held-out');
    expect(md).toContain('ORACLE');
  });

  it('runs the shipped code path on a v2 ONNX model, calibration included, and prints the DECISIONS document identically twice', async () => {
    const { bytes, sidecar } = contractModelV2();
    const path = tmp.file('contract-v2.onnx', bytes);
    const meanPose = meanPoseOf(sidecar)!;
    const small: AccuracyPlan = {
      seed: 4242,
      split: 'test',
      poseScenarios: 2,
      poseSeconds: 4,
      fallScenarios: 1,
      fallSeconds: 8,
      room: { calibrationSeconds: 20, calibrationPeople: [1, 2], calibrationEpochs: 1, poseScenarios: 2, poseSeconds: 4, fallScenarios: 1, fallSeconds: 8 },
    };
    const docs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const model = await PoseModel.load(path, { featureDim: FEATURE_DIM });
      try {
        const report = await runAccuracy(small, model, { modelPath: path, meanPose, calibrationProgress: quiet });
        expect(report.contractTestModel).toBe(true);
        expect(markdown(report)).toContain('CONTRACT TEST MODEL');
        expect(report.room!.calibration!.result.metadata.model_version).toBe('test-v2+room');
        docs.push(json(report));
      } finally {
        await model.release();
      }
    }
    expect(docs[1]).toBe(docs[0]);
    const doc = JSON.parse(docs[0]!) as { node: string; cpu: string; results: Array<{ name: string; value: number | null; unit: string; n: number }> };
    expect(Object.keys(doc).sort()).toEqual(['cpu', 'node', 'results']);
    const names = doc.results.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    const required = ['accuracy.pck02.one', 'accuracy.pck02.three', 'accuracy.count_exact', 'accuracy.fall_precision', 'accuracy.fall_recall'];
    for (const s of ['unseen', 'room']) {
      for (const n of ['pck3d.one', 'pck3d.three', 'count_exact', 'occupied', 'floor_median_m', 'fall_precision', 'fall_recall', 'activity', 'mota', 'baseline.pck3d.one']) required.push(`accuracy.${s}.${n}`);
    }
    for (const n of ['pck3d.one', 'count_exact', 'floor_median_m']) required.push(`accuracy.room.uncalibrated.${n}`);
    for (const n of required) expect(names).toContain(n);
    for (const r of doc.results) {
      expect(typeof r.unit).toBe('string');
      expect(Number.isInteger(r.n)).toBe(true);
      if (r.unit === 'fraction' && r.value !== null) {
        expect(r.value).toBeGreaterThanOrEqual(0);
        expect(r.value).toBeLessThanOrEqual(1);
      }
    }
    expect(doc.results.find((r) => r.name === 'accuracy.unseen.pck3d.one')!.n).toBe(1);
    expect(doc.results.find((r) => r.name === 'accuracy.room.fall_recall')!.n).toBe(1);
  });

  it('calibrates a model the training script made for the room, and scores the room model and the model as it came', async () => {
    const out = join(tmp.dir, 'trained');
    const trained = await runTraining({ quick: true, out, workers: 0, progress: quiet });
    const meanPose = meanPoseOf(trained.report)!;
    expect(meanPose).not.toBeNull();
    const plan: AccuracyPlan = {
      ...PLAN,
      settings: ['room'],
      room: { calibrationSeconds: 40, calibrationPeople: [1, 2], calibrationEpochs: 1, poseScenarios: 1, poseSeconds: 6, fallScenarios: 1, fallSeconds: 10 },
    };
    const model = await PoseModel.load(trained.onnxPath, { featureDim: FEATURE_DIM });
    try {
      const report = await runAccuracy(plan, model, { modelPath: trained.onnxPath, meanPose, calibrationProgress: quiet });
      expect(report.unseen).toBeNull();
      const cal = report.room!.calibration!;
      expect(cal.sessions.map((s) => s.people)).toEqual([1, 2]);
      expect(cal.result.rows.train).toBeGreaterThan(100);
      expect(cal.result.metadata.model_version).toBe(`${trained.metadata.model_version}+room`);
      // The room model and the captures lived in a temp dir that is gone.
      expect(existsSync(cal.result.out)).toBe(false);
      expect(report.room!.uncalibrated).not.toBeNull();
      const names = report.results.map((r) => r.name);
      for (const n of ['accuracy.room.pck3d.one', 'accuracy.room.uncalibrated.pck3d.one', 'accuracy.room.uncalibrated.count_exact', 'accuracy.room.uncalibrated.floor_median_m']) expect(names).toContain(n);
      expect(names.some((n) => n.startsWith('accuracy.unseen.') || n === 'accuracy.count_exact')).toBe(false);
      expect(markdown(report)).toContain('same room, uncalibrated');
    } finally {
      await model.release();
    }
  });
});
