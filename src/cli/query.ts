import { Command, CommanderError, Option } from 'commander';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { existsSync } from 'node:fs';
import { parse, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { Store, StoreError, type JsonValue, type SqlResult } from '../store/store.js';
import { databasePath, pidAlive, readServiceFile, type ServiceInfo } from '../store/export.js';
import { LakeRoot, lakeLayout } from '../store/lakeRoot.js';

/**
 * `csipose query` (DECISIONS "Command line for analysts"): read-only SQL over the store of a data
 * directory, whether or not a service holds it.
 *
 * The command first opens the database file itself, read-only. The query may then read any local
 * file the user can (their own files, exports wherever they were written), but no network address
 * and no extension. When another process holds the file, it reads `<dataDir>/service.json`,
 * checks that the service's process is alive, and sends the query to that service's
 * `POST /api/v1/store/query` with the admin key the service wrote there for this start; the
 * service applies `storage.query_timeout_seconds`, `storage.query_max_rows` and
 * `storage.query_max_bytes`, and lets the query read only its export and lake folders. Either
 * way relative file paths are taken from the data directory (`lake/...`, `exports/...`), so a
 * query reads the same files from any working directory, with or without the service. A
 * `service.json` whose process has exited is ignored.
 *
 * Output: `table` (aligned text and a row count, the default), `csv` (a header row, RFC 4180
 * quoting, NULL as an empty field) or `json` (one array of objects; a repeated column name gets
 * `_2`, `_3`...). Values as the store gives them: TIMESTAMP as ISO 8601 UTC, BLOB as base64,
 * lists and structs as JSON. Exit status 0 on success, 1 for a query or I/O error (message on
 * stderr), 2 for bad usage.
 *
 * `--lake DIR` reads a lake instead of a store: a cluster's shared lake root (the files every store
 * node's manifest lists: what it committed; docs/scale.md "Store nodes and one history") or
 * one process's `storage.parquet_dir`, as tables named like the store's (`pose_frames`,
 * `pose_persons`, `activity_events`, `alerts`, `system_metrics`, `tracks`; in a cluster's root also
 * the column `store`, the node that wrote a row, and `lake_commits`). No database file and no
 * running service is needed, and nodes may write meanwhile (a file is never changed once
 * written). Relative file paths are then taken from DIR.
 */

/** Where a command writes and how it reports its exit status (tests pass their own). */
export interface AnalystIo {
  stdout: Writable;
  stderr: Writable;
  env: Record<string, string | undefined>;
  setExitCode(code: number): void;
}

/** The process's own streams, env and exit status. */
export const processIo = (): AnalystIo => ({
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  setExitCode: (code) => {
    process.exitCode = code;
  },
});

/** Bad usage: exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Commander's own usage errors (a missing argument, an unknown option, a bad choice) exit with
 * status 2, as DECISIONS has it; help exits 0.
 */
export function usageExit(err: CommanderError): never {
  process.exit(err.exitCode === 0 ? 0 : 2);
}

/** `--data-dir`, default CSIPOSE_DATA_DIR or `./data`. */
export function dataDirOption(io: AnalystIo): Option {
  return new Option('--data-dir <dir>', 'data directory of the store (env CSIPOSE_DATA_DIR)').default(io.env.CSIPOSE_DATA_DIR || './data');
}

/** Either the store, opened read-only here, or the service that holds it. */
export type StoreAccess = { store: Store } | { service: ServiceInfo };

/**
 * Opens the store of `dataDir` read-only, or finds the running service that holds it.
 * @param dataDir the data directory
 * @param allowedDirectories folders SQL of the local connection may reach: an export's target, or
 *   the root for a query, which may read any local file
 * @returns the open store (close it), or the service to ask
 * @throws Error with a message for the user when neither works
 */
export async function openStore(dataDir: string, allowedDirectories: readonly string[] = []): Promise<StoreAccess> {
  const path = databasePath(dataDir);
  if (!existsSync(path)) {
    const info = liveService(dataDir);
    if (info) return { service: info };
    throw new Error(`no store at ${path}: run csipose serve with --data-dir ${dataDir} first, or point --data-dir at a data directory`);
  }
  try {
    return { store: await Store.open(path, { readOnly: true, allowedDirectories }) };
  } catch (e) {
    if (!(e instanceof StoreError) || e.reason !== 'locked') throw e;
    const info = liveService(dataDir);
    if (info) return { service: info };
    throw new Error(`${e.message}; and no running csipose service was found in ${dataDir} (its service.json is missing or its process has exited)`);
  }
}

/** The service of `dataDir/service.json` when its process is alive. */
function liveService(dataDir: string): ServiceInfo | undefined {
  const info = readServiceFile(dataDir);
  return info && pidAlive(info.pid) ? info : undefined;
}

/**
 * POSTs a JSON body to the service (Form A) with its local admin key. No client-side time limit:
 * the service bounds queries itself, and an export takes as long as it takes.
 * @param info the service
 * @param path under `/api/v1`, e.g. `/store/query`
 * @param body the JSON body
 * @returns the parsed answer
 * @throws Error with the service's message for an error answer, or when it does not answer
 */
export function callService<T>(info: ServiceInfo, path: string, body: unknown): Promise<T> {
  const url = new URL(`/api/v1${path}`, info.url);
  const payload = Buffer.from(JSON.stringify(body));
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<T>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(payload.length),
          'x-api-key': info.api_key,
          'x-response-form': 'a',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            reject(new Error(`the service at ${info.url} answered ${res.statusCode} with a body that is not JSON`));
            return;
          }
          if ((res.statusCode ?? 500) >= 400) {
            const m = (parsed as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${res.statusCode}`;
            reject(new Error(res.statusCode === 401 ? `${m} (the key in service.json was not accepted: is it the service that wrote it?)` : m));
          } else resolve(parsed as T);
        });
      },
    );
    req.on('error', (e) => reject(new Error(`the service at ${info.url} (pid ${info.pid}) does not answer: ${e.message}`)));
    req.end(payload);
  });
}

// ---- output ---------------------------------------------------------------------------------

/** Output formats of `csipose query`. */
export const QUERY_FORMATS = ['table', 'csv', 'json'] as const;
export type QueryFormat = (typeof QUERY_FORMATS)[number];

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL)/;

function text(v: JsonValue): string {
  if (v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function csvField(v: JsonValue): string {
  const s = text(v);
  return /[",\r\n]/.test(s) || (s !== '' && s.trim() !== s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Column names made unique (`a`, `a_2`, ...), for JSON objects. */
function uniqueNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.map((n) => {
    let name = n;
    for (let i = 2; seen.has(name); i++) name = `${n}_${i}`;
    seen.add(name);
    return name;
  });
}

/**
 * A query result as text.
 * @param r the result
 * @param format `table`, `csv` or `json`
 * @returns the text to print, ending in a newline
 */
export function formatResult(r: Pick<SqlResult, 'columns' | 'rows'>, format: QueryFormat): string {
  const names = r.columns.map((c) => c.name);
  if (format === 'json') {
    const keys = uniqueNames(names);
    if (r.rows.length === 0) return '[]\n';
    const lines = r.rows.map((row) => {
      const o: Record<string, JsonValue> = {};
      keys.forEach((k, i) => (o[k] = row[i] ?? null));
      return JSON.stringify(o);
    });
    return `[\n${lines.join(',\n')}\n]\n`;
  }
  if (format === 'csv') {
    return [names.map((n) => csvField(n)).join(','), ...r.rows.map((row) => row.map(csvField).join(','))].join('\n') + '\n';
  }
  const cells = r.rows.map((row) => row.map((v) => (v === null ? 'NULL' : text(v).replace(/\r?\n/g, '\\n'))));
  const widths = names.map((n, c) => Math.max(n.length, ...cells.map((row) => row[c]!.length)));
  const right = r.columns.map((c) => NUMERIC.test(c.type));
  const line = (row: string[], header: boolean) =>
    row
      .map((s, c) => (right[c] && !header ? s.padStart(widths[c]!) : c === row.length - 1 ? s : s.padEnd(widths[c]!)))
      .join(' | ')
      .trimEnd();
  const out = [line(names, true), widths.map((w) => '-'.repeat(w)).join('-+-'), ...cells.map((row) => line(row, false))];
  out.push(`(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`);
  return out.join('\n') + '\n';
}

/** The answer of `POST /store/query` (Form A). */
interface ServiceQueryAnswer extends SqlResult {
  max_rows: number;
}

/**
 * Runs one query as `csipose query` does.
 * @param sql the SQL text
 * @param o data directory and output format
 * @param io streams
 * @returns the exit status
 */
export async function runQuery(sql: string, o: { dataDir: string; format: QueryFormat; lake?: string }, io: AnalystIo): Promise<number> {
  if (!sql.trim()) {
    io.stderr.write('csipose query: the SQL text is empty (usage: csipose query [--data-dir DIR | --lake DIR] [--format table|csv|json] "SQL")\n');
    return 2;
  }
  if (o.lake !== undefined) return runLakeQuery(sql, o.lake, o.format, io);
  try {
    // The user's own process: it may read whatever they can, so every local folder is allowed
    // (DuckDB still reaches no URL with external access off).
    const access = await openStore(o.dataDir, [parse(resolve(o.dataDir)).root]);
    let result: SqlResult;
    let cap: number | undefined;
    if ('store' in access) {
      try {
        result = await access.store.sql(sql);
      } finally {
        await access.store.close();
      }
    } else {
      const a = await callService<ServiceQueryAnswer>(access.service, '/store/query', { sql });
      result = a;
      cap = a.max_rows;
    }
    io.stdout.write(formatResult(result, o.format));
    if (result.truncated) {
      io.stderr.write(`csipose query: the result was cut at ${cap ?? result.row_count} rows (storage.query_max_rows of the running service)\n`);
    }
    return 0;
  } catch (e) {
    io.stderr.write(`csipose query: ${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  }
}

/** `csipose query --lake DIR`: the query over a lake's files (see the module comment). */
async function runLakeQuery(sql: string, dir: string, format: QueryFormat, io: AnalystIo): Promise<number> {
  if (!dir.trim()) {
    io.stderr.write('csipose query: --lake needs a folder\n');
    return 2;
  }
  const root = resolve(dir);
  if (!existsSync(root)) {
    io.stderr.write(`csipose query: no lake at ${root}\n`);
    return 1;
  }
  if (lakeLayout(root) === 'empty') io.stderr.write(`csipose query: ${root} holds no lake partitions yet: every table reads as empty\n`);
  try {
    // The user's own process, as with --data-dir: any local file is theirs to read.
    const lake = await LakeRoot.open(root, { allowedDirectories: [parse(root).root] });
    try {
      io.stdout.write(formatResult(await lake.store.sql(sql), format));
    } finally {
      await lake.close();
    }
    return 0;
  } catch (e) {
    io.stderr.write(`csipose query: ${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  }
}

/**
 * The `query` command, to register with `program.addCommand(queryCommand())`.
 * @param io streams, env and exit status (default: the process's)
 */
export function queryCommand(io: AnalystIo = processIo()): Command {
  return new Command('query')
    .description('read-only SQL over the store of DATA_DIR (through the running service when it holds the file), or over a lake with --lake')
    .argument('<sql>', 'one read statement, e.g. "SELECT environment_id, count(*) FROM pose_frames GROUP BY ALL"')
    .addOption(dataDirOption(io))
    .addOption(
      new Option('--lake <dir>', "instead of a store: a cluster's shared lake root (every store node's committed partitions) or one process's parquet_dir").env(
        'CSIPOSE_LAKE',
      ),
    )
    .addOption(new Option('--format <format>', 'output: table | csv | json').choices(QUERY_FORMATS).default('table'))
    .exitOverride(usageExit)
    .action(async (sql: string, o: { dataDir: string; format: QueryFormat; lake?: string }) => {
      io.setExitCode(await runQuery(sql, o, io));
    });
}
