import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

/**
 * Small JSON files holding secrets-adjacent data (`users.json`, `api_keys.json`): atomic writes
 * with mode 0600, change detection, and an advisory lock so that the server and the
 * `csipose keys` command never lose each other's updates.
 */

/** A store file could not be read or written; the message names the file. */
export class StoreFileError extends Error {
  override readonly name = 'StoreFileError';
}

/**
 * Reads and parses a JSON file.
 * @param path the file
 * @returns the parsed value, or undefined when the file does not exist
 * @throws StoreFileError when it exists but cannot be read or is not JSON (never silently treated
 *   as empty: that would let the next write destroy its contents)
 */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StoreFileError(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new StoreFileError(`${path} is not valid JSON (${(e as Error).message}); fix or remove it`);
  }
}

/**
 * Writes a value as JSON so that readers see either the old file or the new one, never a torn
 * one: a temp file in the same directory, fsync, rename over the target. The file is created
 * with mode 0600 (owner read/write only) whatever it had before.
 * @param path the target file; its directory is created (mode 0700) when missing
 * @param value anything JSON.stringify accepts
 */
export function writeJsonAtomic(path: string, value: unknown): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    // The umask may only remove bits, but be explicit in case the file system ignores the mode.
    fchmodSync(fd, 0o600);
    writeSync(fd, JSON.stringify(value, null, 2) + '\n');
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
  // Make the rename itself durable; not every file system lets a directory be fsynced.
  try {
    const dfd = openSync(dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    /* best effort */
  }
}

/**
 * A cheap fingerprint of a file's identity and contents: every atomic write renames a new inode
 * into place, so the inode alone changes even when two writes land in the same millisecond.
 * @param path the file
 * @returns `ino:size:mtimeMs`, or `absent` when the file does not exist
 */
export function fileSignature(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'absent';
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A lock older than this is taken to belong to a process that died holding it. */
const STALE_LOCK_MS = 10_000;

/**
 * Runs `fn` holding an advisory lock `<path>.lock` (created with O_EXCL). Every writer of `path`
 * takes it around its read-modify-write, so concurrent writers (the server flushing usage, the
 * CLI revoking a key) serialize instead of overwriting each other.
 * @param path the file the lock protects
 * @param fn the critical section (synchronous)
 * @param waitMs how long to wait for a busy lock; 0 tries once
 * @returns fn's result, or undefined when the lock stayed busy for `waitMs`
 */
export function withFileLock<T>(path: string, fn: () => T, waitMs: number): T | undefined {
  const lock = `${path}.lock`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + waitMs;
  for (;;) {
    let fd: number | undefined;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    if (fd !== undefined) {
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      try {
        return fn();
      } finally {
        try {
          unlinkSync(lock);
        } catch {
          /* removed as stale by someone else */
        }
      }
    }
    try {
      if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) {
        unlinkSync(lock);
        continue;
      }
    } catch {
      continue; // released between our open and stat: try again at once
    }
    if (Date.now() >= deadline) return undefined;
    sleepSync(10);
  }
}
