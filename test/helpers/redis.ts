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
import { spawnSync } from 'node:child_process';
import { describe, it } from 'vitest';
import { REDIS_INSTALL, redisServerPath, startRedisServer, type RedisServer } from '../../bench/scale/redisServer.js';

export { startRedisServer, type RedisServer };

/**
 * redis-server's path, installing the Debian package first when it is missing and this process
 * may (root, apt-get present), as `ensureTrainingPython` does for the training packages.
 * @returns its path, or undefined when it is not there
 */
export function ensureRedisServer(): string | undefined {
  const found = redisServerPath();
  if (found) return found;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0;
  if (!root || !apt) return undefined;
  spawnSync('sh', ['-c', `apt-get update >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive ${REDIS_INSTALL} >/dev/null 2>&1`], {
    stdio: 'ignore',
    timeout: 600_000,
  });
  return redisServerPath();
}

/**
 * `describe` for suites that need a real redis-server. Without it (and no way to install it) the
 * suite is skipped with the line to run in its title, except under CI (`CI` set), where a missing
 * server must not pass unnoticed: the suite then holds one failing test saying how to install it.
 */
export function describeWithRedis(name: string, fn: () => void): void {
  if (ensureRedisServer()) {
    describe(name, fn);
  } else if (process.env.CI) {
    describe(name, () =>
      it('needs redis-server', () => {
        throw new Error(`redis-server is not installed: ${REDIS_INSTALL}`);
      }),
    );
  } else {
    describe.skip(`${name} (skipped: redis-server not found; ${REDIS_INSTALL})`, () => it('needs redis-server', () => undefined));
  }
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
