import type { FloorMapGrid, FloorMapItem } from '../../operators/floorMap.js';
import { isoTime } from '../csi/frame.js';
import { metres, ratio } from '../precision.js';

/** A candidate person of a map as shown: floor position (metres) and power as a share of the map's maximum (0..1). */
export interface FloorMapCandidate {
  readonly x: number;
  readonly y: number;
  readonly power: number;
}

/**
 * One floor map reduced for display: the fused map's floor projection (the largest value over the
 * height layers at each floor point), normalised by its maximum to bytes 0..255. Made once per
 * map, when the pipeline emits it; its JSON (`GET /pose/floor-map`, docs/service.md "Floor map")
 * is rendered once, at the first request, and shared by every later one.
 */
export class FloorMapDisplay {
  private rendered: string | undefined;

  /**
   * @param environmentId the map's environment
   * @param time epoch ms of the primary link's last packet in the window
   * @param sourceId the primary link's source
   * @param quality share of the site's links in the map (0..1)
   * @param links the links in the map, primary first
   * @param grid the map's grid (metres)
   * @param maxPower the map's largest value (the floor projection's maximum), 0 when it has none above 0
   * @param floor `nx * ny` bytes, `floor[iy * nx + ix]` = round(255 * projection / maxPower)
   * @param candidates the candidates, strongest first
   */
  constructor(
    readonly environmentId: string,
    readonly time: number,
    readonly sourceId: string,
    readonly quality: number,
    readonly links: readonly string[],
    readonly grid: FloorMapGrid,
    readonly maxPower: number,
    readonly floor: Uint8Array,
    readonly candidates: readonly FloorMapCandidate[],
  ) {}

  /**
   * The resource of `GET /pose/floor-map` as JSON (the same in both response forms), rendered once.
   * @returns the JSON text
   */
  json(): string {
    this.rendered ??= JSON.stringify({
      environment_id: this.environmentId,
      timestamp: isoTime(this.time),
      source_id: this.sourceId,
      links: this.links,
      quality: ratio(this.quality),
      grid: {
        x0: metres(this.grid.x0),
        y0: metres(this.grid.y0),
        cell: metres(this.grid.cell),
        nx: this.grid.nx,
        ny: this.grid.ny,
        heights: this.grid.heights.map(metres),
      },
      max_power: Number.isFinite(this.maxPower) ? Number(this.maxPower.toPrecision(4)) : 0,
      floor: Buffer.from(this.floor.buffer, this.floor.byteOffset, this.floor.byteLength).toString('base64'),
      candidates: this.candidates,
    });
    return this.rendered;
  }
}

/**
 * Reduces a floor map for display: for each floor point the largest value over the height layers,
 * divided by the map's maximum (the projection's maximum) and scaled to 0..255; candidates' power
 * as the same share. A value that is not finite or below 0 counts as 0; a map with nothing above 0
 * reduces to zeros (`maxPower` 0). Two passes over the map, no scratch.
 * @param item a map of the `floorMap` stage
 * @returns the display
 * @throws RangeError when the map's length is not `nx * ny * heights`
 * @example reduceFloorMap(item).floor[iy * item.grid.nx + ix] // 255 where the map peaks
 */
export function reduceFloorMap(item: FloorMapItem): FloorMapDisplay {
  const { nx, ny, heights } = item.grid;
  const cells = nx * ny;
  const map = item.map;
  if (!(cells > 0) || map.length !== cells * heights.length) {
    throw new RangeError(`floor map of ${item.environmentId}: ${map.length} values for a grid of ${nx} x ${ny} x ${heights.length}`);
  }
  let max = 0;
  for (let i = 0; i < map.length; i++) {
    const v = map[i]!;
    if (v > max && v < Infinity) max = v;
  }
  const floor = new Uint8Array(cells);
  if (max > 0) {
    const scale = 255 / max;
    for (let c = 0; c < cells; c++) {
      let m = 0;
      for (let i = c; i < map.length; i += cells) {
        const v = map[i]!;
        if (v > m && v < Infinity) m = v;
      }
      floor[c] = Math.round(m * scale);
    }
  }
  const candidates = item.candidates.map((k) => ({
    x: metres(k.x),
    y: metres(k.y),
    power: max > 0 && k.power > 0 ? ratio(Math.min(1, k.power / max)) : 0,
  }));
  return new FloorMapDisplay(item.environmentId, item.time, item.sourceId, item.quality, item.links.slice(), item.grid, max, floor, candidates);
}

/** What the routes read of the floor maps ({@link FloorMaps}). */
export interface FloorMapReader {
  /**
   * Whether the pipeline of the latest session has the physics front end (the `floorMap` stage:
   * a v3 refiner's `physics-live`); undefined before the first session.
   */
  readonly frontEnd: boolean | undefined;
  /** The latest map of an environment, reduced for display. */
  get(environmentId: string): FloorMapDisplay | undefined;
  /** Environments with a map. */
  environments(): string[];
}

/**
 * The latest floor map of each environment, reduced for display as it arrives (the `floorMap`
 * stage's `onMap` hook), for `GET /pose/floor-map`. A new session forgets the last one's maps (its
 * room or model may differ); after a stop the last maps stay readable, as the latest pose does.
 */
export class FloorMaps implements FloorMapReader {
  private readonly maps = new Map<string, FloorMapDisplay>();
  private session: boolean | undefined;

  /** @param onError receives a map that could not be reduced (it never reaches the pipeline) */
  constructor(private readonly onError: (e: unknown) => void) {}

  get frontEnd(): boolean | undefined {
    return this.session;
  }

  /**
   * A session starts: its pipeline has the front end or not. The previous session's maps go.
   * @param frontEnd whether the session's pipeline has the `floorMap` stage
   */
  begin(frontEnd: boolean): void {
    this.session = frontEnd;
    this.maps.clear();
  }

  /** The pipeline's hook: keeps the map, reduced. A failure goes to `onError`, never to the pipeline. */
  readonly take = (item: FloorMapItem): void => {
    try {
      this.maps.set(item.environmentId, reduceFloorMap(item));
    } catch (e) {
      this.onError(e);
    }
  };

  get(environmentId: string): FloorMapDisplay | undefined {
    return this.maps.get(environmentId);
  }

  environments(): string[] {
    return [...this.maps.keys()];
  }
}
