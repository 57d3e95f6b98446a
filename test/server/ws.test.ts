/**
 * `/ws/pose` end to end: the real application on port 0 running the live pipeline (simulator,
 * shipped model), real WebSocket clients over loopback. Persons and alerts come from the pipeline,
 * so the assertions are invariants of every message (a filter holds for every person sent) rather
 * than fixed values.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { JWT_SECRET, startServer, until, withServer, type TestServer } from '../helpers/server.js';
import { refusal, WsClient, type ConnectOptions, type Message, type RefusalBody } from '../helpers/wsClient.js';
import { ROOM_ZONE } from '../helpers/zones.js';

const STREAMING = { status_interval_seconds: 1 };

const isPose = (id: string) => (m: Message) => m.type === 'pose_update' && m.subscription_id === id;

/** Waits until `n` pose updates of a subscription arrived and returns them. */
async function poseUpdates(c: WsClient, id: string, n: number): Promise<Message[]> {
  for (let i = 0; i < n; i++) await c.next(isPose(id), `pose update ${i + 1} of ${id}`);
  return c.messages.filter(isPose(id));
}

describe('/ws/pose', () => {
  let s: TestServer;
  let token: string;
  const open: WsClient[] = [];
  const connect = async (o: Parameters<typeof WsClient.connect>[1] = { token }) => {
    const c = await WsClient.connect(s.port, o);
    open.push(c);
    return c;
  };

  beforeAll(async () => {
    s = await startServer({ model: true, autostart: true, rateLimitScale: 100, config: { environment: { zones: [ROOM_ZONE] }, streaming: STREAMING } });
    token = await s.login();
  });
  afterEach(async () => {
    // Each test starts without the connections (and subscriptions) of the ones before.
    for (const c of open.splice(0)) await c.close();
  });
  afterAll(async () => {
    await s?.close();
  });

  describe('authentication at upgrade', () => {
    it('refuses a missing or bad credential with 401 before the upgrade, in the form asked for', async () => {
      const none = await refusal(WsClient.connect(s.port));
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ success: false, error: { code: 'AUTHENTICATION_ERROR' } });
      const bad = await refusal(WsClient.connect(s.port, { token: 'not-a-token' }));
      expect(bad.status).toBe(401);
      const forged = await refusal(WsClient.connect(s.port, { token: `${token.slice(0, -4)}AAAA` }));
      expect(forged.status).toBe(401);
      const a = await refusal(WsClient.connect(s.port, { headers: { authorization: 'Bearer nope' }, query: { form: 'a' } }));
      expect(a.status).toBe(401);
      expect((a.body as RefusalBody).error).toMatchObject({ code: 'AUTHENTICATION_ERROR', request_id: expect.any(String) });
      expect((a.body as RefusalBody).success).toBeUndefined();
    });

    it('accepts a JWT or an API key in ?token=, Authorization or X-API-Key', async () => {
      const { key } = await s.apiKey(token, 'viewer', 'ws-viewer');
      const ways: ConnectOptions[] = [{ token }, { token: key }, { headers: { authorization: `Bearer ${token}` } }, { headers: { 'x-api-key': key } }];
      for (const o of ways) {
        const c = await connect(o);
        const hello = c.messages[0]!;
        expect(hello).toMatchObject({ type: 'connection_established', supported_protocols: ['pose_v1', 'alerts_v1'], form: 'b' });
        expect(hello.client_id).toMatch(/^ws_/);
        expect(Date.parse(hello.server_time)).toBeGreaterThan(0);
        expect(hello.limits).toEqual({ max_message_bytes: 65536, max_subscriptions: 10 });
        await c.close();
      }
    });
  });

  describe('pose_updates', () => {
    it('confirms a subscription with the filters applied, defaults filled in', async () => {
      const c = await connect();
      const r = await c.subscribe('pose_updates');
      expect(r).toMatchObject({
        type: 'subscription_confirmed',
        channel: 'pose_updates',
        filters_applied: { min_confidence: 0, person_ids: null, include_keypoints: true, include_dense_pose: false },
      });
      expect(r.subscription_id).toMatch(/^sub_[0-9a-f]{16}$/);
      const updates = await poseUpdates(c, r.subscription_id, 3);
      for (const u of updates) {
        expect(Date.parse(u.timestamp)).toBeGreaterThan(0);
        expect(u.data).toMatchObject({ environment_id: 'default', metadata: { processing_mode: 'live' } });
        expect(Number.isInteger(u.data.frame_id)).toBe(true);
        for (const p of u.data.persons) {
          expect(p.keypoints).toHaveLength(17);
          expect(p.dense_pose).toBeUndefined();
          // A person outside the reference view has no box (docs/service.md "Reference view").
          if (p.in_view) expect(Object.keys(p.bounding_box)).toEqual(['x', 'y', 'width', 'height']);
          else expect(p.bounding_box).toBeUndefined();
        }
      }
      // Frames arrive in order, one per pose frame.
      const ids = updates.map((u) => u.data.frame_id);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    });

    it('applies every filter to every person it sends', async () => {
      const c = await connect();
      const all = await c.subscribe('pose_updates', {});
      // A person id that the pipeline is reporting now.
      const someone = await c.next((m) => isPose(all.subscription_id)(m) && m.data.persons.length > 0, 'a frame with a person');
      const pid = someone.data.persons[0].person_id as number;
      const confident = await c.subscribe('pose_updates', { min_confidence: 0.9 });
      const bare = await c.subscribe('pose_updates', { include_keypoints: false });
      const dense = await c.subscribe('pose_updates', { include_dense_pose: true });
      const one = await c.subscribe('pose_updates', { person_ids: [pid, pid, 999_999] });
      expect(one.filters_applied.person_ids).toEqual([pid, 999_999]);
      expect(new Set([all, confident, bare, dense, one].map((x) => x.subscription_id)).size).toBe(5);
      for (const id of [confident, bare, dense, one].map((x) => x.subscription_id)) await poseUpdates(c, id, 3);
      for (const u of c.all('pose_update')) {
        const persons = u.data.persons as Message[];
        if (u.subscription_id === confident.subscription_id) for (const p of persons) expect(p.confidence).toBeGreaterThanOrEqual(0.9);
        if (u.subscription_id === bare.subscription_id) for (const p of persons) expect(p.keypoints).toBeUndefined();
        if (u.subscription_id === dense.subscription_id)
          for (const p of persons) expect(Buffer.from(p.dense_pose.iuv_image, 'base64').subarray(1, 4).toString()).toBe('PNG');
        if (u.subscription_id === one.subscription_id) for (const p of persons) expect(p.person_id).toBe(pid);
      }
      // The same frame reaches every subscription: frame ids of one subscription are those of the others.
      const frames = (id: string) =>
        new Set(
          c
            .all('pose_update')
            .filter((u) => u.subscription_id === id)
            .map((u) => u.data.frame_id),
        );
      const last = Math.min(...[all, confident, bare, dense, one].map((x) => Math.max(...frames(x.subscription_id))));
      const first = Math.max(...[all, confident, bare, dense, one].map((x) => Math.min(...frames(x.subscription_id))));
      for (let f = first; f <= last; f++) for (const x of [all, bare, dense]) expect(frames(x.subscription_id).has(f), `frame ${f}`).toBe(true);
    });

    it('gives subscribers on different connections with equal filters one id (one slot, one serialisation), and Form A persons on a Form A connection', async () => {
      const a = await connect();
      const b = await connect({ token, headers: { 'x-response-form': 'a' } });
      const c = await connect({ token, query: { form: 'a' } });
      const filters = { min_confidence: 0.25, include_dense_pose: false };
      const ra = await a.subscribe('pose_updates', filters);
      const rb = await b.subscribe('pose_updates', { include_dense_pose: false, min_confidence: 0.25 });
      const rc = await c.subscribe('pose_updates', filters);
      expect(rb.subscription_id).toBe(rc.subscription_id);
      expect(ra.subscription_id).not.toBe(rb.subscription_id);
      const ua = await a.next((m) => isPose(ra.subscription_id)(m) && m.data.persons.length > 0);
      expect(Object.keys(ua.data.persons[0])).toContain('person_id');
      const ub = await b.next((m) => isPose(rb.subscription_id)(m) && m.data.persons.length > 0);
      expect(ub.data.persons[0]).toMatchObject({ id: expect.any(Number), tracking_info: { track_id: expect.any(String) } });
      expect(ub.data.metadata).toMatchObject({ environment_id: 'default', processing_pipeline: 'live' });
      // Subscribing again with equal filters on one connection is a second subscription, with its own id.
      const again = await a.subscribe('pose_updates', { include_dense_pose: false, min_confidence: 0.25 });
      expect(again.subscription_id).not.toBe(ra.subscription_id);
      const ws = (await s.api('GET', '/metrics', { token })).body.data.current.streaming.websocket;
      expect(ws.connections).toBeGreaterThanOrEqual(3);
      expect(ws.filter_sets.pose_updates).toBeGreaterThanOrEqual(2);
      expect(ws.messages_serialised).toBeGreaterThan(0);
    });

    it('unsubscribe stops the updates of that subscription, and says so', async () => {
      const c = await connect();
      const r = await c.subscribe('pose_updates', { min_confidence: 0.01 });
      await poseUpdates(c, r.subscription_id, 2);
      const done = await c.request({ type: 'unsubscribe', subscription_id: r.subscription_id }, (m) => m.type === 'unsubscription_confirmed');
      expect(done).toEqual({ type: 'unsubscription_confirmed', subscription_id: r.subscription_id });
      const after = c.messages.length;
      // Two status pushes later (1 s apart) no update of it has come.
      for (let i = 0; i < 2; i++) await c.next((m) => m.type === 'system_status');
      expect(c.messages.slice(after).filter(isPose(r.subscription_id))).toEqual([]);
      const unknown = await c.request({ type: 'unsubscribe', subscription_id: r.subscription_id }, (m) => m.type === 'error');
      expect(unknown).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    });
  });

  describe('alerts', () => {
    it('sends alerts that match the subscription filters, and only those', async () => {
      const c = await connect();
      const intrusion = await c.subscribe('alerts', { alert_types: ['intrusion'], severity: ['low', 'medium'] });
      expect(intrusion.filters_applied).toEqual({ alert_types: ['intrusion'], severity: ['low', 'medium'] });
      const falls = await c.subscribe('alerts', { alert_types: ['fall_detection'] });
      const critical = await c.subscribe('alerts', { severity: ['critical'] });
      const everything = await c.subscribe('alerts');
      expect(everything.filters_applied).toEqual({
        alert_types: ['fall_detection', 'inactivity', 'intrusion'],
        severity: ['critical', 'high', 'low', 'medium'],
      });
      const a = await c.next((m) => m.type === 'alert' && m.subscription_id === intrusion.subscription_id, 'an intrusion alert');
      expect(a).toMatchObject({
        alert_type: 'intrusion',
        severity: 'low',
        data: { zone: 'room', environment_id: 'default', video_clip_url: null, location: { x: expect.any(Number), y: expect.any(Number) } },
        actions_required: ['notification'],
      });
      expect(a.alert_id).toMatch(/^alrt_default_/);
      expect(typeof a.data.person_id).toBe('number');
      expect(a.data.confidence).toBeGreaterThan(0);
      // The same alert reaches the catch-all subscription, never the fall or critical ones; and
      // whatever else the room raised meanwhile (the model may report a fall) reaches only the
      // subscriptions whose filters it matches.
      await c.next((m) => m.type === 'alert' && m.subscription_id === everything.subscription_id && m.alert_id === a.alert_id);
      const alerts = c.all('alert');
      for (const m of alerts) {
        if (m.subscription_id === falls.subscription_id) expect(m.alert_type).toBe('fall_detection');
        if (m.subscription_id === critical.subscription_id) expect(m.severity).toBe('critical');
        if (m.subscription_id === intrusion.subscription_id) expect([m.alert_type, ['low', 'medium'].includes(m.severity)]).toEqual(['intrusion', true]);
        if (m.alert_id === a.alert_id) expect([everything.subscription_id, intrusion.subscription_id]).toContain(m.subscription_id);
      }
    });
  });

  describe('status, ping, errors', () => {
    it('pushes system_status every streaming.status_interval_seconds without a subscription', async () => {
      const c = await connect();
      const a = await c.next((m) => m.type === 'system_status');
      const b = await c.next((m) => m.type === 'system_status');
      expect(Date.parse(b.timestamp)).toBeGreaterThan(Date.parse(a.timestamp));
      expect(b.status).toMatchObject({ system_health: 'healthy', state: 'running', gpu_utilization: 0 });
      expect(b.status.processing_fps).toBeGreaterThan(0);
      expect(Number.isInteger(b.status.active_persons)).toBe(true);
    });

    it('answers ping with pong, and bad messages with an error while the connection stays open', async () => {
      const c = await connect();
      const pong = await c.request({ type: 'ping' }, (m) => m.type === 'pong');
      expect(Date.parse(pong.server_time)).toBeGreaterThan(0);
      const bad: Array<[unknown, string, string | undefined]> = [
        ['{not json', 'VALIDATION_ERROR', undefined],
        [{ kind: 'subscribe' }, 'VALIDATION_ERROR', 'type'],
        [{ type: 'shout' }, 'VALIDATION_ERROR', 'type'],
        [{ type: 'subscribe', channel: 'video' }, 'VALIDATION_ERROR', 'channel'],
        [{ type: 'subscribe', channel: 'pose_updates', filters: { min_confidence: 2 } }, 'VALIDATION_ERROR', 'filters.min_confidence'],
        [{ type: 'subscribe', channel: 'pose_updates', filters: { person_ids: [] } }, 'VALIDATION_ERROR', 'filters.person_ids'],
        [{ type: 'subscribe', channel: 'pose_updates', filters: { person_ids: [1.5] } }, 'VALIDATION_ERROR', 'filters.person_ids'],
        [{ type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: 'yes' } }, 'VALIDATION_ERROR', 'filters.include_keypoints'],
        [{ type: 'subscribe', channel: 'pose_updates', filters: { colour: 'red' } }, 'VALIDATION_ERROR', 'filters.colour'],
        [{ type: 'subscribe', channel: 'alerts', filters: { severity: ['urgent'] } }, 'VALIDATION_ERROR', 'filters.severity'],
        [{ type: 'subscribe', channel: 'alerts', filters: { alert_types: 'intrusion' } }, 'VALIDATION_ERROR', 'filters.alert_types'],
        [{ type: 'subscribe', channel: 'alerts', filters: [] }, 'VALIDATION_ERROR', 'filters'],
        [{ type: 'unsubscribe' }, 'VALIDATION_ERROR', 'subscription_id'],
        [[1, 2], 'VALIDATION_ERROR', ''],
        [`${'['.repeat(70_000)}${']'.repeat(0)}`, 'PAYLOAD_TOO_LARGE', undefined],
        [`${'['.repeat(30_000)}${']'.repeat(30_000)}`, 'VALIDATION_ERROR', undefined],
      ];
      for (const [m, code, field] of bad) {
        const e = await c.request(m, (r) => r.type === 'error');
        expect(e.code, JSON.stringify(m).slice(0, 80)).toBe(code);
        if (field !== undefined) expect(e.details.field, JSON.stringify(m)).toBe(field);
        expect(typeof e.message).toBe('string');
      }
      const binary = c.next((r) => r.type === 'error');
      c.sendBinary(new Uint8Array([1, 2, 3]));
      expect((await binary).message).toMatch(/binary/);
      // Still open and answering.
      expect((await c.request({ type: 'ping' }, (m) => m.type === 'pong')).type).toBe('pong');
      expect(c.closed).toBeUndefined();
    });

    it('drops a connection that sends more than 1 MiB in one message (uWS closes it without reading on)', async () => {
      const c = await connect();
      c.send('x'.repeat(1024 * 1024 + 1));
      expect([1006, 1009]).toContain((await c.whenClosed()).code);
    });
  });

  describe('limits', () => {
    it('allows 10 concurrent subscriptions per account, over all its connections; other accounts are apart', async () => {
      const a = await connect();
      const b = await connect();
      const held: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await a.subscribe('pose_updates', { min_confidence: i / 100 });
        expect(r.type).toBe('subscription_confirmed');
        held.push(r.subscription_id);
      }
      for (let i = 6; i < 10; i++) expect((await b.subscribe('pose_updates', { min_confidence: i / 100 })).type).toBe('subscription_confirmed');
      const over = await b.subscribe('alerts');
      expect(over).toMatchObject({ type: 'error', code: 'RATE_LIMIT_EXCEEDED', details: { limit: 10, current: 10 } });
      const { key } = await s.apiKey(token, 'viewer', 'other-account');
      const other = await connect({ token: key });
      expect((await other.subscribe('alerts')).type).toBe('subscription_confirmed');
      // Equal filters are no way around it: each subscription counts.
      expect((await a.subscribe('pose_updates', { min_confidence: 0 })).code).toBe('RATE_LIMIT_EXCEEDED');
      // One freed, one more allowed.
      await a.request({ type: 'unsubscribe', subscription_id: held[0] }, (m) => m.type === 'unsubscription_confirmed');
      expect((await b.subscribe('alerts')).type).toBe('subscription_confirmed');
      expect((await b.subscribe('alerts', { severity: ['high'] })).code).toBe('RATE_LIMIT_EXCEEDED');
      // Closing a connection frees its subscriptions.
      await a.close();
      expect((await b.subscribe('alerts', { severity: ['high'] })).type).toBe('subscription_confirmed');
    });

    it('allows 100 connections per IP; the 101st is refused with 429 until one closes', async () => {
      const clients = await Promise.all(Array.from({ length: 100 }, () => WsClient.connect(s.port, { token })));
      open.push(...clients);
      const refused = await refusal(WsClient.connect(s.port, { token }));
      expect(refused.status).toBe(429);
      expect((refused.body as RefusalBody).error).toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        details: { limit: 100, scope: 'websocket_connections_per_ip' },
      });
      await clients[0]!.close();
      const again = await until(async () => WsClient.connect(s.port, { token }).catch(() => undefined), 'a connection after one closed');
      open.push(again);
    });
  });

  describe('credentials that stop being valid', () => {
    it('closes the connections of a revoked token with 4401, and of an expired one', async () => {
      const mine = await s.login();
      const c = await connect({ token: mine });
      const other = await connect();
      expect((await s.api('POST', '/auth/revoke', { token, body: { token: mine } })).status).toBe(200);
      expect(await c.whenClosed()).toMatchObject({ code: 4401, reason: expect.stringMatching(/revoked/) });
      const now = Math.floor(Date.now() / 1000);
      const short = await new SignJWT({ role: 'viewer' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject('admin')
        .setIssuedAt(now)
        .setExpirationTime(now + 2)
        .setJti(randomBytes(8).toString('hex'))
        .sign(new TextEncoder().encode(JWT_SECRET));
      const e = await connect({ token: short });
      expect(await e.whenClosed()).toMatchObject({ code: 4401, reason: expect.stringMatching(/expired/) });
      // The others stay.
      expect((await other.request({ type: 'ping' }, (m) => m.type === 'pong')).type).toBe('pong');
      expect(other.closed).toBeUndefined();
    });
  });
});

