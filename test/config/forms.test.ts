import { describe, expect, it } from 'vitest';
import { requiredFallConfidence } from '../../operators/alerts.js';
import { FORM_EXTRAS, formPaths, fromPartial, parseUpdate, toFormA, toFormB, validationDetails } from '../../src/config/forms.js';
import { FIELDS, defaults, getPath, setPath, type ServiceConfig } from '../../src/config/schema.js';
import { alternative, leafPaths, type FormView } from './helpers.js';

/** The spec's Configuration tables, copied from spec/pose-service-interface.md. */
const SPEC_FORM_A = [
  'domain',
  'environment.id',
  'environment.name',
  'environment.calibration_timestamp',
  'detection.confidence_threshold',
  'detection.max_persons',
  'detection.tracking_enabled',
  'alerts.fall_detection.enabled',
  'alerts.fall_detection.sensitivity',
  'alerts.fall_detection.notification_delay_seconds',
  'alerts.inactivity_detection.enabled',
  'alerts.inactivity_detection.threshold_minutes',
  'streaming.restream_enabled',
  'streaming.websocket_enabled',
  'streaming.mqtt_enabled',
];
const SPEC_FORM_B = [
  'domain',
  'environment_id',
  'detection.confidence_threshold',
  'detection.max_persons',
  'detection.enable_tracking',
  'detection.tracking_max_age',
  'detection.tracking_min_hits',
  'neural_network.model_version',
  'neural_network.batch_size',
  'neural_network.enable_gpu',
  'neural_network.inference_timeout',
  'hardware.csi_sampling_rate',
  'hardware.buffer_size',
  'hardware.antenna_count',
  'hardware.subcarrier_count',
  'analytics.enable_fall_detection',
  'analytics.enable_activity_recognition',
  'analytics.alert_thresholds.fall_confidence',
  'analytics.alert_thresholds.inactivity_timeout',
  'privacy.data_retention_days',
  'privacy.anonymize_data',
  'privacy.enable_encryption',
];

/** A configuration where every setting differs from its default (enable_gpu has one value). */
function changedConfig(): ServiceConfig {
  const c = defaults() as unknown as Record<string, unknown>;
  for (const { path, def } of FIELDS) setPath(c, path, alternative(path, def));
  return c as unknown as ServiceConfig;
}

describe('toFormA / toFormB (strict)', () => {
  it('Form A has exactly the spec fields, in its order', () => {
    const a = toFormA(defaults(), { strict: true });
    expect(leafPaths(a)).toEqual(SPEC_FORM_A);
    expect(Object.keys(a)).toEqual(['domain', 'environment', 'detection', 'alerts', 'streaming']);
  });

  it('Form B has exactly the spec fields, in its order', () => {
    const b = toFormB(defaults(), { strict: true, modelVersion: 'sim-v3' });
    expect(leafPaths(b)).toEqual(SPEC_FORM_B);
    expect(Object.keys(b)).toEqual(['domain', 'environment_id', 'detection', 'neural_network', 'hardware', 'analytics', 'privacy']);
  });

  it('fills the fields from the configuration', () => {
    const c = changedConfig();
    const a = toFormA(c, { strict: true });
    for (const p of SPEC_FORM_A) expect(getPath(a, p), p).toEqual(getPath(c, p));
    const b = toFormB(c, { strict: true, modelVersion: 'sim-v3' }) as FormView;
    expect(b.environment_id).toBe('lab-2');
    expect(b.detection.enable_tracking).toBe(c.detection.tracking_enabled);
    expect(b.detection.tracking_max_age).toBe(c.detection.tracking_max_age);
    expect(b.neural_network).toEqual({
      model_version: 'sim-v3',
      batch_size: c.neural_network.batch_size,
      enable_gpu: false,
      inference_timeout: c.neural_network.inference_timeout,
    });
    expect(b.hardware).toEqual({
      csi_sampling_rate: c.hardware.csi_sampling_rate,
      buffer_size: c.hardware.buffer_size,
      antenna_count: c.hardware.antenna_count,
      subcarrier_count: c.hardware.subcarrier_count,
    });
    expect(b.analytics.enable_fall_detection).toBe(c.alerts.fall_detection.enabled);
    expect(b.analytics.enable_activity_recognition).toBe(c.analytics.enable_activity_recognition);
    expect(b.privacy).toEqual(c.privacy);
  });

  it('converts the Form B thresholds: fall_confidence is the confidence a fall needs, inactivity_timeout is seconds', () => {
    const d = defaults();
    const b = toFormB(d) as FormView;
    expect(b.analytics.alert_thresholds.fall_confidence).toBe(0.59);
    expect(b.analytics.alert_thresholds.fall_confidence).toBeCloseTo(requiredFallConfidence(0.8), 12);
    expect(b.analytics.alert_thresholds.inactivity_timeout).toBe(1800);
    for (const s of [0, 0.1, 0.25, 0.5, 0.8, 1]) {
      d.alerts.fall_detection.sensitivity = s;
      const fc = (toFormB(d) as FormView).analytics.alert_thresholds.fall_confidence;
      expect(fc).toBeCloseTo(requiredFallConfidence(s), 12);
      const back = parseUpdate({ analytics: { alert_thresholds: { fall_confidence: fc } } });
      expect(back).toEqual({ ok: true, changes: [{ path: 'alerts.fall_detection.sensitivity', value: s, restart: false }] });
    }
  });

  it('model_version is null when no model is loaded', () => {
    expect((toFormB(defaults()) as FormView).neural_network.model_version).toBeNull();
  });

  it('returns copies, not the configuration', () => {
    const c = changedConfig();
    const a = toFormA(c) as FormView;
    a.environment.zones[0].polygon[0][0] = 99;
    expect(c.environment.zones[0]!.polygon[0]![0]).toBe(0);
  });
});

