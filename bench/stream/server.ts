/**
 * The server process of the fan-out benchmark (forked by `bench/stream.ts`): the real service
 * (`PoseService.open` on a temp data dir, the shipped model, the simulator as source) with the real
 * uWebSockets.js server (`ServerOutlet`, `/ws/pose`) and, on another port, the plain `ws` broadcast
 * of the same `pose$`. After the latest-frame and metrics outlets (which the service ran itself
 * before they became outlets) and before either server attaches, a subscriber of `pose$` records
 * when each frame is published (frame_id -> wall time): the zero of every latency.
 *
 * argv: DATA_DIR CONFIG_FILE SOURCE_URI; environment: CSIPOSE_API_KEYS (the clients' credentials).
 * Commands: `start`, `restart`, `frames`, `published`, `connections`, `stats`, `stop`.
 *
 * Every phase of the benchmark restarts the system first: the simulator's seed and clock are fixed
 * and frame ids start at 0 per session, so frame k of every phase is the same frame (the same
 * persons, the same bytes), and ours and the plain broadcast are measured on identical frames.
 */
import { resolve } from 'node:path';
import { PoseService } from '../../src/service/service.js';
import { ServerOutlet } from '../../src/server/server.js';
import { serverFace } from '../../src/app.js';
import { LatestOutlet } from '../../src/outlets/latest.js';
import { MetricsOutlet } from '../../src/outlets/metrics.js';
import { WebhookOutlet } from '../../src/outlets/webhooks.js';
import { WS_PATH } from '../../src/server/ws/endpoint.js';
import { PlainWsBroadcast } from './baseline.js';
import { announce, now, serve, sleep } from './ipc.js';

/** Publish times kept (a ring): at 10 frames/s, 100 minutes of frames. */
const KEPT = 1 << 16;

/** What `start` reports to the orchestrator. */
export interface ServerReady {
  oursUrl: string;
  baselineUrl: string;
  /** Pose frames per second measured while waiting for the first frames. */
  frameRate: number;
}

/** What `stats` returns. */
export interface ServerStats {
  ours: { poseFramesDropped: number; posePublishes: number };
  baseline: { frames: number; sends: number };
  /** process.cpuUsage(): user and system µs of the server process. */
  cpu: { user: number; system: number };
}

/** Publish times of frames with ids in [from, to] (of the current session). */
export interface Published {
  ids: Int32Array;
  times: Float64Array;
}

/** Opens the service and both servers, then answers the orchestrator's commands until `stop`. */
async function main(): Promise<void> {
  const [dataDir, configFile, source] = process.argv.slice(2);
  if (!dataDir || !configFile || !source) throw new Error('usage: server.js DATA_DIR CONFIG_FILE SOURCE');
  const log = (level: string, msg: string) => {
    if (level === 'error') process.stderr.write(`[server ${level}] ${msg}\n`);
  };
  const svc = await PoseService.open({ dataDir, configFile, source, env: process.env, log });
  const latest = new LatestOutlet((e) => log('error', `latest-frame cache: ${String(e)}`));
  const metrics = new MetricsOutlet(svc.store, svc.log);
  // The REST face includes the webhooks' commands; none is registered here, so it sends nothing.
  const webhooks = new WebhookOutlet(svc.config, dataDir, svc.version, svc.log);
  latest.start(svc);
  metrics.start(svc);
  webhooks.start(svc);
  // First subscriber after those outlets, before both servers: the publish instant.
  const ids = new Int32Array(KEPT);
  const times = new Float64Array(KEPT);
  let count = 0;
  svc.pose$.subscribe((v) => {
    const i = count++ & (KEPT - 1);
    ids[i] = v.frame.frameId;
    times[i] = now();
  });
  const ours = new ServerOutlet(serverFace(svc, latest, metrics, webhooks), { host: '127.0.0.1', port: 0, rateLimitScale: 1, log });
  await ours.start(svc);
  const http = ours.server;
  const form = () => svc.config.get().server.response_form;
  const baseline = await PlainWsBroadcast.listen(svc.pose$, form);
  const fanout = http.socket!.fanout;
  let stopping: Promise<void> | undefined;

  serve({
    /** Starts the system and waits for steady frames; reports the URLs and the frame rate. */
    async start(): Promise<ServerReady> {
      svc.system.start();
      const t0 = Date.now();
      while (count < 3) {
        if (Date.now() - t0 > 60_000) throw new Error(`no pose frames within 60 s (system ${svc.system.state}: ${JSON.stringify(svc.system.error ?? null)})`);
        await sleep(50);
      }
      const c0 = count;
      const s0 = now();
      await sleep(2000);
      return {
        oursUrl: `ws://127.0.0.1:${http.port}${WS_PATH}`,
        baselineUrl: `ws://127.0.0.1:${baseline.port}/`,
        frameRate: ((count - c0) * 1000) / (now() - s0),
      };
    },
    /** Restarts the system (the same frames again from frame 0) and forgets the last session's frames. */
    async restart(): Promise<{ ms: number }> {
      const t0 = now();
      svc.system.restart();
      await svc.system.settled();
      if (svc.system.state !== 'running') throw new Error(`system ${svc.system.state} after restart: ${JSON.stringify(svc.system.error ?? null)}`);
      // No pose frame of the new session before its first window has filled (over a second).
      count = 0;
      return { ms: now() - t0 };
    },
    /** Frames published in this session so far; with `until`, waits until that many are. */
    async frames(a: { until?: number; timeoutMs?: number }): Promise<{ count: number }> {
      const t0 = Date.now();
      while (a.until !== undefined && count < a.until) {
        if (Date.now() - t0 > (a.timeoutMs ?? 60_000)) throw new Error(`only ${count} of ${a.until} frames published`);
        await sleep(5);
      }
      return { count };
    },
    /** Publish times of this session's frames with ids in [from, to]. */
    published(a: { from: number; to: number }): Published {
      const outIds: number[] = [];
      const outTimes: number[] = [];
      for (let k = Math.max(0, count - KEPT); k < count; k++) {
        const i = k & (KEPT - 1);
        if (ids[i]! >= a.from && ids[i]! <= a.to) {
          outIds.push(ids[i]!);
          outTimes.push(times[i]!);
        }
      }
      return { ids: Int32Array.from(outIds), times: Float64Array.from(outTimes) };
    },
    /** Open connections on each server. */
    connections: () => ({ ours: fanout.connections, baseline: baseline.connections }),
    /** What each fan-out did (frames, publishes or sends, frames uWS dropped for slow clients) and this process's CPU time so far. */
    stats: (): ServerStats => ({ ours: { ...fanout.stats }, baseline: { ...baseline.stats }, cpu: process.cpuUsage() }),
    stop() {
      stopping ??= (async () => {
        await baseline.close();
        ours.close();
        metrics.close();
        latest.close();
        webhooks.close();
        await svc.close();
        setTimeout(() => process.exit(0), 50);
      })();
      return stopping;
    },
  });
  announce({ pid: process.pid, model: resolve(svc.config.get().neural_network.model_path) });
}

main().catch((e: unknown) => {
  process.stderr.write(`stream bench server failed: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