describe('/ws/pose: slow clients', () => {
  it('drops the stale frames of a client that never reads, keeps the others at full rate, closes it with 4008; alerts wait for a client that catches up', async () => {
    // Ten dense-pose subscriptions at four times real time: megabytes a second for a client that does not read.
    await withServer(
      {
        model: true,
        autostart: true,
        source: 'sim?speed=4',
        rateLimitScale: 100,
        config: { environment: { zones: [ROOM_ZONE] }, streaming: { ...STREAMING, ws_slow_client_timeout_seconds: 8 } },
      },
      async (s) => {
        const token = await s.login();
        const heavy = Array.from({ length: 9 }, (_, i) => ({ include_dense_pose: true, min_confidence: i / 100 }));
        const fast = await WsClient.connect(s.port, { token });
        const stalled = await WsClient.connect(s.port, { token: (await s.apiKey(token, 'viewer', 'stalled')).key });
        const late = await WsClient.connect(s.port, { token: (await s.apiKey(token, 'viewer', 'late')).key });
        try {
          for (const f of heavy) {
            await stalled.subscribe('pose_updates', f);
            await late.subscribe('pose_updates', f);
          }
          const lateAlerts = (await late.subscribe('alerts')).subscription_id;
          const fastPose = (await fast.subscribe('pose_updates', {})).subscription_id;
          const fastAlerts = (await fast.subscribe('alerts')).subscription_id;
          stalled.stopReading();
          late.stopReading();
          const stalledAt = fast.messages.length;

          const metrics = async () => (await s.api('GET', '/metrics', { token })).body.data.current.streaming.websocket;
          const during = await until(async () => {
            const m = await metrics();
            return m.slow_clients > 0 ? m : undefined;
          }, 'a slow client');
          // Bounded: what waits for a slow client is at most the backpressure limit plus a message.
          expect(during.max_buffered_bytes).toBeLessThan(during.backpressure_limit_bytes + 256 * 1024);
          // An alert raised while `late` is not reading: it gets it once it reads again.
          const raisedWhileLate = await until(
            async () => fast.messages.slice(stalledAt).find((m) => m.type === 'alert' && m.subscription_id === fastAlerts),
            'an alert while the clients are stalled',
          );
          late.resumeReading();
          // The client that never reads is closed for being slow; it sees why once it reads again.
          await until(async () => {
            const m = await metrics();
            return m.slow_closes > 0 ? m : undefined;
          }, 'the slow client closed');
          stalled.resumeReading();
          const closed = await stalled.whenClosed();
          expect(closed.code).toBe(4008);
          expect(closed.reason).toMatch(/slow consumer/);

          // Meanwhile the client that reads got every frame: no gaps between its first and last.
          const frames = fast.messages
            .slice(stalledAt)
            .filter(isPose(fastPose))
            .map((m) => m.data.frame_id as number);
          expect(frames.length).toBeGreaterThan(20);
          expect(frames).toEqual(Array.from({ length: frames.length }, (_, i) => frames[0]! + i));

          const after = await metrics();
          expect(after.slow_closes).toBeGreaterThanOrEqual(1);
          expect(after.pose_frames_dropped).toBeGreaterThan(0);

          // The client that caught up received the alert raised while it was not reading, and stays open.
          await late.next(
            (m) => m.type === 'alert' && m.subscription_id === lateAlerts && m.alert_id === raisedWhileLate.alert_id,
            'the alert raised while stalled',
          );
          expect(late.closed).toBeUndefined();
          // A reconnect after the slow close works and streams again.
          const back = await WsClient.connect(s.port, { token });
          const r = await back.subscribe('pose_updates', {});
          await back.next(isPose(r.subscription_id));
          back.terminate();
        } finally {
          for (const c of [fast, stalled, late]) c.terminate();
        }
      },
    );
  });
});

describe('/ws/pose: streaming.websocket_enabled', () => {
  it('false refuses upgrades with 503 and closes open connections with 1001; true accepts again', async () => {
    await withServer({ model: true, autostart: true, rateLimitScale: 100 }, async (s) => {
      const token = await s.login();
      const c = await WsClient.connect(s.port, { token });
      const put = await s.api('PUT', '/config', { token, body: { streaming: { websocket_enabled: false } } });
      expect(put.status, put.text).toBe(200);
      expect(put.body.data.requires_restart).toBe(false);
      expect(await c.whenClosed()).toMatchObject({ code: 1001, reason: expect.stringMatching(/websocket_enabled/) });
      const refused = await refusal(WsClient.connect(s.port, { token }));
      expect(refused.status).toBe(503);
      expect((refused.body as RefusalBody).error.code).toBe('SYSTEM_NOT_READY');
      await s.api('PUT', '/config', { token, body: { streaming: { websocket_enabled: true } } });
      // A client that reconnects is served again.
      const back = await WsClient.connect(s.port, { token });
      const r = await back.subscribe('pose_updates');
      await back.next(isPose(r.subscription_id));
      back.terminate();
    });
  });
});
