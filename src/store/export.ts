import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep, isAbsolute } from 'node:path';
import { TIME_TABLES, type TimeTable } from './schema.js';
import type { CopyFormat, QueryParam, Store } from './store.js';

/**
 * What the analysts' tools share between the command line (`csipose query`, `csipose export`)
 * and the service (`POST /store/query`, `POST /store/export`, the Parquet lake): the folders the
 * store may write, exports of the time tables, and `service.json`, through which a command finds
 * the service that holds the store's file.
 */

/** Formats of an export. */
export const EXPORT_FORMATS: readonly CopyFormat[] = ['parquet', 'csv'];
/** Tables an export can hold: every table with a `ts` column. */
export const EXPORT_TABLES: readonly TimeTable[] = TIME_TABLES;
/** Export folders of the service older than this are removed (the CLI moves its files out at once). */
export const EXPORT_MAX_AGE_MS = 3_600_000;

/** A request the caller got wrong (an unknown table, a range that ends before it starts). */
export class ExportUsageError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'ExportUsageError';
  }
}

/** One export: which tables, which rows, which format. */
export interface ExportRequest {
  format: CopyFormat;
  /** Epoch ms; rows with `ts >= from` (inclusive). Default: from the first row. */
  from?: number;
  /** Epoch ms; rows with `ts <= to` (inclusive). Default: to the last row. */
  to?: number;
  /** Table names (default: all of {@link EXPORT_TABLES}). */
  tables?: readonly string[];
}

/** One file an export wrote. */
export interface ExportedFile {
  table: TimeTable;
  /** File name, `<table>.parquet` or `<table>.csv`. */
  file: string;
  /** Absolute path. */
  path: string;
  rows: number;
  bytes: number;
}

/** The store's file in a data directory. */
export function databasePath(dataDir: string): string {
  return join(dataDir, 'csipose.duckdb');
}

/** `<dataDir>/exports`, where the service writes exports. */
export function exportsDir(dataDir: string): string {
  return resolve(dataDir, 'exports');
}

/**
 * The Parquet lake's folder: `storage.parquet_dir` under the data directory.
 * @param dataDir the data directory
 * @param parquetDir the configured folder ('' for none)
 * @returns its absolute path, or undefined when the lake is off
 * @throws Error when the folder is absolute or leaves the data directory
 */
export function lakeDir(dataDir: string, parquetDir: string): string | undefined {
  if (!parquetDir) return undefined;
  const root = resolve(dataDir);
  const dir = resolve(root, parquetDir);
  const rel = relative(root, dir);
  if (isAbsolute(parquetDir) || !rel || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..')) {
    throw new Error(`storage.parquet_dir "${parquetDir}" must be a folder inside the data directory ${root}`);
  }
  if (rel === 'exports' || rel.startsWith(`exports${sep}`)) throw new Error(`storage.parquet_dir "${parquetDir}" must not be the exports folder`);
  return dir;
}

/**
 * Creates the folders the service's store may write (mode 0700) and lists them for
 * `StoreOptions.allowedDirectories`: `<dataDir>/exports` and, when set, the lake.
 * @param dataDir the data directory
 * @param parquetDir `storage.parquet_dir` ('' for no lake)
 * @returns the absolute folders
 * @throws Error for a lake folder outside the data directory, or when a folder cannot be made
 */
export function storeDirectories(dataDir: string, parquetDir: string): string[] {
  const dirs = [exportsDir(dataDir)];
  const lake = lakeDir(dataDir, parquetDir);
  if (lake) dirs.push(lake);
  for (const d of dirs) mkdirSync(d, { recursive: true, mode: 0o700 });
  return dirs;
}

/**
 * Checks table names against {@link EXPORT_TABLES}.
 * @param names names as given (a name may hold several, comma-separated); undefined or empty: all
 * @returns the tables, each once, in the given order
 * @throws ExportUsageError for an unknown name
 */
export function exportTables(names?: readonly string[]): TimeTable[] {
  const list = (names ?? [])
    .flatMap((n) => n.split(','))
    .map((n) => n.trim())
    .filter((n) => n.length > 0);
  if (list.length === 0) return [...EXPORT_TABLES];
  const out: TimeTable[] = [];
  for (const n of list) {
    if (!(EXPORT_TABLES as readonly string[]).includes(n)) {
      throw new ExportUsageError('tables', `unknown table "${n}": one of ${EXPORT_TABLES.join(', ')}`);
    }
    if (!out.includes(n as TimeTable)) out.push(n as TimeTable);
  }
  return out;
}

/**
 * Writes one file per table (`<table>.parquet` or `<table>.csv`, rows in `ts` order) into `dir`
 * with DuckDB's COPY; the time range is bound as parameters. `dir` must exist and be among the
 * store's allowed folders.
 * @param store the open store
 * @param dir the target folder
 * @param req format, range, tables
 * @returns the files written, with their row counts and sizes
 * @throws ExportUsageError for an unknown table or `from` after `to`; StoreError when DuckDB fails
 * @example await exportStore(store, '/data/exports/abc', { format: 'parquet', from: Date.parse('2026-01-01') })
 */
