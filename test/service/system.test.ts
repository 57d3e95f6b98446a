import { copyFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, startServer, waitForStatus, withServer, type ApiResponse, type TestServer } from '../helpers/server.js';
import { VERSION } from '../../src/service/service.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STEP_STATES = ['pending', 'in_progress', 'completed'];

function expectSteps(steps: unknown, names: string[]): void {
  expect(Array.isArray(steps)).toBe(true);
  const list = steps as Array<{ step: string; status: string; progress: number }>;
  expect(list.map((s) => s.step)).toEqual(names);
  for (const s of list) {
    expect(STEP_STATES).toContain(s.status);
    expect(s.progress).toBeGreaterThanOrEqual(0);
    expect(s.progress).toBeLessThanOrEqual(1);
  }
}

function expectConflict(r: ApiResponse, form: 'a' | 'b', state: string[]): void {
  expect(r.status, r.text).toBe(409);
  const e = r.body.error;
  expect(e.code).toBe('SYSTEM_STATE_CONFLICT');
  expect(state).toContain(e.details.current_status);
  if (form === 'b') expect(r.body.success).toBe(false);
  else expect(Object.keys(r.body)).toEqual(['error']);
}

const START_STEPS = ['load_model', 'open_store', 'open_source', 'start_pipeline'];
const STOP_STEPS = ['stop_pipeline', 'close_source', 'flush_sinks', 'release_model'];

