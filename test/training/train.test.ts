import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONTRACT_V2, FALL_WINDOW_S, MODEL_ACTIVITIES, SITE_DIM, siteVector } from '../../src/model/contract.js';
import { FEATURE_DIM, WINDOW_FRAMES } from '../../src/model/features.js';
import { HISTORY_DIM, HISTORY_STEPS, HISTORY_WIDTH } from '../../src/model/history.js';
import { readPoseWeightsV2 } from '../../src/calibration/onnxWriter.js';
import { PoseModel, type ModelOutputsV2 } from '../../src/model/runtime.js';
import { Rng } from '../../src/sim/rng.js';
import { CsiSimulator, type GroundTruth, type TruthPerson } from '../../src/sim/simulator.js';
import { gemm, gemmNaive, transpose } from '../../src/calibration/matmul.js';
import { AdamW, Mlp } from '../../src/calibration/mlp.js';
import { poseLoss } from '../../src/calibration/loss.js';
import { fillTargets, mirrorTargets, MAX_PERSONS, N_ACTIVITIES, OUTPUT_DIM, TARGET, TARGET_DIM, targetSkeleton } from '../../src/calibration/targets.js';
import { isHeldOut, makeRecipes, recipeSite } from '../../training/ts/recipe.js';
import { concatScenarios, generateScenario, INPUT_DIM, rowSource, simOptions } from '../../training/ts/dataset.js';
import { predict } from '../../src/calibration/trainer.js';
import { QUICK, runTraining, weightsHash, type RunResult } from '../../training/ts/run.js';
import { scoreOutputs } from '../../training/ts/evaluate.js';

const rand = (rng: Rng, n: number, scale = 1) => Float32Array.from({ length: n }, () => rng.uniform(-scale, scale));

describe('matmul', () => {
  it('the blocked kernel equals the naive triple loop (odd sizes across the blocks)', () => {
    const rng = new Rng(4);
    for (const [m, k, n] of [
      [1, 1, 1],
      [7, 13, 300],
      [33, 70, 5],
      [64, 129, 257],
    ] as const) {
      const a = rand(rng, m * k);
      const b = rand(rng, k * n);
      const c = new Float32Array(m * n);
      const ref = new Float32Array(m * n);
      gemm(a, b, c, m, k, n);
      gemmNaive(a, b, ref, m, k, n);
      for (let i = 0; i < c.length; i++) expect(c[i]).toBeCloseTo(ref[i]!, 4);
      // accumulate adds to what is there
      gemm(a, b, c, m, k, n, true);
      for (let i = 0; i < c.length; i++) expect(c[i]).toBeCloseTo(2 * ref[i]!, 4);
    }
  });

  it('transposes', () => {
    const src = Float32Array.from({ length: 6 * 35 }, (_, i) => i);
    const dst = new Float32Array(src.length);
    transpose(src, 6, 35, dst);
    for (let i = 0; i < 6; i++) for (let j = 0; j < 35; j++) expect(dst[j * 6 + i]).toBe(src[i * 35 + j]);
  });
});

/** Targets of a plausible shape: two present slots with a pelvis, a skeleton, an activity; a fall now and then. */
function syntheticTargets(rng: Rng, batch: number): Float32Array {
  const t = new Float32Array(batch * TARGET_DIM);
  for (let r = 0; r < batch; r++) {
    const o = r * TARGET_DIM;
    t[o + TARGET.count] = 2;
    t[o + TARGET.fall] = rng.chance(0.3) ? 1 : 0;
    for (let p = 0; p < MAX_PERSONS; p++) t[o + TARGET.activity + p] = -1;
    for (let p = 0; p < 2; p++) {
      t[o + TARGET.presence + p] = 1;
      t.set([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)], o + TARGET.root + p * 3);
      for (let i = 0; i < 51; i++) t[o + TARGET.offsets + p * 51 + i] = rng.uniform(-0.6, 0.6);
      t[o + TARGET.activity + p] = rng.int(0, N_ACTIVITIES - 1);
    }
  }
  return t;
}

