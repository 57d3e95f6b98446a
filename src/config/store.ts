/**
 * The service's current configuration: loaded at start, changed through `update`, persisted in
 * the data directory, and announced to whoever reads it live.
 *
 * Where values come from, later wins: the schema's defaults, then `<dataDir>/config.json` (every
 * setting ever changed through `update`, so API changes survive a restart), then the `--config
 * FILE` overlay (the deployment's explicit choice for this start, like any other flag). When the
 * overlay overrides a value saved through the API, a startup warning says so.
 *
 * config.json holds only the settings changed through `update` (so a later release's new
 * defaults still reach untouched settings): `{ "version": N, "saved_at": ISO, "settings": {...} }`
 * in canonical names. It is written to a temp file, synced and renamed over the old one, so a
 * crash leaves either the old or the new file. A file that cannot be parsed or does not validate
 * is moved aside to `config.json.bad-<timestamp>` and the service starts without it (a warning,
 * not a failure); a bad `--config` file is a startup error naming the field.
 *
 * Besides each field's own rules, the whole configuration must keep the rules across fields
 * (`CONFIG_RULES` in validate.ts, e.g. the radios inside the room). They are checked on what an
 * update would produce, merged with the values already held, inside the update queue; an update
 * that would break one is refused and changes nothing.
 *
 * Secrets (a password in the source URI) are stored as given, in config.json (mode 0600), and
 * nowhere else: every reader sees them masked (secrets.ts), warnings and errors mask them, and an
 * update that writes the mask back keeps the password held.
 */

import { access, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Subject, type Observable } from 'rxjs';
import { ApiError } from '../errors.js';
import { parseUpdate } from './forms.js';
import { FIELDS, cloneValue, deepEqual, deepFreeze, defaults, fieldAt, getPath, setPath, type DeepReadonly, type ServiceConfig } from './schema.js';
import { validateChange, validateConfig, validateUpdate, type ConfigChange, type FieldError } from './validate.js';
import { SECRET_PATHS, maskErrors, maskUrlPassword, restoreMasked } from './secrets.js';

export const CONFIG_FILE_NAME = 'config.json';

/** A frozen configuration snapshot. */
export type ConfigSnapshot = DeepReadonly<ServiceConfig>;

/** What `changes$` emits after each update that changed something. */
export interface ConfigChangeEvent {
  /** The settings whose value changed, in schema order. */
  readonly changes: readonly ConfigChange[];
  /** The configuration after the update. */
  readonly config: ConfigSnapshot;
  readonly version: number;
  /** Whether any of these changes takes effect only after a restart. */
  readonly restartRequired: boolean;
}

/** The outcome of {@link ConfigStore.update}. */
export interface UpdateResult {
  /** Settings whose value changed (a value equal to the current one is not a change). */
  readonly changes: readonly ConfigChange[];
  readonly restartRequired: boolean;
  readonly version: number;
  /** ISO time the update was applied. */
  readonly appliedAt: string;
  readonly config: ConfigSnapshot;
}

export interface ConfigStoreOptions {
  /** Directory holding config.json (created when missing). */
  dataDir: string;
  /** `--config FILE`: a JSON overlay in canonical, Form A or Form B names, applied at start. */
  configFile?: string;
  /** Clock for `appliedAt`, `saved_at` and the name of a set-aside file; default Date.now. */
  now?: () => number;
}

/** A configuration the service cannot start with: a bad `--config` file. */
export class ConfigStartupError extends Error {
  readonly code = 'CONFIG_ERROR';
  /**
   * @param message the whole story, naming the file and the fields
   * @param file the offending file
   * @param errors field errors (empty when the file could not be read or parsed)
   */
  constructor(
    message: string,
    readonly file: string,
    readonly errors: readonly FieldError[] = [],
  ) {
    super(message);
    this.name = 'ConfigStartupError';
  }
}

/**
 * An update that does not validate: a change with a bad value (callers should run
 * `validateUpdate` first), or changes that are each valid but break a rule across fields together
 * with the values already held (which only the store, holding those values, can see).
 *
 * It is an ApiError (VALIDATION_ERROR, 422, `details.field_errors`), so a handler that lets it
 * through answers exactly as for a field error caught by `parseUpdate`, in either response form.
 */
