import { scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SCRYPT, hashPassword, parsePasswordHash, verifyPassword } from '../../src/auth/passwords.js';

describe('passwords', () => {
  it('stores scrypt$N$r$p$salt$hash with a 16-byte salt and a 32-byte key', async () => {
    const h = await hashPassword('correct horse battery staple');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    const p = parsePasswordHash(h)!;
    expect(p.salt.length).toBe(16);
    expect(p.hash.length).toBe(32);
  });

  it('is plain scrypt: node scryptSync with the stored salt and parameters gives the stored hash', async () => {
    const h = await hashPassword('golden');
    const [, n, r, p, salt, hash] = h.split('$');
    const key = scryptSync(Buffer.from('golden'), Buffer.from(salt!, 'base64url'), 32, { N: Number(n), r: Number(r), p: Number(p) });
    expect(key.toString('base64url')).toBe(hash);
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const h = await hashPassword('s3cret');
    expect(await verifyPassword('s3cret', h)).toBe(true);
    expect(await verifyPassword('s3cret ', h)).toBe(false);
    expect(await verifyPassword('S3cret', h)).toBe(false);
    expect(await verifyPassword('', h)).toBe(false);
  });

  it('salts: the same password hashes differently each time, both verify', async () => {
    const [a, b] = await Promise.all([hashPassword('same'), hashPassword('same')]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same', a)).toBe(true);
    expect(await verifyPassword('same', b)).toBe(true);
  });

  it('matches composed and decomposed accents (NFC)', async () => {
    const h = await hashPassword('caf\u00e9');
    expect(await verifyPassword('cafe\u0301', h)).toBe(true);
  });

  it('honours other parameters, a 64-byte key included', async () => {
    const h = await hashPassword('x', { N: 1024, r: 8, p: 2, keyLength: 64 });
    expect(h.startsWith('scrypt$1024$8$2$')).toBe(true);
    expect(parsePasswordHash(h)!.hash.length).toBe(64);
    expect(await verifyPassword('x', h)).toBe(true);
    expect(await verifyPassword('y', h)).toBe(false);
  });

  it('refuses malformed or hostile stored hashes without throwing', async () => {
    const good = await hashPassword('pw');
    const parts = good.split('$');
    const bad = [
      '',
      'plain',
      good.replace('scrypt$', 'bcrypt$'),
      parts.slice(0, 5).join('$'),
      ['scrypt', '16383', ...parts.slice(2)].join('$'), // N not a power of two
      ['scrypt', String(2 ** 30), ...parts.slice(2)].join('$'), // would need 128 GiB
      ['scrypt', ...parts.slice(1, 4), 'not base64!', parts[5]].join('$'),
      ['scrypt', ...parts.slice(1, 5), Buffer.alloc(16).toString('base64url')].join('$'), // 16-byte key
    ];
    for (const s of bad) {
      expect(parsePasswordHash(s), s).toBeNull();
      expect(await verifyPassword('pw', s), s).toBe(false);
    }
  });

  it('refuses bad parameters when hashing', async () => {
    await expect(hashPassword('x', { ...DEFAULT_SCRYPT, N: 1000 })).rejects.toThrow(RangeError);
    await expect(hashPassword('x', { ...DEFAULT_SCRYPT, keyLength: 16 })).rejects.toThrow(RangeError);
  });
});
