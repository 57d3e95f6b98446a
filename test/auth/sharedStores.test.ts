/**
 * The seams through which a node's stores share state with the other api nodes (src/auth/shared.ts),
 * without Redis: two stores in two data directories stand for two nodes, and what one hands out
 * through `share` is given to the other as the shared store would.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeyStore, type StoredKey } from '../../src/auth/apiKeys.js';
import { TokenService } from '../../src/auth/tokens.js';
import { UserStore, type User } from '../../src/auth/users.js';
import { fakeClock, tempDir } from './helpers.js';

describe('ApiKeyStore.merge: copies of keys agree whatever order changes arrive in', () => {
  let tmp: ReturnType<typeof tempDir>;
  const stores: ApiKeyStore[] = [];
  const open = (name: string, clock = fakeClock()) => {
    const s = new ApiKeyStore(join(tmp.dir, name), { now: clock.now });
    s.load();
    stores.push(s);
    return s;
  };
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => {
    stores.splice(0).forEach((s) => s.close());
    tmp.cleanup();
  });

  it('a key made on one node verifies on the other, and survives that node reading its file again', () => {
    const a = open('a');
    const b = open('b');
    const { key } = a.create('operator', 'ci');
    expect(b.verify(key)).toEqual({ ok: false, reason: 'invalid_api_key' });
    expect(b.merge(a.stored())).toBe(true);
    expect(b.verify(key)).toMatchObject({ ok: true, key: { role: 'operator', name: 'ci' } });
    // Written into b's own file: another store on b's directory has it.
    expect(open('b').verify(key)).toMatchObject({ ok: true });
    expect(b.merge(a.stored())).toBe(false);
  });

  it('the earlier revocation and the later use win; an older copy never brings a key back', () => {
    const clock = fakeClock();
    const a = open('a', clock);
    const b = open('b', clock);
    const { key, info } = a.create('viewer');
    b.merge(a.stored());
    const beforeRevocation = a.stored();
    clock.advance(1000);
    expect(a.revoke(info.id)).toBe('revoked');
    b.merge(a.stored());
    expect(b.verify(key)).toEqual({ ok: false, reason: 'api_key_revoked' });
    // The copy from before the revocation arrives late: still revoked.
    expect(b.merge(beforeRevocation)).toBe(false);
    expect(b.verify(key)).toEqual({ ok: false, reason: 'api_key_revoked' });
    // A use on one node is taken over by the other; an older use is not.
    const c = open('c', clock);
    const d = open('d', clock);
    const k2 = c.create('viewer');
    d.merge(c.stored());
    clock.advance(5000);
    expect(c.verify(k2.key).ok).toBe(true);
    const used = c.stored().find((k) => k.id === k2.info.id)!.lastUsedAt;
    expect(d.merge(c.stored())).toBe(true);
    expect(d.list().find((k) => k.id === k2.info.id)!.lastUsedAt).toBe(used);
    const stale: StoredKey[] = c.stored().map((k) => ({ ...k, lastUsedAt: new Date(Date.parse(used!) - 1000).toISOString() }));
    expect(d.merge(stale)).toBe(false);
  });

  it('ignores another secret under a known id, and malformed entries', () => {
    const a = open('a');
    const b = open('b');
    const { key, info } = a.create('admin');
    b.merge(a.stored());
    const forged = a.stored().map((k) => ({ ...k, hash: 'sha256$' + Buffer.alloc(32, 7).toString('base64url'), revokedAt: '2020-01-01T00:00:00.000Z' }));
    expect(b.merge([...forged, { id: 'nonsense' }, null, 'x'])).toBe(false);
    expect(b.verify(key)).toMatchObject({ ok: true, key: { id: info.id } });
  });

  it('hands every write, and a change another writer made to the file, to the shared store', () => {
    const clock = fakeClock();
    const a = open('a', clock);
    const handed: StoredKey[][] = [];
    a.share((keys) => handed.push(keys));
    const { info } = a.create('viewer');
    expect(handed.at(-1)!.map((k) => k.id)).toEqual([info.id]);
    a.revoke(info.id);
    expect(handed.at(-1)![0]!.revokedAt).not.toBeNull();
    // `csipose keys create` on the same directory: another store writes the file.
    const cli = new ApiKeyStore(join(tmp.dir, 'a'));
    cli.load();
    const made = cli.create('operator').info.id;
    clock.advance(1000);
    a.list(); // a lookup (or the once-a-second watch) finds the file changed
    expect(
      handed
        .at(-1)!
        .map((k) => k.id)
        .sort(),
    ).toEqual([info.id, made].sort());
    // What came from the shared store is not handed back.
    const n = handed.length;
    const other = open('o');
    other.create('viewer');
    a.merge(other.stored());
    expect(handed.length).toBe(n);
  });
});

describe('UserStore.adopt: the shared record of a user wins', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  it('adopting the first node admin keeps one token generation for the same password; another password replaces it for all', async () => {
    const a = new UserStore(join(tmp.dir, 'a'));
    const b = new UserStore(join(tmp.dir, 'b'));
    a.load();
    b.load();
    const handed: User[][] = [];
    a.share((u) => handed.push(u));
    await a.bootstrapAdmin('same-password-123');
    expect(handed.at(-1)!.map((u) => u.username)).toEqual(['admin']);
    // Node b starts: it adopts the shared admin before its own bootstrap, which then keeps it.
    expect(b.adopt(a.records())).toBe(true);
    expect(await b.bootstrapAdmin('same-password-123')).toEqual({});
    expect(b.generation('admin')).toBe(a.generation('admin'));
    const reloaded = new UserStore(join(tmp.dir, 'b'));
    reloaded.load();
    expect(reloaded.generation('admin')).toBe(a.generation('admin'));
    // A node started with another password sets it for every node.
    const bHanded: User[][] = [];
    b.share((u) => bHanded.push(u));
    await b.bootstrapAdmin('another-password-456');
    expect(a.adopt(bHanded.at(-1)!)).toBe(true);
    expect(a.generation('admin')).toBe(b.generation('admin'));
    expect(a.adopt([{ username: 'admin', role: 'root' }, 5])).toBe(false);
  });
});

describe('TokenService.learnDenied', () => {
  it('refuses a token another node revoked, cached or not; expired entries are ignored', async () => {
    const clock = fakeClock();
    const secret = 'a-secret-shared-by-two-nodes-0123456789';
    const a = new TokenService({ secret, now: clock.now });
    const b = new TokenService({ secret, now: clock.now });
    const t = (await a.issue('admin', 'admin')).accessToken;
    const v = b.verify(t);
    expect(v.ok).toBe(true);
    expect(await a.revoke(t)).toBe('access');
    expect(b.verify(t)).toMatchObject({ ok: true });
    b.learnDenied(a.deniedEntries());
    expect(b.verify(t)).toEqual({ ok: false, reason: 'revoked' });
    b.learnDenied([['old', Math.floor(clock.now() / 1000) - 1]]);
    expect(b.deniedEntries().map(([j]) => j)).toEqual([v.ok ? v.claims.jti : '']);
  });
});
