/**
 * Dataset generation: each scenario recipe is simulated, its frames go through the real `sanitize`
 * (phasor, packet scope) and `window` operators into the FeatureExtractor, each window's summary
 * goes into a HistoryRing exactly as the service keeps it, and each kept window is paired with its
 * `history` input and the targets of its last frame's ground truth. Scenarios are independent, so
 * they are spread over worker threads (one per core) and gathered in recipe order: the dataset
 * does not depend on how many workers made it.
 */
import { Subject } from 'rxjs';
import { Worker } from 'node:worker_threads';
import type { CsiFrame } from '../../src/csi/frame.js';
import { sanitizePhase } from '../../operators/sanitizePhase.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import { CsiSimulator, type GroundTruth, type SimOptions } from '../../src/sim/simulator.js';
import { FEATURE_DIM, FeatureExtractor, WINDOW_FRAMES } from '../../src/model/features.js';
import { frameMsOf, HISTORY_WIDTH, HistoryRing } from '../../src/model/history.js';
import { SITE_DIM, siteVector } from '../../src/model/contract.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import { recipeSite, type ScenarioRecipe } from './recipe.js';
import { fillTargets, mirrorTargets, TARGET_DIM } from '../../src/calibration/targets.js';
import { mapJobs } from './workerPool.js';
import type { RowSource } from '../../src/calibration/trainer.js';

/** The windows of one scenario. */
export interface ScenarioData {
  id: number;
  /** Windows. */
  n: number;
  /** n x FEATURE_DIM */
  features: Float32Array;
  /** n x HISTORY_WIDTH: each window's `history` input (history.ts) */
  history: Float32Array;
  /** n x TARGET_DIM (targets.ts layout) */
  targets: Float32Array;
  /** True person count of each window (may exceed the slots). */
  personCounts: Uint8Array;
  /** 1 where the row is of the left-right mirrored scene. */
  mirrored: Uint8Array;
  /** People actually placed (a cramped room may take fewer than the recipe asked for). */
  people: number;
}

/** Simulator options of a recipe. */
export function simOptions(r: ScenarioRecipe, people: number): SimOptions {
  const txAxis = r.tx.wall === 'back' ? { x: 1, y: 0, z: 0 } : { x: 0, y: 1, z: 0 };
  return {
    seed: r.seed,
    nSub: r.nSub,
    nRx: r.nRx,
    nTx: r.nTx,
    people,
    scenario: {
      room: r.room,
      rx: { position: r.rx, axis: { x: 1, y: 0, z: 0 } },
      tx: { position: { x: r.tx.x, y: r.tx.y, z: r.tx.z }, axis: txAxis },
      camera: r.camera,
      fallProbability: r.fallProbability,
    },
    impairments: { snrDb: r.snrDb, lossRate: r.lossRate, quantizeBits: r.quantizeBits },
    environmentId: `scenario-${r.id}`,
    sourceId: `sim-${r.id}`,
  };
}

/**
 * A simulator of up to `people` people; a room too small for everyone takes one person fewer, and
 * so on (the simulator's RangeError about placing them). The one rule of the dataset, the refiner's
 * training sets and the benchmark.
 * @param people how many the recipe asks for
 * @param options the simulator's options for a number of people
 * @returns the simulator and the people actually placed
 */
export function placedSimulator(people: number, options: (people: number) => SimOptions): { sim: CsiSimulator; people: number } {
  for (let n = people; ; n--) {
    try {
      return { sim: new CsiSimulator(options(n)), people: n };
    } catch (e) {
      if (!(e instanceof RangeError) || n === 0 || !/place/.test(e.message)) throw e;
    }
  }
}

/** Simulator options with every link of a site (the simulator's `radios`), or as they are without one. */
export function withRadios(o: SimOptions, radios: readonly RadioConfig[] | null | undefined): SimOptions {
  if (!radios) return o;
  // The radios place the arrays (and give their antenna counts) in place of nRx, nTx and the scenario's tx and rx.
  const { nRx: _r, nTx: _t, ...rest } = o;
  const { tx: _tx, rx: _rx, ...scenario } = o.scenario ?? {};
  return { ...rest, scenario, radios } as SimOptions;
}

/** A simulator for the recipe ({@link placedSimulator}). */
const makeSimulator = (r: ScenarioRecipe): { sim: CsiSimulator; people: number } => placedSimulator(r.people, (n) => simOptions(r, n));

/**
 * A copy of a frame with the antenna order of the arrays that run along x reversed: the CSI of the
 * same scene mirrored left to right (x -> width - x). The receive array always runs along x; the
 * transmit array does when it hangs on the back wall (on a side wall it runs along y and the mirror
 * only moves it to the other side wall, keeping its order).
 */
