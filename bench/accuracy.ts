/**
 * `npm run bench:accuracy [-- --json] [-- --quick] [-- --model PATH] [-- --split val] [-- --oracle] [-- --no-site]`: how well the whole pose
 * system does on simulated scenarios it never saw in training.
 *
 * What runs: the simulator (TEST split of the training recipe: rooms, antenna layouts and seeds in
 * the held-out bands, checked with `isHeldOut`) feeds CSI frames at full speed into the service's
 * own live pipeline (`livePipeline`: sanitise, window, features, ONNX inference through
 * onnxruntime-node in the model's worker thread, tracking, activity, alerts) with the service's
 * default live settings. Every pose frame that comes out is scored against the simulator's ground
 * truth of the window's last CSI frame (the instant the estimate is for):
 * - PCK@0.2 of the torso diameter and MPJPE (`src/training/eval/pose.ts`), grouped by people in the room;
 * - exact person count (`src/training/eval/count.ts`);
 * - CLEAR-MOT MOTA and identity switches on box centres (`src/training/eval/mot.ts`);
 * - falls, on separate scripted scenarios in further TEST rooms (`src/training/eval/fallScripts.ts`,
 *   `src/training/eval/falls.ts`): precision over reported fall episodes, recall over true falls, delay.
 *
 * `--split val` runs the same benchmark on VALIDATION scenarios instead (the training distribution's
 * rooms and layouts, seeds of their own): the split on which tracker and alert settings may be
 * chosen. Nothing is tuned on the TEST scenarios. Each scenario's site geometry (room size, radio
 * positions) is fed to models with the `site` input, as an installer's `environment.site` would be;
 * `--no-site` withholds it. `--oracle` replaces the model with the ground truth
 * (`bench/oracle.ts`): the scores the tracker, activity and alert rules reach with perfect poses. The pipeline is fed with back-pressure (a new frame
 * only while fewer than one batch of windows waits for the model), so no window is dropped and
 * every batch but a scenario's last is full: two runs give identical numbers. The scores are on
 * SIMULATED data; real CSI will score lower.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Subject } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { deepFreeze, defaults } from '../src/config/schema.js';
import { FEATURE_DIM } from '../src/model/features.js';
import { PoseModel, type ModelOutputs, type PoseRunner, type RunOptions } from '../src/model/runtime.js';
import { isHeldOut, makeRecipes, recipeSite, type ScenarioRecipe } from '../src/training/recipe.js';
import { simOptions } from '../src/training/dataset.js';
import { KEYPOINT_NAMES, type PoseFrame } from '../src/pose/types.js';
import type { ConfigSnapshot } from '../src/config/store.js';
import { deriveSeed, Rng } from '../src/sim/rng.js';
import { Camera } from '../src/sim/camera.js';
import { CsiSimulator, type GroundTruth, type SimOptions } from '../src/sim/simulator.js';
import type { InferStats } from '../operators/infer.js';
import { livePipeline } from '../pipelines/build.js';
import { liveParams, type LiveParams } from '../pipelines/settings.js';
import { formatSite } from '../src/model/contract.js';
import { addConfusion, addCount, countScores, emptyConfusion, MAX_REPORTED_COLUMN, MAX_TRUE_COUNT, type CountConfusion } from '../src/training/eval/count.js';
import { addPoseCounts, emptyPoseCounts, PCK_ALPHA, poseScores, scorePoseFrame, TORSO_FROM_BOX, type PoseCounts } from '../src/training/eval/pose.js';
import { addMotTotals, boxCentre, ClearMot, emptyMotTotals, MOT_THRESHOLD_PX, motScores, type MotPoint, type MotTotals } from '../src/training/eval/mot.js';
import { episodesFrom, scoreFalls, type FallNotice, type FallScores, type TrueFall } from '../src/training/eval/falls.js';
import { fallScenarioPeople, FALL_ROLES, ROLE_ROTATION, type FallRole, type ScriptedPerson } from '../src/training/eval/fallScripts.js';
import { argValue, fixed, machine, percent, type BenchResult } from './lib.js';

/** How much to simulate. */
export interface AccuracyPlan {
  /** Master seed of the scenarios. */
  seed: number;
  /** Recipe split the scenarios come from: `test` (held out, the reported scores) or `val` (for choosing settings). */
  split: 'test' | 'val';
  poseScenarios: number;
  /** Simulated seconds per pose scenario. */
  poseSeconds: number;
  fallScenarios: number;
  fallSeconds: number;
  /**
   * Feed each scenario's own site geometry (room size, radio positions: what an installer enters
   * as `environment.site`) to models with the `site` input; default true. False: unknown site.
   */
  site?: boolean;
}

