/**
 * One training run of the default pose model, end to end: simulate the scenarios of the recipe
 * (worker threads), train the MLP, export it to ONNX through `buildMlpPoseModel`, load the exported
 * file with `PoseModel` (onnxruntime-node) and score it on the TEST scenarios (the model we ship is
 * the model we score), and write `csipose-pose.onnx` and `csipose-pose.json` (recipe, settings,
 * per-epoch losses, held-out scores, counts).
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { CONTRACT_VERSION, SITE_COLUMNS, SITE_DIM, type ModelMetadata } from '../model/contract.js';
import { deriveSeed, Rng } from '../sim/rng.js';
import { FEATURE_DIM, HOP, WINDOW_FRAMES } from '../model/features.js';
import { buildMlpPoseModel, type MlpPoseWeights } from '../model/onnxWriter.js';
import { PoseModel, type ModelOutputs } from '../model/runtime.js';
import { concatScenarios, generateAll, withSiteInputs, type Dataset, type ScenarioData } from './dataset.js';
import { outputsFromFlat, scoreOutputs, type Scores } from './evaluate.js';
import { LOSS_WEIGHTS } from './loss.js';
import type { Mlp } from './mlp.js';
import { bar, formatSeconds, Progress, type ProgressStream } from './progress.js';
import { HELD_OUT, makeRecipes, PEOPLE_WEIGHTS, recipeSite, TEST_PEOPLE_WEIGHTS, type RecipeCounts, type ScenarioRecipe } from './recipe.js';
import { MAX_PERSONS } from './targets.js';
import { fitNormalizer, predict, prepare, toPoseWeights, train, type EpochRecord, type Normalizer, type TrainSettings } from './trainer.js';

/** The version of the model family; the weights hash is appended. */
export const MODEL_VERSION = '1.0.0';

/** Everything a run is made of. */
export interface RunConfig {
  counts: RecipeCounts;
  /** Window hop of the VALIDATION and TEST rows (the service uses HOP). */
  hop: number;
  /** Window hop of the TRAIN rows (windows closer than this are nearly the same row). */
  trainHop: number;
  /** Mirror augmentation of TRAIN (see dataset.ts). */
  mirror: boolean;
  /**
   * Give the network the `site` input (room size, where the radios hang): the share of TRAIN
   * scenarios whose site is withheld (all-zero row), so the model also works where the installer
   * entered nothing. Null: a features-only model.
   */
  site: { unknownShare: number } | null;
  train: Omit<TrainSettings, 'seed'>;
}

/** The full run: about 9 minutes on two idle cores (11-16 when they are shared). */
export const FULL: RunConfig = {
  counts: { train: 3200, val: 160, test: 120, seconds: 8 },
  hop: 16,
  trainHop: 32,
  mirror: true,
  site: { unknownShare: 0.25 },
  train: { hidden: [256, 256], epochs: 6, batch: 128, lr: 1e-3, lrMin: 2e-5, warmupSteps: 300, weightDecay: 1e-2, inputNoise: 0, inputDropout: 0, dropout: 0.2 },
};

/** `--quick`: a tiny dataset and network, under a minute (for tests and smoke runs). */
export const QUICK: RunConfig = {
  counts: { train: 8, val: 2, test: 3, seconds: 4 },
  hop: 16,
  trainHop: 16,
  mirror: true,
  site: { unknownShare: 0.25 },
  train: { hidden: [32], epochs: 3, batch: 32, lr: 2e-3, lrMin: 1e-4, warmupSteps: 5, weightDecay: 1e-4, inputNoise: 0, inputDropout: 0, dropout: 0 },
};

export interface RunOptions {
  quick?: boolean;
  seed?: number;
  /** Output directory for the .onnx and .json files. */
  out?: string;
  /** Worker threads for the simulation; default one per core, 0 = this thread. */
  workers?: number;
  /** Progress stream; default process.stderr. */
  progress?: ProgressStream;
  /** Replace parts of the configuration (tests). */
  config?: RunConfig;
}

