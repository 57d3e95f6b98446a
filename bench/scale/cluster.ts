/**
 * What the cluster benchmarks of `npm run bench:scale` share (docs/scale.md "Benchmarks"): the
 * real `csipose serve --role ingest|worker|api|store` processes on a bus, started and stopped the
 * way an operator does, and the bus watched from the benchmark's own NATS connection: who holds a
 * room (the leases bucket), and every pose frame or alert with the time the stream stored it.
 *
 * Times read from the stream (a message's timestamp, a lease's creation) are nats-server's clock;
 * the kill times the benchmarks take are `Date.now()`: one machine, one clock.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection } from 'nats';
import { bucketKey, CHECKPOINTS_BUCKET, CSI_STREAM, csiSubjects, ENVIRONMENTS_BUCKET, LEASES_BUCKET, POSE_STREAM } from '../../src/bus/bus.js';
import type { Checkpoint } from '../../src/cluster/worker.js';
import { cliPath, repoRoot } from '../serve.js';
import { until } from './engines.js';

/** Give-up bound for a node to say it is ready (a busy 2-core machine; a worker says so after its first round, which may take a room over); a safety net, not a measurement. */
const READY_GIVE_UP_MS = 120_000;
/** Give-up bound for a node to exit after SIGTERM before it is killed. */
const STOP_GIVE_UP_MS = 15_000;
/** Log kept per node (the tail), for the error of a failed benchmark. */
const LOG_KEEP = 20_000;

export type NodeRole = 'ingest' | 'worker' | 'api' | 'store';

/** How to start a node. */
export interface NodeOptions {
  role: NodeRole;
  /** `nats://...` */
  bus: string;
  dataDir: string;
  /** `--name` (workers, store nodes). */
  name?: string;
  /** A `--config` overlay file. */
  config?: string;
  /** `--source` (ingest). */
  source?: string;
  /** More environment (CSIPOSE_ADMIN_PASSWORD, CSIPOSE_API_KEYS for api and store nodes). */
  env?: Record<string, string>;
  /** `--log-level` (default info: the workers' holds and releases are in the log). */
  logLevel?: 'error' | 'warn' | 'info';
}

/** A running node process. */
export interface NodeProc {
  readonly options: NodeOptions;
  readonly proc: ChildProcess;
  /** `http://127.0.0.1:PORT` of an api or store node; '' for the others. */
  readonly base: string;
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>;
  readonly gone: boolean;
  /** The tail of what it printed (stdout and stderr). */
  log(): string;
  /** SIGKILL (no goodbye), resolved once it has exited. */
  kill(): Promise<void>;
  /** SIGTERM (it gives its rooms back), SIGKILL after 15 s; resolved once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts `csipose serve --role R --bus URL --data-dir D ...` from `dist/` and waits for its ready
 * line: `... on the bus` (ingest, worker) or `listening on http://...` (api, store: `--port 0`).
 * Environment variables named CSIPOSE_* of this process are not passed on.
 * @param o the node
 * @returns the running node
 * @throws Error with its log when it exits or is not ready within 60 s
 */
export async function startNode(o: NodeOptions): Promise<NodeProc> {
  mkdirSync(o.dataDir, { recursive: true });
  const http = o.role === 'api' || o.role === 'store';
  const args = [cliPath, 'serve', '--role', o.role, '--bus', o.bus, '--data-dir', o.dataDir, '--log-level', o.logLevel ?? 'info'];
  if (o.name) args.push('--name', o.name);
  if (o.config) args.push('--config', o.config);
  if (o.source) args.push('--source', o.source);
  if (http) args.push('--host', '127.0.0.1', '--port', '0', '--no-dashboard');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CSIPOSE_')) env[k] = v;
  Object.assign(env, o.env ?? {});
  const proc = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let gone = false;
  const keep = (c: Buffer) => (log = (log + c.toString('utf8')).slice(-LOG_KEEP));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<void>((ok) =>
    proc.once('exit', () => {
      gone = true;
      ok();
    }),
  );
  const ready = http ? /listening on (http:\/\/\S+)/ : /^.* on the bus$/m;
  let base = '';
  const who = `${o.role}${o.name ? ` ${o.name}` : ''}`;
  try {
    await until(
      () => {
        if (gone) throw new Error(`${who} exited before it was ready; its log:\n${log}`);
        const m = ready.exec(log);
        if (m && http) base = m[1]!;
        return m !== null;
      },
      READY_GIVE_UP_MS,
      `${who} to be ready`,
    );
  } catch (e) {
    proc.kill('SIGKILL');
    await exited;
    throw new Error(`${(e as Error).message}\n${who} log:\n${log.slice(-4000)}`);
  }
  const node: NodeProc = {
    options: o,
    proc,
    base,
    exited,
    get gone() {
      return gone;
    },
    log: () => log,
    async kill() {
      if (!gone) proc.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (gone) return;
      const t = setTimeout(() => proc.kill('SIGKILL'), STOP_GIVE_UP_MS);
      proc.kill('SIGTERM');
      await exited;
      clearTimeout(t);
    },
  };
  return node;
}

/** Every node a benchmark started, stopped together however the benchmark ends. */
export class Nodes {
  readonly all: NodeProc[] = [];

