/**
 * Validation of configuration updates against the canonical schema, and the JSON-schema document
 * served at `GET /config/schema`.
 *
 * Types are checked strictly: no coercion ("5" is not 5, 1 is not true), integers must be
 * integers, NaN and Infinity are refused. Every error names the field by its dotted path (array
 * items as `environment.zones[0].polygon[2]`) and says what the field must be.
 *
 * Two levels: field by field (`validateUpdate`, `validateChange`: a value against its own field)
 * and across fields (`validateConfig`: the rules of `CONFIG_RULES` on a whole configuration, e.g.
 * the radios inside the room). An update's field checks need only the update; the rules need the
 * configuration it would produce, so `ConfigStore` runs them on the merged result.
 */

import { compileSchedule } from '../pose/zones.js';
import { CAPTURE_FORMATS } from '../decoders/registry.js';
import { RADIO_DEFAULTS } from '../csi/radios.js';
import {
  ALIASES,
  CONFIG_SCHEMA,
  FIELDS,
  ZONE_SEVERITIES,
  cloneValue,
  defaults,
  fieldAt,
  isGroup,
  type ConfigNode,
  type DeepReadonly,
  type FieldDef,
  type GroupDef,
  type NumberField,
  type ServiceConfig,
  type RadiosField,
  type StringField,
  type ZonesField,
} from './schema.js';

export { defaults };

/** One broken rule: the spec's Form A `field_errors` item. */
export interface FieldError {
  /** Dotted path of the field as written ('' for the body itself). */
  field: string;
  message: string;
  received_value: unknown;
}

/** One validated change of one field. */
export interface ConfigChange {
  path: string;
  /** The value to store (normalised: timestamps as UTC ISO strings, zones copied). */
  value: unknown;
  /** Whether it takes effect only after a system restart. */
  restart: boolean;
}

export type ValidationResult = { ok: true; changes: ConfigChange[] } | { ok: false; errors: FieldError[] };

/**
 * Whether a value is a plain JSON object (not null, not an array, not a class instance).
 * @param v any value
 * @returns true for `{...}` as JSON.parse makes it
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * A short description of a received value for error messages.
 * @param v any value
 * @returns e.g. `a string ("5")`, `an object`, `null`, `NaN`
 */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string': {
      const s = v.length > 40 ? `${v.slice(0, 40)}...` : v;
      return `a string (${JSON.stringify(s)})`;
    }
    case 'number':
      return String(v);
    case 'boolean':
      return String(v);
    case 'object':
      return 'an object';
    default:
      return `a ${typeof v}`;
  }
}

/** Bounds as people write them: `0.0` for the number type so "between 0.0 and 1.0" reads right. */
function bound(def: NumberField, b: number): string {
  return def.type === 'number' && Number.isInteger(b) ? b.toFixed(1) : String(b);
}

function rangeText(def: NumberField): string {
  return `between ${bound(def, def.minimum)} and ${bound(def, def.maximum)}`;
}

/** What a field must be, as a phrase: "a number between 0.0 and 1.0". */
function expectation(def: FieldDef): string {
  switch (def.type) {
    case 'number':
    case 'integer':
      if (def.enum) return `one of ${def.enum.join(', ')}`;
      return `${def.type === 'integer' ? 'an integer' : 'a number'} ${rangeText(def)}`;
    case 'boolean':
      return def.enum ? def.enum.join(' or ') : 'true or false';
    case 'string':
      return def.nullable ? (def.format === 'date-time' ? 'an ISO 8601 timestamp or null' : 'a string or null') : 'a string';
    case 'enum':
      return `one of ${def.values.join(', ')}`;
    case 'zones':
      return 'an array of zones';
    case 'radios':
      return 'an array of radios';
  }
}

type Checked = { ok: true; value: unknown } | { ok: false; errors: FieldError[] };

function fail(field: string, message: string, received: unknown): Checked {
  return { ok: false, errors: [{ field, message, received_value: received }] };
}

