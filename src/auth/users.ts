import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hashPassword, parsePasswordHash, verifyPassword } from './passwords.js';
import { isRole, type Role } from './roles.js';
import { readJsonFile, StoreFileError, withFileLock, writeJsonAtomic } from './jsonFile.js';

/** A user account as stored in `<dataDir>/users.json`. */
export interface User {
  username: string;
  role: Role;
  /** `scrypt$N$r$p$salt$hash`, see passwords.ts. */
  passwordHash: string;
  /** ISO 8601. */
  createdAt: string;
}

/** A user without the password hash, for listings. */
export type PublicUser = Omit<User, 'passwordHash'>;

/** The bootstrap administrator's user name. */
export const ADMIN_USERNAME = 'admin';

const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/;
const FILE_VERSION = 1;
const LOCK_WAIT_MS = 5000;

/** Token generations of user records (a record is replaced, never changed, when its password is). */
const generations = new WeakMap<User, string>();

/** Options of {@link UserStore}. */
export interface UserStoreOptions {
  /** Clock in ms (tests). */
  now?: () => number;
}

/**
 * The user accounts, persisted to `<dataDir>/users.json` (atomic writes, mode 0600). The file is
 * read once at {@link UserStore.load}; this process is its only writer while the server runs.
 *
 * Several api nodes share their users (config `redis.url`) through {@link UserStore.share}: every
 * user written here is handed to the shared store, and the shared store's records replace ours
 * ({@link UserStore.adopt}), so that a user's token generation, and so its tokens, are the same
 * on every node.
 *
 * @example
 * const users = new UserStore('./data');
 * const { generatedPassword } = await users.bootstrapAdmin(process.env.CSIPOSE_ADMIN_PASSWORD);
 */
export class UserStore {
  /** The file. */
  readonly path: string;
  private readonly users = new Map<string, User>();
  private readonly now: () => number;
  private onWrite: ((users: User[]) => void) | undefined;

  /**
   * @param dataDir directory holding `users.json`
   * @param opts clock
   */
  constructor(dataDir: string, opts: UserStoreOptions = {}) {
    this.path = join(dataDir, 'users.json');
    this.now = opts.now ?? Date.now;
  }

  /**
   * Reads the file (a missing file is an empty store).
   * @throws StoreFileError when the file is unreadable or an entry is malformed: the server must
   *   not start and later overwrite accounts it could not read
   */
  load(): void {
    const raw = readJsonFile(this.path);
    this.users.clear();
    if (raw === undefined) return;
    const list = (raw as { users?: unknown }).users;
    if (typeof raw !== 'object' || raw === null || !Array.isArray(list)) {
      throw new StoreFileError(`${this.path}: expected {"version": 1, "users": [...]}`);
    }
    list.forEach((u: unknown, i) => {
      const user = parseUser(u);
      if (!user) throw new StoreFileError(`${this.path}: users[${i}] is malformed (username, role, passwordHash, createdAt)`);
      this.users.set(user.username, user);
    });
  }

  /**
   * Shares this store's users with other api nodes.
   * @param onWrite gets the users written here, each time
   */
  share(onWrite: (users: User[]) => void): void {
    this.onWrite = onWrite;
  }

  /** @returns every user record, password hashes included (for the shared store only) */
  records(): User[] {
    return [...this.users.values()];
  }

  /**
   * Takes over the shared store's records of these users (a password changed on another node
   * ends the user's tokens here too); the file is rewritten when anything changed. Malformed
   * entries are ignored.
   * @param records users as another node stored them
   * @returns true when anything changed
   */
  adopt(records: readonly unknown[]): boolean {
    let changed = false;
    for (const r of records) {
      const u = parseUser(r);
      const cur = u && this.users.get(u.username);
      if (!u || (cur && cur.role === u.role && cur.passwordHash === u.passwordHash && cur.createdAt === u.createdAt)) continue;
      this.users.set(u.username, u);
      changed = true;
    }
    if (changed) this.save([]);
    return changed;
  }

  /**
   * @param username the user name
   * @returns the user, or undefined
   */
  get(username: string): User | undefined {
    return this.users.get(username);
  }

  /**
   * The user's token generation: a fingerprint of the stored password hash, so it changes exactly
   * when the password does (each hash has a fresh salt, even for the same password) and needs no
   * state of its own. Access tokens carry it; tokens of another generation are refused. The hash
   * itself is not derivable from it.
   * @param username the user name
   * @returns 16 base64url characters, or undefined when there is no such user
   */
  generation(username: string): string | undefined {
    const user = this.users.get(username);
    if (!user) return undefined;
    let gen = generations.get(user);
    if (gen === undefined) {
      gen = createHash('sha256').update('csipose-token-generation\0').update(user.passwordHash).digest('base64url').slice(0, 16);
      generations.set(user, gen);
    }
    return gen;
  }

