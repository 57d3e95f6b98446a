/**
 * The reference view's pinhole camera (`environment.view`, docs/service.md "Reference view"), for
 * drawing the room's floor under the skeletons: the service's own projection
 * (`src/pose/camera.ts`, bundled in), from room metres (x across, y in depth from the receiver's
 * wall, z up) to pixels (u right, v down).
 */
import { viewCamera, type Camera } from '../../src/pose/camera.js';
import type { ViewSettings } from './types.js';

/** Projects room points to view pixels. */
export class ViewCamera {
  private readonly camera: Camera;
  private readonly px = new Float64Array(2);

  constructor(v: ViewSettings) {
    this.camera = viewCamera(v);
  }

  /**
   * @returns [u, v] pixels, or undefined when the point is not in front of the camera
   */
  project(x: number, y: number, z: number): [number, number] | undefined {
    return this.camera.project(x, y, z, this.px, 0) ? [this.px[0]!, this.px[1]!] : undefined;
  }
}
