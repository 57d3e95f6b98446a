import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/cli.js';

/** Every TypeScript file under a folder, relative to the repository. */
function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(repoRoot, dir))) {
    const p = join(dir, name);
    if (statSync(join(repoRoot, p)).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The repository paths a file imports (relative imports only). */
function imports(file: string): string[] {
  const text = readFileSync(join(repoRoot, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
    out.push(relative(repoRoot, join(repoRoot, file, '..', m[1]!)).replace(/\.js$/, '.ts'));
  }
  return out;
}

/** The repository paths a file loads with `import('...')` (relative paths only). */
function dynamicImports(file: string): string[] {
  const text = readFileSync(join(repoRoot, file), 'utf8');
  return [...text.matchAll(/\bimport\(\s*(['"`])(\.[^'"`]+)\1\s*\)/g)].map((m) => relative(repoRoot, join(repoRoot, file, '..', m[2]!)).replace(/\.js$/, '.ts'));
}

const SOURCES = [...files('src'), ...files('operators'), ...files('pipelines')];

describe('the shape of the house', () => {
  it('no operator keeps module-level state: state lives in each subscription (no top-level let or var)', () => {
    const offenders = files('operators').flatMap((f) =>
      readFileSync(join(repoRoot, f), 'utf8')
        .split('\n')
        .map((line, i) => [line, i + 1] as const)
        .filter(([line]) => /^(let|var)\s/.test(line))
        .map(([line, n]) => `${f}:${n}: ${line.trim()}`),
    );
    expect(offenders).toEqual([]);
  });

  it('data flows one way: nothing below the server imports from it', () => {
    // Only the composition root and the command line stand above the server.
    const above = (f: string) => f.startsWith('src/server/') || f === 'src/app.ts' || f.startsWith('src/cli/');
    const offenders = SOURCES.filter((f) => !above(f)).flatMap((f) => imports(f).filter((i) => i.startsWith('src/server/')).map((i) => `${f} -> ${i}`));
    expect(offenders).toEqual([]);
  });

  it('the server reads the service through its face, never the class that holds the pipeline', () => {
    const offenders = files('src/server').flatMap((f) => imports(f).filter((i) => i === 'src/service/service.ts').map((i) => `${f} -> ${i}`));
    expect(offenders).toEqual([]);
  });

  it('the service knows no transport: it imports neither uWebSockets.js nor the outlets of others', () => {
    for (const f of files('src/service')) {
      const text = readFileSync(join(repoRoot, f), 'utf8');
      expect(text, f).not.toMatch(/from 'uWebSockets\.js'|from 'mqtt'/);
    }
  });

  it('the service loads no offline code: training, evaluation and studies live in training/ts, benchmarks in bench/', () => {
    // What `csipose serve` can load is what the service's build compiles (src/, operators/,
    // pipelines/); none of it may reach the offline code, by a static import or a dynamic import().
    const reaches = (f: string) =>
      [...imports(f), ...dynamicImports(f)].filter((i) => i.startsWith('training/') || i.startsWith('bench/')).map((i) => `${f} -> ${i}`);
    expect(SOURCES.flatMap(reaches)).toEqual([]);
    expect(files('training/ts').length).toBeGreaterThan(10);
  });
});
