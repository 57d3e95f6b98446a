/**
 * What the accuracy benchmark simulates: the plans, the scenario recipes of its two settings, and
 * the CSI streams they become (shared with the oracle, `bench/oracle.ts`, which must see exactly
 * the frames the benchmark feeds).
 *
 * - `unseen`: TEST recipes of the training recipe (rooms, antenna layouts and seeds in the held-out
 *   bands, checked with `isHeldOut`), pose scenarios and scripted fall scenarios, every one in a
 *   room of its own.
 * - `room`: ONE held-out room (drawn from the plan seed, made an Intel 5300 layout: 30 subcarriers,
 *   3 x 3 antennas), the calibration sessions recorded there (empty, then 1, 2 and 3 generated people), then
 *   later sessions in the same room with other seeds (other people, heights and motion): pose
 *   scenarios and scripted falls. Its frames pass through the Intel 5300 record format (encode,
 *   then decode: int8 CSI, per-record scale) as a real installation's card would deliver them.
 */
import { deepFreeze, defaults } from '../../src/config/schema.js';
import type { ConfigSnapshot } from '../../src/config/store.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { Intel5300Decoder } from '../../src/decoders/intel5300.js';
import { encodeIntel5300 } from '../../src/encoders/intel5300.js';
import { formatSite } from '../../src/model/contract.js';
import { Camera, viewSettings } from '../../src/pose/camera.js';
import { deriveSeed, Rng } from '../../src/sim/rng.js';
import { CsiSimulator, type SimOptions, type SimSample } from '../../src/sim/simulator.js';
import { simOptions } from '../../src/training/dataset.js';
import { fallScenarioPeople, ROLE_ROTATION, type ScriptedPerson } from '../../src/training/eval/fallScripts.js';
import { isHeldOut, makeRecipes, recipeSite, type ScenarioRecipe } from '../../src/training/recipe.js';
import { liveParams, type LiveParams } from '../../pipelines/settings.js';

/** The benchmark's two settings (DECISIONS "Benchmark output" `accuracy.S.*`). */
export type Setting = 'unseen' | 'room';
export const SETTINGS: readonly Setting[] = ['unseen', 'room'];

/** The same-room setting: calibration and the later sessions. */
export interface RoomPlan {
  /** Seconds recorded for calibration in all, split equally over the sessions. */
  calibrationSeconds: number;
  /** People of each calibration session (one session per entry; generated behaviour). */
  calibrationPeople: readonly number[];
  /** Epochs of `calibrate` (default: its own default). */
  calibrationEpochs?: number;
  poseScenarios: number;
  poseSeconds: number;
  fallScenarios: number;
  fallSeconds: number;
}

/** How much to simulate. */
export interface AccuracyPlan {
  /** Master seed of every scenario. */
  seed: number;
  /** Recipe split the scenarios come from: `test` (held out, the reported scores) or `val` (for choosing settings). */
  split: 'test' | 'val';
  /** The unseen setting's pose scenarios (each in its own room) and their simulated seconds. */
  poseScenarios: number;
  poseSeconds: number;
  /** The unseen setting's scripted fall scenarios. */
  fallScenarios: number;
  fallSeconds: number;
  /**
   * Feed each unseen scenario's own site geometry (room size, radio positions: what an installer
   * enters as `environment.site`) to the model's `site` input; default true. False withholds it
   * (the receiver position and the view are still set: skeletons are relative to the receiver).
   * The room setting always knows its site.
   */
  site?: boolean;
  /** Which settings to run; default both. */
  settings?: readonly Setting[];
  room: RoomPlan;
}

/** The full run: a few minutes per setting on 2 cores. */
export const FULL_PLAN: Readonly<AccuracyPlan> = deepFreeze({
  seed: 4242,
  split: 'test',
  poseScenarios: 60,
  poseSeconds: 30,
  fallScenarios: 48,
  fallSeconds: 25,
  site: true,
  room: { calibrationSeconds: 900, calibrationPeople: [0, 1, 2, 3], poseScenarios: 40, poseSeconds: 30, fallScenarios: 32, fallSeconds: 25 },
});

/** `--quick`: a handful of scenarios per setting and 2 minutes of calibration, under two minutes in all. */
export const QUICK_PLAN: Readonly<AccuracyPlan> = deepFreeze({
  seed: 4242,
  split: 'test',
  poseScenarios: 6,
  poseSeconds: 12,
  fallScenarios: 4,
  fallSeconds: 25,
  site: true,
  room: { calibrationSeconds: 120, calibrationPeople: [0, 1, 2, 3], poseScenarios: 4, poseSeconds: 12, fallScenarios: 4, fallSeconds: 25 },
});

