import type { Denial, SharedAccounts, SharedFamily, SharedStores, SharedTake } from '../auth/shared.js';
import { isRole } from '../auth/roles.js';
import type { RedisLink } from './connection.js';

/**
 * The accounts' shared state (src/auth/shared.ts) kept in Redis. Keys, under the prefix `P`
 * (config `redis.key_prefix`, default `csipose:`):
 *
 * | key | type | holds |
 * |---|---|---|
 * | `P jwt_secret` | string | the signing secret (base64url), set once with SET NX |
 * | `P jwt_kid` | string | the `kid` of the first node's secret, set once (a node with another one warns) |
 * | `P denied` | sorted set | denied access tokens: member jti, score exp (s); expired ones are trimmed |
 * | `P fam:ID` | hash | a refresh family: `sub`, `role`, `gen`, `rev` (1 once revoked) |
 * | `P fam:ID:at` | sorted set | the family's access tokens: jti, exp |
 * | `P rt:SHA256` | hash | a refresh token (by the SHA-256 of it): `f` family, `x` expiry (ms), `c` 1 once consumed |
 * | `P api_keys` | hash | API key id -> the key as `api_keys.json` stores it (hash of the secret only) |
 * | `P users` | hash | user name -> the user as `users.json` stores it (scrypt hash) |
 * | `P rl:CATEGORY:KEY` | string | rate-limit counters (rate-limiter-flexible, src/server/rateLimits.ts) |
 *
 * Families, their access sets and refresh tokens expire with their last refresh token. Every node
 * listens on the channel `P events`: `{t:"deny", d:[[jti,exp],...]}` (applied at once),
 * `{t:"keys"}` and `{t:"users"}` (the node re-reads the hash). A node that connects, or
 * reconnects after losing Redis, first writes what it queued meanwhile, then reads the denylist,
 * the keys and the users, so it misses nothing published while it was away.
 */

/** Writes queued while Redis is unreachable, at most; beyond, the oldest go (counted). */
const MAX_PENDING = 100_000;

/** Lua: revokes family KEYS-less by name; shared by the scripts below. */
const REVOKE_FN = `
local function revoke(fam, prefix, nowS, channel, node)
  redis.call('HSET', fam, 'rev', '1')
  local at = redis.call('ZRANGEBYSCORE', fam .. ':at', '(' .. nowS, '+inf', 'WITHSCORES')
  local out, d = {}, {}
  for i = 1, #at, 2 do
    redis.call('ZADD', prefix .. 'denied', at[i + 1], at[i])
    out[#out + 1] = at[i]
    out[#out + 1] = at[i + 1]
    d[#d + 1] = { at[i], tonumber(at[i + 1]) }
  end
  if #d > 0 then redis.call('PUBLISH', channel, cjson.encode({ t = 'deny', d = d, n = node })) end
  return out
end
`;

/**
 * Consumes a refresh token. KEYS: rt. ARGV: prefix, now (ms), channel, node.
 * Returns {reason} or {'ok', family, sub, role, gen} or {'refresh_reused', jti, exp, ...}.
 */
const TAKE = `${REVOKE_FN}
local r = redis.call('HMGET', KEYS[1], 'f', 'x', 'c')
if not r[1] then return { 'unknown_refresh_token' } end
local fam = ARGV[1] .. 'fam:' .. r[1]
local f = redis.call('HMGET', fam, 'sub', 'role', 'gen', 'rev')
if not f[1] then return { 'unknown_refresh_token' } end
if f[4] == '1' then return { 'refresh_revoked' } end
if r[3] == '1' then
  local out = revoke(fam, ARGV[1], math.floor(tonumber(ARGV[2]) / 1000), ARGV[3], ARGV[4])
  table.insert(out, 1, 'refresh_reused')
  return out
end
if tonumber(r[2]) <= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
  return { 'refresh_expired' }
end
redis.call('HSET', KEYS[1], 'c', '1')
return { 'ok', r[1], f[1], f[2], f[3] }
`;

