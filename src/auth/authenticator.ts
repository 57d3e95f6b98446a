import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { ApiKeyStore, type ApiKeyFailure, type ApiKeyInfo, type ApiKeyStats } from './apiKeys.js';
import { hashPassword, verifyPassword } from './passwords.js';
import type { Role } from './roles.js';
import { loadOrCreateSecret } from './secret.js';
import type { SharedAccounts } from './shared.js';
import { TokenService, type RefreshResult, type TokenFailure, type TokenPair } from './tokens.js';
import { UserStore, type PublicUser } from './users.js';

/** Who made a request. */
export interface Principal {
  /** User name, or API key id. */
  id: string;
  kind: 'user' | 'api_key';
  role: Role;
  /** User name, or API key name. */
  name: string;
}

/** Credentials as they came with a request; any may be absent. */
export interface Credentials {
  /** The `Authorization` header: `Bearer <JWT or API key>`. */
  authorization?: string;
  /** The `X-API-Key` header. */
  apiKey?: string;
  /** `?token=` of a WebSocket upgrade: a JWT or an API key. */
  queryToken?: string;
}

/** Why authentication failed (for logs; HTTP answers 401 AUTHENTICATION_ERROR for all). */
export type AuthFailure = TokenFailure | ApiKeyFailure | 'missing_credentials' | 'unsupported_auth_scheme';

/** The outcome of {@link Authenticator.authenticate}. */
export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: AuthFailure };

/** Options of {@link Authenticator.init}. */
export interface AuthenticatorInit {
  /**
   * Holds `users.json`, `api_keys.json` and, without CSIPOSE_JWT_SECRET, `jwt_secret.json`;
   * created (mode 0700) when missing.
   */
  dataDir: string;
  /** Reads CSIPOSE_ADMIN_PASSWORD, CSIPOSE_JWT_SECRET, CSIPOSE_API_KEYS (default process.env). */
  env?: Record<string, string | undefined>;
  /** Access token lifetime (default 86400 s). */
  accessTtlSeconds?: number;
  /** Refresh token lifetime (default 30 days). */
  refreshTtlSeconds?: number;
  /** Verified-token cache size (default 10,000). */
  tokenCacheSize?: number;
  /** Shortest time between writes of API key `lastUsedAt` (default 60 s). */
  usageFlushSeconds?: number;
  /** Clock in ms (tests). */
  now?: () => number;
  /**
   * The state shared with the other api nodes (config `redis.url`): the signing secret (unless
   * CSIPOSE_JWT_SECRET gives it), denials, refresh families, API keys and users. None by default.
   */
  shared?: SharedAccounts;
}

/** Counters for `/metrics` and logs. */
export interface AuthStats {
  /** Access tokens answered from the verified-token cache. */
  cacheHits: number;
  /** Access tokens that needed a signature check. */
  cacheMisses: number;
  cacheSize: number;
  denylist: number;
  refreshTokens: number;
  users: number;
  apiKeys: ApiKeyStats;
  /** Failed authentications by reason. */
  failures: Partial<Record<AuthFailure, number>>;
}

const BEARER = /^Bearer +(\S+) *$/i;

/** A compact JWS has exactly two dots; our API keys have none. */
function looksLikeJwt(s: string): boolean {
  const a = s.indexOf('.');
  if (a < 0) return false;
  const b = s.indexOf('.', a + 1);
  return b > a && s.indexOf('.', b + 1) < 0;
}

/**
 * The service's authentication: users and passwords, access and refresh tokens, API keys.
 * Transport-free: the HTTP and WebSocket layers pass in header values and map failures to 401.
 *
 * @example
 * const auth = new Authenticator();
 * const { generatedAdminPassword } = await auth.init({ dataDir: './data' });
 * if (generatedAdminPassword) console.log(`admin password: ${generatedAdminPassword}`);
 * const pair = await auth.login('admin', password);
 * const r = auth.authenticate({ authorization: `Bearer ${pair!.accessToken}` });
 */
export class Authenticator {
  private state: { users: UserStore; keys: ApiKeyStore; tokens: TokenService; dummyHash: string } | undefined;
  private readonly failures: Partial<Record<AuthFailure, number>> = {};

