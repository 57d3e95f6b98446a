/**
 * A store node when a NATS node is lost, with real engines: a 3-node NATS cluster with every
 * stream and bucket replicated three times, `csipose serve` processes for the ingest, a worker and
 * a store node, and the store's real DuckDB file.
 *
 * The node leading the room's store consumer is killed (SIGKILL), then started again. Once the
 * worker publishes the room again, the store must have written what it published within the stated time
 * (docs/scale.md "Store nodes and one history"), not after the NATS client's own 30 s pulls and
 * heartbeats find the consumer's new leader. At the end every frame of the stream is stored once.
 */
import { beforeAll, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JetStreamManager } from 'nats';
import { POSE_STREAM } from '../../src/bus/bus.js';
import { roomConsumer } from '../../src/cluster/storeRooms.js';
import { until } from '../helpers/engines.js';
import { describeWithNats, useNatsRoles } from '../helpers/nats.js';
import { adminToken, serveCli, type ServedCli } from '../helpers/serveCli.js';

/** Give-up bound of the waits on the cluster: a safety net, not a measurement. */
const GIVE_UP_MS = 90_000;
/**
 * How soon the store has written what the worker publishes after a NATS node is lost, ms: the
 * bound docs/scale.md states (its own lease and consumer found again: elections of a few seconds,
 * and two missed heartbeats of a 2 s pull).
 */
const STORE_CATCHES_UP_MS = 20_000;
const ENV = 'ward-s';
/** Frames the worker publishes after the loss before the store is looked at. */
const MORE_FRAMES = 20;

describeWithNats('a store node when a NATS node is lost', () => {
  const bus = useNatsRoles('csipose-store-nats-', 3);
  let jsm: JetStreamManager;
  const roles: Record<'ingest' | 'worker' | 'store', ServedCli | undefined> = { ingest: undefined, worker: undefined, store: undefined };
  let auth: Record<string, string> = {};

  /** Frames of the room the store holds (and that it holds each once). */
  const stored = async (): Promise<number> => {
    const r = await fetch(`${roles.store!.base}/api/v1/store/query`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ sql: `SELECT count(*), count(DISTINCT ts) FROM pose_frames WHERE environment_id = '${ENV}'` }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const [n, distinct] = ((await r.json()) as { data: { rows: number[][] } }).data.rows[0]!;
    expect(n, 'every frame stored once').toBe(distinct);
    return Number(n);
  };
  /** Frames of the room on the stream; undefined while the stream does not answer (no leader). */
  const onStream = async (): Promise<number | undefined> =>
    (await jsm.streams.info(POSE_STREAM, { subjects_filter: `pose.${ENV}` }).catch(() => undefined))?.state.subjects?.[`pose.${ENV}`];
  /** `until`, and on giving up the processes' logs, to say why. */
  const waitFor = async (ready: () => Promise<boolean>, ms: number, what: string) => {
    try {
      await until(ready, ms, what);
    } catch (e) {
      for (const [name, n] of Object.entries(roles)) console.log(`--- ${name} stderr ---\n${n?.stderr().slice(-4000)}`);
      throw e;
    }
  };

  beforeAll(async () => {
    jsm = await bus.nc.jetstreamManager();
    const config = join(bus.dir, 'cluster.json');
    writeFileSync(
      config,
      JSON.stringify({
        environment: { id: ENV },
        cluster: { replicas: 3, lease_ttl_seconds: 2, checkpoint_interval_seconds: 0.5 },
        // The test counts the stored frames as often as the store answers: more than the default
        // 500 analytics requests an hour.
        rate_limits: { analytics: { points: 10_000_000, duration_seconds: 3600 } },
      }),
    );
    roles.ingest = await bus.role('ingest', ['--role', 'ingest', '--config', config, '--source', 'sim?seed=7']);
    roles.worker = await bus.role('worker', ['--role', 'worker', '--name', 'w1', '--config', config]);
    roles.store = bus.keep(await serveCli(join(bus.dir, 'store'), ['--role', 'store', '--bus', bus.url, '--name', 's1', '--config', config]));
    auth = { authorization: `Bearer ${await adminToken(roles.store.base)}` };
    expect((await fetch(`${roles.store.base}/api/v1/system/start`, { method: 'POST', headers: auth })).status).toBe(202);
    await waitFor(async () => (await stored()) > MORE_FRAMES, GIVE_UP_MS, 'the store to write the room');
  }, 240_000);

  it('has written what the worker publishes soon after the node leading its consumer is killed, and every frame once', async () => {
    const leader = (await jsm.consumers.info(POSE_STREAM, roomConsumer(ENV))).cluster?.leader;
    const node = bus.nodes.find((n) => n.name === leader)!;
    expect(node, `the consumer's leader (${leader}) is a node of the cluster`).toBeDefined();
    await node.kill();
    // The worker finds the streams' and buckets' new leaders in its own time (docs/scale.md).
    let mark: number | undefined;
    await waitFor(async () => (mark = await onStream()) !== undefined, GIVE_UP_MS, 'the pose stream to answer');
    let published = 0;
    await waitFor(
      async () => (published = (await onStream()) ?? 0) >= mark! + MORE_FRAMES,
      GIVE_UP_MS,
      `the worker to publish again after ${node.name} was killed`,
    );
    await waitFor(async () => (await stored()) >= published, STORE_CATCHES_UP_MS, `the store to write what the worker published after ${node.name} was killed`);
    await node.start();
    // The room stopped at its source: every frame on the stream is stored, once (stored() checks once).
    for (const n of [roles.ingest!, roles.worker!]) {
      n.child.kill('SIGKILL');
      await n.exited;
    }
    await waitFor(async () => (await stored()) === (await onStream()), GIVE_UP_MS, 'the store to hold every frame of the stream');
  }, 300_000);
});
