/**
 * Phase sanitisation: removes the random common phase offset (carrier frequency offset, PLL
 * phase) and the random linear phase slope across subcarriers (sampling time offset, packet
 * detection delay) that every commodity WiFi receiver adds to each packet, keeping amplitude.
 *
 * What is left is the shape of the phase across subcarriers: the true mean delay is removed with
 * the slope, which is unavoidable since the receiver's timing offset is indistinguishable from it.
 */
import { defer, map, type OperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { PhaseSanitizer, SANITIZE_METHODS, SANITIZE_SCOPES, type SanitizeMethod, type SanitizeScope } from '../src/csi/phaseSanitizer.js';
import type { OperatorContext, OperatorSpec, ParamValues } from '../src/engine/spec.js';

// The option vocabulary is the sanitizer's; it stays importable here, beside the options it types.
export { SANITIZE_METHODS, SANITIZE_SCOPES, type SanitizeMethod, type SanitizeScope };

export interface SanitizePhaseOptions {
  /**
   * `fit` (default): unwrap the phase across subcarriers and fit a least-squares line.
   * `phasor`: estimate the slope and offset from phasor sums, without a per-sample atan2.
   */
  method?: SanitizeMethod;
  /**
   * `packet` (default): one slope and one offset for all rx/tx links of the packet, which keeps
   * the phase differences between antennas (angle of arrival). `link`: each link on its own.
   */
  scope?: SanitizeScope;
}

/**
 * Removes the per-packet common phase offset and linear phase slope across subcarriers.
 *
 * Each frame's samples are rotated by exp(-j(a*k + b)), k being the subcarrier index from
 * `frame.subcarriers` (which may be non-uniform and in any order), so amplitudes are kept
 * exactly and only the phase changes. The rotation is built by stepping a unit phasor over the
 * index differences, so the only trigonometry is a handful of calls per link, not per sample.
 * Frames may change shape mid-stream; scratch buffers follow the shape.
 *
 * Limits: like any unwrapping, a slope of more than pi per step between neighbouring subcarriers
 * aliases (for Intel 5300's 2-index grouping that is a timing offset beyond 800 ns).
 *
 * @param options method (`fit` | `phasor`, default `fit`) and scope (`packet` | `link`, default `packet`).
 * @returns An operator emitting, for each input frame, a new frame with sanitised `csi`.
 * @example
 * frames$.pipe(sanitizePhase({ method: 'phasor' })).subscribe((f) => use(f.csi));
 */
export function sanitizePhase(options: SanitizePhaseOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const method = options.method ?? 'fit';
  const scope = options.scope ?? 'packet';
  if (!SANITIZE_METHODS.includes(method)) throw new RangeError(`sanitize: unknown method '${method}' (fit | phasor)`);
  if (!SANITIZE_SCOPES.includes(scope)) throw new RangeError(`sanitize: unknown scope '${scope}' (packet | link)`);
  return (source) =>
    defer(() => {
      const sanitizer = new PhaseSanitizer(method, scope);
      return source.pipe(map((frame) => sanitizer.apply(frame)));
    });
}

export const spec: OperatorSpec = {
  name: 'sanitize',
  summary: 'Remove the random per-packet phase offset and linear phase slope across subcarriers (CFO, timing offset); amplitude kept.',
  input: 'frame',
  output: 'frame',
  params: [
    {
      name: 'method',
      type: 'enum',
      default: 'fit',
      values: SANITIZE_METHODS,
      description: 'fit: unwrap + least-squares line; phasor: slope and offset from phasor sums (no per-sample atan2)',
    },
    {
      name: 'scope',
      type: 'enum',
      default: 'packet',
      values: SANITIZE_SCOPES,
      description: 'packet: one line for all rx/tx links (keeps inter-antenna phase); link: one line per link',
    },
  ],
  create(params: ParamValues, _ctx: OperatorContext) {
    return sanitizePhase({ method: params.method as SanitizeMethod, scope: params.scope as SanitizeScope });
  },
};
