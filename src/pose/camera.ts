/**
 * The reference view: a pinhole camera from room coordinates to pixels. Keypoints and boxes of
 * pose estimates are pixels of this image, and the simulator's ground truth is projected through
 * the same camera (DECISIONS "Reference view").
 *
 * Room coordinates are metres in the frame of `environment.site` and the zones: x across the room
 * from its left wall as seen from the receiver's (front) wall, y in depth away from that wall, z up
 * from the floor. Pixels: u right, v down, origin at the top-left corner of the image (640x480 by
 * default).
 *
 * The camera has no lens distortion and square pixels. `CameraSpec` places it by a position, a yaw
 * (direction of the optical axis in the floor plane, radians from +x towards +y) and a pitch
 * (radians, positive looking up); there is no roll, so the image's horizon stays level.
 *
 * The configuration says the same in degrees as seen from the receiver's wall, `ViewSettings`
 * (`environment.view`): `yaw_deg` 0 looks straight into the room (+y) and positive turns the
 * camera towards +x (the view's right); `pitch_deg` negative looks down; `hfov_deg` is the
 * horizontal field of view. `viewCamera` turns those settings into a camera.
 */

/** A point or direction in room coordinates, metres. */
export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

export interface CameraSpec {
  /** Optical centre in the room, metres. */
  position: Vec3;
  /** Direction of the optical axis in the floor plane, radians from +x towards +y. */
  yaw: number;
  /** Elevation of the optical axis, radians; negative looks down. */
  pitch: number;
  /** Focal length in pixels (fx = fy). 320 px on a 640 px wide image is a 90 degree field of view. */
  focalPx: number;
  /** Image width in pixels; default 640. */
  width?: number;
  /** Image height in pixels; default 480. */
  height?: number;
}

/**
 * Margin added on every side of the box around the visible keypoints, as a fraction of the box's
 * own width (left/right) and height (top/bottom). Keypoints are joint centres: the body extends
 * past them (the crown of the head is ~0.07 H above the eyes, the soles and the hands past ankles
 * and wrists), and COCO person boxes enclose the whole body, so the joint box is grown by 10 % of
 * its size, at least BBOX_MIN_PAD_PX pixels, then clipped to the image.
 */
export const BBOX_PAD_FRACTION = 0.1;
/** Smallest padding in pixels, so that a far-away person's box still has some margin. */
export const BBOX_MIN_PAD_PX = 4;

/** Closest depth (metres along the optical axis) at which a point still counts as in front. */
const NEAR_M = 0.01;

/**
 * A pinhole camera with a fixed pose.
 *
 * @example
 * const cam = Camera.lookingAt({ x: 3, y: 0.1, z: 1.6 }, { x: 3, y: 3, z: 1 }, 320);
 * const px = new Float64Array(2);
 * cam.project(3, 3, 1, px, 0); // -> true, px = [320, 240]
 */
export class Camera {
  readonly width: number;
  readonly height: number;
  readonly focalPx: number;
  readonly cx: number;
  readonly cy: number;
  readonly position: Readonly<Vec3>;
  /** Unit vectors of the camera frame in room coordinates: forward (optical axis), right, up. */
  private readonly fx: number;
  private readonly fy: number;
  private readonly fz: number;
  private readonly rx: number;
  private readonly ry: number;
  private readonly ux: number;
  private readonly uy: number;
  private readonly uz: number;

  /**
   * @param spec position, yaw, pitch, focal length and image size
   */
  constructor(spec: CameraSpec) {
    this.width = spec.width ?? 640;
    this.height = spec.height ?? 480;
    if (!(this.width > 0 && this.height > 0)) throw new RangeError('camera: width and height must be positive');
    if (!(spec.focalPx > 0)) throw new RangeError('camera: focalPx must be positive');
    this.focalPx = spec.focalPx;
    this.cx = this.width / 2;
    this.cy = this.height / 2;
    this.position = { ...spec.position };
    const cp = Math.cos(spec.pitch);
    const sp = Math.sin(spec.pitch);
    const cyaw = Math.cos(spec.yaw);
    const syaw = Math.sin(spec.yaw);
    this.fx = cp * cyaw;
    this.fy = cp * syaw;
    this.fz = sp;
    // Right is the forward direction turned -90 degrees in the floor plane: level, so no roll.
    this.rx = syaw;
    this.ry = -cyaw;
    // up = right x forward
    this.ux = -sp * cyaw;
    this.uy = -sp * syaw;
    this.uz = cp;
  }

