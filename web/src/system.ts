/**
 * The system panel: the status and components of `GET /system/status` (Form B), the start, stop
 * and restart controls (`POST /system/start|stop|restart`; operators and admins, disabled with a
 * note for viewers, and switched by the state the system is in), and the configuration form.
 * While shown it polls the status every few seconds, faster while a transition runs. The links of
 * the site (docs/service.md "Links") get a table of their own.
 */
import { describeError } from './api.js';
import type { ConfigForm } from './configForm.js';
import { clock, dateTime, duration, h, num, replace } from './dom.js';
import { lastPacketAge, lossPercent, readLinks, type LinkReading, type LinkStatus } from './links.js';
import type { Session } from './session.js';

const POLL_MS = 5000;
const FAST_POLL_MS = 500;
/** States a transition passes through. */
const MOVING = new Set(['starting', 'stopping', 'restarting']);
/** In which states each action makes sense (DECISIONS "System states"). */
const ALLOWED: Record<Action, ReadonlySet<string>> = {
  start: new Set(['stopped', 'error']),
  stop: new Set(['running']),
  restart: new Set(['running', 'stopped', 'error']),
};

type Action = 'start' | 'stop' | 'restart';

/**
 * The performance figures of `GET /system/status` (Form B) in words, with their units
 * (docs/service.md: CPU is this process's share of the whole machine, memory its resident size as
 * a share of the machine's memory). Figures the service adds later are shown by their name.
 */
const FIGURES: Record<string, { label: string; unit: string; digits: number }> = {
  frames_processed: { label: 'CSI frames processed', unit: '', digits: 0 },
  pose_frames: { label: 'pose frames', unit: '', digits: 0 },
  average_fps: { label: 'CSI rate (last 5 s)', unit: 'frames/s', digits: 1 },
  average_latency_ms: { label: 'pipeline latency', unit: 'ms', digits: 1 },
  cpu_usage: { label: 'CPU', unit: '% of the machine', digits: 1 },
  memory_usage: { label: 'memory (resident)', unit: '% of the machine', digits: 1 },
  gpu_usage: { label: 'GPU', unit: '% (no GPU: runs on the CPU)', digits: 0 },
};

/**
 * A figure with its unit: by {@link FIGURES}, else by the unit its name ends with.
 * @param key the field name
 * @param v its value
 * @returns label and text, e.g. ['CPU', '7.3 % of the machine']
 */
export function figure(key: string, v: unknown): [string, string] {
  const known = FIGURES[key];
  if (known) return [known.label, typeof v === 'number' ? `${num(v, known.digits)}${known.unit ? ` ${known.unit}` : ''}` : String(v ?? '-')];
  const unit = /_ms$/.test(key) ? ' ms' : /_seconds$/.test(key) ? ' s' : /_(percent|usage)$/.test(key) ? ' %' : '';
  return [key.replace(/_(ms|seconds)$/, '').replace(/_/g, ' '), typeof v === 'number' ? `${num(v, 2)}${unit}` : String(v ?? '-')];
}

interface Status {
  status: string;
  session_id?: string | null;
  uptime_seconds?: number;
  started_at?: string | null;
  version?: string;
  performance?: Record<string, unknown>;
  components?: Record<string, Record<string, unknown>>;
  steps?: Array<{ step: string; status: string; duration_ms?: number }>;
  error?: { code?: string; message?: string } | null;
}

/** A component's field in words: numbers rounded, times local, lists joined (`none` when empty). */
function componentValue(v: unknown): string {
  if (typeof v === 'number') return num(v, 2);
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/.test(v)) return dateTime(v);
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x))).join(', ') : 'none';
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  return String(v ?? '-');
}

export class SystemPanel {
  readonly element: HTMLElement;
  private readonly state: HTMLElement;
  private readonly details: HTMLElement;
  private readonly message: HTMLElement;
  private readonly roleNote: HTMLElement;
  private readonly buttons: Record<Action, HTMLButtonElement>;
  private current = 'unknown';
  private timer: ReturnType<typeof setTimeout> | undefined;
  private visible = false;
  private busy = false;
  private formLoaded = false;