  /** Starts a node and keeps it for {@link stopAll}. */
  async start(o: NodeOptions): Promise<NodeProc> {
    const n = await startNode(o);
    this.all.push(n);
    return n;
  }

  /** The error with the tail of every node's log, for a benchmark that failed. */
  withLogs(e: unknown): Error {
    const logs = this.all.map(
      (n) => `--- ${n.options.role}${n.options.name ? ` ${n.options.name}` : ''}${n.gone ? ' (exited)' : ''}:\n${n.log().slice(-1500)}`,
    );
    const err = e instanceof Error ? e : new Error(String(e));
    err.message += `\n${logs.join('\n')}`;
    return err;
  }

  /** SIGTERM to every node still running (SIGKILL after 15 s), all at once; waits for them. */
  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((n) => n.stop()));
  }
}

/**
 * Writes a `--config` overlay file.
 * @param dir where
 * @param name file name without `.json`
 * @param overlay the settings
 * @returns its path
 */
export function overlay(dir: string, name: string, overlay: unknown): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(overlay));
  return file;
}

/** A pose frame or alert as the stream stored it. */
export interface Stored {
  subject: string;
  seq: number;
  /** When the stream stored it: nats-server's clock, epoch ms. */
  at: number;
  data: Uint8Array;
}

/** A lease's change seen by the watch: its holder and when it was written (nats-server's clock). */
export interface LeaseChange {
  key: string;
  holder: string | null;
  at: number;
}

/**
 * The benchmark's view of the bus: its own connection, the leases bucket followed by watch, and the
 * pose stream's messages (`pose.>`, `alerts.>`, `events.>` as asked) read through an ordered
 * consumer from the moment it starts, each with the time the stream stored it.
 */
