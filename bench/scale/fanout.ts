/**
 * `scale.fanout_p99_ratio` (issue 21): an api node's `/ws/pose` fan-out at 1,000 subscribers
 * against a plain `ws` broadcast of the same bytes to 1,000 clients, in the same run.
 *
 * - The api node is a real `csipose serve --role api --bus nats://...` process on a real
 *   nats-server (`startNats`). It follows `pose.>` as in a cluster; the benchmark stands in for the
 *   worker and publishes real pose frames (the shipped model's, from the simulator's default site
 *   through the live pipeline, made before the run) to `pose.<env>` with the worker's codec and
 *   JetStream publish, 10 a second.
 * - The baseline (`fanoutPlain.ts`) follows a subject of its own on the same bus (a stream of the
 *   same kind) and sends each message's bytes to its clients in a `client.send` loop. What the
 *   benchmark publishes there is, per frame, the very pose_update the api node's clients received
 *   for that frame (recorded before the measurement): the same bytes to the same number of clients.
 * - The clients are bench/stream's client processes (they never parse; frame ids are read from the
 *   bytes): 1,000 on each server, all connected for the whole run. Phases alternate, `rounds`
 *   times, each round starting with the next side (A B, B A, ...): each phase publishes the same
 *   frames to one side only.
 * - Latency is from just before a frame's publication on the bus to its arrival at a client (both
 *   `performance.timeOrigin + performance.now()` on this machine). Per phase: p50 and p99 over
 *   every message of the window, and per frame its first and last delivery (their medians over the
 *   window's frames). `scale.fanout_p99_ratio` is the median over rounds of the api p99 over the
 *   plain p99 of the same round.
 *
 * `node dist/bench/scale/fanout.js [--json] [--quick] [--clients N] [--sets S] [--rounds R]
 * [--client-procs P] [--compare DIST_CLI] [--cpu-prof DIR]`. `--compare` adds a second api node
 * run from another build's `dist/src/cli/main.js` (the code before a change) as a third side of
 * every round, and `scale.fanout_p99_vs_compare` (api p99 over that node's, same round);
 * `--cpu-prof DIR` writes the api node's CPU profile there when it stops.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Subject, lastValueFrom, toArray } from 'rxjs';
import WebSocket from 'ws';
import { connect, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamClient, type NatsConnection } from 'nats';
import { argValue, printResults, type BenchResult } from '../lib.js';
import { cliPath, repoRoot, startServe, stopServe, type ServeProcess } from '../serve.js';
import { siteFrames } from '../frames.js';
import { Child, now, sleep } from '../stream/ipc.js';
import type { ConnectArgs, Received } from '../stream/clients.js';
import { median, ms, phaseFigures, spread, type PhaseFigures } from '../stream/stats.js';
import { startNats, type NatsCluster } from './natsServer.js';
import { filterKey, packPlain, type PlainReady } from './fanoutPlain.js';
import { PoseModel } from '../../src/model/runtime.js';
import { deepFreeze, defaults } from '../../src/config/schema.js';
import type { ConfigSnapshot } from '../../src/config/store.js';
import { livePipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { encodePoseFrame } from '../../src/bus/codec.js';
import { POSE_STREAM, poseSubject } from '../../src/bus/bus.js';
import { WS_PATH } from '../../src/server/ws/endpoint.js';

const here = dirname(fileURLToPath(import.meta.url));
const ENV = 'bench-room';
const PLAIN_STREAM = 'CSIPOSE_BENCH_PLAIN';
const PLAIN_SUBJECT = 'bench.plain.frames';
const LOCAL_ADDRESSES = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 1}`);
const ADMIN_PASSWORD = 'bench-fanout-admin-password';

/** Options of {@link run}. */
export interface FanoutOptions {
  /** A short run: 3 rounds of 2 s windows (default: 10 rounds of 3 s). */
  quick?: boolean;
  /** Subscribers of each server (default 1,000). */
  clients?: number;
  /** Distinct filter sets (default 1): client i subscribes with min_confidence (i % sets) / 100. */
  sets?: number;
  rounds?: number;
  /** Client processes (default 1). */
  clientProcs?: number;
  /** Pose frames per second published (default 10). */
  fps?: number;
  /** Another build's `dist/src/cli/main.js`: a second api node from it, measured in every round. */
  compare?: string;
  /** A folder for the api node's CPU profile (`--cpu-prof`, written when it stops). */
  cpuProf?: string;
  /** Progress lines (default: stderr). */
  log?: (s: string) => void;
}

