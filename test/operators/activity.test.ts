import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { activity, spec, type ActivityOptions } from '../../operators/activity.js';
import { activityOf, estimatePosture, PoseHistory } from '../../src/pose/posture.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { fallingFigure, kneelThenLie, LYING, personOf, poseFrame, SITTING_SIDE, STANDING, T0, WALKING, type Figure } from '../helpers/stickFigure.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

const fig = (shape: Omit<Figure, 'x' | 'y' | 'scale'>): Figure => ({ x: 320, y: 260, scale: 200, ...shape });
const standing = (trackId: number | undefined, extra: Partial<PersonPose> = {}) => personOf(fig(STANDING), { trackId, ...extra });
const sitting = (trackId: number | undefined, extra: Partial<PersonPose> = {}) => personOf(fig(SITTING_SIDE), { trackId, ...extra });
const lying = (trackId: number | undefined) => personOf(fig(LYING), { trackId });

const run = (frames: PoseFrame[], opts: ActivityOptions | (() => ActivityOptions) = {}) => lastValueFrom(from(frames).pipe(activity(opts), toArray()));

/** "activity,activity|events" for a frame. */
const summary = (f: PoseFrame) =>
  `${f.persons.map((p) => p.activity ?? '-').join(',')}${f.events ? '|' + f.events.map((e) => `${e.metadata.from}>${e.metadata.to}`).join(',') : ''}`;

