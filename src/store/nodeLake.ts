import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { partitionValue } from './lake.js';
import { MANIFEST_FILE, nodeFolder, readManifest, type Manifest } from './lakeRoot.js';
import { TIME_TABLES, type TimeTable } from './schema.js';
import type { Store } from './store.js';

/**
 * A store node's part of a cluster's shared lake (`csipose serve --role store --lake DIR`): its
 * rows written under `<root>/store=<node>/` in hour files, and a manifest (`committed.json`) that
 * says which files and how far each environment are committed (layout: lake.ts's module comment).
 * The store node commits every `cluster.lake_commit_seconds` and acknowledges the stream's frames
 * only once committed (src/cluster/storeCommit.ts), so:
 *
 * - **Every hour is written as it fills.** A commit writes each hour that gained rows anew, the
 *   open hour included, as a new file (`hour=HH.c<commit>.parquet`); a file is never written
 *   again, so a reader never meets one that changes under it. Every node's rows are readable
 *   within one commit interval.
 * - **The manifest is the commit.** After the files, the node writes its manifest (a temporary
 *   file, then renamed): the files that hold its rows now, and per environment the time of the
 *   last frame committed (its mark). Readers read the files the manifests list, nothing else, so a
 *   commit cut short by a crash counts for nothing. A file replaced by a newer one, or past the
 *   retention, is deleted once it has been out of the manifest for {@link RETIRED_GRACE_MS}, long
 *   after any reader looked at the manifest that listed it.
 * - **A cut per environment.** A commit takes, per environment, the time of the last frame stored
 *   (a batch of the sink lands whole: a frame with its persons, events and alerts) and writes rows
 *   up to it in every table.
 * - **Fenced by the lease.** An environment's rows are committed only while the node's lease on it
 *   holds (by the local clock, with a margin), asked before the files and again before the
 *   manifest. Rows of an environment the node no longer holds, after its mark, were never
 *   acknowledged: they are deleted from the store (its next holder stores them from the stream).
 * - **At start** the manifest is read back and the store's rows after the marks deleted the same
 *   way. A node's first start with a shared lake adopts what its store holds as committed.
 * - **One owner.** The node's folder belongs to the data directory that first wrote it
 *   (`owner.json` holds that directory's lake id, `<dataDir>/lake-id`): a node started with another
 *   node's name but its own data directory is refused, before it touches the folder.
 * - Hours older than the retention (`privacy.data_retention_days`) leave the manifest.
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** How long a file out of the manifest is kept for readers that still list it, ms. */
export const RETIRED_GRACE_MS = 600_000;
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
  /** Clock, epoch ms (retention, the grace of retired files). */
  now?: () => number;
}

/**
 * How a node holds an environment, as a commit asks: `held` (its lease holds, with time to spare:
 * commit it), `late` (still its own, but the lease's renewal is late: leave it for the next
 * commit), `gone` (lost or never held: its rows past its mark are deleted).
 */
export type RoomState = 'held' | 'late' | 'gone';

