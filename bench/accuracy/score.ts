/**
 * Scoring of the accuracy benchmark: every pose frame of the live pipeline against the
 * simulator's ground truth of its window's last frame, with the scorers of `training/ts/eval`.
 *
 * - 3-D skeletons (`eval/pose3d.ts`): persons' `keypoints3d` (room metres) against the true
 *   persons' joints: PCK3d@0.2 of the torso length, absolute and root-relative, MPJPE in cm,
 *   median floor error of the matched pelvises.
 * - Baseline: the mean pose (the model's training report `mean_pose`) placed at each true
 *   person's floor position (`baselineSkeleton`), scored the same way: what knowing where people
 *   stand gives without any pose.
 * - 2-D (`eval/pose.ts`): PCK@0.2 of the torso in the pixels of the known view (the scenario's own
 *   camera as `environment.view`), against the truth's pixel keypoints.
 * - Count: persons reported vs people in the room (`eval/count.ts`); occupied: both zero or both not.
 * - Activity: of the true persons matched to a reported person (Hungarian on the pelvis distance,
 *   as pose3d.ts matches), the share whose reported `activity` is the true one.
 * - Tracking: CLEAR-MOT (`eval/mot.ts`) on FLOOR positions in metres, MOT_FLOOR_M apart at most; a
 *   reported person without a floor position is no hypothesis.
 * - Identity: IDF1 (`eval/idf1.ts`) on the same floor positions and threshold.
 * - Baseline, beyond the skeleton: a system told the true floor positions and ids of everyone
 *   (so its count, MOTA and IDF1 are what the truth gives), the mean pose, always `standing`
 *   (the simulator's resting state, chosen before any run) and never a fall.
 * - Every pose scenario's tallies are also kept on their own (`PoseRun.scenarios`), for the
 *   bootstrap intervals over scenarios.
 * - Hard negatives (scripted lie-downs, sit-downs, bends): one is alerted on when a false fall
 *   episode (one that detected no fall) comes within HARD_NEGATIVE_WINDOW_S of the move's start.
 * - Falls (separate scripted scenarios, `eval/fallScripts.ts`, `eval/falls.ts`), per event as
 *   issue 11 defines it: a reported fall episode in the room within FALL_MATCH_S of a fall's start
 *   detects it, once; every other episode is a false alarm (deliberate lie-downs, sits and walks
 *   are the negatives). Beside it, stricter, the episode must also be about the person who fell
 *   (its track paired with that person by CLEAR-MOT): the floor error of today's model often puts
 *   a fall on the wrong one of two people.
 */
import type { CsiFrame } from '../../src/csi/frame.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import type { PoseRunner } from '../../src/model/runtime.js';
import { Camera } from '../../src/pose/camera.js';
import { ACTIVITIES, N_KEYPOINTS, type PoseFrame } from '../../src/pose/types.js';
import type { GroundTruth } from '../../src/sim/simulator.js';
import type { MeanPose } from '../../training/ts/evaluate.js';
import { addConfusion, addCount, emptyConfusion, MAX_TRUE_COUNT, type CountConfusion } from '../../training/ts/eval/count.js';
import { episodesFrom, scoreFalls, type FallDetection, type FallNotice, type FallScores, type TrueFall } from '../../training/ts/eval/falls.js';
import { type FallRole } from '../../training/ts/eval/fallScripts.js';
import { addIdCounts, emptyIdCounts, IdentityF1, type IdCounts } from '../../training/ts/eval/idf1.js';
import { addMotTotals, ClearMot, emptyMotTotals, type MotPoint, type MotTotals } from '../../training/ts/eval/mot.js';
import { addPoseCounts, emptyPoseCounts, scorePoseFrame, type PoseCounts, type PredictedPose } from '../../training/ts/eval/pose.js';
import { addPose3dCounts, baselineSkeleton, emptyPose3dCounts, matchByPelvis, scorePose3dFrame, type Pose3dCounts } from '../../training/ts/eval/pose3d.js';
import type { LiveParams } from '../../pipelines/settings.js';
import { runLive } from './live.js';
import { oneLinkRadios, openStream, scenarioSettings, type BenchStream, type OpenStream } from './plan.js';