/** The full run: a few minutes on 2 cores. */
export const FULL_PLAN: Readonly<AccuracyPlan> = Object.freeze({ seed: 4242, split: 'test', poseScenarios: 60, poseSeconds: 30, fallScenarios: 48, fallSeconds: 25, site: true });
/** `--quick`: a handful of scenarios, well under a minute. */
export const QUICK_PLAN: Readonly<AccuracyPlan> = Object.freeze({ seed: 4242, split: 'test', poseScenarios: 6, poseSeconds: 12, fallScenarios: 4, fallSeconds: 25, site: true });

/** Largest distance (m) between a fall notice's floor location and a true person, when its track was never paired with one. */
const FLOOR_ATTRIBUTION_M = 1.0;
/** Said next to every score. */
const NOTES = {
  test: 'simulated, held-out TEST scenarios (unseen rooms, antenna layouts, seeds); real CSI will score lower',
  val: 'simulated VALIDATION scenarios (training rooms and layouts, unseen seeds): for choosing settings, not the reported scores',
} as const;

/** The live parameters of a service running on the default configuration (`liveParams`). */
export function defaultLiveParams(): LiveParams {
  // The service's own mapping from configuration to operator parameters, on the default configuration.
  return liveParams(deepFreeze(defaults()) as ConfigSnapshot);
}

/**
 * A model wrapper that knows when a batch is in flight, so the feeder can wait for it instead of
 * letting the infer operator's queue overflow (it drops the oldest rows when it does).
 */
class PacedRunner implements PoseRunner {
  inFlight = 0;
  pending: Promise<unknown> = Promise.resolve();
  constructor(private readonly inner: PoseRunner) {}
  get metadata() {
    return this.inner.metadata;
  }
  get featureDim() {
    return this.inner.featureDim;
  }
  get maxPersons() {
    return this.inner.maxPersons;
  }
  run(features: Float32Array, n: number, opts?: RunOptions): Promise<ModelOutputs> {
    const p = this.inner.run(features, n, opts);
    this.inFlight++;
    const settle = () => {
      this.inFlight--;
    };
    // Registered before the operator's own handler, so the count is right when that one runs.
    p.then(settle, settle);
    this.pending = p.catch(() => undefined);
    return p;
  }
}

/** What a scenario run saw. */
interface RunStats {
  csiFrames: number;
  poseFrames: number;
}

/**
 * Feeds `frames` simulator samples through the live pipeline and calls `visit` with every pose
 * frame and the ground truth of its window's last CSI frame; `onSample` sees every sample.
 */
async function runLive(
  model: PoseRunner,
  settings: LiveParams,
  sim: CsiSimulator,
  frames: number,
  visit: (pose: PoseFrame, truth: GroundTruth) => void,
  onSample?: (truth: GroundTruth) => void,
): Promise<RunStats> {
  const runner = new PacedRunner(model);
  const stats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
  const truths = new Map<number, GroundTruth>();
  const input = new Subject<CsiFrame>();
  let failure: unknown;
  let poseFrames = 0;
  const done = new Promise<void>((resolveDone, reject) => {
    input.pipe(livePipeline({ model: runner, inferStats: stats }, () => settings)).subscribe({
      next(pose) {
        try {
          const truth = truths.get(pose.time);
          if (!truth) throw new Error(`no ground truth for the pose frame at ${pose.time}`);
          poseFrames++;
          visit(pose, truth);
          // Frames up to this one are never needed again (windows end at increasing frames).
          for (const t of truths.keys()) {
            if (t > pose.time - 100) break;
            truths.delete(t);
          }
        } catch (e) {
          failure ??= e;
        }
      },
      error(e: unknown) {
        failure ??= e;
        reject(e);
      },
      complete: () => resolveDone(),
    });
  });
  done.catch(() => undefined);
  for (let i = 0; i < frames && failure === undefined; i++) {
    const s = sim.next();
    truths.set(s.frame.time, s.truth);
    onSample?.(s.truth);
    input.next(s.frame);
    // Back-pressure: with a batch in flight, queue at most one more batch of windows.
    while (failure === undefined && runner.inFlight > 0 && stats.queue >= Number(settings.infer.batchSize)) await runner.pending;
  }
  input.complete();
  await done.catch(() => undefined);
  if (failure !== undefined) throw failure;
  if (stats.dropped > 0) throw new Error(`the infer operator dropped ${stats.dropped} windows: the feeder's back-pressure failed`);
  return { csiFrames: frames, poseFrames };
}

