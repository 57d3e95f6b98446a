import { describe, expect, it } from 'vitest';
import { COUNT_RESET_MS, COUNT_SMOOTHING, InferDecoder } from '../../src/model/inferDecoder.js';
import { COUNT_HYSTERESIS } from '../../src/model/countHysteresis.js';
import { MAX_STREAMS, type FeatureRow } from '../../src/model/inferTypes.js';
import type { DecodeOptions, ModelOutputsV1, ModelOutputsV2 } from '../../src/model/runtime.js';
import { DEFAULT_VIEW, viewCamera } from '../../src/pose/camera.js';

const P = 3;
const K = P + 1;
const decode: DecodeOptions = {
  view: { width: 640, height: 480 },
  confidenceThreshold: 0.5,
  maxPersons: 4,
  includeDensePose: false,
  camera: viewCamera(DEFAULT_VIEW),
  receiver: { x: 3, y: 0.2 },
};

/** v2 outputs of one row per q: P(count = 0..3) = (0, 1 - q, q, 0), so P(count >= 2) = q; fall = 0.1 * row. */
function v2(...qs: number[]): ModelOutputsV2 {
  const n = qs.length;
  const count = new Float32Array(n * K);
  qs.forEach((q, r) => count.set([0, 1 - q, q, 0], r * K));
  return {
    contract: 2,
    n,
    maxPersons: P,
    count,
    presence: new Float32Array(n * P).fill(0.9),
    keypoints3d: new Float32Array(n * P * 51),
    activity: new Float32Array(n * P * 5),
    fall: Float32Array.from(qs, (_, r) => 0.1 * r),
  };
}

/** v1 outputs of one row: slot presences as given. */
function v1(presence: number[]): ModelOutputsV1 {
  const p = presence.length;
  return {
    contract: 1,
    n: 1,
    maxPersons: p,
    presence: Float32Array.from(presence),
    keypoints: new Float32Array(p * 51),
    boxes: new Float32Array(p * 4),
    floor: new Float32Array(p * 2),
    densepose: new Float32Array(p * 72),
  };
}

const row = (frameTime: number, sourceId = 'src', environmentId = 'env', arrival = 0): FeatureRow => ({
  features: new Float32Array(1),
  frameTime,
  arrival,
  sourceId,
  environmentId,
  csiQuality: 0.8,
});

/** The count shown for one row of P(count >= 2) = q from `source` at `time`, and what the row's distribution became. */
function step(d: InferDecoder, q: number, time: number, source = 'src') {
  const out = v2(q);
  const shown = d.count(out, 0, row(time, source), decode.confidenceThreshold);
  return { shown, q: out.count[2]! };
}

describe('InferDecoder: frames', () => {
  it('gives each environment its own frame ids and carries the row fields', () => {
    const d = new InferDecoder();
    const now = 10_000;
    const frames = [
      d.frame(v1([0.9, 0.2]), 0, row(1, 'a', 'env-a', 9_990), decode, 'test-1', now),
      d.frame(v1([0.9, 0.2]), 0, row(2, 'b', 'env-b', 0), decode, 'test-1', now),
      d.frame(v1([0.9, 0.2]), 0, row(3, 'a', 'env-a', now + 5), decode, 'test-1', now),
    ];
    expect(frames.map((f) => [f.environmentId, f.frameId, f.time, f.sourceId])).toEqual([
      ['env-a', 0, 1, 'a'],
      ['env-b', 0, 2, 'b'],
      ['env-a', 1, 3, 'a'],
    ]);
    // From arrival to now; 0 when the arrival is unknown (0) or later than now.
    expect(frames.map((f) => f.processingMs)).toEqual([10, 0, 0]);
    expect(frames[0]).toMatchObject({ modelVersion: 'test-1', csiQuality: 0.8 });
    // v1: the threshold picks the slots, no count and no fall probability.
    expect(frames[0]!.persons.map((p) => p.slot)).toEqual([0]);
    expect('fallProbability' in frames[0]!).toBe(false);
  });

  it('v1 rows have no count of their own: the outputs are left as they are', () => {
    const out = v1([0.9, 0.2]);
    expect(new InferDecoder().count(out, 0, row(0), 0.5)).toBeUndefined();
    expect(Array.from(out.presence)).toEqual([Math.fround(0.9), Math.fround(0.2)]);
  });

  it('v2 frames report the count shown, at most maxPersons, and the row fall probability', () => {
    const d = new InferDecoder();
    const out = v2(0.9, 0.9);
    const f0 = d.frame(out, 0, row(0), decode, 'v', 0);
    expect(f0.persons).toHaveLength(2);
    expect(f0.fallProbability).toBe(0);
    const f1 = d.frame(out, 1, row(80), { ...decode, maxPersons: 1 }, 'v', 0);
    expect(f1.persons).toHaveLength(1);
    expect(f1.fallProbability).toBeCloseTo(0.1, 6);
  });
});

