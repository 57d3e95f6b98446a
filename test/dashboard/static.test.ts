/**
 * The dashboard's static files on the real server (port 0): content types, cache headers, ETags,
 * precompressed variants, HEAD, no path traversal, `--no-dashboard`, and what `csipose serve`
 * prints. Requests go over raw TCP where the exact bytes of the target matter (clients normalise
 * `..` away before sending).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultDashboardDir } from '../../src/server/dashboard.js';
import { repoRoot } from '../helpers/cli.js';
import { ADMIN_PASSWORD, startServer, withServer, type TestServer } from '../helpers/server.js';

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** One request with Node's http client, the body left as sent (not decompressed). */
function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A request target sent byte for byte over TCP (`..`, backslashes, NUL as they are).
 * @returns the status (0 when the server closed without answering) and everything it sent
 */
function rawTarget(port: number, target: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => sock.destroy(), 5000);
    sock.on('data', (c) => {
      chunks.push(c);
      // One answer is all we want: stop once its body is complete.
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const len = /content-length: *(\d+)/i.exec(text);
      if (head >= 0 && len && text.length >= head + 4 + Number(len[1])) sock.destroy();
    });
    sock.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
    sock.on('error', reject);
    sock.write(Buffer.from(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, 'latin1'));
  });
}

