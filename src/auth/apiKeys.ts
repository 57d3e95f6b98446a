import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { isRole, ROLES, type Role } from './roles.js';
import { fileSignature, readJsonFile, StoreFileError, withFileLock, writeJsonAtomic } from './jsonFile.js';

/**
 * API keys: `csk_<id>_<secret>`, `id` 8 characters of `[a-z0-9]` (not secret, shown by
 * `keys list`), `secret` 32 random bytes in base64url (43 characters).
 *
 * Keys live in `<dataDir>/api_keys.json` with only a SHA-256 of the secret. A fast unsalted hash
 * is enough here, unlike for passwords: the secret carries 256 bits of entropy, so neither a
 * dictionary nor brute force nor a precomputed table can invert the hash of a file that leaks,
 * and a slow KDF would only add milliseconds to every request. Lookup is O(1) by id, then one
 * SHA-256 and a constant-time comparison.
 *
 * The `csipose keys` command edits the file while the server runs: the store reloads it when its
 * fingerprint changes (checked at most once a second, and at once on a lookup miss), and every
 * writer takes `api_keys.json.lock` around read-modify-write so no update is lost.
 *
 * Several api nodes share their keys (config `redis.url`) through {@link ApiKeyStore.share}:
 * every write of the file is handed to the shared store, and what the shared store holds is
 * merged in ({@link ApiKeyStore.merge}). The merge of two copies of a key keeps the earlier
 * revocation and the later use, so copies agree whatever order the writes arrive in: a key
 * created on any node exists everywhere, a key revoked on any node is revoked everywhere.
 */

/** Prefix of keys made by {@link ApiKeyStore.create}; also lets secret scanners spot them. */
export const API_KEY_PREFIX = 'csk_';
const KEY_FORMAT = /^csk_([a-z0-9]{8})_([A-Za-z0-9_-]{43})$/;
const ID_FORMAT = /^[a-z0-9]{8}$/;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const HASH_PREFIX = 'sha256$';
const FILE_VERSION = 1;
const MAX_KEY_LENGTH = 512;
const MIN_ENV_KEY_LENGTH = 16;
const MAX_NAME_LENGTH = 100;
const LOCK_WAIT_MS = 5000;
const RELOAD_CHECK_MS = 1000;

/** What listings show of a key: never the secret or its hash. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  role: Role;
  /** ISO 8601. */
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** `file`: in api_keys.json; `env`: from CSIPOSE_API_KEYS, in memory only. */
  source: 'file' | 'env';
}

/** Why a key was refused (for logs; HTTP answers 401 for all). */
export type ApiKeyFailure = 'malformed_api_key' | 'invalid_api_key' | 'api_key_revoked';

/** The outcome of {@link ApiKeyStore.verify}. */
export type ApiKeyVerifyResult = { ok: true; key: { id: string; name: string; role: Role } } | { ok: false; reason: ApiKeyFailure };

/** CSIPOSE_API_KEYS is malformed; the message names the entry but never shows the key. */
export class ApiKeyConfigError extends Error {
  override readonly name = 'ApiKeyConfigError';
}

interface LiveKey {
  id: string;
  name: string;
  role: Role;
  hash: Buffer;
  createdAt: string;
  revokedAt: string | null;
  lastUsedMs: number | null;
  source: 'file' | 'env';
}

