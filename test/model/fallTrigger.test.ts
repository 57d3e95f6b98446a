/**
 * A model's own fall trigger (`fall_trigger` metadata, a pose frame's `fallTrigger`): the shipped
 * refiner carries the one the recipe writes (REFINER_FALL_TRIGGER, chosen on validation), the
 * shipped v2 model none (FALL_TRIGGER applies); a value that is not a probability in (0, 1] fails
 * the load with MODEL_ERROR naming it. The real shipped models, edited copies of the refiner.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { ModelError, PoseModel } from '../../src/model/runtime.js';
import { REFINER_FALL_TRIGGER } from '../../src/pose/activityLabeller.js';
import { refinerContract } from '../../training/ts/refinerData.js';
import { repoRoot } from '../helpers/cli.js';

const { onnx } = onnxProto;
const REFINER = join(repoRoot, 'models/csipose-refiner.onnx');
const WINDOW_MODEL = join(repoRoot, 'models/csipose-pose.onnx');

async function metadataOf(path: string) {
  const m = await PoseModel.load(path, { thread: 'inline' });
  try {
    return m.metadata;
  } finally {
    await m.release();
  }
}

describe('fall_trigger in model metadata', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-trigger-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const withTrigger = (value: string): string => {
    const m = onnx.ModelProto.decode(readFileSync(REFINER));
    m.metadataProps = (m.metadataProps ?? []).map((p) => (p.key === 'fall_trigger' ? onnx.StringStringEntryProto.create({ key: p.key, value }) : p));
    const path = join(dir, `trigger-${value.length}-${Buffer.from(value).toString('hex')}.onnx`);
    writeFileSync(path, onnx.ModelProto.encode(m).finish());
    return path;
  };

  it("the shipped refiner carries the recipe's trigger; the shipped v2 model none", async () => {
    expect(refinerContract().fall_trigger).toBe(String(REFINER_FALL_TRIGGER));
    expect((await metadataOf(REFINER)).fall_trigger).toBe(REFINER_FALL_TRIGGER);
    expect((await metadataOf(WINDOW_MODEL)).fall_trigger).toBeUndefined();
  });

  it('reads any probability in (0, 1]; refuses anything else, naming it', async () => {
    expect((await metadataOf(withTrigger('0.95'))).fall_trigger).toBe(0.95);
    expect((await metadataOf(withTrigger('1'))).fall_trigger).toBe(1);
    for (const bad of ['0', '1.5', '-0.2', 'high', 'NaN']) {
      const err = await PoseModel.load(withTrigger(bad), { thread: 'inline' }).catch((e: unknown) => e);
      expect(err, bad).toBeInstanceOf(ModelError);
      expect((err as Error).message).toContain(`model metadata fall_trigger is ${JSON.stringify(bad)}, expected a probability in (0, 1]`);
    }
  });
});
