/**
 * study:limits on the quick plan's seeds with tiny pools: the recipes are one-person VALIDATION
 * ones, the data helper lines windows up with the right frames, and the whole harness produces
 * finite numbers and every table row. Accuracy values are not asserted (a contract test model
 * stands in for the shipped one).
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  ENERGY_LAG,
  HISTORY_BLOCK_FRAMES,
  HISTORY_BLOCKS,
  HISTORY_DIM,
  json,
  markdown,
  measureModelErrors,
  measureSite,
  poolRecipes,
  QUICK_PLAN,
  runLimits,
  SECTIONS,
  simulatePool,
  simulateScenario,
  SITE_VARIANTS,
  SMOOTHING_ALPHAS,
  type LimitsPlan,
  type PoolName,
} from '../../src/training/studies/limits.js';
import { FEATURE_DIM, WINDOW_FRAMES } from '../../src/model/features.js';
import { PoseModel } from '../../src/model/runtime.js';
import { isHeldOut } from '../../src/training/recipe.js';
import { OUTPUT_DIM } from '../../src/training/targets.js';
import { ACTIVITIES } from '../../src/sim/scenario.js';
import { contractModel, tempDir, tinyMeta, tinyWeights } from '../helpers/poseModels.js';
import { buildMlpPoseModel } from '../../src/model/onnxWriter.js';
import { SITE_DIM } from '../../src/model/contract.js';

/** The quick plan's seeds, a few short scenarios per pool, one epoch per fit. */
const TINY: LimitsPlan = {
  pools: {
    pose: { ...QUICK_PLAN.pools.pose, scenarios: 2, seconds: 4 },
    fit: { ...QUICK_PLAN.pools.fit, scenarios: 3, seconds: 3 },
    activityFit: { ...QUICK_PLAN.pools.activityFit, scenarios: 3, seconds: 6 },
    activityScore: { ...QUICK_PLAN.pools.activityScore, scenarios: 2, seconds: 6 },
  },
  geometryFit: { ...QUICK_PLAN.geometryFit, hidden: [32], epochs: 1 },
  activityFit: { ...QUICK_PLAN.activityFit, hidden: [32], epochs: 1 },
};
const NAMES: readonly PoolName[] = ['pose', 'fit', 'activityFit', 'activityScore'];

