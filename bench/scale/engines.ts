/**
 * What starting a real engine (a broker, a bus, a key-value server) on this machine takes, for the
 * benchmarks and the tests alike (test/helpers/engines.ts adds the tests' install-or-skip rule):
 * finding its executable, a free port, and waiting for it to accept connections.
 */
import { accessSync, constants } from 'node:fs';
import { connect as tcpConnect, createServer } from 'node:net';
import { delimiter, join } from 'node:path';

/**
 * Path of an executable found in PATH, /usr/bin, /usr/sbin or /usr/local/sbin (where Debian puts daemons).
 * @returns its path, or undefined when it is not installed
 */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/bin', '/usr/sbin', '/usr/local/sbin'];
  for (const d of dirs) {
    const p = join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port on 127.0.0.1 that was free a moment ago: bound on port 0, then released. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** True once a TCP connection to 127.0.0.1:port succeeds. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = tcpConnect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Polls `ready` every 50 ms until it is true.
 * @param ready the check
 * @param giveUpMs a safety net, not a measurement
 * @param what named in the error
 * @throws Error when the bound passes first
 */
export async function until(ready: () => Promise<boolean> | boolean, giveUpMs: number, what: string): Promise<void> {
  const deadline = Date.now() + giveUpMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${giveUpMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