/** What one commit did. */
export interface NodeLakeCommit {
  /** Per environment, the time of the last frame committed (epoch ms). */
  upTo: Map<string, number>;
  /** Environments whose every stored row is committed now (not those whose rows were deleted). */
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
  /** Hour files in the manifest. */
  hours: number;
  commits: number;
  files_written: number;
  files_deleted: number;
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

/** An hour's place in the layout, without the commit that wrote its file: `pose_frames/environment_id=lab/date=2026-01-05/hour=09`. */
function hourKey(table: TimeTable, env: string | undefined, hourStart: number): string {
  const iso = new Date(hourStart).toISOString();
  return [table, ...(env !== undefined ? [`environment_id=${partitionValue(env)}`] : []), `date=${iso.slice(0, 10)}`, `hour=${iso.slice(11, 13)}`].join('/');
}

/** An hour file of a node: `<hour key>.c<commit>.parquet`. */
const FILE_SHAPE = /^((?:[^/]+\/)(?:environment_id=[^/]+\/)?date=(\d{4}-\d{2}-\d{2})\/hour=(\d{2}))\.c(\d+)\.parquet$/;

/** The hour key and start (epoch ms) of a node's file, or undefined for another path. */
function parseFile(rel: string): { key: string; hour: number } | undefined {
  const m = FILE_SHAPE.exec(rel);
  if (!m || !(TIME_TABLES as readonly string[]).includes(rel.split('/')[0]!)) return undefined;
  const hour = Date.parse(`${m[2]}T${m[3]}:00:00Z`);
  return Number.isFinite(hour) ? { key: m[1]!, hour } : undefined;
}

/** A store node's partitions of a shared lake: written and committed by {@link commit}. */
export class NodeLake {
  /** The node's folder, `<root>/store=<node>`. */
  readonly dir: string;
  /** Per environment, the committed time (epoch ms): what the manifest says. */
  private readonly marks = new Map<string, number>();
  /** Per environment, how far its rows are written in the files (epoch ms). */
  private readonly cut = new Map<string, number>();
  private metricsCut = -Infinity;
  /** The storage order (`seq`) of the last frame a commit looked at. */
  private seenSeq = -1;
  /** Hours to write again whatever their rows (deleted rows): `table\0env\0hour`. */
  private readonly dirty = new Set<string>();
  /** The manifest's files by hour key (relative to the node's folder). */
  private readonly files = new Map<string, string>();
  /** Files out of the manifest, and since when (epoch ms): deleted after the grace. */
  private readonly retired = new Map<string, number>();
  private commits = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly stats = {
    commits: 0,
    files: 0,
    deleted: 0,
    trimmed: 0,
    lastAt: null as number | null,
    lastMs: null as number | null,
    lastError: null as string | null,
  };

