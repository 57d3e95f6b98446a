/**
 * Webhooks against the real application (REST on port 0, the data dir in a temp folder) and a
 * real HTTP receiver on port 0 that verifies signatures with its own code. Tests that deliver
 * enable `webhooks.allow_private_networks` (the receiver is on loopback); the SSRF tests keep the
 * default. Waiting is bounded (a guard against hanging), never measured.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, until, type TestServer } from '../helpers/server.js';
import { verifySignature, WebhookReceiver } from '../helpers/webhookReceiver.js';
import { ROOM_ZONE } from '../helpers/zones.js';

/** Retries a fraction of a second apart, so a test sees several attempts without waiting long. */
const FAST = { allow_private_networks: true, initial_backoff_seconds: 0.05, max_backoff_seconds: 0.2, max_attempts: 3, timeout_seconds: 2 };
const ALERTS = [{ channel: 'alerts' }];

async function create(s: TestServer, token: string, body: Record<string, unknown>): Promise<{ id: string; secret: string; [k: string]: unknown }> {
  const r = await s.api('POST', '/webhooks', { token, body, form: 'a' });
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r.body;
}

async function component(s: TestServer, token: string): Promise<Record<string, number | string>> {
  return (await s.api('GET', '/health/detailed', { token, form: 'a' })).body.components.webhooks;
}

async function webhook(s: TestServer, token: string, id: string) {
  return (await s.api('GET', `/webhooks/${id}`, { token, form: 'a' })).body;
}

