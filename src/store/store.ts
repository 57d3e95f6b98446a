import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, parse, resolve, sep } from 'node:path';
import {
  DuckDBArrayValue,
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBInstance,
  DuckDBListValue,
  DuckDBMapValue,
  DuckDBStructValue,
  DuckDBTimestampMillisecondsValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampSecondsValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBUnionValue,
  StatementType,
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBValue,
  type JS,
} from '@duckdb/node-api';
import { migrate, SchemaError, SCHEMA_VERSION, TIME_TABLES, type TimeTable } from './schema.js';
import { dataDirPaths, rewriteFilePaths, type PathResolver } from './sqlPaths.js';

/** WAL size at which DuckDB checkpoints (see `Store.open`). */
const CHECKPOINT_THRESHOLD = '64MB';

/** Why the store failed; every one maps to `SYSTEM_ERROR` (HTTP 500) at the edge. */
export type StoreErrorReason =
  /** Another process holds the file's lock. */
  | 'locked'
  /** This process already has the file open (DuckDB allows a second instance, which would corrupt it). */
  | 'in_use'
  /** Not a DuckDB file, or damaged. */
  | 'corrupt'
  /** A DuckDB file this build cannot use (newer schema, or not a csipose store). */
  | 'schema'
  /** The store (or sink) is closed. */
  | 'closed'
  /** A statement `query` refuses, or a value the store cannot hold. */
  | 'invalid'
  /** Anything else DuckDB or the file system reported (disk full, permissions...). */
  | 'io';

/**
 * A storage failure, as a value with the `SYSTEM_ERROR` code of DECISIONS "Errors". The message
 * names the file and says what to do; `cause` keeps DuckDB's own error.
 */
