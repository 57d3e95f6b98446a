/**
 * One history (docs/scale.md "Store nodes and one history"), with real engines: a real
 * nats-server, `csipose serve` processes for two rooms' ingest, a worker, two store nodes and an
 * api node, their real DuckDB files, and one shared lake root (`--lake`).
 *
 * The store nodes share the rooms by lease; each writes its own partitions under the root and
 * commits them; `csipose query --lake` and the api node's history and analytics read every node's
 * partitions, while the nodes run. A store node killed (SIGKILL) gives its room to the other, and
 * once it is back every frame a subscriber saw is in the union once: none lost, none twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { POSE_STREAM, STORE_LEASES_BUCKET } from '../../src/bus/bus.js';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { runCli } from '../helpers/cli.js';
import { describeWithNats, useNatsRoles } from '../helpers/nats.js';
import { adminToken, serveCli, type ServedCli } from '../helpers/serveCli.js';
import { until } from '../helpers/engines.js';
import { LakeRoot, readManifest } from '../../src/store/lakeRoot.js';

/** Give-up bounds: safety nets, not measurements. */
const GIVE_UP_MS = 60_000;
/** The test's commit interval (cluster.lake_commit_seconds). */
const COMMIT_S = 1;
const ROOMS = ['ward-a', 'ward-b'] as const;