function mirrorFrame(f: CsiFrame, flipTx: boolean): CsiFrame {
  const { nRx, nTx, nSub } = f;
  const csi = new Float32Array(f.csi.length);
  for (let sc = 0; sc < nSub; sc++) {
    for (let m = 0; m < nRx; m++) {
      for (let n = 0; n < nTx; n++) {
        const i = ((sc * nRx + m) * nTx + n) * 2;
        const o = ((sc * nRx + (nRx - 1 - m)) * nTx + (flipTx ? nTx - 1 - n : n)) * 2;
        csi[o] = f.csi[i]!;
        csi[o + 1] = f.csi[i + 1]!;
      }
    }
  }
  return { ...f, csi };
}

/**
 * Simulates one scenario and returns its rows: features, history input and targets.
 * @param r the recipe
 * @param hop frames between the starts of consecutive windows (must divide HISTORY_STRIDE_FRAMES
 *   for the history to find its steps)
 * @param rowEvery keep every rowEvery-th window as a row (the others only feed the history)
 * @param mirror also emit every row of the left-right mirrored scene (CSI with the antenna order
 *   along x reversed, targets mirrored): twice the rows for one simulation
 * @returns the scenario's rows (with `mirror`, each original row followed by its mirror)
 */
export function generateScenario(r: ScenarioRecipe, hop: number, rowEvery = 1, mirror = false): ScenarioData {
  const { sim, people } = makeSimulator(r);
  const frames = Math.round(r.seconds * sim.rateHz);
  const copies = mirror ? 2 : 1;
  const windows = Math.max(0, Math.floor((frames - WINDOW_FRAMES) / hop) + 1);
  const cap = Math.ceil(windows / rowEvery) * copies;
  const features = new Float32Array(cap * FEATURE_DIM);
  const history = new Float32Array(cap * HISTORY_WIDTH);
  const targets = new Float32Array(cap * TARGET_DIM);
  const personCounts = new Uint8Array(cap);
  const mirrored = new Uint8Array(cap);
  const flipTx = r.tx.wall === 'back';
  const receiver = { x: r.rx.x, y: r.rx.y };
  let n = 0;
  let truth: GroundTruth | undefined;
  let failure: unknown;
  const pipes = Array.from({ length: copies }, (_, c) => {
    const fx = new FeatureExtractor();
    // As the features operator keeps it: the stride from the windows' own rate estimate.
    let ring: HistoryRing | undefined;
    const row = new Float32Array(FEATURE_DIM);
    let index = 0;
    const input = new Subject<CsiFrame>();
    const sub = input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop })).subscribe({
      next(w) {
        if (!truth) return;
        const end = w.times[w.size - 1]!;
        ring ??= new HistoryRing(frameMsOf(w.rateHz));
        ring.setFrameMs(frameMsOf(w.rateHz));
        fx.extract(w, row);
        if (index++ % rowEvery === 0 && n < cap) {
          features.set(row, n * FEATURE_DIM);
          ring.historyFor(end, history, n * HISTORY_WIDTH);
          const t = targets.subarray(n * TARGET_DIM, (n + 1) * TARGET_DIM);
          fillTargets(truth, receiver, t);
          if (c === 1) mirrorTargets(t);
          personCounts[n] = truth.personCount;
          mirrored[n] = c;
          n++;
        }
        ring.push(end, row);
      },
      error(e: unknown) {
        failure = e;
      },
    });
    return { input, sub };
  });
  // Received frames, not ticks: lost packets make the scenario slightly longer in time.
  for (let i = 0; i < frames && failure === undefined; i++) {
    const s = sim.next();
    truth = s.truth;
    pipes[0]!.input.next(s.frame);
    if (mirror) pipes[1]!.input.next(mirrorFrame(s.frame, flipTx));
  }
  for (const p of pipes) {
    p.input.complete();
    p.sub.unsubscribe();
  }
  if (failure !== undefined) throw failure;
  return {
    id: r.id,
    n,
    features: features.slice(0, n * FEATURE_DIM),
    history: history.slice(0, n * HISTORY_WIDTH),
    targets: targets.slice(0, n * TARGET_DIM),
    personCounts: personCounts.slice(0, n),
    mirrored: mirrored.slice(0, n),
    people,
  };
}

/** A split's windows in one place. */
export interface Dataset {
  n: number;
  /** n x FEATURE_DIM */
  features: Float32Array;
  /** n x HISTORY_WIDTH */
  history: Float32Array;
  /** n x TARGET_DIM */
  targets: Float32Array;
  personCounts: Uint8Array;
  /** 1 where the row is of the left-right mirrored scene. */
  mirrored: Uint8Array;
  /** Scenario id of each window. */
  scenario: Int32Array;
}