/** The settings a plan runs. */
export const planSettings = (plan: AccuracyPlan): readonly Setting[] => plan.settings ?? SETTINGS;

/** The live parameters of a service running on the default configuration (`liveParams`). */
export function defaultLiveParams(): LiveParams {
  // The service's own mapping from configuration to operator parameters, on the default configuration.
  return liveParams(deepFreeze(defaults()) as ConfigSnapshot);
}

/**
 * The live settings of one scenario: its room's reference camera as `environment.view`, its
 * receiver position as `environment.site.receiver_x/_y`, and with `siteKnown` its whole site as
 * the model's `site` input.
 * @param base the service's settings
 * @param r the scenario's recipe
 * @param siteKnown feed the site to the model
 * @returns the settings
 */
export function scenarioSettings(base: LiveParams, r: ScenarioRecipe, siteKnown: boolean): LiveParams {
  const v = viewSettings(r.camera);
  return {
    ...base,
    infer: {
      ...base.infer,
      site: siteKnown ? formatSite(recipeSite(r)) : '',
      viewWidth: v.width,
      viewHeight: v.height,
      viewHfovDeg: v.hfov_deg,
      viewX: v.x,
      viewY: v.y,
      viewZ: v.z,
      viewYawDeg: v.yaw_deg,
      viewPitchDeg: v.pitch_deg,
      receiverX: r.rx.x,
      receiverY: r.rx.y,
    },
  };
}

const familyCheck = (rs: readonly ScenarioRecipe[], split: 'test' | 'val'): void => {
  for (const r of rs) {
    if (r.split !== split || isHeldOut(r) !== (split === 'test')) throw new Error(`scenario ${r.id} is not in the ${split === 'test' ? 'held-out TEST' : 'VALIDATION'} family`);
  }
};

/**
 * The recipes of the unseen setting: TEST recipes checked to be in the held-out bands, or with
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
  familyCheck([...pose, ...fall], split);
  return { pose, fall };
}

/**
 * People of the room setting's later pose sessions, in turn: TEST_PEOPLE_WEIGHTS' shares over 20
 * sessions (2 empty, 6 with one person, 3 with two, 6 with three, 3 with four), spread so that
 * any first few sessions mix counts.
 */
export const ROOM_PEOPLE_ROTATION: readonly number[] = [1, 3, 2, 4, 1, 3, 0, 1, 3, 2, 4, 1, 3, 0, 1, 3, 2, 4, 1, 3];

/** The room setting's recipes, all in one room. */
export interface RoomRecipes {
  /** The room (people 0): geometry, layout, camera, impairments. */
  room: ScenarioRecipe;
  /** Calibration sessions (people as the plan says). */
  calibration: ScenarioRecipe[];
  /** Later pose sessions. */
  pose: ScenarioRecipe[];
  /** Later scripted fall sessions. */
  fall: ScenarioRecipe[];
}

/**
 * The room of the same-room setting and its sessions. The room is the first recipe of its own
 * generator stream of the plan's split (held-out bands for TEST), made an Intel 5300 layout
 * (30 subcarriers, 3 x 3, no extra quantisation: the record format quantises to int8). Every
 * session is that room with a simulator seed of its own (one stream, no seed twice), so people,
 * body sizes and motion differ while the room, radios, camera and channel impairments stay.
 * @param plan the plan
 * @returns the room and its sessions
 */
