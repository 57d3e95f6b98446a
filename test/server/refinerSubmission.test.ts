/**
 * `POST /pose/process` while the live model is a v3 refiner: the refiner reads the physics front
 * end's candidates over every link of the site, which one submitted link cannot give, so the
 * window model of `neural_network.submission_model_path` (the shipped v2 by default) answers,
 * and its answer names that model. A submission model that is a refiner, or does not load, is
 * refused by PUT /config (422); one that fails at start leaves the live session running and
 * submissions answered 503 MODEL_ERROR saying why. The real service on port 0, real models.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/cli.js';
import { withServer, startServer, waitForStatus, type TestServer } from '../helpers/server.js';
import { PoseModel } from '../../src/model/runtime.js';

const REFINER = join(repoRoot, 'models/csipose-refiner.onnx');
const WINDOW_MODEL = join(repoRoot, 'models/csipose-pose.onnx');
/** 3 antennas x 30 subcarriers: the layout the shipped window model reads. */
const antenna_data = [0, 1, 2].map((rx) => Array.from({ length: 30 }, (_, sc) => ({ real: Math.cos(sc * 0.2 + rx), imag: Math.sin(sc * 0.2 + rx) })));

async function versionOf(path: string): Promise<string> {
  const m = await PoseModel.load(path);
  try {
    return m.metadata.model_version!;
  } finally {
    await m.release();
  }
}

describe('POST /pose/process with a v3 refiner live', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer({ autostart: true, config: { neural_network: { model_path: REFINER } } });
    token = await s.login();
    await waitForStatus(s, token, 'running');
  }, 60_000);
  afterAll(() => s?.close());

  it('answers with the window model of submission_model_path, and says which model answered', async () => {
    const [live, window] = [await versionOf(REFINER), await versionOf(WINDOW_MODEL)];
    expect(live).not.toBe(window);
    const status = await s.api('GET', '/system/status', { token });
    expect(status.body.data.components.neural_network.model_version).toBe(live);

    const r = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data } } });
    expect(r.status, r.text).toBe(200);
    const poses = r.body.data.poses;
    expect(poses.length).toBeGreaterThan(0);
    for (const p of poses) expect(p.metadata.model_version).toBe(window);
  });

  it('PUT /config refuses a submission model that is a refiner or does not load (422), and keeps the one in force', async () => {
    const refiner = await s.api('PUT', '/config', { token, body: { neural_network: { submission_model_path: REFINER } } });
    expect(refiner.status, refiner.text).toBe(422);
    expect(JSON.stringify(refiner.body)).toMatch(
      /neural_network\.submission_model_path does not load as a window model \(contract v1 or v2\): it is a v3 refiner/,
    );
    const missing = await s.api('PUT', '/config', { token, body: { neural_network: { submission_model_path: 'models/no-such.onnx' } } });
    expect(missing.status, missing.text).toBe(422);
    expect(JSON.stringify(missing.body)).toMatch(/neural_network\.submission_model_path does not load as a window model/);
    const cfg = await s.api('GET', '/config', { token, form: 'a' });
    expect(cfg.body.neural_network.submission_model_path).toBe('models/csipose-pose.onnx');
  });
});

it('a submission model that fails at start: the live session runs, submissions answer 503 MODEL_ERROR saying why', async () => {
  await withServer({ autostart: true, config: { neural_network: { model_path: REFINER, submission_model_path: REFINER } } }, async (s) => {
    const token = await s.login();
    await waitForStatus(s, token, 'running');
    const r = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data } } });
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('MODEL_ERROR');
    expect(r.body.error.message).toMatch(
      /no window model answers submissions: neural_network\.submission_model_path \(.*csipose-refiner\.onnx\): it is a v3 refiner/,
    );
  });
}, 60_000);