export class ConfigUpdateError extends ApiError {
  /** The field errors, secrets masked (they are answered and may be logged). */
  readonly errors: readonly FieldError[];
  /** @param errors the field errors, each naming its field by its canonical dotted path */
  constructor(errors: readonly FieldError[]) {
    const masked = maskErrors(errors);
    super('VALIDATION_ERROR', masked.map((e) => e.message).join('; '), { field_errors: masked.map((e) => ({ ...e })) });
    this.errors = masked;
    this.name = 'ConfigUpdateError';
  }
}

/** Field errors as one line of text for a warning or a startup error, secrets masked. */
function errorText(errors: readonly FieldError[]): string {
  return maskErrors(errors)
    .map((e) => `${e.message}${e.message.includes(', got') ? '' : ` (got ${JSON.stringify(e.received_value)})`}`)
    .join('; ');
}

/** A setting's value as a warning may show it: JSON, any secret masked. */
function shownValue(path: string, v: unknown): string {
  return JSON.stringify(SECRET_PATHS.has(path) ? maskUrlPassword(v) : v);
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/:/g, '-');
}

/**
 * Holds the current canonical configuration. Open with {@link ConfigStore.open}.
 *
 * @example
 * const store = await ConfigStore.open({ dataDir: './data', configFile: opts.config });
 * for (const w of store.warnings) log.warn(w);
 * const r = parseUpdate(body, { modelVersion });
 * if (r.ok) await store.update(r.changes);
 * store.changes$.subscribe(({ changes }) => ...);
 */
export class ConfigStore {
  /** Problems found at start that did not stop it (a set-aside config.json, overridden API values). */
  readonly warnings: readonly string[];
  /** Emits after each update that changed at least one value; completes on `close()`. */
  readonly changes$: Observable<ConfigChangeEvent>;

  private readonly subject = new Subject<ConfigChangeEvent>();
  private readonly file: string;
  private readonly now: () => number;
  private current: ConfigSnapshot;
  /** The configuration the running system started with (restart settings are compared with it). */
  private started: ConfigSnapshot;
  /** Canonical path -> value of every setting changed through `update` (what config.json holds). */
  private saved: Map<string, unknown>;
  private versionNo: number;
  private queue: Promise<unknown> = Promise.resolve();
  private tmpCounter = 0;

  private constructor(file: string, now: () => number, config: ServiceConfig, saved: Map<string, unknown>, version: number, warnings: string[]) {
    this.file = file;
    this.now = now;
    this.current = deepFreeze(config);
    this.started = this.current;
    this.saved = saved;
    this.versionNo = version;
    this.warnings = Object.freeze(warnings);
    this.changes$ = this.subject.asObservable();
  }

  /**
   * Loads the configuration: defaults, then `<dataDir>/config.json`, then the `--config` overlay.
   * @param opts data directory, optional overlay file, optional clock
   * @returns the store; `store.warnings` lists what was set aside or overridden
   * @throws ConfigStartupError when the overlay file cannot be read, is not JSON or does not
   *   validate, alone or together with the saved settings (a rule across fields)
   */
  static async open(opts: ConfigStoreOptions): Promise<ConfigStore> {
    const now = opts.now ?? Date.now;
    await mkdir(opts.dataDir, { recursive: true });
    const file = join(opts.dataDir, CONFIG_FILE_NAME);
    const warnings: string[] = [];
    const config = defaults();
    const loaded = await loadSaved(file, now, warnings);
    for (const [path, value] of loaded.saved) setPath(config as unknown as Record<string, unknown>, path, cloneValue(value));

    if (opts.configFile !== undefined) {
      const overlay = await loadOverlay(opts.configFile);
      for (const c of overlay) {
        if (loaded.saved.has(c.path) && !deepEqual(loaded.saved.get(c.path), c.value))
          warnings.push(
            `--config ${opts.configFile} sets ${c.path} to ${shownValue(c.path, c.value)} over ${shownValue(c.path, loaded.saved.get(c.path))} saved through the API in ${file}`,
          );
        setPath(config as unknown as Record<string, unknown>, c.path, c.value);
      }
      // config.json alone keeps the rules (loadSaved checks it); what breaks one now is the overlay.
      const broken = validateConfig(config);
      if (broken.length) throw new ConfigStartupError(`--config ${opts.configFile}: ${errorText(broken)}`, opts.configFile, maskErrors(broken));
    }
    return new ConfigStore(file, now, config, loaded.saved, loaded.version, warnings);
  }