/** One side of a round: where its clients connect and how a frame is published to it. */
interface Side {
  name: 'api' | 'plain' | 'compare';
  url: string;
  pid: number;
  publish(k: number): void;
}

/** One phase's figures. */
interface Phase extends PhaseFigures {
  /** Medians over the window's frames of each frame's first and last delivery, ms after publication. */
  first: number;
  last: number;
  /** CPU time of the side's server process per frame of the phase, ms (user + system). */
  cpu: number;
  /** CPU time of the client processes per frame of the phase, ms (user + system). */
  clientCpu: number;
}

/**
 * `count` real pose frames: the simulator's default site (three links, two people) through the
 * live pipeline with the shipped model, after the tracks have settled; ids 0.., one environment,
 * 100 ms apart, no alerts or events (what is compared is pose_updates).
 */
async function poseFrames(count: number): Promise<PoseFrame[]> {
  const model = await PoseModel.load(join(repoRoot, 'models/csipose-pose.onnx'));
  try {
    const params = liveParams(deepFreeze(defaults()) as ConfigSnapshot);
    const input = new Subject<ReturnType<typeof siteFrames>[number]>();
    const done = lastValueFrom(
      input.pipe(
        livePipeline({ model, inferStats: { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 } }, () => params),
        toArray(),
      ),
    );
    // A pose frame every 8 ticks once the first window of 128 has filled; 30 frames more to settle.
    const frames = siteFrames(128 + 8 * (count + 30) + 64);
    for (let i = 0; i < frames.length; i += 64) {
      for (let k = i; k < Math.min(i + 64, frames.length); k++) input.next(frames[k]!);
      await new Promise((r) => setImmediate(r));
    }
    input.complete();
    const out = await done;
    if (out.length < count) throw new Error(`the pipeline made ${out.length} pose frames, ${count} wanted`);
    const t0 = Date.now();
    return out.slice(out.length - count).map((f, k) => {
      const { alerts: _a, events: _e, ...rest } = f;
      return { ...rest, frameId: k, environmentId: ENV, time: t0 + k * 100 };
    });
  } finally {
    await model.release();
  }
}

/** User + system CPU time of a process so far, ms (Linux /proc). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) in clock ticks; after the name the list starts at field 3.
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

/** The filters of set s, as the client processes send them. */
const filtersOf = (s: number) => ({ min_confidence: s / 100, include_keypoints: true });

/**
 * Records, per filter set, the pose_update bytes the api node sends for each frame id: one extra
 * subscriber per set, opened by this process.
 */
async function sniff(url: string, key: string, sets: number): Promise<{ received: Array<Map<number, Buffer>>; close: () => void }> {
  const received = Array.from({ length: sets }, () => new Map<number, Buffer>());
  const sockets: WebSocket[] = [];
  await Promise.all(
    Array.from(
      { length: sets },
      (_, s) =>
        new Promise<void>((ok, fail) => {
          const ws = new WebSocket(`${url}?token=${encodeURIComponent(key)}`, { perMessageDeflate: false });
          sockets.push(ws);
          ws.on('error', fail);
          ws.on('message', (data: Buffer) => {
            const text = data.toString();
            if (text.startsWith('{"type":"connection_established"'))
              ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters: filtersOf(s) }));
            else if (text.startsWith('{"type":"subscription_confirmed"')) ok();
            else if (text.startsWith('{"type":"pose_update"')) {
              const m = /"frame_id":(\d+)/.exec(text);
              if (m) received[s]!.set(Number(m[1]), Buffer.from(data));
            }
          });
        }),
    ),
  );
  return { received, close: () => sockets.forEach((ws) => ws.close()) };
}

