import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { partitionFile, pruneHourFiles, scanHourFiles } from './lake.js';
import { COMMITTED_FILE, nodeFolder } from './lakeRoot.js';
import { TIME_TABLES, type TimeTable } from './schema.js';
import type { Store } from './store.js';

/**
 * A store node's part of a cluster's shared lake (`csipose serve --role store --lake DIR`): its
 * rows written under `<root>/store=<node>/` in lake.ts's layout, committed by a mark per
 * environment that readers honour (lakeRoot.ts). The store node commits every
 * `cluster.lake_commit_seconds` and acknowledges the stream's frames only once committed
 * (src/cluster/storeCommit.ts), so:
 *
 * - **Every hour is written as it fills.** A commit rewrites each hour file that gained rows
 *   since the last commit (whole, to a temporary name then renamed, so a reader never sees half of
 *   one), the open hour included: every node's rows are readable within one commit interval.
 * - **A cut per environment.** A commit takes, per environment, the time of the last frame stored
 *   (a batch of the sink lands whole: a frame with its persons, events and alerts) and writes rows
 *   up to it in every table; then it writes the marks (`committed.json`, renamed into place) with
 *   those times. A row after its environment's mark (a commit cut short by a crash) does not count
 *   for readers.
 * - **Fenced by the lease.** An environment's rows are committed only while the node's lease on it
 *   holds (by the local clock, with a margin), checked before the files and again before the marks.
 *   Rows of an environment not held beyond its mark were never acknowledged: they are deleted from
 *   the store (its next holder stores them from the stream) and their hours written again.
 * - **At start** the marks are read back and the store's rows after them deleted in the same way.
 *   A node's first start with a shared lake adopts what its store holds as committed.
 * - **One owner.** The node's folder belongs to the data directory that first wrote it
 *   (`owner.json` holds that directory's lake id, `<dataDir>/lake-id`): a node started with another
 *   node's name but its own data directory is refused, before it touches the folder.
 * - Hour files older than the retention (`privacy.data_retention_days`) are removed.
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Tables with an `environment_id` (cut per environment). */
const ENV_TABLES: readonly TimeTable[] = TIME_TABLES.filter((t) => t !== 'system_metrics');

/** Options of a {@link NodeLake}. */
export interface NodeLakeOptions {
  /** The shared lake root (absolute; its node folder among the store's allowed folders). */
  root: string;
  /** The store node's name. */
  node: string;
  /** The data directory's lake id ({@link dataDirLakeId}): the folder's owner. */
  owner: string;
  /** Days of history kept (`privacy.data_retention_days`); read at each commit. Default: keep all. */
  retentionDays?: () => number | undefined;
  /** Clock, epoch ms (retention). */
  now?: () => number;
}

/** What one commit did. */
export interface NodeLakeCommit {
  /** Per environment, the time of the last frame committed (epoch ms). */
  upTo: Map<string, number>;
  /** Environments whose every stored row is committed now. */
  committed: Set<string>;
  /** Files written, relative to the node's folder. */
  written: string[];
  /** Rows deleted from the store (environments not held). */
  trimmed: number;
}

/** The node lake's state, for `svc.report('lake', ...)`. */
export interface NodeLakeReport {
  status: 'healthy' | 'error';
  dir: string;
  hours_written: number;
  commits: number;
  files_written: number;
  rows_trimmed: number;
  /** ISO 8601 of the last commit, null before the first. */
  last_commit_at: string | null;
  last_commit_ms: number | null;
  last_error: string | null;
}

/** A file to write: its table, environment (none for metrics), hour and the cut. */
interface Job {
  table: TimeTable;
  env: string | undefined;
  hour: number;
  upTo: number;
}

const num = (v: unknown): number => (typeof v === 'bigint' ? Number(v) : Number(v));

