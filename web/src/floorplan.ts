/**
 * The floor plan: the room of `environment.site` seen from above, with the receiver's (front) wall
 * at the bottom so that left and right match the reference view; a 1 m grid, the zones of
 * `environment.zones`, the radios of `environment.site.radios` (where each array faces) and their
 * links in the states `/system/status` gives them, the camera's field of view, each tracked
 * person's position (`location`, metres) with a fading trail, and alerts highlighted where they
 * happened; under all of them, when the service makes one, the floor map (heatmap.ts).
 */
import { trackColor } from './skeleton.js';
import { LINK_STYLE, type LinkState, type LinkStatus } from './links.js';
import type { AlertMessage, Config, PoseFrame, Severity } from './types.js';

/** A layer drawn on the room's floor, under everything else (the floor map). */
export interface FloorLayer {
  /** Draws on the floor: X and Y map room metres to canvas pixels, `scale` is pixels per metre. */
  draw(ctx: CanvasRenderingContext2D, X: (x: number) => number, Y: (y: number) => number, scale: number, now: number): void;
}

/** How long a trail reaches back, and how long a track unseen keeps it. */
const TRAIL_MS = 8000;
/** How long an alert stays highlighted. */
const HIGHLIGHT_MS = 12_000;
const MARGIN_PX = 28;

export const SEVERITY_COLOR: Record<Severity, string> = {
  low: '#e3b341',
  medium: '#f0883e',
  high: '#f85149',
  critical: '#ff2d55',
};

interface TrailPoint {
  t: number;
  x: number;
  y: number;
}

interface Highlight {
  t: number;
  x: number;
  y: number;
  severity: Severity;
  zone: string | undefined;
}

/** Floor-plan state (trails, highlights) and its drawing. */
export class FloorPlan {
  private readonly trails = new Map<number, TrailPoint[]>();
  private readonly highlights: Highlight[] = [];

  /**
   * Adds the positions of a new frame to the trails (once per frame).
   * @param f the frame
   * @param now performance.now() of its arrival
   */
  addFrame(f: PoseFrame, now: number): void {
    for (const p of f.persons) {
      if (!p.location || !Number.isFinite(p.location.x) || !Number.isFinite(p.location.y)) continue;
      let trail = this.trails.get(p.track_id);
      if (!trail) this.trails.set(p.track_id, (trail = []));
      trail.push({ t: now, x: p.location.x, y: p.location.y });
    }
    for (const [id, trail] of this.trails) {
      let drop = 0;
      while (drop < trail.length && now - trail[drop]!.t > TRAIL_MS) drop++;
      if (drop === trail.length) this.trails.delete(id);
      else if (drop) trail.splice(0, drop);
    }
  }

  /** Highlights an alert's location (and zone) for a while. */
  highlight(a: AlertMessage, now: number): void {
    const loc = a.data.location;
    if (!loc || !Number.isFinite(loc.x) || !Number.isFinite(loc.y)) return;
    this.highlights.push({ t: now, x: loc.x, y: loc.y, severity: a.severity, zone: a.data.zone });
  }

  /** Whether something is animating (a redraw is due even without a new frame). */
  animating(now: number): boolean {
    while (this.highlights.length && now - this.highlights[0]!.t > HIGHLIGHT_MS) this.highlights.shift();
    return this.highlights.length > 0;
  }