function wrongType(def: FieldDef, path: string, v: unknown): Checked {
  return fail(path, `${path} must be ${expectation(def)}, got ${describeValue(v)}`, v);
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an ISO 8601 timestamp with a zone; NaN when it is not one or names no real day. */
function parseIsoTimestamp(s: string): number {
  const m = ISO_DATE_TIME.exec(s);
  if (!m) return NaN;
  const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 59) return NaN;
  // A day past the month's end (2026-02-30) would silently roll over in Date.
  if (d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return NaN;
  return Date.parse(s);
}

function checkNumber(def: NumberField, path: string, v: unknown): Checked {
  if (typeof v !== 'number') return wrongType(def, path, v);
  if (!Number.isFinite(v)) return fail(path, `${path} must be a finite number, got ${describeValue(v)}`, v);
  if (def.type === 'integer' && !Number.isInteger(v)) return wrongType(def, path, v);
  if (def.enum && !def.enum.includes(v)) return fail(path, `${path} must be one of ${def.enum.join(', ')}, got ${v}`, v);
  if (v < def.minimum || v > def.maximum) return fail(path, `${path} must be ${rangeText(def)}, got ${v}`, v);
  return { ok: true, value: v };
}

function checkString(def: StringField, path: string, v: unknown): Checked {
  if (v === null && def.nullable) return { ok: true, value: null };
  if (typeof v !== 'string') return wrongType(def, path, v);
  if (def.format === 'date-time') {
    const t = parseIsoTimestamp(v);
    if (!Number.isFinite(t))
      return fail(
        path,
        `${path} must be an ISO 8601 timestamp with a time zone (e.g. 2026-01-31T12:00:00Z)${def.nullable ? ' or null' : ''}, got ${describeValue(v)}`,
        v,
      );
    return { ok: true, value: new Date(t).toISOString() };
  }
  if (def.minLength !== undefined && v.length < def.minLength)
    return fail(path, def.minLength === 1 ? `${path} must not be empty` : `${path} must be at least ${def.minLength} characters long`, v);
  if (def.maxLength !== undefined && v.length > def.maxLength)
    return fail(path, `${path} must be at most ${def.maxLength} characters long, got ${v.length}`, v);
  if (def.pattern !== undefined && !new RegExp(def.pattern).test(v))
    return fail(path, `${path} must be ${def.patternHint ?? `a string matching ${def.pattern}`}, got ${describeValue(v)}`, v);
  return { ok: true, value: v };
}

const ZONE_KEYS = new Set(['id', 'name', 'polygon', 'schedule', 'severity']);
const SCHEDULE_KEYS = new Set(['days', 'start', 'end', 'utcOffsetMinutes']);
const ZONE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function checkZones(def: ZonesField, path: string, v: unknown): Checked {
  if (!Array.isArray(v)) return wrongType(def, path, v);
  if (v.length > def.maxItems) return fail(path, `${path} must hold at most ${def.maxItems} zones, got ${v.length}`, v.length);
  const errors: FieldError[] = [];
  const err = (field: string, message: string, received: unknown): void => void errors.push({ field, message, received_value: received });
  const seen = new Set<string>();
  const out: unknown[] = [];
  v.forEach((z, i) => {
    const at = `${path}[${i}]`;
    if (!isPlainObject(z)) return err(at, `${at} must be a zone object {id, name?, polygon, schedule?, severity?}, got ${describeValue(z)}`, z);
    for (const k of Object.keys(z)) if (!ZONE_KEYS.has(k)) err(`${at}.${k}`, `${at}.${k} is not a zone field (fields: ${[...ZONE_KEYS].join(', ')})`, z[k]);
    const zone: Record<string, unknown> = {};
    if (typeof z.id !== 'string' || !ZONE_ID.test(z.id)) {
      err(`${at}.id`, `${at}.id must be 1-64 letters, digits, ".", "_" or "-", got ${describeValue(z.id)}`, z.id);
    } else if (seen.has(z.id)) {
      err(`${at}.id`, `${at}.id ${JSON.stringify(z.id)} is used by an earlier zone; zone ids must be unique`, z.id);
    } else {
      seen.add(z.id);
      zone.id = z.id;
    }
    if (z.name !== undefined) {
      if (typeof z.name !== 'string' || z.name.length > 200)
        err(`${at}.name`, `${at}.name must be a string of at most 200 characters, got ${describeValue(z.name)}`, z.name);
      else zone.name = z.name;
    } else if (typeof zone.id === 'string') {
      // Stored zones always carry a name (ZoneConfig requires one); it defaults to the id.
      zone.name = zone.id;
    }
    const poly = z.polygon;
    if (!Array.isArray(poly) || poly.length < 3 || poly.length > def.maxVertices) {
      err(
        `${at}.polygon`,
        `${at}.polygon must be an array of 3 to ${def.maxVertices} [x, y] vertices in metres, got ${Array.isArray(poly) ? `${poly.length} vertices` : describeValue(poly)}`,
        poly,
      );
    } else {
      const vertices: Array<[number, number]> = [];
      poly.forEach((p, j) => {
        const ok = Array.isArray(p) && p.length === 2 && typeof p[0] === 'number' && typeof p[1] === 'number' && Number.isFinite(p[0]) && Number.isFinite(p[1]);
        if (!ok)
          err(`${at}.polygon[${j}]`, `${at}.polygon[${j}] must be [x, y] with two finite numbers (metres), got ${JSON.stringify(p) ?? describeValue(p)}`, p);
        else vertices.push([p[0], p[1]]);
      });
      zone.polygon = vertices;
    }
    if (z.schedule !== undefined) {
      const s = z.schedule;
      const where = `${at}.schedule`;
      if (!isPlainObject(s)) err(where, `${where} must be an object {days?, start, end, utcOffsetMinutes?}, got ${describeValue(s)}`, s);
      else {
        const unknown = Object.keys(s).filter((k) => !SCHEDULE_KEYS.has(k));
        for (const k of unknown) err(`${where}.${k}`, `${where}.${k} is not a schedule field (fields: ${[...SCHEDULE_KEYS].join(', ')})`, s[k]);
        if (unknown.length === 0) {
          try {
            compileSchedule(s as never, where);
            zone.schedule = cloneValue(s);
          } catch (e) {
            // compileSchedule's messages start with the path of the field they are about.
            const message = e instanceof Error ? e.message : String(e);
            const field = /^\S+/.exec(message)?.[0] ?? where;
            const key = field.startsWith(`${where}.`) ? field.slice(where.length + 1) : '';
            err(field, message, key && Object.hasOwn(s, key) ? s[key] : s);
          }
        }
      }
    }
    if (z.severity !== undefined) {
      if (typeof z.severity !== 'string' || !(ZONE_SEVERITIES as readonly string[]).includes(z.severity))
        err(`${at}.severity`, `${at}.severity must be one of ${ZONE_SEVERITIES.join(', ')}, got ${describeValue(z.severity)}`, z.severity);
      else zone.severity = z.severity;
    }
    out.push(zone);
  });
  return errors.length ? { ok: false, errors } : { ok: true, value: out };
}

const RADIO_KEYS = ['id', 'role', 'x', 'y', 'z', 'yaw_deg', 'antennas', 'spacing_m', 'format'] as const;
/** Radio ids: no "-", so that a link's name `<tx>-<rx>` splits one way only. */
const RADIO_ID = /^[A-Za-z0-9_]{1,32}$/;
/** What an optional radio field is when it is left out. */
const RADIO_OPTIONAL: Readonly<Record<string, unknown>> = RADIO_DEFAULTS;

function checkRadios(def: RadiosField, path: string, v: unknown): Checked {
  if (!Array.isArray(v)) return wrongType(def, path, v);
  const errors: FieldError[] = [];
  const err = (field: string, message: string, received: unknown): void => void errors.push({ field, message, received_value: received });
  if (v.length > def.maxReceivers + 1)
    return fail(path, `${path} must hold at most ${def.maxReceivers + 1} radios (1 tx and up to ${def.maxReceivers} rx), got ${v.length}`, v.length);
  const seen = new Set<string>();
  const out: unknown[] = [];
  let tx = 0;
  let rx = 0;
  v.forEach((r, i) => {
    const at = `${path}[${i}]`;
    if (!isPlainObject(r)) return err(at, `${at} must be a radio object {${RADIO_KEYS.join(', ')}}, got ${describeValue(r)}`, r);
    for (const k of Object.keys(r))
      if (!(RADIO_KEYS as readonly string[]).includes(k)) err(`${at}.${k}`, `${at}.${k} is not a radio field (fields: ${RADIO_KEYS.join(', ')})`, r[k]);
    const radio: Record<string, unknown> = {};
    if (typeof r.id !== 'string' || !RADIO_ID.test(r.id)) err(`${at}.id`, `${at}.id must be 1-32 letters, digits or "_", got ${describeValue(r.id)}`, r.id);
    else if (seen.has(r.id)) err(`${at}.id`, `${at}.id ${JSON.stringify(r.id)} is used by an earlier radio; radio ids must be unique`, r.id);
    else {
      seen.add(r.id);
      radio.id = r.id;
    }
    if (r.role !== 'tx' && r.role !== 'rx') err(`${at}.role`, `${at}.role must be tx or rx, got ${describeValue(r.role)}`, r.role);
    else {
      radio.role = r.role;
      if (r.role === 'tx') tx++;
      else rx++;
    }
    for (const k of ['x', 'y', 'z', 'yaw_deg', 'antennas', 'spacing_m'] as const) {
      const value = r[k] === undefined ? RADIO_OPTIONAL[k] : r[k];
      const { minimum, maximum } = def.limits[k];
      const integer = k === 'antennas';
      const below = k === 'yaw_deg' ? (x: number) => x < maximum : (x: number) => x <= maximum;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < minimum || !below(value) || (integer && !Number.isInteger(value))) {
        const what = integer ? 'an integer' : 'a number';
        const range = k === 'yaw_deg' ? `from ${minimum} up to (not including) ${maximum}` : `between ${minimum} and ${maximum}`;
        err(
          `${at}.${k}`,
          value === undefined ? `${at}.${k} is required: ${what} ${range}` : `${at}.${k} must be ${what} ${range}, got ${describeValue(value)}`,
          value,
        );
      } else radio[k] = value;
    }
    const format = r.format === undefined ? RADIO_OPTIONAL.format : r.format;
    if (typeof format !== 'string' || !(CAPTURE_FORMATS as readonly string[]).includes(format))
      err(`${at}.format`, `${at}.format must be one of ${CAPTURE_FORMATS.join(', ')}, got ${describeValue(format)}`, format);
    else radio.format = format;
    out.push(radio);
  });
  if (errors.length === 0 && (tx !== 1 || rx < 1))
    err(path, `${path} must hold exactly one radio with role tx and at least one with role rx, got ${tx} tx and ${rx} rx`, v.length);
  // Stored in a fixed key order, so that equal sites serialise equally.
  const ordered = out.map((r) => Object.fromEntries(RADIO_KEYS.map((k) => [k, (r as Record<string, unknown>)[k]])));
  return errors.length ? { ok: false, errors } : { ok: true, value: ordered };
}

