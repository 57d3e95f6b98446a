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
  wallSeconds: number;
}

/** The truth the `sim?truth=1` source puts on frames (`truthToJson`), the parts scored here. */
interface TruthMeta {
  time: number;
  person_count: number;
  events?: Array<{ type: string; time: number }>;
}

/**
 * Runs the default room through the live pipeline with a model.
 * @param modelPath the model file (`neural_network.model_path`'s default when the caller says so)
 * @param minutes simulated minutes
 * @returns the figures
 */
export async function runDefaultRoom(modelPath: string, minutes: number): Promise<DefaultRoomRun> {
  const cfg = deepFreeze(defaults()) as ConfigSnapshot;
  const params = liveParams(cfg);
  const model = await PoseModel.load(modelPath);
  const t0 = performance.now();
  try {
    // The service's configured source, with the ground truth on each tick's first frame.
    const uri = `${cfg.hardware.source}${cfg.hardware.source.includes('?') ? '&' : '?'}truth=1`;
    const radios = cfg.environment.site.radios;
    const frames = parseSource(uri).open('frame', { speed: 0, radios: () => radios, view: () => cfg.environment.view, environmentId: cfg.environment.id }) as Observable<CsiFrame>;
    const truths: TruthMeta[] = [];
    const falls: number[] = [];
    let start = NaN;
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
        livePipeline({ model, untrained: 'drop', radios: () => radios }, () => params),
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
      minutes,
      frames: out.length,
      countRight: out.length ? right / out.length : NaN,
      countError,
      trackIds: ids.size,
      trueFalls: falls.length,
      alerted3s: match.delays.filter((x) => Number.isFinite(x)).length,
      falseAlerts: match.falseAlerts,
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
  const note = `npm start's room (sim?realism=room, default site, 2 generated people) ${r.minutes} simulated min in-process through the live pipeline, model ${r.modelVersion} (${r.model}); ${r.frames} pose frames; wall ${r.wallSeconds.toFixed(0)} s`;
  const errors = Object.entries(r.countError)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([d, n]) => `${Number(d) > 0 ? '+' : ''}${d}: ${((100 * n) / Math.max(1, r.frames)).toFixed(1)} %`)
    .join(', ');
  return [
    { name: 'live_room.default.count_right_share', value: r.countRight, unit: 'fraction', n: r.frames, note: `${note}; reported minus true people ${errors}` },
    { name: 'live_room.default.track_ids', value: r.trackIds, unit: 'ids', n: r.frames, note: `distinct track ids for 2 people in ${r.minutes} min` },
    { name: 'live_room.default.true_falls', value: r.trueFalls, unit: 'falls', n: r.trueFalls, note: "fall_start events of the simulator's ground truth" },
    { name: 'live_room.default.falls_alerted_3s', value: r.alerted3s, unit: 'falls', n: r.trueFalls, note: 'a high fall alert at most 3 s after the true fall began (matchFallAlerts, as room.falls_alerted_3s)' },
    { name: 'live_room.default.false_fall_alerts', value: r.falseAlerts, unit: 'alerts', n: r.alerted3s + r.falseAlerts, note: 'high fall alerts matching no true fall' },
    { name: 'live_room.default.false_fall_alerts_per_hour', value: (r.falseAlerts * 60) / r.minutes, unit: 'per hour', n: r.alerted3s + r.falseAlerts, note },
  ];
}
