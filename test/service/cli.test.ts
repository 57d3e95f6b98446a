import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { cliMain, ensureBuilt, repoRoot, runCli } from '../helpers/cli.js';
import { testModel, until } from '../helpers/server.js';

/** The environment of a child process: ours without any CSIPOSE_* setting, plus `extra`. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CSIPOSE_')) env[k] = v;
  return { ...env, ...extra };
}

interface Served {
  child: ChildProcess;
  base: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit status once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `node dist/src/cli/main.js serve --host 127.0.0.1 --port 0 ...args` and waits for its
 * `listening on http://HOST:PORT` line.
 */
function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [cliMain, 'serve', '--host', '127.0.0.1', '--port', '0', ...args], {
    cwd: repoRoot,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not print its address:\n${out}\n${err}`));
    }, 30_000);
    const onData = () => {
      const m = /listening on (http:\/\/[\d.]+:\d+)\n/.exec(out);
      if (!m) return;
      clearTimeout(guard);
      child.stdout!.off('data', onData);
      resolve({ child, base: m[1]!, stdout: () => out, stderr: () => err, exited });
    };
    child.stdout!.on('data', onData);
    void exited.then(({ code }) => {
      clearTimeout(guard);
      reject(new Error(`serve exited with ${code} before listening:\n${out}\n${err}`));
    });
  });
}

async function call(base: string, method: string, path: string, h: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { ...h, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function countFrames(dataDir: string): Promise<number> {
  const store = await Store.open(join(dataDir, 'csipose.duckdb'));
  try {
    const rows = await store.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM pose_frames');
    return rows[0]!.n;
  } finally {
    await store.close();
  }
}

describe('csipose serve and keys as real processes', () => {
  let root: string;
  let dataDir: string;
  let overlay: string;
  const running: ChildProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    root = mkdtempSync(join(tmpdir(), 'csipose-cli-'));
    dataDir = join(root, 'data');
    overlay = join(root, 'overlay.json');
    writeFileSync(overlay, JSON.stringify({ neural_network: { model_path: testModel(root) }, detection: { confidence_threshold: 0, tracking_min_hits: 1 } }));
  }, 120_000);
  afterAll(() => {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  let password = '';
  let framesAfterFirstRun = 0;
  let keptKey = '';

  it('first start: prints a generated admin password once and its address, serves, exits 0 on SIGTERM after flushing', async () => {
    const s = await serve(['--data-dir', dataDir, '--config', overlay]);
    running.push(s.child);
    const lines = s.stdout().split('\n').filter(Boolean);
    const pw = lines.filter((l) => l.startsWith('admin password (generated, shown once): '));
    expect(pw).toHaveLength(1);
    password = pw[0]!.slice('admin password (generated, shown once): '.length);
    expect(password.length).toBeGreaterThanOrEqual(16);
    expect(lines.at(-1)).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(s.base).port)).toBeGreaterThan(0);

    const health = await call(s.base, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('healthy');
    const login = await call(s.base, 'POST', '/auth/token', {}, { username: 'admin', password });
    expect(login.status).toBe(200);
    const token = login.body.data.access_token as string;
    const auth = { authorization: `Bearer ${token}` };

    // Autostart: the system runs and pose frames arrive (and go to the store).
    await until(async () => {
      const r = await call(s.base, 'GET', '/pose/latest', auth);
      return r.status === 200 ? true : undefined;
    }, 'a pose frame from the autostarted system');

    // keys create / list / revoke against the same data dir while the server runs.
    const created = await runCli(['keys', 'create', '--role', 'operator', '--name', 'ci', '--data-dir', dataDir], { env: childEnv() });
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^csk_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
    const id = key.slice(4, 12);
    const withKey = await call(s.base, 'GET', '/system/status', { 'x-api-key': key });
    expect(withKey.status).toBe(200);
    expect(withKey.body.data.status).toBe('running');
    expect((await call(s.base, 'GET', '/config', { authorization: `Bearer ${key}` })).status).toBe(200);
    expect((await call(s.base, 'PUT', '/config', { 'x-api-key': key }, { domain: 'retail' })).status).toBe(403);

    const list = await runCli(['keys', 'list', '--data-dir', dataDir], { env: childEnv() });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+operator\\s`));
    expect(list.stdout).not.toContain(key.slice(13));
    const json = await runCli(['keys', 'list', '--json', '--data-dir', dataDir], { env: childEnv() });
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id, name: 'ci', role: 'operator', revokedAt: null })]);

    const revoked = await runCli(['keys', 'revoke', id, '--data-dir', dataDir], { env: childEnv() });
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe(`revoked API key ${id}\n`);
    // The server notices the edited key file (it checks at most once a second).
    await until(async () => ((await call(s.base, 'GET', '/config', { 'x-api-key': key })).status === 401 ? true : undefined), 'the revoked key to be refused');
    const unknown = await runCli(['keys', 'revoke', 'zzzzzzzz', '--data-dir', dataDir], { env: childEnv() });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no API key/);

    const kept = await runCli(['keys', 'create', '--role', 'viewer', '--data-dir', dataDir], { env: childEnv() });
    keptKey = kept.stdout.trim();
    expect((await call(s.base, 'GET', '/config', { 'x-api-key': keptKey })).status).toBe(200);

    s.child.kill('SIGTERM');
    const exit = await s.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(s.stderr()).toMatch(/SIGTERM: shutting down/);
    expect(s.stderr()).toMatch(/\bstopped\b/);
    // Flushed: the frames of the run are in the DuckDB file once the process is gone.
    framesAfterFirstRun = await countFrames(dataDir);
    expect(framesAfterFirstRun).toBeGreaterThan(0);
  });

  it('second start on the same data dir: no new password, same admin, keys and store survive', async () => {
    expect(password).not.toBe('');
    const s = await serve(['--data-dir', dataDir, '--no-autostart', '--form', 'a']);
    running.push(s.child);
    expect(s.stdout()).not.toMatch(/admin password/);
    const login = await call(s.base, 'POST', '/auth/token', {}, { username: 'admin', password });
    expect(login.status).toBe(200);
    // --form a: the deployment answers Form A.
    const token = login.body.access_token as string;
    expect(typeof token).toBe('string');
    const detailed = await call(s.base, 'GET', '/health/detailed', { authorization: `Bearer ${token}` });
    expect(detailed.status).toBe(200);
    expect(detailed.body.components.database.status).toBe('healthy');
    const status = await call(s.base, 'GET', '/system/status', { authorization: `Bearer ${token}` });
    expect(status.body.status).toBe('stopped');
    expect((await call(s.base, 'GET', '/config', { 'x-api-key': keptKey })).status).toBe(200);

    s.child.kill('SIGTERM');
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(await countFrames(dataDir)).toBe(framesAfterFirstRun);
  });

  it('CSIPOSE_ADMIN_PASSWORD sets the admin password; a bad --config stops the start with status 1', async () => {
    const s = await serve(['--data-dir', dataDir, '--no-autostart'], { CSIPOSE_ADMIN_PASSWORD: 'set-by-env-password-123' });
    running.push(s.child);
    expect(s.stdout()).not.toMatch(/admin password/);
    expect((await call(s.base, 'POST', '/auth/token', {}, { username: 'admin', password: 'set-by-env-password-123' })).status).toBe(200);
    expect((await call(s.base, 'POST', '/auth/token', {}, { username: 'admin', password })).status).toBe(401);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);

    const bad = join(root, 'bad.json');
    writeFileSync(bad, JSON.stringify({ detection: { max_persons: 'many' } }));
    const r = await runCli(['serve', '--port', '0', '--data-dir', dataDir, '--config', bad, '--no-autostart'], { env: childEnv() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/detection\.max_persons/);
    expect(r.stdout).not.toMatch(/listening on/);
  });
});
