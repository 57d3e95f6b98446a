/**
 * The refiner's training sets (issue 19 item 3): each scenario of the recipe (training/ts/
 * recipe.ts) is simulated on a whole site, its frames go through the service's own front end (the
 * `floorMap` operator: alignment, the empty room's static channel, beamforming, candidates, Doppler)
 * and the same {@link RefinerInput} the service runs, and every {@link SAMPLE_EVERY}-th map is kept
 * with the ground truth of the tick it ended on. The files are what `training/train.py` reads
 * (format `csipose-refiner-data-v1`, training/README.md).
 *
 * The empty room. The front end needs the room without people to see people who keep still (a
 * still body is a constant change of the channel, not a moving one). Here, as `csipose calibrate`
 * does at an installation, each scenario begins with {@link EMPTY_SECONDS} of its room without
 * people: a simulator of the same seed, room, radios and impairments with nobody in it, whose
 * clock ends where the scenario's begins; the front end learns its static channel from them.
 *
 * Variety (what the service meets): every third scenario sees one link only (the recipe's own
 * transmitter and receiver, as `unseen1`), the others the recipe's 1 TX + 3 RX site. Every
 * scenario is the ideal room: training every other one in the `room` realism (furniture, clutter,
 * random and drifting chains fitted blindly by the front end, a door, shadowing) was measured and
 * made the default room worse (docs/model.md "The first refiner").
 */
import { Subject } from 'rxjs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { CsiFrame } from '../../src/csi/frame.js';
import { floorMap, DEFAULT_MAX_CANDIDATES, type FloorMapItem, type FloorMapOptions } from '../../operators/floorMap.js';
import { REFINER_FEATURE_DIM, REFINER_FEATURES, REFINER_STEPS, REFINER_STRIDE, RefinerInput } from '../../src/physics/refinerInput.js';
import { DEFAULT_CELL_M, DEFAULT_HEIGHTS_M } from '../../src/physics/beamform.js';
import { SHORT_HOP, SHORT_WINDOW } from '../../src/physics/window.js';
import { CsiSimulator, type GroundTruth, type SimOptions } from '../../src/sim/simulator.js';
import { ACTIVITIES, MAX_PEOPLE } from '../../src/sim/scenario.js';
import { REFINER_FALL_TRIGGER } from '../../src/pose/activityLabeller.js';
import { placedSimulator, simOptions, withRadios } from './dataset.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import { oneLinkRadios, recipeRadios, type ScenarioRecipe } from './recipe.js';
import { mapJobs } from './workerPool.js';

/** Format name of the files (meta.json `format`). */
export const REFINER_DATA_FORMAT = 'csipose-refiner-data-v1';
/** Contract of the models trained on them. */
export const REFINER_CONTRACT = 'csipose-pose-v3';
/** Seconds of empty room before each scenario. */
export const EMPTY_SECONDS = 10;
/** One map in this many is kept (4 maps of 16 packets: 0.64 s at 100 Hz; neighbours are nearly the same). */
export const SAMPLE_EVERY = 4;
/** A person's fall counts for `truth_fall` this long after its onset, seconds (the service's fall window). */
export const FALL_WINDOW_S = 3;
/** Most people per frame in the files. */
export const MAX_TRUTH = MAX_PEOPLE;
/** Candidates per frame. */
export const MAX_CANDIDATES = DEFAULT_MAX_CANDIDATES;
const KEYPOINTS = 17;
const LEFT_HIP = 11;
const RIGHT_HIP = 12;

/** How a scenario is seen. */
export interface RefinerJob {
  recipe: ScenarioRecipe;
  /** One link (the recipe's own) or the recipe's 1 TX + 3 RX site. */
  links: 1 | 3;
  realism: 'ideal' | 'room';
  /** Front-end options other than the site, room and empty-room seconds (studies); default the service's. */
  frontEnd?: Omit<FloorMapOptions, 'radios' | 'room' | 'learnSeconds'>;
}

/** The frames kept of one scenario. */
export interface RefinerFrames {
  n: number;
  /** n x K x T x F */
  candidates: Float32Array;
  /** n x K */
  candMask: Uint8Array;
  /** n x K x 3 */
  candPos: Float32Array;
  /** n x P */
  truthMask: Uint8Array;
  /** n x P x 3: pelvis floor x, y and pelvis height */
  truthPos: Float32Array;
  /** n x P x 2: cos, sin of the facing direction */
  truthHeading: Float32Array;
  /** n x P */
  truthActivity: Uint8Array;
  /** n x P */
  truthFall: Uint8Array;
  /** n x P x 17 x 3, joints minus the pelvis */
  truthSkeleton: Float32Array;
}

