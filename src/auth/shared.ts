import type { StoredKey } from './apiKeys.js';
import type { Role } from './roles.js';
import type { User } from './users.js';

/**
 * What the accounts of one api node share with the others when several run behind a load
 * balancer (config `redis.url`): the signing secret, denied access tokens, refresh-token
 * families, API keys and users. This file states the contract; src/redis/authState.ts keeps it
 * over Redis. Without it (the default) every store works as it always has, in this process and
 * its data directory.
 *
 * Nothing here may make a request fail because the shared store is unreachable: writes are
 * queued and sent when it is back, and what only the shared store can answer (a refresh token
 * issued anywhere) is refused with a reason of its own.
 */

/** A denied access token: its `jti` and its `exp` (s), after which the entry may go. */
export type Denial = readonly [jti: string, exp: number];

/** A login's refresh-token family as the shared store keeps it. */
export interface SharedFamily {
  /** Random id, shared by every token of the family. */
  readonly id: string;
  readonly sub: string;
  /** The role the family's next access token carries (updated at each refresh). */
  role: Role;
  /** The subject's token generation at login. */
  readonly gen: string | undefined;
}

/** The outcome of consuming a refresh token in the shared store. */
export type SharedTake =
  | { ok: true; family: SharedFamily }
  | { ok: false; reason: 'unknown_refresh_token' | 'refresh_expired' | 'refresh_revoked' | 'refresh_unavailable' }
  /** Consumed before: the family is revoked everywhere; `denied` are its access tokens. */
  | { ok: false; reason: 'refresh_reused'; denied: Denial[] };

/** The token service's part of the shared state. */
export interface SharedTokens {
  /**
   * Denies access tokens on every node (and in the shared denylist, for nodes that start or
   * reconnect later). Resolves once written, or queued while the shared store is unreachable;
   * never rejects.
   */
  deny(entries: readonly Denial[]): Promise<void>;
  /**
   * Records a new access token and refresh token of a family (`newFamily`: a login starts it).
   * Queued while the shared store is unreachable (`ok`).
   * @returns `revoked` when the family was revoked meanwhile (the access token is then denied)
   */
  issued(family: SharedFamily, access: Denial, refreshHash: string, refreshExpiresAtMs: number, newFamily: boolean): Promise<'ok' | 'revoked'>;
  /** Consumes a refresh token (atomically: one of two concurrent uses is `refresh_reused`). */
  take(refreshHash: string, nowMs: number): Promise<SharedTake>;
  /** Revokes a family everywhere. @returns its access tokens (empty while unreachable: queued) */
  revokeFamily(familyId: string): Promise<Denial[]>;
  /**
   * Revokes the family of a refresh token.
   * @returns its access tokens, or undefined when the token is unknown; while the shared store is
   *   unreachable the revocation is queued and `[]` returned
   */
  revokeRefresh(refreshHash: string): Promise<Denial[] | undefined>;
}

/** The stores of one node that {@link SharedAccounts.attach} keeps in step with the others. */
export interface SharedStores {
  readonly tokens: { learnDenied(entries: Iterable<Denial>): void; deniedEntries(): Denial[] };
  readonly users: {
    share(onWrite: (users: User[]) => void): void;
    records(): User[];
    adopt(records: readonly unknown[]): boolean;
  };
  readonly keys: {
    share(onWrite: (keys: StoredKey[]) => void): void;
    stored(): StoredKey[];
    merge(entries: readonly unknown[]): boolean;
  };
}

/** Everything the accounts of one node share with the others. */
export interface SharedAccounts extends SharedTokens {
  /**
   * The signing secret of every node: the one already shared, else `offered`, which then
   * becomes the shared one (set once, by whichever node comes first).
   * @throws when the shared store cannot be reached
   */
  agreeSecret(offered: Uint8Array): Promise<Uint8Array>;
  /**
   * Compares this node's secret (by its `kid`) with the one the first node recorded; a
   * difference is logged and reported (tokens of one node would be refused by the other).
   * Best effort: nothing happens while unreachable.
   */
  checkKid(kid: string): Promise<void>;
  /**
   * Connects this node's stores: catches up now when reachable (users and keys both ways, the
   * denylist), then keeps them in step; call before the bootstrap admin is set up.
   */
  attach(stores: SharedStores): Promise<void>;
}
