/**
 * What real receivers add to the clean channel, each switchable, with defaults inside the ranges of
 * shared/notes/csi-physics.md:
 *
 * - common phase (CFO / PLL offset): one uniform random phase per packet, the same for every
 *   subcarrier and antenna of the packet. Default on.
 * - sampling time offset (packet detection delay): a per-packet delay delta ~ U(-stoNs, +stoNs)
 *   turns into a linear phase -2 pi (s_k * 312.5 kHz) delta across subcarrier index s_k, the same
 *   for every antenna. Default 50 ns: up to 5.5 rad across the 56 indices of a 20 MHz channel,
 *   as seen on the Intel 5300.
 * - AGC: a per-packet gain that jumps by agcStepDb (uniform 1..agcStepDb dB, random sign) with
 *   probability agcStepProbability per packet and then stays; kept within +-agcRangeDb. Default
 *   one jump every ~5 s at 100 Hz, up to 3 dB.
 * - noise: circular complex Gaussian added at the receiver input (before AGC), with power set by
 *   snrDb relative to the mean power of the empty-room (static) channel, so the noise floor is a
 *   fixed absolute level like thermal noise. Default 25 dB.
 * - packet loss: Gilbert-Elliott two-state chain (good: received, bad: lost) with stationary loss
 *   lossRate and mean burst length lossBurst packets. Default 2 %, bursts of 2.5.
 * - timestamp jitter: Gaussian, sd jitterMs, clipped at +-min(4 sd, 0.45 / rate) so that frame
 *   times stay strictly increasing. Default 1 ms.
 * - outliers: with probability outlierProbability per packet one complex sample (random
 *   subcarrier and antenna pair) is multiplied by a factor uniform in outlierScale. Default 1 %,
 *   x4..x10: far outside what a Hampel filter's median +- 3 MAD admits.
 * - quantisation: optional rounding to signed integers of quantizeBits bits (8 = Intel 5300), with
 *   a fixed scale that puts the static channel's RMS at quantizeRms counts; off by default.
 */

import { Rng } from './rng.js';
import { SUBCARRIER_SPACING_HZ } from './channel.js';

export interface ImpairmentOptions {
  /** Random common phase per packet. */
  commonPhase?: boolean;
  /** Largest sampling time offset, ns; 0 = off. */
  stoNs?: number;
  /** Probability per packet that the AGC gain jumps; 0 = off. */
  agcStepProbability?: number;
  /** Largest AGC jump, dB (each jump is 1..agcStepDb dB). */
  agcStepDb?: number;
  /** The AGC gain stays within +-agcRangeDb of 0 dB. */
  agcRangeDb?: number;
  /** Signal-to-noise ratio, dB, relative to the empty-room channel; null or Infinity = no noise. */
  snrDb?: number | null;
  /** Stationary packet loss rate, 0 = off, at most 0.5. */
  lossRate?: number;
  /** Mean length of a loss burst, packets (>= 1). */
  lossBurst?: number;
  /** Timestamp jitter sd, ms; 0 = off. */
  jitterMs?: number;
  /** Probability per packet of one outlier sample; 0 = off. */
  outlierProbability?: number;
  /** Outlier amplitude factor range [min, max]. */
  outlierScale?: readonly [number, number];
  /** Quantise to signed integers of this many bits (8 = Intel 5300); null = keep floats. */
  quantizeBits?: number | null;
  /** RMS of the static channel after quantisation, counts. */
  quantizeRms?: number;
}

/** Resolved impairment settings. */
export type ImpairmentSettings = { [K in keyof ImpairmentOptions]-?: Exclude<ImpairmentOptions[K], undefined> };

/** Defaults: every impairment on except quantisation. */
export const IMPAIRMENT_DEFAULTS: Readonly<ImpairmentSettings> = Object.freeze({
  commonPhase: true,
  stoNs: 50,
  agcStepProbability: 0.002,
  agcStepDb: 3,
  agcRangeDb: 6,
  snrDb: 25,
  lossRate: 0.02,
  lossBurst: 2.5,
  jitterMs: 1,
  outlierProbability: 0.01,
  outlierScale: [4, 10] as const,
  quantizeBits: null,
  quantizeRms: 20,
});

/** Every impairment off: spread it and switch single ones back on in tests. */
export const NO_IMPAIRMENTS: Readonly<ImpairmentOptions> = Object.freeze({
  commonPhase: false,
  stoNs: 0,
  agcStepProbability: 0,
  snrDb: null,
  lossRate: 0,
  jitterMs: 0,
  outlierProbability: 0,
  quantizeBits: null,
});

