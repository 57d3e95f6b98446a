/**
 * Workers on a real NATS JetStream bus, as `csipose serve --role ...` processes: ingest nodes
 * publish two environments' CSI (the simulator, live), workers share the environments out by
 * lease, a worker that joins is given its share without a restart, and when a worker is killed
 * (SIGKILL: no goodbye) the other takes its environments over and the pose stream goes on with
 * nothing repeated and nothing missing. An api node serves the rooms' poses over /ws/pose and REST
 * from the bus, with no pipeline of its own. A store node writes every frame once, across a
 * SIGKILL and a restart.
 */
import { afterAll, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEASES_BUCKET, POSE_STREAM } from '../../src/bus/bus.js';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { describeWithNats, useNatsRoles } from '../helpers/nats.js';
import { adminToken, serveCli } from '../helpers/serveCli.js';
import { WsClient } from '../helpers/wsClient.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { until } from '../helpers/engines.js';

/** Give-up bounds: safety nets, not measurements. */
const GIVE_UP_MS = 60_000;

interface Seen {
  env: string;
  time: number;
  alerts: string[];
}

describeWithNats('workers by environment on the bus', () => {
  const bus = useNatsRoles('csipose-workers-');
  const dir = bus.dir;
  const seen: Seen[] = [];
  /** The test's own subscription to the pose stream, from the start (every case reads `seen`). */
  let messages: { stop(): void } | undefined;

  const node = bus.role;
  const config = (env: string) => {
    const file = join(dir, `${env}.json`);
    writeFileSync(file, JSON.stringify({ environment: { id: env }, cluster: { lease_ttl_seconds: 2, checkpoint_interval_seconds: 0.5 } }));
    return file;
  };
  /** Who holds each of the two environments now, from the leases bucket (by key: a listing of a bucket that changes misses keys). */
  const holders = async (): Promise<Record<string, string>> => {
    const kv = await bus.nc.jetstream().views.kv(LEASES_BUCKET);
    const out: Record<string, string> = {};
    for (const env of ['ward-a', 'ward-b']) {
      const e = await kv.get(env);
      if (e && e.operation === 'PUT') out[env] = e.string();
    }
    return out;
  };
  const framesOf = (env: string) => seen.filter((s) => s.env === env);
  /** Signs in as admin on a node with an HTTP server and starts its system; returns the auth header. */
  const startSystem = async (base: string): Promise<Record<string, string>> => {
    const auth = { authorization: `Bearer ${await adminToken(base)}` };
    expect((await fetch(`${base}/api/v1/system/start`, { method: 'POST', headers: auth })).status).toBe(202);
    return auth;
  };

  afterAll(async () => {
    messages?.stop();
  });

  it('shares environments out, rebalances when a worker joins, and hands over when one is killed', async () => {
    await node('ingest-a', ['--role', 'ingest', '--config', config('ward-a'), '--source', 'sim?seed=5']);
    await node('ingest-b', ['--role', 'ingest', '--config', config('ward-b'), '--source', 'sim?seed=6']);
    // What a subscriber of the pose stream sees, from the start.
    const consumer = await bus.nc.jetstream().consumers.get(POSE_STREAM, { filterSubjects: 'pose.>' });
    const stream = await consumer.consume();
    messages = stream;
    void (async () => {
      for await (const m of stream) {
        const f = decodePoseFrame(m.data);
        seen.push({ env: f.environmentId, time: f.time, alerts: (f.alerts ?? []).map((a) => a.alertId) });
      }
    })();

    // One worker holds both rooms.
    const a = await node('worker-a', ['--role', 'worker', '--name', 'wa', '--config', config('worker')]);
    await until(async () => Object.values(await holders()).filter((w) => w === 'wa').length === 2, GIVE_UP_MS, 'worker wa to hold both environments');
    await until(() => framesOf('ward-a').length > 20 && framesOf('ward-b').length > 20, GIVE_UP_MS, 'pose frames of both rooms');

    // A second joins: each holds one, without a restart.
    await node('worker-b', ['--role', 'worker', '--name', 'wb', '--config', config('worker')]);
    await until(
      async () => {
        const h = Object.values(await holders()).sort();
        return h.length === 2 && h[0] === 'wa' && h[1] === 'wb';
      },
      GIVE_UP_MS,
      'one environment each',
    );
    const moved = Object.entries(await holders()).find(([, w]) => w === 'wb')![0];
    const kept = moved === 'ward-a' ? 'ward-b' : 'ward-a';
    const before = framesOf(moved).length;
    await until(() => framesOf(moved).length > before + 20, GIVE_UP_MS, `pose frames of ${moved} from wb`);

    // wa dies without a word: wb takes its room over once the lease expires.
    a.child.kill('SIGKILL');
    await a.exited;
    const killedAt = framesOf(kept).length;
    await until(async () => Object.values(await holders()).filter((w) => w === 'wb').length === 2, GIVE_UP_MS, `wb to take ${kept} over`);
    await until(() => framesOf(kept).length > killedAt + 20, GIVE_UP_MS, `pose frames of ${kept} after the handover`);

    for (const env of ['ward-a', 'ward-b']) {
      const times = framesOf(env).map((s) => s.time);
      // Nothing repeated, nothing out of order: each frame time once, rising.
      for (let i = 1; i < times.length; i++) expect(times[i]!, `${env} frame ${i}`).toBeGreaterThan(times[i - 1]!);
      // Nothing missing: no gap between frames over twice the usual one (a map every 16 packets of 100 Hz).
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      const usual = [...gaps].sort((x, y) => x - y)[gaps.length >> 1]!;
      expect(Math.max(...gaps), `${env}: the largest gap against the usual ${usual} ms`).toBeLessThanOrEqual(2 * usual + 1);
      const alerts = framesOf(env).flatMap((s) => s.alerts);
      expect(new Set(alerts).size).toBe(alerts.length);
    }
  }, 240_000);

  it('an api node serves what the workers publish: /ws/pose, /pose/latest and /system/status, with no pipeline of its own', async () => {
    // The rooms and a worker from the test above are still running.
    const api = await serveCli(join(dir, 'api-1'), ['--role', 'api', '--bus', bus.url]);
    bus.keep(api);
    const base = api.base;
    const auth = await startSystem(base);
    const token = auth.authorization!.slice('Bearer '.length);

    const ws = await WsClient.connect(Number(new URL(base).port), { token, query: { form: 'a' } });
    try {
      await ws.subscribe('pose_updates');
      // Both rooms come through the one api node (Form A names the room in the metadata).
      for (const env of ['ward-a', 'ward-b'])
        await ws.next((m) => m.type === 'pose_update' && m.data?.metadata?.environment_id === env, `a pose update of ${env}`);
    } finally {
      await ws.close();
    }
    // A subscription to one room gets only that room's frames.
    const one = await WsClient.connect(Number(new URL(base).port), { token, query: { form: 'a' } });
    try {
      const confirmed = await one.subscribe('pose_updates', { environment_ids: ['ward-b'], include_keypoints: false });
      expect(confirmed.filters_applied.environment_ids).toEqual(['ward-b']);
      await until(() => one.all('pose_update').length >= 20, GIVE_UP_MS, '20 updates of the subscription to ward-b');
      const rooms = new Set(one.all('pose_update').map((m) => m.data?.metadata?.environment_id));
      expect([...rooms]).toEqual(['ward-b']);
      const refused = await one.subscribe('pose_updates', { environment_ids: [] });
      expect(refused.type).toBe('error');
    } finally {
      await one.close();
    }
    const current = await fetch(`${base}/api/v1/pose/latest?environment_id=ward-a`, { headers: { ...auth, 'x-response-form': 'b' } });
    expect(current.status).toBe(200);
    const status = (await (await fetch(`${base}/api/v1/system/status`, { headers: { ...auth, 'x-response-form': 'b' } })).json()) as {
      data: Record<string, unknown>;
    };
    expect(JSON.stringify(status.data)).toContain('3.0.0');
    expect(JSON.stringify(status.data)).toContain('remote');
    // Webhooks are the store node's: an api node refuses their routes and says where to go.
    for (const [method, path] of [
      ['GET', '/webhooks'],
      ['POST', '/webhooks'],
      ['POST', '/webhooks/wh-1/ping'],
    ] as const) {
      const r = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: { ...auth, 'content-type': 'application/json', 'x-response-form': 'b' },
        ...(method === 'POST' && path === '/webhooks'
          ? { body: JSON.stringify({ url: 'https://example.org/hook', subscriptions: [{ channel: 'alerts', filters: {} }] }) }
          : {}),
      });
      const text = await r.text();
      expect(r.status, `${method} ${path}: ${text}`).toBe(409);
      expect(text).toContain('store node');
    }
  }, 120_000);

  it('a store node writes every frame once, across a SIGKILL and a restart, acknowledging only what it wrote', async () => {
    const data = join(dir, 'store-1');
    const store = async () => {
      const n = await serveCli(data, ['--role', 'store', '--bus', bus.url, '--name', 's1']);
      bus.keep(n);
      await startSystem(n.base);
      return n;
    };
    const first = await store();
    const mark = seen.length;
    await until(() => seen.length > mark + 40, GIVE_UP_MS, 'more pose frames while the store node writes');
    // Killed without a flush: what it took but had not written is delivered again.
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await store();
    const mark2 = seen.length;
    await until(() => seen.length > mark2 + 40, GIVE_UP_MS, 'more pose frames after the restart');
    await new Promise((ok) => setTimeout(ok, 2000));
    expect(await second.stop()).toBe(0);

    const db = await DuckDBInstance.create(join(data, 'csipose.duckdb'), { access_mode: 'READ_ONLY' });
    try {
      const conn = await db.connect();
      for (const env of ['ward-a', 'ward-b']) {
        const rows = (await conn.runAndReadAll(`SELECT epoch_ms(ts) AS ms FROM pose_frames WHERE environment_id = '${env}' ORDER BY ts`)).getRowObjects();
        const stored = rows.map((r) => Number(r.ms));
        // Once each.
        expect(new Set(stored).size, `${env}: frames stored twice`).toBe(stored.length);
        // Every frame the subscriber saw up to the last one stored: none lost across the kill.
        const last = stored[stored.length - 1]!;
        // (The store keeps whole milliseconds.)
        const expected = framesOf(env)
          .map((f) => Math.round(f.time))
          .filter((t) => t <= last);
        expect(stored.length).toBeGreaterThan(100);
        expect(stored).toEqual(expected);
      }
    } finally {
      db.closeSync();
    }
  }, 180_000);
});
