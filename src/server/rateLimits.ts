import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type IRateLimiterOptions, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { defaults } from '../config/schema.js';

/** Rate-limit categories of DECISIONS (Form B table), plus `api` for anything else. */
export type Category = 'authentication' | 'pose_data' | 'pose_processing' | 'configuration' | 'analytics' | 'health' | 'api';

export interface Limit {
  points: number;
  duration_seconds: number;
}

/**
 * The configuration's defaults (config `rate_limits`), plus `api`: paths no route serves, limited
 * per IP as Form A's "REST API" row (1000 requests per hour).
 */
export const DEFAULT_LIMITS: Readonly<Record<Category, Limit>> = {
  ...defaults().rate_limits,
  api: { points: 1000, duration_seconds: 3600 },
};

/** What a consume reports; becomes the four X-RateLimit-* headers. */
export interface LimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  reset: number;
  /** Window length in seconds. */
  window: number;
  /** Whole seconds until the window resets, at least 1: a 429's `Retry-After`. */
  retryAfter: number;
}

/** Counters shared by every api node in one Redis (config `redis.url`). */
export interface SharedCounters {
  /** The node's command client (src/redis/connection.ts: no offline queue, short command timeout). */
  client: Redis;
  /** Key prefix (config `redis.key_prefix`); counters are `<prefix>rl:<category>:<key>`. */
  prefix: string;
  /** Called for each request the in-memory insurance limiter answered because Redis did not. */
  onFallback(): void;
}

/** The insurance limiter: the same limits in this process's memory, counting its uses. */
class InsuranceLimiter extends RateLimiterMemory {
  constructor(
    opts: IRateLimiterOptions,
    private readonly onUse: () => void,
  ) {
    super(opts);
  }

  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    this.onUse();
    return super.consume(key, points, options);
  }
}

/**
 * One limiter per category (rate-limiter-flexible), keyed by API key or user, by IP when
 * anonymous. `scale` multiplies every limit (`--rate-limit-scale`), so load tests still pay the
 * limiter's cost without being refused.
 *
 * In memory by default. With `shared` the counters live in Redis (`RateLimiterRedis`), so a budget
 * is one budget across every api node; while Redis does not answer (unreachable, or slower than
 * the client's command timeout) each node counts in its own memory (the `insuranceLimiter`, same
 * limits), so a user gets up to the limit once per node until Redis is back, and then the Redis
 * counters again, as they stood (what was counted in memory meanwhile is not added to them).
 */
export class RateLimits {
  private limiters = new Map<Category, { limiter: RateLimiterAbstract; limit: number; window: number }>();

  /**
   * @param limits per category (defaults for the others)
   * @param scale multiplies every limit
   * @param shared Redis counters shared with the other api nodes; in memory when absent
   */
  constructor(
    limits: Partial<Record<Category, Limit>> = {},
    private scale = 1,
    private readonly shared?: SharedCounters,
  ) {
    this.configure(limits);
  }

  /** Replaces the limits (live): counters restart for changed categories. */
  configure(limits: Partial<Record<Category, Limit>>, scale = this.scale): void {
    this.scale = scale;
    for (const c of Object.keys(DEFAULT_LIMITS) as Category[]) {
      const l = limits[c] ?? DEFAULT_LIMITS[c];
      const points = Math.max(1, Math.floor(l.points * this.scale));
      const cur = this.limiters.get(c);
      if (cur && cur.limit === points && cur.window === l.duration_seconds) continue;
      this.limiters.set(c, { limiter: this.limiter(c, points, l.duration_seconds), limit: points, window: l.duration_seconds });
    }
  }

  private limiter(c: Category, points: number, duration: number): RateLimiterAbstract {
    const shared = this.shared;
    if (!shared) return new RateLimiterMemory({ points, duration, keyPrefix: c });
    return new RateLimiterRedis({
      storeClient: shared.client,
      // The window length is part of the key: a changed window starts new counters, as in memory.
      keyPrefix: `${shared.prefix}rl:${c}:${duration}`,
      points,
      duration,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new InsuranceLimiter({ points, duration, keyPrefix: c }, shared.onFallback),
    });
  }

  /**
   * Takes one point for `key` in `category`.
   * @returns the state after the request, `allowed` false when over the limit
   */
  async consume(category: Category, key: string): Promise<LimitState> {
    const { limiter, limit, window } = this.limiters.get(category)!;
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await limiter.consume(key);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      res = e;
      allowed = false;
    }
    return {
      allowed,
      limit,
      remaining: Math.max(0, res.remainingPoints),
      reset: Math.ceil((Date.now() + res.msBeforeNext) / 1000),
      window,
      retryAfter: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  }
}
