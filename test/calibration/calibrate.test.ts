/**
 * `csipose calibrate`: the labels format, the floor point under labelled ankles, and the command
 * end to end (a simulated session recorded with the capture sink, a --quick v2 model trained here,
 * the room model written, loaded by the runtime and run by the service).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_V2 } from '../../src/model/contract.js';
import { PoseModel } from '../../src/model/runtime.js';
import { DEFAULT_VIEW, viewCamera } from '../../src/pose/camera.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { ANKLE_HEIGHT_M, floorFromLabel, LABEL_TOLERANCE_S, parseLabels } from '../../src/calibration/calibrate.js';
import { runTraining } from '../../training/ts/run.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import { startServer, until, waitForStatus } from '../helpers/server.js';
import { contractModel } from '../helpers/poseModels.js';
import { FEATURE_DIM } from '../../src/model/features.js';

const kp = (x: number) => new Array(51).fill(x);

describe('calibration labels', () => {
  it('reads t or time, and every person of a line', () => {
    const text = [
      JSON.stringify({ t: 0.5, people: [{ keypoints: kp(1) }, { keypoints: kp(2) }] }),
      '',
      JSON.stringify({ time: '2026-01-01T00:00:01Z', people: [] }),
      JSON.stringify({ time: 1767225602000, people: [{ keypoints: kp(3) }] }),
    ].join('\n');
    const l = parseLabels(text, 'x.jsonl');
    expect(l.map((x) => [x.t, x.time, x.people.length])).toEqual([
      [0.5, NaN, 2],
      [NaN, Date.UTC(2026, 0, 1, 0, 0, 1), 0],
      [NaN, 1767225602000, 1],
    ]);
    expect(l[0]!.people[1]!.keypoints[50]).toBe(2);
  });

  it.each([
    ['{not json', /x.jsonl:1: not JSON/],
    ['[1, 2]', /x.jsonl:1: expected an object/],
    ['{"people": []}', /x.jsonl:1: needs "t".*or "time"/],
    ['{"t": 1}', /x.jsonl:1: "people" must be an array/],
    ['{"t": 1, "people": [{"keypoints": [1, 2, 3]}]}', /x.jsonl:1: people\[0\]\.keypoints must be 51 numbers/],
    ['{"t": 1, "people": []}\n{"t": "soon", "people": []}', /x.jsonl:2: needs "t"/],
  ])('refuses %s with the line and the reason', (text, why) => {
    expect(() => parseLabels(text, 'x.jsonl')).toThrow(why);
  });
});

describe('floorFromLabel', () => {
  it('finds the floor under the ankles a camera sees, and nothing without both ankles', () => {
    const camera = viewCamera(DEFAULT_VIEW);
    const sim = new CsiSimulator({ seed: 11, people: 1 });
    let checked = 0;
    for (let i = 0; i < 400; i++) {
      const { truth } = sim.next();
      if (i % 50) continue;
      const p = truth.persons[0]!;
      if (p.activity !== 'standing' && p.activity !== 'walking') continue;
      if (!p.visible[15] || !p.visible[16]) continue;
      const label = new Float32Array(51);
      for (let k = 0; k < 17; k++) label.set([p.keypoints[2 * k]!, p.keypoints[2 * k + 1]!, p.visible[k]!], 3 * k);
      const f = floorFromLabel(label, camera)!;
      // The ankles' midpoint, not the pelvis: within a foot's length of the floor position.
      const ax = 0.5 * (p.keypoints3d[45]! + p.keypoints3d[48]!);
      const ay = 0.5 * (p.keypoints3d[46]! + p.keypoints3d[49]!);
      const az = 0.5 * (p.keypoints3d[47]! + p.keypoints3d[50]!);
      if (Math.abs(az - ANKLE_HEIGHT_M) < 0.02) {
        expect(Math.hypot(f.x - ax, f.y - ay)).toBeLessThan(0.15);
        checked++;
      }
      label[3 * 15 + 2] = 0;
      expect(floorFromLabel(label, camera)).toBeNull();
    }
    expect(checked).toBeGreaterThan(0);
  });
});

describe('csipose calibrate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-calibrate-'));
  const f = (name: string) => join(dir, name);
  beforeAll(async () => {
    ensureBuilt();
    await runTraining({ quick: true, seed: 3, out: dir, workers: 0, progress: { write: () => true, isTTY: false } });
    // 40 s of a room with two people, recorded as a capture and camera labels (the capture sink).
    const rec = await runCli(['pipe', `sim?seed=21&people=2&truth=1 | capture path=${f('s1.dat')} labels=${f('s1.jsonl')}`, '--fast', '--limit', '4000']);
    expect(rec.code).toBe(0);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('turns a labelled session into a room model the runtime loads', async () => {
    const r = await runCli(
      [
        'calibrate',
        '--csi',
        f('s1.dat'),
        '--keypoints',
        f('s1.jsonl'),
        '--out',
        f('room.onnx'),
        '--model',
        f('csipose-pose.onnx'),
        '--data-dir',
        f('data'),
        '--epochs',
        '3',
      ],
      { timeoutMs: 60_000 },
    );
    expect(r.stderr).toMatch(/read 1 session\(s\): \d+ labelled windows from 4000 CSI frames/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/room model csipose-pose-2\.0\.0\+[0-9a-f]{10}\+room -> .*room\.onnx/);
    expect(r.stdout).toMatch(/re-projection [\d.]+ -> [\d.]+ px, floor [\d.]+ -> [\d.]+ m/);
    const report = JSON.parse(readFileSync(f('room.json'), 'utf8')) as {
      rows: { train: number; held_out: number };
      epochs: unknown[];
      view: { hfov_deg: number };
    };
    expect(report.rows.train).toBeGreaterThan(150);
    expect(report.rows.held_out).toBeGreaterThan(20);
    expect(report.epochs).toHaveLength(3);
    expect(report.view.hfov_deg).toBe(DEFAULT_VIEW.hfov_deg);
    const model = await PoseModel.load(f('room.onnx'), { featureDim: FEATURE_DIM });
    try {
      expect(model.contract).toBe(2);
      expect(model.metadata.csipose_contract).toBe(CONTRACT_V2);
      expect(model.metadata.trained_on).toMatch(/calibrated on 1 session\(s\)/);
    } finally {
      await model.release();
    }
    // The service takes it as neural_network.model_path and runs it after a restart.
    const s = await startServer({ source: 'sim?seed=3&people=1' });
    try {
      const token = await s.login();
      const put = await s.api('PUT', '/config', { token, body: { neural_network: { model_path: f('room.onnx') } } });
      expect(put.status, put.text).toBe(200);
      expect((await s.api('POST', '/system/restart', { token })).status).toBe(202);
      const st = await waitForStatus(s, token, 'running');
      expect(JSON.stringify(st)).toMatch(/csipose-pose-2\.0\.0\+[0-9a-f]{10}\+room/);
      const frame = await until(async () => {
        const r = await s.api('GET', '/pose/latest', { token });
        return r.status === 200 && r.body.data?.metadata?.model_version?.endsWith('+room') ? r.body.data : undefined;
      }, 'a pose frame from the room model');
      expect(frame.metadata.model_version).toMatch(/\+room$/);
    } finally {
      await s.close();
    }
  }, 90_000);

  it('says what is wrong: bad usage (2), labels that match no window, a v1 model, a missing file (1)', async () => {
    const pair = await runCli(['calibrate', '--csi', f('s1.dat'), '--csi', f('s1.dat'), '--keypoints', f('s1.jsonl'), '--out', f('x.onnx')]);
    expect(pair.code).toBe(2);
    expect(pair.stderr).toMatch(/2 --csi but 1 --keypoints/);

    writeFileSync(f('late.jsonl'), JSON.stringify({ t: 1000 + LABEL_TOLERANCE_S, people: [] }) + '\n');
    const late = await runCli([
      'calibrate',
      '--csi',
      f('s1.dat'),
      '--keypoints',
      f('late.jsonl'),
      '--out',
      f('x.onnx'),
      '--model',
      f('csipose-pose.onnx'),
      '--data-dir',
      f('data'),
    ]);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/no window has a label within 0.1 s .*check the label times/);

    writeFileSync(f('v1.onnx'), contractModel(FEATURE_DIM, 4));
    const v1 = await runCli([
      'calibrate',
      '--csi',
      f('s1.dat'),
      '--keypoints',
      f('s1.jsonl'),
      '--out',
      f('x.onnx'),
      '--model',
      f('v1.onnx'),
      '--data-dir',
      f('data'),
    ]);
    expect(v1.code).toBe(1);
    expect(v1.stderr).toMatch(/is not a csipose-pose-v2 model/);

    const missing = await runCli([
      'calibrate',
      '--csi',
      f('nope.dat'),
      '--keypoints',
      f('s1.jsonl'),
      '--out',
      f('x.onnx'),
      '--model',
      f('csipose-pose.onnx'),
      '--data-dir',
      f('data'),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/nope\.dat/);
    expect(existsSync(f('x.onnx'))).toBe(false);
  }, 60_000);
});
