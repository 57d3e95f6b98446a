/**
 * The MQTT publisher against a real mosquitto broker (started on a free port), with the real
 * application running the live pipeline, and real MQTT and WebSocket clients.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeWithMosquitto, startBroker, type Broker } from '../helpers/mosquitto.js';
import { ADMIN_PASSWORD, startServer, testModel, until, type TestServer } from '../helpers/server.js';
import { WsClient } from '../helpers/wsClient.js';
import { cliMain, ensureBuilt, repoRoot } from '../helpers/cli.js';
import { FALL_HOLD_MS, HaEnvironment, haDiscovery } from '../../src/outlets/homeassistant.js';
import type { ActivityEvent, PoseAlert } from '../../src/pose/types.js';
import { ROOM_ZONE } from '../helpers/zones.js';

/** A message's JSON payload: the fields read here (pose frame, status, alert, Home Assistant discovery and state). */
interface Payload {
  frame_id?: number;
  timestamp?: string;
  type?: string;
  /** The status message's `{ state, ... }`, or the last will's `'offline'`. */
  status?: unknown;
  unique_id?: string;
  device_class?: string;
  person_count?: number;
  [field: string]: unknown;
}

interface Received {
  topic: string;
  /** The parsed payload; null when it is empty (a retained message removed). */
  json: Payload;
  retain: boolean;
  qos: number;
}

/** A subscriber that keeps every message with its topic, retain flag and QoS. */
async function subscriber(
  url: string,
  filter: string,
): Promise<{ client: MqttClient; got: Received[]; next(match: (m: Received) => boolean, what: string): Promise<Received> }> {
  const client = await mqtt.connectAsync(url, { reconnectPeriod: 0 });
  const got: Received[] = [];
  client.on('message', (topic, payload, packet) => {
    const text = payload.toString();
    got.push({ topic, json: text ? JSON.parse(text) : null, retain: packet.retain, qos: packet.qos });
  });
  await client.subscribeAsync(filter, { qos: 1 });
  return {
    client,
    got,
    next: (match, what) => until(async () => got.find(match), what),
  };
}