describe('the dashboard is served by the service', () => {
  let s: TestServer;
  let js: string;
  let css: string;
  beforeAll(async () => {
    s = await startServer({});
    const dashboard = s.app.server.dashboard;
    if (!dashboard) throw new Error(`no dashboard build in ${defaultDashboardDir()}: run npm run build first`);
    js = dashboard.assetNames().find((n) => n.endsWith('.js'))!;
    css = dashboard.assetNames().find((n) => n.endsWith('.css'))!;
  });
  afterAll(() => s?.close());

  it('serves index.html at / (no-cache, ETag, CSP) pointing at hashed, immutable assets', async () => {
    const r = await get(s.port, '/');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(r.headers['content-security-policy']).toContain("script-src 'self'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const html = r.body.toString();
    expect(html).toContain(`src="assets/${js}"`);
    expect(html).toContain(`href="assets/${css}"`);
    // Nothing from elsewhere: every script and stylesheet is relative to the page.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(js).toMatch(/^app-[A-Z0-9]{8}\.js$/);

    for (const [name, type] of [
      [js, 'text/javascript; charset=utf-8'],
      [css, 'text/css; charset=utf-8'],
    ] as const) {
      const a = await get(s.port, `/assets/${name}`);
      expect(a.status).toBe(200);
      expect(a.headers['content-type']).toBe(type);
      expect(a.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(a.headers['content-encoding']).toBeUndefined();
      expect(a.body.equals(readFileSync(join(defaultDashboardDir(), 'assets', name)))).toBe(true);
    }
  });

  it('sends brotli or gzip to clients that take them, the same bytes once decoded', async () => {
    const plain = (await get(s.port, `/assets/${js}`)).body;
    const br = await get(s.port, `/assets/${js}`, { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect(br.body.length).toBeLessThan(plain.length * 0.6);
    expect(brotliDecompressSync(br.body).equals(plain)).toBe(true);
    const gz = await get(s.port, `/assets/${js}`, { 'accept-encoding': 'br;q=0, gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain)).toBe(true);
    expect((await get(s.port, `/assets/${js}`, { 'accept-encoding': 'identity' })).headers['content-encoding']).toBeUndefined();
    // Each encoding has its own ETag (they are different bytes).
    expect(new Set([br.headers.etag, gz.headers.etag, (await get(s.port, `/assets/${js}`)).headers.etag]).size).toBe(3);
  });

  it('answers 304 to a matching If-None-Match and HEAD with the headers alone', async () => {
    const first = await get(s.port, '/');
    const again = await get(s.port, '/', { 'if-none-match': `"nope", W/${first.headers.etag}` });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect((await get(s.port, '/', { 'if-none-match': '"other"' })).status).toBe(200);

    for (const path of ['/', `/assets/${js}`, '/assets/missing.js']) {
      const head = await get(s.port, path, { 'accept-encoding': 'br' }, 'HEAD');
      const full = await get(s.port, path, { 'accept-encoding': 'br' });
      expect(head.status, path).toBe(full.status);
      expect(head.body.length, path).toBe(0);
      expect(Number(head.headers['content-length']), path).toBe(full.body.length);
    }
    expect((await s.rawPath('GET', '/api/v1/health')).status).toBe(200);
  });

  it('never serves a file outside the build, however the path is written', async () => {
    const targets = [
      '/assets/../package.json',
      '/assets/../../package.json',
      '/assets/..%2f..%2fpackage.json',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/%2E%2E%2F%2E%2E%2Fpackage.json',
      '/assets/....//....//package.json',
      '/assets//etc/passwd',
      '/assets/%2fetc%2fpasswd',
      `/assets/${repoRoot}/package.json`,
      '/assets/..\\..\\package.json',
      '/assets/..%5c..%5cpackage.json',
      '/assets/C:\\Windows\\win.ini',
      `/assets/${js}%00.css`,
      `/assets/${js}\0.css`,
      '/assets/\0',
      '/../package.json',
      '/%2e%2e/package.json',
      '//etc/passwd',
      '/index.html/../../package.json',
      '/assets/',
      '/assets',
    ];
    const secret = readFileSync(join(repoRoot, 'package.json'), 'utf8').slice(0, 40);
    for (const t of targets) {
      const r = await rawTarget(s.port, t);
      // 404 (a name that is not in the table); a raw NUL never gets past uWS's request parser (505).
      expect(r.status === 404 || r.status === 400 || (t.includes('\0') && r.status === 505), `${t}: ${r.status}`).toBe(true);
      expect(r.text, t).not.toContain(secret);
      expect(r.text, t).not.toContain('root:x:0:0');
    }
    // Still serving.
    expect((await get(s.port, `/assets/${js}`)).status).toBe(200);
    expect((await s.rawPath('GET', '/api/v1/health')).status).toBe(200);
  });

  it('leaves every other path and method to the API', async () => {
    const post = await s.rawPath('POST', '/', { body: {} });
    expect(post.status).toBe(404);
    expect(post.body.error.code).toBe('RESOURCE_NOT_FOUND');
    const missing = await s.rawPath('GET', '/assets/nothing.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    expect((await s.rawPath('GET', '/favicon.ico')).status).toBe(404);
    const token = await s.login();
    expect((await s.api('GET', '/system/status', { token })).status).toBe(200);
  });
});

describe('without the dashboard', () => {
  it('answers / with the API 404, as every unknown path', async () => {
    // The option as `csipose serve --no-dashboard` passes it.
    await withServer({ dashboard: false }, async (s) => {
      expect(s.app.server.dashboard).toBeUndefined();
      for (const path of ['/', '/assets/x.js']) {
        const r = await s.rawPath('GET', path);
        expect(r.status, path).toBe(404);
        expect(r.body.error.code).toBe('RESOURCE_NOT_FOUND');
      }
    });
  });
});

/** `csipose serve` as a user runs it; resolves once it prints its address. */
function serve(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; out: string; base: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-serve-'));
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'dist/src/cli/main.js'), 'serve', '--port', '0', '--no-autostart', '--data-dir', join(dir, 'data'), ...args],
    {
      env: { ...process.env, CSIPOSE_ADMIN_PASSWORD: ADMIN_PASSWORD, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)\n/.exec(out);
      if (m) resolve({ child, out, base: m[1]!, dir });
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

async function stop(p: { child: ChildProcess; dir: string }): Promise<void> {
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await exited;
  rmSync(p.dir, { recursive: true, force: true });
}

describe('csipose serve', () => {
  it('prints the dashboard address before its last line; --no-dashboard and CSIPOSE_NO_DASHBOARD turn it off', async () => {
    const on = await serve([]);
    try {
      const lines = on.out.trim().split('\n');
      expect(lines.at(-2)).toBe(`dashboard on ${on.base}/ (sign in as admin or with an API key)`);
      expect(lines.at(-1)).toBe(`listening on ${on.base}`);
      expect((await fetch(`${on.base}/`)).headers.get('content-type')).toBe('text/html; charset=utf-8');
    } finally {
      await stop(on);
    }
    for (const [args, env] of [
      [['--no-dashboard'], {}],
      [[], { CSIPOSE_NO_DASHBOARD: '1' }],
    ] as const) {
      const off = await serve([...args], env);
      try {
        expect(off.out).not.toContain('dashboard');
        expect((await fetch(`${off.base}/`)).status).toBe(404);
      } finally {
        await stop(off);
      }
    }
  });
});
