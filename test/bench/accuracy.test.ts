/**
 * The accuracy benchmark end to end, on tiny plans: a v2 contract test model with the oracle (the
 * ground truth as model output, through the same pipeline) beside it in every setting must give
 * every third-round name with its baseline and oracle, and the oracle must score (nearly)
 * perfectly, which shows that pose frames are scored against the right instant and persons; the
 * oracle as the model under test (`--oracle`) scores the same; the DECISIONS document is identical
 * on a second run; and the same-room path (record, calibrate, load the room model, score it and
 * the model as it came) must run on a model trained by the training script.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  benchRecipes,
  checkSidecar,
  FULL_PLAN,
  planFallScenarios,
  defaultLiveParams,
  json,
  markdown,
  meanPoseOf,
  multiLinkSupport,
  planRecipes,
  roomRecipes,
  runAccuracy,
  type AccuracyPlan,
  type AccuracyReport,
} from '../../bench/accuracy.js';
import { liveOracle, oracleRunner } from '../../bench/oracle.js';
import { EMPTY_ROOM_SEQ, openStream, recipeRadios } from '../../bench/accuracy/plan.js';
import type { Calibration } from '../../bench/accuracy/room.js';
import { FEATURE_DIM } from '../../src/model/features.js';
import { PoseModel } from '../../src/model/runtime.js';
import { isHeldOut, makeRecipes } from '../../training/ts/recipe.js';
import { runTraining } from '../../training/ts/run.js';
import { contractModel, contractModelV2, tempDir } from '../helpers/poseModels.js';
import { repoRoot } from '../helpers/cli.js';

const PLAN: AccuracyPlan = {
  seed: 4242,
  split: 'test',
  poseScenarios: 2,
  poseSeconds: 10,
  fallScenarios: 2,
  fallSeconds: 18,
  room: { calibrationSeconds: 40, calibrationPeople: [1, 2], calibrationEpochs: 1, poseScenarios: 2, poseSeconds: 10, fallScenarios: 2, fallSeconds: 18 },
};

/** The plan of the end-to-end runs: every setting, as small as the scores allow. */
const SMALL: AccuracyPlan = {
  ...PLAN,
  poseSeconds: 8,
  fallSeconds: 16,
  room: { calibrationSeconds: 20, calibrationPeople: [1, 2], calibrationEpochs: 1, poseScenarios: 2, poseSeconds: 8, fallScenarios: 2, fallSeconds: 16 },
};

/** End-to-end runs take tens of seconds on an idle 2-core machine; a loaded one may need minutes. */
const E2E_TIMEOUT_MS = 300_000;

