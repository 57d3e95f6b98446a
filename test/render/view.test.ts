/**
 * PoseFrameView.json serialises each person once per frame and form and the rest of the frame per
 * shape (the WebSocket fan-out's filter sets share the persons' text): what it returns must be,
 * character for character, `JSON.stringify` of the rendered frame, wrapped or not, for every shape.
 */
import { describe, expect, it } from 'vitest';
import { PoseFrameView, type FrameShape } from '../../src/render/view.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import type { Form } from '../../src/render/frame.js';

/** A seeded generator (mulberry32), so that a failure names frames that can be made again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ACTIVITIES = ['standing', 'sitting', 'lying', 'walking', 'falling'] as const;

function person(r: () => number, slot: number): PersonPose {
  const kp = Float32Array.from({ length: 51 }, (_, i) => (i % 3 === 2 ? r() : r() * 700 - 30));
  if (r() < 0.2) kp[3 * Math.floor(r() * 17)] = NaN;
  const outOfView = r() < 0.2;
  const p: PersonPose = {
    slot,
    confidence: r(),
    keypoints: r() < 0.1 ? new Float32Array(0) : kp,
    bbox: outOfView ? new Float32Array(4) : Float32Array.of(r() * 500, r() * 400, 4 + r() * 100, 4 + r() * 300),
  };
  if (r() < 0.7) p.trackId = 1 + Math.floor(r() * 50);
  if (r() < 0.7) p.trackAge = Math.floor(r() * 500);
  if (r() < 0.6) p.floor = { x: r() * 6, y: r() * 5 };
  if (r() < 0.6) p.velocity = { x: r() - 0.5, y: r() - 0.5 };
  if (r() < 0.5) p.densePose = Float32Array.from({ length: 72 }, () => r());
  if (r() < 0.6) p.activity = ACTIVITIES[Math.floor(r() * ACTIVITIES.length)]!;
  if (r() < 0.2) p.held = true;
  return p;
}

function frame(seed: number): PoseFrame {
  const r = random(seed);
  return {
    frameId: seed,
    time: 1_767_225_600_000 + seed * 123.456,
    sourceId: 'sim',
    // Names that JSON must escape, and one that spells the persons' place.
    environmentId: ['ward-3', 'ward "b"\\\n', 'persons', '\u0000persons\u0000', '"\u0000persons\u0000'][seed % 5]!,
    persons: Array.from({ length: Math.floor(r() * 5) }, (_, i) => person(r, i)),
    processingMs: r() * 40,
    modelVersion: '2.0.0',
    csiQuality: r(),
  };
}

/** The wrapper of the /ws/pose fan-out (src/server/ws/fanout.ts). */
const poseUpdate = (frame: Record<string, unknown>) => {
  const { timestamp, ...data } = frame;
  return { type: 'pose_update', subscription_id: 'sub_0123456789abcdef', timestamp, data };
};

describe('PoseFrameView.json', () => {
  it('is JSON.stringify of the rendered frame for every shape, wrapped or not, also with every shape of one frame in turn', () => {
    const shapes: FrameShape[] = [];
    for (const form of ['a', 'b'] as Form[])
      for (const includeKeypoints of [true, false])
        for (const includeDensePose of [false, true])
          for (const minConfidence of [0, 0.3, 0.7, 1])
            for (const personIds of [undefined, [1], [2, 7, 30]])
              shapes.push({ form, minConfidence, includeKeypoints, includeDensePose, ...(personIds ? { personIds } : {}) });
    for (let seed = 1; seed <= 25; seed++) {
      const f = frame(seed);
      // One view per frame, every shape asked of it: renderings shared between shapes must not leak.
      const v = new PoseFrameView(f, 1 + (seed % 3), 'live');
      for (const s of shapes) {
        const what = `frame ${seed}, ${JSON.stringify(s)}`;
        expect(v.json(s), what).toBe(JSON.stringify(new PoseFrameView(f, 1 + (seed % 3), 'live').render(s)));
        expect(v.json(s, 'ws', poseUpdate), what).toBe(JSON.stringify(poseUpdate(new PoseFrameView(f, 1 + (seed % 3), 'live').render(s))));
        JSON.parse(v.json(s, 'ws', poseUpdate));
      }
    }
  });

  it('serialises a wrapper that leaves the persons out, or repeats them, as it is', () => {
    const f = frame(3);
    const s: FrameShape = { form: 'b', minConfidence: 0, includeKeypoints: true, includeDensePose: false };
    const without = (b: Record<string, unknown>) => ({ id: b.frame_id });
    const twice = (b: Record<string, unknown>) => ({ a: b.persons, b: b.persons });
    const v = new PoseFrameView(f, 1, 'live');
    expect(v.json(s, 'without', without)).toBe(JSON.stringify(without(v.render(s))));
    expect(v.json(s, 'twice', twice)).toBe(JSON.stringify(twice(v.render(s))));
  });
});
