/**
 * `npm run study:limits [-- --quick] [-- --json] [-- --model PATH]`: WHY the pose model is far from
 * its accuracy targets. Seven measurements on simulated VALIDATION scenarios (never TEST: the
 * held-out rooms and layouts stay unseen by anything that is tuned on these numbers):
 *
 * 1. bearing: do the features' rx-bearing values (OFFSETS.geometry, see `src/model/features.ts`)
 *    follow the true direction of the person from the receive array? Pearson correlation with the
 *    true sine of the angle from broadside, over all windows and over coherent ones.
 * 2. box and floor errors: the shipped model's box centre, box size and floor errors on one-person
 *    windows, next to a constant answer (image centre; the mean box size and floor position).
 * 3. smoothing: MPJPE and PCK@0.2 (torso) of slot 0's keypoints with exponential smoothing over
 *    time; if smoothing barely helps while removing each scenario's mean error does, the errors
 *    are per-scene biases, not jitter.
 * 4. geometry ablation: a small MLP regressing the floor position from the installer geometry
 *    alone, the CSI features alone, or both, fitted on one VALIDATION seed stream and scored on
 *    another: what knowing the antenna layout would buy.
 * 5. activity: a small classifier of the 5 activities and of "a fall in this window", from the
 *    features with and without a 5 s motion-energy history; and how far the motion energy of
 *    walking and falling frames rises above the still frames (the noise floor).
 * 6. site input: measurement 2's floor and box errors and measurement 3's raw MPJPE / PCK with the
 *    model told each scenario's own site (the default in 2 and 3, what an installer enters), no
 *    site, the configuration's default site for every room, and its own site with a measurement
 *    error: what `environment.site` buys and what a wrong one costs.
 * 7. calibration: could a short session in the room (one person standing at, or walking across,
 *    three known places) learn the room's floor-position bias? Its mean error is removed from the
 *    scenario's later windows, next to the same correction measured on the scenario's own first
 *    quarter (an oracle that knows the episode).
 *
 * All scenarios hold one person. They come from `makeRecipes(seed, { train: 0, val: N, ... })`
 * (VALIDATION stream of master seeds the shipped model was not trained with), in four pools with
 * fixed seeds; one data helper (`simulateScenario`) runs the simulator through the service's own
 * sanitise and window operators and the FeatureExtractor, exactly as training does, and keeps the
 * extra ground truth these measurements need. Every fit is seeded: two runs print the same numbers.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Subject, tap } from 'rxjs';
import type { CsiFrame } from '../../csi/frame.js';
import { sanitizePhase } from '../../../operators/sanitizePhase.js';
import { slidingWindow } from '../../../operators/slidingWindow.js';
import { FEATURE_DIM, FeatureExtractor, OFFSETS, WINDOW_FRAMES } from '../../model/features.js';
import { PoseModel, type PoseRunner } from '../../model/runtime.js';
import { simOptions } from '../dataset.js';
import { AdamW, Mlp } from '../mlp.js';
import { mapJobs, serveJobs } from '../workerPool.js';
import { isHeldOut, makeRecipes, PEOPLE_WEIGHTS, recipeSite, type ScenarioRecipe } from '../recipe.js';
import type { SiteGeometry } from '../../model/contract.js';
import { defaults } from '../../config/schema.js';
import { siteGeometry } from '../../config/site.js';
import type { ConfigSnapshot } from '../../config/store.js';
import { fillTargets, OUT, OUTPUT_DIM, VIEW } from '../targets.js';
import { PCK_ALPHA, torsoDiameter } from '../eval/pose.js';
import { N_KEYPOINTS } from '../../pose/types.js';
import { deriveSeed, Rng } from '../../sim/rng.js';
import { ACTIVITIES, type PersonSpec } from '../../sim/scenario.js';
import { CsiSimulator, type GroundTruth } from '../../sim/simulator.js';
import { argValue, fixed, machine, percent } from '../../../bench/lib.js';

/** Frames between the two frames of the motion energy (40 ms at 100 Hz). */
export const ENERGY_LAG = 4;
/** Blocks of the motion-energy history, oldest first. */
export const HISTORY_BLOCKS = 32;
/** Frames per history block: 32 x 16 frames = 5.12 s at 100 Hz. */
export const HISTORY_BLOCK_FRAMES = 16;
/** History columns: one ln(mean energy) per block, then the share of blocks already available. */
export const HISTORY_DIM = HISTORY_BLOCKS + 1;
/** A bearing value counts as coherent when its coherence (the next feature) is at least this. */
export const COHERENT = 0.5;
/** Smoothing factors of measurement 3 (state = alpha state + (1 - alpha) new; 0 = raw). */
export const SMOOTHING_ALPHAS: readonly number[] = [0, 0.5, 0.7, 0.8, 0.9, 0.95];
/** Activity index of a fall. */
const FALLING = ACTIVITIES.indexOf('falling');
/** Activities a person holds still in (the motion-energy floor). */
const STILL: ReadonlySet<number> = new Set((['standing', 'sitting', 'lying'] as const).map((a) => ACTIVITIES.indexOf(a)));
/** COCO indices of the shoulders and hips: their mean is the torso centre. */
const TORSO_POINTS: readonly number[] = [5, 6, 11, 12];
/** Installer geometry columns of measurement 4. */
export const GEOMETRY_COLUMNS: readonly string[] = ['room width', 'room depth', 'rx x', 'rx z', 'tx - rx x', 'tx - rx y', 'tx - rx z', 'tx on back wall'];

export type PoolName = 'pose' | 'fit' | 'activityFit' | 'activityScore';

/** One set of simulated one-person VALIDATION scenarios. */
export interface PoolSpec {
  /** Master seed handed to `makeRecipes` (its VALIDATION stream is used). */
  seed: number;
  scenarios: number;
  /** Simulated seconds per scenario. */
  seconds: number;
  /** Frames between window starts. */
  hop: number;
  /** Replaces the recipes' fall probability (more falls to learn and score). */
  fallProbability?: number;
  /** Keep the motion energy per frame and the history columns per window. */
  history: boolean;
}

/** A small MLP fit. */
export interface FitSettings {
  hidden: readonly number[];
  epochs: number;
  batch: number;
  dropout: number;
  lr: number;
  weightDecay: number;
}

/** How much to simulate and fit. */
export interface LimitsPlan {
  /**
   * pose: scored with the shipped model (measurements 1-3) and scoring pool of measurement 4, at the
   * pipeline's hop (12.5 windows/s) so smoothing sees the live rate; fit: what measurement 4's MLP
   * learns from; activityFit / activityScore: measurement 5, fall probability raised to 0.5 as in
   * the original diagnostics, so that falls are not a handful.
   */
  pools: Readonly<Record<PoolName, Readonly<PoolSpec>>>;
  geometryFit: Readonly<FitSettings>;
  activityFit: Readonly<FitSettings>;
}

const GEO_FIT: FitSettings = Object.freeze({ hidden: [256, 256], epochs: 15, batch: 64, dropout: 0.1, lr: 1e-3, weightDecay: 1e-4 });
const ACT_FIT: FitSettings = Object.freeze({ hidden: [128], epochs: 12, batch: 64, dropout: 0.2, lr: 1e-3, weightDecay: 1e-4 });

/** The default run: a few minutes on 2 cores. */
export const FULL_PLAN: Readonly<LimitsPlan> = Object.freeze({
  pools: Object.freeze({
    pose: Object.freeze({ seed: 9101, scenarios: 80, seconds: 16, hop: 8, history: false }),
    fit: Object.freeze({ seed: 9102, scenarios: 400, seconds: 8, hop: 16, history: false }),
    activityFit: Object.freeze({ seed: 9103, scenarios: 400, seconds: 8, hop: 16, fallProbability: 0.5, history: true }),
    activityScore: Object.freeze({ seed: 9104, scenarios: 120, seconds: 8, hop: 16, fallProbability: 0.5, history: true }),
  }),
  geometryFit: GEO_FIT,
  activityFit: ACT_FIT,
});

/** `--quick`: the same seeds, far fewer scenarios and epochs. */
export const QUICK_PLAN: Readonly<LimitsPlan> = Object.freeze({
  pools: Object.freeze({
    pose: Object.freeze({ ...FULL_PLAN.pools.pose, scenarios: 12, seconds: 12 }),
    fit: Object.freeze({ ...FULL_PLAN.pools.fit, scenarios: 48 }),
    activityFit: Object.freeze({ ...FULL_PLAN.pools.activityFit, scenarios: 48 }),
    activityScore: Object.freeze({ ...FULL_PLAN.pools.activityScore, scenarios: 24 }),
  }),
  geometryFit: Object.freeze({ ...GEO_FIT, epochs: 6 }),
  activityFit: Object.freeze({ ...ACT_FIT, epochs: 8 }),
});

// ---------------------------------------------------------------------------------------------
// Data

/**
 * The one-person VALIDATION recipes of a pool: the first `spec.scenarios` one-person recipes of
 * `makeRecipes(spec.seed, { train: 0, val: n, test: 0 })`, n just large enough.
 * @param spec the pool
 * @returns the recipes, with the pool's fall probability when it sets one
 * @throws Error when a recipe is not a VALIDATION one outside the held-out bands (cannot happen
 *   unless the recipe code changes)
 * @example poolRecipes(FULL_PLAN.pools.pose).length // 80
 */
