import { describe, expect, it } from 'vitest';
import { BBOX_PAD_FRACTION, Camera, DEFAULT_VIEW, viewCamera, viewSettings, viewSpec, type ViewSettings } from '../../src/pose/camera.js';

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
      3,
      3,
      1.2, // in front, inside
      3,
      -1,
      1.2, // behind
      3,
      0.1,
      1.6, // at the optical centre
      30,
      1,
      1.2, // in front, far outside to the right
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

describe('the reference view (environment.view) as a camera', () => {
  const px = new Float64Array(2);
  const RAD = Math.PI / 180;

  it('has the defaults DECISIONS names: 640x480, 90 degrees, centred on the receiver wall at 1.6 m, 10 degrees down', () => {
    expect(DEFAULT_VIEW).toEqual({ width: 640, height: 480, hfov_deg: 90, x: 3, y: 0.05, z: 1.6, yaw_deg: 0, pitch_deg: -10 });
    expect(Object.isFrozen(DEFAULT_VIEW)).toBe(true);
    const spec = viewSpec(DEFAULT_VIEW);
    expect(spec.position).toEqual({ x: 3, y: 0.05, z: 1.6 });
    expect(spec.yaw).toBeCloseTo(Math.PI / 2, 12);
    expect(spec.pitch).toBeCloseTo(-10 * RAD, 12);
    expect(spec.focalPx).toBeCloseTo(320, 9);
    expect([spec.width, spec.height]).toEqual([640, 480]);
  });

  it('projects a point 3 m straight ahead at camera height above the image centre by f tan(10 deg)', () => {
    const cam = viewCamera(DEFAULT_VIEW);
    expect(cam.project(3, 3.05, 1.6, px, 0)).toBe(true);
    // Looking 10 degrees down, a level ray is 10 degrees above the optical axis: v = 240 - 320 tan(10 deg) = 183.57537...
    expect(px[0]).toBeCloseTo(320, 9);
    expect(px[1]).toBeCloseTo(240 - 320 * Math.tan(10 * RAD), 9);
    expect(px[1]).toBeCloseTo(183.57537, 5);
    // And a point on the optical axis lands in the centre.
    cam.project(3, 0.05 + 2 * Math.cos(10 * RAD), 1.6 - 2 * Math.sin(10 * RAD), px, 0);
    expect(px[0]).toBeCloseTo(320, 9);
    expect(px[1]).toBeCloseTo(240, 9);
  });

  it('puts the edges of the horizontal field of view at u = 0 and u = width', () => {
    for (const v of [DEFAULT_VIEW, { ...DEFAULT_VIEW, hfov_deg: 60, width: 1280, height: 720, pitch_deg: 0 }]) {
      const cam = viewCamera(v);
      const p = v.pitch_deg * RAD;
      const half = (v.hfov_deg / 2) * RAD;
      for (const [side, u] of [
        [-1, 0],
        [1, v.width],
      ] as const) {
        // A ray hfov/2 off the optical axis in the camera's horizontal plane (its right is +x).
        const d = 2.5;
        const x = v.x + side * d * Math.tan(half);
        const y = v.y + d * Math.cos(p);
        const z = v.z + d * Math.sin(p);
        expect(cam.project(x, y, z, px, 0), `${v.hfov_deg} ${side}`).toBe(true);
        expect(px[0]).toBeCloseTo(u, 9);
        expect(px[1]).toBeCloseTo(v.height / 2, 9);
      }
    }
  });

  it('turns right (towards +x) with a positive yaw_deg, so a straight-ahead point moves left', () => {
    const level: ViewSettings = { ...DEFAULT_VIEW, pitch_deg: 0 };
    viewCamera(level).project(3, 3.05, 1.6, px, 0);
    expect(px[0]).toBeCloseTo(320, 9);
    viewCamera({ ...level, yaw_deg: 30 }).project(3, 3.05, 1.6, px, 0);
    expect(px[0]).toBeCloseTo(320 - 320 * Math.tan(30 * RAD), 9);
    expect(px[1]).toBeCloseTo(240, 9);
    viewCamera({ ...DEFAULT_VIEW, yaw_deg: 30 }).project(3, 3.05, 1.6, px, 0);
    expect(px[0]).toBeLessThan(320);
    // yaw_deg 90 looks along +x: a point 2 m further along x is straight ahead.
    viewCamera({ ...level, yaw_deg: 90 }).project(5, 0.05, 1.6, px, 0);
    expect(px[0]).toBeCloseTo(320, 9);
    // A point further into the room (+y) is then on the camera's left.
    viewCamera({ ...level, yaw_deg: 90 }).project(5, 1, 1.6, px, 0);
    expect(px[0]).toBeLessThan(320);
  });

  it('looks down with a negative pitch_deg and up with a positive one', () => {
    viewCamera({ ...DEFAULT_VIEW, pitch_deg: -30 }).project(3, 3.05, 1.6, px, 0);
    const down = px[1]!;
    viewCamera({ ...DEFAULT_VIEW, pitch_deg: 30 }).project(3, 3.05, 1.6, px, 0);
    expect(down).toBeCloseTo(240 - 320 * Math.tan(30 * RAD), 9);
    expect(px[1]).toBeCloseTo(240 + 320 * Math.tan(30 * RAD), 9);
  });

  it('round-trips through viewSettings, the inverse of viewSpec', () => {
    const views: ViewSettings[] = [
      DEFAULT_VIEW,
      { width: 1280, height: 720, hfov_deg: 70, x: -1, y: 2.5, z: 2.4, yaw_deg: -135, pitch_deg: -35 },
      { width: 320, height: 240, hfov_deg: 120, x: 8, y: 0, z: 0.5, yaw_deg: 180, pitch_deg: 20 },
    ];
    for (const v of views) {
      const back = viewSettings(viewSpec(v));
      for (const k of Object.keys(v) as Array<keyof ViewSettings>) expect(back[k], k).toBeCloseTo(v[k], 9);
    }
    // The simulator's old hand-made camera: 90 degrees, looking into the room, 0.2 rad down.
    const old = viewSettings({ position: { x: 3, y: 0.05, z: 1.6 }, yaw: Math.PI / 2, pitch: -0.2, focalPx: 320 });
    expect(old).toMatchObject({ width: 640, height: 480, x: 3, y: 0.05, z: 1.6 });
    expect(old.hfov_deg).toBeCloseTo(90, 12);
    expect(old.yaw_deg).toBeCloseTo(0, 12);
    expect(old.pitch_deg).toBeCloseTo(-11.459, 3);
  });

  it('refuses a field of view that has no pinhole camera', () => {
    for (const hfov_deg of [0, 180, -10, NaN]) expect(() => viewCamera({ ...DEFAULT_VIEW, hfov_deg }), String(hfov_deg)).toThrow(RangeError);
    expect(() => viewCamera({ ...DEFAULT_VIEW, width: 0 })).toThrow(RangeError);
  });
});

