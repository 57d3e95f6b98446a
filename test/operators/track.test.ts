import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { DEFAULT_TRACKER_OPTIONS, spec, track } from '../../operators/track.js';
import { HOLD_FRAMES, MultiPersonTracker, type TrackerOptionsInput } from '../../src/pose/tracker.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { Rng } from '../../src/sim/rng.js';

const T0 = 1_767_225_600_000;
/** Frames are 100 ms apart (10 Hz). */
const DT_MS = 100;

const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** Keypoint positions inside the box (fractions of width and height), COCO-17 order. */
const TEMPLATE: Array<[number, number]> = [
  [0.5, 0.08],
  [0.45, 0.06],
  [0.55, 0.06],
  [0.4, 0.08],
  [0.6, 0.08],
  [0.3, 0.22],
  [0.7, 0.22],
  [0.25, 0.4],
  [0.75, 0.4],
  [0.22, 0.55],
  [0.78, 0.55],
  [0.38, 0.55],
  [0.62, 0.55],
  [0.38, 0.75],
  [0.62, 0.75],
  [0.38, 0.95],
  [0.62, 0.95],
];
const BOX_W = 60;
const BOX_H = 160;

interface PersonInit {
  /** Identity of the simulated person, kept in `slot` so tests can check who got which id. */
  who?: number;
  confidence?: number;
  /** Omit the floor position (view-only tracking). */
  noFloor?: boolean;
  /** Pixel noise on box and keypoints, and metre noise on the floor position. */
  rng?: Rng;
  pxNoise?: number;
  floorNoise?: number;
}

/**
 * A person standing at floor position (fx, fy) metres, drawn in the 640x480 view with its box
 * centre at (100 + 100 fx, 240 + 20 fy) px and keypoints placed in the box from a template.
 */
function person(fx: number, fy: number, init: PersonInit = {}): PersonPose {
  const rng = init.rng;
  const pn = () => (rng ? rng.gaussian(0, init.pxNoise ?? 3) : 0);
  const fn = () => (rng ? rng.gaussian(0, init.floorNoise ?? 0.03) : 0);
  const cx = 100 + 100 * fx + pn();
  const cy = 240 + 20 * fy + pn();
  const x0 = cx - BOX_W / 2;
  const y0 = cy - BOX_H / 2;
  const keypoints = new Float32Array(51);
  TEMPLATE.forEach(([u, v], k) => {
    keypoints[k * 3] = x0 + u * BOX_W + pn();
    keypoints[k * 3 + 1] = y0 + v * BOX_H + pn();
    keypoints[k * 3 + 2] = 0.9;
  });
  const p: PersonPose = {
    slot: init.who ?? 0,
    confidence: init.confidence ?? 0.9,
    keypoints,
    bbox: Float32Array.of(x0, y0, BOX_W, BOX_H),
  };
  if (!init.noFloor) p.floor = { x: fx + fn(), y: fy + fn() };
  return p;
}

function frame(k: number, persons: PersonPose[], environmentId = 'lab'): PoseFrame {
  return {
    frameId: k,
    time: T0 + k * DT_MS,
    sourceId: 'sim',
    environmentId,
    persons,
    processingMs: 1,
    modelVersion: 'test',
    csiQuality: 1,
  };
}

/** Runs frames through a fresh tracker; returns the tracker and the output frames. */
function runTracker(frames: PoseFrame[], opts: TrackerOptionsInput = {}): { tracker: MultiPersonTracker; out: PoseFrame[] } {
  const tracker = new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, ...opts });
  return { tracker, out: frames.map((f) => tracker.update(f)) };
}

/** Per output frame, `who -> trackId`. */
const idsByWho = (out: PoseFrame[]) => out.map((f) => new Map(f.persons.map((p) => [p.slot, p.trackId!])));