export function poolRecipes(spec: PoolSpec): ScenarioRecipe[] {
  if (spec.scenarios <= 0) return [];
  let n = Math.ceil(spec.scenarios / PEOPLE_WEIGHTS[1]!);
  for (;;) {
    const one = makeRecipes(spec.seed, { train: 0, val: n, test: 0, seconds: spec.seconds }).filter((r) => r.people === 1);
    if (one.length >= spec.scenarios) {
      return one.slice(0, spec.scenarios).map((r) => {
        if (r.split !== 'val' || isHeldOut(r)) throw new Error(`scenario ${r.id} is not a VALIDATION scenario`);
        return spec.fallProbability === undefined ? r : { ...r, fallProbability: spec.fallProbability };
      });
    }
    n++;
  }
}

/** The windows of one simulated scenario, with the ground truth the measurements need. */
export interface ScenarioRows {
  /** Windows. */
  n: number;
  /** n x FEATURE_DIM feature rows. */
  features: Float32Array;
  /** n x OUTPUT_DIM training targets (targets.ts layout) of each window's last frame. */
  targets: Float32Array;
  /** n x 3: the person's torso centre (mean of shoulders and hips), room metres; NaN without a person. */
  torso: Float32Array;
  /** ACTIVITIES index of the person at the window's last frame; -1 without a person. */
  activity: Int8Array;
  /** 1 when the person was falling in any frame of the window. */
  fallInWindow: Uint8Array;
  /** n x HISTORY_DIM motion-energy history (empty unless the pool asks for it). */
  history: Float32Array;
  /** Per received frame: motion energy (NaN for the first ENERGY_LAG frames); empty unless asked. */
  energy: Float32Array;
  /** Per received frame: ACTIVITIES index (-1 without a person); empty unless asked. */
  frameActivity: Int8Array;
}

/**
 * Motion energy of a frame: sum |x_t - x_(t-lag)|^2 / sum |x_t|^2 over the finite samples of the
 * sanitised CSI (every link and subcarrier, re and im).
 */
function motionEnergy(cur: Float32Array, prev: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < cur.length; i++) {
    const a = cur[i]!;
    const b = prev[i]!;
    if (!Number.isFinite(a) || !Number.isFinite(b)) continue;
    num += (a - b) * (a - b);
    den += a * a;
  }
  return den > 0 ? num / den : NaN;
}

/**
 * Simulates one scenario (one person) through sanitise (phasor, packet scope) and window (size
 * WINDOW_FRAMES) into the FeatureExtractor, as `generateScenario` does for training, and keeps
 * per window the features, the targets, the torso centre, the activity and whether a fall was in
 * the window; with `history`, per frame the motion energy (frame vs ENERGY_LAG frames earlier) and
 * per window the ln mean energy of the last HISTORY_BLOCKS blocks of HISTORY_BLOCK_FRAMES frames
 * (0 for blocks before the stream had energies) and the share of blocks available.
 * @param r the recipe (one person)
 * @param hop frames between window starts
 * @param history keep the motion energy and the history columns
 * @param people instead of the recipe's generated person, these (measurement 7's calibration)
 * @param seed replaces the recipe's simulator seed
 * @returns the scenario's windows
 * @example simulateScenario(poolRecipes(FULL_PLAN.pools.fit)[0], 16, false).n // 43 for 8 s
 */
export function simulateScenario(r: ScenarioRecipe, hop: number, history: boolean, people?: PersonSpec[], seed?: number): ScenarioRows {
  const sim = new CsiSimulator({ ...simOptions(r, 1), ...(people ? { people } : {}), ...(seed !== undefined ? { seed } : {}) });
  const frames = Math.round(r.seconds * sim.rateHz);
  const cap = Math.max(0, Math.floor((frames - WINDOW_FRAMES) / hop) + 1);
  const features = new Float32Array(cap * FEATURE_DIM);
  const targets = new Float32Array(cap * OUTPUT_DIM);
  const torso = new Float32Array(cap * 3);
  const activity = new Int8Array(cap);
  const fallInWindow = new Uint8Array(cap);
  const hist = new Float32Array(history ? cap * HISTORY_DIM : 0);
  const energy = new Float32Array(history ? frames : 0).fill(NaN);
  const frameActivity = new Int8Array(frames).fill(-1);
  const camera = sim.scenario.camera;
  const fx = new FeatureExtractor();
  // The last ENERGY_LAG + 1 sanitised frames (copies: the operator's output is not ours to keep).
  const ring: Float32Array[] = [];
  const ringFrame = new Int32Array(ENERGY_LAG + 1).fill(-1);
  let frame = -1;
  let truth: GroundTruth | undefined;
  let n = 0;
  let failure: unknown;

  const recordEnergy = (f: CsiFrame) => {
    if (!history) return;
    const slot = frame % (ENERGY_LAG + 1);
    if (ring.length === 0) for (let k = 0; k <= ENERGY_LAG; k++) ring.push(new Float32Array(f.csi.length));
    if (ring[slot]!.length !== f.csi.length) return; // shape change: cannot happen in one simulation
    ring[slot]!.set(f.csi);
    ringFrame[slot] = frame;
    const lagSlot = (frame - ENERGY_LAG) % (ENERGY_LAG + 1);
    if (frame >= ENERGY_LAG && ringFrame[lagSlot] === frame - ENERGY_LAG) energy[frame] = motionEnergy(ring[slot]!, ring[lagSlot]!);
  };

  const writeHistory = (row: number) => {
    const o = row * HISTORY_DIM;
    let available = 0;
    for (let k = 0; k < HISTORY_BLOCKS; k++) {
      const start = frame + 1 - (HISTORY_BLOCKS - k) * HISTORY_BLOCK_FRAMES;
      let sum = 0;
      let ok = start >= 0;
      for (let t = start; ok && t < start + HISTORY_BLOCK_FRAMES; t++) {
        const e = energy[t]!;
        if (Number.isFinite(e)) sum += e;
        else ok = false;
      }
      if (ok) {
        hist[o + k] = Math.log(sum / HISTORY_BLOCK_FRAMES + 1e-5);
        available++;
      }
    }
    hist[o + HISTORY_BLOCKS] = available / HISTORY_BLOCKS;
  };

  const input = new Subject<CsiFrame>();
  const sub = input
    .pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), tap(recordEnergy), slidingWindow({ size: WINDOW_FRAMES, hop }))
    .subscribe({
      next(w) {
        if (n >= cap || !truth) return;
        fx.extract(w, features.subarray(n * FEATURE_DIM, (n + 1) * FEATURE_DIM));
        fillTargets(truth, camera, targets.subarray(n * OUTPUT_DIM, (n + 1) * OUTPUT_DIM));
        const p = truth.persons[0];
        if (p) {
          for (let d = 0; d < 3; d++) {
            let s = 0;
            for (const k of TORSO_POINTS) s += p.keypoints3d[3 * k + d]!;
            torso[n * 3 + d] = s / TORSO_POINTS.length;
          }
          activity[n] = ACTIVITIES.indexOf(p.activity);
        } else {
          torso.fill(NaN, n * 3, n * 3 + 3);
          activity[n] = -1;
        }
        for (let t = Math.max(0, frame - WINDOW_FRAMES + 1); t <= frame; t++) if (frameActivity[t] === FALLING) fallInWindow[n] = 1;
        if (history) writeHistory(n);
        n++;
      },
      error(e: unknown) {
        failure = e;
      },
    });
  for (let i = 0; i < frames && failure === undefined; i++) {
    const s = sim.next();
    truth = s.truth;
    frame = i;
    const p = truth.persons[0];
    frameActivity[i] = p ? ACTIVITIES.indexOf(p.activity) : -1;
    input.next(s.frame);
  }
  input.complete();
  sub.unsubscribe();
  if (failure !== undefined) throw failure;
  return {
    n,
    features: features.slice(0, n * FEATURE_DIM),
    targets: targets.slice(0, n * OUTPUT_DIM),
    torso: torso.slice(0, n * 3),
    activity: activity.slice(0, n),
    fallInWindow: fallInWindow.slice(0, n),
    history: hist.slice(0, n * HISTORY_DIM),
    energy,
    frameActivity: history ? frameActivity : new Int8Array(0),
  };
}

/** A simulated pool. */
export interface Pool {
  name: PoolName;
  spec: PoolSpec;
  recipes: ScenarioRecipe[];
  /** One per recipe, same order. */
  rows: ScenarioRows[];
  /** Windows over all scenarios. */
  windows: number;
}

const WORKER_TAG = 'csipose-bench-limits';
interface WorkerJob {
  recipe: ScenarioRecipe;
  hop: number;
  history: boolean;
}

const runJob = (j: WorkerJob): ScenarioRows => simulateScenario(j.recipe, j.hop, j.history);
const buffersOf = (r: ScenarioRows): ArrayBuffer[] =>
  [r.features, r.targets, r.torso, r.activity, r.fallInWindow, r.history, r.energy, r.frameActivity].map((a) => a.buffer as ArrayBuffer);

/** Worker thread side: this module, started by `simulatePool` with the worker tag. */
if (!isMainThread && (workerData as { tag?: string } | null)?.tag === WORKER_TAG && parentPort) serveJobs(parentPort, runJob, buffersOf);

