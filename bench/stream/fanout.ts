/**
 * Part 1 of `npm run bench:stream`: `/ws/pose` (uWebSockets.js topics, {@link Fanout}) against a
 * plain `ws` broadcast of the same frames to the same clients, in one server process, A B A B.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../lib.js';
import { HOP } from '../../src/model/features.js';
import { Child, now, sleep } from './ipc.js';
import { repoRoot } from '../serve.js';
import type { ConnectArgs, Received } from './clients.js';
import type { Published, ServerReady, ServerStats } from './server.js';
import { ms, phaseFigures } from './stats.js';
import { configResults, summaryResults, type Phase, type Runs, type Side } from './results.js';
import type { Plan } from './plan.js';

/** This folder: the compiled server and client scripts sit beside this one. */
const here = dirname(fileURLToPath(import.meta.url));
export const MODEL = join(repoRoot, 'models/csipose-pose.onnx');

/** The simulator's CSI rate (its default `rateHz`): pose frames/s = SIM_RATE_HZ x speed / HOP. */
const SIM_RATE_HZ = 100;

const LOCAL_ADDRESSES = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 1}`);

/** Credentials the clients spread over (10 accounts: none near the per-account subscription limit). */
function apiKeys(): string[] {
  return Array.from({ length: 10 }, (_, i) => `bench-stream-${i}-${randomBytes(12).toString('hex')}`);
}

/** A server process on a temp data dir, at one simulator speed; removed by `close`. */
async function startServerProcess(speed: number, keys: string[]): Promise<{ child: Child; ready: ServerReady; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-stream-'));
  const config = join(dir, 'overlay.json');
  writeFileSync(
    config,
    JSON.stringify({
      neural_network: { model_path: MODEL },
      // Room for 10,000 clients from loopback; no status pushes in the window (the plain
      // broadcast has none): what is compared is pose frames only.
      streaming: { ws_max_connections_per_ip: 100_000, ws_max_subscriptions_per_account: 10_000, status_interval_seconds: 3600 },
    }),
  );
  const prevKeys = process.env.CSIPOSE_API_KEYS;
  const prevPassword = process.env.CSIPOSE_ADMIN_PASSWORD;
  process.env.CSIPOSE_API_KEYS = keys.map((k) => `${k}:viewer`).join(',');
  process.env.CSIPOSE_ADMIN_PASSWORD ??= `bench-${randomBytes(8).toString('hex')}`;
  let child: Child | undefined;
  const close = async () => {
    await child?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    child = new Child('server', join(here, 'server.js'), [join(dir, 'data'), config, `sim?speed=${speed}`]);
    await child.ready;
    const ready = await child.call<ServerReady>('start', {}, 90_000);
    return { child, ready, close };
  } catch (e) {
    await close();
    throw e;
  } finally {
    if (prevKeys === undefined) delete process.env.CSIPOSE_API_KEYS;
    else process.env.CSIPOSE_API_KEYS = prevKeys;
    if (prevPassword === undefined) delete process.env.CSIPOSE_ADMIN_PASSWORD;
  }
}

/** Polls until the side's server has no connection left (the last phase's closes are processed). */
async function drained(server: Child, side: Side): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const c = await server.call<Record<Side, number>>('connections');
    if (c[side] === 0) return;
    await sleep(50);
  }
  throw new Error(`${side}: connections still open 30 s after the clients closed`);
}

/** Where a phase runs: the server process, the client processes, the side's URL and its frame rate. */
interface Stage {
  server: Child;
  clients: Child[];
  url: string;
  side: Side;
  /** Nominal pose frames per second. */
  fps: number;
  keys: string[];
}

/** Connects n clients to the stage's side, split evenly over the client processes (64 handshakes in flight each). */
async function connectAll(st: Stage, n: number, sets: number): Promise<void> {
  const per = Math.ceil(n / st.clients.length);
  await Promise.all(
    st.clients.map((c, k) => {
      const args: ConnectArgs = {
        url: st.url,
        offset: k * per,
        count: Math.max(0, Math.min(per, n - k * per)),
        keys: st.keys,
        sets,
        concurrency: 64,
        localAddresses: LOCAL_ADDRESSES,
      };
      return c.call('connect', args, 300_000);
    }),
  );
}

/**
 * One phase: the system restarts (frame 0 again), N clients connect to one side and subscribe
 * while the first window fills, frames [0, W) warm up, frames [W, W + M) are measured: each of
 * them is expected once by every client. Then the clients disconnect and the server is drained.
 */
async function phase(plan: Plan, st: Stage, n: number, sets: number): Promise<Phase> {
  const warm = Math.max(2, Math.round((plan.warmupMs / 1000) * st.fps));
  const frames = Math.max(2, Math.round((plan.measureMs / 1000) * st.fps));
  await st.server.call('restart', {}, 60_000);
  try {
    const t0 = now();
    await connectAll(st, n, sets);
    const connectMs = now() - t0;
    const at = await st.server.call<{ count: number }>('frames', {});
    // Every client must be subscribed before frame W, or it would miss frames of the window.
    if (at.count >= warm)
      throw new Error(
        `connecting ${n} clients took ${Math.round(connectMs)} ms: frame ${at.count} was out before the window's frame ${warm}; lengthen the warm-up`,
      );
    const budget = ((warm + frames) / st.fps) * 1000 * 3 + 30_000;
    type Cpu = { user: number; system: number };
    // CPU from the end of frame W - 1's publication to the end of the window's last frame's.
    await st.server.call('frames', { until: warm, timeoutMs: budget }, budget + 5000);
    const [s0, c0] = await Promise.all([st.server.call<ServerStats>('stats'), Promise.all(st.clients.map((c) => c.call<Cpu>('cpu')))]);
    await st.server.call('frames', { until: warm + frames, timeoutMs: budget }, budget + 5000);
    const [s1, c1] = await Promise.all([st.server.call<ServerStats>('stats'), Promise.all(st.clients.map((c) => c.call<Cpu>('cpu')))]);
    await sleep(plan.graceMs);
    const recs = await Promise.all(st.clients.map((c) => c.call<Received>('report')));
    const pub = await st.server.call<Published>('published', { from: warm, to: warm + frames - 1 });
    // The window from its first frame's publication to its last's, plus one frame interval.
    const span = pub.times.length > 1 ? ((pub.times[pub.times.length - 1]! - pub.times[0]!) / (pub.times.length - 1)) * pub.times.length : NaN;
    const f = phaseFigures(pub, recs, n, span / 1000);
    return {
      ...f,
      connectMs,
      dropped: s1.ours.poseFramesDropped - s0.ours.poseFramesDropped,
      unexpectedCloses: recs.reduce((s, r) => s + r.unexpectedCloses, 0),
      serverUser: (s1.cpu.user - s0.cpu.user) / 1000 / frames,
      serverSys: (s1.cpu.system - s0.cpu.system) / 1000 / frames,
      clientUser: c1.reduce((s, c, k) => s + c.user - c0[k]!.user, 0) / 1000 / frames,
      clientSys: c1.reduce((s, c, k) => s + c.system - c0[k]!.system, 0) / 1000 / frames,
    };
  } finally {
    await Promise.all(st.clients.map((c) => c.call('close', {}, 120_000)));
    await drained(st.server, st.side);
  }
}

