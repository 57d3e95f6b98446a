import { createHash, createHmac, randomBytes, timingSafeEqual, webcrypto } from 'node:crypto';
import { decodeProtectedHeader, SignJWT, type CryptoKey, type ProtectedHeaderParameters } from 'jose';
import { isRole, type Role } from './roles.js';
import type { Denial, SharedFamily, SharedTokens } from './shared.js';

/**
 * Access and refresh tokens.
 *
 * Access tokens are HS256 JWTs with `sub`, `role`, `iat`, `exp`, `jti` and, for users, `gen`
 * (the user's token generation, see {@link AccessClaims.gen}), signed with `CSIPOSE_JWT_SECRET` or
 * the secret kept in the data directory (secret.ts). Their header names the secret by `kid`, a
 * short fingerprint of it, so that a token of another secret is told apart from a forged one:
 * `signed_by_previous_secret` rather than `bad_signature`.
 * Verification is synchronous (HMAC-SHA256 with node:crypto, the claims checked as jose's
 * `jwtVerify` checks them), so that the WebSocket upgrade can be answered inside uWebSockets.js's
 * upgrade handler (see `PoseSocket`). Verified tokens are cached all the same: a repeated token
 * costs a Map lookup. Cache entries die at the token's `exp`, and every hit also consults the
 * denylist, so a revoked token is refused even while cached.
 *
 * Refresh tokens are opaque (`csr_` + 32 random bytes), kept in memory only as a SHA-256, valid
 * 30 days, single-use: {@link TokenService.refresh} consumes one and returns a new pair. The
 * tokens descending from one login form a family. Presenting an already consumed refresh token
 * means two parties hold it, one of them probably a thief (the legitimate client never reuses
 * one), and we cannot tell which: the whole family is revoked, its refresh tokens and the access
 * tokens issued from it (OAuth 2.0 Security BCP, refresh token rotation with reuse detection).
 * Two concurrent refreshes with the same token by an honest client trip this too; the client
 * then logs in again.
 *
 * All of this state lives in memory: a restart forgets refresh tokens and the denylist; access
 * tokens outlive it while the secret stays the same (and the user's password too).
 *
 * With a shared store (`shared`, several api nodes on one Redis: src/auth/shared.ts) the
 * denylist stays in memory, so that `verify` stays a Map lookup, and learns every other node's
 * denials through {@link TokenService.learnDenied}; its own go to the shared store. Refresh tokens
 * and families then live only in the shared store, so that any node refreshes a token another
 * issued and a reuse is caught whichever node sees it.
 */

/** Why an access token was refused. Distinct for logs; HTTP answers 401 for all. */
export type TokenFailure =
  | 'malformed_token'
  | 'alg_none'
  | 'alg_not_allowed'
  | 'bad_signature'
  /** Signed with another secret (`kid` is not ours): the service's signing secret changed. */
  | 'signed_by_previous_secret'
  | 'expired'
  | 'not_yet_valid'
  | 'revoked'
  | 'invalid_claims'
  /** The user's password changed after the token was issued (checked by the Authenticator). */
  | 'password_changed'
  /** The token's user no longer exists (checked by the Authenticator). */
  | 'user_unknown';

/** Why a refresh was refused. */
export type RefreshFailure =
  | 'unknown_refresh_token'
  | 'refresh_expired'
  | 'refresh_reused'
  | 'refresh_revoked'
  | 'user_unknown'
  | 'password_changed'
  /** Refresh tokens are kept in the shared store, which is unreachable: sign in again. */
  | 'refresh_unavailable';

/** The claims of a verified access token. */
export interface AccessClaims {
  sub: string;
  role: Role;
  /** Seconds since the epoch. */
  iat: number;
  /** Seconds since the epoch. */
  exp: number;
  jti: string;
  /**
   * The subject's token generation when the token was issued: changes when the user's password
   * does, so tokens issued before a password change can be refused. Absent when issued without.
   */
  gen?: string;
}

