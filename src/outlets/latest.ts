import type { Subscription } from 'rxjs';
import type { PoseFrameView } from '../render/view.js';
import type { LatestReads } from '../service/face.js';
import { attachOutlet, type Outlet, type OutletStreams } from './outlet.js';

/**
 * The latest-frame cache: the newest pose frame of each environment, which `GET /pose/latest`
 * reads. A subscriber of `pose$` like any other outlet; its renderings are the frame's own, so
 * many clients polling one frame share one serialisation per query shape. Frames stay across
 * sessions (a stopped system still answers with its last frame).
 */
export class LatestOutlet implements Outlet, LatestReads {
  readonly name = 'latest';
  private readonly frames = new Map<string, PoseFrameView>();
  private sub: Subscription | undefined;

  /** @param onError receives a failure of this outlet */
  constructor(private readonly onError: (e: unknown) => void) {}

  start(streams: OutletStreams): void {
    this.sub = attachOutlet(streams.pose$, (v) => this.frames.set(v.frame.environmentId, v), this.onError);
  }

  /** The newest frame of an environment. */
  latest(environmentId: string): PoseFrameView | undefined {
    return this.frames.get(environmentId);
  }

  environments(): string[] {
    return [...this.frames.keys()];
  }

  close(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }
}
