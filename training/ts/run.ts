/**
 * One training run of the default pose model (contract v2), end to end: simulate the scenarios of
 * the recipe (worker threads), train the network, export it to ONNX through `buildPoseModelV2`,
 * load the exported file with `PoseModel` (onnxruntime-node) and score it on the TEST scenarios
 * (the model we ship is the model we score), and write `csipose-pose.onnx` and `csipose-pose.json`
 * (recipe, settings, per-epoch losses, held-out scores with their baseline, the mean pose).
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { CONTRACT_V2, FALL_WINDOW_S, MODEL_ACTIVITIES, SITE_COLUMNS, SITE_DIM, type ModelMetadata } from '../../src/model/contract.js';
import { deriveSeed, Rng } from '../../src/sim/rng.js';
import { FEATURE_DIM, HOP, WINDOW_FRAMES } from '../../src/model/features.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES, HISTORY_WIDTH } from '../../src/model/history.js';
import { buildPoseModelV2, type PoseWeightsV2 } from '../../src/calibration/onnxWriter.js';
import { PoseModel, type ModelOutputsV2 } from '../../src/model/runtime.js';
import { concatScenarios, generateAll, INPUT_DIM, rowSource, type Dataset, type ScenarioData } from './dataset.js';
import { meanPose, scoreOutputs, type MeanPose, type Scores } from './evaluate.js';
import { LOSS_WEIGHTS } from '../../src/calibration/loss.js';
import type { Mlp } from '../../src/calibration/mlp.js';
import { bar, formatSeconds, Progress, type ProgressStream } from '../../src/calibration/progress.js';
import { HELD_OUT, makeRecipes, PEOPLE_WEIGHTS, recipeSite, TEST_PEOPLE_WEIGHTS, type RecipeCounts, type ScenarioRecipe } from './recipe.js';
import { MAX_PERSONS } from '../../src/calibration/targets.js';
import { fitNormalizer, predict, toPoseWeights, train, type EpochRecord, type Normalizer, type TrainSettings } from '../../src/calibration/trainer.js';

/** The version of the model family; the weights hash is appended. */
export const MODEL_VERSION = '2.0.0';

/** Everything a run is made of. */
export interface RunConfig {
  /** Name of the configuration, for the report. */
  name: 'default' | 'full' | 'quick' | 'custom';
  counts: RecipeCounts;
  /** Window hop of the generated windows (divides HISTORY_STRIDE_FRAMES; the service uses HOP). */
  hop: number;
  /** Keep every n-th TRAIN window as a row (windows closer than this are nearly the same row). */
  trainRowEvery: number;
  /** Mirror augmentation of TRAIN (see dataset.ts). */
  mirror: boolean;
  /**
   * The share of TRAIN scenarios whose site is withheld (all-zero row), so the model also works
   * where the installer entered nothing.
   */
  unknownSiteShare: number;
  train: Omit<TrainSettings, 'seed'>;
}

/** `npm run train:v2`: the reproducible recipe, at most 15 minutes on two cores. */
export const DEFAULT: RunConfig = {
  name: 'default',
  counts: { train: 1400, val: 100, test: 120, seconds: 16 },
  hop: 16,
  trainRowEvery: 2,
  mirror: true,
  unknownSiteShare: 0.25,
  train: { hidden: [256, 256], epochs: 6, batch: 128, lr: 1e-3, lrMin: 2e-5, warmupSteps: 300, weightDecay: 1e-2, dropout: 0.1 },
};

/** `npm run train:v2 -- --full`: the same recipe with more scenarios, a wider network, longer (41 minutes on 2 cores). */
export const FULL: RunConfig = {
  name: 'full',
  counts: { train: 2400, val: 120, test: 120, seconds: 16 },
  hop: 16,
  trainRowEvery: 2,
  mirror: true,
  unknownSiteShare: 0.25,
  train: { hidden: [384, 256], epochs: 10, batch: 128, lr: 8e-4, lrMin: 1e-5, warmupSteps: 500, weightDecay: 1e-2, dropout: 0.1 },
};

