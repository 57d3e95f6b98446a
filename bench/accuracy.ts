/**
 * `npm run bench:accuracy [-- --json] [-- --quick] [-- --model PATH] [-- --split val] [-- --oracle]
 * [-- --no-oracle] [-- --setting unseen|unseen1|room|all] [-- --no-site] [-- --markdown FILE]`: how well the whole pose
 * system does, in the three settings of DECISIONS "Benchmark output" (third round), each beside
 * its trivial baseline and the oracle (the ground truth through the same pipeline,
 * `bench/oracle.ts`; run on the same streams unless `--no-oracle`).
 *
 * What runs: the simulator feeds CSI frames at full speed into the service's own live pipeline
 * (`livePipeline`: sanitise, window, features with the model's history, ONNX inference through
 * onnxruntime-node in the model's worker thread, tracking, activity, alerts) with the service's
 * default live settings, each scenario's room camera as `environment.view` and its receiver as
 * the first receiver of `environment.site.radios`. Every pose frame is scored against the simulator's ground truth
 * of its window's last CSI frame (`bench/accuracy/score.ts`).
 *
 * - `unseen1` (a room never trained on, site given, one link): the TEST split of the training
 *   recipe, every scenario in a held-out room and antenna layout of its own: pose scenarios and
 *   scripted falls with hard negatives (lie-downs, sit-downs, bends; FULL: 105 falls, 152 hard negatives).
 * - `unseen` (the same, 1 TX + 3 RX): the same scenarios in a site of three receivers
 *   (`recipeRadios`), every link's frames fed; the `links` stage passes the primary link on to
 *   the one-link model. Skipped, with the reason in the report, while the simulator or pipeline
 *   cannot carry several links (`multiLinkSupport`).
 * - `room` (the same room after calibration): one held-out room with an Intel 5300 layout. An
 *   installer's 15 minutes (QUICK: 2) are recorded there as four sessions: the empty room, 1, 2 and 3 people,
 *   each an Intel 5300 capture and a labels file from the truth through the room's camera (the
 *   `capture` sink), and `calibrate` fine-tunes the model under test on them; the room model then
 *   runs later sessions in the same room with other seeds (other people, body sizes, motion): pose
 *   scenarios and scripted falls, every frame through the Intel 5300 record format. The model under
 *   test runs the same sessions uncalibrated (`accuracy.room.uncalibrated.*`), so a reader sees what
 *   calibration bought. Nothing is tuned on these sessions.
 * - Baseline beside every skeleton score: the mean pose of the model's training report
 *   (`mean_pose` in `<model>.json`) at each true person's floor position. A model whose report has
 *   no mean pose is refused.
 *
 * `--split val` runs the same on VALIDATION recipes (training rooms and layouts, seeds of their
 * own; the room from the validation family): the split on which settings may be chosen.
 * `--no-site` withholds the unseen scenarios' site from the model (the room setting always knows
 * its site). `--oracle` replaces the model with the ground truth (`bench/oracle.ts`): the scores
 * tracking, activity and alert rules reach with perfect model outputs; with it the room setting
 * scores the oracle directly (no calibration, no uncalibrated column) and the baseline's mean pose
 * is the mean of the oracle's own truth (every person of every scored window): a check of the
 * harness, not a model. The scores are on SIMULATED data; real CSI will score lower.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FEATURE_DIM } from '../src/model/features.js';
import { EMPTY_SECONDS as REFINER_EMPTY_SECONDS } from '../training/ts/refinerData.js';
import { PoseModel, type PoseRunner } from '../src/model/runtime.js';
import { N_KEYPOINTS } from '../src/pose/types.js';
import type { MeanPose } from '../training/ts/evaluate.js';
import type { ProgressStream } from '../src/calibration/progress.js';
import { makeRecipes, type ScenarioRecipe } from '../training/ts/recipe.js';
import type { LiveParams } from '../pipelines/settings.js';
import { argValue, fixed } from './lib.js';
import {
  askedSettings,
  benchRecipes,
  defaultLiveParams,
  FULL_PLAN,
  multiLinkSupport,
  planSettings,
  planStreams,
  QUICK_PLAN,
  recipeRadios,
  roomRecipes,
  SETTINGS,
  type AccuracyPlan,
  type BenchStream,
  type Setting,
  type SettingStreams,
} from './accuracy/plan.js';
import { json, markdown, resultsOf, type AccuracyReport, type RoomRun, type SettingRun } from './accuracy/report.js';
import { calibrateRefinerRoom, calibrateRoom } from './accuracy/room.js';
import { runFallScenarios, runPoseScenarios, type SettingContext } from './accuracy/score.js';
import type { LiveOracle } from './oracle.js';

export {
  askedSettings,
  benchRecipes,
  BENCH_ROLE_ROTATION,
  multiLinkSupport,
  recipeRadios,
  simulatorBends,
  defaultLiveParams,
  fallSimOptions,
  FULL_PLAN,
  planFallScenarios,
  planStreams,
  QUICK_PLAN,
  recipeSimulator,
  roomRecipes,
  type AccuracyPlan,
  type RoomPlan,
  type Setting,
} from './accuracy/plan.js';
export { json, markdown, NEXT_TARGETS, type AccuracyReport } from './accuracy/report.js';

/** How `runAccuracy` runs. */
export interface AccuracyOptions {
  /** The model file under test: named in the report, and the start of the room's calibration. */
  modelPath: string;
  /** The baseline's mean pose (`meanPoseOf` the model's training report). */
  meanPose: MeanPose;
  /** Where the mean pose came from, for the report. */
  meanPoseSource?: string;
  /** The model is the oracle: the room setting scores it directly. */
  oracle?: boolean;
  /**
   * The oracle, run on every setting's streams beside the model (in the same pass: `liveOracle`,
   * or an `oracleRunner` of the same plan); absent: no oracle figures.
   */
  oracleModel?: PoseRunner;
  /** Called with a line after each scenario and step. */
  progress?: (msg: string) => void;
  /** calibrate's progress bar (default: nowhere). */
  calibrationProgress?: ProgressStream;
  /** Live settings (default: the service's defaults); other values are for choosing settings on VALIDATION. */
  settings?: LiveParams;
}

