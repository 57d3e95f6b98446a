/**
 * Where the time of the `physics-live` pipeline goes, stage by stage (issue 19, speed).
 *
 * Input: the simulator's frames of the default site's three links (DEFAULT_RADIOS, 1 TX + 3 RX,
 * two people with generated behaviour, default impairments, 30 subcarriers, 3 x 3 antennas),
 * generated before timing. The front end is the `floorMap` operator itself, run with its
 * `profile` option (performance.now() around each stage of the operator's own code: this suite is
 * pinned to one core by bench/run.ts, so wall time there is the core's time); what follows it is
 * driven stage by stage as the `refine` operator and the pipeline do it: each map's candidates
 * into the refiner's input (`RefinerInput.push`), the shipped refiner (`models/csipose-refiner.onnx`,
 * its session in this thread on one core) on batches of `BATCH_MAPS` maps' rows, the decoder
 * (`RefinerDecoder`), and the pose frames through track, activity and alerts. Each stage is
 * reported as its share of the total ('%') and in ms per map (one map per 16 packets of the
 * primary link: per 48 frames of the three links), from the median of 3 rounds after a warm-up.
 *
 * Run: `npm run bench -- --only physics`, or after a build `node dist/bench/physics.js [--json]`
 * (pin it yourself: `taskset -c 0 node dist/bench/physics.js`).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { from, lastValueFrom, toArray } from 'rxjs';
import { deepFreeze, defaults } from '../src/config/schema.js';
import type { ConfigSnapshot } from '../src/config/store.js';
import type { CsiFrame } from '../src/csi/frame.js';
import { pipelineOperator, type PipelineDef } from '../src/engine/pipeline.js';
import { PoseModel, type ModelOutputsV3 } from '../src/model/runtime.js';
import { RefinerDecoder } from '../src/model/refinerDecode.js';
import { REFINER_FEATURE_DIM, REFINER_STEPS, RefinerInput } from '../src/physics/refinerInput.js';
import { viewCamera } from '../src/pose/camera.js';
import type { PoseFrame } from '../src/pose/types.js';
import { DEFAULT_MAX_CANDIDATES, floorMap, floorMapProfile, type FloorMapItem, type FloorMapOptions, type FloorMapProfile } from '../operators/floorMap.js';
import { registry } from '../pipelines/index.js';
import { liveParams } from '../pipelines/settings.js';
import { siteFrames } from './frames.js';
import { argValue, printResults, type BenchResult } from './lib.js';
import { repoRoot } from './serve.js';

/** Maps whose candidates go through the refiner in one run (the live stage batches what waits while the model runs). */
const BATCH_MAPS = 16;

/** The stages after the front end, as `physics-live` has them. */
const POST: PipelineDef = {
  name: 'post',
  summary: 'track, activity, alerts',
  stages: [
    ['track', {}],
    ['activity', {}],
    ['alerts', {}],
  ],
};

/** Milliseconds per stage of one round, in report order. */
interface Round {
  readonly stages: Record<string, number>;
  readonly maps: number;
  readonly frames: number;
  readonly total: number;
}

/** Names of the reported stages and what each is. */
const STAGES: ReadonlyArray<readonly [string, string]> = [
  ['align', 'align/static: every packet aligned onto its static channel (learned in the first 10 s) and pushed into its ring'],
  ['window', "the links' 64-packet moving windows taken out of the rings"],
  ['components', 'principal components of each link window (FloorBeamformer.reduce)'],
  ['scan', 'beamforming scan over the grid (FloorBeamformer.scan, per-window tables included)'],
  ['candidates', "fusion of the links' maps and the candidate search"],
  ['doppler', 'Doppler steered to each candidate on each link (steerCandidates)'],
  ['emit', 'the floor-map item (map copied out)'],
  ['refinerInput', 'refiner input: candidates chained into tracks, 20 steps x 47 features each (RefinerInput.push)'],
  ['model', `refiner model (ONNX, batches of ${BATCH_MAPS} maps)`],
  ['decode', 'refiner output decoded into persons (RefinerDecoder)'],
  ['post', 'track, activity, alerts'],
];

