/**
 * The csipose dashboard (issue 12, docs/dashboard.md): sign-in, then the live view with the
 * alerts feed, the system panel and analytics. It uses only the service's public interface: the
 * REST endpoints under `api/v1/` and the `/ws/pose` WebSocket.
 */
import './style.css';
import { AlertsFeed } from './alerts.js';
import { AnalyticsPanel } from './analytics.js';
import { ApiError, describeError } from './api.js';
import { ConfigForm } from './configForm.js';
import { h, num, replace } from './dom.js';
import { LiveView, STALE_MS } from './live.js';
import { Session } from './session.js';
import { PoseStream, type StreamState } from './stream.js';
import { readLinks } from './links.js';
import { SystemPanel } from './system.js';
import type { AlertMessage, Config } from './types.js';

const root = document.getElementById('root')!;
/** How often the header's figures are rewritten (not per animation frame: text costs layout). */
const STATS_MS = 500;
/** How often the live tab reads the links' states (`GET /system/status`, the health limit: 10000 an hour). */
const LINKS_POLL_MS = 5000;
/** At most one configuration reload per this long (the configuration rate limit is 50 an hour). */
const CONFIG_RELOAD_MS = 30_000;

type Tab = 'live' | 'system' | 'analytics';

/** The signed-in dashboard. */
class App {
  private readonly stream: PoseStream;
  private readonly live: LiveView;
  private readonly alerts = new AlertsFeed();
  private readonly system: SystemPanel;
  private readonly analytics: AnalyticsPanel;
  private readonly tabs = new Map<Tab, { button: HTMLButtonElement; section: HTMLElement }>();
  private readonly stats = {
    conn: h('span', { id: 'conn', class: 'conn' }),
    fps: h('span', { id: 'fps' }),
    latency: h('span', { id: 'latency' }),
    persons: h('span', { id: 'persons' }),
  };
  private readonly roleBadge = h('span', { id: 'role', class: 'badge role' });
  private readonly envName = h('span', { class: 'env' });
  private tab: Tab = 'live';
  private config: Config | undefined;
  private configLoadedAt = 0;
  private systemState = '';
  private raf = 0;
  private statsTimer: ReturnType<typeof setInterval> | undefined;
  private configTimer: ReturnType<typeof setTimeout> | undefined;
  private linksTimer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  /** The live view is on the screen only while its tab is shown and the page visible. */
  private readonly onVisibility = (): void => this.live.setShown(this.running && this.tab === 'live' && !document.hidden);

  constructor(private readonly session: Session) {
    this.stream = new PoseStream({
      token: () => session.wsToken(),
      onAlert: (a) => this.onAlert(a),
      onStatus: (s) => {
        // A new state changes the links (none while stopped): read them at once.
        if (s.state !== this.systemState && this.tab === 'live') void this.pollLinks();
        // A new state may bring another model, one that makes floor maps (or not).
        if (s.state !== this.systemState) this.live.statusChanged();
        this.systemState = s.state;
        this.system.pushedState(s.state);
      },
      onState: (s, wait) => this.onStreamState(s, wait),
      // A refused upgrade or a 4401: do the credentials still work? A 401 renews a token once
      // (the REST client does) and, when that fails, ends the session.
      checkCredentials: async () => {
        try {
          await session.api.request('GET', 'system/status');
          return true;
        } catch (e) {
          return !(e instanceof ApiError && e.status === 401);
        }
      },
    });
    this.live = new LiveView(this.stream, session.api);
    // The system panel's status reads keep the floor plan's links current while it is shown.
    this.system = new SystemPanel(session, new ConfigForm(session.api, (c) => this.setConfig(c as unknown as Config)), (r) => this.live.setLinks(r));
    this.analytics = new AnalyticsPanel(session.api);
    session.onEnd = (reason) => {
      this.stop();
      showSignIn(reason);
    };
    session.onRenewed = () => this.stream.renew();
    session.onRole = () => {
      this.roleBadge.textContent = session.role;
      this.system.setRole();
      this.system.config.setEditable(session.canConfigure);
    };
  }