/**
 * Simulates every recipe of a pool, on worker threads when asked (scenarios are independent and
 * gathered in recipe order, so the result does not depend on the number of workers).
 * @param name pool name
 * @param spec the pool
 * @param workers worker threads (0: in this thread; workers need the compiled `dist` module)
 * @param progress called after each scenario
 * @returns the pool
 */
export async function simulatePool(name: PoolName, spec: PoolSpec, workers: number, progress: (done: number, total: number) => void = () => undefined): Promise<Pool> {
  const recipes = poolRecipes(spec);
  const rows = await mapJobs(
    recipes.map((recipe) => ({ recipe, hop: spec.hop, history: spec.history })),
    {
      workers,
      run: runJob,
      spawn: () => new Worker(new URL(import.meta.url), { workerData: { tag: WORKER_TAG } }),
      name: (i) => `scenario ${recipes[i]?.id}`,
      onResult: progress,
    },
  );
  return { name, spec, recipes, rows, windows: rows.reduce((a, r) => a + r.n, 0) };
}

// ---------------------------------------------------------------------------------------------
// Statistics and the small MLP

/** Median and mean of a sample. */
export interface Summary {
  n: number;
  median: number;
  mean: number;
}

/** The q-quantile (linear interpolation) of values sorted ascending; NaN when empty. */
function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const p = q * (n - 1);
  const lo = Math.floor(p);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (p - lo) * (sorted[hi]! - sorted[lo]!);
}

const sortedCopy = (v: readonly number[]): Float64Array => Float64Array.from(v).sort();

/**
 * Median and mean.
 * @param v the values
 * @returns n, median and mean (NaN when empty)
 */
export function summarize(v: readonly number[]): Summary {
  let s = 0;
  for (const x of v) s += x;
  return { n: v.length, median: quantileSorted(sortedCopy(v), 0.5), mean: v.length ? s / v.length : NaN };
}

/**
 * Pearson correlation of paired samples.
 * @param x first values
 * @param y second values (same length)
 * @returns r in [-1, 1]; NaN for fewer than two pairs or a constant side
 */
export function pearson(x: readonly number[], y: readonly number[]): number {
  const n = x.length;
  if (n < 2) return NaN;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i]!;
    my += y[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const a = x[i]! - mx;
    const b = y[i]! - my;
    sxy += a * b;
    sxx += a * a;
    syy += b * b;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : NaN;
}

/** Column means and standard deviations of the fitting rows (sd 1 for constant columns). */
interface Standardizer {
  mu: Float64Array;
  sd: Float64Array;
}

function standardizer(x: Float32Array, n: number, d: number): Standardizer {
  const mu = new Float64Array(d);
  const sd = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) mu[j] += x[i * d + j]!;
  for (let j = 0; j < d; j++) mu[j] = n > 0 ? mu[j]! / n : 0;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) {
      const e = x[i * d + j]! - mu[j]!;
      sd[j] += e * e;
    }
  }
  for (let j = 0; j < d; j++) sd[j] = Math.sqrt(n > 0 ? sd[j]! / n : 0) || 1;
  return { mu, sd };
}

function standardize(x: Float32Array, n: number, d: number, s: Standardizer): Float32Array {
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) out[i * d + j] = (x[i * d + j]! - s.mu[j]!) / s.sd[j]!;
  return out;
}

/**
 * Writes dLoss/dOutput of one batch: `y` batch x outDim outputs, `rows` the dataset rows of the
 * batch, `dy` the gradient to fill (already divided by the batch size).
 */
type LossGradient = (y: Float32Array, rows: Int32Array, batch: number, dy: Float32Array) => void;

/**
 * Fits an MLP (Mlp + AdamW, linear learning-rate decay to 0) on standardised inputs.
 * @param x n x d inputs, standardised
 * @param n rows
 * @param d input width
 * @param outDim output width
 * @param s hidden sizes, epochs, batch, dropout, learning rate, weight decay
 * @param grad the loss gradient
 * @param seed initialisation seed (the shuffles and dropout use seed + 1)
 * @returns the fitted network
 */
function fitMlp(x: Float32Array, n: number, d: number, outDim: number, s: FitSettings, grad: LossGradient, seed: number): Mlp {
  const net = new Mlp([d, ...s.hidden, outDim], new Rng(seed));
  const opt = new AdamW(net);
  const rng = new Rng(seed + 1);
  const idx = Int32Array.from({ length: n }, (_, i) => i);
  const xb = new Float32Array(s.batch * d);
  const dy = new Float32Array(s.batch * outDim);
  for (let ep = 0; ep < s.epochs; ep++) {
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rng.uniform() * (i + 1));
      const t = idx[i]!;
      idx[i] = idx[j]!;
      idx[j] = t;
    }
    const lr = s.lr * (1 - ep / s.epochs);
    for (let at = 0; at < n; at += s.batch) {
      const b = Math.min(s.batch, n - at);
      const rows = idx.subarray(at, at + b);
      for (let k = 0; k < b; k++) xb.set(x.subarray(rows[k]! * d, (rows[k]! + 1) * d), k * d);
      const y = net.forward(xb, b, s.dropout, rng);
      dy.fill(0);
      grad(y, rows, b, dy);
      net.backward(dy, b);
      opt.step(lr, s.weightDecay);
    }
  }
  return net;
}

/** Outputs of a fitted network for n rows (copied), in chunks. */
function predict(net: Mlp, x: Float32Array, n: number): Float32Array {
  const d = net.inDim;
  const k = net.outDim;
  const out = new Float32Array(n * k);
  const CHUNK = 1024;
  for (let at = 0; at < n; at += CHUNK) {
    const b = Math.min(CHUNK, n - at);
    out.set(net.forward(x.subarray(at * d, (at + b) * d), b), at * k);
  }
  return out;
}

/** Concatenates per-row column blocks into one n x (sum of widths) matrix. */
function assemble(n: number, blocks: ReadonlyArray<{ data: Float32Array; width: number }>): { x: Float32Array; d: number } {
  const d = blocks.reduce((a, b) => a + b.width, 0);
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    let o = i * d;
    for (const b of blocks) {
      x.set(b.data.subarray(i * b.width, (i + 1) * b.width), o);
      o += b.width;
    }
  }
  return { x, d };
}

// ---------------------------------------------------------------------------------------------
// 1. Bearing

/** One view's rx bearing against the truth. */
export interface BearingRow {
  view: 'slow' | 'fast' | 'static';
  windows: number;
  /** Correlation with the true sine over all windows with a person. */
  r: number;
  /** Share of windows with coherence >= COHERENT. */
  coherentShare: number;
  /** Correlation over the coherent windows. */
  rCoherent: number;
  /** Median |feature - true sine| over the coherent windows. */
  medianAbsErrorCoherent: number;
}

/** Measurement 1. */
export interface BearingResult {
  scenarios: number;
  rows: BearingRow[];
}

/**
 * Correlation between the features' rx bearings and the true bearing of the person (3 x 3
 * scenarios of the pool). The receive array runs along +x at half-wavelength spacing, so the
 * inter-antenna phase gives the cosine of the angle between the array line and the direction to
 * the body: (torso x - rx x) / distance, the sine of the angle from broadside. That is the truth
 * here (torso = mean of shoulders and hips, 3-D).
 * @param pool the scored pool
 * @returns one row per view
 */
export function measureBearing(pool: Pool): BearingResult {
  const views = [
    ['slow', OFFSETS.geometry],
    ['fast', OFFSETS.geometry + 4],
    ['static', OFFSETS.geometry + 8],
  ] as const;
  const truth: number[] = [];
  const feat = views.map(() => ({ value: [] as number[], coherence: [] as number[] }));
  let scenarios = 0;
  pool.recipes.forEach((r, s) => {
    if (r.nRx !== 3 || r.nTx !== 3) return;
    scenarios++;
    const d = pool.rows[s]!;
    for (let i = 0; i < d.n; i++) {
      const tx = d.torso[i * 3]!;
      if (!Number.isFinite(tx)) continue;
      const dx = tx - r.rx.x;
      const dist = Math.hypot(dx, d.torso[i * 3 + 1]! - r.rx.y, d.torso[i * 3 + 2]! - r.rx.z);
      truth.push(dist > 0 ? dx / dist : 0);
      views.forEach(([, at], v) => {
        feat[v]!.value.push(d.features[i * FEATURE_DIM + at]!);
        feat[v]!.coherence.push(d.features[i * FEATURE_DIM + at + 1]!);
      });
    }
  });
  const rows = views.map(([view], v): BearingRow => {
    const { value, coherence } = feat[v]!;
    const ct: number[] = [];
    const cv: number[] = [];
    const err: number[] = [];
    for (let i = 0; i < value.length; i++) {
      if (!(coherence[i]! >= COHERENT)) continue;
      ct.push(truth[i]!);
      cv.push(value[i]!);
      err.push(Math.abs(value[i]! - truth[i]!));
    }
    return {
      view,
      windows: value.length,
      r: pearson(value, truth),
      coherentShare: value.length ? ct.length / value.length : NaN,
      rCoherent: pearson(cv, ct),
      medianAbsErrorCoherent: summarize(err).median,
    };
  });
  return { scenarios, rows };
}

// ---------------------------------------------------------------------------------------------
// 2 and 3. The shipped model's errors

/** One quantity of measurement 2. */
export interface ErrorRow {
  quantity: string;
  unit: 'px' | 'm';
  model: Summary;
  constant: Summary;
  /** What the constant answer is. */
  constantIs: string;
}