/**
 * One round: the frames through the front end (profiled) and the maps through the rest.
 * @param frames the site's frames
 * @param model the loaded refiner
 * @param front extra floorMap options (e.g. the search) beside the profile
 */
async function round(frames: readonly CsiFrame[], model: PoseModel, front: FloorMapOptions = {}): Promise<Round> {
  const profile: FloorMapProfile = floorMapProfile();
  const maps: FloorMapItem[] = await lastValueFrom(from(frames).pipe(floorMap({ ...front, profile }), toArray()));
  const stages: Record<string, number> = {
    align: profile.align,
    window: profile.window,
    components: profile.components,
    scan: profile.scan,
    candidates: profile.candidates,
    doppler: profile.doppler,
    emit: profile.emit,
    refinerInput: 0,
    model: 0,
    decode: 0,
    post: 0,
  };
  const input = new RefinerInput(DEFAULT_MAX_CANDIDATES);
  const decoder = new RefinerDecoder();
  const config = deepFreeze(defaults()) as ConfigSnapshot;
  const camera = viewCamera(config.environment.view);
  const decodeOptions = {
    confidenceThreshold: config.detection.confidence_threshold,
    maxPersons: config.detection.max_persons,
    camera,
    includeDensePose: true,
  };
  const rowSize = REFINER_STEPS * REFINER_FEATURE_DIM;
  const poses: PoseFrame[] = [];
  for (let m0 = 0; m0 < maps.length; m0 += BATCH_MAPS) {
    const batch = maps.slice(m0, m0 + BATCH_MAPS);
    let t = performance.now();
    const jobs = batch.map((m) => {
      const b = input.push(m);
      return { map: m, count: b.count, features: b.features.slice(), positions: b.positions.slice() };
    });
    stages.refinerInput! += performance.now() - t;
    const rows = jobs.reduce((n, j) => n + j.count, 0);
    let out: ModelOutputsV3 | null = null;
    if (rows > 0) {
      const feats = new Float32Array(rows * rowSize);
      let at = 0;
      for (const j of jobs) {
        feats.set(j.features, at * rowSize);
        at += j.count;
      }
      t = performance.now();
      const o = await model.run(feats, rows, { transfer: true });
      stages.model! += performance.now() - t;
      if (o.contract !== 3) throw new Error('the refiner is not a v3 model');
      out = o;
    }
    t = performance.now();
    let start = 0;
    for (const j of jobs) {
      const reading = out && j.count > 0 ? decoder.decode(out, start, j.count, j.positions, decodeOptions) : { persons: [], fallProbability: 0 };
      start += j.count;
      poses.push({
        frameId: poses.length,
        time: j.map.time,
        sourceId: j.map.sourceId,
        environmentId: j.map.environmentId,
        persons: reading.persons,
        processingMs: 0,
        modelVersion: model.metadata.model_version || 'unknown',
        csiQuality: j.map.quality,
        fallProbability: reading.fallProbability,
      });
    }
    stages.decode! += performance.now() - t;
  }
  const params = liveParams(config);
  const reg = { operators: registry.operators, pipelines: new Map([[POST.name, POST]]) };
  const t = performance.now();
  await lastValueFrom(from(poses).pipe(pipelineOperator(POST, reg, 'pose', { live: (op) => params[op as keyof typeof params] }), toArray()));
  stages.post = performance.now() - t;
  const total = Object.values(stages).reduce((a, b) => a + b, 0);
  return { stages, maps: maps.length, frames: frames.length, total };
}

/**
 * Front-end settings compared side by side (rounds interleaved): the plain search (the defaults:
 * warm-started components, Doppler from them), the cold start with one extra subspace pass (the
 * default before), coarse-to-fine, fewer components, the Doppler over every snapshot (exact).
 */
