/**
 * Who is signed in, and how: a token pair from `POST /auth/token` (refreshed with
 * `POST /auth/refresh` before the access token expires) or an API key. Credentials live in memory
 * and, when the user asks to stay signed in, in this tab's sessionStorage; never in the page's
 * URL. The role comes from the service: the access token's `role` claim, or for an API key the
 * answer to `GET /auth/keys` (admins read it; anyone else gets a 403 that names their role).
 */
import { Api, ApiError, type Credentials } from './api.js';
import type { Role } from './types.js';

const STORAGE_KEY = 'csipose.session';
/** Refresh this long before the access token expires: a tenth of its life, 10 s to 5 min. */
const margin = (lifetimeMs: number) => Math.min(300_000, Math.max(10_000, lifetimeMs / 10));
/** After a refresh that failed for a passing reason (network, 429), try again after this long at most. */
const RETRY_MS = 30_000;

type State =
  | { kind: 'token'; user: string; role: Role; access: string; refresh: string; expiresAt: number; lifetime: number }
  | { kind: 'key'; user: string; role: Role; key: string };

interface TokenPair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

/** The claims of a JWT (not verified: the server verifies; the page only reads its own token). */
function claims(jwt: string): Record<string, unknown> {
  try {
    const part = jwt.split('.')[1] ?? '';
    return JSON.parse(
      atob(
        part
          .replace(/-/g, '+')
          .replace(/_/g, '/')
          .padEnd(Math.ceil(part.length / 4) * 4, '='),
      ),
    ) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function tokenState(pair: TokenPair): State {
  const c = claims(pair.access_token);
  const expiresAt = typeof c.exp === 'number' ? c.exp * 1000 : Date.now() + pair.expires_in * 1000;
  const role = c.role === 'admin' || c.role === 'operator' ? c.role : 'viewer';
  return {
    kind: 'token',
    user: String(c.sub ?? 'user'),
    role,
    access: pair.access_token,
    refresh: pair.refresh_token,
    expiresAt,
    lifetime: pair.expires_in * 1000,
  };
}

/** A signed-in session; the REST client and the WebSocket take their credentials from it. */
export class Session implements Credentials {
  /** Called once when the session ends by itself (expired, revoked), with the reason. */
  onEnd: (reason: string) => void = () => undefined;
  /** Called when the role changes (a 403 named another one). */
  onRole: (role: Role) => void = () => undefined;
  /** Called after the token was refreshed (the WebSocket moves to the new one). */
  onRenewed: () => void = () => undefined;
  readonly api: Api;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private refreshing: Promise<boolean> | undefined;
  private ended = false;

  private constructor(
    private state: State,
    private readonly persist: boolean,
  ) {
    this.api = new Api(this);
    this.save();
    this.schedule();
  }

  /**
   * Signs in with a username and password.
   * @param persist keep the session in this tab's sessionStorage (survives a reload)
   * @throws ApiError (401 wrong password, 429 too many attempts) or TypeError (network)
   */
  static async signIn(username: string, password: string, persist: boolean): Promise<Session> {
    const r = await new Api().request<TokenPair>('POST', 'auth/token', { body: { username, password } });
    return new Session(tokenState(r.data), persist);
  }

  /**
   * Signs in with an API key: checks it and learns its role with `GET /auth/keys`.
   * @throws ApiError (401 for a key that is not valid) or TypeError
   */
  static async withKey(key: string, persist: boolean): Promise<Session> {
    const probe = new Api({ headers: () => ({ 'x-api-key': key }), renew: async () => false, expired: () => undefined, learnRole: () => undefined });
    let role: Role = 'admin';
    try {
      await probe.request('GET', 'auth/keys');
    } catch (e) {
      const named = e instanceof ApiError && e.status === 403 ? e.details.role : undefined;
      if (named !== 'viewer' && named !== 'operator') throw e;
      role = named;
    }
    const id = /^csk_([^_]+)_/.exec(key)?.[1];
    return new Session({ kind: 'key', user: id ? `key ${id}` : 'API key', role, key }, persist);
  }

  /** The session this tab kept, if any. */
  static restore(): Session | undefined {
    try {
      const raw = sessionStorage.getItem(STORAGE_KEY);
      const s = raw ? (JSON.parse(raw) as State) : undefined;
      if (s && (s.kind === 'key' ? typeof s.key === 'string' : typeof s.access === 'string' && typeof s.refresh === 'string')) return new Session(s, true);
    } catch {
      // unreadable: sign in again
    }
    return undefined;
  }

  get role(): Role {
    return this.state.role;
  }

  get user(): string {
    return this.state.user;
  }

  /** Operators and admins may start, stop and restart the system. */
  get canOperate(): boolean {
    return this.state.role !== 'viewer';
  }

  /** Only admins may change the configuration. */
  get canConfigure(): boolean {
    return this.state.role === 'admin';
  }

  headers(): Record<string, string> {
    return this.state.kind === 'key' ? { 'x-api-key': this.state.key } : { authorization: `Bearer ${this.state.access}` };
  }

  /** The credential for `/ws/pose?token=` (browsers cannot set headers on a WebSocket). */
  wsToken(): string {
    return this.state.kind === 'key' ? this.state.key : this.state.access;
  }

  renew(): Promise<boolean> {
    if (this.state.kind === 'key' || this.ended) return Promise.resolve(false);
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  expired(): void {
    this.end('Your session has ended (expired or revoked): sign in again.');
  }

  learnRole(role: Role): void {
    if (role === this.state.role) return;
    this.state = { ...this.state, role };
    this.save();
    this.onRole(role);
  }

  /** Signs out: revokes the tokens (an API key stays valid) and forgets everything. */
  async signOut(): Promise<void> {
    const s = this.state;
    this.end(undefined);
    if (s.kind === 'token') {
      const api = new Api();
      await Promise.allSettled([
        api.request('POST', 'auth/revoke', { body: { token: s.refresh } }),
        api.request('POST', 'auth/revoke', { body: { token: s.access } }),
      ]);
    }
  }

  private end(reason: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    try {
      sessionStorage.removeItem(STORAGE_KEY);
    } catch {
      // storage unavailable
    }
    if (reason) this.onEnd(reason);
  }

  /** Exchanges the refresh token for a new pair; false when the session cannot go on. */
  private async refresh(): Promise<boolean> {
    const s = this.state;
    if (s.kind !== 'token') return false;
    try {
      const r = await new Api().request<TokenPair>('POST', 'auth/refresh', { body: { refresh_token: s.refresh } });
      this.state = tokenState(r.data);
      this.save();
      this.schedule();
      this.onRenewed();
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        this.expired();
        return false;
      }
      // A passing failure (network, 429): try again soon, while the access token still works.
      const reset = e instanceof ApiError ? Date.parse(String(e.details.reset_at ?? '')) - Date.now() : NaN;
      this.schedule(Number.isFinite(reset) && reset > 0 ? Math.min(reset, RETRY_MS) : RETRY_MS);
      return false;
    }
  }

  private schedule(delayMs?: number): void {
    clearTimeout(this.timer);
    const s = this.state;
    if (s.kind !== 'token' || this.ended) return;
    const wait = delayMs ?? s.expiresAt - margin(s.lifetime || s.expiresAt - Date.now()) - Date.now();
    this.timer = setTimeout(() => void this.renew(), Math.min(Math.max(0, wait), 2 ** 31 - 1));
  }

  private save(): void {
    if (!this.persist || this.ended) return;
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(this.state));
    } catch {
      // storage full or refused: the session lives in memory only
    }
  }
}
