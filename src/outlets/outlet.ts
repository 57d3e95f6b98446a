import type { Observable, Subscription } from 'rxjs';
import type { ComponentReports, ServiceReads, ServiceStreams } from '../service/face.js';

/**
 * What an outlet gets when it starts: the service's hot streams, the snapshot (for an outlet
 * that samples it) and the slot for its health report (`/health/detailed`, `/metrics`).
 */
export interface OutletStreams extends ServiceStreams, ComponentReports, Pick<ServiceReads, 'snapshot'> {}

/**
 * A consumer of the service's streams (one per file in src/outlets). The constructor only holds
 * what the outlet is given; `start` subscribes (and registers its report), `close` detaches.
 * src/app.ts keeps the list: outlets start in its order and close in reverse, so the order of
 * the list is the shutdown order.
 *
 * @example
 * class Counter implements Outlet {
 *   readonly name = 'counter';
 *   private sub: Subscription | undefined;
 *   n = 0;
 *   start(s: OutletStreams) { this.sub = attachOutlet(s.pose$, () => void this.n++, (e) => log('error', `counter: ${e}`)); }
 *   close() { this.sub?.unsubscribe(); }
 * }
 */
export interface Outlet {
  /** For logs: a failure to close names it. */
  readonly name: string;
  /** Subscribes to the streams. A rejection stops the application's start (started outlets are closed). */
  start(streams: OutletStreams): void | Promise<void>;
  /**
   * Writes what the outlet holds. The application adds it to the service's stop step
   * `flush_sinks` (every system stop and the shutdown) and calls it once more before `close`.
   */
  flush?(): Promise<void>;
  /** Detaches from the streams and lets go of what the outlet holds. Called once, even if `start` was not. */
  close(): void | Promise<void>;
}

/**
 * Subscribes one outlet to one of the service's streams. A throw inside the outlet stays in it:
 * it goes to `onError` (the outlet counts and reports it) and the stream, the pipeline and the
 * other outlets go on; RxJS would otherwise rethrow it asynchronously and end the process.
 * @param stream$ a hot stream of the service
 * @param next the outlet's handler
 * @param onError receives what `next` threw
 * @returns the subscription; unsubscribing detaches the outlet alone
 * @example attachOutlet(streams.pose$, (v) => cache.set(v), (e) => log('warn', `latest: ${e}`))
 */
export function attachOutlet<T>(stream$: Observable<T>, next: (v: T) => void, onError: (e: unknown) => void): Subscription {
  return stream$.subscribe({
    next(v) {
      try {
        next(v);
      } catch (e) {
        try {
          onError(e);
        } catch {
          // A failing error handler must not escape either.
        }
      }
    },
  });
}