  /** @returns every user, without password hashes, sorted by name */
  list(): PublicUser[] {
    return [...this.users.values()]
      .map(({ username, role, createdAt }) => ({ username, role, createdAt }))
      .sort((a, b) => a.username.localeCompare(b.username));
  }

  /**
   * Adds a user and persists the store.
   * @param username 1-64 characters of `A-Z a-z 0-9 . _ @ -`
   * @param role the user's role
   * @param password the plain password (hashed with scrypt)
   * @returns the new user
   * @throws RangeError for a bad name or role, or when the name is taken
   */
  async create(username: string, role: Role, password: string): Promise<User> {
    if (!USERNAME.test(username)) throw new RangeError(`bad user name "${username}"`);
    if (!isRole(role)) throw new RangeError(`bad role "${String(role)}"`);
    if (this.users.has(username)) throw new RangeError(`user "${username}" exists`);
    const user: User = { username, role, passwordHash: await hashPassword(password), createdAt: new Date(this.now()).toISOString() };
    this.users.set(username, user);
    this.save([user]);
    return user;
  }

  /**
   * Sets a user's password and persists the store. Tokens issued to the user before are refused
   * from now on (the token generation changes with the hash), refresh tokens included.
   * @param username an existing user
   * @param password the new password
   * @throws RangeError when the user does not exist
   */
  async setPassword(username: string, password: string): Promise<void> {
    const user = this.users.get(username);
    if (!user) throw new RangeError(`no user "${username}"`);
    const passwordHash = await hashPassword(password);
    const changed = { ...user, passwordHash };
    this.users.set(username, changed);
    this.save([changed]);
  }

  /**
   * Makes sure the `admin` user exists with role admin (call after {@link UserStore.load}).
   * - `envPassword` set (non-empty): admin's password becomes it (the file is only rewritten
   *   when the stored hash does not already match, so the same password keeps admin's tokens
   *   valid; another one ends them).
   * - unset or empty, admin already stored: the stored hash is kept.
   * - unset or empty, no admin: a random password is generated, stored hashed and returned so
   *   the server can print it once.
   * @param envPassword the value of `CSIPOSE_ADMIN_PASSWORD`
   * @returns `generatedPassword` when one was generated
   */
  async bootstrapAdmin(envPassword: string | undefined): Promise<{ generatedPassword?: string }> {
    const admin = this.users.get(ADMIN_USERNAME);
    if (envPassword) {
      if (admin && admin.role === 'admin' && (await verifyPassword(envPassword, admin.passwordHash))) return {};
      const passwordHash = await hashPassword(envPassword);
      const changed: User = { username: ADMIN_USERNAME, role: 'admin', passwordHash, createdAt: admin?.createdAt ?? new Date(this.now()).toISOString() };
      this.users.set(ADMIN_USERNAME, changed);
      this.save([changed]);
      return {};
    }
    if (admin) {
      if (admin.role !== 'admin') {
        const changed: User = { ...admin, role: 'admin' };
        this.users.set(ADMIN_USERNAME, changed);
        this.save([changed]);
      }
      return {};
    }
    // 18 bytes: 144 bits, 24 characters that survive copy and paste from a terminal.
    const generatedPassword = randomBytes(18).toString('base64url');
    const created: User = {
      username: ADMIN_USERNAME,
      role: 'admin',
      passwordHash: await hashPassword(generatedPassword),
      createdAt: new Date(this.now()).toISOString(),
    };
    this.users.set(ADMIN_USERNAME, created);
    this.save([created]);
    return { generatedPassword };
  }

  /** @param changed the users written here, handed to the shared store */
  private save(changed: User[]): void {
    const body = { version: FILE_VERSION, users: [...this.users.values()] };
    const done = withFileLock(this.path, () => (writeJsonAtomic(this.path, body), true), LOCK_WAIT_MS);
    if (!done) throw new StoreFileError(`${this.path}: could not take ${this.path}.lock within ${LOCK_WAIT_MS} ms`);
    if (changed.length > 0) this.onWrite?.(changed);
  }
}

function parseUser(u: unknown): User | null {
  const e = u as Partial<User> | null;
  if (
    !e ||
    typeof e !== 'object' ||
    typeof e.username !== 'string' ||
    !USERNAME.test(e.username) ||
    !isRole(e.role) ||
    typeof e.passwordHash !== 'string' ||
    !parsePasswordHash(e.passwordHash) ||
    typeof e.createdAt !== 'string'
  ) {
    return null;
  }
  return { username: e.username, role: e.role, passwordHash: e.passwordHash, createdAt: e.createdAt };
}
