import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { activity } from '../../operators/activity.js';
import { alerts, FALL_ROOM_REFRACTORY_MS, requiredFallConfidence, spec, type AlertsConfig } from '../../operators/alerts.js';
import type { Activity, ActivityEvent, PersonPose, PoseAlert, PoseFrame } from '../../src/pose/types.js';
import { compileSchedule, compileZone, distanceToBoundary, inZone, pointInPolygon, scheduleActive } from '../../src/pose/zones.js';
import { fallingFigure, LYING, personOf, poseFrame, SITTING_SIDE, STANDING, T0, type Figure } from '../helpers/stickFigure.js';

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

const SHAPES: Record<Activity, Omit<Figure, 'x' | 'y' | 'scale'>> = {
  standing: STANDING,
  walking: STANDING,
  sitting: SITTING_SIDE,
  lying: LYING,
  falling: { torso: 60, thigh: [-60, -60] },
};

/** A tracked person already labelled by the activity operator. */
const labelled = (trackId: number, act: Activity | undefined, floor: [number, number] | null, conf = 0.9): PersonPose =>
  personOf(
    { x: 320, y: 260, scale: 200, ...SHAPES[act ?? 'standing'] },
    { trackId, activity: act, activityConfidence: act ? conf : undefined, ...(floor ? { floor: { x: floor[0], y: floor[1] } } : {}) },
  );

/** 10 Hz frames of one labelled person: `script(k)` gives the activity at frame k. */
const labelledRun = (n: number, script: (k: number) => Activity | undefined, floor: [number, number] = [2, 3], conf = 0.9) =>
  Array.from({ length: n }, (_, k) => poseFrame(k * 100, [labelled(1, script(k), floor, conf)]));

/** The mechanism tests below are written for a 5 s notification delay (the default is 0.5 s). */
const DELAY5: AlertsConfig = { fallDetection: { notificationDelaySeconds: 5 } };

const runAlerts = (frames: PoseFrame[], config: AlertsConfig | (() => AlertsConfig) = DELAY5) => lastValueFrom(from(frames).pipe(alerts(config), toArray()));

const allAlerts = (out: PoseFrame[]) => out.flatMap((f) => f.alerts ?? []);
const allEvents = (out: PoseFrame[]) => out.flatMap((f) => f.events ?? []);

/** 1 s standing, a fall of `duration` s to `angle` degrees about the ankles, then lying still until `total` frames. */
const fallFrames = (total: number, duration = 0.8, angle = 90, getUpAt = Infinity) =>
  Array.from({ length: total }, (_, k) => {
    const up = k >= getUpAt;
    const f = up ? { x: 300, y: 440 - 0.491 * 220, scale: 220 } : fallingFigure(Math.max(0, k - 10) / 10, duration, angle, 300, 440, 220);
    return poseFrame(k * 100, [personOf(f, { trackId: 9, floor: { x: 2.5, y: 3.5 } })]);
  });

/** The whole chain the service runs: activity labels, then alerts. */
const chain = (frames: PoseFrame[], config: AlertsConfig | (() => AlertsConfig) = DELAY5) =>
  lastValueFrom(from(frames).pipe(activity(), alerts(config), toArray()));

const firstFalling = (out: PoseFrame[]) => out.findIndex((f) => f.persons[0]?.activity === 'falling');