/**
 * Checks one value against one field.
 * @param def the field
 * @param path its dotted path (used in messages)
 * @param v the received value
 * @returns the normalised value, or the field errors
 * @example checkField(fieldAt('detection.max_persons')!, 'detection.max_persons', 2.5).ok // false
 */
export function checkField(def: FieldDef, path: string, v: unknown): Checked {
  switch (def.type) {
    case 'number':
    case 'integer':
      return checkNumber(def, path, v);
    case 'boolean':
      if (typeof v !== 'boolean') return wrongType(def, path, v);
      if (def.enum && !def.enum.includes(v)) return fail(path, `${path} must be ${def.enum.join(' or ')}${def.enumReason ? `: ${def.enumReason}` : ''}`, v);
      return { ok: true, value: v };
    case 'string':
      return checkString(def, path, v);
    case 'enum':
      if (typeof v !== 'string' || !def.values.includes(v)) return fail(path, `${path} must be one of ${def.values.join(', ')}, got ${describeValue(v)}`, v);
      return { ok: true, value: v };
    case 'zones':
      return checkZones(def, path, v);
    case 'radios':
      return checkRadios(def, path, v);
  }
}

/** Edit distance, for "did you mean" on unknown names. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * The message for a name that is not a setting, suggesting the closest known name.
 * @param path the dotted path as written
 * @param known names known at that level
 * @returns e.g. `detection.max_person is not a configuration field (did you mean max_persons?)`
 */
