import { describe, expect, it } from 'vitest';
import { BBOX_PAD_FRACTION, Camera } from '../../src/sim/camera.js';

describe('pinhole camera', () => {
  const cam = new Camera({ position: { x: 3, y: 0.1, z: 1.6 }, yaw: Math.PI / 2, pitch: -0.2, focalPx: 320 });
  const px = new Float64Array(2);

  it('projects points on the optical axis to the image centre', () => {
    for (const t of [0.5, 2, 7]) {
      const x = 3;
      const y = 0.1 + t * Math.cos(-0.2);
      const z = 1.6 + t * Math.sin(-0.2);
      expect(cam.project(x, y, z, px, 0)).toBe(true);
      expect(px[0]).toBeCloseTo(320, 9);
      expect(px[1]).toBeCloseTo(240, 9);
    }
    const look = Camera.lookingAt({ x: 1, y: 1, z: 2 }, { x: 4, y: 3, z: 0.5 }, 500);
    expect(look.project(4, 3, 0.5, px, 0)).toBe(true);
    expect(px[0]).toBeCloseTo(320, 9);
    expect(px[1]).toBeCloseTo(240, 9);
  });

  it('maps right to +u and up to -v with the focal length as scale', () => {
    const level = new Camera({ position: { x: 0, y: 0, z: 0 }, yaw: Math.PI / 2, pitch: 0, focalPx: 320 });
    level.project(1, 2, 0, px, 0);
    expect(px[0]).toBeCloseTo(480, 9);
    expect(px[1]).toBeCloseTo(240, 9);
    level.project(0, 2, 0.5, px, 0);
    expect(px[0]).toBeCloseTo(320, 9);
    expect(px[1]).toBeCloseTo(160, 9);
    // Looking along +x instead, right is -y.
    const east = new Camera({ position: { x: 0, y: 0, z: 0 }, yaw: 0, pitch: 0, focalPx: 100, width: 200, height: 100 });
    east.project(2, -1, 0, px, 0);
    expect(px[0]).toBeCloseTo(150, 9);
    expect(px[1]).toBeCloseTo(50, 9);
  });

  it('marks points behind the camera and outside the image invisible', () => {
    const kp = new Float32Array([
      3, 3, 1.2, // in front, inside
      3, -1, 1.2, // behind
      3, 0.1, 1.6, // at the optical centre
      30, 1, 1.2, // in front, far outside to the right
    ]);
    const out = new Float32Array(8);
    const vis = new Uint8Array(4);
    expect(cam.projectKeypoints(kp, out, vis)).toBe(1);
    expect(Array.from(vis)).toEqual([1, 0, 0, 0]);
    expect(Number.isNaN(out[2]!)).toBe(true);
    expect(Number.isNaN(out[3]!)).toBe(true);
    expect(cam.project(3, -1, 1.2, px, 0)).toBe(false);
    expect(out[6]!).toBeGreaterThan(640);
  });

  it('boxes the visible keypoints with the documented padding, clipped to the image', () => {
    const pts = new Float32Array([100, 200, 300, 240, 200, 400, 630, 5]);
    const vis = new Uint8Array([1, 1, 1, 0]);
    const [x, y, w, h] = cam.bbox(pts, vis);
    const padX = BBOX_PAD_FRACTION * 200;
    const padY = BBOX_PAD_FRACTION * 200;
    expect(x).toBeCloseTo(100 - padX, 5);
    expect(y).toBeCloseTo(200 - padY, 5);
    expect(w).toBeCloseTo(200 + 2 * padX, 5);
    expect(h).toBeCloseTo(200 + 2 * padY, 5);
    expect(cam.bbox(new Float32Array([5, 470, 600, 479]), new Uint8Array([1, 1]))).toEqual([0, 470 - 4, 640, 480 - 466]);
    expect(cam.bbox(pts, new Uint8Array(4))).toEqual([0, 0, 0, 0]);
  });
});
