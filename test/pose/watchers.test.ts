import { describe, expect, it } from 'vitest';
import type { Activity, PersonPose, PoseFrame } from '../../src/pose/types.js';
import {
  AlertWatchers,
  FALL_ROOM_REFRACTORY_MS,
  FallWatcher,
  INACTIVITY_RADIUS_M,
  InactivityWatcher,
  TRACK_FORGET_MS,
  ZONE_EXIT_MARGIN_M,
  ZoneWatcher,
  type AlertSettings,
  type AlertSink,
  type FallSettings,
  type InactivitySettings,
  type ZoneSettings,
} from '../../src/pose/watchers.js';
import { compileZone, type ZoneConfig } from '../../src/pose/zones.js';
import { LYING, personOf, poseFrame, SITTING_SIDE, STANDING, T0 } from '../helpers/stickFigure.js';

const SHAPES: Record<Activity, object> = {
  standing: STANDING,
  walking: STANDING,
  sitting: SITTING_SIDE,
  lying: LYING,
  falling: { torso: 60, thigh: [-60, -60] },
};

/** A tracked person, labelled as the activity operator would. */
const person = (trackId: number, act: Activity | undefined, floor: [number, number] | null, extra: Partial<PersonPose> = {}): PersonPose =>
  personOf(
    { x: 320, y: 260, scale: 200, ...SHAPES[act ?? 'standing'] },
    { trackId, activity: act, activityConfidence: act ? 0.9 : undefined, ...(floor ? { floor: { x: floor[0], y: floor[1] } } : {}), ...extra },
  );

/** v2 model activity probabilities with P(falling) = p. */
const ownFalling = (p: number): Partial<PersonPose> => ({
  modelActivity: { activity: 'falling', confidence: p, probabilities: Float32Array.from([0, 0, 1 - p, 0, p]) },
});

/** 's10f2l5' -> 'ssssssssssffllll l': one letter a frame (s standing, w walking, i sitting, l lying, f falling, u unlabelled, - absent). */
const expand = (script: string) => script.replace(/(\D)(\d+)/g, (_, c: string, n: string) => c.repeat(Number(n)));
const LETTER: Record<string, Activity | undefined> = { s: 'standing', w: 'walking', i: 'sitting', l: 'lying', f: 'falling', u: undefined };

/** Alerts and events as [type, severity, ms after T0]. */
const summary = (sink: AlertSink) => ({
  alerts: sink.alerts.map((a) => [a.type, a.severity, a.time - T0]),
  events: sink.events.map((e) => [e.type, e.severity, e.time - T0]),
});

const FALL: FallSettings = { fallEnabled: true, required: 0.59, delayMs: 2000, recoveryMs: 60_000 };
const INACTIVE: InactivitySettings = { inactivityEnabled: true, thresholdMinutes: 1 };
const ALL = (zones: ZoneConfig[] = [], over: Partial<AlertSettings> = {}): AlertSettings => ({ ...FALL, ...INACTIVE, zones: zones.map(compileZone), ...over });

