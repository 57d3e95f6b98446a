/**
 * What an api node follows (docs/scale.md): every environment's pose frames as the workers publish
 * them (`pose.>`), from the moment it subscribes, as a plain NATS subscription: the lowest
 * latency, and nothing for the stream to keep per follower.
 */
import { Observable } from 'rxjs';
import type { PoseFrame } from '../pose/types.js';
import { AckPolicy, DeliverPolicy, type JsMsg } from 'nats';
import { bucketKey, POSE_STREAM, type Bus } from '../bus/bus.js';
import { decodePoseFrame } from '../bus/codec.js';
import type { Logger } from '../service/service.js';
import type { StoredFrames } from './storedFrames.js';

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

/** Frames a store node takes from the stream per batch, written and flushed before they are acknowledged. */
const STORE_BATCH = 500;
/** How long the stream waits for a store node's acknowledgement before it delivers a batch again. */
const STORE_ACK_WAIT_MS = 10_000;
/** How long a store node waits before it reads again after a read of the stream failed. */
const FETCH_RETRY_MS = 500;
/** How long a store node waits between tries while its sink cannot write (a full or failing disk). */
const FLUSH_RETRY_MS = 1000;

/** What a store node's feed needs of its sink. */
export interface FlushingSink {
  /** Writes what the sink buffers. */
  flush(): Promise<void>;
  /** Rows buffered, not yet written. */
  pending(): number;
}

/**
 * What a store node writes (docs/scale.md): every environment's pose frames, alerts and events
 * included, from a durable consumer of the pose stream named after the node, so that a restart
 * goes on where it stopped. A batch is acknowledged only once the sink has written it; while the
 * sink cannot write, consumption waits (the stream keeps the frames). A frame the store already
 * wrote (`stored`, read from the store at start and kept up as frames go to the sink) is a
 * redelivery of something written but not acknowledged, and is skipped; one delivered late, after
 * newer ones, is still written.
 * @param bus the bus
 * @param node the store node's name (its consumer is `csipose-store-<name>`)
 * @param sink the flush of the sink the frames go to (through the service's pose stream)
 * @param stored the frames written lately, per environment
 * @param log where bad messages and waits are reported
 * @returns a cold observable: each subscriber consumes the durable consumer
 */
export function durablePoseFeed(bus: Bus, node: string, sink: FlushingSink, stored: StoredFrames, log: Logger): Observable<PoseFrame> {
  return new Observable<PoseFrame>((out) => {
    let stopped = false;
    void (async () => {
      try {
        const durable = `csipose-store-${bucketKey(node)}`;
        // Resumed from the first frame not acknowledged, in order: what a node that died took but
        // never acknowledged comes first, before anything newer (a consumer left as it was would
        // deliver newer frames first and those only after ack_wait, and the skip would drop them).
        let from = 1;
        try {
          const info = await bus.jsm.consumers.info(POSE_STREAM, durable);
          from = info.ack_floor.stream_seq + 1;
          await bus.jsm.consumers.delete(POSE_STREAM, durable);
        } catch {
          // A new store node: from the start of the stream.
        }
        await bus.jsm.consumers.add(POSE_STREAM, {
          durable_name: durable,
          ack_policy: AckPolicy.Explicit,
          filter_subject: 'pose.>',
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: from,
          ack_wait: STORE_ACK_WAIT_MS * 1e6,
        });
        const consumer = await bus.js.consumers.get(POSE_STREAM, durable);
        while (!stopped) {
          const taken: JsMsg[] = [];
          try {
            const batch = await consumer.fetch({ max_messages: STORE_BATCH, expires: 1000 });
            for await (const m of batch) {
              taken.push(m);
              let f: PoseFrame;
              try {
                f = decodePoseFrame(m.data);
              } catch (e) {
                log('warn', `${m.subject} seq ${m.seq}: ${(e as Error).message}`);
                continue;
              }
              if (stored.has(f.environmentId, f.time)) continue;
              stored.add(f.environmentId, f.time);
              out.next(f);
            }
          } catch (e) {
            // A NATS node lost, the consumer's leader being elected again: what was taken is still
            // written and acknowledged below; what was not comes again.
            if (stopped) break;
            log('warn', `store: reading the pose stream: ${(e as Error).message}; trying again`);
            await new Promise((ok) => setTimeout(ok, FETCH_RETRY_MS));
          }
          // Stopped meanwhile: what was taken may not have reached the sink; left unacknowledged,
          // it comes again at the next start.
          if (stopped) break;
          if (taken.length === 0) continue;
          for (;;) {
            await sink.flush();
            if (sink.pending() === 0) break;
            log('warn', `store: ${sink.pending()} row(s) not written yet; the stream keeps the frames, retrying`);
            // Still working on them: the stream must not deliver them again meanwhile.
            for (const m of taken) m.working();
            await new Promise((ok) => setTimeout(ok, FLUSH_RETRY_MS));
          }
          for (const m of taken) m.ack();
        }
      } catch (e) {
        if (!stopped) out.error(e);
      }
    })();
    return () => {
      stopped = true;
    };
  });
}
