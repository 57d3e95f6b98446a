import { Command, InvalidArgumentError, Option } from 'commander';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CopyFormat } from '../store/store.js';
import {
  EXPORT_FORMATS,
  EXPORT_ID,
  EXPORT_TABLES,
  exportsDir,
  exportStore,
  exportTables,
  ExportUsageError,
  moveFile,
  type ExportedFile,
} from '../store/export.js';
import { callService, dataDirOption, openStore, processIo, usageExit, type AnalystIo } from './query.js';

/**
 * `csipose export` (DECISIONS "Command line for analysts"): one file per time table under
 * `--out`, Parquet or CSV, rows with `--from <= ts <= --to`. `--out` defaults to the store's
 * export folder, `<dataDir>/exports`: the one folder (with the lake) that queries through the
 * running service may read, as `read_parquet('exports/pose_frames.parquet')`. Files written
 * elsewhere are read by `csipose query` only while the service is stopped.
 *
 * Like `csipose query`, it reads the database file itself (read-only, DuckDB's external access off
 * except for the `--out` folder) when no other process holds it; otherwise it asks the running
 * service (`POST /api/v1/store/export`, found through `<dataDir>/service.json`), which writes the
 * files into `<dataDir>/exports/<id>/`, and moves them to `--out` (same machine: the command has
 * the data directory). Files already in `--out` with the same names are replaced. Prints one line
 * per file: path, rows, bytes. Exit status 0 on success, 1 for a query or I/O error, 2 for bad
 * usage (an unknown table, a time that is not ISO 8601, a range that ends before it starts).
 */

/** A `--from` / `--to` value: an ISO 8601 time, as epoch ms. */
function isoTime(v: string): number {
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v.trim()) || !Number.isFinite(t)) throw new InvalidArgumentError('must be an ISO 8601 time, e.g. 2026-01-01T00:00:00Z');
  return t;
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** The answer of `POST /store/export` (Form A). */
interface ServiceExportAnswer {
  export_id: string;
  files: ExportedFile[];
}

interface ExportFlags {
  dataDir: string;
  format: CopyFormat;
  from?: number;
  to?: number;
  table: string[];
  /** Default: the store's export folder, `<dataDir>/exports`. */
  out?: string;
}

/**
 * Runs one export as `csipose export` does.
 * @param o flags
 * @param io streams
 * @returns the exit status
 */
export async function runExport(o: ExportFlags, io: AnalystIo): Promise<number> {
  let tables;
  try {
    tables = exportTables(o.table);
    if (o.from !== undefined && o.to !== undefined && o.from > o.to) throw new ExportUsageError('to', '--to is before --from');
  } catch (e) {
    io.stderr.write(`csipose export: ${(e as Error).message}\n`);
    return 2;
  }
  const out = resolve(o.out ?? exportsDir(o.dataDir));
  const req = {
    format: o.format,
    tables,
    ...(o.from !== undefined ? { from: o.from } : {}),
    ...(o.to !== undefined ? { to: o.to } : {}),
  };
  try {
    mkdirSync(out, { recursive: true });
    const access = await openStore(o.dataDir, [out]);
    let files: ExportedFile[];
    if ('store' in access) {
      try {
        files = await exportStore(access.store, out, req);
      } finally {
        await access.store.close();
      }
    } else {
      const a = await callService<ServiceExportAnswer>(access.service, '/store/export', {
        format: req.format,
        tables: req.tables,
        ...(req.from !== undefined ? { from: new Date(req.from).toISOString() } : {}),
        ...(req.to !== undefined ? { to: new Date(req.to).toISOString() } : {}),
      });
      if (!EXPORT_ID.test(a.export_id)) throw new Error(`the service answered an export id of an unexpected shape: ${a.export_id}`);
      // The service's folder, seen from here: our own data dir, not the path it answered.
      const src = join(exportsDir(o.dataDir), a.export_id);
      files = [];
      try {
        for (const f of a.files) {
          if (!(EXPORT_TABLES as readonly string[]).includes(f.table) || f.file !== `${f.table}.${req.format}`) {
            throw new Error(`the service answered a file of an unexpected name: ${f.file}`);
          }
          const target = join(out, f.file);
          moveFile(join(src, f.file), target);
          files.push({ ...f, path: target });
        }
      } finally {
        rmSync(src, { recursive: true, force: true });
      }
    }
    for (const f of files) io.stdout.write(`${f.path}\t${f.rows} rows\t${f.bytes} bytes\n`);
    return 0;
  } catch (e) {
    io.stderr.write(`csipose export: ${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  }
}

/**
 * The `export` command, to register with `program.addCommand(exportCommand())`.
 * @param io streams, env and exit status (default: the process's)
 */
export function exportCommand(io: AnalystIo = processIo()): Command {
  return new Command('export')
    .description("write the store's time tables to Parquet or CSV files, one per table, through the running service when it holds the file")
    .addOption(dataDirOption(io))
    .addOption(new Option('--format <format>', 'parquet | csv').choices(EXPORT_FORMATS).makeOptionMandatory())
    .addOption(new Option('--from <time>', 'first time, ISO 8601 (inclusive)').argParser(isoTime))
    .addOption(new Option('--to <time>', 'last time, ISO 8601 (inclusive)').argParser(isoTime))
    .addOption(
      new Option('--table <name>', `a table (repeatable, or comma-separated): ${EXPORT_TABLES.join(', ')}; default all`).argParser(collect).default([]),
    )
    .addOption(
      new Option(
        '--out <dir>',
        "folder for the files (created when missing); default DATA_DIR/exports, the store's export folder, which queries through the running service can read",
      ),
    )
    .exitOverride(usageExit)
    .action(async (o: ExportFlags) => {
      io.setExitCode(await runExport(o, io));
    });
}
