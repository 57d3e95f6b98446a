/**
 * Trains the default pose model and writes `models/csipose-pose.onnx` and `models/csipose-pose.json`.
 *
 *     node dist/training/ts/main.js [--quick | --full] [--seed N] [--out DIR] [--workers N]
 *
 * `--quick` trains a tiny model on a tiny dataset (under a minute; for tests and smoke runs), the
 * default is the reproducible recipe (at most 15 minutes on two cores), `--full` the same recipe
 * with twice the scenarios and a larger network trained longer. The same seed gives the same scenarios, the same
 * initial weights and the same batches. Progress goes to stderr, the summary to stdout.
 */
import { runTraining } from './run.js';

function parse(argv: readonly string[]): { quick: boolean; full: boolean; seed: number; out: string; workers?: number } {
  const o: { quick: boolean; full: boolean; seed: number; out: string; workers?: number } = { quick: false, full: false, seed: 1, out: 'models' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') o.quick = true;
    else if (a === '--full') o.full = true;
    else if (a === '--seed') {
      o.seed = Number(value());
      if (!Number.isInteger(o.seed)) throw new Error('--seed must be an integer');
    } else if (a === '--out') o.out = value();
    else if (a === '--workers') {
      o.workers = Number(value());
      if (!(Number.isInteger(o.workers) && o.workers >= 0)) throw new Error('--workers must be an integer >= 0');
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/training/ts/main.js [--quick | --full] [--seed N] [--out DIR] [--workers N]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

try {
  const opts = parse(process.argv.slice(2));
  const r = await runTraining(opts);
  const s = r.scores;
  const f = (x: number, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  process.stdout.write(
    [
      `model ${r.metadata.model_version} -> ${r.onnxPath}`,
      `held-out TEST (${s.all.windows} windows, unseen rooms, site given):`,
      `  PCK3d@0.2 one person ${f(s.one.pose.pck3d)} (baseline ${f(s.one.baseline.pck3d)}), three people ${f(s.three.pose.pck3d)} (baseline ${f(s.three.baseline.pck3d)})`,
      `  MPJPE ${f(s.all.pose.mpjpeCm, 1)} cm (root-relative ${f(s.all.pose.mpjpeRelCm, 1)} cm), floor median ${f(s.all.pose.floorMedianM, 2)} m`,
      `  exact person count ${f(s.all.countExact)}, occupied ${f(s.all.occupied)}, activity ${f(s.all.activity)}, fall windows precision ${f(s.fall.precision)} recall ${f(s.fall.recall)}`,
      `  export check: ONNX vs TypeScript max difference ${r.exportCheck.toExponential(2)}`,
      `report -> ${r.jsonPath}`,
      '',
    ].join('\n'),
  );
} catch (e) {
  process.stderr.write(`train: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}
