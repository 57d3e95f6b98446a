/**
 * The accuracy benchmark's report: DECISIONS "Benchmark output" results (`--json`: the third
 * round's `accuracy.S.*` with `baseline.*` and `oracle.*` and their 95 % intervals, then the
 * earlier rounds' names) and the Markdown tables (the third round's figures per setting beside
 * baseline, oracle and the next issue's targets; the earlier headline; the uncalibrated model in
 * the room; by-people tables, count and activity confusions, tracking, falls by role and hard
 * negatives, calibration).
 */
import { ACTIVITIES } from '../../src/pose/types.js';
import type { MeanPose } from '../../training/ts/evaluate.js';
import { countScores, MAX_REPORTED_COLUMN, MAX_TRUE_COUNT } from '../../training/ts/eval/count.js';
import { FALL_ROLES, HARD_NEGATIVE_ROLES, NEGATIVE_ROLES } from '../../training/ts/eval/fallScripts.js';
import { motScores } from '../../training/ts/eval/mot.js';
import { PCK_ALPHA, poseScores } from '../../training/ts/eval/pose.js';
import { PCK3D_ALPHA, pose3dScores } from '../../training/ts/eval/pose3d.js';
import type { ScenarioRecipe } from '../../training/ts/recipe.js';
import type { LiveParams } from '../../pipelines/settings.js';
import { fixed, machine, percent, type BenchResult } from '../lib.js';
import { figureResults, settingFigures, type Figure } from './figures.js';
import { SETTINGS, type AccuracyPlan, type Setting } from './plan.js';
import type { Calibration, RefinerCalibration } from './room.js';
import { FALL_MATCH_S, HARD_NEGATIVE_WINDOW_S, MOT_FLOOR_M, type FallRun, type PoseRun, type PoseTally } from './score.js';

/** What one setting found. */
export interface SettingRun {
  pose: PoseRun;
  falls: FallRun;
  /** Wall-clock seconds (not in the JSON results: they must repeat exactly). */
  seconds: number;
}

/** The same-room setting: the calibrated model, and the model under test as it came. */
export interface RoomRun extends SettingRun {
  room: ScenarioRecipe;
  /** null with the oracle (scored directly, nothing to calibrate). */
  calibration: Calibration | RefinerCalibration | null;
  /** The model under test without calibration on the same sessions; null with the oracle. */
  uncalibrated: SettingRun | null;
}

/** Everything one accuracy run found. */
export interface AccuracyReport {
  plan: AccuracyPlan;
  modelPath: string;
  modelVersion: string;
  trainedOn: string;
  contractTestModel: boolean;
  oracle: boolean;
  settings: LiveParams;
  /** Whether `settings` are the service's defaults (not given by the caller). */
  defaultSettings: boolean;
  meanPose: MeanPose;
  /** Where the baseline's mean pose came from. */
  meanPoseSource: string;
  /** 1 TX + 3 RX in unseen rooms; null when not run (see `skipped`). */
  unseen: SettingRun | null;
  /** The same scenarios, one link. */
  unseen1: SettingRun | null;
  room: RoomRun | null;
  /** The oracle (ground truth through the pipeline) on the same streams, per setting run; null when not run. */
  oracleRuns: Partial<Record<Setting, SettingRun>> | null;
  /** Settings asked for but not run, and why. */
  skipped: Partial<Record<Setting, string>>;
  seconds: number;
  /** CPU seconds of the process (user + system) over the run: the machine's load does not inflate it. */
  cpuSeconds: number;
  results: BenchResult[];
}

/** A setting's run in a report. */
export const settingRun = (r: AccuracyReport, s: Setting): SettingRun | null => (s === 'unseen' ? r.unseen : s === 'unseen1' ? r.unseen1 : r.room);

/** The oracle's run of a setting: the run itself when the oracle is the model under test. */
export const oracleRun = (r: AccuracyReport, s: Setting): SettingRun | null => (r.oracle ? settingRun(r, s) : (r.oracleRuns?.[s] ?? null));

/** What each setting is, for titles. */
export const SETTING_TITLES: Record<Setting, string> = {
  unseen: 'Unseen rooms, 1 TX + 3 RX',
  unseen1: 'Unseen rooms, one link',
  room: 'Same room',
};

export const GROUP_NAMES = ['zero', 'one', 'two', 'three', 'four'] as const;

/** What the numbers are, said next to each one. */
function baseNote(r: AccuracyReport, s: Setting): string {
  const val = r.plan.split === 'val';
  const where =
    s === 'unseen' || s === 'unseen1'
      ? (s === 'unseen' ? '1 TX + 3 RX, every link fed (the one-link model reads the primary); ' : 'one link; ') +
        (val
          ? 'simulated VALIDATION scenarios (training rooms and layouts, unseen seeds): for choosing settings, not the reported scores'
          : `simulated held-out TEST scenarios (unseen rooms, antenna layouts, seeds), site ${r.plan.site === false ? 'withheld' : 'given'}; real CSI will score lower`)
      : r.oracle
        ? `simulated, one ${val ? 'VALIDATION' : 'held-out'} room, later sessions (oracle: no calibration)`
        : `simulated, one ${val ? 'VALIDATION' : 'held-out'} room after calibration on ${(r.plan.room.calibrationSeconds / 60).toFixed(1)} min of its own labelled sessions, scored on later sessions with other people; real CSI will score lower`;
  return (
    where +
    (r.oracle ? '; ORACLE (the ground truth as model output): a check of the harness, not a model' : '') +
    (r.contractTestModel ? '; CONTRACT TEST MODEL, not a trained one: meaningless as accuracy' : '')
  );
}