/** CLEAR-MOT match threshold on floor positions, metres. */
export const MOT_FLOOR_M = 0.5;
/** A fall counts as detected by a detection at most this long after its start (issue 11: "within 3 s"). */
export const FALL_MATCH_S = 3;
/** Largest distance (m) between a fall notice's floor location and a true person, when its track was never paired with one. */
const FLOOR_ATTRIBUTION_M = 1.0;
/** Column of the activity confusion for a matched person without an activity label. */
export const NO_ACTIVITY = ACTIVITIES.length;
/** A false fall episode this long after a hard negative's start is laid at its door, seconds. */
export const HARD_NEGATIVE_WINDOW_S = 6;
/** The baseline's activity: the simulator's resting state, fixed before any run. */
export const BASELINE_ACTIVITY = 'standing';

/** Tallies of one group of pose scenarios. */
export interface PoseTally {
  scenarios: number;
  frames: number;
  pose3d: Pose3dCounts;
  baseline: Pose3dCounts;
  pose2d: PoseCounts;
  /** The baseline's skeletons through the scenario's camera. */
  baseline2d: PoseCounts;
  count: CountConfusion;
  /** Frames where "anyone there?" was answered right. */
  occupiedRight: number;
  /** Matched true persons, and of those with the right activity. */
  activityTotal: number;
  activityRight: number;
  /** activity[true][reported]: ACTIVITIES order, NO_ACTIVITY column for none. */
  activity: number[][];
  /** True persons with a known activity, and of those in BASELINE_ACTIVITY (the baseline's answer). */
  baselineActivityTotal: number;
  baselineActivityRight: number;
  /** Frames whose reported count differs from the frame before it in the same stream. */
  countChanges: number;
  /** The same for the true count (people entering and leaving). */
  trueCountChanges: number;
  /** Stream time covered, ms (first to last scored frame of each stream, summed). */
  spanMs: number;
  /** Per stream while it is scored: the previous frame's counts and the first frame's time. */
  stream: { count: number; trueCount: number; t0: number } | null;
}

export const emptyTally = (): PoseTally => ({
  scenarios: 0,
  frames: 0,
  pose3d: emptyPose3dCounts(),
  baseline: emptyPose3dCounts(),
  pose2d: emptyPoseCounts(),
  baseline2d: emptyPoseCounts(),
  count: emptyConfusion(),
  occupiedRight: 0,
  activityTotal: 0,
  activityRight: 0,
  activity: ACTIVITIES.map(() => new Array<number>(ACTIVITIES.length + 1).fill(0)),
  baselineActivityTotal: 0,
  baselineActivityRight: 0,
  countChanges: 0,
  trueCountChanges: 0,
  spanMs: 0,
  stream: null,
});

export function addTally(a: PoseTally, b: PoseTally): PoseTally {
  a.scenarios += b.scenarios;
  a.frames += b.frames;
  addPose3dCounts(a.pose3d, b.pose3d);
  addPose3dCounts(a.baseline, b.baseline);
  addPoseCounts(a.pose2d, b.pose2d);
  addPoseCounts(a.baseline2d, b.baseline2d);
  addConfusion(a.count, b.count);
  a.occupiedRight += b.occupiedRight;
  a.activityTotal += b.activityTotal;
  a.activityRight += b.activityRight;
  a.activity.forEach((row, i) => row.forEach((_, j) => (row[j]! += b.activity[i]![j]!)));
  a.baselineActivityTotal += b.baselineActivityTotal;
  a.baselineActivityRight += b.baselineActivityRight;
  a.countChanges += b.countChanges;
  a.trueCountChanges += b.trueCountChanges;
  a.spanMs += b.spanMs;
  return a;
}

const ACTIVITY_INDEX = new Map<string, number>(ACTIVITIES.map((a, i) => [a, i]));

/**
 * A skeleton in room metres as the pipeline's 2-D person: its joints through the camera (17 x
 * (u, v, 1)) and the box around those in front of it.
 * @param kp 17 x 3 room metres
 * @param camera the reference view
 * @returns keypoints and box in pixels
 */
