/**
 * Hostile HTTP input: paths and queries whose percent-escapes do not decode, ambiguous or unknown
 * body framing, and the headers every API response carries. Each request goes to the real server
 * over a real socket; after each batch the service must still answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildRoutes } from '../../src/server/routes/index.js';
import { CoreStats, HttpCore, type Route } from '../../src/server/core.js';
import { RateLimits } from '../../src/server/rateLimits.js';
import { listenUws } from '../../src/server/uws.js';
import { listenNodeHttp } from '../../src/server/nodeHttp.js';
import type { RoutesFace } from '../../src/server/routes/index.js';
import { ensureBuilt } from '../helpers/cli.js';
import { serveCli } from '../helpers/serveCli.js';
import { suiteServer } from '../helpers/server.js';

/** Escapes that are not UTF-8 or not escapes at all (a `%` without two hex digits). */
const BAD_ESCAPES = ['%ff', '%', '%E0%A4%A', '%C3%28', '%zz', 'a%2', '%80', '%ED%A0%80'];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/**
 * Writes `request` on a fresh connection and collects everything the server sends until it closes
 * the connection or `idleMs` pass without data (a bound against hanging, not a timing assertion).
 */
function rawExchange(port: number, request: string, idleMs = 1500): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let text = '';
    let closedByServer = true;
    const idle = () => {
      closedByServer = false;
      sock.destroy();
    };
    let timer = setTimeout(idle, idleMs);
    sock.on('data', (c) => {
      text += c.toString('latin1');
      clearTimeout(timer);
      timer = setTimeout(idle, idleMs);
    });
    // A reset is the server dropping the connection too.
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedByServer });
    });
  });
}

/** Status lines in a raw HTTP answer (several when the server answered pipelined requests). */
function statusLines(raw: string): string[] {
  return raw.match(/HTTP\/1\.1 \d{3}[^\r\n]*/g) ?? [];
}