export class StoreError extends Error {
  readonly code = 'SYSTEM_ERROR';
  constructor(
    readonly reason: StoreErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** A value `query` and `execute` bind to a `?` or `$name` parameter. */
export type QueryParam = null | boolean | number | bigint | string | Date | Uint8Array;
/** Positional (`?`) or named (`$name`) parameter values. */
export type QueryParams = readonly QueryParam[] | Readonly<Record<string, QueryParam>>;
/** One result row: DuckDB values as plain JS (TIMESTAMP -> Date, BLOB -> Uint8Array, LIST -> array). */
export type Row = Record<string, JS>;

/** The `database` component of detailed health (spec "Health and metrics"). */
export interface StoreHealth {
  /**
   * `degraded` while writes fail and their rows wait for a retry (nothing lost yet), `unhealthy`
   * once rows are being given up, `healthy` otherwise.
   */
  status: 'healthy' | 'degraded' | 'unhealthy' | 'closed';
  path: string;
  /** Bytes of the database file plus its write-ahead log (0 in memory). */
  file_size_bytes: number;
  /** Connections busy / connections open, e.g. `1/2`. */
  connection_pool: string;
  /** Duration of the last `query`, or null before the first. */
  query_time_ms: number | null;
  schema_version: number;
  /** Message of the last failed write, while writes fail. */
  last_error?: string;
}

/** One `system_metrics` row (spec Metrics `current`). */
export interface SystemMetricsSample {
  /** Epoch ms. */
  time: number;
  framesPerSecond: number;
  averageLatencyMs: number;
  cpuUsage: number;
  memoryUsage: number;
  processingQueueSize: number;
  errorRate: number;
  activePersons: number;
  /** Errors the service logged since the previous sample (the summary's `error_count`). */
  errorCount?: number;
}

/** A client's write failure, for the store's health. */
export interface StoreWriteFailure {
  /** What the last failed write said. */
  message: string;
  /** True when rows have been given up since the last write that succeeded. */
  losing: boolean;
}

/** Something holding unwritten rows that `Store.close` must flush first (a PoseSink). */
export interface StoreClient {
  close(): Promise<void>;
  /**
   * The client's last write failure while its rows wait for a retry, undefined while its writes
   * succeed. A write of another client succeeding says nothing about these rows, so the store's
   * health asks every client.
   */
  writeFailure?(): StoreWriteFailure | undefined;
}

/** How `Store.open` configures DuckDB. */
export interface StoreOptions {
  /** DuckDB worker threads; default DuckDB's own (one per core). */
  threads?: number;
  /** DuckDB `memory_limit`, e.g. `'512MB'`. */
  memoryLimit?: string;
  /**
   * Let SQL reach other files and the network (`read_csv`, `COPY`, `ATTACH`). Default false: the
   * store only ever needs its own file, and a query must not become a file reader.
   */
  externalAccess?: boolean;
  /**
   * Folders SQL may still read and write while external access is off (absolute or relative to
   * the working directory; each must exist): the targets of `copyTo` (exports, the Parquet lake)
   * and whatever an ad-hoc query reads there. Nothing outside them, no URL. Set once at open: the
   * configuration is then locked, so no statement can widen it. Ignored with `externalAccess`.
   */
  allowedDirectories?: readonly string[];
  /**
   * The folder relative file paths of ad-hoc SQL (`sql`, `sqlJson`) are taken from, whatever the
   * working directory (see sqlPaths.ts); also DuckDB's `file_search_path`. Default: the folder of
   * the database file, i.e. the data directory; none in memory.
   */
  relativeTo?: string;
  /**
   * Open the file read-only (DuckDB `access_mode = READ_ONLY`): no migration, no writes, and
   * another process may not hold the file meanwhile. For analysts' tools (`csipose query`).
   */
  readOnly?: boolean;
}

/** What a write task of {@link Store.withWriter} does, when it only appends rows. */
export interface Appends {
  /** The first and last `pose_persons.seq` it appends (none appended: undefined). */
  personSeq?: readonly [number, number];
}

/** Where a store's pose rows stand ({@link Store.poseMark}). */
export interface PoseMark {
  /** Writes other than appends in storage order, since the store was opened. */
  writes: number;
  /** The highest `pose_persons.seq` committed. */
  seq: number;
}

/** Why an ad-hoc SQL text (`Store.sql`) was refused or failed. */
export type QueryErrorKind =
  /** Not SQL DuckDB can parse. */
  | 'syntax'
  /** More than one statement in the text. */
  | 'multiple_statements'
  /** A statement other than a read (SELECT, EXPLAIN of a SELECT). */
  | 'not_read_only'
  /** A file or address outside the allowed folders. */
  | 'permission'
  /** Ran past its time limit and was interrupted. */
  | 'timeout'
  /** A result larger than its byte cap (`SqlLimits.maxBytes`): refused, not cut. */
  | 'too_large'
  /** Anything else DuckDB refused: unknown table or column, a cast that fails, ... */
  | 'query';

/**
 * An ad-hoc query the store refused or DuckDB could not run: the caller's mistake, never the
 * store's (HTTP 422 at the edge). `message` is DuckDB's own where DuckDB spoke.
 */
export class QueryError extends StoreError {
  constructor(
    readonly kind: QueryErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('invalid', message, options);
    this.name = 'QueryError';
  }
}

/** A JSON value: what `Store.sql` gives for every DuckDB value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** One result column of `Store.sql`. */
export interface SqlColumn {
  name: string;
  /** DuckDB's type name, e.g. `TIMESTAMP`, `VARCHAR[]`, `DECIMAL(10,3)`. */
  type: string;
}

/** The answer of `Store.sql`. */
export interface SqlResult {
  columns: SqlColumn[];
  /** One array per row, values in column order (column names may repeat). */
  rows: JsonValue[][];
  row_count: number;
  /** True when the result had more rows than `maxRows` and was cut there. */
  truncated: boolean;
  execution_time_ms: number;
}

/** Limits of one `Store.sql` run. */
export interface SqlLimits {
  /** Interrupt the query after this long (ms); default none. */
  timeoutMs?: number;
  /** Keep at most this many rows (then `truncated`); default all. */
  maxRows?: number;
  /**
   * Refuse the result (QueryError `too_large`) once its rows as JSON (UTF-8, the `rows` array as
   * `sqlJson` writes it) pass this many bytes; default no cap. Counted row by row while the
   * chunks are read, so a refused result is never held whole.
   */
  maxBytes?: number;
}

/** The answer of `Store.sqlJson`: that of `Store.sql` with the rows already as JSON text. */
export interface SqlJsonResult extends Omit<SqlResult, 'rows'> {
  /** The JSON array of the rows, each an array in column order. */
  rows_json: string;
  /** Its length in bytes (UTF-8). */
  bytes: number;
}

/** File formats of `Store.copyTo`. */
export type CopyFormat = 'parquet' | 'csv';

/** Files open in this process, by absolute path: DuckDB's lock does not stop a second instance here. */
const OPEN_FILES = new Set<string>();
const STATEMENT_CACHE = 64;
const READ_STATEMENTS = new Set<number>([StatementType.SELECT, StatementType.EXPLAIN]);

/** Runs tasks one at a time, in call order; a failed task does not stop the next. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  busy = 0;
  run<T>(task: () => Promise<T> | T): Promise<T> {
    this.busy++;
    const p = this.tail.then(task);
    this.tail = p.then(
      () => this.busy--,
      () => this.busy--,
    );
    return p;
  }
}

/**
 * Makes the store's folder and what this process writes there its owner's only. The folder is
 * made 0700 when it is ours to tighten (owned by this user, not a shared folder such as /tmp
 * with its sticky bit, not the home directory or a root), and the process's umask gains 077:
 * DuckDB creates the WAL (again after every checkpoint) and its spill files itself, exports and
 * the lake are written by it later, all with the umask's bits. PostgreSQL does the same at start.
 * Best effort: a file system without modes is no reason not to open.
 * @param dir the folder of the database file
 */
function ownerOnly(dir: string): void {
  try {
    const old = process.umask(0o077);
    process.umask(old | 0o077);
  } catch {
    // Worker threads may not change the umask; the process that opened them already did.
  }
  try {
    const st = statSync(dir);
    const shared = (st.mode & 0o1000) !== 0 || dir === parse(dir).root || resolve(dir) === resolve(homedir());
    if (!shared && st.uid === process.getuid?.() && (st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  } catch {
    // Best effort, as above.
  }
}

/** A file of the store (made by an earlier build) to mode 0600, when it exists and is looser. */
function ownerOnlyFile(file: string): void {
  try {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  } catch {
    // Missing (no WAL after a checkpoint), or a file system without modes.
  }
}

/** Classifies a DuckDB open error into a clear StoreError. */
function openError(path: string, e: unknown): StoreError {
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof StoreError) return e;
  if (e instanceof SchemaError) return new StoreError('schema', `cannot use database ${path}: ${e.message}`, { cause: e });
  if (/could not set lock|conflicting lock/i.test(msg)) {
    const holder = /held in (.+?\(PID \d+\))/.exec(msg)?.[1];
    return new StoreError('locked', `database ${path} is locked by another process${holder ? ` (${holder})` : ''}: stop it or point --data-dir elsewhere`, {
      cause: e,
    });
  }
  if (/not a valid duckdb database|corrupt|checksum|invalid.*(header|magic)|unsupported.*version|serializ/i.test(msg)) {
    return new StoreError('corrupt', `database ${path} is not a readable DuckDB file (damaged, or written by another program): ${msg}`, { cause: e });
  }
  return new StoreError('io', `cannot open database ${path}: ${msg}`, { cause: e });
}

/** BIGINT results become numbers when exact, so rows serialise to JSON. */
function plain(v: JS): JS {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  return v;
}

/** ISO 8601 (UTC, `Z`) of microseconds since the epoch; microseconds kept when not whole ms. */
function isoFromMicros(micros: bigint, fallback: string): string {
  let ms = micros / 1000n;
  let rest = micros - ms * 1000n;
  if (rest < 0n) {
    ms -= 1n;
    rest += 1000n;
  }
  const d = new Date(Number(ms));
  if (!Number.isFinite(d.getTime())) return fallback;
  const iso = d.toISOString();
  return rest === 0n ? iso : `${iso.slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}

/**
 * A DuckDB value as JSON: numbers and strings as they are, BIGINTs as numbers when exact (else
 * decimal strings), TIMESTAMP as ISO 8601 UTC (`2026-01-01T12:00:00.123Z`), DATE as
 * `YYYY-MM-DD`, BLOB as base64, DECIMAL as a number, LIST/ARRAY as arrays, STRUCT as objects,
 * MAP as `[{key, value}]`, anything else (TIME, INTERVAL, UUID, ...) as DuckDB prints it.
 * @param v a value of a result chunk
 * @returns its JSON form
 */
export function jsonValue(v: DuckDBValue): JsonValue {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'boolean':
    case 'string':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : String(v);
    case 'bigint':
      return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  }
  if (v instanceof DuckDBTimestampValue || v instanceof DuckDBTimestampTZValue) return v.isFinite ? isoFromMicros(v.micros, v.toString()) : v.toString();
  if (v instanceof DuckDBTimestampMillisecondsValue) return v.isFinite ? isoFromMicros(v.millis * 1000n, v.toString()) : v.toString();
  if (v instanceof DuckDBTimestampSecondsValue) return v.isFinite ? isoFromMicros(v.seconds * 1_000_000n, v.toString()) : v.toString();
  if (v instanceof DuckDBTimestampNanosecondsValue) return v.isFinite ? isoFromMicros(v.nanos / 1000n, v.toString()) : v.toString();
  if (v instanceof DuckDBDateValue) return v.toString();
  if (v instanceof DuckDBBlobValue) return Buffer.from(v.bytes.buffer, v.bytes.byteOffset, v.bytes.byteLength).toString('base64');
  if (v instanceof DuckDBDecimalValue) return v.toDouble();
  if (v instanceof DuckDBListValue || v instanceof DuckDBArrayValue) return v.items.map(jsonValue);
  if (v instanceof DuckDBStructValue) {
    const o: { [key: string]: JsonValue } = {};
    for (const [k, x] of Object.entries(v.entries)) o[k] = jsonValue(x);
    return o;
  }
  if (v instanceof DuckDBMapValue) return v.entries.map((e) => ({ key: jsonValue(e.key), value: jsonValue(e.value) }));
  if (v instanceof DuckDBUnionValue) return jsonValue(v.value);
  return String(v);
}

/** A SQL string literal. */
function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** An absolute folder path ending in the separator, so that `/a/b/` does not also allow `/a/bc`. */
function folder(dir: string): string {
  const abs = resolve(dir);
  return abs.endsWith(sep) ? abs : abs + sep;
}

/**
 * What a store's ad-hoc SQL may read besides the store, for the message of a refusal.
 * @param options how the store was opened
 * @param allowed its allowed folders, absolute, each ending in the separator
 * @param base where relative paths are taken from
 */
function accessNote(options: StoreOptions, allowed: readonly string[], base: string | undefined): string | undefined {
  if (options.externalAccess) return undefined;
  const relative = base !== undefined ? `; relative paths are taken from the data directory ${base}` : '';
  if (allowed.some((d) => d === parse(d).root)) return `queries here read local files only, no network address${relative}`;
  if (allowed.length === 0) return 'queries here read the store only, no other file and no network address';
  return `queries here read the store and files under ${allowed.join(', ')} only, no network address${relative}`;
}

/** Leading whitespace and comments of a SQL text removed. */
function skipComments(sql: string): string {
  let s = sql;
  for (;;) {
    const t = s.replace(/^\s+/, '');
    if (t.startsWith('--')) {
      const nl = t.indexOf('\n');
      s = nl < 0 ? '' : t.slice(nl + 1);
    } else if (t.startsWith('/*')) {
      const end = t.indexOf('*/');
      s = end < 0 ? '' : t.slice(end + 2);
    } else return t;
  }
}

/**
 * Words a read statement may begin with. Checked on the text before DuckDB prepares it, because
 * preparing is not always free of effects (binding `EXPORT DATABASE` creates its folder).
 */
const READ_START = /^(?:SELECT|WITH|FROM|VALUES|TABLE|DESCRIBE|DESC|SHOW|SUMMARIZE|PRAGMA|EXPLAIN)\b|^\(/i;

/**
 * The statement an `EXPLAIN` explains (`EXPLAIN [ANALYZE] [(options)] <statement>`), or
 * undefined when the text is not in that shape.
 */
function explained(sql: string): string | undefined {
  const m = /^EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\([^()]*\)\s*)?/i.exec(skipComments(sql));
  if (!m) return undefined;
  const rest = skipComments(sql).slice(m[0].length);
  return rest.trim() ? rest : undefined;
}

/** The refusal of a statement that is not a read. */
function notReadOnly(): QueryError {
  return new QueryError('not_read_only', 'only read statements run here (SELECT, or EXPLAIN of a SELECT): the store is read-only to queries');
}

/**
 * Classifies an error DuckDB raised while preparing or running an ad-hoc query.
 * @param e the error
 * @param access what the store's SQL may read, added to a refused file or address
 */
function queryError(e: unknown, access?: string): QueryError {
  if (e instanceof QueryError) return e;
  // The node API prefixes a parse failure of its own; DuckDB's message is what the user needs.
  let msg = ((e as Error)?.message ?? String(e)).replace(/^Failed to extract statements: /, '');
  if (/^Missing Extension Error/i.test(msg)) {
    // A URL (http:, s3:, ...) needs an extension the store never loads; DuckDB's advice to
    // install it does not apply here.
    return new QueryError('permission', `${msg.split('\n')[0]}, and this store loads no extension${access ? `: ${access}` : ''}`, { cause: e });
  }
  const kind: QueryErrorKind = /^Parser Error/i.test(msg) ? 'syntax' : /^Permission Error|disabled by configuration/i.test(msg) ? 'permission' : 'query';
  if (kind === 'permission' && access) {
    const nl = msg.indexOf('\n');
    msg = nl < 0 ? `${msg}: ${access}` : `${msg.slice(0, nl)}: ${access}${msg.slice(nl)}`;
  }
  return new QueryError(kind, msg, { cause: e });
}

/** The refusal of a result past its byte cap. */
function tooLarge(maxBytes: number): QueryError {
  const mib = maxBytes / 1_048_576;
  return new QueryError(
    'too_large',
    `the result is larger than ${maxBytes} bytes${Number.isInteger(mib) ? ` (${mib} MiB)` : ''} as JSON (limit: storage.query_max_bytes): ` +
      'select fewer rows or columns (LIMIT, WHERE, aggregates), or write the rows to files with csipose export',
  );
}

function bindOne(ps: DuckDBPreparedStatement, i: number, v: QueryParam): void {
  if (v === null || v === undefined) ps.bindNull(i);
  else if (typeof v === 'boolean') ps.bindBoolean(i, v);
  else if (typeof v === 'bigint') ps.bindBigInt(i, v);
  else if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) ps.bindBigInt(i, BigInt(v));
    else ps.bindDouble(i, v);
  } else if (typeof v === 'string') ps.bindVarchar(i, v);
  else if (v instanceof Date) {
    const ms = v.getTime();
    if (!Number.isFinite(ms)) throw new StoreError('invalid', `parameter ${i} is an invalid Date`);
    ps.bindTimestamp(i, new DuckDBTimestampValue(BigInt(ms) * 1000n));
  } else if (v instanceof Uint8Array) ps.bindBlob(i, v);
  else throw new StoreError('invalid', `parameter ${i} has a type the store cannot bind`);
}

/** The highest `pose_persons.seq` stored (0 for none): where a store's pose mark starts. */
async function highestPoseSeq(conn: DuckDBConnection): Promise<number> {
  return Number((await conn.runAndReadAll(`SELECT coalesce(max(seq), 0) FROM pose_persons`)).getRows()[0]?.[0] ?? 0);
}

function bindAll(ps: DuckDBPreparedStatement, params: QueryParams | undefined): void {
  ps.clearBindings();
  const want = ps.parameterCount;
  if (params === undefined) {
    if (want > 0) throw new StoreError('invalid', `the statement has ${want} parameter(s) and none were given`);
    return;
  }
  if (Array.isArray(params)) {
    const list = params as readonly QueryParam[];
    if (list.length !== want) throw new StoreError('invalid', `the statement has ${want} parameter(s), ${list.length} given`);
    for (let i = 0; i < list.length; i++) bindOne(ps, i + 1, list[i]!);
    return;
  }
  const named = params as Readonly<Record<string, QueryParam>>;
  for (let i = 1; i <= want; i++) {
    const name = ps.parameterName(i);
    if (!(name in named)) throw new StoreError('invalid', `parameter $${name} was not given`);
    bindOne(ps, i, named[name]!);
  }
}

/** Prepared statements of one connection, by SQL text, least recently used evicted. */
class StatementCache {
  private readonly map = new Map<string, DuckDBPreparedStatement>();
  constructor(private readonly conn: DuckDBConnection) {}
  async get(sql: string): Promise<DuckDBPreparedStatement> {
    const hit = this.map.get(sql);
    if (hit) {
      this.map.delete(sql);
      this.map.set(sql, hit);
      return hit;
    }
    const ps = await this.conn.prepare(sql);
    this.map.set(sql, ps);
    if (this.map.size > STATEMENT_CACHE) {
      const [oldest, old] = this.map.entries().next().value as [string, DuckDBPreparedStatement];
      this.map.delete(oldest);
      old.destroySync();
    }
    return ps;
  }
  clear(): void {
    for (const ps of this.map.values()) ps.destroySync();
    this.map.clear();
  }
}

/**
 * The process's DuckDB database: one instance, one connection for writes (appenders, retention,
 * migrations; serialised through `withWriter`) and one for reads (`query`; serialised, reading
 * committed data while writes go on).
 *
 * @example
 * const store = await Store.open('./data/csipose.duckdb');
 * const rows = await store.query('SELECT count(*) AS n FROM pose_frames WHERE ts >= ?', [new Date(t0)]);
 * await store.close();
 */
export class Store {
  private closing?: Promise<void>;
  private isClosed = false;
  private readonly writeLock = new Mutex();
  private readonly readLock = new Mutex();
  private readonly readStatements: StatementCache;
  private readonly writeStatements: StatementCache;
  private readonly clients = new Set<StoreClient>();
  /** Ad-hoc SQL, exports and the lake: a connection of their own, so history reads never wait on them. */
  private readonly sideLock = new Mutex();
  private side: DuckDBConnection | undefined;
  private lastQueryMs: number | null = null;
  private lastWriteError: Error | undefined;
  /**
   * Where the pose rows stand ({@link poseMark}): writes other than appends in storage order, and
   * the highest `pose_persons.seq` committed. Undefined for a store in memory (its tables may be
   * views over files that change without a write here: LakeRoot).
   */
  private pose: PoseMark | undefined;

  private constructor(
    /** The path as given (`:memory:` for an in-memory store). */
    readonly path: string,
    private readonly key: string | undefined,
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    private readonly reader: DuckDBConnection,
    /** True when opened with `readOnly`. */
    readonly readOnly = false,
    /** Where relative file paths of ad-hoc SQL are taken from (none in memory). */
    private readonly paths?: PathResolver,
    /** What ad-hoc SQL may read besides the store, told with a refusal. */
    private readonly access?: string,
  ) {
    this.readStatements = new StatementCache(reader);
    this.writeStatements = new StatementCache(writer);
  }

  /**
   * Opens (creating when missing) the database at `path` and brings its schema up to date.
   * @param path a file path (its directory is created), or `:memory:`
   * @param options DuckDB threads, memory limit, external file access (off by default)
   * @returns the open store
   * @throws StoreError `locked` when another process holds the file, `in_use` when this process
   *   already has it open, `corrupt` for a damaged or foreign file, `schema` for a newer schema
   * @example const store = await Store.open(join(dataDir, 'csipose.duckdb'));
   */
  static async open(path: string, options: StoreOptions = {}): Promise<Store> {
    const memory = path === ':memory:' || path === '';
    const key = memory ? undefined : resolve(path);
    const readOnly = !!options.readOnly && !memory;
    const allowed = options.externalAccess ? [] : (options.allowedDirectories ?? []).map(folder);
    const base = options.relativeTo !== undefined ? resolve(options.relativeTo) : key !== undefined ? dirname(key) : undefined;
    if (key !== undefined) {
      if (OPEN_FILES.has(key)) {
        throw new StoreError('in_use', `database ${path} is already open in this process: share the one Store instead of opening it twice`);
      }
      if (readOnly) {
        try {
          statSync(key);
        } catch (e) {
          throw new StoreError('io', `no database at ${path}: ${(e as Error).message}`, { cause: e });
        }
      } else {
        try {
          mkdirSync(dirname(key), { recursive: true, mode: 0o700 });
        } catch (e) {
          throw new StoreError('io', `cannot create the directory of database ${path}: ${(e as Error).message}`, { cause: e });
        }
        ownerOnly(dirname(key));
      }
      OPEN_FILES.add(key);
    }
    // Allowed folders can only be set while external access is on: it goes off right after, by SQL.
    const config: Record<string, string> = { enable_external_access: options.externalAccess || allowed.length > 0 ? 'true' : 'false' };
    if (options.threads !== undefined) config['threads'] = String(options.threads);
    if (options.memoryLimit !== undefined) config['memory_limit'] = options.memoryLimit;
    if (readOnly) config['access_mode'] = 'READ_ONLY';
    // A checkpoint compresses the rows the WAL holds into the file; rows appended since the last
    // one start a new row group, which the next checkpoint merges with the previous one when that
    // is not yet full, writing it again. At DuckDB's default (a checkpoint every 16 MB of WAL,
    // ~50,000 person rows) a row group of 122,880 rows was written about twice; at 64 MB nearly
    // once (a quarter less CPU per stored row, checkpoints included: docs/store.md "How rows get
    // in and out"). The WAL a crash leaves to replay is at most that much bigger.
    config['checkpoint_threshold'] = CHECKPOINT_THRESHOLD;
    // A statement is prepared once and cached (StatementCache): DuckDB 1.5's compressed
    // materialization plans string columns by the statistics of the time it was prepared, so a
    // GROUP BY prepared while a table was empty gives garbage strings ('|') once it has rows.
    config['disabled_optimizers'] = 'compressed_materialization';
    if (!options.externalAccess) {
      // Nothing the store runs needs an extension (Parquet and JSON are built in); left on,
      // DuckDB would fetch one from the network for a URL or an unknown reader.
      config['autoinstall_known_extensions'] = 'false';
      config['autoload_known_extensions'] = 'false';
    }
    // A list split at commas: a folder with a comma in its path cannot be one.
    if (base !== undefined && !base.includes(',')) config['file_search_path'] = base;
    let instance: DuckDBInstance | undefined;
    let writer: DuckDBConnection | undefined;
    let reader: DuckDBConnection | undefined;
    try {
      instance = await DuckDBInstance.create(memory ? ':memory:' : key, config);
      writer = await instance.connect();
      if (!options.externalAccess) {
        // Global settings, for every connection of the instance; then nothing can change them.
        if (allowed.length > 0) {
          await writer.run(`SET allowed_directories = [${allowed.map(sqlString).join(', ')}]`);
          await writer.run(`SET enable_external_access = false`);
        }
        await writer.run(`SET lock_configuration = true`);
      }
      reader = await instance.connect();
      const w = writer;
      if (readOnly) {
        const found = Number(
          (await w.runAndReadAll(`SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'schema_version'`)).getRows()[0]?.[0],
        );
        if (found === 0) throw new SchemaError('the file has no schema_version table: it is not a csipose store');
      } else {
        await migrate({
          run: (sql) => w.run(sql),
          scalar: async (sql) => (await w.runAndReadAll(sql)).getRows()[0]?.[0],
        });
      }
      // A file made by an earlier build (0644), and its WAL, become the owner's only too.
      if (key !== undefined && !readOnly) for (const f of [key, `${key}.wal`]) ownerOnlyFile(f);
      const seq = key === undefined ? undefined : await highestPoseSeq(w);
      const store = new Store(
        memory ? ':memory:' : path,
        key,
        instance,
        writer,
        reader,
        readOnly,
        base !== undefined ? dataDirPaths(base) : undefined,
        accessNote(options, allowed, base),
      );
      if (seq !== undefined) store.pose = { writes: 0, seq };
      return store;
    } catch (e) {
      for (const h of [reader, writer, instance]) {
        try {
          h?.closeSync();
        } catch {
          // Half-open handles are released on a best-effort basis; the open error is what matters.
        }
      }
      if (key !== undefined) OPEN_FILES.delete(key);
      throw openError(path, e);
    }
  }

  /** True once `close` has begun. */
  get closed(): boolean {
    return this.isClosed;
  }

  private assertOpen(): void {
    if (this.isClosed) throw new StoreError('closed', `database ${this.path} is closed`);
  }

  /**
   * Runs one read statement (SELECT, EXPLAIN) as a prepared statement with bound
   * parameters on the read connection. Statements are cached by text, so keep the SQL constant
   * and put every value in `params`.
   * @param sql one statement with `?` or `$name` placeholders
   * @param params the values, positional or by name
   * @returns the rows, values as plain JS (exact BIGINTs as numbers)
   * @throws StoreError `invalid` for a write statement or a parameter mismatch, `closed`, `io`
   * @example await store.query('SELECT * FROM alerts WHERE ts BETWEEN $from AND $to', { from, to })
   */
  query<T extends Row = Row>(sql: string, params?: QueryParams): Promise<T[]> {
    try {
      this.assertOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.readLock.run(async () => {
      this.assertOpen();
      const t0 = performance.now();
      let ps: DuckDBPreparedStatement;
      try {
        ps = await this.readStatements.get(sql);
      } catch (e) {
        throw new StoreError('invalid', `cannot prepare query: ${(e as Error).message}`, { cause: e });
      }
      if (!READ_STATEMENTS.has(ps.statementType)) {
        throw new StoreError('invalid', 'query() runs read statements only; writes go through execute() or a sink');
      }
      bindAll(ps, params);
      try {
        const reader = await ps.runAndReadAll();
        const rows = reader.getRowObjectsJS();
        for (const row of rows) for (const k in row) row[k] = plain(row[k]!);
        return rows as T[];
      } catch (e) {
        throw new StoreError('io', `query failed: ${(e as Error).message}`, { cause: e });
      } finally {
        this.lastQueryMs = performance.now() - t0;
      }
    });
  }

  /** The side connection (ad-hoc SQL, exports, the lake), opened on first use. */
  private async sideConnection(): Promise<DuckDBConnection> {
    this.side ??= await this.instance.connect();
    return this.side;
  }

  /** Drops the side connection after a failure that may have left it inside a transaction. */
  private dropSide(): void {
    try {
      this.side?.closeSync();
    } catch {
      // Broken already; a new one is opened on next use.
    }
    this.side = undefined;
  }

  /**
   * Runs one ad-hoc read statement, as an analyst types it (`csipose query`): exactly one SELECT
   * (or `EXPLAIN` of one; DESCRIBE, SHOW, SUMMARIZE, PRAGMA reads and FROM-first count as SELECT),
   * without parameters, inside a READ ONLY transaction that is rolled back, on the side
   * connection (so history reads do not wait on it). Results are streamed chunk by chunk and cut
   * at `maxRows`; past `timeoutMs` the query is interrupted; past `maxBytes` it is refused. Files
   * outside the store are out of reach unless they lie in the folders allowed at open; relative
   * file paths are taken from the data directory (`relativeTo`, see sqlPaths.ts).
   * @param sql the statement text
   * @param limits time limit, row cap, byte cap
   * @returns columns, rows (values as {@link jsonValue} gives them), whether rows were cut, time
   * @throws QueryError for a text that is not one read statement, a DuckDB error (syntax, unknown
   *   table, permission, ...), a timeout or a result past `maxBytes`; StoreError `closed`
   * @example await store.sql('SELECT environment_id, count(*) AS n FROM pose_frames GROUP BY ALL', { timeoutMs: 30_000, maxRows: 1000 })
   */
  async sql(sql: string, limits: SqlLimits = {}): Promise<SqlResult> {
    const rows: JsonValue[][] = [];
    const { bytes: _bytes, ...r } = await this.runSql(sql, limits, false, (row) => void rows.push(row as JsonValue[]));
    return { ...r, rows };
  }

  /**
   * Runs one ad-hoc read statement as {@link sql} does, with the rows written as JSON text while
   * the chunks are read (`POST /store/query`): the rows are never held twice, and a result past
   * `maxBytes` is refused as soon as the bytes written pass it.
   * @param sql the statement text
   * @param limits time limit, row cap, byte cap
   * @returns columns, the rows as one JSON array (`rows_json`) and its size in bytes, counts, time
   * @throws as {@link sql}
   * @example await store.sqlJson('SELECT * FROM alerts', { timeoutMs: 30_000, maxRows: 100_000, maxBytes: 64 << 20 })
   */
  async sqlJson(sql: string, limits: SqlLimits = {}): Promise<SqlJsonResult> {
    const parts: string[] = [];
    const r = await this.runSql(sql, limits, true, (row) => void parts.push(row as string));
    return { ...r, rows_json: `[${parts.join(',')}]` };
  }

  /**
   * The run of {@link sql} and {@link sqlJson}: hands each row to `emit`, as values or, with
   * `asJson`, as its JSON text, counting the bytes of the rows array as it goes.
   */
  private runSql(
    sql: string,
    limits: SqlLimits,
    asJson: boolean,
    emit: (row: JsonValue[] | string) => void,
  ): Promise<Omit<SqlResult, 'rows'> & { bytes: number }> {
    try {
      this.assertOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    const maxRows = limits.maxRows ?? Infinity;
    if (!(maxRows >= 0)) return Promise.reject(new StoreError('invalid', `maxRows must be >= 0, got ${maxRows}`));
    const maxBytes = limits.maxBytes ?? Infinity;
    // An empty result is `[]`, 2 bytes: a smaller cap could refuse every query.
    if (!(maxBytes >= 2)) return Promise.reject(new StoreError('invalid', `maxBytes must be >= 2, got ${maxBytes}`));
    const counting = asJson || maxBytes !== Infinity;
    const text = this.paths ? rewriteFilePaths(sql, this.paths) : sql;
    return this.sideLock.run(async () => {
      this.assertOpen();
      const t0 = performance.now();
      const conn = await this.sideConnection();
      if (!skipComments(text).replace(/;\s*$/, '').trim()) throw new QueryError('syntax', 'the SQL text holds no statement');
      let ps: DuckDBPreparedStatement;
      try {
        // Parsing only: a syntax error or a second statement is refused before anything is bound.
        const extracted = await conn.extractStatements(text);
        if (extracted.count !== 1) {
          throw new QueryError('multiple_statements', `one statement at a time: the text holds ${extracted.count} statements`);
        }
        const inner = explained(text);
        for (const t of inner === undefined ? [text] : [text, inner]) {
          if (!READ_START.test(skipComments(t)) || (t === inner && /^EXPLAIN\b/i.test(skipComments(inner)))) throw notReadOnly();
        }
        ps = await extracted.prepare(0);
      } catch (e) {
        throw queryError(e, this.access);
      }
      try {
        await this.checkReadOnly(conn, ps, text);
        if (ps.parameterCount > 0) throw new QueryError('query', 'the statement has parameters ($1, ?): write the values into the SQL text');
        try {
          await conn.run('BEGIN TRANSACTION READ ONLY');
        } catch (e) {
          this.dropSide();
          throw new StoreError('io', `cannot begin a read-only transaction: ${(e as Error).message}`, { cause: e });
        }
        let timedOut = false;
        const timer =
          limits.timeoutMs !== undefined && Number.isFinite(limits.timeoutMs)
            ? setTimeout(
                () => {
                  timedOut = true;
                  conn.interrupt();
                },
                Math.max(0, limits.timeoutMs),
              )
            : undefined;
        const columns: SqlColumn[] = [];
        let rowCount = 0;
        /** Bytes of the rows array as JSON so far: its brackets, then each row as it is read. */
        let bytes = 2;
        let truncated = false;
        try {
          const result = await ps.stream();
          const width = result.columnCount;
          for (let i = 0; i < width; i++) columns.push({ name: result.columnName(i), type: result.columnType(i).toString() });
          for (;;) {
            const chunk = await result.fetchChunk();
            if (!chunk || chunk.rowCount === 0) break;
            try {
              if (rowCount >= maxRows) {
                truncated = true;
                break;
              }
              const take = Math.min(chunk.rowCount, maxRows - rowCount);
              const vectors = Array.from({ length: width }, (_, c) => chunk.getColumnVector(c));
              // Row by row, not chunk.getRows(): a chunk of 2,048 long strings is more than the
              // heap holds, and the cap must stop the reading before it is all converted.
              for (let r = 0; r < take; r++) {
                const values = new Array<JsonValue>(width);
                for (let c = 0; c < width; c++) values[c] = jsonValue(vectors[c]!.getItem(r));
                if (counting) {
                  const line = JSON.stringify(values);
                  bytes += Buffer.byteLength(line) + (rowCount > 0 ? 1 : 0);
                  if (bytes > maxBytes) throw tooLarge(maxBytes);
                  emit(asJson ? line : values);
                } else emit(values);
                rowCount++;
              }
              if (take < chunk.rowCount) {
                truncated = true;
                break;
              }
            } finally {
              // DuckDB frees a chunk's memory when its wrapper is collected, which may be late; a
              // vector of long strings can be gigabytes. Every value read is a copy by now.
              chunk.reset();
            }
          }
        } catch (e) {
          if (timedOut) {
            const s = Math.round((limits.timeoutMs ?? 0) / 100) / 10;
            throw new QueryError('timeout', `the query ran longer than ${s} s and was interrupted (limit: storage.query_timeout_seconds)`, { cause: e });
          }
          throw queryError(e, this.access);
        } finally {
          clearTimeout(timer);
          try {
            await conn.run('ROLLBACK');
          } catch {
            this.dropSide();
          }
        }
        return {
          columns,
          row_count: rowCount,
          truncated,
          execution_time_ms: Math.round((performance.now() - t0) * 100) / 100,
          bytes: counting ? bytes : 0,
        };
      } finally {
        ps.destroySync();
        this.lastQueryMs = performance.now() - t0;
      }
    });
  }

  /** Refuses anything but a read, and an EXPLAIN of anything but a read (EXPLAIN ANALYZE runs it). */
  private async checkReadOnly(conn: DuckDBConnection, ps: DuckDBPreparedStatement, sql: string): Promise<void> {
    const refuse = notReadOnly;
    if (ps.statementType === StatementType.SELECT) return;
    if (ps.statementType !== StatementType.EXPLAIN) throw refuse();
    const inner = explained(sql);
    if (inner === undefined) throw refuse();
    let ips: DuckDBPreparedStatement | undefined;
    try {
      const ex = await conn.extractStatements(inner);
      if (ex.count !== 1) throw refuse();
      ips = await ex.prepare(0);
    } catch (e) {
      throw e instanceof QueryError ? e : queryError(e);
    }
    try {
      if (ips.statementType !== StatementType.SELECT) throw refuse();
    } finally {
      ips.destroySync();
    }
  }

  /**
   * Writes the rows of one SELECT of ours to a file with DuckDB's COPY, on the side connection.
   * The file must lie in a folder allowed at open (`allowedDirectories`).
   * @param select a SELECT of constant text (values go in `params`)
   * @param params its bound values
   * @param file the target path (overwritten)
   * @param format `parquet` or `csv` (with a header row)
   * @returns the number of rows written
   * @throws StoreError `io` when DuckDB refuses (a folder not allowed, disk full...), `closed`
   * @example await store.copyTo('SELECT * FROM alerts WHERE ts >= ?', [from], '/data/exports/x/alerts.parquet', 'parquet')
   */
  copyTo(select: string, params: QueryParams | undefined, file: string, format: CopyFormat): Promise<number> {
    try {
      this.assertOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    const options = format === 'parquet' ? '(FORMAT parquet)' : '(FORMAT csv, HEADER true)';
    const text = `COPY (${select}) TO ${sqlString(resolve(file))} ${options}`;
    return this.sideLock.run(async () => {
      this.assertOpen();
      const conn = await this.sideConnection();
      let ps: DuckDBPreparedStatement | undefined;
      try {
        ps = await conn.prepare(text);
        bindAll(ps, params);
        return (await ps.run()).rowsChanged;
      } catch (e) {
        if (e instanceof StoreError) throw e;
        throw new StoreError('io', `cannot write ${file}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
      } finally {
        ps?.destroySync();
      }
    });
  }

  /**
   * Runs one write statement as a prepared statement with bound parameters on the write
   * connection, in turn with appender flushes.
   * @param sql one statement with placeholders
   * @param params the values
   * @returns the number of rows changed
   * @example await store.execute('DELETE FROM alerts WHERE alert_id = ?', [id])
   */
  execute(sql: string, params?: QueryParams): Promise<number> {
    return this.executeAs(sql, params);
  }

  /** {@link execute}, told as an append of rows (no pose keys) when `appends` is given. */
  private executeAs(sql: string, params?: QueryParams, appends?: Appends): Promise<number> {
    return this.withWriter(async () => {
      let ps: DuckDBPreparedStatement;
      try {
        ps = await this.writeStatements.get(sql);
      } catch (e) {
        throw new StoreError('invalid', `cannot prepare statement: ${(e as Error).message}`, { cause: e });
      }
      bindAll(ps, params);
      const r = await ps.run();
      return r.rowsChanged;
    }, appends);
  }

  /**
   * Runs `task` with the write connection once every earlier write task has finished, so that
   * appender batches, retention and migrations never interleave. A failure is recorded for
   * `health()` and rethrown as a StoreError.
   * @param task receives the write connection; must not keep it after it settles
   * @param appends given when the task only appends rows (a sink's batch): which pose keys it adds
   *   ({@link poseMark}); without it the task counts as any other write
   * @returns what `task` returns
   * @throws StoreError `closed` after `close`, otherwise the task's error classified
   */
  withWriter<T>(task: (conn: DuckDBConnection) => Promise<T> | T, appends?: Appends): Promise<T> {
    if (this.isClosed) return Promise.reject(new StoreError('closed', `database ${this.path} is closed`));
    return this.writeLock.run(async () => {
      // Checked again: close may have finished its drain while this task waited its turn.
      if (this.isClosed) throw new StoreError('closed', `database ${this.path} is closed`);
      const pose = this.pose;
      const seq = appends?.personSeq;
      // Appends above every key committed keep what readers counted (poseMark); anything else,
      // failed appends included, voids it.
      const inOrder = pose !== undefined && appends !== undefined && (seq === undefined || seq[0] > pose.seq);
      let appended = false;
      try {
        const out = await task(this.writer);
        this.lastWriteError = undefined;
        if (inOrder && seq !== undefined) pose.seq = seq[1];
        appended = inOrder;
        return out;
      } catch (e) {
        const err =
          e instanceof StoreError
            ? e
            : /disconnected|closed/i.test((e as Error)?.message ?? '')
              ? new StoreError('closed', `database ${this.path} is closed: ${(e as Error).message}`, { cause: e })
              : new StoreError('io', `write to ${this.path} failed: ${(e as Error)?.message ?? String(e)}`, { cause: e });
        this.lastWriteError = err;
        throw err;
      } finally {
        if (pose !== undefined && !appended) {
          pose.writes++;
          // Any key may have come or gone: the highest is read again (on failure, none is below it).
          try {
            pose.seq = await highestPoseSeq(this.writer);
          } catch {
            pose.seq = Number.MAX_SAFE_INTEGER;
          }
        }
      }
    });
  }

  /**
   * Where the pose rows stand, for a reader that keeps counts of them between reads (history
   * pages, history.ts): `writes` changes with every write that is not an append in storage order
   * (a delete, an update, an insert by SQL, rows appended below a key already committed, a failed
   * append), and `seq` is the highest `pose_persons.seq` committed. While `writes` stays, the rows
   * with `seq` at most a mark's `seq` are the ones that were there when it was taken.
   * @returns the mark (a copy), or undefined for a store in memory, whose tables may be views over
   *   files that change without a write through the store
   */
  poseMark(): PoseMark | undefined {
    return this.pose && { ...this.pose };
  }

  /**
   * Registers a client (a sink) whose `close` the store awaits before it closes, so that
   * `store.close()` writes every buffered row.
   * @param client the sink
   * @returns a function that unregisters it
   */
  attach(client: StoreClient): () => void {
    this.clients.add(client);
    return () => this.clients.delete(client);
  }

  /**
   * Adds one `system_metrics` row.
   * @param m the sample
   */
  async recordMetrics(m: SystemMetricsSample): Promise<void> {
    // An append to system_metrics: the pose rows' counts (poseMark) stay.
    await this.executeAs(
      `INSERT INTO system_metrics (ts, frames_per_second, average_latency_ms, cpu_usage, memory_usage, processing_queue_size, error_rate, active_persons, error_count)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        new Date(m.time),
        m.framesPerSecond,
        m.averageLatencyMs,
        m.cpuUsage,
        m.memoryUsage,
        Math.round(m.processingQueueSize),
        m.errorRate,
        Math.round(m.activePersons),
        m.errorCount === undefined ? null : Math.round(m.errorCount),
      ],
      {},
    );
  }

  /**
   * Retention: deletes rows older than `days` from every time table, in one transaction.
   * @param days rows with `ts` before `now - days` go (fractions allowed; must be >= 0)
   * @param now epoch ms to count back from; default the current time
   * @returns rows deleted per table
   * @example await store.pruneOlderThan(config.privacy.data_retention_days)
   */
  pruneOlderThan(days: number, now: number = Date.now()): Promise<Record<TimeTable, number>> {
    if (!Number.isFinite(days) || days < 0) return Promise.reject(new StoreError('invalid', `retention days must be a number >= 0, got ${days}`));
    const cutoff = new Date(now - days * 86_400_000);
    return this.withWriter(async (conn) => {
      const out = {} as Record<TimeTable, number>;
      await conn.run('BEGIN TRANSACTION');
      try {
        for (const table of TIME_TABLES) {
          // Table names are our constants; the cutoff is bound.
          const ps = await this.writeStatements.get(`DELETE FROM ${table} WHERE ts < ?`);
          bindAll(ps, [cutoff]);
          out[table] = (await ps.run()).rowsChanged;
        }
        await conn.run('COMMIT');
      } catch (e) {
        await conn.run('ROLLBACK').catch(() => undefined);
        throw e;
      }
      return out;
    });
  }

  /**
   * The `database` component of detailed health.
   * @returns status, file size, pool use and last query time
   */
  health(): StoreHealth {
    let size = 0;
    if (this.key !== undefined) {
      for (const f of [this.key, `${this.key}.wal`]) {
        try {
          size += statSync(f).size;
        } catch {
          // A missing WAL is the normal state after a checkpoint.
        }
      }
    }
    const busy = this.isClosed ? 0 : Math.min(1, this.writeLock.busy) + Math.min(1, this.readLock.busy) + Math.min(1, this.sideLock.busy);
    // The last write of any kind may have succeeded while a sink's rows still fail: ask each.
    let failure = this.lastWriteError?.message;
    let losing = false;
    if (!this.isClosed) {
      for (const c of this.clients) {
        const f = c.writeFailure?.();
        if (f) {
          failure = f.message;
          losing ||= f.losing;
        }
      }
    }
    const h: StoreHealth = {
      status: this.isClosed ? 'closed' : losing ? 'unhealthy' : failure !== undefined ? 'degraded' : 'healthy',
      path: this.path,
      file_size_bytes: size,
      connection_pool: `${busy}/${this.isClosed ? 0 : this.side ? 3 : 2}`,
      query_time_ms: this.lastQueryMs,
      schema_version: SCHEMA_VERSION,
    };
    if (!this.isClosed && failure !== undefined) h.last_error = failure;
    return h;
  }

  /**
   * Closes every attached sink (writing what they hold), waits for running reads and writes,
   * checkpoints the WAL into the file and releases the file. Idempotent.
   * @returns when the file is closed
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      // Sinks flush through withWriter, so they close before the store refuses writes.
      const clients = [...this.clients];
      this.clients.clear();
      await Promise.allSettled(clients.map((c) => c.close()));
      this.isClosed = true;
      await this.writeLock.run(async () => {
        await this.writer.run('CHECKPOINT').catch(() => undefined);
      });
      await this.readLock.run(() => undefined);
      await this.sideLock.run(() => undefined);
      try {
        this.readStatements.clear();
        this.writeStatements.clear();
        this.side?.closeSync();
        this.side = undefined;
        this.reader.closeSync();
        this.writer.closeSync();
        this.instance.closeSync();
      } finally {
        if (this.key !== undefined) OPEN_FILES.delete(this.key);
      }
    })();
    return this.closing;
  }
}