/** Activity accuracy of a tally (NaN without matched persons). */
export const activityOf = (t: PoseTally): number => (t.activityTotal > 0 ? t.activityRight / t.activityTotal : NaN);
/** Occupied-or-not accuracy of a tally. */
export const occupiedOf = (t: PoseTally): number => (t.frames > 0 ? t.occupiedRight / t.frames : NaN);

/**
 * The DECISIONS results of one setting's run, named `accuracy.<prefix>.*`.
 * @param prefix e.g. `unseen`, `room`, `room.uncalibrated`
 * @param run the setting's pose and fall runs
 * @param note what the numbers are
 * @param brief only the headline names (for `room.uncalibrated`)
 */
function settingResults(prefix: string, run: SettingRun, note: string, brief = false, skip: ReadonlySet<string> = new Set()): BenchResult[] {
  const out: BenchResult[] = [];
  const n = (extra: string) => `${extra}; ${note}`;
  const { groups, all, mot } = run.pose;
  const add = (name: string, value: number, unit: string, count: number, extra: string) => {
    // The third round gives this name itself (with its interval).
    if (!skip.has(`accuracy.${prefix}.${name}`)) out.push({ name: `accuracy.${prefix}.${name}`, value, unit, n: count, note: n(extra) });
  };
  const p3 = (t: PoseTally) => pose3dScores(t.pose3d);
  const b3 = (t: PoseTally) => pose3dScores(t.baseline);
  const ks = brief ? [1, 3] : [1, 2, 3, 4];
  for (const k of ks)
    add(`pck3d.${GROUP_NAMES[k]}`, p3(groups[k]!).pck3d, 'fraction', groups[k]!.scenarios, `${groups[k]!.pose3d.joints} joints, ${groups[k]!.frames} frames`);
  const sAll = p3(all);
  if (!brief) {
    add('pck3d.all', sAll.pck3d, 'fraction', all.scenarios, `${all.pose3d.joints} joints, ${all.frames} frames`);
    for (const k of [1, 3])
      add(`pck3d_rel.${GROUP_NAMES[k]}`, p3(groups[k]!).pck3dRel, 'fraction', groups[k]!.scenarios, 'root-relative: pelvises made to coincide');
    add('pck3d_rel.all', sAll.pck3dRel, 'fraction', all.scenarios, 'root-relative: pelvises made to coincide');
    add('mpjpe_cm', sAll.mpjpeCm, 'cm', all.scenarios, `${all.pose3d.errorCount} joints of matched persons`);
    add('mpjpe_rel_cm', sAll.mpjpeRelCm, 'cm', all.scenarios, 'root-relative');
  }
  add('floor_median_m', sAll.floorMedianM, 'm', all.scenarios, `${all.pose3d.floorErrors.length} matched persons, pelvis on the floor plan`);
  if (!brief) {
    for (const k of [1, 3])
      add(`baseline.pck3d.${GROUP_NAMES[k]}`, b3(groups[k]!).pck3d, 'fraction', groups[k]!.scenarios, 'mean pose at the true floor position');
    add('baseline.pck3d.all', b3(all).pck3d, 'fraction', all.scenarios, 'mean pose at the true floor position');
    add('baseline.mpjpe_cm', b3(all).mpjpeCm, 'cm', all.scenarios, 'mean pose at the true floor position');
    for (const k of [1, 3]) {
      const g = poseScores(groups[k]!.pose2d);
      add(`pck2d.${GROUP_NAMES[k]}`, g.pck, 'fraction', groups[k]!.scenarios, `${g.keypoints} visible keypoints, pixels of the known view`);
    }
    const g2 = poseScores(all.pose2d);
    add('pck2d.all', g2.pck, 'fraction', all.scenarios, `${g2.keypoints} visible keypoints, pixels of the known view`);
  }
  const c = countScores(all.count);
  add('count_exact', c.exact, 'fraction', all.scenarios, `${c.frames} frames`);
  if (!brief)
    for (let k = 0; k <= MAX_TRUE_COUNT; k++)
      add(`count_exact.${GROUP_NAMES[k]}`, c.exactByTrue[k]!, 'fraction', groups[k]!.scenarios, `${c.framesByTrue[k]} frames`);
  add('occupied', occupiedOf(all), 'fraction', all.scenarios, `${all.frames} frames, empty vs occupied`);
  const minutes = all.spanMs / 60_000;
  add(
    'count_changes_per_min',
    all.countChanges / minutes,
    'per min',
    all.scenarios,
    `reported count changed ${all.countChanges} times in ${fixed(minutes, 1)} min of streams`,
  );
  add('true_count_changes_per_min', all.trueCountChanges / minutes, 'per min', all.scenarios, `people entered or left ${all.trueCountChanges} times`);
  add('activity', activityOf(all), 'fraction', all.scenarios, `${all.activityTotal} matched true persons`);
  const m = motScores(mot);
  add('mota', m.mota, 'ratio', all.scenarios, `${m.objects} true objects, CLEAR-MOT on floor positions, ${MOT_FLOOR_M} m`);
  if (!brief) {
    add('id_switches', m.switches, 'switches', all.scenarios, `${m.objects} true objects`);
    add('motp_m', m.motp, 'm', all.scenarios, `${mot.matches} pairs`);
  }
  const f = run.falls.scores;
  const nf = run.falls.scenarios;
  add('fall_precision', f.precision, 'fraction', nf, `${f.detections} reported fall episodes, per event in the room`);
  add('fall_recall', f.recall, 'fraction', nf, `${f.falls} true falls, detected within ${FALL_MATCH_S} s of the fall start by an episode in the room`);
  const fp = run.falls.byPerson;
  add('fall_precision_person', fp.precision, 'fraction', nf, `${fp.detections} reported fall episodes, each also about the person who fell`);
  add('fall_recall_person', fp.recall, 'fraction', nf, `${fp.falls} true falls, detected within ${FALL_MATCH_S} s by an episode about the person who fell`);
  if (!brief) add('fall_delay_s', f.meanDelayMs / 1000, 's', nf, `${f.detected} detected falls, fall start to first notice`);
  return out;
}

