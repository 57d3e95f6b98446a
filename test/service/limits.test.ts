import { describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, rateHeaders, withServer, type ApiResponse } from '../helpers/server.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/** A JSON object `{"<key>": "xxx..."}` of exactly `bytes` bytes. */
function padded(bytes: number, key = 'padding'): string {
  const shell = JSON.stringify({ [key]: '' }).length;
  return JSON.stringify({ [key]: 'x'.repeat(bytes - shell) });
}

/** The four X-RateLimit-* headers are there and consistent with `limit` and `window`. */
function expectRateHeaders(r: ApiResponse, limit: number, window: number, sentAtS: number): ReturnType<typeof rateHeaders> {
  const h = rateHeaders(r.headers);
  expect(h.limit, 'X-RateLimit-Limit').toBe(limit);
  expect(h.window, 'X-RateLimit-Window').toBe(window);
  expect(Number.isInteger(h.remaining) && h.remaining >= 0 && h.remaining < limit, 'X-RateLimit-Remaining').toBe(true);
  // Unix seconds at which the window ends: after the request, at most one window from now.
  expect(h.reset, 'X-RateLimit-Reset').toBeGreaterThanOrEqual(sentAtS);
  expect(h.reset, 'X-RateLimit-Reset').toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + window + 1);
  return h;
}

const nowS = () => Math.floor(Date.now() / 1000);

