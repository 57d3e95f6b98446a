import { randomBytes } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { decodeNexmon } from '../../src/decoders/nexmon.js';
import { mqttSource, newMqttStats, parseMqttUri, type MqttSourceOptions, type MqttSourceStats } from '../../src/sources/mqtt.js';
import { parseSource, SourceError } from '../../src/sources/uri.js';
import { ensureBuilt, ndjson, runCli } from '../helpers/cli.js';
import { connectPublisher, describeWithMosquitto, pollUntil, startBroker, withBroker, type Broker } from '../helpers/mosquitto.js';
import { startServer, waitForStatus } from '../helpers/server.js';
import { describeWithSamples, esp32Lines, sampleBytes } from '../helpers/samples.js';
import { parseError, pcapUdpPayloads } from '../helpers/sources.js';

/** Safety net so a lost message fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 20_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds; throws `what` after GIVE_UP_MS. */
const until = (cond: () => boolean, what: () => string): Promise<void> => pollUntil(cond, what, GIVE_UP_MS);

/** A subscribed mqttSource collecting what it emits. */
interface Listener {
  frames: CsiFrame[];
  errors: unknown[];
  stats: MqttSourceStats;
  /** Resolves once `n` frames have arrived. */
  frameCount(n: number): Promise<void>;
  stop(): void;
}

/** Subscribes an mqttSource and waits for its SUBACK (or its error, which is then in `errors`). */
async function listen(opts: Omit<MqttSourceOptions, 'stats' | 'onReady'>): Promise<Listener> {
  const frames: CsiFrame[] = [];
  const errors: unknown[] = [];
  const stats = newMqttStats();
  let ready = false;
  const sub = mqttSource({ ...opts, stats, onReady: () => (ready = true) }).subscribe({
    next: (f) => frames.push(f),
    error: (e) => errors.push(e),
  });
  await until(
    () => ready || errors.length > 0,
    () => `no SUBACK from ${opts.url}`,
  );
  return {
    frames,
    errors,
    stats,
    frameCount: (n) =>
      until(
        () => frames.length >= n || errors.length > 0,
        () => `only ${frames.length} of ${n} frames`,
      ),
    stop: () => sub.unsubscribe(),
  };
}

/** The error an mqttSource ends with (fails the test if it emits a frame or never ends). */
async function sourceError(opts: MqttSourceOptions): Promise<unknown> {
  const errors: unknown[] = [];
  const sub = mqttSource(opts).subscribe({ next: () => errors.push(new Error('unexpected frame')), error: (e) => errors.push(e) });
  try {
    await until(
      () => errors.length > 0,
      () => 'the source did not error',
    );
  } finally {
    sub.unsubscribe();
  }
  return errors[0];
}

/** Publishes each payload in order (QoS 0, as routers do). */
async function publishAll(pub: MqttClient, topic: string, payloads: readonly (string | Uint8Array)[]): Promise<void> {
  for (const p of payloads) await pub.publishAsync(topic, typeof p === 'string' ? p : Buffer.from(p));
}

/** The fields a decoded frame must keep whatever carried it. */
function expectSameRecord(got: CsiFrame, want: CsiFrame): void {
  expect(got.nSub).toBe(want.nSub);
  expect(got.seq).toBe(want.seq);
  expect(got.rssi).toEqual(want.rssi);
  expect(got.csi).toEqual(want.csi);
}

const uniqueId = (what: string) => `csipose-test-${what}-${randomBytes(4).toString('hex')}`;

