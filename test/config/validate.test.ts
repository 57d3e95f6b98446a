import { describe, expect, it } from 'vitest';
import { CONFIG_SCHEMA, FIELDS, GROUP_PATHS, defaults, fieldAt, getPath, isGroup, type GroupDef } from '../../src/config/schema.js';
import { schemaDocument, validateChange, validateUpdate, type FieldError } from '../../src/config/validate.js';
import { alternative, leafPaths, nest, outOfRange, wrongTypes } from './helpers.js';

function errorsOf(update: unknown): FieldError[] {
  const r = validateUpdate(update);
  if (r.ok) throw new Error(`expected errors for ${JSON.stringify(update)}`);
  return r.errors;
}

describe('defaults', () => {
  it('validate, and every field appears once with its default', () => {
    const d = defaults();
    const r = validateUpdate(d);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.changes.map((c) => c.path)).toEqual(FIELDS.map((f) => f.path));
    expect(leafPaths(d).sort()).toEqual(FIELDS.map((f) => f.path).sort());
    for (const c of r.changes) expect(c.value).toEqual(fieldAt(c.path)!.default);
  });

  it('hold the values the brief and DECISIONS name', () => {
    const d = defaults();
    expect(d.domain).toBe('general');
    expect(d.environment.view).toEqual({ width: 640, height: 480, hfov_deg: 90, x: 3, y: 0.05, z: 1.6, yaw_deg: 0, pitch_deg: -10 });
    expect(d.environment.calibration_timestamp).toBeNull();
    expect(d.detection).toEqual({ confidence_threshold: 0.5, max_persons: 4, tracking_enabled: true, tracking_max_age: 300, tracking_min_hits: 3 });
    expect(d.neural_network.model_path).toBe('models/csipose-refiner.onnx');
    expect(d.neural_network.submission_model_path).toBe('models/csipose-pose.onnx');
    expect(d.neural_network.enable_gpu).toBe(false);
    expect(d.streaming.status_interval_seconds).toBe(5);
    expect(d.alerts.fall_detection).toEqual({ enabled: true, sensitivity: 0.8, notification_delay_seconds: 0.5 });
    expect(d.alerts.inactivity_detection).toEqual({ enabled: true, threshold_minutes: 30 });
    expect(d.privacy.data_retention_days).toBe(30);
    expect(d.server.response_form).toBe('b');
    expect(d.rate_limits).toEqual({
      authentication: { points: 10, duration_seconds: 60 },
      pose_data: { points: 1000, duration_seconds: 3600 },
      pose_processing: { points: 100, duration_seconds: 3600 },
      configuration: { points: 50, duration_seconds: 3600 },
      analytics: { points: 500, duration_seconds: 3600 },
      health: { points: 10000, duration_seconds: 3600 },
    });
  });

  it('are a new object each time', () => {
    const a = defaults();
    a.detection.max_persons = 9;
    expect(defaults().detection.max_persons).toBe(4);
  });
});