/**
 * The DECISIONS "Benchmark output" results of a report.
 * @param r the report (its `results` are not read)
 * @returns the results, in a fixed order
 */
export function resultsOf(r: AccuracyReport): BenchResult[] {
  const out: BenchResult[] = [];
  // The third round: per setting the figures of the model, the baseline and the oracle.
  for (const s of SETTINGS) {
    const run = settingRun(r, s);
    if (!run) continue;
    const note = baseNote(r, s);
    out.push(...figureResults(`accuracy.${s}`, figuresOf(r, s, 'model')!, note));
    out.push(
      ...figureResults(
        `accuracy.${s}.baseline`,
        figuresOf(r, s, 'baseline')!,
        `BASELINE: ${r.meanPoseSource} at each true person's floor position, told everyone's true position and identity, always standing, never a fall; ${note}`,
      ),
    );
    const o = figuresOf(r, s, 'oracle');
    if (o) out.push(...figureResults(`accuracy.${s}.oracle`, o, `ORACLE: the ground truth as the model's output, through the same pipeline; ${note}`));
  }
  const third = new Set(out.map((x) => x.name));
  // The earlier rounds' names, kept while they exist.
  for (const s of ['unseen', 'unseen1'] as const) {
    const run = settingRun(r, s);
    if (run) out.push(...settingResults(s, run, baseNote(r, s), false, third));
  }
  const first: Setting | null = r.unseen ? 'unseen' : r.unseen1 ? 'unseen1' : null;
  if (first) {
    // The first round's names, kept: the unseen setting's 2-D PCK, count and falls (one link while the three-receiver setting does not run).
    const u = settingRun(r, first)!;
    const note = `${baseNote(r, first)}; first-round name: the ${first} setting's figure (accuracy.${first}.*)`;
    for (const k of [1, 3]) {
      const g = u.pose.groups[k]!;
      out.push({
        name: `accuracy.pck02.${GROUP_NAMES[k]}`,
        value: poseScores(g.pose2d).pck,
        unit: 'fraction',
        n: g.scenarios,
        note: `= accuracy.${first}.pck2d.${GROUP_NAMES[k]}: PCK@0.2 torso, pixels of the known view; ${note}`,
      });
    }
    out.push({
      name: 'accuracy.count_exact',
      value: countScores(u.pose.all.count).exact,
      unit: 'fraction',
      n: u.pose.all.scenarios,
      note: `= accuracy.${first}.count_exact; ${note}`,
    });
    out.push({
      name: 'accuracy.fall_precision',
      value: u.falls.scores.precision,
      unit: 'fraction',
      n: u.falls.scores.detections,
      note: `= accuracy.${first}.fall_precision; ${note}`,
    });
    out.push({
      name: 'accuracy.fall_recall',
      value: u.falls.scores.recall,
      unit: 'fraction',
      n: u.falls.scores.falls,
      note: `= accuracy.${first}.fall_recall; ${note}`,
    });
  }
  if (r.room) {
    out.push(...settingResults('room', r.room, baseNote(r, 'room'), false, third));
    if (r.room.uncalibrated) {
      const note = `the model under test WITHOUT calibration on the same later sessions in the room; ${baseNote(r, 'room')}`;
      out.push(...settingResults('room.uncalibrated', r.room.uncalibrated, note, true));
    }
  }
  return out;
}

const figureCache = new WeakMap<SettingRun, Map<string, Figure[]>>();

/**
 * A setting's third-round figures for one system (computed once per run and variant: the
 * bootstraps take a moment).
 * @returns the figures; null when that system did not run
 */
export function figuresOf(r: AccuracyReport, s: Setting, variant: 'model' | 'baseline' | 'oracle'): Figure[] | null {
  const run = variant === 'oracle' ? oracleRun(r, s) : settingRun(r, s);
  if (!run) return null;
  let byVariant = figureCache.get(run);
  if (!byVariant) figureCache.set(run, (byVariant = new Map()));
  const key = `${s}.${variant === 'oracle' ? 'model' : variant}`;
  let f = byVariant.get(key);
  if (!f) byVariant.set(key, (f = settingFigures(run, variant === 'oracle' ? 'model' : variant, `accuracy.${s}.${variant}`)));
  return f;
}

// ---------------------------------------------------------------------------------------------
// Markdown

