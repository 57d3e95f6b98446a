import { describe, expect, it } from 'vitest';
import {
  activityOf,
  classifyPosture,
  createPostureEstimate,
  DEFAULT_ACTIVITY_THRESHOLDS,
  estimatePosture,
  peakDescent,
  PoseHistory,
  POSTURE_THRESHOLDS,
  priorDrop,
  torsoAngle,
  type ActivityThresholds,
  type Posture,
} from '../../src/pose/posture.js';
import {
  boxOf,
  easeFall,
  fallingFigure,
  figureKeypoints,
  figureSequence,
  grounded,
  kneelThenLie,
  LYING,
  SITTING_FRONT,
  SITTING_SIDE,
  STANDING,
  transform,
  WALKING,
  type Figure,
} from '../helpers/stickFigure.js';

const at = (shape: Omit<Figure, 'x' | 'y' | 'scale'>, extra: Partial<Figure> = {}): Figure => ({ x: 320, y: 260, scale: 200, ...shape, ...extra });

function classify(f: Figure, view?: [number, number, number, number]) {
  let kp = figureKeypoints(f);
  if (view) kp = transform(kp, view, f.x, f.y);
  return estimatePosture(kp, boxOf(kp));
}

describe('torsoAngle', () => {
  it('is the angle of hip mid -> shoulder mid from the upward vertical', () => {
    expect(torsoAngle(figureKeypoints(at(STANDING)))).toBeCloseTo(0, 4);
    expect(torsoAngle(figureKeypoints(at(LYING)))).toBeCloseTo(90, 4);
    expect(torsoAngle(figureKeypoints(at(STANDING, { torso: 30 })))).toBeCloseTo(30, 4);
    expect(torsoAngle(figureKeypoints(at(STANDING, { torso: -30 })))).toBeCloseTo(30, 4);
    expect(torsoAngle(figureKeypoints(at(STANDING, { torso: 180 })))).toBeCloseTo(180, 4);
  });

  it('uses the visible side when one is missing, NaN when both are', () => {
    const kp = figureKeypoints(at(STANDING, { torso: 40, hide: [5, 11] }));
    const rightSide = (Math.atan2(Math.abs(kp[3 * 6] - kp[3 * 12]), kp[3 * 12 + 1] - kp[3 * 6 + 1]) * 180) / Math.PI;
    expect(torsoAngle(kp)).toBeCloseTo(rightSide, 4);
    expect(rightSide).toBeGreaterThan(30);
    expect(torsoAngle(figureKeypoints(at(STANDING, { hide: [5, 6] })))).toBeNaN();
    expect(torsoAngle(new Float32Array(10))).toBeNaN();
  });
});

