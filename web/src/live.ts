/**
 * The live view: the skeletons on a canvas with the reference view's proportions
 * (`environment.view`), over the room's floor projected through the same camera, and the floor
 * plan beside it. Both are drawn in `requestAnimationFrame` from the stream's latest frame, and
 * only when something changed (a new frame, an animation, a resize, or a quarter second passed),
 * so a fast stream never queues work. Each canvas's pixels follow its size on the screen (times
 * the device pixel ratio), so the drawing stays sharp however large the layout makes it. Under the
 * plan's people, when the service makes them, the physics front end's floor map (heatmap.ts).
 */
import { ViewCamera } from './camera.js';
import { h, replace } from './dom.js';
import { FloorPlan } from './floorplan.js';
import { FloorHeat } from './heatmap.js';
import type { Api } from './api.js';
import { lastPacketAge, type LinkReading } from './links.js';
import { drawPerson } from './skeleton.js';
import type { PoseStream } from './stream.js';
import type { AlertMessage, Config } from './types.js';

/** Redraw at least this often while visible (fading trails, the waiting message). */
const IDLE_REDRAW_MS = 250;
/** A frame older than this is shown dimmed, with the reason no newer one came. */
export const STALE_MS = 2000;

export class LiveView {
  readonly element: HTMLElement;
  private readonly view: HTMLCanvasElement;
  private readonly floor: HTMLCanvasElement;
  /** How many of the frame's persons the view shows. */
  private readonly viewCount: HTMLElement;
  private readonly plan = new FloorPlan();
  /** The floor map under the plan, and its legend. */
  private readonly heat: FloorHeat;
  private camera: ViewCamera | undefined;
  private drawnSeq = -1;
  /** Something other than a new frame asks for a redraw. */
  private dirty = true;
  private lastDraw = 0;
  private floorSize = { w: 0, h: 0 };
  private config: Config | undefined;
  /** CSS pixels per view pixel, as laid out. */
  private cssScale = 1;
  /** What to say on the view while no frame is shown. */
  private waiting = 'Connecting…';
  /** The links as the status last reported them; undefined while it does not. */
  private links: LinkReading | undefined;
  /** Under the floor plan: each link's state (the legend), and the radios in words. */
  private readonly linkList: HTMLUListElement;
  private readonly radioList: HTMLUListElement;
  private readonly linkCount: HTMLElement;

  /**
   * @param stream the pose stream (its latest frame is drawn)
   * @param api the REST client (the floor map's reads)
   */
  constructor(
    private readonly stream: PoseStream,
    api: Api,
  ) {
    this.heat = new FloorHeat(api, () => {
      this.dirty = true;
    });
    this.view = h('canvas', { id: 'view', class: 'view', 'aria-label': 'Skeletons in the reference view' });
    this.floor = h('canvas', { id: 'floor', class: 'floor', 'aria-label': 'Floor plan', 'aria-describedby': 'floor-radios floor-links' });
    this.viewCount = h('span', { id: 'view-count', class: 'muted' });
    this.linkCount = h('span', { id: 'link-count', class: 'muted' });
    this.linkList = h('ul', { id: 'floor-links', class: 'link-legend', 'aria-label': 'Links' });
    this.radioList = h('ul', { id: 'floor-radios', class: 'sr-only', 'aria-label': 'Radios' });
    this.element = h(
      'div',
      { class: 'live' },
      h(
        'figure',
        { class: 'panel view-panel' },
        h('figcaption', {}, 'Reference view ', this.viewCount),
        this.view,
        // Said once, where it is seen: what the skeleton is, and what the label is.
        h('p', {
          class: 'note',
          text: 'Skeletons are drawn from the keypoints the service sends. The activity in each label comes from a separate classifier and can disagree with the drawn posture.',
        }),
      ),
      h(
        'figure',
        { class: 'panel floor-panel' },
        h('figcaption', {}, 'Floor plan ', this.linkCount),
        this.floor,
        this.heat.legend,
        this.linkList,
        this.radioList,
      ),
    );
    new ResizeObserver(() => {
      const r = this.floor.getBoundingClientRect();
      this.floorSize = { w: r.width, h: r.height };
      this.dirty = true;
    }).observe(this.floor);
    new ResizeObserver(() => this.fitView()).observe(this.view);
  }