  /** Builds the page and starts the stream, the drawing loop and the first loads. */
  start(): void {
    const liveTab = h('div', { class: 'tab-live' }, this.live.element, this.alerts.element);
    const sections: Record<Tab, [string, HTMLElement]> = {
      live: ['Live', liveTab],
      system: ['System', this.system.element],
      analytics: ['Analytics', this.analytics.element],
    };
    const nav = h('nav', { class: 'tabs', role: 'tablist' });
    const main = h('main', {});
    for (const [key, [label, content]] of Object.entries(sections) as Array<[Tab, [string, HTMLElement]]>) {
      const button = h('button', { type: 'button', role: 'tab', id: `tab-${key}`, onclick: () => this.show(key) }, label);
      const section = h('section', { id: `panel-${key}`, role: 'tabpanel', 'aria-labelledby': `tab-${key}`, hidden: key !== this.tab }, content);
      this.tabs.set(key, { button, section });
      nav.append(button);
      main.append(section);
    }
    this.roleBadge.textContent = this.session.role;
    replace(
      root,
      h(
        'header',
        { class: 'top' },
        h('span', { class: 'brand', text: 'csipose' }),
        this.envName,
        nav,
        h('span', { class: 'stats' }, this.stats.conn, this.stats.fps, this.stats.latency, this.stats.persons),
        h(
          'span',
          { class: 'user' },
          h('span', { id: 'user', text: this.session.user }),
          this.roleBadge,
          h('button', { type: 'button', id: 'sign-out', class: 'ghost', onclick: () => void this.signOut() }, 'Sign out'),
        ),
      ),
      this.alerts.banner,
      main,
    );
    this.running = true;
    document.addEventListener('visibilitychange', this.onVisibility);
    this.show(this.tab);
    this.stream.start();
    const loop = (t: number) => {
      if (this.tab === 'live') this.live.tick(t);
      this.raf = requestAnimationFrame(loop);
    };
    this.raf = requestAnimationFrame(loop);
    this.statsTimer = setInterval(() => this.updateStats(), STATS_MS);
    void this.loadConfig();
    this.alerts.loadRecent(this.session.api).catch((e: unknown) => console.warn(describeError(e, 'Loading recent alerts')));
  }

  stop(): void {
    this.running = false;
    document.removeEventListener('visibilitychange', this.onVisibility);
    this.live.setShown(false);
    this.stream.stop();
    cancelAnimationFrame(this.raf);
    clearInterval(this.statsTimer);
    clearTimeout(this.configTimer);
    clearTimeout(this.linksTimer);
    this.system.hide();
    this.analytics.hide();
  }

  private show(tab: Tab): void {
    this.tab = tab;
    // The stylesheet lays the live tab out to fill the window (and only that tab).
    root.dataset.tab = tab;
    for (const [key, t] of this.tabs) {
      t.section.hidden = key !== tab;
      t.button.setAttribute('aria-selected', String(key === tab));
    }
    if (tab === 'system') this.system.show();
    else this.system.hide();
    if (tab === 'live') void this.pollLinks();
    else clearTimeout(this.linksTimer);
    this.onVisibility();
    if (tab === 'analytics') this.analytics.show();
    else this.analytics.hide();
  }

  /** Reads the links' states for the floor plan, then again every few seconds while the live tab is shown. */
  private async pollLinks(): Promise<void> {
    clearTimeout(this.linksTimer);
    try {
      const r = await this.session.api.request('GET', 'system/status');
      const links = readLinks(r.data);
      this.live.setLinks(links ? { links, at: r.timestamp ?? new Date().toISOString() } : undefined);
    } catch (e) {
      if (!this.running) return;
      // Unknown states are not drawn as if they were the last ones known.
      this.live.setLinks(undefined);
      console.warn(describeError(e, 'Reading the links'));
    }
    // One timer, however many reads were under way (a tab switch and a new state at once).
    clearTimeout(this.linksTimer);
    if (this.tab === 'live' && this.running) this.linksTimer = setTimeout(() => void this.pollLinks(), LINKS_POLL_MS);
  }

  private async loadConfig(): Promise<void> {
    this.configLoadedAt = Date.now();
    try {
      const r = await this.session.api.request<Config>('GET', 'config', { form: 'a' });
      this.setConfig(r.data);
    } catch (e) {
      this.live.setWaiting(describeError(e, 'Loading the room geometry'));
      if (!(e instanceof ApiError && e.status === 401)) this.configTimer = setTimeout(() => void this.loadConfig(), CONFIG_RELOAD_MS);
    }
  }

  private setConfig(c: Config): void {
    this.config = c;
    this.envName.textContent = c.environment.name;
    this.live.setConfig(c);
  }

  private onAlert(a: AlertMessage): void {
    if (!this.alerts.push(a)) return;
    this.live.alert(a);
    // An alert from a zone added since the configuration was read: read it again to draw the zone.
    const zone = a.data.zone;
    if (zone && this.config && !this.config.environment.zones.some((z) => z.id === zone) && Date.now() - this.configLoadedAt > CONFIG_RELOAD_MS)
      void this.loadConfig();
  }

