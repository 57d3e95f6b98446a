/**
 * The cluster of issue 21, every part real: a 3-node NATS cluster with every stream and bucket
 * replicated three times (`cluster.replicas` 3), one Redis, an ingest node, 2 workers, 2 api nodes
 * sharing their security state in Redis, and 1 store node, all `csipose serve` processes. In turn:
 *
 * 1. both api nodes serve the room over /ws/pose, and the store writes it;
 * 2. the worker holding the room is killed (SIGKILL): the other takes it over;
 * 3. one NATS node is killed (SIGKILL): the clients move to the others and the room goes on;
 * 4. Redis is killed: the api nodes keep answering on their own limits, then share again once it
 *    is back;
 * 5. an api node is added while subscribers and requests load the others: it serves the room at
 *    once, and the others' subscribers go on.
 *
 * Then, from the pose stream itself: every pose frame once, rising, with no gap over twice the
 * usual; every alert id once; and the store holds every frame and every alert exactly once.
 * Waits poll with give-up bounds (safety nets, not measurements); nothing here times anything.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { connect, type NatsConnection, type StoredMsg } from 'nats';
import { LEASES_BUCKET, POSE_STREAM } from '../../src/bus/bus.js';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { roomConsumer } from '../../src/cluster/storeRooms.js';
import type { PoseAlert } from '../../src/pose/types.js';
import { ensureBuilt } from '../helpers/cli.js';
import { describeWithEngine, until } from '../helpers/engines.js';
import { ensureNatsServer, startNats, type NatsCluster } from '../helpers/nats.js';
import { ensureRedisServer, startRedisServer, type RedisServer } from '../helpers/redis.js';
import { adminToken, roleCli, serveCli, type ServedCli } from '../helpers/serveCli.js';
import { WsClient } from '../helpers/wsClient.js';

/** Give-up bound: a safety net, not a measurement. */
const GIVE_UP_MS = 90_000;
const ENV = 'ward-c';
/** Frames each step waits to see go by. */
const STEP_FRAMES = 25;

const engines = ensureNatsServer() && ensureRedisServer();

