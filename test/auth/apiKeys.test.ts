import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeyConfigError, ApiKeyStore, parseEnvApiKeys } from '../../src/auth/apiKeys.js';
import { fakeClock, tempDir } from './helpers.js';

const KEY = /^csk_([a-z0-9]{8})_([A-Za-z0-9_-]{43})$/;

describe('ApiKeyStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  const stores: ApiKeyStore[] = [];
  const open = (opts: ConstructorParameters<typeof ApiKeyStore>[1] = {}) => {
    const s = new ApiKeyStore(tmp.dir, opts);
    s.load();
    stores.push(s);
    return s;
  };
  const file = () => join(tmp.dir, 'api_keys.json');
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => {
    stores.splice(0).forEach((s) => s.close());
    tmp.cleanup();
  });

  it('creates csk_<id>_<secret> keys that verify with their role and name', () => {
    const s = open();
    const { key, info } = s.create('operator', 'ci runner');
    const m = KEY.exec(key)!;
    expect(m).not.toBeNull();
    expect(info).toMatchObject({ id: m[1], name: 'ci runner', role: 'operator', revokedAt: null, lastUsedAt: null, source: 'file' });
    expect(Buffer.from(m[2]!, 'base64url').length).toBe(32);
    expect(s.verify(key)).toEqual({ ok: true, key: { id: m[1], name: 'ci runner', role: 'operator' } });
    expect(s.create('viewer').info.name).toMatch(/^key-[a-z0-9]{8}$/);
  });

  it('stores only a SHA-256 of the secret, in a 0600 file; listings show neither', () => {
    const s = open();
    const { key, info } = s.create('admin', 'ops');
    const secret = KEY.exec(key)![2]!;
    const text = readFileSync(file(), 'utf8');
    expect(text).not.toContain(secret);
    expect(text).not.toContain(key);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(text) as { keys: Array<Record<string, unknown>> };
    expect(stored.keys[0]!.hash).toBe('sha256$' + createHash('sha256').update(secret).digest('base64url'));
    const listed = open().list();
    expect(listed).toHaveLength(1);
    expect(Object.keys(listed[0]!).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'role', 'source']);
    expect(listed[0]!.id).toBe(info.id);
    expect(JSON.stringify(listed)).not.toContain(secret);
  });

  it('refuses a wrong secret, an unknown id and garbage', () => {
    const s = open();
    const { key } = s.create('viewer');
    const last = key.at(-1) === 'A' ? 'B' : 'A';
    expect(s.verify(key.slice(0, -1) + last)).toEqual({ ok: false, reason: 'invalid_api_key' });
    expect(s.verify('csk_zzzzzzzz_' + key.slice(13))).toEqual({ ok: false, reason: 'invalid_api_key' });
    expect(s.verify('whatever-but-long-enough')).toEqual({ ok: false, reason: 'invalid_api_key' });
    expect(s.verify('')).toEqual({ ok: false, reason: 'malformed_api_key' });
    expect(s.verify('has space')).toEqual({ ok: false, reason: 'malformed_api_key' });
    expect(s.verify('x'.repeat(10_000))).toEqual({ ok: false, reason: 'malformed_api_key' });
  });

  it('revokes: the key stays listed with revokedAt and is refused', () => {
    const clock = fakeClock();
    const s = open({ now: clock.now });
    const { key, info } = s.create('operator');
    expect(s.revoke(info.id)).toBe('revoked');
    expect(s.revoke(info.id)).toBe('already_revoked');
    expect(s.revoke('nosuchid')).toBe('not_found');
    expect(s.revoke('../../etc')).toBe('not_found');
    expect(s.verify(key)).toEqual({ ok: false, reason: 'api_key_revoked' });
    expect(open().list()[0]!.revokedAt).toBe(new Date(clock.now()).toISOString());
  });

  it('notices a revocation by another process within a second, and a new key at once', () => {
    const clock = fakeClock();
    const server = open({ now: clock.now });
    const cli = open({ now: clock.now });
    const { key, info } = cli.create('viewer', 'from cli');
    // A miss reloads at once.
    expect(server.verify(key)).toMatchObject({ ok: true, key: { id: info.id, name: 'from cli' } });
    cli.revoke(info.id);
    // Within the second the file is not looked at again (no stat per request)...
    expect(server.verify(key).ok).toBe(true);
    clock.advance(1000);
    // ...after it, the revocation is seen.
    expect(server.verify(key)).toEqual({ ok: false, reason: 'api_key_revoked' });
  });

  it('keeps lastUsedAt in memory and writes it lazily, never once per request', () => {
    const clock = fakeClock();
    const s = open({ now: clock.now, usageFlushSeconds: 60 });
    const { key, info } = s.create('viewer');
    const writes = s.stats().writes;
    for (let i = 0; i < 100; i++) expect(s.verify(key).ok).toBe(true);
    expect(s.stats().writes).toBe(writes);
    expect(open().list()[0]!.lastUsedAt).toBeNull();
    expect(s.list()[0]!.lastUsedAt).toBe(new Date(clock.now()).toISOString());
    expect(s.flushUsage()).toBe(true);
    expect(s.stats().writes).toBe(writes + 1);
    expect(
      open()
        .list()
        .find((k) => k.id === info.id)!.lastUsedAt,
    ).toBe(new Date(clock.now()).toISOString());
    // Nothing new: nothing to write.
    expect(s.flushUsage()).toBe(true);
    expect(s.stats().writes).toBe(writes + 1);
  });

  it('a usage flush never undoes a change another process made meanwhile', () => {
    const clock = fakeClock();
    const server = open({ now: clock.now });
    const cli = open({ now: clock.now });
    const { key, info } = server.create('operator');
    server.verify(key);
    cli.revoke(info.id);
    const other = cli.create('viewer', 'made meanwhile');
    server.flushUsage();
    const listed = open().list();
    expect(listed.map((k) => k.id).sort()).toEqual([info.id, other.info.id].sort());
    const mine = listed.find((k) => k.id === info.id)!;
    expect(mine.revokedAt).not.toBeNull();
    expect(mine.lastUsedAt).toBe(new Date(clock.now()).toISOString());
  });

  it('waits for the file lock: a busy lock defers the usage flush, a stale one is broken', () => {
    const s = open();
    const { key, info } = s.create('viewer');
    s.verify(key);
    const lock = file() + '.lock';
    writeFileSync(lock, '99999\n');
    const writes = s.stats().writes;
    expect(s.flushUsage()).toBe(false);
    expect(s.stats().writes).toBe(writes);
    expect(existsSync(lock)).toBe(true);
    // A lock left by a process that died long ago does not block anyone forever.
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    expect(s.flushUsage()).toBe(true);
    expect(s.stats().writes).toBe(writes + 1);
    expect(existsSync(lock)).toBe(false);
    expect(
      open()
        .list()
        .find((k) => k.id === info.id)!.lastUsedAt,
    ).not.toBeNull();
  });

  it('keeps working on its last good keys when the file is edited into bad JSON', () => {
    const clock = fakeClock();
    const s = open({ now: clock.now });
    const { key } = s.create('viewer');
    writeFileSync(file(), '{ "keys": [');
    clock.advance(1000);
    expect(s.verify(key).ok).toBe(true);
    expect(s.stats().reloadError).toMatch(/not valid JSON/);
  });

  describe('CSIPOSE_API_KEYS', () => {
    it('adds env keys in memory only, with their roles', () => {
      const s = open({ envKeys: 'abcdefghijklmnop:viewer, 0123456789ABCDEF-xyz:admin,' });
      expect(s.verify('abcdefghijklmnop')).toEqual({ ok: true, key: { id: 'env-1', name: 'CSIPOSE_API_KEYS[1]', role: 'viewer' } });
      expect(s.verify('0123456789ABCDEF-xyz')).toMatchObject({ ok: true, key: { id: 'env-2', role: 'admin' } });
      expect(s.list().map((k) => [k.id, k.source])).toEqual([
        ['env-1', 'env'],
        ['env-2', 'env'],
      ]);
      expect(existsSync(file())).toBe(false);
      s.create('viewer');
      expect(readFileSync(file(), 'utf8')).not.toContain('abcdefghijklmnop');
      expect(s.revoke('env-1')).toBe('env');
      expect(s.verify('abcdefghijklmnop').ok).toBe(true);
    });

    it('parses KEY:ROLE lists, ignoring blanks', () => {
      expect(parseEnvApiKeys(undefined)).toEqual([]);
      expect(parseEnvApiKeys('  ')).toEqual([]);
      expect(parseEnvApiKeys('k0123456789abcdef:operator,')).toEqual([{ key: 'k0123456789abcdef', role: 'operator' }]);
    });

    it.each([
      ['no colon', 'k0123456789abcdef', /entry 1: expected KEY:ROLE/],
      ['empty key', ':admin', /entry 1: expected KEY:ROLE/],
      ['unknown role', 'k0123456789abcdef:viewer,k0123456789abcdeg:root', /entry 2: unknown role "root"/],
      ['short key', 'short:viewer', /entry 1: the key has 5 characters/],
      ['inner whitespace', 'k0123456 789abcdef:viewer', /whitespace/],
      ['duplicate', 'k0123456789abcdef:viewer,k0123456789abcdef:admin', /entry 2: the same key as entry 1/],
    ])('refuses %s with a clear error that does not show the key', (_name, value, message) => {
      let err: unknown;
      try {
        new ApiKeyStore(tmp.dir, { envKeys: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiKeyConfigError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('k0123456789abcde');
    });
  });
});
