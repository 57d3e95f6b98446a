/**
 * Hostile `/ws/pose` upgrades against the real server on port 0, over real sockets: queries whose
 * percent-escapes do not decode (400 VALIDATION_ERROR, as REST answers them), then a burst of bad
 * upgrades (bad escapes, huge headers, bad tokens, missing or short keys, clients that vanish
 * mid-upgrade), after which the service must still answer REST, count no unexpected failure, and
 * have leaked no per-IP connection slot.
 *
 * No real input is known to make the upgrade handler throw once it is guarded (authentication
 * and the rate limiter run in memory; uWS routes a request without a 24-character
 * key to REST), so the guard is covered by the burst rather than by a forced throw.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, until, type TestServer } from '../helpers/server.js';
import { Refused, refusal, WsClient, type RefusalBody } from '../helpers/wsClient.js';

/** Escapes that are not UTF-8 or not escapes at all (a `%` without two hex digits). */
const BAD_ESCAPES = ['%ff', '%E0%A4%A', '%', '%C3%28', '%zz', 'a%2', '%80', '%ED%A0%80'];
/** Per-IP connection cap of the test server: a leaked slot shows as a refused connection. */
const MAX_PER_IP = 3;

/** An upgrade request's head, `extra` header lines included. */
function upgradeHead(query: string, extra: string[] = [], key = randomBytes(16).toString('base64')): string {
  return [
    `GET /ws/pose${query} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    ...(key ? [`Sec-WebSocket-Key: ${key}`] : []),
    ...extra,
    '',
    '',
  ].join('\r\n');
}

/**
 * Writes `request` on a fresh connection and collects what the server sends until it closes the
 * connection or `idleMs` pass without data (a bound against hanging, not a timing assertion).
 * @param abort destroy the socket right after writing, without reading the answer
 */
function rawExchange(port: number, request: string, abort = false, idleMs = 1500): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', () => {
      sock.write(request);
      if (abort) sock.destroy();
    });
    let text = '';
    let timer = setTimeout(() => sock.destroy(), idleMs);
    sock.on('data', (c) => {
      text += c.toString('latin1');
      clearTimeout(timer);
      // A refusal is complete once its Content-Length bytes are in (the server may keep the connection).
      if (complete(text)) sock.destroy();
      else timer = setTimeout(() => sock.destroy(), idleMs);
    });
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** Whether `raw` holds a whole answer with a Content-Length body. */
function complete(raw: string): boolean {
  const head = raw.indexOf('\r\n\r\n');
  const len = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, head));
  return head >= 0 && len !== null && raw.length - head - 4 >= Number(len[1]);
}

/** The status code of a raw answer's first status line, 0 when there is none. */
function statusOf(raw: string): number {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

/** The JSON body of a raw (non-chunked) answer. */
function bodyOf(raw: string): RefusalBody {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as RefusalBody;
}

describe('/ws/pose: hostile upgrades', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer({ rateLimitScale: 1000, config: { streaming: { ws_max_connections_per_ip: MAX_PER_IP } } });
    token = await s.login();
  });
  afterAll(() => s?.close());

  it('answers a query whose escapes do not decode as UTF-8 with 400 VALIDATION_ERROR, in both forms, credentials or not', async () => {
    for (const bad of BAD_ESCAPES) {
      for (const q of [`?token=${bad}`, `?token=${encodeURIComponent(token)}&x=${bad}`, `?${bad}=1`]) {
        const raw = await rawExchange(s.port, upgradeHead(q, [`Authorization: Bearer ${token}`]));
        expect(statusOf(raw), `${q}\n${raw}`).toBe(400);
        const body = bodyOf(raw);
        expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
        expect(body.error.message).toMatch(/percent-encod/);
        expect(raw).toMatch(/X-Content-Type-Options: nosniff/i);
        const a = await rawExchange(s.port, upgradeHead(q, ['X-Response-Form: a']));
        expect(statusOf(a), `${q} form a`).toBe(400);
        expect(bodyOf(a).error.code).toBe('VALIDATION_ERROR');
        expect(bodyOf(a).success).toBeUndefined();
      }
    }
    // Good escapes still decode: a token sent percent-encoded connects.
    const c = await WsClient.connect(s.port, { token });
    expect(c.messages[0]!.type).toBe('connection_established');
    await c.close();
    expect((await s.api('GET', '/health')).status).toBe(200);
  });

  it('keeps answering after a burst of hostile upgrades, with no unexpected failure and no leaked connection slot', async () => {
    const errorsBefore = s.app.server.core.stats.errors;
    const huge = 'x'.repeat(60_000);
    const requests: Array<{ raw: string; abort?: boolean }> = [];
    for (let i = 0; i < 4; i++) {
      for (const bad of BAD_ESCAPES) requests.push({ raw: upgradeHead(`?token=${bad}`) });
      requests.push(
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}`, [`X-Response-Form: ${huge}`]) },
        { raw: upgradeHead('', [`Authorization: Bearer ${huge}`]) },
        { raw: upgradeHead('', [`X-API-Key: ${huge}`]) },
        { raw: upgradeHead(`?token=${huge}`) },
        { raw: upgradeHead('?token=not-a-token') },
        { raw: upgradeHead('', ['Authorization: Basic YWRtaW46YWRtaW4=']) },
        { raw: upgradeHead(`?token=${token.slice(0, -4)}AAAA`) },
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}`, [], '') },
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}`, [], 'short') },
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}`, [], 'k'.repeat(200)) },
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}&form=%ff`, ['X-Response-Form: \u00ff\u00fe']) },
        // Clients that go away before the answer: authentication is still running when they do.
        { raw: upgradeHead(`?token=${encodeURIComponent(token)}`), abort: true },
        { raw: upgradeHead('?token=not-a-token'), abort: true },
        { raw: upgradeHead(`?token=%ff`), abort: true },
      );
    }
    const answers = await Promise.all(requests.map((r) => rawExchange(s.port, r.raw, r.abort)));
    for (let i = 0; i < requests.length; i++) {
      if (requests[i]!.abort) continue;
      const status = statusOf(answers[i]!);
      // Refused one way or another (uWS's own 431/400 for oversized heads), never a 5xx, never upgraded.
      expect(status, `${requests[i]!.raw.slice(0, 120)}\n${answers[i]!.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
    }
    expect(s.app.server.core.stats.errors).toBe(errorsBefore);
    expect((await s.api('GET', '/health')).status).toBe(200);
    // Every slot of this address comes back (a vanished client's once the server has seen it
    // go): the full allowance connects, one more is refused.
    const open = await until(
      async () => {
        const got: WsClient[] = [];
        try {
          for (let i = 0; i < MAX_PER_IP; i++) got.push(await WsClient.connect(s.port, { token }));
          return got;
        } catch (e) {
          for (const c of got) await c.close();
          if (e instanceof Refused && e.status === 429) return undefined;
          throw e;
        }
      },
      `${MAX_PER_IP} connections`,
      100,
    );
    expect((await refusal(WsClient.connect(s.port, { token }))).status).toBe(429);
    for (const c of open) await c.close();
  });
});
