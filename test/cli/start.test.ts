import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript (it runs before anything is built), no declarations
import { PARTS } from '../../src/cli/ensureBuilt.mjs';
import { ensureBuilt, repoRoot } from '../helpers/cli.js';

const script = join(repoRoot, 'src/cli/ensureBuilt.mjs');

/** Runs the prestart check on `root`; its messages go to stderr. */
function check(root: string, ...args: string[]): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [script, '--root', root, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stderr: r.stderr };
}

/**
 * Marks a source (file or folder) as changed after the last build: its time becomes now, or just
 * after the newest output should the clock not have moved on since the build.
 */
function touch(root: string, file: string): void {
  const built = Math.max(...['dist/src/cli/main.js', 'dist/web/index.html'].map((f) => statSync(join(root, f)).mtimeMs));
  const t = Math.max(Date.now(), built + 5) / 1000;
  utimesSync(join(root, file), t, t);
}

describe('the npm start build check, on a small project built with the real tools', () => {
  let root: string;
  const write = (rel: string, text: string) => {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  };
  const mtime = (rel: string) => statSync(join(root, rel)).mtimeMs;

  beforeAll(() => {
    // The project's own build files; a service of two modules and a dashboard that imports one.
    root = mkdtempSync(join(tmpdir(), 'csipose-start-'));
    symlinkSync(join(repoRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
    for (const f of ['tsconfig.json', 'package.json', 'web/tsconfig.json', 'web/build.mjs', 'web/index.html']) {
      mkdirSync(dirname(join(root, f)), { recursive: true });
      copyFileSync(join(repoRoot, f), join(root, f));
    }
    write('package-lock.json', '{}\n');
    write('src/shared.ts', 'export const greeting: string = "hello";\n');
    write('src/cli/main.ts', 'import { greeting } from "../shared.js";\nexport const main = (): string => greeting;\n');
    write('web/src/main.ts', "import './style.css';\nimport { greeting } from '../../src/shared.js';\ndocument.title = greeting;\n");
    write('web/src/style.css', 'body { color: black; }\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('with no build yet: says so, runs the three steps with a line for each, and succeeds', () => {
    const c = check(root, '--check');
    expect(c.code).toBe(1);
    expect(c.stderr).toBe('csipose: no build yet (dist/src/cli/main.js is missing; dist/web/index.html is missing)\n');
    const r = check(root);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^csipose: no build yet \(.*\); building the service \(tsc\) and the dashboard \(typecheck, bundle\), 3 steps\.\.\.\n/);
    for (const [i, step] of ['tsc -p tsconfig.json', 'tsc -p web/tsconfig.json', 'node web/build.mjs'].entries()) {
      expect(r.stderr).toContain(`csipose: [${i + 1}/3] ${step}\n`);
      expect(r.stderr).toMatch(new RegExp(`csipose: \\[${i + 1}/3\\] done in \\d+\\.\\d s\\n`));
    }
    expect(r.stderr).toMatch(/csipose: build done in \d+\.\d s; starting\n$/);
    expect(readFileSync(join(root, 'dist/src/cli/main.js'), 'utf8')).toContain('greeting');
    expect(readFileSync(join(root, 'dist/web/index.html'), 'utf8')).toMatch(/assets\/app-\w+\.js/);
  }, 120_000);

  it('when the build is current: starts at once, building nothing', () => {
    const before = [mtime('dist/src/cli/main.js'), mtime('dist/web/index.html')];
    expect(check(root, '--check')).toEqual({ code: 0, stderr: 'csipose: build is current; starting\n' });
    expect(check(root)).toEqual({ code: 0, stderr: 'csipose: build is current; starting\n' });
    expect([mtime('dist/src/cli/main.js'), mtime('dist/web/index.html')]).toEqual(before);
  });

  it('a changed service module rebuilds the service only; one the dashboard imports rebuilds both', () => {
    touch(root, 'src/cli/main.ts');
    const c = check(root, '--check');
    expect(c).toEqual({ code: 1, stderr: 'csipose: sources changed since the last build (src/cli/main.ts changed after dist/src/cli/main.js was built)\n' });
    const web = mtime('dist/web/index.html');
    const r = check(root);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('building the service (tsc), 1 step...\n');
    expect(r.stderr).toContain('csipose: [1/1] tsc -p tsconfig.json\n');
    expect(mtime('dist/web/index.html')).toBe(web);
    expect(check(root, '--check').code).toBe(0);

    touch(root, 'src/shared.ts');
    const both = check(root, '--check');
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('src/shared.ts changed after dist/src/cli/main.js was built; src/shared.ts changed after dist/web/index.html was built');
    expect(check(root).code).toBe(0);
    expect(check(root, '--check').code).toBe(0);
  }, 120_000);

  it("the dashboard's own sources, tsconfig, the lockfile, and added or deleted files count too", () => {
    const cases: Array<[string, () => void, RegExp]> = [
      ['style sheet', () => touch(root, 'web/src/style.css'), /\(web\/src\/style\.css changed after dist\/web\/index\.html was built\)/],
      ['tsconfig', () => touch(root, 'tsconfig.json'), /\(tsconfig\.json changed after dist\/src\/cli\/main\.js was built\)/],
      [
        'lockfile',
        () => touch(root, 'package-lock.json'),
        /package-lock\.json changed after dist\/src\/cli\/main\.js was built; package-lock\.json changed after dist\/web\/index\.html/,
      ],
      [
        'added file',
        () => {
          write('src/cli/extra.ts', 'export const extra = 1;\n');
          touch(root, 'src/cli');
          touch(root, 'src/cli/extra.ts');
        },
        /src\/cli(\/extra\.ts)? changed after dist\/src\/cli\/main\.js/,
      ],
      [
        'deleted file',
        () => {
          unlinkSync(join(root, 'src/cli/extra.ts'));
          touch(root, 'src/cli');
        },
        /\(src\/cli changed after dist\/src\/cli\/main\.js was built\)/,
      ],
    ];
    for (const [what, change, reason] of cases) {
      change();
      const c = check(root, '--check');
      expect(c.code, what).toBe(1);
      expect(c.stderr, what).toMatch(reason);
      expect(check(root).code, what).toBe(0);
      expect(check(root, '--check').code, what).toBe(0);
    }
  }, 240_000);

  it('a step that fails stops the start with a message naming it', () => {
    write('src/cli/main.ts', 'export const main: number = "not a number";\n');
    touch(root, 'src/cli/main.ts');
    const r = check(root);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/csipose: build failed at \[1\/1\] tsc -p tsconfig\.json \(exit status \d+\); not starting\n$/);
  }, 120_000);
});

describe('npm start', () => {
  it('builds as `npm run build` does: the same commands in the same order', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect((PARTS as Array<{ commands: string[] }>).flatMap((p) => p.commands).join(' && ')).toBe(pkg.scripts.build);
    expect(pkg.scripts.prestart).toBe('node src/cli/ensureBuilt.mjs');
    expect(pkg.scripts.start).toBe('node dist/src/cli/main.js serve');
  });

  it('with the build current, starts the service without building', async () => {
    ensureBuilt();
    // Whatever is still stale (the dashboard, after a tsc-only build) is built now, as npm start would.
    expect(spawnSync(process.execPath, [script], { cwd: repoRoot, encoding: 'utf8', timeout: 170_000 }).status).toBe(0);
    const data = mkdtempSync(join(tmpdir(), 'csipose-start-data-'));
    // Its own process group, so that npm and the service it starts are stopped together.
    const child = spawn('npm', ['start', '--', '--port', '0', '--data-dir', data, '--no-autostart'], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const safety = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 60_000);
    try {
      await new Promise<void>((resolve) => {
        child.stdout.on('data', () => out.includes('listening on http://') && resolve());
        child.on('close', () => resolve());
      });
      expect(out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(err).toContain('csipose: build is current; starting\n');
      expect(out + err).not.toMatch(/building|tsc -p/);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await closed;
      clearTimeout(safety);
      rmSync(data, { recursive: true, force: true });
    }
  }, 240_000);
});