describeWithNats('one history: store nodes share the rooms and write one lake', () => {
  const bus = useNatsRoles('csipose-history-');
  const dir = bus.dir;
  const lake = join(dir, 'lake');
  /** Every pose frame on the bus, from the start of the stream: room, time (whole ms, as stored) and when the test saw it (wall clock). */
  const seen: Array<{ env: string; t: number; at: number }> = [];
  let messages: { stop(): void } | undefined;
  const stores: Record<string, ServedCli> = {};

  const settings = { lease_ttl_seconds: 2, checkpoint_interval_seconds: 0.5, lake_commit_seconds: COMMIT_S };
  const config = (name: string, env?: string) => {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ ...(env ? { environment: { id: env } } : {}), cluster: settings }));
    return file;
  };
  const role = bus.role;
  const login = async (base: string): Promise<Record<string, string>> => ({ authorization: `Bearer ${await adminToken(base)}` });
  /** A store node on the shared lake, its system started (it holds rooms only while it runs). */
  const store = async (name: string) => {
    const n = await serveCli(join(dir, name), ['--role', 'store', '--bus', bus.url, '--name', name, '--lake', lake, '--config', config(name)]);
    bus.keep(n);
    stores[name] = n;
    const auth = await login(n.base);
    expect((await fetch(`${n.base}/api/v1/system/start`, { method: 'POST', headers: auth })).status).toBe(202);
    return n;
  };
  /** Which store node holds each room now (by key: a listing of a bucket that changes misses keys). */
  const holders = async (): Promise<Record<string, string>> => {
    const kv = await bus.nc.jetstream().views.kv(STORE_LEASES_BUCKET);
    const out: Record<string, string> = {};
    for (const env of ROOMS) {
      const e = await kv.get(env);
      if (e && e.operation === 'PUT') out[env] = e.string();
    }
    return out;
  };
  const query = async <T>(sql: string): Promise<T[]> => {
    const r = await runCli(['query', '--lake', lake, '--format', 'json', sql], { timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as T[];
  };
  const framesOf = (env: string) => seen.filter((s) => s.env === env).map((s) => s.t);
  /** `until`, and on giving up the store nodes' logs, to say why. */
  const waitFor = async (ready: () => Promise<boolean> | boolean, what: string) => {
    try {
      await until(ready, GIVE_UP_MS, what);
    } catch (e) {
      for (const [name, n] of Object.entries(stores)) console.log(`--- ${name} stderr ---\n${n.stderr().slice(-4000)}`);
      throw e;
    }
  };

  beforeAll(async () => {
    await role('ingest-a', ['--role', 'ingest', '--config', config('ingest-a', 'ward-a'), '--source', 'sim?seed=5']);
    await role('ingest-b', ['--role', 'ingest', '--config', config('ingest-b', 'ward-b'), '--source', 'sim?seed=6']);
    // What a subscriber of the pose stream sees, from its start (the ingest nodes made the streams).
    const consumer = await bus.nc.jetstream().consumers.get(POSE_STREAM, { filterSubjects: 'pose.>' });
    const stream = await consumer.consume();
    messages = stream;
    void (async () => {
      for await (const m of stream) {
        const f = decodePoseFrame(m.data);
        seen.push({ env: f.environmentId, t: Math.round(f.time), at: Date.now() });
      }
    })();
    await role('worker', ['--role', 'worker', '--name', 'w1', '--config', config('worker')]);
    await until(() => framesOf('ward-a').length > 10 && framesOf('ward-b').length > 10, GIVE_UP_MS, 'pose frames of both rooms');
  }, 180_000);
  afterAll(async () => {
    messages?.stop();
  });

  it('two store nodes share two rooms, each writes its own partitions under one root, and csipose query --lake reads them all while they run', async () => {
    await store('s1');
    await store('s2');
    await waitFor(async () => {
      const h = Object.values(await holders()).sort();
      return h.length === 2 && h[0] === 's1' && h[1] === 's2';
    }, 'one room each');
    // Each node's folder, with its own partitions and commit marks.
    await waitFor(() => ['s1', 's2'].every((s) => existsSync(join(lake, `store=${s}`, 'pose_frames'))), 'partitions of both store nodes under the root');
    const [x] = Object.entries(await holders()).find(([, s]) => s === 's1')!;
    expect(readdirSync(join(lake, 'store=s1', 'pose_frames'))).toContain(`environment_id=${x}`);
    // Waited for in this process (a csipose query process per look would load the machine), then
    // read by csipose query --lake while the nodes run.
    const reader = await LakeRoot.open(lake);
    try {
      await waitFor(async () => {
        await reader.refresh();
        const n = await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames GROUP BY environment_id`);
        return n.length === 2 && n.every((r) => Number(r.n) > 50);
      }, 'more than 50 frames of each room in the lake');
    } finally {
      await reader.close();
    }
    const rows = await query<{ environment_id: string; n: number; d: number }>(
      `SELECT environment_id, count(*) AS n, count(DISTINCT ts) AS d FROM pose_frames GROUP BY ALL ORDER BY 1`,
    );
    expect(rows.map((r) => r.environment_id)).toEqual([...ROOMS]);
    // Every frame once, whichever node wrote it.
    for (const r of rows) expect(r.n, r.environment_id).toBe(r.d);
    // Each node committed rows of the room it holds (s1 held both until s2 joined and took one).
    const holding = await holders();
    const by = await query<{ store: string; environment_id: string }>(`SELECT DISTINCT store, environment_id FROM pose_frames`);
    for (const [env, node] of Object.entries(holding)) expect(by, `${node} wrote ${env}`).toContainEqual({ store: node, environment_id: env });
  }, 240_000);

  it('an api node serves history and analytics of both rooms from the root, a commit interval behind', async () => {
    const api = await serveCli(join(dir, 'api'), ['--role', 'api', '--bus', bus.url, '--lake', lake, '--config', config('api')]);
    bus.keep(api);
    const auth = { ...(await login(api.base)), 'x-response-form': 'a' };
    /** The time of the latest frame of a room in a node's history (each node signs its own tokens). */
    const latest = async (base: string, env: string, headers: Record<string, string> = auth): Promise<number> => {
      // From 30 s before the last frame on the bus (frame times are the simulator's, behind the
      // wall clock on a loaded machine): a page of 1000 reaches the newest.
      const from = new Date(Math.max(...framesOf(env)) - 30_000).toISOString();
      const r = await fetch(`${base}/api/v1/pose/history?environment_id=${env}&start_time=${encodeURIComponent(from)}&limit=1000`, { headers });
      if (r.status === 404) return -Infinity;
      expect(r.status).toBe(200);
      const body = (await r.json()) as { poses: Array<{ timestamp: string }> };
      return Math.max(...body.poses.map((p) => Date.parse(p.timestamp)));
    };
    for (const env of ROOMS) {
      const r = await fetch(`${api.base}/api/v1/pose/history?environment_id=${env}&limit=5`, { headers: auth });
      expect(r.status, env).toBe(200);
      // Form A: the answer itself.
      const body = (await r.json()) as { poses: unknown[]; pagination: { total_count: number } };
      expect(body.poses.length).toBe(5);
      expect(body.pagination.total_count).toBeGreaterThan(50);
      const start = new Date(Date.now() - 3_600_000).toISOString();
      const end = new Date().toISOString();
      const occ = await fetch(`${api.base}/api/v1/analytics/occupancy?environment_id=${env}&start_time=${start}&end_time=${end}&interval=5min`, {
        headers: auth,
      });
      expect(occ.status, `occupancy of ${env}`).toBe(200);
      const o = (await occ.json()) as { summary: { frames: number } };
      expect(o.summary.frames, `frames of ${env} in its occupancy`).toBeGreaterThan(50);
    }
    // SQL on the api node reads the root as csipose query --lake does: every store node's
    // partitions (their column `store`); a store node's reads its own store, which has no such column.
    const sql = async (base: string, headers: Record<string, string>, q: string) => {
      const r = await fetch(`${base}/api/v1/store/query`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ sql: q }),
      });
      return { status: r.status, body: (await r.json()) as { rows?: unknown[][] } };
    };
    const byNode = await sql(api.base, auth, 'SELECT DISTINCT store FROM pose_frames ORDER BY 1');
    expect(byNode.status).toBe(200);
    expect(byNode.body.rows).toEqual([['s1'], ['s2']]);
    const s1 = { ...(await login(stores.s1!.base)), 'x-response-form': 'a' };
    expect((await sql(stores.s1!.base, s1, 'SELECT DISTINCT store FROM pose_frames')).status).toBe(422);
    expect((await sql(stores.s1!.base, s1, 'SELECT count(*) FROM pose_frames')).status).toBe(200);
    // A store node reads the other node's room too.
    const other = Object.entries(await holders()).find(([, s]) => s === 's2')![0];
    expect(await latest(stores.s1!.base, other, { ...(await login(stores.s1!.base)), 'x-response-form': 'a' })).toBeGreaterThan(0);

    // Freshness: for each frame of ward-a seen on the bus from now on, how long (wall clock) until
    // the api node's history holds it; polled every 250 ms for 10 s.
    const since = seen.length;
    const lags: number[] = [];
    let shown = -Infinity;
    for (const end = Date.now() + 10_000; Date.now() < end;) {
      const stored = await latest(api.base, 'ward-a');
      const now = Date.now();
      for (const f of seen.slice(since)) if (f.env === 'ward-a' && f.t > shown && f.t <= stored) lags.push(now - f.at);
      shown = Math.max(shown, stored);
      await new Promise((ok) => setTimeout(ok, 250));
    }
    lags.sort((a, b) => a - b);
    console.log(
      `history behind the bus (commit every ${COMMIT_S} s), ${lags.length} frames: median ${lags[lags.length >> 1]} ms, ` +
        `90th percentile ${lags[Math.floor(lags.length * 0.9)]} ms, max ${lags.at(-1)} ms`,
    );
    expect(lags.length).toBeGreaterThan(10);
    // One commit interval, a commit, the batching before it and a poll; a bound for a loaded machine.
    expect(lags[lags.length >> 1]!).toBeLessThan(COMMIT_S * 1000 + 4000);
  }, 120_000);

  it('a store node killed: its room moves to the other, and once it is back every frame is in the union once', async () => {
    const [room] = Object.entries(await holders()).find(([, s]) => s === 's1')!;
    const s1 = stores.s1!;
    s1.child.kill('SIGKILL');
    await s1.exited;
    await waitFor(async () => Object.values(await holders()).every((s) => s === 's2') && Object.keys(await holders()).length === 2, `s2 to take ${room} over`);
    const at = framesOf(room).length;
    await waitFor(() => framesOf(room).length > at + 30, `more frames of ${room}`);
    // Back, with its data directory: its rows never committed go, and it takes its share again.
    await store('s1');
    await waitFor(async () => {
      const h = Object.values(await holders()).sort();
      return h.length === 2 && h[0] === 's1' && h[1] === 's2';
    }, 'one room each again');
    const again = seen.length;
    await waitFor(() => seen.length > again + 40, 'more frames after the rooms moved back');
    // Stopped cleanly: each commits what it wrote before it exits.
    expect(await stores.s1!.stop()).toBe(0);
    expect(await stores.s2!.stop()).toBe(0);

    for (const env of ROOMS) {
      const stored = (await query<{ ms: number }>(`SELECT epoch_ms(ts) AS ms FROM pose_frames WHERE environment_id = '${env}' ORDER BY ts`)).map((r) =>
        Number(r.ms),
      );
      expect(new Set(stored).size, `${env}: frames counted twice`).toBe(stored.length);
      const last = stored.at(-1)!;
      const expected = framesOf(env).filter((t) => t <= last);
      expect(stored.length).toBeGreaterThan(100);
      // Every frame a subscriber saw, up to the last one stored, from the start of the stream.
      expect(stored).toEqual(expected);
      // Persons once each too.
      const [p] = await query<{ n: number; d: number }>(
        `SELECT count(*) AS n, count(DISTINCT (ts, slot)) AS d FROM pose_persons WHERE environment_id = '${env}'`,
      );
      expect(p!.n).toBe(p!.d);
    }
    // The room that moved has rows of both nodes; moved within an hour, both list a file of that hour.
    const writers = await query<{ store: string }>(`SELECT DISTINCT store FROM pose_frames WHERE environment_id = '${room}' ORDER BY 1`);
    expect(writers.map((w) => w.store)).toEqual(['s1', 's2']);
    const hoursOf = (node: string) =>
      readManifest(join(lake, `store=${node}`))!
        .files.filter((f) => f.startsWith(`pose_frames/environment_id=${room}/`))
        .map((f) => f.replace(/\.c\d+\.parquet$/, ''));
    const both = hoursOf('s1').filter((h) => hoursOf('s2').includes(h));
    if (new Set(framesOf(room).map((t) => Math.floor(t / 3_600_000))).size === 1) expect(both.length, `an hour of ${room} in both manifests`).toBe(1);
  }, 300_000);
});
