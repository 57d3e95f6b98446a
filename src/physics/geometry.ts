/**
 * Geometry of a link for the physics front end (src/physics/types.ts): where each antenna of the
 * transmitter and the receiver is, in room metres, and the frequency of each subcarrier.
 *
 * The arrays are placed by the one rule the simulator also uses (`antennaPositions` in
 * src/csi/radios.ts): antenna i of n at position + (i - (n - 1) / 2) * spacing_m * axis along
 * antennaAxis(yaw_deg). The centre frequency is the simulator's (src/sim/simulator.ts): channel 36
 * is 5180 MHz, 2.4 GHz channel 6 is 2437 MHz, and a 40 MHz channel is HT40+ (centre 10 MHz above
 * the primary's).
 */

import { SUBCARRIER_SPACING_HZ } from '../csi/frame.js';
import { antennaPositions, type RadioConfig } from '../csi/radios.js';

export { antennaPositions };

/** The geometry one link's beamformer needs. */
export interface LinkGeometry {
  /** Transmit antennas (nTx * 3: x, y, z), metres, antenna 0 first. */
  readonly txPositions: Float64Array;
  /** Receive antennas (nRx * 3: x, y, z), metres, antenna 0 first. */
  readonly rxPositions: Float64Array;
  readonly nTx: number;
  readonly nRx: number;
  /** Subcarrier indices relative to the centre, in SUBCARRIER_SPACING_HZ steps, in sample order. */
  readonly subcarriers: Int16Array;
  /** Frequency of each subcarrier, Hz: centreHz + subcarriers[k] * SUBCARRIER_SPACING_HZ. */
  readonly frequencies: Float64Array;
  /** Centre frequency (subcarrier index 0), Hz. */
  readonly centreHz: number;
}

/**
 * The geometry of one link: both arrays' antenna positions and every subcarrier's frequency.
 * @param tx the transmitter
 * @param rx the receiver
 * @param subcarriers subcarrier indices of the link's frames (`CsiFrame.subcarriers`), copied
 * @param centreHz centre frequency, Hz ({@link centreFrequencyHz})
 * @returns positions (Float64Array, n * 3) and frequencies (Float64Array, nSub)
 * @example
 * const [link] = siteLinks(DEFAULT_RADIOS);
 * const g = linkGeometry(link!.tx, link!.rx, frame.subcarriers, centreFrequencyHz(36, 20));
 * g.frequencies[0]; // 5.18e9 - 28 * 312.5e3
 */
export function linkGeometry(tx: RadioConfig, rx: RadioConfig, subcarriers: Int16Array, centreHz: number): LinkGeometry {
  if (!(centreHz > 0 && Number.isFinite(centreHz))) throw new RangeError('linkGeometry: centreHz must be a positive frequency');
  const subs = Int16Array.from(subcarriers);
  const frequencies = new Float64Array(subs.length);
  for (let k = 0; k < subs.length; k++) frequencies[k] = centreHz + subs[k]! * SUBCARRIER_SPACING_HZ;
  return {
    txPositions: antennaPositions(tx),
    rxPositions: antennaPositions(rx),
    nTx: tx.antennas,
    nRx: rx.antennas,
    subcarriers: subs,
    frequencies,
    centreHz,
  };
}

/**
 * The centre frequency (subcarrier index 0) of an 802.11 channel as the simulator sets it: the
 * primary 20 MHz channel's centre (5000 + 5 ch MHz at 5 GHz, 2407 + 5 ch MHz for 2.4 GHz channels
 * 1-13, 2484 MHz for 14), plus 10 MHz for a 40 MHz channel (HT40+, as the simulator's 114-subcarrier
 * layout). A 40 MHz channel is also recognised from `nSub` 114 when `bandwidthMhz` is unknown (NaN).
 * Wider channels (80, 160 MHz) are not placed: they throw.
 * @param channel 802.11 channel number of the primary channel (`CsiFrame.channel`)
 * @param bandwidthMhz 20 or 40 (`CsiFrame.bandwidthMhz`; NaN to decide from nSub)
 * @param nSub subcarrier count (`CsiFrame.nSub`), used when bandwidthMhz is NaN
 * @returns Hz
 * @throws RangeError for an unknown channel or bandwidth
 * @example
 * centreFrequencyHz(36, 20); // 5.18e9
 * centreFrequencyHz(36, 40); // 5.19e9 (HT40+)
 * centreFrequencyHz(6, 20); // 2.437e9
 */
export function centreFrequencyHz(channel: number, bandwidthMhz: number, nSub?: number): number {
  if (!Number.isInteger(channel) || channel < 1 || channel > 196) throw new RangeError(`centreFrequencyHz: unknown channel ${channel}`);
  let primaryMhz: number;
  if (channel <= 13) primaryMhz = 2407 + 5 * channel;
  else if (channel === 14) primaryMhz = 2484;
  else primaryMhz = 5000 + 5 * channel;
  const bw = Number.isNaN(bandwidthMhz) ? (nSub === 114 ? 40 : 20) : bandwidthMhz;
  if (bw === 20) return primaryMhz * 1e6;
  if (bw === 40) return (primaryMhz + 10) * 1e6;
  throw new RangeError(`centreFrequencyHz: bandwidth ${bandwidthMhz} MHz is not placed (20 or 40)`);
}