describe('activity: marbles', () => {
  const v = {
    a: poseFrame(0, [standing(1)]),
    b: poseFrame(100, [standing(1)]),
    c: poseFrame(200, [sitting(1)]),
    d: poseFrame(300, [sitting(1)]),
    e: poseFrame(400, [sitting(1)]),
    f: poseFrame(500, [sitting(1)]),
  };
  const s = map(summary);

  it('labels each frame, with hysteresis and a change event', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-c-d-e-f-|', v);
      const expected = '  x-x-x-x-x-y-|';
      expectObservable(src.pipe(activity(), s)).toBe(expected, { x: 'standing', y: 'sitting|standing>sitting' });
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-#', v, new Error('boom'));
      const expected = '  x-x-#';
      expectObservable(src.pipe(activity(), s)).toBe(expected, { x: 'standing' }, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^--------!     ';
      const unsub = '  ^--------!     ';
      const expected = '--x--x--x-     ';
      expectObservable(src.pipe(activity(), s), unsub).toBe(expected, { x: 'standing' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--|', v);
      const subs = '   ^--------!     ';
      const unsub = '  ^--------!     ';
      const expected = '--x--x--x-     ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        activity(),
        mergeMap((x) => of(x)),
        s,
      );
      expectObservable(result, unsub).toBe(expected, { x: 'standing' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('keeps state per subscription', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('c-d-e-f-|', { c: v.a, d: v.c, e: v.d, f: v.f });
      const op = activity();
      // Both subscriptions see the same history from their own start: neither is affected by the other.
      expectObservable(src.pipe(op, s)).toBe('x-x-x-y-|', { x: 'standing', y: 'sitting|standing>sitting' });
      expectObservable(src.pipe(op, s)).toBe('x-x-x-y-|', { x: 'standing', y: 'sitting|standing>sitting' });
    });
  });
});

describe('activity: behaviour', () => {
  it('a new activity must persist minDurationMs; a short blip changes nothing', async () => {
    const frames = [0, 1, 2, 3, 4].map((k) => poseFrame(k * 100, [standing(7)]));
    frames.push(poseFrame(500, [sitting(7)]), poseFrame(600, [sitting(7)]));
    for (let k = 7; k < 12; k++) frames.push(poseFrame(k * 100, [standing(7)]));
    for (let k = 12; k < 18; k++) frames.push(poseFrame(k * 100, [sitting(7)]));
    const out = await run(frames);
    const labels = out.map((f) => f.persons[0].activity);
    expect(labels.slice(0, 15)).toEqual(Array(15).fill('standing'));
    // Sitting from 1200 ms: reported at 1500 ms.
    expect(labels.slice(15)).toEqual(['sitting', 'sitting', 'sitting']);
    const events = out.flatMap((f) => f.events ?? []);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      eventId: `evt_lab_7_${T0 + 1500}_activity`,
      type: 'activity_change',
      severity: 'low',
      time: T0 + 1500,
      environmentId: 'lab',
      personId: 7,
      trackId: 7,
      metadata: { from: 'standing', to: 'sitting' },
      actionsTaken: [],
    });
    expect(events[0].confidence).toBeGreaterThan(0.5);
    expect(out[15].events).toEqual([events[0]]);
  });

  it('falling is reported on its first frame, then lying after the hysteresis', async () => {
    const frames = Array.from({ length: 50 }, (_, k) =>
      poseFrame(k * 100, [personOf(fallingFigure(Math.max(0, k - 10) / 10, 0.8, 90, 300, 440, 220), { trackId: 3, floor: { x: 2, y: 3 } })]),
    );
    const out = await run(frames);
    const labels = out.map((f) => f.persons[0].activity);
    const first = labels.indexOf('falling');
    expect(first).toBeGreaterThan(10);
    expect(first).toBeLessThanOrEqual(18);
    // The same frame activityOf first calls falling: no hysteresis delay.
    const h = new PoseHistory(64);
    const raw = frames.map((f) => {
      const p = f.persons[0];
      h.push(f.time, estimatePosture(p.keypoints, p.bbox), 2, 3, NaN);
      return activityOf(h).activity;
    });
    expect(first).toBe(raw.indexOf('falling'));
    expect(labels.slice(0, first)).toEqual(Array(first).fill('standing'));
    expect(out[first].events?.map((e) => e.metadata)).toEqual([{ from: 'standing', to: 'falling' }]);
    expect(out[first].events?.[0].location).toEqual({ x: 2, y: 3 });
    expect(labels.at(-1)).toBe('lying');
    const changes = out.flatMap((f) => f.events ?? []).map((e) => `${e.metadata.from}>${e.metadata.to}`);
    expect(changes).toEqual(['standing>falling', 'falling>lying']);
  });

  it('lying down on the floor through kneeling is not falling: the default 5 s history reaches back to the kneel', async () => {
    const frames = (figs: Figure[]) => figs.map((f, k) => poseFrame(k * 100, [personOf(f, { trackId: 5, floor: { x: 1, y: 2 } })]));
    const staged = frames(kneelThenLie(300, 440, 220));
    const out = await run(staged);
    const labels = out.map((f) => f.persons[0].activity);
    expect(labels).not.toContain('falling');
    expect(labels.at(-1)).toBe('lying');
    expect(out.flatMap((f) => f.events ?? []).map((e) => `${e.metadata.from}>${e.metadata.to}`)).toEqual(['standing>lying']);
    // A history of 1.5 s holds the tip-over but not the kneel before it: that reads as a fall.
    const short = await run(staged, { historyMs: 1500 });
    expect(short.map((f) => f.persons[0].activity)).toContain('falling');
    // A fall from standing is falling with the default history.
    const fall = await run(frames(Array.from({ length: 40 }, (_, k) => fallingFigure(Math.max(0, k - 10) / 10, 1.2, 90, 300, 440, 220))));
    expect(fall.map((f) => f.persons[0].activity)).toContain('falling');
  });

  it('minDurationMs 0 reports every change at once', async () => {
    const out = await run([poseFrame(0, [standing(1)]), poseFrame(100, [sitting(1)]), poseFrame(200, [standing(1)])], { minDurationMs: 0 });
    expect(out.map((f) => f.persons[0].activity)).toEqual(['standing', 'sitting', 'standing']);
    expect(out.flatMap((f) => f.events ?? [])).toHaveLength(2);
  });

  it('walking from the tracker floor velocity', async () => {
    const walk = (k: number, speed: number) => personOf(fig(WALKING), { trackId: 2, floor: { x: 1 + k * speed * 0.1, y: 2 }, velocity: { x: speed, y: 0 } });
    const fast = await run(Array.from({ length: 6 }, (_, k) => poseFrame(k * 100, [walk(k, 1.1)])));
    expect(fast.map((f) => f.persons[0].activity)).toEqual(Array(6).fill('walking'));
    const slow = await run(Array.from({ length: 6 }, (_, k) => poseFrame(k * 100, [walk(k, 0.2)])));
    expect(slow.map((f) => f.persons[0].activity)).toEqual(Array(6).fill('standing'));
  });

  it('tracks and environments are independent', async () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 6; k++) {
      frames.push(poseFrame(k * 100, [standing(1), sitting(2)]));
      frames.push(poseFrame(k * 100, [k < 2 ? standing(1) : lying(1)], { environmentId: 'other' }));
    }
    const out = await run(frames);
    const lab = out.filter((f) => f.environmentId === 'lab');
    const other = out.filter((f) => f.environmentId === 'other');
    expect(lab.map((f) => f.persons.map((p) => p.activity).join())).toEqual(Array(6).fill('standing,sitting'));
    expect(lab.some((f) => f.events)).toBe(false);
    expect(other.map((f) => f.persons[0].activity)).toEqual(['standing', 'standing', 'standing', 'standing', 'standing', 'lying']);
    expect(other[5].events?.[0]).toMatchObject({ environmentId: 'other', trackId: 1, metadata: { from: 'standing', to: 'lying' } });
  });

  it('forgets a track unseen for 10 s: its return is not a change; within 10 s it is', async () => {
    const gap = (ms: number) => [
      poseFrame(0, [standing(4)]),
      poseFrame(100, [standing(4)]),
      ...[0, 1, 2, 3, 4].map((k) => poseFrame(ms + k * 100, [sitting(4)])),
    ];
    const forgotten = await run(gap(10_200));
    expect(forgotten.map((f) => f.persons[0].activity)).toEqual(['standing', 'standing', 'sitting', 'sitting', 'sitting', 'sitting', 'sitting']);
    expect(forgotten.flatMap((f) => f.events ?? [])).toEqual([]);
    const remembered = await run(gap(9_000));
    expect(remembered.map((f) => f.persons[0].activity)).toEqual(['standing', 'standing', 'standing', 'standing', 'standing', 'sitting', 'sitting']);
    expect(remembered.flatMap((f) => f.events ?? []).map((e) => e.time)).toEqual([T0 + 9_300]);
  });

  it('labels untracked persons frame by frame, without events', async () => {
    const out = await run([poseFrame(0, [standing(undefined)]), poseFrame(100, [sitting(undefined)]), poseFrame(200, [lying(undefined)])]);
    expect(out.map((f) => f.persons[0].activity)).toEqual(['standing', 'sitting', 'lying']);
    expect(out.every((f) => f.events === undefined)).toBe(true);
  });

  it('passes through persons without a torso and frames without a time, and never mutates its input', async () => {
    const blind = standing(5);
    blind.keypoints = blind.keypoints.map((v, i) => (i % 3 === 2 ? 0 : v));
    const broken = { ...standing(6), keypoints: new Float32Array(4) };
    const input = [poseFrame(0, [blind, broken, standing(8)]), poseFrame(100, [standing(8)], { time: NaN })];
    const snapshot = structuredClone(input);
    const out = await run(input);
    expect(out[0].persons[0]).toBe(blind);
    expect(out[0].persons[1]).toBe(broken);
    expect(out[0].persons[2]).not.toBe(input[0].persons[2]);
    expect(out[0].persons[2].activity).toBe('standing');
    expect(out[1]).toBe(input[1]);
    expect(input).toEqual(snapshot);
  });

  it('a frame time jumping back more than 10 s starts the track afresh', async () => {
    const out = await run([poseFrame(20_000, [standing(1)]), poseFrame(20_100, [standing(1)]), poseFrame(0, [sitting(1)]), poseFrame(100, [sitting(1)])]);
    expect(out.map((f) => f.persons[0].activity)).toEqual(['standing', 'standing', 'sitting', 'sitting']);
    expect(out.flatMap((f) => f.events ?? [])).toEqual([]);
  });

  it('the function form is read on every frame', async () => {
    const opts: ActivityOptions = { minDurationMs: 10_000 };
    const frames = [poseFrame(0, [standing(1)]), poseFrame(100, [sitting(1)]), poseFrame(200, [sitting(1)]), poseFrame(300, [sitting(1)])];
    const seen: string[] = [];
    await lastValueFrom(
      from(frames).pipe(
        activity(() => opts),
        map((f, i) => {
          seen.push(f.persons[0].activity!);
          if (i === 1) opts.minDurationMs = 0;
          return f;
        }),
        toArray(),
      ),
    );
    // Frame 2 is the first to see minDurationMs 0.
    expect(seen).toEqual(['standing', 'standing', 'sitting', 'sitting']);
  });

  it('rejects bad options: at creation, or as an error from the function form', async () => {
    expect(() => activity({ minDurationMs: -1 })).toThrow(RangeError);
    expect(() => activity({ historyMs: 1000 })).toThrow(RangeError);
    expect(() => activity({ walkSpeed: 0 })).toThrow(RangeError);
    expect(() => activity({ minDurationMs: '300' as unknown as number })).toThrow(RangeError);
    await expect(run([poseFrame(0, [standing(1)])], () => ({ forgetAfterMs: 5 }))).rejects.toThrow(RangeError);
  });

  it('has a spec named activity from pose to pose that builds the operator from defaults', async () => {
    expect(spec.name).toBe('activity');
    expect(spec.input).toBe('pose');
    expect(spec.output).toBe('pose');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({ enabled: true, minDurationMs: 300, historyMs: 5000, forgetAfterMs: 10_000, walkSpeed: 0.3, walkBoxRate: 0.25 });
    const out: PoseFrame[] = await lastValueFrom(from([poseFrame(0, [sitting(1)])]).pipe(spec.create(params, {}), toArray()));
    expect(out[0].persons[0].activity).toBe('sitting');
    // Switched off (analytics.enable_activity_recognition false), frames pass through unlabelled.
    const off: PoseFrame[] = await lastValueFrom(from([poseFrame(0, [sitting(1)])]).pipe(spec.create({ ...params, enabled: false }, {}), toArray()));
    expect(off[0].persons[0].activity).toBeUndefined();
    // A live parameter from the context overrides the stage's own, frame by frame.
    let on = false;
    const live: PoseFrame[] = await lastValueFrom(
      from([poseFrame(0, [sitting(1)]), poseFrame(1000, [sitting(1)])]).pipe(
        spec.create(params, { live: (op) => (op === 'activity' ? { enabled: (on = !on) } : undefined) }),
        toArray(),
      ),
    );
    expect(live.map((f) => f.persons[0].activity)).toEqual(['sitting', undefined]);
  });
});