  private constructor(
    private readonly store: Store,
    private readonly o: NodeLakeOptions,
  ) {
    this.dir = nodeFolder(o.root, o.node);
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /**
   * Opens the node's part: reads its manifest (or adopts the store's rows as committed at a first
   * start, writing a manifest at once) and deletes the store's rows after its marks.
   * @param store the node's open store; the node's folder must be among its allowed folders
   * @param o root, node name, owner, retention, clock
   * @returns the node lake
   * @throws Error for a folder another data directory owns, or a manifest that is not one
   */
  static async open(store: Store, o: NodeLakeOptions): Promise<NodeLake> {
    claimFolder(nodeFolder(o.root, o.node), o.node, o.owner);
    const lake = new NodeLake(store, o);
    const manifest = readManifest(lake.dir);
    if (manifest) {
      lake.commits = manifest.commit;
      for (const m of manifest.marks) {
        lake.marks.set(m.environment_id, Date.parse(m.up_to));
        // The files hold up to the marks.
        lake.cut.set(m.environment_id, Date.parse(m.up_to));
      }
      for (const rel of manifest.files) {
        const f = parseFile(rel);
        if (f) lake.files.set(f.key, rel);
      }
      // Metrics rows are each node's own and never deleted: what a file holds is written again
      // only when its hour gains rows.
      const [m] = await store.query<{ ms: number | null }>(`SELECT epoch_ms(max(ts)) AS ms FROM system_metrics`);
      lake.metricsCut = m?.ms === null || m?.ms === undefined ? -Infinity : num(m.ms);
      const envs = await store.query<{ env: string }>(`SELECT DISTINCT environment_id AS env FROM pose_frames`);
      for (const { env } of envs) await lake.trimNow(env);
    } else {
      for (const r of await store.query<{ env: string; ms: number }>(`SELECT environment_id AS env, epoch_ms(max(ts)) AS ms FROM pose_frames GROUP BY 1`)) {
        lake.marks.set(r.env, num(r.ms));
      }
      lake.writeManifest(lake.marks, lake.files);
    }
    // What a commit cut short left behind, and what was retired before a restart: deleted after the grace.
    lake.collectStrays();
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
   * One commit (one at a time): rows up to each environment's last frame written to new files for
   * the hours that gained rows, then the manifest. An environment is committed only when `state`
   * says `held`, asked before the files and again before the manifest; one `gone` has its rows
   * after its mark deleted first.
   * @param state how the node holds an environment now
   * @returns the new marks and what was written
   * @throws StoreError or a file system error: nothing new is committed then (the next commit tries again)
   */
  commit(state: (env: string) => RoomState): Promise<NodeLakeCommit> {
    return this.enqueue(async () => {
      const t0 = performance.now();
      try {
        const out = await this.commitNow(state);
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

  private async commitNow(state: (env: string) => RoomState): Promise<NodeLakeCommit> {
    const now = this.now();
    const days = this.o.retentionDays?.();
    const keepFrom = days !== undefined && Number.isFinite(days) ? Math.ceil((now - days * DAY_MS) / HOUR_MS) * HOUR_MS : undefined;
    let trimmed = 0;
    // The cut: per environment, its last frame stored; only rows stored since the last commit
    // (`seq`, the storage order, prunes the rest by zonemaps).
    const upTo = new Map<string, number>();
    const late = new Set<string>();
    /** Rooms whose rows past their mark were deleted: none of their waiting frames is committed. */
    const gone = new Set<string>();
    let seenSeq = this.seenSeq;
    const fresh = await this.store.query<{ env: string; ms: number; s: number }>(
      `SELECT environment_id AS env, epoch_ms(max(ts)) AS ms, max(seq) AS s FROM pose_frames WHERE seq > ? GROUP BY 1`,
      [this.seenSeq],
    );
    for (const r of fresh) {
      seenSeq = Math.max(seenSeq, num(r.s));
      const env = r.env;
      const t = num(r.ms);
      const how = t > this.committed(env) ? state(env) : 'held';
      if (how === 'gone') {
        trimmed += await this.trimNow(env);
        gone.add(env);
        if (this.marks.has(env)) upTo.set(env, this.committed(env));
      } else if (how === 'late') {
        // Not this time: its rows stay, uncommitted, for the next commit.
        late.add(env);
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
    // New files, under this commit's number: nothing a reader may be reading is written again.
    const commit = this.commits + 1;
    const made = new Map<string, { rel: string; env: string | undefined }>();
    try {
      for (const job of jobs.values()) {
        if (keepFrom !== undefined && job.hour < keepFrom) continue;
        made.set(hourKey(job.table, job.env, job.hour), { rel: await this.writeHour(job, commit), env: job.env });
      }
    } catch (e) {
      for (const { rel } of made.values()) this.retired.set(rel, now);
      throw e;
    }
    // Fenced again: a lease that lapsed while the files were written is not committed.
    const marks = new Map(this.marks);
    const committed = new Set<string>();
    for (const [env, t] of upTo) {
      if (t <= this.committed(env)) {
        if (!late.has(env) && !gone.has(env)) committed.add(env);
      } else if (state(env) === 'held') {
        marks.set(env, t);
        committed.add(env);
      }
    }
    const files = new Map(this.files);
    const replaced: string[] = [];
    const written: string[] = [];
    for (const [key, { rel, env }] of made) {
      // The files of a room not committed now are not listed (nor kept).
      if (env !== undefined && upTo.has(env) && !committed.has(env) && (upTo.get(env) ?? -Infinity) > this.committed(env)) {
        replaced.push(rel);
        continue;
      }
      const old = files.get(key);
      if (old !== undefined && old !== rel) replaced.push(old);
      files.set(key, rel);
      written.push(rel);
    }
    // Hours past the retention leave the manifest.
    for (const [key, rel] of [...files]) {
      const f = parseFile(rel);
      if (keepFrom !== undefined && f && f.hour < keepFrom) {
        files.delete(key);
        replaced.push(rel);
      }
    }
    try {
      this.writeManifest(marks, files, commit);
    } catch (e) {
      for (const { rel } of made.values()) this.retired.set(rel, now);
      throw e;
    }
    this.commits = commit;
    for (const rel of replaced) this.retired.set(rel, now);
    this.files.clear();
    for (const [k, v] of files) this.files.set(k, v);
    // Rows of a room not committed now (its lease's renewal is late) are looked at again next time.
    if (late.size === 0 && [...upTo.keys()].every((env) => committed.has(env) || gone.has(env))) this.seenSeq = seenSeq;
    for (const [env, t] of marks) this.marks.set(env, t);
    for (const [env, t] of upTo) if (committed.has(env)) this.cut.set(env, t);
    this.metricsCut = Math.max(this.metricsCut, metricsUpTo);
    for (const job of jobs.values()) if (job.env === undefined || committed.has(job.env)) this.dirty.delete(`${job.table}\0${job.env ?? ''}\0${job.hour}`);
    this.stats.files += written.length;
    this.deleteRetired(now);
    return { upTo: new Map(this.marks), committed, written, trimmed };
  }

  /** Writes one hour's rows up to the cut as a new file of this commit. */
  private async writeHour(job: Job, commit: number): Promise<string> {
    const rel = `${hourKey(job.table, job.env, job.hour)}.c${commit}.parquet`;
    const file = join(this.dir, ...rel.split('/'));
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const range = [new Date(job.hour), new Date(job.hour + HOUR_MS), new Date(Number.isFinite(job.upTo) ? job.upTo : 0)];
    const select =
      job.env !== undefined
        ? `SELECT * EXCLUDE (environment_id) FROM ${job.table} WHERE environment_id = ? AND ts >= ? AND ts < ? AND ts <= ? ORDER BY ts`
        : `SELECT * FROM ${job.table} WHERE ts >= ? AND ts < ? AND ts <= ? ORDER BY ts`;
    await this.store.copyTo(select, job.env !== undefined ? [job.env, ...range] : range, file, 'parquet');
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

  /** Files of the node's folder that the manifest does not list: retired as of their last change. */
  private collectStrays(): void {
    const listed = new Set(this.files.values());
    const walk = (rel: string, depth: number): void => {
      let entries;
      try {
        entries = readdirSync(join(this.dir, rel), { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory() && depth < 3) walk(r, depth + 1);
        else if (e.isFile() && parseFile(r) && !listed.has(r)) {
          let at = this.now();
          try {
            at = statSync(join(this.dir, r)).mtimeMs;
          } catch {
            // Gone meanwhile.
          }
          this.retired.set(r, at);
        }
      }
    };
    walk('', 0);
    this.deleteRetired(this.now());
  }

  /** Deletes the files out of the manifest for longer than the grace. */
  private deleteRetired(now: number): void {
    for (const [rel, since] of this.retired) {
      if (now - since < RETIRED_GRACE_MS) continue;
      try {
        unlinkSync(join(this.dir, ...rel.split('/')));
        this.stats.deleted++;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') continue;
      }
      this.retired.delete(rel);
    }
  }

  /** Writes the manifest whole (a temporary, then renamed). */
  private writeManifest(marks: ReadonlyMap<string, number>, files: ReadonlyMap<string, string>, commit = this.commits): void {
    const manifest: Manifest = {
      node: this.o.node,
      commit,
      committed_at: new Date(this.now()).toISOString(),
      marks: [...marks]
        .filter(([, t]) => Number.isFinite(t))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([env, t]) => ({ environment_id: env, up_to: new Date(t).toISOString() })),
      files: [...files.values()].sort(),
    };
    const tmp = join(this.dir, `.${MANIFEST_FILE}.tmp`);
    writeFileSync(tmp, JSON.stringify(manifest) + '\n', { mode: 0o600 });
    renameSync(tmp, join(this.dir, MANIFEST_FILE));
  }

  /** The manifest's files (relative to the node's folder), sorted. */
  listed(): string[] {
    return [...this.files.values()].sort();
  }

  report(): NodeLakeReport {
    return {
      status: this.stats.lastError ? 'error' : 'healthy',
      dir: this.dir,
      hours: this.files.size,
      commits: this.stats.commits,
      files_written: this.stats.files,
      files_deleted: this.stats.deleted,
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