describe('FallWatcher.step', () => {
  /**
   * Track 1 at (1, 1) follows the script, one frame every 100 ms; track 2 sits at (5, 5) in every
   * frame, so that frames keep coming while track 1 is absent.
   */
  const runFall = (script: string, settings: Partial<FallSettings> = {}, conf = 0.9) => {
    const w = new FallWatcher();
    const sink: AlertSink = { alerts: [], events: [] };
    [...expand(script)].forEach((c, k) => {
      const persons = [person(2, 'sitting', [5, 5])];
      if (c !== '-') persons.push(person(1, LETTER[c], [1, 1], { activityConfidence: LETTER[c] ? conf : undefined }));
      w.step(poseFrame(k * 100, persons), { ...FALL, ...settings }, sink);
    });
    return sink;
  };

  it.each([
    {
      name: 'still down: high at onset + delay, critical at 3x',
      script: 's10f2l70',
      settings: {},
      alerts: [
        ['fall_detection', 'high', 3000],
        ['fall_detection', 'critical', 7000],
      ],
      events: [
        ['fall_detection', 'high', 3000],
        ['fall_detection', 'critical', 7000],
      ],
    },
    {
      name: 'up before the delay: no alert, a medium fall_detection event',
      script: 's10f2l5s10',
      settings: {},
      alerts: [],
      events: [['fall_detection', 'medium', 1700]],
    },
    {
      name: 'up after the alert: a fall_recovery event',
      script: 's10f2l25s5',
      settings: {},
      alerts: [['fall_detection', 'high', 3000]],
      events: [
        ['fall_detection', 'high', 3000],
        ['fall_recovery', 'low', 3700],
      ],
    },
    {
      name: 'walking or sitting counts as up too',
      script: 's10f2l5w5',
      settings: {},
      alerts: [],
      events: [['fall_detection', 'medium', 1700]],
    },
    {
      name: 'an unlabelled pose is not getting up',
      script: 's10f2u30',
      settings: {},
      alerts: [['fall_detection', 'high', 3000]],
      events: [['fall_detection', 'high', 3000]],
    },
    {
      name: 'a lost track is not getting up',
      script: 's10f2-30',
      settings: {},
      alerts: [['fall_detection', 'high', 3000]],
      events: [['fall_detection', 'high', 3000]],
    },
    {
      name: 'delay 0: the alert on the first falling frame, no critical',
      script: 's10f2l70',
      settings: { delayMs: 0 },
      alerts: [['fall_detection', 'high', 1000]],
      events: [['fall_detection', 'high', 1000]],
    },
    {
      name: 'the episode ends at max(recovery window, 3x delay): getting up later records nothing',
      script: 's10f2l30s5',
      settings: { delayMs: 500, recoveryMs: 2000 },
      alerts: [
        ['fall_detection', 'high', 1500],
        ['fall_detection', 'critical', 2500],
      ],
      events: [
        ['fall_detection', 'high', 1500],
        ['fall_detection', 'critical', 2500],
      ],
    },
    {
      name: 'disabled: nothing',
      script: 's10f2l70',
      settings: { fallEnabled: false },
      alerts: [],
      events: [],
    },
    {
      name: 'below the required confidence: not a fall at all',
      script: 's10f2l70',
      settings: { required: 0.95 },
      alerts: [],
      events: [],
    },
  ])('$name', ({ script, settings, alerts, events }) => {
    expect(summary(runFall(script, settings as Partial<FallSettings>))).toEqual({ alerts, events });
  });

  it('fills the alert: ids, location, metadata (track_lost when unseen)', () => {
    const seen = runFall('s10f2l30');
    expect(seen.alerts[0]).toMatchObject({
      alertId: `alrt_lab_1_${T0 + 3000}_fall`,
      environmentId: 'lab',
      personId: 1,
      trackId: 1,
      confidence: 0.9,
      location: { x: 1, y: 1 },
      actionsRequired: ['medical_response', 'notification'],
      metadata: { fall_time: T0 + 1000, recovery_detected: false, down_seconds: 2, track_lost: false },
    });
    expect(seen.events[0]).toMatchObject({ eventId: `evt_lab_1_${T0 + 3000}_fall`, actionsTaken: ['alert_sent', 'notification_dispatched'] });
    expect(runFall('s10f2-30').alerts[0]!.metadata.track_lost).toBe(true);
    const up = runFall('s10f2l25s5');
    expect(up.events[1]!.metadata).toMatchObject({ recovery_detected: true, alert_id: up.alerts[0]!.alertId, down_seconds: 2.7 });
  });

  it('the confidence is the peak of the falling labels', () => {
    const w = new FallWatcher();
    const sink: AlertSink = { alerts: [], events: [] };
    const confs = [0.5, 0.7, 0.55];
    for (let k = 0; k < 40; k++) {
      const act: Activity = k < 3 ? 'falling' : 'lying';
      w.step(poseFrame(k * 100, [person(1, act, [1, 1], { activityConfidence: confs[k] ?? 0.9 })]), FALL, sink);
    }
    // 0.5 alone would miss 0.59; the peak 0.7 counts and is the alert's confidence.
    expect(sink.alerts.map((a) => [a.confidence, a.time - T0])).toEqual([[0.7, 2000]]);
  });

  describe('one fall per room within FALL_ROOM_REFRACTORY_MS', () => {
    /** Track 1 falls at 1 s; track 2 falls at `at` ms with its own P(falling) `own`; both then lie. */
    const room = (at: number, own: number, fallTrigger?: number) => {
      const w = new FallWatcher();
      const sink: AlertSink = { alerts: [], events: [] };
      const act = (t: number, from: number): Activity => (t < from ? 'standing' : t < from + 200 ? 'falling' : 'lying');
      for (let t = 0; t <= at + 3000; t += 100) {
        const frame = poseFrame(t, [person(1, act(t, 1000), [1, 1]), person(2, act(t, at), [3, 1], ownFalling(own))]);
        w.step(fallTrigger === undefined ? frame : { ...frame, fallTrigger }, FALL, sink);
      }
      return sink.alerts.filter((a) => a.severity === 'high').map((a) => [a.trackId, (a.metadata.fall_time as number) - T0]);
    };

    it.each([
      { name: 'a second fall 0.5 s later is the same event', at: 1500, own: 0.3, tracks: [[1, 1000]] },
      {
        name: '...unless its own P(falling) reaches the trigger',
        at: 1500,
        own: 0.9,
        tracks: [
          [1, 1000],
          [2, 1500],
        ],
      },
      {
        name: 'the trigger itself counts',
        at: 1500,
        own: 0.8,
        tracks: [
          [1, 1000],
          [2, 1500],
        ],
      },
      // Both falling frames of track 2 (at and at + 100 ms) fall inside the window.
      { name: 'just inside the window: merged', at: 1000 + FALL_ROOM_REFRACTORY_MS - 200, own: 0, tracks: [[1, 1000]] },
      {
        name: 'at the end of the window: a new fall',
        at: 1000 + FALL_ROOM_REFRACTORY_MS,
        own: 0,
        tracks: [
          [1, 1000],
          [2, 11_000],
        ],
      },
    ])('$name', ({ at, own, tracks }) => {
      expect(room(at, own)).toEqual(tracks);
    });

    it("a frame that names its model's trigger is held to it, not to FALL_TRIGGER", () => {
      expect(room(1500, 0.85)).toEqual([
        [1, 1000],
        [2, 1500],
      ]);
      expect(room(1500, 0.85, 0.9)).toEqual([[1, 1000]]);
      expect(room(1500, 0.75, 0.7)).toEqual([
        [1, 1000],
        [2, 1500],
      ]);
    });
  });

  it('isOpen from the first falling frame until the person gets up; disabled drops it', () => {
    const w = new FallWatcher();
    const open: boolean[] = [];
    [...expand('s2f2l2s2')].forEach((c, k) => {
      w.step(poseFrame(k * 100, [person(1, LETTER[c], [1, 1])]), FALL);
      open.push(w.isOpen(1));
    });
    expect(open).toEqual([false, false, true, true, true, true, false, false]);
    w.step(poseFrame(900, [person(1, 'falling', [1, 1], ownFalling(0.9))]), FALL);
    expect(w.isOpen(1)).toBe(true);
    w.step(poseFrame(1000, [person(1, 'lying', [1, 1])]), { ...FALL, fallEnabled: false });
    expect(w.isOpen(1)).toBe(false);
  });
});

