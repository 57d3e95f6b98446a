import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONTRACT_VERSION, SITE_DIM, siteVector } from '../../src/model/contract.js';
import { FEATURE_DIM, WINDOW_FRAMES } from '../../src/model/features.js';
import { PoseModel } from '../../src/model/runtime.js';
import { Rng } from '../../src/sim/rng.js';
import { CsiSimulator, type GroundTruth, type TruthPerson } from '../../src/sim/simulator.js';
import { Camera } from '../../src/sim/camera.js';
import { gemm, gemmNaive, transpose } from '../../src/training/matmul.js';
import { AdamW, Mlp } from '../../src/training/mlp.js';
import { poseLoss } from '../../src/training/loss.js';
import { fillTargets, mirrorTargets, MAX_PERSONS, OUT, OUTPUT_DIM } from '../../src/training/targets.js';
import { isHeldOut, makeRecipes, recipeSite } from '../../src/training/recipe.js';
import { concatScenarios, generateScenario, simOptions, withSiteInputs } from '../../src/training/dataset.js';
import { predict } from '../../src/training/trainer.js';
import { QUICK, runTraining, type RunResult } from '../../src/training/run.js';
import { outputsFromFlat, scoreOutputs } from '../../src/training/evaluate.js';

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

/** Targets of a plausible shape: two present slots with some visible keypoints and parts. */
function syntheticTargets(rng: Rng, batch: number): Float32Array {
  const t = new Float32Array(batch * OUTPUT_DIM);
  for (let r = 0; r < batch; r++) {
    const o = r * OUTPUT_DIM;
    for (let p = 0; p < 2; p++) {
      t[o + OUT.presence + p] = 1;
      for (let k = 0; k < 17; k++) {
        const j = o + OUT.keypoints + (p * 17 + k) * 3;
        if (rng.chance(0.7)) {
          t[j] = rng.uniform(0.1, 0.9);
          t[j + 1] = rng.uniform(0.1, 0.9);
          t[j + 2] = 1;
        }
      }
      t.set([rng.uniform(0.1, 0.4), rng.uniform(0.1, 0.4), rng.uniform(0.1, 0.4), rng.uniform(0.2, 0.5)], o + OUT.boxes + p * 4);
      t.set([rng.uniform(-2, 2), rng.uniform(-2, 2)], o + OUT.floor + p * 2);
      for (let part = 0; part < 24; part++) {
        const j = o + OUT.densepose + (p * 24 + part) * 3;
        if (rng.chance(0.5)) t.set([1, rng.uniform(0, 1), rng.uniform(0, 1)], j);
      }
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

function person(x: number, y: number, visible: boolean): TruthPerson {
  const keypoints = Float32Array.from({ length: 34 }, (_, i) => (i % 2 === 0 ? 100 + x * 10 + i : 200 + i));
  return {
    id: 0,
    activity: 'standing',
    keypoints,
    visible: new Uint8Array(17).fill(visible ? 1 : 0),
    keypoints3d: Float32Array.from({ length: 51 }, (_, i) => [x, y, 1 + (i % 5) * 0.1][i % 3]!),
    bbox: visible ? [90 + x * 10, 190, 60, 150] : [0, 0, 0, 0],
    floor: { x, y },
    velocity: { x: 0, y: 0 },
  };
}

describe('targets', () => {
  const camera = Camera.lookingAt({ x: 3, y: 0.05, z: 1.6 }, { x: 3, y: 3, z: 1 }, 320);

  it('orders slots by floor x and normalises to the view', () => {
    const truth: GroundTruth = { time: 0, seq: 0, personCount: 2, persons: [person(4, 2, true), person(1, 3, false)], events: [] };
    const t = new Float32Array(OUTPUT_DIM);
    expect(fillTargets(truth, camera, t)).toBe(2);
    expect(Array.from(t.subarray(0, MAX_PERSONS))).toEqual([1, 1, 0, 0]);
    // Slot 0 is the person at x = 1 (nothing visible), slot 1 the one at x = 4.
    expect(t[OUT.floor]).toBe(1);
    expect(t[OUT.floor + 2]).toBe(4);
    expect(t[OUT.keypoints + 2]).toBe(0);
    expect(t[OUT.boxes + 2]).toBe(0);
    const k = OUT.keypoints + 17 * 3;
    expect(t[k]).toBeCloseTo((100 + 40) / 640, 6);
    expect(t[k + 1]).toBeCloseTo((200 + 1) / 480, 6);
    expect(t[k + 2]).toBe(1);
    expect(t[OUT.boxes + 4]).toBeCloseTo(130 / 640, 6);
    expect(t[OUT.boxes + 7]).toBeCloseTo(150 / 480, 6);
  });

  it('mirroring twice gives the targets back', () => {
    const sim = new CsiSimulator({ seed: 9, people: 3 });
    let s = sim.next();
    for (let i = 0; i < 300; i++) s = sim.next();
    const t = new Float32Array(OUTPUT_DIM);
    fillTargets(s.truth, sim.scenario.camera, t);
    const m = Float32Array.from(t);
    mirrorTargets(m, 6);
    expect(Array.from(m)).not.toEqual(Array.from(t));
    mirrorTargets(m, 6);
    for (let i = 0; i < OUTPUT_DIM; i++) expect(m[i]).toBeCloseTo(t[i]!, 5);
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

  it('a scenario gives windows of FEATURE_DIM rows and targets of its last frames', () => {
    const [r] = makeRecipes(3, { train: 1, val: 0, test: 0, seconds: 2 });
    const d = generateScenario(r!, 16, true);
    const windows = Math.floor((200 - WINDOW_FRAMES) / 16) + 1;
    expect(d.n).toBe(2 * windows);
    expect(d.features.length).toBe(d.n * FEATURE_DIM);
    expect(d.targets.length).toBe(d.n * OUTPUT_DIM);
    // Row 2k + 1 is the mirror of row 2k.
    const t = Float32Array.from(d.targets.subarray(0, OUTPUT_DIM));
    mirrorTargets(t, r!.room.width);
    for (let i = 0; i < OUTPUT_DIM; i++) expect(d.targets[OUTPUT_DIM + i]).toBeCloseTo(t[i]!, 6);
    // The simulator options of the recipe build the same scenario again.
    expect(new CsiSimulator(simOptions(r!, d.people)).scenario.persons.length).toBe(d.people);
    expect(Array.from(d.mirrored.subarray(0, 4))).toEqual([0, 1, 0, 1]);

    // The network's rows: features, then the scene's site row (mirrored for mirrored rows), or the
    // all-zero row for a scene whose site is withheld.
    const data = concatScenarios([d]);
    const recipes = new Map([[r!.id, r!]]);
    const W = FEATURE_DIM + SITE_DIM;
    const known = withSiteInputs(data, recipes);
    expect(known.features.length).toBe(d.n * W);
    expect(Array.from(known.features.subarray(W, W + FEATURE_DIM))).toEqual(Array.from(d.features.subarray(FEATURE_DIM, 2 * FEATURE_DIM)));
    expect(Array.from(known.features.subarray(FEATURE_DIM, W))).toEqual(Array.from(siteVector(recipeSite(r!))));
    const mirroredSite = Array.from(known.features.subarray(W + FEATURE_DIM, 2 * W));
    expect(mirroredSite).toEqual(Array.from(siteVector(recipeSite(r!, true))));
    expect(mirroredSite[3]).toBeCloseTo(r!.room.width - r!.rx.x, 5);
    expect(mirroredSite[5]).toBeCloseTo(-(r!.tx.x - r!.rx.x), 5);
    const withheld = withSiteInputs(data, recipes, new Set([r!.id]));
    expect(Array.from(withheld.features.subarray(W + FEATURE_DIM, 2 * W))).toEqual(new Array(SITE_DIM).fill(0));
    expect(() => withSiteInputs(data, new Map())).toThrow(/no recipe for scenario/);
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

  it('exports a model PoseModel loads, whose output for a training row equals the TypeScript forward pass', async () => {
    const model = await PoseModel.load(run.onnxPath, { featureDim: FEATURE_DIM });
    try {
      expect(model.metadata.csipose_contract).toBe(CONTRACT_VERSION);
      expect(model.metadata.feature_dim).toBe(FEATURE_DIM);
      expect(model.metadata.window_frames).toBe(WINDOW_FRAMES);
      expect(model.maxPersons).toBe(MAX_PERSONS);
      expect(model.metadata.model_version).toMatch(/^csipose-pose-1\.0\.0\+[0-9a-f]{10}$/);
      expect(model.siteDim).toBe(SITE_DIM);
      expect(model.metadata.site_dim).toBe(SITE_DIM);
      // A mirrored row (odd rows of a mirrored scenario), with its scene's mirrored site.
      const i = 5;
      expect(run.train.mirrored[i]).toBe(1);
      const recipes = new Map(makeRecipes(2, QUICK.counts).map((r) => [r.id, r]));
      const site = recipeSite(recipes.get(run.train.scenario[i]!)!, true);
      const row = run.train.features.slice(i * FEATURE_DIM, (i + 1) * FEATURE_DIM);
      const out = await model.run(row, 1, { site });
      const x = new Float32Array(FEATURE_DIM + SITE_DIM);
      x.set(row);
      x.set(siteVector(site), FEATURE_DIM);
      const ts = outputsFromFlat(predict(run.net, run.norm, x, 1), 1);
      // The site is part of the answer: an unknown site gives another one.
      const blind = await model.run(row.slice(), 1);
      expect(Array.from(blind.floor)).not.toEqual(Array.from(out.floor));
      for (const k of ['presence', 'keypoints', 'boxes', 'floor', 'densepose'] as const) {
        expect(out[k].length).toBe(ts[k].length);
        for (let i = 0; i < ts[k].length; i++) expect(Math.abs(out[k][i]! - ts[k][i]!)).toBeLessThanOrEqual(1e-4);
      }
    } finally {
      await model.release();
    }
  });

  it('scores perfect outputs as perfect', () => {
    const d = run.test;
    const perfect = Float32Array.from(d.targets);
    // Targets are already the ideal outputs (activations applied, floor in metres).
    const s = scoreOutputs(outputsFromFlat(perfect, d.n), d.targets, d.personCounts);
    expect(s.all.countExact).toBe(1);
    if (s.all.keypoints > 0) {
      expect(s.all.pck02).toBe(1);
      expect(s.all.meanJointErrorPx).toBeLessThan(1e-3);
    }
  });
});