/** One row of measurement 3. */
export interface SmoothRow {
  label: string;
  /** Smoothing factor; NaN for the oracle row. */
  alpha: number;
  mpjpePx: number;
  pck: number;
  keypoints: number;
}

/** Measurements 2 and 3. */
export interface ModelErrorsResult {
  scenarios: number;
  windows: number;
  errors: ErrorRow[];
  smoothing: SmoothRow[];
}

const tgt = (d: ScenarioRows, i: number, at: number): number => d.targets[i * OUTPUT_DIM + at]!;

/**
 * Runs the model on every window of the pool and measures slot 0 against the one true person:
 * box centre, width and height (px of the 640 x 480 reference view; windows with a visible person),
 * floor x, y and distance (m); and keypoint MPJPE / PCK@0.2 (torso, the `src/training/eval/pose.ts`
 * convention) under exponential smoothing along each scenario's windows, plus the oracle that
 * removes each scenario's mean error per keypoint (what is left is the jitter).
 * @param model the model
 * @param pool the scored pool (one person, windows in time order)
 * @param fit the fitting pool: its mean box size and floor position are the constant answer
 * @param siteOf the site each scenario's windows run with (models with the `site` input); default
 *   the scenario's own
 * @returns the error tables
 */
export async function measureModelErrors(model: PoseRunner, pool: Pool, fit: Pool, siteOf: SiteOf = (r) => recipeSite(r)): Promise<ModelErrorsResult> {
  const W = VIEW.width;
  const H = VIEW.height;
  const P = model.maxPersons;
  const K = N_KEYPOINTS;
  // The constant answer: the fitting pool's mean box size and floor position.
  let cw = 0;
  let ch = 0;
  let nb = 0;
  let cx = 0;
  let cy = 0;
  let nf = 0;
  for (const d of fit.rows) {
    for (let i = 0; i < d.n; i++) {
      if (tgt(d, i, OUT.presence) < 0.5) continue;
      cx += tgt(d, i, OUT.floor);
      cy += tgt(d, i, OUT.floor + 1);
      nf++;
      if (tgt(d, i, OUT.boxes + 2) > 0) {
        cw += tgt(d, i, OUT.boxes + 2) * W;
        ch += tgt(d, i, OUT.boxes + 3) * H;
        nb++;
      }
    }
  }
  [cw, ch, cx, cy] = [cw / nb, ch / nb, cx / nf, cy / nf];
  const names = ['box centre u', 'box centre v', 'box width', 'box height', 'floor x', 'floor y', 'floor distance'] as const;
  const errs = names.map(() => ({ model: [] as number[], constant: [] as number[] }));
  const add = (k: number, m: number, c: number) => {
    errs[k]!.model.push(m);
    errs[k]!.constant.push(c);
  };

  const A = SMOOTHING_ALPHAS.length;
  const sErr = new Float64Array(A + 1);
  const sHit = new Float64Array(A + 1);
  const sN = new Float64Array(A + 1);
  const state = new Float64Array(A * K * 2);
  const truePx = new Float64Array(K * 2);
  const visible = new Uint8Array(K);
  const bbox = new Float64Array(4);
  const bias = new Float64Array(K * 2);
  const biasN = new Float64Array(K);
  const truePose = { id: 0, keypoints: truePx, visible, bbox };
  /** Loads window i's true keypoints; returns the torso diameter (0 when nothing is visible). */
  const loadTruth = (d: ScenarioRows, i: number): number => {
    for (let k = 0; k < K; k++) {
      const o = OUT.keypoints + k * 3;
      truePx[2 * k] = tgt(d, i, o) * W;
      truePx[2 * k + 1] = tgt(d, i, o + 1) * H;
      visible[k] = tgt(d, i, o + 2) > 0 ? 1 : 0;
    }
    for (let c = 0; c < 4; c++) bbox[c] = tgt(d, i, OUT.boxes + c) * (c % 2 === 0 ? W : H);
    return torsoDiameter(truePose);
  };
  const score = (slot: number, px: number, py: number, k: number, torso: number) => {
    const e = Math.hypot(px - truePx[2 * k]!, py - truePx[2 * k + 1]!);
    sErr[slot] += e;
    sN[slot]++;
    if (e <= PCK_ALPHA * torso) sHit[slot]++;
  };

  let windows = 0;
  for (const [s, d] of pool.rows.entries()) {
    if (d.n === 0) continue;
    const out = await model.run(d.features, d.n, { site: siteOf(pool.recipes[s]!) });
    bias.fill(0);
    biasN.fill(0);
    const kp = out.keypoints;
    for (let i = 0; i < d.n; i++) {
      // Slot 0's keypoints of window i start here.
      const k0 = i * P * K * 3;
      // Smoothing runs over every window, person or not, as a live smoother would.
      for (let a = 0; a < A; a++) {
        const alpha = SMOOTHING_ALPHAS[a]!;
        for (let k = 0; k < K; k++) {
          for (let c = 0; c < 2; c++) {
            const v = kp[k0 + k * 3 + c]! * (c === 0 ? W : H);
            const at = (a * K + k) * 2 + c;
            state[at] = i === 0 ? v : alpha * state[at]! + (1 - alpha) * v;
          }
        }
      }
      if (tgt(d, i, OUT.presence) < 0.5) continue;
      windows++;
      const fx = out.floor[i * P * 2]!;
      const fy = out.floor[i * P * 2 + 1]!;
      const tx = tgt(d, i, OUT.floor);
      const ty = tgt(d, i, OUT.floor + 1);
      add(4, Math.abs(fx - tx), Math.abs(cx - tx));
      add(5, Math.abs(fy - ty), Math.abs(cy - ty));
      add(6, Math.hypot(fx - tx, fy - ty), Math.hypot(cx - tx, cy - ty));
      const torso = loadTruth(d, i);
      if (bbox[2]! > 0) {
        const bo = i * P * 4;
        const [bx, by, bw, bh] = [out.boxes[bo]! * W, out.boxes[bo + 1]! * H, out.boxes[bo + 2]! * W, out.boxes[bo + 3]! * H];
        const tu = bbox[0]! + bbox[2]! / 2;
        const tv = bbox[1]! + bbox[3]! / 2;
        add(0, Math.abs(bx + bw / 2 - tu), Math.abs(W / 2 - tu));
        add(1, Math.abs(by + bh / 2 - tv), Math.abs(H / 2 - tv));
        add(2, Math.abs(bw - bbox[2]!), Math.abs(cw - bbox[2]!));
        add(3, Math.abs(bh - bbox[3]!), Math.abs(ch - bbox[3]!));
      }
      if (!(torso > 0)) continue;
      for (let k = 0; k < K; k++) {
        if (!visible[k]) continue;
        for (let a = 0; a < A; a++) score(a, state[(a * K + k) * 2]!, state[(a * K + k) * 2 + 1]!, k, torso);
        bias[2 * k] += kp[k0 + k * 3]! * W - truePx[2 * k]!;
        bias[2 * k + 1] += kp[k0 + k * 3 + 1]! * H - truePx[2 * k + 1]!;
        biasN[k]++;
      }
    }
    // Oracle: the raw keypoints minus this scenario's mean error per keypoint.
    for (let k = 0; k < K; k++) {
      if (biasN[k]! > 0) {
        bias[2 * k] /= biasN[k]!;
        bias[2 * k + 1] /= biasN[k]!;
      }
    }
    for (let i = 0; i < d.n; i++) {
      if (tgt(d, i, OUT.presence) < 0.5) continue;
      const torso = loadTruth(d, i);
      if (!(torso > 0)) continue;
      for (let k = 0; k < K; k++) {
        if (!visible[k]) continue;
        const o = (i * P * K + k) * 3;
        score(A, kp[o]! * W - bias[2 * k]!, kp[o + 1]! * H - bias[2 * k + 1]!, k, torso);
      }
    }
  }
  const constantIs = (k: number) =>
    k < 2 ? 'image centre' : k < 4 ? `mean ${names[k]!.slice(4)} of the fit pool (${(k === 2 ? cw : ch).toFixed(0)} px)` : `mean floor position of the fit pool (${cx.toFixed(2)}, ${cy.toFixed(2)}) m`;
  const errors = names.map((quantity, k): ErrorRow => ({
    quantity,
    unit: k < 4 ? 'px' : 'm',
    model: summarize(errs[k]!.model),
    constant: summarize(errs[k]!.constant),
    constantIs: constantIs(k),
  }));
  const smoothing = [...SMOOTHING_ALPHAS, NaN].map((alpha, a): SmoothRow => ({
    label: a === A ? 'raw minus each scenario\'s mean error per keypoint (oracle)' : alpha === 0 ? 'raw (no smoothing)' : `alpha ${alpha}`,
    alpha,
    mpjpePx: sN[a]! > 0 ? sErr[a]! / sN[a]! : NaN,
    pck: sN[a]! > 0 ? sHit[a]! / sN[a]! : NaN,
    keypoints: sN[a]!,
  }));
  return { scenarios: pool.rows.length, windows, errors, smoothing };
}

// ---------------------------------------------------------------------------------------------
// 6. Site input

/** The site a scenario's windows run with. */
export type SiteOf = (r: ScenarioRecipe) => SiteGeometry | null;