describe('activity: the answers of a v2 model', () => {
  /** A person carrying a v2 model's activity probabilities (MODEL_ACTIVITIES order: standing, sitting, lying, walking, falling). */
  const modelPerson = (trackId: number | undefined, probs: number[]): PersonPose => {
    const probabilities = Float32Array.from(probs);
    let best = 0;
    for (let i = 1; i < 5; i++) if (probabilities[i]! > probabilities[best]!) best = i;
    const names = ['standing', 'sitting', 'lying', 'walking', 'falling'] as const;
    return personOf(fig(STANDING), {
      trackId,
      floor: { x: 2, y: 3 },
      modelActivity: { activity: names[best]!, confidence: probabilities[best]!, probabilities },
    });
  };
  const STAND = [0.9, 0.05, 0.02, 0.02, 0.01];
  const SIT = [0.05, 0.9, 0.02, 0.02, 0.01];
  const DOWN = [0.1, 0.1, 0.6, 0.05, 0.15];

  it('uses the model rather than the posture: smoothed per track, with the same hysteresis', async () => {
    // The stick figure stands; the model says sitting from frame 2 on: the smoothed probabilities
    // turn after two frames, then the change waits out minDurationMs (300 ms).
    const frames = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => poseFrame(i * 100, [modelPerson(1, i < 2 ? STAND : SIT)]));
    const out = await run(frames);
    expect(out.map(summary)).toEqual(['standing', 'standing', 'standing', 'standing', 'standing', 'standing', 'sitting|standing>sitting', 'sitting']);
  });

  it("a frame's fall probability makes the person most likely down `falling` at once", async () => {
    const a = poseFrame(0, [modelPerson(1, STAND), modelPerson(2, STAND)]);
    const b = { ...poseFrame(100, [modelPerson(1, STAND), modelPerson(2, DOWN)]), fallProbability: 0.8 };
    const out = await run([a, b]);
    expect(out.map(summary)).toEqual(['standing,standing', 'standing,falling|standing>falling']);
    expect(out[1]!.persons[1]!.activityConfidence).toBeCloseTo(0.8, 6);
  });

  it('...unless the model is sure that person is up, or the probability is below the trigger', async () => {
    const upright = [0.5, 0.02, 0.02, 0.4, 0.06];
    const veto = await run([poseFrame(0, [modelPerson(1, STAND)]), { ...poseFrame(100, [modelPerson(1, upright)]), fallProbability: 0.9 }]);
    expect(veto.map(summary)).toEqual(['standing', 'standing']);
    const weak = await run([poseFrame(0, [modelPerson(1, STAND)]), { ...poseFrame(100, [modelPerson(1, DOWN)]), fallProbability: 0.45 }]);
    expect(weak.map(summary)).toEqual(['standing', 'standing']);
  });

  it('the fall goes to the person falling now, before one already lying (2 P(falling) + P(lying))', async () => {
    // Track 1 lay down on purpose (P(lying) 0.95); track 2 is falling (P(falling) 0.6, P(lying) 0.3):
    // by P(falling) + P(lying) the one lying would take the fall (0.95 > 0.9).
    const LIES = [0.02, 0.02, 0.95, 0.0, 0.01];
    const FALLS = [0.05, 0.0, 0.3, 0.05, 0.6];
    const out = await run([
      poseFrame(0, [modelPerson(1, LIES), modelPerson(2, STAND)]),
      { ...poseFrame(100, [modelPerson(1, LIES), modelPerson(2, FALLS)]), fallProbability: 0.9 },
    ]);
    expect(out[1]!.persons.map((p) => p.activity)).toEqual(['lying', 'falling']);
  });

  it('the track holding the fall keeps it while the probability stays over the trigger; a second person falling takes it', async () => {
    // Track 2 falls at 100 ms, then lies (P(lying) 0.95), tying with track 1, who lay down on
    // purpose and comes first in the frame: the fall stays with track 2 (no second episode on 1).
    const LIES = [0.02, 0.02, 0.95, 0.0, 0.01];
    const FALLS = [0.05, 0.0, 0.05, 0.0, 0.9];
    const frames = [
      poseFrame(0, [modelPerson(1, LIES), modelPerson(2, STAND), modelPerson(3, STAND)]),
      { ...poseFrame(100, [modelPerson(1, LIES), modelPerson(2, FALLS), modelPerson(3, STAND)]), fallProbability: 0.9 },
      ...[200, 300, 400, 500].map((t) => ({ ...poseFrame(t, [modelPerson(1, LIES), modelPerson(2, LIES), modelPerson(3, STAND)]), fallProbability: 0.9 })),
      // Track 3's own answer is falling: a fall of its own takes over.
      { ...poseFrame(600, [modelPerson(1, LIES), modelPerson(2, LIES), modelPerson(3, FALLS)]), fallProbability: 0.9 },
      // Below the trigger the hold ends: the next fall goes to the best again (track 1 ties with 2 and comes first).
      poseFrame(700, [modelPerson(1, LIES), modelPerson(2, LIES), modelPerson(3, LIES)]),
      { ...poseFrame(800, [modelPerson(1, LIES), modelPerson(2, LIES), modelPerson(3, LIES)]), fallProbability: 0.9 },
    ];
    // No hysteresis: each frame shows whom the fall went to.
    const out = await run(frames, { minDurationMs: 0 });
    const falling = out.map((f) => f.persons.findIndex((p) => p.activity === 'falling'));
    expect(falling).toEqual([-1, 1, 1, 1, 1, 1, 2, -1, 0]);
  });

  it('untracked persons take the model answer as it is', async () => {
    const out = await run([{ ...poseFrame(0, [modelPerson(undefined, SIT), modelPerson(undefined, DOWN)]), fallProbability: 0.9 }]);
    expect(out.map(summary)).toEqual(['sitting,falling']);
  });
});
