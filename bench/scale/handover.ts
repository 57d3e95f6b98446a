/**
 * `scale.handover_s` (target at most 5 s): how long a room's pose stream stops when the worker
 * holding it is SIGKILLed, until the other worker publishes that room's pose frames again.
 *
 * Real processes on a real nats-server (bench/scale/natsServer.ts): one ingest node
 * (`sim?seed=11&realism=room`, the default room in real time, three links at 100 Hz), two workers
 * (`--name w1`, `w2`), default `cluster` settings (leases of 2 s, checkpoints every 1 s, a replay
 * of 12 s). Each round kills the worker holding the room with SIGKILL, then starts it again (same
 * name and data directory) once the other has taken over, so that the next round kills the other.
 *
 * Measured per round, on nats-server's clock (the benchmark's `Date.now()` for the kill: one
 * machine, one clock):
 * - handover: from the kill to the time the pose stream stored the first frame of the room published
 *   by the other worker. Frames of the killed worker cannot be mistaken for it: the first frame
 *   counted is the first one stored after the other worker's lease was written, and the killed
 *   worker's lease lapses only `lease_ttl_seconds` after its last renewal, long after its last
 *   bytes reached the server.
 * - its two parts: kill to the new lease (the lease lapsing and the other worker's next round), and
 *   the new lease to the first frame (reading the configuration and checkpoint, loading the model:
 *   a standing-by worker holds none, replaying from 12 s before the checkpoint, publishing nothing
 *   up to the last frame already published).
 *
 * Reported: the median over rounds (`scale.handover_s`) and the slowest (`scale.handover_max_s`).
 * The notes add whether any pose frame of the room was repeated (a frame time not above the one
 * before) and the largest gap between frame times, over the whole run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { argValue, printResults, quantile, type BenchResult } from '../lib.js';
import { BusWatch, Nodes, overlay, sleep, type NodeProc, type ScaleOptions } from './cluster.js';
import { until } from './engines.js';
import { startNats, type NatsCluster } from './natsServer.js';

const ROOM = 'handover-room';
/** Give-up bounds: safety nets, not measurements. */
const TAKEOVER_GIVE_UP_MS = 30_000;
const FLOW_GIVE_UP_MS = 60_000;

/** Options of {@link run}. */
export interface HandoverOptions extends ScaleOptions {
  /** Kills measured (default 5, `quick` 2). */
  rounds?: number;
}

/** One measured handover. */
export interface Handover {
  victim: string;
  room: string;
  /** When it was killed, epoch ms. */
  kill: number;
  /** Kill to the first frame of the other worker, s. */
  total: number;
  /** Kill to the other worker's lease, s. */
  lease: number;
  /** Lease to the first frame, s. */
  start: number;
  /** Lease to the new holder's log line `holds environment` (configuration, checkpoint and model loaded; the replay starts), s; NaN when not found. */
  holds: number;
}

/**
 * When a worker's log says it holds a room, at or after a time (its log's own ISO times: this machine's clock).
 * @returns epoch ms, or NaN
 */
function holdsAt(log: string, worker: string, room: string, after: number): number {
  const re = new RegExp(`^(\\S+) info worker ${worker}: holds environment ${room}$`, 'gm');
  for (const m of log.matchAll(re)) {
    const t = Date.parse(m[1]!);
    if (t >= after - 1000) return t;
  }
  return NaN;
}

/**
 * Kills a worker with SIGKILL, waits until every room it held has been taken over by another
 * worker and that worker's first pose frame of it is stored, and starts a worker in its place.
 * @param watch the bus, with `pose.>` followed
 * @param victim the worker's name
 * @param workers the workers by name (the killed one's entry is replaced by the one started)
 * @param restart starts a worker in the killed one's place: its name is the killed one's, or a new
 *   one when `atOnce` (so that a worker taking a room is never taken for the killed one)
 * @param atOnce start it right after the kill, as a supervisor would, rather than once the rooms
 *   are back (the default: nothing else then competes for the room or the cores)
 * @returns one handover per room it held
 */
