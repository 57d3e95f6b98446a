/**
 * Antenna element gain patterns: how strongly an element sends towards (or hears from) a direction.
 *
 * A path's amplitude is multiplied by the transmit element's amplitude gain towards the path's
 * departure direction and the receive element's towards its arrival direction (both relative to
 * an isotropic element, so `isotropic` leaves the channel as it was). The patterns are the
 * textbook far-field ones (Balanis, Antenna Theory, 4th ed.: eq. 4-84 for the half-wave dipole,
 * ch. 14 for the microstrip patch):
 *
 * - `dipole`: half-wave dipole along `axis` (commodity routers and the Intel 5300's external
 *   antennas stand vertical): F(theta) = cos(pi/2 cos theta) / sin theta, theta from the axis;
 *   directivity 1.64 (2.15 dBi), so the amplitude gain peaks at sqrt(1.64) broadside and falls to 0
 *   along the axis (straight up and down: floor and ceiling bounces near the antenna are weak).
 * - `patch`: a microstrip patch facing `axis` (its boresight): power pattern cos^3 psi in the front
 *   hemisphere, which gives a 75 degree half-power beam and a directivity of 2 (3 + 1) = 8 (9 dBi),
 *   typical of 5 GHz patches (6-9 dBi); the back hemisphere is held at 20 dB below the peak (a
 *   finite ground plane's back lobe).
 *
 * Mutual coupling between the elements of an array is not modelled.
 */

/** Element pattern kinds. */
export type AntennaPatternKind = 'isotropic' | 'dipole' | 'patch';

/** Every element of one array has the same pattern and orientation. */
export interface ElementPattern {
  kind: AntennaPatternKind;
  /** Unit vector: the dipole's axis, or the patch's boresight. */
  ax: number;
  ay: number;
  az: number;
}

/** Peak amplitude gain of a half-wave dipole: sqrt(1.64). */
export const DIPOLE_PEAK = Math.sqrt(1.64);
/** Peak amplitude gain of the cos^3 patch: sqrt(8). */
export const PATCH_PEAK = Math.sqrt(8);
/** Amplitude of the patch's back hemisphere relative to its peak (-20 dB). */
export const PATCH_BACK = 0.1;

/**
 * An element pattern with a normalised orientation.
 * @param kind pattern kind
 * @param x axis (dipole) or boresight (patch), any length > 0
 * @param y second component
 * @param z third component
 * @returns the pattern
 * @throws RangeError for a zero orientation
 */
export function elementPattern(kind: AntennaPatternKind, x: number, y: number, z: number): ElementPattern {
  const n = Math.hypot(x, y, z);
  if (!(n > 0)) throw new RangeError('antenna: orientation must be a non-zero vector');
  return { kind, ax: x / n, ay: y / n, az: z / n };
}

/**
 * cos(pi/2 x) for |x| <= 1 by its Taylor series to x^16 (error below 1e-13; this runs for every
 * leg of every scatterer, where Math.cos costs several times more).
 */
function cosHalfPi(x: number): number {
  const z = 2.4674011002723395 * x * x; // (pi/2 x)^2
  return (
    1 +
    z *
      (-1 / 2 + z * (1 / 24 + z * (-1 / 720 + z * (1 / 40320 + z * (-1 / 3628800 + z * (1 / 479001600 + z * (-1 / 87178291200 + z * (1 / 20922789888000))))))))
  );
}

/**
 * Amplitude gain of an element towards a direction (relative to isotropic).
 * @param p the element's pattern
 * @param dx direction from the element, x (need not be unit length)
 * @param dy direction, y
 * @param dz direction, z
 * @param d length of (dx, dy, dz), > 0
 * @returns the amplitude gain (1 for isotropic)
 */
export function elementGain(p: ElementPattern, dx: number, dy: number, dz: number, d: number): number {
  if (p.kind === 'isotropic') return 1;
  const c = (dx * p.ax + dy * p.ay + dz * p.az) / d;
  if (p.kind === 'dipole') {
    const s2 = 1 - c * c;
    // Along the axis the pattern's limit is 0 (cos(pi/2) / 0 -> 0).
    if (s2 < 1e-12) return 0;
    return (DIPOLE_PEAK * cosHalfPi(c)) / Math.sqrt(s2);
  }
  const f = c > 0 ? c * Math.sqrt(c) : 0;
  return PATCH_PEAK * (f > PATCH_BACK ? f : PATCH_BACK);
}
