/**
 * The alerts feed: each alert with its severity, time and location, newest first; alerts that
 * arrive live are also highlighted on the floor plan (by the caller) and a `critical` one raises a
 * banner and, when the user switched it on, a sound made with WebAudio (no sound files). The feed
 * starts with the last day's alerts from `GET /analytics/events?event_type=alert`.
 */
import type { Api } from './api.js';
import { clock, h, num, replace } from './dom.js';
import type { ActivityEvent, AlertMessage, Severity } from './types.js';

/** Entries kept in the feed. */
const MAX_ENTRIES = 200;
/** Alerts loaded at start: the last day's newest. */
const BACKLOG = 20;

/** What the feed shows of an alert, from the WebSocket or the stored events. */
interface Entry {
  id: string;
  type: string;
  severity: Severity;
  time: string;
  person: number | null;
  x: number | undefined;
  y: number | undefined;
  zone: string | undefined;
}

function fromMessage(a: AlertMessage): Entry {
  const loc = a.data.location;
  const meta = a.data.metadata ?? {};
  return {
    id: a.alert_id,
    type: a.alert_type,
    severity: a.severity,
    time: a.timestamp,
    person: a.data.track_id ?? a.data.person_id,
    x: loc?.x,
    y: loc?.y,
    zone: typeof meta.zone_name === 'string' ? meta.zone_name : a.data.zone,
  };
}

function fromEvent(e: ActivityEvent): Entry {
  const meta = e.metadata ?? {};
  return {
    id: e.event_id,
    type: e.type,
    severity: e.severity,
    time: e.timestamp,
    person: e.track_id ?? e.person_id,
    x: e.location?.x,
    y: e.location?.y,
    zone: typeof meta.zone_name === 'string' ? meta.zone_name : e.zone,
  };
}

/** Where an entry happened, in words. */
function where(e: Entry): string {
  const at = Number.isFinite(e.x) && Number.isFinite(e.y) ? `(${num(e.x, 1)} m, ${num(e.y, 1)} m)` : 'position unknown';
  return e.zone ? `${e.zone} ${at}` : at;
}

/** Two short falling tones: the `critical` cue. */
function beep(ctx: AudioContext): void {
  const t = ctx.currentTime;
  for (const [i, f] of [880, 660].entries()) {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.frequency.value = f;
    gain.gain.setValueAtTime(0.0001, t + i * 0.22);
    gain.gain.exponentialRampToValueAtTime(0.25, t + i * 0.22 + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t + i * 0.22 + 0.2);
    osc.connect(gain).connect(ctx.destination);
    osc.start(t + i * 0.22);
    osc.stop(t + i * 0.22 + 0.21);
  }
}

export class AlertsFeed {
  readonly element: HTMLElement;
  /** The page-wide banner for critical alerts (placed by the caller). */
  readonly banner: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly seen = new Set<string>();
  private audio: AudioContext | undefined;
  private soundOn = false;

  constructor() {
    this.list = h('ol', { id: 'alerts', class: 'feed', 'aria-live': 'polite' });
    const sound = h('input', {
      type: 'checkbox',
      id: 'alert-sound',
      onchange: (ev: Event) => {
        this.soundOn = (ev.target as HTMLInputElement).checked;
        // Browsers start audio only from a user's gesture: this change is one.
        if (this.soundOn) void (this.audio ??= new AudioContext()).resume();
      },
    });
    this.element = h(
      'section',
      { class: 'panel alerts' },
      h('header', { class: 'panel-head' }, h('h2', { text: 'Alerts' }), h('label', { class: 'inline' }, sound, ' Sound for critical')),
      this.list,
    );
    this.banner = h('div', { id: 'critical-banner', class: 'banner critical', role: 'alert', hidden: true });
  }

  /** Loads the last day's alerts (stored) into the feed, below any that already arrived. */
  async loadRecent(api: Api): Promise<void> {
    const start = new Date(Date.now() - 86_400_000).toISOString();
    // Form A (`{events, pagination}`, paged by `limit`), whatever the deployment's default form.
    const r = await api.request<ActivityEvent[] | { events?: ActivityEvent[] }>('GET', 'analytics/events', {
      form: 'a',
      query: { event_type: 'alert', start_time: start, limit: BACKLOG },
    });
    for (const e of Array.isArray(r.data) ? r.data : (r.data.events ?? [])) this.add(fromEvent(e), false);
  }

  /**
   * An alert that arrived on the stream.
   * @returns false when it was already in the feed
   */
  push(a: AlertMessage): boolean {
    const e = fromMessage(a);
    if (!this.add(e, true)) return false;
    if (a.severity === 'critical') this.critical(e);
    return true;
  }

  private add(e: Entry, live: boolean): boolean {
    if (this.seen.has(e.id)) return false;
    this.seen.add(e.id);
    const li = h(
      'li',
      { class: `alert sev-${e.severity}${live ? ' new' : ''}`, 'data-alert-id': e.id, 'data-severity': e.severity },
      h('span', { class: `badge sev-${e.severity}`, text: e.severity }),
      h('time', { datetime: e.time, text: clock(e.time) }),
      h('span', { class: 'what', text: `${e.type.replace(/_/g, ' ')}${e.person !== null ? ` · #${e.person}` : ''}` }),
      h('span', { class: 'where', text: where(e) }),
    );
    // Live alerts go on top; the backlog (newest first) goes below what is there.
    if (live) this.list.prepend(li);
    else this.list.append(li);
    while (this.list.children.length > MAX_ENTRIES) this.list.lastElementChild!.remove();
    return true;
  }

  private critical(e: Entry): void {
    replace(
      this.banner,
      h('strong', { text: 'Critical alert: ' }),
      `${e.type.replace(/_/g, ' ')}${e.person !== null ? ` of #${e.person}` : ''} at ${where(e)}, ${clock(e.time)}`,
      h('button', { type: 'button', class: 'ghost', onclick: () => (this.banner.hidden = true) }, 'Dismiss'),
    );
    this.banner.hidden = false;
    // Restart the flash animation for each new critical alert.
    this.banner.classList.remove('flash');
    void this.banner.offsetWidth;
    this.banner.classList.add('flash');
    if (this.soundOn && this.audio) beep(this.audio);
  }
}
