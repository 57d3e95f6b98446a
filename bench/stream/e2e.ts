/**
 * Part 2 of `npm run bench:stream`: one CSI packet sent by UDP -> the pose_update a WebSocket
 * client receives, through the real application (`csipose serve --source udp://...`).
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import type { BenchResult } from '../lib.js';
import { argValue } from '../lib.js';
import { datagrams, samplesDir } from './captures.js';
import { MODEL } from './fanout.js';
import { repoRoot, startServe, stopServe, type ServeProcess } from '../serve.js';
import { now, sleep } from './ipc.js';
import { median, ms, quantile } from './stats.js';

/**
 * The capture replayed: the Intel 5300 log's 3x3 records (10 records of 30 subcarriers, looped), a
 * layout the shipped model was trained on. Checked by running each through `csipose serve`
 * (`--e2e-format F` overrides):
 * - intel5300 (log.all_csi.6.7.6, 29 records): the 10 records of 3x3 antennas are sent. All 29
 *   give no pose frame ever: they alternate between 3x1, 3x2 and 3x3 antenna layouts and the window
 *   operator empties its buffer on each shape change, so a 128-frame window never fills.
 * - nexmon (example_43455c0.pcap, 256 subcarriers spanning 80 MHz) and esp32 (example_csi.csv, 64
 *   subcarriers at 2.4 GHz): the service drops their windows, since the shipped model was not
 *   trained on those layouts (docs/model.md, "Trained layouts"), and no pose frame comes out.
 *   Until that check, nexmon was the format measured (the figures of the earlier runs).
 */
export const FORMAT: CaptureFormat = 'intel5300';
/** Packets per second, as a router sends them. */
export const RATE_HZ = 100;

export interface E2eOptions {
  /** Pose frames measured (after the warm-up ones). */
  frames: number;
  warmupFrames: number;
}

/** A free UDP port on 127.0.0.1 (bound and released; the server binds it a moment later). */
export async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((ok) => s.bind(0, '127.0.0.1', ok));
  const port = s.address().port;
  await new Promise<void>((ok) => s.close(() => ok()));
  return port;
}

/** Starts `csipose serve` with the UDP source and waits until its system is running. */
export async function serve(format: CaptureFormat, udpPort: number, key: string): Promise<ServeProcess> {
  const running = await startServe(
    (dir) => {
      const config = join(dir, 'overlay.json');
      writeFileSync(config, JSON.stringify({ neural_network: { model_path: MODEL } }));
      return ['--config', config, '--source', `udp://127.0.0.1:${udpPort}?format=${format}`, '--log-level', 'error'];
    },
    { CSIPOSE_API_KEYS: `${key}:viewer`, CSIPOSE_ADMIN_PASSWORD: `bench-${randomBytes(8).toString('hex')}` },
    'csipose-bench-e2e-',
  );
  try {
    for (let i = 0; ; i++) {
      const r = await fetch(`${running.base}/api/v1/system/status`, { headers: { 'x-api-key': key } });
      const body = (await r.json()) as { data?: { status?: string } };
      if (body.data?.status === 'running') break;
      if (i > 300) throw new Error(`system not running after 30 s: ${JSON.stringify(body).slice(0, 300)}`);
      await sleep(100);
    }
    return running;
  } catch (e) {
    await stopServe(running);
    throw e;
  }
}