describe('hostile requests', () => {
  const srv = suiteServer({ rateLimitScale: 1000 });

  it('answers every method on every route with bad escapes in the path with 400 VALIDATION_ERROR, and stays up', async () => {
    const routes = buildRoutes({} as RoutesFace, new CoreStats());
    const patterns = [...new Set(routes.map((r) => r.pattern))];
    let sent = 0;
    for (const pattern of patterns) {
      for (const bad of BAD_ESCAPES) {
        // A parameter holds the escape; a route without one gets it in a literal segment.
        const path = pattern.includes(':') ? pattern.replace(/:[a-z_]+/g, bad) : `${pattern}${bad}`;
        for (const method of METHODS) {
          for (const auth of [{ token: srv.token }, {}]) {
            const r = await srv.s.api(method, path, auth);
            const what = `${method} ${path} ${'token' in auth ? 'with' : 'without'} credentials`;
            expect(r.status, `${what}: ${r.text}`).toBe(400);
            expect(r.body.error.code, what).toBe('VALIDATION_ERROR');
            expect(r.body.request_id, what).toBe(r.headers.get('x-request-id'));
            sent++;
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(1000);
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it("answers the issue's requests (POST /pose/tracking/%ff, DELETE /auth/keys/%) with 400 in both forms", async () => {
    for (const [method, path] of [
      ['POST', '/pose/tracking/%ff'],
      ['DELETE', '/auth/keys/%'],
      ['GET', '/pose/tracking/%E0%A4%A'],
      ['GET', '/pose/tracking/%C3%28'],
    ] as const) {
      const b = await srv.s.api(method, path, { token: srv.token });
      expect(b.status, b.text).toBe(400);
      expect(b.body.success).toBe(false);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.message).toMatch(/percent-encod/);
      const a = await srv.s.api(method, path, { token: srv.token, form: 'a' });
      expect(a.status).toBe(400);
      expect(a.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it('answers a query whose escapes do not decode as UTF-8 with 400, on every route and method', async () => {
    const routes = buildRoutes({} as RoutesFace, new CoreStats());
    for (const r of routes) {
      const path = r.pattern.replace(/:[a-z_]+/g, 'x');
      for (const q of ['environment_id=%C3%28', 'a=%ff', '%E0%A4%A=1', 'limit=100%']) {
        const res = await srv.s.api(r.method, `${path}?${q}`, { token: srv.token });
        expect(res.status, `${r.method} ${path}?${q}: ${res.text}`).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
      }
    }
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it('still decodes good escapes: a UTF-8 path parameter and query value reach the handler decoded', async () => {
    const key = await srv.s.api('DELETE', '/auth/keys/%C3%A9t%C3%A9', { token: srv.token, form: 'a' });
    expect(key.status, key.text).toBe(404);
    expect(key.body.error.message).toContain('été');
    const q = await srv.s.api('GET', '/pose/latest?environment_id=caf%C3%A9&min_confidence=%30.5', { token: srv.token });
    // Validation passed (no system has run yet): the escapes decoded.
    expect(q.status, q.text).toBe(503);
  });

  it('refuses a Transfer-Encoding other than chunked with 400 and closes: the body is not read as a second request', async () => {
    // The "body" is a complete request of its own: read as empty, it would be answered next.
    const smuggled = 'GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n';
    const head = 'POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json';
    // uWebSockets.js refuses these itself (its own 400 page) before any handler runs.
    for (const te of ['xchunked', 'chunked, identity', 'identity', 'gzip', ' chunked2']) {
      const r = await rawExchange(srv.s.port, `${head}\r\nTransfer-Encoding: ${te}\r\n\r\n${smuggled}`);
      expect(statusLines(r.text), `Transfer-Encoding: ${te}\n${r.text}`).toEqual([expect.stringMatching(/^HTTP\/1\.1 400 /)]);
      expect(r.closedByServer, `Transfer-Encoding: ${te}`).toBe(true);
    }
    // `chunked` twice passes uWebSockets.js and reaches the core (beside a Content-Length, uWS or
    // the core refuses it, whichever sees it first). Alone on its connection, the request gets the
    // service's 400 and the connection is closed.
    for (const extra of ['Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked', 'Content-Length: 5\r\nTransfer-Encoding: chunked']) {
      const r = await rawExchange(srv.s.port, `${head}\r\n${extra}\r\n\r\n0\r\n\r\n`);
      expect(statusLines(r.text), `${extra}\n${r.text}`).toEqual([expect.stringMatching(/^HTTP\/1\.1 400 /)]);
      if (extra.startsWith('Transfer-Encoding')) {
        expect(r.text).toContain('VALIDATION_ERROR');
        expect(r.text).toContain('Transfer-Encoding must be exactly one');
      }
      expect(r.closedByServer, extra).toBe(true);
      // With a request behind it in the same packet, that request is never run or answered.
      const behind = await rawExchange(srv.s.port, `${head}\r\n${extra}\r\n\r\n0\r\n\r\n${smuggled}`);
      expect(
        statusLines(behind.text).every((l) => / 400 /.test(l)),
        `${extra}\n${behind.text}`,
      ).toBe(true);
      expect(behind.text).not.toContain('"status"');
      expect(behind.closedByServer, extra).toBe(true);
    }
    // Plain chunked still works.
    const body = '{"username":"admin","password":"wrong"}';
    const ok = await rawExchange(
      srv.s.port,
      `${head}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expect(statusLines(ok.text).map((l) => l.slice(9, 12))).toEqual(['401']);
    expect(ok.text).toContain('AUTHENTICATION_ERROR');
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it('closes the connection after two different Content-Length headers, so bytes after the shorter body are never answered', async () => {
    const smuggled = 'GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n';
    const head = 'POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}';
    const alone = await rawExchange(srv.s.port, head);
    expect(statusLines(alone.text)).toEqual([expect.stringMatching(/^HTTP\/1\.1 400 /)]);
    expect(alone.text).toContain('two different Content-Length headers');
    expect(alone.closedByServer).toBe(true);
    const behind = await rawExchange(srv.s.port, `${head}${smuggled}`);
    expect(
      statusLines(behind.text).every((l) => / 400 /.test(l)),
      behind.text,
    ).toBe(true);
    expect(behind.text).not.toContain('"status"');
    expect(behind.closedByServer).toBe(true);
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it('sends X-Content-Type-Options: nosniff and Cache-Control: no-store on every API response, errors included', async () => {
    const login = await srv.s.api('POST', '/auth/token', { body: { username: 'admin', password: 'integration-admin-password-7f3a' } });
    const refresh = await srv.s.api('POST', '/auth/refresh', { body: { refresh_token: login.body.data.refresh_token } });
    const responses = [
      login,
      refresh,
      await srv.s.api('POST', '/auth/token', { body: { username: 'admin', password: 'wrong' } }),
      await srv.s.api('GET', '/health'),
      await srv.s.api('GET', '/config', { token: srv.token }),
      await srv.s.api('GET', '/config'),
      await srv.s.api('GET', '/nope', { token: srv.token }),
      await srv.s.api('DELETE', '/health'),
      await srv.s.api('PUT', '/config', { token: srv.token, rawBody: '{' }),
      await srv.s.api('GET', '/pose/tracking/%ff', { token: srv.token }),
    ];
    expect(login.status).toBe(200);
    expect(refresh.status).toBe(200);
    for (const r of responses) {
      expect(r.headers.get('x-content-type-options'), `${r.status} ${r.text.slice(0, 80)}`).toBe('nosniff');
      expect(r.headers.get('cache-control'), `${r.status} ${r.text.slice(0, 80)}`).toBe('no-store');
    }
  });
});

describe('a throw in the transport', () => {
  /**
   * A core whose one route throws when the transport asks for its body limit, synchronously,
   * before any request runs: the shape of the `decodeURIComponent` crash of issue 17, reached on
   * purpose. The route is public, so no credentials are involved.
   */
  function throwingCore(errors: string[]): HttpCore {
    const route: Route = {
      method: 'POST',
      pattern: '/boom',
      category: 'api',
      role: null,
      get bodyLimit(): number {
        throw new Error('body limit exploded');
      },
      handler: () => ({ data: { ok: true } }),
    };
    return new HttpCore({
      routes: [route],
      // The route is public: nothing is ever authenticated.
      auth: { authenticate: () => ({ ok: false, reason: 'missing_credentials' }) },
      limits: new RateLimits(),
      form: () => 'b',
      onError: (e, req) => void errors.push(`${req.method} ${req.path}: ${(e as Error).message}`),
    });
  }

  it('is answered 500 SYSTEM_ERROR and reported on uWebSockets.js, and the server goes on', async () => {
    const errors: string[] = [];
    const core = throwingCore(errors);
    const server = await listenUws(core, '127.0.0.1', 0);
    try {
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`http://127.0.0.1:${server.port}/api/v1/boom`, { method: 'POST', body: '{}', headers: { 'x-response-form': 'a' } });
        expect(r.status).toBe(500);
        const body = (await r.json()) as { error: { code: string; request_id: string } };
        expect(body.error.code).toBe('SYSTEM_ERROR');
        expect(body.error.request_id).toBe(r.headers.get('x-request-id'));
        expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      }
      expect(errors).toEqual(Array(3).fill('POST /api/v1/boom: body limit exploded'));
      expect(core.stats.errors).toBe(3);
      const other = await fetch(`http://127.0.0.1:${server.port}/api/v1/elsewhere`);
      expect(other.status).toBe(404);
    } finally {
      server.close();
    }
  });

  it('is answered 500 SYSTEM_ERROR on the Node http transport too', async () => {
    const errors: string[] = [];
    const { server, port } = await listenNodeHttp(throwingCore(errors), '127.0.0.1', 0);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/boom`, { method: 'POST', body: '{}' });
      expect(r.status).toBe(500);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('SYSTEM_ERROR');
      expect(errors).toEqual(['POST /api/v1/boom: body limit exploded']);
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/pose/tracking/%ff`)).status).toBe(400);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the csipose serve process', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('survives the requests that used to end it, and goes on answering', async () => {
    const root = mkdtempSync(join(tmpdir(), 'csipose-hostile-'));
    try {
      const s = await serveCli(join(root, 'data'));
      try {
        for (const [method, path] of [
          ['POST', '/api/v1/pose/tracking/%ff'],
          ['DELETE', '/api/v1/auth/keys/%'],
          ['GET', '/api/v1/pose/tracking/%E0%A4%A'],
        ] as const) {
          const r = await fetch(`${s.base}${path}`, { method });
          expect(r.status, `${method} ${path}`).toBe(400);
          expect(((await r.json()) as { error: { code: string } }).error.code).toBe('VALIDATION_ERROR');
        }
        const health = await fetch(`${s.base}/api/v1/health`);
        expect(health.status).toBe(200);
        expect(s.gone).toBe(false);
      } finally {
        expect(await s.stop()).toBe(0);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