/**
 * Revokes a family, by id (ARGV[5] = id) or by one of its refresh tokens (KEYS[1]).
 * ARGV: prefix, now (ms), channel, node, id or ''. Returns {'unknown'} or {'ok', jti, exp, ...}.
 */
const REVOKE = `${REVOKE_FN}
local id = ARGV[5]
if id == '' then
  id = redis.call('HGET', KEYS[1], 'f')
  if not id then return { 'unknown' } end
end
local out = revoke(ARGV[1] .. 'fam:' .. id, ARGV[1], math.floor(tonumber(ARGV[2]) / 1000), ARGV[3], ARGV[4])
table.insert(out, 1, 'ok')
return out
`;

/**
 * Records an access and a refresh token of a family. KEYS: fam, fam:at, rt, denied.
 * ARGV: id, sub, role, gen, jti, exp (s), refresh expiry (ms), new family (1/0).
 * Returns 'ok' or 'revoked' (the family was revoked or is gone: the access token is denied).
 */
const ISSUE = `
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'sub', ARGV[2], 'role', ARGV[3], 'gen', ARGV[4], 'rev', '0')
elseif redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5])
  return 'revoked'
else
  redis.call('HSET', KEYS[1], 'role', ARGV[3])
end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[5])
redis.call('HSET', KEYS[3], 'f', ARGV[1], 'x', ARGV[7], 'c', '0')
redis.call('PEXPIREAT', KEYS[3], ARGV[7])
local until_ms = math.max(tonumber(ARGV[7]), tonumber(ARGV[6]) * 1000)
redis.call('PEXPIREAT', KEYS[1], until_ms)
redis.call('PEXPIREAT', KEYS[2], until_ms)
if redis.call('HGET', KEYS[1], 'rev') == '1' then
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5])
  return 'revoked'
end
return 'ok'
`;

/**
 * Merges API keys into the hash (KEYS[1]): new ones are added, an earlier revocation and a later
 * use taken over. ARGV: channel, node, key JSON... Publishes {t:"keys"} when a key was added or
 * revoked (a later use alone is no news). Returns 1 when published.
 */
const MERGE_KEYS = `
local news = false
for i = 3, #ARGV do
  local k = cjson.decode(ARGV[i])
  local old = redis.call('HGET', KEYS[1], k.id)
  if not old then
    redis.call('HSET', KEYS[1], k.id, ARGV[i])
    news = true
  else
    local o = cjson.decode(old)
    if o.hash == k.hash then
      local changed = false
      if type(k.revokedAt) == 'string' and (type(o.revokedAt) ~= 'string' or k.revokedAt < o.revokedAt) then
        o.revokedAt = k.revokedAt
        changed = true
        news = true
      end
      if type(k.lastUsedAt) == 'string' and (type(o.lastUsedAt) ~= 'string' or k.lastUsedAt > o.lastUsedAt) then
        o.lastUsedAt = k.lastUsedAt
        changed = true
      end
      if changed then redis.call('HSET', KEYS[1], k.id, cjson.encode(o)) end
    end
  end
end
if news then
  redis.call('PUBLISH', ARGV[1], cjson.encode({ t = 'keys', n = ARGV[2] }))
  return 1
end
return 0
`;

/** Options of {@link RedisAuthState}. */
export interface RedisAuthStateOptions {
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** Clock in ms. */
  now?: () => number;
}

interface Pending {
  what: string;
  run(): Promise<unknown>;
}

/**
 * The accounts of one api node kept in step with the others through Redis (see the file comment).
 *
 * @example
 * const link = new RedisLink({ url, prefix: 'csipose:' });
 * await auth.init({ dataDir, shared: new RedisAuthState(link) });
 */