  /**
   * The current configuration.
   * @returns a deep-frozen snapshot; the same object until the next update, so it is cheap to
   *   call per frame
   */
  get(): ConfigSnapshot {
    return this.current;
  }

  /** Bumped by every update that changed a value; persisted, so it only grows across restarts. */
  get version(): number {
    return this.versionNo;
  }

  /** Path of config.json. */
  get path(): string {
    return this.file;
  }

  /**
   * Restart settings whose current value differs from the one the running system started with
   * (a change that was reverted is no longer pending).
   * @returns the pending changes in schema order, each with `restart: true`
   */
  get pendingRestart(): ConfigChange[] {
    const out: ConfigChange[] = [];
    for (const f of FIELDS) {
      if (!f.def.restart) continue;
      const v = getPath(this.current, f.path);
      if (!deepEqual(v, getPath(this.started, f.path))) out.push({ path: f.path, value: cloneValue(v), restart: true });
    }
    return out;
  }

  /** Records that the system (re)started with the current configuration: nothing is pending. */
  markStarted(): void {
    this.started = this.current;
  }

  /**
   * Applies validated changes, persists them and notifies `changes$`. Updates run one after the
   * other in call order; each sees the previous one's result. When writing config.json fails, the
   * configuration stays as it was and the promise rejects.
   * @param changes changes from `validateUpdate` / `parseUpdate` (each is checked again)
   * @returns the changes that altered a value, whether a restart is needed, the new version
   * @throws ConfigUpdateError (as a rejection) when a change names no field or has a bad value, or
   *   when the configuration it would produce breaks a rule across fields (checked in the queue,
   *   against the result of the updates before it); nothing is stored then
   */
  update(changes: readonly Pick<ConfigChange, 'path' | 'value'>[]): Promise<UpdateResult> {
    const checked: ConfigChange[] = [];
    const errors: FieldError[] = [];
    for (const c of changes) {
      const r = validateChange(c.path, c.value);
      if (r.ok) checked.push(r.change);
      else errors.push(...r.errors);
    }
    if (errors.length) return Promise.reject(new ConfigUpdateError(errors));
    const run = this.queue.then(() => this.apply(checked));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Completes `changes$`. Updates already queued still run. */
  close(): void {
    this.subject.complete();
  }

  private async apply(written: ConfigChange[]): Promise<UpdateResult> {
    // A masked password written back stands for the one held now (secrets.ts); resolved here,
    // in the queue, against the values the previous update left.
    const changes: ConfigChange[] = [];
    const unmatched: FieldError[] = [];
    for (const c of written) {
      const r = restoreMasked(c.path, c.value, getPath(this.current, c.path));
      if ('error' in r) unmatched.push(r.error);
      else changes.push(r.value === c.value ? c : { ...c, value: r.value });
    }
    if (unmatched.length) throw new ConfigUpdateError(unmatched);
    const next = cloneValue(this.current) as unknown as Record<string, unknown>;
    const saved = new Map(this.saved);
    let savedChanged = false;
    for (const c of changes) {
      if (!saved.has(c.path) || !deepEqual(saved.get(c.path), c.value)) savedChanged = true;
      saved.set(c.path, cloneValue(c.value));
      setPath(next, c.path, cloneValue(c.value));
    }
    // Before anything is persisted or announced: a refused update leaves no trace.
    const broken = validateConfig(next as unknown as ServiceConfig);
    if (broken.length) throw new ConfigUpdateError(broken);
    // Compared after all are applied: the same path twice counts once, with its last value, and a
    // value equal to the current one is no change.
    const changed: ConfigChange[] = [...new Set(changes.map((c) => c.path))]
      .filter((p) => !deepEqual(getPath(this.current, p), getPath(next, p)))
      .sort((x, y) => order(x) - order(y))
      .map((p) => ({ path: p, value: cloneValue(getPath(next, p)), restart: fieldAt(p)!.restart }));
    const version = changed.length ? this.versionNo + 1 : this.versionNo;
    const appliedAtMs = this.now();
    if (savedChanged || version !== this.versionNo) await this.persist(saved, version, appliedAtMs);

    this.saved = saved;
    this.versionNo = version;
    const restartRequired = changed.some((c) => c.restart);
    if (changed.length) this.current = deepFreeze(next as unknown as ServiceConfig);
    const result: UpdateResult = {
      changes: changed,
      restartRequired,
      version,
      appliedAt: new Date(appliedAtMs).toISOString(),
      config: this.current,
    };
    if (changed.length) this.subject.next({ changes: changed, config: this.current, version, restartRequired });
    return result;
  }

  private async persist(saved: ReadonlyMap<string, unknown>, version: number, atMs: number): Promise<void> {
    const settings: Record<string, unknown> = {};
    for (const f of FIELDS) if (saved.has(f.path)) setPath(settings, f.path, saved.get(f.path));
    const body = `${JSON.stringify({ version, saved_at: new Date(atMs).toISOString(), settings }, null, 2)}\n`;
    const tmp = `${this.file}.tmp-${process.pid}-${++this.tmpCounter}`;
    try {
      const fh = await open(tmp, 'w', 0o600);
      try {
        await fh.writeFile(body, 'utf8');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw e;
    }
    // The rename is durable only once the directory entry is; best effort (not every platform
    // can open a directory).
    try {
      const dir = await open(resolve(this.file, '..'), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    } catch {
      /* directory fsync unsupported here */
    }
  }
}

const FIELD_ORDER: ReadonlyMap<string, number> = new Map(FIELDS.map((f, i) => [f.path, i]));
function order(path: string): number {
  return FIELD_ORDER.get(path) ?? FIELDS.length;
}

interface Saved {
  saved: Map<string, unknown>;
  version: number;
}

/** Reads config.json; a bad one is moved aside with a warning and treated as absent. */
async function loadSaved(file: string, now: () => number, warnings: string[]): Promise<Saved> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { saved: new Map(), version: 0 };
    warnings.push(`cannot read ${file} (${(e as Error).message}); starting on defaults`);
    return { saved: new Map(), version: 0 };
  }
  const problem = (): string | Saved => {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      return `it is not valid JSON (${(e as Error).message})`;
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return 'it is not a JSON object';
    const d = doc as Record<string, unknown>;
    // A hand-written file may be the settings object itself, without our envelope.
    const enveloped = Object.hasOwn(d, 'settings') && Object.hasOwn(d, 'version');
    const settings = enveloped ? d.settings : d;
    let version = 0;
    if (enveloped) {
      if (typeof d.version !== 'number' || !Number.isSafeInteger(d.version) || d.version < 0)
        return `its version ${JSON.stringify(d.version)} is not a non-negative integer`;
      version = d.version;
    }
    const r = validateUpdate(settings);
    if (!r.ok) return errorText(r.errors);
    const saved = new Map<string, unknown>();
    const merged = defaults() as unknown as Record<string, unknown>;
    for (const c of r.changes) {
      saved.set(c.path, c.value);
      setPath(merged, c.path, cloneValue(c.value));
    }
    // Saved settings over the defaults they were saved against (a hand-edited file may break this).
    const broken = validateConfig(merged as unknown as ServiceConfig);
    if (broken.length) return errorText(broken);
    return { saved, version };
  };
  const r = problem();
  if (typeof r !== 'string') return r;
  let aside = `${file}.bad-${stamp(now())}`;
  try {
    for (let i = 1; await exists(aside); i++) aside = `${file}.bad-${stamp(now())}-${i}`;
    await rename(file, aside);
    warnings.push(`${file} was set aside as ${aside} because ${r}; starting without it (defaults and --config)`);
  } catch (e) {
    warnings.push(`${file} is ignored because ${r}; moving it aside failed (${(e as Error).message})`);
  }
  return { saved: new Map(), version: 0 };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Reads and validates the `--config` overlay; any problem is a ConfigStartupError. */
async function loadOverlay(path: string): Promise<ConfigChange[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new ConfigStartupError(`--config ${path}: cannot read the file (${(e as Error).message})`, path);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ConfigStartupError(`--config ${path}: not valid JSON (${(e as Error).message})`, path);
  }
  const r = parseUpdate(doc);
  if (!r.ok) throw new ConfigStartupError(`--config ${path}: ${errorText(r.errors)}`, path, maskErrors(r.errors));
  return r.changes;
}
