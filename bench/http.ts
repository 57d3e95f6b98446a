import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { BenchResult } from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const cli = resolve(here, '../src/cli/main.js');
const root = resolve(here, '../..');

interface Running {
  proc: ChildProcess;
  base: string;
  dir: string;
}

/** Starts `csipose serve` on a free port with the given transport and waits for its address. */
async function startServer(transport: 'uws' | 'node'): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-http-'));
  const proc = spawn(
    process.execPath,
    [cli, 'serve', '--port', '0', '--data-dir', dir, '--rate-limit-scale', '1000000', '--http', transport, '--log-level', 'error'],
    { cwd: root, env: { ...process.env, CSIPOSE_ADMIN_PASSWORD: 'bench-password-123' }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const base = await new Promise<string>((ok, fail) => {
    let out = '';
    const t = setTimeout(() => fail(new Error('server did not start in 30 s')), 30_000);
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        ok(m[1]!);
      }
    });
    proc.once('exit', (code) => fail(new Error(`server exited with ${code}`)));
  });
  return { proc, base, dir };
}

async function stopServer(r: Running): Promise<void> {
  await new Promise<void>((ok) => {
    r.proc.once('exit', () => ok());
    r.proc.kill('SIGTERM');
  });
  rmSync(r.dir, { recursive: true, force: true });
}

/** Logs in and waits until the live pipeline has produced a pose frame. */
async function ready(base: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'bench-password-123' }),
  });
  const token = ((await res.json()) as { data: { access_token: string } }).data.access_token;
  for (let i = 0; i < 300; i++) {
    const r = await fetch(`${base}/api/v1/pose/latest`, { headers: { authorization: `Bearer ${token}` } });
    await r.arrayBuffer();
    if (r.status === 200) return token;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error('no pose frame within 30 s');
}

function load(url: string, token: string, seconds: number): Promise<autocannon.Result> {
  return new Promise((ok, fail) => {
    autocannon(
      { url, connections: 50, pipelining: 1, duration: seconds, headers: { authorization: `Bearer ${token}` } },
      (err, result) => (err ? fail(err) : ok(result)),
    );
  });
}

/**
 * GET /pose/latest with a bearer token under autocannon on loopback (50 connections, 10 s), on
 * uWebSockets.js and on Node's own http with the same handlers, side by side in one run.
 * The server runs in its own process; the load generator in this one (2 cores: one each).
 */
export async function run(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const rps: Record<string, number> = {};
  for (const transport of ['uws', 'node'] as const) {
    const server = await startServer(transport);
    try {
      const token = await ready(server.base);
      await load(`${server.base}/api/v1/pose/latest`, token, 2); // warm-up
      const r = await load(`${server.base}/api/v1/pose/latest`, token, 10);
      const non2xx = r.non2xx + r.errors + r.timeouts;
      rps[transport] = r.requests.average;
      out.push({
        name: `http.pose_latest.${transport}`,
        value: r.requests.average,
        unit: 'requests/s',
        n: r.requests.total,
        note: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms, non-2xx/errors ${non2xx}`,
      });
      out.push({ name: `http.pose_latest.${transport}.p99`, value: r.latency.p99, unit: 'ms', n: r.requests.total });
    } finally {
      await stopServer(server);
    }
  }
  out.push({ name: 'http.pose_latest.uws_vs_node', value: rps.uws! / rps.node!, unit: 'ratio', n: 2, note: 'requests/s of uWebSockets.js over Node http, same handlers' });
  return out;
}