/** How each scenario of a recipe is seen: every third one link, the others 1 TX + 3 RX, all in the ideal room (module comment). */
export function refinerJobs(recipes: readonly ScenarioRecipe[]): RefinerJob[] {
  return recipes.map((recipe) => ({ recipe, links: recipe.id % 3 === 2 ? 1 : 3, realism: 'ideal' }));
}

/** The site a job is simulated on and its front end told of: the recipe's one link, or its 1 TX + 3 RX. */
const jobRadios = (job: RefinerJob): RadioConfig[] => (job.links === 1 ? oneLinkRadios(job.recipe) : recipeRadios(job.recipe));

/** Simulator options of a job: its radios and realism, with `people` (0 for its empty room) and a start time. */
function jobOptions(job: RefinerJob, radios: readonly RadioConfig[], people: number, startTime: number): SimOptions {
  return withRadios({ ...simOptions(job.recipe, people), environmentId: `refiner-${job.recipe.id}`, realism: job.realism, startTime }, radios);
}

/**
 * Writes one person's truth at slot p of frame row n.
 * @returns nothing; fills the arrays
 */
function fillTruth(out: RefinerFrames, n: number, p: number, person: GroundTruth['persons'][number], time: number): void {
  const k = person.keypoints3d;
  const px = (k[3 * LEFT_HIP]! + k[3 * RIGHT_HIP]!) / 2;
  const py = (k[3 * LEFT_HIP + 1]! + k[3 * RIGHT_HIP + 1]!) / 2;
  const pz = (k[3 * LEFT_HIP + 2]! + k[3 * RIGHT_HIP + 2]!) / 2;
  const i = n * MAX_TRUTH + p;
  out.truthMask[i] = 1;
  out.truthPos[3 * i] = person.floor.x;
  out.truthPos[3 * i + 1] = person.floor.y;
  out.truthPos[3 * i + 2] = pz;
  // Facing: left hip minus right hip, turned a quarter clockwise (a person facing +y has their left at -x).
  const lx = k[3 * LEFT_HIP]! - k[3 * RIGHT_HIP]!;
  const ly = k[3 * LEFT_HIP + 1]! - k[3 * RIGHT_HIP + 1]!;
  const norm = Math.hypot(lx, ly) || 1;
  out.truthHeading[2 * i] = ly / norm;
  out.truthHeading[2 * i + 1] = -lx / norm;
  out.truthActivity[i] = ACTIVITIES.indexOf(person.activity);
  out.truthFall[i] = person.fallOnset !== undefined && time - person.fallOnset >= 0 && time - person.fallOnset <= FALL_WINDOW_S * 1000 ? 1 : 0;
  const s = i * KEYPOINTS * 3;
  for (let j = 0; j < KEYPOINTS; j++) {
    out.truthSkeleton[s + 3 * j] = k[3 * j]! - px;
    out.truthSkeleton[s + 3 * j + 1] = k[3 * j + 1]! - py;
    out.truthSkeleton[s + 3 * j + 2] = k[3 * j + 2]! - pz;
  }
}

function allocate(n: number): RefinerFrames {
  const K = MAX_CANDIDATES;
  const P = MAX_TRUTH;
  return {
    n,
    candidates: new Float32Array(n * K * REFINER_STEPS * REFINER_FEATURE_DIM),
    candMask: new Uint8Array(n * K),
    candPos: new Float32Array(n * K * 3),
    truthMask: new Uint8Array(n * P),
    truthPos: new Float32Array(n * P * 3),
    truthHeading: new Float32Array(n * P * 2),
    truthActivity: new Uint8Array(n * P),
    truthFall: new Uint8Array(n * P),
    truthSkeleton: new Float32Array(n * P * KEYPOINTS * 3),
  };
}

/**
 * Simulates one scenario through the front end and keeps every {@link SAMPLE_EVERY}-th map after
 * the empty room (and after the first {@link REFINER_STEPS} x {@link REFINER_STRIDE} maps of
 * people, so that every kept candidate can have a full history).
 * @param job the scenario and how it is seen
 * @returns its frames
 */
