/**
 * `npm run bench:room -- --default-room M [--model PATH]`: the room `npm start` makes (the
 * configured source `sim?realism=room` on the default site, its two generated people, nothing
 * scripted), simulated M minutes at full speed and run in-process through the service's own live
 * pipeline (`livePipeline` with the configuration's defaults, as `PoseService` runs it), with the
 * shipped model or any other (a v3 refiner runs `physics-live`; a room model carries its
 * calibration). What a subscriber would see, scored against the simulator's ground truth carried on
 * the same frames: the share of pose frames with the true number of people, the distinct track
 * ids, the true falls with a `high` fall alert at most 3 s after they began and the other `high`
 * fall alerts (false): `matchFallAlerts`, the rule of `room.falls_alerted_3s` (bench/room/score.ts).
 *
 * Beside `--watch` (the real `csipose serve` over /ws/pose in real time), this takes about a
 * minute per 10 simulated minutes, so models can be compared on the same room in one run.
 */
import { lastValueFrom, takeWhile, tap, toArray, type Observable } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { deepFreeze, defaults } from '../../src/config/schema.js';
import type { ConfigSnapshot } from '../../src/config/store.js';
import { PoseModel } from '../../src/model/runtime.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { parseSource } from '../../src/sources/uri.js';
import { livePipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import type { BenchResult } from '../lib.js';
import { matchFallAlerts } from './score.js';

/** What one run of the default room found. */
export interface DefaultRoomRun {
  model: string;
  modelVersion: string;
  /** The source URI run (without `truth=1`). */
  source: string;
  minutes: number;
  frames: number;
  countRight: number;
  /** Pose frames by reported minus true people. */
  countError: Record<string, number>;
  trackIds: number;
  trueFalls: number;
  /** True falls with a high fall alert at most 3 s after they began. */
  alerted3s: number;
  falseAlerts: number;
  /**
   * A v3 refiner's front end (null for a v2 model): over every floor map and every true person, the
   * share with a candidate of its own (nearest first, each candidate used once) within
   * {@link COVERAGE_RADIUS_M} of their floor point, and the person-maps counted. The refiner can only
   * find a person a candidate is near.
   */
  frontEnd: { covered: number; personMaps: number } | null;
  wallSeconds: number;
}

/** How near a candidate must be to a true person's floor point to cover them, metres. */
export const COVERAGE_RADIUS_M = 0.6;

/**
 * How many true persons have a candidate of their own within a radius: greedy, nearest pair first.
 * @param persons the true floor points
 * @param candidates the map's candidates
 * @param radius metres
 * @returns the persons covered
 * @example coveredPersons([{ x: 1, y: 1 }], [{ x: 1.2, y: 1 }], 0.6) // 1
 */
export function coveredPersons(persons: ReadonlyArray<{ x: number; y: number }>, candidates: ReadonlyArray<{ x: number; y: number }>, radius: number): number {
  const pairs: Array<[number, number, number]> = [];
  persons.forEach((p, i) =>
    candidates.forEach((c, j) => {
      const d = Math.hypot(c.x - p.x, c.y - p.y);
      if (d <= radius) pairs.push([d, i, j]);
    }),
  );
  pairs.sort((a, b) => a[0] - b[0]);
  const usedP = new Set<number>();
  const usedC = new Set<number>();
  for (const [, i, j] of pairs) {
    if (usedP.has(i) || usedC.has(j)) continue;
    usedP.add(i);
    usedC.add(j);
  }
  return usedP.size;
}

/** The truth the `sim?truth=1` source puts on frames (`truthToJson`), the parts scored here. */
interface TruthMeta {
  time: number;
  person_count: number;
  persons?: Array<{ floor: { x: number; y: number } }>;
  events?: Array<{ type: string; time: number }>;
}

/**
 * Runs the default room through the live pipeline with a model.
 * @param modelPath the model file (`neural_network.model_path`'s default when the caller says so)
 * @param minutes simulated minutes
 * @param source another source URI in place of the configured one (`hardware.source`), e.g.
 *   `sim?realism=ideal` for the same people in the ideal room; `truth=1` is added
 * @returns the figures
 */
export async function runDefaultRoom(modelPath: string, minutes: number, source?: string): Promise<DefaultRoomRun> {
  const cfg = deepFreeze(defaults()) as ConfigSnapshot;
  const params = liveParams(cfg);
  const model = await PoseModel.load(modelPath);
  const t0 = performance.now();
  try {
    // The service's configured source, with the ground truth on each tick's first frame.
    const base = source ?? cfg.hardware.source;
    const uri = `${base}${base.includes('?') ? '&' : '?'}truth=1`;
    const radios = cfg.environment.site.radios;
    const frames = parseSource(uri).open('frame', {
      speed: 0,
      radios: () => radios,
      view: () => cfg.environment.view,
      environmentId: cfg.environment.id,
    }) as Observable<CsiFrame>;
    const truths: TruthMeta[] = [];
    const falls: number[] = [];
    let start = NaN;
    let covered = 0;
    let personMaps = 0;
    const out: PoseFrame[] = await lastValueFrom(
      frames.pipe(
        tap((f) => {
          if (Number.isNaN(start)) start = f.time;
          const t = f.meta?.truth as TruthMeta | undefined;
          if (!t) return;
          truths.push(t);
          for (const e of t.events ?? []) if (e.type === 'fall_start') falls.push(e.time);
        }),
        takeWhile((f) => f.time - start < minutes * 60_000),
        livePipeline(
          {
            model,
            untrained: 'drop',
            radios: () => radios,
            // The front end's maps come out as the frame that completes them goes in: the newest truth is theirs.
            onMap: (m) => {
              const persons = truths[truths.length - 1]?.persons ?? [];
              covered += coveredPersons(
                persons.map((p) => p.floor),
                m.candidates,
                COVERAGE_RADIUS_M,
              );
              personMaps += persons.length;
            },
          },
          () => params,
        ),
        toArray(),
      ),
    );
    let ti = 0;
    let right = 0;
    const countError: Record<string, number> = {};
    const ids = new Set<number>();
    const alerts: number[] = [];
    for (const p of out) {
      while (ti + 1 < truths.length && truths[ti + 1]!.time <= p.time) ti++;
      const n = truths[ti]?.person_count ?? 0;
      if (p.persons.length === n) right++;
      const d = String(p.persons.length - n);
      countError[d] = (countError[d] ?? 0) + 1;
      for (const q of p.persons) if (q.trackId !== undefined) ids.add(q.trackId);
      for (const a of p.alerts ?? []) if (a.type === 'fall_detection' && a.severity === 'high') alerts.push(p.time);
    }
    const match = matchFallAlerts(falls, alerts);
    return {
      model: modelPath,
      modelVersion: model.metadata.model_version,
      source: base,
      minutes,
      frames: out.length,
      countRight: out.length ? right / out.length : NaN,
      countError,
      trackIds: ids.size,
      trueFalls: falls.length,
      alerted3s: match.delays.filter((x) => Number.isFinite(x)).length,
      falseAlerts: match.falseAlerts,
      frontEnd: model.contract === 3 ? { covered: personMaps ? covered / personMaps : NaN, personMaps } : null,
      wallSeconds: (performance.now() - t0) / 1000,
    };
  } finally {
    await model.release();
  }
}

/**
 * The run as bench results, `live_room.default.*`.
 * @param r the run
 * @returns the results
 */
export function defaultRoomResults(r: DefaultRoomRun): BenchResult[] {
  const room = r.source === defaults().hardware.source ? `npm start's room (${r.source}` : `npm start's people in ${r.source} (not npm start's source`;
  const note = `${room}, default site, 2 generated people) ${r.minutes} simulated min in-process through the live pipeline, model ${r.modelVersion} (${r.model}); ${r.frames} pose frames; wall ${r.wallSeconds.toFixed(0)} s`;
  const errors = Object.entries(r.countError)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([d, n]) => `${Number(d) > 0 ? '+' : ''}${d}: ${((100 * n) / Math.max(1, r.frames)).toFixed(1)} %`)
    .join(', ');
  return [
    { name: 'live_room.default.count_right_share', value: r.countRight, unit: 'fraction', n: r.frames, note: `${note}; reported minus true people ${errors}` },
    { name: 'live_room.default.track_ids', value: r.trackIds, unit: 'ids', n: r.frames, note: `distinct track ids for 2 people in ${r.minutes} min` },
    { name: 'live_room.default.true_falls', value: r.trueFalls, unit: 'falls', n: r.trueFalls, note: "fall_start events of the simulator's ground truth" },
    {
      name: 'live_room.default.falls_alerted_3s',
      value: r.alerted3s,
      unit: 'falls',
      n: r.trueFalls,
      note: 'a high fall alert at most 3 s after the true fall began (matchFallAlerts, as room.falls_alerted_3s)',
    },
    {
      name: 'live_room.default.false_fall_alerts',
      value: r.falseAlerts,
      unit: 'alerts',
      n: r.alerted3s + r.falseAlerts,
      note: 'high fall alerts matching no true fall',
    },
    { name: 'live_room.default.false_fall_alerts_per_hour', value: (r.falseAlerts * 60) / r.minutes, unit: 'per hour', n: r.alerted3s + r.falseAlerts, note },
    ...(r.frontEnd
      ? [
          {
            name: 'live_room.default.front_end_coverage',
            value: r.frontEnd.covered,
            unit: 'fraction',
            n: r.frontEnd.personMaps,
            note: `true persons with a front-end candidate of their own within ${COVERAGE_RADIUS_M} m of their floor point, over every floor map (the refiner finds no one a candidate is not near)`,
          },
        ]
      : []),
  ];
}
