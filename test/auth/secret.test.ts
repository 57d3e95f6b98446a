/**
 * The token signing secret survives restarts: without `CSIPOSE_JWT_SECRET` the service generates
 * one once and keeps it in `<dataDir>/jwt_secret.json` (mode 0600), so tokens outlive a restart.
 * A token signed with another secret (the file was replaced, or the env var set or changed) is
 * refused with a reason that says so, not as a bad signature. Real servers on one data directory.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.js';
import { StoreFileError } from '../../src/auth/jsonFile.js';
import { probeToken, startServer, type TestServer } from '../helpers/server.js';
import { Refused, WsClient, type RefusalBody } from '../helpers/wsClient.js';
import { tempDir } from './helpers.js';

const NO_SECRET = { CSIPOSE_JWT_SECRET: undefined };
const OTHER_SECRET = 'another-deployment-secret-0123456789-abcdef';

describe('token signing secret', () => {
  let tmp: ReturnType<typeof tempDir>;
  const running: TestServer[] = [];
  const start = async (env: Record<string, string | undefined>) => {
    const s = await startServer({ dataDir: join(tmp.dir, 'data'), env });
    running.push(s);
    return s;
  };
  const stop = async (s: TestServer) => {
    running.splice(running.indexOf(s), 1);
    await s.close();
  };
  beforeEach(() => (tmp = tempDir()));
  afterEach(async () => {
    for (const s of running.splice(0)) await s.close();
    tmp.cleanup();
  });

  it('without CSIPOSE_JWT_SECRET: generated once, kept in the data directory (0600), tokens survive a restart', async () => {
    const first = await start(NO_SECRET);
    const token = await first.login();
    expect(await probeToken(first, token)).toEqual({ status: 200 });
    const file = join(first.dataDir, 'jwt_secret.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = readFileSync(file, 'utf8');
    await stop(first);

    const second = await start(NO_SECRET);
    expect(await probeToken(second, token)).toEqual({ status: 200 });
    // The same file, not rewritten.
    expect(readFileSync(file, 'utf8')).toBe(stored);
  });

  it('a token signed with a secret the service no longer uses is refused as signed_by_previous_secret', async () => {
    const first = await start(NO_SECRET);
    const token = await first.login();
    const file = join(first.dataDir, 'jwt_secret.json');
    await stop(first);

    // The secret file replaced by another (a restored backup, another machine's).
    const other = JSON.parse(readFileSync(file, 'utf8')) as { secret: string };
    other.secret = Buffer.alloc(32, 7).toString('base64url');
    writeFileSync(file, JSON.stringify(other), { mode: 0o600 });
    const second = await start(NO_SECRET);
    expect(await probeToken(second, token)).toEqual({ status: 401, reason: 'signed_by_previous_secret' });
    // A tampered token of the current secret is still a bad signature.
    const fresh = await second.login();
    const [h, , sig] = fresh.split('.') as [string, string, string];
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'root', role: 'admin', iat: 1, exp: 4e9, jti: 'x' })).toString('base64url')}.${sig}`;
    expect(await probeToken(second, forged)).toEqual({ status: 401, reason: 'bad_signature' });
    // The WebSocket upgrade says the same.
    const refused = await WsClient.connect(second.port, { token }).then(
      (c) => (c.terminate(), undefined),
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(Refused);
    expect((refused as Refused).status).toBe(401);
    expect(((refused as Refused).body as RefusalBody).error.details?.reason).toBe('signed_by_previous_secret');
  });

  it('CSIPOSE_JWT_SECRET wins over the file while set; the file is used again once it is unset', async () => {
    const first = await start(NO_SECRET);
    const fileToken = await first.login();
    await stop(first);

    const withEnv = await start({ CSIPOSE_JWT_SECRET: OTHER_SECRET });
    expect(await probeToken(withEnv, fileToken)).toEqual({ status: 401, reason: 'signed_by_previous_secret' });
    const envToken = await withEnv.login();
    expect(await probeToken(withEnv, envToken)).toEqual({ status: 200 });
    await stop(withEnv);

    const again = await start(NO_SECRET);
    expect(await probeToken(again, fileToken)).toEqual({ status: 200 });
    expect(await probeToken(again, envToken)).toEqual({ status: 401, reason: 'signed_by_previous_secret' });
  });
});

describe('Authenticator: the secret file', () => {
  let tmp: ReturnType<typeof tempDir>;
  const opened: Authenticator[] = [];
  const init = async (env: Record<string, string | undefined>) => {
    const auth = new Authenticator();
    opened.push(auth);
    await auth.init({ dataDir: tmp.dir, env: { CSIPOSE_ADMIN_PASSWORD: 'admin-pass-123', ...env } });
    return auth;
  };
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => {
    opened.splice(0).forEach((a) => a.close());
    tmp.cleanup();
  });

  it('is not written while CSIPOSE_JWT_SECRET is set', async () => {
    await init({ CSIPOSE_JWT_SECRET: OTHER_SECRET });
    expect(existsSync(join(tmp.dir, 'jwt_secret.json'))).toBe(false);
  });

  it('refuses to start on a malformed or weak secret file rather than replace it', async () => {
    const file = join(tmp.dir, 'jwt_secret.json');
    writeFileSync(file, '{"secret": ');
    await expect(init({})).rejects.toThrow(StoreFileError);
    writeFileSync(file, JSON.stringify({ version: 1, secret: 'c2hvcnQ', createdAt: '2025-01-01T00:00:00Z' }));
    await expect(init({})).rejects.toThrow(/jwt_secret\.json/);
    expect(readFileSync(file, 'utf8')).toContain('c2hvcnQ');
  });

  it('tightens a secret file readable by others to 0600', async () => {
    await init({});
    const file = join(tmp.dir, 'jwt_secret.json');
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text);
    chmodSync(file, 0o644);
    await init({});
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