describe('posture classifier', () => {
  const cases: Array<[string, Omit<Figure, 'x' | 'y' | 'scale'>, Posture]> = [
    ['standing', STANDING, 'standing'],
    ['walking mid-stride', WALKING, 'standing'],
    ['sitting, side view', SITTING_SIDE, 'sitting'],
    ['sitting, front view', SITTING_FRONT, 'sitting'],
    ['lying across the view', LYING, 'lying'],
    ['lying, head to the left', { torso: -90, thigh: [90, 90] }, 'lying'],
  ];

  it.each(cases)('%s -> %s', (_name, shape, expected) => {
    const e = classify(at(shape));
    expect(e.valid).toBe(true);
    expect(e.posture).toBe(expected);
    expect(e.confidence).toBeGreaterThan(0.6);
    expect(e.standingScore + e.sittingScore + e.lyingScore).toBeCloseTo(1, 10);
  });

  // Seen from another angle: scaled down (further away), sheared either way, squeezed sideways
  // (turned), and stretched vertically (seen from lower down).
  const views: Array<[string, [number, number, number, number]]> = [
    ['scaled 0.4', [0.4, 0, 0, 0.4]],
    ['sheared x +0.3', [1, 0.3, 0, 1]],
    ['sheared x -0.3', [1, -0.3, 0, 1]],
    ['sheared y +0.25', [1, 0, 0.25, 1]],
    ['squeezed to 0.6 wide', [0.6, 0, 0, 1]],
    ['scaled and sheared', [0.7, 0.2, -0.15, 0.8]],
  ];
  for (const [viewName, m] of views)
    it.each(cases)(`%s still classifies when ${viewName}`, (_name, shape, expected) => {
      expect(classify(at(shape), m).posture).toBe(expected);
    });

  it('scores are continuous: the lying score grows with the torso angle through the documented ramp', () => {
    const scores = [0, 20, 35, 50, 65, 80, 90].map((a) => classify(at({ torso: a, thigh: [-a, -a] })).lyingScore);
    for (let i = 1; i < scores.length; i++) expect(scores[i]).toBeGreaterThanOrEqual(scores[i - 1]);
    expect(scores[0]).toBe(0);
    expect(scores[6]).toBe(1);
    // At 50 degrees the torso ramp (35 -> 65) is half way.
    expect(classify(at({ torso: 50, thigh: [-50, -50] })).torsoInclination).toBeCloseTo(50, 3);
  });

  it('a body lying along the line of sight (short torso, magnified legs) is lying; a small upright one is not', () => {
    // Feet towards the camera: the torso projects at 45 % of its length, the nearer legs at full.
    const along = classify(at(STANDING, { torsoScale: 0.45 }));
    expect(along.torsoAngle).toBeCloseTo(0, 3);
    // The shoulder width (0.23 H) is longer than the torso's image (0.13 H): acos(0.13 / 0.23).
    expect(along.torsoInclination).toBeCloseTo((Math.acos((0.29 * 0.45) / 0.23) * 180) / Math.PI, 0);
    expect(along.posture).toBe('lying');
    // The same figure far away (uniformly small) is still standing.
    expect(classify(at(STANDING, { scale: 60 })).posture).toBe('standing');
  });

  it('a side view (narrow shoulders) is not mistaken for foreshortening', () => {
    const e = classify(at(STANDING, { width: 0.15 }));
    expect(e.torsoInclination).toBeCloseTo(0, 5);
    expect(e.posture).toBe('standing');
  });

  it('confidence falls with missing core keypoints; no torso is invalid', () => {
    const full = classify(at(STANDING));
    const noAnkles = classify(at(STANDING, { hide: [15, 16] }));
    expect(full.coverage).toBe(1);
    expect(noAnkles.coverage).toBe(0.75);
    expect(noAnkles.posture).toBe('standing');
    // Without ankles the thigh is measured against the torso; still clearly standing.
    expect(noAnkles.standingScore).toBeGreaterThan(0.9);
    expect(noAnkles.confidence).toBeCloseTo(noAnkles.standingScore * 0.75, 10);
    expect(classify(at(SITTING_SIDE, { hide: [15, 16] })).posture).toBe('sitting');
    const low = classify(at(STANDING, { confidence: POSTURE_THRESHOLDS.minKeypointConfidence / 2 }));
    expect(low.valid).toBe(false);
    expect(classifyPosture(figureKeypoints(at(STANDING, { hide: [5, 6, 11, 12] })))).toEqual({ posture: 'standing', confidence: 0 });
  });

  it('never throws on malformed input', () => {
    const nan = figureKeypoints(at(STANDING)).fill(NaN);
    expect(estimatePosture(nan, undefined).valid).toBe(false);
    expect(estimatePosture(new Float32Array(3), new Float32Array(0)).valid).toBe(false);
    // A box of zero size falls back to the keypoints' extent.
    const kp = figureKeypoints(at(SITTING_SIDE));
    const e = estimatePosture(kp, new Float32Array(4));
    expect(e.posture).toBe('sitting');
    expect(e.boxHeight).toBeGreaterThan(0);
  });

  it('fills the estimate it is given', () => {
    const out = createPostureEstimate();
    expect(estimatePosture(figureKeypoints(at(LYING)), undefined, out)).toBe(out);
    expect(out.posture).toBe('lying');
  });
});

/** Pushes a figure sequence at 10 Hz and returns the activity after each frame. */
function run(
  figures: Figure[],
  floor?: (k: number) => [number, number],
  speed?: (k: number) => number,
  thresholds: Readonly<ActivityThresholds> = DEFAULT_ACTIVITY_THRESHOLDS,
) {
  const h = new PoseHistory(64);
  const est = createPostureEstimate();
  return figures.map((f, k) => {
    const kp = figureKeypoints(f);
    estimatePosture(kp, boxOf(kp), est);
    const [fx, fy] = floor ? floor(k) : [NaN, NaN];
    h.push(k * 100, est, fx, fy, speed ? speed(k) : NaN);
    const a = activityOf(h, thresholds);
    return { activity: a.activity, confidence: a.confidence, speed: a.speed };
  });
}