  /**
   * A camera at `position` whose optical axis passes through `target`.
   * @param position optical centre, metres
   * @param target a point the camera looks at (must differ from position)
   * @param focalPx focal length in pixels
   * @param width image width (default 640)
   * @param height image height (default 480)
   * @returns the camera
   */
  static lookingAt(position: Vec3, target: Vec3, focalPx: number, width = 640, height = 480): Camera {
    const dx = target.x - position.x;
    const dy = target.y - position.y;
    const dz = target.z - position.z;
    const h = Math.hypot(dx, dy);
    if (h === 0 && dz === 0) throw new RangeError('camera: target equals position');
    return new Camera({ position, yaw: Math.atan2(dy, dx), pitch: Math.atan2(dz, h), focalPx, width, height });
  }

  /**
   * Depth of a point along the optical axis.
   * @param x room x, metres
   * @param y room y, metres
   * @param z room z, metres
   * @returns metres in front of the camera (negative behind)
   */
  depth(x: number, y: number, z: number): number {
    const px = x - this.position.x;
    const py = y - this.position.y;
    const pz = z - this.position.z;
    return px * this.fx + py * this.fy + pz * this.fz;
  }

  /**
   * Projects one room point to pixels.
   * @param x room x, metres
   * @param y room y, metres
   * @param z room z, metres
   * @param offset index of u in `out`
   * @param out receives u at out[offset] and v at out[offset + 1]; NaN, NaN when the point is not
   *   in front of the camera (no meaningful projection exists)
   * @returns true when the point is in front of the camera (it may still fall outside the image)
   */
  project(x: number, y: number, z: number, out: Float32Array | Float64Array, offset: number): boolean {
    const px = x - this.position.x;
    const py = y - this.position.y;
    const pz = z - this.position.z;
    const d = px * this.fx + py * this.fy + pz * this.fz;
    if (!(d > NEAR_M)) {
      out[offset] = NaN;
      out[offset + 1] = NaN;
      return false;
    }
    const r = px * this.rx + py * this.ry;
    const u = px * this.ux + py * this.uy + pz * this.uz;
    out[offset] = this.cx + (this.focalPx * r) / d;
    out[offset + 1] = this.cy - (this.focalPx * u) / d;
    return true;
  }

