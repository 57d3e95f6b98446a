/**
 * `scale.e2e_p99_ms`: a CSI packet sent by UDP -> the pose_update a `/ws/pose` client receives,
 * through a cluster (an ingest node with the UDP source -> NATS JetStream -> a worker -> NATS ->
 * an api node's `/ws/pose`), beside the same through one `csipose serve` (`scale.e2e_single_p99_ms`,
 * what bench/stream/e2e.ts measures) and their ratio (`scale.e2e_p99_ratio`, cluster over single).
 *
 * Both run at once, every node a real process: the single `csipose serve --source udp://...`, and
 * nats-server, `csipose serve --role ingest --source udp://...`, `--role worker`, `--role api`.
 * Both take the shipped window model (models/csipose-pose.onnx) and the same packets: the Intel
 * 5300 capture's 3x3 records, looped at 100 Hz (bench/stream/e2e.ts). The packets go to one of
 * them at a time, in phases: single, cluster, single, cluster, ... (3 rounds; `--quick` 1), each
 * phase until its client has 3 warm-up frames and then 60 (`--quick` 30) more, 1 s of quiet between
 * phases. A pose frame's latency is its arrival at the client minus the sending of the packet its
 * window ended on, as bench/stream/e2e.ts matches them; send and receive times are taken in this
 * process. A first round warms both up and is not counted. The p50 and p99 are over every
 * measured frame of a side, pooled.
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type WebSocket from 'ws';
import { printResults, type BenchResult } from '../lib.js';
import { repoRoot, stopServe, type ServeProcess } from '../serve.js';
import { samplesDir } from '../stream/captures.js';
import { e2ePackets, FORMAT, freeUdpPort, matchLatencies, RATE_HZ, sender, serve, subscribe, wallOffset } from '../stream/e2e.js';
import { MODEL } from '../stream/fanout.js';
import { now } from '../stream/ipc.js';
import { median, ms, quantile } from '../stream/stats.js';
import { BusWatch, Nodes, overlay, sleep, type ScaleOptions } from './cluster.js';
import { until } from './engines.js';
import { startNats, type NatsCluster } from './natsServer.js';

const ROOM = 'e2e-room';
const WARMUP = 3;
/** Give-up bounds: safety nets, not measurements. */
const RUNNING_GIVE_UP_MS = 60_000;

/** Options of {@link run}. */
export interface E2eScaleOptions extends ScaleOptions {
  /** Rounds of (single, cluster) phases (default 3, `quick` 1). */
  rounds?: number;
  /** Pose frames measured per phase (default 60, `quick` 30). */
  frames?: number;
}

/** One side: where its packets go and what its client got. */
interface Side {
  name: 'single' | 'cluster';
  sock: Socket;
  sent: number[];
  /** Pose frames of the current phase. */
  poses: Array<{ timestamp: number; at: number }>;
  /** Latencies of every measured frame, ms. */
  lat: number[];
  gaps: number[];
  /** p99 of each phase, ms. */
  phaseP99: number[];
  ws?: WebSocket;
}

/** Waits until a node with an HTTP server says its system is running (the api node: following the bus). */
async function running(base: string, key: string): Promise<void> {
  await until(
    async () => {
      const r = await fetch(`${base}/api/v1/system/status`, { headers: { 'x-api-key': key } });
      const body = (await r.json()) as { data?: { status?: string } };
      return body.data?.status === 'running';
    },
    RUNNING_GIVE_UP_MS,
    `${base} to run`,
  );
}

/**
 * The benchmark.
 * @returns `scale.e2e_p99_ms` (cluster), `scale.e2e_single_p99_ms`, `scale.e2e_p99_ratio`, and the p50s
 */