/** What {@link TokenService.refresh} needs to know of the subject now. */
export interface CurrentSubject {
  role: Role;
  /** Token generation now; a family issued under another one is refused (`password_changed`). */
  gen?: string;
}

/** What `POST /auth/token` and `POST /auth/refresh` hand out. */
export interface TokenPair {
  accessToken: string;
  tokenType: 'bearer';
  /** Seconds. */
  expiresIn: number;
  refreshToken: string;
  /** Seconds. */
  refreshExpiresIn: number;
}

/** The outcome of {@link TokenService.verify}. */
export type VerifyResult = { ok: true; claims: AccessClaims } | { ok: false; reason: TokenFailure };

/** The outcome of {@link TokenService.refresh}. */
export type RefreshResult = { ok: true; sub: string; role: Role; pair: TokenPair } | { ok: false; reason: RefreshFailure };

/** A bad token configuration (a weak secret, a bad lifetime). */
export class TokenConfigError extends Error {
  override readonly name = 'TokenConfigError';
}

/** Options of {@link TokenService}. */
export interface TokenServiceOptions {
  /** CSIPOSE_JWT_SECRET or the stored secret: at least 32 bytes. Random 32 bytes when unset (tests). */
  secret?: string | Uint8Array;
  /** Access token lifetime (default 86400 s). */
  accessTtlSeconds?: number;
  /** Refresh token lifetime (default 30 days). */
  refreshTtlSeconds?: number;
  /** Verified-token cache size (default 10,000). */
  cacheSize?: number;
  /** Clock in ms (tests). */
  now?: () => number;
  /** The state shared with the other api nodes (refresh families, denials); none by default. */
  shared?: SharedTokens;
}

/** Refresh tokens start with this, so that `revoke` can tell them from JWTs at a glance. */
export const REFRESH_PREFIX = 'csr_';
const REFRESH_FORMAT = /^csr_[A-Za-z0-9_-]{43}$/;
const MIN_SECRET_BYTES = 32;
/** Longest token we look at; ours are about 250 characters. */
const MAX_TOKEN_LENGTH = 4096;
/** A token issued further in the future than this was not issued by this clock. */
const IAT_SKEW_SECONDS = 60;
const SWEEP_MS = 60_000;
/** The claims every access token carries (jose's `requiredClaims`, checked in its order). */
const REQUIRED_CLAIMS = ['jti', 'exp', 'iat', 'sub'] as const;
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

interface Family {
  sub: string;
  role: Role;
  /** Token generation at login. */
  gen: string | undefined;
  revoked: boolean;
  /** Access token jti -> exp (s), so that revoking the family can deny them. */
  access: Map<string, number>;
}

interface RefreshRecord {
  family: Family;
  /** ms */
  expiresAt: number;
  consumed: boolean;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('base64url');
}

/** The `kid` of a secret: 72 bits of a SHA-256, enough to tell secrets apart, nothing to attack. */
function keyId(secret: Uint8Array): string {
  return createHash('sha256').update('csipose-jwt-kid\0').update(secret).digest('base64url').slice(0, 12);
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new TokenConfigError(`${name} must be a positive integer (got ${v})`);
  return v;
}

/**
 * Issues, verifies, refreshes and revokes tokens. One per server process.
 *
 * @example
 * const tokens = new TokenService({ secret: process.env.CSIPOSE_JWT_SECRET });
 * const pair = await tokens.issue('admin', 'admin');
 * await tokens.verify(pair.accessToken); // { ok: true, claims: { sub: 'admin', role: 'admin', ... } }
 */
export class TokenService {
  /** Access token lifetime in seconds. */
  readonly accessTtl: number;
  /** Refresh token lifetime in seconds. */
  readonly refreshTtl: number;
  /** The `kid` of this service's secret, in the header of every token it signs. */
  readonly kid: string;
  /** Signs (jose). */
  private readonly key: Promise<CryptoKey>;
  /** Verifies (node:crypto, synchronously). */
  private readonly secret: Buffer;
  private readonly now: () => number;
  private readonly cacheSize: number;
  private readonly shared: SharedTokens | undefined;
  /** Verified tokens in least-recently-used order (Map keeps insertion order). */
  private readonly cache = new Map<string, AccessClaims>();
  /** Revoked access token jti -> exp (s); entries leave once the token would have expired. */
  private readonly denied = new Map<string, number>();
  /** SHA-256 of the refresh token -> record. */
  private readonly refreshTokens = new Map<string, RefreshRecord>();
  private lastSweep: number;
  private hits = 0;
  private misses = 0;