/**
 * Fills in defaults and checks ranges.
 * @param o options (undefined fields take IMPAIRMENT_DEFAULTS; `false` switches everything off)
 * @returns complete settings
 * @throws RangeError on an out-of-range value
 */
export function resolveImpairments(o: ImpairmentOptions | false | undefined): ImpairmentSettings {
  const s: ImpairmentSettings = { ...IMPAIRMENT_DEFAULTS, ...(o === false ? NO_IMPAIRMENTS : {}) };
  if (o) {
    for (const [k, v] of Object.entries(o)) if (v !== undefined) (s as Record<string, unknown>)[k] = v;
  }
  const bad = (what: string): never => {
    throw new RangeError(`impairments: ${what}`);
  };
  if (!(s.stoNs >= 0 && s.stoNs <= 1000)) bad('stoNs must be in 0..1000');
  if (!(s.agcStepProbability >= 0 && s.agcStepProbability <= 1)) bad('agcStepProbability must be in 0..1');
  if (!(s.agcStepDb >= 1 && s.agcStepDb <= 20)) bad('agcStepDb must be in 1..20');
  if (!(s.agcRangeDb >= s.agcStepDb && s.agcRangeDb <= 40)) bad('agcRangeDb must be in agcStepDb..40');
  if (s.snrDb !== null && !(s.snrDb >= -10)) bad('snrDb must be >= -10, Infinity or null');
  if (!(s.lossRate >= 0 && s.lossRate <= 0.5)) bad('lossRate must be in 0..0.5');
  if (!(s.lossBurst >= 1 && s.lossBurst <= 1000)) bad('lossBurst must be in 1..1000');
  if (!(s.jitterMs >= 0 && s.jitterMs <= 1000)) bad('jitterMs must be in 0..1000');
  if (!(s.outlierProbability >= 0 && s.outlierProbability <= 1)) bad('outlierProbability must be in 0..1');
  if (!(s.outlierScale[0] >= 1 && s.outlierScale[1] >= s.outlierScale[0])) bad('outlierScale must be [min >= 1, max >= min]');
  if (s.quantizeBits !== null && !(Number.isInteger(s.quantizeBits) && s.quantizeBits >= 4 && s.quantizeBits <= 16)) {
    bad('quantizeBits must be an integer in 4..16 or null');
  }
  if (!(s.quantizeRms > 0)) bad('quantizeRms must be positive');
  return s;
}

/**
 * Per-packet hardware impairments for one stream of CSI packets of a fixed shape.
 *
 * Call `packetLost()` once per simulated packet (it advances the loss chain and the AGC), and
 * `apply()` only for received packets.
 *
 * @example
 * const imp = new Impairments(resolveImpairments({}), new Rng(1), new Rng(2), subcarriers, 3, 3, refPower);
 * if (!imp.packetLost()) imp.apply(clean, out);
 */
export class Impairments {
  readonly settings: ImpairmentSettings;
  /** Noise power per complex sample (linear, same units as |H|^2); 0 without noise. */
  readonly noisePower: number;
  /** Counts per channel unit when quantising; 1 otherwise. */
  readonly quantScale: number;
  private readonly rng: Rng;
  private readonly lossRng: Rng;
  private readonly sub: Int16Array;
  private readonly nPairs: number;
  private readonly noiseSd: number;
  private readonly pGoodToBad: number;
  private readonly pBadToGood: number;
  private bad = false;
  private agcDb = 0;
  private agcLin = 1;
  // Scratch: per-subcarrier phase rotation of the current packet.
  private readonly rotR: Float64Array;
  private readonly rotI: Float64Array;

  /**
   * @param settings resolved settings
   * @param rng stream for phases, noise, AGC and outliers
   * @param lossRng separate stream for packet loss (so loss does not shift the other draws)
   * @param subcarriers subcarrier indices of the layout
   * @param nRx receive antennas
   * @param nTx transmit antennas
   * @param refPower mean |H|^2 the SNR refers to (the empty-room channel); must be > 0 when noise
   *   or quantisation is on
   */
  constructor(settings: ImpairmentSettings, rng: Rng, lossRng: Rng, subcarriers: Int16Array, nRx: number, nTx: number, refPower: number) {
    this.settings = settings;
    this.rng = rng;
    this.lossRng = lossRng;
    this.sub = subcarriers;
    this.nPairs = nRx * nTx;
    const snr = settings.snrDb;
    const noisy = snr !== null && Number.isFinite(snr);
    if ((noisy || settings.quantizeBits !== null) && !(refPower > 0)) {
      throw new RangeError('impairments: noise and quantisation need a non-zero reference channel power');
    }
    this.noisePower = noisy ? refPower / Math.pow(10, snr / 10) : 0;
    this.noiseSd = Math.sqrt(this.noisePower / 2);
    this.quantScale = settings.quantizeBits !== null ? settings.quantizeRms / Math.sqrt(refPower) : 1;
    const L = settings.lossRate;
    this.pBadToGood = 1 / settings.lossBurst;
    this.pGoodToBad = L > 0 ? (L * this.pBadToGood) / (1 - L) : 0;
    this.rotR = new Float64Array(subcarriers.length);
    this.rotI = new Float64Array(subcarriers.length);
  }

