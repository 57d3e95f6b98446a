import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TIME_TABLES, type TimeTable } from './schema.js';
import { partitionValue } from './lake.js';
import { Store, type StoreOptions } from './store.js';

/**
 * A cluster's shared lake root (`csipose serve --lake DIR`) read as one store: the files every
 * store node's manifest lists, as views named after the store's tables, so the history and
 * analytics reads (history.ts, analytics/) and `csipose query --lake DIR` run on it unchanged. The
 * layout is lake.ts's (module comment); in short:
 *
 *     <root>/store=<node>/<table>/environment_id=<env>/date=<YYYY-MM-DD>/hour=<HH>.c<commit>.parquet
 *     <root>/store=<node>/system_metrics/date=<YYYY-MM-DD>/hour=<HH>.c<commit>.parquet
 *     <root>/store=<node>/committed.json   the node's manifest: its files, and per environment how far it committed
 *
 * A node writes a file once and lists it in its manifest (nodeLake.ts); readers read only listed
 * files, so a file never changes under a reader, and what a commit cut short wrote is not read.
 * DuckDB reads a file that is replaced under it inconsistently (the layout of one version, the
 * bytes of the other), which is why nothing is replaced in place. A root laid out as one node's
 * lake (`<root>/<table>/...`, the `storage.parquet_dir` of a single process, whose closed hours
 * are written once) is read by its files as they are.
 *
 * Views (each table's columns as the store has them, plus `store`, the node, in the cluster
 * layout): `pose_frames`, `pose_persons`, `activity_events`, `alerts`, `system_metrics`,
 * `tracks`, and `lake_commits` (store, environment_id, up_to: the manifests' marks). They are made
 * again from the manifests by {@link LakeRoot.refresh} (on a timer for a serving node): a reader
 * sees a commit from its next refresh on. A table with no file reads as empty.
 */

/** A node's manifest, in its folder. */
export const MANIFEST_FILE = 'committed.json';

/** What a node's manifest holds. */
export interface Manifest {
  node: string;
  /** The commit that wrote it (files of later commits are not the node's yet). */
  commit: number;
  committed_at: string;
  /** Per environment, the time (ISO 8601) of the last frame committed. */
  marks: Array<{ environment_id: string; up_to: string }>;
  /** The node's files, relative to its folder. */
  files: string[];
}

/** A node's folder under the root. */
export function nodeFolder(root: string, node: string): string {
  return join(root, `store=${partitionValue(node)}`);
}

/**
 * Reads a node's manifest.
 * @param dir the node's folder
 * @returns the manifest, or undefined when the node has none yet
 * @throws Error for a file that is not a manifest
 */
export function readManifest(dir: string): Manifest | undefined {
  const file = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  let m: Partial<Manifest>;
  try {
    m = JSON.parse(text) as Partial<Manifest>;
  } catch (e) {
    throw new Error(`${file} is not a manifest: ${(e as Error).message}`);
  }
  const ok =
    typeof m === 'object' &&
    m !== null &&
    Number.isSafeInteger(m.commit) &&
    Array.isArray(m.marks) &&
    m.marks.every((k) => typeof k?.environment_id === 'string' && typeof k?.up_to === 'string' && Number.isFinite(Date.parse(k.up_to))) &&
    Array.isArray(m.files) &&
    m.files.every((f) => typeof f === 'string' && !f.split('/').includes('..') && !f.startsWith('/'));
  if (!ok) throw new Error(`${file} is not a manifest (commit, marks and files expected)`);
  return m as Manifest;
}

/** The node of a folder `store=<node>`, as the `store` column of the files gives it (DuckDB unescapes %XX). */
function nodeOf(folder: string): string {
  const v = folder.slice('store='.length);
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** How a root is laid out: nodes' folders (a cluster), one node's lake, or nothing yet. */
export type LakeLayout = 'nodes' | 'single' | 'empty';

/** Tables with an `environment_id`. */
const ENV_TABLES: readonly TimeTable[] = TIME_TABLES.filter((t) => t !== 'system_metrics');

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;
/** A path for DuckDB's file list, its glob characters escaped. */
const literalPath = (p: string): string => p.replace(/[[\]*?{}\\]/g, (c) => `[${c}]`);

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
  /** Read the manifests again this often, ms (0: only when asked). Default 0. */
  refreshMs?: number;
  /** Make the root when it is missing (a node that starts before any store node wrote). Default false. */
  create?: boolean;
  /** Receives a node's manifest that cannot be read (that node is left out until it can). */
  onError?: (e: Error) => void;
}