export class RedisAuthState implements SharedAccounts {
  private readonly p: string;
  private readonly log: NonNullable<RedisAuthStateOptions['log']>;
  private readonly now: () => number;
  private readonly pending: Pending[] = [];
  private stores: SharedStores | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;
  private kidMismatch: string | null = null;
  /** The secret this node agreed on (none with CSIPOSE_JWT_SECRET), offered again after Redis lost it. */
  private secret: string | undefined;
  private kid: string | undefined;

  /**
   * @param link the node's Redis link
   * @param opts logger, clock
   */
  constructor(
    private readonly link: RedisLink,
    opts: RedisAuthStateOptions = {},
  ) {
    this.p = link.prefix;
    this.log = opts.log ?? (() => undefined);
    this.now = opts.now ?? Date.now;
    link.pendingFrom(() => this.pending.length);
  }

  /** @returns what `/health/detailed` adds to the `redis` component */
  report(): { pending_dropped: number; secret_mismatch: string | null } {
    return { pending_dropped: this.dropped, secret_mismatch: this.kidMismatch };
  }

  async agreeSecret(offered: Uint8Array): Promise<Uint8Array> {
    const key = `${this.p}jwt_secret`;
    await this.link.client.set(key, Buffer.from(offered).toString('base64url'), 'NX');
    const shared = await this.link.client.get(key);
    const bytes = shared && /^[A-Za-z0-9_-]+$/.test(shared) ? Buffer.from(shared, 'base64url') : undefined;
    if (!bytes || bytes.length < 32) throw new Error(`Redis key ${key} does not hold a secret of at least 32 bytes (base64url); fix or delete it`);
    this.secret = shared!;
    return bytes;
  }

  async checkKid(kid: string): Promise<void> {
    const key = `${this.p}jwt_kid`;
    this.kid = kid;
    try {
      await this.link.client.set(key, kid, 'NX');
      const first = await this.link.client.get(key);
      if (first && first !== kid) {
        this.kidMismatch = `this node signs with kid ${kid}, the first node with ${first}`;
        this.log(
          'error',
          `redis: ${this.kidMismatch}: tokens of one are refused by the other. Give every node the same CSIPOSE_JWT_SECRET ` +
            `(or none: they then share one through Redis); after changing it on every node, delete the key ${key}`,
        );
      }
    } catch (e) {
      this.link.noteError(e as Error);
    }
  }

  async attach(stores: SharedStores): Promise<void> {
    this.stores = stores;
    stores.keys.share((keys) => void this.write('api keys', () => this.mergeKeys(keys)));
    stores.users.share((users) => void this.write('users', () => this.putUsers(users)));
    this.link.onMessage((m) => this.onMessage(m));
    this.link.onReady(() => this.catchUp());
    // And now, when connected (awaited: the bootstrap must see the shared users).
    if (this.link.ready) await this.catchUp();
  }

  // ---- tokens --------------------------------------------------------------------------------

  async deny(entries: readonly Denial[]): Promise<void> {
    if (entries.length === 0) return;
    const d = entries.map(([jti, exp]) => [jti, exp]);
    await this.write('denials', async () => {
      const m = this.link.client.multi();
      for (const [jti, exp] of entries) m.zadd(`${this.p}denied`, exp, jti);
      m.zremrangebyscore(`${this.p}denied`, '-inf', Math.floor(this.now() / 1000));
      m.publish(this.link.channel, JSON.stringify({ t: 'deny', d, n: this.link.nodeId }));
      await m.exec();
    });
  }

  async issued(family: SharedFamily, access: Denial, refreshHash: string, refreshExpiresAtMs: number, newFamily: boolean): Promise<'ok' | 'revoked'> {
    const fam = `${this.p}fam:${family.id}`;
    const run = () =>
      this.link.client.eval(
        ISSUE,
        4,
        fam,
        `${fam}:at`,
        `${this.p}rt:${refreshHash}`,
        `${this.p}denied`,
        family.id,
        family.sub,
        family.role,
        family.gen ?? '',
        access[0],
        access[1],
        refreshExpiresAtMs,
        newFamily ? 1 : 0,
      );
    let result: unknown = 'ok';
    await this.write('a refresh token', async () => {
      result = await run();
    });
    return result === 'revoked' ? 'revoked' : 'ok';
  }