describe('InferDecoder: the v2 count', () => {
  it('starts from the raw distribution, then averages with COUNT_SMOOTHING, writing the average into the outputs', () => {
    const d = new InferDecoder();
    expect(step(d, 0.45, 0).q).toBeCloseTo(0.45, 6);
    const avg = 0.45 + COUNT_SMOOTHING * (0.9 - 0.45);
    expect(step(d, 0.9, 80).q).toBeCloseTo(avg, 6);
  });

  it('moves up only once the average reaches threshold + band, and down only under threshold - band', () => {
    expect(COUNT_SMOOTHING).toBe(0.1);
    expect(COUNT_HYSTERESIS).toBe(0.2);
    const d = new InferDecoder();
    let t = 0;
    const shown = (q: number, times: number) => Array.from({ length: times }, () => step(d, q, (t += 80)).shown);
    // Fresh at 0.45: 1. At 0.9 the average is 0.9 - 0.45 * 0.9^n: past 0.5 (the plain rule) after
    // 2 rows, at 0.7 (threshold + band) only after 8.
    expect(shown(0.45, 1)).toEqual([1]);
    expect(shown(0.9, 8)).toEqual([1, 1, 1, 1, 1, 1, 1, 2]);
    // Down from 0.706 towards 0.1: under 0.5 after 4 rows, under 0.3 (threshold - band) only after 11.
    expect(shown(0.1, 11)).toEqual([2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1]);
  });

  it.each([
    { name: 'a gap of exactly COUNT_RESET_MS keeps the average', gap: COUNT_RESET_MS, fresh: false },
    { name: 'a longer gap starts afresh', gap: COUNT_RESET_MS + 1, fresh: true },
    { name: 'time going back starts afresh', gap: -1, fresh: true },
    { name: 'the same time keeps the average', gap: 0, fresh: false },
  ])('$name', ({ gap, fresh }) => {
    const d = new InferDecoder();
    const t0 = 100_000;
    expect(step(d, 0.45, t0).shown).toBe(1);
    const next = step(d, 0.9, t0 + gap);
    // Afresh: the raw 0.9 and the plain rule (2); else the average 0.495, held at 1.
    expect(next.q).toBeCloseTo(fresh ? 0.9 : 0.495, 6);
    expect(next.shown).toBe(fresh ? 2 : 1);
  });

  it('starts afresh when the model person slots change', () => {
    const d = new InferDecoder();
    step(d, 0.45, 0);
    const wider: ModelOutputsV2 = { ...v2(0), maxPersons: 4, count: Float32Array.of(0, 0.1, 0.9, 0, 0), presence: new Float32Array(4).fill(0.9) };
    expect(d.count(wider, 0, row(80), 0.5)).toBe(2);
    expect(wider.count[2]).toBeCloseTo(0.9, 6);
  });

  it('keeps one average per source', () => {
    const d = new InferDecoder();
    step(d, 0.45, 0, 'a');
    expect(step(d, 0.9, 0, 'b').q).toBeCloseTo(0.9, 6);
    expect(step(d, 0.9, 80, 'a').q).toBeCloseTo(0.495, 6);
  });

  it(`keeps at most ${MAX_STREAMS} sources, forgetting the first seen`, () => {
    const d = new InferDecoder();
    for (let i = 0; i <= MAX_STREAMS; i++) step(d, 0.45, 0, `s${i}`);
    // s1 is still kept (averaged); s0 was forgotten when s64 came (afresh).
    expect(step(d, 0.9, 80, 's1').q).toBeCloseTo(0.495, 6);
    expect(step(d, 0.9, 80, 's0')).toMatchObject({ shown: 2 });
    expect(step(d, 0.9, 160, 's0').q).toBeCloseTo(0.9, 6);
  });
});

describe('InferDecoder: the camera', () => {
  it('builds a camera once per view', () => {
    const d = new InferDecoder();
    const a = d.cameraFor(DEFAULT_VIEW);
    expect(d.cameraFor({ ...DEFAULT_VIEW })).toBe(a);
    const b = d.cameraFor({ ...DEFAULT_VIEW, yaw_deg: 10 });
    expect(b).not.toBe(a);
    expect(d.cameraFor({ ...DEFAULT_VIEW, yaw_deg: 10 })).toBe(b);
    // Another subscription has its own.
    expect(new InferDecoder().cameraFor(DEFAULT_VIEW)).not.toBe(a);
  });
});
