/**
 * A real NATS server or cluster for tests (the processes themselves are bench/scale/natsServer.ts,
 * which the scale benchmarks share): nats-server installed where the test may, and the suite
 * skipped with the line to run where it is missing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { ConfigStore } from '../../src/config/store.js';
import { ensureBuilt } from './cli.js';
import { roleCli, type ServedCli } from './serveCli.js';
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

/** What {@link useNatsRoles} gives a suite: its server, a connection to it, and the processes it starts. */
export interface NatsRoles {
  /** The suite's temp dir (each process's data dir is a folder of it; config files may go there too). */
  readonly dir: string;
  /** The server's URL (from the suite's beforeAll on). */
  readonly url: string;
  /** A client connection of the test's own. */
  readonly nc: NatsConnection;
  /** The server's nodes (one, or three with `nodes` 3), to kill and start again. */
  readonly nodes: readonly NatsNode[];
  /** A process to kill when the suite ends. */
  keep(n: ServedCli): ServedCli;
  /** `csipose serve --bus URL ...args` in `dir/name` (a role without HTTP: ingest, worker), killed when the suite ends. */
  role(name: string, args: readonly string[]): Promise<ServedCli>;
}

/**
 * A suite's NATS server (one node, or a cluster), a client connection and the `csipose serve` processes it
 * starts: set up before its tests (the service built first) and torn down after them, every
 * process SIGKILLed and the temp dir removed. Call it first in a `describeWithNats` body: its
 * hooks come before the suite's own, so the suite's afterAll runs while the server still does.
 * @param prefix the temp dir's name prefix
 * @param nodes nats-server nodes (3: a cluster, for replicated streams)
 * @returns the suite's server, connection and processes
 * @example const bus = useNatsRoles('csipose-fence-'); ... await bus.role('w1', ['--role', 'worker']);
 */
export function useNatsRoles(prefix: string, nodes = 1): NatsRoles {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const procs: ServedCli[] = [];
  let nats: NatsCluster | undefined;
  let nc: NatsConnection | undefined;
  beforeAll(async () => {
    ensureBuilt();
    nats = await startNats(nodes);
    nc = await connect({ servers: nats.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  }, 180_000);
  afterAll(async () => {
    for (const n of procs) if (!n.gone) n.child.kill('SIGKILL');
    await nc?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const keep = (n: ServedCli): ServedCli => {
    procs.push(n);
    return n;
  };
  return {
    dir,
    get url() {
      return nats!.url;
    },
    get nc() {
      return nc!;
    },
    get nodes() {
      return nats!.nodes;
    },
    keep,
    role: async (name, args) => keep(await roleCli(join(dir, name), ['--bus', nats!.url, ...args])),
  };
}

/**
 * A suite's NATS server (one node) and a ConfigStore of the defaults, for tests of the cluster's
 * classes in this process; torn down after the suite.
 * @param prefix the temp dir's name prefix
 * @returns getters for both
 */
export function useNatsAndConfig(prefix: string): { readonly nats: NatsCluster; readonly config: ConfigStore } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let nats: NatsCluster | undefined;
  let config: ConfigStore | undefined;
  beforeAll(async () => {
    nats = await startNats(1);
    config = await ConfigStore.open({ dataDir: dir });
  }, 60_000);
  afterAll(async () => {
    config?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get nats() {
      return nats!;
    },
    get config() {
      return config!;
    },
  };
}
