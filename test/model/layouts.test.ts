import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  bandOfChannel,
  CONTRACT_VERSION,
  csiLayout,
  formatLayouts,
  layoutText,
  parseLayouts,
  RECIPE_LAYOUTS,
  untrainedPart,
} from '../../src/model/contract.js';
import { buildMlpPoseModel } from '../../src/calibration/onnxWriter.js';
import { ModelError, PoseModel, trainedLayoutsOf } from '../../src/model/runtime.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { makeRecipes } from '../../training/ts/recipe.js';
import { simOptions } from '../../training/ts/dataset.js';
import { TRAINED_MODEL } from '../helpers/server.js';
import { tinyMeta, tinyWeights } from '../helpers/poseModels.js';
import { describeWithSamples, sampleBytes } from '../helpers/samples.js';

/** Issue 17, item 12a: a model reads only the CSI layouts it was trained on. */

describe('CSI layouts', () => {
  it('the recipe layouts are exactly what the training recipe draws (every one, nothing else)', () => {
    // The shipped model's run: 1400 train + 100 val + 120 test scenarios of master seed 1.
    const recipes = makeRecipes(1, { train: 1400, val: 100, test: 120, seconds: 16 });
    const seen = new Map<string, ReturnType<typeof csiLayout>>();
    for (const r of recipes) {
      const key = `${r.nRx}x${r.nTx}x${r.nSub}`;
      if (seen.has(key)) continue;
      // The layout of the frames the simulator really produces for this recipe.
      const { frame } = new CsiSimulator(simOptions(r, 0)).next();
      seen.set(key, csiLayout(frame));
    }
    const layouts = [...seen.values()];
    for (const l of layouts) expect(untrainedPart(RECIPE_LAYOUTS, l), layoutText(l)).toBeNull();
    expect(new Set(layouts.map((l) => `${l.nRx}x${l.nTx}`))).toEqual(new Set(RECIPE_LAYOUTS.antennas.map(([r, t]) => `${r}x${t}`)));
    expect(new Set(layouts.map((l) => `${l.nSub}/${l.bandwidthMhz}`))).toEqual(new Set(RECIPE_LAYOUTS.subcarriers.map(([n, b]) => `${n}/${b}`)));
    expect(new Set(layouts.map((l) => l.band))).toEqual(new Set(RECIPE_LAYOUTS.bands));
  });

  it('names the band of a channel number, and none for an unknown one', () => {
    expect([1, 6, 14, 36, 149, 165].map(bandOfChannel)).toEqual(['2.4', '2.4', '2.4', '5', '5', '5']);
    expect([NaN, 0, 15, 200, 2.5, undefined].map(bandOfChannel)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('writes and reads the trained_layouts metadata, and refuses a malformed one naming the fault', () => {
    const text = formatLayouts(RECIPE_LAYOUTS);
    expect(text).toBe('antennas=3x3,2x2,3x1,1x1;subcarriers=30/20,56/20,114/40;bands=5');
    expect(parseLayouts(text)).toEqual(RECIPE_LAYOUTS);
    expect(parseLayouts('bands=2.4,5; subcarriers=64/20 ;antennas=1x1')).toEqual({ antennas: [[1, 1]], subcarriers: [[64, 20]], bands: ['2.4', '5'] });
    for (const [bad, msg] of [
      ['antennas=3x3;subcarriers=30/20', /bands= is missing/],
      ['antennas=4x1;subcarriers=30/20;bands=5', /bad antennas entry "4x1"/],
      ['antennas=3x3;subcarriers=30/50;bands=5', /bad subcarriers entry "30\/50"/],
      ['antennas=3x3;subcarriers=30/20;bands=6', /bad band "6"/],
      ['3x3', /is not NAME=VALUES/],
    ] as const)
      expect(() => parseLayouts(bad), bad).toThrow(msg);
  });

  it('says what of a layout is untrained, and does not hold an unknown band against it', () => {
    const l = { nRx: 1, nTx: 1, nSub: 64, bandwidthMhz: 20 as const, band: '2.4' as const };
    expect(untrainedPart(RECIPE_LAYOUTS, l)).toBe(
      '64 subcarriers spanning 20 MHz (trained: 30 spanning 20 MHz, 56 spanning 20 MHz, 114 spanning 40 MHz); 2.4 GHz (trained: 5 GHz)',
    );
    expect(untrainedPart(RECIPE_LAYOUTS, { nRx: 3, nTx: 2, nSub: 30, bandwidthMhz: 20 })).toBe('3x2 antennas (trained: 3x3, 2x2, 3x1, 1x1)');
    expect(untrainedPart(RECIPE_LAYOUTS, { nRx: 3, nTx: 1, nSub: 30, bandwidthMhz: 20 })).toBeNull();
  });

  it('which models declare layouts: the metadata, else our own training (model_version csipose-pose-...), else none', () => {
    const meta = tinyMeta(6, 2);
    expect(trainedLayoutsOf(meta)).toBeNull();
    expect(trainedLayoutsOf({ ...meta, model_version: 'csipose-pose-2.0.0+abc+room' })).toBe(RECIPE_LAYOUTS);
    expect(trainedLayoutsOf({ ...meta, trained_layouts: 'antennas=1x1;subcarriers=64/20;bands=2.4' })).toEqual({
      antennas: [[1, 1]],
      subcarriers: [[64, 20]],
      bands: ['2.4'],
    });
  });

  it('a model with a malformed trained_layouts does not load: ModelError naming it', async () => {
    const bytes = buildMlpPoseModel(
      tinyWeights(6, [4], 2),
      tinyMeta(6, 2, { csipose_contract: CONTRACT_VERSION, trained_layouts: 'antennas=9x9;subcarriers=30/20;bands=5' }),
    );
    const err = await PoseModel.load(bytes).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ModelError);
    expect((err as Error).message).toMatch(/trained_layouts: bad antennas entry "9x9"/);
  });

  it.skipIf(!existsSync(TRAINED_MODEL))('the shipped model declares the recipe layouts', async () => {
    const m = await PoseModel.load(TRAINED_MODEL);
    try {
      expect(m.metadata.model_version).toMatch(/^csipose-pose-/);
      expect(m.trainedLayouts).toBe(RECIPE_LAYOUTS);
    } finally {
      await m.release();
    }
  });
});

describeWithSamples('CSI layouts of the real captures', () => {
  it('ESP32 example_csi.csv: 1x1, 64 subcarriers spanning 20 MHz, 2.4 GHz, untrained', () => {
    const f = decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames[0]!;
    const l = csiLayout(f);
    expect(layoutText(l)).toBe('1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz');
    expect(untrainedPart(RECIPE_LAYOUTS, l)).toMatch(/^64 subcarriers spanning 20 MHz .*; 2\.4 GHz/);
  });

  it('Intel 5300: the 3x1 and 3x3 records are trained layouts (band unknown), the 3x2 ones are not', () => {
    const verdicts = new Map<string, string | null>();
    for (const f of decodeIntel5300(sampleBytes('intel5300/log.all_csi.6.7.6')).frames) {
      verdicts.set(`${f.nRx}x${f.nTx}`, untrainedPart(RECIPE_LAYOUTS, csiLayout(f)));
    }
    expect(Object.fromEntries(verdicts)).toEqual({ '3x1': null, '3x2': '3x2 antennas (trained: 3x3, 2x2, 3x1, 1x1)', '3x3': null });
  });
});
