/**
 * Hampel outlier filter over time, per stream: each (subcarrier, rx, tx) element is compared with
 * the median of its own values in a centred window of frames, and replaced by that median when it
 * lies more than nSigma robust standard deviations (1.4826 * MAD) away from it.
 */
import { Observable, type OperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { HAMPEL_ON, HampelFilter, type HampelOn } from '../src/csi/hampelFilter.js';
import type { OperatorContext, OperatorSpec, ParamValues } from '../src/engine/spec.js';
import { ParamError } from '../src/engine/params.js';

// The option vocabulary is the filter's; it stays importable here, beside the options it types.
export { HAMPEL_ON, type HampelOn };

export interface HampelOptions {
  /** Total window length in frames, odd, 3..31; default 7. */
  window?: number;
  /** Threshold in robust standard deviations; default 3. */
  nSigma?: number;
  /**
   * `amplitude` (default): filter |H|; an outlier is rescaled to the median amplitude and keeps
   * its phase. `components`: filter re and im as two independent series.
   */
  on?: HampelOn;
}

/**
 * Hampel filter over a centred window of `window` frames, per stream.
 *
 * The output is delayed by (window - 1) / 2 frames: a frame is emitted once the frames after it
 * are in. The first frames of a stream, and the last ones (flushed on complete), use the
 * neighbours that exist (a one-sided, shorter window); so does the end of a run of frames of one
 * shape when the shape (nRx, nTx, nSub or the subcarrier list) changes, since streams of
 * different shapes cannot be compared. A window of an even number of values takes the mean of the
 * two middle values as its median. A MAD of zero flags any value that differs from the median
 * (the usual definition). Non-finite values count as +Infinity and so as outliers. An error from
 * the source is passed on at once; frames still waiting for their future half are dropped.
 *
 * @param options window (odd, 3..31, default 7), nSigma (default 3), on (`amplitude` | `components`).
 * @returns An operator emitting every input frame once, in order, with outliers replaced.
 * @throws RangeError from the factory when the window is not an odd integer in 3..31 or nSigma is
 *   negative or not finite.
 * @example
 * frames$.pipe(hampel({ window: 9, nSigma: 2.5 }));
 */
export function hampel(options: HampelOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const window = options.window ?? 7;
  const nSigma = options.nSigma ?? 3;
  const on = options.on ?? 'amplitude';
  if (!Number.isInteger(window) || window < 3 || window > 31 || window % 2 === 0)
    throw new RangeError(`hampel: window must be an odd integer from 3 to 31, got ${window}`);
  if (!(Number.isFinite(nSigma) && nSigma >= 0)) throw new RangeError(`hampel: nSigma must be >= 0, got ${nSigma}`);
  if (!HAMPEL_ON.includes(on)) throw new RangeError(`hampel: unknown 'on' value '${on}' (amplitude | components)`);
  return (source) =>
    new Observable<CsiFrame>((subscriber) => {
      const filter = new HampelFilter(window, nSigma, on);
      const ready: CsiFrame[] = [];
      const drain = (): void => {
        for (let i = 0; i < ready.length && !subscriber.closed; i++) subscriber.next(ready[i]!);
        ready.length = 0;
      };
      return source.subscribe({
        next(frame) {
          if (subscriber.closed) return;
          try {
            filter.push(frame, ready);
          } catch (err) {
            ready.length = 0;
            subscriber.error(err);
            return;
          }
          drain();
        },
        error: (err) => subscriber.error(err),
        complete() {
          try {
            filter.flush(ready);
          } catch (err) {
            ready.length = 0;
            subscriber.error(err);
            return;
          }
          drain();
          subscriber.complete();
        },
      });
    });
}

export const spec: OperatorSpec = {
  name: 'hampel',
  summary: 'Hampel outlier filter over time per stream (centred window, output delayed by (window-1)/2 frames).',
  input: 'frame',
  output: 'frame',
  params: [
    { name: 'window', type: 'int', default: 7, min: 3, max: 31, description: 'total window length in frames (odd)' },
    { name: 'nSigma', type: 'number', default: 3, min: 0, max: 1000, description: 'threshold in robust standard deviations (1.4826 * MAD)' },
    {
      name: 'on',
      type: 'enum',
      default: 'amplitude',
      values: HAMPEL_ON,
      description: 'amplitude: filter |H| (outliers rescaled, phase kept); components: filter re and im separately',
    },
  ],
  create(params: ParamValues, _ctx: OperatorContext) {
    // The declared bounds cannot say "odd"; say it here in the parameter's own words.
    const w = params.window as number;
    if (w % 2 === 0) throw new ParamError('window', `parameter "window" must be odd, got ${w}`);
    return hampel({ window: params.window as number, nSigma: params.nSigma as number, on: params.on as HampelOn });
  },
};
