/**
 * The installation's site geometry as the pose model takes it: configuration `environment.site`
 * (metres, snake_case, a `known` switch, the radios) mapped onto the model contract's
 * `SiteGeometry`, which has one transmitter and one receiver: the site's primary link (its
 * transmitter and first receiver, src/csi/radios.ts).
 */

import type { SiteGeometry } from '../model/contract.js';
import type { RadioConfig } from '../csi/radios.js';
import type { ConfigSnapshot } from './store.js';

/**
 * The transmitter and the primary (first) receiver of the configured site. The configuration
 * always holds exactly one transmitter and at least one receiver (validate.ts).
 * @param c the configuration
 * @returns both radios
 * @example primaryLinkRadios(store.get()).rx.id // 'rx1' by default
 */
export function primaryLinkRadios(c: ConfigSnapshot): { tx: RadioConfig; rx: RadioConfig } {
  const radios = c.environment.site.radios;
  const tx = radios.find((r) => r.role === 'tx');
  const rx = radios.find((r) => r.role === 'rx');
  if (!tx || !rx) throw new RangeError('environment.site.radios holds no transmitter or no receiver');
  return { tx, rx };
}

/**
 * One geometry per stored site group. The store hands out the same frozen snapshot until the next
 * update, so the pipeline, which asks per batch, gets the same object back (no allocation, and a
 * consumer may cache what it derives from it by identity); an update makes a new group and with
 * it a new geometry.
 */
const cache = new WeakMap<object, SiteGeometry>();

/**
 * The site geometry to feed models that take the `site` input.
 * @param c the configuration (the store's snapshot, `ConfigStore.get()`)
 * @returns null when `environment.site.known` is false (the site is unknown: the model works
 *   from the CSI alone), else the room and the primary link's two radios in metres. The object is
 *   frozen; for one snapshot it is the same object on every call.
 * @example
 * // environment.site = { known: true, room_width: 6, room_depth: 5, radios: DEFAULT_RADIOS }
 * //   (tx at (3, 4.8, 1.2), rx1 at (3, 0.2, 1.2), rx2 and rx3 on the side walls)
 * siteGeometry(store.get())
 * // { roomWidth: 6, roomDepth: 5, receiver: { x: 3, y: 0.2, z: 1.2 }, transmitter: { x: 3, y: 4.8, z: 1.2 } }
 * siteVector(siteGeometry(store.get())) // the model's `site` input row; all zero when null
 */
export function siteGeometry(c: ConfigSnapshot): SiteGeometry | null {
  const s = c.environment.site;
  if (!s.known) return null;
  // Only a frozen group cannot change under a cached geometry (a mutable draft from `defaults()` can).
  const frozen = Object.isFrozen(s);
  const hit = frozen ? cache.get(s) : undefined;
  if (hit) return hit;
  const { tx, rx } = primaryLinkRadios(c);
  const g: SiteGeometry = Object.freeze({
    roomWidth: s.room_width,
    roomDepth: s.room_depth,
    receiver: Object.freeze({ x: rx.x, y: rx.y, z: rx.z }),
    transmitter: Object.freeze({ x: tx.x, y: tx.y, z: tx.z }),
  });
  if (frozen) cache.set(s, g);
  return g;
}