  /**
   * Reads configuration and stores, bootstraps `admin`. Configuration errors come first, before
   * any file is written.
   * @param opts data directory, env, lifetimes, clock
   * @returns `generatedAdminPassword` when admin was created with a random password: print it
   *   once, it is stored only hashed
   * @throws TokenConfigError (weak CSIPOSE_JWT_SECRET), ApiKeyConfigError (bad CSIPOSE_API_KEYS),
   *   StoreFileError (an unreadable or malformed users.json / api_keys.json / jwt_secret.json)
   */
  async init(opts: AuthenticatorInit): Promise<{ generatedAdminPassword?: string }> {
    const env = opts.env ?? process.env;
    const clock = opts.now ? { now: opts.now } : {};
    // CSIPOSE_JWT_SECRET wins; without it, the secret kept in the data directory (made on first
    // start), read once the configuration has been checked.
    const shared = opts.shared;
    const tokenService = (secret: string | Uint8Array) =>
      new TokenService({
        ...clock,
        secret,
        ...(shared ? { shared } : {}),
        ...(opts.accessTtlSeconds !== undefined ? { accessTtlSeconds: opts.accessTtlSeconds } : {}),
        ...(opts.refreshTtlSeconds !== undefined ? { refreshTtlSeconds: opts.refreshTtlSeconds } : {}),
        ...(opts.tokenCacheSize !== undefined ? { cacheSize: opts.tokenCacheSize } : {}),
      });
    const envTokens = env.CSIPOSE_JWT_SECRET ? tokenService(env.CSIPOSE_JWT_SECRET) : undefined;
    const keys = new ApiKeyStore(opts.dataDir, {
      ...clock,
      ...(env.CSIPOSE_API_KEYS !== undefined ? { envKeys: env.CSIPOSE_API_KEYS } : {}),
      ...(opts.usageFlushSeconds !== undefined ? { usageFlushSeconds: opts.usageFlushSeconds } : {}),
    });
    const users = new UserStore(opts.dataDir, clock);
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    // Shared: every node must verify every other node's tokens, so without CSIPOSE_JWT_SECRET the
    // secret is the shared one (this data directory's, when this node is the first to offer one).
    const tokens =
      envTokens ?? tokenService(shared ? await shared.agreeSecret(loadOrCreateSecret(opts.dataDir, opts.now)) : loadOrCreateSecret(opts.dataDir, opts.now));
    users.load();
    keys.load();
    if (shared) {
      await shared.checkKid(tokens.kid);
      // Before the bootstrap: the same CSIPOSE_ADMIN_PASSWORD then keeps the admin another node stored.
      await shared.attach({ tokens, users, keys });
    }
    // A login for a missing user still runs one scrypt, against this, so that response time
    // does not tell which user names exist.
    const [dummyHash, boot] = await Promise.all([hashPassword(randomBytes(16).toString('base64url')), users.bootstrapAdmin(env.CSIPOSE_ADMIN_PASSWORD)]);
    this.state?.keys.close();
    this.state = { users, keys, tokens, dummyHash };
    return boot.generatedPassword ? { generatedAdminPassword: boot.generatedPassword } : {};
  }

  private get s() {
    if (!this.state) throw new Error('Authenticator.init() has not completed');
    return this.state;
  }

  /** The user store (user management, listings). */
  get users(): UserStore {
    return this.s.users;
  }

  /**
   * Checks a user name and password (`POST /auth/token`).
   * @param username the user name
   * @param password the password
   * @returns a new token pair, or null for a wrong name or password (indistinguishable, also in
   *   time: an unknown name is checked against a dummy hash)
   */
  async login(username: string, password: string): Promise<TokenPair | null> {
    const { users, tokens, dummyHash } = this.s;
    if (typeof username !== 'string' || typeof password !== 'string') return null;
    const user = users.get(username);
    const ok = await verifyPassword(password, user?.passwordHash ?? dummyHash);
    if (!user || !ok) return null;
    return tokens.issue(user.username, user.role, users.generation(user.username));
  }