export function projectSkeleton(kp: ArrayLike<number>, camera: Camera): PredictedPose {
  const keypoints = new Float32Array(N_KEYPOINTS * 3);
  const px = new Float64Array(2);
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let k = 0; k < N_KEYPOINTS; k++) {
    const ok = camera.project(kp[3 * k]!, kp[3 * k + 1]!, kp[3 * k + 2]!, px, 0);
    keypoints[3 * k] = ok ? px[0]! : NaN;
    keypoints[3 * k + 1] = ok ? px[1]! : NaN;
    keypoints[3 * k + 2] = ok ? 1 : 0;
    if (!ok) continue;
    x0 = Math.min(x0, px[0]!);
    y0 = Math.min(y0, px[1]!);
    x1 = Math.max(x1, px[0]!);
    y1 = Math.max(y1, px[1]!);
  }
  return { keypoints, bbox: x1 >= x0 ? [x0, y0, x1 - x0, y1 - y0] : [0, 0, 0, 0] };
}

/**
 * Scores one pose frame into a tally.
 * @param t the tally
 * @param pose the pipeline's frame
 * @param truth the ground truth of its window's last frame
 * @param mean the baseline's mean pose
 * @param camera the scenario's reference view (for the baseline's 2-D pose); without it the baseline's 2-D pose is not scored
 */
export function scoreFrame(t: PoseTally, pose: PoseFrame, truth: GroundTruth, mean: MeanPose, camera?: Camera): void {
  t.frames++;
  const preds = pose.persons.filter((p) => p.keypoints3d !== undefined);
  const predKp = preds.map((p) => p.keypoints3d!);
  const trueKp = truth.persons.map((p) => p.keypoints3d);
  const match = matchByPelvis(predKp, trueKp);
  addPose3dCounts(t.pose3d, scorePose3dFrame(predKp, trueKp, match));
  const base = truth.persons.map((p) => baselineSkeleton(mean.offsets, mean.pelvisZ, p.floor));
  addPose3dCounts(t.baseline, scorePose3dFrame(base, trueKp));
  if (camera)
    addPoseCounts(
      t.baseline2d,
      scorePoseFrame(
        base.map((b) => projectSkeleton(b, camera)),
        truth.persons,
      ),
    );
  for (const p of truth.persons) {
    if (!ACTIVITY_INDEX.has(p.activity)) continue;
    t.baselineActivityTotal++;
    if (p.activity === BASELINE_ACTIVITY) t.baselineActivityRight++;
  }
  addPoseCounts(t.pose2d, scorePoseFrame(pose.persons, truth.persons));
  addCount(t.count, Math.min(truth.personCount, MAX_TRUE_COUNT), pose.persons.length);
  // Count changes: `t` scores one stream (runPoseScenarios), so its frames follow each other.
  if (t.stream) {
    if (pose.persons.length !== t.stream.count) t.countChanges++;
    if (truth.personCount !== t.stream.trueCount) t.trueCountChanges++;
    t.spanMs = pose.time - t.stream.t0;
    t.stream.count = pose.persons.length;
    t.stream.trueCount = truth.personCount;
  } else t.stream = { count: pose.persons.length, trueCount: truth.personCount, t0: pose.time };
  if (pose.persons.length > 0 === truth.personCount > 0) t.occupiedRight++;
  // Activity of the reported person paired with each true person (the same pelvis matching).
  const R = trueKp.length;
  if (R > 0 && predKp.length > 0) {
    for (let r = 0; r < R; r++) {
      const c = match[r]!;
      if (c < 0) continue;
      const want = ACTIVITY_INDEX.get(truth.persons[r]!.activity);
      if (want === undefined) continue;
      const got = preds[c]!.activity;
      const gi = got === undefined ? NO_ACTIVITY : (ACTIVITY_INDEX.get(got) ?? NO_ACTIVITY);
      t.activityTotal++;
      if (gi === want) t.activityRight++;
      t.activity[want]![gi]!++;
    }
  }
}

/** True persons as CLEAR-MOT objects: their floor positions. */
export function floorObjects(truth: GroundTruth): MotPoint[] {
  return truth.persons.map((p) => ({ id: p.id, x: p.floor.x, y: p.floor.y }));
}

/** Reported persons with a floor position as CLEAR-MOT hypotheses; one without a track id is a new identity every frame. */
export function floorHypotheses(pose: PoseFrame, anonymous: { next: number }): MotPoint[] {
  const out: MotPoint[] = [];
  for (const p of pose.persons) {
    if (!p.floor || !Number.isFinite(p.floor.x) || !Number.isFinite(p.floor.y)) continue;
    out.push({ id: p.trackId ?? anonymous.next--, x: p.floor.x, y: p.floor.y });
  }
  return out;
}

