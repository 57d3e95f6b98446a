import { describe, expect, it } from 'vitest';
import { suiteServer } from '../helpers/server.js';
import { VERSION } from '../../src/service/service.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('health and metrics endpoints', () => {
  const srv = suiteServer();

  it('GET /health needs no credentials and is a bare object in both forms', async () => {
    for (const form of ['a', 'b'] as const) {
      const r = await srv.s.api('GET', '/health', { form });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['status', 'timestamp', 'uptime', 'version']);
      expect(r.body).toMatchObject({ status: 'healthy', version: VERSION });
      expect(r.body.timestamp).toMatch(ISO);
      expect(Number.isInteger(r.body.uptime) && r.body.uptime >= 0).toBe(true);
      expect(r.headers.get('x-request-id')).toMatch(/\S/);
      expect(r.headers.get('content-type')).toBe('application/json');
    }
  });

  it('GET /health ignores credentials it does not need, even bad ones', async () => {
    const r = await srv.s.api('GET', '/health', { token: 'not-a-token' });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('healthy');
  });

  it('GET /health/detailed needs a token', async () => {
    const r = await srv.s.api('GET', '/health/detailed');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('AUTHENTICATION_ERROR');
  });

  it('GET /health/detailed has the spec fields, enveloped in Form B and bare in Form A', async () => {
    const b = await srv.s.api('GET', '/health/detailed', { token: srv.token });
    expect(b.status).toBe(200);
    expect(b.body.success).toBe(true);
    expect(b.body.request_id).toBe(b.headers.get('x-request-id'));
    const a = await srv.s.api('GET', '/health/detailed', { token: srv.token, form: 'a' });
    expect(a.status).toBe(200);
    expect(a.body.success).toBeUndefined();
    for (const d of [b.body.data, a.body]) {
      expect(d.overall_status).toBe('healthy');
      expect(d.timestamp).toMatch(ISO);
      expect(d.version).toBe(VERSION);
      expect(typeof d.uptime).toBe('number');
      const c = d.components;
      expect(c.api).toMatchObject({ status: 'healthy' });
      expect(typeof c.api.response_time_ms).toBe('number');
      expect(typeof c.api.requests_per_second).toBe('number');
      // The store is open from process start, before any system start.
      expect(c.database.status).toBe('healthy');
      expect(c.database.connection_pool).toMatch(/^\d+\/\d+$/);
      expect(typeof c.database.query_time_ms).toBe('number');
      expect(typeof c.redis.status).toBe('string');
      expect(typeof c.redis.memory_usage).toBe('string');
      expect(typeof c.redis.connected_clients).toBe('number');
      // No model before the system starts.
      expect(c.neural_network).toMatchObject({ status: 'not_loaded', model_loaded: false, inference_queue: 0 });
      expect(typeof c.neural_network.gpu_memory_usage).toBe('string');
      expect(c.csi_processor.status).toBe('stopped');
      expect(typeof c.csi_processor.data_rate).toBe('number');
      expect(typeof c.csi_processor.buffer_usage).toBe('string');
      expect(d.metrics.memory_usage).toBeGreaterThan(0);
      expect(d.metrics.memory_usage).toBeLessThanOrEqual(100);
      expect(d.metrics.disk_usage).toBeGreaterThanOrEqual(0);
      expect(d.metrics.disk_usage).toBeLessThanOrEqual(100);
      expect(typeof d.metrics.cpu_usage).toBe('number');
      expect(d.metrics.network_io).toEqual({ bytes_in: expect.any(Number), bytes_out: expect.any(Number) });
    }
  });

  it('GET /metrics needs a token and has current and historical in both forms', async () => {
    expect((await srv.s.api('GET', '/metrics')).status).toBe(401);
    const b = await srv.s.api('GET', '/metrics', { token: srv.token });
    expect(b.status).toBe(200);
    expect(b.body.success).toBe(true);
    const a = await srv.s.api('GET', '/metrics', { token: srv.token, form: 'a' });
    expect(a.status).toBe(200);
    for (const d of [b.body.data, a.body]) {
      expect(Object.keys(d).sort()).toEqual(['current', 'historical']);
      const cur = d.current;
      expect(cur.timestamp).toMatch(ISO);
      for (const k of ['frames_per_second', 'average_latency_ms', 'processing_queue_size', 'error_rate']) expect(typeof cur.performance[k], k).toBe('number');
      expect(cur.performance.frames_per_second).toBe(0);
      for (const k of ['cpu_usage', 'memory_usage', 'gpu_usage']) expect(typeof cur.resources[k], k).toBe('number');
      expect(cur.resources.memory_usage).toBeGreaterThan(0);
      expect(cur.resources.disk_io).toEqual({ read_mb_per_sec: expect.any(Number), write_mb_per_sec: expect.any(Number) });
      for (const k of ['active_persons', 'detections_per_minute', 'tracking_accuracy']) expect(typeof cur.business[k], k).toBe('number');
      expect(Array.isArray(d.historical)).toBe(true);
    }
  });

  it('GET /metrics metric_type narrows current to that group', async () => {
    for (const type of ['performance', 'resources', 'business', 'streaming'] as const) {
      const r = await srv.s.api('GET', '/metrics', { token: srv.token, query: { metric_type: type } });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body.data.current).sort()).toEqual([type, 'timestamp'].sort());
    }
    const all = await srv.s.api('GET', '/metrics', { token: srv.token, query: { metric_type: 'all' } });
    expect(Object.keys(all.body.data.current).sort()).toEqual(['business', 'performance', 'resources', 'streaming', 'timestamp']);
    // The WebSocket outlet reports its drops and closes there.
    expect(all.body.data.current.streaming.websocket).toMatchObject({ status: 'enabled', connections: 0, pose_frames_dropped: 0, slow_closes: 0 });
  });

  it('GET /metrics historical holds the samples inside start_time..end_time', async () => {
    // The metrics outlet samples every 10 s; take two samples now instead of waiting for the timer.
    srv.s.app.metrics.sample();
    srv.s.app.metrics.sample();
    const r = await srv.s.api('GET', '/metrics', { token: srv.token });
    expect(r.body.data.historical.length).toBeGreaterThanOrEqual(2);
    for (const h of r.body.data.historical) {
      expect(h.timestamp).toMatch(ISO);
      for (const k of ['frames_per_second', 'average_latency_ms', 'cpu_usage']) expect(typeof h[k], k).toBe('number');
    }
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = await srv.s.api('GET', '/metrics', { token: srv.token, query: { start_time: future } });
    expect(none.status).toBe(200);
    expect(none.body.data.historical).toEqual([]);
    const past = new Date(Date.now() - 3_600_000).toISOString();
    const some = await srv.s.api('GET', '/metrics', { token: srv.token, query: { start_time: past, end_time: future } });
    expect(some.body.data.historical.length).toBe(r.body.data.historical.length);
  });

  it('GET /metrics refuses bad query values with 422 naming the parameter', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ start_time: 'yesterday' }, 'start_time'],
      [{ end_time: 'not-a-time' }, 'end_time'],
      [{ metric_type: 'everything' }, 'metric_type'],
      [{ start_time: '2030-01-02T00:00:00Z', end_time: '2030-01-01T00:00:00Z' }, 'start_time'],
      [{ bogus: '1' }, 'bogus'],
    ];
    for (const [query, field] of cases) {
      const b = await srv.s.api('GET', '/metrics', { token: srv.token, query });
      expect(b.status, JSON.stringify(query)).toBe(422);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details.field).toBe(field);
      const a = await srv.s.api('GET', '/metrics', { token: srv.token, query, form: 'a' });
      expect(a.status).toBe(422);
      expect(a.body.error.details.field_errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });
});