  private onStreamState(s: StreamState, wait?: number): void {
    this.stats.conn.className = `conn conn-${s}`;
    this.stats.conn.textContent = s === 'reconnecting' && wait !== undefined ? `reconnecting in ${Math.ceil(wait / 1000)} s` : s;
    this.live.setWaiting(s === 'live' ? 'Waiting for pose frames…' : s === 'stopped' ? 'Not connected' : 'Connecting to the pose stream…');
  }

  private updateStats(): void {
    const fresh = this.stream.latest && performance.now() - this.stream.lastArrival < STALE_MS;
    this.stats.fps.textContent = `${num(this.stream.fps(), 1)} frames/s`;
    this.stats.latency.textContent = this.stream.latencyMs !== undefined && fresh ? `${num(Math.max(0, this.stream.latencyMs), 0)} ms latency` : '- ms latency';
    const n = fresh ? this.stream.latest!.persons.length : 0;
    this.stats.persons.textContent = `${n} ${n === 1 ? 'person' : 'persons'}`;
    if (this.stream.state === 'live' && !fresh)
      this.live.setWaiting(this.systemState && this.systemState !== 'running' ? `The system is ${this.systemState}` : 'Waiting for pose frames…');
  }

  private async signOut(): Promise<void> {
    this.stop();
    await this.session.signOut();
    showSignIn('Signed out.');
  }
}

/** The sign-in page; `message` says why it is shown (signed out, session ended). */
function showSignIn(message = ''): void {
  let mode: 'password' | 'key' = 'password';
  const error = h('p', { id: 'signin-error', class: 'form-message error', role: 'alert', text: message });
  if (message === 'Signed out.') error.className = 'form-message note';
  const username = h('input', { name: 'username', id: 'username', autocomplete: 'username', placeholder: 'admin', required: true });
  const password = h('input', { name: 'password', id: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const key = h('input', { name: 'apikey', id: 'apikey', type: 'password', autocomplete: 'off', placeholder: 'csk_…' });
  const persist = h('input', { type: 'checkbox', id: 'persist', checked: true });
  const userFields = h('div', {}, h('label', { for: 'username', text: 'Username' }), username, h('label', { for: 'password', text: 'Password' }), password);
  const keyFields = h('div', { hidden: true }, h('label', { for: 'apikey', text: 'API key' }), key);
  const submit = h('button', { type: 'submit', class: 'primary', id: 'sign-in' }, 'Sign in');
  const modeButton = (m: typeof mode, label: string) =>
    h('button', {
      type: 'button',
      class: 'mode',
      'data-mode': m,
      'aria-pressed': String(m === mode),
      onclick: (ev: Event) => {
        mode = m;
        userFields.hidden = m !== 'password';
        keyFields.hidden = m !== 'key';
        for (const b of (ev.target as HTMLElement).parentElement!.children) b.setAttribute('aria-pressed', String((b as HTMLElement).dataset.mode === m));
      },
      text: label,
    });
  const form = h(
    'form',
    {
      id: 'signin',
      class: 'signin panel',
      method: 'post',
      novalidate: true,
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        submit.disabled = true;
        error.className = 'form-message error';
        error.textContent = '';
        try {
          const session =
            mode === 'password'
              ? await Session.signIn(username.value.trim(), password.value, persist.checked)
              : await Session.withKey(key.value.trim(), persist.checked);
          // Nothing of the credentials is ever in the address; drop whatever else was there too.
          history.replaceState(null, '', location.pathname);
          new App(session).start();
        } catch (e) {
          const keyRefused = mode === 'key' && e instanceof ApiError && e.status === 401;
          error.textContent = keyRefused ? 'This API key is not valid (mistyped or revoked).' : describeError(e, 'Sign-in');
          submit.disabled = false;
        }
      },
    },
    h('h1', { text: 'csipose' }),
    h('p', { class: 'muted', text: 'Sign in to watch the room live.' }),
    h('div', { class: 'modes' }, modeButton('password', 'Username and password'), modeButton('key', 'API key')),
    userFields,
    keyFields,
    h('label', { class: 'inline' }, persist, ' Stay signed in in this tab'),
    submit,
    error,
  );
  delete root.dataset.tab;
  replace(root, form);
  username.focus();
}

const restored = Session.restore();
if (restored) new App(restored).start();
else showSignIn();