describe('MLP', () => {
  it.each([0, 0.3])('backward equals finite differences of the pose loss on a tiny network (dropout %s)', (dropout) => {
    const rng = new Rng(11);
    const net = new Mlp([6, 5, 4, OUTPUT_DIM], rng);
    // Non-zero biases so that no ReLU sits exactly at its kink.
    for (const l of net.layers) for (let j = 0; j < l.b.length; j++) l.b[j] = rng.uniform(-0.3, 0.3);
    const batch = 3;
    const x = rand(rng, batch * 6, 1.5);
    const t = syntheticTargets(rng, batch);
    const dy = new Float32Array(batch * OUTPUT_DIM);
    // Outputs away from the smooth-L1 kinks, so finite differences see one side of them.
    for (let j = 0; j < net.layers[net.layers.length - 1]!.b.length; j++) net.layers[net.layers.length - 1]!.b[j] = rng.uniform(-1, 1);
    // The same dropout masks for every pass: a fresh generator with the same seed.
    poseLoss(net.forward(x, batch, dropout, new Rng(77)), t, batch, dy);
    net.backward(dy, batch);
    const loss = () => poseLoss(net.forward(x, batch, dropout, new Rng(77)), t, batch, null);
    const h = 1e-2;
    let checked = 0;
    for (let li = 0; li < net.layers.length; li++) {
      const L = net.layers[li]!;
      for (const [params, grads] of [
        [L.w, net.gw[li]!],
        [L.b, net.gb[li]!],
      ] as const) {
        for (let s = 0; s < 12; s++) {
          const i = rng.int(0, params.length - 1);
          const keep = params[i]!;
          params[i] = keep + h;
          const up = loss();
          params[i] = keep - h;
          const down = loss();
          params[i] = keep;
          const fd = (up - down) / (2 * h);
          expect(Math.abs(fd - grads[i]!), `layer ${li} index ${i}: fd ${fd} vs ${grads[i]}`).toBeLessThanOrEqual(2e-3 + 3e-2 * Math.abs(fd));
          checked++;
        }
      }
    }
    expect(checked).toBe(72);
  });

  it('AdamW steps reduce the loss on a fixed batch', () => {
    const rng = new Rng(2);
    const net = new Mlp([8, 16, OUTPUT_DIM], rng);
    const opt = new AdamW(net);
    const x = rand(rng, 16 * 8);
    const t = syntheticTargets(rng, 16);
    const dy = new Float32Array(16 * OUTPUT_DIM);
    const first = poseLoss(net.forward(x, 16), t, 16, dy);
    let last = first;
    for (let s = 0; s < 60; s++) {
      last = poseLoss(net.forward(x, 16), t, 16, dy);
      net.backward(dy, 16);
      opt.step(1e-2, 1e-4);
    }
    expect(last).toBeLessThan(0.6 * first);
  });
});

function person(id: number, x: number, y: number, activity: TruthPerson['activity'] = 'standing'): TruthPerson {
  // A skeleton whose joint k sits at (x + 0.01 k, y, 0.05 k): the pelvis (mid-hip, joints 11 and
  // 12) is at (x + 0.115, y, 0.575).
  const keypoints3d = Float32Array.from({ length: 51 }, (_, i) => [x + 0.01 * Math.floor(i / 3), y, 0.05 * Math.floor(i / 3)][i % 3]!);
  return {
    id,
    activity,
    keypoints: new Float32Array(34),
    visible: new Uint8Array(17),
    keypoints3d,
    bbox: [0, 0, 0, 0],
    floor: { x, y },
    velocity: { x: 0, y: 0 },
  };
}