/** What a run leaves behind (also for tests). */
export interface RunResult {
  onnxPath: string;
  jsonPath: string;
  metadata: ModelMetadata;
  net: Mlp;
  norm: Normalizer;
  weights: MlpPoseWeights;
  train: Dataset;
  test: Dataset;
  history: EpochRecord[];
  scores: Scores;
  report: Record<string, unknown>;
}

/** Short hash of the exported weights: 10 hex digits of SHA-256 over every tensor in order. */
export function weightsHash(w: MlpPoseWeights): string {
  const h = createHash('sha256');
  const add = (a: Float32Array) => h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  for (const l of w.layers) {
    add(l.w);
    add(l.b);
  }
  for (const k of ['presence', 'keypoints', 'boxes', 'floor', 'densepose'] as const) {
    add(w.heads[k].w);
    add(w.heads[k].b);
  }
  return h.digest('hex').slice(0, 10);
}

function round(x: number, digits = 4): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x;
}

function roundScores(s: unknown): unknown {
  if (typeof s === 'number') return round(s);
  if (Array.isArray(s)) return s.map(roundScores);
  if (s && typeof s === 'object') return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, roundScores(v)]));
  return s;
}

/**
 * Runs the model on a dataset in batches and gathers the outputs of every row. A batch never spans
 * two scenarios, so each runs with its own site (`recipeSite`) when `recipes` is given, or with an
 * unknown site when it is not.
 */
async function runModel(model: PoseModel, d: Dataset, recipes?: ReadonlyMap<number, ScenarioRecipe>, batch = 1024): Promise<ModelOutputs> {
  const P = model.maxPersons;
  const all: ModelOutputs = {
    n: d.n,
    maxPersons: P,
    presence: new Float32Array(d.n * P),
    keypoints: new Float32Array(d.n * P * 51),
    boxes: new Float32Array(d.n * P * 4),
    floor: new Float32Array(d.n * P * 2),
    densepose: new Float32Array(d.n * P * 72),
  };
  for (let s = 0; s < d.n; ) {
    const id = d.scenario[s]!;
    let b = 1;
    while (b < batch && s + b < d.n && d.scenario[s + b] === id) b++;
    const r = recipes?.get(id);
    const out = await model.run(d.features.subarray(s * FEATURE_DIM, (s + b) * FEATURE_DIM), b, { site: r ? recipeSite(r) : null });
    all.presence.set(out.presence, s * P);
    all.keypoints.set(out.keypoints, s * P * 51);
    all.boxes.set(out.boxes, s * P * 4);
    all.floor.set(out.floor, s * P * 2);
    all.densepose.set(out.densepose, s * P * 72);
    s += b;
  }
  return all;
}

/** Rows of a dataset whose scenario satisfies `pick`. */
function rowsWhere(d: Dataset, recipes: Map<number, ScenarioRecipe>, pick: (r: ScenarioRecipe) => boolean): Int32Array {
  const rows: number[] = [];
  for (let i = 0; i < d.n; i++) if (pick(recipes.get(d.scenario[i]!)!)) rows.push(i);
  return Int32Array.from(rows);
}

/**
 * Runs the whole training and writes the artefacts.
 * @param opts quick or full, seed, output directory, workers, progress stream
 * @returns paths, the trained network and the scores
 */