export async function killWorker(
  watch: BusWatch,
  victim: string,
  workers: Map<string, NodeProc>,
  restart: (name: string) => Promise<NodeProc>,
  atOnce = false,
): Promise<Handover[]> {
  const rooms = [...watch.holders].filter(([, w]) => w === victim).map(([room]) => room);
  if (rooms.length === 0 || !workers.has(victim)) throw new Error(`worker ${victim} holds no room to hand over`);
  const poses = watch.stored.get('pose.>')!;
  const tKill = Date.now();
  await workers.get(victim)!.kill();
  workers.delete(victim);
  const replacement = atOnce ? restart(victim) : undefined;
  // Awaited below; a failure then is the round's failure, not an unhandled rejection meanwhile.
  replacement?.catch(() => undefined);
  const out: Handover[] = [];
  for (const room of rooms) {
    let lease = watch.takenOver(room, tKill, victim);
    await until(() => (lease = watch.takenOver(room, tKill, victim)) !== undefined, TAKEOVER_GIVE_UP_MS, `another worker to take ${room} over from ${victim}`);
    const subject = `pose.${room}`;
    let first = poses.find((m) => m.subject === subject && m.at >= lease!.at);
    await until(
      () => (first = poses.find((m) => m.subject === subject && m.at >= lease!.at)) !== undefined,
      TAKEOVER_GIVE_UP_MS,
      `a pose frame of ${room} from ${lease!.holder}`,
    );
    const holder = workers.get(lease!.holder!);
    const holds = holder ? holdsAt(holder.log(), lease!.holder!, room, lease!.at) : NaN;
    out.push({
      victim,
      room,
      kill: tKill,
      total: (first!.at - tKill) / 1000,
      lease: (lease!.at - tKill) / 1000,
      start: (first!.at - lease!.at) / 1000,
      holds: (holds - lease!.at) / 1000,
    });
  }
  const next = await (replacement ?? restart(victim));
  workers.set(next.options.name!, next);
  return out;
}

/**
 * Whether a room's pose frames, as stored, ever repeat or go back (a frame time not above the one
 * before), and the largest gap between consecutive frame times.
 * @returns repeats and the largest gap in ms
 */
export function frameOrder(watch: BusWatch, room: string): { frames: number; repeats: number; maxGapMs: number } {
  const times = watch.stored
    .get('pose.>')!
    .filter((m) => m.subject === `pose.${room}`)
    .map((m) => decodePoseFrame(m.data).time);
  let repeats = 0;
  let maxGapMs = 0;
  for (let i = 1; i < times.length; i++) {
    if (times[i]! <= times[i - 1]!) repeats++;
    else maxGapMs = Math.max(maxGapMs, times[i]! - times[i - 1]!);
  }
  return { frames: times.length, repeats, maxGapMs };
}

/**
 * The benchmark: a room, two workers, `rounds` kills.
 * @returns `scale.handover_s` (median) and `scale.handover_max_s`
 */