const silent: ProgressStream = { write: () => true };

/** Runs a setting's streams once, every model of `ctx` a lane on the same frames; one run per model. */
async function runSetting(ctx: SettingContext, streams: SettingStreams): Promise<SettingRun[]> {
  const t0 = performance.now();
  const pose = await runPoseScenarios(ctx, streams.pose);
  const falls = await runFallScenarios(ctx, streams.fall);
  const seconds = (performance.now() - t0) / 1000;
  return pose.map((p, m) => ({ pose: p, falls: falls[m]!, seconds }));
}

/** An oracle that indexes the windows of the streams as they are fed (`liveOracle`). */
const observing = (m: PoseRunner | undefined): m is LiveOracle => typeof (m as Partial<LiveOracle> | undefined)?.observe === 'function';

/**
 * Runs the accuracy benchmark on a loaded model (the caller loads and releases it).
 * @param plan how much to simulate, and which settings
 * @param model the model under test (a v2 `PoseModel`, as the service uses), or the oracle
 * @param opts its file, the baseline's mean pose, progress, settings
 * @returns the report with its DECISIONS results
 * @throws Error when the model is not a contract v2 model
 */
export async function runAccuracy(plan: AccuracyPlan, model: PoseRunner, opts: AccuracyOptions): Promise<AccuracyReport> {
  if (model.contract !== 2 && model.contract !== 3)
    throw new Error(
      `${opts.modelPath}: a contract v1 model (${model.metadata.csipose_contract || 'no contract metadata'}); the benchmark scores v2 and v3 models (skeletons in metres)`,
    );
  // A v3 refiner's front end learns the empty room first: every stream gets the installation's empty room, unscored.
  const emptySeconds = model.contract === 3 ? REFINER_EMPTY_SECONDS : 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const settings = opts.settings ?? defaultLiveParams();
  const progress = opts.progress ?? (() => undefined);
  const oracle = opts.oracle === true;
  const planned = planStreams(plan);
  // A v3 refiner reads its room on the room's whole site (1 TX + 3 RX), as it reads unseen rooms.
  const onSite = (list: BenchStream[]) => list.map((x) => ({ ...x, radios: recipeRadios(x.recipe) }));
  const streams = model.contract === 3 ? { ...planned, room: { pose: onSite(planned.room.pose), fall: onSite(planned.room.fall) } } : planned;
  const run = planSettings(plan);
  // The oracle runs beside the model (not when it is the model).
  const extra = opts.oracleModel && !oracle ? opts.oracleModel : undefined;
  const ctx = (models: PoseRunner[], siteKnown: boolean, label: string): SettingContext => ({
    models,
    settings,
    siteKnown,
    mean: opts.meanPose,
    progress,
    label,
    emptySeconds,
    ...(observing(extra) ? { observe: (s, open) => extra.observe(s, open) } : {}),
  });
  const lanes = (m: PoseRunner) => (extra ? [m, extra] : [m]);
  const siteKnown = plan.site !== false;
  const oracleRuns: Partial<Record<Setting, SettingRun>> | null = extra ? {} : null;
  const unseenRuns = run.includes('unseen') ? await runSetting(ctx(lanes(model), siteKnown, 'unseen'), streams.unseen) : null;
  const unseen1Runs = run.includes('unseen1') ? await runSetting(ctx(lanes(model), siteKnown, 'unseen1'), streams.unseen1) : null;
  if (oracleRuns && unseenRuns) oracleRuns.unseen = unseenRuns[1]!;
  if (oracleRuns && unseen1Runs) oracleRuns.unseen1 = unseen1Runs[1]!;
  const unseen = unseenRuns?.[0] ?? null;
  const unseen1 = unseen1Runs?.[0] ?? null;
  const skipped: Partial<Record<Setting, string>> = {};
  if (askedSettings(plan).includes('unseen') && !run.includes('unseen')) skipped.unseen = `three receivers need ${multiLinkSupport().missing.join(' and ')}`;
  let room: RoomRun | null = null;
  if (run.includes('room')) {
    const r0 = performance.now();
    const rooms = roomRecipes(plan);
    if (oracle) {
      const [s] = await runSetting(ctx([model], true, 'room (oracle)'), streams.room);
      room = { ...s!, room: rooms.room, calibration: null, uncalibrated: null };
    } else {
      const dir = await mkdtemp(join(tmpdir(), 'csipose-accuracy-'));
      try {
        let calibration: Awaited<ReturnType<typeof calibrateRoom>> | Awaited<ReturnType<typeof calibrateRefinerRoom>> | null = null;
        try {
          calibration =
            model.contract === 3
              ? await calibrateRefinerRoom(opts.modelPath, rooms, dir, opts.calibrationProgress ?? silent, progress)
              : await calibrateRoom(opts.modelPath, rooms, dir, plan.room.calibrationEpochs, opts.calibrationProgress ?? silent, progress);
        } catch (e) {
          // Too little of one person in the camera's view to fit the chain phases (short plans): say so, score nothing.
          if (
            model.contract !== 3 ||
            !/no window in which the camera saw exactly one person|windows in which the camera saw exactly one person/.test((e as Error).message)
          )
            throw e;
          skipped.room = `the refiner's calibration could not run: ${(e as Error).message}`;
          progress(`room: skipped (${skipped.room})`);
        }
        if (calibration) {
          progress(
            calibration.kind === 'front-end'
              ? `room: front end calibrated in ${calibration.result.seconds.toFixed(1)} s (${calibration.result.links.map((l) => `${l.id} ${l.windows}`).join(', ')} windows)`
              : `room: calibrated in ${calibration.result.seconds.toFixed(1)} s (${calibration.result.rows.train} windows)`,
          );
          const roomModel = await PoseModel.load(calibration.result.out, model.contract === 3 ? {} : { featureDim: FEATURE_DIM });
          // The room model, the model as it came and the oracle on one pass of the later sessions.
          let runs: SettingRun[];
          try {
            runs = await runSetting(ctx([roomModel, ...lanes(model)], true, 'room (calibrated / uncalibrated' + (extra ? ' / oracle)' : ')')), streams.room);
          } finally {
            await roomModel.release();
          }
          const [calibrated, uncalibrated, oracleRoom] = runs;
          if (oracleRuns && oracleRoom) oracleRuns.room = oracleRoom;
          room = { ...calibrated!, seconds: (performance.now() - r0) / 1000, room: rooms.room, calibration, uncalibrated: uncalibrated! };
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }
  const meta = model.metadata;
  const report: AccuracyReport = {
    plan,
    modelPath: opts.modelPath,
    modelVersion: meta.model_version,
    trainedOn: meta.trained_on,
    contractTestModel: meta.trained_on === 'unit-test' || meta.model_version === 'test-1',
    oracle,
    settings,
    defaultSettings: opts.settings === undefined,
    meanPose: opts.meanPose,
    meanPoseSource: opts.meanPoseSource ?? "the mean pose of the model's training report",
    unseen,
    unseen1,
    room,
    oracleRuns,
    skipped,
    seconds: (performance.now() - t0) / 1000,
    cpuSeconds: ((c) => (c.user + c.system) / 1e6)(process.cpuUsage(cpu0)),
    results: [],
  };
  report.results = resultsOf(report);
  return report;
}

/**
 * The baseline's mean pose from a training report (`mean_pose`: 51 offsets from the pelvis and the
 * pelvis height, metres), or null when the report has none.
 * @param report the parsed `<model>.json`
 * @returns the mean pose, or null
 */
export function meanPoseOf(report: unknown): MeanPose | null {
  const m = (report as { mean_pose?: { offsets?: unknown; pelvis_z?: unknown } } | null)?.mean_pose;
  const offsets = m?.offsets;
  const z = m?.pelvis_z;
  if (!Array.isArray(offsets) || offsets.length !== N_KEYPOINTS * 3 || offsets.some((v) => typeof v !== 'number' || !Number.isFinite(v))) return null;
  if (typeof z !== 'number' || !Number.isFinite(z)) return null;
  return { offsets: offsets as number[], pelvisZ: z };
}

/** Every scenario recipe a plan simulates (for the seed-overlap check). */
export function planRecipes(plan: AccuracyPlan): ScenarioRecipe[] {
  const run = planSettings(plan);
  const out: ScenarioRecipe[] = [];
  if (run.includes('unseen') || run.includes('unseen1')) {
    const u = benchRecipes(plan);
    out.push(...u.pose, ...u.fall);
  }
  if (run.includes('room')) {
    const r = roomRecipes(plan);
    out.push(...r.calibration, ...r.pose, ...r.fall);
  }
  return out;
}

/** What the training script's report next to the model says, and whether it overlaps the benchmark. */
export interface SidecarCheck {
  /** Training and validation scenarios rebuilt from the report's recipe (0 when it could not be). */
  trainScenarios: number;
  /** Benchmark scenarios whose simulator seed a training or validation scenario also has. */
  sharedSeeds: number;
  /** Its own held-out scores (per window, model output before tracking), when present. */
  own: { pck3dOne: number; pck3dThree: number; baselinePck3dOne: number; countExact: number; occupied: number; floorMedianM: number } | null;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : NaN);

/**
 * Reads the training report (`csipose-pose.json`), rebuilds its TRAIN and VALIDATION recipes from
 * the master seed and counts it records (`recipe.master_seed`, `scenario_counts`), and counts
 * benchmark scenarios that share a seed with them (there should be none).
 * @param report the parsed JSON
 * @param scenarios the benchmark's scenarios (`planRecipes`)
 * @returns the check
 */
export function checkSidecar(report: unknown, scenarios: readonly ScenarioRecipe[]): SidecarCheck {
  type Group = { countExact?: unknown; occupied?: unknown; pose?: Record<string, unknown>; baseline?: Record<string, unknown> };
  const r = (report ?? {}) as {
    recipe?: { master_seed?: unknown; scenario_seconds?: unknown };
    scenario_counts?: { train?: unknown; val?: unknown };
    test_scores?: { all?: Group; one?: Group; three?: Group };
  };
  const seed = r.recipe?.master_seed;
  const train = r.scenario_counts?.train;
  const val = r.scenario_counts?.val;
  let trainScenarios = 0;
  let sharedSeeds = 0;
  if (typeof seed === 'number' && typeof train === 'number' && typeof val === 'number') {
    const seen = new Set(makeRecipes(seed, { train, val, test: 0, seconds: num(r.recipe?.scenario_seconds) || 1 }).map((x) => x.seed));
    trainScenarios = seen.size;
    sharedSeeds = scenarios.filter((x) => seen.has(x.seed)).length;
  }
  const t = r.test_scores;
  const own = t?.all
    ? {
        pck3dOne: num(t.one?.pose?.['pck3d']),
        pck3dThree: num(t.three?.pose?.['pck3d']),
        baselinePck3dOne: num(t.one?.baseline?.['pck3d']),
        countExact: num(t.all.countExact),
        occupied: num(t.all.occupied),
        floorMedianM: num(t.all.pose?.['floorMedianM']),
      }
    : null;
  return { trainScenarios, sharedSeeds, own };
}

function parseSetting(v: string | undefined): readonly Setting[] {
  if (v === undefined || v === 'all') return SETTINGS;
  const want = v.split(',');
  if (want.every((s): s is Setting => (SETTINGS as readonly string[]).includes(s))) return want;
  throw new Error(`--setting must be unseen, unseen1, room (comma-separated) or all, got ${v}`);
}

async function main(): Promise<void> {
  const asJson = process.argv.includes('--json');
  const splitArg = argValue('--split') ?? 'test';
  if (splitArg !== 'test' && splitArg !== 'val') throw new Error(`--split must be test or val, got ${splitArg}`);
  const base = process.argv.includes('--quick') ? QUICK_PLAN : FULL_PLAN;
  const plan: AccuracyPlan = {
    ...base,
    room: { ...base.room },
    split: splitArg,
    site: !process.argv.includes('--no-site'),
    settings: parseSetting(argValue('--setting')),
  };
  const useOracle = process.argv.includes('--oracle');
  const modelPath = resolvePath(argValue('--model') ?? 'models/csipose-pose.onnx');
  const progress = (msg: string) => process.stderr.write(`${msg}\n`);
  let report: AccuracyReport;
  let check: SidecarCheck | null = null;
  const sidecar = modelPath.replace(/\.onnx$/, '.json');
  if (useOracle) {
    const { oracleRunner } = await import('./oracle.js');
    progress('oracle: simulating every scored scenario once to index its windows');
    const oracle = oracleRunner(plan);
    report = await runAccuracy(plan, oracle, {
      modelPath: 'oracle (ground truth as the model output)',
      meanPose: oracle.meanPose,
      meanPoseSource: "the mean pose of the oracle's own truth (every person of every scored window; the oracle has no training report)",
      oracle: true,
      progress,
    });
  } else {
    if (!existsSync(modelPath)) throw new Error(`no model at ${modelPath} (train one with npm run train:v2, or pass --model PATH)`);
    if (!existsSync(sidecar))
      throw new Error(`no training report at ${sidecar}: the baseline needs its mean_pose (written by npm run train:v2 next to the model)`);
    const sideReport = JSON.parse(readFileSync(sidecar, 'utf8')) as unknown;
    const mean = meanPoseOf(sideReport);
    if (!mean)
      throw new Error(
        `${sidecar} has no mean_pose (51 offsets and pelvis_z): the trivial baseline's pose comes from the training report of a v2 model (npm run train:v2 writes it); retrain, or run --oracle`,
      );
    check = checkSidecar(sideReport, planRecipes(plan));
    if (check.sharedSeeds > 0) throw new Error(`${check.sharedSeeds} benchmark scenarios share a simulator seed with the model's training scenarios`);
    let oracleModel: PoseRunner | undefined;
    if (!process.argv.includes('--no-oracle')) {
      // It indexes each stream's windows as the benchmark feeds them: no pass of its own.
      const { liveOracle } = await import('./oracle.js');
      oracleModel = liveOracle();
    }
    const model = await PoseModel.load(modelPath, { featureDim: FEATURE_DIM });
    try {
      report = await runAccuracy(plan, model, {
        modelPath,
        meanPose: mean,
        progress,
        calibrationProgress: process.stderr,
        ...(oracleModel ? { oracleModel } : {}),
      });
    } finally {
      await model.release();
    }
  }
  // --markdown FILE: the tables to a file besides the JSON on stdout (one run, both forms).
  const mdFile = argValue('--markdown');
  if (mdFile) writeFileSync(mdFile, markdown(report));
  if (asJson) {
    process.stdout.write(json(report));
    return;
  }
  process.stdout.write(markdown(report));
  if (check) {
    const lines = ['', `## The training report (${sidecar})`, ''];
    lines.push(
      check.trainScenarios > 0
        ? `- Rebuilt its ${check.trainScenarios} training and validation scenarios from the recorded master seed: ${check.sharedSeeds} of the benchmark's scenarios share a simulator seed with them.`
        : '- Its recipe could not be rebuilt (no master seed or counts recorded): the seed overlap was not checked.',
    );
    if (check.own) {
      const o = check.own;
      lines.push(
        `- Its own held-out scores (TEST windows, model output before tracking, no pipeline): PCK3d one ${fixed(o.pck3dOne)} (baseline ${fixed(o.baselinePck3dOne)}), ` +
          `three ${fixed(o.pck3dThree)}; count exact ${fixed(o.countExact)}, occupied ${fixed(o.occupied)}, floor median ${fixed(o.floorMedianM, 2)} m.`,
      );
    }
    process.stdout.write(lines.join('\n') + '\n');
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolvePath(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`bench:accuracy failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  });
}
