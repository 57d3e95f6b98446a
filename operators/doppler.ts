import FFT from 'fft.js';
import { Observable, type OperatorFunction } from 'rxjs';
import { windowShift, type CsiWindow, type DopplerSpectrum } from '../src/csi/frame.js';
import type { OperatorSpec } from '../src/engine/spec.js';

export interface DopplerOptions {
  /**
   * Contiguous subcarrier groups per link, each averaged into one stream; default 3.
   * 0 = one stream per subcarrier; values above nSub are treated as nSub.
   */
  groups?: number;
  /** Keep only the bins with |f| <= maxHz (see `doppler`); default 0 = all bins. */
  maxHz?: number;
}

const MAX_GROUPS = 4096;

/** Everything that depends only on the window's shape and the options, rebuilt when that changes. */
interface Plan {
  size: number;
  nRx: number;
  nTx: number;
  nSub: number;
  subcarriers: Int16Array;
  nGroups: number;
  nStreams: number;
  fftSize: number;
  fft: FFT;
  fftIn: Float64Array;
  fftOut: Float64Array;
  hann: Float64Array;
  /** Sum of hann^2: |X|^2 is divided by it so power does not depend on the window length. */
  energy: number;
  /** Group g covers subcarriers [groupStart[g], groupStart[g + 1]). */
  groupStart: Int32Array;
  /** 1 / subcarriers in each group. */
  groupScale: Float64Array;
  /** Group sums, stream-major: series[(s * size + t) * 2] = re. */
  series: Float64Array;
  streams: readonly string[];
  /** The previous window, whose overlapping frames' group sums `series` still holds. */
  prev: CsiWindow | undefined;
}

/**
 * `windowShift` for consecutive windows of one `window` operator subscription (same source, the
 * next window index), else 0.
 */
function overlapShift(prev: CsiWindow | undefined, w: CsiWindow, frameLen: number): number {
  if (!prev || prev.sourceId !== w.sourceId || w.windowIndex !== prev.windowIndex + 1) return 0;
  return windowShift(prev, w, frameLen);
}

/** Periodic Hann (the DFT-even form): unlike the symmetric one it is not all zeros for n = 2. */
function hannWindow(n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n);
  return w;
}

function nextPow2(n: number): number {
  let p = 2;
  while (p < n) p *= 2;
  return p;
}

