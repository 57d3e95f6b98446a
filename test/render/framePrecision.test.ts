/**
 * The decimals a rendered pose frame leaves with (docs/service.md "Conventions", src/precision.ts):
 * Form B `processing_time_ms` is a milliseconds figure, 2 decimals like every other one; every
 * other figure of a frame prints as it always did (pixels 2, confidences and 0..1 coordinates 3,
 * metres 3, velocities 3). Expected values are written out by hand from the input below.
 */
import { describe, expect, it } from 'vitest';
import { renderFrame } from '../../src/render/frame.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import type { WireFrame } from '../helpers/wire.js';

/** A person whose every figure has more decimals than it prints with. */
function person(): PersonPose {
  const kp = new Float32Array(51);
  for (let k = 0; k < 17; k++) kp.set([100.123456 + k, 200.987654, 0.87654321], 3 * k);
  const dense = new Float32Array(72);
  dense.set([0.4567891, 0.1234567, 0.9876543]);
  return {
    slot: 0,
    trackId: 3,
    trackAge: 5,
    confidence: 0.912345,
    keypoints: kp,
    bbox: Float32Array.of(90.126, 180.994, 60.555555, 160.00123),
    floor: { x: 1.23456789, y: 2.0004999 },
    velocity: { x: 0.3336, y: -0.00049 },
    densePose: dense,
    activity: 'walking',
  };
}

const frame: PoseFrame = {
  frameId: 42,
  time: Date.parse('2026-11-27T10:00:00.000Z'),
  sourceId: 'test',
  environmentId: 'default',
  persons: [person()],
  processingMs: 3.14159,
  modelVersion: 'test',
  csiQuality: 0.98765,
};

const opts = { minConfidence: 0, includeKeypoints: true, includeDensePose: true, routerCount: 1, pipeline: 'live' };

/** A frame as it goes on the wire (JSON), in a form. */
function wire(f: PoseFrame, form: 'a' | 'b'): WireFrame {
  return JSON.parse(JSON.stringify(renderFrame(f, form, opts)));
}

describe('pose frame figures', () => {
  it('Form B processing_time_ms has the 2 decimals of milliseconds', () => {
    const b = wire(frame, 'b');
    expect(b.processing_time_ms).toBe(3.14);
    expect(wire({ ...frame, processingMs: 12.345678 }, 'b').processing_time_ms).toBe(12.35);
    // Form A's is a whole number of milliseconds, as before.
    expect(wire(frame, 'a').processing_time_ms).toBe(3);
  });

  // Passes on the code before the change too: it guards that only processing_time_ms changed.
  it('every other figure prints as before: pixels 2, confidences 3, metres 3, velocities 3', () => {
    const b = wire(frame, 'b');
    expect(b.metadata.csi_quality).toBe(0.988);
    const pb = b.persons[0];
    expect(pb.confidence).toBe(0.912);
    expect(pb.bounding_box).toEqual({ x: 90.13, y: 180.99, width: 60.56, height: 160 });
    expect(pb.keypoints[0]).toEqual({ name: 'nose', x: 100.12, y: 200.99, confidence: 0.877, visible: true });
    expect(pb.keypoints[16].x).toBe(116.12);
    expect(pb.location).toEqual({ x: 1.235, y: 2 });
    const a = wire(frame, 'a');
    expect(a.metadata.signal_quality).toBe(0.988);
    const pa = a.persons[0];
    expect(pa.confidence).toBe(0.912);
    expect(pa.bounding_box).toEqual({ x: 90.13, y: 180.99, width: 60.56, height: 160 });
    expect(pa.keypoints[0]).toMatchObject({ x: 100.12, y: 200.99, confidence: 0.877 });
    expect(pa.location).toEqual({ x: 1.235, y: 2 });
    expect(pa.tracking_info.velocity).toEqual({ x: 0.334, y: 0 });
    expect(pa.dense_pose?.body_parts).toEqual([{ part_id: 1, part_name: expect.any(String), uv_coordinates: [[0.123, 0.988]], confidence: 0.457 }]);
  });
});
