/**
 * `/ws/pose` subscriptions with equal filters on one connection: each `subscribe` is its own
 * subscription with its own id, each receives every frame (and alert) under its id, and
 * unsubscribing one leaves the other delivering. The real application on port 0 running the live
 * pipeline (simulator, shipped model), real WebSocket clients over loopback.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { WsClient, type Message } from '../helpers/wsClient.js';
import { ROOM_ZONE } from '../helpers/zones.js';

const isPose = (id: string) => (m: Message) => m.type === 'pose_update' && m.subscription_id === id;
const frameIds = (c: WsClient, id: string) => new Set(c.messages.filter(isPose(id)).map((m) => m.data.frame_id as number));

describe('/ws/pose: equal filters, separate subscriptions', () => {
  let s: TestServer;
  let token: string;
  const open: WsClient[] = [];
  const connect = async (t = token) => {
    const c = await WsClient.connect(s.port, { token: t });
    open.push(c);
    return c;
  };
  const websocketMetrics = async () => (await s.api('GET', '/metrics', { token })).body.data.current.streaming.websocket;

  beforeAll(async () => {
    s = await startServer({
      model: true,
      autostart: true,
      rateLimitScale: 100,
      config: { environment: { zones: [ROOM_ZONE] }, streaming: { status_interval_seconds: 1 } },
    });
    token = await s.login();
  });
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('gives each subscribe its own id; both receive every frame; unsubscribing one leaves the other delivering', async () => {
    const c = await connect();
    const filters = { min_confidence: 0.1, include_keypoints: false };
    const one = await c.subscribe('pose_updates', filters);
    const two = await c.subscribe('pose_updates', { include_keypoints: false, min_confidence: 0.1 });
    expect(one.type).toBe('subscription_confirmed');
    expect(two.type).toBe('subscription_confirmed');
    expect(two.subscription_id).not.toBe(one.subscription_id);
    expect(two.filters_applied).toEqual(one.filters_applied);
    for (const id of [one.subscription_id, two.subscription_id]) expect(id).toMatch(/^sub_[0-9a-f]{16}$/);

    // Every frame reaches both, each message under its own id and with the same content.
    for (let i = 0; i < 3; i++) await c.next(isPose(two.subscription_id), `update ${i + 1} of the second subscription`);
    const a = frameIds(c, one.subscription_id);
    const b = frameIds(c, two.subscription_id);
    const shared = [...b].filter((f) => f >= Math.min(...a));
    expect(shared.length).toBeGreaterThanOrEqual(3);
    for (const f of shared) expect(a.has(f), `frame ${f}`).toBe(true);
    const f = shared[shared.length - 1]!;
    const strip = (m: Message) => ({ ...m, subscription_id: undefined });
    const m1 = c.messages.find((m) => isPose(one.subscription_id)(m) && m.data.frame_id === f)!;
    const m2 = c.messages.find((m) => isPose(two.subscription_id)(m) && m.data.frame_id === f)!;
    expect(strip(m2)).toEqual(strip(m1));

    // Unsubscribing the first ends only the first.
    const done = await c.request({ type: 'unsubscribe', subscription_id: one.subscription_id }, (m) => m.type === 'unsubscription_confirmed');
    expect(done.subscription_id).toBe(one.subscription_id);
    const after = c.messages.length;
    for (let i = 0; i < 3; i++) await c.next(isPose(two.subscription_id), `update ${i + 1} of the second after unsubscribing the first`);
    expect(c.messages.slice(after).filter(isPose(one.subscription_id))).toEqual([]);
    // The first is gone, the second can still be ended.
    expect(await c.request({ type: 'unsubscribe', subscription_id: one.subscription_id }, (m) => m.type === 'error')).toMatchObject({
      code: 'RESOURCE_NOT_FOUND',
    });
    expect((await c.request({ type: 'unsubscribe', subscription_id: two.subscription_id }, (m) => m.type === 'unsubscription_confirmed')).subscription_id).toBe(
      two.subscription_id,
    );
  });

  it('delivers each alert to each of two equal alert subscriptions', async () => {
    const c = await connect();
    const one = await c.subscribe('alerts', { alert_types: ['intrusion'] });
    const two = await c.subscribe('alerts', { alert_types: ['intrusion'] });
    expect(two.subscription_id).not.toBe(one.subscription_id);
    const first = await c.next((m) => m.type === 'alert' && m.subscription_id === one.subscription_id, 'an intrusion alert');
    await c.next((m) => m.type === 'alert' && m.subscription_id === two.subscription_id && m.alert_id === first.alert_id, 'the same alert for the second');
  });

  it('counts each subscription against the per-account limit, equal filters or not', async () => {
    const limit = s.svc.config.get().streaming.ws_max_subscriptions_per_account;
    const c = await connect();
    const ids = new Set<string>();
    for (let i = 0; i < limit; i++) {
      const r = await c.subscribe('pose_updates', { include_keypoints: false });
      expect(r.type, `subscription ${i + 1}`).toBe('subscription_confirmed');
      ids.add(r.subscription_id);
    }
    expect(ids.size).toBe(limit);
    expect(await c.subscribe('pose_updates', { include_keypoints: false })).toMatchObject({
      type: 'error',
      code: 'RATE_LIMIT_EXCEEDED',
      details: { limit, current: limit },
    });
    expect((await websocketMetrics()).subscriptions).toBe(limit);
  });

  it('still shares one filter set (one serialised message per frame) between connections with equal filters', async () => {
    const { key } = await s.apiKey(token, 'viewer', 'second-account');
    const a = await connect();
    const b = await connect(key);
    const filters = { min_confidence: 0.2, include_dense_pose: false };
    const ra = await a.subscribe('pose_updates', filters);
    const rb = await b.subscribe('pose_updates', filters);
    const ra2 = await a.subscribe('pose_updates', filters);
    expect(ra2.subscription_id).not.toBe(ra.subscription_id);
    // Three subscriptions, one filter set.
    const m = await websocketMetrics();
    expect(m.subscriptions).toBe(3);
    expect(m.filter_sets.pose_updates).toBe(1);
    await a.next(isPose(ra2.subscription_id));
    await b.next(isPose(rb.subscription_id));
  });
});