export function unknownFieldMessage(path: string, known: readonly string[]): string {
  const key = path.slice(path.lastIndexOf('.') + 1);
  let best = '';
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(key, k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  const hint = best && bestD <= Math.max(2, Math.floor(key.length / 3)) ? `did you mean ${best}?` : `known here: ${known.join(', ')}`;
  return `${path} is not a configuration field (${hint})`;
}

/**
 * The message for a group that received something other than an object.
 * @param path dotted path of the group
 * @param g the group
 * @param v what was received
 * @returns the message
 */
export function notAGroupMessage(path: string, g: GroupDef, v: unknown): string {
  return `${path} must be an object (a group of settings: ${Object.keys(g.children).join(', ')}), got ${describeValue(v)}`;
}

function walk(node: GroupDef, obj: Record<string, unknown>, prefix: string, changes: ConfigChange[], errors: FieldError[]): void {
  for (const key of Object.keys(obj)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const v = obj[key];
    if (!Object.hasOwn(node.children, key)) {
      errors.push({ field: path, message: unknownFieldMessage(path, Object.keys(node.children)), received_value: v });
      continue;
    }
    const child: ConfigNode = node.children[key]!;
    if (isGroup(child)) {
      if (isPlainObject(v)) walk(child, v, path, changes, errors);
      else errors.push({ field: path, message: notAGroupMessage(path, child, v), received_value: v });
      continue;
    }
    const r = checkField(child, path, v);
    if (r.ok) changes.push({ path, value: r.value, restart: child.restart });
    else errors.push(...r.errors);
  }
}

/**
 * Validates a partial configuration written in canonical names: any subset of the groups and
 * fields, nested as in the configuration.
 * @param partial the update (e.g. a parsed JSON body already mapped by `fromPartial`)
 * @returns the changes in schema-walk order, or every field error found
 * @example
 * validateUpdate({ detection: { confidence_threshold: 2 } })
 * // { ok: false, errors: [{ field: 'detection.confidence_threshold',
 * //   message: 'detection.confidence_threshold must be between 0.0 and 1.0, got 2', received_value: 2 }] }
 */
export function validateUpdate(partial: unknown): ValidationResult {
  if (!isPlainObject(partial))
    return {
      ok: false,
      errors: [{ field: '', message: `the configuration update must be a JSON object, got ${describeValue(partial)}`, received_value: partial }],
    };
  const changes: ConfigChange[] = [];
  const errors: FieldError[] = [];
  walk(CONFIG_SCHEMA, partial, '', changes, errors);
  return errors.length ? { ok: false, errors } : { ok: true, changes };
}

/**
 * Checks one change for `ConfigStore.update`: the path must be a field and the value valid.
 * @param path dotted path
 * @param value the value
 * @returns the change with its normalised value and restart flag, or the errors
 */
export function validateChange(path: string, value: unknown): { ok: true; change: ConfigChange } | { ok: false; errors: FieldError[] } {
  const def = fieldAt(path);
  if (!def) return { ok: false, errors: [{ field: path, message: `${path} is not a configuration field`, received_value: value }] };
  const r = checkField(def, path, value);
  return r.ok ? { ok: true, change: { path, value: r.value, restart: def.restart } } : r;
}

/** A whole configuration as the rules read it: the store's frozen snapshot or a mutable draft. */
export type WholeConfig = ServiceConfig | DeepReadonly<ServiceConfig>;

/**
 * A rule across fields: something no single field's bounds can say. Rules see a whole
 * configuration (never a partial update), so that a change to one field is checked against the
 * values the others already hold.
 */
export interface ConfigRule {
  /** What the rule requires, for docs and error reports. */
  readonly description: string;
  /**
   * Checks a whole configuration.
   * @param config the configuration an update would produce
   * @returns one error per field that breaks the rule, naming it by its canonical dotted path, in
   *   the shape of the field errors; empty when the rule holds
   */
  check(config: WholeConfig): FieldError[];
}

/** One decimal at least, as `rangeText` writes the bounds of number fields ("between 0.0 and 6.0"). */
function metres(v: number): string {
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/**
 * Every radio of `environment.site.radios` lies on the room's floor plan: 0 <= x <= room_width and
 * 0 <= y <= room_depth. Checked whether or not `known` is set, so that switching it on later can
 * never switch on a geometry that cannot be. The error names the radio's coordinate (the
 * offending point), also when the update only moved a wall, and says which wall bounds it.
 */
const RADIOS_INSIDE_ROOM: ConfigRule = {
  description: 'environment.site: every radio lies inside the room (0 <= x <= room_width, 0 <= y <= room_depth)',
  check(config) {
    const site = config.environment.site;
    const errors: FieldError[] = [];
    site.radios.forEach((radio, i) => {
      for (const [axis, size, sizeName] of [
        ['x', site.room_width, 'room_width'],
        ['y', site.room_depth, 'room_depth'],
      ] as const) {
        const field = `environment.site.radios[${i}].${axis}`;
        const v = radio[axis];
        if (!(v >= 0 && v <= size))
          errors.push({
            field,
            message: `${field} must be between 0.0 and ${metres(size)} (environment.site.${sizeName}: radio ${radio.id} must be inside the room), got ${v}`,
            received_value: v,
          });
      }
    });
    return errors;
  },
};

/** Every rule across fields, checked in this order. Add new ones here. */
export const CONFIG_RULES: readonly ConfigRule[] = Object.freeze([RADIOS_INSIDE_ROOM]);

/**
 * Checks the rules across fields (`CONFIG_RULES`) on a whole configuration. The fields
 * themselves are assumed valid (the store checks each change with `validateChange` first).
 * @param config a whole configuration: the merged result of an update, or one loaded at start
 * @returns every broken rule's field errors, in rule order; empty when all hold
 * @example
 * const c = defaults();
 * c.environment.site.room_width = 2; // the default router hangs at x = 3
 * validateConfig(c)[0]?.field // 'environment.site.radios[0].x'
 */
export function validateConfig(config: WholeConfig): FieldError[] {
  return CONFIG_RULES.flatMap((r) => r.check(config));
}

type JsonSchema = Record<string, unknown>;

/** The other names of a canonical field, for `x-aliases`. */
function aliasNotes(path: string): string[] {
  return ALIASES.filter((a) => a.canonical === path).map((a) => `${a.name} (Form ${a.form.toUpperCase()}${a.convert ? `, ${a.convert.def.description}` : ''})`);
}

function zonesSchema(def: ZonesField): JsonSchema {
  return {
    type: 'array',
    maxItems: def.maxItems,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'polygon'],
      properties: {
        id: { type: 'string', pattern: ZONE_ID.source, description: 'Zone id, unique in the list' },
        name: { type: 'string', maxLength: 200, description: 'Display name (default: the id)' },
        polygon: {
          type: 'array',
          minItems: 3,
          maxItems: def.maxVertices,
          description: 'Vertices [x, y] in metres on the floor plan; closed implicitly',
          items: { type: 'array', minItems: 2, maxItems: 2, items: { type: 'number' } },
        },
        schedule: {
          type: 'object',
          additionalProperties: false,
          required: ['start', 'end'],
          description: 'When the zone is watched (always when absent)',
          properties: {
            days: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0, maximum: 6 }, description: '0 = Sunday .. 6 = Saturday' },
            start: { type: 'string', pattern: '^\\d{1,2}:\\d{2}$', description: "'HH:MM' local time" },
            end: { type: 'string', pattern: '^\\d{1,2}:\\d{2}$', description: "'HH:MM'; earlier than start runs past midnight" },
            utcOffsetMinutes: { type: 'integer', minimum: -840, maximum: 840, description: 'Local time offset from UTC' },
          },
        },
        severity: { type: 'string', enum: [...ZONE_SEVERITIES], default: 'high' },
      },
    },
  };
}

