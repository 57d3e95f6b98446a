/**
 * The floor map under the floor plan: the physics front end's fused beam power on the floor
 * (`GET /pose/floor-map`, docs/service.md "Floor map"), drawn as a heat layer under the zones,
 * radios and people, with a legend and a toggle under the plan. Only a service that runs the
 * `physics-live` pipeline (a v3 refiner) makes maps; any other answers 404 `RESOURCE_NOT_FOUND`,
 * and then nothing is drawn and nothing asked until the system's state changes (a new model takes
 * a restart). While the live tab is shown, the page visible and the toggle on, the map is read
 * once a second, one request at a time (the next is asked when the last has answered, so answers
 * never cross); an answer to an earlier question (another environment, or asked before the
 * system's state changed) is dropped and the new one asked at once.
 */
import { ApiError, describeError, type Api } from './api.js';
import { h } from './dom.js';
import type { FloorMapResource } from './types.js';

/** How often the map is read while shown (the health limit: 10000 an hour; 3600 of them). */
export const HEAT_POLL_MS = 1000;
/** After a failed read (network, an unexpected answer). */
const RETRY_MS = 5000;
/** A map not renewed for this long is drawn faded: the pipeline has stopped making them. */
const STALE_MS = 3000;
/** The room's floor colour on the plan (floorplan.ts), under the legend's ramp. */
const ROOM_FILL: readonly [number, number, number] = [19, 26, 35];

/** Colour stops of the ramp, low to high: deep blue, violet, orange, pale yellow. */
const STOPS: ReadonlyArray<readonly [number, number, number, number]> = [
  [0, 31, 59, 140],
  [0.4, 137, 60, 168],
  [0.75, 240, 136, 62],
  [1, 255, 236, 140],
];

/**
 * RGBA of each byte 0..255: the colour of its stop, and an opacity that grows faster than the
 * power (0.85 v^1.5), so that the weak spread of the beams stays a tint and the peaks stand out.
 */
const LUT: Uint8ClampedArray = (() => {
  const lut = new Uint8ClampedArray(256 * 4);
  for (let b = 0; b < 256; b++) {
    const v = b / 255;
    let k = 1;
    while (k < STOPS.length - 1 && v > STOPS[k]![0]) k++;
    const [v0, r0, g0, b0] = STOPS[k - 1]!;
    const [v1, r1, g1, b1] = STOPS[k]!;
    const t = Math.min(1, Math.max(0, (v - v0) / (v1 - v0)));
    lut.set([r0 + t * (r1 - r0), g0 + t * (g1 - g0), b0 + t * (b1 - b0), 255 * 0.85 * v ** 1.5], b * 4);
  }
  return lut;
})();

/** What the layer shows: `idle` before any answer, `waiting` for the first map, `shown`, `off` (toggled), `unavailable` (no front end). */
export type HeatState = 'idle' | 'waiting' | 'shown' | 'off' | 'unavailable';

interface ShownMap {
  readonly data: FloorMapResource;
  /** Server time of the map, ms. */
  readonly time: number;
  /** performance.now() when it arrived. */
  readonly arrived: number;
  /** The floor at one pixel per grid point, north (far wall) up. */
  readonly image: HTMLCanvasElement;
}