/** `--quick`: a tiny dataset and network, under a minute (for tests and smoke runs). */
export const QUICK: RunConfig = {
  name: 'quick',
  counts: { train: 8, val: 2, test: 3, seconds: 8 },
  hop: 16,
  trainRowEvery: 1,
  mirror: true,
  unknownSiteShare: 0.25,
  train: { hidden: [32], epochs: 3, batch: 32, lr: 2e-3, lrMin: 1e-4, warmupSteps: 5, weightDecay: 1e-4, dropout: 0 },
};

export interface RunOptions {
  quick?: boolean;
  full?: boolean;
  seed?: number;
  /** Output directory for the .onnx and .json files. */
  out?: string;
  /** Worker threads for the simulation; default one per core, 0 = this thread. */
  workers?: number;
  /** Progress stream; default process.stderr. */
  progress?: ProgressStream;
  /** Replace the configuration (tests). */
  config?: RunConfig;
}

/** What a run leaves behind (also for tests). */
export interface RunResult {
  onnxPath: string;
  jsonPath: string;
  metadata: ModelMetadata;
  net: Mlp;
  norm: Normalizer;
  weights: PoseWeightsV2;
  train: Dataset;
  test: Dataset;
  history: EpochRecord[];
  scores: Scores;
  mean: MeanPose;
  exportCheck: number;
  report: Record<string, unknown>;
}

/** Short hash of the exported weights: 10 hex digits of SHA-256 over every tensor in order. */
export function weightsHash(w: PoseWeightsV2): string {
  const h = createHash('sha256');
  const add = (a: Float32Array) => h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  for (const l of w.layers) {
    add(l.w);
    add(l.b);
  }
  for (const k of ['count', 'presence', 'root', 'offsets', 'activity', 'fall'] as const) {
    add(w.heads[k].w);
    add(w.heads[k].b);
  }
  return h.digest('hex').slice(0, 10);
}

function round(x: number, digits = 4): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x;
}

export function roundScores(s: unknown): unknown {
  if (typeof s === 'number') return round(s);
  if (Array.isArray(s)) return s.map(roundScores);
  if (s && typeof s === 'object') return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, roundScores(v)]));
  return s;
}

/**
 * Runs a v2 model on a dataset in batches and gathers the outputs of every row. A batch never spans
 * two scenarios, so each runs with its own site (`recipeSite`, or unknown when `withSite` is false).
 */
export async function runModel(
  model: PoseModel,
  d: Dataset,
  recipes: ReadonlyMap<number, ScenarioRecipe>,
  withSite = true,
  batch = 1024,
): Promise<ModelOutputsV2> {
  const P = model.maxPersons;
  const A = MODEL_ACTIVITIES.length;
  const all: ModelOutputsV2 = {
    contract: 2,
    n: d.n,
    maxPersons: P,
    count: new Float32Array(d.n * (P + 1)),
    presence: new Float32Array(d.n * P),
    keypoints3d: new Float32Array(d.n * P * 51),
    activity: new Float32Array(d.n * P * A),
    fall: new Float32Array(d.n),
  };
  for (let s = 0; s < d.n;) {
    const id = d.scenario[s]!;
    const mirrored = d.mirrored[s]!;
    let b = 1;
    while (b < batch && s + b < d.n && d.scenario[s + b] === id && d.mirrored[s + b] === mirrored) b++;
    const r = recipes.get(id)!;
    const out = await model.run(d.features.subarray(s * FEATURE_DIM, (s + b) * FEATURE_DIM), b, {
      site: withSite ? recipeSite(r, mirrored === 1) : null,
      history: d.history.slice(s * HISTORY_WIDTH, (s + b) * HISTORY_WIDTH),
    });
    if (out.contract !== 2) throw new Error('runModel: not a v2 model');
    all.count.set(out.count, s * (P + 1));
    all.presence.set(out.presence, s * P);
    all.keypoints3d.set(out.keypoints3d, s * P * 51);
    all.activity.set(out.activity, s * P * A);
    all.fall.set(out.fall, s);
    s += b;
  }
  return all;
}

