/**
 * Amplitude normalisation: removes automatic gain control (AGC) steps, which scale a whole packet
 * at once, by scaling each packet (or each rx/tx link of it) to an RMS amplitude of 1.
 */
import { defer, map, type OperatorFunction } from 'rxjs';
import { assertFrameShape, type CsiFrame } from '../src/csi/frame.js';
import type { OperatorContext, OperatorSpec, ParamValues } from '../src/engine/spec.js';

export const NORMALIZE_SCOPES = ['packet', 'link'] as const;
export type NormalizeScope = (typeof NORMALIZE_SCOPES)[number];

export interface NormalizeAmplitudeOptions {
  /**
   * `packet` (default): one gain for the whole packet, which keeps the amplitude ratios between
   * antennas. `link`: each rx/tx link scaled to RMS 1 on its own.
   */
  scope?: NormalizeScope;
}

/**
 * Scales each frame so that the RMS amplitude, sqrt(mean |H|^2), is 1 over the packet (or over
 * each rx/tx link's subcarriers). Phases are untouched. A frame (or link) with zero or non-finite
 * energy passes unchanged, so silence never turns into NaN.
 *
 * @param options scope (`packet` | `link`, default `packet`).
 * @returns An operator emitting, for each input frame, a frame with normalised `csi`.
 * @example
 * frames$.pipe(normalizeAmplitude({ scope: 'link' }));
 */
export function normalizeAmplitude(options: NormalizeAmplitudeOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const scope = options.scope ?? 'packet';
  if (!NORMALIZE_SCOPES.includes(scope)) throw new RangeError(`normalize: unknown scope '${scope}' (packet | link)`);
  return (source) =>
    defer(() => {
      // Per-link energies, reused while the link count stays the same (one set per subscription).
      let energy = new Float64Array(0);
      return source.pipe(
        map((frame) => {
          assertFrameShape(frame, 'normalize');
          if (scope === 'packet') return normalizePacket(frame);
          const nL = frame.nRx * frame.nTx;
          if (energy.length !== nL) energy = new Float64Array(nL);
          return normalizeLinks(frame, nL, energy);
        }),
      );
    });
}

export const spec: OperatorSpec = {
  name: 'normalize',
  summary: 'Scale each packet (or link) to RMS amplitude 1, removing AGC gain steps; zero-energy frames pass unchanged.',
  input: 'frame',
  output: 'frame',
  params: [
    {
      name: 'scope',
      type: 'enum',
      default: 'packet',
      values: NORMALIZE_SCOPES,
      description: 'packet: one gain per packet (keeps antenna ratios); link: one gain per rx/tx link',
    },
  ],
  create(params: ParamValues, _ctx: OperatorContext) {
    return normalizeAmplitude({ scope: params.scope as NormalizeScope });
  },
};

function normalizePacket(frame: CsiFrame): CsiFrame {
  const csi = frame.csi;
  let e = 0;
  for (let i = 0; i < csi.length; i++) e += csi[i]! * csi[i]!;
  if (!(e > 0 && e < Infinity)) return frame;
  const g = 1 / Math.sqrt(e / (csi.length >> 1));
  const out = new Float32Array(csi.length);
  for (let i = 0; i < csi.length; i++) out[i] = csi[i]! * g;
  return { ...frame, csi: out };
}

function normalizeLinks(frame: CsiFrame, nL: number, energy: Float64Array): CsiFrame {
  const csi = frame.csi;
  energy.fill(0);
  // Samples are interleaved with the link index (rx * nTx + tx) fastest after re/im.
  for (let c = 0, l = 0; c < csi.length; c += 2) {
    const re = csi[c]!;
    const im = csi[c + 1]!;
    energy[l] += re * re + im * im;
    if (++l === nL) l = 0;
  }
  const nSub = frame.nSub;
  let any = false;
  for (let l = 0; l < nL; l++) {
    const e = energy[l]!;
    // Reused as the gain; 1 leaves a silent or broken link as it is.
    if (e > 0 && e < Infinity) {
      energy[l] = 1 / Math.sqrt(e / nSub);
      any = true;
    } else energy[l] = 1;
  }
  if (!any) return frame;
  const out = new Float32Array(csi.length);
  for (let c = 0, l = 0; c < csi.length; c += 2) {
    const g = energy[l]!;
    out[c] = csi[c]! * g;
    out[c + 1] = csi[c + 1]! * g;
    if (++l === nL) l = 0;
  }
  return { ...frame, csi: out };
}
