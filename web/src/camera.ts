/**
 * The reference view's pinhole camera (`environment.view`, docs/service.md "Reference view"), for
 * drawing the room's floor under the skeletons: the same projection the service states, from room
 * metres (x across, y in depth from the receiver's wall, z up) to pixels (u right, v down).
 */
import type { ViewSettings } from './types.js';

const RAD = Math.PI / 180;

/** Projects room points to view pixels. */
export class ViewCamera {
  private readonly f: number;
  private readonly fwd: [number, number, number];
  private readonly right: [number, number];
  private readonly up: [number, number, number];

  constructor(private readonly v: ViewSettings) {
    // yaw_deg 0 looks along +y and positive turns towards +x: the axis is (90 - yaw) degrees from +x.
    const yaw = (90 - v.yaw_deg) * RAD;
    const pitch = v.pitch_deg * RAD;
    const cp = Math.cos(pitch);
    const sp = Math.sin(pitch);
    this.f = v.width / 2 / Math.tan((v.hfov_deg * RAD) / 2);
    this.fwd = [cp * Math.cos(yaw), cp * Math.sin(yaw), sp];
    this.right = [Math.sin(yaw), -Math.cos(yaw)];
    this.up = [-sp * Math.cos(yaw), -sp * Math.sin(yaw), cp];
  }

  /**
   * @returns [u, v] pixels, or undefined when the point is not in front of the camera
   */
  project(x: number, y: number, z: number): [number, number] | undefined {
    const px = x - this.v.x;
    const py = y - this.v.y;
    const pz = z - this.v.z;
    const d = px * this.fwd[0] + py * this.fwd[1] + pz * this.fwd[2];
    if (!(d > 0.05)) return undefined;
    const r = px * this.right[0] + py * this.right[1];
    const u = px * this.up[0] + py * this.up[1] + pz * this.up[2];
    return [this.v.width / 2 + (this.f * r) / d, this.v.height / 2 - (this.f * u) / d];
  }
}