  /**
   * Draws the plan.
   * @param ctx context in CSS pixels
   * @param w width, CSS pixels
   * @param hgt height, CSS pixels
   * @param cfg the configuration (site, view, zones)
   * @param frame the latest frame, if any
   * @param now performance.now()
   * @param links the links as the status last reported them; undefined while not reported
   * @param floorLayer drawn on the room's floor (clipped to its walls), under the grid and everything else
   * @returns the site's links as drawn
   */
  draw(
    ctx: CanvasRenderingContext2D,
    w: number,
    hgt: number,
    cfg: Config,
    frame: PoseFrame | undefined,
    now: number,
    links?: readonly LinkStatus[],
    floorLayer?: FloorLayer,
  ): DrawnLink[] {
    const site = cfg.environment.site;
    const s = Math.max(1, Math.min((w - 2 * MARGIN_PX) / site.room_width, (hgt - 2 * MARGIN_PX) / site.room_depth));
    const ox = (w - site.room_width * s) / 2;
    const oy = (hgt - site.room_depth * s) / 2;
    const X = (x: number) => ox + x * s;
    const Y = (y: number) => oy + (site.room_depth - y) * s;

    ctx.fillStyle = '#0d1117';
    ctx.fillRect(0, 0, w, hgt);
    ctx.fillStyle = '#131a23';
    ctx.fillRect(X(0), Y(site.room_depth), site.room_width * s, site.room_depth * s);
    if (floorLayer) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(X(0), Y(site.room_depth), site.room_width * s, site.room_depth * s);
      ctx.clip();
      floorLayer.draw(ctx, X, Y, s, now);
      ctx.restore();
    }
    ctx.strokeStyle = 'rgba(255,255,255,0.07)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let x = 1; x < site.room_width; x++) {
      ctx.moveTo(X(x), Y(0));
      ctx.lineTo(X(x), Y(site.room_depth));
    }
    for (let y = 1; y < site.room_depth; y++) {
      ctx.moveTo(X(0), Y(y));
      ctx.lineTo(X(site.room_width), Y(y));
    }
    ctx.stroke();
    ctx.strokeStyle = '#8b949e';
    ctx.lineWidth = 2;
    ctx.strokeRect(X(0), Y(site.room_depth), site.room_width * s, site.room_depth * s);

    const pulse = 0.5 + 0.5 * Math.sin(now / 150);
    const alerting = new Map<string, Highlight>();
    for (const hl of this.highlights) if (hl.zone) alerting.set(hl.zone, hl);
    ctx.font = '12px system-ui, sans-serif';
    for (const z of cfg.environment.zones) {
      if (z.polygon.length < 3) continue;
      const hl = alerting.get(z.id);
      ctx.beginPath();
      z.polygon.forEach(([x, y], i) => (i ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
      ctx.closePath();
      ctx.fillStyle = hl ? withAlpha(SEVERITY_COLOR[hl.severity], 0.15 + 0.25 * pulse) : 'rgba(88,166,255,0.08)';
      ctx.fill();
      ctx.strokeStyle = hl ? SEVERITY_COLOR[hl.severity] : 'rgba(88,166,255,0.6)';
      ctx.lineWidth = hl ? 2 : 1;
      ctx.stroke();
      // The label inside the zone's top-left corner, kept on the canvas.
      const lx = Math.min(...z.polygon.map((p) => p[0]));
      const ly = Math.max(...z.polygon.map((p) => p[1]));
      ctx.fillStyle = hl ? SEVERITY_COLOR[hl.severity] : '#79c0ff';
      ctx.fillText(z.name || z.id, clamp(X(lx) + 4, 2, w - 80), clamp(Y(ly) + 14, 12, hgt - 4));
    }

    // The camera and its horizontal field of view.
    const v = cfg.environment.view;
    const axis = ((90 - v.yaw_deg) * Math.PI) / 180;
    const half = ((v.hfov_deg / 2) * Math.PI) / 180;
    const reach = Math.max(site.room_width, site.room_depth) * 0.35;
    ctx.fillStyle = 'rgba(210,168,255,0.08)';
    ctx.beginPath();
    ctx.moveTo(X(v.x), Y(v.y));
    ctx.lineTo(X(v.x + reach * Math.cos(axis + half)), Y(v.y + reach * Math.sin(axis + half)));
    ctx.lineTo(X(v.x + reach * Math.cos(axis - half)), Y(v.y + reach * Math.sin(axis - half)));
    ctx.closePath();
    ctx.fill();
    marker(ctx, X(v.x), Y(v.y), '#d2a8ff', 'camera', true);
    const drawn = drawSite(ctx, w, site.radios, links, X, Y, s);

    for (const [id, trail] of this.trails) {
      ctx.lineWidth = 2;
      for (let i = 1; i < trail.length; i++) {
        const a = trail[i - 1]!;
        const b = trail[i]!;
        ctx.strokeStyle = trackColor(id, 0.7 * Math.max(0, 1 - (now - b.t) / TRAIL_MS));
        ctx.beginPath();
        ctx.moveTo(X(a.x), Y(a.y));
        ctx.lineTo(X(b.x), Y(b.y));
        ctx.stroke();
      }
    }
    for (const p of frame?.persons ?? []) {
      if (!p.location || !Number.isFinite(p.location.x)) continue;
      const x = X(p.location.x);
      const y = Y(p.location.y);
      ctx.fillStyle = trackColor(p.track_id);
      ctx.beginPath();
      ctx.arc(x, y, 6, 0, Math.PI * 2);
      ctx.fill();
      ctx.fillStyle = '#e6edf3';
      ctx.fillText(`#${p.track_id}`, x + 8, y - 6);
    }

    for (const hl of this.highlights) {
      const age = (now - hl.t) / HIGHLIGHT_MS;
      ctx.strokeStyle = withAlpha(SEVERITY_COLOR[hl.severity], 1 - age);
      ctx.lineWidth = 3;
      ctx.beginPath();
      ctx.arc(X(hl.x), Y(hl.y), 10 + 10 * pulse, 0, Math.PI * 2);
      ctx.stroke();
    }
    if (!site.known) {
      ctx.fillStyle = '#8b949e';
      ctx.fillText('site not measured: the default room', 6, hgt - 8);
    }
    return drawn;
  }
}

/** A link of the site as the plan drew it: its state, or `unreported` while the status gives none. */
export interface DrawnLink {
  id: string;
  state: LinkState | 'unreported';
  primary: boolean;
}

/** Half the angle of the wedge that shows where an array faces, and its reach (metres). */
const FACING_HALF_RAD = Math.PI / 3;
const FACING_REACH_M = 0.55;
const RADIO_COLOR = '#e6edf3';

