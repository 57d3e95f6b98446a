import { describe, expect, it } from 'vitest';
import {
  addPoseCounts,
  emptyPoseCounts,
  matchPoses,
  poseDistance,
  poseScores,
  scorePoseFrame,
  torsoDiameter,
  type PredictedPose,
  type TruePose,
} from '../../../training/ts/eval/pose.js';

/**
 * A hand-built true person: keypoint k at (x0 + 10 k, y0 + 5 k), except the left shoulder (5) at
 * (x0, y0) and the right hip (12) at (x0 + 60, y0 + 80), so the torso diameter is exactly 100 px.
 */
function person(id: number, x0: number, y0: number, visible: number[] = new Array(17).fill(1)): TruePose {
  const kp = new Float32Array(34);
  for (let k = 0; k < 17; k++) {
    kp[2 * k] = x0 + 10 * k;
    kp[2 * k + 1] = y0 + 5 * k;
  }
  kp[10] = x0;
  kp[11] = y0;
  kp[24] = x0 + 60;
  kp[25] = y0 + 80;
  return { id, keypoints: kp, visible: Uint8Array.from(visible), bbox: [x0 - 10, y0 - 10, 60, 80] };
}

/** A prediction of `t` with every keypoint moved by (dx, dy); its keypoints are a Float32Array a test may write to. */
function predict(t: TruePose, dx: number, dy: number, trackId = 1): PredictedPose & { keypoints: Float32Array } {
  const kp = new Float32Array(51);
  for (let k = 0; k < 17; k++) {
    kp[3 * k] = t.keypoints[2 * k]! + dx;
    kp[3 * k + 1] = t.keypoints[2 * k + 1]! + dy;
    kp[3 * k + 2] = 0.9;
  }
  return { keypoints: kp, bbox: Float32Array.from(t.bbox), trackId };
}

const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);

describe('torsoDiameter', () => {
  it('is the left shoulder to right hip distance when both are visible', () => {
    expect(torsoDiameter(person(0, 100, 100))).toBe(100);
  });

  it('falls back to 0.35 x the box diagonal when the shoulder or the hip is hidden', () => {
    const vis = new Array(17).fill(1);
    vis[5] = 0;
    // Box 60 x 80: diagonal 100, so 35 px.
    expect(torsoDiameter(person(0, 100, 100, vis))).toBeCloseTo(35, 12);
    const vis2 = new Array(17).fill(1);
    vis2[12] = 0;
    expect(torsoDiameter(person(0, 100, 100, vis2))).toBeCloseTo(35, 12);
  });
});