  /**
   * Sizes the view canvas's pixels to the largest rectangle of the view's proportions that fits
   * its box on the screen (CSS `object-fit: contain` places it there), times the device pixel
   * ratio. Drawing scales by canvas width / view width, so nothing else changes with the size.
   */
  private fitView(): void {
    const v = this.config?.environment.view;
    if (!v) return;
    const r = this.view.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    // Before layout (or hidden): the view's own size.
    const s = r.width > 0 && r.height > 0 ? Math.min(r.width / v.width, r.height / v.height) : 1;
    this.cssScale = s;
    const w = Math.max(1, Math.round(v.width * s * dpr));
    const hgt = Math.max(1, Math.round(v.height * s * dpr));
    if (this.view.width === w && this.view.height === hgt) return;
    this.view.width = w;
    this.view.height = hgt;
    this.dirty = true;
  }

  /** New geometry (view size, camera, room, zones). */
  setConfig(cfg: Config): void {
    this.config = cfg;
    const v = cfg.environment.view;
    // The view's proportions first (the box may follow them on a narrow screen), then its fit.
    const dpr = window.devicePixelRatio || 1;
    this.view.width = Math.round(v.width * dpr);
    this.view.height = Math.round(v.height * dpr);
    this.view.dataset.viewWidth = String(v.width);
    this.view.dataset.viewHeight = String(v.height);
    this.fitView();
    this.camera = new ViewCamera(v);
    this.heat.setEnvironment(cfg.environment.id);
    this.dirty = true;
    const deg = (d: number) => `${Math.round(d)}\u00b0`;
    replace(
      this.radioList,
      ...cfg.environment.site.radios.map((r) =>
        h('li', {
          'data-radio': r.id,
          'data-role': r.role,
          text: `${r.id}: ${r.role === 'tx' ? 'transmitter' : 'receiver'} at ${r.x} m, ${r.y} m, facing ${deg(r.yaw_deg)}, ${r.antennas} antennas`,
        }),
      ),
    );
    this.renderLinks();
  }

  /**
   * The links as a status answer gave them (each state drawn on the plan and listed under it).
   * @param reading the links and the answer's time; undefined when the service does not report links
   */
  setLinks(reading: LinkReading | undefined): void {
    // Answers can arrive out of order (the live tab's reads and the System tab's): keep the newest.
    if (reading && this.links && reading.at < this.links.at) return;
    this.links = reading;
    this.dirty = true;
    this.renderLinks();
  }

  /** The legend under the plan: one entry per reported link, in the service's order. */
  private renderLinks(): void {
    const r = this.links;
    const links = r?.links ?? [];
    replace(
      this.linkList,
      ...links.map((l) =>
        h(
          'li',
          { 'data-link': l.link_id, 'data-state': l.state, 'data-primary': String(l.primary), title: l.reason || `last packet ${lastPacketAge(l, r!.at)}` },
          h('span', { class: `swatch link-${l.state}${l.primary ? ' primary' : ''}`, 'aria-hidden': 'true' }),
          `${l.link_id} `,
          h('span', { class: `link-word link-${l.state}`, text: l.state }),
          l.primary ? h('span', { class: 'muted', text: ' \u2605 primary' }) : null,
        ),
      ),
    );
    this.linkList.dataset.at = r?.at ?? '';
    const live = links.filter((l) => l.state === 'live').length;
    this.linkCount.textContent = links.length ? `\u00b7 ${live} of ${links.length} links live` : '';
  }

  /**
   * Whether the view is on the screen (the live tab shown, the page visible): the floor map is read
   * only then.
   */
  setShown(shown: boolean): void {
    this.heat.setActive(shown);
  }

  /** The system's state changed: the floor map is asked for again if the service had none to give. */
  statusChanged(): void {
    this.heat.statusChanged();
  }

  /** Says why no frame is shown (connecting, system stopped, ...). */
  setWaiting(text: string): void {
    if (text === this.waiting) return;
    this.waiting = text;
    this.dirty = true;
  }

  alert(a: AlertMessage): void {
    this.plan.highlight(a, performance.now());
    this.dirty = true;
  }

  /**
   * One animation frame: takes in a new frame if there is one and redraws when due.
   * @param now performance.now()
   */
  tick(now: number): void {
    const frame = this.stream.latest;
    const fresh = this.stream.seq !== this.drawnSeq;
    if (fresh && frame) this.plan.addFrame(frame, now);
    if (!fresh && !this.dirty && !this.plan.animating(now) && now - this.lastDraw < IDLE_REDRAW_MS) return;
    this.drawnSeq = this.stream.seq;
    this.dirty = false;
    this.lastDraw = now;
    if (!this.config) return;
    this.drawView(now);
    this.drawFloor(now);
  }

