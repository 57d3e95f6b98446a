/**
 * The v3 refiner end to end: `npm run train -- --quick` writes the data with the TypeScript
 * simulator and front end and trains with PyTorch; the exported ONNX loads in onnxruntime-node as a
 * v3 model and answers as PyTorch did on the same inputs (parity); the `refine` stage runs it on a
 * simulated stream; models that do not fit are refused with MODEL_ERROR.
 *
 * Needs Debian's python3-torch, python3-onnx and python3-scipy: installed here when the test may
 * (root and apt-get), else the suite skips with the line to run. CI installs them (.ci/run).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { firstValueFrom, from, Subject, throwError, toArray } from 'rxjs';
import { ModelError, PoseModel, type ModelOutputsV3 } from '../../src/model/runtime.js';
import { CONTRACT_V3, MODEL_V3_OUTPUTS } from '../../src/model/contract.js';
import { REFINER_FEATURE_DIM, REFINER_STEPS } from '../../src/physics/refinerInput.js';
import { ensureTrainingPython } from '../../training/ts/python.js';
import { REFINER_FALL_TRIGGER } from '../../src/pose/activityLabeller.js';
import { REFINER_DATA_FORMAT } from '../../training/ts/refinerData.js';
import { floorMap, type FloorMapItem } from '../../operators/floorMap.js';
import { refine } from '../../operators/refine.js';
import { infer } from '../../operators/infer.js';
import { livePipeline } from '../../pipelines/build.js';
import { defaultLiveParams } from '../../bench/accuracy/plan.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { DEFAULT_RADIOS } from '../../src/csi/radios.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { ensureBuilt, repoRoot } from '../helpers/cli.js';

const { onnx } = onnxProto;
const problem = ensureTrainingPython();
if (problem) process.stderr.write(`refiner training tests skipped: ${problem}\n`);

describe.skipIf(problem !== null)('the v3 refiner trained with PyTorch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-refiner-'));
  const onnxPath = join(dir, 'refiner.onnx');
  const data = join(dir, 'data');

  beforeAll(() => {
    // `npm run train` as it runs: the compiled script (npm run build:training), its worker thread and PyTorch.
    ensureBuilt('training');
    execFileSync(process.execPath, ['dist/training/ts/trainRefiner.js', '--quick', '--out', onnxPath, '--data', data, '--workers', '1'], {
      cwd: repoRoot,
      stdio: 'pipe',
      timeout: 900_000,
    });
  }, 900_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the training sets in the documented format', () => {
    const meta = JSON.parse(readFileSync(join(data, 'meta.json'), 'utf8'));
    expect(meta.format).toBe(REFINER_DATA_FORMAT);
    expect(meta.steps).toBe(REFINER_STEPS);
    expect(meta.features).toBe(REFINER_FEATURE_DIM);
    expect(meta.contract.csipose_contract).toBe(CONTRACT_V3);
    for (const split of ['train', 'val', 'test']) {
      const n = meta.splits[split].frames as number;
      expect(n).toBeGreaterThan(0);
      const K = meta.max_candidates;
      const P = meta.max_persons;
      expect(statSync(join(data, split, 'candidates.f32')).size).toBe(n * K * REFINER_STEPS * REFINER_FEATURE_DIM * 4);
      expect(statSync(join(data, split, 'truth_skeleton.f32')).size).toBe(n * P * 17 * 3 * 4);
      const mask = readFileSync(join(data, split, 'truth_mask.u8'));
      expect(mask.length).toBe(n * P);
    }
  });

  it('exports a model that onnxruntime-node loads as v3 and that answers as PyTorch did (parity)', async () => {
    const model = await PoseModel.load(onnxPath, { thread: 'inline' });
    try {
      expect(model.contract).toBe(3);
      expect(model.metadata.csipose_contract).toBe(CONTRACT_V3);
      expect(model.metadata.model_version).toBe('3.0.0');
      const parity = join(dir, 'refiner.parity');
      const shapes = JSON.parse(readFileSync(join(parity, 'shapes.json'), 'utf8'));
      const [B, T, F] = shapes.input as number[];
      expect([T, F]).toEqual([REFINER_STEPS, REFINER_FEATURE_DIM]);
      const buf = readFileSync(join(parity, 'input.f32'));
      const input = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
      const out = (await model.run(input, B!)) as ModelOutputsV3;
      for (const name of MODEL_V3_OUTPUTS) {
        const t = readFileSync(join(parity, `${name}.f32`));
        const want = new Float32Array(t.buffer.slice(t.byteOffset, t.byteOffset + t.byteLength));
        const got = out[name];
        expect(got.length, name).toBe(want.length);
        let worst = 0;
        for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
        expect(worst, `${name}: largest |onnxruntime - torch|`).toBeLessThanOrEqual(1e-4);
      }
      // Probabilities are probabilities.
      for (const p of out.person) expect(p >= 0 && p <= 1).toBe(true);
    } finally {
      await model.release();
    }
  });

  it('reports validation scores beside the no-refiner baseline, and held-out TEST scores beside the baseline and the oracle', () => {
    const test = JSON.parse(readFileSync(join(dir, 'refiner.test.json'), 'utf8'));
    expect(test.split).toBe('test');
    expect(test.refiner.frames).toBeGreaterThan(0);
    expect(test.oracle_truth_coverage).toBe(test.baseline_no_refiner.truth_coverage);
    const report = JSON.parse(readFileSync(join(dir, 'refiner.report.json'), 'utf8'));
    expect(report.val).toBeDefined();
    // The sidecar bench:accuracy reads: the recipe (for its seed-overlap check) and TRAIN's mean pose (its baseline).
    const sidecar = JSON.parse(readFileSync(join(dir, 'refiner.json'), 'utf8'));
    expect(sidecar.recipe.master_seed).toBe(1);
    expect(sidecar.scenario_counts.train).toBeGreaterThan(0);
    expect(sidecar.mean_pose.offsets).toHaveLength(51);
    expect(sidecar.mean_pose.pelvis_z).toBeGreaterThan(0.1);
    expect(sidecar.mean_pose.pelvis_z).toBeLessThan(1.2);
    // Nose above the pelvis on average, the hips either side of it.
    expect(sidecar.mean_pose.offsets[2]).toBeGreaterThan(0.2);
    expect(report.baseline_no_refiner.count_exact).toBeGreaterThanOrEqual(0);
    expect(report.val.count_exact).toBeGreaterThanOrEqual(0);
    expect(report.epochs_completed).toBeGreaterThan(0);
  });

  it('runs in the refine stage on a simulated stream: one pose frame per floor map', async () => {
    const sim = new CsiSimulator({ seed: 4, people: 1, radios: DEFAULT_RADIOS });
    const frames: CsiFrame[] = [];
    for (let i = 0; i < 400; i++) frames.push(...sim.nextTick().frames);
    const maps = await firstValueFrom(from(frames).pipe(floorMap({ learnSeconds: 1 }), toArray()));
    const poses = await firstValueFrom(from(frames).pipe(floorMap({ learnSeconds: 1 }), refine({ modelPath: onnxPath, maxPersons: 4 }), toArray()));
    expect(poses.length).toBe(maps.length);
    expect(poses.length).toBeGreaterThan(10);
    poses.forEach((p, i) => {
      expect(p.frameId).toBe(i);
      expect(p.time).toBe(maps[i]!.time);
      expect(p.modelVersion).toBe('3.0.0');
      expect(p.persons.length).toBeLessThanOrEqual(4);
      for (const person of p.persons) {
        expect(person.keypoints3d?.length).toBe(51);
        expect(Number.isFinite(person.floor!.x)).toBe(true);
        expect(person.modelActivity?.probabilities.length).toBe(5);
      }
    });
  });

  it("the service's live pipeline runs physics-live for a v3 model: a tracked pose frame per floor map", async () => {
    const model = await PoseModel.load(onnxPath, { thread: 'inline' });
    try {
      const sim = new CsiSimulator({ seed: 6, people: 2, radios: DEFAULT_RADIOS });
      const frames: CsiFrame[] = [];
      for (let i = 0; i < 500; i++) frames.push(...sim.nextTick().frames);
      const maps = await firstValueFrom(from(frames).pipe(floorMap(), toArray()));
      const poses = await firstValueFrom(
        from(frames).pipe(
          livePipeline({ model, radios: () => DEFAULT_RADIOS }, () => defaultLiveParams()),
          toArray(),
        ),
      );
      expect(poses.length).toBe(maps.length);
      expect(poses.every((p) => p.modelVersion === '3.0.0')).toBe(true);
      // The recipe's fall trigger, from the model's metadata, goes with every frame to the activity and alerts stages.
      expect(model.metadata.fall_trigger).toBe(REFINER_FALL_TRIGGER);
      expect(poses.every((p) => p.fallTrigger === REFINER_FALL_TRIGGER)).toBe(true);
      // Tracked: every person reported carries a track id.
      for (const p of poses) for (const person of p.persons) expect(person.trackId).toBeGreaterThan(0);
    } finally {
      await model.release();
    }
  });

  it('refine propagates a source error, and unsubscribing stops it without breaking the chain', async () => {
    const model = await PoseModel.load(onnxPath, { thread: 'inline' });
    try {
      const err = await firstValueFrom(throwError(() => new Error('boom')).pipe(refine({ model }))).catch((e: unknown) => e);
      expect((err as Error).message).toBe('boom');
      const source = new Subject<FloorMapItem>();
      const seen: number[] = [];
      const sub = source.pipe(refine({ model })).subscribe((p) => seen.push(p.frameId));
      expect(source.observed).toBe(true);
      sub.unsubscribe();
      expect(source.observed).toBe(false);
    } finally {
      await model.release();
    }
  });

  it('refuses a v3 model in the window-feature infer stage, and a v2 model in the refine stage, with MODEL_ERROR', async () => {
    const v3 = await PoseModel.load(onnxPath, { thread: 'inline' });
    try {
      const err = await firstValueFrom(from([]).pipe(infer({ model: v3 }))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as Error).message).toMatch(/csipose-pose-v3 refiner/);
    } finally {
      await v3.release();
    }
    if (existsSync('models/csipose-pose.onnx')) {
      const err = await firstValueFrom(from([]).pipe(refine({ modelPath: 'models/csipose-pose.onnx' }))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as Error).message).toMatch(/needs a csipose-pose-v3 refiner/);
    }
  });

  it('refuses a v3 model trained on other features or steps, naming what differs', async () => {
    const edit = (key: string, value: string): string => {
      const m = onnx.ModelProto.decode(readFileSync(onnxPath));
      m.metadataProps = (m.metadataProps ?? []).map((p) => (p.key === key ? onnx.StringStringEntryProto.create({ key, value }) : p));
      const path = join(dir, `edited-${key}.onnx`);
      writeFileSync(path, onnx.ModelProto.encode(m).finish());
      return path;
    };
    await expect(PoseModel.load(edit('feature_names', 'present,dx,dy'), { thread: 'inline' })).rejects.toThrow(/feature_names differ/);
    await expect(PoseModel.load(edit('stride_maps', '3'), { thread: 'inline' })).rejects.toThrow(/stride_maps is 3/);
    await expect(PoseModel.load(edit('csipose_contract', 'csipose-pose-v9'), { thread: 'inline' })).rejects.toThrow(ModelError);
  });
});