/** A store node's partitions of a shared lake: written and committed by {@link commit}. */
export class NodeLake {
  /** The node's folder, `<root>/store=<node>`. */
  readonly dir: string;
  /** Per environment, the committed time (epoch ms): what the marks file says. */
  private readonly marks = new Map<string, number>();
  /** Per environment, how far its rows are written in the files (epoch ms). */
  private readonly cut = new Map<string, number>();
  private metricsCut = -Infinity;
  /** Hours to write again whatever their rows (deleted rows): `table\0env\0hour`. */
  private readonly dirty = new Set<string>();
  /** Hour files of the node, relative to its folder. */
  private readonly written: Set<string>;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly stats = { commits: 0, files: 0, trimmed: 0, lastAt: null as number | null, lastMs: null as number | null, lastError: null as string | null };

  private constructor(
    private readonly store: Store,
    private readonly o: NodeLakeOptions,
  ) {
    this.dir = nodeFolder(o.root, o.node);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.written = scanHourFiles(this.dir);
  }

  /**
   * Opens the node's part: reads its marks (or adopts the store's rows as committed at a first
   * start, writing the marks at once) and deletes the store's rows after them.
   * @param store the node's open store; the node's folder must be among its allowed folders
   * @param o root, node name, retention, clock
   * @returns the node lake
   */
  static async open(store: Store, o: NodeLakeOptions): Promise<NodeLake> {
    claimFolder(nodeFolder(o.root, o.node), o.node, o.owner);
    const lake = new NodeLake(store, o);
    const marks = lake.readMarks();
    if (marks) {
      for (const [env, t] of marks) lake.marks.set(env, t);
      // The files hold at most up to the marks (and what a commit cut short wrote past them,
      // which the deletion below makes dirty).
      for (const [env, t] of marks) lake.cut.set(env, t);
      const envs = await store.query<{ env: string }>(`SELECT DISTINCT environment_id AS env FROM pose_frames`);
      for (const { env } of envs) await lake.trimNow(env);
    } else {
      for (const r of await store.query<{ env: string; ms: number }>(`SELECT environment_id AS env, epoch_ms(max(ts)) AS ms FROM pose_frames GROUP BY 1`)) {
        lake.marks.set(r.env, num(r.ms));
      }
      lake.writeMarks(lake.marks);
    }
    return lake;
  }

  /** The committed time of an environment (epoch ms; -Infinity when none). */
  committed(env: string): number {
    return this.marks.get(env) ?? -Infinity;
  }

  /**
   * Deletes the store's rows of an environment after its mark (before the node reads the room:
   * rows it stored but never committed may be stored by another node meanwhile).
   * @returns rows deleted
   */
  trim(env: string): Promise<number> {
    return this.enqueue(() => this.trimNow(env));
  }