  /** Current AGC gain, dB. */
  get agcGainDb(): number {
    return this.agcDb;
  }

  /**
   * Advances the per-packet state (loss chain, AGC) by one packet.
   * @returns true when this packet is lost
   */
  packetLost(): boolean {
    const s = this.settings;
    if (s.agcStepProbability > 0 && this.rng.chance(s.agcStepProbability)) {
      let step = this.rng.uniform(1, s.agcStepDb) * (this.rng.chance(0.5) ? 1 : -1);
      if (Math.abs(this.agcDb + step) > s.agcRangeDb) step = -step;
      this.agcDb += step;
      this.agcLin = Math.pow(10, this.agcDb / 20);
    }
    if (this.pGoodToBad === 0) return false;
    // Gilbert: the state for this packet is drawn from the previous one; bad = lost.
    this.bad = this.bad ? !this.lossRng.chance(this.pBadToGood) : this.lossRng.chance(this.pGoodToBad);
    return this.bad;
  }

  /**
   * Timestamp jitter for one packet, ms.
   * @param intervalMs nominal packet interval, ms
   * @returns the offset to add to the true time
   */
  jitter(intervalMs: number): number {
    const sd = this.settings.jitterMs;
    if (sd === 0) return 0;
    const lim = Math.min(4 * sd, 0.45 * intervalMs);
    const j = this.rng.gaussian(0, sd);
    return j > lim ? lim : j < -lim ? -lim : j;
  }

  /**
   * Applies this packet's impairments to a clean channel.
   * @param clean nSub * nPairs * 2 values (CsiFrame layout)
   * @param out receives the impaired channel (same length)
   */
  apply(clean: Float64Array, out: Float32Array): void {
    const s = this.settings;
    const nSub = this.sub.length;
    const common = s.commonPhase ? this.rng.uniform(0, 2 * Math.PI) : 0;
    const slope = s.stoNs > 0 ? -2 * Math.PI * SUBCARRIER_SPACING_HZ * this.rng.uniform(-s.stoNs, s.stoNs) * 1e-9 : 0;
    const rotate = s.commonPhase || s.stoNs > 0;
    if (rotate) {
      for (let k = 0; k < nSub; k++) {
        const a = common + slope * this.sub[k]!;
        this.rotR[k] = Math.cos(a);
        this.rotI[k] = Math.sin(a);
      }
    }
    const g = this.agcLin * this.quantScale;
    const sd = this.noiseSd;
    const np = this.nPairs;
    let i = 0;
    for (let k = 0; k < nSub; k++) {
      const cr = rotate ? this.rotR[k]! : 1;
      const ci = rotate ? this.rotI[k]! : 0;
      for (let p = 0; p < np; p++, i += 2) {
        const hr = clean[i]!;
        const hi = clean[i + 1]!;
        let yr = hr * cr - hi * ci;
        let yi = hr * ci + hi * cr;
        if (sd > 0) {
          yr += this.rng.gaussian(0, sd);
          yi += this.rng.gaussian(0, sd);
        }
        out[i] = yr * g;
        out[i + 1] = yi * g;
      }
    }
    if (s.outlierProbability > 0 && this.rng.chance(s.outlierProbability)) {
      const c = this.rng.int(0, nSub * np - 1);
      const f = this.rng.uniform(s.outlierScale[0], s.outlierScale[1]);
      out[2 * c] *= f;
      out[2 * c + 1] *= f;
    }
    if (s.quantizeBits !== null) {
      const hi = 2 ** (s.quantizeBits - 1) - 1;
      const lo = -hi - 1;
      for (let j = 0; j < out.length; j++) {
        const q = Math.round(out[j]!);
        out[j] = q > hi ? hi : q < lo ? lo : q;
      }
    }
  }
}
