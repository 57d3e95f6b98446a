import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeyConfigError } from '../../src/auth/apiKeys.js';
import { Authenticator } from '../../src/auth/authenticator.js';
import { TokenConfigError } from '../../src/auth/tokens.js';
import { fakeClock, tempDir } from './helpers.js';

const ENV = {
  CSIPOSE_ADMIN_PASSWORD: 'admin-pass-123',
  CSIPOSE_JWT_SECRET: 'jwt-secret-for-tests-0123456789-abcdef',
  CSIPOSE_API_KEYS: 'env-viewer-key-0123456789:viewer',
};

describe('Authenticator', () => {
  let tmp: ReturnType<typeof tempDir>;
  const opened: Authenticator[] = [];
  const start = async (env: Record<string, string | undefined> = ENV, now?: () => number) => {
    const auth = new Authenticator();
    opened.push(auth);
    const r = await auth.init({ dataDir: tmp.dir, env, ...(now ? { now } : {}) });
    return { auth, ...r };
  };
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => {
    opened.splice(0).forEach((a) => a.close());
    tmp.cleanup();
  });

  it('logs admin in with the env password and refuses wrong passwords and unknown users', async () => {
    const { auth, generatedAdminPassword } = await start();
    expect(generatedAdminPassword).toBeUndefined();
    const pair = await auth.login('admin', 'admin-pass-123');
    expect(pair).not.toBeNull();
    expect(pair!.expiresIn).toBe(86400);
    expect(await auth.login('admin', 'admin-pass-124')).toBeNull();
    expect(await auth.login('nobody', 'admin-pass-123')).toBeNull();
    const r = await auth.authenticate({ authorization: `Bearer ${pair!.accessToken}` });
    expect(r).toEqual({ ok: true, principal: { id: 'admin', kind: 'user', role: 'admin', name: 'admin' } });
  });

  it('generates an admin password when none is configured, and keeps it across restarts', async () => {
    const env = { CSIPOSE_JWT_SECRET: ENV.CSIPOSE_JWT_SECRET };
    const first = await start(env);
    expect(first.generatedAdminPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const second = await start(env);
    expect(second.generatedAdminPassword).toBeUndefined();
    expect(await second.auth.login('admin', first.generatedAdminPassword!)).not.toBeNull();
  });

  it('gives users the role they were created with', async () => {
    const { auth } = await start();
    await auth.users.create('vera', 'viewer', 'vera-pass');
    const pair = await auth.login('vera', 'vera-pass');
    const r = await auth.authenticate({ authorization: `bearer ${pair!.accessToken}` });
    expect(r.ok && r.principal).toEqual({ id: 'vera', kind: 'user', role: 'viewer', name: 'vera' });
  });

  it('accepts Bearer JWT, Bearer API key, X-API-Key and ?token= (JWT or API key)', async () => {
    const { auth } = await start();
    const pair = (await auth.login('admin', 'admin-pass-123'))!;
    const { key, info } = auth.createApiKey('operator', 'robot');
    const asKey = { ok: true, principal: { id: info.id, kind: 'api_key', role: 'operator', name: 'robot' } };
    const asUser = { ok: true, principal: { id: 'admin', kind: 'user', role: 'admin', name: 'admin' } };
    expect(await auth.authenticate({ apiKey: key })).toEqual(asKey);
    expect(await auth.authenticate({ authorization: `Bearer ${key}` })).toEqual(asKey);
    expect(await auth.authenticate({ queryToken: key })).toEqual(asKey);
    expect(await auth.authenticate({ queryToken: pair.accessToken })).toEqual(asUser);
    expect(await auth.authenticate({ apiKey: 'env-viewer-key-0123456789' })).toMatchObject({
      ok: true,
      principal: { id: 'env-1', kind: 'api_key', role: 'viewer' },
    });
  });

  it('refuses missing, unsupported and bad credentials, and a bad one is not rescued by a good one', async () => {
    const { auth } = await start();
    const { key } = auth.createApiKey('admin');
    expect(await auth.authenticate({})).toEqual({ ok: false, reason: 'missing_credentials' });
    expect(await auth.authenticate({ authorization: 'Basic YWRtaW46eA==' })).toEqual({ ok: false, reason: 'unsupported_auth_scheme' });
    expect(await auth.authenticate({ authorization: 'Bearer' })).toEqual({ ok: false, reason: 'unsupported_auth_scheme' });
    expect(await auth.authenticate({ authorization: 'Bearer a.b.c', apiKey: key })).toEqual({ ok: false, reason: 'malformed_token' });
    expect(await auth.authenticate({ queryToken: 'csk_nope' })).toEqual({ ok: false, reason: 'invalid_api_key' });
    expect(auth.stats().failures).toEqual({ missing_credentials: 1, unsupported_auth_scheme: 2, malformed_token: 1, invalid_api_key: 1 });
  });

  it('answers a repeated token from the cache, and refuses it once revoked', async () => {
    const { auth } = await start();
    const pair = (await auth.login('admin', 'admin-pass-123'))!;
    const creds = { authorization: `Bearer ${pair.accessToken}` };
    expect((await auth.authenticate(creds)).ok).toBe(true);
    expect(auth.stats()).toMatchObject({ cacheHits: 0, cacheMisses: 1 });
    expect((await auth.authenticate(creds)).ok).toBe(true);
    expect(auth.stats()).toMatchObject({ cacheHits: 1, cacheMisses: 1 });
    expect(await auth.revoke(pair.accessToken)).toBe('access');
    expect(await auth.authenticate(creds)).toEqual({ ok: false, reason: 'revoked' });
  });

  it('refreshes once per refresh token', async () => {
    const { auth } = await start();
    const pair = (await auth.login('admin', 'admin-pass-123'))!;
    const r = await auth.refresh(pair.refreshToken);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect((await auth.authenticate({ authorization: `Bearer ${r.pair.accessToken}` })).ok).toBe(true);
    expect(await auth.refresh(pair.refreshToken)).toEqual({ ok: false, reason: 'refresh_reused' });
    expect(await auth.authenticate({ authorization: `Bearer ${r.pair.accessToken}` })).toEqual({ ok: false, reason: 'revoked' });
  });

  it('sees keys created and revoked by another instance on the same data dir', async () => {
    const clock = fakeClock();
    const server = (await start(ENV, clock.now)).auth;
    const cli = (await start(ENV, clock.now)).auth;
    const { key, info } = cli.createApiKey('viewer', 'dashboard');
    expect(await server.authenticate({ apiKey: key })).toMatchObject({ ok: true, principal: { id: info.id, name: 'dashboard' } });
    expect(cli.revokeApiKey(info.id)).toBe('revoked');
    clock.advance(1000);
    expect(await server.authenticate({ apiKey: key })).toEqual({ ok: false, reason: 'api_key_revoked' });
    expect(server.listApiKeys().find((k) => k.id === info.id)!.revokedAt).not.toBeNull();
  });

  it('fails at start on bad configuration, before writing anything', async () => {
    await expect(start({ ...ENV, CSIPOSE_API_KEYS: 'abcdefghijklmnopq:superuser' })).rejects.toThrow(ApiKeyConfigError);
    await expect(start({ ...ENV, CSIPOSE_API_KEYS: 'abcdefghijklmnopq' })).rejects.toThrow(/expected KEY:ROLE/);
    await expect(start({ ...ENV, CSIPOSE_JWT_SECRET: 'too-short' })).rejects.toThrow(TokenConfigError);
    expect(existsSync(join(tmp.dir, 'users.json'))).toBe(false);
  });

  it('refuses use before init', () => {
    const auth = new Authenticator();
    expect(() => auth.authenticate({ apiKey: 'x' })).toThrow(/init/);
  });
});
