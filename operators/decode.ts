import { Observable, asyncScheduler, type OperatorFunction, type SchedulerLike } from 'rxjs';
import { ReplayClock, stampTime } from '../src/decoders/replayClock.js';
import type { CsiFrame } from '../src/csi/frame.js';
import type { CsiDecoder, DecodeStats } from '../src/csi/decoder.js';
import { DECODERS, type DecoderEntry } from '../src/decoders/registry.js';
import type { OperatorSpec, ParamValues } from '../src/engine/spec.js';

export interface DecodeOptions {
  /** Called once when the input ends (or fails) with the decoder's final counts. */
  onStats?: (stats: DecodeStats) => void;
  /**
   * Frames whose record carries no wall-clock time are stamped on a replay timeline that starts at
   * this epoch ms (default: the scheduler's now at subscribe) and advances by the device clock, or
   * by `nominalRateHz` where the clock cannot be used. Set to 0 to leave such frames at time 0.
   */
  startTime?: number;
  nominalRateHz?: number;
  scheduler?: SchedulerLike;
}

/**
 * Decodes a stream of byte chunks into CSI frames with an incremental decoder. Records may span
 * chunk boundaries. Frames without a recorded wall-clock time are stamped on a timeline driven by
 * the device clock (see DecodeOptions), so downstream windows see real sampling rates. Malformed records are skipped and counted by the decoder; input that ends
 * inside a record ends the stream with the decoder's DecodeError (naming the byte offset).
 *
 * @param createDecoder makes a fresh decoder per subscription, e.g. `() => new Intel5300Decoder()`
 * @param opts `onStats` receives the counts at the end
 * @returns an operator from `Uint8Array` chunks to `CsiFrame`s
 * @example
 * fileBytes('log.dat').pipe(decode(() => createStreamDecoder('intel5300')))
 */
export function decode(createDecoder: () => CsiDecoder, opts: DecodeOptions = {}): OperatorFunction<Uint8Array, CsiFrame> {
  return (source) =>
    new Observable<CsiFrame>((subscriber) => {
      const decoder = createDecoder();
      const start = opts.startTime ?? (opts.scheduler ?? asyncScheduler).now();
      const clock = new ReplayClock(opts.nominalRateHz ?? 100);
      const emit = start === 0 ? (f: CsiFrame) => subscriber.next(f) : (f: CsiFrame) => subscriber.next(stampTime(f, start + clock.advance(f)));
      let reported = false;
      const report = () => {
        if (!reported) {
          reported = true;
          opts.onStats?.({ ...decoder.stats });
        }
      };
      const sub = source.subscribe({
        next(chunk) {
          try {
            decoder.push(chunk, emit);
          } catch (e) {
            report();
            subscriber.error(e);
          }
        },
        error(e) {
          report();
          subscriber.error(e);
        },
        complete() {
          try {
            decoder.end(emit);
          } catch (e) {
            report();
            subscriber.error(e);
            return;
          }
          report();
          subscriber.complete();
        },
      });
      return () => sub.unsubscribe();
    });
}

/**
 * Registry entries for the decoder stages of pipeline strings (`file:cap.dat | intel5300 | ...`):
 * one per capture format of the table (src/decoders/registry.ts), each turning raw bytes into
 * frames with the format's stream decoder.
 * @param formats the formats (default: every one the table holds now)
 * @returns one operator spec per format, named for it
 */
export function decoderSpecs(formats: Iterable<DecoderEntry> = DECODERS.values()): OperatorSpec[] {
  return [...formats].map((format) => ({
    name: format.name,
    summary: `decode ${format.description} from raw bytes`,
    input: 'bytes' as const,
    output: 'frame' as const,
    params: [
      { name: 'source', type: 'string' as const, default: format.name, description: 'sourceId stamped into frames' },
      { name: 'env', type: 'string' as const, default: 'default', description: 'environmentId stamped into frames' },
    ],
    create: (p: ParamValues, ctx) =>
      decode(() => format.stream({ sourceId: String(p.source), environmentId: String(p.env) }), ctx.scheduler ? { scheduler: ctx.scheduler } : {}),
  }));
}
