import type { Observable, Subscription } from 'rxjs';
import type { PoseFrameView } from '../render/view.js';
import type { PoseSink } from '../store/poseSink.js';
import { attachOutlet } from './outlet.js';

/**
 * The DuckDB sink as an outlet: every pose frame of `pose$`, with its persons, events and alerts,
 * goes to the sink, which batches it into the store. The sink never throws and never blocks
 * (a bounded buffer, drops counted), so a slow or failing disk cannot stall the pipeline.
 */
export class StoreOutlet {
  private readonly sub: Subscription;

  /**
   * @param pose$ the service's pose stream
   * @param sink the pose sink of the open store
   * @param onError receives a failure of this outlet
   */
  constructor(
    pose$: Observable<PoseFrameView>,
    readonly sink: PoseSink,
    onError: (e: unknown) => void,
  ) {
    this.sub = attachOutlet(pose$, (v) => void sink.write(v.frame), onError);
  }

  /** Writes what the sink holds. */
  flush(): Promise<void> {
    return this.sink.flush();
  }

  /** Detaches from the stream (the store closes the sink itself). */
  close(): void {
    this.sub.unsubscribe();
  }
}