  async take(refreshHash: string, nowMs: number): Promise<SharedTake> {
    if (!this.link.ready) return { ok: false, reason: 'refresh_unavailable' };
    let r: string[];
    try {
      r = (await this.link.client.eval(TAKE, 1, `${this.p}rt:${refreshHash}`, this.p, nowMs, this.link.channel, this.link.nodeId)) as string[];
    } catch (e) {
      this.link.noteError(e as Error);
      return { ok: false, reason: 'refresh_unavailable' };
    }
    const [head, ...rest] = r;
    if (head === 'ok') {
      const [id, sub, role, gen] = rest as [string, string, string, string];
      if (!isRole(role)) return { ok: false, reason: 'unknown_refresh_token' };
      return { ok: true, family: { id, sub, role, gen: gen === '' ? undefined : gen } };
    }
    if (head === 'refresh_reused') return { ok: false, reason: head, denied: pairs(rest) };
    if (head === 'refresh_expired' || head === 'refresh_revoked') return { ok: false, reason: head };
    return { ok: false, reason: 'unknown_refresh_token' };
  }

  async revokeFamily(familyId: string): Promise<Denial[]> {
    return (await this.revokeBy('', familyId)) ?? [];
  }

  revokeRefresh(refreshHash: string): Promise<Denial[] | undefined> {
    return this.revokeBy(`${this.p}rt:${refreshHash}`, '');
  }

  // ---- the queue of writes -------------------------------------------------------------------

  /**
   * Runs a write now when connected and nothing older waits, else queues it (written by
   * {@link catchUp}). Never rejects.
   */
  private async write(what: string, run: () => Promise<unknown>): Promise<void> {
    if (this.link.ready && this.pending.length === 0) {
      try {
        await run();
        return;
      } catch (e) {
        this.link.noteError(e as Error);
      }
    }
    this.pending.push({ what, run });
    if (this.pending.length > MAX_PENDING) {
      this.pending.shift();
      this.dropped++;
    }
    // Connected, but older writes wait (a catch-up that failed half-way): try them again now.
    if (this.link.ready) this.catchUp().catch((e: unknown) => this.failed(`writing the queue (${this.pending[0]?.what ?? 'empty'})`, e));
  }

  private async revokeBy(rtKey: string, familyId: string): Promise<Denial[] | undefined> {
    const run = () => this.link.client.eval(REVOKE, 1, rtKey || `${this.p}rt:-`, this.p, this.now(), this.link.channel, this.link.nodeId, familyId);
    if (this.link.ready && this.pending.length === 0) {
      try {
        const [head, ...rest] = (await run()) as string[];
        return head === 'ok' ? pairs(rest) : undefined;
      } catch (e) {
        this.link.noteError(e as Error);
      }
    }
    // Unreachable: queued; what it denies reaches this node with the others when it is written.
    await this.write('a family revocation', run);
    return [];
  }

