import { describe, expect, it } from 'vitest';
import {
  ActivityLabeller,
  DEFAULT_ACTIVITY_SETTINGS,
  FALL_TRIGGER,
  REFINER_FALL_TRIGGER,
  MODEL_ACTIVITY_SMOOTHING,
  UPRIGHT_VETO,
  type ActivitySettings,
} from '../../src/pose/activityLabeller.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { personOf, poseFrame, SITTING_SIDE, STANDING, type Figure } from '../helpers/stickFigure.js';

const fig = (shape: Omit<Figure, 'x' | 'y' | 'scale'>): Figure => ({ x: 320, y: 260, scale: 200, ...shape });
const settings = (extra: Partial<ActivitySettings> = {}): ActivitySettings => ({ ...DEFAULT_ACTIVITY_SETTINGS, ...extra });

/** A person carrying a v2 model's activity probabilities (order: standing, sitting, lying, walking, falling). */
const modelPerson = (trackId: number | undefined, probs: readonly number[]): PersonPose =>
  personOf(fig(STANDING), {
    trackId,
    floor: { x: 2, y: 3 },
    modelActivity: { activity: 'standing', confidence: probs[0]!, probabilities: Float32Array.from(probs) },
  });

const STAND = [0.9, 0.05, 0.02, 0.02, 0.01];
const WALK = [0.05, 0.02, 0.02, 0.9, 0.01];
const DOWN = [0.1, 0.1, 0.6, 0.05, 0.15];

/** Labels frames one after another with one labeller; "activity,activity|from>to" per frame. */
const labelAll = (frames: PoseFrame[], s: ActivitySettings = settings()) => {
  const labeller = new ActivityLabeller(s);
  return frames.map((f) => {
    const out = labeller.label(f);
    return `${out.persons.map((p) => p.activity ?? '-').join(',')}${out.events ? '|' + out.events.map((e) => `${e.metadata.from}>${e.metadata.to}`).join(',') : ''}`;
  });
};

describe('ActivityLabeller: posture and history (v1 persons)', () => {
  it.each([
    // name, persons per frame at 100 ms steps, minDurationMs, expected labels
    ['a standing person stays standing', [STANDING, STANDING, STANDING, STANDING], 300, ['standing', 'standing', 'standing', 'standing']],
    ['a short sit changes nothing', [STANDING, SITTING_SIDE, SITTING_SIDE, STANDING], 300, ['standing', 'standing', 'standing', 'standing']],
    [
      'sitting for minDurationMs is reported',
      [STANDING, SITTING_SIDE, SITTING_SIDE, SITTING_SIDE, SITTING_SIDE],
      300,
      ['standing', 'standing', 'standing', 'standing', 'sitting|standing>sitting'],
    ],
    ['with no hysteresis at once', [STANDING, SITTING_SIDE], 0, ['standing', 'sitting|standing>sitting']],
  ] as const)('%s', (_name, shapes, minDurationMs, expected) => {
    const frames = shapes.map((shape, i) => poseFrame(i * 100, [personOf(fig(shape), { trackId: 1 })]));
    expect(labelAll(frames, settings({ minDurationMs }))).toEqual(expected);
  });

  it.each([
    // floor speed (m/s) of a standing person, walkSpeed, expected
    [0.2, 0.3, 'standing'],
    [0.3, 0.3, 'walking'],
    [0.5, 0.6, 'standing'],
  ])('untracked at %s m/s (walkSpeed %s): %s', (speed, walkSpeed, expected) => {
    const p = personOf(fig(STANDING), { floor: { x: 1, y: 1 }, velocity: { x: speed, y: 0 } });
    const s = settings({ thresholds: { ...DEFAULT_ACTIVITY_SETTINGS.thresholds, walkSpeed } });
    expect(new ActivityLabeller(s).label(poseFrame(0, [p])).persons[0]!.activity).toBe(expected);
  });

  it('never mutates the frame; a frame whose time is not a number passes as it is', () => {
    const labeller = new ActivityLabeller();
    const frame = poseFrame(0, [personOf(fig(STANDING), { trackId: 1 })]);
    const out = labeller.label(frame);
    expect(out).not.toBe(frame);
    expect(frame.persons[0]!.activity).toBeUndefined();
    expect(out.persons[0]!.activity).toBe('standing');
    const bad = { ...frame, time: NaN };
    expect(labeller.label(bad)).toBe(bad);
  });

  it('forgets a track not seen for forgetAfterMs; settings given with a frame apply from it', () => {
    const labeller = new ActivityLabeller(settings({ forgetAfterMs: 1000 }));
    labeller.label(poseFrame(0, [personOf(fig(STANDING), { trackId: 1 })]));
    labeller.label(poseFrame(1000, [personOf(fig(STANDING), { trackId: 2 })]));
    expect(labeller.trackIds().sort()).toEqual([1, 2]);
    labeller.label(poseFrame(1001, []));
    expect(labeller.trackIds()).toEqual([2]);
    labeller.label(poseFrame(1500, []), settings({ forgetAfterMs: 400 }));
    expect(labeller.trackIds()).toEqual([]);
  });
});

