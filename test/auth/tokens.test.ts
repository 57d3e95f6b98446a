import { generateKeyPairSync } from 'node:crypto';
import { CompactSign, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { TokenConfigError, TokenService } from '../../src/auth/tokens.js';
import { fakeClock } from './helpers.js';

const SECRET = 'test-secret-0123456789-abcdefghijklmnop';
const KEY = new TextEncoder().encode(SECRET);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function service(extra: ConstructorParameters<typeof TokenService>[0] = {}) {
  const clock = fakeClock();
  return { clock, tokens: new TokenService({ secret: SECRET, now: clock.now, ...extra }) };
}

/** A token signed with our secret, claims chosen by the test. */
function forge(claims: Record<string, unknown>, alg: 'HS256' | 'HS384' = 'HS256', key = KEY): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);
}

describe('TokenService', () => {
  it('issues HS256 access tokens with sub, role, iat, exp (+86400) and jti', async () => {
    const { tokens, clock } = service();
    const pair = await tokens.issue('alice', 'operator');
    expect(pair.tokenType).toBe('bearer');
    expect(pair.expiresIn).toBe(86400);
    expect(pair.refreshToken).toMatch(/^csr_[A-Za-z0-9_-]{43}$/);
    expect(decodeProtectedHeader(pair.accessToken)).toEqual({ alg: 'HS256', typ: 'JWT', kid: tokens.kid });
    expect(tokens.kid).toMatch(/^[A-Za-z0-9_-]{12}$/);
    // Checked independently with jose and the raw secret.
    const { payload } = await jwtVerify(pair.accessToken, KEY, { currentDate: new Date(clock.now()) });
    const iat = Math.floor(clock.now() / 1000);
    expect(payload).toEqual({ sub: 'alice', role: 'operator', iat, exp: iat + 86400, jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) });
    const v = await tokens.verify(pair.accessToken);
    expect(v).toEqual({ ok: true, claims: payload });
  });

  it('takes a configurable lifetime and gives each token its own jti', async () => {
    const { tokens } = service({ accessTtlSeconds: 600 });
    const a = await tokens.issue('bob', 'viewer');
    const b = await tokens.issue('bob', 'viewer');
    const va = await tokens.verify(a.accessToken);
    const vb = await tokens.verify(b.accessToken);
    if (!va.ok || !vb.ok) throw new Error('should verify');
    expect(va.claims.exp - va.claims.iat).toBe(600);
    expect(a.expiresIn).toBe(600);
    expect(va.claims.jti).not.toBe(vb.claims.jti);
  });

  it('refuses each kind of bad token with its own reason', async () => {
    const { tokens, clock } = service();
    const now = Math.floor(clock.now() / 1000);
    const good = { sub: 'mallory', role: 'admin', iat: now, exp: now + 3600, jti: 'j1' };
    const valid = await forge(good);
    const [h, p, sig] = valid.split('.') as [string, string, string];
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const cases: Array<[string, string]> = [
      ['alg_none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(good)}.`],
      ['alg_none', `${b64({ alg: 'NoNe' })}.${b64(good)}.`],
      ['alg_not_allowed', await forge(good, 'HS384')],
      ['alg_not_allowed', await new SignJWT(good).setProtectedHeader({ alg: 'RS256' }).sign(privateKey)],
      ['bad_signature', await forge(good, 'HS256', new TextEncoder().encode('another-secret-0123456789-abcdefghijklmn'))],
      ['bad_signature', `${h}.${b64({ ...good, role: 'admin', sub: 'root' })}.${sig}`],
      ['expired', await forge({ ...good, iat: now - 7200, exp: now - 3600 })],
      ['not_yet_valid', await forge({ ...good, nbf: now + 3600 })],
      ['not_yet_valid', await forge({ ...good, iat: now + 3600, exp: now + 7200 })],
      ['invalid_claims', await forge({ ...good, role: 'root' })],
      ['invalid_claims', await forge({ sub: 'x', role: 'viewer', iat: now, exp: now + 60 })],
      ['invalid_claims', await forge({ sub: 'x', role: 'viewer', iat: now, jti: 'j' })],
      ['malformed_token', 'garbage'],
      ['malformed_token', ''],
      ['malformed_token', 'a.b.c'],
      ['malformed_token', `${h}.${p}`],
      ['malformed_token', `${h}.${p}.${sig}*`],
      // A critical header parameter nobody here understands (jose refuses it too).
      [
        'malformed_token',
        await new CompactSign(new TextEncoder().encode(JSON.stringify(good)))
          .setProtectedHeader({ alg: 'HS256', crit: ['x-extension'], 'x-extension': 1 })
          .sign(KEY, { crit: { 'x-extension': true } }),
      ],
      ['malformed_token', await new CompactSign(new TextEncoder().encode('not a claims set')).setProtectedHeader({ alg: 'HS256' }).sign(KEY)],
      ['malformed_token', 'x'.repeat(100_000)],
    ];
    for (const [reason, token] of cases) expect(await tokens.verify(token), reason).toEqual({ ok: false, reason });
    // Sanity: the hand-made good token does verify, so the refusals above are about what changed.
    expect((await tokens.verify(valid)).ok).toBe(true);
    const revoked = await tokens.issue('alice', 'viewer');
    await tokens.revoke(revoked.accessToken);
    const reasons = new Set(cases.map((c) => c[0]));
    reasons.add(((await tokens.verify(revoked.accessToken)) as { reason: string }).reason);
    expect(reasons.size).toBe(8);
  });

  it('expires tokens it issued once the clock passes exp, cached or not', async () => {
    const { tokens, clock } = service({ accessTtlSeconds: 60 });
    const a = await tokens.issue('alice', 'viewer');
    const b = await tokens.issue('alice', 'viewer');
    expect((await tokens.verify(a.accessToken)).ok).toBe(true); // now cached
    clock.advance(60_000);
    expect(await tokens.verify(a.accessToken)).toEqual({ ok: false, reason: 'expired' });
    expect(await tokens.verify(b.accessToken)).toEqual({ ok: false, reason: 'expired' });
  });

  it('answers a repeated token from the cache', async () => {
    const { tokens } = service();
    const { accessToken } = await tokens.issue('alice', 'viewer');
    await tokens.verify(accessToken);
    expect(tokens.stats()).toMatchObject({ cacheHits: 0, cacheMisses: 1, cacheSize: 1 });
    const again = await tokens.verify(accessToken);
    expect(again.ok && again.claims.sub).toBe('alice');
    expect(tokens.stats()).toMatchObject({ cacheHits: 1, cacheMisses: 1, cacheSize: 1 });
  });

  it('refuses a revoked token even when it is cached', async () => {
    const { tokens } = service();
    const { accessToken } = await tokens.issue('alice', 'viewer');
    await tokens.verify(accessToken);
    await tokens.verify(accessToken);
    expect(tokens.stats().cacheHits).toBe(1);
    expect(await tokens.revoke(accessToken)).toBe('access');
    expect(tokens.stats().cacheSize).toBe(0);
    expect(await tokens.verify(accessToken)).toEqual({ ok: false, reason: 'revoked' });
    expect(tokens.stats().denylist).toBe(1);
    expect(await tokens.revoke(accessToken)).toBe('access');
    expect(await tokens.revoke('garbage')).toBe('unknown');
  });

  it('keeps the cache bounded, evicting the least recently used', async () => {
    const { tokens } = service({ cacheSize: 2 });
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => tokens.issue('alice', 'viewer')));
    await tokens.verify(a!.accessToken);
    await tokens.verify(b!.accessToken);
    await tokens.verify(a!.accessToken); // a becomes the most recent
    await tokens.verify(c!.accessToken); // evicts b
    expect(tokens.stats()).toMatchObject({ cacheSize: 2, cacheHits: 1, cacheMisses: 3 });
    await tokens.verify(a!.accessToken);
    expect(tokens.stats()).toMatchObject({ cacheHits: 2, cacheMisses: 3 });
    expect((await tokens.verify(b!.accessToken)).ok).toBe(true);
    expect(tokens.stats()).toMatchObject({ cacheHits: 2, cacheMisses: 4, cacheSize: 2 });
  });

  describe('refresh tokens', () => {
    it('are single-use: a refresh returns a new working pair, the old token is spent', async () => {
      const { tokens } = service();
      const first = await tokens.issue('alice', 'operator');
      const r = await tokens.refresh(first.refreshToken);
      if (!r.ok) throw new Error(r.reason);
      expect(r.sub).toBe('alice');
      expect(r.pair.refreshToken).not.toBe(first.refreshToken);
      expect(r.pair.accessToken).not.toBe(first.accessToken);
      const v = await tokens.verify(r.pair.accessToken);
      expect(v.ok && v.claims.role).toBe('operator');
      expect(await tokens.refresh(first.refreshToken)).toEqual({ ok: false, reason: 'refresh_reused' });
    });

    it('reuse revokes the whole family: its refresh and access tokens', async () => {
      const { tokens } = service();
      const first = await tokens.issue('alice', 'viewer');
      const other = await tokens.issue('alice', 'viewer'); // another login, another family
      const second = await tokens.refresh(first.refreshToken);
      if (!second.ok) throw new Error(second.reason);
      expect((await tokens.verify(second.pair.accessToken)).ok).toBe(true);
      expect((await tokens.refresh(first.refreshToken)).ok).toBe(false);
      expect(await tokens.refresh(second.pair.refreshToken)).toEqual({ ok: false, reason: 'refresh_revoked' });
      expect(await tokens.verify(second.pair.accessToken)).toEqual({ ok: false, reason: 'revoked' });
      expect(await tokens.verify(first.accessToken)).toEqual({ ok: false, reason: 'revoked' });
      expect((await tokens.verify(other.accessToken)).ok).toBe(true);
      expect((await tokens.refresh(other.refreshToken)).ok).toBe(true);
    });

    it('expire after their lifetime', async () => {
      const { tokens, clock } = service({ refreshTtlSeconds: 3600 });
      const pair = await tokens.issue('alice', 'viewer');
      clock.advance(3600_000);
      expect(await tokens.refresh(pair.refreshToken)).toEqual({ ok: false, reason: 'refresh_expired' });
    });

    it('revoking one revokes its family; unknown ones are refused', async () => {
      const { tokens } = service();
      const pair = await tokens.issue('alice', 'viewer');
      expect(await tokens.revoke(pair.refreshToken)).toBe('refresh');
      expect(await tokens.refresh(pair.refreshToken)).toEqual({ ok: false, reason: 'refresh_revoked' });
      expect(await tokens.verify(pair.accessToken)).toEqual({ ok: false, reason: 'revoked' });
      expect(await tokens.refresh('csr_' + 'A'.repeat(43))).toEqual({ ok: false, reason: 'unknown_refresh_token' });
      expect(await tokens.refresh(pair.accessToken)).toEqual({ ok: false, reason: 'unknown_refresh_token' });
      expect(await tokens.revoke('csr_nope')).toBe('unknown');
    });

    it('take the current role, and fail for a user that is gone', async () => {
      const { tokens } = service();
      const pair = await tokens.issue('alice', 'viewer');
      const r = await tokens.refresh(pair.refreshToken, () => ({ role: 'admin' }));
      if (!r.ok) throw new Error(r.reason);
      const v = await tokens.verify(r.pair.accessToken);
      expect(v.ok && v.claims.role).toBe('admin');
      expect(await tokens.refresh(r.pair.refreshToken, () => undefined)).toEqual({ ok: false, reason: 'user_unknown' });
    });
  });

  it('refuses a weak secret and bad lifetimes', () => {
    expect(() => new TokenService({ secret: 'short' })).toThrow(TokenConfigError);
    expect(() => new TokenService({ secret: 'x'.repeat(31) })).toThrow(/at least 32 bytes/);
    expect(() => new TokenService({ accessTtlSeconds: 0 })).toThrow(TokenConfigError);
    expect(() => new TokenService()).not.toThrow();
  });

  it('a token of another secret is refused as signed_by_previous_secret, a tampered one of ours as bad_signature', async () => {
    const a = new TokenService();
    const b = new TokenService();
    expect(a.kid).not.toBe(b.kid);
    const { accessToken } = await a.issue('alice', 'viewer');
    expect((await a.verify(accessToken)).ok).toBe(true);
    expect(await b.verify(accessToken)).toEqual({ ok: false, reason: 'signed_by_previous_secret' });
    // The same secret, another instance (a restart): the same kid, the token verifies.
    const before = service();
    const after = new TokenService({ secret: SECRET, now: before.clock.now });
    expect(after.kid).toBe(before.tokens.kid);
    expect((await after.verify((await before.tokens.issue('bob', 'viewer')).accessToken)).ok).toBe(true);
    // Our kid, payload changed: a forgery, not a secret change.
    const [h, p, sig] = accessToken.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    expect(await a.verify(`${h}.${b64({ ...claims, role: 'admin' })}.${sig}`)).toEqual({ ok: false, reason: 'bad_signature' });
    // A kid that is not a string is malformed.
    expect(await a.verify(`${b64({ alg: 'HS256', kid: 7 })}.${p}.${sig}`)).toEqual({ ok: false, reason: 'malformed_token' });
  });

  describe('token generation (gen)', () => {
    it('is carried as claim gen and returned by verify; a bad one is invalid_claims', async () => {
      const { tokens, clock } = service();
      const pair = await tokens.issue('alice', 'viewer', 'gen-1');
      const v = await tokens.verify(pair.accessToken);
      expect(v.ok && v.claims.gen).toBe('gen-1');
      const now = Math.floor(clock.now() / 1000);
      const bad = await forge({ sub: 'x', role: 'viewer', iat: now, exp: now + 60, jti: 'j', gen: 5 });
      expect(await tokens.verify(bad)).toEqual({ ok: false, reason: 'invalid_claims' });
    });

    it('a refresh under another generation (the password changed) is refused and revokes the family', async () => {
      const { tokens } = service();
      const pair = await tokens.issue('alice', 'viewer', 'gen-1');
      expect(await tokens.refresh(pair.refreshToken, () => ({ role: 'viewer', gen: 'gen-2' }))).toEqual({ ok: false, reason: 'password_changed' });
      expect(await tokens.verify(pair.accessToken)).toEqual({ ok: false, reason: 'revoked' });
      const same = await tokens.issue('alice', 'viewer', 'gen-2');
      const r = await tokens.refresh(same.refreshToken, () => ({ role: 'viewer', gen: 'gen-2' }));
      expect(r.ok).toBe(true);
      const v = r.ok ? await tokens.verify(r.pair.accessToken) : undefined;
      expect(v?.ok && v.claims.gen).toBe('gen-2');
    });
  });
});
