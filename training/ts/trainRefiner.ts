/**
 * `npm run train`: trains the v3 refiner and writes `models/csipose-refiner.onnx` (with its
 * `.report.json`, `.pt` checkpoint and `.parity/` bundle).
 *
 *     node dist/training/ts/trainRefiner.js [--quick | --full] [--seed N] [--out FILE] [--data DIR] [--workers N] [--minutes M]
 *
 * Three steps: the TypeScript simulator and front end write the training sets (refinerData.ts, in
 * worker threads; TRAIN, VALIDATION and held-out TEST rooms; kept under `training/data/` and
 * reused when the same recipe asks again), PyTorch trains and exports (`training/train.py`, run by
 * Debian's /usr/bin/python3; the epoch is chosen on VALIDATION), and the exported checkpoint is
 * scored on TEST (`training/evaluate.py` -> `<out without .onnx>.test.json`). The default
 * recipe fits in 20 minutes on two cores; `--full` is larger and is what ships; `--quick` is a
 * smoke run for tests (seconds of data, two epochs). The same seed gives the same scenarios, the
 * same data files and the same training.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { makeRecipes, type RecipeCounts } from './recipe.js';
import { REFINER_DATA_FORMAT, writeRefinerData } from './refinerData.js';
import { INSTALL_HINT, PYTHON, trainingPythonProblem } from './python.js';
import { resolveInstalled } from '../../src/packageRoot.js';

/** A named recipe: which scenarios, and how long PyTorch may train. */
interface Recipe {
  name: string;
  counts: RecipeCounts;
  epochs: number;
  minutes: number;
}

/** The recipes (scenario counts per split and seconds per scenario). */
export const REFINER_RECIPES: Readonly<Record<'quick' | 'small' | 'full', Recipe>> = Object.freeze({
  quick: { name: 'quick', counts: { train: 3, val: 2, test: 1, seconds: 24 }, epochs: 2, minutes: 2 },
  small: { name: 'small', counts: { train: 40, val: 10, test: 12, seconds: 40 }, epochs: 60, minutes: 5 },
  full: { name: 'full', counts: { train: 96, val: 12, test: 24, seconds: 40 }, epochs: 80, minutes: 10 },
});

export interface Args {
  recipe: Recipe;
  seed: number;
  out: string;
  data?: string;
  workers: number;
  minutes?: number;
  epochs?: number;
}

function parse(argv: readonly string[]): Args {
  const o: Args = { recipe: REFINER_RECIPES.small, seed: 1, out: 'models/csipose-refiner.onnx', workers: Math.max(1, Math.min(2, availableParallelism())) };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const int = (v: string, min: number): number => {
      const n = Number(v);
      if (!(Number.isInteger(n) && n >= min)) throw new Error(`${a} must be an integer >= ${min}`);
      return n;
    };
    if (a === '--quick') o.recipe = REFINER_RECIPES.quick;
    else if (a === '--full') o.recipe = REFINER_RECIPES.full;
    else if (a === '--seed') o.seed = int(value(), 0);
    else if (a === '--out') o.out = value();
    else if (a === '--data') o.data = value();
    else if (a === '--workers') o.workers = int(value(), 0);
    else if (a === '--epochs') o.epochs = int(value(), 1);
    else if (a === '--minutes') {
      o.minutes = Number(value());
      if (!(o.minutes >= 0)) throw new Error('--minutes must be >= 0');
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: npm run train -- [--quick | --full] [--seed N] [--out FILE] [--data DIR] [--workers N] [--epochs N] [--minutes M]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

/** Whether `dir` holds a complete data set of this recipe and seed. */
function haveData(dir: string, recipe: string, seed: number): boolean {
  const meta = join(dir, 'meta.json');
  if (!existsSync(meta)) return false;
  try {
    const m = JSON.parse(readFileSync(meta, 'utf8')) as { format?: string; recipe?: string; seed?: number };
    return m.format === REFINER_DATA_FORMAT && m.recipe === recipe && m.seed === seed;
  } catch {
    return false;
  }
}

/**
 * `<out>.json` beside the model: the recipe (its master seed and counts, so a benchmark can check
 * that none of its scenarios was trained on) and the mean pose of TRAIN's people (the trivial
 * baseline `bench:accuracy` scores beside the model: the mean skeleton at each true person).
 */
export function writeSidecar(a: Args, dir: string, recipeText: string): void {
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as { max_persons: number; keypoints: number; splits: { train: { frames: number } } };
  const read = (name: string) => readFileSync(join(dir, 'train', name));
  const maskBuf = read('truth_mask.u8');
  const posBuf = read('truth_pos.f32');
  const skBuf = read('truth_skeleton.f32');
  const pos = new Float32Array(posBuf.buffer, posBuf.byteOffset, posBuf.byteLength / 4);
  const sk = new Float32Array(skBuf.buffer, skBuf.byteOffset, skBuf.byteLength / 4);
  const J = meta.keypoints * 3;
  const offsets = new Float64Array(J);
  let z = 0;
  let n = 0;
  for (let i = 0; i < maskBuf.length; i++) {
    if (!maskBuf[i]) continue;
    n++;
    z += pos[3 * i + 2]!;
    for (let j = 0; j < J; j++) offsets[j] = offsets[j]! + sk[i * J + j]!;
  }
  const c = a.recipe.counts;
  const sidecar = {
    format: 'csipose-refiner-sidecar-v1',
    recipe: { name: a.recipe.name, text: recipeText, master_seed: a.seed, scenario_seconds: c.seconds },
    scenario_counts: { train: c.train, val: c.val, test: c.test },
    mean_pose: { offsets: Array.from(offsets, (v) => (n > 0 ? v / n : 0)), pelvis_z: n > 0 ? z / n : 0, persons: n },
    training_report: `${basename(a.out.replace(/\.onnx$/, ''))}.report.json`,
    test_scores: `${basename(a.out.replace(/\.onnx$/, ''))}.test.json`,
  };
  writeFileSync(a.out.replace(/\.onnx$/, '.json'), JSON.stringify(sidecar, null, 2) + '\n');
}

/** Runs a script of `training/`, its output passed through; resolves with its exit code. */
function runPython(script: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, [resolveInstalled(join('training', script)), ...args], {
      stdio: 'inherit',
      env: { ...process.env, OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? '2' },
    });
    p.on('error', reject);
    p.on('exit', (code) => resolve(code ?? 1));
  });
}

