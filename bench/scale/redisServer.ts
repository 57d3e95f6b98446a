import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, freePort } from './engines.js';

/**
 * A private `redis-server` (Debian package `redis-server`) on 127.0.0.1 and a free port, without
 * persistence, for the benchmarks of several api nodes and for the tests (test/helpers/redis.ts
 * adds the suite helpers). Stopping and starting it again on the same port is a Redis that crashed
 * and came back empty.
 */

/** Give-up bound for the server to accept connections; a safety net, not a measurement. */
const START_GIVE_UP_MS = 10_000;

/** What to run when redis-server is missing. */
export const REDIS_INSTALL = 'apt-get install -y redis-server';

/**
 * The redis-server executable, looked up in PATH, /usr/bin and /usr/sbin.
 * @returns its path, or undefined when it is not installed
 */
export function redisServerPath(): string | undefined {
  return findExecutable('redis-server');
}

/** A redis-server started by a test or a benchmark. */
export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:PORT` */
  readonly url: string;
  /** Kills it (SIGKILL: a crash, nothing saved), waits for it to exit; safe to call again. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Everything it logged. */
  logs(): string;
}

/** True once Redis answers PING on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = tcpConnect(port, '127.0.0.1');
    let got = '';
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.on('data', (c: Buffer) => {
      got += c.toString('utf8');
      if (got.includes('\r\n')) {
        sock.destroy();
        resolve(got.startsWith('+PONG'));
      }
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Starts a private redis-server on 127.0.0.1 and a free port: no RDB or AOF, its working
 * directory a fresh temp dir.
 * @returns the running server; `stop()` it when done
 * @throws Error when redis-server is missing, or with its log when it does not answer within ~10 s
 * @example
 * const r = await startRedisServer();
 * try { ... r.url ... } finally { await r.stop(); }
 */
export async function startRedisServer(): Promise<RedisServer> {
  const exe = redisServerPath();
  if (!exe) throw new Error(`redis-server is not installed: ${REDIS_INSTALL}`);
  const port = await freePort();
  let log = '';
  let child: ChildProcess | undefined;
  let dir: string | undefined;

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGKILL');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  };

  const start = async (): Promise<void> => {
    if (child) return;
    dir = mkdtempSync(join(tmpdir(), 'csipose-redis-'));
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
    const proc = spawn(exe, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout!.on('data', (c: Buffer) => (log += c.toString('utf8')));
    proc.stderr!.on('data', (c: Buffer) => (log += c.toString('utf8')));
    let exited = false;
    proc.once('exit', () => (exited = true));
    const deadline = Date.now() + START_GIVE_UP_MS;
    while (!(await answers(port))) {
      if (exited || Date.now() > deadline) {
        await stop();
        throw new Error(`redis-server did not start on port ${port}${exited ? ' (it exited)' : ''}; its log:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 30));
    }
  };

  await start();
  return { port, url: `redis://127.0.0.1:${port}`, stop, start, logs: () => log };
}
