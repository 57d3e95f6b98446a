/**
 * A publisher on a real NATS server loses nothing while the stream cannot take messages: what
 * fails is held, with everything after it, and sent again in order once the server is back; a
 * message id sent twice is stored once (within the duplicate window, while the server runs: a
 * single server killed forgets the ids it held).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AckPolicy, connect, DeliverPolicy, type NatsConnection } from 'nats';
import { Bus, CSI_STREAM, Publisher } from '../../src/bus/bus.js';
import { describeWithNats, startNats, type NatsCluster } from '../helpers/nats.js';
import { until } from '../helpers/engines.js';

const SETTINGS = { replicas: 1, csi_retention_seconds: 300, lease_ttl_seconds: 2 };
const GIVE_UP_MS = 60_000;

describeWithNats('publishing to the bus', () => {
  let nats: NatsCluster;
  let bus: Bus;
  let reader: NatsConnection;

  beforeAll(async () => {
    nats = await startNats(1);
    bus = await Bus.connect(nats.url, SETTINGS, 'publisher-test');
    reader = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  }, 60_000);
  afterAll(async () => {
    await bus?.close();
    await reader?.close();
    await nats?.stop();
  });

  const stored = async (): Promise<number[]> => {
    const jsm = await reader.jetstreamManager();
    const n = (await jsm.streams.info(CSI_STREAM)).state.messages;
    const consumer = await reader.jetstream().consumers.get(CSI_STREAM, { filterSubjects: 'csi.>' });
    const out: number[] = [];
    for await (const m of await consumer.fetch({ max_messages: n, expires: 5000 })) out.push(Number(new TextDecoder().decode(m.data)));
    return out;
  };

  it('holds what the stream refused while its server was down and sends it again, in order, once', async () => {
    const p = new Publisher(bus);
    const send = (i: number) => p.publish('csi.ward.link', new TextEncoder().encode(String(i)), `m-${i}`);
    for (let i = 0; i < 100; i++) send(i);
    // A repeat of an id already stored is acknowledged as a duplicate, not stored again.
    send(99);
    await p.settled();
    expect(p.acked).toBe(100);
    expect(p.duplicates).toBe(1);

    await nats.nodes[0]!.kill();
    for (let i = 100; i < 150; i++) send(i);
    await until(() => p.holding > 0, GIVE_UP_MS, 'the publisher to hold what failed');
    await nats.nodes[0]!.start();
    await until(() => p.holding === 0, GIVE_UP_MS, 'the held messages to be taken');
    await p.settled();

    expect(await stored()).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect(p.dropped).toBe(0);
  }, 120_000);
});

describeWithNats('publishing to a 3-node NATS cluster', () => {
  let nats: NatsCluster;
  let reader: NatsConnection;

  beforeAll(async () => {
    nats = await startNats(3);
    reader = await connect({ servers: nats.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  }, 60_000);
  afterAll(async () => {
    await reader?.close();
    await nats?.stop();
  });

  it('keeps its order and loses nothing when the node it is connected to, the stream leader, is killed', async () => {
    const settings = { ...SETTINGS, replicas: 3 };
    // Connected to the node that leads the stream: killing it drops the connection and the
    // stream's leader at once. The client learns the other nodes from the cluster.
    const first = await Bus.connect(nats.url, settings, 'publisher-leader-probe');
    const leader = (await first.jsm.streams.info(CSI_STREAM)).cluster!.leader!;
    await first.close();
    const node = nats.nodes.find((n) => n.name === leader)!;
    const bus = await Bus.connect(node.url, settings, 'publisher-cluster-test');
    expect(bus.nc.getServer()).toBe(`127.0.0.1:${node.port}`);
    const p = new Publisher(bus);
    let n = 0;
    // A stream of publishes, up to 2 a millisecond, before, during and after the kill.
    const pump = setInterval(() => {
      for (let k = 0; k < 2; k++, n++) p.publish('csi.ward.link', new TextEncoder().encode(String(n)), `c-${n}`);
    }, 1);
    try {
      await until(() => p.acked > 500, GIVE_UP_MS, 'publishes before the kill');
      await node.kill();
      await until(() => p.failed > 0 && p.holding === 0, GIVE_UP_MS, 'publishes taken again after the kill');
    } finally {
      clearInterval(pump);
    }
    await p.settled(GIVE_UP_MS);
    // Read back once the cluster answers again: the stream's new leader may still be settling (a
    // request then times out). Each try is bounded (a consumer made while the stream has no leader
    // is retried by the client for long), made by hand and read by fetch, and read again whole.
    let got: number[] = [];
    const tryRead = async (): Promise<boolean> => {
      const jsm = await reader.jetstreamManager();
      const { state } = await jsm.streams.info(CSI_STREAM);
      const ci = await jsm.consumers.add(CSI_STREAM, { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, inactive_threshold: 30e9 });
      try {
        const consumer = await reader.jetstream().consumers.get(CSI_STREAM, ci.name);
        const read: number[] = [];
        for await (const m of await consumer.fetch({ max_messages: state.messages, expires: 10_000 })) read.push(Number(new TextDecoder().decode(m.data)));
        got = read;
        return read.length === state.messages;
      } finally {
        await jsm.consumers.delete(CSI_STREAM, ci.name).catch(() => undefined);
      }
    };
    await until(
      () => Promise.race([tryRead().catch(() => false), new Promise<boolean>((ok) => setTimeout(() => ok(false), 20_000))]),
      2 * GIVE_UP_MS,
      'the stream read back',
    );
    expect(p.dropped).toBe(0);
    // Every one once, in the order published.
    expect(got.length).toBe(n);
    const misplaced = got.findIndex((v, i) => v !== i);
    expect(misplaced, `first out of place: index ${misplaced} holds ${got[misplaced]}`).toBe(-1);
    await bus.close();
  }, 360_000);
});