describe('ActivityLabeller: the answers of a v2 model', () => {
  it(`smooths the model's probabilities per track (${MODEL_ACTIVITY_SMOOTHING} of the newest): walking once the smoothed P(walking) passes P(standing)`, () => {
    // After one WALK frame the smoothed P(standing) is 0.9 - 0.35 * 0.85 = 0.60 against P(walking)
    // 0.02 + 0.35 * 0.88 = 0.33; after two, 0.38 against 0.52.
    const frames = [STAND, WALK, WALK, WALK].map((probs, i) => poseFrame(i * 100, [modelPerson(1, probs)]));
    expect(labelAll(frames, settings({ minDurationMs: 0 }))).toEqual(['standing', 'standing', 'walking|standing>walking', 'walking']);
    // With the default hysteresis the change waits 300 ms more.
    const longer = [STAND, WALK, WALK, WALK, WALK, WALK].map((probs, i) => poseFrame(i * 100, [modelPerson(1, probs)]));
    expect(labelAll(longer)).toEqual(['standing', 'standing', 'standing', 'standing', 'standing', 'walking|standing>walking']);
  });

  it.each([
    // fallProbability, expected label of the one person down (P(lying) 0.6)
    [FALL_TRIGGER - 0.01, 'standing'],
    [FALL_TRIGGER, 'falling|standing>falling'],
    [0.95, 'falling|standing>falling'],
  ])('fall trigger: fall probability %s gives %s', (fallProbability, expected) => {
    const frames = [poseFrame(0, [modelPerson(1, STAND)]), poseFrame(100, [modelPerson(1, DOWN)], { fallProbability })];
    expect(labelAll(frames)).toEqual(['standing', expected]);
  });

  it.each([
    // fallProbability, the frame's model's trigger (its fall_trigger metadata), expected label
    [0.85, undefined, 'falling|standing>falling'],
    [0.85, REFINER_FALL_TRIGGER, 'standing'],
    [REFINER_FALL_TRIGGER, REFINER_FALL_TRIGGER, 'falling|standing>falling'],
    [0.75, 0.7, 'falling|standing>falling'],
  ])("the frame's own trigger: fall probability %s against %s gives %s", (fallProbability, fallTrigger, expected) => {
    const frames = [
      poseFrame(0, [modelPerson(1, STAND)]),
      poseFrame(100, [modelPerson(1, DOWN)], { fallProbability, ...(fallTrigger === undefined ? {} : { fallTrigger }) }),
    ];
    expect(labelAll(frames)).toEqual(['standing', expected]);
  });

  it.each([
    // P(standing), P(walking): P(up) just under and at UPRIGHT_VETO
    [0.5, 0.29, 'falling|standing>falling'],
    [0.5, 0.3, 'standing'],
    [0.9, 0.05, 'standing'],
  ])(`upright veto (${UPRIGHT_VETO}): P(standing) %s + P(walking) %s gives %s`, (pStanding, pWalking, expected) => {
    const probs = [pStanding, 0, 0.2, pWalking, 1 - pStanding - pWalking - 0.2];
    const frames = [poseFrame(0, [modelPerson(1, STAND)]), poseFrame(100, [modelPerson(1, probs)], { fallProbability: 0.9 })];
    expect(labelAll(frames)).toEqual(['standing', expected]);
  });

  it("a fall's confidence is the larger of the frame's fall probability and the person's P(falling)", () => {
    const labeller = new ActivityLabeller();
    const out = labeller.label(poseFrame(0, [modelPerson(undefined, DOWN)], { fallProbability: 0.85 }));
    expect(out.persons[0]!.activity).toBe('falling');
    expect(out.persons[0]!.activityConfidence).toBeCloseTo(0.85, 6);
  });

  it('keeps the fall with the track that holds it while the probability stays over the trigger', () => {
    const LIES = [0.02, 0.02, 0.95, 0.0, 0.01];
    const FALLS = [0.05, 0.0, 0.05, 0.0, 0.9];
    const labeller = new ActivityLabeller(settings({ minDurationMs: 0 }));
    const fallIndex = (persons: PersonPose[], fallProbability?: number) =>
      labeller.label(poseFrame(0, persons, fallProbability === undefined ? {} : { fallProbability })).persons.findIndex((p) => p.activity === 'falling');
    expect(fallIndex([modelPerson(1, LIES), modelPerson(2, FALLS)], 0.9)).toBe(1);
    // Track 2 now lies, tying with track 1 who comes first: the fall stays with track 2.
    expect(fallIndex([modelPerson(1, LIES), modelPerson(2, LIES)], 0.9)).toBe(1);
    // Below the trigger the hold ends; the next fall goes to the first of the tie.
    expect(fallIndex([modelPerson(1, LIES), modelPerson(2, LIES)])).toBe(-1);
    expect(fallIndex([modelPerson(1, LIES), modelPerson(2, LIES)], 0.9)).toBe(0);
  });
});
