import { rmSync } from 'node:fs';
import { ApiError } from '../../errors.js';
import type { Route } from '../core.js';
import { Checker } from '../validate.js';
import type { HasConfig, HasHistoryStore, HasStore } from '../../service/face.js';
import { QueryError, StoreError } from '../../store/store.js';
import { cleanExports, EXPORT_FORMATS, EXPORT_TABLES, exportStore, ExportUsageError, newExportDir } from '../../store/export.js';

/** What `/store/*` uses: the configuration (limits), the store, and the data folder (exports go under `<dataDir>/exports`). */
export type StoreRoutesFace = HasConfig & HasStore & Pick<HasHistoryStore, 'queryStore'> & { readonly dataDir: string };

/** Longest SQL text (the body limit is 64 KiB; the text must fit in it with its JSON around). */
const MAX_SQL = 60_000;
/** Most `max_rows` a caller may ask for; the configured `storage.query_max_rows` caps it further. */
const MAX_ROWS_LIMIT = 10_000_000;

/**
 * A store failure as an API error: a query's fault is 422 with DuckDB's message, never a 500.
 * A result past the byte cap is 422 too (`query_error` `too_large`, `max_bytes`), not 413: 413
 * says the request's own body is too large (RFC 9110), and here the request is fine; like a
 * timeout, it is the query that asks more than the service gives.
 * @param e the failure
 * @param maxBytes the byte cap the query ran with
 */
function apiError(e: unknown, maxBytes?: number): unknown {
  if (e instanceof QueryError) {
    return new ApiError('VALIDATION_ERROR', e.message, {
      field_errors: [{ field: 'sql', message: e.message }],
      query_error: e.kind,
      ...(e.kind === 'too_large' && maxBytes !== undefined ? { max_bytes: maxBytes } : {}),
    });
  }
  if (e instanceof ExportUsageError) return ApiError.fields([{ field: e.field, message: e.message }]);
  if (e instanceof StoreError && e.reason === 'closed') return new ApiError('SYSTEM_NOT_READY', 'the store is closed (the service is shutting down)');
  return e;
}

/**
 * The analysts' tools over HTTP (admin only; rate-limit category `analytics`): what `csipose
 * query` and `csipose export` use while the service holds the store's file.
 *
 * - `POST /store/query` `{sql, max_rows?}`: one read statement (SELECT, or EXPLAIN of one) in a
 *   read-only transaction on a connection of its own, interrupted after
 *   `storage.query_timeout_seconds`, cut at `max_rows` (at most `storage.query_max_rows`),
 *   refused (422, `too_large`) once its rows as JSON pass `storage.query_max_bytes`: the rows
 *   are written as JSON while DuckDB's chunks are read, so the answer is never built twice and
 *   a refused one never whole. DuckDB's external access is off: the query reads the store and
 *   the service's own export and lake folders (relative paths taken from the data directory),
 *   no other file and no address. Answers `{columns: [{name, type}], rows, row_count,
 *   truncated, execution_time_ms, max_rows, max_bytes}`, each row an array in column order. On
 *   an api node of a cluster started with `--lake`, the query reads the lake root's tables (every
 *   store node's committed partitions, with their column `store`), as `csipose query --lake` does.
 * - `POST /store/export` `{format: parquet|csv, from?, to?, tables?}`: one file per table in a
 *   new folder `<dataDir>/exports/<id>/`, rows with `from <= ts <= to`; answers the files.
 *   Folders older than an hour are removed at the next export.
 * @param svc the service's face
 */
export function storeRoutes(svc: StoreRoutesFace): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/store/query',
      category: 'analytics',
      role: 'admin',
      async handler(ctx) {
        if (ctx.body === undefined) throw ApiError.unparseable('POST /store/query needs a JSON body {"sql": "SELECT ..."}');
        const c = new Checker();
        const b = c.object(ctx.body, 'body', true);
        const sql = c.string(b?.sql, 'sql', MAX_SQL, true);
        const asked = c.int(b?.max_rows, 'max_rows', 1, MAX_ROWS_LIMIT);
        c.only(b, '', ['sql', 'max_rows']);
        c.done();
        const storage = svc.config.get().storage;
        const maxRows = Math.min(asked ?? storage.query_max_rows, storage.query_max_rows);
        const maxBytes = storage.query_max_bytes;
        let r;
        try {
          r = await (svc.queryStore ?? svc.store).sqlJson(sql!, { timeoutMs: storage.query_timeout_seconds * 1000, maxRows, maxBytes });
        } catch (e) {
          throw apiError(e, maxBytes);
        }
        // The rows are JSON already: spliced in, not parsed and written again.
        const json =
          `{"columns":${JSON.stringify(r.columns)},"rows":${r.rows_json},"row_count":${r.row_count},"truncated":${r.truncated},` +
          `"execution_time_ms":${r.execution_time_ms},"max_rows":${maxRows},"max_bytes":${maxBytes}}`;
        return { json };
      },
    },
    {
      method: 'POST',
      pattern: '/store/export',
      category: 'analytics',
      role: 'admin',
      async handler(ctx) {
        if (ctx.body === undefined) throw ApiError.unparseable('POST /store/export needs a JSON body {"format": "parquet"}');
        const c = new Checker();
        const b = c.object(ctx.body, 'body', true);
        const format = c.string(b?.format, 'format', 16, true, EXPORT_FORMATS) as 'parquet' | 'csv' | undefined;
        const from = c.time(b?.from, 'from');
        const to = c.time(b?.to, 'to');
        let tables: string[] | undefined;
        const t = b?.tables;
        if (t !== undefined) {
          if (!Array.isArray(t) || t.length > EXPORT_TABLES.length * 2 || t.some((x) => typeof x !== 'string' || x.length > 64)) {
            c.errors.push({ field: 'tables', message: `tables must be an array of table names (${EXPORT_TABLES.join(', ')})`, received_value: t as unknown });
          } else tables = t as string[];
        }
        c.only(b, '', ['format', 'from', 'to', 'tables']);
        c.done();
        cleanExports(svc.dataDir);
        const { id, dir } = newExportDir(svc.dataDir);
        try {
          const files = await exportStore(svc.store, dir, {
            format: format!,
            ...(from !== undefined ? { from } : {}),
            ...(to !== undefined ? { to } : {}),
            ...(tables ? { tables } : {}),
          });
          return {
            data: {
              export_id: id,
              format,
              from: from === undefined ? null : new Date(from).toISOString(),
              to: to === undefined ? null : new Date(to).toISOString(),
              directory: dir,
              files,
            },
          };
        } catch (e) {
          rmSync(dir, { recursive: true, force: true });
          throw apiError(e);
        }
      },
    },
  ];
}