describe('targets', () => {
  const receiver = { x: 2, y: 0.2 };

  it('orders slots by floor x, puts the pelvis relative to the receiver and the joints relative to the pelvis', () => {
    const truth: GroundTruth = { time: 10_000, seq: 0, personCount: 2, persons: [person(0, 4, 2, 'walking'), person(1, 1, 3, 'sitting')], events: [] };
    const t = new Float32Array(TARGET_DIM);
    expect(fillTargets(truth, receiver, t)).toBe(2);
    expect(t[TARGET.count]).toBe(2);
    expect(Array.from(t.subarray(TARGET.presence, TARGET.presence + MAX_PERSONS))).toEqual([1, 1, 0, 0]);
    // Slot 0 is the person at x = 1, slot 1 the one at x = 4.
    expect(t[TARGET.root]).toBeCloseTo(1 + 0.115 - 2, 5);
    expect(t[TARGET.root + 1]).toBeCloseTo(3 - 0.2, 5);
    expect(t[TARGET.root + 2]).toBeCloseTo(0.575, 5);
    expect(t[TARGET.root + 3]).toBeCloseTo(4 + 0.115 - 2, 5);
    // Joint 0 is 0.115 m left of the pelvis and 0.575 m below it; joint 16 0.045 right, 0.225 above.
    expect(t[TARGET.offsets]).toBeCloseTo(-0.115, 5);
    expect(t[TARGET.offsets + 2]).toBeCloseTo(-0.575, 5);
    expect(t[TARGET.offsets + 48]).toBeCloseTo(0.045, 5);
    expect(t[TARGET.offsets + 50]).toBeCloseTo(0.225, 5);
    expect(Array.from(t.subarray(TARGET.activity, TARGET.activity + 4))).toEqual([
      MODEL_ACTIVITIES.indexOf('sitting'),
      MODEL_ACTIVITIES.indexOf('walking'),
      -1,
      -1,
    ]);
    expect(t[TARGET.fall]).toBe(0);
    // Round trip to room metres.
    const kp = new Float32Array(51);
    targetSkeleton(t, 1, receiver, kp);
    for (let i = 0; i < 51; i++) expect(kp[i]).toBeCloseTo(truth.persons[0]!.keypoints3d[i]!, 5);
  });

  it('a fall that began within the last FALL_WINDOW_S sets the fall target; an older one does not', () => {
    const faller = { ...person(0, 2, 2, 'lying'), fallOnset: 10_000 - FALL_WINDOW_S * 1000 + 100 };
    const t = new Float32Array(TARGET_DIM);
    fillTargets({ time: 10_000, seq: 0, personCount: 1, persons: [faller], events: [] }, receiver, t);
    expect(t[TARGET.fall]).toBe(1);
    fillTargets({ time: 10_000, seq: 0, personCount: 1, persons: [{ ...faller, fallOnset: 10_000 - FALL_WINDOW_S * 1000 - 100 }], events: [] }, receiver, t);
    expect(t[TARGET.fall]).toBe(0);
  });

  it('mirroring twice gives the targets back, and a mirror swaps left and right joints', () => {
    const sim = new CsiSimulator({ seed: 9, people: 3 });
    let s = sim.next();
    for (let i = 0; i < 300; i++) s = sim.next();
    const t = new Float32Array(TARGET_DIM);
    fillTargets(s.truth, receiver, t);
    const m = Float32Array.from(t);
    mirrorTargets(m);
    expect(Array.from(m)).not.toEqual(Array.from(t));
    // Slot 0 of the mirror is the last person; its left shoulder (5) is that person's right (6), x negated.
    const n = t[TARGET.count]!;
    expect(m[TARGET.root]).toBeCloseTo(-t[TARGET.root + (n - 1) * 3]!, 6);
    expect(m[TARGET.offsets + 5 * 3]).toBeCloseTo(-t[TARGET.offsets + (n - 1) * 51 + 6 * 3]!, 6);
    mirrorTargets(m);
    for (let i = 0; i < TARGET_DIM; i++) expect(m[i]).toBeCloseTo(t[i]!, 5);
  });

  it('the mirrored CSI of a scene is the CSI of the mirrored scene', () => {
    // A person standing still facing +y is left-right symmetric; mirror the room around it.
    const base = {
      seed: 5,
      impairments: false as const,
      nSub: 30 as const,
      scenario: {
        room: { width: 6, depth: 5 },
        rx: { position: { x: 2.5, y: 0.2, z: 1.2 } },
        tx: { position: { x: 3.8, y: 4.8, z: 1.4 } },
      },
    };
    const a = new CsiSimulator({ ...base, people: [{ x: 2, y: 3, heading: Math.PI / 2, script: [] }] });
    const b = new CsiSimulator({
      ...base,
      people: [{ x: 4, y: 3, heading: Math.PI / 2, script: [] }],
      scenario: { room: { width: 6, depth: 5 }, rx: { position: { x: 3.5, y: 0.2, z: 1.2 } }, tx: { position: { x: 2.2, y: 4.8, z: 1.4 } } },
    });
    const fa = a.next().frame;
    const fb = b.next().frame;
    // Reverse both arrays' antenna order in a's frame.
    let worst = 0;
    let scale = 0;
    for (let sc = 0; sc < 30; sc++) {
      for (let m = 0; m < 3; m++) {
        for (let n = 0; n < 3; n++) {
          const i = ((sc * 3 + m) * 3 + n) * 2;
          const j = ((sc * 3 + (2 - m)) * 3 + (2 - n)) * 2;
          worst = Math.max(worst, Math.abs(fa.csi[i]! - fb.csi[j]!), Math.abs(fa.csi[i + 1]! - fb.csi[j + 1]!));
          scale = Math.max(scale, Math.abs(fa.csi[i]!));
        }
      }
    }
    expect(worst).toBeLessThan(1e-3 * scale);
  });
});

