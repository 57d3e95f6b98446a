/**
 * The real `csipose serve` as a child process (from `dist/`, built by ensureBuilt), for tests
 * about the process itself: that it survives a request, that what it saved outlives it.
 *
 * @example
 * beforeAll(() => ensureBuilt(), 120_000);
 * const s = await serveCli(dataDir);
 * try { ... fetch(`${s.base}/api/v1/health`) ... } finally { await s.stop(); }
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cliMain, repoRoot } from './cli.js';
import { ADMIN_PASSWORD } from './server.js';

export interface ServedCli {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT`. */
  base: string;
  /** Resolves with the exit code once the process has exited (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Exited already (for a test that the process is still up). */
  readonly gone: boolean;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `csipose serve --host 127.0.0.1 --port 0 --data-dir DIR --no-autostart --no-dashboard`
 * with the admin password {@link ADMIN_PASSWORD} and none of our CSIPOSE_* variables, and waits
 * for its `listening on` line (fails after 30 s, a bound against hanging).
 * @param dataDir the data directory
 * @param args more flags
 */
export function serveCli(dataDir: string, args: readonly string[] = []): Promise<ServedCli> {
  return spawnServe(
    ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--no-autostart', '--no-dashboard', ...args],
    /listening on (http:\/\/[\d.]+:\d+)\n/,
  );
}

/**
 * Spawns a node of a cluster, `csipose serve --role ROLE --bus URL --data-dir DIR ...`, and waits
 * for its ready line (`... on the bus`); `base` is that line.
 * @param dataDir the node's data directory
 * @param args `--role`, `--bus` and more
 */
export function roleCli(dataDir: string, args: readonly string[]): Promise<ServedCli> {
  return spawnServe(['--data-dir', dataDir, ...args], /^(.* on the bus)\n/m);
}

/**
 * Signs in as admin on a served process with {@link ADMIN_PASSWORD} (each node signs its own
 * tokens unless a cluster shares its secret).
 * @param base the process's `http://127.0.0.1:PORT`
 * @returns the access token
 * @throws Error with the status and body when the sign-in is refused
 */
export async function adminToken(base: string): Promise<string> {
  const r = await fetch(`${base}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  if (r.status !== 200) throw new Error(`signing in at ${base}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { data: { access_token: string } }).data.access_token;
}

/** Spawns `csipose serve ARGS` and resolves once stdout matches `ready` (its first group is `base`). */
function spawnServe(args: readonly string[], ready: RegExp): Promise<ServedCli> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CSIPOSE_')) env[k] = v;
  env.CSIPOSE_ADMIN_PASSWORD = ADMIN_PASSWORD;
  const child = spawn(process.execPath, [cliMain, 'serve', ...args], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let gone = false;
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      gone = true;
      resolve(code);
    }),
  );
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not say it was ready:\n${out}\n${err}`));
    }, 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = ready.exec(out);
      if (!m) return;
      clearTimeout(guard);
      resolve({
        child,
        base: m[1]!,
        exited,
        get gone() {
          return gone;
        },
        stdout: () => out,
        stderr: () => err,
        stop: () => {
          if (!gone) child.kill('SIGTERM');
          return exited;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(guard);
      reject(new Error(`serve exited with ${code} before it was ready:\n${out}\n${err}`));
    });
  });
}