  /**
   * Trades a refresh token for a new pair (`POST /auth/refresh`); single use. The new access
   * token carries the user's current role. Refused (`password_changed`) when the user's password
   * changed since the login the token descends from.
   * @param refreshToken the refresh token
   * @returns the pair, or why it was refused
   */
  refresh(refreshToken: string): Promise<RefreshResult> {
    const { users, tokens } = this.s;
    return tokens.refresh(refreshToken, (sub) => {
      const user = users.get(sub);
      return user ? { role: user.role, gen: users.generation(sub) } : undefined;
    });
  }

  /**
   * Revokes an access or refresh token (`POST /auth/revoke`).
   * @param token the token
   * @returns what was revoked; `unknown` when it is not a live token of ours
   */
  revoke(token: string): Promise<'access' | 'refresh' | 'unknown'> {
    return this.s.tokens.revoke(token);
  }

  /**
   * Authenticates a request. The first credential present decides, in this order:
   * `Authorization: Bearer` (a JWT, or an API key), `X-API-Key`, `?token=` (a JWT or an API key).
   * A bad credential is never rescued by another one.
   * Synchronous, so that the WebSocket upgrade is answered inside the upgrade handler (see
   * `PoseSocket`).
   * @param creds header and query values as received
   * @returns the principal, or why authentication failed; never throws
   */
  authenticate(creds: Credentials): AuthResult {
    const r = this.check(creds);
    if (!r.ok) this.failures[r.reason] = (this.failures[r.reason] ?? 0) + 1;
    return r;
  }

  private check(creds: Credentials): AuthResult {
    if (creds.authorization) {
      const m = BEARER.exec(creds.authorization);
      if (!m) return { ok: false, reason: 'unsupported_auth_scheme' };
      return this.bearer(m[1]!);
    }
    if (creds.apiKey) return this.apiKey(creds.apiKey);
    if (creds.queryToken) return this.bearer(creds.queryToken);
    return { ok: false, reason: 'missing_credentials' };
  }

  private bearer(token: string): AuthResult {
    if (!looksLikeJwt(token)) return this.apiKey(token);
    const { tokens, users } = this.s;
    const v = tokens.verify(token);
    if (!v.ok) return v;
    // On every use, cached tokens too: a password change ends the tokens issued before it.
    const gen = users.generation(v.claims.sub);
    if (gen === undefined) return { ok: false, reason: 'user_unknown' };
    // Every token we issue carries `gen`; one without was issued before tokens did (it expires
    // within a day) or made by a holder of the secret, who could write any claims anyway.
    if (v.claims.gen !== undefined && v.claims.gen !== gen) return { ok: false, reason: 'password_changed' };
    return { ok: true, principal: { id: v.claims.sub, kind: 'user', role: v.claims.role, name: v.claims.sub } };
  }

  private apiKey(key: string): AuthResult {
    const v = this.s.keys.verify(key);
    if (!v.ok) return v;
    return { ok: true, principal: { id: v.key.id, kind: 'api_key', role: v.key.role, name: v.key.name } };
  }

  /**
   * Makes an API key (admin key management).
   * @param role its role
   * @param name a label
   * @returns the full key, to be shown once, and its listing
   */
  createApiKey(role: Role, name?: string): { key: string; info: ApiKeyInfo } {
    return this.s.keys.create(role, name);
  }

  /** @returns every API key, without secrets */
  listApiKeys(): ApiKeyInfo[] {
    return this.s.keys.list();
  }

  /**
   * Revokes an API key.
   * @param id the key id
   * @returns see {@link ApiKeyStore.revoke}
   */
  revokeApiKey(id: string): ReturnType<ApiKeyStore['revoke']> {
    return this.s.keys.revoke(id);
  }

  /** @returns users without password hashes */
  listUsers(): PublicUser[] {
    return this.s.users.list();
  }

  /** @returns cache hits and misses, store sizes, failures by reason */
  stats(): AuthStats {
    const { users, keys, tokens } = this.s;
    const t = tokens.stats();
    return {
      cacheHits: t.cacheHits,
      cacheMisses: t.cacheMisses,
      cacheSize: t.cacheSize,
      denylist: t.denylist,
      refreshTokens: t.refreshTokens,
      users: users.list().length,
      apiKeys: keys.stats(),
      failures: { ...this.failures },
    };
  }

  /** Writes pending API key usage; call on shutdown. */
  close(): void {
    this.state?.keys.close();
  }
}
