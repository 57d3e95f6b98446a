/**
 * Conjugate multiplication across the receive antennas of one packet. The random common phase of
 * a packet (CFO, PLL) and its timing-offset slope are the same on every antenna of one receiver,
 * so H[rx] * conj(H[ref]) cancels both and keeps the phase difference between the antennas.
 */
import { defer, map, type OperatorFunction } from 'rxjs';
import { assertFrameShape, type CsiFrame } from '../src/csi/frame.js';
import type { OperatorContext, OperatorSpec, ParamValues } from '../src/engine/spec.js';

export const CONJ_PAIRS = ['ref', 'adjacent'] as const;
export type ConjPairs = (typeof CONJ_PAIRS)[number];

export interface ConjugateMultiplyOptions {
  /**
   * `ref` (default): every rx other than `ref` against `ref`, in rx order.
   * `adjacent`: (1,0), (2,1), ... (nRx-1, nRx-2).
   */
  pairs?: ConjPairs;
  /** Reference receive antenna for `pairs: 'ref'`; default 0. */
  ref?: number;
}

/** One output link: H[a] * conj(H[b]). */
export type ConjPair = readonly [a: number, b: number];

/** Largest receive antenna index accepted for `ref`. */
const MAX_REF = 15;

/**
 * For each subcarrier and transmit antenna, emits H[a] * conj(H[b]) for the chosen antenna pairs.
 * The output frame has nRx = number of pairs (nTx, nSub and the subcarrier list unchanged) and
 * lists the pairs as `meta.conj_pairs` ([a, b] per output rx, input meta kept). `rssi` is left as
 * recorded, per physical antenna.
 *
 * A frame with fewer than 2 receive antennas, or whose `ref` antenna does not exist, ends the
 * stream with an error naming the frame.
 *
 * @param options pairs (`ref` | `adjacent`, default `ref`) and ref (default 0).
 * @returns An operator emitting, for each input frame, its conjugate products.
 * @example
 * frames$.pipe(conjugateMultiply({ pairs: 'adjacent' })); // 3 rx -> pairs [1,0], [2,1]
 */
export function conjugateMultiply(options: ConjugateMultiplyOptions = {}): OperatorFunction<CsiFrame, CsiFrame> {
  const mode = options.pairs ?? 'ref';
  const ref = options.ref ?? 0;
  if (!CONJ_PAIRS.includes(mode)) throw new RangeError(`conj: unknown pairs '${mode}' (ref | adjacent)`);
  if (!Number.isInteger(ref) || ref < 0 || ref > MAX_REF) throw new RangeError(`conj: ref must be an integer from 0 to ${MAX_REF}, got ${ref}`);
  return (source) =>
    defer(() => {
      // The pair list (and its flat form) for the last nRx seen; frames share the frozen list.
      let pairsNRx = 0;
      let pairs: readonly ConjPair[] = [];
      let flat = new Int32Array(0);
      return source.pipe(
        map((frame) => {
          assertFrameShape(frame, 'conj');
          const { nRx } = frame;
          if (nRx < 2) throw new RangeError(`conj: needs at least 2 receive antennas, frame ${frame.index} has ${nRx}`);
          if (mode === 'ref' && ref >= nRx) throw new RangeError(`conj: reference antenna ${ref} does not exist, frame ${frame.index} has ${nRx} rx`);
          if (nRx !== pairsNRx) {
            pairs = makePairs(mode, ref, nRx);
            flat = Int32Array.from(pairs.flat());
            pairsNRx = nRx;
          }
          return multiply(frame, pairs, flat);
        }),
      );
    });
}

export const spec: OperatorSpec = {
  name: 'conj',
  summary: 'Conjugate multiplication across receive antennas (H[rx] * conj(H[ref])): cancels the common phase offset and slope.',
  input: 'frame',
  output: 'frame',
  params: [
    {
      name: 'pairs',
      type: 'enum',
      default: 'ref',
      values: CONJ_PAIRS,
      description: 'ref: every rx against the reference; adjacent: (1,0), (2,1), ...',
    },
    { name: 'ref', type: 'int', default: 0, min: 0, max: MAX_REF, description: 'reference receive antenna for pairs=ref' },
  ],
  create(params: ParamValues, _ctx: OperatorContext) {
    return conjugateMultiply({ pairs: params.pairs as ConjPairs, ref: params.ref as number });
  },
};

function makePairs(mode: ConjPairs, ref: number, nRx: number): readonly ConjPair[] {
  const pairs: ConjPair[] = [];
  if (mode === 'ref') {
    for (let rx = 0; rx < nRx; rx++) if (rx !== ref) pairs.push(Object.freeze([rx, ref] as const));
  } else {
    for (let rx = 1; rx < nRx; rx++) pairs.push(Object.freeze([rx, rx - 1] as const));
  }
  return Object.freeze(pairs);
}

function multiply(frame: CsiFrame, pairs: readonly ConjPair[], flat: Int32Array): CsiFrame {
  const { nRx, nTx, nSub, csi } = frame;
  const nP = pairs.length;
  const out = new Float32Array(nSub * nP * nTx * 2);
  for (let sc = 0; sc < nSub; sc++) {
    for (let p = 0; p < nP; p++) {
      const a = (sc * nRx + flat[2 * p]!) * nTx * 2;
      const b = (sc * nRx + flat[2 * p + 1]!) * nTx * 2;
      const o = (sc * nP + p) * nTx * 2;
      for (let t = 0; t < 2 * nTx; t += 2) {
        const ar = csi[a + t]!;
        const ai = csi[a + t + 1]!;
        const br = csi[b + t]!;
        const bi = csi[b + t + 1]!;
        out[o + t] = ar * br + ai * bi;
        out[o + t + 1] = ai * br - ar * bi;
      }
    }
  }
  return { ...frame, nRx: nP, csi: out, meta: { ...frame.meta, conj_pairs: pairs } };
}
