import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot, resolveInstalled } from '../../src/packageRoot.js';
import { defaults } from '../../src/config/schema.js';

describe('resolveInstalled: a configured relative path from any working directory', () => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'csipose-cwd-'));
  afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));
  const shippedDefault = defaults().neural_network.model_path;

  it('finds the package root (the folder with package.json) and the shipped model in it', () => {
    expect(existsSync(join(packageRoot(), 'package.json'))).toBe(true);
    expect(existsSync(join(packageRoot(), shippedDefault))).toBe(true);
  });

  it('the default model path works from a folder that has no models/ of its own', () => {
    expect(resolveInstalled(shippedDefault, elsewhere)).toBe(join(packageRoot(), shippedDefault));
  });

  it('a file in the working directory comes first; absolute paths stay; a missing one names the working directory', () => {
    mkdirSync(join(elsewhere, 'models'), { recursive: true });
    writeFileSync(join(elsewhere, shippedDefault), 'not a model');
    expect(resolveInstalled(shippedDefault, elsewhere)).toBe(join(elsewhere, shippedDefault));
    expect(resolveInstalled('/abs/room.onnx', elsewhere)).toBe('/abs/room.onnx');
    expect(resolveInstalled('rooms/ward.onnx', elsewhere)).toBe(join(elsewhere, 'rooms/ward.onnx'));
  });
});