/** Fisher-Yates shuffle with a seeded generator: the model's slot order says nothing about identity. */
function shuffled<T>(items: T[], rng: Rng): T[] {
  const a = items.slice();
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

describe('track: marbles', () => {
  const v = Object.fromEntries([...'abcdef'].map((c, k) => [c, frame(k, [person(1 + 0.1 * k, 2)])]));
  const ids = map((f: PoseFrame) => f.persons.map((p) => `${p.trackId}@${p.trackAge}`).join(','));

  it('emits one tracked frame per input frame', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-c-d-|', v);
      const expected = '  a-b-c-d-|';
      expectObservable(src.pipe(track(), ids)).toBe(expected, { a: '1@0', b: '1@1', c: '1@2', d: '1@3' });
    });
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a-b-#', v, new Error('boom'));
      const expected = '  a-b-#';
      expectObservable(src.pipe(track(), ids)).toBe(expected, { a: '1@0', b: '1@1' }, new Error('boom'));
    });
  });

  it('unsubscribes early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--e--|', v);
      const subs = '   ^--------!        ';
      const unsub = '  ^--------!        ';
      const expected = '--a--b--c-         ';
      expectObservable(src.pipe(track(), ids), unsub).toBe(expected, { a: '1@0', b: '1@1', c: '1@2' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const src = hot('--a--b--c--d--e--|', v);
      const subs = '   ^--------!        ';
      const unsub = '  ^--------!        ';
      const expected = '--a--b--c-         ';
      const result = src.pipe(
        mergeMap((x) => of(x)),
        track(),
        mergeMap((x) => of(x)),
        ids,
      );
      expectObservable(result, unsub).toBe(expected, { a: '1@0', b: '1@1', c: '1@2' });
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('errors the stream when an options function throws', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      let calls = 0;
      const opts = () => {
        if (++calls === 3) throw new Error('config gone');
        return {};
      };
      const src = cold('a-b-c-d-|', v);
      const expected = '  a-b-#';
      expectObservable(src.pipe(track(opts), ids)).toBe(expected, { a: '1@0', b: '1@1' }, new Error('config gone'));
    });
  });
});