/** A key as `api_keys.json` (and the shared store) holds it. */
export interface StoredKey {
  id: string;
  name: string;
  role: Role;
  hash: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function hasBadChars(s: string): boolean {
  // Whitespace or control characters in a key are always a copy-paste accident.
  return /[\s\p{Cc}]/u.test(s);
}

/**
 * Parses `CSIPOSE_API_KEYS=key1:role,key2:role`. Empty entries (a trailing comma) are ignored.
 * @param value the variable's value (undefined or blank: no keys)
 * @returns the keys with their roles, in order
 * @throws ApiKeyConfigError for an entry without `:`, an unknown role, a key shorter than 16
 *   characters or containing whitespace, or a key given twice
 * @example parseEnvApiKeys('0123456789abcdef:viewer') // [{ key: '0123456789abcdef', role: 'viewer' }]
 */
export function parseEnvApiKeys(value: string | undefined): Array<{ key: string; role: Role }> {
  const out: Array<{ key: string; role: Role }> = [];
  if (!value || !value.trim()) return out;
  const seen = new Map<string, number>();
  value.split(',').forEach((raw, i) => {
    const entry = raw.trim();
    const n = i + 1;
    if (!entry) return;
    const colon = entry.lastIndexOf(':');
    if (colon <= 0) throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: expected KEY:ROLE`);
    const key = entry.slice(0, colon).trim();
    const role = entry.slice(colon + 1).trim();
    if (!isRole(role)) {
      throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: unknown role "${role.slice(0, 20)}" (${ROLES.join(', ')})`);
    }
    if (key.length < MIN_ENV_KEY_LENGTH) {
      throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: the key has ${key.length} characters; use a random key of at least ${MIN_ENV_KEY_LENGTH}`);
    }
    if (key.length > MAX_KEY_LENGTH) {
      throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: the key is longer than ${MAX_KEY_LENGTH} characters`);
    }
    if (hasBadChars(key)) throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: the key contains whitespace or control characters`);
    const prev = seen.get(key);
    if (prev !== undefined) throw new ApiKeyConfigError(`CSIPOSE_API_KEYS entry ${n}: the same key as entry ${prev}`);
    seen.set(key, n);
    out.push({ key, role });
  });
  return out;
}

function newId(): string {
  let id = '';
  while (id.length < 8) {
    for (const b of randomBytes(16)) {
      // 252 = 7 * 36: rejecting the top values keeps every character equally likely.
      if (b < 252 && id.length < 8) id += ID_ALPHABET[b % 36];
    }
  }
  return id;
}

function validName(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_NAME_LENGTH && !/\p{Cc}/u.test(name);
}

/** Options of {@link ApiKeyStore}. */
export interface ApiKeyStoreOptions {
  /** The value of CSIPOSE_API_KEYS: keys added in memory, never persisted. */
  envKeys?: string;
  /** Shortest time between two writes of `lastUsedAt` (default 60 s). */
  usageFlushSeconds?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

/** Counters for `stats()`. */
export interface ApiKeyStats {
  fileKeys: number;
  envKeys: number;
  reloads: number;
  writes: number;
  /** The last failed reload (a file edited into bad JSON); the previous keys stay in force. */
  reloadError: string | null;
}

/**
 * The API key store. One per process; the server and `csipose keys` each open their own on the
 * same directory.
 *
 * @example
 * const keys = new ApiKeyStore('./data', { envKeys: process.env.CSIPOSE_API_KEYS });
 * keys.load();
 * const { key } = keys.create('viewer', 'grafana'); // show once
 * keys.verify(key); // { ok: true, key: { id, name: 'grafana', role: 'viewer' } }
 */
export class ApiKeyStore {
  /** The file. */
  readonly path: string;
  private fileKeys = new Map<string, LiveKey>();
  /**
   * Env keys by SHA-256 of the whole key (base64url): they need not be in `csk_` form. Looking up
   * a hash leaks nothing through timing: a caller cannot steer which hash prefix it presents.
   */
  private readonly envKeys = new Map<string, LiveKey>();
  private readonly now: () => number;
  private readonly flushMs: number;
  private signature = 'absent';
  private lastCheck = -Infinity;
  private lastFlush = -Infinity;
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly counters = { reloads: 0, writes: 0 };
  private reloadError: string | null = null;
  /** Hands every write to the shared store (see {@link share}). */
  private onWrite: ((keys: StoredKey[]) => void) | undefined;
  /** Looks at the file once a second while shared. */
  private watch: NodeJS.Timeout | undefined;

  /**
   * @param dataDir directory of `api_keys.json`
   * @param opts env keys, flush interval, clock
   * @throws ApiKeyConfigError when `opts.envKeys` is malformed
   */
  constructor(dataDir: string, opts: ApiKeyStoreOptions = {}) {
    this.path = join(dataDir, 'api_keys.json');
    this.now = opts.now ?? Date.now;
    this.flushMs = (opts.usageFlushSeconds ?? 60) * 1000;
    const created = new Date(this.now()).toISOString();
    parseEnvApiKeys(opts.envKeys).forEach(({ key, role }, i) => {
      const id = `env-${i + 1}`;
      this.envKeys.set(sha256(key).toString('base64url'), {
        id,
        name: `CSIPOSE_API_KEYS[${i + 1}]`,
        role,
        hash: sha256(key),
        createdAt: created,
        revokedAt: null,
        lastUsedMs: null,
        source: 'env',
      });
    });
  }

  /**
   * Reads the file (missing: no keys).
   * @throws StoreFileError when it is unreadable or malformed
   */
  load(): void {
    this.readFile();
    this.lastCheck = this.now();
  }

  /**
   * Makes a key and persists it.
   * @param role the key's role
   * @param name a label (1-100 characters, no control characters; default `key-<id>`)
   * @returns the full key (shown once: only its hash is kept) and its listing
   * @throws RangeError for a bad role or name; StoreFileError when the file cannot be written
   */
  create(role: Role, name?: string): { key: string; info: ApiKeyInfo } {
    if (!isRole(role)) throw new RangeError(`unknown role "${String(role)}" (${ROLES.join(', ')})`);
    if (name !== undefined && !validName(name)) throw new RangeError(`a key name has 1-${MAX_NAME_LENGTH} printable characters`);
    return this.locked(() => {
      this.readFile();
      let id = newId();
      while (this.fileKeys.has(id)) id = newId();
      const secret = randomBytes(32).toString('base64url');
      const live: LiveKey = {
        id,
        name: name ?? `key-${id}`,
        role,
        hash: sha256(secret),
        createdAt: new Date(this.now()).toISOString(),
        revokedAt: null,
        lastUsedMs: null,
        source: 'file',
      };
      this.fileKeys.set(id, live);
      this.writeFile();
      return { key: `${API_KEY_PREFIX}${id}_${secret}`, info: info(live) };
    });
  }

  /** @returns every key, file keys oldest first then env keys; never a secret or hash */
  list(): ApiKeyInfo[] {
    this.checkFile(false);
    const files = [...this.fileKeys.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    return [...files, ...this.envKeys.values()].map(info);
  }

  /**
   * Revokes a key; it stays listed with `revokedAt`.
   * @param id the key id (the 8 characters after `csk_`)
   * @returns `revoked`, `already_revoked`, `not_found`, or `env` for a CSIPOSE_API_KEYS key
   *   (remove it from the variable instead)
   */
  revoke(id: string): 'revoked' | 'already_revoked' | 'not_found' | 'env' {
    if ([...this.envKeys.values()].some((k) => k.id === id)) return 'env';
    if (!ID_FORMAT.test(id)) return 'not_found';
    return this.locked(() => {
      this.readFile();
      const k = this.fileKeys.get(id);
      if (!k) return 'not_found';
      if (k.revokedAt) return 'already_revoked';
      k.revokedAt = new Date(this.now()).toISOString();
      this.writeFile();
      return 'revoked';
    });
  }

  /**
   * Checks a presented key. O(1): a map lookup by id (or by hash for env keys), one SHA-256 and
   * a constant-time comparison. Never throws, never writes: `lastUsedAt` is written later.
   * @param key the key as sent (`X-API-Key`, `?token=`)
   * @returns the key's id, name and role, or why it was refused
   */
  verify(key: string): ApiKeyVerifyResult {
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || hasBadChars(key)) {
      return { ok: false, reason: 'malformed_api_key' };
    }
    this.checkFile(false);
    if (this.envKeys.size > 0) {
      const env = this.envKeys.get(sha256(key).toString('base64url'));
      if (env) {
        env.lastUsedMs = this.now();
        return { ok: true, key: { id: env.id, name: env.name, role: env.role } };
      }
    }
    const m = KEY_FORMAT.exec(key);
    if (!m) return { ok: false, reason: 'invalid_api_key' };
    const id = m[1]!;
    let rec = this.fileKeys.get(id);
    if (!rec) {
      // Made by `csipose keys create` since our last look?
      this.checkFile(true);
      rec = this.fileKeys.get(id);
      if (!rec) return { ok: false, reason: 'invalid_api_key' };
    }
    if (!timingSafeEqual(sha256(m[2]!), rec.hash)) return { ok: false, reason: 'invalid_api_key' };
    if (rec.revokedAt) return { ok: false, reason: 'api_key_revoked' };
    rec.lastUsedMs = this.now();
    this.markDirty();
    return { ok: true, key: { id: rec.id, name: rec.name, role: rec.role } };
  }

  /**
   * Writes pending `lastUsedAt` values now, if the lock is free.
   * @param waitMs how long to wait for a busy lock (default 0: try once, retry at the next flush)
   * @returns true when nothing was pending or the write happened
   */
  flushUsage(waitMs = 0): boolean {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.dirty) return true;
    let done: boolean | undefined;
    try {
      done = withFileLock(
        this.path,
        () => {
          this.readFile();
          this.writeFile();
          return true;
        },
        waitMs,
      );
    } catch (e) {
      this.reloadError = (e as Error).message;
    }
    if (done) {
      this.dirty = false;
      this.lastFlush = this.now();
      return true;
    }
    this.schedule();
    return false;
  }

  /** Flushes pending usage and stops the flush timer (and the file watch of a shared store). */
  close(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
    this.flushUsage(1000);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Shares this store's keys with other api nodes: `onWrite` gets every key (as stored) each time
   * the file is written here or found changed by another writer (`csipose keys`). The file is
   * then also looked at once a second, not only when a key is looked up: a key made with
   * `csipose keys` on this node's data directory is meant for every node.
   * @param onWrite writes them to the shared store
   */
  share(onWrite: (keys: StoredKey[]) => void): void {
    this.onWrite = onWrite;
    if (this.watch) return;
    this.watch = setInterval(() => this.checkFile(false), RELOAD_CHECK_MS);
    this.watch.unref();
  }

  /** @returns the file keys as stored (with hashes: for the shared store only, never for display) */
  stored(): StoredKey[] {
    return [...this.fileKeys.values()].map(toStored);
  }

  /**
   * Merges keys of the shared store into this one: new keys are added, a revocation or a later
   * use is taken over; the file is rewritten when anything changed. Malformed entries are ignored.
   * @param entries keys as stored by another node
   * @returns true when anything changed
   */
  merge(entries: readonly unknown[]): boolean {
    const incoming = entries.map(parseStored).filter((k): k is LiveKey => k !== null);
    const differs = (map: Map<string, LiveKey>) => incoming.some((k) => mergeInto(map, k, false));
    if (!differs(this.fileKeys)) return false;
    this.locked(() => {
      this.readFile();
      for (const k of incoming) mergeInto(this.fileKeys, k, true);
      this.writeFile(false);
    });
    return true;
  }

  /** @returns counts of keys, reloads and writes */
  stats(): ApiKeyStats {
    return { fileKeys: this.fileKeys.size, envKeys: this.envKeys.size, ...this.counters, reloadError: this.reloadError };
  }

  private markDirty(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    const delay = Math.max(0, Math.min(this.flushMs, this.lastFlush + this.flushMs - this.now()));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushUsage();
    }, delay);
    // Pending usage must not keep a finished process alive; close() flushes it.
    this.timer.unref();
  }

  private locked<T>(fn: () => T): T {
    const r = withFileLock(this.path, () => ({ value: fn() }), LOCK_WAIT_MS);
    if (!r) throw new StoreFileError(`${this.path}: could not take ${this.path}.lock within ${LOCK_WAIT_MS} ms`);
    return r.value;
  }

  /** Reloads when the file changed: at most once a second, or at once when `force`. */
  private checkFile(force: boolean): void {
    const t = this.now();
    if (!force && t - this.lastCheck < RELOAD_CHECK_MS) return;
    this.lastCheck = t;
    if (fileSignature(this.path) === this.signature) return;
    try {
      this.readFile();
      this.reloadError = null;
      this.onWrite?.(this.stored());
    } catch (e) {
      // A half-edited file must not lock everyone out: keep the keys we had, retry next check.
      this.reloadError = (e as Error).message;
    }
  }

  /** Replaces the file keys with the file's, keeping the newer of the two `lastUsedAt`. */
  private readFile(): void {
    const sig = fileSignature(this.path);
    const raw = readJsonFile(this.path);
    const next = new Map<string, LiveKey>();
    if (raw !== undefined) {
      const list = (raw as { keys?: unknown } | null)?.keys;
      if (typeof raw !== 'object' || raw === null || !Array.isArray(list)) {
        throw new StoreFileError(`${this.path}: expected {"version": 1, "keys": [...]}`);
      }
      list.forEach((entry: unknown, i) => {
        const k = parseStored(entry);
        if (!k) throw new StoreFileError(`${this.path}: keys[${i}] is malformed`);
        const old = this.fileKeys.get(k.id);
        if (old?.lastUsedMs != null && (k.lastUsedMs == null || old.lastUsedMs > k.lastUsedMs)) k.lastUsedMs = old.lastUsedMs;
        next.set(k.id, k);
      });
    }
    this.fileKeys = next;
    this.signature = sig;
    this.counters.reloads++;
  }

  /** @param share hand the keys to the shared store (not when they came from it) */
  private writeFile(share = true): void {
    const keys = this.stored();
    writeJsonAtomic(this.path, { version: FILE_VERSION, keys });
    this.signature = fileSignature(this.path);
    this.counters.writes++;
    if (share) this.onWrite?.(keys);
  }
}

function toStored(k: LiveKey): StoredKey {
  return {
    id: k.id,
    name: k.name,
    role: k.role,
    hash: HASH_PREFIX + k.hash.toString('base64url'),
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
    lastUsedAt: k.lastUsedMs == null ? null : new Date(k.lastUsedMs).toISOString(),
  };
}

/**
 * Merges another node's copy of a key: added when new; else the earlier revocation and the later
 * use win (the rest of a key never changes).
 * @param apply false only tells whether anything would change
 * @returns true when `map` changed (or would)
 */
function mergeInto(map: Map<string, LiveKey>, k: LiveKey, apply: boolean): boolean {
  const cur = map.get(k.id);
  if (!cur) {
    if (apply) map.set(k.id, k);
    return true;
  }
  // Another secret under the same id cannot be the same key: ours stays.
  if (!cur.hash.equals(k.hash)) return false;
  const revoke = k.revokedAt !== null && (cur.revokedAt === null || k.revokedAt < cur.revokedAt);
  const used = k.lastUsedMs !== null && (cur.lastUsedMs === null || k.lastUsedMs > cur.lastUsedMs);
  if (apply && revoke) cur.revokedAt = k.revokedAt;
  if (apply && used) cur.lastUsedMs = k.lastUsedMs;
  return revoke || used;
}

function isIsoOrNull(v: unknown): v is string | null {
  return v === null || (typeof v === 'string' && !Number.isNaN(Date.parse(v)));
}

function parseStored(entry: unknown): LiveKey | null {
  const e = entry as Partial<StoredKey> | null;
  if (!e || typeof e !== 'object') return null;
  if (typeof e.id !== 'string' || !ID_FORMAT.test(e.id)) return null;
  if (typeof e.name !== 'string' || !validName(e.name) || !isRole(e.role)) return null;
  if (typeof e.hash !== 'string' || !e.hash.startsWith(HASH_PREFIX)) return null;
  const hash = Buffer.from(e.hash.slice(HASH_PREFIX.length), 'base64url');
  if (hash.length !== 32) return null;
  if (typeof e.createdAt !== 'string' || !isIsoOrNull(e.revokedAt ?? null) || !isIsoOrNull(e.lastUsedAt ?? null)) return null;
  return {
    id: e.id,
    name: e.name,
    role: e.role,
    hash,
    createdAt: e.createdAt,
    revokedAt: e.revokedAt ?? null,
    lastUsedMs: e.lastUsedAt ? Date.parse(e.lastUsedAt) : null,
    source: 'file',
  };
}

function info(k: LiveKey): ApiKeyInfo {
  return {
    id: k.id,
    name: k.name,
    role: k.role,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
    lastUsedAt: k.lastUsedMs == null ? null : new Date(k.lastUsedMs).toISOString(),
    source: k.source,
  };
}