const VARIANTS: ReadonlyArray<readonly [string, FloorMapOptions]> = [
  ['full', { coarseStep: 1 }],
  ['cold1', { coarseStep: 1, beamformer: { warmStart: false, iterations: 1 } }],
  ['coarse2', { coarseStep: 2 }],
  ['r3', { coarseStep: 1, beamformer: { components: 3 } }],
  ['r3.coarse2', { coarseStep: 2, beamformer: { components: 3 } }],
  ['dopplerSnapshots', { coarseStep: 1, dopplerFrom: 'snapshots' }],
];

/**
 * The front end alone (floorMap, profiled) per variant, rounds interleaved so that the machine's
 * load falls on all alike: ms per map (median of `rounds`), and each stage's ms per map.
 */
async function variants(frames: readonly CsiFrame[], rounds: number): Promise<BenchResult[]> {
  const totals: number[][] = VARIANTS.map(() => []);
  const profiles: FloorMapProfile[][] = VARIANTS.map(() => []);
  for (let r = 0; r <= rounds; r++) {
    for (let v = 0; v < VARIANTS.length; v++) {
      const profile = floorMapProfile();
      await lastValueFrom(from(frames).pipe(floorMap({ ...VARIANTS[v]![1], profile }), toArray()));
      // Round 0 warms up.
      if (r === 0) continue;
      const p = profile;
      totals[v]!.push((p.align + p.window + p.components + p.scan + p.candidates + p.doppler + p.emit) / p.maps);
      profiles[v]!.push(p);
    }
  }
  const median = (x: number[]): number => [...x].sort((a, b) => a - b)[x.length >> 1]!;
  const out: BenchResult[] = [];
  VARIANTS.forEach(([name, opts], v) => {
    const m = median(totals[v]!);
    const stage = (k: 'components' | 'scan' | 'candidates' | 'doppler') => median(profiles[v]!.map((p) => p[k] / p.maps)).toFixed(3);
    // Paired per round against the first variant.
    const ratio = median(totals[0]!.map((t, i) => t / totals[v]![i]!));
    out.push({
      name: `physics.front.${name}`,
      value: m,
      unit: 'ms/map',
      n: rounds,
      spread: (Math.max(...totals[v]!) - Math.min(...totals[v]!)) / m,
      note: `floorMap ${JSON.stringify(opts)}: components ${stage('components')}, scan ${stage('scan')}, candidates ${stage('candidates')}, doppler ${stage('doppler')} ms/map; ${VARIANTS[0]![0]} / this ${ratio.toFixed(2)} (paired per round)`,
    });
  });
  return out;
}

/**
 * The per-stage profile (module comment).
 * @param ticks simulator ticks (three frames each); default 2000 (20 s)
 * @returns `physics.profile.*` results: each stage's share and ms per map, and the total
 */
export async function run(ticks = Number(argValue('--ticks') ?? '') || 2000): Promise<BenchResult[]> {
  const frames = siteFrames(ticks);
  const model = await PoseModel.load(join(repoRoot, 'models/csipose-refiner.onnx'));
  try {
    await round(frames, model);
    const rounds: Round[] = [];
    for (let r = 0; r < 3; r++) rounds.push(await round(frames, model));
    rounds.sort((a, b) => a.total - b.total);
    const med = rounds[1]!;
    const results: BenchResult[] = [];
    for (const [name, what] of STAGES) {
      const ms = med.stages[name]!;
      results.push({
        name: `physics.profile.${name}`,
        value: (100 * ms) / med.total,
        unit: '%',
        n: med.maps,
        note: `${(ms / med.maps).toFixed(3)} ms/map: ${what}`,
      });
    }
    results.push({
      name: 'physics.profile.total',
      value: med.total / med.maps,
      unit: 'ms/map',
      n: med.maps * rounds.length,
      spread: (rounds[2]!.total - rounds[0]!.total) / med.total,
      note: `${med.frames} frames of 3 links (${ticks} ticks, 2 people, default impairments) -> ${med.maps} maps; ${((med.frames / med.total) * 1000).toFixed(0)} frames/s for these stages alone; median of 3 rounds`,
    });
    results.push(...(await variants(frames, Number(argValue('--variant-rounds') ?? '') || 5)));
    return results;
  } finally {
    await model.release();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  run()
    .then((r) => printResults(r, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