describe('extended forms', () => {
  it('list every setting exactly once: the spec fields, then the rest at canonical paths', () => {
    const a = leafPaths(toFormA(defaults()));
    // Extras join the groups they belong to; the spec's fields keep the spec's order.
    expect(a.filter((p) => SPEC_FORM_A.includes(p))).toEqual(SPEC_FORM_A);
    expect(new Set(a)).toEqual(new Set([...SPEC_FORM_A, ...FORM_EXTRAS.a]));
    expect(a).toHaveLength(FIELDS.length);
    const b = leafPaths(toFormB(defaults(), { modelVersion: 'v' }));
    expect(b.filter((p) => SPEC_FORM_B.includes(p))).toEqual(SPEC_FORM_B);
    expect(new Set(b)).toEqual(new Set([...SPEC_FORM_B, ...FORM_EXTRAS.b]));
    expect(b).toHaveLength(FIELDS.length + 1); // + model_version
    expect(FORM_EXTRAS.b).toContain('environment.view.width');
    expect(FORM_EXTRAS.b).toContain('alerts.fall_detection.notification_delay_seconds');
    expect(FORM_EXTRAS.b).not.toContain('alerts.fall_detection.sensitivity');
    expect(FORM_EXTRAS.a).toContain('rate_limits.health.points');
    expect(FORM_EXTRAS.a).not.toContain('detection.tracking_enabled');
  });

  it('can be PUT back unchanged in either form', () => {
    const c = changedConfig();
    for (const form of [toFormA(c), toFormB(c, { modelVersion: 'sim-v3' })]) {
      const r = parseUpdate(form, { modelVersion: 'sim-v3' });
      expect(r.ok).toBe(true);
      if (!r.ok) continue;
      expect(r.changes.map((x) => x.path).sort()).toEqual(FIELDS.map((f) => f.path).sort());
      for (const ch of r.changes) expect(ch.value, ch.path).toEqual(getPath(c, ch.path));
    }
  });
});