describe('validateUpdate, field by field', () => {
  for (const { path, def } of FIELDS) {
    describe(path, () => {
      it('accepts its default, its bounds and another valid value, with its restart flag', () => {
        const values: unknown[] = [def.default, alternative(path, def)];
        if ((def.type === 'number' || def.type === 'integer') && !def.enum) values.push(def.minimum, def.maximum);
        for (const v of values) {
          const r = validateUpdate(nest(path, v));
          expect(r, JSON.stringify(v)).toMatchObject({ ok: true });
          if (r.ok) expect(r.changes).toEqual([{ path, value: v, restart: def.restart }]);
        }
      });

      it('refuses values of the wrong type, naming the field', () => {
        for (const v of wrongTypes(def)) {
          const errors = errorsOf(nest(path, v));
          expect(errors, `${path} = ${JSON.stringify(v)}`).toHaveLength(1);
          expect(errors[0]!.field).toBe(path);
          expect(errors[0]!.message.startsWith(`${path} must be`)).toBe(true);
          expect(Object.is(errors[0]!.received_value, v)).toBe(true);
        }
      });

      it('refuses values outside its range or allowed values', () => {
        const bad = outOfRange(path, def);
        for (const v of bad) {
          const errors = errorsOf(nest(path, v));
          expect(errors.length, `${path} = ${JSON.stringify(v)}`).toBeGreaterThanOrEqual(1);
          for (const e of errors) expect(e.field === path || e.field.startsWith(`${path}[`), e.field).toBe(true);
        }
      });

      it('refuses an object of settings under it (it is not a group)', () => {
        if (def.type === 'zones' || def.type === 'radios') return; // an array; covered by wrong types
        const errors = errorsOf(nest(`${path}.inner`, 1));
        expect(errors).toEqual([{ field: path, message: expect.stringContaining(`${path} must be`), received_value: { inner: 1 } }]);
      });
    });
  }

  it('the schema holds exactly the canonical settings', () => {
    const rl = ['authentication', 'pose_data', 'pose_processing', 'configuration', 'analytics', 'health'].flatMap((c) => [
      `rate_limits.${c}.points`,
      `rate_limits.${c}.duration_seconds`,
    ]);
    expect(FIELDS.map((f) => f.path)).toEqual([
      'domain',
      'environment.id',
      'environment.name',
      'environment.calibration_timestamp',
      'environment.view.width',
      'environment.view.height',
      'environment.view.hfov_deg',
      'environment.view.x',
      'environment.view.y',
      'environment.view.z',
      'environment.view.yaw_deg',
      'environment.view.pitch_deg',
      'environment.zones',
      'environment.site.known',
      'environment.site.room_width',
      'environment.site.room_depth',
      'environment.site.radios',
      'detection.confidence_threshold',
      'detection.max_persons',
      'detection.tracking_enabled',
      'detection.tracking_max_age',
      'detection.tracking_min_hits',
      'neural_network.model_path',
      'neural_network.submission_model_path',
      'neural_network.batch_size',
      'neural_network.max_wait_ms',
      'neural_network.enable_gpu',
      'neural_network.inference_timeout',
      'hardware.source',
      'hardware.csi_sampling_rate',
      'hardware.buffer_size',
      'hardware.antenna_count',
      'hardware.subcarrier_count',
      'alerts.fall_detection.enabled',
      'alerts.fall_detection.sensitivity',
      'alerts.fall_detection.notification_delay_seconds',
      'alerts.inactivity_detection.enabled',
      'alerts.inactivity_detection.threshold_minutes',
      'analytics.enable_activity_recognition',
      'analytics.retail_entrance_zone',
      'analytics.retail_product_zone',
      'analytics.retail_checkout_zone',
      'analytics.retail_purchase_zone',
      'analytics.crowd_threshold',
      'streaming.restream_enabled',
      'streaming.websocket_enabled',
      'streaming.status_interval_seconds',
      'streaming.ws_max_connections_per_ip',
      'streaming.ws_max_subscriptions_per_account',
      'streaming.ws_max_message_bytes',
      'streaming.ws_slow_client_timeout_seconds',
      'streaming.ws_max_queued_alerts',
      'streaming.mqtt_enabled',
      'streaming.mqtt_url',
      'streaming.mqtt_topic_prefix',
      'streaming.mqtt_homeassistant',
      'streaming.mqtt_homeassistant_prefix',
      'privacy.data_retention_days',
      'privacy.anonymize_data',
      'privacy.enable_encryption',
      'storage.parquet_dir',
      'storage.query_timeout_seconds',
      'storage.query_max_rows',
      'storage.query_max_bytes',
      ...rl,
      'server.response_form',
      'cluster.replicas',
      'cluster.csi_retention_seconds',
      'cluster.lease_ttl_seconds',
      'cluster.rewind_seconds',
      'cluster.checkpoint_interval_seconds',
      'cluster.lake_commit_seconds',
      'webhooks.allow_private_networks',
      'webhooks.rate_limit_per_hour',
      'webhooks.max_attempts',
      'webhooks.initial_backoff_seconds',
      'webhooks.max_backoff_seconds',
      'webhooks.timeout_seconds',
      'webhooks.max_in_flight_per_endpoint',
      'webhooks.max_pending_per_endpoint',
      'webhooks.max_dead_letters_per_endpoint',
      'webhooks.max_endpoints',
      'redis.url',
      'redis.key_prefix',
    ]);
  });

  it('needs a restart exactly for what is read when the system starts', () => {
    expect(FIELDS.filter((f) => f.def.restart).map((f) => f.path)).toEqual([
      'environment.id',
      'environment.site.radios',
      'neural_network.model_path',
      'neural_network.submission_model_path',
      'neural_network.enable_gpu',
      'hardware.source',
      'hardware.csi_sampling_rate',
      'hardware.buffer_size',
      'hardware.antenna_count',
      'hardware.subcarrier_count',
      'streaming.restream_enabled',
      'privacy.enable_encryption',
      'storage.parquet_dir',
      // Read when a node of a cluster starts (csipose serve --role; docs/scale.md).
      'cluster.replicas',
      'cluster.csi_retention_seconds',
      'cluster.lease_ttl_seconds',
      'cluster.rewind_seconds',
      'cluster.checkpoint_interval_seconds',
      'cluster.lake_commit_seconds',
      // Read when csipose serve starts, as storage.parquet_dir.
      'redis.url',
      'redis.key_prefix',
    ]);
  });
});

