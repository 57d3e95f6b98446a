/**
 * A real NATS server or cluster for tests (the processes themselves are bench/scale/natsServer.ts,
 * which the scale benchmarks share): nats-server installed where the test may, and the suite
 * skipped with the line to run where it is missing.
 */
import { NATS_INSTALL, natsServerPath, startNats, type NatsCluster, type NatsNode } from '../../bench/scale/natsServer.js';
import { describeWithEngine, ensureExecutable } from './engines.js';

export { startNats, type NatsCluster, type NatsNode };

/**
 * nats-server's path, installing Debian's package first where this process may (root, apt-get).
 * @returns its path, or undefined when it is not there
 */
export function ensureNatsServer(): string | undefined {
  return natsServerPath() ?? (ensureExecutable('nats-server', 'nats-server') && natsServerPath());
}

/** `describe` for suites that need nats-server (see describeWithEngine). */
export function describeWithNats(name: string, fn: () => void): void {
  describeWithEngine(name, ensureNatsServer(), NATS_INSTALL, fn);
}