describe('InactivityWatcher.step', () => {
  /** Track 4 at `pos(k)` (null: no floor position) every second for `seconds`; alert times in s. */
  const runStill = (seconds: number, pos: (k: number) => [number, number] | null, settings: Partial<InactivitySettings> = {}) => {
    const w = new InactivityWatcher();
    const sink: AlertSink = { alerts: [], events: [] };
    for (let k = 0; k < seconds; k++) w.step(poseFrame(k * 1000, [person(4, 'sitting', pos(k))]), { ...INACTIVE, ...settings }, sink);
    return sink;
  };
  const times = (sink: AlertSink) => sink.alerts.map((a) => (a.time - T0) / 1000);
  const jitter = (k: number): [number, number] => [2 + 0.1 * Math.sin(k), 2 + 0.1 * Math.cos(k)];

  it.each([
    { name: 'within the radius for the threshold: one alert', seconds: 200, pos: jitter, settings: {}, at: [60] },
    { name: 'a longer threshold', seconds: 200, pos: jitter, settings: { thresholdMinutes: 2 }, at: [120] },
    { name: 'moving away re-arms it', seconds: 200, pos: (k: number) => (k < 100 ? jitter(k) : ([2.6, 2] as [number, number])), settings: {}, at: [60, 160] },
    { name: 'just inside the radius is still', seconds: 100, pos: (k: number): [number, number] => [k % 2 ? 0.29 : 0, 0], settings: {}, at: [60] },
    { name: 'the radius itself is a move', seconds: 100, pos: (k: number): [number, number] => [k % 2 ? INACTIVITY_RADIUS_M : 0, 0], settings: {}, at: [] },
    { name: 'pacing raises nothing', seconds: 200, pos: (k: number): [number, number] => [1 + (k % 20) * 0.2, 2], settings: {}, at: [] },
    { name: 'frames without a floor position change nothing', seconds: 100, pos: (k: number) => (k % 3 ? null : jitter(k)), settings: {}, at: [60] },
    { name: 'disabled: nothing', seconds: 200, pos: jitter, settings: { inactivityEnabled: false }, at: [] },
  ])('$name', ({ seconds, pos, settings, at }) => {
    expect(times(runStill(seconds, pos, settings))).toEqual(at);
  });

  it('fills the alert', () => {
    const sink = runStill(70, () => [2, 2]);
    expect(sink.alerts).toEqual([
      {
        alertId: `alrt_lab_4_${T0 + 60_000}_inactivity`,
        type: 'inactivity',
        severity: 'medium',
        time: T0 + 60_000,
        environmentId: 'lab',
        personId: 4,
        trackId: 4,
        confidence: 0.9,
        location: { x: 2, y: 2 },
        metadata: { inactive_seconds: 60, threshold_minutes: 1, radius_m: INACTIVITY_RADIUS_M, activity: 'sitting' },
        actionsRequired: ['notification'],
      },
    ]);
    expect(summary(sink).events).toEqual([['inactivity', 'medium', 60_000]]);
  });

  it('disabling drops the anchor: the time counts again from re-enabling', () => {
    const w = new InactivityWatcher();
    const sink: AlertSink = { alerts: [], events: [] };
    for (let k = 0; k < 200; k++) w.step(poseFrame(k * 1000, [person(4, 'sitting', [2, 2])]), { ...INACTIVE, inactivityEnabled: k < 50 || k >= 55 }, sink);
    expect(times(sink)).toEqual([115]);
  });
});