  /**
   * @param session the signed-in session
   * @param config the configuration form shown beside the status
   * @param onLinks told the links of each status read (undefined when the service reports none)
   */
  constructor(
    private readonly session: Session,
    readonly config: ConfigForm,
    private readonly onLinks: (r: LinkReading | undefined) => void = () => undefined,
  ) {
    const button = (a: Action, label: string) => h('button', { type: 'button', 'data-action': a, onclick: () => void this.act(a) }, label);
    this.buttons = { start: button('start', 'Start'), stop: button('stop', 'Stop'), restart: button('restart', 'Restart') };
    this.state = h('span', { id: 'system-state', class: 'state' });
    this.details = h('div', { class: 'status-details' });
    this.message = h('p', { id: 'system-message', class: 'form-message', role: 'status' });
    this.roleNote = h('p', { class: 'form-message note' });
    this.element = h(
      'div',
      { class: 'system' },
      h(
        'section',
        { class: 'panel' },
        h('header', { class: 'panel-head' }, h('h2', { text: 'System' }), this.state),
        h('div', { class: 'controls' }, this.buttons.start, this.buttons.stop, this.buttons.restart),
        this.roleNote,
        this.message,
        this.details,
      ),
      config.element,
    );
    this.setRole();
  }

  /** Shows the panel: loads the configuration form once, then polls the status while shown. */
  show(): void {
    if (this.visible) return;
    this.visible = true;
    void this.poll();
    if (!this.formLoaded) {
      this.formLoaded = true;
      void this.config.load(this.session.canConfigure);
    }
  }

  hide(): void {
    this.visible = false;
    clearTimeout(this.timer);
  }

  /** A state pushed on the stream (`system_status.status.state`). */
  pushedState(state: string): void {
    if (state !== this.current) {
      this.setState(state);
      if (this.visible) void this.poll();
    }
  }

  /** Enables or disables the controls for the session's role. */
  setRole(): void {
    this.roleNote.textContent = this.session.canOperate ? '' : `Start, stop and restart need the operator role; you are ${this.session.role}.`;
    this.roleNote.hidden = this.session.canOperate;
    this.setState(this.current);
  }

  private setState(state: string): void {
    this.current = state;
    this.state.textContent = state;
    this.state.className = `state state-${state}`;
    for (const [a, b] of Object.entries(this.buttons) as Array<[Action, HTMLButtonElement]>) {
      b.disabled = !this.session.canOperate || this.busy || !ALLOWED[a].has(state);
      b.title = this.session.canOperate ? '' : 'needs the operator role';
    }
  }

  private async poll(): Promise<void> {
    clearTimeout(this.timer);
    try {
      const r = await this.session.api.request<Status>('GET', 'system/status');
      const links = readLinks(r.data);
      const reading = links ? { links, at: r.timestamp ?? new Date().toISOString() } : undefined;
      this.render(r.data, reading);
      // Which answer the panel shows (the service's time of it), for tests and tools.
      this.details.dataset.at = r.timestamp ?? '';
      this.onLinks(reading);
    } catch (e) {
      this.message.textContent = describeError(e, 'Reading the system status');
    }
    if (this.visible) this.timer = setTimeout(() => void this.poll(), MOVING.has(this.current) ? FAST_POLL_MS : POLL_MS);
  }