describe('rate limits (default limits, scale 1)', () => {
  it('the 11th POST /auth/token within a minute is 429 with limit, window and reset in both forms', async () => {
    await withServer({}, async (s) => {
      const t0 = nowS();
      const first = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } });
      expect(first.status).toBe(200);
      expect(expectRateHeaders(first, 10, 60, t0).remaining).toBe(9);
      const token = first.body.data.access_token as string;
      for (let i = 2; i <= 10; i++) {
        const r = await s.api('POST', '/auth/token', { body: { username: 'admin', password: 'wrong' } });
        expect(r.status).toBe(401);
        expect(expectRateHeaders(r, 10, 60, t0).remaining).toBe(10 - i);
      }
      // The right password does not help once the budget is spent.
      const b = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD } });
      expect(b.status).toBe(429);
      expect(b.body.success).toBe(false);
      expect(b.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(b.body.request_id).toBe(b.headers.get('x-request-id'));
      const hb = expectRateHeaders(b, 10, 60, t0);
      expect(hb.remaining).toBe(0);
      expect(Object.keys(b.body.error.details).sort()).toEqual(['limit', 'reset_at', 'window']);
      expect(b.body.error.details).toMatchObject({ limit: 10, window: 60 });
      expect(Date.parse(b.body.error.details.reset_at) / 1000).toBe(hb.reset);

      const a = await s.api('POST', '/auth/token', { body: { username: 'admin', password: ADMIN_PASSWORD }, form: 'a' });
      expect(a.status).toBe(429);
      expect(a.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(a.body.error.request_id).toBe(a.headers.get('x-request-id'));
      expect(Object.keys(a.body.error.details).sort()).toEqual(['limit', 'reset_time', 'window_seconds']);
      expect(a.body.error.details).toMatchObject({ limit: 10, window_seconds: 60 });
      expect(Date.parse(a.body.error.details.reset_time) / 1000).toBe(rateHeaders(a.headers).reset);

      // Other categories keep their own budget.
      const other = await s.api('GET', '/config', { token });
      expect(other.status).toBe(200);
      // Reading the configuration is a Health check (docs/service.md, Limits).
      expectRateHeaders(other, 10000, 3600, t0);
    });
  });

  it('every response carries the four headers of its category: success, 401, 403, 404, 405, 422', async () => {
    await withServer({}, async (s) => {
      const t0 = nowS();
      const token = await s.login();
      const viewer = (await s.apiKey(token, 'viewer')).key;
      const cases: Array<[ApiResponse, number, number, number]> = [
        [await s.api('GET', '/config', { token }), 200, 10000, 3600],
        [await s.api('GET', '/health'), 200, 10000, 3600],
        [await s.api('GET', '/system/status', { token }), 200, 10000, 3600],
        [await s.api('GET', '/metrics', { token }), 200, 10000, 3600],
        [await s.api('GET', '/pose/latest', { token }), 503, 1000, 3600],
        [await s.api('GET', '/config'), 401, 10000, 3600],
        [await s.api('GET', '/health/detailed', { token: 'bad' }), 401, 10000, 3600],
        [await s.api('PUT', '/config', { apiKey: viewer, body: {} }), 403, 50, 3600],
        [await s.api('POST', '/pose/process', { apiKey: viewer, body: {} }), 403, 100, 3600],
        [await s.rawPath('GET', '/api/v2/health'), 404, 1000, 3600],
        [await s.api('GET', '/nothing/here', { token }), 404, 1000, 3600],
        [await s.api('DELETE', '/health'), 405, 1000, 3600],
        [await s.api('PUT', '/config', { token, body: { detection: { max_persons: 0 } } }), 422, 50, 3600],
        [await s.api('POST', '/auth/token', { body: {} }), 422, 10, 60],
      ];
      for (const [r, status, limit, window] of cases) {
        expect(r.status, r.text).toBe(status);
        expectRateHeaders(r, limit, window, t0);
      }
    });
  });

  it('a rate_limits change through PUT /config takes effect on the next request', async () => {
    await withServer({}, async (s) => {
      const t0 = nowS();
      const token = await s.login();
      const put = await s.api('PUT', '/config', { token, body: { rate_limits: { health: { points: 3, duration_seconds: 120 } } } });
      expect(put.status, put.text).toBe(200);
      expect(put.body.data.updated_fields.sort()).toEqual(['rate_limits.health.duration_seconds', 'rate_limits.health.points']);
      expect(put.body.data.requires_restart).toBe(false);
      expect(put.body.data.configuration.rate_limits.health).toEqual({ points: 3, duration_seconds: 120 });
      for (let i = 1; i <= 3; i++) {
        const r = await s.api('GET', '/health');
        expect(r.status).toBe(200);
        expect(expectRateHeaders(r, 3, 120, t0).remaining).toBe(3 - i);
      }
      const over = await s.api('GET', '/health');
      expect(over.status).toBe(429);
      expect(over.body.error.details).toMatchObject({ limit: 3, window: 120 });
      const overA = await s.api('GET', '/health', { form: 'a' });
      expect(overA.status).toBe(429);
      expect(overA.body.error.details).toMatchObject({ limit: 3, window_seconds: 120 });
      // Counted per caller: the admin's own budget in the category is untouched.
      const mine = await s.api('GET', '/system/status', { token });
      expect(mine.status).toBe(200);
      expect(expectRateHeaders(mine, 3, 120, t0).remaining).toBe(2);

      // And back: a raised limit applies at once as well.
      const raise = await s.api('PUT', '/config', { token, body: { rate_limits: { health: { points: 500 } } } });
      expect(raise.status).toBe(200);
      const again = await s.api('GET', '/health');
      expect(again.status).toBe(200);
      expect(expectRateHeaders(again, 500, 120, t0).remaining).toBe(499);
    });
  });

  it('bodies over 64 KiB are 413 PAYLOAD_TOO_LARGE; exactly 64 KiB passes the size check', async () => {
    await withServer({}, async (s) => {
      const token = await s.login();
      const over = await s.api('PUT', '/config', { token, rawBody: padded(64 * KIB + 1) });
      expect(over.status).toBe(413);
      expect(over.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(over.body.error.details.max_bytes).toBe(64 * KIB);
      expect(over.body.request_id).toBe(over.headers.get('x-request-id'));
      const overA = await s.api('PUT', '/config', { token, rawBody: padded(100 * KIB), form: 'a' });
      expect(overA.status).toBe(413);
      expect(overA.body.error.code).toBe('PAYLOAD_TOO_LARGE');

      // Without a Content-Length (chunked), the server counts while it reads.
      const chunks = [padded(40 * KIB, 'a').slice(0, -1), ',"b":"' + 'y'.repeat(40 * KIB) + '"}'];
      const res = await fetch(`${s.base}/api/v1/config`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          start(c) {
            for (const ch of chunks) c.enqueue(new TextEncoder().encode(ch));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');

      const exact = await s.api('PUT', '/config', { token, rawBody: padded(64 * KIB) });
      expect(exact.status).toBe(422);
      expect(exact.body.error.details.field).toBe('padding');
      // Also on endpoints whose body is optional.
      const stop = await s.api('POST', '/system/stop', { token, rawBody: padded(65 * KIB) });
      expect(stop.status).toBe(413);
    });
  });

  it('POST /pose/process takes up to 4 MiB: 3 MiB reaches validation, over 4 MiB is 413', async () => {
    await withServer({}, async (s) => {
      const token = await s.login();
      const antenna_data = [[{ real: 1, imag: 0 }]];
      const body3 = JSON.stringify({ csi_data: { antenna_data }, padding: 'x'.repeat(3 * MIB) });
      const three = await s.api('POST', '/pose/process', { token, rawBody: body3 });
      expect(three.status, three.text.slice(0, 300)).toBe(422);
      expect(three.body.error.details.field).toBe('padding');

      const over = await s.api('POST', '/pose/process', { token, rawBody: padded(4 * MIB + 1) });
      expect(over.status).toBe(413);
      expect(over.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(over.body.error.details.max_bytes).toBe(4 * MIB);
      const overA = await s.api('POST', '/pose/process', { token, rawBody: padded(5 * MIB), form: 'a' });
      expect(overA.status).toBe(413);
      expect(overA.body.error.details.max_bytes).toBe(4 * MIB);
      // The server still answers normally afterwards.
      expect((await s.api('GET', '/health')).status).toBe(200);
    });
  });
});