/** Peak confidence of the falling labels of a run, 0 when there is none. */
const peakFalling = (out: Array<{ activity: string; confidence: number }>) => Math.max(0, ...out.map((o) => (o.activity === 'falling' ? o.confidence : 0)));

describe('activityOf', () => {
  const GROUND = 440;
  const SCALE = 220;
  /** 1 s standing, a fall of `duration` to `angle` degrees, then still. */
  const fall = (duration: number, angle: number, after = 30) =>
    Array.from({ length: 10 + Math.round(duration * 10) + after }, (_, k) => fallingFigure(Math.max(0, k - 10) / 10, duration, angle, 300, GROUND, SCALE));

  it('a fall: standing, falling on the intermediate frames, lying once the upright frames are 1.5 s old', () => {
    const out = run(fall(0.8, 90));
    const labels = out.map((o) => o.activity);
    expect(labels.slice(0, 11)).toEqual(Array(11).fill('standing'));
    const first = labels.indexOf('falling');
    // The fall runs over frames 10..18; it is reported once the angle passes 50 degrees + the upright start.
    expect(first).toBeGreaterThan(10);
    expect(first).toBeLessThanOrEqual(18);
    const last = labels.lastIndexOf('falling');
    expect(labels.slice(first, last + 1)).toEqual(Array(last - first + 1).fill('falling'));
    // The last upright frame is frame 12 or so; 1.5 s later only lying remains.
    expect(last).toBeLessThanOrEqual(first + 15);
    expect(labels.slice(last + 1)).toEqual(Array(labels.length - last - 1).fill('lying'));
    expect(Math.max(...out.map((o) => (o.activity === 'falling' ? o.confidence : 0)))).toBeGreaterThan(0.85);
  });

  it('the intermediate frames of a fall are falling while the torso passes 50, 70 and 90 degrees', () => {
    const figs = fall(1.0, 90, 0);
    const out = run(figs);
    for (let k = 10; k < figs.length; k++) {
      const angle = figs[k].torso ?? 0;
      if (angle >= 60) expect(out[k].activity, `frame ${k} at ${angle.toFixed(0)} degrees`).toBe('falling');
    }
  });

  it('slowly lying down over 4 s is not a fall, nor is sitting down', () => {
    const slow = run(fall(4, 90, 10)).map((o) => o.activity);
    expect(slow).not.toContain('falling');
    expect(slow.at(-1)).toBe('lying');
    // Sitting down in 0.6 s: the torso stays upright.
    const sit = Array.from({ length: 30 }, (_, k) => {
      const p = Math.min(1, Math.max(0, (k - 10) / 6));
      return { x: 320, y: 300 + 60 * p, scale: 200, thigh: [90 * p, 90 * p], knee: [90 * p, 90 * p], width: 0.3 } as Figure;
    });
    const labels = run(sit).map((o) => o.activity);
    expect(labels).not.toContain('falling');
    expect(labels.at(-1)).toBe('sitting');
  });

  it('a fall that stops at 45 degrees (caught) is not a fall: the angle change is under 50', () => {
    expect(run(fall(0.6, 45)).map((o) => o.activity)).not.toContain('falling');
  });

  it('a borderline fall (to 70 degrees, 1.1 s) has a confidence between 0.6 and 0.85', () => {
    const out = run(fall(1.1, 70));
    const peak = Math.max(...out.map((o) => (o.activity === 'falling' ? o.confidence : 0)));
    expect(peak).toBeGreaterThan(0.6);
    expect(peak).toBeLessThan(0.85);
  });

  it('a fast fall is falling; kneeling first and then lying down on the floor quickly is not', () => {
    // A fall tips over from full height: 0.8 s, and a slow one of 1.2 s.
    for (const seconds of [0.8, 1.2]) {
      const out = run(fall(seconds, 90));
      expect(peakFalling(out), `${seconds} s fall`).toBeGreaterThan(0.85);
      expect(out.at(-1)!.activity).toBe('lying');
    }
    // Lying down on purpose goes down in stages: kneeling (seen along the shins, the kneel reads as
    // standing a head shorter, an upright start) and then lying back within 0.9 s, fast enough to
    // pass every other test of a fall. Only the staged descent tells it from one.
    const figs = kneelThenLie(300, GROUND, SCALE);
    const staged = run(figs);
    expect(staged.map((o) => o.activity)).not.toContain('falling');
    expect(staged.at(-1)!.activity).toBe('lying');
    const h = new PoseHistory(64);
    const est = createPostureEstimate();
    figs.forEach((f, k) => {
      const kp = figureKeypoints(f);
      h.push(k * 100, estimatePosture(kp, boxOf(kp), est), NaN, NaN, NaN);
    });
    // Its head went down at more than fallSpeed standing heights per second ...
    const standingBox = boxOf(figureKeypoints(figs[0]))[3];
    expect(peakDescent(h, h.length - 1) / standingBox).toBeGreaterThan(DEFAULT_ACTIVITY_THRESHOLDS.fallSpeed);
    // ... and without the staged-descent test it reads as a fall.
    const unstaged = run(figs, undefined, undefined, { ...DEFAULT_ACTIVITY_THRESHOLDS, fallPriorDrop: Infinity });
    expect(peakFalling(unstaged)).toBeGreaterThan(0.7);
  });

  it('bending over (torso inclined) and straightening up just before a fall does not hide the fall', () => {
    const stand = grounded(STANDING, 300, GROUND, SCALE);
    const bent = grounded({ torso: 70 }, 300, GROUND, SCALE);
    const lie = grounded(LYING, 380, GROUND, SCALE);
    const figs = figureSequence([
      [stand, stand, 1],
      [stand, bent, 0.8],
      [bent, stand, 0.8],
      [stand, stand, 0.3],
      [stand, lie, 1, easeFall],
      [lie, lie, 2],
    ]);
    // Bending, the head went down in place by more than fallPriorDrop of the height, 1.3 s before
    // the fall; but with the torso inclined, which is not going down in stages.
    const headY = (f: Figure) => estimatePosture(figureKeypoints(f), boxOf(figureKeypoints(f))).headY;
    const standingBox = boxOf(figureKeypoints(stand))[3];
    expect((headY(bent) - headY(stand)) / standingBox).toBeGreaterThan(DEFAULT_ACTIVITY_THRESHOLDS.fallPriorDrop);
    expect(peakFalling(run(figs))).toBeGreaterThan(0.8);
  });

  it('walking: standing posture and a floor speed >= 0.3 m/s', () => {
    const figs = Array.from({ length: 10 }, () => at(WALKING));
    expect(
      run(
        figs,
        (k) => [k * 0.1, 1],
        () => 1.0,
      ).at(-1)!.activity,
    ).toBe('walking');
    expect(
      run(
        figs,
        (k) => [k * 0.01, 1],
        () => 0.1,
      ).at(-1)!.activity,
    ).toBe('standing');
    // Without a given speed it is measured from the floor positions: 0.5 m/s here.
    const measured = run(figs, (k) => [k * 0.05, 1]).at(-1)!;
    expect(measured.activity).toBe('walking');
    expect(measured.speed).toBeCloseTo(0.5, 6);
    // Seated and moving (a wheelchair) stays sitting.
    expect(
      run(
        Array.from({ length: 10 }, () => at(SITTING_SIDE)),
        (k) => [k * 0.1, 1],
        () => 1,
      ).at(-1)!.activity,
    ).toBe('sitting');
  });

  it('walking without floor positions: the box centre moving >= 0.25 box heights per second', () => {
    // Box height = 1.2 x the keypoint extent (~0.93 H) = ~223 px for a 200 px figure.
    const box = boxOf(figureKeypoints(at(STANDING)))[3];
    const fast = Array.from({ length: 12 }, (_, k) => at(STANDING, { x: 100 + k * 0.04 * box }));
    const slow = Array.from({ length: 12 }, (_, k) => at(STANDING, { x: 100 + k * 0.015 * box }));
    const f = run(fast).at(-1)!;
    expect(f.activity).toBe('walking');
    expect(f.speed).toBeCloseTo(0.4, 2);
    expect(run(slow).at(-1)!.activity).toBe('standing');
  });

  it('an empty history is standing with confidence 0', () => {
    expect(activityOf(new PoseHistory(4))).toMatchObject({ activity: 'standing', confidence: 0 });
  });
});

