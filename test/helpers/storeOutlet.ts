/**
 * The service's DuckDB outlet (src/outlets/store.ts) on a pose stream the test drives: the real
 * StoreOutlet and PoseSink writing into a real store, fed through a hot `pose$` of frame views as
 * the service feeds it. The face carries only what the outlet reads (`pose$`, `flushOnStop`,
 * `report`); `flushSinks()` is the service's stop step `flush_sinks`.
 *
 * @example
 * const out = storeOutlet(store);
 * out.push(frame);
 * await out.flushSinks();
 * out.close();
 */
import { Subject } from 'rxjs';
import { StoreOutlet } from '../../src/outlets/store.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { PoseFrameView } from '../../src/render/view.js';
import type { ComponentReport, ServiceFace } from '../../src/service/face.js';
import { PoseSink, type PoseSinkOptions } from '../../src/store/poseSink.js';
import type { Store } from '../../src/store/store.js';

export interface DrivenStoreOutlet {
  outlet: StoreOutlet;
  sink: PoseSink;
  /** What the outlet passed to its `onError` (a throw in its handler). */
  outletErrors: unknown[];
  /** Emits a frame on `pose$`, as the live pipeline does. */
  push(frame: PoseFrame): void;
  /** Runs every flush registered with `flushOnStop`, as the service's stop step does. */
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
  const flushers = new Set<() => Promise<void>>();
  const reports = new Map<string, () => ComponentReport>();
  const face: Pick<ServiceFace, 'pose$' | 'flushOnStop' | 'report'> = {
    pose$: pose$.asObservable(),
    flushOnStop(flush) {
      flushers.add(flush);
      return () => flushers.delete(flush);
    },
    report(name, fn) {
      reports.set(name, fn);
      return () => {
        if (reports.get(name) === fn) reports.delete(name);
      };
    },
  };
  const outletErrors: unknown[] = [];
  const outlet = new StoreOutlet(face as ServiceFace, new PoseSink(store, options), (e) => void outletErrors.push(e));
  return {
    outlet,
    sink: outlet.sink,
    outletErrors,
    push: (frame) => pose$.next(new PoseFrameView(frame, 1, 'live')),
    flushSinks: async () => void (await Promise.all([...flushers].map((f) => f()))),
    report: (name = 'store_sink') => reports.get(name)?.(),
    close: () => outlet.close(),
  };
}
