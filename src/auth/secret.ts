import { randomBytes } from 'node:crypto';
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile, StoreFileError, withFileLock, writeJsonAtomic } from './jsonFile.js';

/**
 * The token signing secret of a deployment without `CSIPOSE_JWT_SECRET`: generated once and kept
 * in `<dataDir>/jwt_secret.json` (mode 0600), so that tokens survive a restart. Removing the file
 * signs everyone out at the next start.
 */

/** The file's name in the data directory. */
export const SECRET_FILE = 'jwt_secret.json';

const FILE_VERSION = 1;
/** 256 bits, the size of the HMAC-SHA-256 output; the token service refuses fewer than 32 bytes. */
const SECRET_BYTES = 32;
const B64URL = /^[A-Za-z0-9_-]+$/;
const LOCK_WAIT_MS = 5000;

function parse(path: string, raw: unknown): Buffer {
  const secret = (raw as { secret?: unknown } | null)?.secret;
  if (typeof raw !== 'object' || raw === null || typeof secret !== 'string' || !B64URL.test(secret)) {
    throw new StoreFileError(`${path}: expected {"version": 1, "secret": "<base64url>"}; fix or remove it (removing it signs everyone out)`);
  }
  const bytes = Buffer.from(secret, 'base64url');
  if (bytes.length < SECRET_BYTES) {
    throw new StoreFileError(
      `${path}: the secret is ${bytes.length} bytes, at least ${SECRET_BYTES} are needed; fix or remove it (removing it signs everyone out)`,
    );
  }
  return bytes;
}

/**
 * Reads the deployment's signing secret, generating and storing it on first use. Two processes
 * starting together on a fresh data directory agree on one secret (the file lock).
 * @param dataDir the data directory (must exist)
 * @param now clock in ms (the file's `createdAt`)
 * @returns the secret's bytes
 * @throws StoreFileError when the file is unreadable, malformed or holds a short secret: it is
 *   never replaced silently, since that would sign everyone out
 */
export function loadOrCreateSecret(dataDir: string, now: () => number = Date.now): Buffer {
  const path = join(dataDir, SECRET_FILE);
  const secret = withFileLock(
    path,
    () => {
      const raw = readJsonFile(path);
      if (raw !== undefined) return parse(path, raw);
      const bytes = randomBytes(SECRET_BYTES);
      writeJsonAtomic(path, { version: FILE_VERSION, secret: bytes.toString('base64url'), createdAt: new Date(now()).toISOString() });
      return bytes;
    },
    LOCK_WAIT_MS,
  );
  if (!secret) throw new StoreFileError(`${path}: could not take ${path}.lock within ${LOCK_WAIT_MS} ms`);
  // A copy restored from a backup may have come back readable by others; the secret forges tokens.
  try {
    if (statSync(path).mode & 0o077) chmodSync(path, 0o600);
  } catch {
    /* best effort: the file was read, the service can run */
  }
  return secret;
}
