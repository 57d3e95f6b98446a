/**
 * `infer()` refuses what the config schema refuses (issue 20): every numeric option a setting
 * stands behind is checked against that setting's type and range, read here from the schema
 * itself (`fieldAt`, `RADIO_LIMITS`), not from the operator, so these cases prove the two agree.
 * The schema's bounds are accepted, one step beyond either is a RangeError naming the option and
 * the range, for a plain options object (at creation) and for live options (the stream errors).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { from, lastValueFrom } from 'rxjs';
import { infer, spec, type InferOptions } from '../../operators/infer.js';
import { fieldAt, RADIO_LIMITS } from '../../src/config/schema.js';
import { buildMlpPoseModel } from '../../src/calibration/onnxWriter.js';
import { PoseModel } from '../../src/model/runtime.js';
import { featureRows, tinyMeta, tinyWeights } from '../helpers/poseModels.js';

type NumericOption = {
  [K in keyof InferOptions]-?: NonNullable<InferOptions[K]> extends number ? K : never;
}[keyof InferOptions];

interface Bounds {
  readonly int: boolean;
  readonly min: number;
  readonly max: number;
}

/** A setting's type and range, from the schema. */
function setting(path: string): Bounds {
  const f = fieldAt(path);
  if (f?.type !== 'number' && f?.type !== 'integer') throw new Error(`${path} is not a numeric setting`);
  if (f.minimum === undefined || f.maximum === undefined) throw new Error(`${path} has no range`);
  return { int: f.type === 'integer', min: f.minimum, max: f.maximum };
}

interface Mapped {
  readonly option: NumericOption;
  readonly setting: string;
  readonly bounds: Bounds;
}
const field = (option: NumericOption, path: string): Mapped => ({ option, setting: path, bounds: setting(path) });
/** The primary receiver's coordinates are bounded by a radio's limits in the schema. */
const receiver = (option: NumericOption, axis: 'x' | 'y'): Mapped => ({
  option,
  setting: `environment.site.radios (the primary receiver's ${axis})`,
  bounds: { int: false, min: RADIO_LIMITS[axis].minimum, max: RADIO_LIMITS[axis].maximum },
});

/** Each option a setting stands behind, and that setting. */
const MAPPED: readonly Mapped[] = [
  field('batchSize', 'neural_network.batch_size'),
  field('maxWaitMs', 'neural_network.max_wait_ms'),
  field('confidenceThreshold', 'detection.confidence_threshold'),
  field('maxPersons', 'detection.max_persons'),
  field('viewWidth', 'environment.view.width'),
  field('viewHeight', 'environment.view.height'),
  field('viewHfovDeg', 'environment.view.hfov_deg'),
  field('viewX', 'environment.view.x'),
  field('viewY', 'environment.view.y'),
  field('viewZ', 'environment.view.z'),
  field('viewYawDeg', 'environment.view.yaw_deg'),
  field('viewPitchDeg', 'environment.view.pitch_deg'),
  receiver('receiverX', 'x'),
  receiver('receiverY', 'y'),
];

/** The queue's bound has no setting: it keeps its own documented range. */
const OWN: ReadonlyArray<{ option: NumericOption; bounds: Bounds }> = [{ option: 'maxQueue', bounds: { int: true, min: 1, max: 1_000_000 } }];

/** One step past a bound: 1 for an integer, a hair for a number. */
const step = (b: Bounds) => (b.int ? 1 : 1e-6);
const rangeText = (b: Bounds) => `[${b.min}, ${b.max}]`;

const F = 6;
const P = 2;
let model: PoseModel;
beforeAll(async () => {
  model = await PoseModel.load(buildMlpPoseModel(tinyWeights(F, [8], P), tinyMeta(F, P)));
});
afterAll(async () => {
  await model.release();
});

describe("infer: option ranges are the schema settings' ranges", () => {
  it.each(MAPPED)('$option agrees with $setting', ({ option, bounds }) => {
    expect(() => infer({ [option]: bounds.min })).not.toThrow();
    expect(() => infer({ [option]: bounds.max })).not.toThrow();
    for (const bad of [bounds.min - step(bounds), bounds.max + step(bounds)]) {
      const err = (() => {
        try {
          infer({ [option]: bad });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err, `${option} = ${bad}`).toBeInstanceOf(RangeError);
      expect((err as RangeError).message).toContain(`infer: ${option} must be`);
      expect((err as RangeError).message).toContain(rangeText(bounds));
    }
    if (bounds.int) expect(() => infer({ [option]: bounds.min + 0.5 })).toThrow(new RegExp(`${option} must be an integer`));
    expect(() => infer({ [option]: Number.NaN })).toThrow(RangeError);
  });

  it.each(MAPPED)('the spec parameter $option has the range of $setting', ({ option, bounds }) => {
    const p = spec.params.find((q) => q.name === option);
    expect(p).toMatchObject({ type: bounds.int ? 'int' : 'number', min: bounds.min, max: bounds.max });
  });

  it.each(OWN)('$option, with no setting behind it, keeps its own range in the check and the spec', ({ option, bounds }) => {
    expect(() => infer({ [option]: bounds.min })).not.toThrow();
    expect(() => infer({ [option]: bounds.max })).not.toThrow();
    expect(() => infer({ [option]: bounds.min - step(bounds) })).toThrow(rangeText(bounds));
    expect(() => infer({ [option]: bounds.max + step(bounds) })).toThrow(rangeText(bounds));
    expect(spec.params.find((q) => q.name === option)).toMatchObject({ min: bounds.min, max: bounds.max });
  });

  it.each(MAPPED)("live options: $option beyond its setting's range errors the stream", async ({ option, bounds }) => {
    const bad = bounds.max + step(bounds);
    const err = await lastValueFrom(from(featureRows(2, F)).pipe(infer(() => ({ model, [option]: bad })))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as RangeError).message).toBe(`infer: ${option} must be ${bounds.int ? 'an integer' : 'a number'} in ${rangeText(bounds)}, got ${bad}`);
  });
});
