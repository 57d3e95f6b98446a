import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS, type FieldDef } from '../../src/config/schema.js';
import { startServer, suiteServer, withServer } from '../helpers/server.js';
import type { SchemaNode } from '../config/helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Builds `{a: {b: {c: value}}}` from a dotted path. */
function nest(path: string, value: unknown): Record<string, unknown> {
  return path
    .split('.')
    .reverse()
    .reduce<unknown>((acc, key) => ({ [key]: acc }), value) as Record<string, unknown>;
}

/** The value at a dotted path, or a unique marker when a step is missing. */
const MISSING = Symbol('missing');
function at(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const k of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, k)) return MISSING;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/**
 * Values that break a field's rule, each with the field path the error must name. Derived from
 * the field's definition, so every field of the schema is covered as the schema grows.
 */
function badValues(path: string, def: FieldDef): Array<{ value: unknown; field: string; why: string }> {
  const out: Array<{ value: unknown; field: string; why: string }> = [];
  const add = (value: unknown, why: string, field = path) => out.push({ value, field, why });
  add(null === def.default ? { wrong: 'type' } : null, 'null or an object');
  switch (def.type) {
    case 'number':
    case 'integer':
      add(String(def.default), 'a string where a number belongs');
      add(true, 'a boolean where a number belongs');
      add([def.default], 'an array where a number belongs');
      add(def.minimum - 1, 'below the minimum');
      add(def.maximum + 1, 'above the maximum');
      if (def.type === 'integer' && def.minimum + 0.5 <= def.maximum) add(def.minimum + 0.5, 'not an integer');
      if (def.enum) add(def.minimum + 1, 'in range but not an allowed value');
      break;
    case 'boolean':
      add(1, 'a number where a boolean belongs');
      add('true', 'a string where a boolean belongs');
      if (def.enum) add(!def.enum[0], 'a value this build does not allow');
      break;
    case 'string':
      add(5, 'a number where a string belongs');
      add(false, 'a boolean where a string belongs');
      if (def.minLength) add('', 'empty');
      if (def.maxLength) add('a'.repeat(def.maxLength + 1), 'too long');
      if (def.pattern) add('!not allowed here!', 'breaks the pattern');
      if (def.format === 'date-time') add('yesterday', 'not a timestamp');
      break;
    case 'enum':
      add('not-a-value', 'not one of the values');
      add(3, 'a number where a string belongs');
      break;
    case 'zones':
      add('zone', 'a string where an array belongs');
      add({ id: 'z' }, 'an object where an array belongs');
      add(
        [
          {
            id: 'z',
            polygon: [
              [0, 0],
              [1, 0],
            ],
          },
        ],
        'a polygon of two vertices',
        `${path}[0].polygon`,
      );
      add(
        [
          {
            id: 'z',
            polygon: [
              [0, 0],
              [1, 0],
              ['a', 1],
            ],
          },
        ],
        'a vertex with a string',
        `${path}[0].polygon[2]`,
      );
      add(
        [
          {
            id: 'z',
            polygon: [
              [0, 0],
              [1, 0],
              [1, 1],
            ],
            severity: 'apocalyptic',
          },
        ],
        'an unknown severity',
        `${path}[0].severity`,
      );
      break;
  }
  return out;
}