describe('ZoneWatcher.step', () => {
  const SQUARE: ZoneConfig = {
    id: 'sq',
    name: 'Square',
    polygon: [
      [0, 0],
      [4, 0],
      [4, 4],
      [0, 4],
    ],
  };
  /** Track 6 walks the points, one a second from `startMs`; alert times in ms after T0. */
  const walk = (points: Array<[number, number]>, zones: ZoneConfig[] = [SQUARE], startMs = 0) => {
    const w = new ZoneWatcher();
    const settings: ZoneSettings = { zones: zones.map(compileZone) };
    const sink: AlertSink = { alerts: [], events: [] };
    points.forEach((p, k) => w.step(poseFrame(startMs + k * 1000, [person(6, 'walking', p)]), settings, sink));
    return sink.alerts.map((a) => a.time - T0);
  };

  it.each([
    {
      name: 'an entry alerts once per stay',
      points: [
        [-1, 2],
        [1, 2],
        [2, 2],
        [3, 2],
      ],
      at: [1000],
    },
    {
      name: 'the boundary is inside',
      points: [
        [-1, 2],
        [0, 2],
      ],
      at: [1000],
    },
    {
      name: 'outside by less than the exit margin is still the same stay',
      points: [
        [2, 2],
        [4 + ZONE_EXIT_MARGIN_M - 0.05, 2],
        [3, 2],
      ],
      at: [0],
    },
    {
      name: 'outside by more than the margin ends the stay: coming back alerts again',
      points: [
        [2, 2],
        [4 + ZONE_EXIT_MARGIN_M + 0.05, 2],
        [3, 2],
      ],
      at: [0, 2000],
    },
    {
      name: 'never inside: nothing',
      points: [
        [-1, 2],
        [5, 5],
        [4.1, 2],
      ],
      at: [],
    },
  ])('$name', ({ points, at }) => {
    expect(walk(points as Array<[number, number]>)).toEqual(at);
  });

  it.each([
    // T0 is Monday 12:00 UTC.
    { name: 'inside before the window opens: alerted when it opens', days: [1], start: -2000, at: [0] },
    { name: 'a day the zone is not watched: nothing', days: [2], start: -2000, at: [] },
  ])('schedules: $name', ({ days, start, at }) => {
    const zone: ZoneConfig = { ...SQUARE, schedule: { days, start: '12:00', end: '12:01' } };
    expect(
      walk(
        [
          [2, 2],
          [2, 2],
          [2, 2],
          [2, 2],
        ],
        [zone],
        start,
      ),
    ).toEqual(at);
  });

  it('fills the alert: zone, severity, persons in the zone', () => {
    const w = new ZoneWatcher();
    const out = w.step(poseFrame(0, [person(6, 'walking', [1, 1]), person(7, 'standing', [3, 3]), person(8, 'standing', [9, 9])]), {
      zones: [compileZone({ ...SQUARE, severity: 'critical' })],
    });
    expect(out.alerts.map((a) => [a.trackId, a.zone, a.severity, a.metadata])).toEqual([
      [6, 'sq', 'critical', { zone: 'sq', zone_name: 'Square', person_count: 2, threat_level: 'critical' }],
      [7, 'sq', 'critical', { zone: 'sq', zone_name: 'Square', person_count: 2, threat_level: 'critical' }],
    ]);
    expect(out.alerts[0]!.alertId).toBe(`alrt_lab_6_${T0}_intrusion_sq`);
  });

  it('a zone taken out of the settings forgets its stays', () => {
    const w = new ZoneWatcher();
    const zones = { zones: [compileZone(SQUARE)] };
    const at = (k: number, s: ZoneSettings) => w.step(poseFrame(k * 1000, [person(6, 'walking', [2, 2])]), s).alerts.length;
    expect([at(0, zones), at(1, zones), at(2, { zones: [] }), at(3, zones)]).toEqual([1, 0, 0, 1]);
  });
});

