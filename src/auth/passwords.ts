import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing with scrypt (node:crypto). A stored hash describes itself:
 * `scrypt$N$r$p$salt$hash` with salt and hash in base64url, so that the cost can be raised later
 * and old hashes still verify.
 */

/** The cost parameters of a hash. */
export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  N: number;
  /** Block size. */
  r: number;
  /** Parallelism. */
  p: number;
  /** Derived key length in bytes (32-64). */
  keyLength: number;
}

/** The parameters new hashes use: 16 MiB and roughly 50 ms per hash on a small server core. */
export const DEFAULT_SCRYPT: Readonly<ScryptParams> = Object.freeze({ N: 16384, r: 8, p: 1, keyLength: 32 });

const SALT_BYTES = 16;
/** A hash read from a file is refused beyond these, so that a hostile file cannot ask for GiBs. */
const MAX_MEMORY = 256 * 1024 * 1024;
/** Longer passwords are refused: no one types them, and they only serve to waste CPU. */
const MAX_PASSWORD_BYTES = 4096;
const B64URL = /^[A-Za-z0-9_-]+$/;

function derive(password: Buffer, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    // Node's default limit is 32 MiB; give scrypt what these parameters need plus headroom.
    maxmem: 128 * params.N * params.r * params.p + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    scrypt(password, salt, params.keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

function passwordBytes(password: string): Buffer {
  // NFC so that the same password typed on two systems that compose accents differently matches.
  return Buffer.from(password.normalize('NFC'), 'utf8');
}

/**
 * Hashes a password with a fresh random salt.
 * @param password the plain password
 * @param params cost parameters (default {@link DEFAULT_SCRYPT})
 * @returns the self-describing hash string `scrypt$N$r$p$salt$hash`
 * @example await hashPassword('s3cret') // 'scrypt$16384$8$1$Jm1...$x9Q...'
 */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  if (!validParams(params)) throw new RangeError('scrypt parameters out of range');
  const pw = passwordBytes(password);
  if (pw.length > MAX_PASSWORD_BYTES) throw new RangeError(`password longer than ${MAX_PASSWORD_BYTES} bytes`);
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(pw, salt, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

function validParams(p: ScryptParams): boolean {
  return (
    Number.isInteger(p.N) &&
    p.N >= 2 &&
    (p.N & (p.N - 1)) === 0 &&
    Number.isInteger(p.r) &&
    p.r >= 1 &&
    Number.isInteger(p.p) &&
    p.p >= 1 &&
    p.p <= 16 &&
    Number.isInteger(p.keyLength) &&
    p.keyLength >= 32 &&
    p.keyLength <= 64 &&
    128 * p.N * p.r * p.p <= MAX_MEMORY
  );
}

/** A parsed stored hash. */
export interface ParsedPasswordHash extends ScryptParams {
  salt: Buffer;
  hash: Buffer;
}

/**
 * Parses a stored hash string.
 * @param stored a string from {@link hashPassword}
 * @returns its parameters, salt and hash, or null when it is not a well-formed scrypt hash with
 *   parameters in the accepted range
 */
export function parsePasswordHash(stored: string): ParsedPasswordHash | null {
  if (typeof stored !== 'string' || stored.length > 512) return null;
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  if (!/^\d{1,9}$/.test(n) || !/^\d{1,4}$/.test(r) || !/^\d{1,3}$/.test(p)) return null;
  if (!B64URL.test(salt) || !B64URL.test(hash)) return null;
  const saltBytes = Buffer.from(salt, 'base64url');
  const hashBytes = Buffer.from(hash, 'base64url');
  const parsed = { N: Number(n), r: Number(r), p: Number(p), keyLength: hashBytes.length, salt: saltBytes, hash: hashBytes };
  if (saltBytes.length < 8 || !validParams(parsed)) return null;
  return parsed;
}

/**
 * Checks a password against a stored hash in constant time (for a given hash length).
 * @param password the password to check
 * @param stored a string from {@link hashPassword}
 * @returns true when the password matches; false when it does not or when `stored` is malformed
 * @example await verifyPassword('s3cret', await hashPassword('s3cret')) // true
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (!parsed || typeof password !== 'string') return false;
  const pw = passwordBytes(password);
  if (pw.length > MAX_PASSWORD_BYTES) return false;
  const key = await derive(pw, parsed.salt, parsed);
  return timingSafeEqual(key, parsed.hash);
}