/** Each row's receiver position on the floor plan (mirrored with its scene). */
export function receiversOf(d: Dataset, recipes: ReadonlyMap<number, ScenarioRecipe>): Array<{ x: number; y: number }> {
  const out: Array<{ x: number; y: number }> = [];
  for (let i = 0; i < d.n; i++) {
    const r = recipes.get(d.scenario[i]!)!;
    const s = recipeSite(r, d.mirrored[i] === 1);
    out.push({ x: s.receiver.x, y: s.receiver.y });
  }
  return out;
}

/** Rows of a dataset whose scenario satisfies `pick`. */
function rowsWhere(d: Dataset, recipes: Map<number, ScenarioRecipe>, pick: (r: ScenarioRecipe) => boolean): Int32Array {
  const rows: number[] = [];
  for (let i = 0; i < d.n; i++) if (pick(recipes.get(d.scenario[i]!)!)) rows.push(i);
  return Int32Array.from(rows);
}

/**
 * Runs the whole training and writes the artefacts.
 * @param opts quick, default or full, seed, output directory, workers, progress stream
 * @returns paths, the trained network and the scores
 */
export async function runTraining(opts: RunOptions = {}): Promise<RunResult> {
  const cfg = opts.config ?? (opts.quick ? QUICK : opts.full ? FULL : DEFAULT);
  const seed = opts.seed ?? 1;
  const outDir = opts.out ?? 'models';
  const workers = opts.workers ?? Math.max(1, cpus().length);
  const progress = new Progress(opts.progress ?? process.stderr);
  const t0 = performance.now();

  // 1. Data.
  const recipes = makeRecipes(seed, cfg.counts);
  const g0 = performance.now();
  const parts = await generateAll(recipes, {
    hop: cfg.hop,
    trainRowEvery: cfg.trainRowEvery,
    workers,
    mirrorTrain: cfg.mirror,
    onProgress: (done, total) => {
      const el = (performance.now() - g0) / 1000;
      progress.update(
        `simulating ${bar(done / total)} ${done}/${total} scenarios, ${formatSeconds(el)} elapsed, ETA ${formatSeconds((el / done) * (total - done))}`,
      );
    },
  });
  const genSeconds = (performance.now() - g0) / 1000;
  const bySplit = (split: string): ScenarioData[] => parts.filter((_, i) => recipes[i]!.split === split);
  const trainSet = concatScenarios(bySplit('train'));
  const valSet = concatScenarios(bySplit('val'));
  const testSet = concatScenarios(bySplit('test'));
  progress.done(
    `simulated ${recipes.length} scenarios in ${formatSeconds(genSeconds)}: ${trainSet.n} train rows${cfg.mirror ? ' (half of them mirrored)' : ''}, ${valSet.n} validation, ${testSet.n} test windows`,
  );

  // 2. Training: each row is the window's features, its history and its scene's site; a seeded
  // share of TRAIN scenes is shown as an unknown site.
  const recipeById = new Map(recipes.map((r) => [r.id, r]));
  const unknownSite = new Set<number>();
  const rng = new Rng(deriveSeed(seed, 31));
  for (const r of recipes) if (r.split === 'train' && rng.chance(cfg.unknownSiteShare)) unknownSite.add(r.id);
  const settings: TrainSettings = { ...cfg.train, seed };
  const trainRows = rowSource(trainSet, recipeById, unknownSite);
  const norm = fitNormalizer(trainRows);
  const result = train(trainRows, rowSource(valSet, recipeById), norm, settings, {
    onProgress: (p) => {
      const frac = ((p.epoch - 1) * p.batches + p.batch) / (p.epochs * p.batches);
      progress.update(
        `training epoch ${p.epoch}/${p.epochs} batch ${p.batch}/${p.batches} ${bar(frac)} loss ${p.loss.toFixed(4)} ${Math.round(p.samplesPerSecond)} samples/s ETA ${formatSeconds(p.etaSeconds)}`,
      );
    },
  });
  const last = result.history[result.history.length - 1];
  progress.done(
    `trained ${settings.epochs} epochs in ${formatSeconds(result.seconds)} (${Math.round(result.samplesPerSecond)} samples/s); best validation loss ${result.history[result.bestEpoch - 1]?.valLoss.toFixed(4)} at epoch ${result.bestEpoch}, last ${last?.valLoss.toFixed(4)}`,
  );

  // 3. Export.
  const weights = toPoseWeights(result.net, norm);
  const hash = weightsHash(weights);
  const trainedOn = `csipose-sim seed=${seed} (${cfg.name}): ${cfg.counts.train} train scenarios x ${cfg.counts.seconds} s${cfg.mirror ? ' (+mirrored)' : ''}, rooms 3-9 m, rx+camera on the front wall, tx on back/side walls, 0-4 people, site geometry input (withheld for ${Math.round(cfg.unknownSiteShare * 100)} % of training scenes); held-out TEST rooms and layouts`;
  const metadata: ModelMetadata = {
    csipose_contract: CONTRACT_V2,
    model_version: `csipose-pose-${MODEL_VERSION}+${hash}`,
    feature_dim: FEATURE_DIM,
    max_persons: MAX_PERSONS,
    window_frames: WINDOW_FRAMES,
    trained_on: trainedOn,
    site_dim: SITE_DIM,
    history_steps: HISTORY_STEPS,
    history_dim: HISTORY_DIM,
    history_stride_frames: HISTORY_STRIDE_FRAMES,
    fall_window_s: FALL_WINDOW_S,
  };
  const shape = {
    featureDim: FEATURE_DIM,
    historySteps: HISTORY_STEPS,
    historyDim: HISTORY_DIM,
    siteDim: SITE_DIM,
    maxPersons: MAX_PERSONS,
    activities: MODEL_ACTIVITIES.length,
  };
  const bytes = buildPoseModelV2(weights, shape, metadata);
  await mkdir(outDir, { recursive: true });
  const onnxPath = join(outDir, 'csipose-pose.onnx');
  await writeFile(onnxPath, bytes);

  // 4. Scores of the exported file, through the runtime the service uses.
  const mean = meanPose(trainSet.targets);
  const model = await PoseModel.load(onnxPath, { thread: 'inline', featureDim: FEATURE_DIM });
  let scores: Scores;
  let valScores: Scores;
  let unknownSiteScores: Scores;
  const byGroup: Record<string, Scores> = {};
  let exportCheck = 0;
  try {
    const valOut = await runModel(model, valSet, recipeById);
    valScores = scoreOutputs(valOut, valSet.targets, valSet.personCounts, receiversOf(valSet, recipeById), mean);
    const outputs = await runModel(model, testSet, recipeById);
    const testReceivers = receiversOf(testSet, recipeById);
    scores = scoreOutputs(outputs, testSet.targets, testSet.personCounts, testReceivers, mean);
    unknownSiteScores = scoreOutputs(await runModel(model, testSet, recipeById, false), testSet.targets, testSet.personCounts, testReceivers, mean);
    const groups: Array<[string, (r: ScenarioRecipe) => boolean]> = [
      ['antennas_3x3', (r) => r.nRx === 3 && r.nTx === 3],
      ['antennas_other', (r) => !(r.nRx === 3 && r.nTx === 3)],
      ['subcarriers_30', (r) => r.nSub === 30],
      ['subcarriers_56', (r) => r.nSub === 56],
      ['subcarriers_114', (r) => r.nSub === 114],
      ['tx_back_wall', (r) => r.tx.wall === 'back'],
      ['tx_side_wall', (r) => r.tx.wall !== 'back'],
    ];
    for (const [name, pick] of groups) {
      const rows = rowsWhere(testSet, recipeById, pick);
      if (rows.length > 0) byGroup[name] = scoreOutputs(outputs, testSet.targets, testSet.personCounts, testReceivers, mean, rows);
    }
    // The ONNX model must compute what the TypeScript network computes.
    const n = Math.min(testSet.n, 256);
    if (n > 0) {
      const src = rowSource(testSet, recipeById);
      const ts = predict(result.net, norm, { ...src, n });
      for (const k of ['count', 'presence', 'keypoints3d', 'activity', 'fall'] as const) {
        const a = ts[k];
        const b = outputs[k];
        for (let i = 0; i < a.length; i++) exportCheck = Math.max(exportCheck, Math.abs(a[i]! - b[i]!));
      }
    }
  } finally {
    await model.release();
  }

  const totalSeconds = (performance.now() - t0) / 1000;
  const count = (split: string, people?: number) => recipes.filter((r) => r.split === split && (people === undefined || r.people === people)).length;
  const report: Record<string, unknown> = {
    model: { path: 'csipose-pose.onnx', bytes: bytes.length, ...metadata, hidden: settings.hidden, input_dim: INPUT_DIM, parameters: countParameters(weights) },
    configuration: cfg.name,
    inputs: {
      features: FEATURE_DIM,
      history: { steps: HISTORY_STEPS, dim: HISTORY_DIM, stride_frames: HISTORY_STRIDE_FRAMES },
      site: { columns: SITE_COLUMNS, unknown_share_of_train_scenes: cfg.unknownSiteShare, train_scenes_without_site: unknownSite.size },
    },
    pipeline: {
      stages: 'sanitize(method=phasor, scope=packet) -> window(size=WINDOW_FRAMES, hop=HOP) -> features (+ history ring) -> infer',
      window_frames: WINDOW_FRAMES,
      hop: HOP,
      generated_hop: cfg.hop,
      train_row_every: cfg.trainRowEvery,
    },
    recipe: {
      master_seed: seed,
      scenario_seconds: cfg.counts.seconds,
      people_weights_train_val: PEOPLE_WEIGHTS,
      people_weights_test: cfg.counts.testPeople ?? TEST_PEOPLE_WEIGHTS,
      held_out_for_test: HELD_OUT,
      mirror_augmentation: cfg.mirror,
    },
    scenario_counts: {
      train: count('train'),
      val: count('val'),
      test: count('test'),
      test_by_people: [0, 1, 2, 3, 4].map((p) => count('test', p)),
    },
    windows: { train_rows: trainSet.n, val: valSet.n, test: testSet.n },
    training: {
      settings,
      loss_weights: LOSS_WEIGHTS,
      best_epoch: result.bestEpoch,
      seconds: round(result.seconds, 1),
      samples_per_second: Math.round(result.samplesPerSecond),
      epochs: result.history.map((h) => roundScores(h)),
    },
    mean_pose: {
      note: 'TRAIN mean joint offsets from the pelvis (17 x 3, m) and pelvis height: the baseline skeleton',
      offsets: mean.offsets.map((v) => round(v, 4)),
      pelvis_z: round(mean.pelvisZ, 4),
    },
    generation_seconds: round(genSeconds, 1),
    total_seconds: round(totalSeconds, 1),
    export_check_max_abs_diff: exportCheck,
    validation_scores: {
      note: 'VALIDATION scenarios (training distribution, unseen seeds): what model selection looked at.',
      ...(roundScores(valScores) as object),
    },
    test_scores: {
      note: 'Held-out SIMULATED scenarios (rooms, antenna layouts and seeds never seen in training), each with its own site; real CSI will score lower. Scored from the exported ONNX file run by PoseModel (onnxruntime-node). Skeletons in room metres; baseline = the TRAIN mean pose at the true floor position.',
      ...(roundScores(scores) as object),
      by_group: roundScores(byGroup),
      site_unknown: roundScores(unknownSiteScores),
    },
  };
  const jsonPath = join(outDir, 'csipose-pose.json');
  await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  return {
    onnxPath,
    jsonPath,
    metadata,
    net: result.net,
    norm,
    weights,
    train: trainSet,
    test: testSet,
    history: result.history,
    scores,
    mean,
    exportCheck,
    report,
  };
}

function countParameters(w: PoseWeightsV2): number {
  let n = 0;
  for (const l of w.layers) n += l.w.length + l.b.length;
  for (const k of ['count', 'presence', 'root', 'offsets', 'activity', 'fall'] as const) n += w.heads[k].w.length + w.heads[k].b.length;
  return n;
}
