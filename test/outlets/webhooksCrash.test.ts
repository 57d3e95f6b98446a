/**
 * At-least-once across a crash: the real `csipose serve` process (from dist/) is killed with
 * SIGKILL while a delivery is in flight (the receiver holds the request open), started again on
 * the same data dir, and the delivery arrives, with the same id, once the receiver answers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/cli.js';
import { adminToken, serveCli, type ServedCli } from '../helpers/serveCli.js';
import { until } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhookReceiver.js';

async function call(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      'x-response-form': 'a',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('webhooks: a crash of the sending process', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('loses no event: a delivery in flight when the process is killed is delivered after the next start, same id', async () => {
    const root = mkdtempSync(join(tmpdir(), 'csipose-webhook-crash-'));
    const dataDir = join(root, 'data');
    const overlay = join(root, 'overlay.json');
    writeFileSync(
      overlay,
      JSON.stringify({ webhooks: { allow_private_networks: true, timeout_seconds: 60, initial_backoff_seconds: 0.05, max_backoff_seconds: 0.2 } }),
    );
    const rx = await WebhookReceiver.start();
    let served: ServedCli | undefined;
    try {
      served = await serveCli(dataDir, ['--config', overlay]);
      const token = await adminToken(served.base);
      const created = await call(served.base, 'POST', '/webhooks', token, { url: rx.url, subscriptions: [{ channel: 'events' }] });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      rx.secret = created.body.secret as string;
      rx.mode = 'hang';
      const ping = await call(served.base, 'POST', `/webhooks/${id}/ping`, token);
      const deliveryId = ping.body.delivery_id as string;
      await rx.next((h) => h.json?.id === deliveryId, 'the attempt in flight');

      served.child.kill('SIGKILL');
      expect(await served.exited).toBeNull();
      served = undefined;

      rx.mode = 'ok';
      served = await serveCli(dataDir, ['--config', overlay]);
      const token2 = await adminToken(served.base);
      const again = await rx.next((h) => h.json?.id === deliveryId && h.answered === 204, 'the delivery after the restart');
      expect(again.verified).toBe(true);
      expect(again.json).toMatchObject({ id: deliveryId, type: 'ping', webhook_id: id });
      const view = await until(async () => {
        const r = await call(served!.base, 'GET', `/webhooks/${id}`, token2);
        return (r.body.delivery as { pending: number }).pending === 0 ? r.body : undefined;
      }, 'an empty queue');
      expect(view.delivery).toMatchObject({ pending: 0, dead_letters: 0, delivered: 1 });
      // The hung attempt and the one that succeeded: the same id and body, nothing else.
      expect(rx.byId(deliveryId).map((h) => h.body)).toEqual([again.body, again.body]);
      expect(await served.stop()).toBe(0);
      served = undefined;
    } finally {
      if (served && !served.gone) served.child.kill('SIGKILL');
      await rx.close();
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
