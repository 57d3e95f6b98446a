/**
 * The radios of a site and the links between them (DECISIONS "Sites with several radios").
 *
 * A site has one transmitter (`role: 'tx'`, usually the router) and one or more receivers
 * (`role: 'rx'`). A link is one transmitter-receiver pair, named `<tx>-<rx>` ({@link linkId}); every
 * frame of a link carries that name as `CsiFrame.linkId` (`link_id` in JSON).
 *
 * Coordinates are room metres: x across the room from its left wall as seen from the front wall,
 * y in depth away from the front wall, z above the floor. `yaw_deg` is the direction the array
 * faces in the floor plane, degrees from +x towards +y (90 = facing into the room from the front
 * wall). The antennas of an array lie on a horizontal line through its position, perpendicular to
 * the direction it faces; antenna i (0-based, of n) sits at
 *
 *     position + (i - (n - 1) / 2) * spacing_m * (sin(yaw), -cos(yaw), 0)
 *
 * that is, antenna 0 is on the left and the last on the right as one stands behind the array
 * looking where it faces ({@link antennaAxis}).
 */

import type { CsiFormat } from './frame.js';

/** Speed of light, m/s. */
export const SPEED_OF_LIGHT = 299_792_458;

export type RadioRole = 'tx' | 'rx';

/** One radio of `environment.site.radios` (snake_case as configured). */
export interface RadioConfig {
  /** Unique within the site: 1-32 of a-z, 0-9, `_`, `-`. */
  readonly id: string;
  readonly role: RadioRole;
  readonly x: number;
  readonly y: number;
  readonly z: number;
  /** Direction the array faces, degrees from +x towards +y, 0 <= yaw_deg < 360. */
  readonly yaw_deg: number;
  /** Antennas of the array, 1-4. */
  readonly antennas: number;
  /** Distance between neighbouring antennas, metres. */
  readonly spacing_m: number;
  /** The CSI format this radio delivers, a decoder's name (receivers; a transmitter's is what its receivers decode); the configuration accepts only `CAPTURE_FORMATS`. */
  readonly format: CsiFormat;
}

/** One link of a site: its transmitter and receiver. */
export interface SiteLink {
  /** `<tx>-<rx>`. */
  readonly id: string;
  readonly tx: RadioConfig;
  readonly rx: RadioConfig;
}

/** Half a wavelength at 5180 MHz (channel 36), metres: the spacing of the default arrays. */
export const HALF_WAVELENGTH_5G_M = SPEED_OF_LIGHT / 5.18e9 / 2;

/** The default antenna spacing of a radio, metres: half a wavelength at 5 GHz, to 0.1 mm. */
export const DEFAULT_SPACING_M = Math.round(HALF_WAVELENGTH_5G_M * 1e4) / 1e4;

/** A radio's array and format when the configuration leaves them out (and every default radio's). */
export const RADIO_DEFAULTS: Readonly<Pick<RadioConfig, 'antennas' | 'spacing_m' | 'format'>> = Object.freeze({
  antennas: 3,
  spacing_m: DEFAULT_SPACING_M,
  format: 'intel5300',
});

/**
 * The default site: the simulator's default 6 x 5 x 2.8 m room with a router on the back wall
 * facing into the room and three receiving nodes (front wall, left wall, right wall), each with
 * 3 antennas half a wavelength apart at 5 GHz, all at 1.2 m. The front receiver `rx1` and the
 * router are where the one-link room always had its radios.
 */
export const DEFAULT_RADIOS: readonly RadioConfig[] = Object.freeze(
  (
    [
      { id: 'tx', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270 },
      { id: 'rx1', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90 },
      { id: 'rx2', role: 'rx', x: 0.2, y: 2.5, z: 1.2, yaw_deg: 0 },
      { id: 'rx3', role: 'rx', x: 5.8, y: 2.5, z: 1.2, yaw_deg: 180 },
    ] as const
  ).map((r) => Object.freeze({ ...r, ...RADIO_DEFAULTS })),
);

/** A link's name: `<tx>-<rx>`. */
export function linkId(tx: string, rx: string): string {
  return `${tx}-${rx}`;
}

/**
 * The links of a site, in the order its receivers are listed (the first is the site's primary
 * link). Assumes a validated site: exactly one transmitter.
 * @param radios `environment.site.radios`
 * @returns one link per receiver
 */
export function siteLinks(radios: readonly RadioConfig[]): SiteLink[] {
  const tx = radios.find((r) => r.role === 'tx');
  if (!tx) return [];
  return radios.filter((r) => r.role === 'rx').map((rx) => ({ id: linkId(tx.id, rx.id), tx, rx }));
}

/**
 * Unit vector along an array's line of antennas (antenna 0 towards the last).
 * @param yawDeg the direction the array faces, degrees from +x towards +y
 */
export function antennaAxis(yawDeg: number): { x: number; y: number; z: number } {
  const t = (yawDeg * Math.PI) / 180;
  // Rounded so that axis-aligned arrays get exact 0 and +-1 components.
  const c = (v: number) => (Math.abs(v) < 1e-12 ? 0 : v);
  return { x: c(Math.sin(t)), y: c(-Math.cos(t)), z: 0 };
}

/**
 * Positions of n antennas on a line: `spacing` metres apart along the normalised `axis`, centred on
 * `position` (antenna 0 at position - (n - 1) / 2 * spacing * axis). The one placement rule of
 * the simulator's arrays and the physics front end's steering.
 * @param position the array's centre, metres
 * @param axis direction of the line (any non-zero length)
 * @param n antennas
 * @param spacing metres between neighbours
 * @returns n * 3 coordinates (x, y, z)
 * @throws RangeError for a zero axis
 * @example linePositions({ x: 3, y: 0.2, z: 1.2 }, { x: 1, y: 0, z: 0 }, 3, 0.029) // x 2.971, 3, 3.029
 */
export function linePositions(
  position: { x: number; y: number; z: number },
  axis: { x: number; y: number; z: number },
  n: number,
  spacing: number,
): Float64Array {
  const norm = Math.hypot(axis.x, axis.y, axis.z);
  if (!(norm > 0)) throw new RangeError('array axis must be a non-zero vector');
  const out = new Float64Array(3 * n);
  for (let i = 0; i < n; i++) {
    const o = (i - (n - 1) / 2) * spacing;
    out[3 * i] = position.x + (o * axis.x) / norm;
    out[3 * i + 1] = position.y + (o * axis.y) / norm;
    out[3 * i + 2] = position.z + (o * axis.z) / norm;
  }
  return out;
}

/**
 * Positions of a radio's antennas: on a horizontal line through the radio along
 * `antennaAxis(yaw_deg)`, `spacing_m` apart, centred on its position ({@link linePositions}).
 * @param r the radio
 * @returns `r.antennas * 3` coordinates, metres
 * @example antennaPositions(DEFAULT_RADIOS[1]!) // rx1 at (3, 0.2, 1.2), yaw 90: along +x
 */
export function antennaPositions(r: RadioConfig): Float64Array {
  return linePositions(r, antennaAxis(r.yaw_deg), r.antennas, r.spacing_m);
}