  /**
   * @param opts secret, lifetimes, cache size, clock
   * @throws TokenConfigError for a secret shorter than 32 bytes (anyone who guesses a short HMAC
   *   secret offline can forge admin tokens) or a bad lifetime
   */
  constructor(opts: TokenServiceOptions = {}) {
    this.accessTtl = positiveInt('access token lifetime', opts.accessTtlSeconds ?? 86400);
    this.refreshTtl = positiveInt('refresh token lifetime', opts.refreshTtlSeconds ?? 30 * 86400);
    this.cacheSize = positiveInt('token cache size', opts.cacheSize ?? 10_000);
    this.now = opts.now ?? Date.now;
    this.shared = opts.shared;
    this.lastSweep = this.now();
    let secret: Uint8Array;
    if (opts.secret === undefined || opts.secret === '') secret = randomBytes(32);
    else secret = typeof opts.secret === 'string' ? Buffer.from(opts.secret, 'utf8') : opts.secret;
    if (secret.length < MIN_SECRET_BYTES) {
      throw new TokenConfigError(`CSIPOSE_JWT_SECRET must be at least ${MIN_SECRET_BYTES} bytes (got ${secret.length})`);
    }
    this.kid = keyId(secret);
    this.secret = Buffer.from(secret);
    // Imported once: jose would otherwise import a raw Uint8Array key on every sign.
    this.key = webcrypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    // An unhandled rejection here would surface only at first use; importKey does not fail for HMAC.
    this.key.catch(() => undefined);
  }

  /**
   * Issues a new access + refresh pair starting a new family (a login).
   * @param sub the subject (user name)
   * @param role the subject's role
   * @param gen the subject's token generation, carried as claim `gen` (see {@link AccessClaims.gen})
   * @returns the pair
   */
  async issue(sub: string, role: Role, gen?: string): Promise<TokenPair> {
    this.sweep();
    if (this.shared) return (await this.issueShared(this.shared, { id: randomBytes(16).toString('base64url'), sub, role, gen }, true)).pair;
    return this.issueIn({ sub, role, gen, revoked: false, access: new Map() });
  }