describe('scorePoseFrame', () => {
  it('a perfect prediction scores PCK 1 and MPJPE 0', () => {
    const t = person(0, 100, 100);
    const c = scorePoseFrame([predict(t, 0, 0)], [t]);
    const s = poseScores(c);
    expect(s.pck).toBe(1);
    expect(s.mpjpe).toBe(0);
    expect(s.keypoints).toBe(17);
    expect(c.scoredPersons).toBe(1);
    expect(c.matchedPersons).toBe(1);
  });

  it('an offset of exactly 0.2 torso is correct (the test is <=), just beyond it is not', () => {
    const t = person(0, 100, 100);
    // (12, 16) is exactly 20 px = 0.2 x 100.
    const at = poseScores(scorePoseFrame([predict(t, 12, 16)], [t]));
    expect(at.pck).toBe(1);
    expect(at.mpjpe).toBeCloseTo(20, 4);
    const beyond = poseScores(scorePoseFrame([predict(t, 12, 16.25)], [t]));
    expect(beyond.pck).toBe(0);
  });

  it('uses the box fallback for the threshold: 0.2 x 35 = 7 px', () => {
    const vis = new Array(17).fill(1);
    vis[12] = 0;
    const t = person(0, 100, 100, vis);
    expect(poseScores(scorePoseFrame([predict(t, 7, 0)], [t])).pck).toBe(1);
    expect(poseScores(scorePoseFrame([predict(t, 7.25, 0)], [t])).pck).toBe(0);
  });

  it('box-size PCK uses 0.2 x max(box width, height): 0.2 x 80 = 16 px here, inclusive', () => {
    const t = person(0, 100, 100);
    const at = poseScores(scorePoseFrame([predict(t, 0, 16)], [t]));
    expect([at.pck, at.pckBox]).toEqual([1, 1]);
    const beyond = poseScores(scorePoseFrame([predict(t, 0, 16.25)], [t]));
    expect([beyond.pck, beyond.pckBox]).toEqual([1, 0]);
    expect(poseScores(scorePoseFrame([], [t])).pckBox).toBe(0);
  });

  it('mean per-joint error is the mean pixel distance', () => {
    const t = person(0, 100, 100);
    const s = poseScores(scorePoseFrame([predict(t, 3, 4)], [t]));
    expect(s.mpjpe).toBeCloseTo(5, 5);
    expect(s.pck).toBe(1);
  });

  it('scores only visible keypoints', () => {
    const vis = new Array(17).fill(0);
    vis[0] = 1;
    vis[5] = 1;
    vis[12] = 1;
    const t = person(0, 100, 100, vis);
    const p = predict(t, 0, 0);
    // Garbage where the truth is invisible must not count.
    p.keypoints[3 * 3] = 1e6;
    const c = scorePoseFrame([p], [t]);
    expect(sum(c.total)).toBe(3);
    expect(c.total[0]).toBe(1);
    expect(c.total[3]).toBe(0);
    expect(poseScores(c).pck).toBe(1);
    expect(poseScores(c).pckPerKeypoint[3]).toBeNaN();
  });

  it('an unmatched true person counts all visible keypoints as misses; MPJPE ignores it', () => {
    const a = person(0, 100, 100);
    const b = person(1, 300, 200);
    const c = scorePoseFrame([predict(b, 1, 0)], [a, b]);
    expect(sum(c.total)).toBe(34);
    expect(sum(c.correct)).toBe(17);
    expect(poseScores(c).pck).toBe(0.5);
    expect(poseScores(c).mpjpe).toBeCloseTo(1, 5);
    expect(c.scoredPersons).toBe(2);
    expect(c.matchedPersons).toBe(1);
  });

  it('matches persons optimally whatever the order of the predictions', () => {
    const a = person(0, 100, 100);
    const b = person(1, 300, 200);
    const s = poseScores(scorePoseFrame([predict(b, 2, 0), predict(a, 0, 2)], [a, b]));
    expect(s.pck).toBe(1);
    expect(s.mpjpe).toBeCloseTo(2, 5);
    expect(matchPoses([predict(b, 0, 0), predict(a, 0, 0)], [a, b])).toEqual([1, 0]);
  });

  it('leftover predictions cost nothing; a true person with nothing visible is not scored nor matched', () => {
    const a = person(0, 100, 100);
    const hidden = person(1, 300, 200, new Array(17).fill(0));
    expect(matchPoses([predict(a, 0, 0)], [hidden, a])).toEqual([-1, 0]);
    const c = scorePoseFrame([predict(a, 0, 0), predict(a, 200, 0)], [hidden, a]);
    expect(c.scoredPersons).toBe(1);
    expect(poseScores(c).pck).toBe(1);
  });

  it('no predictions: every visible keypoint is a miss and MPJPE is undefined', () => {
    const s = poseScores(scorePoseFrame([], [person(0, 100, 100)]));
    expect(s.pck).toBe(0);
    expect(s.mpjpe).toBeNaN();
  });

  it('nobody in the room: nothing to score', () => {
    const s = poseScores(scorePoseFrame([predict(person(0, 1, 1), 0, 0)], []));
    expect(s.pck).toBeNaN();
    expect(s.keypoints).toBe(0);
  });

  it('a NaN prediction is a miss, never a hit', () => {
    const t = person(0, 100, 100);
    const p = predict(t, 0, 0);
    p.keypoints[0] = NaN;
    const c = scorePoseFrame([p], [t]);
    expect(c.correct[0]).toBe(0);
    expect(c.correct[1]).toBe(1);
    expect(c.errorCount).toBe(16);
  });
});

describe('poseDistance', () => {
  it('is the mean over visible keypoints, NaN with none', () => {
    const t = person(0, 100, 100);
    expect(poseDistance(predict(t, 6, 8), t)).toBeCloseTo(10, 5);
    expect(poseDistance(predict(t, 6, 8), person(0, 100, 100, new Array(17).fill(0)))).toBeNaN();
  });
});

describe('addPoseCounts / poseScores', () => {
  it('PCK over frames is the micro mean over keypoints, per keypoint too', () => {
    const t = person(0, 100, 100);
    const acc = emptyPoseCounts();
    addPoseCounts(acc, scorePoseFrame([predict(t, 0, 0)], [t]));
    addPoseCounts(acc, scorePoseFrame([predict(t, 100, 0)], [t]));
    const vis = new Array(17).fill(0);
    vis[0] = 1;
    vis[5] = 1;
    vis[12] = 1;
    const t3 = person(0, 100, 100, vis);
    addPoseCounts(acc, scorePoseFrame([predict(t3, 0, 0)], [t3]));
    const s = poseScores(acc);
    // 17 + 3 right out of 17 + 17 + 3.
    expect(s.pck).toBeCloseTo(20 / 37, 12);
    expect(s.pckPerKeypoint[0]).toBeCloseTo(2 / 3, 12);
    expect(s.pckPerKeypoint[1]).toBe(0.5);
    expect(s.mpjpe).toBeCloseTo((17 * 100) / 37, 4);
    expect(acc.scoredPersons).toBe(3);
  });
});