/** A simulator for a recipe, one person fewer while the room is too small (as the dataset does). */
export function recipeSimulator(r: ScenarioRecipe): { sim: CsiSimulator; people: number } {
  for (let people = r.people; ; people--) {
    try {
      return { sim: new CsiSimulator({ ...simOptions(r, people), environmentId: `acc-${r.id}` }), people };
    } catch (e) {
      if (!(e instanceof RangeError) || people === 0 || !/place/.test(e.message)) throw e;
    }
  }
}

/** Tallies of one group of pose scenarios. */
interface PoseGroup {
  scenarios: number;
  frames: number;
  pose: PoseCounts;
  count: CountConfusion;
}

const emptyGroup = (): PoseGroup => ({ scenarios: 0, frames: 0, pose: emptyPoseCounts(), count: emptyConfusion() });

function addGroup(a: PoseGroup, b: PoseGroup): void {
  a.scenarios += b.scenarios;
  a.frames += b.frames;
  addPoseCounts(a.pose, b.pose);
  addConfusion(a.count, b.count);
}

/** Box centres of the true persons that have a box, and how many have none. */
function truthPoints(truth: GroundTruth): { objects: MotPoint[]; ignored: number } {
  const objects: MotPoint[] = [];
  let ignored = 0;
  for (const p of truth.persons) {
    if (p.bbox[2] > 0 && p.bbox[3] > 0) objects.push(boxCentre(p.id, p.bbox));
    else ignored++;
  }
  return { objects, ignored };
}

let anonymousTrack = -1;
function hypothesisPoints(pose: PoseFrame): MotPoint[] {
  // Every person leaving the tracker has a track id; one without counts as a new identity.
  return pose.persons.map((p) => boxCentre(p.trackId ?? anonymousTrack--, p.bbox));
}

/** Results of the pose scenarios. */
interface PoseRun {
  groups: PoseGroup[];
  all: PoseGroup;
  mot: MotTotals;
  csiFrames: number;
}

/** The live settings of one scenario: with `site`, the scenario's own site geometry. */
const scenarioSettings = (settings: LiveParams, r: ScenarioRecipe, site: boolean): LiveParams =>
  site ? { ...settings, infer: { ...settings.infer, site: formatSite(recipeSite(r)) } } : settings;

async function runPoseScenarios(
  model: PoseRunner,
  settings: LiveParams,
  site: boolean,
  recipes: readonly ScenarioRecipe[],
  progress: (msg: string) => void,
): Promise<PoseRun> {
  const groups = Array.from({ length: MAX_TRUE_COUNT + 1 }, emptyGroup);
  const all = emptyGroup();
  const mot = emptyMotTotals();
  let csiFrames = 0;
  for (const [i, r] of recipes.entries()) {
    const { sim, people } = recipeSimulator(r);
    const g = emptyGroup();
    g.scenarios = 1;
    const tracker = new ClearMot(MOT_THRESHOLD_PX);
    const frames = Math.round(r.seconds * sim.rateHz);
    const s = await runLive(model, scenarioSettings(settings, r, site), sim, frames, (pose, truth) => {
      g.frames++;
      addPoseCounts(g.pose, scorePoseFrame(pose.persons, truth.persons));
      addCount(g.count, truth.personCount, pose.persons.length);
      const { objects, ignored } = truthPoints(truth);
      tracker.update(objects, hypothesisPoints(pose), ignored);
    });
    csiFrames += s.csiFrames;
    addGroup(groups[people]!, g);
    addGroup(all, g);
    addMotTotals(mot, tracker.totals);
    progress(`pose scenario ${i + 1}/${recipes.length}: ${people} people, ${s.poseFrames} pose frames`);
  }
  return { groups, all, mot, csiFrames };
}

/** One scripted person's outcome. */
interface PersonOutcome {
  role: FallRole;
  /** True falls of this person (0 or 1 in these scripts). */
  falls: number;
  detected: number;
  delaysMs: number[];
  falseAlarms: number;
}

/** Results of the fall scenarios. */
interface FallRun {
  scores: FallScores;
  people: PersonOutcome[];
  /** False alarms that could not be put on any true person. */
  unattributedFalseAlarms: number;
  /** Scheduled falls that the simulator did not start (should be 0). */
  missingFalls: number;
  csiFrames: number;
  windowMs: number;
}

/** Simulator options of a scripted fall scenario in a TEST recipe's room and layout. */
export function fallSimOptions(r: ScenarioRecipe, people: readonly ScriptedPerson[]): SimOptions {
  return { ...simOptions(r, 0), people: people.map((p) => p.spec), environmentId: `fall-${r.id}` };
}

/**
 * Plans the people of each fall scenario: main role by rotation, 0-2 companions with negative
 * roles, everything inside the reference camera's view.
 * @param recipes TEST recipes giving rooms, layouts and seeds
 * @returns per recipe its scripted people
 */
