import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TIME_TABLES, type TimeTable } from './schema.js';
import { partitionValue } from './lake.js';
import { Store, type StoreOptions } from './store.js';

/**
 * A cluster's shared lake root (`csipose serve --lake DIR`) read as one store: every store node's
 * Parquet partitions, up to what each committed, as views named after the store's tables, so the
 * history and analytics reads (history.ts, analytics/) and `csipose query --lake DIR` run on it
 * unchanged. The layout is lake.ts's (module comment); in short:
 *
 *     <root>/store=<node>/<table>/environment_id=<env>/date=<YYYY-MM-DD>/hour=<HH>.parquet
 *     <root>/store=<node>/system_metrics/date=<YYYY-MM-DD>/hour=<HH>.parquet
 *     <root>/store=<node>/committed.json    one line per environment: {"environment_id", "up_to"}
 *
 * A row of a node counts when its time is at or before the node's `up_to` for its environment
 * (rows after it are not committed: another node may hold them). `system_metrics` are each node's
 * own and count whole. A root laid out as one node's lake (`<root>/<table>/...`, the
 * `storage.parquet_dir` of a single process) is read as that, every row counting.
 *
 * Views (each table's columns as the store has them, plus `store`, the node, in the cluster
 * layout): `pose_frames`, `pose_persons`, `activity_events`, `alerts`, `system_metrics`,
 * `tracks`, and `lake_commits` (store, environment_id, up_to). Nothing is copied: each query reads
 * the files as they are then (files are replaced whole, by rename, so a reader never sees half of
 * one). A table with no file yet reads as empty; which tables have files is looked at again by
 * {@link LakeRoot.refresh}.
 */

/** The file of a node's commit marks, in its folder. */
export const COMMITTED_FILE = 'committed.json';

/** A node's folder under the root. */
export function nodeFolder(root: string, node: string): string {
  return join(root, `store=${partitionValue(node)}`);
}

/** How a root is laid out: nodes' folders (a cluster), one node's lake, or nothing yet. */
export type LakeLayout = 'nodes' | 'single' | 'empty';

/** Tables with an `environment_id` (filtered by the commit marks). */
const ENV_TABLES: readonly TimeTable[] = TIME_TABLES.filter((t) => t !== 'system_metrics');

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;
/** A glob pattern for a literal path: DuckDB's glob characters escaped. */
const globPath = (p: string): string => p.replace(/[[\]*?{}\\]/g, (c) => `[${c}]`);

/**
 * How a folder is laid out.
 * @param root the folder
 */
export function lakeLayout(root: string): LakeLayout {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return 'empty';
  }
  if (names.some((n) => n.startsWith('store='))) return 'nodes';
  if (names.some((n) => (TIME_TABLES as readonly string[]).includes(n))) return 'single';
  return 'empty';
}

/** What {@link LakeRoot.open} takes. */
export interface LakeRootOptions {
  /** Folders ad-hoc SQL may read besides the root (`csipose query` allows every local file). */
  allowedDirectories?: readonly string[];
  /** DuckDB threads (default DuckDB's own). */
  threads?: number;
  /** Look again at which tables have files this often, ms (0: only when asked). Default 0. */
  refreshMs?: number;
  /** Make the root when it is missing (a node that starts before any store node wrote). Default false. */
  create?: boolean;
}

/** A lake root opened for reading; `store` is what history, analytics and ad-hoc SQL read. */
export class LakeRoot {
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  /** Per view, the SQL it was last made with (unchanged: not made again). */
  private readonly made = new Map<string, string>();

  private constructor(
    /** The root, absolute. */
    readonly root: string,
    /** An in-memory store whose tables are views over the root's files. */
    readonly store: Store,
  ) {}

  /**
   * Opens a root for reading (it need not exist yet: its tables then read as empty).
   * @param root the lake root
   * @param o more readable folders, threads, refresh period
   * @returns the reader; `close()` it
   */
  static async open(root: string, o: LakeRootOptions = {}): Promise<LakeRoot> {
    const abs = resolve(root);
    if (o.create) mkdirSync(abs, { recursive: true, mode: 0o700 });
    const allowed = [...(existsSync(abs) ? [abs] : []), ...(o.allowedDirectories ?? [])];
    const options: StoreOptions = { relativeTo: abs, ...(o.threads !== undefined ? { threads: o.threads } : {}) };
    // With no folder to allow (a root not made yet), no file access at all: the views read nothing.
    const store = await Store.open(':memory:', allowed.length > 0 ? { ...options, allowedDirectories: allowed } : options);
    const lake = new LakeRoot(abs, store);
    try {
      // The store's own (empty) tables keep their names' schema for the views.
      await store.withWriter(async (conn) => {
        for (const t of TIME_TABLES) await conn.run(`ALTER TABLE ${t} RENAME TO _schema_${t}`);
      });
      await lake.refresh();
    } catch (e) {
      await store.close();
      throw e;
    }
    if (o.refreshMs && o.refreshMs > 0) {
      lake.timer = setInterval(() => void lake.refresh().catch(() => undefined), o.refreshMs);
      lake.timer.unref();
    }
    return lake;
  }