describe('Camera: derivatives and the floor under a pixel', () => {
  const cam = viewCamera({ ...DEFAULT_VIEW, yaw_deg: 20, pitch_deg: -15 });

  it('projectJacobian agrees with the projection and with finite differences', () => {
    const px = new Float64Array(2);
    const ref = new Float64Array(2);
    const jac = new Float64Array(6);
    for (const [x, y, z] of [
      [3, 3, 1],
      [1.2, 4.5, 0.1],
      [4.8, 2, 1.7],
    ] as const) {
      expect(cam.projectJacobian(x, y, z, px, jac)).toBe(true);
      cam.project(x, y, z, ref, 0);
      expect(px[0]).toBeCloseTo(ref[0]!, 9);
      expect(px[1]).toBeCloseTo(ref[1]!, 9);
      const h = 1e-6;
      const p = [x, y, z];
      for (let d = 0; d < 3; d++) {
        const a = [...p];
        const b = [...p];
        a[d] += h;
        b[d] -= h;
        const pa = new Float64Array(2);
        const pb = new Float64Array(2);
        cam.project(a[0]!, a[1]!, a[2]!, pa, 0);
        cam.project(b[0]!, b[1]!, b[2]!, pb, 0);
        expect(jac[d]).toBeCloseTo((pa[0]! - pb[0]!) / (2 * h), 3);
        expect(jac[3 + d]).toBeCloseTo((pa[1]! - pb[1]!) / (2 * h), 3);
      }
    }
    // Behind the camera: nothing.
    expect(cam.projectJacobian(3, -2, 1, px, jac)).toBe(false);
  });

  it('floorPoint inverts the projection of points on a horizontal plane', () => {
    const px = new Float64Array(2);
    for (const [x, y] of [
      [3, 3],
      [1, 5],
      [5.5, 1.5],
    ] as const) {
      cam.project(x, y, 0.08, px, 0);
      const back = cam.floorPoint(px[0]!, px[1]!, 0.08)!;
      expect(back.x).toBeCloseTo(x, 9);
      expect(back.y).toBeCloseTo(y, 9);
    }
    // A pixel above the horizon never meets the floor in front of the camera.
    expect(cam.floorPoint(320, -400, 0)).toBeNull();
  });
});