function sameSubcarriers(a: Int16Array, b: Int16Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Computes a Doppler spectrum per window: for each link (rx, tx) and each of `groups` contiguous
 * subcarrier groups, the complex values of the group are averaged per frame into one time series
 * (one stream); the series' mean over the window is subtracted (removing the static paths),
 * a periodic Hann window applied, and the result zero-padded to the next power of two
 * (`fftSize` >= window size) and transformed with fft.js. Output power is |X|^2 / sum(hann^2),
 * fftshifted so bin 0 is -rateHz/2; a component exp(j 2 pi f t) lands at +f, so motion towards
 * and away from the link is told apart.
 *
 * Streams are ordered link-major, then group: s = (rx * nTx + tx) * nGroups + g, with group g
 * covering subcarriers [floor(g * nSub / nGroups), floor((g + 1) * nSub / nGroups)).
 *
 * With `maxHz` > 0 the spectrum is cut to K = floor(maxHz / binHz) + 1 bins either side of 0 Hz:
 * bins -K..K-1, that is every bin with |f| <= maxHz plus the one at -K * binHz. Keeping that one
 * extra bin keeps the layout of a full fftshifted spectrum (even nBins, 0 Hz at nBins / 2), so
 * bin b is at (b - nBins / 2) * binHz as `DopplerSpectrum` documents. When the window's rate is
 * unknown (NaN) all bins are kept.
 *
 * Cost per window is one fftSize-point complex FFT per stream; the FFT instance, its buffers,
 * the Hann window and the stream labels are built once per shape and reused, and only `power`
 * is new per window. A window whose data or times do not match its declared shape ends the
 * stream with a RangeError (windows come from `window`, which never builds such a thing).
 *
 * @param options `groups` (default 3; 0 = per subcarrier), `maxHz` (default 0 = all bins)
 * @returns an operator from windows to spectra
 * @throws RangeError when `groups` or `maxHz` is out of range (at creation, not in the stream)
 * @example
 * frames$.pipe(slidingWindow({ size: 64, hop: 8 }), doppler({ groups: 3, maxHz: 40 }))
 */
export function doppler(options: DopplerOptions = {}): OperatorFunction<CsiWindow, DopplerSpectrum> {
  const groups = options.groups ?? 3;
  const maxHz = options.maxHz ?? 0;
  if (!Number.isInteger(groups) || groups < 0 || groups > MAX_GROUPS)
    throw new RangeError(`doppler: groups must be an integer in [0, ${MAX_GROUPS}], got ${groups}`);
  if (!(maxHz >= 0)) throw new RangeError(`doppler: maxHz must be >= 0, got ${maxHz}`);

  const buildPlan = (w: CsiWindow, old: Plan | undefined): Plan => {
    const { size, nRx, nTx, nSub } = w;
    const nGroups = groups === 0 ? nSub : Math.min(groups, nSub);
    const nStreams = nRx * nTx * nGroups;
    const fftSize = nextPow2(size);
    const reuseFft = old !== undefined && old.fftSize === fftSize;
    const reuseHann = old !== undefined && old.size === size;
    const groupStart = new Int32Array(nGroups + 1);
    const groupScale = new Float64Array(nGroups);
    const labels: string[] = [];
    for (let g = 0; g <= nGroups; g++) groupStart[g] = Math.floor((g * nSub) / nGroups);
    for (let g = 0; g < nGroups; g++) groupScale[g] = 1 / (groupStart[g + 1] - groupStart[g]);
    const subcarriers = Int16Array.from(w.subcarriers);
    const scName = (sc: number) => String(sc < subcarriers.length ? subcarriers[sc] : sc);
    for (let rx = 0; rx < nRx; rx++)
      for (let tx = 0; tx < nTx; tx++)
        for (let g = 0; g < nGroups; g++) {
          const lo = groupStart[g];
          const hi = groupStart[g + 1] - 1;
          const range = lo === hi ? scName(lo) : `${scName(lo)}..${scName(hi)}`;
          labels.push(`rx${rx}-tx${tx} sc[${range}]`);
        }
    const hann = reuseHann ? old.hann : hannWindow(size);
    let energy = 0;
    for (let i = 0; i < size; i++) energy += hann[i] * hann[i];
    return {
      size,
      nRx,
      nTx,
      nSub,
      subcarriers,
      nGroups,
      nStreams,
      fftSize,
      fft: reuseFft ? old.fft : new FFT(fftSize),
      // Only the first `size` complex inputs are ever written, so the zero padding stays zero.
      fftIn: reuseFft && reuseHann ? old.fftIn : new Float64Array(2 * fftSize),
      fftOut: reuseFft ? old.fftOut : new Float64Array(2 * fftSize),
      hann,
      energy,
      groupStart,
      groupScale,
      series: new Float64Array(nStreams * size * 2),
      streams: Object.freeze(labels),
      prev: undefined,
    };
  };

  const planFits = (p: Plan, w: CsiWindow) =>
    p.size === w.size && p.nRx === w.nRx && p.nTx === w.nTx && p.nSub === w.nSub && sameSubcarriers(p.subcarriers, w.subcarriers);

  const spectrum = (p: Plan, w: CsiWindow): DopplerSpectrum => {
    const { size, nRx, nTx, nGroups, nStreams, fftSize, fftIn, fftOut, hann, groupStart, groupScale, series } = p;
    const data = w.data;
    const links = nRx * nTx;
    const scStride = links * 2;
    const frameLen = p.nSub * scStride;

    // Consecutive windows overlap by size - hop frames: their group sums are shifted into place
    // rather than summed again, so each frame is reduced once, not size / hop times.
    const shift = overlapShift(p.prev, w, frameLen);
    let tFirst = 0;
    if (shift > 0) {
      for (let st = 0; st < nStreams; st++) {
        const off = st * size * 2;
        series.copyWithin(off, off + 2 * shift, off + 2 * size);
      }
      tFirst = size - shift;
    }
    p.prev = w;

    // Group sums, accumulated in locals and stored once per (frame, stream): about 2.5x faster
    // than adding every sample into `series` in place (measured on 3x3x30, 64 frames).
    for (let t = tFirst; t < size; t++) {
      const base = t * frameLen;
      for (let g = 0; g < nGroups; g++) {
        const lo = base + groupStart[g] * scStride;
        const hi = base + groupStart[g + 1] * scStride;
        for (let link = 0; link < links; link++) {
          let re = 0;
          let im = 0;
          for (let i = lo + 2 * link; i < hi; i += scStride) {
            re += data[i];
            im += data[i + 1];
          }
          const o = ((link * nGroups + g) * size + t) * 2;
          series[o] = re;
          series[o + 1] = im;
        }
      }
    }

    const rateHz = w.rateHz;
    const binHz = rateHz / fftSize;
    const half = fftSize >> 1;
    let nBins = fftSize;
    if (maxHz > 0 && binHz > 0 && Number.isFinite(binHz)) {
      const k = Math.floor(maxHz / binHz + 1e-9) + 1;
      if (2 * k < fftSize) nBins = 2 * k;
    }
    // Output bin b is shifted bin b + firstBin, i.e. FFT bin (b + firstBin + half) mod fftSize.
    const firstBin = half - (nBins >> 1);
    const mask = fftSize - 1;
    const power = new Float32Array(nStreams * nBins);
    const invEnergy = 1 / p.energy;

    for (let s = 0; s < nStreams; s++) {
      const off = s * size * 2;
      let sumRe = 0;
      let sumIm = 0;
      for (let t = 0; t < size; t++) {
        sumRe += series[off + 2 * t];
        sumIm += series[off + 2 * t + 1];
      }
      const meanRe = sumRe / size;
      const meanIm = sumIm / size;
      const scale = groupScale[s % nGroups];
      for (let t = 0; t < size; t++) {
        const h = hann[t] * scale;
        fftIn[2 * t] = (series[off + 2 * t] - meanRe) * h;
        fftIn[2 * t + 1] = (series[off + 2 * t + 1] - meanIm) * h;
      }
      p.fft.transform(fftOut, fftIn);
      const out = s * nBins;
      for (let b = 0; b < nBins; b++) {
        const k = (b + firstBin + half) & mask;
        const re = fftOut[2 * k];
        const im = fftOut[2 * k + 1];
        power[out + b] = (re * re + im * im) * invEnergy;
      }
    }

    return {
      sourceId: w.sourceId,
      environmentId: w.environmentId,
      time: w.times[size - 1],
      windowIndex: w.windowIndex,
      nStreams,
      nBins,
      binHz,
      rateHz,
      streams: p.streams,
      power,
    };
  };

  return (source) =>
    new Observable<DopplerSpectrum>((subscriber) => {
      let plan: Plan | undefined;
      const sub = source.subscribe({
        next(w) {
          let out: DopplerSpectrum;
          try {
            const frameLen = w.nSub * w.nRx * w.nTx * 2;
            if (!(Number.isInteger(w.size) && w.size >= 2 && frameLen > 0))
              throw new RangeError(`doppler: window ${w.windowIndex} has size ${w.size} and ${frameLen / 2} streams`);
            if (w.data.length !== w.size * frameLen || w.times.length !== w.size)
              throw new RangeError(
                `doppler: window ${w.windowIndex} data length ${w.data.length} / times length ${w.times.length} ` +
                  `do not match size ${w.size} x ${w.nSub}x${w.nRx}x${w.nTx}`,
              );
            if (plan === undefined || !planFits(plan, w)) plan = buildPlan(w, plan);
            out = spectrum(plan, w);
          } catch (e) {
            subscriber.error(e);
            return;
          }
          subscriber.next(out);
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => sub.unsubscribe();
    });
}

export const spec: OperatorSpec = {
  name: 'doppler',
  summary: 'Doppler power spectrum per link and subcarrier group over each window (Hann, FFT, fftshift)',
  input: 'window',
  output: 'spectrum',
  params: [
    {
      name: 'groups',
      type: 'int',
      default: 3,
      min: 0,
      max: MAX_GROUPS,
      description: 'Contiguous subcarrier groups averaged per link (0 = one stream per subcarrier; capped at nSub)',
    },
    {
      name: 'maxHz',
      type: 'number',
      default: 0,
      min: 0,
      max: 100_000,
      description: 'Keep only bins with |f| <= maxHz (0 = all bins)',
    },
  ],
  create: (params) => doppler({ groups: Number(params.groups ?? 3), maxHz: Number(params.maxHz ?? 0) }),
};