describe('recipe', () => {
  it('is reproducible, keeps TEST rooms and layouts out of TRAIN and VALIDATION, and never reuses a seed', () => {
    const a = makeRecipes(7, { train: 200, val: 20, test: 40, seconds: 8 });
    const b = makeRecipes(7, { train: 200, val: 20, test: 40, seconds: 8 });
    expect(a).toEqual(b);
    for (const r of a) expect(isHeldOut(r)).toBe(r.split === 'test');
    const inW = (w: number) => (w >= 4.4 && w < 5) || (w >= 7.2 && w < 7.8);
    for (const r of a.filter((x) => x.split !== 'test')) expect(inW(r.room.width)).toBe(false);
    expect(new Set(a.map((r) => r.seed)).size).toBe(a.length);
    const people = a.filter((r) => r.split === 'test').map((r) => r.people);
    expect(people.filter((p) => p === 1).length).toBe(12);
    expect(people.filter((p) => p === 3).length).toBe(12);
  });

  it('a scenario gives rows of features, history and the targets of their last frames', () => {
    const [r] = makeRecipes(3, { train: 1, val: 0, test: 0, seconds: 8 });
    const d = generateScenario(r!, 16, 2, true);
    const windows = Math.floor((800 - WINDOW_FRAMES) / 16) + 1;
    expect(d.n).toBe(2 * Math.ceil(windows / 2));
    expect(d.features.length).toBe(d.n * FEATURE_DIM);
    expect(d.history.length).toBe(d.n * HISTORY_WIDTH);
    expect(d.targets.length).toBe(d.n * TARGET_DIM);
    // Row 2k + 1 is the mirror of row 2k.
    const t = Float32Array.from(d.targets.subarray(0, TARGET_DIM));
    mirrorTargets(t);
    for (let i = 0; i < TARGET_DIM; i++) expect(d.targets[TARGET_DIM + i]).toBeCloseTo(t[i]!, 6);
    expect(Array.from(d.mirrored.subarray(0, 4))).toEqual([0, 1, 0, 1]);
    // The first window has no memory; the last, 6.7 s in, remembers every step back to 5.12 s.
    const present = (row: number) => {
      let n = 0;
      for (let k = 0; k < HISTORY_STEPS; k++) n += d.history[row * HISTORY_WIDTH + k * HISTORY_DIM]!;
      return n;
    };
    expect(present(0)).toBe(0);
    expect(present(d.n - 2)).toBe(HISTORY_STEPS);
    // The simulator options of the recipe build the same scenario again.
    expect(new CsiSimulator(simOptions(r!, d.people)).scenario.persons.length).toBe(d.people);

    // The network's rows: features, history, then the scene's site row (mirrored for mirrored rows),
    // or the all-zero row for a scene whose site is withheld.
    const data = concatScenarios([d]);
    const recipes = new Map([[r!.id, r!]]);
    const src = rowSource(data, recipes);
    expect(src.dim).toBe(INPUT_DIM);
    const x = new Float32Array(2 * INPUT_DIM);
    src.fill([0, 1], 0, 2, x);
    expect(Array.from(x.subarray(INPUT_DIM, INPUT_DIM + FEATURE_DIM))).toEqual(Array.from(d.features.subarray(FEATURE_DIM, 2 * FEATURE_DIM)));
    expect(Array.from(x.subarray(FEATURE_DIM, FEATURE_DIM + HISTORY_WIDTH))).toEqual(Array.from(d.history.subarray(0, HISTORY_WIDTH)));
    expect(Array.from(x.subarray(INPUT_DIM - SITE_DIM, INPUT_DIM))).toEqual(Array.from(siteVector(recipeSite(r!))));
    const mirroredSite = Array.from(x.subarray(2 * INPUT_DIM - SITE_DIM));
    expect(mirroredSite).toEqual(Array.from(siteVector(recipeSite(r!, true))));
    expect(mirroredSite[3]).toBeCloseTo(r!.room.width - r!.rx.x, 5);
    rowSource(data, recipes, new Set([r!.id])).fill([1], 0, 1, x);
    expect(Array.from(x.subarray(INPUT_DIM - SITE_DIM, INPUT_DIM))).toEqual(new Array(SITE_DIM).fill(0));
    expect(() => rowSource(data, new Map()).fill([0], 0, 1, x)).toThrow(/no recipe for scenario/);
  });
});