  /**
   * Projects keypoints and marks which are visible: in front of the camera and inside the image
   * (0 <= u < width, 0 <= v < height). Occlusion (by other people or the body itself) is not
   * modelled: a visible keypoint is one the camera's field of view contains.
   * @param kp3d n*3 room coordinates (x, y, z) in metres
   * @param outPx n*2 pixels (u, v); NaN for points behind the camera
   * @param visible n flags, 1 = visible
   * @returns the number of visible keypoints
   */
  projectKeypoints(kp3d: Float32Array | Float64Array, outPx: Float32Array | Float64Array, visible: Uint8Array): number {
    const n = visible.length;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const front = this.project(kp3d[3 * i]!, kp3d[3 * i + 1]!, kp3d[3 * i + 2]!, outPx, 2 * i);
      const u = outPx[2 * i]!;
      const v = outPx[2 * i + 1]!;
      const vis = front && u >= 0 && u < this.width && v >= 0 && v < this.height;
      visible[i] = vis ? 1 : 0;
      if (vis) count++;
    }
    return count;
  }

  /**
   * Bounding box of the visible keypoints, padded by BBOX_PAD_FRACTION of its size (at least
   * BBOX_MIN_PAD_PX) on every side and clipped to the image.
   * @param px n*2 pixels from projectKeypoints
   * @param visible n visibility flags
   * @returns [x, y, w, h] in pixels, at least BBOX_MIN_PAD_PX on a side; [0, 0, 0, 0] when no
   *   keypoint is visible (the person is out of the view: its renderings have no box and
   *   `in_view: false`, src/render/frame.ts `inView`)
   */
  bbox(px: Float32Array | Float64Array, visible: Uint8Array): [number, number, number, number] {
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (let i = 0; i < visible.length; i++) {
      if (!visible[i]) continue;
      const u = px[2 * i]!;
      const v = px[2 * i + 1]!;
      if (u < x0) x0 = u;
      if (u > x1) x1 = u;
      if (v < y0) y0 = v;
      if (v > y1) y1 = v;
    }
    if (x0 === Infinity) return [0, 0, 0, 0];
    const padX = Math.max(BBOX_MIN_PAD_PX, BBOX_PAD_FRACTION * (x1 - x0));
    const padY = Math.max(BBOX_MIN_PAD_PX, BBOX_PAD_FRACTION * (y1 - y0));
    x0 = Math.max(0, x0 - padX);
    y0 = Math.max(0, y0 - padY);
    x1 = Math.min(this.width, x1 + padX);
    y1 = Math.min(this.height, y1 + padY);
    return [x0, y0, x1 - x0, y1 - y0];
  }

  /**
   * Projects one room point and gives the derivatives of its pixel with respect to the point
   * (what fitting 3-D points to 2-D labels needs).
   * @param x room x, metres
   * @param y room y, metres
   * @param z room z, metres
   * @param out receives u, v at out[0], out[1]
   * @param jac receives du/dx, du/dy, du/dz, dv/dx, dv/dy, dv/dz
   * @returns false (out and jac untouched) when the point is not in front of the camera
   */
  projectJacobian(x: number, y: number, z: number, out: Float32Array | Float64Array, jac: Float32Array | Float64Array): boolean {
    const px = x - this.position.x;
    const py = y - this.position.y;
    const pz = z - this.position.z;
    const d = px * this.fx + py * this.fy + pz * this.fz;
    if (!(d > NEAR_M)) return false;
    const r = px * this.rx + py * this.ry;
    const u = px * this.ux + py * this.uy + pz * this.uz;
    const f = this.focalPx;
    out[0] = this.cx + (f * r) / d;
    out[1] = this.cy - (f * u) / d;
    // u = cx + f r / d: du/dP = f (right / d - r forward / d^2); v = cy - f u / d likewise with up.
    const a = f / d;
    const b = (f * r) / (d * d);
    const c = (f * u) / (d * d);
    jac[0] = a * this.rx - b * this.fx;
    jac[1] = a * this.ry - b * this.fy;
    jac[2] = -b * this.fz;
    jac[3] = -(a * this.ux - c * this.fx);
    jac[4] = -(a * this.uy - c * this.fy);
    jac[5] = -(a * this.uz - c * this.fz);
    return true;
  }

  /**
   * Where the ray through a pixel meets the horizontal plane at height `z` (e.g. the floor under a
   * person's ankles).
   * @param u pixel column
   * @param v pixel row
   * @param z height of the plane, metres
   * @returns room x, y, or null when the ray does not reach the plane in front of the camera
   */
  floorPoint(u: number, v: number, z: number): { x: number; y: number } | null {
    const a = (u - this.cx) / this.focalPx;
    const b = -(v - this.cy) / this.focalPx;
    // Ray direction: forward + a right + b up.
    const dx = this.fx + a * this.rx + b * this.ux;
    const dy = this.fy + a * this.ry + b * this.uy;
    const dz = this.fz + b * this.uz;
    if (!(Math.abs(dz) > 1e-9)) return null;
    const s = (z - this.position.z) / dz;
    if (!(s > 0)) return null;
    return { x: this.position.x + s * dx, y: this.position.y + s * dy };
  }
}

