/**
 * `scale.bus_overhead` (target at least 0.7): CSI frames per second through the bus (an ingest node
 * -> NATS JetStream -> a worker) over frames per second through the same pipeline in one process,
 * the same source, in one run, rounds interleaved (in-process, bus, in-process, bus, ...) after a
 * warm-up round of each, the median of the per-round ratios.
 *
 * The source: the default room (`sim?seed=31&realism=room`, three links, two people) simulated once
 * before any timing, `--quick` 20 s of it, else 45 s, written as one Intel 5300 capture per link
 * (each link's values scaled by one factor, so their amplitudes keep their ratios), replayed as
 * fast as possible: `file:rx1.dat?format=intel5300&link=rx1&speed=0 file:rx2.dat?... file:rx3.dat?...`
 * (src/sources/merge.ts merges them in time order). A file ends, so a round has a fixed count of
 * frames; a replay decodes them the same way on both sides.
 *
 * - In-process (bench/scale/inprocess.ts, a child process of its own, the model loaded once): the
 *   source opened as an ingest node opens it, straight into the live pipeline a worker runs
 *   (physics-live with the shipped refiner: the default configuration), with a worker's resources
 *   and parameters. Timed from subscribing to the source to the pipeline's completion: decoding,
 *   the pipeline, nothing published.
 * - Bus: real processes on a real nats-server: one worker (`csipose serve --role worker`, kept for
 *   the whole run so its model is loaded once), and per round a new room and a new ingest node
 *   (`csipose serve --role ingest --source <the files>`) that decodes, encodes and publishes every
 *   frame to `csi.<room>.<link>` (JetStream, file storage). Timed on nats-server's clock from the
 *   worker's lease of the room (it starts reading the room's CSI from the stream's start) to the
 *   time the pose stream stored the room's last pose frame: reading from the stream, decoding, the
 *   pipeline, and publishing every pose frame (and its alerts and events) to JetStream. The ingest
 *   node starts publishing before the lease and is faster than the worker, so the worker is never
 *   waiting for frames: what is timed is the worker's throughput fed by the bus. The ingest's own
 *   time (its first to last frame stored) is in the note.
 *
 * Both sides run one pipeline in one Node thread (the refiner's session in its worker thread on 2
 * cores, alike); the bus side has the ingest process and nats-server besides, on the same two
 * cores. CPU seconds per round of each process are in the note (the ingest's include its start).
 * The pose frames out of both sides are counted: the same count says both did the same work (the
 * refiner drops a floor map it cannot take in time, on both sides alike).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lastValueFrom, take, toArray, type Observable } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { siteLinks } from '../../src/csi/radios.js';
import { defaults } from '../../src/config/schema.js';
import { encodeIntel5300, intel5300RecordLength } from '../../src/encoders/intel5300.js';
import { parseSource } from '../../src/sources/uri.js';
import { CSI_STREAM, csiSubjects } from '../../src/bus/bus.js';
import { printResults, quantile, type BenchResult } from '../lib.js';
import { Child } from '../stream/ipc.js';
import { BusWatch, cpuSeconds, Nodes, overlay, sleep, type ScaleOptions } from './cluster.js';
import { until } from './engines.js';
import { startNats, type NatsCluster } from './natsServer.js';
import type { InProcessRound } from './inprocess.js';

const here = dirname(fileURLToPath(import.meta.url));
const SOURCE = 'sim?seed=31&realism=room&speed=0';
/** Give-up bounds: safety nets, not measurements. */
const ROUND_GIVE_UP_MS = 120_000;
const QUIET_MS = 1500;

/** Options of {@link run}. */
export interface BusOverheadOptions extends ScaleOptions {
  /** Measured rounds per side after the warm-up (default 3, `quick` 2). */
  rounds?: number;
  /** Simulated seconds of the capture (default 45, `quick` 20). */
  seconds?: number;
}

/** One bus round. */
interface BusRound {
  frames: number;
  poseFrames: number;
  seconds: number;
  /** The ingest's first to last CSI frame stored, s. */
  ingestSeconds: number;
  workerCpu: number;
  natsCpu: number;
  ingestCpu: number;
}

/**
 * Simulates the room once and writes one Intel 5300 capture per link.
 * @returns the source URI of the files, replayed as fast as possible, and the frame count
 */