export function planFallScenarios(recipes: readonly ScenarioRecipe[]): ScriptedPerson[][] {
  return recipes.map((r, i) =>
    fallScenarioPeople(r.room, new Rng(deriveSeed(r.seed, 31)), ROLE_ROTATION[i % ROLE_ROTATION.length]!, i % 3, new Camera(r.camera)),
  );
}

async function runFallScenarios(
  model: PoseRunner,
  settings: LiveParams,
  site: boolean,
  recipes: readonly ScenarioRecipe[],
  progress: (msg: string) => void,
): Promise<FallRun> {
  const delayS = Number(settings.alerts.notificationDelaySeconds);
  const windowMs = (delayS + 5) * 1000;
  const plans = planFallScenarios(recipes);
  const allFalls: TrueFall[] = [];
  const allEpisodes: ReturnType<typeof episodesFrom> = [];
  const owner: PersonOutcome[] = [];
  const fallOwner: number[] = [];
  const episodeOwner: number[] = [];
  let missingFalls = 0;
  let csiFrames = 0;
  for (const [i, r] of recipes.entries()) {
    const people = plans[i]!;
    const sim = new CsiSimulator(fallSimOptions(r, people));
    const base = owner.length;
    for (const p of people) owner.push({ role: p.role, falls: 0, detected: 0, delaysMs: [], falseAlarms: 0 });
    const falls: TrueFall[] = [];
    const notices: FallNotice[] = [];
    const tracker = new ClearMot(MOT_THRESHOLD_PX);
    const frames = Math.round(r.seconds * sim.rateHz);
    const s = await runLive(
      model,
      scenarioSettings(settings, r, site),
      sim,
      frames,
      (pose, truth) => {
        const { objects, ignored } = truthPoints(truth);
        tracker.update(objects, hypothesisPoints(pose), ignored);
        for (const n of [...(pose.alerts ?? []), ...(pose.events ?? [])]) {
          if (n.type !== 'fall_detection') continue;
          notices.push({ type: n.type, time: n.time, trackId: n.trackId, metadata: n.metadata, personId: attribute(tracker, n.trackId, n.location, truth) });
        }
      },
      (truth) => {
        for (const e of truth.events) if (e.type === 'fall_start') falls.push({ personId: e.personId, start: e.time });
      },
    );
    csiFrames += s.csiFrames;
    const scheduled = people.filter((p) => p.fallAt !== null).length;
    missingFalls += Math.max(0, scheduled - falls.length);
    for (const f of falls) {
      allFalls.push({ personId: base + f.personId, start: f.start });
      fallOwner.push(base + f.personId);
      owner[base + f.personId]!.falls++;
    }
    for (const e of episodesFrom(notices)) {
      const pid = e.personId === null ? null : base + e.personId;
      allEpisodes.push({ ...e, personId: pid });
      episodeOwner.push(pid ?? -1);
    }
    progress(`fall scenario ${i + 1}/${recipes.length}: ${people.map((p) => p.role).join(', ')}; ${falls.length} falls, ${notices.length} notices`);
  }
  // Person ids are made unique over scenarios above, so one scoring covers them all.
  const scores = scoreFalls(allFalls, allEpisodes, windowMs);
  let unattributed = 0;
  scores.fallDetectedBy.forEach((d, f) => {
    if (d < 0) return;
    const o = owner[fallOwner[f]!]!;
    o.detected++;
    o.delaysMs.push(allEpisodes[d]!.time - allFalls[f]!.start);
  });
  scores.detectionFall.forEach((f, d) => {
    if (f >= 0) return;
    const who = episodeOwner[d]!;
    if (who >= 0) owner[who]!.falseAlarms++;
    else unattributed++;
  });
  return { scores, people: owner, unattributedFalseAlarms: unattributed, missingFalls, csiFrames, windowMs };
}

/**
 * The true person a fall notice is about: the one its track was last paired with by CLEAR-MOT,
 * else the person nearest to the notice's floor location (within FLOOR_ATTRIBUTION_M), else none.
 */
function attribute(mot: ClearMot, trackId: number, location: { x: number; y: number }, truth: GroundTruth): number | null {
  const paired = mot.objectOf(trackId);
  if (paired !== undefined) return paired;
  let best: number | null = null;
  let bestD = FLOOR_ATTRIBUTION_M;
  for (const p of truth.persons) {
    const d = Math.hypot(p.floor.x - location.x, p.floor.y - location.y);
    if (d <= bestD) {
      bestD = d;
      best = p.id;
    }
  }
  return best;
}