describe('alerts: marbles', () => {
  // One fall: standing, falling at frame 1, lying; the alert comes 5 s (50 frames) later.
  const v = {
    s: poseFrame(0, [labelled(1, 'standing', [1, 1])]),
    f: poseFrame(100, [labelled(1, 'falling', [1, 1])]),
    l: poseFrame(2000, [labelled(1, 'lying', [1, 1])]),
    m: poseFrame(5100, [labelled(1, 'lying', [1, 1])]),
    n: poseFrame(5200, [labelled(1, 'lying', [1, 1])]),
  };
  const s = map((f: PoseFrame) => (f.alerts ?? []).map((a) => `${a.type}:${a.severity}`).join() || '.');

  it('raises the fall alert on the first frame at or after the delay', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('s-f-l-m-n-|', v);
      const expected = '  x-x-x-y-x-|';
      expectObservable(src.pipe(alerts(DELAY5), s)).toBe(expected, { x: '.', y: 'fall_detection:high' });
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('s-f-#', v, new Error('boom'));
      const expected = '  x-x-#';
      expectObservable(src.pipe(alerts(DELAY5), s)).toBe(expected, { x: '.' }, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--s--f--l--m--n--|', v);
      const subs = '   ^--------!        ';
      const unsub = '  ^--------!        ';
      const expected = '--x--x--x-         ';
      expectObservable(src.pipe(alerts(DELAY5), s), unsub).toBe(expected, { x: '.' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--s--f--l--m--n--|', v);
      const subs = '   ^-----------!     ';
      const unsub = '  ^-----------!     ';
      // The default delay (0.5 s): high and critical (3 x 0.5 s) both due by the frame at 2 s.
      const expected = '--x--x--y--x-      ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        alerts(),
        mergeMap((x) => of(x)),
        s,
      );
      expectObservable(result, unsub).toBe(expected, { x: '.', y: 'fall_detection:high,fall_detection:critical' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });
});

describe('alerts: falls', () => {
  it('a fall followed by lying for 10 s raises exactly one alert at fall time + 5 s, with its fields', async () => {
    const out = await chain(fallFrames(10 + 8 + 100));
    const f = firstFalling(out);
    expect(f).toBeGreaterThan(10);
    const fallTime = T0 + f * 100;
    const list = allAlerts(out);
    expect(list).toHaveLength(1);
    const a = list[0];
    expect(out[f + 50].alerts).toEqual([a]);
    const peak = Math.max(...out.map((fr) => (fr.persons[0].activity === 'falling' ? fr.persons[0].activityConfidence! : 0)));
    expect(a).toEqual<PoseAlert>({
      alertId: `alrt_lab_9_${fallTime + 5000}_fall`,
      type: 'fall_detection',
      severity: 'high',
      time: fallTime + 5000,
      environmentId: 'lab',
      personId: 9,
      trackId: 9,
      confidence: peak,
      location: { x: 2.5, y: 3.5 },
      metadata: {
        fall_time: fallTime,
        fall_duration: a.metadata.fall_duration,
        impact_severity: 'high',
        peak_head_speed: a.metadata.peak_head_speed,
        recovery_detected: false,
        down_seconds: 5,
        track_lost: false,
      },
      actionsRequired: ['medical_response', 'notification'],
    });
    expect(peak).toBeGreaterThanOrEqual(requiredFallConfidence(0.8));
    // The main descent of a 0.8 s fall whose angle grows as t^2: the head covers most of its drop
    // in the last 0.3-0.5 s, at over 2 standing heights per second.
    expect(a.metadata.fall_duration).toBeGreaterThanOrEqual(0.2);
    expect(a.metadata.fall_duration).toBeLessThanOrEqual(0.8);
    expect(a.metadata.peak_head_speed).toBeGreaterThan(2);
    const events = allEvents(out).filter((e) => e.type !== 'activity_change');
    expect(events).toEqual<ActivityEvent[]>([
      {
        eventId: `evt_lab_9_${fallTime + 5000}_fall`,
        type: 'fall_detection',
        severity: 'high',
        time: fallTime + 5000,
        environmentId: 'lab',
        personId: 9,
        trackId: 9,
        confidence: peak,
        location: { x: 2.5, y: 3.5 },
        metadata: a.metadata,
        actionsTaken: ['alert_sent', 'notification_dispatched'],
      },
    ]);
    // The activity operator's own events are kept beside the alert's.
    expect(
      allEvents(out)
        .filter((e) => e.type === 'activity_change')
        .map((e) => e.metadata.to),
    ).toEqual(['falling', 'lying']);
  });

  it('still down at 3x the delay: a second, critical alert', async () => {
    const out = await chain(fallFrames(10 + 8 + 170));
    const f = firstFalling(out);
    const list = allAlerts(out);
    expect(list.map((a) => [a.severity, a.time - T0])).toEqual([
      ['high', f * 100 + 5000],
      ['critical', f * 100 + 15_000],
    ]);
    expect(list[1].alertId).toBe(`alrt_lab_9_${T0 + f * 100 + 15_000}_fall_critical`);
    expect(list[1].metadata.down_seconds).toBe(15);
  });

  it('a fall with recovery after 2 s raises nothing and records recovery_detected true', async () => {
    const getUp = 10 + 8 + 20;
    const out = await chain(fallFrames(getUp + 80, 0.8, 90, getUp));
    expect(allAlerts(out)).toEqual([]);
    const f = firstFalling(out);
    const recovered = out.findIndex((fr, k) => k > f && fr.persons[0].activity === 'standing');
    expect(recovered).toBeGreaterThanOrEqual(getUp);
    const falls = allEvents(out).filter((e) => e.type !== 'activity_change');
    expect(falls).toHaveLength(1);
    expect(out[recovered].events?.find((e) => e.type === 'fall_detection')).toBe(falls[0]);
    expect(falls[0]).toMatchObject({
      eventId: `evt_lab_9_${T0 + recovered * 100}_fall`,
      type: 'fall_detection',
      severity: 'medium',
      time: T0 + recovered * 100,
      trackId: 9,
      location: { x: 2.5, y: 3.5 },
      actionsTaken: [],
      metadata: { fall_time: T0 + f * 100, recovery_detected: true, impact_severity: 'high', track_lost: false },
    });
    expect(falls[0].metadata.down_seconds).toBeCloseTo((recovered - f) / 10, 10);
  });

  it('getting up after the alert adds a fall_recovery event', async () => {
    const out = await runAlerts(labelledRun(120, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : k < 90 ? 'lying' : 'standing')));
    const list = allAlerts(out);
    expect(list).toHaveLength(1);
    const recovery = allEvents(out).filter((e) => e.type === 'fall_recovery');
    expect(recovery).toHaveLength(1);
    expect(recovery[0]).toMatchObject({
      time: T0 + 9000,
      severity: 'low',
      actionsTaken: [],
      metadata: { recovery_detected: true, alert_id: list[0].alertId, fall_time: T0 + 1000, down_seconds: 8 },
    });
  });

  it('sensitivity sets the confidence needed: a borderline fall triggers at 0.9, not at 0.1', async () => {
    // A slower fall that ends slumped at 70 degrees.
    const frames = fallFrames(10 + 11 + 80, 1.1, 70);
    const labels = await lastValueFrom(from(frames).pipe(activity(), toArray()));
    const peak = Math.max(...labels.map((fr) => (fr.persons[0].activity === 'falling' ? fr.persons[0].activityConfidence! : 0)));
    expect(peak).toBeGreaterThan(requiredFallConfidence(0.9));
    expect(peak).toBeLessThan(requiredFallConfidence(0.1));
    expect(allAlerts(await runAlerts(labels, { fallDetection: { sensitivity: 0.9, notificationDelaySeconds: 5 } }))).toHaveLength(1);
    const strict = await runAlerts(labels, { fallDetection: { sensitivity: 0.1, notificationDelaySeconds: 5 } });
    expect(allAlerts(strict)).toEqual([]);
    expect(allEvents(strict).filter((e) => e.type !== 'activity_change')).toEqual([]);
    // Sensitivity 0 still lets a clear fall through.
    const clear = await runAlerts(
      labelledRun(80, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying'), [1, 1], 0.97),
      {
        fallDetection: { sensitivity: 0, notificationDelaySeconds: 5 },
      },
    );
    expect(allAlerts(clear)).toHaveLength(1);
  });

  it('documents the sensitivity mapping', () => {
    expect(requiredFallConfidence(0)).toBeCloseTo(0.95, 12);
    expect(requiredFallConfidence(0.8)).toBeCloseTo(0.59, 12);
    expect(requiredFallConfidence(1)).toBeCloseTo(0.5, 12);
  });

  it('disabled fall detection raises and records nothing', async () => {
    const out = await chain(fallFrames(10 + 8 + 170), { fallDetection: { enabled: false } });
    expect(firstFalling(out)).toBeGreaterThan(0);
    expect(allAlerts(out)).toEqual([]);
    expect(allEvents(out).filter((e) => e.type !== 'activity_change')).toEqual([]);
  });

  it('a lost track or an unlabelled pose is not a recovery: the alert still goes out', async () => {
    // Falls at frame 10, then the tracker loses the person; another person keeps frames coming.
    const frames = Array.from({ length: 70 }, (_, k) => {
      const persons = [labelled(2, 'sitting', [5, 5])];
      if (k < 10) persons.push(labelled(1, 'standing', [1, 1]));
      else if (k < 13) persons.push(labelled(1, 'falling', [1, 1]));
      else if (k < 20) persons.push(labelled(1, undefined, [1, 1]));
      return poseFrame(k * 100, persons);
    });
    const list = allAlerts(await runAlerts(frames));
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ trackId: 1, time: T0 + 6000, location: { x: 1, y: 1 }, metadata: { track_lost: true } });
  });

  it("one fall in a room is one event: another track's fall within FALL_ROOM_REFRACTORY_MS is not reported again", async () => {
    expect(FALL_ROOM_REFRACTORY_MS).toBe(10_000);
    // Track 1 falls at 1 s; the model's fall moves to track 2 at 1.5 s (same room, 1 m away),
    // then track 3 falls at 12 s (after the window); the ward next door has its own fall at 1.5 s.
    const act = (k: number, from: number): Activity => (k < from ? 'standing' : k < from + 2 ? 'falling' : 'lying');
    const frames = Array.from({ length: 200 }, (_, k) => [
      poseFrame(k * 100, [labelled(1, act(k, 10), [1, 1]), labelled(2, act(k, 15), [2, 1]), labelled(3, act(k, 120), [3, 1])]),
      poseFrame(k * 100, [labelled(1, act(k, 15), [1, 1])], { environmentId: 'ward' }),
    ]).flat();
    const list = allAlerts(await runAlerts(frames)).filter((a) => a.severity === 'high');
    expect(list.map((a) => [a.environmentId, a.trackId, a.metadata.fall_time])).toEqual([
      ['lab', 1, T0 + 1000],
      ['ward', 1, T0 + 1500],
      ['lab', 3, T0 + 12_000],
    ]);
  });

  it("...unless that person's own v2 answer is falling (P(falling) >= FALL_TRIGGER): a second person falling within 10 s gets an alert", async () => {
    // Tracks 1 and 2 fall 3 s apart in one room. Track 2's own activity probabilities say falling
    // (0.9) in the first case, and only the room's fall was handed to it (0.3) in the second.
    const withOwn = (p: PersonPose, pFalling: number): PersonPose => ({
      ...p,
      modelActivity: { activity: 'falling', confidence: pFalling, probabilities: Float32Array.from([0, 0, 1 - pFalling, 0, pFalling]) },
    });
    const act = (k: number, from: number): Activity => (k < from ? 'standing' : k < from + 2 ? 'falling' : 'lying');
    const room = (own: number) =>
      Array.from({ length: 200 }, (_, k) => poseFrame(k * 100, [labelled(1, act(k, 10), [1, 1]), withOwn(labelled(2, act(k, 40), [3, 1]), own)]));
    const tracks = async (own: number) =>
      allAlerts(await runAlerts(room(own)))
        .filter((a) => a.severity === 'high')
        .map((a) => [a.trackId, a.metadata.fall_time]);
    expect(await tracks(0.9)).toEqual([
      [1, T0 + 1000],
      [2, T0 + 4000],
    ]);
    expect(await tracks(0.3)).toEqual([[1, T0 + 1000]]);
  });

  it('a falling label below the required confidence is not a fall at all', async () => {
    const out = await runAlerts(labelledRun(80, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying'), [1, 1], 0.3));
    expect(allAlerts(out)).toEqual([]);
    expect(allEvents(out)).toEqual([]);
  });
});

describe('alerts: inactivity', () => {
  /** One person at (2, 2) with +-0.1 m jitter for `seconds` at 1 Hz, then elsewhere. */
  const still = (seconds: number, moveAt = Infinity, to: [number, number] = [2.6, 2]) =>
    Array.from({ length: seconds }, (_, k) => poseFrame(k * 1000, [labelled(4, 'sitting', k >= moveAt ? to : [2 + 0.1 * Math.sin(k), 2 + 0.1 * Math.cos(k)])]));

  it('after the default 30 minutes within 0.3 m: exactly one alert', async () => {
    const out = await runAlerts(still(3 * 3600), { fallDetection: { enabled: false } });
    const list = allAlerts(out);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      alertId: `alrt_lab_4_${T0 + 1_800_000}_inactivity`,
      type: 'inactivity',
      severity: 'medium',
      time: T0 + 1_800_000,
      trackId: 4,
      actionsRequired: ['notification'],
      metadata: { inactive_seconds: 1800, threshold_minutes: 30, activity: 'sitting' },
    });
    expect(allEvents(out).map((e) => [e.type, e.time, e.actionsTaken])).toEqual([['inactivity', T0 + 1_800_000, ['alert_sent', 'notification_dispatched']]]);
  });

  it('moving 0.3 m re-arms it: the next still period raises another', async () => {
    const out = await runAlerts(still(200, 100), { inactivity: { thresholdMinutes: 1 } });
    expect(allAlerts(out).map((a) => a.time - T0)).toEqual([60_000, 160_000]);
  });

  it('disabled, or a person who keeps moving, raises nothing', async () => {
    expect(allAlerts(await runAlerts(still(200), { inactivity: { enabled: false } }))).toEqual([]);
    const pacing = Array.from({ length: 200 }, (_, k) => poseFrame(k * 1000, [labelled(4, 'walking', [1 + (k % 20) * 0.2, 2])]));
    expect(allAlerts(await runAlerts(pacing, { inactivity: { thresholdMinutes: 1 } }))).toEqual([]);
  });
});

describe('alerts: intrusion', () => {
  // A U-shaped (concave) zone: the notch x 2..4, y 2..4 is outside.
  const U: Array<[number, number]> = [
    [0, 0],
    [6, 0],
    [6, 4],
    [4, 4],
    [4, 2],
    [2, 2],
    [2, 4],
    [0, 4],
  ];
  const zone = { id: 'vault', name: 'Vault', polygon: U, schedule: { days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00' } };
  const path = (points: Array<[number, number]>, startMs = 0, extra: PersonPose[] = []) =>
    points.map((p, k) => poseFrame(startMs + k * 1000, [labelled(6, 'walking', p), ...extra]));

  it('once per entry, only while the schedule is active', async () => {
    // Outside (in the notch), in, stays, wobbles across the edge, leaves, comes back.
    const out = await runAlerts(
      path([
        [3, 3],
        [3, 1],
        [3.5, 1],
        [3.5, 1.9],
        [3.5, 2.1],
        [3.5, 1.95],
        [3, 3],
        [3, 1],
      ]),
      { zones: [zone] },
    );
    const list = allAlerts(out);
    expect(list.map((a) => a.time - T0)).toEqual([1000, 7000]);
    expect(list[0]).toEqual<PoseAlert>({
      alertId: `alrt_lab_6_${T0 + 1000}_intrusion_vault`,
      type: 'intrusion',
      severity: 'high',
      time: T0 + 1000,
      environmentId: 'lab',
      personId: 6,
      trackId: 6,
      confidence: 0.9,
      location: { x: 3, y: 1 },
      zone: 'vault',
      metadata: { zone: 'vault', zone_name: 'Vault', person_count: 1, threat_level: 'high' },
      actionsRequired: ['notification'],
    });
    expect(allEvents(out).map((e) => [e.type, e.time - T0, e.actionsTaken])).toEqual([
      ['intrusion', 1000, ['alert_sent', 'notification_dispatched']],
      ['intrusion', 7000, ['alert_sent', 'notification_dispatched']],
    ]);
  });

  it('outside the schedule nothing is raised; a stay that reaches the opening is alerted then', async () => {
    // Monday 20:00 UTC: closed.
    const evening = await runAlerts(
      path(
        [
          [3, 3],
          [1, 1],
          [1, 1],
        ],
        8 * 3600_000,
      ),
      { zones: [zone] },
    );
    expect(allAlerts(evening)).toEqual([]);
    // Saturday noon: not a listed day.
    expect(
      allAlerts(
        await runAlerts(
          path(
            [
              [3, 3],
              [1, 1],
            ],
            5 * 86_400_000,
          ),
          { zones: [zone] },
        ),
      ),
    ).toEqual([]);
    // Monday 08:59:58 inside; the window opens at 09:00.
    const early = await runAlerts(
      path(
        [
          [1, 1],
          [1, 1],
          [1, 1],
          [1, 1],
        ],
        -3 * 3600_000 - 2000,
      ),
      { zones: [zone] },
    );
    expect(allAlerts(early).map((a) => a.time - T0)).toEqual([-3 * 3600_000]);
  });

  it('counts the persons in the zone, uses the zone severity, and checks each zone', async () => {
    const other = labelled(7, 'standing', [5, 3]);
    const lobby = {
      id: 'lobby',
      name: 'Lobby',
      polygon: [
        [0, 5],
        [6, 5],
        [6, 8],
        [0, 8],
      ] as Array<[number, number]>,
      severity: 'low' as const,
    };
    const out = await runAlerts(
      path(
        [
          [3, 3],
          [1, 1],
          [1, 6],
        ],
        0,
        [other],
      ),
      { zones: [{ ...zone, schedule: undefined, severity: 'critical' }, lobby] },
    );
    const list = allAlerts(out);
    // Track 7 is in the vault from the first frame; track 6 enters at 1 s, then crosses to the lobby.
    expect(list.map((a) => [a.trackId, a.zone, a.severity, a.metadata.person_count, a.time - T0])).toEqual([
      [7, 'vault', 'critical', 1, 0],
      [6, 'vault', 'critical', 2, 1000],
      [6, 'lobby', 'low', 1, 2000],
    ]);
  });
});

describe('alerts: configuration', () => {
  it('a change through the function form takes effect on the next frame', async () => {
    const cfg: AlertsConfig = { fallDetection: { enabled: false } };
    const frames = labelledRun(120, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying'));
    const out = await lastValueFrom(
      from(frames).pipe(
        alerts(() => cfg),
        map((f, i) => {
          // Fall detection comes on after frame 59 (the fall was at frame 10, while it was off).
          if (i === 59) cfg.fallDetection = { enabled: true, notificationDelaySeconds: 1 };
          if (i === 79)
            cfg.zones = [
              {
                id: 'z',
                name: 'Z',
                polygon: [
                  [0, 0],
                  [5, 0],
                  [5, 5],
                  [0, 5],
                ],
              },
            ];
          return f;
        }),
        toArray(),
      ),
    );
    // No fall alert: the fall happened while detection was off. The zone added after frame 79
    // catches the person (at 2, 3) on frame 80.
    expect(allAlerts(out).map((a) => [a.type, a.time - T0])).toEqual([['intrusion', 8000]]);

    const cfg2: AlertsConfig = { fallDetection: { notificationDelaySeconds: 60 } };
    const out2 = await lastValueFrom(
      from(frames).pipe(
        alerts(() => cfg2),
        map((f, i) => {
          if (i === 29) cfg2.fallDetection = { notificationDelaySeconds: 3 };
          return f;
        }),
        toArray(),
      ),
    );
    // Fall at 1 s; the 3 s delay applies from frame 30 (3 s), so the alert goes out at 4 s, the
    // critical one at 1 + 3 x 3 = 10 s.
    expect(allAlerts(out2).map((a) => [a.severity, a.time - T0])).toEqual([
      ['high', 4000],
      ['critical', 10_000],
    ]);
  });

  it('rejects an invalid config at creation, or with an error from the function form', async () => {
    expect(() => alerts({ fallDetection: { sensitivity: 1.5 } })).toThrow(RangeError);
    expect(() => alerts({ fallDetection: { notificationDelaySeconds: -1 } })).toThrow(RangeError);
    expect(() => alerts({ inactivity: { thresholdMinutes: 0 } })).toThrow(RangeError);
    expect(() =>
      alerts({
        zones: [
          {
            id: 'z',
            name: 'Z',
            polygon: [
              [0, 0],
              [1, 1],
            ],
          },
        ],
      }),
    ).toThrow(RangeError);
    expect(() =>
      alerts({
        zones: [
          {
            id: 'z',
            name: 'Z',
            polygon: [
              [0, 0],
              [1, 0],
              [1, 1],
            ],
            schedule: { start: '25:00', end: '06:00' },
          },
        ],
      }),
    ).toThrow(RangeError);
    await expect(
      runAlerts(
        labelledRun(2, () => 'standing'),
        () => ({ fallDetection: { enabled: 'yes' as unknown as boolean } }),
      ),
    ).rejects.toThrow(RangeError);
  });

  it('passes frames through untouched when nothing happens, and never mutates its input', async () => {
    const frames = labelledRun(80, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying'));
    frames.push(poseFrame(8000, [labelled(1, 'lying', [2, 3])], { time: NaN }));
    const snapshot = structuredClone(frames);
    const out = await runAlerts(frames);
    expect(out[5]).toBe(frames[5]);
    expect(out[60]).not.toBe(frames[60]);
    expect(out[60].alerts).toHaveLength(1);
    expect(out.at(-1)).toBe(frames.at(-1));
    expect(frames).toEqual(snapshot);
  });

  it('ignores untracked persons and keeps environments apart', async () => {
    const frames = Array.from({ length: 70 }, (_, k) => {
      const act: Activity = k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying';
      return [
        poseFrame(k * 100, [{ ...labelled(1, act, [1, 1]), trackId: undefined }]),
        poseFrame(k * 100, [labelled(1, act, [1, 1])], { environmentId: 'ward' }),
      ];
    }).flat();
    const list = allAlerts(await runAlerts(frames));
    expect(list.map((a) => [a.environmentId, a.alertId])).toEqual([['ward', `alrt_ward_1_${T0 + 6000}_fall`]]);
  });

  it('has a spec named alerts that builds the operator from its flat parameters', async () => {
    expect(spec.name).toBe('alerts');
    expect(spec.input).toBe('pose');
    expect(spec.output).toBe('pose');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({
      fallDetection: true,
      sensitivity: 0.8,
      notificationDelaySeconds: 0.5,
      recoveryWindowSeconds: 60,
      inactivity: true,
      thresholdMinutes: 30,
      zones: '',
    });
    const frames = labelledRun(70, (k) => (k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying'));
    const out: PoseFrame[] = await lastValueFrom(from(frames).pipe(spec.create(params, {}), toArray()));
    expect(allAlerts(out).map((a) => a.time - T0)).toEqual([1500, 2500]);
    const zones = JSON.stringify([
      {
        id: 'z',
        name: 'Z',
        polygon: [
          [0, 0],
          [5, 0],
          [5, 5],
          [0, 5],
        ],
      },
    ]);
    const out2: PoseFrame[] = await lastValueFrom(from(frames.slice(0, 3)).pipe(spec.create({ ...params, zones }, {}), toArray()));
    expect(allAlerts(out2).map((a) => a.type)).toEqual(['intrusion']);
    expect(() => spec.create({ ...params, zones: '{nope' }, {})).toThrow(RangeError);
  });
});

describe('zones', () => {
  const square = Float64Array.of(0, 0, 4, 0, 4, 4, 0, 4);
  // A concave "C": the bite x 1..4, y 1..3 is outside.
  const C = Float64Array.of(0, 0, 4, 0, 4, 1, 1, 1, 1, 3, 4, 3, 4, 4, 0, 4);

  it('even-odd point in polygon, concave shapes included', () => {
    expect(pointInPolygon(2, 2, square)).toBe(true);
    expect(pointInPolygon(5, 2, square)).toBe(false);
    expect(pointInPolygon(0.5, 2, C)).toBe(true);
    expect(pointInPolygon(2, 2, C)).toBe(false);
    expect(pointInPolygon(3.5, 0.5, C)).toBe(true);
    expect(pointInPolygon(3.5, 3.5, C)).toBe(true);
    // A ray from (2, 2) towards +x crosses no edge; one from (-1, 2) crosses two: both outside/inside right.
    expect(pointInPolygon(-1, 2, C)).toBe(false);
    // The winding direction does not matter.
    const reversed = Float64Array.from({ length: C.length }, (_, i) => C[C.length - 2 - (i - (i % 2)) + (i % 2)]);
    for (const [x, y] of [
      [0.5, 2],
      [2, 2],
      [3.5, 3.5],
      [5, 5],
    ])
      expect(pointInPolygon(x, y, reversed)).toBe(pointInPolygon(x, y, C));
  });

  it('self-intersecting polygons follow the even-odd rule', () => {
    // A pentagram: the central pentagon is covered twice, so even-odd leaves it outside.
    const star = new Float64Array(10);
    for (let i = 0; i < 5; i++) {
      const a = Math.PI / 2 + (i * 4 * Math.PI) / 5;
      star[2 * i] = Math.cos(a);
      star[2 * i + 1] = Math.sin(a);
    }
    expect(pointInPolygon(0, 0, star)).toBe(false);
    expect(pointInPolygon(0, 0.8, star)).toBe(true); // in the top point
  });

  it('points on edges and vertices are inside, including where the ray grazes a vertex', () => {
    expect(pointInPolygon(0, 2, square)).toBe(true);
    expect(pointInPolygon(4, 4, square)).toBe(true);
    expect(pointInPolygon(2, 0, square)).toBe(true);
    expect(pointInPolygon(2.5, 1, C)).toBe(true); // on the inner edge of the bite
    expect(pointInPolygon(1, 2, C)).toBe(true);
    // The ray from (-1, 1) runs along the edge y = 1 and through vertices: still outside.
    expect(pointInPolygon(-1, 1, C)).toBe(false);
    expect(pointInPolygon(-1, 3, C)).toBe(false);
    expect(pointInPolygon(0.5, 1, C)).toBe(true);
    expect(pointInPolygon(NaN, 1, C)).toBe(false);
    expect(pointInPolygon(0, 0, Float64Array.of(0, 0, 1, 1))).toBe(false);
  });

  it('distance to the boundary', () => {
    expect(distanceToBoundary(2, 2, square)).toBe(2);
    expect(distanceToBoundary(5, 2, square)).toBe(1);
    expect(distanceToBoundary(5, 5, square)).toBeCloseTo(Math.SQRT2, 12);
    expect(distanceToBoundary(2.5, 2, C)).toBe(1);
  });

  it('schedules: days, windows past midnight, all-day, offsets', () => {
    const monday = Date.UTC(2026, 0, 5); // a Monday
    const h = (d: number, hh: number, mm = 0) => monday + d * 86_400_000 + (hh * 60 + mm) * 60_000;
    const office = compileSchedule({ days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00' });
    expect(scheduleActive(office, h(0, 9))).toBe(true);
    expect(scheduleActive(office, h(0, 8, 59))).toBe(false);
    expect(scheduleActive(office, h(0, 17))).toBe(false);
    expect(scheduleActive(office, h(5, 12))).toBe(false); // Saturday
    const night = compileSchedule({ days: [5], start: '22:00', end: '06:00' }); // Friday night
    expect(scheduleActive(night, h(4, 23))).toBe(true);
    expect(scheduleActive(night, h(5, 5, 59))).toBe(true); // Saturday morning belongs to Friday's window
    expect(scheduleActive(night, h(5, 23))).toBe(false);
    expect(scheduleActive(night, h(4, 5))).toBe(false); // Friday morning belongs to Thursday's
    const sunday = compileSchedule({ days: [0], start: '00:00', end: '00:00' });
    expect(scheduleActive(sunday, h(6, 13))).toBe(true);
    expect(scheduleActive(sunday, h(0, 13))).toBe(false);
    const local = compileSchedule({ start: '09:00', end: '10:00', utcOffsetMinutes: 120 });
    expect(scheduleActive(local, h(0, 7, 30))).toBe(true);
    expect(scheduleActive(local, h(0, 9, 30))).toBe(false);
    expect(scheduleActive(null, 0)).toBe(true);
    expect(scheduleActive(office, NaN)).toBe(false);
    expect(() => compileSchedule({ start: '9', end: '10:00' })).toThrow(RangeError);
    expect(() => compileSchedule({ start: '09:00', end: '10:00', days: [7] })).toThrow(RangeError);
  });

  it('compiles and tests zones', () => {
    const z = compileZone({
      id: 'c',
      name: 'C',
      polygon: [
        [0, 0],
        [4, 0],
        [4, 1],
        [1, 1],
        [1, 3],
        [4, 3],
        [4, 4],
        [0, 4],
      ],
    });
    expect(z.severity).toBe('high');
    expect(z.schedule).toBeNull();
    expect(inZone(z, 0.5, 2)).toBe(true);
    expect(inZone(z, 2, 2)).toBe(false);
    expect(inZone(z, 9, 2)).toBe(false);
    expect(() =>
      compileZone({
        id: '',
        name: 'x',
        polygon: [
          [0, 0],
          [1, 0],
          [1, 1],
        ],
      }),
    ).toThrow(RangeError);
    expect(() =>
      compileZone({
        id: 'a',
        name: 'x',
        polygon: [
          [0, 0],
          [1, NaN],
          [1, 1],
        ],
      }),
    ).toThrow(RangeError);
    expect(() =>
      compileZone({
        id: 'a',
        name: 'x',
        polygon: [
          [0, 0],
          [1, 0],
          [1, 1],
        ],
        severity: 'extreme' as 'high',
      }),
    ).toThrow(RangeError);
  });
});
