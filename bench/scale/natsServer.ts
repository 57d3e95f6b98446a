/**
 * A real NATS server with JetStream, or a cluster of them, started by a benchmark or a test on
 * free 127.0.0.1 ports, each node with its own store directory (Debian's `nats-server`, 2.9). A
 * node can be killed and started again on the same ports (fault tests). test/helpers/nats.ts adds
 * the tests' install-or-skip rule.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'nats';
import { accepts, findExecutable, freePort, until } from './engines.js';

export const NATS_INSTALL = 'apt-get install -y nats-server';
const START_GIVE_UP_MS = 20_000;
const STOP_GIVE_UP_MS = 10_000;

/**
 * The nats-server executable, looked up in PATH, /usr/bin and /usr/sbin.
 * @returns its path, or undefined when it is not installed
 */
export function natsServerPath(): string | undefined {
  return findExecutable('nats-server');
}

/** One node of a NATS cluster. */
export interface NatsNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  /** Kills the node (SIGKILL unless `graceful`) and waits for it to exit; its store stays. */
  kill(graceful?: boolean): Promise<void>;
  /** Starts it again on the same ports and store; resolves once it accepts connections. */
  start(): Promise<void>;
  readonly running: boolean;
  /** The server's process id while it runs (its CPU time in /proc, for a benchmark). */
  readonly pid: number | undefined;
  logs(): string;
}

/** A NATS cluster (one node: a single server) with JetStream. */
export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** Every node's URL, comma-separated: what `--bus` takes. */
  readonly url: string;
  /** Stops every node and removes the stores. */
  stop(): Promise<void>;
}

/**
 * Starts `n` nats-server nodes with JetStream, routed to each other when n > 1, and waits until
 * JetStream answers (a meta leader elected).
 * @param n nodes (1 or 3 for replicated streams)
 * @returns the cluster; `stop()` it when done
 */
export async function startNats(n = 1): Promise<NatsCluster> {
  const bin = natsServerPath();
  if (!bin) throw new Error(`nats-server is not installed: ${NATS_INSTALL}`);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-nats-'));
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: n }, () => freePort()));
  const nodes: NatsNode[] = ports.map((port, i) => {
    const name = `n${i + 1}`;
    const conf = join(dir, `${name}.conf`);
    const lines = [`server_name: ${name}`, `listen: 127.0.0.1:${port}`, `jetstream { store_dir: "${join(dir, name)}" }`];
    if (n > 1) {
      const routes = routePorts.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`);
      lines.push(`cluster { name: csipose, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes.join(', ')}] }`);
    }
    writeFileSync(conf, lines.join('\n') + '\n');
    let child: ChildProcess | undefined;
    let log = '';
    const node: NatsNode = {
      name,
      port,
      url: `nats://127.0.0.1:${port}`,
      get running() {
        return child !== undefined;
      },
      get pid() {
        return child?.pid;
      },
      logs: () => log,
      async start() {
        if (child) return;
        const proc = spawn(bin, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
        child = proc;
        proc.stdout!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-50_000)));
        proc.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-50_000)));
        let exited = false;
        proc.once('exit', () => (exited = true));
        await until(async () => exited || (await accepts(port)), START_GIVE_UP_MS, `nats-server ${name} on port ${port}`);
        if (exited) throw new Error(`nats-server ${name} exited at start; its log:\n${log}`);
      },
      async kill(graceful = false) {
        const proc = child;
        child = undefined;
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
        proc.kill(graceful ? 'SIGTERM' : 'SIGKILL');
        const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_GIVE_UP_MS);
        await exited;
        clearTimeout(timer);
      },
    };
    return node;
  });
  const stop = async () => {
    await Promise.all(nodes.map((x) => x.kill(true)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(nodes.map((x) => x.start()));
    const url = nodes.map((x) => x.url).join(',');
    // JetStream answers once the cluster has a meta leader.
    const nc = await connect({ servers: nodes.map((x) => x.url) });
    try {
      await until(
        async () => {
          try {
            await (await nc.jetstreamManager()).getAccountInfo();
            return true;
          } catch {
            return false;
          }
        },
        START_GIVE_UP_MS,
        'JetStream to answer',
      );
    } finally {
      await nc.close();
    }
    return { nodes, url, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