/** The configuration's default site (the simulator's default room), as if switched on unmeasured. */
function configDefaultSite(): SiteGeometry {
  const c = defaults();
  return siteGeometry({ ...c, environment: { ...c.environment, site: { ...c.environment.site, known: true } } } as ConfigSnapshot)!;
}

/** The scenario's own site with every value off by N(0, sd) metres (seeded per scenario). */
function misMeasured(sd: number): SiteOf {
  return (r) => {
    const g = new Rng(deriveSeed(r.seed, 41));
    const j = (v: number) => v + g.gaussian(0, sd);
    const s = recipeSite(r);
    return {
      roomWidth: j(s.roomWidth),
      roomDepth: j(s.roomDepth),
      receiver: { x: j(s.receiver.x), y: j(s.receiver.y), z: j(s.receiver.z) },
      transmitter: { x: j(s.transmitter.x), y: j(s.transmitter.y), z: j(s.transmitter.z) },
    };
  };
}

/** The site variants of measurement 6, the first being what measurements 2 and 3 use. */
export const SITE_VARIANTS: ReadonlyArray<{ label: string; siteOf: SiteOf }> = Object.freeze([
  { label: "own site (what an installer enters; measurements 2 and 3)", siteOf: (r: ScenarioRecipe) => recipeSite(r) },
  { label: 'unknown (environment.site.known false)', siteOf: () => null },
  { label: "the configuration's default site (6 x 5 m room) for every room", siteOf: () => configDefaultSite() },
  { label: 'own site, each value off by N(0, 0.25 m)', siteOf: misMeasured(0.25) },
  { label: 'own site, each value off by N(0, 0.5 m)', siteOf: misMeasured(0.5) },
  { label: 'own site, each value off by N(0, 1 m)', siteOf: misMeasured(1) },
]);

/** One row of measurement 6. */
export interface SiteRow {
  label: string;
  floor: Summary;
  boxU: Summary;
  mpjpePx: number;
  pck: number;
}

/** Measurement 6; `rows` is empty for a model without the `site` input. */
export interface SiteResult {
  siteInput: boolean;
  rows: SiteRow[];
}

/**
 * Measurement 2's floor and box-centre errors and measurement 3's raw keypoint scores, once per
 * site variant (`SITE_VARIANTS`).
 * @param model the model
 * @param pool the scored pool
 * @param fit the fitting pool (measurement 2's constants; not reported here)
 * @returns one row per variant, or none when the model has no `site` input
 */
export async function measureSite(model: PoseRunner, pool: Pool, fit: Pool): Promise<SiteResult> {
  if (!model.metadata.site_dim) return { siteInput: false, rows: [] };
  const rows: SiteRow[] = [];
  for (const v of SITE_VARIANTS) {
    const e = await measureModelErrors(model, pool, fit, v.siteOf);
    const err = (q: string) => e.errors.find((x) => x.quantity === q)!.model;
    const raw = e.smoothing[0]!;
    rows.push({ label: v.label, floor: err('floor distance'), boxU: err('box centre u'), mpjpePx: raw.mpjpePx, pck: raw.pck });
  }
  return { siteInput: true, rows };
}

// ---------------------------------------------------------------------------------------------
// 7. Calibration

/** Seconds the calibrating person spends at each place. */
export const CALIBRATION_SECONDS = 6;
/** The calibration places, as fractions of the room width and depth. */
export const CALIBRATION_SPOTS: ReadonlyArray<readonly [number, number]> = Object.freeze([
  [0.5, 0.5],
  [0.3, 0.35],
  [0.7, 0.65],
]);
/** Half the walk across a calibration place, metres (walking from x - this to x + this and back). */
const CALIBRATION_SWING_M = 0.6;

/** One row of measurement 7: floor errors of the scored windows after a correction. */
export interface CalibrationRow {
  label: string;
  floor: Summary;
}

export interface CalibrationResult {
  scenarios: number;
  /** Windows scored (the last three quarters of each scenario, with the person). */
  windows: number;
  /** Windows of the calibration sessions. */
  calibrationWindows: number;
  rows: CalibrationRow[];
}

/**
 * Measurement 7. Per scenario of the pool: calibration sessions in the same room and layout (a
 * simulated person of its own seed standing still at each CALIBRATION_SPOTS place, or walking
 * across it and back, for CALIBRATION_SECONDS); the mean of (model floor - known place) over their
 * windows is the room's offset. The scored windows are the last three quarters of the scenario's
 * windows with the person; the first quarter gives the oracle's offset (model floor - true floor).
 * Slot 0 against the one person, the model told the room's own site, as in measurement 2.
 * @param model the model
 * @param pool the scored pool (one person)
 * @returns floor errors raw and after each correction
 */
export async function measureCalibration(model: PoseRunner, pool: Pool): Promise<CalibrationResult> {
  const P = model.maxPersons;
  const hop = pool.spec.hop;
  const kinds = ['raw', 'stand', 'walk', 'episode'] as const;
  const errors: Record<(typeof kinds)[number], number[]> = { raw: [], stand: [], walk: [], episode: [] };
  let calibrationWindows = 0;
  for (const [s, d] of pool.rows.entries()) {
    const r = pool.recipes[s]!;
    const site = recipeSite(r);
    const session = async (walk: boolean): Promise<[number, number]> => {
      let sx = 0;
      let sy = 0;
      let n = 0;
      for (const [j, [fx, fy]] of CALIBRATION_SPOTS.entries()) {
        const x = fx * r.room.width;
        const y = fy * r.room.depth;
        const w = CALIBRATION_SWING_M;
        const person: PersonSpec = walk
          ? {
              x: x - w,
              y,
              script: [
                { at: 0.2, action: 'walk', to: { x: x + w, y } },
                { at: 2.5, action: 'walk', to: { x: x - w, y } },
                { at: 4.8, action: 'walk', to: { x: x + w, y } },
              ],
            }
          : { x, y, script: [] };
        const c = simulateScenario({ ...r, seconds: CALIBRATION_SECONDS }, hop, false, [person], deriveSeed(r.seed, (walk ? 60 : 50) + j));
        if (c.n === 0) continue;
        const out = await model.run(c.features, c.n, { site });
        for (let i = 0; i < c.n; i++) {
          sx += out.floor[i * P * 2]! - x;
          sy += out.floor[i * P * 2 + 1]! - y;
          n++;
        }
      }
      calibrationWindows += n;
      return n > 0 ? [sx / n, sy / n] : [0, 0];
    };
    const stand = await session(false);
    const walk = await session(true);
    if (d.n === 0) continue;
    const out = await model.run(d.features, d.n, { site });
    const rows: number[] = [];
    for (let i = 0; i < d.n; i++) if (tgt(d, i, OUT.presence) >= 0.5) rows.push(i);
    const q = Math.floor(rows.length / 4);
    const ex = (i: number) => out.floor[i * P * 2]! - tgt(d, i, OUT.floor);
    const ey = (i: number) => out.floor[i * P * 2 + 1]! - tgt(d, i, OUT.floor + 1);
    let ox = 0;
    let oy = 0;
    for (const i of rows.slice(0, q)) {
      ox += ex(i) / q;
      oy += ey(i) / q;
    }
    const offsets: Record<(typeof kinds)[number], readonly [number, number]> = { raw: [0, 0], stand, walk, episode: [ox, oy] };
    for (const i of rows.slice(q)) for (const k of kinds) errors[k].push(Math.hypot(ex(i) - offsets[k][0], ey(i) - offsets[k][1]));
  }
  const labels: Record<(typeof kinds)[number], string> = {
    raw: 'none (the model as it is, own site)',
    stand: `offset from a person standing still ${CALIBRATION_SECONDS} s at each of ${CALIBRATION_SPOTS.length} known places`,
    walk: `offset from a person walking ${2 * CALIBRATION_SWING_M} m across each place and back, ${CALIBRATION_SECONDS} s each`,
    episode: "offset from the scenario's own first quarter, true positions known (oracle)",
  };
  return {
    scenarios: pool.rows.length,
    windows: errors.raw.length,
    calibrationWindows,
    rows: kinds.map((k) => ({ label: labels[k], floor: summarize(errors[k]) })),
  };
}

// ---------------------------------------------------------------------------------------------
// 4. Geometry ablation

/** One input set of measurement 4. */
export interface GeometryRow {
  inputs: 'constant' | 'geometry' | 'features' | 'features + geometry';
  /** Floor distance error, m. */
  error: Summary;
  meanAbsX: number;
  meanAbsY: number;
}

/** Measurement 4. */
export interface GeometryResult {
  fitWindows: number;
  scoreWindows: number;
  rows: GeometryRow[];
}

/** Rows of a pool with a person: features, installer geometry, floor target relative to the receiver. */
function floorRows(pool: Pool): { n: number; features: Float32Array; geometry: Float32Array; target: Float32Array } {
  const G = GEOMETRY_COLUMNS.length;
  let n = 0;
  for (const d of pool.rows) for (let i = 0; i < d.n; i++) if (tgt(d, i, OUT.presence) >= 0.5) n++;
  const features = new Float32Array(n * FEATURE_DIM);
  const geometry = new Float32Array(n * G);
  const target = new Float32Array(n * 2);
  let k = 0;
  pool.rows.forEach((d, s) => {
    const r = pool.recipes[s]!;
    // Relative to the receiver, which the camera sits beside: what an installer would measure.
    const g = [r.room.width, r.room.depth, r.rx.x, r.rx.z, r.tx.x - r.rx.x, r.tx.y - r.rx.y, r.tx.z - r.rx.z, r.tx.wall === 'back' ? 1 : 0];
    for (let i = 0; i < d.n; i++) {
      if (tgt(d, i, OUT.presence) < 0.5) continue;
      features.set(d.features.subarray(i * FEATURE_DIM, (i + 1) * FEATURE_DIM), k * FEATURE_DIM);
      geometry.set(g, k * G);
      target[2 * k] = tgt(d, i, OUT.floor) - r.rx.x;
      target[2 * k + 1] = tgt(d, i, OUT.floor + 1) - r.rx.y;
      k++;
    }
  });
  return { n, features, geometry, target };
}

