import type { Subscription } from 'rxjs';
import type { PoseSink } from '../store/poseSink.js';
import { attachOutlet, type Outlet, type OutletStreams } from './outlet.js';

/**
 * The DuckDB sink as an outlet: every pose frame of `pose$`, with its persons, events and alerts,
 * goes to the sink, which batches it into the store. The sink never throws and never blocks
 * (a bounded buffer, drops counted), so a slow or failing disk cannot stall the pipeline.
 * `flush` is the sink's: the application adds it to the service's stop step `flush_sinks`.
 */
export class StoreOutlet implements Outlet {
  readonly name = 'store';
  private sub: Subscription | undefined;
  private unreport: (() => void) | undefined;

  /**
   * @param sink the pose sink of the service's store
   * @param onError receives a failure of this outlet
   */
  constructor(
    readonly sink: PoseSink,
    private readonly onError: (e: unknown) => void,
  ) {}

  start(streams: OutletStreams): void {
    this.sub = attachOutlet(streams.pose$, (v) => void this.sink.write(v.frame), this.onError);
    this.unreport = streams.report('store_sink', () => {
      const st = this.sink.stats;
      return { status: st.failedFlushes > 0 && st.pending > 0 ? 'retrying' : 'healthy', ...st };
    });
  }

  /** Writes what the sink buffers (never rejects). */
  flush(): Promise<void> {
    return this.sink.flush();
  }

  /** Detaches from the stream (the store closes the sink itself, writing what it holds). */
  close(): void {
    this.sub?.unsubscribe();
    this.unreport?.();
    this.sub = this.unreport = undefined;
  }
}