/**
 * The radios and their links: each link a line from the transmitter to its receiver in the colour
 * of its state (solid when live, dashed otherwise; the primary with a halo), each array's facing
 * as a wedge with an arrow, the transmitter a ringed circle and each receiver a diamond, each
 * named by its id.
 * A link the status does not report (an older service, or no session) is a thin faint line.
 */
function drawSite(
  ctx: CanvasRenderingContext2D,
  w: number,
  radios: Config['environment']['site']['radios'],
  links: readonly LinkStatus[] | undefined,
  X: (x: number) => number,
  Y: (y: number) => number,
  scale: number,
): DrawnLink[] {
  const drawn: DrawnLink[] = [];
  const byId = new Map((links ?? []).map((l) => [l.link_id, l]));
  const tx = radios.find((r) => r.role === 'tx');
  for (const rx of tx ? radios.filter((r) => r.role === 'rx') : []) {
    const id = `${tx!.id}-${rx.id}`;
    const l = byId.get(id);
    const x0 = X(tx!.x);
    const y0 = Y(tx!.y);
    const x1 = X(rx.x);
    const y1 = Y(rx.y);
    drawn.push({ id, state: l?.state ?? 'unreported', primary: l?.primary ?? false });
    if (!l) {
      ctx.strokeStyle = 'rgba(139,148,158,0.35)';
      ctx.lineWidth = 1;
      ctx.setLineDash([]);
      line(ctx, x0, y0, x1, y1);
      continue;
    }
    const style = LINK_STYLE[l.state];
    if (l.primary) {
      ctx.strokeStyle = withAlpha(style.color, 0.22);
      ctx.lineWidth = 9;
      ctx.setLineDash([]);
      line(ctx, x0, y0, x1, y1);
    }
    ctx.strokeStyle = style.color;
    ctx.lineWidth = l.primary ? 3 : 2.5;
    ctx.setLineDash(style.dash);
    line(ctx, x0, y0, x1, y1);
  }
  ctx.setLineDash([]);

  for (const r of radios) {
    const x = X(r.x);
    const y = Y(r.y);
    // Room angles turn from +x towards +y; on the screen +y is up, so the angle changes sign.
    const a = (-r.yaw_deg * Math.PI) / 180;
    const reach = FACING_REACH_M * scale;
    ctx.fillStyle = 'rgba(230,237,243,0.09)';
    ctx.strokeStyle = 'rgba(230,237,243,0.3)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.arc(x, y, reach, a - FACING_HALF_RAD, a + FACING_HALF_RAD);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
    // The arrow along the array's broadside.
    const ex = x + 0.8 * reach * Math.cos(a);
    const ey = y + 0.8 * reach * Math.sin(a);
    ctx.strokeStyle = RADIO_COLOR;
    ctx.lineWidth = 1.5;
    line(ctx, x, y, ex, ey);
    ctx.fillStyle = RADIO_COLOR;
    ctx.beginPath();
    ctx.moveTo(ex + 6 * Math.cos(a), ey + 6 * Math.sin(a));
    ctx.lineTo(ex + 4 * Math.cos(a + Math.PI / 2), ey + 4 * Math.sin(a + Math.PI / 2));
    ctx.lineTo(ex + 4 * Math.cos(a - Math.PI / 2), ey + 4 * Math.sin(a - Math.PI / 2));
    ctx.closePath();
    ctx.fill();

    ctx.beginPath();
    if (r.role === 'tx') {
      ctx.arc(x, y, 6, 0, Math.PI * 2);
      ctx.fill();
      ctx.strokeStyle = RADIO_COLOR;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.arc(x, y, 10, 0, Math.PI * 2);
      ctx.stroke();
    } else {
      ctx.moveTo(x, y - 7);
      ctx.lineTo(x + 7, y);
      ctx.lineTo(x, y + 7);
      ctx.lineTo(x - 7, y);
      ctx.closePath();
      ctx.fill();
    }
    // The name behind an array that faces right (the room is on that side), else on its right.
    const label = r.id;
    const tw = ctx.measureText(label).width;
    const left = Math.cos(a) > 0.5;
    ctx.fillStyle = RADIO_COLOR;
    ctx.fillText(label, clamp(left ? x - 13 - tw : x + 13, 2, w - tw - 2), y + 4);
  }
  return drawn;
}

function line(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}

/** `#rrggbb` with an alpha. */
function withAlpha(hex: string, alpha: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${clamp(alpha, 0, 1)})`;
}

function marker(ctx: CanvasRenderingContext2D, x: number, y: number, color: string, label: string, labelLeft = false): void {
  ctx.fillStyle = color;
  ctx.beginPath();
  ctx.rect(x - 5, y - 5, 10, 10);
  ctx.fill();
  ctx.fillStyle = '#e6edf3';
  ctx.fillText(label, labelLeft ? x - 9 - ctx.measureText(label).width : x + 9, y + 4);
}