describe('webhooks: registration', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer({ rateLimitScale: 1000, config: { webhooks: FAST } });
    token = await s.login();
  });
  afterAll(() => s?.close());

  it("takes its limits from the configuration schema, the spec's 10,000 events per hour per endpoint by default", async () => {
    const r = await s.api('GET', '/config/schema', { token, form: 'a' });
    expect(r.body.defaults.webhooks).toMatchObject({ rate_limit_per_hour: 10_000, allow_private_networks: false, max_attempts: 12 });
    expect(r.body.schema.properties.webhooks.properties.rate_limit_per_hour).toMatchObject({ type: 'integer', default: 10_000 });
  });

  it('refuses bad registrations with 400 or 422 naming each field, in both forms', async () => {
    const url = 'http://127.0.0.1:9/hook';
    const table: Array<[unknown, number, string[]]> = [
      [{}, 422, ['url', 'subscriptions']],
      [{ url, subscriptions: ALERTS, extra: 1 }, 422, ['extra']],
      [{ url: 42, subscriptions: ALERTS }, 422, ['url']],
      [{ url: 'not a url', subscriptions: ALERTS }, 422, ['url']],
      [{ url: 'ftp://example.com/x', subscriptions: ALERTS }, 422, ['url']],
      [{ url: 'file:///etc/passwd', subscriptions: ALERTS }, 422, ['url']],
      [{ url: 'http://user:pw@example.com/x', subscriptions: ALERTS }, 422, ['url']],
      [{ url: `http://example.com/${'x'.repeat(2100)}`, subscriptions: ALERTS }, 422, ['url']],
      [{ url, subscriptions: [] }, 422, ['subscriptions']],
      [{ url, subscriptions: 'alerts' }, 422, ['subscriptions']],
      [{ url, subscriptions: [{ channel: 'pose_updates' }] }, 422, ['subscriptions[0].channel']],
      [{ url, subscriptions: [{ channel: 'nope' }] }, 422, ['subscriptions[0].channel']],
      [{ url, subscriptions: [{ channel: 'alerts', filters: { severity: ['urgent'] } }] }, 422, ['subscriptions[0].filters.severity']],
      [{ url, subscriptions: [{ channel: 'alerts', filters: { min_confidence: 0.5 } }] }, 422, ['subscriptions[0].filters.min_confidence']],
      [{ url, subscriptions: [ALERTS[0], { channel: 'events', filters: { event_types: ['party'] } }] }, 422, ['subscriptions[1].filters.event_types']],
      [{ url, subscriptions: [{ channel: 'alerts', filter: {} }] }, 422, ['subscriptions[0].filter']],
      [{ url, subscriptions: ALERTS, enabled: 'yes', description: 7 }, 422, ['description', 'enabled']],
      [[1, 2], 422, ['body']],
    ];
    for (const [body, status, fields] of table) {
      const a = await s.api('POST', '/webhooks', { token, body, form: 'a' });
      expect(a.status, `${JSON.stringify(body).slice(0, 80)}: ${a.text}`).toBe(status);
      expect(a.body.error.code).toBe('VALIDATION_ERROR');
      expect(a.body.error.details.field_errors.map((e: { field: string }) => e.field).sort()).toEqual([...fields].sort());
      const b = await s.api('POST', '/webhooks', { token, body, form: 'b' });
      expect(b.status).toBe(status);
      expect(b.body.success).toBe(false);
      expect(fields).toContain(b.body.error.details.field);
    }
    const notJson = await s.api('POST', '/webhooks', { token, rawBody: '{"url":' });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('VALIDATION_ERROR');
    expect((await s.api('GET', '/webhooks', { token, form: 'a' })).body.total).toBe(0);
  });

  it('answers 404 for an unknown webhook on every route, and 401 / 403 below admin', async () => {
    for (const [method, path] of [
      ['GET', '/webhooks/wh_0000000000000000'],
      ['PUT', '/webhooks/wh_0000000000000000'],
      ['DELETE', '/webhooks/wh_0000000000000000'],
      ['POST', '/webhooks/wh_0000000000000000/rotate-secret'],
      ['POST', '/webhooks/wh_0000000000000000/ping'],
      ['GET', '/webhooks/wh_0000000000000000/dead-letters'],
      ['POST', '/webhooks/wh_0000000000000000/dead-letters/redrive'],
      ['DELETE', '/webhooks/wh_0000000000000000/dead-letters'],
      ['DELETE', '/webhooks/wh_0000000000000000/dead-letters/whd_1'],
    ] as const) {
      const r = await s.api(method, path, { token, ...(method === 'PUT' ? { body: { enabled: false } } : {}) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body.error.code).toBe('RESOURCE_NOT_FOUND');
    }
    const viewer = await s.apiKey(token, 'viewer');
    const operator = await s.apiKey(token, 'operator');
    for (const key of [viewer.key, operator.key]) {
      expect((await s.api('GET', '/webhooks', { token: key })).status).toBe(403);
      expect((await s.api('POST', '/webhooks', { token: key, body: { url: 'http://127.0.0.1:9/', subscriptions: ALERTS } })).status).toBe(403);
    }
    expect((await s.api('GET', '/webhooks')).status).toBe(401);
  });

  it('creates, lists, reads, changes and deletes a webhook; the secret is shown once and kept in a 0600 file', async () => {
    const body = {
      url: 'http://127.0.0.1:9/hook',
      description: 'nurse station',
      subscriptions: [{ channel: 'alerts', filters: { severity: ['critical', 'high', 'high'] } }],
    };
    const created = await create(s, token, body);
    expect(created.id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    // Filters normalised as /ws/pose normalises them: defaults filled, lists sorted and distinct.
    expect(created.subscriptions).toEqual([
      { channel: 'alerts', filters: { alert_types: ['fall_detection', 'inactivity', 'intrusion'], severity: ['critical', 'high'] } },
    ]);
    expect(created).toMatchObject({ url: body.url, description: 'nurse station', enabled: true, delivery: { pending: 0, dead_letters: 0 } });

    const listB = await s.api('GET', '/webhooks', { token });
    expect(listB.body.success).toBe(true);
    expect(listB.body.data.webhooks.map((w: { id: string }) => w.id)).toContain(created.id);
    const one = await s.api('GET', `/webhooks/${created.id}`, { token });
    expect(one.body.data.id).toBe(created.id);
    expect(listB.text + one.text).not.toContain(created.secret);

    const off = await s.api('PUT', `/webhooks/${created.id}`, { token, form: 'a', body: { enabled: false, description: 'paused' } });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, description: 'paused', url: body.url });
    expect((await s.api('PUT', `/webhooks/${created.id}`, { token, body: {} })).status).toBe(422);
    expect((await s.api('PUT', `/webhooks/${created.id}`, { token, body: { url: 'gopher://x' } })).status).toBe(422);
    const ping = await s.api('POST', `/webhooks/${created.id}/ping`, { token });
    expect(ping.status).toBe(409);

    const file = join(s.dataDir, 'webhooks', 'endpoints.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const del = await s.api('DELETE', `/webhooks/${created.id}`, { token, form: 'a' });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: created.id, deleted: true });
    expect((await s.api('GET', `/webhooks/${created.id}`, { token })).status).toBe(404);
  });
});