describe('system lifecycle', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer({ model: true, rateLimitScale: 20 });
    token = await s.login();
  });
  afterAll(() => s?.close());

  it('reports a stopped system before any start, in both forms', async () => {
    const b = await s.api('GET', '/system/status', { token });
    expect(b.status).toBe(200);
    const d = b.body.data;
    expect(d).toMatchObject({ status: 'stopped', session_id: null, uptime_seconds: 0, started_at: null, version: VERSION });
    expect(d.performance).toMatchObject({ frames_processed: 0, average_fps: 0, gpu_usage: 0 });
    expect(d.performance.memory_usage).toBeGreaterThan(0);
    expect(typeof d.performance.cpu_usage).toBe('number');
    expect(typeof d.performance.average_latency_ms).toBe('number');
    expect(d.components.csi_processor).toEqual({ status: 'stopped', last_heartbeat: null, links: [] });
    expect(d.components.neural_network).toMatchObject({
      status: 'not_loaded',
      model_loaded: false,
      inference_queue_size: 0,
      site_input: false,
      site_known: false,
    });
    expect(d.components.tracker).toEqual({ status: 'stopped', active_tracks: 0 });
    expect(d.components.database.status).toBe('healthy');
    expect(d.components.database.connection_pool).toMatch(/^\d+\/\d+$/);

    const a = await s.api('GET', '/system/status', { token, form: 'a' });
    expect(a.body).toMatchObject({ status: 'stopped', uptime_seconds: 0, version: VERSION });
    expect(a.body.components.csi_receiver).toMatchObject({ status: 'stopped', data_rate_hz: 0, last_packet_time: null, links: [] });
    expect(typeof a.body.components.csi_receiver.packet_loss_rate).toBe('number');
    expect(a.body.components.neural_network).toMatchObject({ status: 'not_loaded', model_loaded: false });
    expect(typeof a.body.components.neural_network.inference_time_ms).toBe('number');
    expect(typeof a.body.components.neural_network.gpu_utilization).toBe('number');
    expect(a.body.components.tracking).toMatchObject({ status: 'stopped', active_tracks: 0 });
    expect(typeof a.body.components.tracking.track_quality).toBe('number');
    expect(a.body.hardware.memory_usage).toBeGreaterThan(0);
    for (const k of ['cpu_usage', 'gpu_memory_usage', 'disk_usage']) expect(typeof a.body.hardware[k], k).toBe('number');
    expect(a.body.network).toMatchObject({ connected_routers: 0 });
    for (const k of ['signal_strength', 'interference_level']) expect(typeof a.body.network[k], k).toBe('number');
  });

  it('stop and restart-free start rules: stop while stopped is 409', async () => {
    expectConflict(await s.api('POST', '/system/stop', { token }), 'b', ['stopped']);
    expectConflict(await s.api('POST', '/system/stop', { token, form: 'a' }), 'a', ['stopped']);
  });

  it('start -> starting -> running -> stop -> stopping -> stopped, with conflicts on the way', async () => {
    const start = await s.api('POST', '/system/start', { token });
    expect(start.status, start.text).toBe(202);
    const sd = start.body.data;
    expect(sd.status).toBe('starting');
    expect(sd.session_id).toMatch(UUID);
    expect(Number.isInteger(sd.estimated_startup_time)).toBe(true);
    // The configuration the session starts with (the spec's object), and no field changed by this request.
    expect(sd.configuration_applied).toMatchObject({ domain: 'general', environment_id: 'default', detection: { confidence_threshold: 0.5 } });
    expect(sd.updated_fields).toEqual([]);
    expectSteps(sd.steps, START_STEPS);
    expectConflict(await s.api('POST', '/system/start', { token }), 'b', ['starting', 'running']);

    const running = await waitForStatus(s, token, 'running');
    expect(running.session_id).toBe(sd.session_id);
    // The shipped model takes the site geometry; the default configuration gives none.
    expect(running.components.neural_network).toMatchObject({ model_loaded: true, site_input: true, site_known: false });
    expect(running.started_at).toMatch(ISO);
    expect(running.steps.map((x: { status: string }) => x.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(running.components.neural_network).toMatchObject({ status: 'active', model_loaded: true });
    expect(typeof running.components.neural_network.model_version).toBe('string');
    expect(running.components.tracker.status).toBe('active');
    expectConflict(await s.api('POST', '/system/start', { token, form: 'a' }), 'a', ['running']);

    // While it runs, frames flow: the counter grows, the rate is positive, the receiver is active.
    const first = running.performance.frames_processed as number;
    const later = await until(async () => {
      const d = (await s.api('GET', '/system/status', { token })).body.data;
      return d.performance.frames_processed > first && d.performance.average_fps > 0 ? d : undefined;
    }, 'frames to flow');
    expect(later.performance.memory_usage).toBeGreaterThan(0);
    expect(later.components.csi_processor.status).toBe('active');
    expect(later.components.csi_processor.last_heartbeat).toMatch(ISO);
    const a = await s.api('GET', '/system/status', { token, form: 'a' });
    expect(a.body.status).toBe('running');
    expect(a.body.components.csi_receiver.status).toBe('active');
    expect(a.body.components.csi_receiver.data_rate_hz).toBeGreaterThan(0);
    expect(a.body.components.csi_receiver.last_packet_time).toMatch(ISO);
    // The default site: a router and three receivers, every link live (the simulator simulates them all).
    expect(a.body.network.connected_routers).toBe(3);
    expect(a.body.components.csi_receiver.links.map((l: { link_id: string }) => l.link_id)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
    expect(a.body.components.neural_network.model_loaded).toBe(true);

    const stop = await s.api('POST', '/system/stop', { token, form: 'a' });
    expect(stop.status, stop.text).toBe(202);
    expect(stop.body.status).toBe('stopping');
    expect(stop.body.estimated_stop_time).toMatch(ISO);
    expectSteps(stop.body.shutdown_steps, STOP_STEPS);
    expectConflict(await s.api('POST', '/system/stop', { token }), 'b', ['stopping', 'stopped']);
    const stopped = await waitForStatus(s, token, 'stopped');
    expect(stopped.components.neural_network.model_loaded).toBe(false);
    expect(stopped.started_at).toBeNull();
    expectConflict(await s.api('POST', '/system/stop', { token }), 'b', ['stopped']);
    // Nothing flows once stopped.
    const n1 = stopped.performance.frames_processed;
    const again = (await s.api('GET', '/system/status', { token })).body.data;
    expect(again.performance.frames_processed).toBe(n1);
  });

  it('Form A start answers initialization_steps and estimated_ready_time; restart gives a new session', async () => {
    const start = await s.api('POST', '/system/start', { token, form: 'a' });
    expect(start.status, start.text).toBe(202);
    expect(start.body.status).toBe('starting');
    expect(start.body.estimated_ready_time).toMatch(ISO);
    expectSteps(start.body.initialization_steps, START_STEPS);
    const session = start.body.session_id as string;
    await waitForStatus(s, token, 'running');

    const restart = await s.api('POST', '/system/restart', { token });
    expect(restart.status, restart.text).toBe(202);
    const rd = restart.body.data;
    expect(rd.status).toBe('restarting');
    expect(rd.previous_session_id).toBe(session);
    expect(rd.new_session_id).toMatch(UUID);
    expect(rd.new_session_id).not.toBe(session);
    expect(Number.isInteger(rd.estimated_restart_time)).toBe(true);
    expectConflict(await s.api('POST', '/system/restart', { token }), 'b', ['restarting', 'running']);
    const running = await waitForStatus(s, token, 'running');
    expect(running.session_id).toBe(rd.new_session_id);
    expect(running.components.neural_network.model_loaded).toBe(true);

    const ra = await s.api('POST', '/system/restart', { token, form: 'a' });
    expect(ra.status).toBe(202);
    expect(ra.body).toMatchObject({ status: 'restarting', previous_session_id: rd.new_session_id });
    await waitForStatus(s, token, 'running');
    expect((await s.api('POST', '/system/stop', { token })).status).toBe(202);
    await waitForStatus(s, token, 'stopped');
  });

  it('the controller is read-only from outside: a write throws and changes nothing; only start, stop and restart move it', async () => {
    const sys = s.svc.system;
    expect(sys.state).toBe('stopped');
    const before = {
      sessionId: sys.sessionId,
      startedAt: sys.startedAt,
      everRan: sys.everRan,
      error: sys.error,
      steps: sys.steps,
      history: sys.history.length,
    };
    // Getters without setters: assignment in a module (strict mode) is a TypeError, not a silent no-op.
    const writes: Array<[string, unknown]> = [
      ['state', 'running'],
      ['sessionId', 'forged'],
      ['startedAt', 0],
      ['everRan', false],
      ['error', { code: 'SYSTEM_ERROR', message: 'forged' }],
      ['steps', []],
      ['history', []],
    ];
    for (const [field, value] of writes) expect(() => ((sys as unknown as Record<string, unknown>)[field] = value), field).toThrow(TypeError);
    expect(sys.state).toBe('stopped');
    expect({
      sessionId: sys.sessionId,
      startedAt: sys.startedAt,
      everRan: sys.everRan,
      error: sys.error,
      steps: sys.steps,
      history: sys.history.length,
    }).toEqual(before);

    // The public transitions still move it, through the state machine, and the history records each move.
    const t = sys.start();
    expect(sys.state).toBe('starting');
    expect(sys.sessionId).toBe(t.session_id);
    expect(sys.history.at(-1)).toMatchObject({ from: 'stopped', to: 'starting', session_id: t.session_id });
    expect(() => sys.start()).toThrow(/cannot start while the system is starting/);
    await sys.settled();
    expect(sys.state).toBe('running');
    expect(sys.startedAt).toBeGreaterThan(0);
    sys.stop();
    await sys.settled();
    expect(sys.state).toBe('stopped');
    expect(sys.startedAt).toBeUndefined();
    expect(sys.history.slice(-2).map((h) => h.to)).toEqual(['stopping', 'stopped']);
  });

  it('start applies a configuration in either form; bad bodies are 422 naming the field', async () => {
    const bad: Array<[unknown, string]> = [
      [{ configuration: { detection_settings: { max_persons: 0 } } }, 'configuration.detection_settings.max_persons'],
      [{ configuration: { calibration_required: 'yes' } }, 'configuration.calibration_required'],
      [{ configuration: 'all' }, 'configuration'],
      [{ config: {} }, 'config'],
      // A rule across fields, checked on the merged configuration: the router (x = 3) outside the room.
      [{ configuration: { environment: { site: { room_width: 2 } } } }, 'configuration.environment.site.radios[0].x'],
    ];
    for (const [body, field] of bad) {
      const r = await s.api('POST', '/system/start', { token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field).toBe(field);
    }
    expect((await s.api('GET', '/system/status', { token })).body.data.status).toBe('stopped');
    for (const [body, field] of [
      [{ force: 'yes' }, 'force'],
      [{ save_state: 1 }, 'save_state'],
      [{ now: true }, 'now'],
    ] as const) {
      const r = await s.api('POST', '/system/stop', { token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field).toBe(field);
    }

    const r = await s.api('POST', '/system/start', {
      token,
      body: { configuration: { domain: 'healthcare', environment_id: 'ward-2', detection_settings: { confidence_threshold: 0.6, enable_tracking: true } } },
    });
    expect(r.status, r.text).toBe(202);
    expect([...r.body.data.updated_fields].sort()).toEqual(['detection.confidence_threshold', 'domain', 'environment_id']);
    expect(r.body.data.configuration_applied).toMatchObject({ domain: 'healthcare', environment_id: 'ward-2', detection: { confidence_threshold: 0.6 } });
    const cfg = (await s.api('GET', '/config', { token })).body.data;
    expect(cfg).toMatchObject({ domain: 'healthcare', environment_id: 'ward-2', detection: { confidence_threshold: 0.6 } });
    await waitForStatus(s, token, 'running');
    // A start with a configuration while running is a conflict and changes nothing.
    const busy = await s.api('POST', '/system/start', { token, body: { configuration: { domain: 'retail' } } });
    expectConflict(busy, 'b', ['running']);
    expect((await s.api('GET', '/config', { token })).body.data.domain).toBe('healthcare');
    const stop = await s.api('POST', '/system/stop', { token, body: { force: false, save_state: true } });
    expect(stop.status).toBe(202);
    expect(stop.body.data).toMatchObject({ status: 'stopping' });
    expect(stop.body.data.shutdown_initiated).toMatch(ISO);
    await waitForStatus(s, token, 'stopped');
  });
});

describe('system faults', () => {
  it('a missing model puts the system in error with MODEL_ERROR; the service keeps serving; a fixed path recovers', async () => {
    await withServer({ model: true, config: {}, rateLimitScale: 20 }, async (s) => {
      const token = await s.login();
      const good = s.modelPath!;
      // A path that does not load is refused at once, naming the field; nothing changes.
      const missing = await s.api('PUT', '/config', { token, body: { neural_network: { model_path: `${good}.missing` } } });
      expect(missing.status, missing.text).toBe(422);
      expect(missing.body.error.details).toMatchObject({ field: 'neural_network.model_path' });
      expect(missing.body.error.message).toMatch(/does not load/);
      const notModel = await s.api('PUT', '/config', { token, form: 'a', body: { neural_network: { model_path: 'package.json' } } });
      expect(notModel.status, notModel.text).toBe(422);
      expect(notModel.body.error.details.field_errors[0]).toMatchObject({ field: 'neural_network.model_path', received_value: 'package.json' });
      expect(s.svc.config.get().neural_network.model_path).toBe(good);

      // A model that loaded when configured and is gone by the start: the start fails with MODEL_ERROR.
      const copy = join(s.dataDir, 'copy.onnx');
      copyFileSync(good, copy);
      const put = await s.api('PUT', '/config', { token, body: { neural_network: { model_path: copy } } });
      expect(put.body.data).toMatchObject({ updated_fields: ['neural_network.model_path'], requires_restart: true });
      unlinkSync(copy);

      const start = await s.api('POST', '/system/start', { token });
      expect(start.status).toBe(202);
      const err = await waitForStatus(s, token, 'error');
      expect(err.error?.code).toBe('MODEL_ERROR');
      expect(err.error?.message).toMatch(/copy\.onnx/);
      expect(err.components.neural_network).toMatchObject({ status: 'error', model_loaded: false });
      expect(err.steps[0]).toMatchObject({ step: 'load_model', status: 'failed' });
      const a = await s.api('GET', '/system/status', { token, form: 'a' });
      expect(a.body).toMatchObject({ status: 'error', error: { code: 'MODEL_ERROR' } });

      // Still serving: health says unhealthy, reads work, pose endpoints say not ready.
      const health = await s.api('GET', '/health');
      expect(health.status).toBe(200);
      expect(health.body.status).toBe('unhealthy');
      const detailed = await s.api('GET', '/health/detailed', { token });
      expect(detailed.body.data.overall_status).toBe('unhealthy');
      expect(detailed.body.data.components.neural_network.status).toBe('error');
      expect((await s.api('GET', '/config', { token })).status).toBe(200);
      const latest = await s.api('GET', '/pose/latest', { token });
      expect(latest.status).toBe(503);
      expect(latest.body.error.code).toBe('SYSTEM_NOT_READY');
      const proc = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data: [[{ real: 1, imag: 0 }]] } } });
      expect(proc.status).toBe(503);
      expect(proc.body.error.code).toBe('SYSTEM_NOT_READY');

      const fix = await s.api('PUT', '/config', { token, body: { neural_network: { model_path: good } } });
      expect(fix.status).toBe(200);
      const restart = await s.api('POST', '/system/restart', { token });
      expect(restart.status, restart.text).toBe(202);
      const running = await waitForStatus(s, token, 'running');
      expect(running.error).toBeUndefined();
      expect(running.components.neural_network.model_loaded).toBe(true);
      expect((await s.api('GET', '/health')).body.status).toBe('healthy');
    });
  });

  it('a start from error (not only restart) also recovers, and stop works from error', async () => {
    await withServer({ config: { neural_network: { model_path: '/nonexistent/model.onnx' } }, model: false, rateLimitScale: 20 }, async (s) => {
      const token = await s.login();
      expect((await s.api('POST', '/system/start', { token })).status).toBe(202);
      expect((await waitForStatus(s, token, 'error')).error?.code).toBe('MODEL_ERROR');
      // Starting again from error is allowed: it fails again the same way.
      expect((await s.api('POST', '/system/start', { token, form: 'a' })).status).toBe(202);
      expect((await waitForStatus(s, token, 'error')).error?.code).toBe('MODEL_ERROR');
      expect((await s.api('POST', '/system/stop', { token })).status).toBe(202);
      const stopped = await waitForStatus(s, token, 'stopped');
      expect(stopped.error).toBeUndefined();
    });
  });
});