/**
 * Not measured: n clients on the side take `frames` frames and leave, so that the first measured
 * phase of a server process does not also pay for JIT warm-up of the server's and the clients'
 * code paths (it would always be ours, the first side).
 */
async function prime(st: Stage, n: number, frames: number): Promise<void> {
  try {
    await connectAll(st, n, 10);
    const at = await st.server.call<{ count: number }>('frames', {});
    await st.server.call('frames', { until: at.count + frames, timeoutMs: 60_000 }, 65_000);
  } finally {
    await Promise.all(st.clients.map((c) => c.call('close', {}, 120_000)));
    await drained(st.server, st.side);
  }
}

/**
 * Runs every configuration of the plan: per server process (one frame rate), per client count and
 * filter-set count, `rounds` x (ours, then plain ws), each phase from connect to disconnect.
 * @returns the named results (see DECISIONS "Benchmark output")
 */
export async function runFanout(plan: Plan, log: (s: string) => void): Promise<BenchResult[]> {
  const keys = apiKeys();
  const out: BenchResult[] = [];
  const runs: Runs = new Map();
  /** Client count -> the pose frames/s of its server. */
  const rates = new Map<number, number>();
  const clients = Array.from({ length: plan.clientProcs }, (_, i) => new Child(`clients${i}`, join(here, 'clients.js')));
  try {
    await Promise.all(clients.map((c) => c.ready));
    for (const { speed, counts } of plan.rates) {
      log(`fan-out: starting the service (sim speed ${speed})...`);
      const srv = await startServerProcess(speed, keys);
      try {
        log(`fan-out: ${srv.ready.frameRate.toFixed(2)} pose frames/s; priming both servers (not measured)...`);
        const fps = (SIM_RATE_HZ * speed) / HOP;
        for (const side of ['ours', 'baseline'] as const) {
          const url = side === 'ours' ? srv.ready.oursUrl : srv.ready.baselineUrl;
          await prime({ server: srv.child, clients, url, side, fps, keys }, Math.min(1000, ...counts), Math.max(3, Math.round(fps)));
        }
        for (const n of counts) {
          rates.set(n, srv.ready.frameRate);
          for (const sets of plan.sets) {
            const r: Record<Side, Phase[]> = { ours: [], baseline: [] };
            runs.set(`${n}/${sets}`, r);
            for (let round = 0; round < plan.rounds; round++) {
              for (const side of ['ours', 'baseline'] as const) {
                const url = side === 'ours' ? srv.ready.oursUrl : srv.ready.baselineUrl;
                const p = await phase(plan, { server: srv.child, clients, url, side, fps, keys }, n, sets);
                r[side].push(p);
                log(
                  `  ${String(n).padStart(5)} clients, ${String(sets).padStart(2)} sets, round ${round + 1}, ${side.padEnd(8)}: ${p.frames} frames at ${p.fps.toFixed(2)}/s, ` +
                    `p50 ${ms(p.p50)} p99 ${ms(p.p99)} max ${ms(p.max)} ms, ${Math.round(p.msgsPerS)} msg/s, lost ${p.lost}/${p.expected}, ` +
                    `${Math.round(p.meanBytes)} B/msg, connect ${Math.round(p.connectMs)} ms, ` +
                    `CPU/frame server ${ms(p.serverUser)} user + ${ms(p.serverSys)} sys, clients ${ms(p.clientUser)} + ${ms(p.clientSys)} ms`,
                );
              }
            }
            out.push(...configResults(r, n, sets, plan));
          }
        }
      } finally {
        await srv.close();
      }
    }
  } finally {
    await Promise.all(clients.map((c) => c.stop()));
  }
  out.push(...summaryResults(runs, rates));
  return out;
}
