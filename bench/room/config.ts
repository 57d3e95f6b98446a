/**
 * The service configuration of a benchmark room: what an installer would enter for it. The one
 * place the live-room benchmark writes configuration, so that a change of the schema is made here.
 */
import { defaults } from '../../src/config/schema.js';
import { viewSettings } from '../../src/pose/camera.js';
import { SPEED_OF_LIGHT } from '../../src/sim/channel.js';
import type { ScenarioRecipe } from '../../training/ts/recipe.js';

/** The simulator's centre frequency of 30 subcarriers at 5 GHz (channel 36), Hz. */
const CENTRE_HZ = 5.18e9;

/** The direction an array on a wall faces into the room, degrees from +x towards +y. */
function facing(wall: 'front' | 'back' | 'left' | 'right'): number {
  return wall === 'front' ? 90 : wall === 'back' ? 270 : wall === 'left' ? 0 : 180;
}

/**
 * The configuration overlay (`csipose serve --config FILE`) of a room: `environment.view` is the
 * room's reference camera (the ground truth's), `environment.site` its size and radios with
 * `known: true` (the model gets the site input). Sites are written as `environment.site.radios`
 * (one transmitter, one receiver per link) when the service's schema has them, else as the older
 * `receiver_*` / `transmitter_*` fields.
 * @param r the room's recipe (one link: its receiver array and its transmitter array)
 * @param modelPath the model the service runs (`neural_network.model_path`); default the schema's
 * @returns the overlay, ready for JSON.stringify
 */
export function roomConfig(r: ScenarioRecipe, modelPath?: string): Record<string, unknown> {
  const site: Record<string, unknown> = { known: true, room_width: r.room.width, room_depth: r.room.depth };
  const siteDefaults = (defaults() as { environment: { site: Record<string, unknown> } }).environment.site;
  if ('radios' in siteDefaults) {
    const spacing = Math.round((SPEED_OF_LIGHT / CENTRE_HZ / 2) * 1e4) / 1e4;
    const radio = (id: string, role: 'tx' | 'rx', p: { x: number; y: number; z: number }, yaw: number, antennas: number) => ({
      id,
      role,
      x: p.x,
      y: p.y,
      z: p.z,
      yaw_deg: yaw,
      antennas,
      spacing_m: spacing,
      format: 'intel5300',
    });
    site.radios = [radio('tx', 'tx', r.tx, facing(r.tx.wall), r.nTx), radio('rx1', 'rx', r.rx, facing('front'), r.nRx)];
  } else {
    Object.assign(site, {
      receiver_x: r.rx.x,
      receiver_y: r.rx.y,
      receiver_z: r.rx.z,
      transmitter_x: r.tx.x,
      transmitter_y: r.tx.y,
      transmitter_z: r.tx.z,
    });
  }
  return { environment: { view: viewSettings(r.camera), site }, ...(modelPath ? { neural_network: { model_path: modelPath } } : {}) };
}