  private render(s: Status, links: LinkReading | undefined): void {
    this.setState(s.status);
    const row = (k: string, v: unknown) => h('tr', {}, h('th', { text: k }), h('td', { text: typeof v === 'number' ? num(v, 2) : String(v ?? '-') }));
    const perf = Object.entries(s.performance ?? {}).map(([k, v]) => {
      const [label, text] = figure(k, v);
      return h('tr', { 'data-figure': k }, h('th', { text: label }), h('td', { text }));
    });
    const comps = Object.entries(s.components ?? {}).map(([name, c]) => {
      const { status, ...rest } = c;
      // The links have their own table.
      if (Array.isArray(rest.links)) delete rest.links;
      return h(
        'tr',
        { 'data-component': name },
        h('th', { text: name.replace(/_/g, ' ') }),
        h('td', {}, h('span', { class: `state state-${String(status)}`, text: String(status ?? '-') })),
        h('td', {
          class: 'muted',
          text: Object.entries(rest)
            .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${componentValue(v)}`)
            .join(' · '),
        }),
      );
    });
    replace(
      this.details,
      h(
        'table',
        { class: 'kv' },
        row('session', s.session_id),
        row('uptime', s.uptime_seconds !== undefined ? duration(s.uptime_seconds) : '-'),
        row('started', s.started_at ? dateTime(s.started_at) : '-'),
        row('version', s.version),
        ...perf,
      ),
      h('h3', { text: 'Components' }),
      h('table', { class: 'components' }, ...comps),
      links ? linksTable(links, s.status) : null,
      s.steps?.length
        ? h('p', {
            class: 'muted',
            text: `Last transition: ${s.steps.map((t) => `${t.step} ${t.status}${t.duration_ms !== undefined ? ` (${num(t.duration_ms, 0)} ms)` : ''}`).join(', ')}`,
          })
        : null,
      s.error?.message ? h('p', { class: 'form-message error', text: `Error: ${s.error.message} (${s.error.code ?? ''})` }) : null,
    );
  }

  private async act(a: Action): Promise<void> {
    this.busy = true;
    this.setState(this.current);
    this.message.className = 'form-message note';
    this.message.textContent = `${a}…`;
    try {
      const r = await this.session.api.request<{ status: string }>('POST', `system/${a}`);
      this.message.textContent = `${a[0]!.toUpperCase()}${a.slice(1)} accepted: the system is ${r.data.status}.`;
      this.current = r.data.status;
    } catch (e) {
      this.message.className = 'form-message error';
      this.message.textContent = describeError(e, `${a[0]!.toUpperCase()}${a.slice(1)}`);
    } finally {
      this.busy = false;
      this.setState(this.current);
      void this.poll();
    }
  }
}

/**
 * The links of a status answer as a table: state (and why it is not live), rate, loss, last
 * packet (how long before the answer), lag behind the primary, the layout of the last frame, and
 * which link the model reads.
 * @param r the links and the answer's time
 * @param state the system's state (no session runs, no links are listed)
 */
function linksTable(r: LinkReading, state: string): HTMLElement {
  const head = h('h3', { text: 'Links' });
  if (!r.links.length)
    return h(
      'div',
      { class: 'links-block' },
      head,
      h('p', {
        id: 'links-none',
        class: 'muted',
        'data-at': r.at,
        text: state === 'running' ? 'No link has reported yet.' : `None: the system is ${state}, no session runs.`,
      }),
    );
  // Each link's row, and under it, when it is not live, why (the service's words).
  const rows = (l: LinkStatus) => [
    h(
      'tr',
      { 'data-link': l.link_id, 'data-state': l.state },
      h('th', { 'data-col': 'link', text: l.link_id }),
      h('td', { 'data-col': 'state' }, h('span', { class: `link-word link-${l.state}`, text: l.state })),
      h('td', { 'data-col': 'rate', class: 'num', text: num(l.rate_hz, 1) }),
      h('td', { 'data-col': 'loss', class: 'num', text: lossPercent(l) }),
      h('td', { 'data-col': 'last', text: lastPacketAge(l, r.at) }),
      h('td', { 'data-col': 'lag', class: 'num', text: num(l.lag_ms, 1) }),
      h('td', { 'data-col': 'layout', text: l.layout ?? '-' }),
      h('td', { 'data-col': 'primary', text: l.primary ? '\u2605' : '' }),
    ),
    l.reason ? h('tr', { class: 'reason', 'data-reason-of': l.link_id }, h('td', { colspan: 8, class: 'muted', text: l.reason })) : null,
  ];
  const th = (t: string, num = false) => h('th', { scope: 'col', text: t, class: num ? 'num' : undefined });
  return h(
    'div',
    { class: 'links-block' },
    head,
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { id: 'links-table', class: 'links', 'data-at': r.at },
        h('caption', { class: 'muted', text: `As of ${clock(r.at)}; rate and loss over the last 5 s; \u2605 the primary link, the one the model reads.` }),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            th('link'),
            th('state'),
            th('rate (Hz)', true),
            th('loss (%)', true),
            th('last packet'),
            th('lag (ms)', true),
            th('layout'),
            th('primary'),
          ),
        ),
        h('tbody', {}, ...r.links.flatMap(rows)),
      ),
    ),
  );
}
