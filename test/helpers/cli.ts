import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root. */
export const repoRoot = resolve(here, '../..');

/** The built command line, as `npm start` and the `csipose` bin run it. */
export const cliMain = join(repoRoot, 'dist/src/cli/main.js');

/**
 * What `ensureBuilt` builds: the service (`npm run build`'s tsc) or the offline code of
 * training/ts (`npm run build:training`, whose workers and scripts some tests run from `dist/`).
 * Each with the tsconfig, an output it writes, and the folders of its TypeScript sources.
 */
const PROJECTS = {
  service: { tsconfig: 'tsconfig.json', output: cliMain, dirs: ['src', 'operators', 'pipelines'] },
  training: {
    tsconfig: 'training/tsconfig.json',
    output: join(repoRoot, 'dist/training/ts/trainRefiner.js'),
    dirs: ['src', 'operators', 'pipelines', 'training/ts'],
  },
} as const;

/** A build `ensureBuilt` can make. */
export type Project = keyof typeof PROJECTS;

/** Newest modification time (ms) of any .ts file under `dir`, 0 when there is none. */
function newestTs(dir: string): number {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestTs(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

function isFresh(project: Project): boolean {
  const { output, dirs } = PROJECTS[project];
  if (!existsSync(output)) return false;
  const built = statSync(output).mtimeMs;
  return dirs.every((d) => newestTs(join(repoRoot, d)) <= built);
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Makes sure a build's output (`dist/src/cli/main.js` for the service, `dist/training/ts/` for the
 * offline code) exists and is newer than every source file, running `npx tsc -p <its tsconfig>`
 * once if not. Test files run in parallel worker processes, so the build is guarded by a lock
 * directory, one for both builds (both write `dist/src/`): one process compiles, the others wait
 * and re-check. Type errors elsewhere do not stop tsc from emitting, so only a missing output is
 * fatal.
 *
 * @param project the service (default) or the offline code of training/ts
 * @throws Error when the build does not produce its output
 * @example
 * beforeAll(() => ensureBuilt(), 120_000);
 * beforeAll(() => ensureBuilt('training'), 120_000);
 */
export function ensureBuilt(project: Project = 'service'): void {
  if (isFresh(project)) return;
  const lock = join(tmpdir(), `csipose-build-${createHash('sha1').update(repoRoot).digest('hex').slice(0, 12)}.lock`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another worker is compiling; a lock older than two minutes was left by a killed run.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 120_000) rmdirSync(lock);
      } catch {
        // it went away meanwhile
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${lock}`);
      sleepSync(100);
    }
  }
  try {
    if (isFresh(project)) return;
    const { tsconfig, output } = PROJECTS[project];
    const r = spawnSync('npx', ['tsc', '-p', tsconfig], { cwd: repoRoot, encoding: 'utf8', timeout: 110_000 });
    if (!existsSync(output)) {
      throw new Error(`build failed, ${output} is missing:\n${r.stdout ?? ''}${r.stderr ?? ''}`);
    }
  } finally {
    rmdirSync(lock);
  }
}

/** What a finished `csipose` process left behind. */
export interface CliResult {
  /** Exit status; null when it was killed. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when the process was killed for running past `timeoutMs`. */
  timedOut: boolean;
}

export interface CliOptions {
  /** Kill the process (SIGKILL) after this long; default 20 s. */
  timeoutMs?: number;
  /** Written to the process's stdin, which is then closed. Without it stdin is closed at once. */
  input?: string | Uint8Array;
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/**
 * Runs `node dist/src/cli/main.js ...args` and collects its output.
 *
 * @param args command-line arguments after `csipose`
 * @param opts timeout, stdin input, environment
 * @returns exit status, signal, stdout and stderr as text
 * @example
 * const r = await runCli(['decode', '--format', 'esp32', 'example_csi.csv']);
 * expect(r.code).toBe(0);
 */
export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [cliMain, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => {
      // The process may exit before reading its input; that is its business, not the test's.
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        timedOut,
      });
    });
  });
}

/** The non-empty lines of `text` parsed as JSON, one value per line. */
export function ndjson<T = unknown>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as T);
}
