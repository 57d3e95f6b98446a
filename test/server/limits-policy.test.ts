/**
 * Rate-limit policy of the HTTP core: every 429 says when to come back (Retry-After), reading the
 * configuration does not spend the budget for changing it, and a change made through the API
 * outlives the process that took it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/cli.js';
import { adminToken, serveCli } from '../helpers/serveCli.js';
import { ADMIN_PASSWORD, rateHeaders, withServer, type ApiResponse } from '../helpers/server.js';

/** `Retry-After` as whole seconds, checked against the response's own X-RateLimit-Reset. */
function expectRetryAfter(r: ApiResponse, window: number): number {
  expect(r.status).toBe(429);
  const text = r.headers.get('retry-after');
  expect(text, 'Retry-After').toMatch(/^\d+$/);
  const s = Number(text);
  expect(s).toBeGreaterThanOrEqual(1);
  expect(s).toBeLessThanOrEqual(window);
  // The reset it points at is the one the X-RateLimit-* headers announce (a second either way for rounding).
  const reset = rateHeaders(r.headers).reset;
  const fromNow = reset - Date.now() / 1000;
  expect(Math.abs(s - fromNow)).toBeLessThanOrEqual(2);
  return s;
}

describe('429 answers carry Retry-After', () => {
  it('on a spent budget, beside the four X-RateLimit-* headers, in both forms', async () => {
    await withServer({}, async (s) => {
      for (let i = 0; i < 10; i++) await s.api('POST', '/auth/token', { body: { username: 'admin', password: 'wrong' } });
      const b = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } });
      expect(b.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expectRetryAfter(b, 60);
      expect(rateHeaders(b.headers)).toMatchObject({ limit: 10, remaining: 0, window: 60 });
      const a = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD }, form: 'a' });
      expect(a.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expectRetryAfter(a, 60);
      // The category's other endpoints share the spent budget, and say so the same way.
      const refresh = await s.api('POST', '/auth/refresh', { body: { refresh_token: 'csr_nothing' } });
      expect(refresh.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expectRetryAfter(refresh, 60);
    });
  });

  it('on a 429 for an authenticated caller of another category', async () => {
    await withServer({}, async (s) => {
      const token = await s.login();
      const put = await s.api('PUT', '/config', { token, body: { rate_limits: { pose_data: { points: 2, duration_seconds: 600 } } } });
      expect(put.status, put.text).toBe(200);
      for (let i = 0; i < 2; i++) expect((await s.api('GET', '/pose/latest', { token })).status).toBe(503);
      const over = await s.api('GET', '/pose/latest', { token });
      expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expectRetryAfter(over, 600);
      // And when it is missing credentials altogether.
      for (let i = 0; i < 2; i++) await s.api('GET', '/pose/latest');
      const anon = await s.api('GET', '/pose/latest');
      expect(anon.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expectRetryAfter(anon, 600);
    });
  });

  it('on the WebSocket upgrade refused for too many connections from one IP', async () => {
    await withServer({}, async (s) => {
      const token = await s.login();
      const put = await s.api('PUT', '/config', { token, body: { streaming: { ws_max_connections_per_ip: 1 } } });
      expect(put.status, put.text).toBe(200);
      const first = new WebSocket(`ws://127.0.0.1:${s.port}/ws/pose?token=${token}`);
      await new Promise<void>((resolve, reject) => {
        first.once('open', () => resolve());
        first.once('error', reject);
      });
      try {
        const refused = await new Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
          const second = new WebSocket(`ws://127.0.0.1:${s.port}/ws/pose?token=${token}`);
          second.once('unexpected-response', (_req, res) => {
            resolve({ status: res.statusCode ?? 0, headers: res.headers });
            res.resume();
            second.terminate();
          });
          second.once('open', () => reject(new Error('the second connection was accepted')));
          second.once('error', () => undefined);
        });
        expect(refused.status).toBe(429);
        expect(String(refused.headers['retry-after'])).toMatch(/^[1-9]\d*$/);
        expect(refused.headers['x-content-type-options']).toBe('nosniff');
      } finally {
        first.close();
      }
    });
  });
});

describe('reading the configuration does not spend the configuration budget', () => {
  it('GET /config and GET /config/schema count as Health checks; 60 reads leave all 50 changes', async () => {
    await withServer({}, async (s) => {
      const token = await s.login();
      for (let i = 0; i < 30; i++) {
        const c = await s.api('GET', '/config', { token });
        expect(c.status).toBe(200);
        expect(rateHeaders(c.headers)).toMatchObject({ limit: 10000, window: 3600 });
        const sc = await s.api('GET', '/config/schema', { token });
        expect(sc.status).toBe(200);
        expect(rateHeaders(sc.headers)).toMatchObject({ limit: 10000, window: 3600 });
      }
      // The configuration budget is untouched: the first change of the hour has 49 left after it.
      const put = await s.api('PUT', '/config', { token, body: { environment: { name: 'Lab' } } });
      expect(put.status, put.text).toBe(200);
      expect(rateHeaders(put.headers)).toMatchObject({ limit: 50, remaining: 49, window: 3600 });
    });
  });
});

async function call(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      'x-response-form': 'a',
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('PUT /config outlives the process', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('a change made through the API is there after csipose serve is stopped and started again on the same data dir', async () => {
    const root = mkdtempSync(join(tmpdir(), 'csipose-persist-'));
    const dataDir = join(root, 'data');
    const change = {
      domain: 'retail',
      environment: { name: 'Shop floor' },
      detection: { confidence_threshold: 0.7 },
      rate_limits: { configuration: { points: 70 } },
      hardware: { source: 'sim?seed=5' },
    };
    try {
      const first = await serveCli(dataDir);
      try {
        const put = await call(first.base, 'PUT', '/config', await adminToken(first.base), change);
        expect(put.status, JSON.stringify(put.body)).toBe(200);
      } finally {
        expect(await first.stop()).toBe(0);
      }
      expect(existsSync(join(dataDir, 'config.json'))).toBe(true);
      expect(JSON.parse(readFileSync(join(dataDir, 'config.json'), 'utf8')).settings).toMatchObject(change);

      const second = await serveCli(dataDir);
      try {
        const got = await call(second.base, 'GET', '/config', await adminToken(second.base));
        expect(got.status).toBe(200);
        expect(got.body).toMatchObject(change);
      } finally {
        expect(await second.stop()).toBe(0);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