export function runRefinerJob(job: RefinerJob): RefinerFrames {
  const r = job.recipe;
  const start = Date.UTC(2026, 0, 1);
  const emptyTicks = Math.round(EMPTY_SECONDS * 100);
  const radios = jobRadios(job);
  const { sim } = placedSimulator(r.people, (n) => jobOptions(job, radios, n, start));
  const empty = new CsiSimulator(jobOptions(job, radios, 0, start - EMPTY_SECONDS * 1000));
  const maxFrames = Math.ceil((r.seconds * 100) / SHORT_HOP / SAMPLE_EVERY) + 1;
  const out = allocate(maxFrames);
  const input = new RefinerInput(MAX_CANDIDATES);
  const frames$ = new Subject<CsiFrame>();
  let truth: GroundTruth | null = null;
  let maps = 0;
  let n = 0;
  const warmup = REFINER_STEPS * REFINER_STRIDE;
  const stepSize = REFINER_STEPS * REFINER_FEATURE_DIM;
  let failure: unknown = null;
  const room = { width: r.room.width, depth: r.room.depth };
  const sub = frames$.pipe(floorMap({ ...job.frontEnd, learnSeconds: EMPTY_SECONDS, radios: () => radios, room: () => room })).subscribe({
    next: (m: FloorMapItem) => {
      const batch = input.push(m);
      if (truth === null || m.time < start) return;
      maps++;
      if (maps <= warmup || maps % SAMPLE_EVERY !== 0 || n >= maxFrames) return;
      const K = MAX_CANDIDATES;
      out.candidates.set(batch.features, n * K * stepSize);
      for (let i = 0; i < batch.count; i++) {
        out.candMask[n * K + i] = 1;
        out.candPos.set(batch.positions.subarray(3 * i, 3 * i + 3), 3 * (n * K + i));
      }
      const persons = truth.persons.slice(0, MAX_TRUTH);
      persons.forEach((p, i) => fillTruth(out, n, i, p, truth!.time));
      n++;
    },
    error: (e) => (failure = e),
  });
  for (let i = 0; i < emptyTicks; i++) for (const f of empty.nextTick().frames) frames$.next(f);
  const ticks = Math.round(r.seconds * 100);
  for (let i = 0; i < ticks && failure === null; i++) {
    const tick = sim.nextTick();
    truth = tick.truth;
    for (const f of tick.frames) frames$.next(f);
  }
  sub.unsubscribe();
  if (failure !== null) throw failure;
  return shrink(out, n);
}

/** The first n frames (copies, so the buffers can be transferred whole). */
function shrink(a: RefinerFrames, n: number): RefinerFrames {
  const cut = <T extends Float32Array | Uint8Array>(x: T): T => x.slice(0, (x.length / a.n) * n) as T;
  return {
    n,
    candidates: cut(a.candidates),
    candMask: cut(a.candMask),
    candPos: cut(a.candPos),
    truthMask: cut(a.truthMask),
    truthPos: cut(a.truthPos),
    truthHeading: cut(a.truthHeading),
    truthActivity: cut(a.truthActivity),
    truthFall: cut(a.truthFall),
    truthSkeleton: cut(a.truthSkeleton),
  };
}

/** The buffers of a result, to transfer from a worker. */
export function refinerBuffers(f: RefinerFrames): ArrayBuffer[] {
  return [f.candidates, f.candMask, f.candPos, f.truthMask, f.truthPos, f.truthHeading, f.truthActivity, f.truthFall, f.truthSkeleton].map(
    (a) => a.buffer as ArrayBuffer,
  );
}

/** The ONNX metadata a model trained on these files carries (meta.json `contract`; every value a string). */
export function refinerContract(): Record<string, string> {
  return {
    csipose_contract: REFINER_CONTRACT,
    feature_dim: String(REFINER_FEATURE_DIM),
    feature_names: REFINER_FEATURES.join(','),
    steps: String(REFINER_STEPS),
    stride_maps: String(REFINER_STRIDE),
    map_window_packets: String(SHORT_WINDOW),
    map_hop_packets: String(SHORT_HOP),
    max_candidates: String(MAX_CANDIDATES),
    cell_m: String(DEFAULT_CELL_M),
    heights_m: DEFAULT_HEIGHTS_M.join(','),
    activities: ACTIVITIES.join(','),
    fall_window_s: String(FALL_WINDOW_S),
    fall_trigger: String(REFINER_FALL_TRIGGER),
    keypoints: 'coco17',
  };
}