function radiosSchema(def: RadiosField): JsonSchema {
  const n = (k: keyof RadiosField['limits'], description: string, extra: JsonSchema = {}): JsonSchema => ({
    type: k === 'antennas' ? 'integer' : 'number',
    minimum: def.limits[k].minimum,
    ...(k === 'yaw_deg' ? { exclusiveMaximum: def.limits[k].maximum } : { maximum: def.limits[k].maximum }),
    description,
    ...extra,
  });
  return {
    type: 'array',
    minItems: 2,
    maxItems: def.maxReceivers + 1,
    description: 'Exactly one radio with role tx, 1 or more with role rx',
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'role', 'x', 'y', 'z', 'yaw_deg'],
      properties: {
        id: { type: 'string', pattern: RADIO_ID.source, description: 'Radio id, unique in the site; a link is named <tx>-<rx>' },
        role: { type: 'string', enum: ['tx', 'rx'] },
        x: n('x', 'Metres across the room; at most environment.site.room_width', { 'x-unit': 'm' }),
        y: n('y', 'Metres in depth from the front wall; at most environment.site.room_depth', { 'x-unit': 'm' }),
        z: n('z', 'Metres above the floor', { 'x-unit': 'm' }),
        yaw_deg: n('yaw_deg', 'The direction the array faces, degrees from +x towards +y', { 'x-unit': 'deg' }),
        antennas: n('antennas', 'Antennas of the array', { default: RADIO_OPTIONAL.antennas }),
        spacing_m: n('spacing_m', 'Distance between neighbouring antennas', { default: RADIO_OPTIONAL.spacing_m, 'x-unit': 'm' }),
        format: { type: 'string', enum: [...CAPTURE_FORMATS], default: RADIO_OPTIONAL.format, description: 'The CSI format the radio delivers' },
      },
    },
  };
}

