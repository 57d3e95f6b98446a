/**
 * What an api node follows (docs/scale.md): every environment's pose frames as the workers publish
 * them (`pose.>`), from the moment it subscribes, as a plain NATS subscription: the lowest
 * latency, and nothing for the stream to keep per follower.
 */
import { Observable } from 'rxjs';
import type { PoseFrame } from '../pose/types.js';
import type { Bus } from '../bus/bus.js';
import { decodePoseFrame } from '../bus/codec.js';
import type { Logger } from '../service/service.js';
import { StoredFrames } from './storedFrames.js';

/**
 * Frame times an api node's feed remembers per environment to drop a frame it got twice: a worker
 * sends a publish again when its acknowledgement did not come within 5 s, and the stream keeps one
 * copy (message id) but a plain subscription gets both. About 80 s of a room at 12.5 frames a second.
 */
const SEEN_KEPT = 1024;

/**
 * The pose frames of every environment on the bus, decoded; a message that is not a pose frame is
 * logged and skipped. Each frame is handed on in the NATS client's own callback, as its bytes are
 * parsed: no async iteration between the socket and the fan-out.
 * @param bus the bus
 * @param log where bad messages are reported
 * @returns a cold observable: each subscriber subscribes to `pose.>`; it completes when the
 *   subscription ends (the connection closed) and errs with what ends it otherwise
 */
export function poseFeed(bus: Bus, log: Logger): Observable<PoseFrame> {
  return new Observable<PoseFrame>((out) => {
    const seen = new StoredFrames(SEEN_KEPT, false);
    const sub = bus.nc.subscribe('pose.>', {
      callback: (err, m) => {
        // Nothing may be thrown back into the client: it would stop reading the connection.
        try {
          if (err) {
            out.error(err);
            return;
          }
          let f: PoseFrame;
          try {
            f = decodePoseFrame(m.data);
          } catch (e) {
            log('warn', `${m.subject}: ${(e as Error).message}`);
            return;
          }
          // Sent again (one room's frames have distinct times): handed on once.
          if (seen.has(f.environmentId, f.time)) return;
          seen.add(f.environmentId, f.time);
          out.next(f);
        } catch (e) {
          log('error', `pose feed: ${(e as Error)?.stack ?? String(e)}`);
        }
      },
    });
    void sub.closed.then(
      () => out.complete(),
      (e: unknown) => out.error(e),
    );
    return () => sub.unsubscribe();
  });
}
