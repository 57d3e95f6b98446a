import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, JWT_SECRET, startServer, waitForStatus, type TestServer } from '../helpers/server.js';

const secretKey = new TextEncoder().encode(JWT_SECRET);

/** A token signed with the server's own secret, claims as given. */
function forge(claims: { sub?: string; role?: string; iat: number; exp: number; jti?: string }, key = secretKey): Promise<string> {
  const { sub = 'admin', role = 'admin', iat, exp, jti = randomBytes(8).toString('hex') } = claims;
  return new SignJWT({ role }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(sub).setIssuedAt(iat).setExpirationTime(exp).setJti(jti).sign(key);
}

const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);

describe('authentication', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Authentication allows 10 requests a minute per caller; this file makes more than that.
    s = await startServer({ rateLimitScale: 20, env: { CSIPOSE_API_KEYS: 'env-provided-operator-key-0001:operator' } });
  });
  afterAll(() => s?.close());

  it('POST /auth/token issues an HS256 access token and a refresh token in both forms', async () => {
    for (const form of ['a', 'b'] as const) {
      const r = await s.api('POST', '/auth/token', { form, body: { username: 'admin', password: ADMIN_PASSWORD } });
      expect(r.status).toBe(200);
      const d = form === 'a' ? r.body : r.body.data;
      if (form === 'b') expect(r.body.success).toBe(true);
      expect(d).toMatchObject({ token_type: 'bearer', expires_in: 86400 });
      expect(d.refresh_token).toMatch(/^csr_[A-Za-z0-9_-]{43}$/);
      expect(decodeProtectedHeader(d.access_token)).toMatchObject({ alg: 'HS256' });
      const claims = decodeJwt(d.access_token);
      expect(claims).toMatchObject({ sub: 'admin', role: 'admin' });
      expect(claims.exp! - claims.iat!).toBe(86400);
      expect(typeof claims.jti).toBe('string');
      const use = await s.api('GET', '/config', { token: d.access_token });
      expect(use.status).toBe(200);
    }
  });

  it('a wrong password or an unknown user is 401; missing fields 422; malformed JSON 400', async () => {
    for (const body of [
      { username: 'admin', password: 'wrong' },
      { username: 'nobody', password: ADMIN_PASSWORD },
    ]) {
      const b = await s.api('POST', '/auth/token', { body });
      expect(b.status).toBe(401);
      expect(b.body.error.code).toBe('AUTHENTICATION_ERROR');
      const a = await s.api('POST', '/auth/token', { body, form: 'a' });
      expect(a.status).toBe(401);
      expect(a.body.error.code).toBe('AUTHENTICATION_ERROR');
    }
    const missing: Array<[unknown, string]> = [
      [{ username: 'admin' }, 'password'],
      [{ password: ADMIN_PASSWORD }, 'username'],
      [{ username: 5, password: ADMIN_PASSWORD }, 'username'],
      [{ username: 'admin', password: ADMIN_PASSWORD, otp: '123' }, 'otp'],
    ];
    for (const [body, field] of missing) {
      const b = await s.api('POST', '/auth/token', { body });
      expect(b.status, JSON.stringify(body)).toBe(422);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details.field).toBe(field);
      const a = await s.api('POST', '/auth/token', { body, form: 'a' });
      expect(a.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual([field]);
    }
    const both = await s.api('POST', '/auth/token', { body: {}, form: 'a' });
    expect(both.status).toBe(422);
    expect(both.body.error.details.field_errors.map((e: { field: string }) => e.field).sort()).toEqual(['password', 'username']);
    const bad = await s.api('POST', '/auth/token', { rawBody: '{"username": "admin", ' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    const notObject = await s.api('POST', '/auth/token', { body: ['admin', ADMIN_PASSWORD] });
    expect(notObject.status).toBe(422);
    expect(notObject.body.error.details.field).toBe('body');
  });

  it('refresh tokens trade for a new pair once; a second use is 401', async () => {
    const login = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } });
    const first = login.body.data.refresh_token as string;
    const r = await s.api('POST', '/auth/refresh', { body: { refresh_token: first } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ token_type: 'bearer', expires_in: 86400 });
    expect(r.body.data.refresh_token).not.toBe(first);
    expect(decodeJwt(r.body.data.access_token)).toMatchObject({ sub: 'admin', role: 'admin' });
    expect((await s.api('GET', '/config', { token: r.body.data.access_token })).status).toBe(200);

    const again = await s.api('POST', '/auth/refresh', { body: { refresh_token: first } });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('AUTHENTICATION_ERROR');
    // Reuse means the token leaked: the whole family is revoked, the newer pair included.
    expect((await s.api('GET', '/config', { token: r.body.data.access_token })).status).toBe(401);
    expect((await s.api('POST', '/auth/refresh', { body: { refresh_token: r.body.data.refresh_token } })).status).toBe(401);

    // Form A: the bare pair, refresh token included.
    const fresh = (await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD }, form: 'a' })).body;
    const ra = await s.api('POST', '/auth/refresh', { body: { refresh_token: fresh.refresh_token }, form: 'a' });
    expect(ra.status).toBe(200);
    expect(Object.keys(ra.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'token_type']);
    expect((await s.api('GET', '/config', { token: ra.body.access_token })).status).toBe(200);

    const a = await s.api('POST', '/auth/refresh', { body: { refresh_token: 'csr_' + 'A'.repeat(43) }, form: 'a' });
    expect(a.status).toBe(401);
    expect(a.body.error.code).toBe('AUTHENTICATION_ERROR');
    const missing = await s.api('POST', '/auth/refresh', { body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details.field).toBe('refresh_token');
  });

  it('a revoked access token is refused; a revoked refresh token cannot refresh', async () => {
    const login = (await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } })).body.data;
    expect((await s.api('GET', '/system/status', { token: login.access_token })).status).toBe(200);
    const rv = await s.api('POST', '/auth/revoke', { body: { token: login.access_token } });
    expect(rv.status).toBe(200);
    expect(rv.body.data).toEqual({ revoked: true, token_type: 'access' });
    const after = await s.api('GET', '/system/status', { token: login.access_token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('AUTHENTICATION_ERROR');

    const rr = await s.api('POST', '/auth/revoke', { body: { token: login.refresh_token }, form: 'a' });
    expect(rr.status).toBe(200);
    expect(rr.body).toEqual({ revoked: true, token_type: 'refresh' });
    expect((await s.api('POST', '/auth/refresh', { body: { refresh_token: login.refresh_token } })).status).toBe(401);

    const unknown = await s.api('POST', '/auth/revoke', { body: { token: 'never-issued' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('RESOURCE_NOT_FOUND');
    const missing = await s.api('POST', '/auth/revoke', { body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details.field).toBe('token');
  });

  it('tokens signed with the secret are accepted; alg none, expired, foreign-signed and tampered ones are 401', async () => {
    const good = await forge({ iat: nowS() - 10, exp: nowS() + 600 });
    expect((await s.api('GET', '/config', { token: good })).status).toBe(200);

    const expired = await forge({ iat: nowS() - 7200, exp: nowS() - 3600 });
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: 'admin', role: 'admin', iat: nowS(), exp: nowS() + 600, jti: 'x1' })}.`;
    const noneUpper = `${b64url({ alg: 'NONE', typ: 'JWT' })}.${b64url({ sub: 'admin', role: 'admin', iat: nowS(), exp: nowS() + 600, jti: 'x2' })}.`;
    const foreign = await forge({ iat: nowS(), exp: nowS() + 600 }, new TextEncoder().encode('another-secret-of-sufficient-length-000000'));
    const [h, , sig] = good.split('.');
    const tampered = `${h}.${b64url({ ...decodeJwt(good), role: 'admin', sub: 'mallory' })}.${sig}`;
    const badRole = await forge({ role: 'root', iat: nowS(), exp: nowS() + 600 });
    const future = await forge({ iat: nowS() + 3600, exp: nowS() + 7200 });
    for (const [name, token] of Object.entries({ expired, none, noneUpper, foreign, tampered, badRole, future })) {
      for (const form of ['a', 'b'] as const) {
        const r = await s.api('GET', '/config', { token, form });
        expect(r.status, name).toBe(401);
        expect(r.body.error.code, name).toBe('AUTHENTICATION_ERROR');
      }
    }
  });

  it('admin manages API keys over /auth/keys; a key works as X-API-Key and as Bearer until revoked', async () => {
    const admin = await s.login();
    const created = await s.api('POST', '/auth/keys', { token: admin, body: { role: 'viewer', name: 'dashboard' } });
    expect(created.status).toBe(201);
    const k = created.body.data;
    expect(k).toMatchObject({ role: 'viewer', name: 'dashboard', revokedAt: null });
    expect(k.key).toMatch(/^csk_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
    expect(k.key.slice(4, 12)).toBe(k.id);

    expect((await s.api('GET', '/config', { apiKey: k.key })).status).toBe(200);
    expect((await s.api('GET', '/config', { token: k.key })).status).toBe(200);

    const listB = await s.api('GET', '/auth/keys', { token: admin });
    expect(listB.status).toBe(200);
    const mine = listB.body.data.keys.find((x: { id: string }) => x.id === k.id);
    expect(mine).toMatchObject({ id: k.id, name: 'dashboard', role: 'viewer', revokedAt: null });
    expect(mine.key).toBeUndefined();
    expect(listB.text).not.toContain(k.key.slice(13));
    const listA = await s.api('GET', '/auth/keys', { token: admin, form: 'a' });
    expect(listA.body.keys.map((x: { id: string }) => x.id)).toContain(k.id);
    const createdA = await s.api('POST', '/auth/keys', { token: admin, form: 'a', body: { role: 'operator' } });
    expect(createdA.status).toBe(201);
    expect(createdA.body).toMatchObject({ role: 'operator', name: `key-${createdA.body.id}` });
    expect((await s.api('POST', '/system/stop', { apiKey: createdA.body.key })).status).toBe(409);

    const del = await s.api('DELETE', `/auth/keys/${k.id}`, { token: admin });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: k.id, revoked: true, already_revoked: false });
    const again = await s.api('DELETE', `/auth/keys/${k.id}`, { token: admin, form: 'a' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ id: k.id, revoked: true, already_revoked: true });
    for (const r of [await s.api('GET', '/config', { apiKey: k.key }), await s.api('GET', '/config', { token: k.key })]) {
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('AUTHENTICATION_ERROR');
    }
    const listed = (await s.api('GET', '/auth/keys', { token: admin })).body.data.keys.find((x: { id: string }) => x.id === k.id);
    expect(listed.revokedAt).toMatch(/^\d{4}-/);

    const gone = await s.api('DELETE', '/auth/keys/zzzzzzzz', { token: admin, form: 'a' });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('RESOURCE_NOT_FOUND');
    for (const [body, field] of [
      [{ role: 'superuser' }, 'role'],
      [{}, 'role'],
      [{ role: 'viewer', name: 7 }, 'name'],
      [{ role: 'viewer', scopes: ['x'] }, 'scopes'],
    ] as const) {
      const r = await s.api('POST', '/auth/keys', { token: admin, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field).toBe(field);
    }
  });

  it('CSIPOSE_API_KEYS adds keys at start with their role', async () => {
    const r = await s.api('GET', '/system/status', { apiKey: 'env-provided-operator-key-0001' });
    expect(r.status).toBe(200);
    const admin = await s.login();
    const operatorPut = await s.api('PUT', '/config', { apiKey: 'env-provided-operator-key-0001', body: { domain: 'retail' } });
    expect(operatorPut.status).toBe(403);
    const keys = (await s.api('GET', '/auth/keys', { token: admin })).body.data.keys;
    const env = keys.find((k: { role: string; source: string }) => k.role === 'operator' && k.source === 'env');
    expect(env).toBeDefined();
    // Env keys live in the variable, not in the key file: the API cannot revoke them.
    const del = await s.api('DELETE', `/auth/keys/${env.id}`, { token: admin });
    expect(del.status).toBe(422);
    expect(del.body.error.details.field).toBe('key_id');
    expect((await s.api('GET', '/system/status', { apiKey: 'env-provided-operator-key-0001' })).status).toBe(200);
  });

  it('a bad credential is never rescued by a good one sent beside it', async () => {
    const admin = await s.login();
    const r = await s.api('GET', '/config', { token: 'csk_zzzzzzzz_' + 'Z'.repeat(43), apiKey: 'env-provided-operator-key-0001' });
    expect(r.status).toBe(401);
    const ok = await s.api('GET', '/config', { token: admin, apiKey: 'garbage' });
    expect(ok.status).toBe(200);
  });
});

describe('roles', () => {
  let s: TestServer;
  let admin: string;
  let viewer: string;
  let operator: string;
  beforeAll(async () => {
    s = await startServer({ rateLimitScale: 20, model: true });
    admin = await s.login();
    viewer = (await s.apiKey(admin, 'viewer')).key;
    operator = (await s.apiKey(admin, 'operator')).key;
  });
  afterAll(() => s?.close());

  const status = async (token: string) => (await s.api('GET', '/system/status', { token })).body.data.status as string;
  const settle = (token: string, want: string) => waitForStatus(s, token, want);

  it('a viewer reads everything but gets 403 AUTHORIZATION_ERROR on every write', async () => {
    for (const path of ['/config', '/config/schema', '/system/status', '/health/detailed', '/metrics']) {
      expect((await s.api('GET', path, { token: viewer })).status, path).toBe(200);
    }
    const writes: Array<[string, string, unknown]> = [
      ['PUT', '/config', { domain: 'retail' }],
      ['POST', '/pose/process', {}],
      ['POST', '/system/start', undefined],
      ['POST', '/system/stop', undefined],
      ['POST', '/system/restart', undefined],
      ['GET', '/auth/keys', undefined],
      ['POST', '/auth/keys', { role: 'admin' }],
      ['DELETE', '/auth/keys/abcdefgh', undefined],
    ];
    for (const [method, path, body] of writes) {
      for (const form of ['a', 'b'] as const) {
        const r = await s.api(method, path, { apiKey: viewer, form, ...(body !== undefined ? { body } : {}) });
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.body.error.code).toBe('AUTHORIZATION_ERROR');
        expect(r.body.error.details).toMatchObject({ role: 'viewer' });
      }
    }
    expect(await status(admin)).toBe('stopped');
    expect((await s.api('GET', '/config', { token: admin })).body.data.domain).toBe('general');
  });

  it('an operator starts, processes and stops, but cannot change config or keys', async () => {
    for (const [method, path, body] of [
      ['PUT', '/config', { domain: 'retail' }],
      ['GET', '/auth/keys', undefined],
      ['POST', '/auth/keys', { role: 'viewer' }],
    ] as const) {
      const r = await s.api(method, path, { token: operator, ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.error.details).toMatchObject({ role: 'operator', required_role: 'admin' });
    }
    const start = await s.api('POST', '/system/start', { token: operator });
    expect(start.status).toBe(202);
    await settle(operator, 'running');
    const antenna_data = [0, 1, 2].map((rx) => Array.from({ length: 30 }, (_, sc) => ({ real: Math.cos(sc * 0.2 + rx), imag: Math.sin(sc * 0.2 + rx) })));
    const proc = await s.api('POST', '/pose/process', { token: operator, body: { csi_data: { antenna_data } } });
    expect(proc.status, proc.text).toBe(200);
    expect(proc.body.data.status).toBe('completed');
    const stop = await s.api('POST', '/system/stop', { apiKey: operator });
    expect(stop.status).toBe(202);
    await settle(operator, 'stopped');
  });

  it('an admin can do everything', async () => {
    const put = await s.api('PUT', '/config', { token: admin, body: { domain: 'retail' } });
    expect(put.status).toBe(200);
    expect(put.body.data.updated_fields).toEqual(['domain']);
    const key = await s.api('POST', '/auth/keys', { token: admin, body: { role: 'viewer' } });
    expect(key.status).toBe(201);
    expect((await s.api('DELETE', `/auth/keys/${key.body.data.id}`, { token: admin })).status).toBe(200);
    expect((await s.api('POST', '/system/start', { token: admin })).status).toBe(202);
    await settle(admin, 'running');
    const restart = await s.api('POST', '/system/restart', { token: admin });
    expect(restart.status).toBe(202);
    await settle(admin, 'running');
    expect((await s.api('POST', '/system/stop', { token: admin })).status).toBe(202);
    await settle(admin, 'stopped');
  });
});
