/**
 * The spec's two Configuration layouts (Form A and Form B) over the one canonical configuration,
 * and the mapping of updates written in either form's names onto canonical paths.
 *
 * Form A's names are the canonical names. Form B renames five settings (the alias table
 * `ALIASES` in schema.ts: `environment_id`, `detection.enable_tracking`,
 * `analytics.enable_fall_detection`, and, with a change of unit, `analytics.alert_thresholds.
 * fall_confidence` and `.inactivity_timeout`) and adds `neural_network.model_version`, which is
 * read-only (it comes from the loaded model). An update may mix both forms' names and canonical
 * names freely; naming one setting twice with different values is an error.
 *
 * GET /config answers with the form's fields in the spec's order followed by every canonical
 * setting the form has no name for, at its canonical path ("extended"; `strict: true` gives the
 * spec's fields only). So every setting appears exactly once in either form, and a client can PUT
 * back what it read. Settings of our own that neither form of the spec has (`environment.view`,
 * `environment.zones`, `environment.site`, `rate_limits`, ...) are such extras in both forms,
 * under the same canonical names, read and written alike. Passwords in URL-valued settings
 * (`hardware.source`) are masked as `***` for every reader; a PUT that sends the mask back keeps
 * the password held (secrets.ts).
 */

import {
  ALIASES,
  FIELDS,
  GROUP_ALIASES,
  READ_ONLY,
  deepEqual,
  getPath,
  isGroup,
  nodeAt,
  setPath,
  type AliasDef,
  type DeepReadonly,
  type ServiceConfig,
} from './schema.js';
import {
  checkField,
  isPlainObject,
  notAGroupMessage,
  unknownFieldMessage,
  validateUpdate,
  describeValue,
  type FieldError,
  type ValidationResult,
} from './validate.js';
import { SECRET_PATHS, maskErrors, maskUrlPassword } from './secrets.js';

export type ResponseForm = 'a' | 'b';

/** One field of a form's Configuration: its name there and the canonical field behind it. */
interface FormField {
  readonly name: string;
  /** Canonical path; absent for read-only fields reported from the running system. */
  readonly canonical?: string;
  readonly alias?: AliasDef;
}

const ALIAS_BY_NAME: ReadonlyMap<string, AliasDef> = new Map(ALIASES.map((a) => [a.name, a]));

/** Spec Form A, in the spec's order; every name is canonical. */
const FORM_A_FIELDS: readonly FormField[] = [
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
].map((name) => ({ name, canonical: name }));

function formB(name: string): FormField {
  if (Object.hasOwn(READ_ONLY, name)) return { name };
  const alias = ALIAS_BY_NAME.get(name);
  return alias ? { name, canonical: alias.canonical, alias } : { name, canonical: name };
}

/** Spec Form B, in the spec's order. */
const FORM_B_FIELDS: readonly FormField[] = [
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
].map(formB);

/** The spec's field names of a form, dotted, in the spec's order (for tests and docs). */
export const FORM_FIELD_NAMES: Readonly<Record<ResponseForm, readonly string[]>> = {
  a: FORM_A_FIELDS.map((f) => f.name),
  b: FORM_B_FIELDS.map((f) => f.name),
};

function covered(fields: readonly FormField[]): Set<string> {
  return new Set(fields.flatMap((f) => (f.canonical ? [f.canonical] : [])));
}

/** Canonical settings each form has no name for: the extended part of GET /config. */
export const FORM_EXTRAS: Readonly<Record<ResponseForm, readonly string[]>> = {
  a: FIELDS.map((f) => f.path).filter((p) => !covered(FORM_A_FIELDS).has(p)),
  b: FIELDS.map((f) => f.path).filter((p) => !covered(FORM_B_FIELDS).has(p)),
};

/** Options of {@link toFormA} and {@link toFormB}. */
export interface FormOptions {
  /** Only the spec's fields (default false: the spec's fields, then every other setting). */
  strict?: boolean;
}

