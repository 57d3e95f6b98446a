import type { Subscription } from 'rxjs';
import type { ServiceFace } from '../service/face.js';
import type { PoseSink } from '../store/poseSink.js';
import { attachOutlet } from '../service/outlet.js';

/**
 * The DuckDB sink as an outlet: every pose frame of `pose$`, with its persons, events and alerts,
 * goes to the sink, which batches it into the store. The sink never throws and never blocks
 * (a bounded buffer, drops counted), so a slow or failing disk cannot stall the pipeline.
 */
export class StoreOutlet {
  private readonly sub: Subscription;
  private readonly detach: Array<() => void>;

  /**
   * @param svc the service: its pose stream, the stop step that flushes, the health report
   * @param sink the pose sink of the service's store
   * @param onError receives a failure of this outlet
   */
  constructor(
    svc: ServiceFace,
    readonly sink: PoseSink,
    onError: (e: unknown) => void,
  ) {
    this.sub = attachOutlet(svc.pose$, (v) => void sink.write(v.frame), onError);
    this.detach = [
      svc.flushOnStop(() => sink.flush()),
      svc.report('store_sink', () => {
        const st = sink.stats;
        return { status: st.failedFlushes > 0 && st.pending > 0 ? 'retrying' : 'healthy', ...st };
      }),
    ];
  }

  /** Detaches from the stream (the store closes the sink itself, writing what it holds). */
  close(): void {
    this.sub.unsubscribe();
    for (const d of this.detach) d();
  }
}