  /**
   * Verifies an access token: HS256 only, `kid` (when present) naming our secret, signature, `exp`,
   * `nbf`, claims, denylist. A token seen before (and still valid) is answered from the cache
   * without a signature check. The `gen` claim is returned, not judged: the caller knows users.
   * Synchronous: nothing in it waits.
   * @param token the compact JWT
   * @returns its claims, or the reason it was refused; never throws
   */
  verify(token: string): VerifyResult {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
      return { ok: false, reason: 'malformed_token' };
    }
    const nowMs = this.now();
    const cached = this.cache.get(token);
    if (cached) {
      this.hits++;
      if (cached.exp * 1000 <= nowMs) {
        this.cache.delete(token);
        return { ok: false, reason: 'expired' };
      }
      if (this.denied.has(cached.jti)) {
        this.cache.delete(token);
        return { ok: false, reason: 'revoked' };
      }
      this.cache.delete(token);
      this.cache.set(token, cached);
      return { ok: true, claims: cached };
    }
    this.misses++;
    if (token.split('.').length !== 3) return { ok: false, reason: 'malformed_token' };
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return { ok: false, reason: 'malformed_token' };
    }
    const { alg, kid } = header as { alg: unknown; kid: unknown };
    if (typeof alg !== 'string') return { ok: false, reason: 'malformed_token' };
    // Refused first, whatever its case: `none` is the classic forgery.
    if (alg.toLowerCase() === 'none') return { ok: false, reason: 'alg_none' };
    if (alg !== 'HS256') return { ok: false, reason: 'alg_not_allowed' };
    if (kid !== undefined && typeof kid !== 'string') return { ok: false, reason: 'malformed_token' };
    // Only a reason: such a token is refused either way, its signature cannot be checked.
    if (kid !== undefined && kid !== this.kid) return { ok: false, reason: 'signed_by_previous_secret' };
    const verified = this.signedClaims(token, header, Math.floor(nowMs / 1000));
    if (!verified.ok) return verified;
    const { sub, role, iat, exp, jti, gen } = verified.payload;
    if (
      (gen !== undefined && (typeof gen !== 'string' || !gen)) ||
      typeof sub !== 'string' ||
      !sub ||
      !isRole(role) ||
      typeof jti !== 'string' ||
      !jti ||
      typeof iat !== 'number' ||
      typeof exp !== 'number'
    ) {
      return { ok: false, reason: 'invalid_claims' };
    }
    if (iat > Math.floor(nowMs / 1000) + IAT_SKEW_SECONDS) return { ok: false, reason: 'not_yet_valid' };
    if (this.denied.has(jti)) return { ok: false, reason: 'revoked' };
    const claims: AccessClaims = Object.freeze(gen === undefined ? { sub, role, iat, exp, jti } : { sub, role, iat, exp, jti, gen: gen as string });
    if (this.cache.size >= this.cacheSize) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(token, claims);
    return { ok: true, claims };
  }

  /**
   * What jose's `jwtVerify` checks of an HS256 token whose header is already known to be ours:
   * the signature (constant-time), the claims set being a JSON object, the required claims, and
   * `iat`, `nbf` and `exp` as numbers with `nbf` passed and `exp` not, in jose's order and with the
   * reasons its errors were mapped to.
   * @param token the compact JWT (three parts)
   * @param header its protected header
   * @param now seconds since the epoch
   * @returns the claims set, or why the token is refused
   */
  private signedClaims(
    token: string,
    header: ProtectedHeaderParameters,
    now: number,
  ): { ok: true; payload: Record<string, unknown> } | { ok: false; reason: TokenFailure } {
    const [h, p, s] = token.split('.') as [string, string, string];
    // jose refuses the header parameters it would have to understand: none of ours carries them.
    if (header.crit !== undefined || header.b64 !== undefined) return { ok: false, reason: 'malformed_token' };
    if (!BASE64URL.test(s)) return { ok: false, reason: 'malformed_token' };
    const expected = createHmac('sha256', this.secret).update(`${h}.${p}`).digest();
    const given = Buffer.from(s, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' };
    let payload: unknown;
    try {
      if (!BASE64URL.test(p)) throw new Error('not base64url');
      payload = JSON.parse(strictUtf8.decode(Buffer.from(p, 'base64url')));
    } catch {
      return { ok: false, reason: 'malformed_token' };
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return { ok: false, reason: 'malformed_token' };
    const claims = payload as Record<string, unknown>;
    for (const c of REQUIRED_CLAIMS) if (!Object.hasOwn(claims, c)) return { ok: false, reason: 'invalid_claims' };
    if (typeof claims.iat !== 'number') return { ok: false, reason: 'invalid_claims' };
    if (claims.nbf !== undefined) {
      if (typeof claims.nbf !== 'number') return { ok: false, reason: 'invalid_claims' };
      if (claims.nbf > now) return { ok: false, reason: 'not_yet_valid' };
    }
    if (typeof claims.exp !== 'number') return { ok: false, reason: 'invalid_claims' };
    if (claims.exp <= now) return { ok: false, reason: 'expired' };
    return { ok: true, payload: claims };
  }

  /**
   * Trades a refresh token for a new pair. The token is consumed; presenting it again fails
   * with `refresh_reused` and revokes its whole family (see the file comment).
   * @param token the refresh token
   * @param current looks the subject up now: its current role and token generation, or
   *   null/undefined when the account is gone. The family is revoked when the account is gone
   *   (`user_unknown`) or its generation changed since login (`password_changed`). Default: the
   *   role at login, no generation check.
   * @returns the new pair with subject and role, or why it was refused
   */
  async refresh(token: string, current?: (sub: string) => CurrentSubject | null | undefined): Promise<RefreshResult> {
    if (typeof token !== 'string' || !REFRESH_FORMAT.test(token)) return { ok: false, reason: 'unknown_refresh_token' };
    if (this.shared) return this.refreshShared(this.shared, token, current);
    const rec = this.refreshTokens.get(sha256(token));
    if (!rec) return { ok: false, reason: 'unknown_refresh_token' };
    const family = rec.family;
    if (family.revoked) return { ok: false, reason: 'refresh_revoked' };
    if (rec.consumed) {
      this.revokeFamily(family);
      return { ok: false, reason: 'refresh_reused' };
    }
    if (rec.expiresAt <= this.now()) {
      this.refreshTokens.delete(sha256(token));
      return { ok: false, reason: 'refresh_expired' };
    }
    // Consumed before the first await, so a concurrent second use sees it.
    rec.consumed = true;
    // After the lookup, so that a token expired since the last sweep is reported as expired.
    this.sweep();
    if (current) {
      const now = current(family.sub);
      if (!now) {
        this.revokeFamily(family);
        return { ok: false, reason: 'user_unknown' };
      }
      if (now.gen !== family.gen) {
        this.revokeFamily(family);
        return { ok: false, reason: 'password_changed' };
      }
      family.role = now.role;
    }
    const pair = await this.issueIn(family);
    // The family may have been revoked while we were signing.
    if (family.revoked) return { ok: false, reason: 'refresh_revoked' };
    return { ok: true, sub: family.sub, role: family.role, pair };
  }

  /**
   * Revokes a token. An access token's jti is denied until its `exp` (and dropped from the
   * cache); a refresh token revokes its whole family, access tokens included (RFC 7009 2.1).
   * Revoking an already revoked token succeeds again.
   * @param token an access token or a refresh token
   * @returns which kind was revoked, or `unknown` for anything else (garbage, foreign or expired
   *   tokens, which need no revocation)
   */
  async revoke(token: string): Promise<'access' | 'refresh' | 'unknown'> {
    this.sweep();
    if (typeof token !== 'string') return 'unknown';
    if (token.startsWith(REFRESH_PREFIX)) {
      if (this.shared) {
        const denied = REFRESH_FORMAT.test(token) ? await this.shared.revokeRefresh(sha256(token)) : undefined;
        if (!denied) return 'unknown';
        this.learnDenied(denied);
        return 'refresh';
      }
      const rec = REFRESH_FORMAT.test(token) ? this.refreshTokens.get(sha256(token)) : undefined;
      if (!rec) return 'unknown';
      this.revokeFamily(rec.family);
      return 'refresh';
    }
    const v = this.verify(token);
    if (v.ok) {
      this.denied.set(v.claims.jti, v.claims.exp);
      this.cache.delete(token);
      await this.shared?.deny([[v.claims.jti, v.claims.exp]]);
      return 'access';
    }
    return v.reason === 'revoked' ? 'access' : 'unknown';
  }

  /**
   * Denies access tokens another node revoked (or that the shared denylist holds). Entries
   * already expired are ignored; cached tokens are refused at their next use.
   * @param entries jti and exp (s) of each
   */
  learnDenied(entries: Iterable<Denial>): void {
    const nowS = Math.floor(this.now() / 1000);
    for (const [jti, exp] of entries) if (typeof jti === 'string' && Number.isFinite(exp) && exp > nowS) this.denied.set(jti, exp);
  }

  /** @returns the denylist: jti and exp (s) of every denied access token not yet expired */
  deniedEntries(): Denial[] {
    const nowS = Math.floor(this.now() / 1000);
    return [...this.denied].filter(([, exp]) => exp > nowS);
  }

  /** @returns cache hits and misses, cache size, denylist size, live refresh tokens */
  stats(): { cacheHits: number; cacheMisses: number; cacheSize: number; denylist: number; refreshTokens: number } {
    return {
      cacheHits: this.hits,
      cacheMisses: this.misses,
      cacheSize: this.cache.size,
      denylist: this.denied.size,
      refreshTokens: this.refreshTokens.size,
    };
  }

  private async issueIn(family: Family): Promise<TokenPair> {
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + this.accessTtl;
    const jti = randomBytes(16).toString('base64url');
    for (const [j, e] of family.access) if (e <= iat) family.access.delete(j);
    // Registered before signing so that a family revoked meanwhile also denies this token.
    family.access.set(jti, exp);
    if (family.revoked) this.denied.set(jti, exp);
    const refreshToken = REFRESH_PREFIX + randomBytes(32).toString('base64url');
    this.refreshTokens.set(sha256(refreshToken), { family, expiresAt: this.now() + this.refreshTtl * 1000, consumed: false });
    const accessToken = await new SignJWT(family.gen === undefined ? { role: family.role } : { role: family.role, gen: family.gen })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: this.kid })
      .setSubject(family.sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(jti)
      .sign(await this.key);
    return { accessToken, tokenType: 'bearer', expiresIn: this.accessTtl, refreshToken, refreshExpiresIn: this.refreshTtl };
  }

  /** A new pair in a family of the shared store (see {@link issueIn} for the local one). */
  private async issueShared(shared: SharedTokens, family: SharedFamily, newFamily: boolean): Promise<{ pair: TokenPair; revoked: boolean }> {
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + this.accessTtl;
    const jti = randomBytes(16).toString('base64url');
    const refreshToken = REFRESH_PREFIX + randomBytes(32).toString('base64url');
    // Registered before signing so that a family revoked meanwhile also denies this token.
    const r = await shared.issued(family, [jti, exp], sha256(refreshToken), this.now() + this.refreshTtl * 1000, newFamily);
    if (r === 'revoked') this.denied.set(jti, exp);
    const accessToken = await new SignJWT(family.gen === undefined ? { role: family.role } : { role: family.role, gen: family.gen })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: this.kid })
      .setSubject(family.sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(jti)
      .sign(await this.key);
    return {
      pair: { accessToken, tokenType: 'bearer', expiresIn: this.accessTtl, refreshToken, refreshExpiresIn: this.refreshTtl },
      revoked: r === 'revoked',
    };
  }

  /** {@link refresh} against the shared store: the same checks, in the same order. */
  private async refreshShared(shared: SharedTokens, token: string, current?: (sub: string) => CurrentSubject | null | undefined): Promise<RefreshResult> {
    this.sweep();
    const t = await shared.take(sha256(token), this.now());
    if (!t.ok) {
      if (t.reason === 'refresh_reused') this.learnDenied(t.denied);
      return { ok: false, reason: t.reason };
    }
    const family = t.family;
    if (current) {
      const now = current(family.sub);
      if (!now || now.gen !== family.gen) {
        this.learnDenied(await shared.revokeFamily(family.id));
        return { ok: false, reason: now ? 'password_changed' : 'user_unknown' };
      }
      family.role = now.role;
    }
    const { pair, revoked } = await this.issueShared(shared, family, false);
    if (revoked) return { ok: false, reason: 'refresh_revoked' };
    return { ok: true, sub: family.sub, role: family.role, pair };
  }

  private revokeFamily(family: Family): void {
    family.revoked = true;
    for (const [jti, exp] of family.access) this.denied.set(jti, exp);
  }

  /** Drops expired denylist entries and refresh records, at most once a minute. */
  private sweep(): void {
    const nowMs = this.now();
    if (nowMs - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = nowMs;
    const nowS = Math.floor(nowMs / 1000);
    for (const [jti, exp] of this.denied) if (exp <= nowS) this.denied.delete(jti);
    for (const [h, r] of this.refreshTokens) if (r.expiresAt <= nowMs) this.refreshTokens.delete(h);
  }
}
