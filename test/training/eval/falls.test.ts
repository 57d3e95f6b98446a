import { describe, expect, it } from 'vitest';
import { episodesFrom, scoreFalls, type FallDetection } from '../../../training/ts/eval/falls.js';

const det = (time: number, personId: number | null, trackId = 1): FallDetection => ({ time, trackId, onset: time - 5000, personId });
const W = 10_000;

describe('scoreFalls', () => {
  it('one fall found 6 s after it started: precision 1, recall 1, delay 6 s', () => {
    const s = scoreFalls([{ personId: 0, start: 1000 }], [det(7000, 0)], W);
    expect([s.precision, s.recall, s.meanDelayMs, s.detected, s.falseAlarms]).toEqual([1, 1, 6000, 1, 0]);
    expect(s.fallDetectedBy).toEqual([0]);
    expect(s.detectionFall).toEqual([0]);
  });

  it('the window is closed at both ends: start .. start + window', () => {
    expect(scoreFalls([{ personId: 0, start: 1000 }], [det(1000, 0)], W).recall).toBe(1);
    expect(scoreFalls([{ personId: 0, start: 1000 }], [det(11_000, 0)], W).recall).toBe(1);
    const late = scoreFalls([{ personId: 0, start: 1000 }], [det(11_001, 0)], W);
    expect([late.recall, late.precision, late.falseAlarms]).toEqual([0, 0, 1]);
    const early = scoreFalls([{ personId: 0, start: 1000 }], [det(999, 0)], W);
    expect([early.recall, early.precision]).toEqual([0, 0]);
  });

  it('a detection of another person is a false alarm and the fall is missed', () => {
    const s = scoreFalls([{ personId: 0, start: 1000 }], [det(6000, 1)], W);
    expect([s.detected, s.falseAlarms, s.precision, s.recall]).toEqual([0, 1, 0, 0]);
  });

  it('a second detection of the same fall is a false alarm (duplicate)', () => {
    const s = scoreFalls([{ personId: 0, start: 1000 }], [det(8000, 0, 2), det(6000, 0, 1)], W);
    expect([s.detected, s.falseAlarms, s.precision, s.recall, s.meanDelayMs]).toEqual([1, 1, 0.5, 1, 5000]);
    // The earlier one (input index 1) is the one that counts.
    expect(s.detectionFall).toEqual([-1, 0]);
  });

  it('a detection attributed to nobody is a false alarm', () => {
    const s = scoreFalls([], [det(6000, null)], W);
    expect([s.precision, s.falseAlarms]).toEqual([0, 1]);
    expect(s.recall).toBeNaN();
  });

  it('no detections: recall 0, precision and delay undefined', () => {
    const s = scoreFalls(
      [
        { personId: 0, start: 1000 },
        { personId: 1, start: 2000 },
      ],
      [],
      W,
    );
    expect(s.recall).toBe(0);
    expect(s.precision).toBeNaN();
    expect(s.meanDelayMs).toBeNaN();
  });

  it('two falls of two people, one found, one missed, one false alarm: mean delay over the found one', () => {
    const s = scoreFalls(
      [
        { personId: 0, start: 1000 },
        { personId: 1, start: 3000 },
      ],
      [det(4000, 0), det(20_000, 1), det(9000, 2)],
      W,
    );
    expect([s.detected, s.falseAlarms]).toEqual([1, 2]);
    expect(s.precision).toBeCloseTo(1 / 3, 12);
    expect(s.recall).toBe(0.5);
    expect(s.meanDelayMs).toBe(3000);
  });

  it('a person who falls twice: each detection goes to the most recent fall', () => {
    const s = scoreFalls(
      [
        { personId: 0, start: 1000 },
        { personId: 0, start: 8000 },
      ],
      [det(6000, 0), det(12_000, 0)],
      W,
    );
    expect(s.fallDetectedBy).toEqual([0, 1]);
    expect(s.meanDelayMs).toBe((5000 + 4000) / 2);
  });

  it('refuses a negative window', () => {
    expect(() => scoreFalls([], [], -1)).toThrow(RangeError);
  });
});

describe('episodesFrom', () => {
  it('folds the high alert, its event and the critical alert of one fall into one episode at the first', () => {
    const meta = { fall_time: 1500 };
    const eps = episodesFrom([
      { type: 'fall_detection', time: 21_500, trackId: 3, metadata: meta, personId: 0 },
      { type: 'fall_detection', time: 6500, trackId: 3, metadata: meta, personId: 0 },
      { type: 'fall_detection', time: 6500, trackId: 3, metadata: meta, personId: 0 },
      { type: 'activity_change', time: 1500, trackId: 3, metadata: {} },
      { type: 'fall_recovery', time: 30_000, trackId: 3, metadata: meta },
      { type: 'inactivity', time: 9000, trackId: 3, metadata: {} },
    ]);
    expect(eps).toEqual([{ time: 6500, trackId: 3, onset: 1500, personId: 0 }]);
  });

  it('keeps different tracks and different onsets apart, in time order', () => {
    const eps = episodesFrom([
      { type: 'fall_detection', time: 9000, trackId: 4, metadata: { fall_time: 4000 } },
      { type: 'fall_detection', time: 6000, trackId: 3, metadata: { fall_time: 1000 } },
      { type: 'fall_detection', time: 40_000, trackId: 3, metadata: { fall_time: 35_000 }, personId: 2 },
    ]);
    expect(eps.map((e) => [e.time, e.trackId, e.onset, e.personId])).toEqual([
      [6000, 3, 1000, null],
      [9000, 4, 4000, null],
      [40_000, 3, 35_000, 2],
    ]);
  });

  it('takes the person of the earliest notice; a notice without fall_time is its own onset', () => {
    const eps = episodesFrom([
      { type: 'fall_detection', time: 8000, trackId: 1, metadata: { fall_time: 2000 }, personId: 5 },
      { type: 'fall_detection', time: 7000, trackId: 1, metadata: { fall_time: 2000 }, personId: 4 },
      { type: 'fall_detection', time: 3000, trackId: 1, metadata: {} },
    ]);
    expect(eps).toEqual([
      { time: 3000, trackId: 1, onset: 3000, personId: null },
      { time: 7000, trackId: 1, onset: 2000, personId: 4 },
    ]);
  });
});
