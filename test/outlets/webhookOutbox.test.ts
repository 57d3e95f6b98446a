/**
 * The webhooks' outbox journal and address rules on their own, with real files in a temp dir.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Outbox, type Delivery } from '../../src/outlets/webhook/outbox.js';
import { AddressPolicy } from '../../src/outlets/webhook/ssrf.js';

function delivery(id: string, webhookId = 'wh_1'): Delivery {
  return {
    id,
    webhookId,
    type: 'ping',
    body: `{"id":"${id}"}`,
    createdAt: 1,
    attempts: 0,
    nextAt: 1,
    state: 'pending',
    lastStatus: 0,
    lastError: '',
    deadAt: 0,
    deadReason: '',
  };
}

describe('the outbox journal', () => {
  const dirs: string[] = [];
  const journal = () => {
    const d = mkdtempSync(join(tmpdir(), 'csipose-outbox-'));
    dirs.push(d);
    return join(d, 'webhooks', 'outbox.jsonl');
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('gives back after reopening what was put and not removed, each at its latest state; the file is 0600', () => {
    const path = journal();
    const o = Outbox.open(path);
    o.put(delivery('a'));
    o.put(delivery('b'));
    o.put(delivery('c'));
    const b = o.get('b')!;
    b.attempts = 3;
    b.state = 'dead';
    o.put(b);
    o.remove('a');
    o.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = Outbox.open(path);
    expect([...again.deliveries()].map((d) => [d.id, d.attempts, d.state])).toEqual([
      ['c', 0, 'pending'],
      ['b', 3, 'dead'],
    ]);
    again.close();
  });

  it('skips a line torn by a crash and keeps the rest', () => {
    const path = journal();
    const o = Outbox.open(path);
    o.put(delivery('a'));
    o.close();
    appendFileSync(path, '{"op":"put","d":{"id":"whd_to');
    const again = Outbox.open(path);
    expect(again.skipped).toBe(1);
    expect([...again.deliveries()].map((d) => d.id)).toEqual(['a']);
    again.close();
    // Rewritten compact at open: the torn line is gone.
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('stays compact: thousands of deliveries put and removed leave a journal of the live ones', () => {
    const path = journal();
    const o = Outbox.open(path);
    for (let i = 0; i < 5000; i++) {
      o.put(delivery(`d${i}`));
      if (i % 100 !== 0) o.remove(`d${i}`);
    }
    o.close();
    const lines = readFileSync(path, 'utf8').trim().split('\n').length;
    expect(lines).toBeLessThan(2 * 1000 + 4 * 50);
    const again = Outbox.open(path);
    expect([...again.deliveries()].map((d) => d.id)).toEqual(Array.from({ length: 50 }, (_, k) => `d${k * 100}`));
    again.close();
  });
});

describe('the address rules', () => {
  const p = new AddressPolicy();
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.10', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.1.1', 'shared (carrier-grade NAT)'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fd12:3456::1', 'private (unique local)'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::7f00:1', 'loopback (IPv4 127.0.0.1 inside IPv6)'],
    ['2002:a00:1::1', 'private (IPv4 10.0.0.1 inside IPv6)'],
  ])('refuses %s (%s)', (ip, why) => {
    expect(p.refusal(ip)).toBe(why);
  });

  it.each(['1.1.1.1', '8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'allows the public address %s',
    (ip) => {
      expect(p.refusal(ip)).toBeUndefined();
    },
  );
});