export class BusWatch {
  /** Every change of a lease's holder, in order (renewals are not changes). */
  readonly leaseChanges: LeaseChange[] = [];
  /** Each lease's holder as the watch last saw it (a lease that lapsed by age may linger here: {@link heldNow}). */
  readonly holders = new Map<string, string>();
  /** What the stream stored, by subject filter, in order. */
  readonly stored = new Map<string, Stored[]>();
  private readonly stops: Array<() => void> = [];

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly leases: KV,
  ) {}

  /**
   * Connects and starts the leases watch (the buckets and streams exist once a node has connected).
   * @param url the bus
   */
  static async connect(url: string): Promise<BusWatch> {
    const nc = await connect({ servers: url.split(','), name: 'csipose-bench' });
    try {
      const js = nc.jetstream();
      const w = new BusWatch(nc, js, await nc.jetstreamManager(), await js.views.kv(LEASES_BUCKET));
      const watch = await w.leases.watch();
      w.stops.push(() => watch.stop());
      void (async () => {
        for await (const e of watch) {
          const holder = e.operation === 'PUT' ? e.string() : null;
          if ((w.holders.get(e.key) ?? null) === holder) continue;
          if (holder === null) w.holders.delete(e.key);
          else w.holders.set(e.key, holder);
          w.leaseChanges.push({ key: e.key, holder, at: e.created.getTime() });
        }
      })();
      return w;
    } catch (e) {
      await nc.close();
      throw e;
    }
  }

  /**
   * Reads what the pose stream stores under a subject filter from now on (an ordered consumer
   * starting at the stream's next message), into `stored.get(filter)`.
   * @param filter e.g. `pose.>`
   * @param onMessage called with each message as it comes
   */
  async follow(filter: string, onMessage?: (m: Stored) => void): Promise<void> {
    const info = await this.jsm.streams.info(POSE_STREAM);
    const consumer = await this.js.consumers.get(POSE_STREAM, { filterSubjects: filter, opt_start_seq: info.state.last_seq + 1 });
    const messages = await consumer.consume({ max_messages: 256 });
    this.stops.push(() => void messages.stop());
    const list: Stored[] = [];
    this.stored.set(filter, list);
    void (async () => {
      for await (const m of messages) {
        const s: Stored = { subject: m.subject, seq: m.seq, at: m.info.timestampNanos / 1e6, data: m.data };
        list.push(s);
        onMessage?.(s);
      }
    })();
  }

  /**
   * The first lease change of a room after a time to a holder other than `not`.
   * @returns it, or undefined while there is none
   */
  takenOver(room: string, after: number, not: string): LeaseChange | undefined {
    return this.leaseChanges.find((c) => c.key === room && c.at > after && c.holder !== null && c.holder !== not);
  }

  /**
   * Whether a room's lease is held now, read from the bucket (a lease that lapses goes without a
   * word to the watch: an entry that expires by age is just gone).
   */
  async heldNow(room: string): Promise<boolean> {
    const e = await this.leases.get(bucketKey(room));
    return e !== null && e.operation === 'PUT';
  }

  /** The last CSI stream sequence of a room (the highest of its links' last messages); 0 without any. */
  async lastCsiSeq(room: string): Promise<number> {
    const info = await this.jsm.streams.info(CSI_STREAM, { subjects_filter: csiSubjects(room) });
    let last = 0;
    for (const s of Object.keys(info.state.subjects ?? {})) last = Math.max(last, (await this.jsm.streams.getMessage(CSI_STREAM, { last_by_subj: s })).seq);
    return last;
  }

  /** CSI frames of a room the stream holds. */
  async csiCount(room: string): Promise<number> {
    const info = await this.jsm.streams.info(CSI_STREAM, { subjects_filter: csiSubjects(room) });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  }

  /** The CSI stream sequence a room's checkpoint says was read last; 0 without one. */
  async checkpointSeq(room: string): Promise<number> {
    const e = await (await this.js.views.kv(CHECKPOINTS_BUCKET)).get(bucketKey(room));
    return e && e.operation === 'PUT' ? e.json<Checkpoint>().seq : 0;
  }

  /** Takes a room's configuration off the bus (its worker lets it go). */
  async forget(room: string): Promise<void> {
    await (await this.js.views.kv(ENVIRONMENTS_BUCKET)).delete(bucketKey(room));
  }

  /** Stops the watches and consumers and closes the connection. */
  async close(): Promise<void> {
    for (const s of this.stops) s();
    await this.nc.close();
  }
}

/** What `npm run bench:scale` hands each part (bench/scale/run.ts). */
export interface ScaleOptions {
  /** A short run (`--quick`): fewer rounds, shorter phases; the notes say so. */
  quick?: boolean;
  /** Progress lines (stderr). */
  log?: (line: string) => void;
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

let clockTicks: number | undefined;

/**
 * CPU time a process has used so far (user + system, from /proc/PID/stat), s; NaN where there is
 * no /proc or the process is gone.
 */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name in parentheses: state is field 3, utime 14 and stime 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clockTicks;
  } catch {
    return NaN;
  }
}