export async function run(opts: E2eScaleOptions = {}): Promise<BenchResult[]> {
  const rounds = opts.rounds ?? (opts.quick ? 1 : 3);
  const perPhase = opts.frames ?? (opts.quick ? 30 : 60);
  const log = opts.log ?? (() => undefined);
  const samples = samplesDir(repoRoot);
  if (!samples) {
    log('e2e: SKIPPED: the real captures (../shared/csi-samples, or CSIPOSE_SAMPLES_DIR) are not here; no scale.e2e_* figures');
    return [];
  }
  const packets = e2ePackets(samples, FORMAT);
  const key = `bench-scale-e2e-${randomBytes(12).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-scale-e2e-'));
  const nodes = new Nodes();
  let nats: NatsCluster | undefined;
  let single: ServeProcess | undefined;
  let watch: BusWatch | undefined;
  const sides: Side[] = [];
  let stopSend: (() => void) | undefined;
  try {
    const [udpSingle, udpCluster] = [await freeUdpPort(), await freeUdpPort()];
    log(`e2e: csipose serve --source udp://127.0.0.1:${udpSingle}, and a cluster: ingest --source udp://127.0.0.1:${udpCluster}, worker, api...`);
    single = await serve(FORMAT, udpSingle, key);
    nats = await startNats(1);
    const bus = nats.url;
    const http = { CSIPOSE_ADMIN_PASSWORD: `bench-${randomBytes(8).toString('hex')}`, CSIPOSE_API_KEYS: `${key}:viewer` };
    const api = await nodes.start({ role: 'api', bus, dataDir: join(dir, 'api'), env: http, logLevel: 'warn' });
    const room = overlay(dir, 'room', { environment: { id: ROOM }, neural_network: { model_path: MODEL } });
    await nodes.start({ role: 'ingest', bus, dataDir: join(dir, 'ingest'), config: room, source: `udp://127.0.0.1:${udpCluster}?format=${FORMAT}` });
    watch = await BusWatch.connect(bus);
    await nodes.start({ role: 'worker', bus, dataDir: join(dir, 'worker'), name: 'we' });
    const w = watch;
    await until(() => w.holders.get(ROOM) === 'we', RUNNING_GIVE_UP_MS, 'the worker to hold the room');
    await running(api.base, key);

    for (const [name, base, port] of [
      ['single', single.base, udpSingle],
      ['cluster', api.base, udpCluster],
    ] as const) {
      const sock = createSocket('udp4');
      await new Promise<void>((ok) => sock.connect(port, '127.0.0.1', ok));
      const side: Side = { name, sock, sent: [], poses: [], lat: [], gaps: [], phaseP99: [] };
      sides.push(side);
      side.ws = await subscribe(base, key, (timestamp, at) => side.poses.push({ timestamp, at }));
    }
    const offset = await wallOffset();
    const want = WARMUP + perPhase;
    // A phase's give-up: its frames at one per 8 packets, 8 times over, and 30 s more.
    const limit = 30_000 + ((want * 8 * 1000) / RATE_HZ) * 8;
    // Round 0 warms both sides up (JIT, sockets, the worker's first windows) and is not counted.
    for (let r = 0; r <= rounds; r++) {
      for (const side of sides) {
        side.poses = [];
        const send = sender(side.sock, packets, side.sent);
        stopSend = send.stop;
        const t0 = now();
        await until(() => side.poses.length >= want, limit, `${want} pose frames of the ${side.name} side`);
        send.stop();
        stopSend = undefined;
        const { lat, gaps } = matchLatencies(side.poses.slice(WARMUP, want), side.sent, offset);
        const sorted = Float64Array.from(lat).sort();
        log(
          `e2e ${r === 0 ? 'warm-up' : `round ${r}/${rounds}`} ${side.name}: p50 ${ms(quantile(sorted, 0.5))} p99 ${ms(quantile(sorted, 0.99))} ms over ${lat.length} frames (${((now() - t0) / 1000).toFixed(1)} s)`,
        );
        await sleep(1000);
        if (r === 0) continue;
        side.lat.push(...lat);
        side.gaps.push(...gaps);
        side.phaseP99.push(quantile(sorted, 0.99));
      }
    }
    const [s, c] = sides as [Side, Side];
    const figures = (side: Side) => {
      const sorted = Float64Array.from(side.lat).sort();
      return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1]!, n: sorted.length };
    };
    const fs = figures(s);
    const fc = figures(c);
    const where =
      `${FORMAT} capture (${packets.length} 3x3 packets looped) at ${RATE_HZ} Hz by UDP, the shipped window model, 1 /ws/pose client per side with default filters; ` +
      `${rounds} rounds of phases single, cluster (${WARMUP} warm-up + ${perPhase} frames each) after a round not counted, both running all along; load average at the end ${loadavg()[0]!.toFixed(1)} (2 cores shared)` +
      (opts.quick ? '; --quick' : '');
    const phases = (side: Side) => side.phaseP99.map(ms).join(', ');
    return [
      {
        name: 'scale.e2e_p99_ms',
        value: fc.p99,
        unit: 'ms',
        n: fc.n,
        note:
          `cluster: UDP -> ingest node -> NATS JetStream -> worker -> NATS -> api node /ws/pose; p50 ${ms(fc.p50)}, max ${ms(fc.max)} ms; phase p99s ${phases(c)}; ` +
          `frame timestamp minus matched send: median ${ms(median(c.gaps))} ms; ${where}`,
      },
      {
        name: 'scale.e2e_single_p99_ms',
        value: fs.p99,
        unit: 'ms',
        n: fs.n,
        note: `single csipose serve --source udp://...; p50 ${ms(fs.p50)}, max ${ms(fs.max)} ms; phase p99s ${phases(s)}; frame timestamp minus matched send: median ${ms(median(s.gaps))} ms; ${where}`,
      },
      {
        name: 'scale.e2e_p99_ratio',
        value: fc.p99 / fs.p99,
        unit: 'ratio',
        n: fc.n + fs.n,
        note: `p99 of the cluster over p99 of the single process, the same packets in the same run (${ms(fc.p99)} / ${ms(fs.p99)} ms)`,
      },
      { name: 'scale.e2e_p50_ms', value: fc.p50, unit: 'ms', n: fc.n, note: `cluster p50 (single ${ms(fs.p50)} ms)` },
    ];
  } catch (e) {
    throw nodes.withLogs(e);
  } finally {
    stopSend?.();
    for (const side of sides) {
      side.ws?.terminate();
      side.sock.close();
    }
    await watch?.close().catch(() => undefined);
    await nodes.stopAll();
    await nats?.stop();
    if (single) await stopServe(single);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run({ quick: process.argv.includes('--quick'), log: (s) => process.stderr.write(`${s}\n`) })
    .then((results) => printResults(results, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