/**
 * Fits the floor position (relative to the receiver) from installer geometry, features, or both
 * on the fitting pool and scores it on the scored pool (different VALIDATION seeds). Huber loss
 * (delta 1 m). The constant row answers the fitting rows' mean.
 * @param fit fitting pool
 * @param score scored pool
 * @param s MLP settings
 * @returns one row per input set
 */
export function measureGeometry(fit: Pool, score: Pool, s: FitSettings): GeometryResult {
  const A = floorRows(fit);
  const B = floorRows(score);
  const G = GEOMETRY_COLUMNS.length;
  const rowOf = (inputs: GeometryRow['inputs'], pred: (i: number, c: number) => number): GeometryRow => {
    const dist: number[] = [];
    let ax = 0;
    let ay = 0;
    for (let i = 0; i < B.n; i++) {
      const ex = pred(i, 0) - B.target[2 * i]!;
      const ey = pred(i, 1) - B.target[2 * i + 1]!;
      ax += Math.abs(ex);
      ay += Math.abs(ey);
      dist.push(Math.hypot(ex, ey));
    }
    return { inputs, error: summarize(dist), meanAbsX: ax / B.n, meanAbsY: ay / B.n };
  };
  let mx = 0;
  let my = 0;
  for (let i = 0; i < A.n; i++) {
    mx += A.target[2 * i]! / A.n;
    my += A.target[2 * i + 1]! / A.n;
  }
  const rows: GeometryRow[] = [rowOf('constant', (_, c) => (c === 0 ? mx : my))];
  const sets: Array<[GeometryRow['inputs'], boolean, boolean]> = [
    ['geometry', false, true],
    ['features', true, false],
    ['features + geometry', true, true],
  ];
  for (const [inputs, useFeatures, useGeometry] of sets) {
    const blocks = (S: typeof A) => [
      ...(useFeatures ? [{ data: S.features, width: FEATURE_DIM }] : []),
      ...(useGeometry ? [{ data: S.geometry, width: G }] : []),
    ];
    const a = assemble(A.n, blocks(A));
    const b = assemble(B.n, blocks(B));
    const st = standardizer(a.x, A.n, a.d);
    const grad: LossGradient = (y, rows, batch, dy) => {
      for (let k = 0; k < batch; k++) {
        for (let c = 0; c < 2; c++) {
          const e = y[k * 2 + c]! - A.target[rows[k]! * 2 + c]!;
          dy[k * 2 + c] = Math.max(-1, Math.min(1, e)) / batch;
        }
      }
    };
    const net = fitMlp(standardize(a.x, A.n, a.d, st), A.n, a.d, 2, s, grad, 1);
    const y = predict(net, standardize(b.x, B.n, b.d, st), B.n);
    rows.push(rowOf(inputs, (i, c) => y[i * 2 + c]!));
  }
  return { fitWindows: A.n, scoreWindows: B.n, rows };
}

// ---------------------------------------------------------------------------------------------
// 5. Activity

/** One input set of measurement 5. */
export interface ActivityVariant {
  inputs: 'features' | 'features + 5 s motion history';
  accuracy: number;
  /** [true activity][predicted activity] window counts, ACTIVITIES order. */
  confusion: number[][];
  fallPrecision: number;
  fallRecall: number;
  /** Windows with a fall in them (scored pool). */
  fallWindows: number;
}

/** Motion energy of one activity's frames relative to the same scenario's still frames. */
export interface EnergyRow {
  activity: string;
  frames: number;
  /** Quantiles of 10 log10(energy / the scenario's median still energy), dB. */
  p10Db: number;
  medianDb: number;
  p90Db: number;
  /** Share of the frames above the 95th percentile of all still frames' ratios. */
  aboveStillP95: number;
}

/** Measurement 5. */
export interface ActivityResult {
  fitWindows: number;
  scoreWindows: number;
  variants: ActivityVariant[];
  energyScenarios: number;
  energy: EnergyRow[];
}

/** Rows of a pool with a person: features, history, activity, fall in window. */
function activityRows(pool: Pool): { n: number; features: Float32Array; history: Float32Array; label: Int8Array; fall: Uint8Array } {
  let n = 0;
  for (const d of pool.rows) for (let i = 0; i < d.n; i++) if (d.activity[i]! >= 0) n++;
  const features = new Float32Array(n * FEATURE_DIM);
  const history = new Float32Array(n * HISTORY_DIM);
  const label = new Int8Array(n);
  const fall = new Uint8Array(n);
  let k = 0;
  for (const d of pool.rows) {
    for (let i = 0; i < d.n; i++) {
      if (d.activity[i]! < 0) continue;
      features.set(d.features.subarray(i * FEATURE_DIM, (i + 1) * FEATURE_DIM), k * FEATURE_DIM);
      if (d.history.length) history.set(d.history.subarray(i * HISTORY_DIM, (i + 1) * HISTORY_DIM), k * HISTORY_DIM);
      label[k] = d.activity[i]!;
      fall[k] = d.fallInWindow[i]!;
      k++;
    }
  }
  return { n, features, history, label, fall };
}

/**
 * Fits a classifier (5-way softmax for the activity plus a sigmoid for "a fall in this window") on
 * the fitting pool and scores it on the scored pool, from the features alone and with the motion
 * history; and the motion energy per activity relative to still frames over both pools.
 * @param fit fitting pool (with history)
 * @param score scored pool (with history)
 * @param s MLP settings
 * @returns accuracy, confusion, fall-in-window precision and recall, energy rows
 */
export function measureActivity(fit: Pool, score: Pool, s: FitSettings): ActivityResult {
  const A = activityRows(fit);
  const B = activityRows(score);
  const C = ACTIVITIES.length;
  const out = C + 1;
  const variants: ActivityVariant[] = [];
  for (const inputs of ['features', 'features + 5 s motion history'] as const) {
    const blocks = (S: typeof A) => [{ data: S.features, width: FEATURE_DIM }, ...(inputs === 'features' ? [] : [{ data: S.history, width: HISTORY_DIM }])];
    const a = assemble(A.n, blocks(A));
    const b = assemble(B.n, blocks(B));
    const st = standardizer(a.x, A.n, a.d);
    const e = new Float64Array(C);
    const grad: LossGradient = (y, rows, batch, dy) => {
      for (let k = 0; k < batch; k++) {
        const o = k * out;
        let m = -Infinity;
        for (let c = 0; c < C; c++) m = Math.max(m, y[o + c]!);
        let z = 0;
        for (let c = 0; c < C; c++) {
          e[c] = Math.exp(y[o + c]! - m);
          z += e[c]!;
        }
        const label = A.label[rows[k]!]!;
        for (let c = 0; c < C; c++) dy[o + c] = (e[c]! / z - (c === label ? 1 : 0)) / batch;
        dy[o + C] = (1 / (1 + Math.exp(-y[o + C]!)) - A.fall[rows[k]!]!) / batch;
      }
    };
    const net = fitMlp(standardize(a.x, A.n, a.d, st), A.n, a.d, out, s, grad, 1);
    const y = predict(net, standardize(b.x, B.n, b.d, st), B.n);
    const confusion = ACTIVITIES.map(() => new Array<number>(C).fill(0));
    let right = 0;
    let tp = 0;
    let fp = 0;
    let fn = 0;
    for (let i = 0; i < B.n; i++) {
      let best = 0;
      for (let c = 1; c < C; c++) if (y[i * out + c]! > y[i * out + best]!) best = c;
      confusion[B.label[i]!]![best]!++;
      if (best === B.label[i]) right++;
      const said = y[i * out + C]! > 0;
      if (said && B.fall[i]) tp++;
      else if (said) fp++;
      else if (B.fall[i]) fn++;
    }
    variants.push({ inputs, accuracy: right / B.n, confusion, fallPrecision: tp / (tp + fp), fallRecall: tp / (tp + fn), fallWindows: tp + fn });
  }

  // Motion energy relative to each scenario's own still frames (its noise floor).
  const ratios = ACTIVITIES.map(() => [] as number[]);
  let energyScenarios = 0;
  for (const d of [...fit.rows, ...score.rows]) {
    const still: number[] = [];
    for (let t = 0; t < d.energy.length; t++) if (STILL.has(d.frameActivity[t]!) && Number.isFinite(d.energy[t]!)) still.push(d.energy[t]!);
    const floor = summarize(still).median;
    if (!(floor > 0)) continue;
    energyScenarios++;
    for (let t = 0; t < d.energy.length; t++) {
      const a = d.frameActivity[t]!;
      const v = d.energy[t]!;
      if (a >= 0 && Number.isFinite(v) && v > 0) ratios[a]!.push(10 * Math.log10(v / floor));
    }
  }
  const stillAll = sortedCopy([...STILL].flatMap((a) => ratios[a]!));
  const p95 = quantileSorted(stillAll, 0.95);
  const energy = ACTIVITIES.map((activity, a): EnergyRow => {
    const v = sortedCopy(ratios[a]!);
    let above = 0;
    for (const x of v) if (x > p95) above++;
    return { activity, frames: v.length, p10Db: quantileSorted(v, 0.1), medianDb: quantileSorted(v, 0.5), p90Db: quantileSorted(v, 0.9), aboveStillP95: v.length ? above / v.length : NaN };
  });
  return { fitWindows: A.n, scoreWindows: B.n, variants, energyScenarios, energy };
}