/** Everything one accuracy run found. */
export interface AccuracyReport {
  plan: AccuracyPlan;
  modelPath: string;
  modelVersion: string;
  trainedOn: string;
  contractTestModel: boolean;
  settings: LiveParams;
  pose: PoseRun;
  falls: FallRun;
  seconds: number;
  results: BenchResult[];
}

const GROUP_NAMES = ['zero', 'one', 'two', 'three', 'four'];

/**
 * The recipes of the benchmark: TEST recipes checked to be in the held-out bands, or with
 * `plan.split` `val` VALIDATION recipes checked to be outside them.
 * @param plan scenario counts, seed and split
 * @returns recipes of the pose scenarios and of the fall scenarios (separate generator streams)
 * @throws Error when a recipe is not of the split's family
 */
export function benchRecipes(plan: AccuracyPlan): { pose: ScenarioRecipe[]; fall: ScenarioRecipe[] } {
  const split = plan.split;
  const counts = (n: number, seconds: number) => ({ train: 0, val: split === 'val' ? n : 0, test: split === 'test' ? n : 0, seconds });
  const pose = makeRecipes(plan.seed, counts(plan.poseScenarios, plan.poseSeconds));
  const fall = makeRecipes(deriveSeed(plan.seed, 2), counts(plan.fallScenarios, plan.fallSeconds));
  for (const r of [...pose, ...fall]) {
    if (r.split !== split || isHeldOut(r) !== (split === 'test')) throw new Error(`scenario ${r.id} is not in the ${split === 'test' ? 'held-out TEST' : 'VALIDATION'} family`);
  }
  return { pose, fall };
}

/**
 * Runs the accuracy benchmark on a loaded model (the caller loads and releases it).
 * @param plan how much to simulate
 * @param model the model (a `PoseModel`, as the service uses)
 * @param modelPath where it came from, for the report
 * @param progress called with a line after each scenario
 * @param settings live settings (default: the service's defaults); other values are for choosing
 *   settings on the VALIDATION split
 * @returns the report with its DECISIONS results
 */
export async function runAccuracy(
  plan: AccuracyPlan,
  model: PoseRunner,
  modelPath: string,
  progress: (msg: string) => void = () => undefined,
  settings: LiveParams = defaultLiveParams(),
): Promise<AccuracyReport> {
  const t0 = performance.now();
  const recipes = benchRecipes(plan);
  const site = plan.site !== false;
  const pose = await runPoseScenarios(model, settings, site, recipes.pose, progress);
  const falls = await runFallScenarios(model, settings, site, recipes.fall, progress);
  const meta = model.metadata;
  const report: AccuracyReport = {
    plan,
    modelPath,
    modelVersion: meta.model_version,
    trainedOn: meta.trained_on,
    contractTestModel: meta.trained_on === 'unit-test' || meta.model_version === 'test-1',
    settings,
    pose,
    falls,
    seconds: (performance.now() - t0) / 1000,
    results: [],
  };
  report.results = resultsOf(report);
  return report;
}