/**
 * Concatenates scenarios (in the given order) into one dataset.
 * @param parts the scenarios
 * @returns the dataset
 */
export function concatScenarios(parts: readonly ScenarioData[]): Dataset {
  const n = parts.reduce((a, p) => a + p.n, 0);
  const features = new Float32Array(n * FEATURE_DIM);
  const history = new Float32Array(n * HISTORY_WIDTH);
  const targets = new Float32Array(n * TARGET_DIM);
  const personCounts = new Uint8Array(n);
  const mirrored = new Uint8Array(n);
  const scenario = new Int32Array(n);
  let at = 0;
  for (const p of parts) {
    features.set(p.features, at * FEATURE_DIM);
    history.set(p.history, at * HISTORY_WIDTH);
    targets.set(p.targets, at * TARGET_DIM);
    personCounts.set(p.personCounts, at);
    mirrored.set(p.mirrored, at);
    scenario.fill(p.id, at, at + p.n);
    at += p.n;
  }
  return { n, features, history, targets, personCounts, mirrored, scenario };
}

/** Width of the network's input row: features, then history, then site. */
export const INPUT_DIM = FEATURE_DIM + HISTORY_WIDTH + SITE_DIM;

/** One scenario to generate (what `genWorker.ts` is sent). */
export interface GenerateJob {
  recipe: ScenarioRecipe;
  hop: number;
  rowEvery: number;
  mirror: boolean;
}

/** Generates one job's scenario (in this thread or in a worker). */
export const runGenerateJob = (j: GenerateJob): ScenarioData => generateScenario(j.recipe, j.hop, j.rowEvery, j.mirror);

/** Options of generateAll. */
export interface GenerateOptions {
  /** Window hop of the generated windows (divides HISTORY_STRIDE_FRAMES). */
  hop: number;
  /** Keep every n-th window of TRAIN recipes as a row (default 1). */
  trainRowEvery?: number;
  /** Add the mirrored scene's rows for TRAIN recipes (see generateScenario). */
  mirrorTrain?: boolean;
  /** Worker threads; 0 generates in this thread. */
  workers: number;
  /** Called after each finished scenario. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Generates every recipe, on worker threads when asked.
 * @param recipes the scenarios
 * @param opts hop, rows kept, workers, progress callback
 * @returns one ScenarioData per recipe, in recipe order
 */
export async function generateAll(recipes: readonly ScenarioRecipe[], opts: GenerateOptions): Promise<ScenarioData[]> {
  const url = new URL('./genWorker.js', import.meta.url);
  const jobs: GenerateJob[] = recipes.map((r) => ({
    recipe: r,
    hop: opts.hop,
    rowEvery: r.split === 'train' ? (opts.trainRowEvery ?? 1) : 1,
    mirror: opts.mirrorTrain === true && r.split === 'train',
  }));
  return mapJobs(jobs, {
    workers: opts.workers,
    run: runGenerateJob,
    spawn: () => new Worker(url),
    name: (i) => `scenario ${recipes[i]?.id}`,
    ...(opts.onProgress ? { onResult: opts.onProgress } : {}),
  });
}

/**
 * A dataset's rows as the trainer reads them (features, history and site side by side).
 * @param d the dataset
 * @param recipes recipe of each scenario id
 * @param unknown scenario ids whose site is withheld (all-zero site row)
 * @returns the row source
 */
export function rowSource(d: Dataset, recipes: ReadonlyMap<number, ScenarioRecipe>, unknown: ReadonlySet<number> = new Set()): RowSource {
  const sites = new Map<string, Float32Array>();
  const siteOf = (i: number): Float32Array => {
    const id = d.scenario[i]!;
    const m = d.mirrored[i] === 1;
    const key = `${id}:${m ? 1 : 0}`;
    let row = sites.get(key);
    if (!row) {
      const r = recipes.get(id);
      if (!r) throw new RangeError(`rowSource: no recipe for scenario ${id}`);
      row = siteVector(unknown.has(id) ? null : recipeSite(r, m));
      sites.set(key, row);
    }
    return row;
  };
  return {
    n: d.n,
    dim: INPUT_DIM,
    targets: d.targets,
    fill(rows, from, count, out) {
      for (let k = 0; k < count; k++) {
        const i = rows[from + k]!;
        const o = k * INPUT_DIM;
        out.set(d.features.subarray(i * FEATURE_DIM, (i + 1) * FEATURE_DIM), o);
        out.set(d.history.subarray(i * HISTORY_WIDTH, (i + 1) * HISTORY_WIDTH), o + FEATURE_DIM);
        out.set(siteOf(i), o + FEATURE_DIM + HISTORY_WIDTH);
      }
    },
  };
}
