/**
 * Two api nodes (real `csipose serve` processes, each with its own data directory) sharing one
 * real redis-server (`--redis`): revocations, refresh-token families, rate limits and API keys
 * agree across nodes; with Redis killed both keep answering (no 5xx), each node limiting on its
 * own; with Redis back, sharing resumes. Nothing is mocked. Waits poll with a give-up bound; no
 * test asserts a time (bench/scale/revocation.ts measures it).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliMain, ensureBuilt } from '../helpers/cli.js';
import { describeWithRedis, startRedisServer, type RedisServer } from '../helpers/redis.js';
import { serveCli, type ServedCli } from '../helpers/serveCli.js';
import { ADMIN_PASSWORD, probeToken, until, withServer } from '../helpers/server.js';
import { tempDir } from './helpers.js';

/** The pose-data budget of the overlay: small, so that a test can spend it across both nodes. */
const POSE_BUDGET = 6;

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies, read field by field
  body: any;
  headers: Headers;
}

async function api(node: ServedCli, method: string, path: string, o: { token?: string; apiKey?: string; body?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = { 'x-response-form': 'a' };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.apiKey) headers['x-api-key'] = o.apiKey;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${node.base}/api/v1${path}`, { method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function login(node: ServedCli): Promise<{ access: string; refresh: string }> {
  const r = await api(node, 'POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { access: r.body.access_token, refresh: r.body.refresh_token };
}

/** `{status: 200}` when the node accepts the credential, else the status and the refusal's reason. */
async function probe(node: ServedCli, cred: { token?: string; apiKey?: string }): Promise<{ status: number; reason?: string }> {
  const r = await api(node, 'GET', '/system/status', cred);
  return r.status === 200 ? { status: 200 } : { status: r.status, reason: r.body?.error?.details?.reason };
}

/** Polls every 20 ms, for at most 10 s, until `node` answers `cred` with `status`. */
async function untilProbe(node: ServedCli, cred: { token?: string; apiKey?: string }, status: number, what: string): Promise<void> {
  await until(async () => ((await probe(node, cred)).status === status ? true : undefined), what, 500, 20);
}

/** The `redis` component of the node's `/health/detailed`. */
async function redisHealth(node: ServedCli, token: string): Promise<Record<string, unknown>> {
  const r = await api(node, 'GET', '/health/detailed', { token });
  expect(r.status).toBe(200);
  return r.body.components.redis;
}

/** Spends `n` pose-data requests with `apiKey`, alternating nodes as given; returns the statuses. */
async function spend(nodes: ServedCli[], apiKey: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await api(nodes[i % nodes.length]!, 'GET', '/pose/history?limit=1', { apiKey })).status);
  return out;
}

/**
 * `n` answers of a history read that was let through: the nodes run no system, so the history is
 * empty, 404 POSE_DATA_NOT_FOUND, as without Redis.
 */
const ok = (n: number): number[] => Array.from({ length: n }, () => 404);

describeWithRedis('api nodes sharing one Redis', () => {
  let redis: RedisServer;
  let tmp: ReturnType<typeof tempDir>;
  let a: ServedCli;
  let b: ServedCli;
  let admin: string;

  const newKey = async (role = 'viewer'): Promise<{ key: string; id: string }> => {
    const r = await api(a, 'POST', '/auth/keys', { token: admin, body: { role } });
    expect(r.status).toBe(201);
    // Made on A; usable on B once B has it.
    await untilProbe(b, { apiKey: r.body.key }, 200, 'node B to accept the new key');
    return { key: r.body.key, id: r.body.id };
  };

  beforeAll(async () => {
    ensureBuilt();
    redis = await startRedisServer();
    tmp = tempDir();
    const overlay = join(tmp.dir, 'overlay.json');
    // Sign-ins are counted per IP, and both nodes are 127.0.0.1: room for every test's logins.
    writeFileSync(
      overlay,
      JSON.stringify({ rate_limits: { pose_data: { points: POSE_BUDGET, duration_seconds: 3600 }, authentication: { points: 1000, duration_seconds: 60 } } }),
    );
    // No CSIPOSE_JWT_SECRET (serveCli passes none): the nodes agree on one through Redis.
    const args = ['--redis', redis.url, '--config', overlay];
    a = await serveCli(join(tmp.dir, 'a'), args);
    b = await serveCli(join(tmp.dir, 'b'), args);
    admin = (await login(a)).access;
  }, 180_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
    tmp?.cleanup();
  });

  it('a token issued on A is good on B, and once revoked on A it is refused on B', async () => {
    const { access } = await login(a);
    expect(await probe(b, { token: access })).toEqual({ status: 200 });
    const r = await api(a, 'POST', '/auth/revoke', { body: { token: access } });
    expect(r.status).toBe(200);
    expect(await probe(a, { token: access })).toEqual({ status: 401, reason: 'revoked' });
    await untilProbe(b, { token: access }, 401, 'node B to refuse the revoked token');
    expect(await probe(b, { token: access })).toEqual({ status: 401, reason: 'revoked' });
    // A node that starts later learns the denylist from Redis.
    const c = await serveCli(join(tmp.dir, 'c'), ['--redis', redis.url]);
    try {
      expect(await probe(c, { token: access })).toEqual({ status: 401, reason: 'revoked' });
      expect(await probe(c, { token: admin })).toEqual({ status: 200 });
    } finally {
      await c.stop();
    }
  }, 60_000);

  it('a refresh token issued on A refreshes on B; reusing it on A revokes its family on both nodes', async () => {
    const first = await login(a);
    const r = await api(b, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh } });
    expect(r.status).toBe(200);
    const second = { access: r.body.access_token as string, refresh: r.body.refresh_token as string };
    expect(await probe(a, { token: second.access })).toEqual({ status: 200 });

    const again = await api(a, 'POST', '/auth/refresh', { body: { refresh_token: first.refresh } });
    expect(again.status).toBe(401);
    expect(again.body.error.details.reason).toBe('refresh_reused');
    // The whole family: both access tokens, on both nodes, and the newer refresh token.
    await untilProbe(b, { token: second.access }, 401, 'node B to refuse the family');
    for (const node of [a, b]) {
      expect(await probe(node, { token: first.access })).toEqual({ status: 401, reason: 'revoked' });
      expect(await probe(node, { token: second.access })).toEqual({ status: 401, reason: 'revoked' });
    }
    const third = await api(b, 'POST', '/auth/refresh', { body: { refresh_token: second.refresh } });
    expect(third.status).toBe(401);
    expect(third.body.error.details.reason).toBe('refresh_revoked');
    // Another login's tokens are not touched.
    expect(await probe(b, { token: admin })).toEqual({ status: 200 });
  }, 60_000);

  it('a rate limit is one budget across both nodes', async () => {
    const { key } = await newKey();
    const statuses = await spend([a, b], key, POSE_BUDGET + 2);
    expect(statuses).toEqual([...ok(POSE_BUDGET), 429, 429]);
    const last = await api(b, 'GET', '/pose/history?limit=1', { apiKey: key });
    expect(last.status).toBe(429);
    expect(last.headers.get('x-ratelimit-limit')).toBe(String(POSE_BUDGET));
    expect(last.headers.get('x-ratelimit-remaining')).toBe('0');
  }, 60_000);

  it('an API key created on A authenticates on B; revoked on A it is refused on B', async () => {
    const { key, id } = await newKey('operator');
    expect(await probe(b, { apiKey: key })).toEqual({ status: 200 });
    const listed = await api(b, 'GET', '/auth/keys', { token: admin });
    expect(listed.body.keys.find((k: { id: string }) => k.id === id)).toMatchObject({ role: 'operator', revokedAt: null });
    const r = await api(a, 'DELETE', `/auth/keys/${id}`, { token: admin });
    expect(r.status).toBe(200);
    await untilProbe(b, { apiKey: key }, 401, 'node B to refuse the revoked key');
    expect(await probe(b, { apiKey: key })).toEqual({ status: 401, reason: 'api_key_revoked' });

    // `csipose keys create` on A's data directory, while A runs: B authenticates with it too.
    const made = spawnSync(process.execPath, [cliMain, 'keys', 'create', '--role', 'viewer', '--data-dir', join(tmp.dir, 'a')], { encoding: 'utf8' });
    expect(made.status).toBe(0);
    const cliKey = made.stdout.trim();
    await untilProbe(b, { apiKey: cliKey }, 200, 'node B to accept a key made with csipose keys on A');
  }, 60_000);

  it('with Redis killed both nodes keep answering and limit on their own; with Redis back, sharing resumes', async () => {
    const { key } = await newKey();
    const before = await login(a);
    expect(await probe(b, { token: before.access })).toEqual({ status: 200 });

    await redis.stop();
    for (const node of [a, b]) await until(async () => ((await redisHealth(node, admin)).status === 'disconnected' ? true : undefined), 'Redis lost', 500, 20);

    // No 5xx: sign-in, requests, revocation work; a refresh token (kept in Redis) is refused with 401.
    const during = await login(b);
    expect(await probe(a, { token: during.access })).toEqual({ status: 200 });
    const refresh = await api(a, 'POST', '/auth/refresh', { body: { refresh_token: before.refresh } });
    expect(refresh.status).toBe(401);
    expect(refresh.body.error.details.reason).toBe('refresh_unavailable');
    // Each node limits with its own insurance limiter: the full budget on each.
    const onA = await spend([a], key, POSE_BUDGET + 1);
    const onB = await spend([b], key, POSE_BUDGET + 1);
    expect(onA).toEqual([...ok(POSE_BUDGET), 429]);
    expect(onB).toEqual([...ok(POSE_BUDGET), 429]);
    // A revocation is enforced at once where it was made; the other node learns it when Redis is back.
    expect((await api(a, 'POST', '/auth/revoke', { body: { token: before.access } })).status).toBe(200);
    expect(await probe(a, { token: before.access })).toEqual({ status: 401, reason: 'revoked' });
    expect(await probe(b, { token: before.access })).toEqual({ status: 200 });
    const down = await redisHealth(a, admin);
    expect(down).toMatchObject({ status: 'disconnected', connected: false });
    expect(down.rate_limit_fallbacks).toBeGreaterThanOrEqual(POSE_BUDGET + 1);
    expect(down.pending_writes).toBeGreaterThanOrEqual(1);
    expect((await api(a, 'GET', '/health/detailed', { token: admin })).body.overall_status).toBe('degraded');

    // Back, empty (no persistence): the nodes write what they queued and refill it.
    await redis.start();
    for (const node of [a, b]) await until(async () => ((await redisHealth(node, admin)).status === 'healthy' ? true : undefined), 'Redis back', 500, 20);
    await untilProbe(b, { token: before.access }, 401, 'node B to learn the revocation made while Redis was down');
    expect(await probe(b, { token: before.access })).toEqual({ status: 401, reason: 'revoked' });
    expect((await redisHealth(a, admin)).pending_writes).toBe(0);

    // Sharing resumes: a revocation on B reaches A, and the budget is one across nodes again.
    expect((await api(b, 'POST', '/auth/revoke', { body: { token: during.access } })).status).toBe(200);
    await untilProbe(a, { token: during.access }, 401, 'node A to refuse a token revoked on B');
    expect(await spend([a, b], key, POSE_BUDGET + 1)).toEqual([...ok(POSE_BUDGET), 429]);
    // A node started now still verifies the others' tokens (the secret was offered again).
    const c = await serveCli(join(tmp.dir, 'c2'), ['--redis', redis.url]);
    try {
      expect(await probe(c, { token: admin })).toEqual({ status: 200 });
    } finally {
      await c.stop();
    }
  }, 120_000);
});

/** A port nothing listens on (bound, then released). */
function deadPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

describe('a node whose Redis does not answer', () => {
  it('starts with CSIPOSE_JWT_SECRET (config redis.url) and serves on its own state, degraded, never 5xx', async () => {
    const url = `redis://127.0.0.1:${await deadPort()}`;
    // The helper's server is given CSIPOSE_JWT_SECRET: nothing needs Redis to start.
    await withServer({ config: { redis: { url } } }, async (s) => {
      const r = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD }, form: 'a' });
      expect(r.status).toBe(200);
      const token = r.body.access_token as string;
      expect(await probeToken(s, token)).toEqual({ status: 200 });
      const health = await s.api('GET', '/health/detailed', { token, form: 'a' });
      expect(health.body.overall_status).toBe('degraded');
      expect(health.body.components.redis).toMatchObject({ status: 'disconnected', connected: false });
      expect(health.body.components.redis.last_error).toContain('ECONNREFUSED');
      const refresh = await s.api('POST', '/auth/refresh', { body: { refresh_token: r.body.refresh_token }, form: 'a' });
      expect(refresh.status).toBe(401);
      expect(refresh.body.error.details.reason).toBe('refresh_unavailable');
      expect((await s.api('POST', '/auth/revoke', { body: { token } })).status).toBe(200);
      expect(await probeToken(s, token)).toEqual({ status: 401, reason: 'revoked' });
      expect((await s.api('GET', '/health/detailed', { token: await s.login(), form: 'a' })).body.components.redis.pending_writes).toBeGreaterThanOrEqual(2);
    });
  }, 30_000);
});