/** The DECISIONS "Benchmark output" results of a report. */
function resultsOf(r: AccuracyReport): BenchResult[] {
  const out: BenchResult[] = [];
  const note = (extra: string) => `${extra}; ${NOTES[r.plan.split]}${r.contractTestModel ? '; CONTRACT TEST MODEL, not a trained one: meaningless as accuracy' : ''}`;
  const { groups, all, mot } = r.pose;
  GROUP_NAMES.forEach((name, k) => {
    if (k === 0) return; // nobody in the room: no keypoint to score
    const s = poseScores(groups[k]!.pose);
    out.push({ name: `accuracy.pck02.${name}`, value: s.pck, unit: 'fraction', n: groups[k]!.scenarios, note: note(`${s.keypoints} keypoints, ${groups[k]!.frames} frames`) });
  });
  const sAll = poseScores(all.pose);
  out.push({ name: 'accuracy.pck02.all', value: sAll.pck, unit: 'fraction', n: all.scenarios, note: note(`${sAll.keypoints} keypoints, ${all.frames} frames`) });
  KEYPOINT_NAMES.forEach((kp, k) =>
    out.push({ name: `accuracy.pck02.${kp}`, value: sAll.pckPerKeypoint[k]!, unit: 'fraction', n: all.scenarios, note: note(`${all.pose.total[k]} keypoints`) }),
  );
  for (const k of [1, 3]) {
    const g = poseScores(groups[k]!.pose);
    out.push({ name: `accuracy.pck02_box.${GROUP_NAMES[k]}`, value: g.pckBox, unit: 'fraction', n: groups[k]!.scenarios, note: note(`0.2 x max(box width, height), the training report's convention`) });
  }
  out.push({ name: 'accuracy.pck02_box.all', value: sAll.pckBox, unit: 'fraction', n: all.scenarios, note: note(`0.2 x max(box width, height), the training report's convention`) });
  out.push({ name: 'accuracy.mpjpe_px', value: sAll.mpjpe, unit: 'px', n: all.scenarios, note: note(`${all.pose.errorCount} keypoints of matched persons`) });
  const c = countScores(all.count);
  out.push({ name: 'accuracy.count_exact', value: c.exact, unit: 'fraction', n: all.scenarios, note: note(`${c.frames} frames`) });
  for (let k = 0; k <= MAX_TRUE_COUNT; k++) {
    out.push({ name: `accuracy.count_exact.${GROUP_NAMES[k]}`, value: c.exactByTrue[k]!, unit: 'fraction', n: groups[k]!.scenarios, note: note(`${c.framesByTrue[k]} frames`) });
  }
  const m = motScores(mot);
  out.push({ name: 'accuracy.mota', value: m.mota, unit: 'ratio', n: all.scenarios, note: note(`${m.objects} true objects, threshold ${MOT_THRESHOLD_PX} px on box centres`) });
  out.push({ name: 'accuracy.id_switches', value: m.switches, unit: 'switches', n: all.scenarios, note: note(`${m.objects} true objects`) });
  out.push({ name: 'accuracy.motp_px', value: m.motp, unit: 'px', n: all.scenarios, note: note(`${mot.matches} pairs`) });
  const f = r.falls.scores;
  const nFall = r.plan.fallScenarios;
  out.push({ name: 'accuracy.fall_precision', value: f.precision, unit: 'fraction', n: nFall, note: note(`${f.detections} reported fall episodes`) });
  out.push({ name: 'accuracy.fall_recall', value: f.recall, unit: 'fraction', n: nFall, note: note(`${f.falls} true falls`) });
  out.push({ name: 'accuracy.fall_delay_s', value: f.meanDelayMs / 1000, unit: 's', n: nFall, note: note(`${f.detected} detected falls, from fall start to first notice`) });
  return out;
}


/**
 * The report as Markdown.
 * @param r the report
 * @returns tables and the statement of what the numbers are
 */
