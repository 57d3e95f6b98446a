import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';

/**
 * The connection of an api node to the Redis its nodes share (config `redis.url`, `csipose serve
 * --redis`): one client for commands and one for the pub/sub channel every node listens on.
 *
 * Nothing waits for Redis: commands are refused at once while it is unreachable (no offline
 * queue) and time out after {@link COMMAND_TIMEOUT_MS}, so a caller falls back (the rate limits'
 * insurance limiter, the local denylist) instead of holding a request. The clients reconnect on
 * their own, at most {@link MAX_RECONNECT_MS} apart; every time both are ready again the
 * `onReady` handlers run (they reload what may have changed meanwhile and write what was queued).
 */

/** A command that takes longer fails: a request must not wait on a hung Redis. */
export const COMMAND_TIMEOUT_MS = 1000;
/** Longest pause between two reconnection attempts. */
export const MAX_RECONNECT_MS = 1000;
/** How often the figures of `INFO` (memory, clients) shown in the health report are refreshed. */
const INFO_EVERY_MS = 10_000;

/** What the health report says of the Redis link (`/health/detailed` component `redis`). */
export interface RedisReport {
  /** `disconnected` (the overall status then `degraded`) until connected, and whenever the link is lost. */
  readonly status: 'healthy' | 'disconnected';
  /** Redis's `used_memory_human`, e.g. `1.05M`; `0MB` before the first INFO. */
  readonly memory_usage: string;
  readonly connected_clients: number;
  readonly connected: boolean;
  /** Times the link was lost since start. */
  readonly disconnects: number;
  /** Requests the in-memory insurance limiter counted because Redis did not answer. */
  readonly rate_limit_fallbacks: number;
  /** Writes queued while Redis was unreachable, sent once it is back. */
  readonly pending_writes: number;
  /** Commands that failed since start. */
  readonly errors: number;
  readonly last_error: string | null;
  /** ISO 8601 of the last loss of the link, null when never. */
  readonly last_disconnect_at: string | null;
}

/** Options of {@link RedisLink}. */
export interface RedisLinkOptions {
  /** `redis://HOST:PORT[/DB]` or `rediss://...`, without credentials. */
  url: string;
  /** Prefix of every key and channel (config `redis.key_prefix`). */
  prefix: string;
  /** CSIPOSE_REDIS_USERNAME, CSIPOSE_REDIS_PASSWORD. */
  env?: Record<string, string | undefined>;
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/**
 * One node's link to the shared Redis.
 *
 * @example
 * const link = new RedisLink({ url: 'redis://127.0.0.1:6379', prefix: 'csipose:' });
 * await link.waitReady(5000);
 * link.onMessage((m) => console.log(m));
 * await link.publish({ t: 'hello' });
 */
export class RedisLink {
  readonly prefix: string;
  /** The channel every node of the deployment listens on. */
  readonly channel: string;
  /** This process among the nodes: messages it published itself are not handed back to it. */
  readonly nodeId = randomBytes(9).toString('base64url');
  /** Commands (and the rate limiter's store). */
  readonly client: Redis;
  private readonly sub: Redis;
  private readonly readyHandlers: Array<() => Promise<void> | void> = [];
  private readonly messageHandlers: Array<(msg: Record<string, unknown>) => void> = [];
  private readonly log: NonNullable<RedisLinkOptions['log']>;
  private readonly infoTimer: NodeJS.Timeout;
  private everReady = false;
  private subscribed = false;
  private wasReady = false;
  private closed = false;
  private info = { memory: '0MB', clients: 0 };
  private readonly counts = { disconnects: 0, fallbacks: 0, errors: 0 };
  private lastError: string | null = null;
  private lastDisconnectAt: number | null = null;
  /** Writes the pending queue of the auth state holds; read for the report. */
  private pendingCount: () => number = () => 0;

