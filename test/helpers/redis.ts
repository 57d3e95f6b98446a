/**
 * A real redis-server for tests (the process itself is bench/scale/redisServer.ts, which the
 * benchmarks of several api nodes share): on 127.0.0.1 and a free port, no persistence,
 * `stop()` and `start()` for kill-and-recover tests.
 *
 * @example
 * describeWithRedis('shared state', () => {
 *   it('...', () => withRedis(async (r) => { ... r.url ... }));
 * });
 */
import { REDIS_INSTALL, redisServerPath, startRedisServer, type RedisServer } from '../../bench/scale/redisServer.js';
import { describeWithEngine, ensureExecutable } from './engines.js';

export { startRedisServer, type RedisServer };

/**
 * redis-server's path, installing Debian's package first where this process may (root, apt-get).
 * @returns its path, or undefined when it is not there
 */
export function ensureRedisServer(): string | undefined {
  return redisServerPath() ?? (ensureExecutable('redis-server', 'redis-server') && redisServerPath());
}

/** `describe` for suites that need a real redis-server (see describeWithEngine). */
export function describeWithRedis(name: string, fn: () => void): void {
  describeWithEngine(name, ensureRedisServer(), REDIS_INSTALL, fn);
}

/**
 * Runs `fn` with a fresh redis-server, stopping it afterwards whatever happens.
 * @example await withRedis(async (r) => { ... r.url ... });
 */
export async function withRedis<T>(fn: (r: RedisServer) => Promise<T>): Promise<T> {
  const r = await startRedisServer();
  try {
    return await fn(r);
  } finally {
    await r.stop();
  }
}