describeWithMosquitto('MQTT publisher', () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  const serve = (extra: Record<string, unknown> = {}) =>
    startServer({
      model: true,
      autostart: true,
      rateLimitScale: 100,
      config: {
        environment: { zones: [ROOM_ZONE], name: 'Lab' },
        streaming: { mqtt_enabled: true, mqtt_url: broker.url, status_interval_seconds: 1, ...extra },
      },
    });

  describe('topics and payloads', () => {
    let s: TestServer;
    let token: string;
    let sub: Awaited<ReturnType<typeof subscriber>>;
    beforeAll(async () => {
      sub = await subscriber(broker.url, 'csipose/v1/#');
      s = await serve();
      token = await s.login();
    });
    afterAll(async () => {
      await sub?.client.endAsync();
      await s?.close();
    });

    it('publishes each pose frame as the Form B frame (QoS 0), the same frames the WebSocket sends', async () => {
      const ws = await WsClient.connect(s.port, { token });
      try {
        const id = (await ws.subscribe('pose_updates', {})).subscription_id;
        const onWs = await ws.next((m) => m.type === 'pose_update' && m.subscription_id === id && m.data.persons.length > 0);
        const onMqtt = await sub.next((m) => m.topic === 'csipose/v1/default/pose' && m.json.frame_id === onWs.data.frame_id, 'the same frame on MQTT');
        expect(onMqtt.qos).toBe(0);
        expect(onMqtt.retain).toBe(false);
        const { timestamp, ...rest } = onMqtt.json;
        expect(timestamp).toBe(onWs.timestamp);
        expect(rest).toEqual(onWs.data);
        expect(onMqtt.json).toMatchObject({ environment_id: 'default', metadata: { processing_mode: 'live' } });
      } finally {
        ws.terminate();
      }
    });

    it('publishes the system status retained (QoS 1) and alerts and events (QoS 1) in the shapes of the WebSocket and /analytics/events', async () => {
      const status = await sub.next((m) => m.topic === 'csipose/v1/default/status' && (m.json.status as { state?: string }).state === 'running', 'a status');
      expect(status.qos).toBe(1);
      expect(status.json).toMatchObject({ type: 'system_status', status: { state: 'running', system_health: expect.any(String) } });
      const alert = await sub.next((m) => m.topic === 'csipose/v1/default/alerts', 'an alert');
      expect(alert.qos).toBe(1);
      expect(alert.json).toMatchObject({ type: 'alert', alert_type: 'intrusion', severity: 'low', data: { zone: 'room', video_clip_url: null } });
      const event = await sub.next((m) => m.topic === 'csipose/v1/default/events', 'an event');
      expect(event.qos).toBe(1);
      expect(Object.keys(event.json)).toEqual([
        'event_id',
        'type',
        'severity',
        'timestamp',
        'environment_id',
        'person_id',
        'track_id',
        'confidence',
        'location',
        'metadata',
        'actions_taken',
      ]);
      // A subscriber that comes later gets the retained status at once.
      const late = await subscriber(broker.url, 'csipose/v1/default/status');
      try {
        const retained = await late.next((m) => m.retain, 'the retained status');
        expect(retained.json.type).toBe('system_status');
      } finally {
        await late.client.endAsync();
      }
      const health = (await s.api('GET', '/health/detailed', { token })).body.data;
      expect(health.components.mqtt).toMatchObject({ status: 'connected', broker: broker.url, topic_prefix: 'csipose/v1' });
      expect(health.components.mqtt.published.pose).toBeGreaterThan(0);
    });
  });

  it('reports a lost broker in health, keeps the pipeline running, queues alerts and reconnects with backoff', async () => {
    const s = await serve();
    try {
      const token = await s.login();
      const health = async () => (await s.api('GET', '/health/detailed', { token })).body.data;
      await until(async () => ((await health()).components.mqtt.status === 'connected' ? true : undefined), 'connected');
      await broker.stop();
      const down = await until(async () => {
        const h = await health();
        return h.components.mqtt.status === 'disconnected' ? h : undefined;
      }, 'the loss reported');
      expect(down.overall_status).toBe('degraded');
      // The pipeline goes on while the broker is away.
      const frames = async () => (await s.api('GET', '/system/status', { token })).body.data.performance.pose_frames as number;
      const before = await frames();
      await until(async () => ((await frames()) > before + 5 ? true : undefined), 'pose frames while the broker is down');
      expect((await health()).components.mqtt.dropped.pose_disconnected).toBeGreaterThan(0);
      await broker.start();
      const sub = await subscriber(broker.url, 'csipose/v1/default/pose');
      try {
        const back = await until(async () => {
          const h = await health();
          return h.components.mqtt.status === 'connected' ? h : undefined;
        }, 'reconnected');
        expect(back.components.mqtt.reconnects).toBeGreaterThanOrEqual(1);
        expect(back.overall_status).toBe('healthy');
        await sub.next(() => true, 'pose frames after the reconnect');
      } finally {
        await sub.client.endAsync();
      }
    } finally {
      await s.close();
    }
  });

  it('leaves {"status":"offline"} retained on a clean shutdown, and as the last will when the process dies', async () => {
    const s = await serve();
    const sub = await subscriber(broker.url, 'csipose/v1/default/status');
    try {
      await sub.next((m) => m.json?.type === 'system_status', 'the status');
    } finally {
      await s.close();
    }
    await sub.next((m) => m.json?.status === 'offline', 'offline after a clean shutdown');
    await sub.client.endAsync();

    // A killed process cannot say goodbye: the broker publishes its last will.
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'csipose-mqtt-will-'));
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        environment: { id: 'ward-7' },
        neural_network: { model_path: testModel(dir) },
        streaming: { mqtt_enabled: true, mqtt_url: broker.url },
      }),
    );
    const proc = spawn(process.execPath, [cliMain, 'serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', config], {
      cwd: repoRoot,
      env: { ...process.env, CSIPOSE_ADMIN_PASSWORD: ADMIN_PASSWORD },
      stdio: 'ignore',
    });
    const watch = await subscriber(broker.url, 'csipose/v1/ward-7/status');
    try {
      await watch.next((m) => m.json?.type === 'system_status' && (m.json.status as { state?: string }).state === 'running', 'the child running');
      proc.kill('SIGKILL');
      const will = await watch.next((m) => m.json?.status === 'offline', 'the last will');
      expect(will.json).toEqual({ status: 'offline' });
    } finally {
      proc.kill('SIGKILL');
      await watch.client.endAsync();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('Home Assistant discovery: one device per environment with person count, occupancy, fall alert and status, removed when switched off', async () => {
    const sub = await subscriber(broker.url, 'homeassistant/#');
    const state = await subscriber(broker.url, 'csipose/v1/default/state');
    const s = await serve({ mqtt_homeassistant: true });
    try {
      const token = await s.login();
      const ids = [
        'sensor/csipose_default/person_count',
        'binary_sensor/csipose_default/occupancy',
        'binary_sensor/csipose_default/fall',
        'sensor/csipose_default/status',
      ];
      for (const id of ids) {
        const m = await sub.next((x) => x.topic === `homeassistant/${id}/config` && Boolean(x.json), id);
        expect(m.qos).toBe(1);
        expect(m.json).toMatchObject({
          state_topic: 'csipose/v1/default/state',
          device: { identifiers: ['csipose_default'], name: 'Lab (csipose)', manufacturer: 'csipose' },
          availability: [{ topic: 'csipose/v1/default/status' }],
        });
        expect(m.json.unique_id).toBe(`csipose_default_${id.split('/').pop()}`);
      }
      // Retained: Home Assistant started later still finds the device.
      const later = await subscriber(broker.url, 'homeassistant/#');
      for (const id of ids) expect((await later.next((x) => x.topic === `homeassistant/${id}/config`, `${id} retained`)).retain).toBe(true);
      await later.client.endAsync();
      expect((await sub.next((x) => x.topic.endsWith('/occupancy/config'), 'occupancy')).json.device_class).toBe('occupancy');
      expect((await sub.next((x) => x.topic.endsWith('/fall/config'), 'fall')).json.device_class).toBe('safety');
      // The state follows the stream: the count of a recent frame, occupancy with it, the system state.
      const st = await state.next((m) => m.json?.status === 'running', 'a state');
      expect(st.json).toEqual({ person_count: expect.any(Number), occupied: st.json.person_count! > 0, fall_alert: false, status: 'running' });

      const off = await s.api('PUT', '/config', { token, body: { streaming: { mqtt_homeassistant: false } } });
      expect(off.status, off.text).toBe(200);
      for (const id of ids) await sub.next((x) => x.topic === `homeassistant/${id}/config` && x.json === null, `${id} removed`);
    } finally {
      await s.close();
      await sub.client.endAsync();
      await state.client.endAsync();
    }
  });

  it('follows the configuration live: off publishes nothing, on connects (credentials from the environment)', async () => {
    const secured = await startBroker({ users: { csipose: 'mqtt-secret-42' } });
    const s = await startServer({
      model: true,
      autostart: true,
      rateLimitScale: 100,
      env: { CSIPOSE_MQTT_USERNAME: 'csipose', CSIPOSE_MQTT_PASSWORD: 'mqtt-secret-42' },
      config: { streaming: { mqtt_url: secured.url } },
    });
    try {
      const token = await s.login();
      const component = async () => (await s.api('GET', '/health/detailed', { token })).body.data.components.mqtt;
      expect(await component()).toMatchObject({ status: 'disabled' });
      const on = await s.api('PUT', '/config', { token, body: { streaming: { mqtt_enabled: true } } });
      expect(on.body.data.requires_restart).toBe(false);
      await until(async () => ((await component()).status === 'connected' ? true : undefined), 'connected with the credentials');
      const sub = await subscriber(secured.url.replace('mqtt://', 'mqtt://csipose:mqtt-secret-42@'), 'csipose/v1/default/pose');
      await sub.next(() => true, 'a pose frame');
      await sub.client.endAsync();
      await s.api('PUT', '/config', { token, body: { streaming: { mqtt_enabled: false } } });
      expect(await component()).toMatchObject({ status: 'disabled' });
      expect(JSON.stringify(await component())).not.toContain('mqtt-secret-42');
    } finally {
      await s.close();
      await secured.stop();
    }
  });
});