export async function runTraining(opts: RunOptions = {}): Promise<RunResult> {
  const cfg = opts.config ?? (opts.quick ? QUICK : FULL);
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
    trainHop: cfg.trainHop,
    workers,
    mirrorTrain: cfg.mirror,
    onProgress: (done, total) => {
      const el = (performance.now() - g0) / 1000;
      progress.update(`simulating ${bar(done / total)} ${done}/${total} scenarios, ${formatSeconds(el)} elapsed, ETA ${formatSeconds((el / done) * (total - done))}`);
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

  // 2. Training. With the site input the network reads each window's features and its scene's
  // site row side by side; a seeded share of TRAIN scenes is shown as an unknown site.
  const recipeById = new Map(recipes.map((r) => [r.id, r]));
  const siteDim = cfg.site ? SITE_DIM : 0;
  const inDim = FEATURE_DIM + siteDim;
  const unknownSite = new Set<number>();
  if (cfg.site) {
    const rng = new Rng(deriveSeed(seed, 31));
    for (const r of recipes) if (r.split === 'train' && rng.chance(cfg.site.unknownShare)) unknownSite.add(r.id);
  }
  const netRows = (d: Dataset, unknown?: ReadonlySet<number>) => (cfg.site ? withSiteInputs(d, recipeById, unknown) : d);
  const netTrain = netRows(trainSet, unknownSite);
  const settings: TrainSettings = { ...cfg.train, seed };
  const norm = fitNormalizer(netTrain, inDim);
  const ptr = prepare(netTrain, norm, inDim);
  const pva = prepare(netRows(valSet), norm, inDim);
  const result = train({ ...ptr, n: trainSet.n }, { ...pva, n: valSet.n }, inDim, settings, (p) => {
    const frac = ((p.epoch - 1) * p.batches + p.batch) / (p.epochs * p.batches);
    progress.update(
      `training epoch ${p.epoch}/${p.epochs} batch ${p.batch}/${p.batches} ${bar(frac)} loss ${p.loss.toFixed(4)} ${Math.round(p.samplesPerSecond)} samples/s ETA ${formatSeconds(p.etaSeconds)}`,
    );
  });
  const last = result.history[result.history.length - 1];
  progress.done(
    `trained ${settings.epochs} epochs in ${formatSeconds(result.seconds)} (${Math.round(result.samplesPerSecond)} samples/s); best validation loss ${result.history[result.bestEpoch - 1]?.valLoss.toFixed(4)} at epoch ${result.bestEpoch}, last ${last?.valLoss.toFixed(4)}`,
  );

  // 3. Export.
  const weights = toPoseWeights(result.net, norm);
  if (siteDim > 0) weights.siteDim = siteDim;
  const hash = weightsHash(weights);
  const trainedOn = `csipose-sim seed=${seed}: ${cfg.counts.train} train scenarios x ${cfg.counts.seconds} s${cfg.mirror ? ' (+mirrored)' : ''}, rooms 3-9 m, rx+camera on the front wall, tx on back/side walls, 0-4 people${cfg.site ? `, site geometry input (withheld for ${Math.round(cfg.site.unknownShare * 100)} % of training scenes)` : ''}; held-out TEST rooms and layouts`;
  const metadata: ModelMetadata = {
    csipose_contract: CONTRACT_VERSION,
    model_version: `csipose-pose-${MODEL_VERSION}+${hash}`,
    feature_dim: FEATURE_DIM,
    max_persons: MAX_PERSONS,
    window_frames: WINDOW_FRAMES,
    trained_on: trainedOn,
    ...(siteDim > 0 ? { site_dim: siteDim } : {}),
  };
  const bytes = buildMlpPoseModel(weights, metadata);
  await mkdir(outDir, { recursive: true });
  const onnxPath = join(outDir, 'csipose-pose.onnx');
  await writeFile(onnxPath, bytes);

  // 4. Scores of the exported file, through the runtime the service uses.
  const model = await PoseModel.load(onnxPath, { thread: 'inline', featureDim: FEATURE_DIM });
  let scores: Scores;
  let valScores: Scores;
  let unknownSiteScores: Scores | undefined;
  const byGroup: Record<string, Scores> = {};
  let exportCheck = 0;
  try {
    valScores = scoreOutputs(await runModel(model, valSet, recipeById), valSet.targets, valSet.personCounts);
    const outputs = await runModel(model, testSet, recipeById);
    scores = scoreOutputs(outputs, testSet.targets, testSet.personCounts);
    if (siteDim > 0) unknownSiteScores = scoreOutputs(await runModel(model, testSet), testSet.targets, testSet.personCounts);
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
      if (rows.length > 0) byGroup[name] = scoreOutputs(outputs, testSet.targets, testSet.personCounts, rows);
    }
    // The ONNX model must compute what the TypeScript network computes.
    const n = Math.min(testSet.n, 256);
    if (n > 0) {
      const ts = outputsFromFlat(predict(result.net, norm, netRows(testSet).features, n), n);
      for (const k of ['presence', 'keypoints', 'boxes', 'floor', 'densepose'] as const) {
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
    model: { path: 'csipose-pose.onnx', bytes: bytes.length, ...metadata, hidden: settings.hidden, parameters: countParameters(weights) },
    site_input: cfg.site
      ? {
          columns: SITE_COLUMNS,
          unknown_share_of_train_scenes: cfg.site.unknownShare,
          train_scenes_without_site: unknownSite.size,
          note: 'Validation and the main TEST scores feed each scenario its own site (what an installer enters); test_scores.site_unknown feeds none.',
        }
      : null,
    pipeline: {
      stages: 'sanitize(method=phasor, scope=packet) -> window(size=WINDOW_FRAMES, hop=HOP) -> features -> infer',
      window_frames: WINDOW_FRAMES,
      hop: HOP,
      training_hop: cfg.trainHop,
      validation_and_test_hop: cfg.hop,
      feature_dim: FEATURE_DIM,
    },
    recipe: {
      master_seed: seed,
      scenario_seconds: cfg.counts.seconds,
      people_weights_train_val: PEOPLE_WEIGHTS,
      people_weights_test: cfg.counts.testPeople ?? TEST_PEOPLE_WEIGHTS,
      held_out_for_test: HELD_OUT,
      mirror_augmentation: cfg.mirror,
      description:
        'Rooms 3-9 m wide and deep, 2.5-3.2 m high, wall/floor/ceiling reflection 0.2-0.6; receive array on the front wall (30-70 % across, 0.8-2.0 m high) with the camera on the same wall at the same place across the room (within 0.15 m), 1.5-1.7 m high, yaw across the room +-0.03 rad, pitch -0.16..-0.24 rad, 90 degree FOV; transmit array on the back wall (60 %) or a side wall (20 % each), 15-85 % along it, 0.8-2.2 m high; subcarriers 30/56/114 (55/20/25 %); antennas 3x3 (75 %), 2x2, 3x1, 1x1; SNR 18-35 dB, loss 0-5 %, 8-bit quantisation in 25 %; fall probability 0.05-0.25; generated behaviour (walk, stand, sit, lie, fall, get up).',
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
    generation_seconds: round(genSeconds, 1),
    total_seconds: round(totalSeconds, 1),
    export_check_max_abs_diff: exportCheck,
    validation_scores: {
      note: 'VALIDATION scenarios (training distribution, unseen seeds): what model selection looked at.',
      all: roundScores(valScores),
    },
    test_scores: {
      note: 'Held-out SIMULATED scenarios (rooms, antenna layouts and seeds never seen in training); real CSI will score lower. Scored from the exported ONNX file run by PoseModel (onnxruntime-node), decoded at presence >= 0.5. PCK@0.2 = share of visible true keypoints within 0.2 x max(box width, height) of the matched prediction (unmatched true persons count as misses).',
      all: roundScores(scores),
      by_group: roundScores(byGroup),
      ...(unknownSiteScores ? { site_unknown: roundScores(unknownSiteScores) } : {}),
    },
  };
  const jsonPath = join(outDir, 'csipose-pose.json');
  await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  return { onnxPath, jsonPath, metadata, net: result.net, norm, weights, train: trainSet, test: testSet, history: result.history, scores, report };
}

function countParameters(w: MlpPoseWeights): number {
  let n = 0;
  for (const l of w.layers) n += l.w.length + l.b.length;
  for (const k of ['presence', 'keypoints', 'boxes', 'floor', 'densepose'] as const) n += w.heads[k].w.length + w.heads[k].b.length;
  return n;
}
