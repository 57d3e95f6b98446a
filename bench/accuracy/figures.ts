/**
 * The third round's figures of one setting (DECISIONS "Benchmark output": `accuracy.S.*`, with
 * `accuracy.S.baseline.*` and `accuracy.S.oracle.*`), each with its 95 % interval
 * (`training/ts/eval/intervals.ts`): Wilson for the per-event fall figures, a seeded bootstrap
 * over scenarios for everything measured over frames (frames of one scenario are not independent).
 *
 * - Position: the floor-plan distance between matched pelvises (the pelvis matching of
 *   `eval/pose3d.ts`), median for one-person scenarios and for all, and the 90th percentile; both
 *   quantiles by nearest rank.
 * - Pose: MPJPE in mm over the joints of matched persons, absolute per number of people in the
 *   scenario and root-relative (pelvises made to coincide) for all; root-relative PCK3d@0.2 of the
 *   torso length; PCK@0.2 of the torso in the reference view's pixels (visible joints).
 * - People: exact count and empty-or-not per frame, MOTA and IDF1 on floor positions (0.5 m),
 *   activity of matched persons.
 * - Falls, per event in the room: precision (episodes that detected a fall), recall (falls
 *   detected within 3 s), the falls scored, the mean delay of detected falls; and the hard
 *   negatives scored with the false fall alerts among them.
 *
 * The baseline is a system told everyone's true floor position and identity (so its count, MOTA
 * and IDF1 are the truth's), answering the mean pose, `standing` and never a fall (score.ts).
 */
import { MAX_TRUE_COUNT } from '../../training/ts/eval/count.js';
import { idScores } from '../../training/ts/eval/idf1.js';
import { bootstrap, partsValue, quantileParts, ratioParts, wilson, type Interval, type ScenarioParts } from '../../training/ts/eval/intervals.js';
import type { BenchResult } from '../lib.js';
import { FALL_MATCH_S, HARD_NEGATIVE_WINDOW_S, MOT_FLOOR_M, type FallRun, type PoseTally, type ScenarioTally } from './score.js';

/** The pose and fall runs of one setting as scored. */
export interface SettingScores {
  pose: { scenarios: ScenarioTally[] };
  falls: FallRun;
}

/** Which system a figure is of. */
export type Variant = 'model' | 'baseline' | 'oracle';

/** One figure before naming: value, unit, sample count, interval and what it is. */
export interface Figure {
  /** Name after `accuracy.S.` (and `baseline.` / `oracle.`). */
  name: string;
  value: number;
  unit: string;
  n: number;
  ci95: Interval;
  /** How it was measured, and how its interval was found. */
  how: string;
}

/** A stable seed per figure name, so that every bootstrap repeats exactly. */
export function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

type Pick = (t: ScenarioTally) => readonly [number, number];

const sum = (v: readonly number[]) => v.reduce((a, b) => a + b, 0);
const countDiag = (t: PoseTally) => t.count.reduce((a, row, i) => a + row[i]!, 0);

/** The frame-scored figures' parts of a scenario, per variant (the baseline's from its own tallies). */
function picks(variant: Variant): {
  floor: (t: ScenarioTally) => readonly number[];
  mpjpe: Pick;
  mpjpeRr: Pick;
  pck3dRr: Pick;
  pck2d: Pick;
  count: Pick;
  occupied: Pick;
  mota: Pick;
  idf1: Pick;
  activity: Pick;
} {
  const base = variant === 'baseline';
  const p3 = (t: ScenarioTally) => (base ? t.tally.baseline : t.tally.pose3d);
  const p2 = (t: ScenarioTally) => (base ? t.tally.baseline2d : t.tally.pose2d);
  const mot = (t: ScenarioTally) => (base ? t.baselineMot : t.mot);
  const id = (t: ScenarioTally) => (base ? t.baselineId : t.id);
  return {
    floor: (t) => p3(t).floorErrors,
    mpjpe: (t) => [1000 * p3(t).errorSum, p3(t).errorCount],
    mpjpeRr: (t) => [1000 * p3(t).errorRelSum, p3(t).errorCount],
    pck3dRr: (t) => [p3(t).correctRel, p3(t).joints],
    pck2d: (t) => [sum(p2(t).correct), sum(p2(t).total)],
    // The baseline reports exactly the true persons.
    count: (t) => (base ? [t.tally.frames, t.tally.frames] : [countDiag(t.tally), t.tally.frames]),
    occupied: (t) => (base ? [t.tally.frames, t.tally.frames] : [t.tally.occupiedRight, t.tally.frames]),
    mota: (t) => {
      const m = mot(t);
      return [m.objects - m.misses - m.falsePositives - m.switches, m.objects];
    },
    idf1: (t) => {
      const c = id(t);
      return [2 * c.idtp, c.truths + c.computed];
    },
    activity: (t) => (base ? [t.tally.baselineActivityRight, t.tally.baselineActivityTotal] : [t.tally.activityRight, t.tally.activityTotal]),
  };
}