/** The third round's names (DECISIONS "Benchmark output") and their units. */
const THIRD_ROUND: ReadonlyArray<readonly [string, string]> = [
  ['floor_median_m.one', 'm'],
  ['floor_median_m', 'm'],
  ['floor_p90_m', 'm'],
  ['mpjpe_mm.one', 'mm'],
  ['mpjpe_mm.two', 'mm'],
  ['mpjpe_mm.three', 'mm'],
  ['mpjpe_rr_mm', 'mm'],
  ['pck3d_rr', 'fraction'],
  ['pck2d', 'fraction'],
  ['count_exact', 'fraction'],
  ['occupied', 'fraction'],
  ['mota', 'ratio'],
  ['idf1', 'fraction'],
  ['activity', 'fraction'],
  ['fall_precision', 'fraction'],
  ['fall_recall', 'fraction'],
  ['falls_n', 'falls'],
  ['fall_delay_s', 's'],
  ['hard_negatives_n', 'events'],
  ['hard_negative_alerts', 'events'],
];

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

  it("plans every fall scenario of the FULL plan's VALIDATION split: a room too small for the first draw is drawn again", () => {
    // VALIDATION fall recipes 89 and 151 are 3.1 x 3.3 m rooms where the first draw found no place in view.
    const { fall } = benchRecipes({ ...FULL_PLAN, split: 'val' });
    const people = planFallScenarios(fall);
    expect(people).toHaveLength(FULL_PLAN.fallScenarios);
    for (const p of people) expect(p.length).toBeGreaterThanOrEqual(1);
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

  it(
    'scores the model beside its baseline and the oracle in every setting: every third-round name, the oracle near perfect',
    async () => {
      const { bytes, sidecar } = contractModelV2();
      const path = tmp.file('contract-v2-third.onnx', bytes);
      const meanPose = meanPoseOf(sidecar)!;
      const model = await PoseModel.load(path, { featureDim: FEATURE_DIM });
      let report: AccuracyReport;
      try {
        report = await runAccuracy(SMALL, model, { modelPath: path, meanPose, calibrationProgress: quiet, oracleModel: liveOracle() });
      } finally {
        await model.release();
      }
      const res = report.results;
      const names = res.map((r) => r.name);
      expect(new Set(names).size).toBe(names.length);
      const settings = multiLinkSupport().ready ? ['unseen', 'unseen1', 'room'] : ['unseen1', 'room'];
      if (!multiLinkSupport().ready) expect(report.skipped.unseen).toMatch(/three receivers need/);
      else {
        // Three links' frames, up to the packets each lost.
        expect(report.unseen!.pose.csiFrames / report.unseen1!.pose.csiFrames).toBeGreaterThan(2.9);
        expect(report.unseen!.pose.csiFrames / report.unseen1!.pose.csiFrames).toBeLessThan(3.1);
        // The one-link model reads the primary link, which is the recipe's own link antenna for
        // antenna: with three receivers it sees exactly what it sees with one.
        for (const [n] of THIRD_ROUND) expect(value(res, `accuracy.unseen.${n}`), n).toEqual(value(res, `accuracy.unseen1.${n}`));
      }
      for (const s of settings) {
        for (const who of ['', 'baseline.', 'oracle.']) {
          for (const [n, unit] of THIRD_ROUND) {
            const r = res.find((x) => x.name === `accuracy.${s}.${who}${n}`);
            expect(r, `accuracy.${s}.${who}${n}`).toBeDefined();
            expect(r!.unit).toBe(unit);
            expect(Number.isInteger(r!.n)).toBe(true);
            expect(r!.ci95).toHaveLength(2);
            expect(r!.note).toMatch(/95 % interval/);
          }
        }
        const v = (n: string) => value(res, `accuracy.${s}.${n}`);
        // Ground truth through the pipeline: what the tracker, activity and alert rules make of perfect outputs.
        expect(v('oracle.floor_median_m.one')).toBeLessThan(0.001);
        expect(v('oracle.floor_p90_m')).toBeLessThan(0.001);
        expect(v('oracle.mpjpe_mm.one')).toBeLessThan(1);
        expect(v('oracle.mpjpe_mm.three')).toBeLessThan(1);
        expect(v('oracle.mpjpe_rr_mm')).toBeLessThan(1);
        expect(v('oracle.pck3d_rr')).toBeGreaterThan(0.97);
        expect(v('oracle.pck2d')).toBeGreaterThan(0.97);
        expect(v('oracle.count_exact')).toBeGreaterThan(0.97);
        expect(v('oracle.occupied')).toBeGreaterThan(0.99);
        expect(v('oracle.mota')).toBeGreaterThan(0.95);
        // A new track is confirmed after 3 frames: those frames cost identity, not much else.
        expect(v('oracle.idf1')).toBeGreaterThan(0.9);
        expect(v('oracle.activity')).toBeGreaterThan(0.85);
        // Scenario 0 is a walk and fall, scenario 1 a deliberate lie-down with a companion doing another hard negative.
        expect(v('oracle.falls_n')).toBe(1);
        expect(v('oracle.fall_recall')).toBe(1);
        expect(v('oracle.fall_precision')).toBe(1);
        expect(v('oracle.fall_delay_s')).toBeGreaterThanOrEqual(0.5);
        expect(v('oracle.fall_delay_s')).toBeLessThanOrEqual(3);
        expect(v('oracle.hard_negatives_n')).toBeGreaterThanOrEqual(2);
        expect(v('oracle.hard_negative_alerts')).toBe(0);
        // Wilson on 1 of 1.
        expect(res.find((x) => x.name === `accuracy.${s}.oracle.fall_recall`)!.ci95![0]).toBeCloseTo(0.2065, 3);
        // The baseline is told where everyone is and never says fall; it has no skeleton of the person.
        expect(v('baseline.floor_median_m')).toBeLessThan(1e-5);
        expect(v('baseline.count_exact')).toBe(1);
        expect(v('baseline.idf1')).toBe(1);
        expect(v('baseline.fall_recall')).toBe(0);
        expect(v('baseline.fall_precision')).toBeNaN();
        expect(v('baseline.mpjpe_rr_mm')).toBeGreaterThan(100);
        expect(v('baseline.pck3d_rr')).toBeLessThan(0.5);
        // n: scenarios for frame figures, events for fall figures.
        expect(res.find((x) => x.name === `accuracy.${s}.count_exact`)!.n).toBe(2);
        expect(res.find((x) => x.name === `accuracy.${s}.fall_recall`)!.n).toBe(1);
      }
      // The earlier rounds' names are still printed.
      for (const s of settings)
        for (const n of [
          'pck3d.one',
          'pck3d.three',
          'count_exact',
          'occupied',
          'floor_median_m',
          'fall_precision',
          'fall_recall',
          'activity',
          'mota',
          'baseline.pck3d.one',
        ])
          expect(names).toContain(`accuracy.${s}.${n}`);
      for (const n of [
        'accuracy.pck02.one',
        'accuracy.pck02.three',
        'accuracy.count_exact',
        'accuracy.fall_precision',
        'accuracy.fall_recall',
        'accuracy.room.uncalibrated.pck3d.one',
      ])
        expect(names).toContain(n);
      expect(value(res, 'accuracy.count_exact')).toBe(value(res, `accuracy.${settings[0]}.count_exact`));
      const md = markdown(report);
      expect(md).toContain('Scores a user would recognise');
      expect(md).toContain('target (issue 19)');
      expect(md).not.toContain('ORACLE MISSES IT');
      const doc = JSON.parse(json(report)) as { results: Array<{ name: string; value: number | null; ci95?: Array<number | null> }> };
      expect(doc.results.find((r) => r.name === 'accuracy.room.baseline.fall_precision')!.value).toBeNull();
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'scores the oracle as the model under test (--oracle), the first-round names from the setting it ran',
    async () => {
      const plan: AccuracyPlan = { ...SMALL, settings: ['unseen1'] };
      const oracle = oracleRunner(plan);
      const report = await runAccuracy(plan, oracle, { modelPath: 'oracle', meanPose: oracle.meanPose, oracle: true });
      const res = report.results;
      expect(value(res, 'accuracy.unseen1.pck3d.one')).toBeGreaterThan(0.97);
      expect(value(res, 'accuracy.unseen1.oracle.count_exact')).toBe(value(res, 'accuracy.unseen1.count_exact'));
      expect(value(res, 'accuracy.unseen1.fall_recall')).toBe(1);
      expect(value(res, 'accuracy.unseen1.fall_precision')).toBe(1);
      expect(value(res, 'accuracy.fall_recall')).toBe(value(res, 'accuracy.unseen1.fall_recall'));
      expect(report.unseen!).toBeNull();
      expect(report.room).toBeNull();
      expect(markdown(report)).toContain('ORACLE');
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'prints the DECISIONS document identically twice from the same model and plan',
    async () => {
      const { bytes, sidecar } = contractModelV2();
      const path = tmp.file('contract-v2.onnx', bytes);
      const meanPose = meanPoseOf(sidecar)!;
      const small: AccuracyPlan = { ...PLAN, poseScenarios: 1, poseSeconds: 4, fallScenarios: 1, fallSeconds: 8, settings: ['unseen1'] };
      const docs: string[] = [];
      for (let i = 0; i < 2; i++) {
        const model = await PoseModel.load(path, { featureDim: FEATURE_DIM });
        try {
          const report = await runAccuracy(small, model, { modelPath: path, meanPose, oracleModel: liveOracle() });
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
      for (const r of doc.results) {
        expect(typeof r.unit).toBe('string');
        if (r.unit === 'fraction' && r.value !== null) {
          expect(r.value).toBeGreaterThanOrEqual(0);
          expect(r.value).toBeLessThanOrEqual(1);
        }
      }
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'calibrates a model the training script made for the room, and scores the room model and the model as it came',
    async () => {
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
        // A v2 model: its room step is a fine-tune (a v3 refiner's is a RefinerCalibration, below).
        const cal = report.room!.calibration! as Calibration;
        expect(cal.sessions.map((s) => s.people)).toEqual([1, 2]);
        expect(cal.result.rows.train).toBeGreaterThan(100);
        expect(cal.result.metadata.model_version).toBe(`${trained.metadata.model_version}+room`);
        // The room model and the captures lived in a temp dir that is gone.
        expect(existsSync(cal.result.out)).toBe(false);
        expect(report.room!.uncalibrated).not.toBeNull();
        const names = report.results.map((r) => r.name);
        for (const n of [
          'accuracy.room.pck3d.one',
          'accuracy.room.uncalibrated.pck3d.one',
          'accuracy.room.uncalibrated.count_exact',
          'accuracy.room.uncalibrated.floor_median_m',
        ])
          expect(names).toContain(n);
        expect(names.some((n) => n.startsWith('accuracy.unseen.') || n === 'accuracy.count_exact')).toBe(false);
        expect(markdown(report)).toContain('same room, uncalibrated');
      } finally {
        await model.release();
      }
    },
    E2E_TIMEOUT_MS,
  );
});

describe('bench:accuracy streams with the installation empty room (v3 refiners)', () => {
  it('feeds the empty room first, unscored (seq EMPTY_ROOM_SEQ, no people, times before the stream), then the same stream', () => {
    const recipe = makeRecipes(3, { train: 0, val: 0, test: 1, seconds: 2 })[0]!;
    const s = { recipe, script: null, intel5300: false, radios: recipeRadios(recipe) };
    const plain = openStream(s);
    const withEmpty = openStream(s, 1);
    const prelude: number[] = [];
    let x = withEmpty.take();
    while (x !== null && x.truth.seq === EMPTY_ROOM_SEQ) {
      expect(x.truth.persons).toEqual([]);
      expect(x.truth.personCount).toBe(0);
      expect(x.frame.environmentId).toBe(`acc-${recipe.id}`);
      prelude.push(x.frame.time);
      x = withEmpty.take();
    }
    // One second of every link (a few packets lost), ending before the stream's first truth.
    const first = x!.truth.time;
    expect(prelude.length).toBeGreaterThan(0.9 * 100 * 3);
    expect(Math.max(...prelude)).toBeLessThan(first);
    expect(Math.min(...prelude)).toBeGreaterThanOrEqual(first - 1000 - 50);
    // Then the stream itself, sample for sample.
    for (let y = plain.take(); y !== null; y = plain.take()) {
      expect(x).not.toBeNull();
      expect(x!.frame.time).toBe(y.frame.time);
      expect(Array.from(x!.frame.csi.subarray(0, 8))).toEqual(Array.from(y.frame.csi.subarray(0, 8)));
      expect(x!.truth.seq).toBe(y.truth.seq);
      x = withEmpty.take();
    }
    expect(x).toBeNull();
  });

  it(
    'a v3 refiner: records the room on its whole site, calibrates its front end, scores the room model and the refiner as it came',
    async () => {
      const refiner = join(repoRoot, 'models/csipose-refiner.onnx');
      const plan: AccuracyPlan = {
        ...PLAN,
        settings: ['room'],
        room: { calibrationSeconds: 240, calibrationPeople: [0, 1], poseScenarios: 1, poseSeconds: 8, fallScenarios: 1, fallSeconds: 12 },
      };
      const model = await PoseModel.load(refiner);
      try {
        const report = await runAccuracy(plan, model, {
          modelPath: refiner,
          meanPose: { offsets: new Array(51).fill(0), pelvisZ: 1 },
          calibrationProgress: quiet,
        });
        expect(report.skipped.room).toBeUndefined();
        const cal = report.room!.calibration!;
        expect(cal.kind).toBe('front-end');
        if (cal.kind !== 'front-end') return;
        expect(cal.sessions.map((s) => s.people)).toEqual([0, 1]);
        // Every link of the 1 TX + 3 RX site: its recorded empty room and one-person windows.
        expect(cal.result.links.map((l) => l.id)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
        for (const l of cal.result.links) {
          expect(l.emptyPackets).toBeGreaterThan(0.9 * 120 * 100);
          expect(l.windows).toBeGreaterThanOrEqual(20);
        }
        expect(cal.result.calibration.links.every((l) => l.staticChannel !== null)).toBe(true);
        expect(existsSync(cal.result.out)).toBe(false);
        expect(report.room!.uncalibrated).not.toBeNull();
        const names = report.results.map((r) => r.name);
        for (const n of ['accuracy.room.floor_median_m', 'accuracy.room.count_exact', 'accuracy.room.uncalibrated.floor_median_m']) expect(names).toContain(n);
        expect(markdown(report)).toContain("Calibration of the refiner's front end");
      } finally {
        await model.release();
      }
    },
    E2E_TIMEOUT_MS,
  );
});
