/**
 * The oracle: a "model" that answers every window of the accuracy benchmark's scenarios with the
 * simulator's ground truth of the window's last frame. `npm run bench:accuracy -- --oracle` runs
 * the benchmark with it, which scores the rest of the system (decoding, tracking, activities, fall
 * alerts) as if the pose model were perfect: a check of the harness, and the ceiling that tracker
 * and alert rules reach. It recognises a window by a hash of its feature row, so it answers only
 * the windows of the scenarios it was built for.
 */
import { createHash } from 'node:crypto';
import { Subject } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { FEATURE_DIM, HOP, WINDOW_FRAMES } from '../src/model/features.js';
import type { ModelOutputs, PoseRunner } from '../src/model/runtime.js';
import { fillTargets, MAX_PERSONS, OUTPUT_DIM } from '../src/training/targets.js';
import { outputsFromFlat } from '../src/training/evaluate.js';
import { CsiSimulator, type GroundTruth } from '../src/sim/simulator.js';
import { sanitizePhase } from '../operators/sanitizePhase.js';
import { slidingWindow } from '../operators/slidingWindow.js';
import { features } from '../operators/features.js';
import { benchRecipes, fallSimOptions, planFallScenarios, recipeSimulator, type AccuracyPlan } from './accuracy.js';

const key = (f: Float32Array): string => createHash('sha1').update(Buffer.from(f.buffer, f.byteOffset, f.byteLength)).digest('hex');

/** Maps the features of every window of a simulated stream to the targets of its last frame. */
function indexWindows(sim: CsiSimulator, frames: number, table: Map<string, Float32Array>): void {
  const truths = new Map<number, GroundTruth>();
  const input = new Subject<CsiFrame>();
  input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: HOP }), features()).subscribe((row) => {
    const out = new Float32Array(OUTPUT_DIM);
    fillTargets(truths.get(row.frameTime)!, sim.scenario.camera, out);
    table.set(key(row.features), out);
  });
  for (let i = 0; i < frames; i++) {
    const s = sim.next();
    truths.set(s.frame.time, s.truth);
    input.next(s.frame);
  }
  input.complete();
}

/**
 * Builds the oracle for a benchmark plan (simulates every scenario of the plan once).
 * @param plan the plan the benchmark will run
 * @returns a PoseRunner whose outputs are the ground truth (keypoint confidence = visibility;
 *   dense pose as the training targets have it)
 * @example
 * const report = await runAccuracy(plan, oracleRunner(plan), 'oracle');
 */
export function oracleRunner(plan: AccuracyPlan): PoseRunner {
  const table = new Map<string, Float32Array>();
  const recipes = benchRecipes(plan);
  for (const r of recipes.pose) {
    const { sim } = recipeSimulator(r);
    indexWindows(sim, Math.round(r.seconds * sim.rateHz), table);
  }
  const people = planFallScenarios(recipes.fall);
  recipes.fall.forEach((r, i) => {
    const sim = new CsiSimulator(fallSimOptions(r, people[i]!));
    indexWindows(sim, Math.round(r.seconds * sim.rateHz), table);
  });
  const P = MAX_PERSONS;
  return {
    metadata: { csipose_contract: 'csipose-pose-v1', model_version: 'oracle', feature_dim: FEATURE_DIM, max_persons: P, window_frames: WINDOW_FRAMES, trained_on: 'ground truth' },
    featureDim: FEATURE_DIM,
    maxPersons: P,
    async run(f: Float32Array, n: number): Promise<ModelOutputs> {
      const flat = new Float32Array(n * OUTPUT_DIM);
      for (let r = 0; r < n; r++) {
        const t = table.get(key(f.subarray(r * FEATURE_DIM, (r + 1) * FEATURE_DIM)));
        if (!t) throw new Error('oracle: a window of a scenario it was not built for');
        flat.set(t, r * OUTPUT_DIM);
      }
      // The targets are in the layout of the training network's outputs, activations applied.
      return outputsFromFlat(flat, n);
    },
  };
}