describe('quick training run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-train-'));
  let run: RunResult;
  const log: string[] = [];
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('decreases the loss and writes the model and its report', async () => {
    run = await runTraining({ quick: true, seed: 2, out: dir, workers: 0, progress: { write: (s: string) => log.push(s), isTTY: false } });
    const h = run.history;
    expect(h.length).toBe(3);
    expect(h[h.length - 1]!.trainLoss).toBeLessThan(h[0]!.trainLoss);
    expect(statSync(run.onnxPath).size).toBeGreaterThan(1000);
    expect(statSync(run.jsonPath).size).toBeGreaterThan(100);
    expect(run.report.export_check_max_abs_diff as number).toBeLessThan(1e-4);
    expect(log.some((l) => l.startsWith('trained 3 epochs'))).toBe(true);
  });

  it('exports a v2 model PoseModel loads, whose output for a training row equals the TypeScript forward pass', async () => {
    const model = await PoseModel.load(run.onnxPath, { featureDim: FEATURE_DIM });
    try {
      expect(model.contract).toBe(2);
      expect(model.metadata.csipose_contract).toBe(CONTRACT_V2);
      expect(model.metadata.feature_dim).toBe(FEATURE_DIM);
      expect(model.metadata.window_frames).toBe(WINDOW_FRAMES);
      expect(model.metadata.history_steps).toBe(HISTORY_STEPS);
      expect(model.maxPersons).toBe(MAX_PERSONS);
      expect(model.metadata.model_version).toMatch(/^csipose-pose-2\.0\.0\+[0-9a-f]{10}$/);
      expect(model.siteDim).toBe(SITE_DIM);
      // A mirrored row with history (a later row of a mirrored scenario), with its scene's mirrored site.
      const recipes = new Map(makeRecipes(2, QUICK.counts).map((r) => [r.id, r]));
      let i = 1;
      while (!(run.train.mirrored[i] === 1 && run.train.history[i * HISTORY_WIDTH] === 1)) i++;
      const site = recipeSite(recipes.get(run.train.scenario[i]!)!, true);
      const row = run.train.features.slice(i * FEATURE_DIM, (i + 1) * FEATURE_DIM);
      const history = run.train.history.slice(i * HISTORY_WIDTH, (i + 1) * HISTORY_WIDTH);
      const out = await model.run(row, 1, { site, history });
      if (out.contract !== 2) throw new Error('expected v2 outputs');
      const src = rowSource(run.train, recipes);
      const one = { ...src, n: 1, fill: (_rows: ArrayLike<number>, _from: number, _count: number, o: Float32Array) => src.fill([i], 0, 1, o) };
      const ts = predict(run.net, run.norm, one);
      for (const k of ['count', 'presence', 'keypoints3d', 'activity', 'fall'] as const) {
        expect(out[k].length).toBe(ts[k].length);
        for (let j = 0; j < ts[k].length; j++) expect(Math.abs(out[k][j]! - ts[k][j]!)).toBeLessThanOrEqual(1e-4);
      }
      // The memory and the site are part of the answer.
      const forgetful = await model.run(row.slice(), 1, { site });
      const blind = await model.run(row.slice(), 1, { history: history.slice() });
      if (forgetful.contract !== 2 || blind.contract !== 2) throw new Error('expected v2 outputs');
      expect(Array.from(forgetful.keypoints3d)).not.toEqual(Array.from(out.keypoints3d));
      expect(Array.from(blind.keypoints3d)).not.toEqual(Array.from(out.keypoints3d));
      // Probabilities: count and activity sum to 1.
      expect(out.count.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      for (let p = 0; p < MAX_PERSONS; p++) expect(out.activity.subarray(p * 5, p * 5 + 5).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
    } finally {
      await model.release();
    }
  });

  it('a model written from read-back weights is the same model', () => {
    const bytes = readFileSync(run.onnxPath);
    const w = readPoseWeightsV2(bytes);
    expect(weightsHash(w)).toBe(weightsHash(run.weights));
  });

  it('scores perfect outputs as perfect, and the baseline below them', () => {
    const d = run.test;
    const P = MAX_PERSONS;
    const out: ModelOutputsV2 = {
      contract: 2,
      n: d.n,
      maxPersons: P,
      count: new Float32Array(d.n * (P + 1)),
      presence: new Float32Array(d.n * P),
      keypoints3d: new Float32Array(d.n * P * 51),
      activity: new Float32Array(d.n * P * 5),
      fall: new Float32Array(d.n),
    };
    for (let r = 0; r < d.n; r++) {
      const t = d.targets.subarray(r * TARGET_DIM, (r + 1) * TARGET_DIM);
      out.count[r * (P + 1) + t[TARGET.count]!] = 1;
      out.fall[r] = t[TARGET.fall]!;
      for (let p = 0; p < P; p++) {
        out.presence[r * P + p] = t[TARGET.presence + p]!;
        if (t[TARGET.activity + p]! >= 0) out.activity[(r * P + p) * 5 + t[TARGET.activity + p]!] = 1;
        targetSkeleton(t, p, { x: 0, y: 0 }, out.keypoints3d, (r * P + p) * 51);
      }
    }
    const zeros = Array.from({ length: d.n }, () => ({ x: 0, y: 0 }));
    const s = scoreOutputs(out, d.targets, d.personCounts, zeros, run.mean);
    expect(s.all.countExact).toBe(1);
    expect(s.all.occupied).toBe(1);
    if (s.all.pose.persons > 0) {
      expect(s.all.pose.pck3d).toBe(1);
      expect(s.all.pose.mpjpeCm).toBeLessThan(1e-3);
      expect(s.all.activity).toBe(1);
      expect(s.all.baseline.pck3d).toBeLessThan(1);
      expect(s.all.baseline.floorMedianM).toBeLessThan(1e-6);
    }
  });
});