/**
 * The reference view as configured (`environment.view`): image size, horizontal field of view and
 * the camera's place in the room, in degrees as seen from the receiver's wall (module comment).
 */
export interface ViewSettings {
  /** Image width, pixels. */
  width: number;
  /** Image height, pixels. */
  height: number;
  /** Horizontal field of view, degrees (0 < hfov_deg < 180). */
  hfov_deg: number;
  /** Optical centre across the room, metres. */
  x: number;
  /** Optical centre in depth from the receiver's wall, metres. */
  y: number;
  /** Optical centre above the floor, metres. */
  z: number;
  /** 0 = straight into the room (+y); positive turns towards +x (the view's right), degrees. */
  yaw_deg: number;
  /** Elevation of the optical axis, degrees; negative looks down. */
  pitch_deg: number;
}

/**
 * The default reference view, the schema's defaults of `environment.view` (src/config/schema.ts
 * takes them from here): 640x480 with a 90 degree horizontal field of view, centred on the
 * receiver's wall of the default 6 m wide room (x = 3; the simulator centres it on its own room's
 * width), 0.05 m in front of it at 1.6 m, looking into the room, pitched 10 degrees down.
 */
export const DEFAULT_VIEW: Readonly<ViewSettings> = Object.freeze({
  width: 640,
  height: 480,
  hfov_deg: 90,
  x: 3,
  y: 0.05,
  z: 1.6,
  yaw_deg: 0,
  pitch_deg: -10,
});

const RAD = Math.PI / 180;

/**
 * The camera pose and intrinsics of a configured view.
 * @param v the view (`environment.view`)
 * @returns the spec: yaw = 90 deg - yaw_deg and pitch = pitch_deg in radians, focalPx =
 *   (width / 2) / tan(hfov_deg / 2)
 * @throws RangeError when hfov_deg is not in (0, 180)
 * @example
 * viewSpec(DEFAULT_VIEW) // { position: { x: 3, y: 0.05, z: 1.6 }, yaw: pi / 2, pitch: -0.1745..., focalPx: 320, width: 640, height: 480 }
 */
export function viewSpec(v: Readonly<ViewSettings>): CameraSpec {
  if (!(v.hfov_deg > 0 && v.hfov_deg < 180)) throw new RangeError(`camera: hfov_deg must be between 0 and 180, got ${v.hfov_deg}`);
  return {
    position: { x: v.x, y: v.y, z: v.z },
    yaw: (90 - v.yaw_deg) * RAD,
    pitch: v.pitch_deg * RAD,
    focalPx: v.width / 2 / Math.tan((v.hfov_deg * RAD) / 2),
    width: v.width,
    height: v.height,
  };
}

/**
 * The camera of a configured view.
 * @param v the view (`environment.view`)
 * @returns the camera
 * @throws RangeError for a field of view outside (0, 180) degrees or a non-positive image size
 * @example
 * const cam = viewCamera(DEFAULT_VIEW);
 * cam.project(3, 3.05, 1.6, px, 0); // 3 m straight ahead at camera height: px = [320, 240 - 320 tan(10 deg)]
 */
export function viewCamera(v: Readonly<ViewSettings>): Camera {
  return new Camera(viewSpec(v));
}

/**
 * The view settings of a camera spec, the inverse of `viewSpec` (for tests and tools that hold
 * cameras as specs).
 * @param spec a camera spec
 * @returns the settings; yaw_deg wrapped into (-180, 180]
 */
export function viewSettings(spec: CameraSpec): ViewSettings {
  const width = spec.width ?? 640;
  let yaw = 90 - spec.yaw / RAD;
  yaw -= 360 * Math.ceil((yaw - 180) / 360);
  return {
    width,
    height: spec.height ?? 480,
    hfov_deg: (2 * Math.atan(width / 2 / spec.focalPx)) / RAD,
    x: spec.position.x,
    y: spec.position.y,
    z: spec.position.z,
    yaw_deg: yaw,
    pitch_deg: spec.pitch / RAD,
  };
}