/** Issue 19's targets (the next issue), per third-round name and setting. */
export const NEXT_TARGETS: Record<string, Partial<Record<Setting, string>>> = {
  'floor_median_m.one': { unseen: '<= 0.25', room: '<= 0.10', unseen1: '<= 0.35' },
  floor_median_m: { unseen: '<= 0.40' },
  'mpjpe_mm.one': { room: '<= 90' },
  'mpjpe_mm.two': { room: '<= 110' },
  'mpjpe_mm.three': { room: '<= 125' },
  mpjpe_rr_mm: { unseen: '<= 120' },
  count_exact: { unseen: '>= 0.90', room: '>= 0.95' },
  occupied: { unseen: '>= 0.99', unseen1: '>= 0.98' },
  mota: { unseen: '>= 0.70', room: '>= 0.85' },
  activity: { unseen: '>= 0.85' },
  fall_precision: { unseen: '>= 0.95', unseen1: '>= 0.90' },
  fall_recall: { unseen: '>= 0.95', unseen1: '>= 0.90' },
};

/**
 * Whether a figure meets a target such as '<= 0.25' or '>= 0.90'.
 * @returns true or false; null without a target or a figure
 */
export function meets(value: number, target: string | undefined): boolean | null {
  const m = target ? /^(<=|>=) ([\d.]+)$/.exec(target) : null;
  if (!m || !Number.isFinite(value)) return null;
  const t = Number(m[2]);
  return m[1] === '<=' ? value <= t : value >= t;
}

const fig = (v: number, unit: string) =>
  !Number.isFinite(v)
    ? dash
    : unit === 'mm'
      ? v.toFixed(0)
      : unit === 'falls' || unit === 'events'
        ? Number.isInteger(v)
          ? String(v)
          : v.toFixed(1)
        : unit === 's'
          ? v.toFixed(2)
          : v.toFixed(3);

/** The third round's table of one setting: model with its interval, baseline, oracle, target. */
function thirdRoundTable(r: AccuracyReport, s: Setting): string[] {
  const model = figuresOf(r, s, 'model')!;
  const base = figuresOf(r, s, 'baseline')!;
  const oracle = r.oracle ? null : figuresOf(r, s, 'oracle');
  const head = r.oracle ? 'oracle' : 'model';
  const lines = [
    `| accuracy.${s}.* | unit | ${head} | 95 % interval | n | baseline | ${oracle ? 'oracle | ' : ''}target (issue 19) |`,
    `|---|---|---:|---|---:|---:|${oracle ? '---:|' : ''}---|`,
  ];
  model.forEach((f, i) => {
    const target = NEXT_TARGETS[f.name]?.[s];
    const ok = meets((oracle ?? model)[i]!.value, target);
    const ci = Number.isFinite(f.ci95[0]) ? `[${fig(f.ci95[0], f.unit)}, ${fig(f.ci95[1], f.unit)}]` : '';
    lines.push(
      `| ${f.name} | ${f.unit} | ${fig(f.value, f.unit)} | ${ci} | ${f.n} | ${fig(base[i]!.value, f.unit)} | ${oracle ? `${fig(oracle[i]!.value, f.unit)} | ` : ''}${target ? `${target}${ok === null ? '' : ok ? ' (oracle meets it)' : ' (ORACLE MISSES IT)'}` : ''} |`,
    );
  });
  return lines;
}

const dash = '—';
const cell = (v: number, digits = 3) => (Number.isFinite(v) ? v.toFixed(digits) : dash);

/** Issue 11's targets, for the side-by-side table. */
const TARGETS: Record<string, { unseen?: string; room?: string }> = {
  pck3d_one: { unseen: '>= 0.50', room: '>= 0.90' },
  pck3d_three: { room: '>= 0.75' },
  floor: { unseen: '<= 0.5' },
  count: { unseen: '>= 0.85', room: '>= 0.95' },
  occupied: { unseen: '>= 0.98' },
  activity: { unseen: '>= 0.85' },
  mota: { room: '>= 0.80' },
  fall_precision: { unseen: '>= 0.95', room: '>= 0.95' },
  fall_recall: { unseen: '>= 0.95', room: '>= 0.95' },
};

interface Row {
  label: string;
  target?: string;
  model: (s: SettingRun) => number;
  baseline?: (s: SettingRun) => number;
  digits?: number;
}