describe('configuration endpoints', () => {
  // One request per bad value per form: far more than the 50 configuration requests an hour.
  const srv = suiteServer({ rateLimitScale: 40 });

  it('GET /config in Form B has the spec fields with their defaults, and not Form A names', async () => {
    const r = await srv.s.api('GET', '/config', { token: srv.token });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const c = r.body.data;
    expect(c).toMatchObject({
      domain: 'general',
      environment_id: 'default',
      detection: { confidence_threshold: 0.5, max_persons: 4, enable_tracking: true, tracking_max_age: 300, tracking_min_hits: 3 },
      neural_network: { model_version: null, batch_size: 32, enable_gpu: false, inference_timeout: 5000 },
      hardware: { csi_sampling_rate: 100, buffer_size: 1024, antenna_count: 3, subcarrier_count: 30 },
      analytics: {
        enable_fall_detection: true,
        enable_activity_recognition: true,
        alert_thresholds: { fall_confidence: 0.59, inactivity_timeout: 1800 },
      },
      privacy: { data_retention_days: 30, anonymize_data: false, enable_encryption: false },
    });
    expect(at(c, 'detection.tracking_enabled')).toBe(MISSING);
    expect(at(c, 'environment.id')).toBe(MISSING);
    expect(at(c, 'alerts.fall_detection.enabled')).toBe(MISSING);
    // Settings Form B has no name for are still there, at their canonical paths.
    expect(c.rate_limits.authentication).toEqual({ points: 10, duration_seconds: 60 });
    expect(c.environment.view).toEqual({ width: 640, height: 480, hfov_deg: 90, x: 3, y: 0.05, z: 1.6, yaw_deg: 0, pitch_deg: -10 });
  });

  it('GET /config in Form A has the spec fields with their defaults, and not Form B names', async () => {
    const r = await srv.s.api('GET', '/config', { token: srv.token, form: 'a' });
    expect(r.status).toBe(200);
    expect(r.body.success).toBeUndefined();
    expect(r.body).toMatchObject({
      domain: 'general',
      environment: { id: 'default', name: 'Default environment', calibration_timestamp: null },
      detection: { confidence_threshold: 0.5, max_persons: 4, tracking_enabled: true },
      alerts: {
        fall_detection: { enabled: true, sensitivity: 0.8, notification_delay_seconds: 0.5 },
        inactivity_detection: { enabled: true, threshold_minutes: 30 },
      },
      streaming: { restream_enabled: false, websocket_enabled: true, mqtt_enabled: false },
    });
    for (const p of ['environment_id', 'detection.enable_tracking', 'analytics.enable_fall_detection', 'analytics.alert_thresholds'])
      expect(at(r.body, p), p).toBe(MISSING);
    // Every canonical setting appears once.
    for (const f of FIELDS) expect(at(r.body, f.path), f.path).not.toBe(MISSING);
  });

  it('PUT /config applies a partial update: dotted updated_fields, requires_restart false for a live field', async () => {
    const r = await srv.s.api('PUT', '/config', { token: srv.token, body: { detection: { confidence_threshold: 0.7 } } });
    expect(r.status, r.text).toBe(200);
    const d = r.body.data;
    expect(d.updated_fields).toEqual(['detection.confidence_threshold']);
    expect(d.requires_restart).toBe(false);
    expect(d.applied_at).toMatch(ISO);
    expect(d.configuration.detection).toMatchObject({ confidence_threshold: 0.7, max_persons: 4, enable_tracking: true });
    const get = await srv.s.api('GET', '/config', { token: srv.token, form: 'a' });
    expect(get.body.detection.confidence_threshold).toBe(0.7);

    // The same value again changes nothing.
    const same = await srv.s.api('PUT', '/config', { token: srv.token, body: { detection: { confidence_threshold: 0.7 } } });
    expect(same.body.data).toMatchObject({ updated_fields: [], requires_restart: false });
  });

  it('PUT /config in Form A: changes_applied, restart_required true for hardware.source, with a warning', async () => {
    const r = await srv.s.api('PUT', '/config', { token: srv.token, form: 'a', body: { hardware: { source: 'sim?seed=7' } } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({
      status: 'updated',
      changes_applied: ['hardware.source'],
      restart_required: true,
      validation_warnings: [expect.stringContaining('hardware.source')],
    });
    const live = await srv.s.api('PUT', '/config', { token: srv.token, form: 'a', body: { detection: { max_persons: 3 } } });
    expect(live.body).toEqual({ status: 'updated', changes_applied: ['detection.max_persons'], restart_required: false, validation_warnings: [] });
  });

  it("PUT /config takes either form's names and answers in the request's form", async () => {
    const b = await srv.s.api('PUT', '/config', {
      token: srv.token,
      body: { detection: { enable_tracking: false }, hardware: { buffer_size: 2048 }, analytics: { alert_thresholds: { inactivity_timeout: 600 } } },
    });
    expect(b.status, b.text).toBe(200);
    expect([...b.body.data.updated_fields].sort()).toEqual(
      ['analytics.alert_thresholds.inactivity_timeout', 'detection.enable_tracking', 'hardware.buffer_size'].sort(),
    );
    expect(b.body.data.requires_restart).toBe(true);
    expect(b.body.data.configuration.analytics.alert_thresholds.inactivity_timeout).toBe(600);
    const a = await srv.s.api('GET', '/config', { token: srv.token, form: 'a' });
    expect(a.body.detection.tracking_enabled).toBe(false);
    expect(a.body.alerts.inactivity_detection.threshold_minutes).toBe(10);

    const back = await srv.s.api('PUT', '/config', { token: srv.token, form: 'a', body: { detection: { tracking_enabled: true }, environment_id: 'lab-1' } });
    expect(back.status, back.text).toBe(200);
    expect([...back.body.changes_applied].sort()).toEqual(['detection.tracking_enabled', 'environment.id']);
    expect(back.body.restart_required).toBe(true);
    const bView = await srv.s.api('GET', '/config', { token: srv.token });
    expect(bView.body.data).toMatchObject({ environment_id: 'lab-1', detection: { enable_tracking: true } });
  });

  it('a wrong value in any field of the schema is 422 naming the field, in both forms, and changes nothing', async () => {
    const before = (await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body;
    let checked = 0;
    for (const { path, def } of FIELDS) {
      for (const bad of badValues(path, def)) {
        const what = `${path} = ${JSON.stringify(bad.value)?.slice(0, 60)} (${bad.why})`;
        const body = nest(path, bad.value);
        const b = await srv.s.api('PUT', '/config', { token: srv.token, body });
        expect(b.status, what).toBe(422);
        expect(b.body.error.code, what).toBe('VALIDATION_ERROR');
        expect(b.body.error.details.field, what).toBe(bad.field);
        expect(b.body.error.details.reason, what).toContain(bad.field);
        const a = await srv.s.api('PUT', '/config', { token: srv.token, body, form: 'a' });
        expect(a.status, what).toBe(422);
        const fe = a.body.error.details.field_errors;
        expect(
          fe.map((e: { field: string }) => e.field),
          what,
        ).toEqual([bad.field]);
        expect(typeof fe[0].message, what).toBe('string');
        expect('received_value' in fe[0], what).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(FIELDS.length * 2);
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body).toEqual(before);
  });

  it('errors name fields as the client wrote them; one request lists every bad field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ environment_id: 5 }, 'environment_id'],
      [{ detection: { enable_tracking: 'yes' } }, 'detection.enable_tracking'],
      [{ analytics: { alert_thresholds: { fall_confidence: 2 } } }, 'analytics.alert_thresholds.fall_confidence'],
      [{ analytics: { alert_thresholds: { inactivity_timeout: 10 } } }, 'analytics.alert_thresholds.inactivity_timeout'],
      [{ neural_network: { model_version: 'v9' } }, 'neural_network.model_version'],
      [{ detection: { max_person: 3 } }, 'detection.max_person'],
      [{ detection: 5 }, 'detection'],
      [{ nonsense: true }, 'nonsense'],
      [{ detection_settings: { max_persons: 0 } }, 'detection_settings.max_persons'],
    ];
    for (const [body, field] of cases) {
      const r = await srv.s.api('PUT', '/config', { token: srv.token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field, JSON.stringify(body)).toBe(field);
    }
    const typo = await srv.s.api('PUT', '/config', { token: srv.token, body: { detection: { max_person: 3 } } });
    expect(typo.body.error.details.reason).toMatch(/did you mean max_persons/);

    const many = await srv.s.api('PUT', '/config', {
      token: srv.token,
      form: 'a',
      body: { detection: { confidence_threshold: 1.5, max_persons: 0 }, streaming: { websocket_enabled: 'yes' }, domain: 'space' },
    });
    expect(many.status).toBe(422);
    expect(many.body.error.details.field_errors.map((e: { field: string }) => e.field).sort()).toEqual(
      ['detection.confidence_threshold', 'detection.max_persons', 'domain', 'streaming.websocket_enabled'].sort(),
    );
    const first = many.body.error.details.field_errors.find((e: { field: string }) => e.field === 'detection.confidence_threshold');
    expect(first).toEqual({ field: 'detection.confidence_threshold', message: expect.stringMatching(/between 0\.0 and 1\.0/), received_value: 1.5 });
    // Nothing of a partly bad update is applied.
    const mixed = await srv.s.api('PUT', '/config', { token: srv.token, body: { domain: 'retail', detection: { max_persons: 0 } } });
    expect(mixed.status).toBe(422);
    expect((await srv.s.api('GET', '/config', { token: srv.token })).body.data.domain).toBe('general');

    const notObject = await srv.s.api('PUT', '/config', { token: srv.token, body: [1, 2] });
    expect(notObject.status).toBe(422);
    expect(notObject.body.error.details.field).toBe('');
  });

  it('GET /config/schema documents every field with bounds, description and default, plus the defaults', async () => {
    const b = await srv.s.api('GET', '/config/schema', { token: srv.token });
    expect(b.status).toBe(200);
    const a = await srv.s.api('GET', '/config/schema', { token: srv.token, form: 'a' });
    expect(a.body).toEqual({ ...b.body.data });
    const { schema, defaults } = b.body.data;
    expect(schema.type).toBe('object');
    for (const { path, def } of FIELDS) {
      const node = path.split('.').reduce<SchemaNode | undefined>((n, k) => n?.properties?.[k], schema) as SchemaNode;
      expect(node, path).toBeDefined();
      expect(typeof node.description, path).toBe('string');
      expect(node.description.length, path).toBeGreaterThan(0);
      expect(node.default, path).toEqual(def.default);
      expect(at(defaults, path), path).toEqual(def.default);
      if (def.type === 'number' || def.type === 'integer') {
        expect(node, path).toMatchObject({ type: def.type, minimum: def.minimum, maximum: def.maximum });
      }
      if (def.type === 'boolean') expect(node.type, path).toBe('boolean');
      if (def.type === 'enum') expect(node.enum, path).toEqual([...def.values]);
    }
    expect(schema.properties.detection.properties.confidence_threshold).toMatchObject({ type: 'number', minimum: 0, maximum: 1, default: 0.5 });
    expect(defaults.detection.max_persons).toBe(4);
    expect(defaults.rate_limits.authentication).toEqual({ points: 10, duration_seconds: 60 });
  });
});

describe('configuration lifetime', () => {
  it('changes persist across a restart of the service on the same data dir', async () => {
    const root = mkdtempSync(join(tmpdir(), 'csipose-cfg-'));
    const dataDir = join(root, 'data');
    try {
      await withServer({ dataDir }, async (s) => {
        const token = await s.login();
        const r = await s.api('PUT', '/config', {
          token,
          body: { domain: 'healthcare', detection: { max_persons: 2 }, environment: { name: 'Ward 3' }, hardware: { source: 'sim?seed=11' } },
        });
        expect(r.status, r.text).toBe(200);
      });
      await withServer({ dataDir }, async (s) => {
        const token = await s.login();
        const a = await s.api('GET', '/config', { token, form: 'a' });
        expect(a.body).toMatchObject({
          domain: 'healthcare',
          environment: { name: 'Ward 3' },
          detection: { max_persons: 2 },
          hardware: { source: 'sim?seed=11' },
        });
        // Untouched settings keep their defaults.
        expect(a.body.detection.confidence_threshold).toBe(0.5);
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a --config overlay applies at start; a bad one stops the start naming the field', async () => {
    await withServer({ config: { detection: { enable_tracking: false }, domain: 'retail' } }, async (s) => {
      const token = await s.login();
      const r = await s.api('GET', '/config', { token });
      expect(r.body.data).toMatchObject({ domain: 'retail', detection: { enable_tracking: false } });
    });
    await expect(startServer({ config: { detection: { max_persons: 99 } } })).rejects.toThrow(/detection\.max_persons/);
  });
});