// ---------------------------------------------------------------------------------------------
// The run and the report

/** A pool as the report lists it. */
export interface PoolSummary {
  name: PoolName;
  seed: number;
  scenarios: number;
  seconds: number;
  hop: number;
  fallProbability: number | null;
  windows: number;
  /** Recipes of each antenna layout, e.g. { '3x3': 60, ... }. */
  layouts: Record<string, number>;
}

/** Everything one run measured. */
export interface LimitsReport {
  plan: LimitsPlan;
  modelPath: string;
  modelVersion: string;
  trainedOn: string;
  contractTestModel: boolean;
  seconds: number;
  pools: PoolSummary[];
  bearing: BearingResult;
  model: ModelErrorsResult;
  geometry: GeometryResult;
  activity: ActivityResult;
  site: SiteResult;
  calibration: CalibrationResult;
  /** Set by the command: the model's training report rebuilt and compared (see `checkSidecar`). */
  seedCheck?: { trainAndValScenarios: number; sharedSeeds: number };
}

/** Options of `runLimits`. */
export interface RunOptions {
  /** Worker threads for the simulation (0: this thread). */
  workers: number;
  /** Called with a progress line. */
  progress?: (msg: string) => void;
}

const POOL_ORDER: readonly PoolName[] = ['pose', 'fit', 'activityFit', 'activityScore'];

/**
 * Runs the seven measurements.
 * @param plan pools and fit settings
 * @param model the pose model (the caller loads and releases it)
 * @param modelPath where it came from, for the report
 * @param opts workers and progress
 * @returns the report
 * @example
 * const model = await PoseModel.load('models/csipose-pose.onnx', { thread: 'inline', featureDim: FEATURE_DIM });
 * const report = await runLimits(QUICK_PLAN, model, 'models/csipose-pose.onnx', { workers: 2 });
 * process.stdout.write(markdown(report));
 */