async function writeCapture(dir: string, seconds: number): Promise<{ uri: string; frames: number }> {
  const radios = defaults().environment.site.radios;
  const links = siteLinks(radios);
  const ticks = Math.round(seconds * 100);
  const frames = await lastValueFrom(
    (parseSource(SOURCE).open('frame', { environmentId: 'capture', radios: () => radios }) as Observable<CsiFrame>).pipe(take(ticks * links.length), toArray()),
  );
  const uris: string[] = [];
  for (const link of links) {
    const own = frames.filter((f) => f.linkId === link.id);
    let max = 0;
    for (const f of own) for (const v of f.csi) max = Math.max(max, Math.abs(v));
    const scale = max > 0 ? 127 / max : 1;
    const buf = Buffer.alloc(own.reduce((n, f) => n + intel5300RecordLength(f.nRx, f.nTx), 0));
    let o = 0;
    for (const f of own) {
      const rec = encodeIntel5300(f, { scale });
      buf.set(rec, o);
      o += rec.length;
    }
    const path = join(dir, `${link.rx.id}.dat`);
    writeFileSync(path, buf);
    uris.push(`file:${path}?format=intel5300&link=${link.rx.id}&speed=0`);
  }
  return { uri: uris.join(' '), frames: frames.length };
}

/**
 * The benchmark.
 * @returns `scale.bus_overhead` (bus over in-process, frames/s), `scale.bus_frames_per_s` and
 *   `scale.inprocess_frames_per_s`
 */