describe('study:limits', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('draws one-person VALIDATION recipes, each pool from its own seed stream', () => {
    const seeds = new Set<number>();
    for (const name of NAMES) {
      const spec = TINY.pools[name];
      const rs = poolRecipes(spec);
      expect(rs).toHaveLength(spec.scenarios);
      for (const r of rs) {
        expect(r.split).toBe('val');
        expect(isHeldOut(r)).toBe(false);
        expect(r.people).toBe(1);
        expect(r.seconds).toBe(spec.seconds);
        if (spec.fallProbability !== undefined) expect(r.fallProbability).toBe(spec.fallProbability);
        seeds.add(r.seed);
      }
      expect(poolRecipes(spec)).toEqual(rs);
    }
    const total = NAMES.reduce((a, n) => a + TINY.pools[n].scenarios, 0);
    expect(seeds.size).toBe(total);
  });

  it('keeps each window aligned with its last frame and builds the motion history', () => {
    const r = poolRecipes(TINY.pools.activityFit)[0]!;
    const hop = 16;
    const d = simulateScenario(r, hop, true);
    const frames = Math.round(r.seconds * 100);
    expect(d.n).toBe(Math.floor((frames - WINDOW_FRAMES) / hop) + 1);
    expect(d.features).toHaveLength(d.n * FEATURE_DIM);
    expect(d.targets).toHaveLength(d.n * OUTPUT_DIM);
    expect(d.features.every(Number.isFinite)).toBe(true);
    expect(d.history.every(Number.isFinite)).toBe(true);
    expect(d.torso.every(Number.isFinite)).toBe(true);
    // The person's activity at each window is that of the window's last received frame.
    for (let i = 0; i < d.n; i++) expect(d.activity[i]).toBe(d.frameActivity[WINDOW_FRAMES - 1 + i * hop]);
    expect([...d.activity].every((a) => a >= 0 && a < ACTIVITIES.length)).toBe(true);
    // Energies start ENERGY_LAG frames in and are never negative.
    expect(d.energy).toHaveLength(frames);
    expect(d.energy.subarray(0, ENERGY_LAG).every(Number.isNaN)).toBe(true);
    expect(d.energy.subarray(ENERGY_LAG).every((e) => e >= 0)).toBe(true);
    // The first window ends at frame 127: blocks starting before frame ENERGY_LAG are not there yet.
    const firstStart = (k: number) => WINDOW_FRAMES - (HISTORY_BLOCKS - k) * HISTORY_BLOCK_FRAMES;
    let available = 0;
    for (let k = 0; k < HISTORY_BLOCKS; k++) {
      if (firstStart(k) >= ENERGY_LAG) available++;
      else expect(d.history[k]).toBe(0);
    }
    expect(d.history[HISTORY_BLOCKS]).toBeCloseTo(available / HISTORY_BLOCKS, 6);
    // The last block of the first window is ln of the mean energy of frames 112..127.
    let sum = 0;
    for (let t = WINDOW_FRAMES - HISTORY_BLOCK_FRAMES; t < WINDOW_FRAMES; t++) sum += d.energy[t]!;
    expect(d.history[HISTORY_BLOCKS - 1]).toBeCloseTo(Math.log(sum / HISTORY_BLOCK_FRAMES + 1e-5), 4);
    expect(d.history.length).toBe(d.n * HISTORY_DIM);
  });

  it('produces finite numbers and every table row, identically twice', async () => {
    const path = tmp.file('contract.onnx', contractModel(FEATURE_DIM, 4));
    const docs: string[] = [];
    for (let run = 0; run < 2; run++) {
      const model = await PoseModel.load(path, { thread: 'inline', featureDim: FEATURE_DIM });
      try {
        const report = await runLimits(TINY, model, path, { workers: 0 });
        expect(report.pools.map((p) => [p.name, p.scenarios])).toEqual(NAMES.map((n) => [n, TINY.pools[n].scenarios]));
        expect(report.bearing.scenarios).toBeGreaterThan(0);
        for (const row of report.bearing.rows) {
          expect(row.windows).toBeGreaterThan(0);
          expect(Number.isFinite(row.r)).toBe(true);
        }
        expect(report.model.errors.map((e) => e.quantity)).toEqual(['box centre u', 'box centre v', 'box width', 'box height', 'floor x', 'floor y', 'floor distance']);
        for (const e of report.model.errors) {
          expect(e.model.n).toBeGreaterThan(0);
          for (const v of [e.model.median, e.model.mean, e.constant.median, e.constant.mean]) expect(Number.isFinite(v)).toBe(true);
        }
        expect(report.model.smoothing).toHaveLength(SMOOTHING_ALPHAS.length + 1);
        for (const s of report.model.smoothing) {
          expect(s.keypoints).toBeGreaterThan(0);
          expect(Number.isFinite(s.mpjpePx)).toBe(true);
          expect(s.pck).toBeGreaterThanOrEqual(0);
          expect(s.pck).toBeLessThanOrEqual(1);
        }
        expect(report.geometry.rows.map((g) => g.inputs)).toEqual(['constant', 'geometry', 'features', 'features + geometry']);
        for (const g of report.geometry.rows) expect(Number.isFinite(g.error.mean) && Number.isFinite(g.meanAbsX) && Number.isFinite(g.meanAbsY)).toBe(true);
        expect(report.activity.variants.map((v) => v.inputs)).toEqual(['features', 'features + 5 s motion history']);
        for (const v of report.activity.variants) {
          expect(v.accuracy).toBeGreaterThanOrEqual(0);
          expect(v.accuracy).toBeLessThanOrEqual(1);
          expect(v.confusion.flat().reduce((a, b) => a + b, 0)).toBe(report.activity.scoreWindows);
        }
        expect(report.activity.energy.map((e) => e.activity)).toEqual([...ACTIVITIES]);
        expect(Number.isFinite(report.activity.energy[ACTIVITIES.indexOf('standing')]!.medianDb)).toBe(true);
        // The contract model has no site input: measurement 6 says so instead of a table.
        expect(report.site).toEqual({ siteInput: false, rows: [] });
        // Measurement 7: three places x 2 sessions per scenario; every correction scores the same windows.
        expect(report.calibration.scenarios).toBe(TINY.pools.pose.scenarios);
        expect(report.calibration.calibrationWindows).toBeGreaterThan(0);
        expect(report.calibration.rows).toHaveLength(4);
        for (const row of report.calibration.rows) {
          expect(row.floor.n).toBe(report.calibration.windows);
          expect(Number.isFinite(row.floor.median)).toBe(true);
        }
        expect(report.calibration.rows[0]!.floor).not.toEqual(report.calibration.rows[3]!.floor);

        const md = markdown(report);
        expect(md).toContain('simulated VALIDATION scenarios');
        expect(md.match(/\*\*Shows:\*\* /g)).toHaveLength(Object.keys(SECTIONS).length);
        expect(md).toContain('CONTRACT TEST MODEL');
        expect(md).toContain('The model has no `site` input');
        for (const title of Object.values(SECTIONS)) expect(md).toContain(`## ${title}`);
        for (const row of ['| slow (offset 428) |', '| fast (offset 432) |', '| static (offset 436) |', '| box centre u |', '| floor distance |', '| raw (no smoothing) |', '| alpha 0.95 |', '| features + geometry |', '| features + 5 s motion history |', '| falling |', "| offset from the scenario's own first quarter, true positions known (oracle) |"]) {
          expect(md).toContain(row);
        }
        for (const name of NAMES) expect(md).toMatch(new RegExp(`\\| ${name} \\| [^|]+ \\| ${TINY.pools[name].seed} \\| ${TINY.pools[name].scenarios} \\|`));
        docs.push(json({ ...report, seconds: 0 }));
      } finally {
        await model.release();
      }
    }
    expect(docs[1]).toBe(docs[0]);
  });

  it('measures a site-input model once per site variant; the own-site row is measurement 2 and 3', async () => {
    const weights = { ...tinyWeights(FEATURE_DIM + SITE_DIM, [16], 4), siteDim: SITE_DIM };
    const model = await PoseModel.load(buildMlpPoseModel(weights, { ...tinyMeta(FEATURE_DIM, 4), site_dim: SITE_DIM }), { thread: 'inline' });
    try {
      const pose = await simulatePool('pose', TINY.pools.pose, 0);
      const fit = await simulatePool('fit', TINY.pools.fit, 0);
      const site = await measureSite(model, pose, fit);
      expect(site.siteInput).toBe(true);
      expect(site.rows.map((r) => r.label)).toEqual(SITE_VARIANTS.map((v) => v.label));
      const own = await measureModelErrors(model, pose, fit);
      const floor = own.errors.find((e) => e.quantity === 'floor distance')!.model;
      expect(site.rows[0]!.floor).toEqual(floor);
      expect(site.rows[0]!.mpjpePx).toBe(own.smoothing[0]!.mpjpePx);
      // The site reaches the model: withholding it or measuring it badly changes the answers.
      for (const row of site.rows.slice(1)) expect(row.floor.mean).not.toBe(floor.mean);
      for (const row of site.rows) expect(Number.isFinite(row.floor.median) && Number.isFinite(row.boxU.median) && Number.isFinite(row.mpjpePx)).toBe(true);
    } finally {
      await model.release();
    }
  });
});