  /** Writes what was queued, in order, then reads what may have changed meanwhile. */
  private catchUp(): Promise<void> {
    this.flushing ??= (async () => {
      try {
        await this.flushPending();
        await this.refill();
        await this.loadDenied();
        await this.syncKeys();
        await this.syncUsers();
        // Queued while the above ran.
        await this.flushPending();
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  private async flushPending(): Promise<void> {
    while (this.pending.length > 0 && this.link.ready) {
      await this.pending[0]!.run();
      this.pending.shift();
    }
  }

  /**
   * What a Redis that lost its data (restarted without persistence) needs back from this node:
   * the secret and its kid, and this node's denylist (refresh tokens cannot come back: their
   * holders sign in again). A no-op for a Redis that kept them.
   */
  private async refill(): Promise<void> {
    const m = this.link.client.multi();
    if (this.secret) m.set(`${this.p}jwt_secret`, this.secret, 'NX');
    if (this.kid) m.set(`${this.p}jwt_kid`, this.kid, 'NX');
    for (const [jti, exp] of this.stores?.tokens.deniedEntries() ?? []) m.zadd(`${this.p}denied`, 'NX', exp, jti);
    await m.exec();
  }

  private async loadDenied(): Promise<void> {
    const nowS = Math.floor(this.now() / 1000);
    const key = `${this.p}denied`;
    await this.link.client.zremrangebyscore(key, '-inf', nowS);
    const flat = await this.link.client.zrangebyscore(key, `(${nowS}`, '+inf', 'WITHSCORES');
    this.stores?.tokens.learnDenied(pairs(flat));
  }

  private async syncKeys(): Promise<void> {
    const stores = this.stores;
    if (!stores) return;
    const local = stores.keys.stored();
    if (local.length > 0) await this.mergeKeys(local);
    await this.readKeys();
  }

  private async readKeys(): Promise<void> {
    const all = await this.link.client.hgetall(`${this.p}api_keys`);
    this.stores?.keys.merge(parseValues(all));
  }

  private mergeKeys(keys: readonly object[]): Promise<unknown> {
    return this.link.client.eval(MERGE_KEYS, 1, `${this.p}api_keys`, this.link.channel, this.link.nodeId, ...keys.map((k) => JSON.stringify(k)));
  }

  /**
   * Users: the shared record of a user wins; users only this node knows are offered (HSETNX) so
   * the first node's accounts become everyone's.
   */
  private async syncUsers(): Promise<void> {
    const stores = this.stores;
    if (!stores) return;
    const key = `${this.p}users`;
    const local = stores.users.records();
    if (local.length > 0) {
      const m = this.link.client.multi();
      for (const u of local) m.hsetnx(key, u.username, JSON.stringify(u));
      await m.exec();
    }
    await this.readUsers();
  }

  private async readUsers(): Promise<void> {
    const all = await this.link.client.hgetall(`${this.p}users`);
    this.stores?.users.adopt(parseValues(all));
  }

  private async putUsers(users: readonly { username: string }[]): Promise<void> {
    const m = this.link.client.multi();
    for (const u of users) m.hset(`${this.p}users`, u.username, JSON.stringify(u));
    m.publish(this.link.channel, JSON.stringify({ t: 'users', n: this.link.nodeId }));
    await m.exec();
  }

  private onMessage(m: Record<string, unknown>): void {
    const stores = this.stores;
    if (!stores) return;
    if (m.t === 'deny' && Array.isArray(m.d)) {
      stores.tokens.learnDenied((m.d as unknown[]).filter((e): e is [string, number] => Array.isArray(e) && e.length === 2) as Denial[]);
    } else if (m.t === 'keys') {
      this.readKeys().catch((e: unknown) => this.failed('reading the API keys', e));
    } else if (m.t === 'users') {
      this.readUsers().catch((e: unknown) => this.failed('reading the users', e));
    }
  }

  private failed(what: string, e: unknown): void {
    this.link.noteError(e as Error);
    // Read again at the next (re)connect.
    this.log('warn', `redis: ${what} failed: ${(e as Error).message}`);
  }
}

/** `[jti, exp, jti, exp, ...]` (as Redis answers) -> denials. */
function pairs(flat: readonly string[]): Denial[] {
  const out: Denial[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
  return out;
}

/** The JSON values of a hash; unparseable ones are left out. */
function parseValues(hash: Record<string, string>): unknown[] {
  const out: unknown[] = [];
  for (const v of Object.values(hash)) {
    try {
      out.push(JSON.parse(v));
    } catch {
      // Not ours to fix; the stores ignore what they cannot read.
    }
  }
  return out;
}