/** One pose scenario's own figures (the unit of the bootstrap). */
export interface ScenarioTally {
  /** People placed. */
  people: number;
  tally: PoseTally;
  mot: MotTotals;
  id: IdCounts;
  /** The baseline's tracking: the true floor positions and ids as its hypotheses. */
  baselineMot: MotTotals;
  baselineId: IdCounts;
}

/** Results of a setting's pose scenarios. */
export interface PoseRun {
  /** By people placed in the scenario, 0..MAX_TRUE_COUNT. */
  groups: PoseTally[];
  all: PoseTally;
  mot: MotTotals;
  /** IDF1 counts, summed over scenarios. */
  id: IdCounts;
  baselineMot: MotTotals;
  baselineId: IdCounts;
  scenarios: ScenarioTally[];
  csiFrames: number;
}

/** How a setting runs its streams. */
export interface SettingContext {
  /** The models, each a lane of its own over the same simulated frames (`runLive`). */
  models: readonly PoseRunner[];
  /** The service's live settings (each scenario gets its own view, receiver and site on top). */
  settings: LiveParams;
  /** Feed the site to the model. */
  siteKnown: boolean;
  mean: MeanPose;
  progress: (msg: string) => void;
  /** Prefix of progress lines. */
  label: string;
  /** Seconds of the installation's empty room fed before each stream, unscored (a v3 refiner's front end learns the static channel from them); default 0. */
  emptySeconds?: number;
  /** Per stream, what sees every frame and its truth before the lanes (the oracle's indexer); none without. */
  observe?: (s: BenchStream, open: OpenStream) => ((frame: CsiFrame, truth: GroundTruth) => void) | undefined;
}

/** The radios a stream's pipeline is told of: its own site, or the recipe's one link. */
function streamRadios(s: BenchStream): readonly RadioConfig[] {
  return s.radios ?? oneLinkRadios(s.recipe);
}

/** Empty pose results. */
function emptyPoseRun(): PoseRun {
  return {
    groups: Array.from({ length: MAX_TRUE_COUNT + 1 }, emptyTally),
    all: emptyTally(),
    mot: emptyMotTotals(),
    id: emptyIdCounts(),
    baselineMot: emptyMotTotals(),
    baselineId: emptyIdCounts(),
    scenarios: [],
    csiFrames: 0,
  };
}

/**
 * Runs and scores pose scenarios, every model on the same frames.
 * @param ctx models, settings, baseline, progress
 * @param streams the scenarios
 * @returns per model: tallies by people, overall, per scenario, CLEAR-MOT and IDF1 totals
 */
export async function runPoseScenarios(ctx: SettingContext, streams: readonly BenchStream[]): Promise<PoseRun[]> {
  const runs = ctx.models.map(emptyPoseRun);
  for (const [i, s] of streams.entries()) {
    const open = openStream(s, ctx.emptySeconds ?? 0);
    const camera = new Camera(s.recipe.camera);
    const lanes = ctx.models.map((model) => {
      const g = emptyTally();
      g.scenarios = 1;
      const state = {
        g,
        tracker: new ClearMot(MOT_FLOOR_M),
        ids: new IdentityF1(MOT_FLOOR_M),
        baseTracker: new ClearMot(MOT_FLOOR_M),
        baseIds: new IdentityF1(MOT_FLOOR_M),
        anonymous: { next: -1 },
      };
      const visit = (pose: PoseFrame, truth: GroundTruth) => {
        scoreFrame(g, pose, truth, ctx.mean, camera);
        const objects = floorObjects(truth);
        const hyps = floorHypotheses(pose, state.anonymous);
        state.tracker.update(objects, hyps);
        state.ids.update(objects, hyps);
        state.baseTracker.update(objects, objects);
        state.baseIds.update(objects, objects);
      };
      return { model, visit, state };
    });
    const st = await runLive(lanes, scenarioSettings(ctx.settings, s.recipe, ctx.siteKnown), open, streamRadios(s), undefined, ctx.observe?.(s, open));
    lanes.forEach(({ state }, m) => {
      const run = runs[m]!;
      run.csiFrames += st.csiFrames;
      addTally(run.groups[Math.min(open.people, MAX_TRUE_COUNT)]!, state.g);
      addTally(run.all, state.g);
      addMotTotals(run.mot, state.tracker.totals);
      addMotTotals(run.baselineMot, state.baseTracker.totals);
      const own: ScenarioTally = {
        people: open.people,
        tally: state.g,
        mot: state.tracker.totals,
        id: state.ids.counts(),
        baselineMot: state.baseTracker.totals,
        baselineId: state.baseIds.counts(),
      };
      addIdCounts(run.id, own.id);
      addIdCounts(run.baselineId, own.baselineId);
      run.scenarios.push(own);
    });
    ctx.progress(`${ctx.label}: pose scenario ${i + 1}/${streams.length}: ${open.people} people, ${st.poseFrames.join(' / ')} pose frames`);
  }
  return runs;
}

