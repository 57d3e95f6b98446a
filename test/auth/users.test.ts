import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileSignature, StoreFileError } from '../../src/auth/jsonFile.js';
import { verifyPassword } from '../../src/auth/passwords.js';
import { UserStore } from '../../src/auth/users.js';
import { tempDir } from './helpers.js';

describe('UserStore: admin bootstrap', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  const open = () => {
    const s = new UserStore(tmp.dir);
    s.load();
    return s;
  };

  it('with CSIPOSE_ADMIN_PASSWORD set: admin gets that password, stored hashed, file mode 0600', async () => {
    const s = open();
    expect(await s.bootstrapAdmin('env-pass-123')).toEqual({});
    const admin = s.get('admin')!;
    expect(admin.role).toBe('admin');
    expect(await verifyPassword('env-pass-123', admin.passwordHash)).toBe(true);
    const path = join(tmp.dir, 'users.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain('env-pass-123');
    const stored = JSON.parse(text) as { users: Array<Record<string, unknown>> };
    expect(Object.keys(stored.users[0]!).sort()).toEqual(['createdAt', 'passwordHash', 'role', 'username']);
  });

  it('unset: a random password is generated, returned once, persisted; a restart keeps it', async () => {
    const first = await open().bootstrapAdmin(undefined);
    expect(first.generatedPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const stored = open().get('admin')!;
    expect(await verifyPassword(first.generatedPassword!, stored.passwordHash)).toBe(true);

    const again = open();
    const sig = fileSignature(join(tmp.dir, 'users.json'));
    expect(await again.bootstrapAdmin(undefined)).toEqual({});
    expect(again.get('admin')!.passwordHash).toBe(stored.passwordHash);
    expect(fileSignature(join(tmp.dir, 'users.json'))).toBe(sig);
  });

  it('an empty CSIPOSE_ADMIN_PASSWORD counts as unset', async () => {
    const r = await open().bootstrapAdmin('');
    expect(r.generatedPassword).toBeDefined();
  });

  it('set on a later start: the stored admin hash is replaced; the same value leaves the file alone', async () => {
    const { generatedPassword } = await open().bootstrapAdmin(undefined);
    const s = open();
    await s.bootstrapAdmin('new-pass-456');
    const h = open().get('admin')!.passwordHash;
    expect(await verifyPassword('new-pass-456', h)).toBe(true);
    expect(await verifyPassword(generatedPassword!, h)).toBe(false);

    const sig = fileSignature(join(tmp.dir, 'users.json'));
    await open().bootstrapAdmin('new-pass-456');
    expect(fileSignature(join(tmp.dir, 'users.json'))).toBe(sig);
  });

  it('keeps other users and restores the admin role of the admin account', async () => {
    const s = open();
    await s.bootstrapAdmin('pw-admin');
    await s.create('alice', 'viewer', 'pw-alice');
    const raw = JSON.parse(readFileSync(join(tmp.dir, 'users.json'), 'utf8')) as { users: Array<{ username: string; role: string }> };
    raw.users.find((u) => u.username === 'admin')!.role = 'viewer';
    writeFileSync(join(tmp.dir, 'users.json'), JSON.stringify(raw));
    const t = open();
    await t.bootstrapAdmin(undefined);
    expect(t.get('admin')!.role).toBe('admin');
    expect(t.get('alice')!.role).toBe('viewer');
    expect(await verifyPassword('pw-alice', open().get('alice')!.passwordHash)).toBe(true);
    expect(t.list().map((u) => u.username)).toEqual(['admin', 'alice']);
    expect(t.list()[0]).not.toHaveProperty('passwordHash');
  });

  it('refuses to start on a malformed users.json rather than overwrite it', async () => {
    writeFileSync(join(tmp.dir, 'users.json'), '{"users": [');
    expect(() => open()).toThrow(StoreFileError);
    writeFileSync(join(tmp.dir, 'users.json'), JSON.stringify({ users: [{ username: 'admin', role: 'root', passwordHash: 'x', createdAt: '' }] }));
    expect(() => open()).toThrow(/users\[0\] is malformed/);
  });

  it('refuses bad user names, roles and duplicates', async () => {
    const s = open();
    await expect(s.create('bad name', 'viewer', 'pw')).rejects.toThrow(RangeError);
    await expect(s.create('bob', 'root' as never, 'pw')).rejects.toThrow(RangeError);
    await s.create('bob', 'operator', 'pw');
    await expect(s.create('bob', 'viewer', 'pw')).rejects.toThrow(/exists/);
  });
});