export async function exportStore(store: Store, dir: string, req: ExportRequest): Promise<ExportedFile[]> {
  const tables = exportTables(req.tables);
  if (req.from !== undefined && req.to !== undefined && req.from > req.to) {
    throw new ExportUsageError('to', `the range ends (${new Date(req.to).toISOString()}) before it starts (${new Date(req.from).toISOString()})`);
  }
  const where: string[] = [];
  const params: QueryParam[] = [];
  if (req.from !== undefined) {
    where.push('ts >= ?');
    params.push(new Date(req.from));
  }
  if (req.to !== undefined) {
    where.push('ts <= ?');
    params.push(new Date(req.to));
  }
  const out: ExportedFile[] = [];
  for (const table of tables) {
    const file = `${table}.${req.format}`;
    const path = resolve(dir, file);
    // Table names are our constants; the range is bound.
    const select = `SELECT * FROM ${table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ts`;
    const rows = await store.copyTo(select, params, path, req.format);
    out.push({ table, file, path, rows, bytes: statSync(path).size });
  }
  return out;
}

/**
 * A new, empty export folder `<dataDir>/exports/<id>` (mode 0700).
 * @returns its id and absolute path
 */
export function newExportDir(dataDir: string): { id: string; dir: string } {
  const id = `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
  const dir = join(exportsDir(dataDir), id);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return { id, dir };
}

/** An export id as {@link newExportDir} makes them (nothing that could leave the folder). */
export const EXPORT_ID = /^[a-z0-9]+-[0-9a-f]{12}$/;

/**
 * Removes export folders older than `maxAgeMs` (a command that died before moving its files).
 * @param dataDir the data directory
 * @param maxAgeMs age beyond which a folder goes
 * @param now epoch ms
 * @returns how many folders were removed
 */
export function cleanExports(dataDir: string, maxAgeMs = EXPORT_MAX_AGE_MS, now = Date.now()): number {
  const root = exportsDir(dataDir);
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!EXPORT_ID.test(name)) continue;
    const p = join(root, name);
    try {
      if (now - statSync(p).mtimeMs > maxAgeMs) {
        rmSync(p, { recursive: true, force: true });
        removed++;
      }
    } catch {
      // Gone meanwhile, or not ours to remove: the next clean-up tries again.
    }
  }
  return removed;
}

/**
 * Moves a file, also across file systems (copy, then remove).
 * @param from source path
 * @param to target path (replaced)
 */
export function moveFile(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    copyFileSync(from, to);
    unlinkSync(from);
  }
}

// ---- finding the running service ------------------------------------------------------------

/** The file a running service writes into its data directory. */
export const SERVICE_FILE = 'service.json';

/**
 * What `service.json` holds: where the service that holds the store listens, and a credential
 * (an admin API key valid for this start only) for the local tools. Mode 0600: whoever can read
 * it can read the database file beside it anyway.
 */
export interface ServiceInfo {
  pid: number;
  /** `http://HOST:PORT` (a loopback address when the service binds every interface). */
  url: string;
  /** ISO 8601. */
  started_at: string;
  /** Admin API key for this start only (send as `X-API-Key`). */
  api_key: string;
  /** Absolute data directory. */
  data_dir: string;
}

/**
 * Writes `<dataDir>/service.json` (mode 0600, atomically).
 * @param dataDir the data directory
 * @param info what to write
 */
export function writeServiceFile(dataDir: string, info: ServiceInfo): void {
  const path = join(dataDir, SERVICE_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/**
 * Removes `<dataDir>/service.json` when it is this start's (same pid and key).
 * @param dataDir the data directory
 * @param apiKey the key this start wrote
 */
export function removeServiceFile(dataDir: string, apiKey: string): void {
  const info = readServiceFile(dataDir);
  if (info && info.pid === process.pid && info.api_key === apiKey) {
    try {
      unlinkSync(join(dataDir, SERVICE_FILE));
    } catch {
      // Already gone.
    }
  }
}

/**
 * Reads `<dataDir>/service.json`.
 * @returns its content, or undefined when there is none or it is not a service file
 * @throws Error when it exists but cannot be read (permissions)
 */
export function readServiceFile(dataDir: string): ServiceInfo | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, SERVICE_FILE), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${join(dataDir, SERVICE_FILE)}: ${(e as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as Partial<ServiceInfo>;
    if (typeof v.pid === 'number' && typeof v.url === 'string' && typeof v.api_key === 'string') return v as ServiceInfo;
  } catch {
    // A half-written or foreign file: as good as none.
  }
  return undefined;
}

/**
 * Whether a process with this id is alive (it may belong to another user).
 * @param pid the process id
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