  /**
   * Starts connecting (both clients); nothing is awaited here.
   * @param opts URL, key prefix, credentials from env, logger
   */
  constructor(opts: RedisLinkOptions) {
    this.prefix = opts.prefix;
    this.channel = `${opts.prefix}events`;
    this.log = opts.log ?? (() => undefined);
    const env = opts.env ?? process.env;
    const options: RedisOptions = {
      // Fail fast while unreachable: callers fall back rather than queue behind a lost link.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(50 * times, MAX_RECONNECT_MS),
      ...(env.CSIPOSE_REDIS_USERNAME ? { username: env.CSIPOSE_REDIS_USERNAME } : {}),
      ...(env.CSIPOSE_REDIS_PASSWORD ? { password: env.CSIPOSE_REDIS_PASSWORD } : {}),
    };
    this.client = new Redis(opts.url, { ...options, connectionName: `csipose-${this.nodeId}` });
    // The subscriber needs no command timeout (it only waits for messages) but the same fast
    // reconnect; it subscribes itself at each connect, so that `ready` means messages arrive.
    this.sub = new Redis(opts.url, { ...options, commandTimeout: undefined, autoResubscribe: false, connectionName: `csipose-sub-${this.nodeId}` });
    for (const c of [this.client, this.sub]) c.on('error', (e: Error) => this.noteError(e));
    this.client.on('ready', () => this.readyChanged());
    this.client.on('close', () => this.readyChanged());
    this.sub.on('ready', () => {
      this.sub.subscribe(this.channel).then(
        () => {
          this.subscribed = true;
          this.readyChanged();
        },
        (e: unknown) => this.noteError(e as Error),
      );
    });
    this.sub.on('close', () => {
      this.subscribed = false;
      this.readyChanged();
    });
    this.sub.on('message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        return;
      }
      if (msg === null || typeof msg !== 'object' || (msg as { n?: unknown }).n === this.nodeId) return;
      for (const h of this.messageHandlers) {
        try {
          h(msg as Record<string, unknown>);
        } catch (e) {
          this.log('error', `redis: a message handler failed: ${(e as Error).message}`);
        }
      }
    });
    this.infoTimer = setInterval(() => void this.refreshInfo(), INFO_EVERY_MS);
    this.infoTimer.unref();
  }

  /** Both clients are connected and subscribed. */
  get ready(): boolean {
    return this.client.status === 'ready' && this.sub.status === 'ready' && this.subscribed;
  }

  /**
   * Runs `fn` each time the link becomes ready from now on (not now, when it already is: the
   * caller checks {@link ready} for that). A failure is logged.
   * @param fn reloads shared state, writes what was queued
   */
  onReady(fn: () => Promise<void> | void): void {
    this.readyHandlers.push(fn);
  }

  /**
   * Handles every message another node publishes on {@link channel}.
   * @param fn receives the parsed JSON object (field `t` says what it is)
   */
  onMessage(fn: (msg: Record<string, unknown>) => void): void {
    this.messageHandlers.push(fn);
  }

  /**
   * Publishes to every other node.
   * @param msg a JSON object; `n` (this node) is added
   * @throws when Redis is unreachable
   */
  async publish(msg: Record<string, unknown>): Promise<void> {
    await this.client.publish(this.channel, JSON.stringify({ ...msg, n: this.nodeId }));
  }

  /**
   * Waits until both clients are ready.
   * @param ms how long
   * @returns true when ready, false after `ms`
   */
  async waitReady(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.ready && !this.closed) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.ready;
  }

  /** @returns where the rate limits keep their counters (src/server/rateLimits.ts `SharedCounters`) */
  rateLimitCounters(): { client: Redis; prefix: string; onFallback(): void } {
    return { client: this.client, prefix: this.prefix, onFallback: () => this.counts.fallbacks++ };
  }

  /**
   * Records a failed command for the report.
   * @param e the failure
   */
  noteError(e: Error): void {
    this.counts.errors++;
    this.lastError = e.message;
  }

  /** @param fn how many writes wait for Redis (the auth state's queue) */
  pendingFrom(fn: () => number): void {
    this.pendingCount = fn;
  }

  /** @returns the `redis` component of `/health/detailed` */
  report(): RedisReport {
    const connected = this.ready;
    return {
      status: connected ? 'healthy' : 'disconnected',
      memory_usage: this.info.memory,
      connected_clients: this.info.clients,
      connected,
      disconnects: this.counts.disconnects,
      rate_limit_fallbacks: this.counts.fallbacks,
      pending_writes: this.pendingCount(),
      errors: this.counts.errors,
      last_error: this.lastError,
      last_disconnect_at: this.lastDisconnectAt === null ? null : new Date(this.lastDisconnectAt).toISOString(),
    };
  }

  /** Disconnects both clients. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.infoTimer);
    await Promise.all([this.client, this.sub].map((c) => c.quit().catch(() => c.disconnect())));
  }

  private readyChanged(): void {
    const ready = this.ready;
    if (ready === this.wasReady) return;
    this.wasReady = ready;
    if (!ready) {
      if (this.closed) return;
      this.counts.disconnects++;
      this.lastDisconnectAt = Date.now();
      this.log('warn', 'redis: connection lost; rate limits fall back to this node, revocations are queued until it is back');
      return;
    }
    this.log('info', this.everReady ? 'redis: reconnected' : 'redis: connected');
    this.everReady = true;
    void this.refreshInfo();
    for (const fn of this.readyHandlers) void this.runReady(fn);
  }

  private async runReady(fn: () => Promise<void> | void): Promise<void> {
    try {
      await fn();
    } catch (e) {
      this.noteError(e as Error);
      this.log('warn', `redis: catching up after (re)connect failed: ${(e as Error).message}`);
    }
  }

  private async refreshInfo(): Promise<void> {
    if (!this.ready) return;
    try {
      const text = await this.client.info();
      const memory = /^used_memory_human:(\S+)/m.exec(text)?.[1];
      const clients = /^connected_clients:(\d+)/m.exec(text)?.[1];
      this.info = { memory: memory ?? this.info.memory, clients: clients ? Number(clients) : this.info.clients };
    } catch (e) {
      this.noteError(e as Error);
    }
  }
}