  /**
   * One commit (one at a time): rows up to each environment's last frame written to the hour files
   * that gained rows, then the marks. Environments `held` refuses (asked before the files and again
   * before the marks) are not committed, and their rows after their mark are deleted first.
   * @param held whether the node holds the environment now, with time to spare
   * @returns the new marks and what was written
   * @throws StoreError or a file system error: nothing new is committed then (the next commit tries again)
   */
  commit(held: (env: string) => boolean): Promise<NodeLakeCommit> {
    return this.enqueue(async () => {
      const t0 = performance.now();
      try {
        const out = await this.commitNow(held);
        this.stats.commits++;
        this.stats.lastError = null;
        return out;
      } catch (e) {
        this.stats.lastError = (e as Error).message;
        throw e;
      } finally {
        this.stats.lastAt = Date.now();
        this.stats.lastMs = performance.now() - t0;
      }
    });
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const p = this.queue.then(task, task);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async commitNow(held: (env: string) => boolean): Promise<NodeLakeCommit> {
    const now = (this.o.now ?? Date.now)();
    const days = this.o.retentionDays?.();
    const keepFrom = days !== undefined && Number.isFinite(days) ? Math.ceil((now - days * DAY_MS) / HOUR_MS) * HOUR_MS : undefined;
    pruneHourFiles(this.dir, this.written, keepFrom);
    let trimmed = 0;
    // The cut: per environment, its last frame stored.
    const upTo = new Map<string, number>();
    for (const r of await this.store.query<{ env: string; ms: number }>(`SELECT environment_id AS env, epoch_ms(max(ts)) AS ms FROM pose_frames GROUP BY 1`)) {
      const env = r.env;
      const t = num(r.ms);
      if (t > this.committed(env) && !held(env)) {
        trimmed += await this.trimNow(env);
        if (this.marks.has(env)) upTo.set(env, this.committed(env));
      } else upTo.set(env, Math.max(t, this.committed(env)));
    }
    // The hours that gained rows since the files were written, and those made dirty.
    const jobs = new Map<string, Job>();
    const add = (table: TimeTable, env: string | undefined, hour: number, cut: number) =>
      jobs.set(`${table}\0${env ?? ''}\0${hour}`, { table, env, hour, upTo: cut });
    for (const [env, t] of upTo) {
      const from = this.cut.get(env) ?? -Infinity;
      if (t <= from) continue;
      for (const table of ENV_TABLES) {
        const rows = await this.store.query<{ h: number }>(
          `SELECT DISTINCT epoch_ms(date_trunc('hour', ts)) AS h FROM ${table} WHERE environment_id = ? AND ts > ? AND ts <= ?`,
          [env, new Date(Number.isFinite(from) ? from : 0), new Date(t)],
        );
        for (const r of rows) add(table, env, num(r.h), t);
      }
    }
    for (const key of this.dirty) {
      const [table, env, hour] = key.split('\0') as [TimeTable, string, string];
      add(table, env, Number(hour), upTo.get(env) ?? this.committed(env));
    }
    const [m] = await this.store.query<{ ms: number | null }>(`SELECT epoch_ms(max(ts)) AS ms FROM system_metrics`);
    const metricsUpTo = m?.ms === null || m?.ms === undefined ? -Infinity : num(m.ms);
    if (metricsUpTo > this.metricsCut) {
      const rows = await this.store.query<{ h: number }>(`SELECT DISTINCT epoch_ms(date_trunc('hour', ts)) AS h FROM system_metrics WHERE ts > ? AND ts <= ?`, [
        new Date(Number.isFinite(this.metricsCut) ? this.metricsCut : 0),
        new Date(metricsUpTo),
      ]);
      for (const r of rows) add('system_metrics', undefined, num(r.h), metricsUpTo);
    }
    const written: string[] = [];
    for (const job of jobs.values()) {
      if (keepFrom !== undefined && job.hour < keepFrom) continue;
      written.push(await this.writeHour(job));
    }
    // Fenced again: a lease that lapsed while the files were written is not committed.
    const marks = new Map(this.marks);
    const committed = new Set<string>();
    for (const [env, t] of upTo) {
      if (t <= this.committed(env)) committed.add(env);
      else if (held(env)) {
        marks.set(env, t);
        committed.add(env);
      }
    }
    this.writeMarks(marks);
    for (const [env, t] of marks) this.marks.set(env, t);
    for (const [env, t] of upTo) this.cut.set(env, t);
    this.metricsCut = Math.max(this.metricsCut, metricsUpTo);
    for (const job of jobs.values()) this.dirty.delete(`${job.table}\0${job.env ?? ''}\0${job.hour}`);
    this.stats.files += written.length;
    return { upTo: new Map(this.marks), committed, written, trimmed };
  }

  /** Writes one hour file whole: its rows up to the cut, to a temporary name, then renamed. */
  private async writeHour(job: Job): Promise<string> {
    const rel = partitionFile(job.table, job.env, job.hour);
    const file = join(this.dir, ...rel.split('/'));
    const tmp = join(dirname(file), `.${rel.split('/').at(-1)}.tmp`);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const range = [new Date(job.hour), new Date(job.hour + HOUR_MS), new Date(Number.isFinite(job.upTo) ? job.upTo : 0)];
    const select =
      job.env !== undefined
        ? `SELECT * EXCLUDE (environment_id) FROM ${job.table} WHERE environment_id = ? AND ts >= ? AND ts < ? AND ts <= ? ORDER BY ts`
        : `SELECT * FROM ${job.table} WHERE ts >= ? AND ts < ? AND ts <= ? ORDER BY ts`;
    await this.store.copyTo(select, job.env !== undefined ? [job.env, ...range] : range, tmp, 'parquet');
    renameSync(tmp, file);
    this.written.add(rel);
    return rel;
  }

  /** Deletes an environment's rows after its mark; their hours are written again at the next commit. */
  private async trimNow(env: string): Promise<number> {
    const mark = this.committed(env);
    const after = new Date(Number.isFinite(mark) ? mark : 0);
    let deleted = 0;
    for (const table of ENV_TABLES) {
      const hours = await this.store.query<{ h: number }>(
        `SELECT DISTINCT epoch_ms(date_trunc('hour', ts)) AS h FROM ${table} WHERE environment_id = ? AND ts > ?`,
        [env, after],
      );
      if (hours.length === 0) continue;
      deleted += await this.store.execute(`DELETE FROM ${table} WHERE environment_id = ? AND ts > ?`, [env, after]);
      for (const { h } of hours) this.dirty.add(`${table}\0${env}\0${num(h)}`);
    }
    if ((this.cut.get(env) ?? -Infinity) > mark) this.cut.set(env, mark);
    this.stats.trimmed += deleted;
    return deleted;
  }

  /** The marks file, or undefined when the node has none yet. */
  private readMarks(): Map<string, number> | undefined {
    let text: string;
    try {
      text = readFileSync(join(this.dir, COMMITTED_FILE), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const out = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const r = JSON.parse(line) as { environment_id?: unknown; up_to?: unknown };
      const t = typeof r.up_to === 'string' ? Date.parse(r.up_to) : NaN;
      if (typeof r.environment_id !== 'string' || !Number.isFinite(t))
        throw new Error(`${join(this.dir, COMMITTED_FILE)}: a line that is no mark: ${line.slice(0, 200)}`);
      out.set(r.environment_id, t);
    }
    return out;
  }

  /** Writes the marks file whole (a temporary, then renamed). */
  private writeMarks(marks: ReadonlyMap<string, number>): void {
    const file = join(this.dir, COMMITTED_FILE);
    const tmp = join(this.dir, `.${COMMITTED_FILE}.tmp`);
    const lines = [...marks]
      .filter(([, t]) => Number.isFinite(t))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([env, t]) => JSON.stringify({ environment_id: env, up_to: new Date(t).toISOString() }) + '\n');
    writeFileSync(tmp, lines.join(''), { mode: 0o600 });
    renameSync(tmp, file);
  }

  /** Hour files of the node (relative to its folder), sorted. */
  files(): string[] {
    return [...this.written].sort();
  }

  report(): NodeLakeReport {
    return {
      status: this.stats.lastError ? 'error' : 'healthy',
      dir: this.dir,
      hours_written: this.written.size,
      commits: this.stats.commits,
      files_written: this.stats.files,
      rows_trimmed: this.stats.trimmed,
      last_commit_at: this.stats.lastAt === null ? null : new Date(this.stats.lastAt).toISOString(),
      last_commit_ms: this.stats.lastMs === null ? null : Math.round(this.stats.lastMs),
      last_error: this.stats.lastError,
    };
  }

  /** Waits for a running commit or deletion (call before closing the store). */
  async close(): Promise<void> {
    await this.queue;
  }
}

/** The file of a node folder that names its data directory. */
const OWNER_FILE = 'owner.json';

/**
 * The lake id of a data directory (`<dataDir>/lake-id`, made at first use): which node folder of a
 * shared lake is its own.
 * @param dataDir the data directory
 */
export function dataDirLakeId(dataDir: string): string {
  const file = join(dataDir, 'lake-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{32}$/.test(id)) return id;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const id = randomBytes(16).toString('hex');
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

/** Makes the node's folder, or checks that it is this data directory's. */
function claimFolder(dir: string, node: string, owner: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, OWNER_FILE);
  let found: string | undefined;
  try {
    found = (JSON.parse(readFileSync(file, 'utf8')) as { owner?: unknown }).owner as string | undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${file}: ${(e as Error).message}`);
  }
  if (found === undefined) {
    writeFileSync(file, JSON.stringify({ node, owner, since: new Date().toISOString() }) + '\n', { mode: 0o600 });
    return;
  }
  if (found !== owner) {
    throw new Error(
      `the lake folder ${dir} belongs to another store node's data directory (lake id ${String(found)}, this one's ${owner}): ` +
        'give each store node its own --name',
    );
  }
}