describe('PoseHistory', () => {
  it('keeps the newest samples in a ring and trims by age', () => {
    const h = new PoseHistory(4);
    const e = estimatePosture(figureKeypoints(at(STANDING)), undefined);
    for (let k = 0; k < 6; k++) h.push(k * 100, e, k, 0, NaN);
    expect(h.length).toBe(4);
    expect([0, 1, 2, 3].map((k) => h.time(k))).toEqual([500, 400, 300, 200]);
    expect(h.floorX(3)).toBe(2);
    expect(h.time(4)).toBeNaN();
    h.trim(500, 150);
    expect(h.length).toBe(2);
    // A clock jump backwards empties it.
    h.trim(100, 1000);
    expect(h.length).toBe(0);
    expect(() => new PoseHistory(1)).toThrow(RangeError);
  });

  it('peakDescent measures the head going down over >= 250 ms spans', () => {
    const h = new PoseHistory(16);
    const e = createPostureEstimate();
    const kp = figureKeypoints(at(STANDING));
    for (let k = 0; k < 8; k++) {
      estimatePosture(kp, undefined, e);
      e.headY = 100 + (k >= 4 ? (k - 3) * 30 : 0); // 30 px per 100 ms from frame 4 on
      h.push(k * 100, e, NaN, NaN, NaN);
    }
    expect(peakDescent(h, h.length - 1)).toBeCloseTo(300, 6);
  });

  describe('priorDrop', () => {
    const kp = figureKeypoints(at(STANDING));
    /** A history at 10 Hz from per-sample head y, torso inclination, floor x (NaN: none) and box centre x. */
    function history(samples: Array<{ head: number; incl?: number; fx?: number; cx?: number }>) {
      const h = new PoseHistory(64);
      const e = createPostureEstimate();
      samples.forEach((s, k) => {
        estimatePosture(kp, undefined, e);
        e.headY = s.head;
        e.torsoInclination = s.incl ?? 0;
        e.centreX = s.cx ?? 320;
        h.push(k * 100, e, s.fx ?? NaN, s.fx === undefined ? NaN : 1, NaN);
      });
      return h;
    }
    const ramp = (n: number, from: number, to: number) => Array.from({ length: n }, (_, k) => from + ((to - from) * k) / (n - 1));

    it('is the largest drop of the head below an earlier, higher head within the span, up to sample k', () => {
      // Head at 100, down to 150 (kneeling), back up to 130, then the newest 3 samples (after k) far down.
      const heads = [...ramp(5, 100, 100), ...ramp(6, 100, 150), ...ramp(3, 150, 130), 300, 320, 340];
      const h = history(heads.map((head) => ({ head })));
      // k = 3: the sample before the 3 newest (index 0 is the newest).
      expect(priorDrop(h, 3, 5000, 200)).toBeCloseTo(50, 6);
      // Over a span that starts at the lowest point, only the drop since then counts: none.
      expect(priorDrop(h, 3, 200, 200)).toBe(0);
      // A head that only rises has no drop.
      expect(priorDrop(history(ramp(10, 200, 100).map((head) => ({ head }))), 0, 5000, 200)).toBe(0);
    });

    it('compares only samples at the place of sample k: a walk towards the camera is not a drop', () => {
      // The head's image y grows 40 px over 2 s: walking 2 m (floor x 0 -> 2) or going down in place.
      const heads = ramp(21, 100, 140);
      const walking = history(heads.map((head, k) => ({ head, fx: k * 0.1 })));
      // Within 0.5 m of the newest sample: its last 6 samples, 0.5 s, 10 px.
      expect(priorDrop(walking, 0, 3000, 200)).toBeCloseTo(10, 6);
      const inPlace = history(heads.map((head) => ({ head, fx: 1 })));
      expect(priorDrop(inPlace, 0, 3000, 200)).toBeCloseTo(40, 6);
      // Without floor positions the box centres tell the place: within 0.25 reference heights (50 px).
      const across = history(heads.map((head, k) => ({ head, cx: 100 + 20 * k })));
      expect(priorDrop(across, 0, 3000, 200)).toBeCloseTo(4, 6);
    });

    it('leaves out samples with an inclined torso: bending over is not going down in stages', () => {
      const samples = [...ramp(5, 100, 100).map((head) => ({ head })), ...ramp(5, 110, 150).map((head) => ({ head, incl: 60 })), { head: 102 }];
      expect(priorDrop(history(samples), 0, 5000, 200)).toBeCloseTo(2, 6);
    });
  });
});
