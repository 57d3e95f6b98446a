/**
 * What every test that starts a real engine (a broker, a bus, a key-value server) needs: finding
 * its executable, installing its Debian package where the test may, free ports, waiting for it to
 * accept connections, and the rule for when it is missing (skip with the line to run; under CI a
 * failing test, never a skip).
 */
import { spawnSync } from 'node:child_process';
import { describe, it } from 'vitest';
import { accepts, findExecutable, freePort, until } from '../../bench/scale/engines.js';

export { accepts, findExecutable, freePort, until };

/**
 * The executable, installing its Debian package first when it is missing and this process may
 * (root, apt-get present). One `apt-get update` per process.
 * @param name the executable
 * @param pkg its Debian package
 * @returns its path, or undefined when it is still missing
 */
export function ensureExecutable(name: string, pkg: string): string | undefined {
  const found = findExecutable(name);
  if (found) return found;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !findExecutable('apt-get')) return undefined;
  spawnSync('sh', ['-c', `apt-get update >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkg} >/dev/null 2>&1`], {
    stdio: 'ignore',
    timeout: 600_000,
  });
  return findExecutable(name);
}

/**
 * `describe` for suites that need an engine. Without it the suite is skipped with the line to run
 * in its title, except under CI (`CI` set), where it holds one failing test saying so.
 * @param name the suite
 * @param exe the engine's executable, or undefined when missing
 * @param install the line that installs it (`apt-get install -y nats-server`)
 * @param fn the suite's body
 */
export function describeWithEngine(name: string, exe: string | undefined, install: string, fn: () => void): void {
  if (exe) describe(name, fn);
  else if (process.env.CI)
    describe(name, () =>
      it(`needs ${install}`, () => {
        throw new Error(`not installed: ${install} (.ci/run installs it)`);
      }),
    );
  else describe.skip(`${name} (skipped: ${install})`, () => it('needs the engine', () => undefined));
}