describe('fromPartial / parseUpdate', () => {
  it('maps each Form B name to its canonical field', () => {
    const r = fromPartial({
      environment_id: 'ward-3',
      detection: { enable_tracking: false, tracking_max_age: 50 },
      analytics: { enable_fall_detection: false, enable_activity_recognition: false, alert_thresholds: { fall_confidence: 0.95, inactivity_timeout: 300 } },
      neural_network: { batch_size: 8 },
    });
    expect(r.errors).toEqual([]);
    expect(r.update).toEqual({
      environment: { id: 'ward-3' },
      detection: { tracking_enabled: false, tracking_max_age: 50 },
      alerts: { fall_detection: { enabled: false, sensitivity: 0 }, inactivity_detection: { threshold_minutes: 5 } },
      analytics: { enable_activity_recognition: false },
      neural_network: { batch_size: 8 },
    });
    expect(r.written.get('detection.tracking_enabled')).toBe('detection.enable_tracking');
    expect(r.written.get('alerts.inactivity_detection.threshold_minutes')).toBe('analytics.alert_thresholds.inactivity_timeout');
  });

  it('takes Form A names and canonical names as they are', () => {
    const body = { environment: { id: 'x', name: 'Ward' }, detection: { tracking_enabled: true }, alerts: { inactivity_detection: { threshold_minutes: 12 } } };
    expect(fromPartial(body)).toMatchObject({ update: body, errors: [] });
  });

  it('accepts the start body groups detection_settings and hardware_settings', () => {
    const r = parseUpdate({
      detection_settings: { confidence_threshold: 0.7, max_persons: 2, enable_tracking: false },
      hardware_settings: { csi_sampling_rate: 50, buffer_size: 64 },
    });
    expect(r).toEqual({
      ok: true,
      changes: [
        { path: 'detection.confidence_threshold', value: 0.7, restart: false },
        { path: 'detection.max_persons', value: 2, restart: false },
        { path: 'detection.tracking_enabled', value: false, restart: false },
        { path: 'hardware.csi_sampling_rate', value: 50, restart: true },
        { path: 'hardware.buffer_size', value: 64, restart: true },
      ],
    });
  });

  it('names errors the way the client wrote them', () => {
    const r = parseUpdate({ detection: { enable_tracking: 'yes' }, environment_id: '', detection_settings: { max_persons: 0 } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      { field: 'detection.enable_tracking', message: 'detection.enable_tracking must be true or false, got a string ("yes")', received_value: 'yes' },
      { field: 'detection_settings.max_persons', message: 'detection_settings.max_persons must be between 1 and 10, got 0', received_value: 0 },
      { field: 'environment_id', message: 'environment_id must not be empty', received_value: '' },
    ]);
  });

  it('checks unit aliases in their own unit', () => {
    const r = parseUpdate({ analytics: { alert_thresholds: { fall_confidence: 0.3, inactivity_timeout: 30 } } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      {
        field: 'analytics.alert_thresholds.fall_confidence',
        message: 'analytics.alert_thresholds.fall_confidence must be between 0.5 and 0.95, got 0.3',
        received_value: 0.3,
      },
      {
        field: 'analytics.alert_thresholds.inactivity_timeout',
        message: 'analytics.alert_thresholds.inactivity_timeout must be between 60.0 and 86400.0, got 30',
        received_value: 30,
      },
    ]);
    expect(parseUpdate({ analytics: { alert_thresholds: { inactivity_timeout: '300' } } }).ok).toBe(false);
  });

  it('refuses unknown names, in Form B groups too', () => {
    const r = parseUpdate({
      analytics: { alert_thresholds: { fall_confidance: 0.6 }, enable_falls: true },
      neural_network: { model: 'x' },
      detection_settings: 3,
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.field)).toEqual([
      'analytics.alert_thresholds.fall_confidance',
      'analytics.enable_falls',
      'neural_network.model',
      'detection_settings',
    ]);
    expect(r.errors[0]!.message).toContain('did you mean fall_confidence?');
    expect(r.errors[3]!.message).toMatch(/^detection_settings must be an object/);
    const g = parseUpdate({ analytics: { alert_thresholds: 5 } });
    expect(g.ok === false && g.errors[0]!.message).toBe(
      'analytics.alert_thresholds must be an object (a group of settings: fall_confidence, inactivity_timeout), got 5',
    );
  });

  it('refuses one setting named twice with different values, accepts it with the same', () => {
    const bad = parseUpdate({ detection: { tracking_enabled: true, enable_tracking: false } });
    expect(bad.ok === false && bad.errors).toEqual([
      {
        field: 'detection.enable_tracking',
        message: 'detection.enable_tracking and detection.tracking_enabled are the same setting (detection.tracking_enabled) and were given different values',
        received_value: false,
      },
    ]);
    const same = parseUpdate({
      environment_id: 'a',
      environment: { id: 'a' },
      analytics: { enable_fall_detection: true },
      alerts: { fall_detection: { enabled: true } },
    });
    expect(same).toEqual({
      ok: true,
      changes: [
        { path: 'environment.id', value: 'a', restart: true },
        { path: 'alerts.fall_detection.enabled', value: true, restart: false },
      ],
    });
  });

  it('model_version is read-only unless it is the loaded one', () => {
    const r = parseUpdate({ neural_network: { model_version: 'v9' } }, { modelVersion: 'v1' });
    expect(r.ok === false && r.errors[0]).toEqual({
      field: 'neural_network.model_version',
      message: 'neural_network.model_version is read-only: it comes from the loaded model; change neural_network.model_path to load another model',
      received_value: 'v9',
    });
    expect(parseUpdate({ neural_network: { model_version: 'v1' } }, { modelVersion: 'v1' })).toEqual({ ok: true, changes: [] });
    expect(parseUpdate({ neural_network: { model_version: null } }).ok).toBe(false);
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, [1], 'x']) expect(parseUpdate(body)).toMatchObject({ ok: false, errors: [{ field: '' }] });
  });

  it('reports naming errors and value errors together', () => {
    const r = parseUpdate({ nope: 1, detection: { max_persons: 'four' } });
    expect(r.ok === false && r.errors.map((e) => e.field)).toEqual(['nope', 'detection.max_persons']);
  });
});

describe('formPaths and validationDetails', () => {
  it('renames changed paths for Form B responses only', () => {
    const paths = [
      'detection.tracking_enabled',
      'environment.id',
      'alerts.fall_detection.sensitivity',
      'alerts.inactivity_detection.threshold_minutes',
      'detection.max_persons',
    ];
    expect(formPaths(paths, 'a')).toEqual(paths);
    expect(formPaths(paths, 'b')).toEqual([
      'detection.enable_tracking',
      'environment_id',
      'analytics.alert_thresholds.fall_confidence',
      'analytics.alert_thresholds.inactivity_timeout',
      'detection.max_persons',
    ]);
  });

  it('shapes the details of each form', () => {
    const errors = [
      { field: 'a.b', message: 'a.b must be x', received_value: 1 },
      { field: 'c', message: 'c must be y', received_value: undefined },
    ];
    expect(validationDetails(errors, 'a')).toEqual({
      field_errors: [
        { field: 'a.b', message: 'a.b must be x', received_value: 1 },
        { field: 'c', message: 'c must be y', received_value: null },
      ],
    });
    expect(validationDetails(errors, 'b')).toMatchObject({ field: 'a.b', reason: 'a.b must be x' });
  });
});
