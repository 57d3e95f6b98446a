/**
 * Subcarrier index tables shared by the decoders.
 *
 * An index is the subcarrier's position relative to the channel centre in 312.5 kHz steps, in the
 * order the samples appear in a frame. Every table is built once and handed to every frame that
 * has that layout, so frames share it: treat the arrays as read-only (typed arrays cannot be
 * frozen, so this is a convention every consumer keeps).
 */

function build(values: readonly number[]): Int16Array {
  return Int16Array.from(values);
}

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let k = from; step > 0 ? k <= to : k >= to; k += step) out.push(k);
  return out;
}

/**
 * Intel 5300, 20 MHz: the 30 groups of 802.11n grouping Ng = 2 (IEEE 802.11n-2009 table 7-25f):
 * every other subcarrier from -28, plus -1 and +1 around DC, up to +28.
 */
export const INTEL5300_SUBCARRIERS_20: Int16Array = build([...range(-28, -2, 2), -1, 1, ...range(3, 27, 2), 28]);

/** Intel 5300, 40 MHz: the 30 groups of grouping Ng = 2 at 40 MHz, -58 to +58 in steps of 4 (no DC). */
export const INTEL5300_SUBCARRIERS_40: Int16Array = build([...range(-58, -2, 4), ...range(2, 58, 4)]);

/** Atheros (ath9k), 20 MHz: the 56 HT20 tones -28..-1, 1..28. */
export const ATHEROS_SUBCARRIERS_20: Int16Array = build([...range(-28, -1, 1), ...range(1, 28, 1)]);

/** Atheros (ath9k), 40 MHz: the 114 HT40 tones -58..-2, 2..58. */
export const ATHEROS_SUBCARRIERS_40: Int16Array = build([...range(-58, -2, 1), ...range(2, 58, 1)]);

const fftTables = new Map<number, Int16Array>();
const sequentialTables = new Map<number, Int16Array>();

/**
 * FFT-order bin indices for an `nfft`-point FFT (as Nexmon records CSI): bin k is subcarrier k
 * for k < nfft/2 and k - nfft above, so index 0 is DC. One shared table per size.
 *
 * @param nfft FFT size, an integer in 1..65536 (Nexmon uses 64, 128, 256).
 * @returns The shared table of length `nfft`.
 * @throws RangeError when `nfft` is not an integer in range (a programming error, not bad data).
 * @example
 * fftBinIndices(8); // Int16Array [0, 1, 2, 3, -4, -3, -2, -1]
 */
export function fftBinIndices(nfft: number): Int16Array {
  let table = fftTables.get(nfft);
  if (table) return table;
  if (!Number.isInteger(nfft) || nfft < 1 || nfft > 65536) {
    throw new RangeError(`fftBinIndices: nfft must be an integer in 1..65536, got ${nfft}`);
  }
  table = new Int16Array(nfft);
  const half = nfft / 2;
  for (let k = 0; k < nfft; k++) table[k] = k < half ? k : k - nfft;
  fftTables.set(nfft, table);
  return table;
}

// The sizes Nexmon produces (20/40/80 MHz) exist before the first packet arrives.
for (const n of [64, 128, 256]) fftBinIndices(n);

/**
 * Tone numbers 0..n-1 for a record whose subcarrier layout is not a known standard one (e.g. an
 * Atheros record reporting an unusual tone count): the samples keep their recorded order and the
 * table says only that. One shared table per length.
 *
 * @param n Number of tones, an integer in 0..32767.
 * @returns The shared table [0, 1, ..., n-1].
 */
export function sequentialIndices(n: number): Int16Array {
  let table = sequentialTables.get(n);
  if (table) return table;
  if (!Number.isInteger(n) || n < 0 || n > 32767) {
    throw new RangeError(`sequentialIndices: n must be an integer in 0..32767, got ${n}`);
  }
  table = new Int16Array(n);
  for (let k = 0; k < n; k++) table[k] = k;
  sequentialTables.set(n, table);
  return table;
}
