/**
 * The installation's site geometry as the pose model takes it: configuration `environment.site`
 * (metres, snake_case, a `known` switch) mapped onto the model contract's `SiteGeometry`.
 */

import type { SiteGeometry } from '../model/contract.js';
import type { ConfigSnapshot } from './store.js';

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
 *   from the CSI alone), else the room and the two radios in metres. The object is frozen; for
 *   one snapshot it is the same object on every call.
 * @example
 * // environment.site = { known: true, room_width: 6, room_depth: 5, receiver_x: 3, receiver_y: 0.2,
 * //   receiver_z: 1.2, transmitter_x: 3, transmitter_y: 4.8, transmitter_z: 1.2 }
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
  const g: SiteGeometry = Object.freeze({
    roomWidth: s.room_width,
    roomDepth: s.room_depth,
    receiver: Object.freeze({ x: s.receiver_x, y: s.receiver_y, z: s.receiver_z }),
    transmitter: Object.freeze({ x: s.transmitter_x, y: s.transmitter_y, z: s.transmitter_z }),
  });
  if (frozen) cache.set(s, g);
  return g;
}
