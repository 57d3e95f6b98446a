/**
 * The site a simulator simulates: one transmitter and the receivers of `SimOptions.radios`
 * (src/csi/radios.ts, DECISIONS "Sites with several radios"), checked for what the simulator needs.
 *
 * Each radio's array is placed as radios.ts states it: its antennas on a horizontal line through
 * its position, along `antennaAxis(yaw_deg)`, `spacing_m` apart, centred on the position. The
 * simulator's frames are `format: 'sim'` whatever a radio's `format`; the subcarrier layout is
 * `SimOptions.nSub` on every link.
 */

import { antennaAxis, siteLinks, type RadioConfig, type SiteLink } from '../csi/radios.js';
import type { ArraySpec } from './scenario.js';

/** Most receivers (links) a simulated site has. */
export const MAX_SIM_LINKS = 8;
/** Antennas per simulated array: 1..MAX_SIM_ANTENNAS (as `nRx`, `nTx`). */
export const MAX_SIM_ANTENNAS = 4;

/** A checked site: its transmitter and its links in siteLinks order. */
export interface SimSite {
  readonly tx: RadioConfig;
  readonly links: readonly SiteLink[];
}

/**
 * Checks a site for the simulator.
 * @param radios one `tx` and 1..MAX_SIM_LINKS `rx` radios
 * @returns the transmitter and the links
 * @throws RangeError naming what is wrong (positions inside the room are checked by the simulator)
 */
export function resolveSimSite(radios: readonly RadioConfig[]): SimSite {
  const bad = (what: string): never => {
    throw new RangeError(`sim: radios: ${what}`);
  };
  const ids = new Set<string>();
  for (const r of radios) {
    if (typeof r.id !== 'string' || r.id === '') bad('every radio needs an id');
    if (ids.has(r.id)) bad(`radio id "${r.id}" is used twice`);
    ids.add(r.id);
    if (r.role !== 'tx' && r.role !== 'rx') bad(`radio ${r.id}: role must be tx or rx`);
    for (const k of ['x', 'y', 'z', 'yaw_deg'] as const) if (!Number.isFinite(r[k])) bad(`radio ${r.id}: ${k} must be a finite number`);
    if (!(Number.isInteger(r.antennas) && r.antennas >= 1 && r.antennas <= MAX_SIM_ANTENNAS))
      bad(`radio ${r.id}: antennas must be an integer 1..${MAX_SIM_ANTENNAS}`);
    if (!(r.spacing_m > 0 && r.spacing_m <= 1)) bad(`radio ${r.id}: spacing_m must be in (0, 1] m`);
  }
  const txs = radios.filter((r) => r.role === 'tx');
  if (txs.length !== 1) bad(`a site has exactly one tx, got ${txs.length}`);
  const links = siteLinks(radios);
  if (links.length < 1 || links.length > MAX_SIM_LINKS) bad(`a site has 1..${MAX_SIM_LINKS} rx, got ${links.length}`);
  return { tx: txs[0]!, links };
}

/**
 * The array of a radio as the scenario places arrays.
 * @param r the radio
 * @returns its position, antenna axis and spacing
 */
export function radioArray(r: RadioConfig): ArraySpec {
  return { position: { x: r.x, y: r.y, z: r.z }, axis: antennaAxis(r.yaw_deg), spacing: r.spacing_m };
}

/**
 * The direction a radio's array faces, a unit floor vector (its patch antennas' boresight); exact 0
 * and +-1 components for axis-aligned arrays, as antennaAxis gives.
 * @param r the radio
 */
export function radioFacing(r: RadioConfig): { x: number; y: number } {
  const a = antennaAxis(r.yaw_deg);
  // The axis is the facing direction turned 90 degrees clockwise (radios.ts): turn it back.
  return { x: -a.y, y: a.x };
}
