#!/usr/bin/env node
/**
 * `npm start`'s prestart: builds only what is older than its sources, and says what it does.
 *
 * `npm install` builds already (prepare), and `npm start` used to build again every time: a minute
 * with no output before the service started. This checks each part of `npm run build` against
 * its sources by modification time and starts at once when everything is current; when a part is
 * stale it names the newest source that made it so and runs that part's steps, one progress line
 * per step (and a line every 15 s while a step runs).
 *
 * Plain JavaScript beside the CLI it guards, not TypeScript: it has to run before anything is
 * built, and when what is built is stale.
 *
 * Usage: node src/cli/ensureBuilt.mjs [--check] [--root DIR]
 *   --check     only report: exit 0 when the build is current, 1 when a part is stale
 *   --root DIR  the project folder (default: the one this file is in)
 * Exit status: 0 current or built, 1 stale (--check), 2 a build step failed.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Seconds between "still running" lines while a step runs. */
const HEARTBEAT_S = 15;

/**
 * The parts of `npm run build` (package.json "build" is these commands joined by &&, in order;
 * test/cli/start.test.ts keeps the two the same), each with the output it refreshes and the
 * sources it reads. The lockfile is a source of both: a dependency's new version can change
 * what tsc accepts and what esbuild bundles.
 */
export const PARTS = [
  {
    name: 'the service (tsc)',
    commands: ['tsc -p tsconfig.json'],
    output: 'dist/src/cli/main.js',
    sources: (root) => [...tree(root, ['src', 'operators', 'pipelines'], (f) => f.endsWith('.ts')), ...existing(root, ['tsconfig.json', 'package-lock.json'])],
  },
  {
    name: 'the dashboard (typecheck, bundle)',
    commands: ['tsc -p web/tsconfig.json', 'node web/build.mjs'],
    output: 'dist/web/index.html',
    sources: (root) => [
      ...tree(root, ['web/src'], () => true),
      // The dashboard imports a few service modules (the camera, the config types).
      ...importedFrom(root, 'web/src'),
      ...existing(root, ['web/index.html', 'web/build.mjs', 'web/tsconfig.json', 'package-lock.json']),
    ],
  },
];

/**
 * Files under `dirs` that `keep` accepts, and the folders themselves: a folder's time changes when
 * a file is added, renamed or deleted in it, which no remaining file's time shows.
 * @returns paths relative to `root`
 */
function tree(root, dirs, keep) {
  const out = [];
  const walk = (rel) => {
    out.push(rel);
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = join(rel, e.name);
      if (e.isDirectory()) walk(p);
      else if (keep(e.name)) out.push(p);
    }
  };
  for (const d of dirs) if (existsSync(join(root, d))) walk(d);
  return out;
}

/** The paths of `files` that exist. */
function existing(root, files) {
  return files.filter((f) => existsSync(join(root, f)));
}

/** TypeScript files outside `dir` that the files under it import, directly or not (relative imports). */
function importedFrom(root, dir) {
  const seen = new Set();
  const queue = tree(root, [dir], (f) => f.endsWith('.ts')).filter((f) => f.endsWith('.ts'));
  const inside = new Set(queue);
  while (queue.length > 0) {
    const file = queue.pop();
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s+'(\.\.?\/[^']+)'/g)) {
      const target = relative(root, resolve(root, dirname(file), m[1].replace(/\.js$/, '.ts')));
      if (!target.endsWith('.ts') || inside.has(target) || seen.has(target) || !existsSync(join(root, target))) continue;
      seen.add(target);
      queue.push(target);
    }
  }
  return [...seen];
}

/**
 * Which parts of the build are older than their sources.
 * @param root the project folder
 * @returns one entry per stale part: the part, and why (its output is missing, or the newest source)
 */
export function staleParts(root) {
  const stale = [];
  for (const part of PARTS) {
    const out = join(root, part.output);
    if (!existsSync(out)) {
      stale.push({ part, reason: `${part.output} is missing` });
      continue;
    }
    const built = statSync(out).mtimeMs;
    let newest;
    let newestT = -Infinity;
    for (const src of part.sources(root)) {
      const t = statSync(join(root, src)).mtimeMs;
      if (t > newestT) {
        newest = src;
        newestT = t;
      }
    }
    if (newestT > built) stale.push({ part, reason: `${newest} changed after ${part.output} was built` });
  }
  return stale;
}

function say(line) {
  process.stderr.write(`csipose: ${line}\n`);
}

/** Runs one command through the shell with the project's node_modules/.bin first on PATH. */
function run(root, command) {
  return new Promise((resolvePromise) => {
    const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}` };
    const child = spawn(command, { cwd: root, env, shell: true, stdio: ['ignore', 'inherit', 'inherit'] });
    const t0 = Date.now();
    const beat = setInterval(() => say(`  still running after ${Math.round((Date.now() - t0) / 1000)} s`), HEARTBEAT_S * 1000);
    child.on('error', (e) => {
      clearInterval(beat);
      resolvePromise({ code: 127, message: e.message });
    });
    child.on('close', (code, signal) => {
      clearInterval(beat);
      resolvePromise({ code: code ?? 1, message: signal ? `killed by ${signal}` : `exit status ${code}` });
    });
  });
}

async function main(argv) {
  const check = argv.includes('--check');
  const rootAt = argv.indexOf('--root');
  const root = resolve(rootAt >= 0 ? argv[rootAt + 1] : join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
  const stale = staleParts(root);
  if (stale.length === 0) {
    say('build is current; starting');
    return 0;
  }
  const first = stale[0].reason.endsWith('is missing') ? 'no build yet' : 'sources changed since the last build';
  const why = stale.map((s) => s.reason).join('; ');
  if (check) {
    say(`${first} (${why})`);
    return 1;
  }
  const commands = stale.flatMap((s) => s.part.commands);
  say(`${first} (${why}); building ${stale.map((s) => s.part.name).join(' and ')}, ${commands.length} step${commands.length > 1 ? 's' : ''}...`);
  const t0 = Date.now();
  for (let i = 0; i < commands.length; i++) {
    const step = `[${i + 1}/${commands.length}] ${commands[i]}`;
    say(step);
    const t = Date.now();
    const r = await run(root, commands[i]);
    if (r.code !== 0) {
      say(`build failed at ${step} (${r.message}); not starting`);
      return 2;
    }
    say(`[${i + 1}/${commands.length}] done in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  say(`build done in ${((Date.now() - t0) / 1000).toFixed(1)} s; starting`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (e) => {
      say(`cannot check the build: ${e?.message ?? e}`);
      process.exitCode = 2;
    },
  );
}
