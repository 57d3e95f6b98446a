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
  return [...text.matchAll(/\bimport\(\s*(['"`])(\.[^'"`]+)\1\s*\)/g)].map((m) =>
    relative(repoRoot, join(repoRoot, file, '..', m[2]!)).replace(/\.js$/, '.ts'),
  );
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
    const offenders = SOURCES.filter((f) => !above(f)).flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith('src/server/'))
        .map((i) => `${f} -> ${i}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the server reads the service through its face, never the class that holds the pipeline', () => {
    const offenders = files('src/server').flatMap((f) =>
      imports(f)
        .filter((i) => i === 'src/service/service.ts')
        .map((i) => `${f} -> ${i}`),
    );
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

/** Every repository path a file imports, statically or with `import()`. */
function allImports(file: string): string[] {
  return [...imports(file), ...dynamicImports(file)];
}

/**
 * The layers of the house, bottom first (docs/architecture.md draws them). A folder of `src/` (or a
 * file at its top), `operators/` and `pipelines/` belongs to one; an import may stay in its layer
 * or go down, never up. Folders of one layer may import each other only without a circle (below).
 */
const LAYERS: readonly (readonly string[])[] = [
  // foundations: error types, numbers, the package's place; frames and radios; poses and their
  // domain rules; the shapes of operators and pipelines; accounts; the MQTT connection; the
  // Redis connection and the accounts' state kept there; what crosses the NATS bus between roles
  ['src/errors.ts', 'src/precision.ts', 'src/packageRoot.ts', 'src/csi', 'src/pose', 'src/engine', 'src/auth', 'src/mqtt', 'src/redis', 'src/bus'],
  // signal: capture formats in and out, the physics front end, the simulator, rendering
  ['src/decoders', 'src/encoders', 'src/physics', 'src/sim', 'src/render'],
  // the model contract and its runtime
  ['src/model'],
  // the configuration schema: every setting, default and range
  ['src/config'],
  // dataflow: the operators, and the store they feed
  ['operators', 'src/store'],
  // composition: named pipelines, sources, calibration
  ['pipelines', 'src/sources', 'src/calibration'],
  // the service: the running pipeline and its hot streams
  ['src/service'],
  // outlets: subscribers of the streams
  ['src/outlets'],
  // transport: REST, WebSocket, dashboard
  ['src/server'],
  // the composition root, and the roles that compose a node of a cluster
  ['src/app.ts', 'src/cluster'],
  ['src/cli'],
];

/** The unit of layering a file belongs to: `src/<folder>` (or `src/<file>`), `operators`, `pipelines`. */
function unitOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'src' ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Strongly connected components of more than one node (Tarjan). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('no circles, and every import goes down a layer', () => {
  const fileGraph = new Map([...SOURCES, ...files('web/src')].map((f) => [f, allImports(f)] as const));

  it('reads dynamic import() as an import too', () => {
    // src/cli/calibrate.ts loads the calibration only when the command runs.
    expect(allImports('src/cli/calibrate.ts').some((i) => i.startsWith('src/calibration/'))).toBe(true);
  });

  it('has no import circle between files', () => {
    expect(circles(fileGraph)).toEqual([]);
  });

  it('has no import circle between folders', () => {
    const folders = new Map<string, Set<string>>();
    for (const [f, is] of fileGraph) {
      const a = unitOf(f);
      const set = folders.get(a) ?? folders.set(a, new Set()).get(a)!;
      for (const i of is) if (unitOf(i) !== a) set.add(unitOf(i));
    }
    expect(circles(new Map([...folders].map(([k, v]) => [k, [...v]])))).toEqual([]);
  });

  it('places every folder in one layer, and no import runs back up', () => {
    const layer = new Map(LAYERS.flatMap((units, i) => units.map((u) => [u, i] as const)));
    const units = new Set(SOURCES.map(unitOf));
    expect(
      [...units].filter((u) => !layer.has(u)),
      'folders in no layer',
    ).toEqual([]);
    const up = SOURCES.flatMap((f) =>
      allImports(f)
        .filter((i) => layer.get(unitOf(i))! > layer.get(unitOf(f))!)
        .map((i) => `${f} (${unitOf(f)}) -> ${i} (${unitOf(i)})`),
    );
    expect(up).toEqual([]);
  });

  it('catches what it is meant to: a circle, a folder circle and an import up a layer', () => {
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
    expect(unitOf('src/csi/frame.ts')).toBe('src/csi');
    expect(unitOf('src/app.ts')).toBe('src/app.ts');
    expect(unitOf('operators/track.ts')).toBe('operators');
  });
});