/** A client subscribed to pose_updates with default filters; calls `onPose(timestampMs, receivedAt)`. */
export async function subscribe(base: string, key: string, onPose: (timestamp: number, at: number) => void): Promise<WebSocket> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/pose?token=${encodeURIComponent(key)}`, { perMessageDeflate: false });
  const TS = '"timestamp":"';
  await new Promise<void>((ok, fail) => {
    const t = setTimeout(() => fail(new Error('no subscription_confirmed in 20 s')), 20_000);
    ws.on('error', fail);
    ws.on('message', (data: Buffer) => {
      const at = now();
      const text = data.toString();
      if (text.startsWith('{"type":"pose_update"')) {
        const i = text.indexOf(TS) + TS.length;
        onPose(Date.parse(text.slice(i, text.indexOf('"', i))), at);
      } else if (text.startsWith('{"type":"connection_established"')) ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates' }));
      else if (text.startsWith('{"type":"subscription_confirmed"')) {
        clearTimeout(t);
        ok();
      } else if (text.startsWith('{"type":"error"')) fail(new Error(text.slice(0, 300)));
    });
  });
  return ws;
}

/** `Date.now() - now()` at a millisecond edge: converts our send times to the server's `Date.now()` clock. */
export async function wallOffset(): Promise<number> {
  const offsets: number[] = [];
  for (let k = 0; k < 5; k++) {
    const d0 = Date.now();
    let d = d0;
    let t = now();
    while (d === d0) {
      t = now();
      d = Date.now();
    }
    offsets.push(d - t);
    await sleep(3);
  }
  return median(offsets);
}

/** Sends the datagrams round and round at RATE_HZ, recording when each left; `stop()` ends it. */
export function sender(sock: Socket, packets: readonly Buffer[], sent: number[]): { stop: () => void } {
  const period = 1000 / RATE_HZ;
  const start = now() + 5;
  let k = 0;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    const t = now();
    if (t >= start + k * period - 0.5) {
      sent.push(now());
      sock.send(packets[k % packets.length]!);
      k++;
    }
    timer = setTimeout(tick, Math.max(0, start + k * period - now() - 0.5));
  };
  timer = setTimeout(tick, 5);
  return { stop: () => clearTimeout(timer) };
}

/**
 * The datagrams sent: the capture's, in recorded order; of an Intel 5300 capture only the 3x3
 * records (they carry Nrx and Ntx at bytes 11 and 12: one layout, so windows fill).
 * @param dir the samples folder
 * @param format the capture's format
 */
export function e2ePackets(dir: string, format: CaptureFormat): Buffer[] {
  const all = datagrams(dir, format);
  return format === 'intel5300' ? all.filter((d) => d[11] === 3 && d[12] === 3) : all;
}

/**
 * Latency of each pose frame: its arrival at the client minus the sending of the CSI packet its
 * window ended on, the last packet sent at or before the frame's `timestamp` + 1 ms (on the
 * server's wall clock, `sent` + `offset`).
 * @param poses pose frames as received: `timestamp` (server wall clock, ms) and `at` (`now()` here)
 * @param sent send times (`now()` here), ascending
 * @param offset `Date.now() - now()` ({@link wallOffset})
 * @returns latencies (ms) and the frame timestamp minus the matched send (ms), for the frames matched
 */
export function matchLatencies(
  poses: ReadonlyArray<{ timestamp: number; at: number }>,
  sent: readonly number[],
  offset: number,
): { lat: number[]; gaps: number[] } {
  const lat: number[] = [];
  const gaps: number[] = [];
  for (const p of poses) {
    // The last packet sent at or before timestamp + 1 ms (on the server's wall clock).
    let lo = 0;
    let hi = sent.length - 1;
    let best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (sent[mid]! + offset <= p.timestamp + 1) {
        best = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (best < 0) continue;
    lat.push(p.at - sent[best]!);
    gaps.push(p.timestamp - (sent[best]! + offset));
  }
  return { lat, gaps };
}

/**
 * Latency from a CSI packet leaving the sender to the pose_update that names it arriving at a
 * client: the real application (`csipose serve`, shipped model, UDP source), one client with
 * default filters, packets of a real capture at 100 Hz. A pose frame's `timestamp` is the arrival
 * time (ms) of the last packet of its window; the packet is the last one sent at or before
 * timestamp + 1 ms. Send and receive times are both taken in this process, so the latency needs
 * no clock shared with the server; only the matching reads the server's wall clock.
 */
export async function runE2e(o: E2eOptions, log: (s: string) => void): Promise<BenchResult[]> {
  const dir = samplesDir(repoRoot);
  if (!dir) {
    log('e2e: SKIPPED: the real captures (../shared/csi-samples, or CSIPOSE_SAMPLES_DIR) are not here; no e2e.udp_to_ws_* figures');
    return [];
  }
  const format = (argValue('--e2e-format') as CaptureFormat | undefined) ?? FORMAT;
  const packets = e2ePackets(dir, format);
  const key = `bench-e2e-${randomBytes(12).toString('hex')}`;
  const udpPort = await freeUdpPort();
  log(`e2e: csipose serve --source udp://127.0.0.1:${udpPort}?format=${format} (${packets.length} packets of ${format} looped at ${RATE_HZ} Hz)...`);
  const server = await serve(format, udpPort, key);
  const sock = createSocket('udp4');
  let ws: WebSocket | undefined;
  let send: { stop: () => void } | undefined;
  try {
    await new Promise<void>((ok) => sock.connect(udpPort, '127.0.0.1', ok));
    const poses: Array<{ timestamp: number; at: number }> = [];
    const want = o.warmupFrames + o.frames;
    let done!: () => void;
    const enough = new Promise<void>((ok) => (done = ok));
    ws = await subscribe(server.base, key, (timestamp, at) => {
      poses.push({ timestamp, at });
      if (poses.length >= want) done();
    });
    const offset = await wallOffset();
    const sent: number[] = [];
    send = sender(sock, packets, sent);
    const limit = 30_000 + ((want * 1000 * 8) / RATE_HZ) * 2;
    await Promise.race([enough, sleep(limit)]);
    send.stop();
    if (poses.length < want) throw new Error(`e2e: only ${poses.length} pose frames of ${want} in ${Math.round(limit / 1000)} s from ${format} packets`);
    const { lat, gaps } = matchLatencies(poses.slice(o.warmupFrames, want), sent, offset);
    const sorted = Float64Array.from(lat).sort();
    const where = `${format} capture (${packets.length} packets looped) at ${RATE_HZ} Hz by UDP into csipose serve, 1 client, default filters, ${sorted.length} pose frames after ${o.warmupFrames} warm-up; frame timestamp minus matched send: median ${ms(median(gaps))} ms`;
    log(`e2e: p50 ${ms(quantile(sorted, 0.5))} p99 ${ms(quantile(sorted, 0.99))} max ${ms(sorted[sorted.length - 1]!)} ms over ${sorted.length} frames`);
    return [
      { name: 'e2e.udp_to_ws_p50_ms', value: quantile(sorted, 0.5), unit: 'ms', n: sorted.length, note: where },
      { name: 'e2e.udp_to_ws_p99_ms', value: quantile(sorted, 0.99), unit: 'ms', n: sorted.length, note: `${where}; max ${ms(sorted[sorted.length - 1]!)} ms` },
    ];
  } finally {
    send?.stop();
    ws?.terminate();
    sock.close();
    await stopServe(server);
  }
}
