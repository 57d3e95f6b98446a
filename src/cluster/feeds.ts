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

/**
 * The pose frames of every environment on the bus, decoded; a message that is not a pose frame is
 * logged and skipped.
 * @param bus the bus
 * @param log where bad messages are reported
 * @returns a cold observable: each subscriber subscribes to `pose.>`
 */
export function poseFeed(bus: Bus, log: Logger): Observable<PoseFrame> {
  return new Observable<PoseFrame>((out) => {
    const sub = bus.nc.subscribe('pose.>');
    void (async () => {
      for await (const m of sub) {
        let f: PoseFrame;
        try {
          f = decodePoseFrame(m.data);
        } catch (e) {
          log('warn', `${m.subject}: ${(e as Error).message}`);
          continue;
        }
        out.next(f);
      }
      out.complete();
    })();
    return () => sub.unsubscribe();
  });
}