describe('TrackWatcher lifecycle', () => {
  it(`forgets a track unseen for more than TRACK_FORGET_MS, and everything on a jump back in time`, () => {
    const w = new InactivityWatcher();
    w.step(poseFrame(0, [person(1, 'sitting', [1, 1]), person(2, 'sitting', [2, 2])]), INACTIVE);
    w.step(poseFrame(TRACK_FORGET_MS, [person(2, 'sitting', [2, 2])]), INACTIVE);
    expect([w.has(1), w.has(2)]).toEqual([true, true]);
    w.step(poseFrame(TRACK_FORGET_MS + 100, [person(2, 'sitting', [2, 2])]), INACTIVE);
    expect([w.has(1), w.has(2)]).toEqual([false, true]);
    w.step(poseFrame(-100, []), INACTIVE);
    expect(w.has(2)).toBe(false);
  });

  it('skips untracked persons and a repeated track id in one frame', () => {
    const w = new ZoneWatcher();
    const out = w.step(poseFrame(0, [person(1, 'walking', [9, 9]), person(1, 'walking', [1, 1]), { ...person(2, 'walking', [1, 1]), trackId: undefined }]), {
      zones: [
        compileZone({
          id: 'z',
          name: 'Z',
          polygon: [
            [0, 0],
            [2, 0],
            [2, 2],
            [0, 2],
          ],
        }),
      ],
    });
    expect(out.alerts).toEqual([]);
    expect(w.has(2)).toBe(false);
  });
});

