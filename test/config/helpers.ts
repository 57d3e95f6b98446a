import type { FieldDef } from '../../src/config/schema.js';

/** Leaf paths of a nested object; arrays and null are leaves. */
export function leafPaths(obj: unknown, prefix = ''): string[] {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return [prefix];
  return Object.entries(obj).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
}

/** Nested object with one value at a dotted path. */
export function nest(path: string, value: unknown): Record<string, unknown> {
  const keys = path.split('.');
  let out: unknown = value;
  for (let i = keys.length - 1; i >= 0; i--) out = { [keys[i]!]: out };
  return out as Record<string, unknown>;
}

/** A valid value of a field that differs from its default. */
export function alternative(path: string, def: FieldDef): unknown {
  switch (path) {
    case 'environment.id':
      return 'lab-2';
    case 'environment.calibration_timestamp':
      return '2026-01-31T12:00:00.000Z';
    case 'hardware.source':
      return 'udp://0.0.0.0:5500?format=esp32';
    case 'streaming.mqtt_url':
      return 'mqtts://broker.example:8883';
    case 'analytics.retail_entrance_zone':
    case 'analytics.retail_product_zone':
    case 'analytics.retail_checkout_zone':
    case 'analytics.retail_purchase_zone':
      return 'door';
    case 'storage.parquet_dir':
      return 'lake';
    case 'redis.url':
      return 'redis://10.0.0.5:6379/2';
    case 'neural_network.enable_gpu':
    case 'streaming.restream_enabled':
    case 'privacy.enable_encryption':
      return false; // the only accepted value: features this build does not have
  }
  switch (def.type) {
    case 'number':
    case 'integer':
      if (def.enum) return def.enum.find((v) => v !== def.default);
      return def.default === def.maximum ? def.minimum : def.maximum;
    case 'boolean':
      return !def.default;
    case 'string':
      return `${def.default ?? 'x'}-changed`;
    case 'enum':
      return def.values.find((v) => v !== def.default);
    case 'zones':
      return [
        {
          id: 'door',
          name: 'Front door',
          polygon: [
            [0, 0],
            [1, 0],
            [1, 1],
          ],
          severity: 'critical',
        },
      ];
    case 'radios':
      // One link, as stored (every field, in the stored order).
      return [
        { id: 'ap', role: 'tx', x: 1, y: 4, z: 2, yaw_deg: 315, antennas: 2, spacing_m: 0.03, format: 'atheros' },
        { id: 'node', role: 'rx', x: 5, y: 1, z: 0.5, yaw_deg: 135, antennas: 1, spacing_m: 0.03, format: 'esp32' },
      ];
  }
}

/** Values of the wrong type for a field (each must be refused). */
export function wrongTypes(def: FieldDef): unknown[] {
  const common = [{}, [], { value: 1 }];
  switch (def.type) {
    case 'number':
    case 'integer':
      return [...common, String(def.default), true, null, NaN, Infinity, -Infinity];
    case 'boolean':
      return [...common, String(def.default), 1, 0, null];
    case 'string':
      return [...common.filter((v) => !Array.isArray(v)), [], 5, true, ...(def.nullable ? [] : [null])];
    case 'enum':
      return [...common, 5, true, null];
    case 'zones':
      return [{}, 'zones', 5, null, true];
    case 'radios':
      return [{}, 'radios', 5, null, true];
  }
}

/** Values of the right type but outside the field's allowed values. */
export function outOfRange(path: string, def: FieldDef): unknown[] {
  switch (def.type) {
    case 'number':
    case 'integer': {
      const out: unknown[] = [def.minimum - 1, def.maximum + 1, def.maximum * 10 + 1];
      if (def.type === 'integer') out.push(def.minimum + 0.5);
      if (def.type === 'number') out.push(def.minimum - 1e-9, def.maximum + 1e-9);
      if (def.enum) out.push(def.enum[0]! + 1);
      return out;
    }
    case 'boolean':
      return def.enum ? [!def.enum[0]] : [];
    case 'string': {
      const out: unknown[] = [];
      if (def.minLength !== undefined && def.minLength > 0) out.push('');
      if (def.maxLength !== undefined) out.push('a'.repeat(def.maxLength + 1));
      if (def.pattern !== undefined) out.push(path === 'hardware.source' ? 'http://example.com' : ' spaced id');
      if (def.format === 'date-time') out.push('yesterday', '2026-02-30T00:00:00Z', '2026-01-31T12:00:00', '2026-13-01T00:00:00Z');
      return out;
    }
    case 'enum':
      return ['', 'unknown', def.values[0]!.toUpperCase() + 'X'];
    case 'zones':
      return [
        [
          {
            id: 'a',
            polygon: [
              [0, 0],
              [1, 1],
            ],
          },
        ],
      ];
    case 'radios': {
      const tx = { id: 'tx', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270 };
      const rx = { id: 'rx', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90 };
      return [[], [tx], [rx], [tx, { ...rx, antennas: 5 }], [tx, { ...rx, z: -1 }], [tx, { ...rx, yaw_deg: 360 }], [tx, { ...rx, id: 'a-b' }]];
    }
  }
}

/** A node of the configuration's JSON schema document: the keywords the tests read. */
export interface SchemaNode {
  type?: string;
  description: string;
  default?: unknown;
  enum?: unknown[];
  required?: string[];
  additionalProperties?: boolean;
  properties: Record<string, SchemaNode>;
  items: SchemaNode;
  [keyword: string]: unknown;
}

/** The groups of a response form (`toFormA`, `toFormB`) the tests read; the rest is unknown. */
export interface FormView {
  environment_id?: string;
  environment: {
    site?: unknown;
    view?: unknown;
    zones: Array<{ polygon: number[][] }>;
  };
  detection: Record<string, unknown>;
  neural_network: Record<string, unknown>;
  hardware: unknown;
  analytics: {
    enable_fall_detection: unknown;
    enable_activity_recognition: unknown;
    alert_thresholds: { fall_confidence: number; inactivity_timeout: number };
  };
  privacy: unknown;
  [group: string]: unknown;
}