/** One scripted person's outcome. */
export interface PersonOutcome {
  role: FallRole;
  /** True falls of this person (0 or 1 in these scripts). */
  falls: number;
  detected: number;
  delaysMs: number[];
  falseAlarms: number;
}

/** Results of a setting's fall scenarios. */
export interface FallRun {
  /**
   * Per event in the room (issue 11's definition): a reported fall episode of any track within
   * FALL_MATCH_S of a fall's start detects it, once; every other episode is a false alarm.
   */
  scores: FallScores;
  /** Stricter: the episode must also be about the person who fell (see `attribute`). */
  byPerson: FallScores;
  people: PersonOutcome[];
  /** False alarms that could not be put on any true person. */
  unattributedFalseAlarms: number;
  /** Scheduled falls that the simulator did not start (should be 0). */
  missingFalls: number;
  /** Scripted hard negatives (lie-downs, sit-downs, bends) scored, per role. */
  hardNegatives: Array<{ role: FallRole; alerted: boolean }>;
  /** Per scenario: true falls, detected ones (per event in the room) and the sum of their delays, ms (for the bootstrap of the delay). */
  perScenario: Array<{ falls: number; detected: number; delaySumMs: number }>;
  csiFrames: number;
  windowMs: number;
  scenarios: number;
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

/** What one model's lane collects over the fall scenarios. */
interface FallLane {
  allFalls: TrueFall[];
  allEpisodes: FallDetection[];
  roomEpisodes: FallDetection[];
  owner: PersonOutcome[];
  fallOwner: number[];
  episodeOwner: number[];
}

/**
 * Runs and scores scripted fall scenarios, every model on the same frames.
 * @param ctx models, settings, progress
 * @param streams the scenarios (each with its script)
 * @returns per model: scores, per-person outcomes, hard negatives and counts
 */
export async function runFallScenarios(ctx: SettingContext, streams: readonly BenchStream[]): Promise<FallRun[]> {
  const windowMs = FALL_MATCH_S * 1000;
  // The truth, the same for every lane: per scenario (the room) every fall of scenario i is "person" i.
  const roomFalls: TrueFall[] = [];
  const scenarioOf: number[] = [];
  // Per fall, its person (made unique over scenarios, in scripted order).
  const fallPerson: number[] = [];
  const roles: FallRole[] = [];
  let missingFalls = 0;
  let csiFrames = 0;
  // Hard negatives: the scenario, the role and the epoch ms the move starts.
  const negatives: Array<{ scenario: number; role: FallRole; at: number }> = [];
  const lanes: FallLane[] = ctx.models.map(() => ({ allFalls: [], allEpisodes: [], roomEpisodes: [], owner: [], fallOwner: [], episodeOwner: [] }));
  for (const [i, s] of streams.entries()) {
    const people = s.script ?? [];
    const open = openStream(s, ctx.emptySeconds ?? 0);
    const base = roles.length;
    for (const p of people) roles.push(p.role);
    const falls: TrueFall[] = [];
    let t0 = NaN;
    const live = ctx.models.map((model) => {
      const notices: FallNotice[] = [];
      const tracker = new ClearMot(MOT_FLOOR_M);
      const anonymous = { next: -1 };
      const visit = (pose: PoseFrame, truth: GroundTruth) => {
        tracker.update(floorObjects(truth), floorHypotheses(pose, anonymous));
        for (const n of [...(pose.alerts ?? []), ...(pose.events ?? [])]) {
          if (n.type !== 'fall_detection') continue;
          notices.push({ type: n.type, time: n.time, trackId: n.trackId, metadata: n.metadata, personId: attribute(tracker, n.trackId, n.location, truth) });
        }
      };
      return { model, visit, notices };
    });
    const st = await runLive(
      live,
      scenarioSettings(ctx.settings, s.recipe, ctx.siteKnown),
      open,
      streamRadios(s),
      (truth) => {
        if (Number.isNaN(t0)) t0 = truth.time;
        // With several links each tick's samples may repeat its events: a fall is counted once.
        for (const e of truth.events)
          if (e.type === 'fall_start' && !falls.some((f) => f.personId === e.personId && f.start === e.time))
            falls.push({ personId: e.personId, start: e.time });
      },
      ctx.observe?.(s, open),
    );
    csiFrames += st.csiFrames;
    // Script times are seconds from tick 0 (the first sample's time).
    for (const p of people) if (p.negativeAt !== null) negatives.push({ scenario: i, role: p.role, at: t0 + p.negativeAt * 1000 });
    const scheduled = people.filter((p) => p.fallAt !== null).length;
    missingFalls += Math.max(0, scheduled - falls.length);
    for (const f of falls) {
      scenarioOf.push(i);
      roomFalls.push({ personId: i, start: f.start });
      fallPerson.push(base + f.personId);
    }
    live.forEach(({ notices }, m) => {
      const lane = lanes[m]!;
      for (const e of episodesFrom(notices)) {
        lane.roomEpisodes.push({ ...e, personId: i });
        const pid = e.personId === null ? null : base + e.personId;
        lane.allEpisodes.push({ ...e, personId: pid });
        lane.episodeOwner.push(pid ?? -1);
      }
    });
    ctx.progress(
      `${ctx.label}: fall scenario ${i + 1}/${streams.length}: ${people.map((p) => p.role).join(', ')}; ${falls.length} falls, ${live.map((l) => l.notices.length).join(' / ')} notices`,
    );
  }
  const allFalls = roomFalls.map((f, k) => ({ personId: fallPerson[k]!, start: f.start }));
  return lanes.map((lane) => {
    const owner: PersonOutcome[] = roles.map((role) => ({ role, falls: 0, detected: 0, delaysMs: [], falseAlarms: 0 }));
    for (const p of fallPerson) owner[p]!.falls++;
    // Person ids are made unique over scenarios above, so one scoring covers them all.
    const scores = scoreFalls(allFalls, lane.allEpisodes, windowMs);
    const room = scoreFalls(roomFalls, lane.roomEpisodes, windowMs);
    const perScenario = streams.map(() => ({ falls: 0, detected: 0, delaySumMs: 0 }));
    room.fallDetectedBy.forEach((d, f) => {
      const sc = perScenario[scenarioOf[f]!]!;
      sc.falls++;
      if (d < 0) return;
      sc.detected++;
      sc.delaySumMs += lane.roomEpisodes[d]!.time - roomFalls[f]!.start;
    });
    // A false episode (per event in the room) within the window after a hard negative's start in the same scenario.
    const falseEpisodes = lane.roomEpisodes.filter((_, d) => room.detectionFall[d]! < 0);
    const hardNegatives = negatives.map((n) => ({
      role: n.role,
      alerted: falseEpisodes.some((e) => e.personId === n.scenario && e.time >= n.at && e.time <= n.at + HARD_NEGATIVE_WINDOW_S * 1000),
    }));
    let unattributed = 0;
    scores.fallDetectedBy.forEach((d, f) => {
      if (d < 0) return;
      const o = owner[fallPerson[f]!]!;
      o.detected++;
      o.delaysMs.push(lane.allEpisodes[d]!.time - allFalls[f]!.start);
    });
    scores.detectionFall.forEach((f, d) => {
      if (f >= 0) return;
      const who = lane.episodeOwner[d]!;
      if (who >= 0) owner[who]!.falseAlarms++;
      else unattributed++;
    });
    return {
      scores: room,
      byPerson: scores,
      people: owner,
      unattributedFalseAlarms: unattributed,
      missingFalls,
      hardNegatives,
      perScenario,
      csiFrames,
      windowMs,
      scenarios: streams.length,
    };
  });
}
