import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startServer, suiteServer, type ApiResponse } from '../helpers/server.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Checks the spec's Form A error layout and that the body's request id is the header's. */
function expectFormAError(r: ApiResponse, status: number, code: string): Record<string, unknown> {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body)).toEqual(['error']);
  const e = r.body.error;
  expect(Object.keys(e).sort()).toEqual(['code', 'details', 'message', 'request_id', 'timestamp']);
  expect(e.code).toBe(code);
  expect(typeof e.message).toBe('string');
  expect(e.message.length).toBeGreaterThan(0);
  expect(typeof e.details).toBe('object');
  expect(e.timestamp).toMatch(ISO);
  expect(e.request_id).toBe(r.headers.get('x-request-id'));
  return e.details;
}

/** Checks the spec's Form B error layout. */
function expectFormBError(r: ApiResponse, status: number, code: string): Record<string, unknown> {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.body).sort()).toEqual(['error', 'request_id', 'success', 'timestamp']);
  expect(r.body.success).toBe(false);
  expect(Object.keys(r.body.error).sort()).toEqual(['code', 'details', 'message']);
  expect(r.body.error.code).toBe(code);
  expect(r.body.timestamp).toMatch(ISO);
  expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
  return r.body.error.details;
}

describe('envelopes and errors', () => {
  const srv = suiteServer({ rateLimitScale: 10 });

  it('deeply nested JSON is a 400 in the form of the request, on every body-taking route, and the service goes on', async () => {
    // 30,000 levels fit every body limit (60 KB); 100,000 only the 4 MiB of /pose/process, and are 413 elsewhere.
    const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const cases: Array<[string, string, string]> = [
      ['POST', '/pose/process', arrays(30_000)],
      ['POST', '/pose/process', arrays(100_000)],
      ['POST', '/pose/process', objects(100_000)],
      ['POST', '/auth/token', arrays(30_000)],
      ['POST', '/auth/token', objects(10_000)],
      ['PUT', '/config', arrays(30_000)],
      ['PUT', '/config', `{"detection":${objects(10_000)}}`],
    ];
    for (const [method, path, body] of cases) {
      const what = `${method} ${path} ${body.length} bytes`;
      const b = await srv.s.api(method, path, { token: srv.token, rawBody: body });
      expect(expectFormBError(b, 400, 'VALIDATION_ERROR').max_depth, what).toBe(64);
      expect(b.body.error.message).toMatch(/deeper than 64 levels/);
      expectFormAError(await srv.s.api(method, path, { token: srv.token, rawBody: body, form: 'a' }), 400, 'VALIDATION_ERROR');
    }
    expectFormBError(await srv.s.api('PUT', '/config', { token: srv.token, rawBody: arrays(100_000) }), 413, 'PAYLOAD_TOO_LARGE');
    // 64 levels are still fine for the parser (the route then says what it thinks of the value).
    const ok = await srv.s.api('PUT', '/config', { token: srv.token, rawBody: `${'['.repeat(64)}${']'.repeat(64)}` });
    expect(ok.status).toBe(422);
    expect((await srv.s.api('GET', '/health')).status).toBe(200);
  });

  it('refuses a request whose length is ambiguous (two different Content-Length, or with Transfer-Encoding) with 400', async () => {
    const raw = (head: string, body: string) =>
      new Promise<string>((resolve, reject) => {
        // Connection: close: the server ends the connection after its answer.
        const sock = connect(srv.s.port, '127.0.0.1', () => sock.write(`${head}\r\n\r\n${body}`));
        let out = '';
        sock.on('data', (c) => (out += c.toString()));
        sock.on('close', () => resolve(out));
        sock.on('error', reject);
      });
    const body = '{"username":"admin","password":"x"}';
    const base = `POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close`;
    const two = await raw(`${base}\r\nContent-Length: ${body.length}\r\nContent-Length: 5`, body);
    expect(two).toMatch(/^HTTP\/1\.1 400 /);
    expect(two).toContain('two different Content-Length headers');
    expect(two).toContain('VALIDATION_ERROR');
    const same = await raw(`${base}\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length}`, body);
    expect(same).toMatch(/^HTTP\/1\.1 401 /);
    const chunked = await raw(`${base}\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked`, body);
    expect(chunked).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('Form B wraps a resource in {success, data, timestamp, request_id}; Form A is the resource', async () => {
    const b = await srv.s.api('GET', '/config', { token: srv.token });
    expect(b.status).toBe(200);
    expect(Object.keys(b.body).sort()).toEqual(['data', 'request_id', 'success', 'timestamp']);
    expect(b.body.success).toBe(true);
    expect(b.body.timestamp).toMatch(ISO);
    expect(b.body.request_id).toBe(b.headers.get('x-request-id'));
    expect(b.body.data.detection.confidence_threshold).toBe(0.5);
    const a = await srv.s.api('GET', '/config', { token: srv.token, form: 'a' });
    expect(a.status).toBe(200);
    expect(a.body.success).toBeUndefined();
    expect(a.body.data).toBeUndefined();
    expect(a.body.detection.confidence_threshold).toBe(0.5);
  });

  it('an unknown or garbled X-Response-Form falls back to the deployment default', async () => {
    for (const h of ['c', '', 'A ', 'B']) {
      const r = await srv.s.api('GET', '/config', { token: srv.token, headers: { 'x-response-form': h } });
      expect(r.status).toBe(200);
      // 'A ' and 'B' are read case- and space-insensitively; anything else is the default (Form B).
      if (h.trim().toLowerCase() === 'a') expect(r.body.success).toBeUndefined();
      else expect(r.body.success).toBe(true);
    }
  });

  it('every request gets a request id; a well-formed client X-Request-Id is echoed, a bad one replaced', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const r = await srv.s.api('GET', '/health');
      ids.add(r.headers.get('x-request-id')!);
    }
    expect(ids.size).toBe(3);
    const mine = await srv.s.api('GET', '/config', { token: srv.token, headers: { 'x-request-id': 'client-req.42' } });
    expect(mine.headers.get('x-request-id')).toBe('client-req.42');
    expect(mine.body.request_id).toBe('client-req.42');
    const bad = await srv.s.api('GET', '/config', { token: srv.token, headers: { 'x-request-id': 'has spaces and <tags>' } });
    expect(bad.headers.get('x-request-id')).not.toBe('has spaces and <tags>');
    expect(bad.body.request_id).toBe(bad.headers.get('x-request-id'));
    const err = await srv.s.api('GET', '/nope', { headers: { 'x-request-id': 'trace-7' } });
    expect(err.body.request_id).toBe('trace-7');
  });

  it('unknown paths answer 404 RESOURCE_NOT_FOUND in both forms, /api/v2 included', async () => {
    // `/` is the dashboard (test/dashboard/static.test.ts; a 404 like these with --no-dashboard).
    const paths = ['/api/v1/nope', '/api/v2/pose/latest', '/api/v2/health', '/api/v1/pose/latest/extra', '/index.html', '/health', '/api', '/api/v1'];
    for (const path of paths) {
      const b = await srv.s.rawPath('GET', path, { token: srv.token });
      expectFormBError(b, 404, 'RESOURCE_NOT_FOUND');
      const a = await srv.s.rawPath('GET', path, { token: srv.token, form: 'a' });
      expectFormAError(a, 404, 'RESOURCE_NOT_FOUND');
    }
  });

  it('a trailing slash reaches the same endpoint', async () => {
    const r = await srv.s.api('GET', '/config/', { token: srv.token });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
  });

  it('a wrong method answers 405 with Allow in both forms', async () => {
    const cases: Array<[string, string, string[]]> = [
      ['DELETE', '/config', ['GET', 'PUT']],
      ['POST', '/health', ['GET']],
      ['GET', '/auth/token', ['POST']],
      ['PUT', '/system/start', ['POST']],
      ['GET', '/pose/process', ['POST']],
      ['PATCH', '/config', ['GET', 'PUT']],
    ];
    for (const [method, path, allow] of cases) {
      const b = await srv.s.api(method, path, { token: srv.token });
      const details = expectFormBError(b, 405, 'METHOD_NOT_ALLOWED');
      expect(b.headers.get('allow')!.split(', ').sort()).toEqual(allow);
      expect([...(details.allowed as string[])].sort()).toEqual(allow);
      const a = await srv.s.api(method, path, { token: srv.token, form: 'a' });
      expectFormAError(a, 405, 'METHOD_NOT_ALLOWED');
      expect(a.headers.get('allow')!.split(', ').sort()).toEqual(allow);
    }
  });

  it('missing or unusable credentials answer 401 AUTHENTICATION_ERROR in both forms', async () => {
    const variants: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic YWRtaW46eA==' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer not.a.jwt' },
      { 'x-api-key': 'csk_abcdefgh_' + 'x'.repeat(43) },
      { 'x-api-key': 'garbage' },
    ];
    for (const headers of variants) {
      expectFormBError(await srv.s.api('GET', '/config', { headers }), 401, 'AUTHENTICATION_ERROR');
      expectFormAError(await srv.s.api('GET', '/config', { headers, form: 'a' }), 401, 'AUTHENTICATION_ERROR');
    }
  });

  it('an unparseable body answers 400 VALIDATION_ERROR; a body that breaks a rule 422', async () => {
    const bad = await srv.s.api('PUT', '/config', { token: srv.token, rawBody: '{"detection": ' });
    expectFormBError(bad, 400, 'VALIDATION_ERROR');
    expectFormAError(await srv.s.api('PUT', '/config', { token: srv.token, rawBody: 'not json', form: 'a' }), 400, 'VALIDATION_ERROR');
    const plain = await srv.s.api('PUT', '/config', { token: srv.token, rawBody: 'domain=retail', headers: { 'content-type': 'text/plain' } });
    expectFormBError(plain, 400, 'VALIDATION_ERROR');
    expect(plain.body.error.message).toMatch(/Content-Type/);
    const empty = await srv.s.api('PUT', '/config', { token: srv.token });
    expectFormBError(empty, 400, 'VALIDATION_ERROR');
    const rule = await srv.s.api('PUT', '/config', { token: srv.token, body: { detection: { confidence_threshold: 1.5 } } });
    const d = expectFormBError(rule, 422, 'VALIDATION_ERROR');
    expect(d.field).toBe('detection.confidence_threshold');
    expect(d.reason).toMatch(/between 0\.0 and 1\.0/);
    const ruleA = await srv.s.api('PUT', '/config', { token: srv.token, body: { detection: { confidence_threshold: 1.5 } }, form: 'a' });
    const da = expectFormAError(ruleA, 422, 'VALIDATION_ERROR');
    expect(da.field_errors).toEqual([
      { field: 'detection.confidence_threshold', message: expect.stringMatching(/between 0\.0 and 1\.0/), received_value: 1.5 },
    ]);
  });

  it('a deployment whose default is Form A answers Form A unless a request asks for B', async () => {
    const a = await startServer({ form: 'a' });
    try {
      const t = await a.login();
      const r = await a.api('GET', '/config', { token: t });
      expect(r.body.success).toBeUndefined();
      expect(r.body.detection.tracking_enabled).toBe(true);
      expectFormAError(await a.api('GET', '/config'), 401, 'AUTHENTICATION_ERROR');
      const b = await a.api('GET', '/config', { token: t, form: 'b' });
      expect(b.body.success).toBe(true);
      expect(b.body.data.detection.enable_tracking).toBe(true);
    } finally {
      await a.close();
    }
  });
});