describe('AlertWatchers.step', () => {
  const ZONE: ZoneConfig = {
    id: 'z',
    name: 'Z',
    polygon: [
      [0, 0],
      [4, 0],
      [4, 4],
      [0, 4],
    ],
  };

  it('returns the frame itself when nothing is raised, else a copy with the alerts appended', () => {
    const w = new AlertWatchers();
    const settings = ALL([ZONE]);
    const quiet = poseFrame(0, [person(1, 'walking', [9, 9])]);
    expect(w.step(quiet, settings)).toBe(quiet);
    const earlier = { alertId: 'x' } as never;
    const busy = poseFrame(1000, [person(1, 'walking', [1, 1])], { alerts: [earlier] });
    const snapshot = structuredClone(busy);
    const out = w.step(busy, settings);
    expect(out).not.toBe(busy);
    expect(out.alerts!.map((a) => a.alertId)).toEqual(['x', `alrt_lab_1_${T0 + 1000}_intrusion_z`]);
    expect(out.events!.map((e) => e.type)).toEqual(['intrusion']);
    expect(busy).toEqual(snapshot);
    // The next frame's alerts are its own.
    const next = w.step(poseFrame(2000, [person(2, 'walking', [1, 1])]), settings);
    expect(next.alerts!.map((a) => a.trackId)).toEqual([2]);
    expect(out.alerts).toHaveLength(2);
  });

  it('keeps person order: each person fall, inactivity, intrusion, before the next person', () => {
    const w = new AlertWatchers();
    const settings = ALL([ZONE], { delayMs: 0 });
    let out: PoseFrame = poseFrame(0, []);
    // Track 1 stands outside until 60 s, then falls inside the zone; track 2 sits still outside.
    for (let k = 0; k <= 60; k++) {
      out = w.step(
        poseFrame(k * 1000, [person(1, k < 60 ? 'standing' : 'falling', k < 60 ? [-5 + k * 0.5, 9] : [1, 1]), person(2, 'sitting', [9, 9])]),
        settings,
      );
    }
    expect(out.alerts!.map((a) => [a.trackId, a.type])).toEqual([
      [1, 'fall_detection'],
      [1, 'intrusion'],
      [2, 'inactivity'],
    ]);
  });

  it('keeps every state of a track while its fall is open: a return to the zone is the same stay', () => {
    // Track 1 is in the zone, falls at 1 s, is unseen for 20 s (track 2 keeps frames coming), and
    // is seen again in the zone, still down.
    const frames = Array.from({ length: 230 }, (_, k) => {
      const persons = [person(2, 'standing', [9, 9])];
      if (k < 20 || k >= 220) persons.push(person(1, k < 10 ? 'standing' : k < 12 ? 'falling' : 'lying', [1, 1]));
      return poseFrame(k * 100, persons);
    });
    const settings = ALL([ZONE], { inactivityEnabled: false });
    const composite = new AlertWatchers();
    const intrusions = frames.flatMap((f) => composite.step(f, settings).alerts ?? []).filter((a) => a.type === 'intrusion');
    expect(intrusions.map((a) => a.time - T0)).toEqual([0]);
    // A ZoneWatcher on its own forgets the track after TRACK_FORGET_MS and alerts again.
    const alone = new ZoneWatcher();
    expect(frames.flatMap((f) => alone.step(f, settings).alerts).map((a) => a.time - T0)).toEqual([0, 22_000]);
  });
});
