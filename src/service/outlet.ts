import type { Observable, Subscription } from 'rxjs';

/**
 * Subscribes one outlet to one of the service's streams. A throw inside the outlet stays in it:
 * it goes to `onError` (the outlet counts and reports it) and the stream, the pipeline and the
 * other outlets go on; RxJS would otherwise rethrow it asynchronously and end the process.
 * @param stream$ a hot stream of the service
 * @param next the outlet's handler
 * @param onError receives what `next` threw
 * @returns the subscription; unsubscribing detaches the outlet alone
 * @example attachOutlet(svc.pose$, (v) => cache.set(v), (e) => log('warn', `latest: ${e}`))
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