export interface FormBOptions extends FormOptions {
  /** `neural_network.model_version`: the loaded model's version, null when none is loaded. */
  modelVersion?: string | null;
}

type Config = ServiceConfig | DeepReadonly<ServiceConfig>;

function copy(v: unknown): unknown {
  return v !== null && typeof v === 'object' ? structuredClone(v) : v;
}

function build(
  config: Config,
  fields: readonly FormField[],
  extras: readonly string[],
  strict: boolean,
  readOnly: (name: string) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (!f.canonical) {
      setPath(out, f.name, readOnly(f.name));
      continue;
    }
    const v = getPath(config, f.canonical);
    setPath(out, f.name, f.alias?.convert ? f.alias.convert.fromCanonical(v as number) : shown(f.canonical, v));
  }
  if (!strict) for (const p of extras) setPath(out, p, shown(p, getPath(config, p)));
  return out;
}

/** A value as readers see it: a copy, with any password of a secret field masked (secrets.ts). */
function shown(path: string, v: unknown): unknown {
  return SECRET_PATHS.has(path) ? maskUrlPassword(v) : copy(v);
}

/**
 * The configuration in the spec's Form A layout: `domain`, `environment` {`id`, `name`,
 * `calibration_timestamp`}, `detection` {`confidence_threshold`, `max_persons`,
 * `tracking_enabled`}, `alerts` {`fall_detection`, `inactivity_detection`}, `streaming`; unless
 * strict, followed by every other setting at its canonical path (`environment.view`,
 * `environment.zones`, `environment.site`, `detection.tracking_max_age`, `neural_network`,
 * `hardware`, `rate_limits`, ...; see FORM_EXTRAS.a).
 * @param config the canonical configuration
 * @param opts `strict` for the spec's fields only
 * @returns a new plain object
 * @example toFormA(store.get()).detection.tracking_enabled // true
 */
export function toFormA(config: Config, opts: FormOptions = {}): Record<string, unknown> {
  return build(config, FORM_A_FIELDS, FORM_EXTRAS.a, opts.strict === true, () => undefined);
}

/**
 * The configuration in the spec's Form B layout: `domain`, `environment_id`, `detection`
 * {..., `enable_tracking`, `tracking_max_age`, `tracking_min_hits`}, `neural_network`
 * {`model_version`, `batch_size`, `enable_gpu`, `inference_timeout`}, `hardware`, `analytics`
 * {`enable_fall_detection`, `enable_activity_recognition`, `alert_thresholds` {`fall_confidence`,
 * `inactivity_timeout` (seconds)}}, `privacy`; unless strict, followed by every other setting at
 * its canonical path (`environment` {`name`, `calibration_timestamp`, `view`, `zones`, `site`},
 * `alerts.fall_detection.notification_delay_seconds`, `alerts.inactivity_detection.enabled`,
 * `streaming`, `rate_limits`, ...; see FORM_EXTRAS.b).
 * @param config the canonical configuration
 * @param opts `modelVersion` of the loaded model (null when none), `strict`
 * @returns a new plain object
 * @example toFormB(store.get(), { modelVersion: runner.modelVersion }).detection.enable_tracking
 */
export function toFormB(config: Config, opts: FormBOptions = {}): Record<string, unknown> {
  return build(config, FORM_B_FIELDS, FORM_EXTRAS.b, opts.strict === true, () => opts.modelVersion ?? null);
}

/**
 * The configuration in a form.
 * @param config the canonical configuration
 * @param form 'a' or 'b'
 * @param opts as for toFormA / toFormB
 * @returns a new plain object
 */
export function toForm(config: Config, form: ResponseForm, opts: FormBOptions = {}): Record<string, unknown> {
  return form === 'a' ? toFormA(config, opts) : toFormB(config, opts);
}

const CANONICAL_TO_B: ReadonlyMap<string, string> = new Map(ALIASES.map((a) => [a.canonical, a.name]));