/**
 * Writes the data (unless already there) and trains.
 * @param a the parsed arguments
 * @returns the exit code of the training
 */
export async function trainRefiner(a: Args): Promise<number> {
  const problem = trainingPythonProblem();
  if (problem !== null) throw new Error(`training needs PyTorch: ${problem}`);
  const c = a.recipe.counts;
  const recipeText = `${a.recipe.name}: ${c.train} train + ${c.val} val + ${c.test} test scenarios x ${c.seconds} s, seed ${a.seed}`;
  const dir = a.data ?? resolveInstalled(join('training', 'data', `${a.recipe.name}-seed${a.seed}`));
  if (!haveData(dir, recipeText, a.seed)) {
    rmSync(dir, { recursive: true, force: true });
    const recipes = makeRecipes(a.seed, a.recipe.counts);
    const t0 = Date.now();
    const counts = await writeRefinerData({
      dir,
      splits: {
        train: recipes.filter((r) => r.split === 'train'),
        val: recipes.filter((r) => r.split === 'val'),
        test: recipes.filter((r) => r.split === 'test'),
      },
      workers: a.workers,
      seed: a.seed,
      recipe: recipeText,
      onProgress: (split, done, total) => process.stderr.write(`\rdata ${split}: ${done}/${total} scenarios`),
    });
    process.stderr.write(`\ndata: ${JSON.stringify(counts)} frames in ${((Date.now() - t0) / 1000).toFixed(0)} s -> ${dir}\n`);
  } else process.stderr.write(`data: reusing ${dir}\n`);
  const code = await runPython('train.py', [
    '--data',
    dir,
    '--out',
    a.out,
    '--seed',
    String(a.seed),
    '--epochs',
    String(a.epochs ?? a.recipe.epochs),
    '--minutes',
    String(a.minutes ?? a.recipe.minutes),
  ]);
  if (code !== 0) return code;
  writeSidecar(a, dir, recipeText);
  // The held-out TEST rooms, never looked at while training: the figures a reader can trust.
  const stem = a.out.replace(/\.onnx$/, '');
  return runPython('evaluate.py', ['--checkpoint', `${stem}.pt`, '--data', dir, '--split', 'test', '--out', `${stem}.test.json`]);
}

if (process.argv[1] && /trainRefiner\.js$/.test(process.argv[1])) {
  try {
    const code = await trainRefiner(parse(process.argv.slice(2)));
    process.exitCode = code;
  } catch (e) {
    process.stderr.write(`train: ${e instanceof Error ? e.message : String(e)}\n`);
    if (e instanceof Error && /PyTorch/.test(e.message)) process.stderr.write(`install with: ${INSTALL_HINT}\n`);
    process.exitCode = 1;
  }
}