describe('Home Assistant state', () => {
  const alert = (trackId: number, time: number): PoseAlert => ({
    alertId: `alrt_default_${trackId}_${time}_fall`,
    type: 'fall_detection',
    severity: 'high',
    time,
    environmentId: 'default',
    personId: trackId,
    trackId,
    confidence: 0.9,
    location: { x: 1, y: 2 },
    metadata: {},
    actionsRequired: ['medical_response', 'notification'],
  });
  const recovery = (trackId: number, time: number): ActivityEvent => ({
    eventId: `evt_default_${trackId}_${time}_fall_recovery`,
    type: 'fall_recovery',
    severity: 'medium',
    time,
    environmentId: 'default',
    personId: trackId,
    trackId,
    confidence: 0.9,
    location: { x: 1, y: 2 },
    metadata: {},
    actionsTaken: [],
  });

  it('switches the fall sensor on with a fall alert, off when that person gets up or after the hold time', () => {
    const env = new HaEnvironment();
    env.frame({ frameId: 0, time: 0, sourceId: 's', environmentId: 'default', persons: [], processingMs: 0, modelVersion: 'm', csiQuality: 1 });
    expect(env.state(0)).toEqual({ person_count: 0, occupied: false, fall_alert: false, status: 'unknown' });
    env.alert(alert(3, 1000));
    expect(env.state(1000).fall_alert).toBe(true);
    env.event(recovery(4, 2000));
    expect(env.state(2000).fall_alert).toBe(true);
    env.event(recovery(3, 3000));
    expect(env.state(3000).fall_alert).toBe(false);
    env.alert(alert(5, 10_000));
    expect(env.state(10_000 + FALL_HOLD_MS - 1).fall_alert).toBe(true);
    expect(env.state(10_000 + FALL_HOLD_MS).fall_alert).toBe(false);
  });

  it('names topics and ids safely for any environment id', () => {
    const msgs = haDiscovery('ha', 'ward.2', 'Ward 2', { status: 'p/ward.2/status', state: 'p/ward.2/state' }, '0.1.0');
    expect(msgs.map((m) => m.topic)).toEqual([
      'ha/sensor/csipose_ward_2/person_count/config',
      'ha/binary_sensor/csipose_ward_2/occupancy/config',
      'ha/binary_sensor/csipose_ward_2/fall/config',
      'ha/sensor/csipose_ward_2/status/config',
    ]);
    expect(JSON.parse(msgs[0]!.payload).device.sw_version).toBe('0.1.0');
  });
});
