import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
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

/**
 * One in-memory limiter per category (rate-limiter-flexible), keyed by API key or user, by IP when
 * anonymous. `scale` multiplies every limit (`--rate-limit-scale`), so load tests still pay the
 * limiter's cost without being refused.
 */
export class RateLimits {
  private limiters = new Map<Category, { limiter: RateLimiterMemory; limit: number; window: number }>();

  constructor(
    limits: Partial<Record<Category, Limit>> = {},
    private scale = 1,
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
      this.limiters.set(c, {
        limiter: new RateLimiterMemory({ points, duration: l.duration_seconds, keyPrefix: c }),
        limit: points,
        window: l.duration_seconds,
      });
    }
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