export function markdown(r: AccuracyReport): string {
  const m = machine();
  const { infer: si, track: st, alerts: sa } = r.settings;
  const lines: string[] = [];
  const tag = r.plan.split === 'test' ? 'held out' : 'VALIDATION';
  lines.push('# csipose accuracy');
  lines.push('');
  if (r.contractTestModel) {
    lines.push('**CONTRACT TEST MODEL (fixed pseudo-random weights, never trained): these numbers are meaningless as accuracy; they only show that the benchmark runs.**');
    lines.push('');
  }
  lines.push(
    r.plan.split === 'test'
      ? `**Simulated, held-out scenarios.** Every score below is measured on simulated CSI from the TEST split of the training recipe ` +
          `(rooms, antenna layouts and seeds never used in training; each checked with isHeldOut). The simulator leaves out furniture, ` +
          `occlusion, multi-bounce paths and hardware quirks, so real CSI will score lower.`
      : `**Simulated VALIDATION scenarios** (the training distribution's rooms and layouts, seeds of their own): the split on which ` +
          `settings are chosen. These are not the reported scores; run without --split for the held-out TEST scores.`,
  );
  lines.push('');
  lines.push(`- node ${m.node}, ${m.cpu}; run time ${r.seconds.toFixed(1)} s`);
  lines.push(`- model ${r.modelPath} (model_version ${r.modelVersion || '?'}, trained_on ${r.trainedOn || '?'})`);
  lines.push(
    `- ${r.plan.poseScenarios} pose scenarios x ${r.plan.poseSeconds} s, ${r.plan.fallScenarios} scripted fall scenarios x ${r.plan.fallSeconds} s, ` +
      `seed ${r.plan.seed}; ${r.pose.csiFrames + r.falls.csiFrames} CSI frames through the live pipeline`,
  );
  lines.push(
    `- live settings (service defaults): confidence ${si.confidenceThreshold}, max persons ${si.maxPersons}, batch ${si.batchSize}, ` +
      `tracking min hits ${st.minHits} / max age ${st.maxAge}, fall sensitivity ${sa.sensitivity}, notification delay ${sa.notificationDelaySeconds} s`,
  );
  lines.push(
    r.plan.site === false
      ? `- site geometry: withheld (--no-site), as for a service whose environment.site is not known`
      : `- site geometry: each scenario's own room size and radio positions (environment.site, what an installer enters), for models with the site input`,
  );
  lines.push(
    `- PCK@${PCK_ALPHA}: within ${PCK_ALPHA} x torso diameter (left shoulder to right hip; ${TORSO_FROM_BOX} x box diagonal when either is not visible), ` +
      `visible true keypoints only, persons matched per frame by Hungarian assignment on mean keypoint distance ` +
      `(pck02_box: ${PCK_ALPHA} x max(box width, height), looser, as in the training report); MOTA: CLEAR-MOT on box centres, ${MOT_THRESHOLD_PX} px`,
  );
  lines.push('');
  lines.push('| metric | value | unit | scenarios | note |');
  lines.push('|---|---:|---|---:|---|');
  for (const x of r.results) {
    if (/^accuracy\.pck02\.(?!one$|two$|three$|four$|all$)/.test(x.name)) continue; // per keypoint: own table
    const v = x.unit === 'fraction' || x.unit === 'ratio' ? fixed(x.value) : x.unit === 'switches' ? String(x.value) : fixed(x.value, 2);
    lines.push(`| ${x.name} | ${v} | ${x.unit} | ${x.n} | ${(x.note ?? '').split(';')[0]} |`);
  }
  lines.push('');
  lines.push(`## By people in the room (simulated, ${tag})`);
  lines.push('');
  lines.push('| people | scenarios | pose frames | keypoints | PCK@0.2 torso | PCK@0.2 box | MPJPE px | count exact |');
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
  const rows = [...r.pose.groups.map((g, k) => [String(k), g] as const), ['all', r.pose.all] as const];
  for (const [k, g] of rows) {
    const p = poseScores(g.pose);
    lines.push(`| ${k} | ${g.scenarios} | ${g.frames} | ${p.keypoints} | ${fixed(p.pck)} | ${fixed(p.pckBox)} | ${fixed(p.mpjpe, 1)} | ${fixed(countScores(g.count).exact)} |`);
  }
  lines.push('');
  lines.push(`## PCK@0.2 per keypoint, all pose scenarios (simulated, ${tag})`);
  lines.push('');
  lines.push('| keypoint | PCK@0.2 | keypoints |');
  lines.push('|---|---:|---:|');
  const pa = poseScores(r.pose.all.pose);
  KEYPOINT_NAMES.forEach((kp, k) => lines.push(`| ${kp} | ${fixed(pa.pckPerKeypoint[k]!)} | ${r.pose.all.pose.total[k]} |`));
  lines.push('');
  lines.push(`## Person count: frames by true (rows) and reported (columns) count (simulated, ${tag})`);
  lines.push('');
  const cols = Array.from({ length: MAX_REPORTED_COLUMN + 1 }, (_, j) => (j === MAX_REPORTED_COLUMN ? `${j}+` : String(j)));
  lines.push(`| true \\ reported | ${cols.join(' | ')} | exact |`);
  lines.push(`|---:|${cols.map(() => '---:').join('|')}|---:|`);
  const cs = countScores(r.pose.all.count);
  r.pose.all.count.forEach((row, t) => lines.push(`| ${t} | ${row.join(' | ')} | ${percent(cs.exactByTrue[t]!)} |`));
  lines.push('');
  const mt = r.pose.mot;
  const ms = motScores(mt);
  lines.push(`## Tracking, CLEAR-MOT at ${MOT_THRESHOLD_PX} px (simulated, ${tag})`);
  lines.push('');
  lines.push('| true objects | misses | false positives | identity switches | MOTA | MOTP px |');
  lines.push('|---:|---:|---:|---:|---:|---:|');
  lines.push(`| ${mt.objects} | ${mt.misses} | ${mt.falsePositives} | ${mt.switches} | ${fixed(ms.mota)} | ${fixed(ms.motp, 1)} |`);
  lines.push('');
  const f = r.falls;
  lines.push(`## Falls: scripted scenarios in ${r.plan.split === 'test' ? 'held-out' : 'validation'} rooms (simulated), window fall start .. +${f.windowMs / 1000} s`);
  lines.push('');
  lines.push('| role | people | true falls | detected | mean delay s | false alarms |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  const roles = [...new Set(f.people.map((p) => p.role))].sort((a, b) => ROLE_ROTATION.indexOf(a) - ROLE_ROTATION.indexOf(b));
  for (const role of roles) {
    const ps = f.people.filter((p) => p.role === role);
    const delays = ps.flatMap((p) => p.delaysMs);
    const mean = delays.length ? delays.reduce((a, b) => a + b, 0) / delays.length / 1000 : NaN;
    lines.push(
      `| ${role}${FALL_ROLES.includes(role) ? ' (fall)' : ''} | ${ps.length} | ${ps.reduce((a, p) => a + p.falls, 0)} | ${ps.reduce((a, p) => a + p.detected, 0)} | ${fixed(mean, 2)} | ${ps.reduce((a, p) => a + p.falseAlarms, 0)} |`,
    );
  }
  lines.push(`| (no person) | | | | | ${f.unattributedFalseAlarms} |`);
  lines.push('');
  lines.push(
    `Reported fall episodes ${f.scores.detections}, true falls ${f.scores.falls}, detected ${f.scores.detected}: precision ${fixed(f.scores.precision)}, ` +
      `recall ${fixed(f.scores.recall)}, mean delay ${fixed(f.scores.meanDelayMs / 1000, 2)} s.` +
      (f.missingFalls > 0 ? ` Warning: ${f.missingFalls} scripted falls did not happen in the simulator.` : ''),
  );
  return lines.join('\n') + '\n';
}

/** The DECISIONS JSON document. */
export function json(r: AccuracyReport): string {
  const m = machine();
  const results = r.results.map((x) => ({ ...x, value: Number.isFinite(x.value) ? x.value : null }));
  return JSON.stringify({ node: m.node, cpu: m.cpu, results }, null, 2) + '\n';
}

/** What the training script's report next to the model says, and whether it overlaps the benchmark. */
export interface SidecarCheck {
  /** Training and validation scenarios rebuilt from the report's recipe (0 when it could not be). */
  trainScenarios: number;
  /** Benchmark scenarios whose simulator seed a training or validation scenario also has. */
  sharedSeeds: number;
  /** Its own held-out scores (per-window, before tracking, PCK on the box size), when present. */
  own: { pckOne: number; pckThree: number; pckAll: number; countExact: number } | null;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : NaN);

/**
 * Reads the training report (`csipose-pose.json`), rebuilds its TRAIN and VALIDATION recipes from
 * the master seed and counts it records, and counts benchmark scenarios that share a seed with
 * them (there should be none).
 * @param report the parsed JSON
 * @param scenarios the benchmark's scenarios (`benchRecipes`)
 * @returns the check
 */
export function checkSidecar(report: unknown, scenarios: readonly ScenarioRecipe[]): SidecarCheck {
  const r = (report ?? {}) as { recipe?: { master_seed?: unknown; scenario_seconds?: unknown }; scenario_counts?: { train?: unknown; val?: unknown }; test_scores?: { all?: Record<string, Record<string, unknown>> } };
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
  const all = r.test_scores?.all;
  const own = all ? { pckOne: num(all['one']?.['pck02']), pckThree: num(all['three']?.['pck02']), pckAll: num(all['all']?.['pck02']), countExact: num(all['all']?.['countExact']) } : null;
  return { trainScenarios, sharedSeeds, own };
}

async function main(): Promise<void> {
  const asJson = process.argv.includes('--json');
  const splitArg = argValue('--split') ?? 'test';
  if (splitArg !== 'test' && splitArg !== 'val') throw new Error(`--split must be test or val, got ${splitArg}`);
  const plan: AccuracyPlan = { ...(process.argv.includes('--quick') ? QUICK_PLAN : FULL_PLAN), split: splitArg, site: !process.argv.includes('--no-site') };
  const useOracle = process.argv.includes('--oracle');
  const modelPath = resolvePath(argValue('--model') ?? 'models/csipose-pose.onnx');
  if (!useOracle && !existsSync(modelPath)) throw new Error(`no model at ${modelPath} (train one with npm run train, or pass --model PATH)`);
  const sidecar = modelPath.replace(/\.onnx$/, '.json');
  const ours = benchRecipes(plan);
  const check = !useOracle && existsSync(sidecar) ? checkSidecar(JSON.parse(readFileSync(sidecar, 'utf8')), [...ours.pose, ...ours.fall]) : null;
  if (check && check.sharedSeeds > 0) throw new Error(`${check.sharedSeeds} benchmark scenarios share a simulator seed with the model's training scenarios`);
  const progress = (msg: string) => process.stderr.write(`${msg}\n`);
  let report: AccuracyReport;
  if (useOracle) {
    const { oracleRunner } = await import('./oracle.js');
    report = await runAccuracy(plan, oracleRunner(plan), 'oracle (ground truth as the model output)', progress);
  } else {
    const model = await PoseModel.load(modelPath, { featureDim: FEATURE_DIM });
    try {
      report = await runAccuracy(plan, model, modelPath, progress);
    } finally {
      await model.release();
    }
  }
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
        `- Its own held-out scores (per window, model output before tracking, PCK@0.2 of max(box width, height), a looser reference than the torso used here): ` +
          `PCK one ${fixed(o.pckOne)}, three ${fixed(o.pckThree)}, all ${fixed(o.pckAll)}; exact count ${fixed(o.countExact)}.`,
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
