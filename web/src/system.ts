/**
 * The system panel: the status and components of `GET /system/status` (Form B), the start, stop
 * and restart controls (`POST /system/start|stop|restart`; operators and admins, disabled with a
 * note for viewers, and switched by the state the system is in), and the configuration form.
 * While shown it polls the status every few seconds, faster while a transition runs.
 */
import { describeError } from './api.js';
import type { ConfigForm } from './configForm.js';
import { dateTime, duration, h, num, replace } from './dom.js';
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

  constructor(
    private readonly session: Session,
    readonly config: ConfigForm,
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
      this.render(r.data);
    } catch (e) {
      this.message.textContent = describeError(e, 'Reading the system status');
    }
    if (this.visible) this.timer = setTimeout(() => void this.poll(), MOVING.has(this.current) ? FAST_POLL_MS : POLL_MS);
  }

  private render(s: Status): void {
    this.setState(s.status);
    const row = (k: string, v: unknown) => h('tr', {}, h('th', { text: k }), h('td', { text: typeof v === 'number' ? num(v, 2) : String(v ?? '-') }));
    const perf = Object.entries(s.performance ?? {}).map(([k, v]) => {
      const [label, text] = figure(k, v);
      return h('tr', { 'data-figure': k }, h('th', { text: label }), h('td', { text }));
    });
    const comps = Object.entries(s.components ?? {}).map(([name, c]) => {
      const { status, ...rest } = c;
      return h(
        'tr',
        { 'data-component': name },
        h('th', { text: name.replace(/_/g, ' ') }),
        h('td', {}, h('span', { class: `state state-${String(status)}`, text: String(status ?? '-') })),
        h('td', { class: 'muted', text: Object.entries(rest).map(([k, v]) => `${k.replace(/_/g, ' ')}: ${componentValue(v)}`).join(' · ') }),
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
      s.steps?.length
        ? h('p', { class: 'muted', text: `Last transition: ${s.steps.map((t) => `${t.step} ${t.status}${t.duration_ms !== undefined ? ` (${num(t.duration_ms, 0)} ms)` : ''}`).join(', ')}` })
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
