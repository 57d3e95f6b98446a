/**
 * The service's DuckDB outlet (src/outlets/store.ts) on a pose stream the test drives: the real
 * StoreOutlet and PoseSink writing into a real store, fed through a hot `pose$` of frame views as
 * the service feeds it. The outlet is started on streams of the test's own (`pose$` driven,
 * the other streams silent, reports kept in a map); `flushSinks()` is the service's stop step
 * `flush_sinks`, which the application points at the outlet's `flush`.
 *
 * @example
 * const out = storeOutlet(store);
 * out.push(frame);
 * await out.flushSinks();
 * out.close();
 */
import { NEVER, Subject } from 'rxjs';
import { StoreOutlet } from '../../src/outlets/store.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { PoseFrameView } from '../../src/render/view.js';
import type { ComponentReport, ServiceSnapshot } from '../../src/service/face.js';
import type { OutletStreams } from '../../src/outlets/outlet.js';
import { PoseSink, type PoseSinkOptions } from '../../src/store/poseSink.js';
import type { Store } from '../../src/store/store.js';

export interface DrivenStoreOutlet {
  outlet: StoreOutlet;
  sink: PoseSink;
  /** What the outlet passed to its `onError` (a throw in its handler). */
  outletErrors: unknown[];
  /** Emits a frame on `pose$`, as the live pipeline does. */
  push(frame: PoseFrame): void;
  /** Flushes the outlet, as the service's stop step does. */
  flushSinks(): Promise<void>;
  /** A component's report as snapshots show it (default the outlet's `store_sink`). */
  report(name?: string): ComponentReport | undefined;
  /** Detaches the outlet (the store still closes the sink itself). */
  close(): void;
}

/**
 * @param store an open store
 * @param options the sink's options
 * @returns the outlet, its sink and the handles that drive it
 */
export function storeOutlet(store: Store, options: PoseSinkOptions = {}): DrivenStoreOutlet {
  const pose$ = new Subject<PoseFrameView>();
  const reports = new Map<string, () => ComponentReport>();
  const streams: OutletStreams = {
    pose$: pose$.asObservable(),
    alerts$: NEVER,
    events$: NEVER,
    status$: NEVER,
    snapshot(): ServiceSnapshot {
      throw new Error('the store outlet takes no snapshot');
    },
    report(name, fn) {
      reports.set(name, fn);
      return () => {
        if (reports.get(name) === fn) reports.delete(name);
      };
    },
  };
  const outletErrors: unknown[] = [];
  const outlet = new StoreOutlet(new PoseSink(store, options), (e) => void outletErrors.push(e));
  outlet.start(streams);
  return {
    outlet,
    sink: outlet.sink,
    outletErrors,
    push: (frame) => pose$.next(new PoseFrameView(frame, 1, 'live')),
    flushSinks: () => outlet.flush(),
    report: (name = 'store_sink') => reports.get(name)?.(),
    close: () => outlet.close(),
  };
}