function fieldSchema(path: string, def: FieldDef): JsonSchema {
  let s: JsonSchema;
  switch (def.type) {
    case 'number':
    case 'integer':
      s = { type: def.type, minimum: def.minimum, maximum: def.maximum };
      if (def.enum) s.enum = [...def.enum];
      break;
    case 'boolean':
      s = { type: 'boolean' };
      if (def.enum) s.enum = [...def.enum];
      break;
    case 'string':
      s = { type: def.nullable ? ['string', 'null'] : 'string' };
      if (def.format) s.format = def.format;
      if (def.minLength !== undefined) s.minLength = def.minLength;
      if (def.maxLength !== undefined) s.maxLength = def.maxLength;
      if (def.pattern !== undefined) s.pattern = def.pattern;
      break;
    case 'enum':
      s = { type: 'string', enum: [...def.values] };
      break;
    case 'zones':
      s = zonesSchema(def);
      break;
    case 'radios':
      s = radiosSchema(def);
      break;
  }
  s.default = cloneValue(def.default);
  s.description = def.description;
  if (def.unit) s['x-unit'] = def.unit;
  if (def.type === 'string' && def.secret) s['x-secret'] = def.secret;
  s['x-requires-restart'] = def.restart;
  const aliases = aliasNotes(path);
  if (aliases.length) s['x-aliases'] = [...aliases];
  return s;
}

function groupSchema(g: GroupDef, prefix: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [k, child] of Object.entries(g.children)) {
    const path = prefix ? `${prefix}.${k}` : k;
    properties[k] = isGroup(child) ? groupSchema(child, path) : fieldSchema(path, child);
  }
  return { type: 'object', description: g.description, additionalProperties: false, properties };
}

/**
 * The configuration schema as a JSON-schema style document (draft 2020-12 keywords), for
 * `GET /config/schema`: nested `properties`, each field with `type`, `default`, `description`,
 * bounds, `enum`, `x-unit`, `x-requires-restart` and `x-aliases` (its Form A / Form B names where
 * they differ from the canonical one). Names are canonical; PUT accepts them and both forms' names.
 * @returns a new document
 */
export function schemaDocument(): JsonSchema {
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'csipose configuration', ...groupSchema(CONFIG_SCHEMA, '') };
}

/** Dotted paths of every field, for iteration in tests and docs. */
export const FIELD_PATHS: readonly string[] = FIELDS.map((f) => f.path);