  /** How the root is laid out now. */
  layout(): LakeLayout {
    return lakeLayout(this.root);
  }

  /**
   * Makes each table's view again by what the root holds now: over its files when it has some,
   * empty when not (DuckDB refuses a pattern that matches no file).
   */
  refresh(): Promise<void> {
    this.refreshing ??= this.remake().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async remake(): Promise<void> {
    const layout = this.layout();
    const root = globPath(this.root);
    const hive = (env: boolean) =>
      `hive_partitioning = true, union_by_name = true, hive_types = {${[
        ...(layout === 'nodes' ? [`'store': VARCHAR`] : []),
        ...(env ? [`'environment_id': VARCHAR`] : []),
        `'date': DATE`,
      ].join(', ')}}`;
    const views = new Map<string, string>();
    const marks = `${root}/store=*/${COMMITTED_FILE}`;
    const hasMarks = layout === 'nodes' && (await this.matches(marks));
    views.set(
      'lake_commits',
      hasMarks
        ? `SELECT store, environment_id, up_to FROM read_json(${sqlString(marks)}, format = 'newline_delimited', ` +
            `columns = {environment_id: 'VARCHAR', up_to: 'TIMESTAMP'}, hive_partitioning = true, hive_types = {'store': VARCHAR})`
        : `SELECT NULL::VARCHAR AS store, NULL::VARCHAR AS environment_id, NULL::TIMESTAMP AS up_to WHERE false`,
    );
    for (const t of TIME_TABLES) {
      const env = ENV_TABLES.includes(t);
      const depth = env ? '*/*/*.parquet' : '*/*.parquet';
      const pattern = layout === 'nodes' ? `${root}/store=*/${t}/${depth}` : `${root}/${t}/${depth}`;
      let sql = `SELECT * FROM _schema_${t}`;
      if (layout !== 'empty' && (layout === 'single' || !env || hasMarks) && (await this.matches(pattern))) {
        const files = `read_parquet(${sqlString(pattern)}, ${hive(env)})`;
        sql +=
          layout === 'single'
            ? ` UNION ALL BY NAME SELECT f.* EXCLUDE (date) FROM ${files} f`
            : env
              ? ` UNION ALL BY NAME SELECT f.* EXCLUDE (date) FROM ${files} f JOIN lake_commits m ON m.store = f.store AND m.environment_id = f.environment_id AND f.ts <= m.up_to`
              : ` UNION ALL BY NAME SELECT f.* EXCLUDE (date) FROM ${files} f`;
      }
      views.set(t, sql);
    }
    const changed = [...views].filter(([name, sql]) => this.made.get(name) !== sql);
    if (changed.length === 0) return;
    await this.store.withWriter(async (conn) => {
      for (const [name, sql] of changed) {
        await conn.run(`CREATE OR REPLACE VIEW ${name} AS ${sql}`);
        this.made.set(name, sql);
      }
    });
  }

  /** Whether a glob pattern matches a file. */
  private async matches(pattern: string): Promise<boolean> {
    const [r] = await this.store.query<{ n: number }>(`SELECT count(*) AS n FROM (SELECT file FROM glob(?) LIMIT 1)`, [pattern]);
    return Number(r?.n ?? 0) > 0;
  }

  /**
   * The time of the last frame of an environment committed to the root by any node (epoch ms,
   * whole; -Infinity when none): a store node taking the room over skips what is stored already.
   */
  async committedUpTo(env: string): Promise<number> {
    await this.refresh();
    const [r] = await this.store.query<{ ms: number | bigint | null }>(`SELECT epoch_ms(max(ts)) AS ms FROM pose_frames WHERE environment_id = ?`, [env]);
    return r?.ms === null || r?.ms === undefined ? -Infinity : Number(r.ms);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.refreshing?.catch(() => undefined);
    await this.store.close();
  }
}