export async function run(opts: HandoverOptions = {}): Promise<BenchResult[]> {
  const rounds = opts.rounds ?? (opts.quick ? 2 : 5);
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-handover-'));
  const nodes = new Nodes();
  let nats: NatsCluster | undefined;
  let watch: BusWatch | undefined;
  try {
    nats = await startNats(1);
    const bus = nats.url;
    const room = overlay(dir, 'room', { environment: { id: ROOM } });
    const worker = (name: string) => nodes.start({ role: 'worker', bus, dataDir: join(dir, name), name });
    log(`handover: nats-server ${bus}, ingest sim?seed=11&realism=room, workers w1 and w2 (csipose serve --role ...)`);
    await nodes.start({ role: 'ingest', bus, dataDir: join(dir, 'ingest'), config: room, source: 'sim?seed=11&realism=room' });
    watch = await BusWatch.connect(bus);
    await watch.follow('pose.>');
    const w = watch;
    const workers = new Map<string, NodeProc>([['w1', await worker('w1')]]);
    await until(() => w.holders.get(ROOM) === 'w1', FLOW_GIVE_UP_MS, 'w1 to hold the room');
    workers.set('w2', await worker('w2'));
    const times: Handover[] = [];
    // A room that does not come back within the give-up bound ends the rounds: the slowest is then
    // "more than the bound" (no figure), the median is over the rounds that completed.
    let stopped = '';
    for (let r = 0; r < rounds; r++) {
      try {
        // Pose frames flowing, and a checkpoint or two written, before each kill.
        const seen = w.stored.get('pose.>')!.length;
        await until(() => w.stored.get('pose.>')!.length >= seen + 10, FLOW_GIVE_UP_MS, 'pose frames before the kill');
        await sleep(1500);
        const [h] = await killWorker(w, w.holders.get(ROOM) ?? 'nobody', workers, worker);
        if (!h) throw new Error('no handover');
        times.push(h);
        log(
          `handover ${r + 1}/${rounds}: ${h.victim} killed, ${h.total.toFixed(2)} s (lease ${h.lease.toFixed(2)} s + start ${h.holds.toFixed(2)} s + replay ${(h.start - h.holds).toFixed(2)} s)`,
        );
      } catch (e) {
        stopped = `STOPPED in round ${r + 1} of ${rounds}: ${(e as Error).message.split('\n')[0]}`;
        log(`handover: ${stopped}`);
        break;
      }
    }
    if (times.length === 0) throw new Error(`no handover measured: ${stopped}`);
    await sleep(1000);
    const order = frameOrder(w, ROOM);
    // Holders taken by anything but a kill (a lease lost under load) are handovers too, not measured here.
    const takes = w.leaseChanges.filter((c) => c.key === ROOM && c.holder !== null).length;
    const unplanned = takes - 1 - times.length;
    const sorted = times.map((t) => t.total).sort((a, b) => a - b);
    const median = quantile(sorted, 0.5);
    const max = stopped ? Infinity : sorted[sorted.length - 1]!;
    const med = (f: (h: Handover) => number) =>
      quantile(
        times.map(f).sort((a, b) => a - b),
        0.5,
      ).toFixed(2);
    const where =
      `SIGKILL of the worker holding a room -> the first pose frame of that room from the other worker, as the pose stream stored it; ` +
      `real processes (1 ingest sim?seed=11&realism=room in real time, 2 workers, nats-server 1 node), default cluster settings (lease 2 s, checkpoint 1 s, rewind 12 s); ` +
      `median parts: kill -> new lease ${med((h) => h.lease)} s, lease -> 'holds environment' in its log (configuration, checkpoint, model loaded) ${med((h) => h.holds)} s, ` +
      `then the replay of 12 s and more to the first frame ${med((h) => h.start - h.holds)} s; ` +
      `lease changes not caused by a kill ${unplanned}; load average at the end ${loadavg()[0]!.toFixed(1)} (2 cores shared); ` +
      `rounds ${times.map((t) => t.total.toFixed(2)).join(', ')} s; over the run ${order.frames} frames of the room, ${order.repeats} repeated, largest gap between frame times ${(order.maxGapMs / 1000).toFixed(2)} s` +
      (opts.quick ? '; --quick' : '');
    return [
      {
        name: 'scale.handover_s',
        value: median,
        unit: 's',
        n: times.length,
        spread: (sorted[sorted.length - 1]! - sorted[0]!) / median,
        note: (stopped ? `${stopped}; ` : '') + where,
      },
      {
        name: 'scale.handover_max_s',
        value: max,
        unit: 's',
        n: times.length,
        note: stopped
          ? `no figure: a room did not come back within the give-up bound (${stopped})`
          : 'the slowest of the rounds of scale.handover_s (target 5 s)',
      },
    ];
  } catch (e) {
    throw nodes.withLogs(e);
  } finally {
    await watch?.close().catch(() => undefined);
    await nodes.stopAll();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rounds = argValue('--rounds');
  run({ quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`), ...(rounds ? { rounds: Number(rounds) } : {}) })
    .then((results) => printResults(results, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
