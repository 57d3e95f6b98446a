/**
 * Tokens die with the password they were issued under: access tokens carry the user's token
 * generation (a fingerprint of the stored password hash), checked on every verification, and a
 * refresh checks it too. A password changes when the service starts with another
 * `CSIPOSE_ADMIN_PASSWORD`, or through `UserStore.setPassword` while it runs. Real servers.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.js';
import { ADMIN_PASSWORD, probeToken, startServer, withServer, type TestServer } from '../helpers/server.js';
import { Refused, WsClient } from '../helpers/wsClient.js';
import { tempDir } from './helpers.js';

async function login(s: TestServer, password: string): Promise<{ status: number; access?: string; refresh?: string }> {
  const r = await s.api('POST', '/auth/token', { body: { username: 'admin', password }, form: 'a' });
  return r.status === 200 ? { status: 200, access: r.body.access_token, refresh: r.body.refresh_token } : { status: r.status };
}

describe('a password change ends the tokens issued before it', () => {
  let tmp: ReturnType<typeof tempDir>;
  const running: TestServer[] = [];
  beforeEach(() => (tmp = tempDir()));
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close();
    tmp.cleanup();
  });

  it('a restart with another CSIPOSE_ADMIN_PASSWORD: earlier tokens are refused (password_changed), the same password keeps them', async () => {
    const dataDir = join(tmp.dir, 'data');
    const start = async (password: string) => {
      const s = await startServer({ dataDir, env: { CSIPOSE_ADMIN_PASSWORD: password } });
      running.push(s);
      return s;
    };
    const first = await start('first-password-123');
    const old = (await login(first, 'first-password-123')).access!;
    expect(await probeToken(first, old)).toEqual({ status: 200 });
    await running.pop()!.close();

    const second = await start('second-password-456');
    expect(await probeToken(second, old)).toEqual({ status: 401, reason: 'password_changed' });
    expect((await login(second, 'first-password-123')).status).toBe(401);
    const current = (await login(second, 'second-password-456')).access!;
    expect(await probeToken(second, current)).toEqual({ status: 200 });
    await running.pop()!.close();

    // Same password again: the tokens of the previous start stay good.
    const third = await start('second-password-456');
    expect(await probeToken(third, current)).toEqual({ status: 200 });
    expect(await probeToken(third, old)).toEqual({ status: 401, reason: 'password_changed' });
  });

  it('a change while running: access and refresh tokens are refused, WebSocket connections are closed with 4401', async () => {
    await withServer({}, async (s) => {
      const before = await login(s, ADMIN_PASSWORD);
      const ws = await WsClient.connect(s.port, { token: before.access! });
      const { key } = await s.apiKey(before.access!, 'viewer', 'survives-password-change');
      await s.svc.auth.users.setPassword('admin', 'changed-password-789');

      expect(await probeToken(s, before.access!)).toEqual({ status: 401, reason: 'password_changed' });
      // The open connection is closed by the server's recheck, and the token cannot open another.
      expect(await ws.whenClosed()).toMatchObject({ code: 4401, reason: expect.stringMatching(/password_changed/) });
      const again = await WsClient.connect(s.port, { token: before.access! }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(again).toBeInstanceOf(Refused);
      expect(again).toMatchObject({ status: 401, body: { error: { details: { reason: 'password_changed' } } } });
      const refreshed = await s.api('POST', '/auth/refresh', { body: { refresh_token: before.refresh } });
      expect(refreshed.status).toBe(401);
      expect(refreshed.body.error.details.reason).toBe('password_changed');

      expect((await login(s, ADMIN_PASSWORD)).status).toBe(401);
      const after = await login(s, 'changed-password-789');
      expect(await probeToken(s, after.access!)).toEqual({ status: 200 });
      expect((await s.api('POST', '/auth/refresh', { body: { refresh_token: after.refresh } })).status).toBe(200);
      // API keys are not passwords: they stay.
      expect((await s.api('GET', '/system/status', { apiKey: key })).status).toBe(200);
    });
  });
});

describe('Authenticator: token generation', () => {
  let tmp: ReturnType<typeof tempDir>;
  const opened: Authenticator[] = [];
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => {
    opened.splice(0).forEach((a) => a.close());
    tmp.cleanup();
  });

  it("a user's password change ends only that user's tokens", async () => {
    const auth = new Authenticator();
    opened.push(auth);
    await auth.init({ dataDir: tmp.dir, env: { CSIPOSE_ADMIN_PASSWORD: 'admin-pass-123' } });
    await auth.users.create('vera', 'viewer', 'vera-pass');
    const admin = (await auth.login('admin', 'admin-pass-123'))!;
    const vera = (await auth.login('vera', 'vera-pass'))!;
    await auth.users.setPassword('vera', 'vera-new-pass');
    expect(await auth.authenticate({ authorization: `Bearer ${vera.accessToken}` })).toEqual({ ok: false, reason: 'password_changed' });
    expect(await auth.refresh(vera.refreshToken)).toEqual({ ok: false, reason: 'password_changed' });
    expect((await auth.authenticate({ authorization: `Bearer ${admin.accessToken}` })).ok).toBe(true);
    expect((await auth.refresh(admin.refreshToken)).ok).toBe(true);
  });
});