export async function runLimits(plan: LimitsPlan, model: PoseRunner, modelPath: string, opts: RunOptions): Promise<LimitsReport> {
  const t0 = performance.now();
  const say = opts.progress ?? (() => undefined);
  const pools = {} as Record<PoolName, Pool>;
  for (const name of POOL_ORDER) {
    const t = performance.now();
    pools[name] = await simulatePool(name, plan.pools[name], opts.workers);
    say(`pool ${name}: ${pools[name].recipes.length} scenarios, ${pools[name].windows} windows, ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  let t = performance.now();
  const bearing = measureBearing(pools.pose);
  const modelErrors = await measureModelErrors(model, pools.pose, pools.fit);
  say(`bearing and model errors: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const geometry = measureGeometry(pools.fit, pools.pose, plan.geometryFit);
  say(`geometry ablation: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const activity = measureActivity(pools.activityFit, pools.activityScore, plan.activityFit);
  say(`activity: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const site = await measureSite(model, pools.pose, pools.fit);
  say(`site input: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const calibration = await measureCalibration(model, pools.pose);
  say(`calibration: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const meta = model.metadata;
  return {
    plan,
    modelPath,
    modelVersion: meta.model_version,
    trainedOn: meta.trained_on,
    contractTestModel: meta.trained_on === 'unit-test' || meta.model_version === 'test-1',
    seconds: (performance.now() - t0) / 1000,
    pools: POOL_ORDER.map((name): PoolSummary => {
      const p = pools[name];
      const layouts: Record<string, number> = {};
      for (const r of p.recipes) layouts[`${r.nRx}x${r.nTx}`] = (layouts[`${r.nRx}x${r.nTx}`] ?? 0) + 1;
      return {
        name,
        seed: p.spec.seed,
        scenarios: p.recipes.length,
        seconds: p.spec.seconds,
        hop: p.spec.hop,
        fallProbability: p.spec.fallProbability ?? null,
        windows: p.windows,
        layouts,
      };
    }),
    bearing,
    model: modelErrors,
    geometry,
    activity,
    site,
    calibration,
  };
}


/** Section titles, in report order (the test checks for them). */
export const SECTIONS = Object.freeze({
  bearing: '1. Bearing features vs the true bearing',
  errors: '2. Box and floor errors of the model',
  smoothing: '3. Keypoint errors under temporal smoothing',
  geometry: '4. Floor position: what antenna geometry would buy',
  activity: '5. Activity and falls from the features',
  energy: '5b. Motion energy per activity',
  site: '6. The site input: what the installer\'s geometry buys',
  calibration: '7. Calibration: can a short session learn a room\'s bias?',
});

/**
 * The report as Markdown: what the numbers are, then one small table per measurement.
 * @param r the report
 * @returns the Markdown text
 */
export function markdown(r: LimitsReport): string {
  const m = machine();
  const L: string[] = [];
  const poolOf = (name: PoolName) => r.pools.find((p) => p.name === name)!;
  const describe = (name: PoolName) => {
    const p = poolOf(name);
    return `${p.scenarios} scenarios (seed ${p.seed})`;
  };
  L.push('# csipose limits: why the pose model is far from its targets');
  L.push('');
  if (r.contractTestModel) {
    L.push('**CONTRACT TEST MODEL (never trained): the model-based numbers (sections 2 and 3) are meaningless; they only show that the benchmark runs.**');
    L.push('');
  }
  L.push(
    '**All numbers: simulated VALIDATION scenarios, one person each**, from the VALIDATION split of the training recipe ' +
      '(`makeRecipes(seed, { train: 0, val: N, test: 0 })` with the fixed master seeds below), never TEST. Fits are seeded, so a rerun ' +
      'prints the same numbers. Real CSI will do worse.',
  );
  L.push('');
  L.push(`- node ${m.node}, ${m.cpu}; run time ${r.seconds.toFixed(1)} s`);
  L.push(`- model ${r.modelPath} (model_version ${r.modelVersion || '?'}, trained_on ${r.trainedOn || '?'})`);
  if (r.seedCheck) {
    L.push(
      r.seedCheck.trainAndValScenarios > 0
        ? `- the model's ${r.seedCheck.trainAndValScenarios} training and validation scenarios, rebuilt from its training report: ${r.seedCheck.sharedSeeds} share a simulator seed with these`
        : "- the model's training report could not be rebuilt: the seed overlap was not checked",
    );
  }
  L.push('');
  L.push('| pool | used for | master seed | scenarios | s each | hop | fall probability | windows | antenna layouts |');
  L.push('|---|---|---:|---:|---:|---:|---|---:|---|');
  const use: Record<PoolName, string> = { pose: '1, 2, 3; scores 4', fit: 'fits 4; constants of 2', activityFit: 'fits 5', activityScore: 'scores 5' };
  for (const p of r.pools) {
    const layouts = Object.entries(p.layouts)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    L.push(`| ${p.name} | ${use[p.name]} | ${p.seed} | ${p.scenarios} | ${p.seconds} | ${p.hop} | ${p.fallProbability ?? 'recipe (0.05-0.25)'} | ${p.windows} | ${layouts} |`);
  }
  L.push('');

  /** One measurement: its title, what it shows in one sentence, the table, then how it was measured. */
  const section = (title: string, shows: string, table: readonly string[], how: string) => {
    L.push(`## ${title}`, '', `**Shows:** ${shows}`, '', ...table, '', how, '');
  };
  const row = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  const align = (left: number, right: number) => `|${[...Array<string>(left).fill('---'), ...Array<string>(right).fill('---:')].join('|')}|`;

  const b = r.bearing;
  section(
    SECTIONS.bearing,
    'how closely the rx-bearing features follow the direction of the person from the receiver (r near 1: the direction is in the features; the static view is the line of sight and should not follow the person).',
    [
      row(['view', 'windows', 'r (all)', 'coherent share', 'r (coherent)', 'median abs error (coherent)']),
      align(1, 5),
      ...b.rows.map((x) =>
        row([`${x.view} (offset ${OFFSETS.geometry + (x.view === 'slow' ? 0 : x.view === 'fast' ? 4 : 8)})`, x.windows, fixed(x.r), percent(x.coherentShare), fixed(x.rCoherent), fixed(x.medianAbsErrorCoherent)]),
      ),
    ],
    `How: Pearson r between the feature and the true sine of the angle from the receive array's broadside to the person's torso centre (3-D), ` +
      `over all windows and over coherent ones (coherence >= ${COHERENT}); pool pose, its ${b.scenarios} scenarios with 3x3 antennas.`,
  );

  const e = r.model;
  const d = (x: ErrorRow) => (x.unit === 'px' ? 1 : 2);
  section(
    SECTIONS.errors,
    'how much better than a constant answer that knows nothing of the scene the model places the person (where it is barely better, it has not learnt where the person is).',
    [
      row(['quantity', 'unit', 'windows', 'model median', 'model mean', 'constant median', 'constant mean', 'constant']),
      `|---|---|${Array<string>(5).fill('---:').join('|')}|---|`,
      ...e.errors.map((x) => row([x.quantity, x.unit, x.model.n, fixed(x.model.median, d(x)), fixed(x.model.mean, d(x)), fixed(x.constant.median, d(x)), fixed(x.constant.mean, d(x)), x.constantIs])),
    ],
    `How: the model's slot 0 against the one true person, absolute errors; pool pose (${describe('pose')}, ${e.windows} windows); px of the ${VIEW.width} x ${VIEW.height} view, ` +
      'box rows on the windows where the person is visible.',
  );

  const hop = poolOf('pose').hop;
  section(
    SECTIONS.smoothing,
    "whether the keypoint errors are jitter (smoothing would remove them) or per-scene biases (only removing each scenario's mean error does).",
    [row(['keypoints', 'MPJPE px', 'PCK@0.2 torso', 'scored keypoints']), align(1, 3), ...e.smoothing.map((x) => row([x.label, fixed(x.mpjpePx, 1), fixed(x.pck), x.keypoints]))],
    `How: slot 0's keypoints smoothed exponentially along each scenario's windows (hop ${hop} frames, ${(100 / hop).toFixed(1)} windows/s, the live rate), ` +
      `MPJPE and PCK@${PCK_ALPHA} of the torso diameter (src/training/eval/pose.ts) on visible keypoints; pool pose.`,
  );

  const g = r.geometry;
  const gs = r.plan.geometryFit;
  const floorErr = (q: string) => e.errors.find((x) => x.quantity === q)?.model ?? summarize([]);
  section(
    SECTIONS.geometry,
    'how much closer the floor position gets when a model is told the room and antenna geometry, next to the features alone (the gap is what an installer\'s measurements would buy).',
    [
      row(['inputs', 'median error m', 'mean error m', 'mean abs x m', 'mean abs y m']),
      align(1, 4),
      ...g.rows.map((x) => row([x.inputs === 'constant' ? 'none (mean of the fit rows)' : x.inputs, fixed(x.error.median, 2), fixed(x.error.mean, 2), fixed(x.meanAbsX, 2), fixed(x.meanAbsY, 2)])),
      row(['(the shipped model, same windows)', fixed(floorErr('floor distance').median, 2), fixed(floorErr('floor distance').mean, 2), fixed(floorErr('floor x').mean, 2), fixed(floorErr('floor y').mean, 2)]),
    ],
    `How: an MLP (hidden ${gs.hidden.join(' x ')}, ${gs.epochs} epochs, Huber loss, seeded) regressing the floor position relative to the receiver, fitted on pool fit ` +
      `(${describe('fit')}, ${g.fitWindows} windows) and scored on pool pose (${g.scoreWindows} windows, other seeds); geometry = ${GEOMETRY_COLUMNS.join(', ')}.`,
  );

  const a = r.activity;
  const as = r.plan.activityFit;
  const historyS = ((HISTORY_BLOCKS * HISTORY_BLOCK_FRAMES) / 100).toFixed(2);
  const confusion = (v: ActivityVariant) => [
    `Confusion, ${v.inputs} (windows; rows true, columns predicted):`,
    '',
    row(['true \\ predicted', ...ACTIVITIES, 'recall']),
    align(1, ACTIVITIES.length + 1),
    ...v.confusion.map((c, t) => {
      const total = c.reduce((x, y) => x + y, 0);
      return row([ACTIVITIES[t]!, ...c, total ? percent(c[t]! / total) : 'n/a']);
    }),
    '',
  ];
  section(
    SECTIONS.activity,
    `how much of the activity and of falls a 1.28 s window of features can tell, and how much a ${historyS} s motion-energy history adds.`,
    [
      row(['inputs', 'accuracy (5 classes)', 'fall-in-window precision', 'fall-in-window recall', 'fall windows']),
      align(1, 4),
      ...a.variants.map((v) => row([v.inputs, fixed(v.accuracy), fixed(v.fallPrecision), fixed(v.fallRecall), v.fallWindows])),
      '',
      ...a.variants.flatMap(confusion),
    ].slice(0, -1),
    `How: a classifier (hidden ${as.hidden.join(' x ')}, ${as.epochs} epochs, seeded; softmax over the ${ACTIVITIES.length} activities plus a sigmoid for "a fall in this window") ` +
      `fitted on pool activityFit (${describe('activityFit')}, ${a.fitWindows} windows) and scored on pool activityScore (${describe('activityScore')}, ${a.scoreWindows} windows); ` +
      `history = ln mean motion energy of ${HISTORY_BLOCKS} blocks of ${HISTORY_BLOCK_FRAMES} frames before the window's end.`,
  );

  section(
    SECTIONS.energy,
    'how far walking and falling rise above the noise floor of still frames in the simplest motion measure.',
    [
      row(['activity', 'frames', 'p10 dB', 'median dB', 'p90 dB', 'above the still p95']),
      align(1, 5),
      ...a.energy.map((x) => row([x.activity, x.frames, fixed(x.p10Db, 1), fixed(x.medianDb, 1), fixed(x.p90Db, 1), percent(x.aboveStillP95)])),
    ],
    `How: motion energy per frame, sum |H(t) - H(t - ${ENERGY_LAG * 10} ms)|^2 / sum |H(t)|^2 of the sanitised CSI, in dB relative to the median of the same scenario's ` +
      `still frames (standing, sitting, lying); ${a.energyScenarios} scenarios of both activity pools; "above the still p95": share of frames above the 95th percentile of all still frames.`,
  );
  const si = r.site;
  section(
    SECTIONS.site,
    'how much the shipped model gains from being told the room and where the radios hang (`environment.site`), and what a wrong or roughly measured site costs.',
    si.siteInput
      ? [
          row(['site fed to the model', 'floor median m', 'floor mean m', 'box centre u median px', 'MPJPE px', 'PCK@0.2 torso']),
          align(1, 5),
          ...si.rows.map((x) => row([x.label, fixed(x.floor.median, 2), fixed(x.floor.mean, 2), fixed(x.boxU.median, 1), fixed(x.mpjpePx, 1), fixed(x.pck)])),
        ]
      : ['The model has no `site` input: nothing to measure.'],
    'How: measurement 2 and 3 repeated on pool pose with each site variant (slot 0 against the one true person; errors of a variant are seeded per scenario).',
  );

  const c = r.calibration;
  section(
    SECTIONS.calibration,
    "whether the floor-position bias of measurement 3 belongs to the room (a calibration session could learn it) or to the episode (only knowing the scenario's own true positions removes it).",
    [
      row(['correction', 'floor median m', 'floor mean m', 'windows']),
      align(1, 3),
      ...c.rows.map((x) => row([x.label, fixed(x.floor.median, 2), fixed(x.floor.mean, 2), x.floor.n])),
    ],
    `How: per scenario of pool pose (${c.scenarios}), calibration sessions simulated in its room and layout with a person of their own seed ` +
      `(${c.calibrationWindows} windows in all); the mean of (model floor - known place) is subtracted from the model's floor positions in the last three ` +
      `quarters of the scenario's windows with the person (${c.windows}); slot 0, the room's own site, as in measurement 2.`,
  );
  return L.join('\n') + '\n';
}

/**
 * The report as JSON (non-finite numbers as null), with the machine.
 * @param r the report
 * @returns the JSON text
 */
export function json(r: LimitsReport): string {
  const m = machine();
  return JSON.stringify({ node: m.node, cpu: m.cpu, note: 'simulated VALIDATION scenarios', ...r }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n';
}

async function main(): Promise<void> {
  const plan = process.argv.includes('--quick') ? QUICK_PLAN : FULL_PLAN;
  const modelPath = resolvePath(argValue('--model') ?? 'models/csipose-pose.onnx');
  if (!existsSync(modelPath)) throw new Error(`no model at ${modelPath} (train one with npm run train, or pass --model PATH)`);
  // None of these scenarios may be one the model was trained or validated on.
  const sidecar = modelPath.replace(/\.onnx$/, '.json');
  let seedCheck: LimitsReport['seedCheck'];
  if (existsSync(sidecar)) {
    const { checkSidecar } = await import('../../../bench/accuracy.js');
    const all = POOL_ORDER.flatMap((name) => poolRecipes(plan.pools[name]));
    const check = checkSidecar(JSON.parse(readFileSync(sidecar, 'utf8')), all);
    if (check.sharedSeeds > 0) throw new Error(`${check.sharedSeeds} scenarios share a simulator seed with the model's training or validation scenarios`);
    seedCheck = { trainAndValScenarios: check.trainScenarios, sharedSeeds: check.sharedSeeds };
  }
  const progress = (msg: string) => process.stderr.write(`${msg}\n`);
  const model = await PoseModel.load(modelPath, { thread: 'inline', featureDim: FEATURE_DIM });
  let report: LimitsReport;
  try {
    report = await runLimits(plan, model, modelPath, { workers: Math.max(1, Math.min(4, availableParallelism())), progress });
  } finally {
    await model.release();
  }
  if (seedCheck) report.seedCheck = seedCheck;
  process.stdout.write(process.argv.includes('--json') ? json(report) : markdown(report));
}

if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(resolvePath(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`study:limits failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  });
}