describe('parseSource: mqtt:// and mqtts://', () => {
  it('the documented forms are live frame sources', () => {
    for (const uri of [
      'mqtt://127.0.0.1:1883/csi/room1/esp32?format=esp32',
      'mqtt://broker.local/csi/+/nexmon?format=nexmon&qos=1&client_id=lab-7',
      'mqtts://broker.local:8884/csi/%23?format=esp32',
      'mqtt://alice:pw@[::1]:1883/csi/#?format=esp32',
    ]) {
      const def = parseSource(uri);
      expect(def.uri).toBe(uri);
      expect(def.emits).toEqual(['frame']);
    }
  });

  it('takes the URI apart: topic percent-decoded, # as %23 or as is, default ports, options', () => {
    const env = {};
    expect(parseMqttUri('mqtt://10.0.0.2/csi/room%201/esp32?format=esp32', env)).toEqual({
      url: 'mqtt://10.0.0.2:1883',
      host: '10.0.0.2',
      port: 1883,
      topic: 'csi/room 1/esp32',
      format: 'esp32',
      qos: 0,
    });
    expect(parseMqttUri('mqtts://broker/csi/%23?format=nexmon', env)).toMatchObject({ url: 'mqtts://broker:8883', port: 8883, topic: 'csi/#' });
    expect(parseMqttUri('mqtt://broker:1884/csi/#?format=nexmon', env)).toMatchObject({ port: 1884, topic: 'csi/#', format: 'nexmon' });
    expect(parseMqttUri('mqtt://broker/#?format=esp32', env).topic).toBe('#');
    expect(parseMqttUri('mqtt://[::1]:1883/a/+/b?format=esp32&qos=1&client_id=me', env)).toMatchObject({
      url: 'mqtt://[::1]:1883',
      host: '::1',
      topic: 'a/+/b',
      qos: 1,
      clientId: 'me',
    });
  });

  it('credentials come from the userinfo (percent-decoded), else from CSIPOSE_MQTT_USERNAME / _PASSWORD', () => {
    const env = { CSIPOSE_MQTT_USERNAME: 'envuser', CSIPOSE_MQTT_PASSWORD: 'envpass' };
    expect(parseMqttUri('mqtt://bob:p%40ss%3Aw@h:1/t?format=esp32', env)).toMatchObject({ username: 'bob', password: 'p@ss:w' });
    expect(parseMqttUri('mqtt://bob@h:1/t?format=esp32', env)).toMatchObject({ username: 'bob', password: 'envpass' });
    expect(parseMqttUri('mqtt://h:1/t?format=esp32', env)).toMatchObject({ username: 'envuser', password: 'envpass' });
    const anonymous = parseMqttUri('mqtt://h:1/t?format=esp32', {});
    expect(anonymous.username).toBeUndefined();
    expect(anonymous.password).toBeUndefined();
    // The URL given to the client never carries the credentials.
    expect(parseMqttUri('mqtt://bob:pw@h:1/t?format=esp32', env).url).toBe('mqtt://h:1');
  });

  const refusals: Array<[string, RegExp]> = [
    ['mqtt://127.0.0.1:1883?format=esp32', /mqtt source needs a topic: mqtt:\/\/HOST:PORT\/TOPIC\?format=nexmon\|esp32/],
    ['mqtt://127.0.0.1:1883/?format=esp32', /needs a topic/],
    ['mqtt://127.0.0.1:1883', /needs a topic/],
    ['mqtt://127.0.0.1:1883/csi/x', /needs \?format=nexmon\|esp32/],
    ['mqtt://127.0.0.1:1883/csi/x?format=intel5300', /format "intel5300" cannot come over mqtt/],
    ['mqtt://127.0.0.1:1883/csi/x?format=atheros', /format "atheros" cannot come over mqtt/],
    ['mqtt://127.0.0.1:1883/csi/x?format=wifi', /unknown format "wifi"/],
    ['mqtt://127.0.0.1:70000/csi/x?format=esp32', /mqtt port must be 1\.\.65535, got "70000"/],
    ['mqtt://127.0.0.1:0/csi/x?format=esp32', /port must be 1\.\.65535, got "0"/],
    ['mqtt://127.0.0.1:port/csi/x?format=esp32', /port must be 1\.\.65535, got "port"/],
    ['mqtt://127.0.0.1:/csi/x?format=esp32', /port must be 1\.\.65535, got ""/],
    ['mqtt://:1883/csi/x?format=esp32', /needs a host/],
    ['mqtt:///csi/x?format=esp32', /needs a host/],
    ['mqtt://::1:1883/csi/x?format=esp32', /needs a host/],
    ['mqtt://h:1883/csi/#/x?format=esp32', /not a valid filter/],
    ['mqtt://h:1883/csi/a+?format=esp32', /not a valid filter/],
    ['mqtt://h:1883/csi/x?format=esp32&qos=2', /qos must be 0 or 1, got "2"/],
    ['mqtt://h:1883/csi/x?format=esp32&client_id=', /client_id must not be empty/],
    ['mqtt://h:1883/csi/%zz?format=esp32', /bad percent escape/],
  ];
  for (const [uri, message] of refusals) {
    it(`refuses ${uri}`, () => {
      expect(parseError(uri).message).toMatch(message);
    });
  }

  it('a refusal never echoes the password', () => {
    const e = parseError('mqtt://alice:Hunter2-secret@h:99999/t?format=esp32');
    expect(e.message).not.toContain('Hunter2-secret');
  });

  it('the unknown-source message names mqtt', () => {
    expect(parseError('http://example.com/csi').message).toMatch(/mqtt:\/\//);
  });
});

describeWithMosquitto('mqttSource with a real mosquitto', () => {
  let broker: Broker;
  let pub: MqttClient | undefined;
  const listeners: Listener[] = [];

  /** A listener on the shared broker unless `opts.url` says otherwise; stopped after each test. */
  const open = async (opts: Omit<MqttSourceOptions, 'stats' | 'onReady' | 'url'> & { url?: string }): Promise<Listener> => {
    const l = await listen({ ...opts, url: opts.url ?? broker.url });
    listeners.push(l);
    expect(l.errors).toEqual([]);
    return l;
  };
  const publisher = async (): Promise<MqttClient> => (pub ??= await connectPublisher(broker.url));

  beforeAll(async () => {
    broker = await startBroker();
    return () => broker.stop();
  });
  afterEach(async () => {
    listeners.splice(0).forEach((l) => l.stop());
    await pub?.endAsync();
    pub = undefined;
  });

  describeWithSamples('with the real captures', () => {
    it('ESP32 lines published to csi/room1/esp32 arrive as the decoder makes them, the topic as sourceId', async () => {
      const lines = esp32Lines();
      expect(lines).toHaveLength(13);
      const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;
      const l = await open({ topic: 'csi/room1/esp32', format: 'esp32', environmentId: 'lab-3' });
      const before = Date.now();
      await publishAll(await publisher(), 'csi/room1/esp32', lines);
      await l.frameCount(13);
      expect(l.errors).toEqual([]);
      expect(l.frames).toHaveLength(13);
      l.frames.forEach((f, i) => {
        expectSameRecord(f, want[i]!);
        expect(f).toMatchObject({ format: 'esp32', index: i, sourceId: 'csi/room1/esp32', environmentId: 'lab-3' });
        expect(f.deviceTime).toBe(want[i]!.deviceTime);
        // A text line carries no wall time: the source stamps arrival.
        expect(f.time).toBeGreaterThanOrEqual(before);
      });
      expect(l.stats).toMatchObject({ messages: 13, records: 13, skipped: 0, connected: true, reconnects: 0 });
      expect(l.stats.bytes).toBe(lines.reduce((n, s) => n + Buffer.byteLength(s), 0));
    });

    it('Nexmon UDP payloads arrive as the decoder makes them; wrong-size ones are skipped and counted', async () => {
      const pcap = sampleBytes('nexmon/example_43455c0.pcap');
      const payloads = pcapUdpPayloads(pcap);
      expect(payloads).toHaveLength(566);
      const want = decodeNexmon(pcap).frames;
      expect(want).toHaveLength(548);
      const l = await open({ topic: 'csi/ap1/nexmon', format: 'nexmon', environmentId: 'lab-4', qos: 1 });
      await publishAll(await publisher(), 'csi/ap1/nexmon', payloads);
      await l.frameCount(548);
      await until(
        () => l.stats.messages >= 566,
        () => `${l.stats.messages} of 566 messages`,
      );
      expect(l.errors).toEqual([]);
      expect(l.frames).toHaveLength(548);
      l.frames.forEach((f, i) => {
        expectSameRecord(f, want[i]!);
        expect(f).toMatchObject({ format: 'nexmon', index: i, sourceId: 'csi/ap1/nexmon', environmentId: 'lab-4' });
        expect(f.time).toBeGreaterThan(0);
      });
      expect(l.stats).toMatchObject({ messages: 566, records: 548, skipped: 18 });
    });

    it('csi/+/esp32 and csi/# (given as %23 and as a literal #) get both topics, each frame carrying its own', async () => {
      const lines = esp32Lines();
      const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;
      const plus = await open({ topic: 'csi/+/esp32', format: 'esp32' });
      const hashEncoded = await open(parseMqttUri(`${broker.url}/csi/%23?format=esp32`, {}));
      const hashLiteral = await open(parseMqttUri(`${broker.url}/csi/#?format=esp32`, {}));
      const p = await publisher();
      for (let i = 0; i < 6; i++) await publishAll(p, i % 2 === 0 ? 'csi/room1/esp32' : 'csi/room2/esp32', [lines[i]!]);
      for (const l of [plus, hashEncoded, hashLiteral]) {
        await l.frameCount(6);
        expect(l.errors).toEqual([]);
        expect(l.frames.map((f) => f.sourceId)).toEqual([
          'csi/room1/esp32',
          'csi/room2/esp32',
          'csi/room1/esp32',
          'csi/room2/esp32',
          'csi/room1/esp32',
          'csi/room2/esp32',
        ]);
        // One decoder per topic: each topic counts its own records.
        expect(l.frames.map((f) => f.index)).toEqual([0, 0, 1, 1, 2, 2]);
        // ESP32 lines carry no sequence number: seq is the per-topic index, so compare the rest.
        l.frames.forEach((f, i) => {
          expect(f.csi).toEqual(want[i]!.csi);
          expect(f.deviceTime).toBe(want[i]!.deviceTime);
        });
      }
    });

    it('messages that are not CSI are skipped and counted; the stream goes on', async () => {
      const line = esp32Lines()[0]!;
      const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames[0]!;
      const l = await open({ topic: 'csi/junk/esp32', format: 'esp32' });
      await publishAll(await publisher(), 'csi/junk/esp32', ['hello', '', 'CSI_DATA,AP,[1 2 3', Buffer.from([0, 255, 128]), line]);
      await l.frameCount(1);
      await until(
        () => l.stats.messages >= 5,
        () => `${l.stats.messages} of 5 messages`,
      );
      expect(l.errors).toEqual([]);
      expect(l.frames).toHaveLength(1);
      expectSameRecord(l.frames[0]!, want);
      expect(l.stats).toMatchObject({ messages: 5, records: 1, skipped: 4 });
    });

    it('survives a broker restart on the same port: frames arrive again and reconnects is counted', async () => {
      const lines = esp32Lines();
      const l = await open({ topic: 'csi/restart/esp32', format: 'esp32' });
      await publishAll(await publisher(), 'csi/restart/esp32', [lines[0]!]);
      await l.frameCount(1);
      await pub!.endAsync(true);
      pub = undefined;

      await broker.stop();
      await until(
        () => !l.stats.connected,
        () => 'the source did not notice the broker going away',
      );
      await broker.start();
      await until(
        () => l.stats.connected && l.stats.reconnects >= 1,
        () => 'the source did not reconnect',
      );

      // The resubscription may land a little after the CONNACK: publish until a frame comes through.
      const p = await publisher();
      const deadline = Date.now() + GIVE_UP_MS;
      while (l.frames.length < 2) {
        if (Date.now() > deadline) throw new Error('no frame after the restart');
        await publishAll(p, 'csi/restart/esp32', [lines[1]!]);
        await sleep(100);
      }
      expect(l.errors).toEqual([]);
      expect(l.stats.reconnects).toBeGreaterThanOrEqual(1);
      expect(l.frames[1]!.sourceId).toBe('csi/restart/esp32');
    });
  });

  it('a broker that is not up yet at start is waited for, not an error', async () => {
    await withBroker(async (late) => {
      await late.stop();
      const stats = newMqttStats();
      const errors: unknown[] = [];
      let ready = false;
      const sub = mqttSource({ url: late.url, topic: 'csi/late', format: 'esp32', stats, onReady: () => (ready = true) }).subscribe({
        error: (e) => errors.push(e),
      });
      try {
        // Let at least one connection attempt fail before the broker comes up.
        await sleep(300);
        expect(stats.connected).toBe(false);
        await late.start();
        await until(
          () => ready || errors.length > 0,
          () => 'no SUBACK after the broker came up',
        );
        expect(errors).toEqual([]);
        expect(stats.connected).toBe(true);
      } finally {
        sub.unsubscribe();
      }
    });
  });

  it('unsubscribing closes the connection: the broker logs the client leaving', async () => {
    const clientId = uniqueId('unsub');
    const l = await open({ topic: 'csi/unsub', format: 'esp32', clientId });
    expect(broker.logs()).toContain(`as ${clientId} `);
    expect(l.stats.connected).toBe(true);
    l.stop();
    const left = () => broker.logs().includes(`Client ${clientId} closed its connection`) || broker.logs().includes(`Client ${clientId} disconnected`);
    await until(
      () => left() && !l.stats.connected,
      () => `the broker did not log ${clientId} leaving:\n${broker.logs()}`,
    );
  });

  it('a format that cannot come over mqtt errors the stream with a SourceError', async () => {
    const e = await sourceError({ url: broker.url, topic: 'csi/x', format: 'intel5300' });
    expect(e).toBeInstanceOf(SourceError);
    expect((e as Error).message).toMatch(/format "intel5300" cannot come over mqtt/);
  });

  describe('a broker with a user', () => {
    let secured: Broker;
    const password = 'Corr3ct-Horse';
    beforeAll(async () => {
      secured = await startBroker({ users: { alice: password } });
      return () => secured.stop();
    });

    it('the right userinfo subscribes and receives', async () => {
      const m = parseMqttUri(`mqtt://alice:${password}@127.0.0.1:${secured.port}/csi/auth?format=esp32`, {});
      const l = await open(m);
      const p = await connectPublisher(secured.url, { username: 'alice', password });
      try {
        await p.publishAsync('csi/auth', 'hello');
        await until(
          () => l.stats.messages >= 1,
          () => 'no message',
        );
        expect(l.stats).toMatchObject({ messages: 1, skipped: 1, connected: true });
      } finally {
        await p.endAsync();
      }
    });

    it('credentials from CSIPOSE_MQTT_USERNAME / _PASSWORD work too', async () => {
      const m = parseMqttUri(`mqtt://127.0.0.1:${secured.port}/csi/auth?format=esp32`, {
        CSIPOSE_MQTT_USERNAME: 'alice',
        CSIPOSE_MQTT_PASSWORD: password,
      });
      const l = await open(m);
      expect(l.stats.connected).toBe(true);
    });

    it('a wrong password errors the stream with a SourceError naming the broker, not the password', async () => {
      const wrong = 'Wr0ng-Battery-Staple';
      const m = parseMqttUri(`mqtt://alice:${wrong}@127.0.0.1:${secured.port}/csi/auth?format=esp32`, {});
      const e = await sourceError(m);
      expect(e).toBeInstanceOf(SourceError);
      const message = (e as Error).message;
      expect(message).toContain(secured.url);
      expect(message).toMatch(/refused the connection/);
      expect(message).not.toContain(wrong);
    });

    it('no credentials at all errors the stream too', async () => {
      const e = await sourceError({ url: secured.url, topic: 'csi/auth', format: 'esp32' });
      expect(e).toBeInstanceOf(SourceError);
      expect((e as Error).message).toMatch(/refused the connection/);
    });
  });

  describeWithSamples('through the CLI', () => {
    beforeAll(() => ensureBuilt(), 120_000);

    it('csipose pipe "mqtt://...?format=esp32 | ndjson" --limit 5 prints 5 frames and exits 0', async () => {
      const lines = esp32Lines();
      const want = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;
      const running = runCli(['pipe', `${broker.url}/csi/x?format=esp32 | ndjson`, '--limit', '5', '--env', 'cli-env'], {
        timeoutMs: 60_000,
      });
      let done = false;
      const result = running.finally(() => (done = true));
      // The CLI subscribes when it is ready; until it exits, keep publishing (the earliest may be missed).
      const p = await publisher();
      for (let i = 0; !done; i = (i + 1) % lines.length) {
        await publishAll(p, 'csi/x', [lines[i]!]);
        await sleep(50);
      }
      const r = await result;
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const frames = ndjson<{ format: string; index: number; source_id: string; environment_id: string; csi: number[][] }>(r.stdout);
      expect(frames).toHaveLength(5);
      expect(frames.map((f) => f.index)).toEqual([0, 1, 2, 3, 4]);
      for (const f of frames) {
        expect(f).toMatchObject({ format: 'esp32', source_id: 'csi/x', environment_id: 'cli-env' });
        // Which lines the CLI caught depends on when it subscribed; each is one of the capture's.
        expect(want.some((w) => Array.from(w.csi).every((v, k) => v === f.csi.flat()[k]))).toBe(true);
      }
    });

    it('csipose serve --source mqtt://...: the live pipeline reads every receiver of the site through the broker, a topic per link', async () => {
      // Two single-antenna ESP32 nodes hear one router: the site says so, and each publishes on its own topic.
      const esp = (id: string, role: 'tx' | 'rx', x: number, y: number, yaw: number) => ({ id, role, x, y, z: 1, yaw_deg: yaw, antennas: 1, format: 'esp32' });
      const config = { environment: { site: { radios: [esp('ap', 'tx', 3, 4.8, 270), esp('n1', 'rx', 3, 0.2, 90), esp('n2', 'rx', 0.2, 2.5, 0)] } } };
      const s = await startServer({ model: true, autostart: true, config, source: `${broker.url}/routers/%2B?format=esp32&link=topic` });
      try {
        const token = await s.login();
        const status = async () => (await s.api('GET', '/system/status', { token, form: 'a' })).body;
        await waitForStatus(s, token, 'running');
        const p = await publisher();
        const lines = esp32Lines();
        let sent = 0;
        // Both receivers publish; the status lists both links live (connected_routers counts live links).
        const got = await (async () => {
          for (;;) {
            const st = await status();
            if (st.components.csi_receiver.status === 'active' && st.network.connected_routers === 2) return st;
            if (sent > 2000) throw new Error(`no frames through serve --source mqtt: ${JSON.stringify(st.components.csi_receiver)}`);
            for (const node of ['n1', 'n2']) await publishAll(p, `routers/${node}`, lines.slice(sent % lines.length, (sent % lines.length) + 5));
            sent += 5;
            await sleep(50);
          }
        })();
        expect(got.components.csi_receiver.links.map((l: { link_id: string; state: string; primary: boolean }) => [l.link_id, l.state, l.primary])).toEqual([
          ['ap-n1', 'live', true],
          ['ap-n2', 'live', false],
        ]);
        expect(got.components.csi_receiver.data_rate_hz).toBeGreaterThan(0);
      } finally {
        await s.close();
      }
    });
  });
});
