import { describe, expect, it } from 'vitest';
import { LayoutGate } from '../../src/model/layoutGate.js';
import { MAX_STREAMS, type FeatureRow, type InferStats, type UntrainedPolicy } from '../../src/model/inferTypes.js';
import { ModelError, type PoseRunner } from '../../src/model/runtime.js';
import type { CsiLayout, ModelMetadata, TrainedLayouts } from '../../src/model/contract.js';

const TRAINED: TrainedLayouts = { antennas: [[3, 3]], subcarriers: [[30, 20]], bands: ['5'] };
const ROOM: CsiLayout = { nRx: 3, nTx: 3, nSub: 30, bandwidthMhz: 20, band: '5' };
const ESP32: CsiLayout = { nRx: 1, nTx: 1, nSub: 64, bandwidthMhz: 20, band: '2.4' };
const ESP32_TEXT = '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz';
const ESP32_WHY = '1x1 antennas (trained: 3x3); 64 subcarriers spanning 20 MHz (trained: 30 spanning 20 MHz); 2.4 GHz (trained: 5 GHz)';

/** A model trained on TRAINED (or on what it is given; undefined = a model that does not say). */
function model(...args: [trainedLayouts?: TrainedLayouts | null, version?: string]): Pick<PoseRunner, 'metadata' | 'trainedLayouts'> {
  const metadata = { model_version: args[1] ?? 'm-1' } as ModelMetadata;
  return args.length === 0 ? { metadata, trainedLayouts: TRAINED } : args[0] === undefined ? { metadata } : { metadata, trainedLayouts: args[0] };
}
const row = (sourceId: string, layout?: CsiLayout, environmentId = 'env'): FeatureRow => ({
  features: new Float32Array(1),
  frameTime: 0,
  arrival: 0,
  sourceId,
  environmentId,
  csiQuality: 1,
  ...(layout ? { layout } : {}),
});
/** A gate with a clock that ticks 1000, 1001, ... and the stats it lists into. */
function gate(policy: UntrainedPolicy) {
  const stats: Pick<InferStats, 'untrained'> = { untrained: [] };
  let t = 1000;
  return { g: new LayoutGate(policy, stats, () => t++), stats };
}

describe('LayoutGate: what is admitted', () => {
  it.each([
    { name: 'a trained layout', trained: TRAINED, layout: ROOM, admitted: true },
    { name: 'an untrained layout', trained: TRAINED, layout: ESP32, admitted: false },
    { name: 'a row without a layout (not checked)', trained: TRAINED, layout: undefined, admitted: true },
    { name: 'a model that declares no layouts (null)', trained: null, layout: ESP32, admitted: true },
    { name: 'a model that declares no layouts (absent)', trained: undefined, layout: ESP32, admitted: true },
  ])('$name: $admitted', ({ trained, layout, admitted }) => {
    for (const policy of ['refuse', 'drop'] as const) expect(gate(policy).g.admit(model(trained), row('s', layout))).toBe(admitted);
  });

  it('rejects an unknown policy', () => {
    expect(() => new LayoutGate('ignore' as UntrainedPolicy, {})).toThrow(/untrained must be 'refuse' or 'drop', got ignore/);
  });
});

describe('LayoutGate: refuse', () => {
  it('names the model, the source, the layout and what the model was trained on', () => {
    const { g, stats } = gate('refuse');
    expect(g.refusal).toBeUndefined();
    g.admit(model(), row('esp32-link', ESP32));
    expect(g.refusal).toBeInstanceOf(ModelError);
    expect(g.refusal!.message).toBe(`the model m-1 was not trained on the CSI layout of esp32-link: ${ESP32_TEXT}; not trained on ${ESP32_WHY}`);
    expect(stats.untrained).toEqual([]);
    const anon = gate('refuse').g;
    anon.admit(model(TRAINED, ''), row('x', ESP32));
    expect(anon.refusal!.message).toMatch(/^the model \(no version\) was not/);
  });

  it('keeps the rows of a batch before the refused one, and none after it', () => {
    const { g } = gate('refuse');
    const rows = [row('a', ROOM), row('b', ROOM), row('c', ESP32), row('d', ROOM), row('e', ESP32)];
    const kept = g.admitted(model(), rows);
    expect(kept).toBe(rows);
    expect(kept.map((r) => r.sourceId)).toEqual(['a', 'b']);
    expect(g.refusal!.message).toMatch(/layout of c:/);
  });
});

describe('LayoutGate: drop', () => {
  it('drops the untrained rows of a batch and keeps the others in order', () => {
    const { g } = gate('drop');
    const kept = g.admitted(model(), [row('a', ESP32), row('b', ROOM), row('a', ESP32), row('c')]);
    expect(kept.map((r) => r.sourceId)).toEqual(['b', 'c']);
    expect(g.refusal).toBeUndefined();
  });

  it('lists a link with its windows and last time until a trained window comes from it', () => {
    const { g, stats } = gate('drop');
    const m = model();
    g.admit(m, row('esp32-link', ESP32, 'lab'));
    const first = stats.untrained;
    g.admit(m, row('esp32-link', ESP32, 'lab'));
    g.admit(m, row('esp32-link', ESP32, 'lab'));
    // The same link again: counted in place, the list not replaced.
    expect(stats.untrained).toBe(first);
    expect(stats.untrained).toEqual([{ sourceId: 'esp32-link', environmentId: 'lab', layout: ESP32_TEXT, reason: ESP32_WHY, windows: 3, lastAt: 1002 }]);
    // Another link's trained windows leave the list as it is.
    g.admit(m, row('room-link', ROOM));
    expect(stats.untrained).toBe(first);
    // A trained window from the listed link takes it off (a new list).
    g.admit(m, row('esp32-link', ROOM, 'lab'));
    expect(stats.untrained).toEqual([]);
    expect(stats.untrained).not.toBe(first);
  });

  it('a link whose layout changes to another untrained one starts a new entry', () => {
    const { g, stats } = gate('drop');
    const other: CsiLayout = { ...ESP32, nSub: 56 };
    g.admit(model(), row('s', ESP32));
    g.admit(model(), row('s', ESP32));
    g.admit(model(), row('s', other));
    expect(stats.untrained).toHaveLength(1);
    expect(stats.untrained![0]).toMatchObject({ layout: '1x1 antennas, 56 subcarriers spanning 20 MHz, 2.4 GHz', windows: 1 });
  });

  it(`lists at most ${MAX_STREAMS} links, forgetting the oldest`, () => {
    const { g, stats } = gate('drop');
    for (let i = 0; i <= MAX_STREAMS; i++) g.admit(model(), row(`s${i}`, ESP32));
    expect(stats.untrained).toHaveLength(MAX_STREAMS);
    expect(stats.untrained![0]!.sourceId).toBe('s1');
    expect(stats.untrained![MAX_STREAMS - 1]!.sourceId).toBe(`s${MAX_STREAMS}`);
  });
});