describe('validateUpdate, structure', () => {
  it('names unknown fields at every level, suggesting the closest name', () => {
    for (const g of ['', ...GROUP_PATHS]) {
      const path = g ? `${g}.no_such_setting` : 'no_such_setting';
      const errors = errorsOf(nest(path, 1));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ field: path, received_value: 1 });
      expect(errors[0]!.message).toContain(`${path} is not a configuration field`);
    }
    expect(errorsOf({ detection: { max_person: 3 } })[0]!.message).toBe('detection.max_person is not a configuration field (did you mean max_persons?)');
  });

  it('refuses a scalar, an array or null where a group belongs', () => {
    for (const g of GROUP_PATHS) {
      for (const v of [5, 'x', [], null, true]) {
        const errors = errorsOf(nest(g, v));
        expect(errors).toHaveLength(1);
        expect(errors[0]!.field).toBe(g);
        expect(errors[0]!.message).toMatch(new RegExp(`^${g.replace(/\./g, '\\.')} must be an object \\(a group of settings: `));
      }
    }
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, [], 'config', 5])
      expect(errorsOf(body)).toEqual([{ field: '', message: expect.stringContaining('must be a JSON object'), received_value: body }]);
  });

  it('reports every error at once', () => {
    const errors = errorsOf({ domain: 'zoo', detection: { confidence_threshold: 2, max_persons: 2.5 }, extra: 1 });
    expect(errors.map((e) => e.field).sort()).toEqual(['detection.confidence_threshold', 'detection.max_persons', 'domain', 'extra']);
  });

  it('words messages the way the spec does', () => {
    expect(errorsOf({ detection: { confidence_threshold: 1.5 } })).toEqual([
      { field: 'detection.confidence_threshold', message: 'detection.confidence_threshold must be between 0.0 and 1.0, got 1.5', received_value: 1.5 },
    ]);
    expect(errorsOf({ detection: { confidence_threshold: '0.5' } })[0]!.message).toBe(
      'detection.confidence_threshold must be a number between 0.0 and 1.0, got a string ("0.5")',
    );
    expect(errorsOf({ detection: { max_persons: 0 } })[0]!.message).toBe('detection.max_persons must be between 1 and 10, got 0');
    expect(errorsOf({ detection: { max_persons: 2.5 } })[0]!.message).toBe('detection.max_persons must be an integer between 1 and 10, got 2.5');
    expect(errorsOf({ detection: { tracking_enabled: 'true' } })[0]!.message).toBe('detection.tracking_enabled must be true or false, got a string ("true")');
    expect(errorsOf({ domain: 'zoo' })[0]!.message).toBe('domain must be one of healthcare, retail, security, general, got a string ("zoo")');
    expect(errorsOf({ neural_network: { enable_gpu: true } })[0]!.message).toBe(
      'neural_network.enable_gpu must be false: this build runs the model on the CPU only (onnxruntime-node CPU provider)',
    );
    expect(errorsOf({ hardware: { subcarrier_count: 64 } })[0]!.message).toBe('hardware.subcarrier_count must be one of 30, 56, 114, got 64');
    expect(errorsOf({ detection: { confidence_threshold: NaN } })[0]!.message).toBe('detection.confidence_threshold must be a finite number, got NaN');
  });

  it('does not coerce', () => {
    for (const [path, v] of [
      ['detection.max_persons', '5'],
      ['detection.tracking_enabled', 1],
      ['detection.tracking_enabled', 'false'],
      ['environment.name', 5],
      ['hardware.csi_sampling_rate', '100'],
    ] as const)
      expect(errorsOf(nest(path, v))[0]!.field).toBe(path);
  });

  it('normalises timestamps to UTC and accepts null', () => {
    const r = validateUpdate({ environment: { calibration_timestamp: '2026-01-31T13:30:00+01:00' } });
    expect(r).toEqual({ ok: true, changes: [{ path: 'environment.calibration_timestamp', value: '2026-01-31T12:30:00.000Z', restart: false }] });
    expect(validateUpdate({ environment: { calibration_timestamp: null } }).ok).toBe(true);
  });

  it('ignores no prototype tricks', () => {
    const body = JSON.parse('{"__proto__": {"polluted": true}, "detection": {"constructor": 1}}');
    const errors = errorsOf(body);
    expect(errors.map((e) => e.field).sort()).toEqual(['__proto__', 'detection.constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('zones', () => {
  const square = [
    [0, 0],
    [2, 0],
    [2, 2],
    [0, 2],
  ];

  it('accepts well-formed zones and copies them', () => {
    const zones = [
      { id: 'bed', name: 'Bed', polygon: square },
      { id: 'door', polygon: square, severity: 'low', schedule: { start: '22:00', end: '06:00', days: [1, 2], utcOffsetMinutes: 60 } },
    ];
    const r = validateUpdate({ environment: { zones } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.changes[0]!.value).toEqual([zones[0], { ...zones[1], name: 'door' }]);
    expect(r.changes[0]!.value).not.toBe(zones);
    expect((r.changes[0]!.value as typeof zones)[0]!.polygon).not.toBe(square);
  });

  it('names the zone, the vertex and the field of each problem', () => {
    const errors = errorsOf({
      environment: {
        zones: [
          {
            id: 'a',
            polygon: [
              [0, 0],
              [1, 0],
            ],
          },
          {
            id: 'b',
            polygon: [
              [0, 0],
              [1, NaN],
              [1, 1],
              [0, '1'],
            ],
          },
          { id: 'b', polygon: square, colour: 'red' },
          { id: '', polygon: square, severity: 'urgent' },
          { id: 'c', polygon: square, schedule: { start: '25:00', end: '06:00' } },
          { id: 'd', polygon: square, schedule: { start: '01:00', end: '06:00', tz: 'UTC' } },
          { id: 'e', polygon: square, schedule: { start: '01:00', end: '06:00', days: [7] } },
          'zone',
        ],
      },
    });
    const fields = errors.map((e) => e.field);
    expect(fields).toEqual([
      'environment.zones[0].polygon',
      'environment.zones[1].polygon[1]',
      'environment.zones[1].polygon[3]',
      'environment.zones[2].colour',
      'environment.zones[2].id',
      'environment.zones[3].id',
      'environment.zones[3].severity',
      'environment.zones[4].schedule.start',
      'environment.zones[5].schedule.tz',
      'environment.zones[6].schedule.days',
      'environment.zones[7]',
    ]);
    expect(errors[0]!.message).toBe('environment.zones[0].polygon must be an array of 3 to 1000 [x, y] vertices in metres, got 2 vertices');
    expect(errors[4]!.message).toContain('must be unique');
    expect(errors[7]!.received_value).toBe('25:00');
  });
});

describe('validateChange', () => {
  it('checks a single change by path', () => {
    expect(validateChange('detection.max_persons', 3)).toEqual({ ok: true, change: { path: 'detection.max_persons', value: 3, restart: false } });
    expect(validateChange('hardware.source', 'sim?seed=3')).toEqual({ ok: true, change: { path: 'hardware.source', value: 'sim?seed=3', restart: true } });
    expect(validateChange('detection', {}).ok).toBe(false);
    expect(validateChange('detection.max_persons', 11).ok).toBe(false);
  });
});

describe('schemaDocument', () => {
  it('mirrors the schema: nested properties, types, bounds, defaults, restart flags', () => {
    const doc = schemaDocument();
    expect(doc.type).toBe('object');
    const walk = (g: GroupDef, s: Record<string, unknown>, prefix: string): void => {
      expect(s.type).toBe('object');
      expect(s.additionalProperties).toBe(false);
      const props = s.properties as Record<string, Record<string, unknown>>;
      expect(Object.keys(props)).toEqual(Object.keys(g.children));
      for (const [k, child] of Object.entries(g.children)) {
        const path = prefix ? `${prefix}.${k}` : k;
        const p = props[k]!;
        if (isGroup(child)) {
          walk(child, p, path);
          continue;
        }
        expect(p.default, path).toEqual(child.default);
        expect(p.description, path).toBe(child.description);
        expect(p['x-requires-restart'], path).toBe(child.restart);
        const t = {
          number: 'number',
          integer: 'integer',
          boolean: 'boolean',
          string: child.type === 'string' && child.nullable ? ['string', 'null'] : 'string',
          enum: 'string',
          zones: 'array',
          radios: 'array',
        }[child.type];
        expect(p.type, path).toEqual(t);
        if (child.type === 'number' || child.type === 'integer') {
          expect(p.minimum, path).toBe(child.minimum);
          expect(p.maximum, path).toBe(child.maximum);
        }
        if (child.type === 'enum') expect(p.enum).toEqual(child.values);
      }
    };
    walk(CONFIG_SCHEMA, doc, '');
    const props = doc.properties as Record<string, { properties: Record<string, Record<string, unknown>> }>;
    expect(props.neural_network!.properties.enable_gpu!.enum).toEqual([false]);
    expect(props.detection!.properties.tracking_enabled!['x-aliases']).toEqual(['detection.enable_tracking (Form B)']);
  });

  it('is plain JSON', () => {
    const doc = schemaDocument();
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });

  it('lists the defaults it documents', () => {
    const doc = schemaDocument();
    for (const { path } of FIELDS) {
      const p = getPath(doc, `properties.${path.split('.').join('.properties.')}`) as Record<string, unknown>;
      expect(p.default, path).toEqual(getPath(defaults(), path));
    }
  });
});
