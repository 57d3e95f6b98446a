/**
 * Failed `/ws/pose` upgrades count against the client address's `authentication` rate limit, the
 * same budget (`ip:<addr>`) that failed REST logins spend: guessing keys over WebSocket is limited
 * like guessing passwords over REST. Real server on port 0, raw HTTP upgrade requests over
 * loopback so that the refusal's status and headers can be read.
 */
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rateHeaders, withServer } from '../helpers/server.js';
import { readBody, WsClient, type RefusalBody } from '../helpers/wsClient.js';

interface UpgradeAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The refusal's body (JSON, or the text), undefined for a 101. */
  body: unknown;
}

/**
 * One WebSocket upgrade request; resolves with the HTTP refusal, or with status 101 (the socket is
 * then destroyed at once).
 */
function upgrade(port: number, query: string, headers: Record<string, string> = {}): Promise<UpgradeAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: `/ws/pose${query}`,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
        ...headers,
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: undefined });
    });
    req.on('response', (res) => {
      void readBody(res).then((body) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('/ws/pose: failed upgrades are rate-limited', () => {
  it('answers 401 up to the authentication limit, then 429 with Retry-After and X-RateLimit-*; a good credential still connects', async () => {
    await withServer({}, async (s) => {
      const limit = s.svc.config.get().rate_limits.authentication;
      // Signed in first: the login itself spends the same budget.
      const { key } = await s.apiKey(await s.login(), 'viewer', 'ws-after-guessing');
      const used = 1;
      // Wrong keys in each place a credential may come: ?token=, X-API-Key, Authorization.
      const wrong = [
        () => upgrade(s.port, `?token=csk_${randomBytes(8).toString('hex')}_${randomBytes(16).toString('hex')}`),
        () => upgrade(s.port, '', { 'x-api-key': `guess-${randomBytes(12).toString('hex')}` }),
        () => upgrade(s.port, '', { authorization: `Bearer ${randomBytes(24).toString('base64url')}` }),
      ];
      for (let i = used; i < limit.points; i++) {
        const r = await wrong[i % wrong.length]!();
        expect(r.status, `attempt ${i + 1}`).toBe(401);
        expect((r.body as RefusalBody).error.code).toBe('AUTHENTICATION_ERROR');
        const h = rateHeaders(new Headers(r.headers as Record<string, string>));
        expect(h).toMatchObject({ limit: limit.points, remaining: limit.points - i - 1, window: limit.duration_seconds });
      }
      const over = await wrong[0]!();
      expect(over.status).toBe(429);
      expect((over.body as RefusalBody).error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { limit: limit.points, window: limit.duration_seconds } });
      const h = rateHeaders(new Headers(over.headers as Record<string, string>));
      expect(h).toMatchObject({ limit: limit.points, remaining: 0, window: limit.duration_seconds });
      const retryAfter = Number(over.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(limit.duration_seconds);
      // Missing credentials count as a failed authentication too.
      expect((await upgrade(s.port, '')).status).toBe(429);
      // The limit is on guessing: a valid credential is not refused (REST does the same).
      const c = await WsClient.connect(s.port, { token: key });
      expect(c.messages[0]!.type).toBe('connection_established');
      await c.close();
    });
  });

  it('shares one budget with failed REST logins from the same address', async () => {
    await withServer({}, async (s) => {
      const { points } = s.svc.config.get().rate_limits.authentication;
      for (let i = 0; i < points - 1; i++) expect((await upgrade(s.port, '?token=wrong-key-0123456789abcdef')).status).toBe(401);
      // The last point goes to a wrong password over REST ...
      const login = await s.api('POST', '/auth/token', { body: { username: 'admin', password: 'not-the-password' } });
      expect(login.status).toBe(401);
      // ... so both ways are now refused.
      expect((await upgrade(s.port, '?token=wrong-key-0123456789abcdef')).status).toBe(429);
      expect((await s.api('POST', '/auth/token', { body: { username: 'admin', password: 'not-the-password' } })).status).toBe(429);
    });
  });
});
