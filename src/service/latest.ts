import type { Observable, Subscription } from 'rxjs';
import type { PoseFrameView } from '../render/view.js';
import { attachOutlet } from './outlet.js';

/**
 * The latest-frame cache: the newest pose frame of each environment, which `GET /pose/latest`
 * reads. A subscriber of `pose$` like any other outlet; its renderings are the frame's own, so
 * many clients polling one frame share one serialisation per query shape.
 */
export class LatestFrames {
  private readonly frames = new Map<string, PoseFrameView>();
  private readonly sub: Subscription;

  /**
   * @param pose$ the service's pose stream
   * @param onError receives a failure of this outlet
   */
  constructor(pose$: Observable<PoseFrameView>, onError: (e: unknown) => void) {
    this.sub = attachOutlet(pose$, (v) => this.frames.set(v.frame.environmentId, v), onError);
  }

  /** The newest frame of an environment. */
  get(environmentId: string): PoseFrameView | undefined {
    return this.frames.get(environmentId);
  }

  /** Every frame held, one per environment. */
  all(): PoseFrameView[] {
    return [...this.frames.values()];
  }

  environments(): string[] {
    return [...this.frames.keys()];
  }

  close(): void {
    this.sub.unsubscribe();
  }
}