const headlineRows: Row[] = [
  {
    label: `PCK3d@${PCK3D_ALPHA}, one person`,
    target: 'pck3d_one',
    model: (s) => pose3dScores(s.pose.groups[1]!.pose3d).pck3d,
    baseline: (s) => pose3dScores(s.pose.groups[1]!.baseline).pck3d,
  },
  {
    label: `PCK3d@${PCK3D_ALPHA}, three people`,
    target: 'pck3d_three',
    model: (s) => pose3dScores(s.pose.groups[3]!.pose3d).pck3d,
    baseline: (s) => pose3dScores(s.pose.groups[3]!.baseline).pck3d,
  },
  { label: `PCK3d@${PCK3D_ALPHA}, all`, model: (s) => pose3dScores(s.pose.all.pose3d).pck3d, baseline: (s) => pose3dScores(s.pose.all.baseline).pck3d },
  {
    label: `PCK3d@${PCK3D_ALPHA} root-relative, all`,
    model: (s) => pose3dScores(s.pose.all.pose3d).pck3dRel,
    baseline: (s) => pose3dScores(s.pose.all.baseline).pck3dRel,
  },
  { label: 'MPJPE cm, all', model: (s) => pose3dScores(s.pose.all.pose3d).mpjpeCm, baseline: (s) => pose3dScores(s.pose.all.baseline).mpjpeCm, digits: 1 },
  {
    label: 'floor error median m',
    target: 'floor',
    model: (s) => pose3dScores(s.pose.all.pose3d).floorMedianM,
    baseline: (s) => pose3dScores(s.pose.all.baseline).floorMedianM,
    digits: 2,
  },
  { label: `PCK@${PCK_ALPHA} 2-D (view px), one`, model: (s) => poseScores(s.pose.groups[1]!.pose2d).pck },
  { label: `PCK@${PCK_ALPHA} 2-D (view px), three`, model: (s) => poseScores(s.pose.groups[3]!.pose2d).pck },
  { label: 'count exact', target: 'count', model: (s) => countScores(s.pose.all.count).exact },
  { label: 'occupied (empty vs not)', target: 'occupied', model: (s) => occupiedOf(s.pose.all) },
  { label: 'count changes per min', model: (s) => s.pose.all.countChanges / (s.pose.all.spanMs / 60_000), digits: 1 },
  { label: 'true count changes per min', model: (s) => s.pose.all.trueCountChanges / (s.pose.all.spanMs / 60_000), digits: 1 },
  { label: 'activity', target: 'activity', model: (s) => activityOf(s.pose.all) },
  { label: `MOTA (floor, ${MOT_FLOOR_M} m)`, target: 'mota', model: (s) => motScores(s.pose.mot).mota },
  { label: 'identity switches', model: (s) => s.pose.mot.switches, digits: 0 },
  { label: 'fall precision (per event in the room)', target: 'fall_precision', model: (s) => s.falls.scores.precision },
  { label: 'fall recall (per event in the room)', target: 'fall_recall', model: (s) => s.falls.scores.recall },
  { label: 'fall precision, the person who fell', model: (s) => s.falls.byPerson.precision },
  { label: 'fall recall, the person who fell', model: (s) => s.falls.byPerson.recall },
  { label: 'fall delay s', model: (s) => s.falls.scores.meanDelayMs / 1000, digits: 2 },
];

function headline(r: AccuracyReport): string[] {
  const cols: Array<{ head: string; get: (row: Row) => string }> = [];
  const u = r.unseen;
  const rm = r.room;
  if (u) {
    cols.push({ head: 'unseen room', get: (row) => cell(row.model(u), row.digits) });
    cols.push({ head: 'unseen baseline', get: (row) => (row.baseline ? cell(row.baseline(u), row.digits) : dash) });
    cols.push({ head: 'unseen target', get: (row) => (row.target && TARGETS[row.target]?.unseen) || '' });
  }
  const u1 = r.unseen1;
  if (u1) {
    cols.push({ head: 'unseen, one link', get: (row) => cell(row.model(u1), row.digits) });
    cols.push({ head: 'one link baseline', get: (row) => (row.baseline ? cell(row.baseline(u1), row.digits) : dash) });
  }
  if (rm) {
    cols.push({ head: r.oracle ? 'same room (oracle)' : 'same room, calibrated', get: (row) => cell(row.model(rm), row.digits) });
    if (rm.uncalibrated) cols.push({ head: 'same room, uncalibrated', get: (row) => cell(row.model(rm.uncalibrated!), row.digits) });
    cols.push({ head: 'same room baseline', get: (row) => (row.baseline ? cell(row.baseline(rm), row.digits) : dash) });
    cols.push({ head: 'room target', get: (row) => (row.target && TARGETS[row.target]?.room) || '' });
  }
  const lines = [`| metric | ${cols.map((c) => c.head).join(' | ')} |`, `|---|${cols.map(() => '---:').join('|')}|`];
  for (const row of headlineRows) lines.push(`| ${row.label} | ${cols.map((c) => c.get(row)).join(' | ')} |`);
  return lines;
}