describe('track: scenarios', () => {
  it('two people crossing diagonally keep their ids (noisy detections, shuffled slot order)', () => {
    const rng = new Rng(21);
    const frames: PoseFrame[] = [];
    // A walks (0,0) -> (4,4), B walks (0,4) -> (4,0): their paths cross at (2,2) at frame 20.
    for (let k = 0; k <= 40; k++) {
      const s = k / 10;
      frames.push(frame(k, shuffled([person(s, s, { who: 0, rng }), person(s, 4 - s, { who: 1, rng })], rng)));
    }
    const { out } = runTracker(frames);
    const ids = idsByWho(out);
    const first = ids[0]!;
    expect([first.get(0), first.get(1)].sort()).toEqual([1, 2]);
    ids.forEach((m, k) => {
      expect(new Set(m.values()).size).toBe(2);
      // At frame 20 both stand on the same spot: which detection is whose is a coin toss there.
      if (k === 20) return;
      expect(m.get(0)).toBe(first.get(0));
      expect(m.get(1)).toBe(first.get(1));
    });
  });

  it('two people walking head-on along the same line keep their ids: only the predicted motion tells them apart', () => {
    const rng = new Rng(22);
    const frames: PoseFrame[] = [];
    // Both on y = 2, A left to right, B right to left, 1 m/s each: at frame 20 they coincide.
    for (let k = 0; k <= 40; k++) {
      const s = k / 10;
      frames.push(frame(k, shuffled([person(s, 2, { who: 0, rng }), person(4 - s, 2, { who: 1, rng })], rng)));
    }
    for (const noFloor of [false, true]) {
      const input = noFloor ? frames.map((f) => ({ ...f, persons: f.persons.map(({ floor: _f, ...p }) => p) })) : frames;
      const { out, tracker } = runTracker(input);
      const ids = idsByWho(out);
      expect(ids.every((m) => m.size === 2)).toBe(true);
      const first = ids[0]!;
      ids.forEach((m, k) => {
        // At frame 20 they stand on the same spot with the same pose: a coin toss there.
        if (k === 20) return;
        expect(m.get(0)).toBe(first.get(0));
        expect(m.get(1)).toBe(first.get(1));
      });
      expect(tracker.tracks().map((r) => r.trackId)).toEqual([1, 2]);
      // Velocities point the right way after the crossing.
      const last = out[40]!.persons;
      const a = last.find((p) => p.slot === 0)!;
      const b = last.find((p) => p.slot === 1)!;
      expect(a.velocity!.x).toBeGreaterThan(0);
      expect(b.velocity!.x).toBeLessThan(0);
    }
  });

  it('a person missing for 5 frames keeps the id with maxAge 30 and gets a new one with maxAge 2', () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 45; k++) frames.push(frame(k, k >= 20 && k < 25 ? [] : [person(0.5 + k / 10, 2)]));

    // Only detected persons are reported (holdFrames 0): the ids of the frames that have one.
    const keep = new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, maxAge: 30, holdFrames: 0 });
    const keptIds: Array<number | undefined> = [];
    for (const f of frames) {
      const out = keep.update(f);
      keptIds.push(out.persons[0]?.trackId);
      if (f.frameId >= 20 && f.frameId < 25) expect(keep.track(1)!.status).toBe('lost');
    }
    expect(keptIds).toEqual(frames.map((f) => (f.persons.length > 0 ? 1 : undefined)));
    expect(keep.track(1)!.status).toBe('active');
    expect(keep.track(1)!.totalFrames).toBe(40);

    const drop = new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, maxAge: 2, holdFrames: 0 });
    const droppedIds: Array<number | undefined> = [];
    for (const f of frames) {
      droppedIds.push(drop.update(f).persons[0]?.trackId);
      // Missed at 20 and 21 (kept, lost), ended at the third miss.
      if (f.frameId === 21) expect(drop.track(1)!.status).toBe('lost');
      if (f.frameId === 22) expect(drop.track(1)!.status).toBe('ended');
    }
    // After the gap the new track is hidden for its first two frames (minHits 3), then id 2.
    const expected = frames.map((f) => (f.frameId < 20 ? 1 : f.frameId < 27 ? undefined : 2));
    expect(droppedIds).toEqual(expected);
    expect(drop.track(1)!.status).toBe('ended');
    expect(drop.track(1)!.totalFrames).toBe(20);
    expect(drop.tracks().map((r) => r.trackId)).toEqual([2]);
  });

  it('a person walking out of the view keeps the id while only a sliver of the box is left', () => {
    // Walking right at 1 m/s (100 px/s): the last frames show one keypoint in an 8 x 8 px box at
    // the image edge, whose centre jumps towards it as the rest of the body leaves the view.
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 30; k++) frames.push(frame(k, [person(2 + 0.1 * k, 2)]));
    for (let k = 30; k < 34; k++) {
      const p = person(2 + 0.1 * k, 2);
      const x = 632 - 4 + (k - 30);
      p.bbox = Float32Array.of(x, 300, 8, 8);
      p.keypoints.fill(0);
      p.keypoints.set([x + 4, 304, 0.9], 3 * 9);
      frames.push(frame(k, [p]));
    }
    const { out } = runTracker(frames, { weights: { floor: 0 } });
    const ids = out.map((f) => f.persons[0]?.trackId);
    expect(new Set(ids)).toEqual(new Set([1]));
  });

  it('a jump beyond the gate keeps the id and the person reported when a confirmed track is free (second round)', () => {
    // One person at 1 m; at frame 10 the detection jumps 2 m (a model's floor estimate can).
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 20; k++) frames.push(frame(k, [person(k < 10 ? 1 : 3, 2)]));
    const kept = runTracker(frames, { holdFrames: 0 }).out;
    expect(kept.map((f) => f.persons.map((p) => p.trackId))).toEqual(frames.map(() => [1]));
    // Without the second round the jump ends the identity: hidden for minHits - 1 frames, then id 2
    // (only detected persons reported: holdFrames 0).
    const split = runTracker(frames, { reclaimGate: 0, holdFrames: 0 }).out;
    expect(split.map((f) => f.persons[0]?.trackId)).toEqual(frames.map((f) => (f.frameId < 10 ? 1 : f.frameId < 12 ? undefined : 2)));
  });

  it('a lost track holds its place after coastFrames, so a person unseen for seconds keeps their id where they were lost', () => {
    // Walks 1 m/s along x for 2 s, is not detected for 15 s (the model missed them), then is seen
    // again where they were lost. Extrapolated for those 15 s the track would be 15 m away.
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 20; k++) frames.push(frame(k, [person(0.5 + k / 10, 2)]));
    for (let k = 20; k < 170; k++) frames.push(frame(k, []));
    for (let k = 170; k < 180; k++) frames.push(frame(k, [person(2.4, 2)]));
    const ids = (opts: TrackerOptionsInput) =>
      runTracker(frames, { maxAge: 300, ...opts })
        .out.slice(170)
        .map((f) => f.persons[0]?.trackId);
    expect(ids({})).toEqual(frames.slice(170).map(() => 1));
    // Extrapolated all along (the rule before coastFrames): a new identity, hidden for minHits - 1 frames.
    expect(ids({ coastFrames: 100_000 })).toEqual(frames.slice(170).map((f) => (f.frameId < 172 ? undefined : 2)));
    expect(() => new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, coastFrames: -1 })).toThrow(RangeError);
  });

  it('holdFrames: a lost track is still reported as last seen (still, held) for that many frames, then not', () => {
    // Two people; the model misses the second for frames 10-19, then sees them again.
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 25; k++) frames.push(frame(k, k >= 10 && k < 20 ? [person(1, 2)] : [person(1, 2), person(3 + k / 100, 2, { who: 1 })]));
    const counts = (holdFrames: number) => runTracker(frames, { holdFrames }).out.map((f) => f.persons.length);
    expect(counts(0)).toEqual(frames.map((f) => (f.frameId >= 10 && f.frameId < 20 ? 1 : 2)));
    expect(counts(4)).toEqual(frames.map((f) => (f.frameId >= 14 && f.frameId < 20 ? 1 : 2)));
    expect(counts(10)).toEqual(frames.map(() => 2));
    const out = runTracker(frames, { holdFrames: 10 }).out;
    const held = out[12]!.persons.find((p) => p.trackId === 2)!;
    const seen = out[9]!.persons.find((p) => p.trackId === 2)!;
    // As last seen, not moving, marked; the frame's own detections first; seen again: the same id, not held.
    expect(held).toMatchObject({ held: true, velocity: { x: 0, y: 0 }, floor: seen.floor, bbox: seen.bbox, trackAge: 12 });
    expect(out[12]!.persons[0]).toMatchObject({ trackId: 1 });
    expect(out[12]!.persons[0]!.held).toBeUndefined();
    expect(out[20]!.persons.find((p) => p.slot === 1)).toMatchObject({ trackId: 2 });
    expect(out[20]!.persons.every((p) => p.held === undefined)).toBe(true);
    expect(() => new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, holdFrames: -1 })).toThrow(RangeError);
  });

  it('the second round pairs only what the first left over, by least cost', () => {
    // Two people 4 m apart; at frame 10 both detections jump 1.5 m towards each other's side
    // but stay nearer their own: each keeps its id. A third detection that appears at the same
    // time finds no free confirmed track and starts a tentative one.
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 16; k++) {
      const persons = k < 10 ? [person(0, 2, { who: 0 }), person(4, 2, { who: 1 })] : [person(1.5, 2, { who: 0 }), person(2.5, 2, { who: 1 })];
      if (k >= 10) persons.push(person(2, 6, { who: 2 }));
      frames.push(frame(k, persons));
    }
    const { out } = runTracker(frames);
    const byWho = idsByWho(out);
    expect(byWho.map((m) => m.get(0))).toEqual(frames.map(() => 1));
    expect(byWho.map((m) => m.get(1))).toEqual(frames.map(() => 2));
    expect(byWho.map((m) => m.get(2))).toEqual(frames.map((f) => (f.frameId >= 12 ? 3 : undefined)));
    expect(() => new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, reclaimGate: -1 })).toThrow(RangeError);
  });

  it('minHits hides a one-frame false positive, which uses up no id', () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 30; k++) {
      const persons = [person(0.5 + k / 20, 1, { who: 0 })];
      if (k === 10) persons.push(person(4, 5, { who: 9 }));
      if (k >= 15) persons.push(person(3, 3, { who: 1 }));
      frames.push(frame(k, persons));
    }
    const { out, tracker } = runTracker(frames);
    expect(out.every((f) => f.persons.every((p) => p.slot !== 9))).toBe(true);
    expect(out[10]!.persons.map((p) => p.trackId)).toEqual([1]);
    // The newcomer at frame 15 is matched at 15, 16, 17: reported from 17 on, as id 2.
    expect(out.map((f) => f.persons.find((p) => p.slot === 1)?.trackId)).toEqual(frames.map((f) => (f.frameId >= 17 ? 2 : undefined)));
    expect(tracker.tracks().map((r) => r.trackId)).toEqual([1, 2]);
    expect(tracker.track(3)).toBeUndefined();
  });

  it('reports every person during the first minHits frames, and keeps reporting them', () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 8; k++) {
      const persons = [person(1, 1, { who: 0 })];
      if (k >= 2) persons.push(person(3, 3, { who: 1 }));
      if (k === 0) persons.push(person(4, 0, { who: 2 }));
      frames.push(frame(k, persons));
    }
    // No second round: with it, the newcomer at frame 2 would continue the lost track 2. Only
    // detected persons reported (holdFrames 0).
    const { out } = runTracker(frames, { minHits: 3, reclaimGate: 0, holdFrames: 0 });
    expect(out.map((f) => f.persons.map((p) => `${p.slot}:${p.trackId}`).join(' '))).toEqual([
      '0:1 2:2',
      '0:1',
      '0:1 1:3',
      '0:1 1:3',
      '0:1 1:3',
      '0:1 1:3',
      '0:1 1:3',
      '0:1 1:3',
    ]);
  });

  it('statistics: walking 1 m/s for 10 s, then standing still for 10 s', () => {
    const rng = new Rng(23);
    const frames: PoseFrame[] = [];
    // 0..10 s walking from x = 0.5 to 10.5, 10..20 s standing at 10.5 (detections 3 cm noisy).
    for (let k = 0; k <= 200; k++) {
      const x = 0.5 + Math.min(k, 100) / 10;
      frames.push(frame(k, [person(x, 2, { rng, floorNoise: 0.03 })]));
    }
    const tracker = new MultiPersonTracker(DEFAULT_TRACKER_OPTIONS);
    frames.slice(0, 101).forEach((f) => tracker.update(f));
    const rec = tracker.track(1)!;
    expect(rec.statisticsUnit).toBe('m');
    const s = { ...rec.statistics };
    // The motion is believed once it is supported (0.5 m in 1 s: MOTION_SPAN_S) and the motion
    // filter, tuned to the model's floor error, has caught up: the first ~0.7 m are not counted.
    expect(s.movementDistance).toBeGreaterThan(9);
    expect(s.movementDistance).toBeLessThan(10.5);
    expect(Math.abs(s.averageSpeed - 1)).toBeLessThan(0.1);
    expect(s.timeMoving).toBeGreaterThan(9);
    expect(s.timeMoving + s.timeStationary).toBeCloseTo(10, 9);
    expect(rec.firstSeen).toBe(T0);
    expect(rec.lastSeen).toBe(T0 + 10_000);
    expect(rec.totalFrames).toBe(101);
    expect(rec.averageConfidence).toBeCloseTo(0.9, 6);

    const out = frames.slice(101).map((f) => tracker.update(f));
    const after = rec.statistics;
    // Stopping takes the filter a moment (it is slow to believe a change, as it must be with the
    // model's floor error); after that, still time accumulates and distance does not.
    expect(after.movementDistance - s.movementDistance).toBeLessThan(0.8);
    expect(after.timeStationary - s.timeStationary).toBeGreaterThan(8.5);
    expect(after.timeMoving + after.timeStationary).toBeCloseTo(20, 9);
    expect(after.averageSpeed).toBeCloseTo(after.movementDistance / 20, 9);
    const v = out[out.length - 1]!.persons[0]!.velocity!;
    expect(Math.hypot(v.x, v.y)).toBeLessThan(0.2);
  });

  it('statistics and velocity in view pixels when there is no floor position', () => {
    const frames: PoseFrame[] = [];
    // 1 m/s on the floor is 100 px/s in the view of the helper.
    for (let k = 0; k <= 100; k++) frames.push(frame(k, [person(0.5 + k / 10, 2, { noFloor: true })]));
    const { tracker, out } = runTracker(frames);
    const rec = tracker.track(1)!;
    expect(rec.statisticsUnit).toBe('px');
    expect(rec.statistics.movementDistance).toBeGreaterThan(950);
    expect(rec.statistics.movementDistance).toBeLessThan(1050);
    expect(Math.abs(rec.statistics.averageSpeed - 100)).toBeLessThan(5);
    expect(rec.statistics.timeMoving).toBeGreaterThan(9.5);
    const v = out[100]!.persons[0]!.velocity!;
    expect(Math.abs(v.x - 100)).toBeLessThan(1);
    expect(Math.abs(v.y)).toBeLessThan(1);
  });

  it('reports floor velocity in m/s and the track age in frames', () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k <= 50; k++) frames.push(frame(k, [person(0.5 + k / 10, 2 - k / 20)]));
    const { out } = runTracker(frames);
    expect(out.map((f) => f.persons[0]!.trackAge)).toEqual(frames.map((_, k) => k));
    const v = out[50]!.persons[0]!.velocity!;
    expect(v.x).toBeCloseTo(1, 2);
    expect(v.y).toBeCloseTo(-0.5, 2);
  });

  it('keeps a bounded trajectory of the latest points', () => {
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 700; k++) frames.push(frame(k, [person(1 + 0.001 * k, 2)]));
    const { tracker } = runTracker(frames);
    const traj = tracker.track(1)!.trajectory;
    expect(traj.length).toBe(600);
    expect(traj.capacity).toBe(600);
    const points = traj.toArray();
    expect(points).toHaveLength(600);
    expect(points[0]!.time).toBe(T0 + 100 * DT_MS);
    expect(points[599]!.time).toBe(T0 + 699 * DT_MS);
    expect(points[599]!.centerX).toBeCloseTo(100 + 100 * (1 + 0.699), 3);
    expect(points[599]!.centerY).toBeCloseTo(280, 3);
    expect(points[599]!.confidence).toBeCloseTo(0.9, 6);
    expect(traj.at(0)).toEqual(points[0]);
    expect(traj.toArray(T0 + 650 * DT_MS, T0 + 659 * DT_MS).map((p) => p.time)).toEqual(Array.from({ length: 10 }, (_, i) => T0 + (650 + i) * DT_MS));
    // A smaller limit, changed live, keeps the newest points.
    tracker.setOptions({ trajectoryLimit: 50 });
    tracker.update(frame(700, [person(1.7, 2)]));
    expect(traj.length).toBe(50);
    expect(traj.toArray().map((p) => p.time)).toEqual(Array.from({ length: 50 }, (_, i) => T0 + (651 + i) * DT_MS));
  });

  it('never reuses ids, and keeps at most endedLimit ended tracks', () => {
    const frames: PoseFrame[] = [];
    // Six visits of 6 frames each, at alternating places, with 3 empty frames between visits.
    let k = 0;
    for (let visit = 0; visit < 6; visit++) {
      for (let i = 0; i < 6; i++) frames.push(frame(k++, [person(visit % 2 === 0 ? 1 : 3, 2)]));
      for (let i = 0; i < 3; i++) frames.push(frame(k++, []));
    }
    const { out, tracker } = runTracker(frames, { maxAge: 1, endedLimit: 3 });
    const seen = out.flatMap((f) => f.persons.map((p) => p.trackId!));
    expect([...new Set(seen)]).toEqual([1, 2, 3, 4, 5, 6]);
    // Each id appears in one unbroken run: none comes back.
    const runs = seen.filter((id, i) => i === 0 || seen[i - 1] !== id);
    expect(runs).toEqual([1, 2, 3, 4, 5, 6]);
    expect(tracker.tracks()).toEqual([]);
    expect(tracker.endedTracks().map((r) => r.trackId)).toEqual([4, 5, 6]);
    expect(tracker.track(3)).toBeUndefined();
    expect(tracker.track(6)!.status).toBe('ended');
  });

  it('applies setOptions from the next frame', () => {
    const tracker = new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, maxAge: 30 });
    for (let k = 0; k < 10; k++) tracker.update(frame(k, [person(1 + k / 10, 2)]));
    tracker.update(frame(10, []));
    tracker.update(frame(11, []));
    tracker.setOptions({ maxAge: 2 });
    expect(tracker.options.maxAge).toBe(30);
    expect(tracker.track(1)!.status).toBe('lost');
    tracker.update(frame(12, []));
    expect(tracker.options.maxAge).toBe(2);
    expect(tracker.track(1)!.status).toBe('ended');
    expect(() => tracker.setOptions({ minHits: 0 })).toThrow(RangeError);
    expect(() => tracker.setOptions({ gate: 0 })).toThrow(RangeError);
    expect(() => tracker.setOptions({ smoothKeypoints: 1 })).toThrow(RangeError);
    expect(tracker.options.minHits).toBe(3);
  });

  it('smooths keypoints only when asked', () => {
    const base = person(1, 2);
    const moved = person(1, 2);
    moved.keypoints[0] = base.keypoints[0]! + 10;
    const frames = [frame(0, [base]), frame(1, [base]), frame(2, [moved])];
    const plain = runTracker(frames).out;
    expect(plain[2]!.persons[0]!.keypoints).toBe(moved.keypoints);
    const smooth = runTracker(frames, { smoothKeypoints: 0.75 }).out;
    const kp = smooth[2]!.persons[0]!.keypoints;
    expect(kp).not.toBe(moved.keypoints);
    expect(kp[0]).toBeCloseTo(base.keypoints[0]! + 2.5, 4);
    expect(kp[1]).toBeCloseTo(base.keypoints[1]!, 4);
    expect(Array.from(kp.subarray(3))).toEqual(Array.from(moved.keypoints.subarray(3)));
  });

  it('never modifies its input and emits new frame and person objects', () => {
    const rng = new Rng(24);
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 12; k++) frames.push(frame(k, [person(1 + k / 10, 1, { rng }), person(3, 3 - k / 10, { rng, who: 1 })]));
    const before = structuredClone(frames);
    const { out } = runTracker(frames, { smoothKeypoints: 0.5 });
    expect(frames).toEqual(before);
    out.forEach((f, k) => {
      expect(f).not.toBe(frames[k]);
      expect(f.persons).not.toBe(frames[k]!.persons);
      f.persons.forEach((p) => expect(frames[k]!.persons).not.toContain(p));
      expect(frames[k]!.persons.every((p) => p.trackId === undefined)).toBe(true);
    });
  });

  it('survives hostile input: bad boxes, missing fields, odd times, too many persons', () => {
    const tracker = new MultiPersonTracker({ ...DEFAULT_TRACKER_OPTIONS, holdFrames: 0 });
    const good = person(1, 1);
    const bad: unknown[] = [
      { ...good, bbox: Float32Array.of(NaN, 0, 10, 10) },
      { ...good, bbox: new Float32Array(2) },
      { ...good, bbox: undefined },
      null,
      42,
      { ...person(3, 3), floor: { x: NaN, y: 1 }, keypoints: new Float32Array(5), confidence: NaN },
    ];
    const out1 = tracker.update(frame(0, [good, ...(bad as PersonPose[])]));
    expect(out1.persons.map((p) => p.trackId)).toEqual([1, 2]);
    // The person without a usable floor position is tracked in the view, velocity in px/s.
    expect(tracker.track(2)!.statisticsUnit).toBe('px');
    expect(tracker.track(2)!.averageConfidence).toBe(0);
    const noPersons = tracker.update({ ...frame(1, []), persons: undefined as unknown as PersonPose[] });
    expect(noPersons.persons).toEqual([]);
    tracker.update({ ...frame(2, [good]), time: NaN });
    tracker.update(frame(-50, [good]));
    const crowd = Array.from({ length: 500 }, (_, i) => person(i % 25, Math.floor(i / 25)));
    const out2 = tracker.update(frame(3, crowd));
    expect(out2.persons.length).toBeLessThanOrEqual(64);
    expect(tracker.tracks().length).toBeLessThanOrEqual(128);
    expect(Number.isFinite(tracker.track(1)!.statistics.movementDistance)).toBe(true);
  });
});