  private drawView(now: number): void {
    const cfg = this.config!;
    const v = cfg.environment.view;
    const ctx = this.view.getContext('2d')!;
    const dpr = this.view.width / v.width;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#0d1117';
    ctx.fillRect(0, 0, v.width, v.height);
    this.drawRoom(ctx, cfg);
    const frame = this.stream.latest;
    let drawn = 0;
    const labels: Array<{ x: number; y: number; w: number }> = [];
    for (const p of frame?.persons ?? []) if (drawPerson(ctx, p, v.width, labels, this.cssScale)) drawn++;
    // What is on the canvas, for tests and tools: the frame and how many skeletons it shows.
    this.view.dataset.frame = String(frame?.frame_id ?? '');
    this.view.dataset.persons = String(drawn);
    const all = frame?.persons.length ?? 0;
    const count = !frame ? '' : drawn < all ? `\u00b7 ${drawn} of ${all} in view (the others are on the floor plan)` : `\u00b7 ${all} in view`;
    if (this.viewCount.textContent !== count) this.viewCount.textContent = count;
    if (!frame || now - this.stream.lastArrival > STALE_MS) {
      if (frame) {
        ctx.fillStyle = 'rgba(13, 17, 23, 0.65)';
        ctx.fillRect(0, 0, v.width, v.height);
      }
      ctx.fillStyle = '#c9d1d9';
      ctx.font = '16px system-ui, sans-serif';
      ctx.textAlign = 'center';
      ctx.fillText(this.waiting, v.width / 2, v.height / 2);
      ctx.textAlign = 'start';
    }
  }

  /** The floor's 1 m grid and the room's walls at floor level, projected into the view. */
  private drawRoom(ctx: CanvasRenderingContext2D, cfg: Config): void {
    const cam = this.camera;
    if (!cam) return;
    const { room_width: w, room_depth: d } = cfg.environment.site;
    const line = (x0: number, y0: number, x1: number, y1: number) => {
      // In short steps, so that a line partly behind the camera still shows its visible part.
      const steps = 24;
      let pen = false;
      for (let i = 0; i <= steps; i++) {
        const p = cam.project(x0 + ((x1 - x0) * i) / steps, y0 + ((y1 - y0) * i) / steps, 0);
        if (!p) {
          pen = false;
          continue;
        }
        if (pen) ctx.lineTo(p[0], p[1]);
        else ctx.moveTo(p[0], p[1]);
        pen = true;
      }
    };
    ctx.lineWidth = 1;
    ctx.strokeStyle = 'rgba(139,148,158,0.18)';
    ctx.beginPath();
    for (let x = 1; x < w; x++) line(x, 0, x, d);
    for (let y = 1; y < d; y++) line(0, y, w, y);
    ctx.stroke();
    ctx.strokeStyle = 'rgba(139,148,158,0.45)';
    ctx.beginPath();
    line(0, 0, w, 0);
    line(w, 0, w, d);
    line(w, d, 0, d);
    line(0, d, 0, 0);
    ctx.stroke();
  }

  private drawFloor(now: number): void {
    const { w, h: hgt } = this.floorSize;
    if (w < 10 || hgt < 10) return;
    const dpr = window.devicePixelRatio || 1;
    if (this.floor.width !== Math.round(w * dpr) || this.floor.height !== Math.round(hgt * dpr)) {
      this.floor.width = Math.round(w * dpr);
      this.floor.height = Math.round(hgt * dpr);
    }
    const ctx = this.floor.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const drawn = this.plan.draw(ctx, w, hgt, this.config!, this.stream.latest, now, this.links?.links, this.heat);
    // What the plan shows, for tests and tools: the radios, each link with the state it is drawn in,
    // and the time of the status answer those states come from.
    const radios = this.config!.environment.site.radios.map((r) => `${r.id}:${r.role}`).join(' ');
    const links = drawn.map((l) => `${l.id}:${l.state}${l.primary ? ':primary' : ''}`).join(' ');
    if (this.floor.dataset.radios !== radios) this.floor.dataset.radios = radios;
    if (this.floor.dataset.links !== links) this.floor.dataset.links = links;
    const at = this.links?.at ?? '';
    if (this.floor.dataset.linksAt !== at) this.floor.dataset.linksAt = at;
    // The floor map drawn under the plan: its time ('' when none is).
    const heat = this.heat.drawnAt;
    if (this.floor.dataset.heat !== heat) this.floor.dataset.heat = heat;
  }
}