function byPeople(run: PoseRun): string[] {
  const lines = [
    '| people | scenarios | pose frames | PCK3d | PCK3d rel | MPJPE cm | floor med m | baseline PCK3d | PCK 2-D | count exact | occupied | activity |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const rows = [...run.groups.map((g, k) => [String(k), g] as const), ['all', run.all] as const];
  for (const [k, g] of rows) {
    const s = pose3dScores(g.pose3d);
    const b = pose3dScores(g.baseline);
    lines.push(
      `| ${k} | ${g.scenarios} | ${g.frames} | ${cell(s.pck3d)} | ${cell(s.pck3dRel)} | ${cell(s.mpjpeCm, 1)} | ${cell(s.floorMedianM, 2)} | ${cell(b.pck3d)} | ${cell(poseScores(g.pose2d).pck)} | ${cell(countScores(g.count).exact)} | ${cell(occupiedOf(g))} | ${cell(activityOf(g))} |`,
    );
  }
  return lines;
}

function countTable(run: PoseRun): string[] {
  const cols = Array.from({ length: MAX_REPORTED_COLUMN + 1 }, (_, j) => (j === MAX_REPORTED_COLUMN ? `${j}+` : String(j)));
  const lines = [`| true \\ reported | ${cols.join(' | ')} | exact |`, `|---:|${cols.map(() => '---:').join('|')}|---:|`];
  const cs = countScores(run.all.count);
  run.all.count.forEach((row, t) => lines.push(`| ${t} | ${row.join(' | ')} | ${percent(cs.exactByTrue[t]!)} |`));
  return lines;
}

function activityTable(run: PoseRun): string[] {
  const cols = [...ACTIVITIES, 'none'];
  const lines = [`| true \\ reported | ${cols.join(' | ')} | right |`, `|---|${cols.map(() => '---:').join('|')}|---:|`];
  run.all.activity.forEach((row, t) => {
    const n = row.reduce((a, b) => a + b, 0);
    lines.push(`| ${ACTIVITIES[t]} | ${row.join(' | ')} | ${n > 0 ? percent(row[t]! / n) : 'n/a'} |`);
  });
  return lines;
}

function trackingTable(run: PoseRun): string[] {
  const mt = run.mot;
  const ms = motScores(mt);
  return [
    '| true objects | misses | false positives | identity switches | MOTA | MOTP m |',
    '|---:|---:|---:|---:|---:|---:|',
    `| ${mt.objects} | ${mt.misses} | ${mt.falsePositives} | ${mt.switches} | ${cell(ms.mota)} | ${cell(ms.motp, 2)} |`,
  ];
}

function fallTable(f: FallRun): string[] {
  const lines = ['| role | people | true falls | detected | mean delay s | false alarms |', '|---|---:|---:|---:|---:|---:|'];
  const order = [...new Set([...FALL_ROLES, ...HARD_NEGATIVE_ROLES, ...NEGATIVE_ROLES])];
  const roles = [...new Set(f.people.map((p) => p.role))].sort((a, b) => order.indexOf(a) - order.indexOf(b));
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
  const hn = f.hardNegatives;
  const byRole = [...new Set(hn.map((h) => h.role))];
  lines.push(
    `Hard negatives scored: ${hn.length} (${byRole.map((role) => `${role} ${hn.filter((h) => h.role === role).length}`).join(', ')}); ` +
      `with a false fall episode within ${HARD_NEGATIVE_WINDOW_S} s of the move's start: ${hn.filter((h) => h.alerted).length} (${byRole.map((role) => `${role} ${hn.filter((h) => h.role === role && h.alerted).length}`).join(', ')}).`,
  );
  lines.push('');
  lines.push(
    `Reported fall episodes ${f.scores.detections}, true falls ${f.scores.falls}. Per event in the room: detected ${f.scores.detected}, precision ${fixed(f.scores.precision)}, ` +
      `recall ${fixed(f.scores.recall)}, mean delay ${fixed(f.scores.meanDelayMs / 1000, 2)} s. About the person who fell (the table above): detected ${f.byPerson.detected}, ` +
      `precision ${fixed(f.byPerson.precision)}, recall ${fixed(f.byPerson.recall)}.` +
      (f.missingFalls > 0 ? ` Warning: ${f.missingFalls} scripted falls did not happen in the simulator.` : ''),
  );
  return lines;
}

function settingSections(title: string, tag: string, run: SettingRun): string[] {
  const out: string[] = [];
  out.push(`## ${title}: by people in the room (${tag})`, '', ...byPeople(run.pose), '');
  out.push(`### ${title}: person count, frames by true (rows) and reported (columns) count`, '', ...countTable(run.pose), '');
  out.push(`### ${title}: activity of matched persons, true (rows) and reported (columns)`, '', ...activityTable(run.pose), '');
  out.push(`### ${title}: tracking, CLEAR-MOT on floor positions at ${MOT_FLOOR_M} m`, '', ...trackingTable(run.pose), '');
  out.push(
    `### ${title}: falls, scripted scenarios, a detection counts from the fall start to +${run.falls.windowMs / 1000} s`,
    '',
    ...fallTable(run.falls),
    '',
  );
  return out;
}

const m2 = (v: number) => v.toFixed(2);

function roomSection(r: AccuracyReport, rm: RoomRun): string[] {
  const room = rm.room;
  const out: string[] = [];
  out.push('## The room and its calibration', '');
  out.push(
    `- Room ${m2(room.room.width)} x ${m2(room.room.depth)} x ${m2(room.room.height)} m (${r.plan.split === 'test' ? 'held-out bands' : 'validation family'}), ` +
      `receiver at (${m2(room.rx.x)}, ${m2(room.rx.y)}, ${m2(room.rx.z)}), transmitter on the ${room.tx.wall} wall at (${m2(room.tx.x)}, ${m2(room.tx.y)}, ${m2(room.tx.z)}); ` +
      `Intel 5300 layout: ${room.nSub} subcarriers, ${room.nRx} x ${room.nTx} antennas, SNR ${room.snrDb.toFixed(1)} dB, loss ${percent(room.lossRate)}; every frame passes through the Intel 5300 record format.`,
  );
  out.push(
    `- The room's camera is the configured view (environment.view) and its site is known (environment.site), for calibration and for the service alike.`,
  );
  const c = rm.calibration;
  if (!c) {
    out.push('- Oracle: the same-room sessions are scored on the oracle directly; there is no model to calibrate (and no uncalibrated column).');
  } else if (c.kind === 'front-end') {
    const res = c.result;
    out.push(
      `- Calibration of the refiner's front end (src/calibration/roomCalibration.ts, what \`csipose calibrate\` runs for a v3 refiner): ${c.sessions.length} sessions recorded on the room's 1 TX + 3 RX site ` +
        `(${c.sessions.map((s) => `${s.people} ${s.people === 1 ? 'person' : 'people'}, ${s.seconds.toFixed(0)} s`).join('; ')}), each receiver to its own Intel 5300 capture and a 10 Hz labels file; ` +
        `the empty one gave every link's static channel, the others ${res.links.map((l) => `${l.windows}`).join(' / ')} one-person windows per link for the chain phases, in ${res.seconds.toFixed(1)} s.`,
    );
    out.push(
      `- The fitted chain phases were ${res.check.applied ? 'kept' : 'not kept'} (on calibrate's check part, ${res.check.windows} windows, the first candidate ${fixed(res.check.before, 2)} -> ${fixed(res.check.after, 2)} m from the labelled person with them). ` +
        `On its held-out windows (${res.heldOut.windows}): ${fixed(res.heldOut.before, 2)} -> ${fixed(res.heldOut.after, 2)} m (median); ` +
        `focus ${res.links.map((l) => `${fixed(l.focusBefore, 2)} -> ${fixed(l.focusAfter, 2)}`).join(', ')}. The room is the ideal realism (no chain phases to find), so the figures say what calibration keeps, not what it repairs.`,
    );
    out.push(
      `- Scored on ${r.plan.room.poseScenarios} later pose sessions x ${r.plan.room.poseSeconds} s and ${r.plan.room.fallScenarios} scripted fall sessions x ${r.plan.room.fallSeconds} s in the same room on the same site (other seeds: other people, heights and motion), with the room model and, for comparison, the refiner as it came.`,
    );
  } else {
    const res = c.result;
    out.push(
      `- Calibration: ${c.sessions.length} recorded sessions (${c.sessions.map((s) => `${s.people} ${s.people === 1 ? 'person' : 'people'}, ${s.seconds.toFixed(0)} s`).join('; ')}), ` +
        `each an Intel 5300 capture and a 10 Hz labels file written by the capture sink from the truth in the room's camera; ` +
        `\`calibrate\` (src/calibration/calibrate.ts) used ${res.rows.train} windows and held out ${res.rows.held_out} (each session's end), in ${res.seconds.toFixed(1)} s.`,
    );
    out.push(
      `- On calibrate's own held-out windows: re-projection median ${fixed(res.before.reprojectionMedianPx, 1)} -> ${fixed(res.after.reprojectionMedianPx, 1)} px, ` +
        `floor ${fixed(res.before.floorMedianM, 2)} -> ${fixed(res.after.floorMedianM, 2)} m, count exact ${fixed(res.before.countExact)} -> ${fixed(res.after.countExact)}.`,
    );
    out.push(
      `- Scored on ${r.plan.room.poseScenarios} later pose sessions x ${r.plan.room.poseSeconds} s and ${r.plan.room.fallScenarios} scripted fall sessions x ${r.plan.room.fallSeconds} s in the same room (other seeds: other people, heights and motion), with the room model and, for comparison, the model under test as it came.`,
    );
  }
  out.push('');
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
  const val = r.plan.split === 'val';
  lines.push('# csipose accuracy', '');
  if (r.contractTestModel)
    lines.push(
      '**CONTRACT TEST MODEL (fixed pseudo-random weights, never trained): these numbers are meaningless as accuracy; they only show that the benchmark runs.**',
      '',
    );
  if (r.oracle)
    lines.push(
      '**ORACLE: the ground truth of each window stands in for the model. The scores show what tracking, activity and fall rules reach with perfect model outputs (and check the harness); they say nothing about a model.**',
      '',
    );
  lines.push(
    val
      ? `**Simulated VALIDATION scenarios** (the training distribution's rooms and layouts, seeds of their own): the split on which settings are chosen. These are not the reported scores; run without --split for the held-out scores.`
      : `**Simulated, held-out.** Every score is measured on simulated CSI in rooms and antenna layouts of the TEST bands of the training recipe (never used in training; each checked with isHeldOut). ` +
          `*Unseen room*: every scenario in a room of its own, site given, with three receivers (\`unseen\`) or one link (\`unseen1\`). *Same room*: one such room, the model calibrated on recorded, labelled sessions there, then scored on later sessions with other people. ` +
          `The simulator leaves out furniture, occlusion, multi-bounce paths and hardware quirks, so real CSI will score lower. Nothing was tuned on these scenarios.`,
    '',
  );
  lines.push(
    `- node ${m.node}, ${m.cpu}; run time ${r.seconds.toFixed(1)} s, ${r.cpuSeconds.toFixed(1)} s of this process's CPU (${[r.unseen ? `unseen ${r.unseen.seconds.toFixed(1)} s` : '', r.unseen1 ? `unseen1 ${r.unseen1.seconds.toFixed(1)} s` : '', r.oracleRuns ? 'the oracle in the same passes' : '', r.room ? `same room ${r.room.seconds.toFixed(1)} s${r.room.calibration ? ' incl. recording, calibration and the uncalibrated run' : ''}` : ''].filter(Boolean).join(', ')})`,
  );
  lines.push(`- model ${r.modelPath} (model_version ${r.modelVersion || '?'}, trained_on ${r.trainedOn || '?'})`);
  const frames = (s: SettingRun | null) => (s ? s.pose.csiFrames + s.falls.csiFrames : 0);
  for (const s of ['unseen', 'unseen1'] as const) {
    const run = settingRun(r, s);
    if (run)
      lines.push(
        `- ${s}: ${r.plan.poseScenarios} pose scenarios x ${r.plan.poseSeconds} s, ${r.plan.fallScenarios} scripted fall scenarios x ${r.plan.fallSeconds} s, seed ${r.plan.seed}; ${frames(run)} CSI frames through the live pipeline${s === 'unseen' ? ' (every link)' : ''}`,
      );
  }
  for (const [s, why] of Object.entries(r.skipped)) lines.push(`- **${s} NOT RUN**: ${why}`);
  if (r.room)
    lines.push(
      `- same room: ${r.plan.room.poseScenarios} pose sessions x ${r.plan.room.poseSeconds} s, ${r.plan.room.fallScenarios} fall sessions x ${r.plan.room.fallSeconds} s; ${frames(r.room) + frames(r.room.uncalibrated)} CSI frames through the live pipeline` +
        (r.room.calibration
          ? `, ${r.room.calibration.kind === 'fine-tune' ? r.room.calibration.sessions.reduce((a, s) => a + s.frames, 0) : r.room.calibration.sessions.reduce((a, s) => a + s.recording.ticks, 0)} recorded for calibration`
          : ''),
    );
  lines.push(
    `- live settings (${r.defaultSettings ? 'service defaults' : 'GIVEN BY THE CALLER, not the service defaults'}): count threshold ${si.confidenceThreshold}, max persons ${si.maxPersons}, batch ${si.batchSize}, ` +
      `tracking min hits ${st.minHits} / max age ${st.maxAge}, fall sensitivity ${sa.sensitivity}, notification delay ${sa.notificationDelaySeconds} s; ` +
      `per scenario its room's camera as environment.view and its primary receiver as the first rx of environment.site.radios` +
      (r.plan.site === false ? '; unseen: site withheld from the model (--no-site)' : '; site given to the model'),
  );
  lines.push(
    `- PCK3d@${PCK3D_ALPHA}: a joint within ${PCK3D_ALPHA} x the true torso length (mid-shoulder to mid-hip) in room metres, every joint of every true person, persons matched by their pelvises (training/ts/eval/pose3d.ts); ` +
      `root-relative: pelvises made to coincide. 2-D: PCK@${PCK_ALPHA} of the torso in the pixels of the known view, visible keypoints (training/ts/eval/pose.ts). ` +
      `Baseline: ${r.meanPoseSource} placed at each true person's floor position. Activity: matched true persons whose reported activity is the true one. ` +
      `MOTA: CLEAR-MOT on floor positions, ${MOT_FLOOR_M} m. Falls, per event in the room (issue 11): a reported fall episode within ${FALL_MATCH_S} s of the fall start detects it, once, and every other episode is a false alarm (deliberate lie-downs and sits are negatives); beside it, stricter, the episode must also be about the person who fell. Count changes: frames whose reported count differs from the frame before (nobody enters or leaves in these scenes).`,
  );
  lines.push(
    `- Intervals (95 %): Wilson for fall precision and recall (independent events); for figures over frames a bootstrap over scenarios (${'1000'} resamples, seeded per name), since a scenario's frames are not independent. ` +
      `Baseline beyond the skeleton: told everyone's true floor position and identity (so its count, MOTA and IDF1 are the truth's), always standing, never a fall. Oracle: the ground truth as the model's output through the same pipeline (bench/oracle.ts).`,
  );
  lines.push('');
  lines.push('## Scores a user would recognise (DECISIONS "Benchmark output", third round)', '');
  for (const s of SETTINGS) {
    if (!settingRun(r, s)) continue;
    lines.push(`### ${SETTING_TITLES[s]} (\`${s}\`)`, '', ...thirdRoundTable(r, s), '');
  }
  lines.push("## The earlier rounds' headline", '');
  lines.push(...headline(r), '');
  const tag = val ? 'simulated, VALIDATION' : 'simulated, held out';
  if (r.unseen) lines.push(...settingSections(SETTING_TITLES.unseen, tag, r.unseen));
  if (r.unseen1) lines.push(...settingSections(SETTING_TITLES.unseen1, tag, r.unseen1));
  if (r.room) {
    lines.push(...roomSection(r, r.room));
    lines.push(...settingSections(r.oracle ? 'Same room (oracle)' : 'Same room, calibrated', tag, r.room));
    if (r.room.uncalibrated) lines.push(...settingSections('Same room, uncalibrated', tag, r.room.uncalibrated));
  }
  lines.push('## Every figure (DECISIONS "Benchmark output")', '');
  lines.push('| metric | value | unit | scenarios |', '|---|---:|---|---:|');
  for (const x of r.results) {
    const v = x.unit === 'fraction' || x.unit === 'ratio' ? fixed(x.value) : x.unit === 'switches' ? String(x.value) : fixed(x.value, 2);
    lines.push(`| ${x.name} | ${v} | ${x.unit} | ${x.n} |`);
  }
  return lines.join('\n') + '\n';
}

/** The DECISIONS JSON document. */
export function json(r: AccuracyReport): string {
  const m = machine();
  const results = r.results.map((x) => ({ ...x, value: Number.isFinite(x.value) ? x.value : null }));
  return JSON.stringify({ node: m.node, cpu: m.cpu, results }, null, 2) + '\n';
}