describe('track: operator', () => {
  it('keeps one tracker per environment and hands each to onTracker', async () => {
    const seen: Array<[string, MultiPersonTracker]> = [];
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 6; k++) {
      frames.push(frame(k, [person(1 + k / 10, 1)], 'east'));
      frames.push(frame(k, [person(2, 2), person(4, 4)], 'west'));
    }
    const out = await lastValueFrom(from(frames).pipe(track({ onTracker: (env, t) => seen.push([env, t]) }), toArray()));
    expect(out.map((f) => `${f.environmentId}:${f.persons.map((p) => p.trackId).join(',')}`)).toEqual(
      Array.from({ length: 6 }, () => ['east:1', 'west:1,2']).flat(),
    );
    expect(seen.map(([env]) => env)).toEqual(['east', 'west']);
    expect(seen[0]![1].tracks().map((r) => r.totalFrames)).toEqual([6]);
    expect(seen[1]![1].tracks().map((r) => r.trackId)).toEqual([1, 2]);
  });

  it('gives each subscription its own trackers', async () => {
    const frames = Array.from({ length: 4 }, (_, k) => frame(k, [person(1, 1)]));
    const tracked = from(frames).pipe(track());
    const a = await lastValueFrom(tracked.pipe(toArray()));
    const b = await lastValueFrom(tracked.pipe(toArray()));
    expect(a.map((f) => f.persons[0]!.trackId)).toEqual([1, 1, 1, 1]);
    expect(b).toEqual(a);
  });

  it('applies changed options from an options function at the next frame', async () => {
    // Only detected persons reported (holdFrames 0).
    let opts: { maxAge: number; holdFrames: number } = { maxAge: 30, holdFrames: 0 };
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 5; k++) frames.push(frame(k, [person(1, 1)]));
    for (let k = 5; k < 8; k++) frames.push(frame(k, []));
    frames.push(frame(8, [person(1, 1)]));
    const ids: Array<number | undefined> = [];
    let tracker: MultiPersonTracker | undefined;
    await lastValueFrom(
      from(frames).pipe(
        track(() => ({ ...opts, onTracker: (_env: string, t: MultiPersonTracker) => (tracker = t) })),
        map((f) => {
          ids.push(f.persons[0]?.trackId);
          // From frame 6 on, tracks end on their first miss.
          if (f.frameId === 5) opts = { maxAge: 0, holdFrames: 0 };
          return f;
        }),
        toArray(),
      ),
    );
    expect(tracker!.options.maxAge).toBe(0);
    expect(tracker!.track(1)!.status).toBe('ended');
    // Frame 8 starts a new tentative track (hidden: minHits 3).
    expect(ids).toEqual([1, 1, 1, 1, 1, undefined, undefined, undefined, undefined]);
  });

  it('errors the stream on out-of-range options from a function, and rejects static ones at creation', async () => {
    const frames = [frame(0, [person(1, 1)])];
    await expect(lastValueFrom(from(frames).pipe(track(() => ({ maxAge: -1 }))))).rejects.toThrow(RangeError);
    expect(() => track({ minHits: 0 })).toThrow(RangeError);
    expect(() => track({ gate: -1 })).toThrow(RangeError);
  });

  it('skips values that are not objects', async () => {
    const values = [null, frame(0, [person(1, 1)]), 7] as unknown as PoseFrame[];
    const out = await lastValueFrom(from(values).pipe(track(), toArray()));
    expect(out.map((f) => f.frameId)).toEqual([0]);
  });

  it('has a spec named track on pose streams that builds the operator from defaults', async () => {
    expect(spec.name).toBe('track');
    expect(spec.input).toBe('pose');
    expect(spec.output).toBe('pose');
    const params = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
    expect(params).toEqual({ enabled: true, minHits: 3, maxAge: 300, gate: 1, smoothKeypoints: 0, holdFrames: HOLD_FRAMES });
    for (const p of spec.params.filter((x) => x.type !== 'boolean')) {
      expect(p.min).toBeLessThanOrEqual(p.default as number);
      expect(p.max).toBeGreaterThanOrEqual(p.default as number);
    }
    const frames: PoseFrame[] = [];
    for (let k = 0; k < 6; k++) frames.push(frame(k, k === 4 ? [person(1, 1), person(5, 5)] : [person(1, 1)]));
    const out: PoseFrame[] = await lastValueFrom(from(frames).pipe(spec.create({ ...params, maxAge: 0 }, {}), toArray()));
    expect(out.map((f) => f.persons.map((p) => p.trackId))).toEqual([[1], [1], [1], [1], [1], [1]]);
    // detection.tracking_enabled false: frames pass through untracked.
    const off: PoseFrame[] = await lastValueFrom(from(frames).pipe(spec.create({ ...params, enabled: false }, {}), toArray()));
    expect(off.map((f) => f.persons.map((p) => p.trackId))).toEqual(frames.map((f) => f.persons.map(() => undefined)));
    expect(off[0]).toBe(frames[0]);
  });
});