export function roomRecipes(plan: AccuracyPlan): RoomRecipes {
  const split = plan.split;
  const [drawn] = makeRecipes(deriveSeed(plan.seed, 4), { train: 0, val: split === 'val' ? 1 : 0, test: split === 'test' ? 1 : 0, seconds: plan.room.poseSeconds });
  const room: ScenarioRecipe = { ...drawn!, id: 900_000, nSub: 30, nRx: 3, nTx: 3, quantizeBits: null, people: 0 };
  familyCheck([room], split);
  const rng = new Rng(deriveSeed(plan.seed, 5));
  const seen = new Set<number>();
  let id = room.id;
  const session = (people: number, seconds: number): ScenarioRecipe => {
    let seed = rng.nextUint32();
    while (seen.has(seed)) seed = rng.nextUint32();
    seen.add(seed);
    return { ...room, id: ++id, seed, people, seconds };
  };
  const rp = plan.room;
  const each = rp.calibrationSeconds / Math.max(1, rp.calibrationPeople.length);
  const calibration = rp.calibrationPeople.map((people) => session(people, each));
  const pose = Array.from({ length: rp.poseScenarios }, (_, i) => session(ROOM_PEOPLE_ROTATION[i % ROOM_PEOPLE_ROTATION.length]!, rp.poseSeconds));
  const fall = Array.from({ length: rp.fallScenarios }, () => session(0, rp.fallSeconds));
  return { room, calibration, pose, fall };
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

/** Simulator options of a scripted fall scenario in a recipe's room and layout. */
export function fallSimOptions(r: ScenarioRecipe, people: readonly ScriptedPerson[]): SimOptions {
  return { ...simOptions(r, 0), people: people.map((p) => p.spec), environmentId: `fall-${r.id}` };
}

/**
 * Plans the people of each fall scenario: main role by rotation, 0-2 companions with negative
 * roles, everything inside the room's reference camera view.
 * @param recipes recipes giving rooms, layouts and seeds
 * @returns per recipe its scripted people
 */
export function planFallScenarios(recipes: readonly ScenarioRecipe[]): ScriptedPerson[][] {
  return recipes.map((r, i) =>
    fallScenarioPeople(r.room, new Rng(deriveSeed(r.seed, 31)), ROLE_ROTATION[i % ROLE_ROTATION.length]!, i % 3, new Camera(r.camera)),
  );
}

/**
 * Passes frames through the Intel 5300 record format: each frame is encoded as a `log_to_file`
 * record (`encodeIntel5300`) and decoded again, so the pipeline sees what the card delivers (int8
 * CSI, one scale per record). The frame keeps its time, sequence number and ids.
 */
export class Intel5300Link {
  private readonly decoder: Intel5300Decoder;
  private out: CsiFrame | undefined;
  private readonly take = (f: CsiFrame) => {
    this.out = f;
  };
  constructor(sourceId = 'intel5300') {
    this.decoder = new Intel5300Decoder({ sourceId });
  }
  pass(f: CsiFrame): CsiFrame {
    this.out = undefined;
    this.decoder.push(encodeIntel5300(f), this.take);
    const d = this.out as CsiFrame | undefined;
    if (!d) throw new Error('Intel 5300 link: a record did not decode');
    return { ...d, time: f.time, seq: f.seq, sourceId: f.sourceId, environmentId: f.environmentId };
  }
}

/** One simulated stream the benchmark feeds to the live pipeline. */
export interface BenchStream {
  recipe: ScenarioRecipe;
  /** Scripted people (fall scenarios); null for generated behaviour. */
  script: ScriptedPerson[] | null;
  /** Whether its frames pass through the Intel 5300 record format. */
  intel5300: boolean;
}

/** An opened stream: its simulator, how many frames to feed, and the next sample as the pipeline sees it. */
export interface OpenStream {
  sim: CsiSimulator;
  /** People actually placed. */
  people: number;
  frames: number;
  next(): SimSample;
}

/**
 * Opens a stream: the same frames every time.
 * @param s the stream
 * @returns the simulator and a sampler whose frames are what the pipeline is fed
 */
export function openStream(s: BenchStream): OpenStream {
  const { sim, people } = s.script ? { sim: new CsiSimulator(fallSimOptions(s.recipe, s.script)), people: s.script.length } : recipeSimulator(s.recipe);
  const link = s.intel5300 ? new Intel5300Link(`intel5300-${s.recipe.id}`) : null;
  return {
    sim,
    people,
    frames: Math.round(s.recipe.seconds * sim.rateHz),
    next() {
      const x = sim.next();
      return link ? { frame: link.pass(x.frame), truth: x.truth } : x;
    },
  };
}

/** The streams of both settings' scored sessions (not the calibration recordings). */
export interface PlanStreams {
  unseen: { pose: BenchStream[]; fall: BenchStream[] };
  room: { pose: BenchStream[]; fall: BenchStream[] };
}

/**
 * Every scored stream of a plan, per setting (a setting the plan does not run has none).
 * @param plan the plan
 * @returns the streams
 */
export function planStreams(plan: AccuracyPlan): PlanStreams {
  const run = planSettings(plan);
  const out: PlanStreams = { unseen: { pose: [], fall: [] }, room: { pose: [], fall: [] } };
  if (run.includes('unseen')) {
    const r = benchRecipes(plan);
    const scripts = planFallScenarios(r.fall);
    out.unseen.pose = r.pose.map((recipe) => ({ recipe, script: null, intel5300: false }));
    out.unseen.fall = r.fall.map((recipe, i) => ({ recipe, script: scripts[i]!, intel5300: false }));
  }
  if (run.includes('room')) {
    const r = roomRecipes(plan);
    const scripts = planFallScenarios(r.fall);
    out.room.pose = r.pose.map((recipe) => ({ recipe, script: null, intel5300: true }));
    out.room.fall = r.fall.map((recipe, i) => ({ recipe, script: scripts[i]!, intel5300: true }));
  }
  return out;
}