describeWithEngine(
  'the cluster: 3 NATS nodes, Redis, ingest, 2 workers, 2 api nodes, a store node',
  engines,
  'apt-get install -y nats-server redis-server',
  () => {
    let nats: NatsCluster;
    let redis: RedisServer;
    let nc: NatsConnection;
    const dir = mkdtempSync(join(tmpdir(), 'csipose-cluster-'));
    const nodes: ServedCli[] = [];
    const config = join(dir, 'cluster.json');
    const workers: Record<string, ServedCli> = {};
    const apis: ServedCli[] = [];
    let store: ServedCli;
    let ingest: ServedCli;
    let token = '';
    /** One /ws/pose subscriber per api node, from step 1 on. */
    const watchers: WsClient[] = [];

    const role = async (name: string, args: string[]): Promise<ServedCli> => {
      const n = await roleCli(join(dir, name), ['--bus', nats.url, '--config', config, ...args]);
      nodes.push(n);
      return n;
    };
    const served = async (name: string, args: string[]): Promise<ServedCli> => {
      const n = await serveCli(join(dir, name), ['--bus', nats.url, '--config', config, ...args]);
      nodes.push(n);
      return n;
    };
    const api = async (node: ServedCli, method: string, path: string, body?: unknown) => {
      const r = await fetch(`${node.base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'x-response-form': 'a', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await r.text();
      return { status: r.status, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    };
    const holder = async (): Promise<string | undefined> => {
      const e = await (await nc.jetstream().views.kv(LEASES_BUCKET)).get(ENV).catch(() => null);
      return e && e.operation === 'PUT' ? e.string() : undefined;
    };
    const updates = (ws: WsClient) => ws.all('pose_update').length;
    /** Waits for `n` more pose updates on every watcher. */
    const goesOn = async (what: string, n = STEP_FRAMES) => {
      const marks = watchers.map(updates);
      await until(() => watchers.every((w, i) => updates(w) >= marks[i]! + n), GIVE_UP_MS, `${n} more pose updates on every api node ${what}`);
    };
    const watch = async (node: ServedCli) => {
      const ws = await WsClient.connect(Number(new URL(node.base).port), { token, query: { form: 'b' } });
      await ws.subscribe('pose_updates', { include_keypoints: false });
      watchers.push(ws);
      return ws;
    };

    beforeAll(async () => {
      ensureBuilt();
      [nats, redis] = await Promise.all([startNats(3), startRedisServer()]);
      nc = await connect({ servers: nats.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      // One room, watched by an intrusion zone over its whole floor: people entering raise alerts.
      const zone = {
        id: 'whole-room',
        polygon: [
          [0, 0],
          [6, 0],
          [6, 5],
          [0, 5],
        ],
        severity: 'high',
      };
      writeFileSync(
        config,
        JSON.stringify({
          environment: { id: ENV, zones: [zone] },
          cluster: { replicas: 3, lease_ttl_seconds: 2, checkpoint_interval_seconds: 0.5 },
          // The crowd of step 5 subscribes on one account.
          streaming: { ws_max_subscriptions_per_account: 1000 },
          // The REST loop of step 5 reads as fast as the nodes answer, and step 3 counts the
          // store's frames as often: on a fast machine more than the default 1,000 pose reads and
          // 500 analytics requests an hour, and a 429 is not what those steps check.
          rate_limits: { pose_data: { points: 10_000_000, duration_seconds: 3600 }, analytics: { points: 10_000_000, duration_seconds: 3600 } },
        }),
      );
    }, 180_000);
    afterAll(async () => {
      for (const w of watchers) await w.close().catch(() => undefined);
      for (const n of nodes) if (!n.gone) n.child.kill('SIGKILL');
      await nc?.close();
      await nats?.stop();
      await redis?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('serves the room through both api nodes and stores it', async () => {
      ingest = await role('ingest', ['--role', 'ingest', '--source', 'sim?seed=7']);
      workers.w1 = await role('worker-1', ['--role', 'worker', '--name', 'w1']);
      workers.w2 = await role('worker-2', ['--role', 'worker', '--name', 'w2']);
      const info = await (await nc.jetstreamManager()).streams.info(POSE_STREAM);
      expect(info.config.num_replicas).toBe(3);
      for (const name of ['api-1', 'api-2']) apis.push(await served(name, ['--role', 'api', '--redis', redis.url]));
      store = await served('store', ['--role', 'store', '--name', 's1', '--redis', redis.url]);
      token = await adminToken(apis[0]!.base);
      // A token signed on one api node is good on the other (one secret, shared revocations).
      for (const n of [...apis, store]) expect((await api(n, 'POST', '/system/start')).status).toBe(202);
      for (const a of apis) await watch(a);
      await goesOn('at the start');
      await until(async () => (await api(store, 'GET', `/pose/history?environment_id=${ENV}&limit=1`)).status === 200, GIVE_UP_MS, 'the store to hold frames');
    }, 240_000);

    it('goes on when the worker holding the room is killed', async () => {
      const held = await holder();
      expect(['w1', 'w2']).toContain(held);
      const other = held === 'w1' ? 'w2' : 'w1';
      workers[held!]!.child.kill('SIGKILL');
      await workers[held!]!.exited;
      await until(async () => (await holder()) === other, GIVE_UP_MS, `${other} to take the room over`);
      await goesOn('after the worker was killed');
    }, 240_000);

    it('goes on when a NATS node is killed', async () => {
      await nats.nodes[0]!.kill();
      await goesOn('after a NATS node was killed');
      // The store goes on writing too.
      const count = async () => {
        const r = await api(store, 'POST', '/store/query', { sql: `SELECT count(*) FROM pose_frames WHERE environment_id = '${ENV}'` });
        expect(r.status, r.text).toBe(200);
        return Number((r.body as { rows?: number[][] }).rows?.[0]?.[0] ?? 0);
      };
      const before = await count();
      await until(async () => (await count()) > before + STEP_FRAMES, GIVE_UP_MS, 'the store to write more frames');
    }, 240_000);

    it('keeps answering on its own limits while Redis is down, and shares them again once it is back', async () => {
      const redisStatus = async (n: ServedCli) =>
        ((await api(n, 'GET', '/health/detailed')).body as { components?: { redis?: { status?: string } } }).components?.redis?.status;
      await redis.stop();
      for (const a of apis) await until(async () => (await redisStatus(a)) === 'disconnected', GIVE_UP_MS, 'the api nodes to see Redis lost');
      // Never a 5xx: requests are answered on each node's own limits.
      for (const a of apis) expect((await api(a, 'GET', `/pose/latest?environment_id=${ENV}`)).status).toBe(200);
      await goesOn('while Redis is down');
      await redis.start();
      for (const a of apis) await until(async () => (await redisStatus(a)) === 'healthy', GIVE_UP_MS, 'the api nodes to see Redis back');
      // Shared again: a token revoked on one node is refused by the other.
      const fresh = await adminToken(apis[1]!.base);
      const status = async (n: ServedCli) => (await fetch(`${n.base}/api/v1/system/status`, { headers: { authorization: `Bearer ${fresh}` } })).status;
      expect(await status(apis[0]!)).toBe(200);
      expect((await api(apis[1]!, 'POST', '/auth/revoke', { token: fresh })).status).toBe(200);
      await until(async () => (await status(apis[0]!)) === 401, GIVE_UP_MS, 'the other api node to refuse the revoked token');
    }, 240_000);

    it('adds an api node under load: it serves the room at once, and the others go on', async () => {
      // Load: 50 more subscribers on each api node, and a loop of REST reads.
      const port = (n: ServedCli) => Number(new URL(n.base).port);
      const crowd = await Promise.all(apis.flatMap((a) => Array.from({ length: 50 }, () => WsClient.connect(port(a), { token, query: { form: 'b' } }))));
      let reading = true;
      let answered = 0;
      const failures: string[] = [];
      const reads = (async () => {
        while (reading)
          for (const a of apis) {
            const r = await api(a, 'GET', `/pose/latest?environment_id=${ENV}`);
            if (r.status === 200) answered++;
            else failures.push(`${a.base} ${r.status} ${r.text.slice(0, 200)}`);
          }
      })();
      try {
        for (const confirmed of await Promise.all(crowd.map((c) => c.subscribe('pose_updates', { include_keypoints: false }))))
          expect(confirmed.type, JSON.stringify(confirmed)).toBe('subscription_confirmed');
        const third = await served('api-3', ['--role', 'api', '--redis', redis.url]);
        // The token of the first node is good here at once (shared secret and state).
        expect((await api(third, 'POST', '/system/start')).status).toBe(202);
        await until(
          async () => (await api(third, 'GET', `/pose/latest?environment_id=${ENV}`)).status === 200,
          GIVE_UP_MS,
          'the new api node to serve the room',
        );
        apis.push(third);
        await watch(third);
        await goesOn('after an api node was added');
        await until(() => crowd.every((c) => updates(c) >= STEP_FRAMES), GIVE_UP_MS, 'every subscriber of the crowd to get pose updates');
      } finally {
        reading = false;
        await reads;
        for (const c of crowd) await c.close();
      }
      expect(failures).toEqual([]);
      expect(answered).toBeGreaterThan(0);
    }, 240_000);

    it('published every pose frame and alert once, and the store holds each once', async () => {
      const jsm = await nc.jetstreamManager();
      // The room's source ends; the store writes everything published, then its file is read.
      expect(await ingest.stop()).toBe(0);
      // The workers publish what they still had: done once the stream has not grown for 3 s.
      let lastSeq = -1;
      let changedAt = Date.now();
      await until(
        async () => {
          const seq = (await jsm.streams.info(POSE_STREAM).catch(() => undefined))?.state.last_seq ?? -1;
          if (seq !== lastSeq) [lastSeq, changedAt] = [seq, Date.now()];
          return Date.now() - changedAt > 3000;
        },
        GIVE_UP_MS,
        'the workers to publish their last frames',
      );
      await until(
        async () => {
          const c = await jsm.consumers.info(POSE_STREAM, roomConsumer(ENV)).catch(() => undefined);
          return c !== undefined && c.num_pending === 0 && c.num_ack_pending === 0;
        },
        GIVE_UP_MS,
        'the store node to have written and acknowledged everything',
      );
      expect(await store.stop()).toBe(0);

      // The stream itself, message by message (no consumer to make while leaders may still move).
      const state = (await jsm.streams.info(POSE_STREAM)).state;
      const times: number[] = [];
      /** Alerts published on their own subject, and those carried by the pose frames (with the frame's time). */
      const alerts: string[] = [];
      const inFrames: Array<{ id: string; time: number }> = [];
      for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
        let m: StoredMsg | undefined;
        await until(async () => (m = await jsm.streams.getMessage(POSE_STREAM, { seq }).catch(() => undefined)) !== undefined, GIVE_UP_MS, `message ${seq}`);
        if (m!.subject.startsWith('pose.')) {
          const f = decodePoseFrame(m!.data);
          times.push(f.time);
          for (const a of f.alerts ?? []) inFrames.push({ id: a.alertId, time: f.time });
        } else if (m!.subject.startsWith('alerts.')) alerts.push((JSON.parse(new TextDecoder().decode(m!.data)) as PoseAlert).alertId);
      }
      // The room raised alerts (people entering the zone), each published once on both subjects.
      expect(alerts.length).toBeGreaterThan(0);
      expect([...alerts].sort()).toEqual(inFrames.map((a) => a.id).sort());
      for (let i = 1; i < times.length; i++) expect(times[i]!, `frame ${i}`).toBeGreaterThan(times[i - 1]!);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      const usual = [...gaps].sort((x, y) => x - y)[gaps.length >> 1]!;
      expect(Math.max(...gaps), `the largest gap against the usual ${usual} ms`).toBeLessThanOrEqual(2 * usual + 1);
      expect(new Set(alerts).size).toBe(alerts.length);

      const db = await DuckDBInstance.create(join(dir, 'store', 'csipose.duckdb'), { access_mode: 'READ_ONLY' });
      try {
        const conn = await db.connect();
        const stored = (await conn.runAndReadAll(`SELECT epoch_ms(ts) AS ms FROM pose_frames WHERE environment_id = '${ENV}' ORDER BY ts`))
          .getRowObjects()
          .map((r) => Number(r.ms));
        // Every frame published up to the last one stored, once (the store keeps whole milliseconds).
        const last = stored[stored.length - 1]!;
        expect(stored).toEqual(times.map((t) => Math.round(t)).filter((t) => t <= last));
        const storedAlerts = (await conn.runAndReadAll(`SELECT alert_id FROM alerts WHERE environment_id = '${ENV}' ORDER BY ts`))
          .getRowObjects()
          .map((r) => String(r.alert_id));
        // Every alert of a stored frame, once.
        expect(storedAlerts.sort()).toEqual(
          inFrames
            .filter((a) => Math.round(a.time) <= last)
            .map((a) => a.id)
            .sort(),
        );
      } finally {
        db.closeSync();
      }
    }, 240_000);
  },
);