const GROUP = ['zero', 'one', 'two', 'three', 'four'] as const;

/**
 * The figures of one setting for one system.
 * @param run the setting's scored runs (for the baseline: the model's run, whose tallies also hold the baseline's)
 * @param variant which system
 * @param seedKey prefix of the bootstrap seeds (the setting and variant)
 * @returns the figures, in DECISIONS order
 */
export function settingFigures(run: SettingScores, variant: Variant, seedKey: string): Figure[] {
  const out: Figure[] = [];
  const sc = run.pose.scenarios;
  const pk = picks(variant);
  const frameFigure = (name: string, unit: string, scope: readonly ScenarioTally[], parts: ScenarioParts, how: string) => {
    out.push({
      name,
      value: partsValue(parts, new Int32Array(scope.length).fill(1)),
      unit,
      n: scope.length,
      ci95: bootstrap(parts, seedOf(`${seedKey}.${name}`)),
      how: `${how}; 95 % interval: bootstrap over the ${scope.length} scenarios`,
    });
  };
  const ratio = (name: string, unit: string, scope: readonly ScenarioTally[], pick: Pick, how: string) =>
    frameFigure(name, unit, scope, ratioParts(scope.map(pick)), how);
  const group = (k: number) => sc.filter((t) => Math.min(t.people, MAX_TRUE_COUNT) === k);
  const persons = (scope: readonly ScenarioTally[]) => sum(scope.map((t) => pk.floor(t).length));

  frameFigure(
    'floor_median_m.one',
    'm',
    group(1),
    quantileParts(group(1).map(pk.floor), 0.5),
    `median floor-plan pelvis error, one-person scenarios, ${persons(group(1))} matched person-frames`,
  );
  frameFigure(
    'floor_median_m',
    'm',
    sc,
    quantileParts(sc.map(pk.floor), 0.5),
    `median floor-plan pelvis error, all scenarios, ${persons(sc)} matched person-frames`,
  );
  frameFigure(
    'floor_p90_m',
    'm',
    sc,
    quantileParts(sc.map(pk.floor), 0.9),
    `90th percentile of the floor-plan pelvis error, ${persons(sc)} matched person-frames`,
  );
  for (const k of [1, 2, 3])
    ratio(`mpjpe_mm.${GROUP[k]}`, 'mm', group(k), pk.mpjpe, `absolute MPJPE over the joints of matched persons, ${k}-person scenarios`);
  ratio('mpjpe_rr_mm', 'mm', sc, pk.mpjpeRr, 'root-relative MPJPE (pelvises made to coincide), joints of matched persons');
  ratio('pck3d_rr', 'fraction', sc, pk.pck3dRr, 'root-relative PCK3d@0.2 of the true torso length, every joint of every true person');
  ratio('pck2d', 'fraction', sc, pk.pck2d, "PCK@0.2 of the torso in the reference view's pixels, visible joints");
  ratio('count_exact', 'fraction', sc, pk.count, 'frames with the exact person count');
  ratio('occupied', 'fraction', sc, pk.occupied, 'frames with empty vs occupied right');
  ratio('mota', 'ratio', sc, pk.mota, `CLEAR-MOT on floor positions, ${MOT_FLOOR_M} m`);
  ratio('idf1', 'fraction', sc, pk.idf1, `identity F1 (Ristani et al. 2016) on floor positions, ${MOT_FLOOR_M} m`);
  ratio('activity', 'fraction', sc, pk.activity, 'matched true persons with the right activity');

  const f = run.falls;
  const s = f.scores;
  const falls = s.falls;
  if (variant === 'baseline') {
    // Never a fall: no episode to be precise about, and every fall missed.
    out.push({ name: 'fall_precision', value: NaN, unit: 'fraction', n: 0, ci95: [NaN, NaN], how: 'the baseline never reports a fall: no episodes' });
    out.push({
      name: 'fall_recall',
      value: falls > 0 ? 0 : NaN,
      unit: 'fraction',
      n: falls,
      ci95: wilson(0, falls),
      how: `0 of ${falls} falls; 95 % interval: Wilson`,
    });
    out.push({ name: 'falls_n', value: falls, unit: 'falls', n: falls, ci95: [falls, falls], how: 'scripted falls scored' });
    out.push({ name: 'fall_delay_s', value: NaN, unit: 's', n: 0, ci95: [NaN, NaN], how: 'no fall detected' });
    out.push({
      name: 'hard_negatives_n',
      value: f.hardNegatives.length,
      unit: 'events',
      n: f.hardNegatives.length,
      ci95: [f.hardNegatives.length, f.hardNegatives.length],
      how: 'scripted lie-downs, sit-downs and bends scored',
    });
    const none = wilson(0, f.hardNegatives.length);
    out.push({
      name: 'hard_negative_alerts',
      value: 0,
      unit: 'events',
      n: f.hardNegatives.length,
      ci95: [0, none[1] * f.hardNegatives.length],
      how: 'never a fall alert',
    });
    return out;
  }
  out.push({
    name: 'fall_precision',
    value: s.precision,
    unit: 'fraction',
    n: s.detections,
    ci95: wilson(s.detected, s.detections),
    how: `${s.detected} of ${s.detections} reported fall episodes detected a fall (per event in the room); 95 % interval: Wilson`,
  });
  out.push({
    name: 'fall_recall',
    value: s.recall,
    unit: 'fraction',
    n: falls,
    ci95: wilson(s.detected, falls),
    how: `${s.detected} of ${falls} falls detected within ${FALL_MATCH_S} s of the fall start by an episode in the room; 95 % interval: Wilson`,
  });
  out.push({ name: 'falls_n', value: falls, unit: 'falls', n: falls, ci95: [falls, falls], how: `scripted falls scored in ${f.scenarios} scenarios` });
  const delayParts = ratioParts(f.perScenario.map((p) => [p.delaySumMs / 1000, p.detected] as const));
  out.push({
    name: 'fall_delay_s',
    value: s.meanDelayMs / 1000,
    unit: 's',
    n: s.detected,
    ci95: bootstrap(delayParts, seedOf(`${seedKey}.fall_delay_s`)),
    how: `mean from the fall start to its first notice, ${s.detected} detected falls; 95 % interval: bootstrap over the ${f.scenarios} fall scenarios`,
  });
  const hn = f.hardNegatives.length;
  const alerted = f.hardNegatives.filter((h) => h.alerted).length;
  out.push({ name: 'hard_negatives_n', value: hn, unit: 'events', n: hn, ci95: [hn, hn], how: 'scripted lie-downs, sit-downs and bends scored' });
  const share = wilson(alerted, hn);
  out.push({
    name: 'hard_negative_alerts',
    value: alerted,
    unit: 'events',
    n: hn,
    ci95: [share[0] * hn, share[1] * hn],
    how: `hard negatives with a false fall episode within ${HARD_NEGATIVE_WINDOW_S} s of the move's start (${hn > 0 ? ((100 * alerted) / hn).toFixed(1) : 'n/a'} %); 95 % interval: Wilson on the share, times ${hn}`,
  });
  return out;
}

/** IDF1 of summed counts (for the Markdown tables). */
export const idf1Of = (c: Parameters<typeof idScores>[0]): number => idScores(c).idf1;

/**
 * Figures as DECISIONS results.
 * @param prefix e.g. `accuracy.unseen`, `accuracy.unseen.baseline`
 * @param figures the figures
 * @param note what the numbers are (the setting's note)
 * @returns the results, the interval in the note and in `ci95`
 */
export function figureResults(prefix: string, figures: readonly Figure[], note: string): BenchResult[] {
  const r3 = (v: number) => (Number.isFinite(v) ? (Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3)) : 'n/a');
  return figures.map((f) => ({
    name: `${prefix}.${f.name}`,
    value: f.value,
    unit: f.unit,
    n: f.n,
    ci95: [f.ci95[0], f.ci95[1]],
    note: `95 % interval [${r3(f.ci95[0])}, ${r3(f.ci95[1])}]; ${f.how}; ${note}`,
  }));
}