/**
 * Runs the benchmark.
 * @returns `scale.fanout_p99_ratio` and the figures of each side
 */
export async function run(opts: FanoutOptions = {}): Promise<BenchResult[]> {
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const n = opts.clients ?? 1000;
  const sets = opts.sets ?? 1;
  const rounds = opts.rounds ?? (opts.quick ? 3 : 10);
  const fps = opts.fps ?? 10;
  const warm = 5;
  const measured = opts.quick ? 20 : 30;
  const graceMs = 1000;
  const procs = opts.clientProcs ?? 1;
  const total = warm + measured;

  log(`fan-out: making ${total} pose frames with the shipped model...`);
  const frames = await poseFrames(total);
  /**
   * The frames as a phase publishes them: each phase's frames later than the last phase's, as a
   * worker's are (an api node hands a room's frame of a time on once: one it saw is a resend).
   */
  let busBytes: Uint8Array[] = [];
  const encodePhase = (phase: number) => {
    busBytes = frames.map((f) => encodePoseFrame({ ...f, time: f.time + phase * total * 100 }));
  };

  const keys = Array.from({ length: 10 }, (_, i) => `bench-fanout-${i}-${randomBytes(12).toString('hex')}`);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-fanout-'));
  const overlay = join(dir, 'overlay.json');
  // Room for every client from loopback; no status pushes in the window (the baseline has none).
  writeFileSync(
    overlay,
    JSON.stringify({
      environment: { id: ENV },
      streaming: { ws_max_connections_per_ip: 100_000, ws_max_subscriptions_per_account: 10_000, status_interval_seconds: 3600 },
    }),
  );
  let nats: NatsCluster | undefined;
  let natsCompare: NatsCluster | undefined;
  let nc: NatsConnection | undefined;
  let ncCompare: NatsConnection | undefined;
  const servers: ServeProcess[] = [];
  let plain: Child | undefined;
  const clients: Child[] = [];
  try {
    nats = await startNats(1);
    const env = {
      CSIPOSE_API_KEYS: keys.map((k) => `${k}:viewer`).join(','),
      CSIPOSE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      CSIPOSE_JWT_SECRET: '',
    };
    const apiNode = async (bus: string, cli: string, prof: string | undefined) => {
      const s = await startServe(
        () => ['--role', 'api', '--bus', bus, '--config', overlay, '--no-dashboard', '--log-level', 'error'],
        env,
        'csipose-bench-fanout-api-',
        'inherit',
        prof ? ['--cpu-prof', `--cpu-prof-dir=${resolve(prof)}`, cli] : [cli],
      );
      servers.push(s);
      return s;
    };
    const api = await apiNode(nats.url, cliPath, opts.cpuProf);
    // The other build's node follows `pose.>` too: on a bus of its own, so that it sees only its phases' frames.
    if (opts.compare) natsCompare = await startNats(1);
    const before = natsCompare ? await apiNode(natsCompare.url, resolve(opts.compare!), undefined) : undefined;

    nc = await connect({ servers: nats.url, name: 'csipose-bench-fanout' });
    if (natsCompare) ncCompare = await connect({ servers: natsCompare.url, name: 'csipose-bench-fanout' });
    const jsm = await nc.jetstreamManager();
    // The baseline's subject is stored like the pose stream's, so both take the same path through the server.
    const pose = await jsm.streams.info(POSE_STREAM);
    await jsm.streams.add({
      name: PLAIN_STREAM,
      subjects: [PLAIN_SUBJECT],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: pose.config.max_age,
      duplicate_window: pose.config.duplicate_window,
      num_replicas: 1,
    });
    const js: JetStreamClient = nc.jetstream();
    const subject = poseSubject(ENV);
    // As a worker publishes (src/bus/bus.ts Publisher): without waiting, a message id per frame.
    const acks: Array<Promise<unknown>> = [];
    let phaseNo = 0;
    const publishPose = (k: number) => acks.push(js.publish(subject, busBytes[k]!, { msgID: `pose:${ENV}:${phaseNo}:${k}` }));
    const jsCompare = ncCompare?.jetstream();
    const publishCompare = (k: number) => acks.push(jsCompare!.publish(subject, busBytes[k]!, { msgID: `pose:${ENV}:${phaseNo}:${k}` }));
    let plainBytes: Buffer[] = [];
    const publishPlain = (k: number) => acks.push(js.publish(PLAIN_SUBJECT, plainBytes[k]!, { msgID: `plain:${phaseNo}:${k}` }));

    plain = new Child('plain', join(here, 'fanoutPlain.js'), [nats.url, PLAIN_SUBJECT]);
    const plainReady = (await plain.ready) as PlainReady;
    const setKeys = Array.from({ length: sets }, (_, s) => filterKey(filtersOf(s)));
    await plain.call('setup', { keys: setKeys });
    for (let i = 0; i < procs; i++) clients.push(new Child(`clients${i}`, join(here, '../stream/clients.js')));
    const clientPids = ((await Promise.all(clients.map((c) => c.ready))) as Array<{ pid: number }>).map((r) => r.pid);

    const wsUrl = (s: ServeProcess) => `${s.base.replace(/^http/, 'ws')}${WS_PATH}`;
    const sides: Side[] = [
      { name: 'api', url: wsUrl(api), pid: api.proc.pid!, publish: publishPose },
      ...(before ? [{ name: 'compare' as const, url: wsUrl(before), pid: before.proc.pid!, publish: publishCompare }] : []),
      { name: 'plain', url: plainReady.url, pid: plainReady.pid, publish: publishPlain },
    ];

    /** Publishes the frames at `fps` to one side; returns each frame's publication time. */
    const publishAll = async (side: Side): Promise<Float64Array> => {
      phaseNo++;
      encodePhase(phaseNo);
      // Whatever came after the last phase was settled is not this phase's.
      await Promise.all(clients.map((c) => c.call('report', { clear: true })));
      const times = new Float64Array(total);
      const t0 = now() + 50;
      for (let k = 0; k < total; k++) {
        const wait = t0 + (k * 1000) / fps - now();
        if (wait > 1) await sleep(wait);
        times[k] = now();
        side.publish(k);
      }
      await Promise.all(acks.splice(0));
      return times;
    };

    /**
     * Waits until every client has every frame of the phase (or `graceMs` more has passed since
     * the last one came), so that no phase's messages run into the next.
     */
    const settled = async (): Promise<void> => {
      let last = -1;
      let since = now();
      for (;;) {
        const got = (await Promise.all(clients.map((c) => c.call<{ count: number }>('count')))).reduce((a, c) => a + c.count, 0);
        if (got >= total * n) break;
        if (got !== last) {
          last = got;
          since = now();
        } else if (now() - since > graceMs) break;
        await sleep(20);
      }
      await sleep(100);
    };

    // Every client on every side, connected for the whole run (64 handshakes in flight per process).
    const per = Math.ceil(n / procs);
    for (const side of sides) {
      const t0 = now();
      await Promise.all(
        clients.map((c, k) => {
          const args: ConnectArgs = {
            url: side.url,
            offset: k * per,
            count: Math.max(0, Math.min(per, n - k * per)),
            keys,
            sets,
            concurrency: 64,
            localAddresses: LOCAL_ADDRESSES,
          };
          return c.call('connect', args, 300_000);
        }),
      );
      log(`fan-out: ${n} clients on ${side.name} in ${Math.round(now() - t0)} ms`);
    }

    // Not measured: the api node's bytes for every frame and filter set (also a warm-up of its
    // path and of the clients), until every frame came to every set.
    const sniffers = await sniff(sides[0]!.url, keys[0]!, sets);
    for (let attempt = 0; ; attempt++) {
      await publishAll(sides[0]!);
      await settled();
      if (sniffers.received.every((m) => m.size === total)) break;
      if (attempt === 5)
        throw new Error(`the api node sent ${sniffers.received.map((m) => m.size).join(', ')} of ${total} frames to the recording subscribers`);
    }
    sniffers.close();
    plainBytes = frames.map((_, k) => packPlain(sniffers.received.map((m) => m.get(k)!)));
    // Warm-up of the other sides.
    for (const side of sides.slice(1)) {
      await publishAll(side);
      await settled();
    }

    const phases = new Map<Side['name'], Phase[]>(sides.map((s) => [s.name, []]));
    const load0 = loadavg()[0]!;
    for (let r = 0; r < rounds; r++) {
      // Each round starts with the next side (A B, B A, ...): a side's place in the round, after
      // which other side's traffic, is not always the same.
      for (const side of sides.map((_, i) => sides[(i + r) % sides.length]!)) {
        const clientCpu = () => clientPids.reduce((a, pid) => a + cpuMs(pid), 0);
        const c0 = cpuMs(side.pid);
        const k0 = clientCpu();
        const times = await publishAll(side);
        await settled();
        const c1 = cpuMs(side.pid);
        const k1 = clientCpu();
        const recs = await Promise.all(clients.map((c) => c.call<Received>('report', { clear: true })));
        const ids = Int32Array.from({ length: measured }, (_, i) => warm + i);
        const pub = { ids, times: times.slice(warm) };
        const f = phaseFigures(pub, recs, n, measured / fps);
        const p: Phase = { ...f, ...firstLast(pub.times, warm, recs), cpu: (c1 - c0) / total, clientCpu: (k1 - k0) / total };
        phases.get(side.name)!.push(p);
        log(
          `  round ${r + 1} ${side.name.padEnd(7)}: p50 ${ms(p.p50)} p99 ${ms(p.p99)} max ${ms(p.max)} first ${ms(p.first)} last ${ms(p.last)} ms, ` +
            `lost ${p.lost}/${p.expected}, ${Math.round(p.meanBytes)} B/msg, CPU/frame server ${ms(p.cpu)} clients ${ms(p.clientCpu)} ms`,
        );
      }
    }
    // The machine's 1-minute load average around the rounds: on a shared machine it decides the tails.
    const load = `${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}`;
    return results(phases, { n, sets, fps, rounds, measured, compare: opts.compare, load });
  } finally {
    await Promise.all(clients.map((c) => c.stop()));
    await plain?.stop();
    for (const s of servers) await stopServe(s);
    await nc?.close().catch(() => undefined);
    await ncCompare?.close().catch(() => undefined);
    await nats?.stop();
    await natsCompare?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Medians over the window's frames of each frame's first and last delivery to any client.
 * @param times publication times of the window's frames (frame id `warm + i` at `times[i]`)
 */
function firstLast(times: Float64Array, warm: number, recs: readonly Received[]): { first: number; last: number } {
  const first = new Float64Array(times.length).fill(Infinity);
  const last = new Float64Array(times.length).fill(-Infinity);
  for (const r of recs) {
    for (let i = 0; i < r.ids.length; i++) {
      const k = r.ids[i]! - warm;
      if (k < 0 || k >= times.length) continue;
      const t = r.times[i]! - times[k]!;
      if (t < first[k]!) first[k] = t;
      if (t > last[k]!) last[k] = t;
    }
  }
  const ok = (a: Float64Array) => [...a].filter(Number.isFinite);
  return { first: median(ok(first)), last: median(ok(last)) };
}

/** The named results from every side's phases. */
function results(
  phases: Map<Side['name'], Phase[]>,
  o: { n: number; sets: number; fps: number; rounds: number; measured: number; compare: string | undefined; load: string },
): BenchResult[] {
  const api = phases.get('api')!;
  const plain = phases.get('plain')!;
  const bytes = median([...api, ...plain].map((p) => p.meanBytes));
  const where =
    `${o.n} subscribers, ${o.sets} filter set${o.sets > 1 ? 's' : ''}, ${o.fps} pose frames/s, pose_updates of ${Math.round(bytes)} B on average, ` +
    `${o.rounds} rounds (api, ${o.compare ? 'compare, ' : ''}plain, each round starting with the next side) of ${o.measured} frames, load average ${o.load}; latency from the bus publication to a client's receipt`;
  const out: BenchResult[] = [];
  const ratio = (a: Phase[], b: Phase[]) => a.map((p, i) => p.p99 / b[i]!.p99);
  const r = ratio(api, plain);
  out.push({
    name: 'scale.fanout_p99_ratio',
    value: median(r),
    unit: 'ratio',
    n: r.length,
    ...(spread(r) !== undefined ? { spread: spread(r)! } : {}),
    note: `p99 of the api node's /ws/pose over p99 of a plain ws broadcast of the same bytes, same round (target <= 1); ${where}; rounds ${r.map((x) => x.toFixed(3)).join(', ')}`,
  });
  if (o.compare) {
    const c = ratio(api, phases.get('compare')!);
    out.push({
      name: 'scale.fanout_p99_vs_compare',
      value: median(c),
      unit: 'ratio',
      n: c.length,
      note: `p99 of this build's api node over that of ${o.compare}, same round; rounds ${c.map((x) => x.toFixed(3)).join(', ')}`,
    });
  }
  for (const [side, ph] of phases) {
    const label = side === 'api' ? "api node's /ws/pose" : side === 'plain' ? 'plain ws broadcast' : `api node of ${o.compare}`;
    const fig = (figure: string, unit: string, f: (p: Phase) => number, what: string) => {
      const v = ph.map(f);
      const s = spread(v);
      out.push({
        name: `scale.fanout_${side}_${figure}`,
        value: median(v),
        unit,
        n: ph.reduce((a, p) => a + p.received, 0),
        ...(s !== undefined ? { spread: s } : {}),
        note: `${label}: ${what}; rounds ${v.map(ms).join(', ')}`,
      });
    };
    fig('p50_ms', 'ms', (p) => p.p50, 'p50 over every message');
    fig('p99_ms', 'ms', (p) => p.p99, 'p99 over every message');
    fig('first_ms', 'ms', (p) => p.first, "median over frames of the frame's first delivery");
    fig('last_ms', 'ms', (p) => p.last, "median over frames of the frame's last delivery");
    fig('cpu_ms_per_frame', 'ms', (p) => p.cpu, 'CPU time of the server process per frame (user + system)');
    fig('client_cpu_ms_per_frame', 'ms', (p) => p.clientCpu, 'CPU time of the client processes per frame (user + system), while this side was measured');
    fig('lost', 'messages', (p) => p.lost, `messages not received of ${ph[0]?.expected ?? 0} per round`);
  }
  out[0]!.note += `; api p99 ${api.map((p) => ms(p.p99)).join(', ')}, plain p99 ${plain.map((p) => ms(p.p99)).join(', ')}`;
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const num = (flag: string) => {
    const v = argValue(flag);
    return v === undefined ? undefined : Number(v);
  };
  const o: FanoutOptions = { quick: process.argv.includes('--quick') };
  for (const [flag, k] of [
    ['--clients', 'clients'],
    ['--sets', 'sets'],
    ['--rounds', 'rounds'],
    ['--client-procs', 'clientProcs'],
    ['--fps', 'fps'],
  ] as const) {
    const v = num(flag);
    if (v !== undefined) o[k] = v;
  }
  const compare = argValue('--compare');
  if (compare) o.compare = compare;
  const prof = argValue('--cpu-prof');
  if (prof) o.cpuProf = prof;
  run(o).then(
    (results) => {
      printResults(results, process.argv.includes('--json'));
      process.exit(0);
    },
    (e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error)?.stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}