/** What {@link writeRefinerData} is told. */
export interface WriteRefinerDataOptions {
  /** Output directory (created). */
  dir: string;
  /** Scenarios per split. */
  splits: Partial<Record<'train' | 'val' | 'test', readonly ScenarioRecipe[]>>;
  /** Worker threads (0: this thread). */
  workers: number;
  seed: number;
  /** Free text: what made the files. */
  recipe: string;
  onProgress?: (split: string, done: number, total: number) => void;
}

/**
 * Simulates every split's scenarios (in worker threads, gathered in recipe order) and writes the
 * files of training/README.md: `meta.json` and per split the raw little-endian arrays.
 * @param o where, which scenarios, how many workers
 * @returns frames written per split
 */
export async function writeRefinerData(o: WriteRefinerDataOptions): Promise<Record<string, number>> {
  mkdirSync(o.dir, { recursive: true });
  const counts: Record<string, number> = {};
  for (const [split, recipes] of Object.entries(o.splits)) {
    if (!recipes) continue;
    const results = await mapJobs(refinerJobs(recipes), {
      workers: o.workers,
      run: runRefinerJob,
      spawn: () => new Worker(new URL('./refinerWorker.js', import.meta.url)),
      name: (i) => `scenario ${recipes[i]!.id}`,
      onResult: (done, total) => o.onProgress?.(split, done, total),
    });
    const d = join(o.dir, split);
    mkdirSync(d, { recursive: true });
    const n = results.reduce((s, f) => s + f.n, 0);
    const cat = <T extends Float32Array | Uint8Array | Int32Array>(get: (f: RefinerFrames) => T, make: (len: number) => T): T => {
      const len = results.reduce((s, f) => s + get(f).length, 0);
      const all = make(len);
      let at = 0;
      for (const f of results) {
        all.set(get(f) as never, at);
        at += get(f).length;
      }
      return all;
    };
    const write = (name: string, a: Float32Array | Uint8Array | Int32Array) =>
      writeFileSync(join(d, name), new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    write(
      'candidates.f32',
      cat(
        (f) => f.candidates,
        (l) => new Float32Array(l),
      ),
    );
    write(
      'cand_mask.u8',
      cat(
        (f) => f.candMask,
        (l) => new Uint8Array(l),
      ),
    );
    write(
      'cand_pos.f32',
      cat(
        (f) => f.candPos,
        (l) => new Float32Array(l),
      ),
    );
    write(
      'truth_mask.u8',
      cat(
        (f) => f.truthMask,
        (l) => new Uint8Array(l),
      ),
    );
    write(
      'truth_pos.f32',
      cat(
        (f) => f.truthPos,
        (l) => new Float32Array(l),
      ),
    );
    write(
      'truth_heading.f32',
      cat(
        (f) => f.truthHeading,
        (l) => new Float32Array(l),
      ),
    );
    write(
      'truth_activity.u8',
      cat(
        (f) => f.truthActivity,
        (l) => new Uint8Array(l),
      ),
    );
    write(
      'truth_fall.u8',
      cat(
        (f) => f.truthFall,
        (l) => new Uint8Array(l),
      ),
    );
    write(
      'truth_skeleton.f32',
      cat(
        (f) => f.truthSkeleton,
        (l) => new Float32Array(l),
      ),
    );
    const scenario = new Int32Array(n);
    let at = 0;
    results.forEach((f, i) => scenario.fill(recipes[i]!.id, at, (at += f.n)));
    write('scenario.i32', scenario);
    counts[split] = n;
  }
  const meta = {
    format: REFINER_DATA_FORMAT,
    steps: REFINER_STEPS,
    features: REFINER_FEATURE_DIM,
    feature_names: REFINER_FEATURES,
    step_s: (REFINER_STRIDE * SHORT_HOP) / 100,
    max_candidates: MAX_CANDIDATES,
    max_persons: MAX_TRUTH,
    activities: ACTIVITIES,
    keypoints: KEYPOINTS,
    fall_window_s: FALL_WINDOW_S,
    contract: refinerContract(),
    splits: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, { frames: v }])),
    seed: o.seed,
    recipe: o.recipe,
  };
  writeFileSync(join(o.dir, 'meta.json'), JSON.stringify(meta, null, 2) + '\n');
  return counts;
}
