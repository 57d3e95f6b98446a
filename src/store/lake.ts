import { mkdirSync, readdirSync, renameSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { TIME_TABLES, type TimeTable } from './schema.js';
import type { Store } from './store.js';

/**
 * The Parquet lake: every closed hour of every time table, written once as a Parquet file under
 * `storage.parquet_dir`, so that DuckDB, pandas or Spark read history without touching the live
 * database file. Layout (Hive partitioning, which all three understand):
 *
 *     <dir>/<table>/environment_id=<env>/date=<YYYY-MM-DD>/hour=<HH>.parquet
 *     <dir>/system_metrics/date=<YYYY-MM-DD>/hour=<HH>.parquet
 *
 * Dates and hours are UTC, like `ts`. `environment_id` is in the path only, not in the file
 * (Spark refuses a column that is both); readers get it back from the path. `csipose query` (and
 * `POST /store/query`) reads it by a path relative to the data directory, from any working
 * directory: `read_parquet('<parquet_dir>/pose_frames/**\/*.parquet', hive_partitioning = true)`
 * (see sqlPaths.ts). An environment id
 * with characters other than letters, digits, `.`, `_`, `-` is %-escaped (Hive's way).
 *
 * An hour is closed when it ended more than `marginMs` ago (default 2 minutes, well past the
 * sink's 250 ms flush). Each pass looks for hours with rows that have no file yet and writes them
 * (to a hidden temporary name, then renamed, so readers never see half a file); it looks at rows
 * newer than the previous pass, and at whole tables once an hour. A written hour is never
 * rewritten: rows stored later for it (a late replay) stay in the database only. What is
 * written is known by scanning the folder at start. Hours older than the retention
 * (`privacy.data_retention_days`) are neither written nor kept.
 *
 * A cluster's shared lake (`csipose serve --role store|api --lake ROOT`; docs/scale.md "Store
 * nodes and one history") is one such layout per store node, under a folder of the node's own, so
 * two nodes never write the same file, with the commit that wrote each file in its name and a
 * manifest per node:
 *
 *     <root>/store=<node>/<table>/environment_id=<env>/date=<YYYY-MM-DD>/hour=<HH>.c<commit>.parquet
 *     <root>/store=<node>/system_metrics/date=<YYYY-MM-DD>/hour=<HH>.c<commit>.parquet
 *     <root>/store=<node>/committed.json   the manifest: the node's files now, and per environment
 *                                          the time of its last frame committed (its mark)
 *     <root>/store=<node>/owner.json       the data directory the folder belongs to
 *
 * A node's folder is written by nodeLake.ts, not by this class: at each commit an hour that gained
 * rows is written whole as a new file (never over an old one: DuckDB reads a file replaced under it
 * inconsistently), then the manifest lists it instead of the old one, which is deleted minutes
 * later. A room that moved between store nodes within an hour has a file of that hour in each
 * node's folder, holding each node's own rows. Readers read the files the manifests list
 * (`read_parquet([...], hive_partitioning = true)` gives the node as column `store`): lakeRoot.ts,
 * `csipose query --lake ROOT`.
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Tables the lake writes. */
export const LAKE_TABLES: readonly TimeTable[] = TIME_TABLES;

/** Options of a {@link Lake}. */
export interface LakeOptions {
  /** The lake's folder (absolute; among the store's allowed folders). */
  dir: string;
  /** An hour is closed this long after it ended. Default 120,000 ms. */
  marginMs?: number;
  /** Time between passes. Default 60,000 ms. */
  intervalMs?: number;
  /**
   * A pass looks only at rows newer than what the previous pass covered, except once per this
   * long, when it looks at the whole table again (rows stored late for an hour not written yet,
   * e.g. a replay of a recording). Default 3,600,000 ms.
   */
  rescanEveryMs?: number;
  /** Days of history kept (`privacy.data_retention_days`); read at each pass. Default: keep all. */
  retentionDays?: () => number | undefined;
  /** Clock, epoch ms (tests). */
  now?: () => number;
  /** Receives each failed pass. */
  onError?: (e: Error) => void;
}

/** What one pass did. */
export interface LakePass {
  /** Files written, relative to the lake's folder. */
  written: string[];
  rows: number;
  /** Files removed by retention. */
  removed: number;
}

/** The lake's state, for `svc.report('lake', ...)`. */
export interface LakeReport {
  status: 'healthy' | 'error' | 'stopped';
  dir: string;
  /** Hour files in the lake (found at start plus written since). */
  hours_written: number;
  /** Hour files written by this process. */
  files_written: number;
  rows_written: number;
  /** ISO 8601 of the last pass, null before the first. */
  last_run_at: string | null;
  /** ISO 8601 of the start of the newest hour written by this process. */
  last_hour: string | null;
  last_error: string | null;
}

/** Hive-style escape of a partition value: anything but `[A-Za-z0-9._-]` as %XX. */
export function partitionValue(v: string): string {
  if (v === '.' || v === '..') return v.replace(/\./g, '%2E');
  let out = '';
  for (const b of Buffer.from(v, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9._-]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * The file of one hour, relative to the lake's folder.
 * @param table the table
 * @param env the environment (undefined for `system_metrics`)
 * @param hourStart epoch ms of the hour's start (UTC)
 * @example partitionFile('pose_frames', 'lab', Date.UTC(2026, 0, 1, 9)) // 'pose_frames/environment_id=lab/date=2026-01-01/hour=09.parquet'
 */
export function partitionFile(table: TimeTable, env: string | undefined, hourStart: number): string {
  const iso = new Date(hourStart).toISOString();
  const parts: string[] = [table];
  if (env !== undefined) parts.push(`environment_id=${partitionValue(env)}`);
  parts.push(`date=${iso.slice(0, 10)}`, `hour=${iso.slice(11, 13)}.parquet`);
  return parts.join('/');
}

const FILE_SHAPE = /^(?:[^/]+\/)(?:environment_id=[^/]+\/)?date=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\.parquet$/;

/** Start (epoch ms) of the hour a lake file holds, or undefined for a path of another shape. */
export function hourOf(rel: string): number | undefined {
  const m = FILE_SHAPE.exec(rel);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}:00:00Z`);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * Writes closed hours of the store's time tables to Parquet, once each.
 *
 * @example
 * const lake = new Lake(store, { dir: '/data/lake', retentionDays: () => 30 });
 * lake.start();
 * // ...
 * await lake.close(); // before store.close()
 */
export class Lake {
  private readonly dir: string;
  private readonly marginMs: number;
  private readonly intervalMs: number;
  private readonly now: () => number;
  /** Relative paths of the hour files in the lake. */
  private readonly written = new Set<string>();
  /** Rows before this time were looked at by an earlier successful pass. */
  private lowWater: number | undefined;
  /** Clock time of the last pass that looked at whole tables. */
  private lastFullScan = -Infinity;
  private readonly rescanEveryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<LakePass> | undefined;
  private stopped = false;
  private readonly stats = { files: 0, rows: 0, lastRun: null as number | null, lastHour: null as number | null, lastError: null as string | null };

  /**
   * @param store the open store; `options.dir` must be among its allowed folders
   * @param options folder, margin, interval, retention, clock, error callback
   */
  constructor(
    private readonly store: Store,
    private readonly options: LakeOptions,
  ) {
    this.dir = options.dir;
    this.marginMs = Math.max(0, options.marginMs ?? 120_000);
    this.intervalMs = Math.max(1000, options.intervalMs ?? 60_000);
    this.now = options.now ?? Date.now;
    this.rescanEveryMs = Math.max(0, options.rescanEveryMs ?? 3_600_000);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.scan();
  }

  /** Hour files in the lake, relative to its folder, sorted. */
  files(): string[] {
    return [...this.written].sort();
  }

  /** Finds the hour files already in the folder (and removes temporaries a crash left behind). */
  private scan(): void {
    for (const rel of scanHourFiles(this.dir)) this.written.add(rel);
  }

  /** Runs a pass now and then one every `intervalMs` until `close`. */
  start(): void {
    if (this.stopped || this.timer) return;
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /**
   * One pass: writes every closed hour with rows that has no file yet, and removes files older
   * than the retention. Never rejects: a failure is recorded (`report().last_error`), passed to
   * `onError` and retried at the next pass. A pass asked for while one runs returns that one.
   * @returns what it wrote
   */
  runOnce(): Promise<LakePass> {
    if (this.running) return this.running;
    const p = this.pass().finally(() => {
      this.running = undefined;
    });
    this.running = p;
    return p;
  }

  private async pass(): Promise<LakePass> {
    const out: LakePass = { written: [], rows: 0, removed: 0 };
    if (this.stopped || this.store.closed) return out;
    const now = this.now();
    const hi = Math.floor((now - this.marginMs) / HOUR_MS) * HOUR_MS;
    const days = this.options.retentionDays?.();
    const keepFrom = days !== undefined && Number.isFinite(days) ? Math.ceil((now - days * DAY_MS) / HOUR_MS) * HOUR_MS : undefined;
    try {
      out.removed = this.prune(keepFrom);
      const full = now - this.lastFullScan >= this.rescanEveryMs;
      const lo = Math.max((full ? undefined : this.lowWater) ?? -Infinity, keepFrom ?? -Infinity);
      for (const table of LAKE_TABLES) {
        if (this.stopped) return out;
        const hasEnv = table !== 'system_metrics';
        // Numbers of ours in the text: the ad-hoc path takes no parameters.
        const range = `${Number.isFinite(lo) ? `ts >= make_timestamp(${lo * 1000}::BIGINT) AND ` : ''}ts < make_timestamp(${hi * 1000}::BIGINT)`;
        const found = await this.store.sql(
          `SELECT ${hasEnv ? 'environment_id' : 'NULL::VARCHAR'} AS env, epoch_ms(date_trunc('hour', ts)) AS h
           FROM ${table} WHERE ${range} GROUP BY ALL ORDER BY h, env`,
        );
        for (const [env, h] of found.rows as [string | null, number][]) {
          if (this.stopped) return out;
          const rel = partitionFile(table, hasEnv ? (env ?? '') : undefined, h);
          if (this.written.has(rel)) continue;
          const file = join(this.dir, ...rel.split('/'));
          const tmp = join(dirname(file), `.${rel.split('/').at(-1)}.tmp`);
          mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
          const select = hasEnv
            ? `SELECT * EXCLUDE (environment_id) FROM ${table} WHERE environment_id = ? AND ts >= ? AND ts < ? ORDER BY ts`
            : `SELECT * FROM ${table} WHERE ts >= ? AND ts < ? ORDER BY ts`;
          const params = hasEnv ? [env, new Date(h), new Date(h + HOUR_MS)] : [new Date(h), new Date(h + HOUR_MS)];
          const rows = await this.store.copyTo(select, params, tmp, 'parquet');
          renameSync(tmp, file);
          this.written.add(rel);
          out.written.push(rel);
          out.rows += rows;
          this.stats.files++;
          this.stats.rows += rows;
          this.stats.lastHour = Math.max(this.stats.lastHour ?? -Infinity, h);
        }
      }
      this.lowWater = hi;
      if (full) this.lastFullScan = now;
      this.stats.lastError = null;
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      // A store closed under a pass at shutdown is not a failure of the lake.
      if (!this.stopped && !this.store.closed) {
        this.stats.lastError = err.message;
        try {
          this.options.onError?.(err);
        } catch {
          // A throwing callback must not stop the lake.
        }
      }
    } finally {
      this.stats.lastRun = now;
    }
    return out;
  }

  /** Removes hour files that ended before `keepFrom` (and folders left empty). */
  private prune(keepFrom: number | undefined): number {
    return pruneHourFiles(this.dir, this.written, keepFrom);
  }

  /** The lake's state. */
  report(): LakeReport {
    return {
      status: this.stopped ? 'stopped' : this.stats.lastError ? 'error' : 'healthy',
      dir: this.dir,
      hours_written: this.written.size,
      files_written: this.stats.files,
      rows_written: this.stats.rows,
      last_run_at: this.stats.lastRun === null ? null : new Date(this.stats.lastRun).toISOString(),
      last_hour: this.stats.lastHour === null ? null : new Date(this.stats.lastHour).toISOString(),
      last_error: this.stats.lastError,
    };
  }

  /** Stops the passes and waits for a running one (call before closing the store). */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }
}

/**
 * The hour files in a lake folder, relative to it (temporaries a crash left behind are removed).
 * @param dir the folder of one node's lake
 */
export function scanHourFiles(dir: string): Set<string> {
  const found = new Set<string>();
  const walk = (rel: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory() && depth < 3) walk(r, depth + 1);
      else if (e.isFile() && e.name.startsWith('.') && e.name.endsWith('.tmp')) {
        try {
          unlinkSync(join(dir, r));
        } catch {
          // Not ours, or gone.
        }
      } else if (e.isFile() && hourOf(r) !== undefined && (LAKE_TABLES as readonly string[]).includes(r.split('/')[0]!)) found.add(r);
    }
  };
  walk('', 0);
  return found;
}

/**
 * Removes hour files that ended before `keepFrom` (and the date and environment folders left
 * empty; never a table's or the lake's own folder).
 * @param dir the folder of one node's lake
 * @param written its hour files, relative; those removed are taken out
 * @param keepFrom epoch ms; undefined keeps everything
 * @returns files removed
 */
export function pruneHourFiles(dir: string, written: Set<string>, keepFrom: number | undefined): number {
  if (keepFrom === undefined) return 0;
  let removed = 0;
  for (const rel of [...written]) {
    const h = hourOf(rel);
    if (h === undefined || h >= keepFrom) continue;
    const file = join(dir, ...rel.split('/'));
    try {
      unlinkSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    written.delete(rel);
    removed++;
    let d = dirname(file);
    for (let i = 0; i < 2 && d.startsWith(dir + sep) && d.split(sep).at(-1)!.includes('='); i++) {
      try {
        if (readdirSync(d).length > 0 || !statSync(d).isDirectory()) break;
        rmdirSync(d);
      } catch {
        break;
      }
      d = dirname(d);
    }
  }
  return removed;
}