export async function run(opts: BusOverheadOptions = {}): Promise<BenchResult[]> {
  const rounds = opts.rounds ?? (opts.quick ? 2 : 3);
  const seconds = opts.seconds ?? (opts.quick ? 20 : 45);
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-bus-'));
  const nodes = new Nodes();
  let nats: NatsCluster | undefined;
  let watch: BusWatch | undefined;
  let inproc: Child | undefined;
  try {
    log(`bus_overhead: simulating ${seconds} s of the default room (${SOURCE}) into one Intel 5300 capture per link...`);
    const capture = await writeCapture(dir, seconds);
    nats = await startNats(1);
    const bus = nats.url;
    const n = nats.nodes[0]!;
    const worker = await nodes.start({ role: 'worker', bus, dataDir: join(dir, 'worker'), name: 'wb' });
    watch = await BusWatch.connect(bus);
    const w = watch;
    await w.follow('pose.>');
    inproc = new Child('in-process', join(here, 'inprocess.js'), [join(dir, 'inproc'), overlay(dir, 'inproc', { environment: { id: 'bus-inproc' } })]);
    await inproc.ready;
    const child = inproc;

    const inProcess = () => child.call<InProcessRound>('run', { uri: capture.uri }, ROUND_GIVE_UP_MS);
    let k = 0;
    const viaBus = async (): Promise<BusRound> => {
      const room = `bus-r${k++}`;
      const cpu0 = { worker: cpuSeconds(worker.proc.pid), nats: cpuSeconds(n.pid) };
      const changes = w.leaseChanges.length;
      const ingest = await nodes.start({
        role: 'ingest',
        bus,
        dataDir: join(dir, `ingest-${room}`),
        config: overlay(dir, room, { environment: { id: room } }),
        source: capture.uri,
      });
      await until(() => /source .* ended after \d+ frames/.test(ingest.log()), ROUND_GIVE_UP_MS, `the ingest of ${room} to publish its capture`);
      const published = Number(/ended after (\d+) frames/.exec(ingest.log())![1]);
      await until(() => /the stream took all \d+ frames/.test(ingest.log()), ROUND_GIVE_UP_MS, `the stream to hold the ${published} frames of ${room}`);
      const last = await w.lastCsiSeq(room);
      await until(async () => (await w.checkpointSeq(room)) >= last, ROUND_GIVE_UP_MS, `the worker to read ${room} to its last frame`);
      const poses = w.stored.get('pose.>')!;
      const subject = `pose.${room}`;
      let seen = -1;
      let quietSince = Date.now();
      await until(
        () => {
          const c = poses.filter((m) => m.subject === subject).length;
          if (c !== seen) {
            seen = c;
            quietSince = Date.now();
          }
          return Date.now() - quietSince > QUIET_MS;
        },
        ROUND_GIVE_UP_MS,
        `the last pose frames of ${room}`,
      );
      const mine = poses.filter((m) => m.subject === subject);
      const lease = w.leaseChanges.slice(changes).find((c) => c.key === room && c.holder === 'wb');
      if (!lease || mine.length === 0) throw new Error(`${room}: no lease by the worker or no pose frame`);
      const ingestCpu = cpuSeconds(ingest.proc.pid);
      const span = await csiSpan(w, room);
      const round: BusRound = {
        frames: published,
        poseFrames: mine.length,
        seconds: (mine[mine.length - 1]!.at - Math.max(lease.at, span.first)) / 1000,
        ingestSeconds: (span.last - span.first) / 1000,
        workerCpu: cpuSeconds(worker.proc.pid) - cpu0.worker,
        natsCpu: cpuSeconds(n.pid) - cpu0.nats,
        ingestCpu,
      };
      await ingest.stop();
      await w.forget(room);
      await until(async () => !(await w.heldNow(room)), ROUND_GIVE_UP_MS, `the worker to let ${room} go`);
      return round;
    };

    log('bus_overhead: warm-up (one round each)...');
    await inProcess();
    await viaBus();
    const a: InProcessRound[] = [];
    const b: BusRound[] = [];
    for (let r = 0; r < rounds; r++) {
      a.push(await inProcess());
      b.push(await viaBus());
      const x = a[r]!;
      const y = b[r]!;
      log(
        `bus_overhead round ${r + 1}/${rounds}: in-process ${Math.round(x.frames / x.seconds)} frames/s (${x.poseFrames} pose frames), ` +
          `bus ${Math.round(y.frames / y.seconds)} frames/s (${y.poseFrames} pose frames)`,
      );
      await sleep(500);
    }
    const fa = a.map((x) => x.frames / x.seconds);
    const fb = b.map((y) => y.frames / y.seconds);
    const ratios = fb.map((v, i) => v / fa[i]!);
    const cpuWorker = b.map((y, i) => a[i]!.cpuSeconds / y.workerCpu);
    const cpuAll = b.map((y, i) => a[i]!.cpuSeconds / (y.workerCpu + y.natsCpu + y.ingestCpu));
    const med = (v: number[]) =>
      quantile(
        [...v].sort((p, q) => p - q),
        0.5,
      );
    const spread = (v: number[]) => (Math.max(...v) - Math.min(...v)) / med(v);
    const list = (v: number[], d = 0) => v.map((x) => x.toFixed(d)).join(', ');
    const frames = a[0]!.frames;
    const where =
      `${frames} CSI frames (${seconds} s of sim realism=room, 3 links, replayed from Intel 5300 files as fast as possible) through physics-live with the shipped refiner; ` +
      `${rounds} rounds after a warm-up, in-process and bus interleaved; load average at the end ${loadavg()[0]!.toFixed(1)} (2 cores shared)` +
      (opts.quick ? '; --quick' : '');
    const detail =
      `bus ${list(fb)} frames/s, in-process ${list(fa)} frames/s; ratios ${list(ratios, 3)}; pose frames bus ${b.map((y) => y.poseFrames).join(', ')}, in-process ${a.map((x) => x.poseFrames).join(', ')}; ` +
      `CPU s per round: in-process ${list(
        a.map((x) => x.cpuSeconds),
        1,
      )}; bus worker ${list(
        b.map((y) => y.workerCpu),
        1,
      )}, nats-server ${list(
        b.map((y) => y.natsCpu),
        1,
      )}, ingest ${list(
        b.map((y) => y.ingestCpu),
        1,
      )} (its start included); ` +
      `the ingest stored its frames in ${list(
        b.map((y) => y.ingestSeconds),
        2,
      )} s; ${where}`;
    return [
      {
        name: 'scale.bus_overhead',
        value: med(ratios),
        unit: 'ratio',
        n: rounds,
        spread: spread(ratios),
        note: `frames/s through ingest -> NATS JetStream -> worker over frames/s in one process; ${detail}`,
      },
      {
        name: 'scale.bus_frames_per_s',
        value: med(fb),
        unit: 'frames/s',
        n: frames * rounds,
        spread: spread(fb),
        note: `a worker fed by the bus: from its lease of the room to the last pose frame stored; rounds ${list(fb)}`,
      },
      {
        name: 'scale.inprocess_frames_per_s',
        value: med(fa),
        unit: 'frames/s',
        n: frames * rounds,
        spread: spread(fa),
        note: `the same source and pipeline in one process: from subscribing to the source to the pipeline's completion; rounds ${list(fa)}`,
      },
      {
        name: 'scale.bus_worker_cpu_ratio',
        value: med(cpuWorker),
        unit: 'ratio',
        n: rounds,
        spread: spread(cpuWorker),
        note:
          `CPU seconds of the in-process round over the worker's for the same frames (frames per CPU second of a worker fed by the bus over in-process; ` +
          `the share of a core a room costs): rounds ${list(cpuWorker, 3)}; with nats-server's and the ingest's (its start included) CPU too: ${list(cpuAll, 3)}`,
      },
    ];
  } catch (e) {
    throw nodes.withLogs(e);
  } finally {
    await inproc?.stop().catch(() => undefined);
    await watch?.close().catch(() => undefined);
    await nodes.stopAll();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** When the stream stored a room's first and last CSI frame (nats-server's clock, epoch ms). */
async function csiSpan(w: BusWatch, room: string): Promise<{ first: number; last: number }> {
  const consumer = await w.js.consumers.get(CSI_STREAM, { filterSubjects: csiSubjects(room), opt_start_seq: 1 });
  const first = await consumer.next({ expires: 5000 });
  if (!first) throw new Error(`no CSI of ${room}`);
  const last = await w.jsm.streams.getMessage(CSI_STREAM, { seq: await w.lastCsiSeq(room) });
  return { first: first.info.timestampNanos / 1e6, last: last.time.getTime() };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run({ quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`) })
    .then((results) => printResults(results, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
