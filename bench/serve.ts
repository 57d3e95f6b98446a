import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** Whether this module runs compiled (`dist/bench/`) or from source (`bench/`, under vitest). */
const compiled = basename(resolve(here, '..')) === 'dist';
/** The compiled command line and the repository, for benchmarks that run the service as users do. */
export const repoRoot = compiled ? resolve(here, '../..') : resolve(here, '..');
export const cliPath = join(repoRoot, 'dist/src/cli/main.js');

/** A `csipose serve` process of a benchmark. */
export interface ServeProcess {
  proc: ChildProcess;
  /** `http://HOST:PORT` as it printed it. */
  base: string;
  /** Its temp dir (data dir and config files), removed by {@link stopServe}. */
  dir: string;
}

/**
 * Starts `csipose serve --port 0` in a process of its own with a fresh temp dir and waits for its
 * `listening on` line.
 * @param args flags after `serve --port 0 --data-dir DIR/data`; `dir` is the temp dir, for config files
 * @param env extra environment
 * @param prefix the temp dir's name prefix
 * @param stderr `inherit` (default) shows the service's log; `pipe` leaves it to the caller
 *   (`proc.stderr`, buffered until read)
 * @param command Node's arguments before `serve`: this build's command line (default), another
 *   build's to compare with it, Node flags first (`--cpu-prof`)
 * @returns the process, its address and its temp dir
 * @example const s = await startServe(() => ['--log-level', 'error'], { CSIPOSE_ADMIN_PASSWORD: 'x' });
 */
export async function startServe(
  args: (dir: string) => string[],
  env: Record<string, string>,
  prefix = 'csipose-bench-',
  stderr: 'inherit' | 'pipe' = 'inherit',
  command: readonly string[] = [cliPath],
): Promise<ServeProcess> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const proc = spawn(process.execPath, [...command, 'serve', '--port', '0', '--data-dir', join(dir, 'data'), ...args(dir)], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', stderr],
  });
  const running: ServeProcess = { proc, base: '', dir };
  try {
    running.base = await new Promise<string>((ok, fail) => {
      let out = '';
      const t = setTimeout(() => fail(new Error('csipose serve did not start in 30 s')), 30_000);
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(t);
          ok(m[1]!);
        }
      });
      proc.once('exit', (code) => fail(new Error(`csipose serve exited with ${code}`)));
    });
    return running;
  } catch (e) {
    await stopServe(running);
    throw e;
  }
}

/** Stops a `csipose serve` (SIGTERM, SIGKILL after 15 s) and removes its temp dir. */
export async function stopServe(r: ServeProcess): Promise<void> {
  if (r.proc.exitCode === null && r.proc.signalCode === null) {
    await new Promise<void>((ok) => {
      const t = setTimeout(() => r.proc.kill('SIGKILL'), 15_000);
      r.proc.once('exit', () => {
        clearTimeout(t);
        ok();
      });
      r.proc.kill('SIGTERM');
    });
  }
  rmSync(r.dir, { recursive: true, force: true });
}