/** The heat layer: its reads, its image and its legend. */
export class FloorHeat {
  /** The legend and toggle, shown under the plan while the service makes maps. */
  readonly legend: HTMLElement;
  private readonly toggle: HTMLInputElement;
  private readonly info: HTMLElement;
  private map: ShownMap | undefined;
  private state: HeatState = 'idle';
  /** The live tab is shown and the page visible. */
  private active = false;
  /** The service makes no maps, or has never run: no reads until the system's state changes. */
  private paused = false;
  private inFlight = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Bumped when what is asked changes (the environment, the system's state): an answer to an older question is dropped. */
  private generation = 0;
  private environmentId: string | undefined;
  private stale = false;

  /**
   * @param api the REST client
   * @param changed asks for a redraw (a new map, the toggle)
   */
  constructor(
    private readonly api: Api,
    private readonly changed: () => void,
  ) {
    this.toggle = h('input', { type: 'checkbox', id: 'heat-toggle', checked: true, onchange: () => this.onToggle() });
    this.info = h('span', { id: 'heat-info', class: 'muted' });
    const ramp = h('canvas', { class: 'heat-ramp', width: 96, height: 8, 'aria-hidden': 'true' });
    drawRamp(ramp);
    this.legend = h(
      'div',
      {
        id: 'heat-legend',
        class: 'heat-legend',
        hidden: true,
        title: "The physics front end's beam power on the floor: the largest over the heights, relative to the map's maximum. Rings are its candidate people.",
      },
      h('label', { class: 'inline' }, this.toggle, ' Floor map'),
      h('span', { class: 'muted', text: 'low' }),
      ramp,
      h('span', { class: 'muted', text: 'high' }),
      this.info,
    );
    this.setState('idle');
  }

  /** The timestamp of the map drawn ('' when none is), for tests and tools. */
  get drawnAt(): string {
    return this.map && this.toggle.checked ? this.map.data.timestamp : '';
  }

  /** The environment to read (the configuration's); a new one forgets the map shown. */
  setEnvironment(id: string): void {
    if (id === this.environmentId) return;
    this.environmentId = id;
    this.generation++;
    this.forget();
    this.kick(0);
  }

  /** Whether the live tab is shown and the page visible: reads run only then. */
  setActive(active: boolean): void {
    this.active = active;
    if (active) this.kick(0);
    else clearTimeout(this.timer);
  }

  /**
   * The system's state changed (a new session may run another model): read again, and drop the
   * answer of a read under way (it may speak for the session before).
   */
  statusChanged(): void {
    this.generation++;
    this.paused = false;
    this.kick(0);
  }

  private onToggle(): void {
    if (this.toggle.checked) {
      this.setState(this.map ? 'shown' : 'waiting');
      this.kick(0);
    } else {
      clearTimeout(this.timer);
      this.setState('off');
    }
    this.changed();
  }

  private wanted(): boolean {
    return this.active && !this.paused && this.toggle.checked;
  }

  /** Schedules the next read; never a second one while one is under way (its end schedules the next). */
  private kick(delay: number): void {
    clearTimeout(this.timer);
    if (this.wanted() && !this.inFlight) this.timer = setTimeout(() => void this.read(), delay);
  }

  private async read(): Promise<void> {
    if (this.inFlight || !this.wanted()) return;
    this.inFlight = true;
    const generation = this.generation;
    let next = HEAT_POLL_MS;
    try {
      const env = this.environmentId;
      const r = await this.api.request<FloorMapResource>('GET', 'pose/floor-map', env ? { query: { environment_id: env } } : {});
      if (generation === this.generation) this.take(r.data);
    } catch (e) {
      if (generation === this.generation) next = this.failed(e);
    } finally {
      this.inFlight = false;
    }
    // The question changed while this read was under way: ask the new one at once.
    this.kick(generation === this.generation ? next : 0);
  }

  /**
   * A map answered: drawn, unless it is the one shown (the pipeline made none since; it then goes
   * stale). Reads never overlap, so an answer is always the newest asked for; a newer map of an
   * earlier time is a new session replaying older CSI, and is drawn too.
   */
  private take(data: FloorMapResource): void {
    const time = Date.parse(data.timestamp);
    if (this.map && time === this.map.time && data.environment_id === this.map.data.environment_id) return;
    const image = mapImage(data);
    if (!image) {
      console.warn('Floor map: the answer does not fit its grid; not drawn.');
      return;
    }
    this.map = { data, time, arrived: performance.now(), image };
    this.stale = false;
    this.setState(this.toggle.checked ? 'shown' : 'off');
    this.changed();
  }

  /** What a failed read means for the next one: its delay (or a pause). */
  private failed(e: unknown): number {
    if (e instanceof ApiError && (e.code === 'RESOURCE_NOT_FOUND' || e.code === 'SYSTEM_NOT_READY')) {
      // No front end (or an older service without the endpoint), or no session yet: nothing to
      // draw until the system's state changes.
      this.paused = true;
      this.forget();
      this.setState(e.code === 'RESOURCE_NOT_FOUND' ? 'unavailable' : 'idle');
      return 0;
    }
    if (e instanceof ApiError && e.code === 'POSE_DATA_NOT_FOUND') {
      // The front end runs but has no map yet (a session just started): keep asking.
      if (!this.map) this.setState(this.toggle.checked ? 'waiting' : 'off');
      return HEAT_POLL_MS;
    }
    if (e instanceof ApiError && e.status === 429) {
      const reset = Date.parse(String(e.details.reset_at ?? e.details.reset_time ?? ''));
      return Number.isFinite(reset) ? Math.max(HEAT_POLL_MS, reset - Date.now()) : RETRY_MS;
    }
    console.warn(describeError(e, 'Reading the floor map'));
    return RETRY_MS;
  }

  private forget(): void {
    if (!this.map) return;
    this.map = undefined;
    this.changed();
  }

  private setState(s: HeatState): void {
    this.state = s;
    this.legend.dataset.state = s;
    // The legend is there while the service makes maps (or they are merely toggled off).
    this.legend.hidden = s === 'idle' || s === 'unavailable';
    this.renderInfo();
  }

  private renderInfo(): void {
    const m = this.map?.data;
    const text =
      this.state === 'waiting'
        ? '· waiting for the first map'
        : this.state === 'shown' && m
          ? `· ${m.links.length} link${m.links.length === 1 ? '' : 's'}${this.stale ? ' · no new map' : ''}`
          : '';
    if (this.info.textContent !== text) this.info.textContent = text;
  }

  /**
   * Draws the map (the caller clips to the room): the floor image scaled so that each grid point
   * is the centre of its cell, smoothed, then each candidate as a ring. Faded once stale.
   * @param ctx the plan's context, CSS pixels
   * @param X room x (metres) to canvas x
   * @param Y room y (metres) to canvas y (the far wall up)
   * @param scale CSS pixels per metre
   * @param now performance.now()
   */
  draw(ctx: CanvasRenderingContext2D, X: (x: number) => number, Y: (y: number) => number, scale: number, now: number): void {
    const m = this.map;
    if (!m || !this.toggle.checked) return;
    const stale = now - m.arrived > STALE_MS;
    if (stale !== this.stale) {
      this.stale = stale;
      this.renderInfo();
    }
    const g = m.data.grid;
    ctx.save();
    ctx.globalAlpha = stale ? 0.4 : 1;
    ctx.imageSmoothingEnabled = true;
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(m.image, X(g.x0 - g.cell / 2), Y(g.y0 + (g.ny - 0.5) * g.cell), g.nx * g.cell * scale, g.ny * g.cell * scale);
    ctx.lineWidth = 1.5;
    for (const c of m.data.candidates) {
      ctx.strokeStyle = `rgba(255, 236, 140, ${0.25 + 0.6 * Math.min(1, Math.max(0, c.power))})`;
      ctx.beginPath();
      ctx.arc(X(c.x), Y(c.y), 5, 0, Math.PI * 2);
      ctx.stroke();
    }
    ctx.restore();
  }
}

/**
 * The floor of a map at one pixel per grid point, coloured through the ramp, rows flipped so that
 * the far wall is at the top, as on the plan.
 * @returns the image; undefined when `floor` does not hold nx * ny bytes
 */
function mapImage(m: FloorMapResource): HTMLCanvasElement | undefined {
  const { nx, ny } = m.grid;
  let bytes: string;
  try {
    bytes = atob(m.floor);
  } catch {
    return undefined;
  }
  if (!(nx > 0 && ny > 0) || bytes.length !== nx * ny) return undefined;
  const canvas = document.createElement('canvas');
  canvas.width = nx;
  canvas.height = ny;
  const ctx = canvas.getContext('2d')!;
  const img = ctx.createImageData(nx, ny);
  const px = img.data;
  for (let iy = 0; iy < ny; iy++) {
    const row = (ny - 1 - iy) * nx;
    for (let ix = 0; ix < nx; ix++) {
      const b = bytes.charCodeAt(iy * nx + ix) * 4;
      const o = (row + ix) * 4;
      px[o] = LUT[b]!;
      px[o + 1] = LUT[b + 1]!;
      px[o + 2] = LUT[b + 2]!;
      px[o + 3] = LUT[b + 3]!;
    }
  }
  ctx.putImageData(img, 0, 0);
  return canvas;
}

/** The legend's ramp: the layer's colours, low to high, over the room's floor colour as on the plan. */
function drawRamp(canvas: HTMLCanvasElement): void {
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  const img = ctx.createImageData(canvas.width, canvas.height);
  for (let x = 0; x < canvas.width; x++) {
    const b = Math.round((x / (canvas.width - 1)) * 255) * 4;
    const a = LUT[b + 3]! / 255;
    for (let y = 0; y < canvas.height; y++) {
      const o = (y * canvas.width + x) * 4;
      for (let k = 0; k < 3; k++) img.data[o + k] = ROOM_FILL[k]! + a * (LUT[b + k]! - ROOM_FILL[k]!);
      img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
}