/**
 * Canonical dotted paths renamed for a form's response (`changes_applied`, `updated_fields`).
 * @param paths canonical dotted paths
 * @param form the response form
 * @returns the same paths in the form's names (canonical where the form has no name)
 * @example formPaths(['detection.tracking_enabled'], 'b') // ['detection.enable_tracking']
 */
export function formPaths(paths: readonly string[], form: ResponseForm): string[] {
  return form === 'a' ? [...paths] : paths.map((p) => CANONICAL_TO_B.get(p) ?? p);
}

/** Options of {@link fromPartial}. */
export interface FromPartialOptions {
  /**
   * The loaded model's version: a `neural_network.model_version` equal to it is ignored (a client
   * PUTting back what it read), any other value is refused as read-only.
   */
  modelVersion?: string | null;
}

/** An update mapped onto canonical names. */
export interface MappedUpdate {
  /** Nested partial configuration in canonical names, values as received (converted for unit aliases). */
  update: Record<string, unknown>;
  /** Canonical dotted path -> the name the client wrote it under. */
  written: ReadonlyMap<string, string>;
  /** Names that are not settings, groups given non-objects, read-only names, conflicts, bad unit-alias values. */
  errors: FieldError[];
}

/** Every dotted prefix of the alias and read-only names: groups that exist only in Form B. */
const FORM_ONLY_GROUPS: ReadonlySet<string> = new Set(
  [...ALIASES.map((a) => a.name), ...Object.keys(READ_ONLY)].flatMap((n) => {
    const parts = n.split('.');
    return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

/** The canonical spelling of a written path's first segment (`detection_settings` -> `detection`). */
function ungroup(written: string): string {
  const dot = written.indexOf('.');
  const head = dot < 0 ? written : written.slice(0, dot);
  if (!Object.hasOwn(GROUP_ALIASES, head)) return written;
  return GROUP_ALIASES[head] + (dot < 0 ? '' : written.slice(dot));
}

/** Names accepted under a (canonical) group path, for "did you mean". */
function knownUnder(prefix: string): string[] {
  const names = new Set<string>();
  const node = nodeAt(prefix);
  if (node && isGroup(node)) for (const k of Object.keys(node.children)) names.add(k);
  const lead = prefix ? `${prefix}.` : '';
  for (const n of [...ALIASES.map((a) => a.name), ...Object.keys(READ_ONLY)]) if (n.startsWith(lead)) names.add(n.slice(lead.length).split('.')[0]!);
  if (prefix === '') for (const g of Object.keys(GROUP_ALIASES)) names.add(g);
  return [...names];
}

/**
 * Maps a partial update written in Form A, Form B or canonical names (any mix) onto canonical
 * names. Values are not checked here beyond the unit aliases (whose bounds are in their own unit);
 * `validateUpdate` checks the result, and {@link parseUpdate} does both.
 * @param body the parsed JSON body (or a `--config` file)
 * @param opts the loaded model's version, so that an unchanged `model_version` is accepted
 * @returns the canonical update, where each field came from, and the naming errors
 * @example fromPartial({ detection: { enable_tracking: false } }).update // { detection: { tracking_enabled: false } }
 */
export function fromPartial(body: unknown, opts: FromPartialOptions = {}): MappedUpdate {
  const update: Record<string, unknown> = {};
  const written = new Map<string, string>();
  const errors: FieldError[] = [];
  const err = (field: string, message: string, received: unknown): void => void errors.push({ field, message, received_value: received });

  if (!isPlainObject(body)) {
    err('', `the configuration update must be a JSON object, got ${describeValue(body)}`, body);
    return { update, written, errors };
  }

  const put = (canonical: string, value: unknown, w: string): void => {
    const before = written.get(canonical);
    if (before !== undefined) {
      if (!deepEqual(getPath(update, canonical), value))
        err(w, `${w} and ${before} are the same setting (${canonical}) and were given different values`, value);
      return;
    }
    setPath(update, canonical, value);
    written.set(canonical, w);
  };

  const walk = (obj: Record<string, unknown>, prefix: string): void => {
    for (const key of Object.keys(obj)) {
      const w = prefix ? `${prefix}.${key}` : key;
      const p = ungroup(w);
      const v = obj[key];
      if (Object.hasOwn(READ_ONLY, p)) {
        if (!(opts.modelVersion !== undefined && v === opts.modelVersion)) err(w, `${w} is read-only: it ${READ_ONLY[p]}`, v);
        continue;
      }
      const alias = ALIAS_BY_NAME.get(p);
      if (alias) {
        if (!alias.convert) put(alias.canonical, v, w);
        else {
          const r = checkField(alias.convert.def, w, v);
          if (r.ok) put(alias.canonical, alias.convert.toCanonical(r.value as number), w);
          else errors.push(...r.errors);
        }
        continue;
      }
      const node = nodeAt(p);
      if (node && !isGroup(node)) {
        put(p, v, w);
        continue;
      }
      if (node || FORM_ONLY_GROUPS.has(p)) {
        if (isPlainObject(v)) walk(v, w);
        else if (node && isGroup(node)) err(w, notAGroupMessage(w, node, v), v);
        else err(w, `${w} must be an object (a group of settings: ${knownUnder(p).join(', ')}), got ${describeValue(v)}`, v);
        continue;
      }
      const parent = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '';
      err(w, unknownFieldMessage(w, knownUnder(parent)), v);
    }
  };
  walk(body, '');
  return { update, written, errors };
}

/** The written name of a canonical error field (`detection.tracking_enabled` -> `detection.enable_tracking`). */
function writtenField(field: string, written: ReadonlyMap<string, string>): string {
  let best = '';
  for (const c of written.keys()) {
    if ((field === c || field.startsWith(`${c}.`) || field.startsWith(`${c}[`)) && c.length > best.length) best = c;
  }
  return best ? written.get(best)! + field.slice(best.length) : field;
}

/**
 * Maps and validates a partial update written in either form's names (the PUT /config and
 * `--config` path): errors name the fields as the client wrote them.
 * @param body the parsed JSON body
 * @param opts the loaded model's version
 * @returns the canonical changes, or every error found
 * @example
 * parseUpdate({ detection: { enable_tracking: 'yes' } })
 * // { ok: false, errors: [{ field: 'detection.enable_tracking', message: 'detection.enable_tracking must be true or false, got a string ("yes")', received_value: 'yes' }] }
 */
export function parseUpdate(body: unknown, opts: FromPartialOptions = {}): ValidationResult {
  const mapped = fromPartial(body, opts);
  if (!isPlainObject(body)) return { ok: false, errors: maskErrors(mapped.errors) };
  const r = validateUpdate(mapped.update);
  const errors = [...mapped.errors];
  if (!r.ok) {
    for (const e of r.errors) {
      const field = writtenField(e.field, mapped.written);
      const message = field !== e.field && e.message.startsWith(e.field) ? field + e.message.slice(e.field.length) : e.message;
      errors.push({ ...e, field, message });
    }
  }
  // Errors are answered and may be logged: the passwords they echo are masked.
  return errors.length ? { ok: false, errors: maskErrors(errors) } : (r as ValidationResult);
}

/**
 * The `details` of a VALIDATION_ERROR in a form: Form A `{field_errors}`; Form B `{field,
 * reason}` of the first error, plus `field_errors` with all of them.
 * @param errors field errors (at least one)
 * @param form the response form
 * @returns the details object
 */
export function validationDetails(errors: readonly FieldError[], form: ResponseForm): Record<string, unknown> {
  const fieldErrors = errors.map((e) => ({ field: e.field, message: e.message, received_value: e.received_value ?? null }));
  if (form === 'a') return { field_errors: fieldErrors };
  const first = errors[0];
  return { field: first?.field ?? '', reason: first?.message ?? 'invalid configuration', field_errors: fieldErrors };
}
