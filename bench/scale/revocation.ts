/**
 * `scale.revocation_s`: how long a token revoked on one api node is still accepted by another
 * that shares its Redis (issue 21: within 1 s). A private redis-server and two `csipose serve`
 * processes (each with its own data directory, `--redis`); each round signs in on one node, has
 * the other accept the token (so it sits in that node's verified-token cache, the worst case),
 * sends `POST /auth/revoke` to the first and polls the other every `--poll-ms` (default 10) until
 * it answers 401. The time runs from sending the revocation to the first refusal, so it includes
 * the revocation's own request and at most one poll interval; rounds alternate direction.
 *
 * `node dist/bench/scale/revocation.js [--json] [--rounds N] [--poll-ms MS]` prints
 * `[{"name":"scale.revocation_s",...},{"name":"scale.revocation_max_s",...}]` with `--json`, a
 * table otherwise.
 */
import { pathToFileURL } from 'node:url';
import { argValue, machine, quantile, table, type BenchResult } from '../lib.js';
import { startServe, stopServe, type ServeProcess } from '../serve.js';
import { startRedisServer, type RedisServer } from './redisServer.js';

const PASSWORD = 'bench-revocation-admin-password';
/** A poll that never sees the refusal gives up here: a lost revocation, not a slow one. */
const GIVE_UP_MS = 10_000;

/** Options of {@link measureRevocation}. */
export interface RevocationOptions {
  /** Revocations measured (default 40). */
  rounds?: number;
  /** Pause between two polls of the other node (default 10 ms). */
  pollMs?: number;
}

async function post(base: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${base}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-response-form': 'a' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function status(base: string, token: string): Promise<number> {
  const r = await fetch(`${base}/api/v1/system/status`, { headers: { authorization: `Bearer ${token}` } });
  await r.arrayBuffer();
  return r.status;
}

/**
 * One revocation: sign in on `from`, have `to` accept the token, revoke on `from`, poll `to`.
 * @returns seconds from sending the revocation to `to`'s first refusal
 */
async function once(from: string, to: string, pollMs: number): Promise<number> {
  const login = await post(from, '/auth/token', { username: 'admin', password: PASSWORD });
  if (login.status !== 200) throw new Error(`sign-in failed: ${login.status} ${JSON.stringify(login.body)}`);
  const token = String(login.body.access_token);
  if ((await status(to, token)) !== 200) throw new Error('the other node refused a fresh token');
  const t0 = performance.now();
  const revoked = await post(from, '/auth/revoke', { token });
  if (revoked.status !== 200) throw new Error(`revocation failed: ${revoked.status}`);
  for (;;) {
    const s = await status(to, token);
    const elapsed = performance.now() - t0;
    if (s === 401) return elapsed / 1000;
    if (s !== 200) throw new Error(`the other node answered ${s}`);
    if (elapsed > GIVE_UP_MS) throw new Error(`the other node still accepts the token ${GIVE_UP_MS} ms after its revocation`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Starts Redis and two nodes, measures `rounds` revocations, stops everything.
 * @param opts rounds, poll interval
 * @returns every round's time in seconds, in order
 */
export async function measureRevocation(opts: RevocationOptions = {}): Promise<number[]> {
  const rounds = opts.rounds ?? 40;
  const pollMs = opts.pollMs ?? 10;
  let redis: RedisServer | undefined;
  const nodes: ServeProcess[] = [];
  try {
    redis = await startRedisServer();
    const url = redis.url;
    // Sign-ins count per IP (10 a minute): scaled out of the way, the limiter's cost still paid.
    const args = () => ['--redis', url, '--no-autostart', '--no-dashboard', '--log-level', 'error', '--rate-limit-scale', '1000'];
    const env = { CSIPOSE_ADMIN_PASSWORD: PASSWORD, CSIPOSE_JWT_SECRET: '' };
    for (const name of ['a', 'b']) nodes.push(await startServe(args, env, `csipose-bench-scale-${name}-`));
    const [a, b] = nodes.map((n) => n.base) as [string, string];
    // Warm-up: connections, JIT, both directions.
    await once(a, b, pollMs);
    await once(b, a, pollMs);
    const times: number[] = [];
    for (let i = 0; i < rounds; i++) times.push(i % 2 === 0 ? await once(a, b, pollMs) : await once(b, a, pollMs));
    return times;
  } finally {
    for (const n of nodes) await stopServe(n);
    await redis?.stop();
  }
}

/**
 * The benchmark: {@link measureRevocation} as results.
 * @returns `scale.revocation_s` (median) and `scale.revocation_max_s`
 */
export async function run(opts: RevocationOptions = {}): Promise<BenchResult[]> {
  const pollMs = opts.pollMs ?? 10;
  const times = await measureRevocation(opts);
  const sorted = [...times].sort((x, y) => x - y);
  const median = quantile(sorted, 0.5);
  const max = sorted[sorted.length - 1]!;
  const note = `revoke on one node -> first 401 on the other (polled every ${pollMs} ms), two csipose serve + redis-server on this machine`;
  return [
    { name: 'scale.revocation_s', value: median, unit: 's', n: times.length, spread: (max - sorted[0]!) / median, note },
    { name: 'scale.revocation_max_s', value: max, unit: 's', n: times.length, note: `the slowest of the rounds; p90 ${quantile(sorted, 0.9).toFixed(4)} s` },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rounds = argValue('--rounds');
  const poll = argValue('--poll-ms');
  run({ ...(rounds ? { rounds: Number(rounds) } : {}), ...(poll ? { pollMs: Number(poll) } : {}) })
    .then((results) => {
      if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(results) + '\n');
      else {
        const m = machine();
        process.stdout.write(`node ${m.node}, ${m.cpu}\n\n${table(results)}\n`);
      }
    })
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
