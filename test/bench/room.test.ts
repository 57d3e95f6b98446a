/**
 * The live-room benchmark (`npm run bench:room`): its matching rules on hand-made inputs, the
 * replay clock it reads the service's timestamps with, a small recipe end to end against the
 * real `csipose serve` (built), read over `/ws/pose`, and the oracle's pass over the same recipe
 * (the live pipeline in-process with the ground truth for a model).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { replayModel, runRoomBench } from '../../bench/liveRoom.js';
import { ReplayClock } from '../../src/decoders/replayClock.js';
import { roomConfig } from '../../bench/room/config.js';
import { defaultRoomRecipe, planSessions, SMALL_ROOM_PLAN, type RoomBenchPlan } from '../../bench/room/plan.js';
import { poissonExact } from '../../bench/room/report.js';
import { activityEvents, countRight, matchFallAlerts, presenceLatencies, speedErrors, trackIds } from '../../bench/room/score.js';
import { placeOnClock, replayStart, windowAt } from '../../bench/room/session.js';
import { ensureBuilt, repoRoot } from '../helpers/cli.js';
import { join } from 'node:path';
import { isHeldOut } from '../../training/ts/recipe.js';

describe('bench:room matching', () => {
  it('takes for each alert the earliest untaken fall that began within 3 s before it', () => {
    // Fall at 10 s alerted at 12 s; a second alert for it is false; an alert 3.5 s after a fall is
    // false and leaves the fall unalerted; an alert before any fall is false.
    const m = matchFallAlerts([10_000, 20_000, 40_000], [5_000, 12_000, 12_500, 23_500, 41_000]);
    expect(m.delays).toEqual([2000, NaN, 1000]);
    expect(m.falseAlerts).toBe(3);
    // Two falls close together, two alerts: one each, the earlier fall to the earlier alert.
    expect(matchFallAlerts([1000, 1500], [3200, 3300]).delays).toEqual([2200, 1800]);
    // Exactly 3 s is within, an alert at the fall's own instant too.
    expect(matchFallAlerts([1000, 9000], [4000, 9000]).delays).toEqual([3000, 0]);
    expect(matchFallAlerts([], [1000]).falseAlerts).toBe(1);
  });

  it('counts right frames only where a pose frame came', () => {
    expect(countRight([2, 2, 2, 1], [2, undefined, 3, 1])).toEqual({ right: 2, frames: 3 });
    expect(countRight([0, 0], [undefined, undefined])).toEqual({ right: 0, frames: 0 });
  });

  it('counts distinct track ids over the true persons\u2019 time in the room', () => {
    // 2 people for 7,500 windows of 80 ms (10 minutes): ids 1, 2 and a ghost 7 = 3 ids over 20 person-minutes.
    const counts = new Uint8Array(7500).fill(2);
    const frames = Array.from({ length: 7500 }, (_, k) => (k === 10 ? [1, 2, 7] : k % 3 === 0 ? undefined : [1, 2]));
    expect(trackIds(frames, counts)).toEqual({ ids: 3, personMinutes: 20 });
  });

  it('counts a track\u2019s activity changes, not new tracks or unlabelled frames', () => {
    const f = (track: number, activity?: string) => ({ track, activity });
    const frames = [
      [f(1, 'standing'), f(2, 'sitting')],
      undefined,
      [f(1, 'walking'), f(2)],
      [f(1, 'walking'), f(2, 'lying'), f(3, 'standing')],
      [f(1, 'standing'), f(3, 'walking')],
    ];
    // 1: standing -> walking -> standing (2); 2: sitting -> lying (1); 3: standing -> walking (1).
    expect(activityEvents(frames)).toBe(4);
  });

  it('times presence from entering to the count first reaching the person, and misses one whose count never came', () => {
    const times = [1000, 2000, 3000, 4000, 5000, 6000];
    const truth = [2, 2, 2, 2, 1, 1];
    const reported = [1, undefined, 2, 2, 1, 1];
    // Both enter at 0: the first is reported at 1 s, the second at 3 s.
    expect(presenceLatencies([{ time: 0, before: 0, after: 2 }], times, truth, reported)).toEqual({ latencies: [1, 3], missed: 0 });
    // The second's count came only after the true count fell below 2: missed.
    expect(presenceLatencies([{ time: 0, before: 0, after: 2 }], times, truth, [1, 1, 1, 1, 2, 2])).toEqual({ latencies: [1], missed: 1 });
  });

  it('pairs reported and true persons on the floor before comparing speeds', () => {
    // Window 0: true A at (1, 1) still, B at (4, 1) walking 1.2 m/s; reported near B first with 1.0
    // m/s, near A with 0.1 m/s, and one 3 m from anyone (unpaired).
    const truth = {
      people: 2,
      x: Float32Array.from([1, 4]),
      y: Float32Array.from([1, 1]),
      speed: Float32Array.from([0, 1.2]),
      present: Uint8Array.from([1, 1]),
    };
    const p = (x: number, y: number, speed: number) => ({ track: 1, x, y, speed, activity: undefined });
    const out = speedErrors(truth, [[p(3.8, 1.2, 1.0), p(1.3, 0.9, 0.1), p(2.5, 4.5, 2)]]);
    expect(out.errors.map((e) => +e.toFixed(3))).toEqual([0.2, 0.1]);
    expect(out.moving.map((e) => +e.toFixed(3))).toEqual([0.2]);
  });
});

describe('bench:room clock', () => {
  it('repeats the service replay clock: device-clock steps, a nominal period over a wrap or a jump', () => {
    const c = new ReplayClock(100);
    expect([0, 10_000, 30_000, 2 ** 32 - 5_000].map((us) => c.advanceUs(us))).toEqual([0, 10, 30, 40]);
    // Wrapped: the next value is small again, a backwards step: one nominal period.
    expect(c.advanceUs(5_000)).toBe(50);
  });

  it('finds the replay start from timestamps when the service dropped windows before the first frame', () => {
    // Windows every 80 ms, with lost packets making some steps 90 or 100 ms.
    const steps = [80, 90, 80, 80, 100, 80, 80, 90, 80, 80, 80, 100, 80, 90, 80, 80];
    const media = new Float64Array(steps.length + 1);
    for (let i = 0; i < steps.length; i++) media[i + 1] = media[i]! + steps[i]!;
    const start = 1_800_000_000_000;
    // The first 3 windows were dropped: the first frame received is window 3 with frame_id 0.
    const poses = [3, 4, 5, 6, 8, 9, 10].map((k, i) => ({ t: start + media[k]!, id: i, persons: [] }));
    expect(replayStart(media, poses)).toBe(start);
    const seen = placeOnClock({ media, windows: media.length }, poses, [{ t: start + media[9]!, fallTime: start + media[6]! }]);
    expect(seen.frames.map((f) => f !== undefined)).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
      true,
      false,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(seen.alerts).toEqual([{ window: 9, fallWindow: 6 }]);
    expect(seen.unmapped).toBe(0);
    expect(windowAt(media, media[5]! + 3)).toBe(-1);
  });
});

describe('bench:room plan and report', () => {
  it('gives every room every people count and writes the room into the configuration', () => {
    const plan: RoomBenchPlan = { ...SMALL_ROOM_PLAN, hours: 12 * (1 / 60), sessionMinutes: 1 };
    const s = planSessions(plan);
    expect(s).toHaveLength(12);
    const pairs = new Set(s.map((x) => `${x.room.name}:${x.people}`));
    expect(pairs.size).toBe(12);
    expect(
      s
        .slice(0, 3)
        .map((x) => x.people)
        .sort(),
    ).toEqual([1, 2, 3]);
    for (const x of s) expect((x.sim.people as unknown[]).length).toBe(x.people);
    const cfg = roomConfig(defaultRoomRecipe(1)) as { environment: { view: { x: number }; site: Record<string, unknown> } };
    expect(cfg.environment.view.x).toBe(3);
    expect(cfg.environment.site.known).toBe(true);
    expect(cfg.environment.site.room_width).toBe(6);
    // The service's model: the schema's default unless the benchmark names one.
    expect((cfg as { neural_network?: unknown }).neural_network).toBeUndefined();
    expect(roomConfig(defaultRoomRecipe(1), '/models/window.onnx')).toMatchObject({ neural_network: { model_path: '/models/window.onnx' } });
  });

  it('replays with the shipped window model, and refuses a v3 refiner (one link each), naming --default-room', async () => {
    expect(await replayModel()).toBe(join(repoRoot, 'models/csipose-pose.onnx'));
    await expect(replayModel('models/csipose-refiner.onnx')).rejects.toThrow(
      /--model \S+csipose-refiner\.onnx is a v3 refiner: the sessions are replayed from one link, which it cannot read; score it in npm start's room with --default-room M --model PATH/,
    );
  });

  it('split val: VALIDATION rooms only (none held out), with session seeds apart from the TEST plan', () => {
    const plan: RoomBenchPlan = { ...SMALL_ROOM_PLAN, hours: 12 * (1 / 60), sessionMinutes: 1 };
    const test = planSessions(plan);
    const val = planSessions({ ...plan, split: 'val' });
    expect(val).toHaveLength(12);
    expect(new Set(val.map((x) => `${x.room.name}:${x.people}`)).size).toBe(12);
    for (const x of val) {
      expect(x.room.name).toMatch(/^val-/);
      expect(x.room.recipe.split).toBe('val');
      expect(isHeldOut(x.room.recipe)).toBe(false);
    }
    const testSeeds = new Set(test.map((x) => x.sim.seed));
    expect(val.some((x) => testSeeds.has(x.sim.seed))).toBe(false);
  });

  it('gives exact Poisson intervals', () => {
    const [lo0, hi0] = poissonExact(0);
    expect(lo0).toBe(0);
    expect(hi0).toBeCloseTo(3.689, 3);
    const [lo, hi] = poissonExact(10);
    expect(lo).toBeCloseTo(4.795, 3);
    expect(hi).toBeCloseTo(18.39, 2);
  });
});

describe('bench:room end to end', () => {
  beforeAll(() => ensureBuilt(), 180_000);

  it('replays a small recipe through the real service and reports every room.* figure within its bounds', async () => {
    const plan: RoomBenchPlan = { ...SMALL_ROOM_PLAN, hours: 3 * (0.75 / 60), sessionMinutes: 0.75 };
    const run = await runRoomBench({ plan, speed: 4, jobs: 2, oracle: false });
    expect(run.scores).toHaveLength(3);
    expect(run.oracleScores).toBeNull();
    // The recipe holds true falls and hard negatives (seeded: the same every run).
    expect(run.scores.reduce((a, s) => a + s.fallsScored, 0)).toBeGreaterThan(0);
    expect(run.scores.reduce((a, s) => a + s.hardNegatives.lieDowns + s.hardNegatives.sitDowns, 0)).toBeGreaterThan(0);
    const byName = new Map(run.results.map((r) => [r.name, r]));
    for (const name of [
      'room.hours',
      'room.count_right_share',
      'room.tracks_per_person',
      'room.false_falls_per_hour',
      'room.falls_alerted_3s',
      'room.activity_events_ratio',
      'room.speed_error_mps',
      'room.presence_latency_s',
    ]) {
      const r = byName.get(name);
      expect(r, name).toBeDefined();
      expect(Number.isInteger(r!.n), name).toBe(true);
    }
    expect(byName.get('room.hours')!.value).toBeCloseTo(2.25 / 60, 9);
    // The subscriber saw every window, each placed on the session's clock.
    expect(byName.get('room.service.windows_seen')!.value).toBe(1);
    for (const s of run.scores) {
      expect(s.service.received).toBe(s.service.windows);
      expect(s.service.unmapped).toBe(0);
      expect(s.framesScored).toBe(s.service.windows);
      // Everyone is present from the start: a pose frame cannot come before the first window's end
      // (1.27 s), nor can a confirmed count lag the whole session.
      for (const l of s.latencies) expect(l).toBeGreaterThanOrEqual(1.27);
      // An alert is raised at least the notification delay (0.5 s) after the fall it belongs to.
      for (const d of s.fallAlertDelays) {
        expect(d).toBeGreaterThanOrEqual(0.5);
        expect(d).toBeLessThanOrEqual(3);
      }
      expect(s.fallsAlerted3s).toBeLessThanOrEqual(s.fallsScored);
      expect(s.falseFallAlerts + s.fallsAlerted3s).toBeLessThanOrEqual(s.fallAlerts);
    }
    for (const name of ['room.count_right_share', 'room.falls_alerted_3s']) {
      const v = byName.get(name)!.value;
      if (Number.isFinite(v)) {
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThanOrEqual(1);
      }
    }
    // Wilson and exact Poisson intervals hold their figure (to the note's printed digits).
    for (const name of ['room.tracks_per_person', 'room.false_falls_per_hour', 'room.falls_alerted_3s']) {
      const r = byName.get(name)!;
      const m = /95 % \[([\d.]+), ([\d.]+)\]/.exec(r.note ?? '');
      expect(m, name).not.toBeNull();
      if (!Number.isFinite(r.value)) continue;
      expect(Number(m![1]), name).toBeLessThanOrEqual(r.value + 0.06);
      expect(Number(m![2]), name).toBeGreaterThanOrEqual(r.value - 0.06);
    }
  }, 400_000);
});

describe('bench:room oracle', () => {
  it('with the ground truth for a model, reports the true count, every fall 0.5 s after it began and no false alarm', async () => {
    const plan: RoomBenchPlan = { ...SMALL_ROOM_PLAN, hours: 3 * (0.75 / 60), sessionMinutes: 0.75 };
    const run = await runRoomBench({ plan, speed: 4, jobs: 2, model: false });
    expect(run.scores).toEqual([]);
    const ss = run.oracleScores!;
    expect(ss).toHaveLength(3);
    const byName = new Map(run.results.map((r) => [r.name, r]));
    // Only the oracle's names, the same set as the model's under room.oracle.
    expect([...byName.keys()].every((n) => n.startsWith('room.oracle.'))).toBe(true);
    for (const s of ss) {
      // Every window of the capture made a pose frame, and each named its own window.
      expect(s.service.received).toBe(s.service.windows);
      expect(s.framesScored).toBe(s.service.windows);
      expect(s.service.unmapped).toBe(0);
    }
    // Everyone is in the room from the start and the oracle's count is the truth's: only a pipeline
    // that lost or invented persons (count, tracker confirmation, the Form A rendering or its
    // filters) reports another count. Measured: 1 (every frame).
    expect(byName.get('room.oracle.count_right_share')!.value).toBeGreaterThanOrEqual(0.95);
    // One id per person (nobody leaves, the tracker holds true positions).
    for (const s of ss) expect(s.trackIds).toBe(s.people);
    // The truth-to-window alignment: the oracle's fall output turns on at the first window whose
    // last frame is at or after the fall's onset, and the alert rule raises it 0.5 s
    // (notification_delay_seconds) later, at the next window: every fall is alerted between 0.5 s
    // and 0.5 s + 3 windows of 80 ms after it began (measured: 0.58 and 0.60 s). The truth taken 2
    // windows early alerts at 0.42 s, 3 windows late at 0.82 s: both fail here (tried); further
    // off, alerts come before the fall or over 3 s after it (false alarms and misses).
    const falls = ss.reduce((a, s) => a + s.fallsScored, 0);
    expect(falls).toBeGreaterThan(0);
    expect(byName.get('room.oracle.falls_alerted_3s')!.value).toBe(1);
    for (const s of ss) {
      expect(s.fallAlertDelays).toHaveLength(s.fallsScored);
      for (const d of s.fallAlertDelays) {
        expect(d).toBeGreaterThanOrEqual(0.5);
        expect(d).toBeLessThanOrEqual(0.5 + 3 * 0.08);
      }
    }
    // The fall output is 1 only in the seconds after a true onset, and the rule raises one alert
    // per fall: none is false, on the hard negatives (lie-downs, sit-downs) either.
    expect(ss.reduce((a, s) => a + s.hardNegatives.lieDowns + s.hardNegatives.sitDowns, 0)).toBeGreaterThan(0);
    expect(byName.get('room.oracle.false_falls_per_hour')!.value).toBe(0);
    // The activity shown is the truth's: a reported change for every true change, and no other.
    for (const s of ss) expect(s.activityEvents).toBe(s.trueActivityChanges);
  }, 120_000);
});

describe('bench:room --default-room (npm start\u2019s room in-process)', () => {
  it('scores what the live pipeline says about the default room against the truth on the same frames', async () => {
    const { runDefaultRoom, defaultRoomResults } = await import('../../bench/room/defaultRoom.js');
    const r = await runDefaultRoom(join(repoRoot, 'models/csipose-pose.onnx'), 0.5);
    expect(r.frames).toBeGreaterThan(100);
    const counted = Object.values(r.countError).reduce((a, b) => a + b, 0);
    expect(counted).toBe(r.frames);
    expect(r.countRight).toBeCloseTo((r.countError['0'] ?? 0) / r.frames, 12);
    // Two generated people: at least one track, a handful at most in half a minute.
    expect(r.trackIds).toBeGreaterThanOrEqual(1);
    expect(r.alerted3s).toBeLessThanOrEqual(r.trueFalls);
    const names = defaultRoomResults(r).map((x) => x.name);
    expect(names).toEqual([
      'live_room.default.count_right_share',
      'live_room.default.track_ids',
      'live_room.default.true_falls',
      'live_room.default.falls_alerted_3s',
      'live_room.default.false_fall_alerts',
      'live_room.default.false_fall_alerts_per_hour',
    ]);
    expect(r.frontEnd).toBeNull();
  }, 120_000);

  it('with a v3 refiner, scores its front end: the share of true persons with a candidate near them', async () => {
    const { runDefaultRoom, defaultRoomResults } = await import('../../bench/room/defaultRoom.js');
    const r = await runDefaultRoom(join(repoRoot, 'models/csipose-refiner.onnx'), 0.3, 'sim?realism=ideal');
    // Two people on every map, one map per 16 packets of the primary link at 100 Hz.
    expect(r.frontEnd!.personMaps).toBe(2 * r.frames);
    expect(r.frontEnd!.covered).toBeGreaterThan(0);
    expect(r.frontEnd!.covered).toBeLessThanOrEqual(1);
    expect(defaultRoomResults(r).map((x) => x.name)).toContain('live_room.default.front_end_coverage');
  }, 120_000);

  it('covers each true person with a candidate of their own, nearest pairs first, within the radius', async () => {
    const { coveredPersons } = await import('../../bench/room/defaultRoom.js');
    const p = [
      { x: 1, y: 1 },
      { x: 1.5, y: 1 },
    ];
    expect(coveredPersons(p, [{ x: 1.2, y: 1 }], 0.6)).toBe(1); // one candidate covers one person only
    expect(
      coveredPersons(
        p,
        [
          { x: 1.2, y: 1 },
          { x: 1.6, y: 1 },
        ],
        0.6,
      ),
    ).toBe(2);
    // Nearest pair first: (1.4, 1) goes to the second person (0.1 m), the first takes (0.55, 1);
    // taking persons in order would give the first (1.4, 1) at 0.4 m and leave the second uncovered.
    expect(
      coveredPersons(
        p,
        [
          { x: 1.4, y: 1 },
          { x: 0.55, y: 1 },
        ],
        0.6,
      ),
    ).toBe(2);
    expect(coveredPersons(p, [{ x: 2.2, y: 1 }], 0.6)).toBe(0);
    expect(coveredPersons([{ x: 0, y: 0 }], [{ x: 0.6, y: 0 }], 0.6)).toBe(1); // at the radius counts
    expect(coveredPersons([{ x: 0, y: 0 }], [{ x: 0.6, y: 0 }], 0.5)).toBe(0);
    expect(coveredPersons([], [{ x: 0, y: 0 }], 0.6)).toBe(0);
  });
});
