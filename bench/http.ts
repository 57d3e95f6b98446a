import autocannon from 'autocannon';
import type { BenchResult } from './lib.js';
import { startServe, stopServe, type ServeProcess } from './serve.js';

/** Starts `csipose serve` on a free port with the given transport and waits for its address. */
function startServer(transport: 'uws' | 'node'): Promise<ServeProcess> {
  return startServe(
    () => ['--rate-limit-scale', '1000000', '--http', transport, '--log-level', 'error'],
    { CSIPOSE_ADMIN_PASSWORD: 'bench-password-123' },
    'csipose-bench-http-',
  );
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
    autocannon({ url, connections: 50, pipelining: 1, duration: seconds, headers: { authorization: `Bearer ${token}` } }, (err, result) =>
      err ? fail(err) : ok(result),
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
      await stopServe(server);
    }
  }
  out.push({
    name: 'http.pose_latest.uws_vs_node',
    value: rps.uws! / rps.node!,
    unit: 'ratio',
    n: 2,
    note: 'requests/s of uWebSockets.js over Node http, same handlers',
  });
  return out;
}