/** A lake root opened for reading; `store` is what history, analytics and ad-hoc SQL read. */
export class LakeRoot {
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  /** Per view, the SQL it was last made with (unchanged: not made again). */
  private readonly made = new Map<string, string>();
  /** Node folders whose manifest cannot be read, and why. */
  private readonly broken = new Map<string, string>();

  private constructor(
    /** The root, absolute. */
    readonly root: string,
    /** An in-memory store whose tables are views over the root's files. */
    readonly store: Store,
    private readonly o: LakeRootOptions,
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
    const lake = new LakeRoot(abs, store, o);
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
      lake.timer = setInterval(() => void lake.refresh().catch((e: unknown) => o.onError?.(e as Error)), o.refreshMs);
      lake.timer.unref();
    }
    return lake;
  }

  /** How the root is laid out now. */
  layout(): LakeLayout {
    return lakeLayout(this.root);
  }

  /** Makes each table's view again from what the root holds now (one refresh at a time). */
  refresh(): Promise<void> {
    this.refreshing ??= this.remake().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** Every node's manifest, by node folder name (`store=<node>`); unreadable ones are reported and left out. */
  private readManifests(): Map<string, Manifest> {
    const out = new Map<string, Manifest>();
    let names: string[];
    try {
      names = readdirSync(this.root);
    } catch {
      return out;
    }
    for (const name of names.filter((n) => n.startsWith('store=')).sort()) {
      try {
        const m = readManifest(join(this.root, name));
        if (m) out.set(name, m);
        this.broken.delete(name);
      } catch (e) {
        // Said once per new failure, not at every refresh.
        if (this.broken.get(name) !== (e as Error).message) this.o.onError?.(e as Error);
        this.broken.set(name, (e as Error).message);
      }
    }
    return out;
  }

  private async remake(): Promise<void> {
    const layout = this.layout();
    const root = literalPath(this.root);
    const hive = (env: boolean) =>
      `hive_partitioning = true, hive_types = {${[...(layout === 'nodes' ? [`'store': VARCHAR`] : []), ...(env ? [`'environment_id': VARCHAR`] : []), `'date': DATE`].join(', ')}}`;
    const views = new Map<string, string>();
    const manifests = layout === 'nodes' ? this.readManifests() : new Map<string, Manifest>();
    const marks = [...manifests].flatMap(([folder, m]) =>
      m.marks.map((k) => `(${sqlString(nodeOf(folder))}, ${sqlString(k.environment_id)}, TIMESTAMP ${sqlString(k.up_to)})`),
    );
    views.set(
      'lake_commits',
      marks.length > 0
        ? `SELECT * FROM (VALUES ${marks.join(', ')}) AS m(store, environment_id, up_to)`
        : `SELECT NULL::VARCHAR AS store, NULL::VARCHAR AS environment_id, NULL::TIMESTAMP AS up_to WHERE false`,
    );
    for (const t of TIME_TABLES) {
      const env = ENV_TABLES.includes(t);
      let source: string | undefined;
      if (layout === 'nodes') {
        const files = [...manifests].flatMap(([folder, m]) => m.files.filter((f) => f.startsWith(`${t}/`)).map((f) => `${root}/${folder}/${literalPath(f)}`));
        if (files.length > 0) source = `read_parquet([${files.map(sqlString).join(', ')}], ${hive(env)})`;
      } else if (layout === 'single') {
        const pattern = `${root}/${t}/${env ? '*/*/*.parquet' : '*/*.parquet'}`;
        if (await this.matches(pattern)) source = `read_parquet(${sqlString(pattern)}, ${hive(env)})`;
      }
      views.set(t, `SELECT * FROM _schema_${t}${source ? ` UNION ALL BY NAME SELECT f.* EXCLUDE (date) FROM ${source} f` : ''}`);
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
   * whole; -Infinity when none), by the manifests read now: a store node taking the room over
   * skips what is stored already.
   */
  committedUpTo(env: string): number {
    // Read now, not by the last refresh: a node that just took a room over must see the manifest
    // its last holder wrote before its lease ran out.
    let upTo = -Infinity;
    for (const m of this.readManifests().values()) for (const k of m.marks) if (k.environment_id === env) upTo = Math.max(upTo, Date.parse(k.up_to));
    return upTo;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.refreshing?.catch(() => undefined);
    await this.store.close();
  }
}