describe('webhooks: delivery', () => {
  let s: TestServer;
  let token: string;
  let rx: WebhookReceiver;
  beforeAll(async () => {
    s = await startServer({ rateLimitScale: 1000, config: { webhooks: FAST } });
    token = await s.login();
    rx = await WebhookReceiver.start();
  });
  afterEach(() => {
    rx.mode = 'ok';
  });
  afterAll(async () => {
    await rx?.close();
    await s?.close();
  });

  it('signs each request so that the receiver verifies it with the secret and not with another; headers name the delivery', async () => {
    const w = await create(s, token, { url: rx.url, subscriptions: ALERTS });
    rx.secret = w.secret;
    const ping = await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' });
    expect(ping.status).toBe(202);
    const id = ping.body.delivery_id as string;
    const got = await rx.next((h) => h.json?.id === id, 'the ping');
    expect(got.verified).toBe(true);
    expect(got.answered).toBe(204);
    expect(got.json).toMatchObject({ id, type: 'ping', webhook_id: w.id, data: { webhook_id: w.id } });
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-csipose-delivery']).toBe(id);
    expect(got.headers['x-csipose-event-type']).toBe('ping');
    expect(got.headers['x-csipose-webhook-id']).toBe(w.id);
    expect(got.headers['x-csipose-attempt']).toBe('1');
    const sig = got.headers['x-csipose-signature'] as string;
    expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    // Another secret, a changed body, or the same request replayed an hour later: refused.
    expect(verifySignature(sig, got.body, `${w.secret}x`)).toBe(false);
    expect(verifySignature(sig, got.body.replace('ping', 'pong'), w.secret)).toBe(false);
    expect(verifySignature(sig, got.body, w.secret, Date.now() / 1000 + 3600)).toBe(false);
    await until(async () => ((await webhook(s, token, w.id)).delivery.delivered === 1 ? true : undefined), 'delivered counted');

    // A rotation: the new secret verifies at once, and so does the old one during the grace.
    const rot = await s.api('POST', `/webhooks/${w.id}/rotate-secret`, { token, form: 'a' });
    expect(rot.status).toBe(200);
    expect(rot.body.secret).not.toBe(w.secret);
    expect(rot.body.previous_secret_expires_at).toEqual(expect.any(String));
    const id2 = (await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id;
    const got2 = await rx.next((h) => h.json?.id === id2, 'the ping after rotation');
    expect(verifySignature(got2.headers['x-csipose-signature'] as string, got2.body, rot.body.secret)).toBe(true);
    expect(verifySignature(got2.headers['x-csipose-signature'] as string, got2.body, w.secret)).toBe(true);
    rx.secret = rot.body.secret;
    await s.api('DELETE', `/webhooks/${w.id}`, { token });
  });

  it('retries a failed delivery with the same id and body until the receiver recovers', async () => {
    const w = await create(s, token, { url: rx.url, subscriptions: ALERTS });
    rx.secret = w.secret;
    rx.mode = 'fail';
    const id = (await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id;
    await rx.next(() => rx.byId(id).length >= 2, 'two failed attempts');
    rx.mode = 'ok';
    await until(async () => ((await webhook(s, token, w.id)).delivery.delivered === 1 ? true : undefined), 'the delivery after recovery');
    const all = rx.byId(id);
    expect(new Set(all.map((h) => h.body)).size).toBe(1);
    expect(all.map((h) => h.headers['x-csipose-attempt'])).toEqual(all.map((_, i) => String(i + 1)));
    expect(all.at(-1)!.answered).toBe(204);
    expect(all.slice(0, -1).every((h) => h.answered === 500)).toBe(true);
    const view = await webhook(s, token, w.id);
    expect(view.delivery).toMatchObject({ pending: 0, dead_letters: 0, delivered: 1, failed_attempts: all.length - 1 });
    expect(view.delivery.last_error).toMatch(/HTTP 500/);
    await s.api('DELETE', `/webhooks/${w.id}`, { token });
  });

  it('makes a dead letter after the last attempt; an admin lists it, re-drives it (same id) and clears others', async () => {
    const w = await create(s, token, { url: rx.url, subscriptions: ALERTS });
    rx.secret = w.secret;
    rx.mode = 'fail';
    const id = (await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id;
    const dead = await until(async () => {
      const r = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a' });
      return r.body.pagination.total_count === 1 ? r.body.dead_letters[0] : undefined;
    }, 'the dead letter');
    expect(dead).toMatchObject({ id, type: 'ping', reason: 'max_attempts', attempts: 3, last_status: 500, payload: { id, type: 'ping' } });
    expect(dead.last_error).toMatch(/HTTP 500: receiver is down/);
    expect(rx.byId(id)).toHaveLength(3);
    const h = await component(s, token);
    expect(h).toMatchObject({ status: 'failing', dead_letters: 1 });
    expect(h.dead_lettered).toBeGreaterThanOrEqual(1);

    rx.mode = 'ok';
    const redrive = await s.api('POST', `/webhooks/${w.id}/dead-letters/redrive`, { token, form: 'a' });
    expect(redrive.body).toEqual({ redriven: [id], unknown: [] });
    await rx.next((x) => x.json?.id === id && x.answered === 204, 'the re-driven delivery');
    await until(async () => ((await webhook(s, token, w.id)).delivery.pending === 0 ? true : undefined), 'queue empty');
    expect((await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a' })).body.pagination.total_count).toBe(0);
    expect((await component(s, token)).status).toBe('active');

    // Three more dead letters: paged in both forms, one cleared by id, the rest at once.
    rx.mode = 'fail';
    const three: string[] = [];
    for (let i = 0; i < 3; i++) {
      three.push((await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id);
      await until(async () => ((await webhook(s, token, w.id)).delivery.dead_letters === i + 1 ? true : undefined), `dead letter ${i + 1}`);
    }
    const newestFirst = [...three].reverse();
    const pageA = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a', query: { limit: 2 } });
    expect(pageA.body.dead_letters.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(0, 2));
    expect(pageA.body.pagination).toMatchObject({ limit: 2, returned_count: 2, total_count: 3, has_more: true });
    const nextA = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a', query: { cursor: pageA.body.pagination.next_cursor } });
    expect(nextA.body.dead_letters.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(2));
    expect(nextA.body.pagination).toMatchObject({ returned_count: 1, has_more: false, next_cursor: null });
    const pageB = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, query: { page: 2, per_page: 2 } });
    expect(pageB.body.data.map((d: { id: string }) => d.id)).toEqual(newestFirst.slice(2));
    expect(pageB.body.pagination).toEqual({ page: 2, per_page: 2, total: 3, total_pages: 2, has_next: false, has_prev: true });
    for (const [form, query] of [
      ['a', { page: 1 }],
      ['b', { cursor: 'x' }],
      ['a', { cursor: 'not-a-cursor' }],
      ['b', { per_page: 0 }],
    ] as const) {
      const r = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form, query });
      expect(r.status, `${form} ${JSON.stringify(query)}: ${r.text}`).toBe(422);
    }
    const [a, ...others] = three as [string, ...string[]];
    const one = await s.api('DELETE', `/webhooks/${w.id}/dead-letters/${a}`, { token, form: 'a' });
    expect(one.body).toEqual({ cleared: [a], unknown: [] });
    expect((await s.api('DELETE', `/webhooks/${w.id}/dead-letters/${a}`, { token })).status).toBe(404);
    expect((await s.api('POST', `/webhooks/${w.id}/dead-letters/redrive`, { token, body: { ids: 'all' } })).status).toBe(422);
    const rest = await s.api('DELETE', `/webhooks/${w.id}/dead-letters`, { token, form: 'a' });
    expect(rest.body.cleared.sort()).toEqual(others.sort());
    expect(rest.body.unknown).toEqual([]);
    await s.api('DELETE', `/webhooks/${w.id}`, { token });
  });

  it('does not follow a redirect: the attempt fails and the other address gets nothing', async () => {
    const other = await WebhookReceiver.start();
    try {
      const w = await create(s, token, { url: rx.url, subscriptions: ALERTS });
      rx.secret = w.secret;
      rx.mode = 'redirect';
      rx.redirectTo = other.url;
      await s.api('POST', `/webhooks/${w.id}/ping`, { token });
      await until(async () => ((await webhook(s, token, w.id)).delivery.dead_letters === 1 ? true : undefined), 'the dead letter');
      const dl = (await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a' })).body.dead_letters[0];
      expect(dl.last_status).toBe(302);
      expect(dl.last_error).toMatch(/redirects are not followed/);
      expect(other.got).toHaveLength(0);
      await s.api('DELETE', `/webhooks/${w.id}`, { token });
    } finally {
      await other.close();
    }
  });
});

describe('webhooks: the rate limit', () => {
  it('sends at most webhooks.rate_limit_per_hour attempts an hour to an endpoint; the rest wait in the queue, then go', async () => {
    const s = await startServer({ rateLimitScale: 1000, config: { webhooks: { ...FAST, rate_limit_per_hour: 3 } } });
    const rx = await WebhookReceiver.start();
    try {
      const token = await s.login();
      const w = await create(s, token, { url: rx.url, subscriptions: ALERTS });
      rx.secret = w.secret;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await s.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id);
      const held = await until(async () => {
        const v = await webhook(s, token, w.id);
        return v.delivery.delivered === 3 && v.delivery.rate_limited ? v : undefined;
      }, 'three delivered, the rest held');
      expect(held.delivery).toMatchObject({ pending: 2, dead_letters: 0, sent_last_hour: 3 });
      expect(rx.got).toHaveLength(3);
      expect((await component(s, token)).rate_limited_endpoints).toBe(1);
      expect((await component(s, token)).queue_depth).toBe(2);

      // Held, not lost: a larger limit lets them go.
      const put = await s.api('PUT', '/config', { token, body: { webhooks: { rate_limit_per_hour: 10 } } });
      expect(put.status, put.text).toBe(200);
      await until(async () => ((await webhook(s, token, w.id)).delivery.delivered === 5 ? true : undefined), 'the held deliveries');
      expect(rx.got.map((h) => h.json.id).sort()).toEqual([...ids].sort());
    } finally {
      await rx.close();
      await s.close();
    }
  });
});

describe('webhooks: SSRF', () => {
  let s: TestServer;
  let token: string;
  let rx: WebhookReceiver;
  beforeAll(async () => {
    // The default: private networks refused.
    s = await startServer({ rateLimitScale: 1000, config: { webhooks: { initial_backoff_seconds: 0.05, max_backoff_seconds: 0.1, max_attempts: 2 } } });
    token = await s.login();
    rx = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await rx?.close();
    await s?.close();
  });

  it('refuses loopback, private, link-local, unspecified and mapped addresses, and a name that resolves to loopback, at registration', async () => {
    for (const url of [
      rx.url,
      'http://127.1.2.3/x',
      'http://10.1.2.3/x',
      'http://172.16.0.1/x',
      'http://192.168.1.1/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/x',
      'http://0.0.0.0:8000/x',
      'http://[::1]:8000/x',
      'http://[::]/x',
      'http://[fe80::1]/x',
      'http://[fd00::1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[64:ff9b::a00:1]/x',
      'http://2130706433/x', // 127.0.0.1 as one number
      `http://localhost:${rx.port}/hook`,
    ]) {
      const r = await s.api('POST', '/webhooks', { token, form: 'a', body: { url, subscriptions: ALERTS } });
      expect(r.status, `${url}: ${r.text}`).toBe(422);
      expect(r.body.error.details.field_errors[0].field).toBe('url');
      expect(r.body.error.message).toMatch(/allow_private_networks/);
    }
    expect((await s.api('GET', '/webhooks', { token, form: 'a' })).body.total).toBe(0);
    expect(rx.got).toHaveLength(0);
    // Public addresses are taken (registration connects to nothing).
    for (const url of ['http://93.184.215.14/hook', 'https://[2606:4700:4700::1111]/hook']) {
      const ok = await s.api('POST', '/webhooks', { token, form: 'a', body: { url, subscriptions: ALERTS, enabled: false } });
      expect(ok.status, `${url}: ${ok.text}`).toBe(201);
      await s.api('DELETE', `/webhooks/${ok.body.id}`, { token });
    }
  });

  it('checks again at delivery, after DNS: a registered name that now resolves to loopback is refused, and nothing is sent', async () => {
    // Registered while private networks were allowed; then the setting goes back to false.
    expect((await s.api('PUT', '/config', { token, body: { webhooks: { allow_private_networks: true } } })).status).toBe(200);
    const byName = await create(s, token, { url: `http://localhost:${rx.port}/hook`, subscriptions: ALERTS });
    const byAddress = await create(s, token, { url: rx.url, subscriptions: ALERTS });
    expect((await s.api('PUT', '/config', { token, body: { webhooks: { allow_private_networks: false } } })).status).toBe(200);
    for (const w of [byName, byAddress]) {
      await s.api('POST', `/webhooks/${w.id}/ping`, { token });
      const dl = await until(async () => {
        const r = await s.api('GET', `/webhooks/${w.id}/dead-letters`, { token, form: 'a' });
        return r.body.dead_letters[0];
      }, 'the refused delivery');
      expect(dl.last_error).toMatch(/^refused: .*(loopback).*allow_private_networks is false/);
      expect(dl.last_status).toBe(0);
    }
    expect(rx.got).toHaveLength(0);
  });
});

describe('webhooks: durability', () => {
  it('keeps registrations and pending deliveries across a restart, and delivers each pending event once by id', async () => {
    const first = await startServer({ rateLimitScale: 1000, config: { webhooks: { ...FAST, max_attempts: 100, max_backoff_seconds: 0.1 } } });
    const dataDir = first.dataDir;
    const rx = await WebhookReceiver.start();
    let second: TestServer | undefined;
    try {
      const token = await first.login();
      const w = await create(first, token, { url: rx.url, subscriptions: ALERTS });
      rx.secret = w.secret;
      // One delivery failed once (waiting for its retry), two in flight (the receiver holds them) at the stop.
      rx.mode = 'fail';
      const ids: string[] = [(await first.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id];
      await rx.next(() => rx.byId(ids[0]!).length > 0, 'a failed attempt');
      rx.mode = 'hang';
      for (let i = 0; i < 2; i++) ids.push((await first.api('POST', `/webhooks/${w.id}/ping`, { token, form: 'a' })).body.delivery_id);
      await rx.next(() => ids.every((id) => rx.byId(id).length > 0), 'an attempt of each');
      // The data dir outlives the first server: close the app only (startServer removes only its own temp dir).
      await first.app.close();
      const before = rx.got.length;
      rx.mode = 'ok';
      second = await startServer({ rateLimitScale: 1000, dataDir, config: { webhooks: FAST } });
      const token2 = await second.login();
      const view = (await second.api('GET', `/webhooks/${w.id}`, { token: token2, form: 'a' })).body;
      expect(view).toMatchObject({ id: w.id, url: rx.url });
      await until(async () => ((await webhook(second!, token2, w.id)).delivery.delivered === 3 ? true : undefined), 'the pending deliveries');
      const after = rx.got.slice(before);
      expect(after.map((h) => h.json.id).sort()).toEqual([...ids].sort());
      expect(after.every((h) => h.verified && h.answered === 204)).toBe(true);
      expect((await webhook(second, token2, w.id)).delivery).toMatchObject({ pending: 0, dead_letters: 0 });
    } finally {
      await rx.close();
      await second?.close();
      await first.close().catch(() => undefined);
    }
  });
});

describe('webhooks: an unreadable registry', () => {
  it('stops the start naming the file, and leaves the file as it was', async () => {
    const root = mkdtempSync(join(tmpdir(), 'csipose-webhook-file-'));
    try {
      const dataDir = join(root, 'data');
      mkdirSync(join(dataDir, 'webhooks'), { recursive: true });
      const file = join(dataDir, 'webhooks', 'endpoints.json');
      writeFileSync(file, '{"endpoints": [');
      await expect(startServer({ dataDir })).rejects.toThrow(/endpoints\.json/);
      expect(readFileSync(file, 'utf8')).toBe('{"endpoints": [');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('webhooks: the live pipeline', () => {
  it("sends the alerts and events that pass each webhook's filters, and only those", async () => {
    const s = await startServer({
      model: true,
      autostart: true,
      rateLimitScale: 1000,
      config: { environment: { zones: [ROOM_ZONE] }, webhooks: FAST },
    });
    const rx = await WebhookReceiver.start();
    try {
      const token = await s.login();
      const intrusions = await create(s, token, { url: `${rx.url}?w=a`, subscriptions: [{ channel: 'alerts', filters: { alert_types: ['intrusion'] } }] });
      const falls = await create(s, token, { url: `${rx.url}?w=b`, subscriptions: [{ channel: 'alerts', filters: { alert_types: ['fall_detection'] } }] });
      const events = await create(s, token, {
        url: `${rx.url}?w=c`,
        subscriptions: [{ channel: 'events', filters: { event_types: ['intrusion'], severity: ['low'] } }],
      });
      for (const w of [intrusions, falls, events]) rx.secrets.set(w.id, w.secret);
      const registered = new Date().toISOString();
      const of = (w: { id: string }) => rx.got.filter((h) => h.json?.webhook_id === w.id);
      // An intrusion alert raised once all three were registered: the falls webhook had its chance at it.
      await rx.next((h) => h.json?.webhook_id === intrusions.id && h.json.created_at > registered, 'an intrusion alert');
      await rx.next((h) => h.json?.webhook_id === events.id, 'an intrusion event');
      const a = of(intrusions)[0]!;
      expect(a.json).toMatchObject({ type: 'alert', data: { type: 'alert', alert_type: 'intrusion', data: { zone: 'room' } } });
      expect(a.verified).toBe(true);
      expect(verifySignature(a.headers['x-csipose-signature'] as string, a.body, falls.secret)).toBe(false);
      expect(of(intrusions).every((h) => h.json.data.alert_type === 'intrusion')).toBe(true);
      expect(of(falls).every((h) => h.json.data.alert_type === 'fall_detection')).toBe(true);
      expect(of(events).every((h) => h.json.type === 'event' && h.json.data.type === 'intrusion' && h.json.data.severity === 'low')).toBe(true);
      expect(of(events)[0]!.json.data).toMatchObject({ event_id: expect.any(String), environment_id: 'default' });
    } finally {
      await rx.close();
      await s.close();
    }
  });
});
