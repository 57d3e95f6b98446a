/**
 * `scale.alerts_lost` and `scale.alerts_duplicated` (both must be 0) across worker kills (20, or 3
 * with `--quick`), and beside them what the cluster raised against one process that was never
 * stopped (`scale.alerts_vs_uninterrupted_missing`, `..._extra`).
 *
 * The cluster, every node a real `csipose serve --role ...` process on a real nats-server: a store
 * node (`--name s1`), an api node, an ingest node (room `alerts-room`: the default room in real
 * time, `sim?seed=21&realism=room&fall=20`: three links at 100 Hz, two people, a scripted fall 20 s
 * in and the simulator's own falls), two workers (w1, w2). The room has six intrusion zones of
 * 2 x 2.5 m tiling its floor, so that people walking raise an alert every few seconds. Default
 * `cluster` settings, but for a CSI retention of 30 minutes (the reference reads the whole run
 * back). Each round kills (SIGKILL) the worker holding the room, starts another in its place at
 * once as a supervisor would (w3, w4, ...), and waits until a worker (mostly the one that stood
 * by) publishes the room's frames again. A room that does not come back within a give-up bound
 * ends the kills early; the figures then count what happened up to there, and say so.
 *
 * Recorded during the run: every alert published on `alerts.<env>` (a plain subscription of the
 * benchmark: every publish, a repeat included), every alert the pose stream stored under
 * `alerts.>`, every pose frame it stored under `pose.>` with the alerts it carries, and every
 * `alert` message of a `/ws/pose` client of the api node subscribed to the `alerts` channel (no
 * filters: every type and severity) before the first worker started. After the run (ingests
 * stopped, the workers' last frames out, the store node's consumer with nothing pending), the store
 * node's `alerts` table read with `csipose query`.
 *
 * Definitions:
 * - **Published**: the distinct alert ids published on `alerts.<env>` by any worker, with those
 *   carried by a stored pose frame (the two should be the same set; the note says if not).
 * - **Lost** (`scale.alerts_lost`): published ids that the store node's DuckDB does not hold, or that
 *   the `/ws/pose` client did not receive; an id missing from both counts once. The note adds how
 *   many of the pose frames the stream holds the store holds (the alerts of a frame the store
 *   lacks are lost there).
 * - **Duplicated** (`scale.alerts_duplicated`): every copy beyond the first of one alert id in the
 *   store's `alerts` table, among the client's messages, among the alerts the stream stored, or among
 *   the pose frames the stream stored; plus, for falls, every alert id beyond the first of one
 *   severity for one fall (the same room and `fall_time` within 1 s).
 * - **Against an uninterrupted run**: each room's whole CSI stream read back from the bus through
 *   the same live pipeline in one pass (bench/scale/reference.ts). Its alerts and the published
 *   ones are paired one to one (the same room, type, severity and zone, frame times at most 1 s
 *   apart, closest first; ids differ because a worker that takes a room over numbers its tracks
 *   anew). `..._missing`: the reference's alerts with no published counterpart (an alert a
 *   handover swallowed); `..._extra`: published alerts with no counterpart in the reference (one a
 *   handover raised twice, or that the rebuilt tracks raised). The note says how soon after a
 *   handover (a kill or a lease changing hands) each came, and how many of the reference's alerts
 *   before the first kill were paired: while nobody is killed the two agree, so what differs later
 *   is what a worker that took the room over makes of it (new tracks, the empty room learnt anew
 *   from the replayed seconds), not the comparison.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { POSE_STREAM } from '../../src/bus/bus.js';
import { roomConsumer } from '../../src/cluster/storeRooms.js';
import type { PoseAlert } from '../../src/pose/types.js';
import { argValue, printResults, type BenchResult } from '../lib.js';
import { cliPath, repoRoot } from '../serve.js';
import { Child } from '../stream/ipc.js';
import { alertKey, matchAlerts, type AlertKey } from './alertKeys.js';
import { BusWatch, Nodes, overlay, sleep, type NodeProc, type ScaleOptions } from './cluster.js';
import { until } from './engines.js';
import { frameOrder, killWorker, type Handover } from './handover.js';
import { startNats, type NatsCluster } from './natsServer.js';
import type { ReferenceResult } from './reference.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROOMS = ['alerts-room'] as const;
const SEEDS = [21] as const;
const PASSWORD = 'bench-scale-alerts-admin';
const KEY = 'bench-scale-alerts-key-0123456789abcdef';
/** Six zones of 2 x 2.5 m tiling the default 6 x 5 m room. */
const ZONES = [0, 1, 2].flatMap((i) =>
  [0, 1].map((j) => ({
    id: `z${i}${j}`,
    name: `Zone ${i}${j}`,
    polygon: [
      [2 * i, 2.5 * j],
      [2 * i + 2, 2.5 * j],
      [2 * i + 2, 2.5 * j + 2.5],
      [2 * i, 2.5 * j + 2.5],
    ],
  })),
);
/** Every node's `cluster` settings: the defaults, with the CSI kept for the reference. */
const CLUSTER = { csi_retention_seconds: 1800 };
/** Pairing tolerance against the reference, ms. */
const MATCH_TOL_MS = 1000;
/** A difference from the reference this soon after a handover is put down to it in the note, s. */
const NEAR_S = 15;
/** Two fall alerts of one severity this close in `fall_time` are one fall. */
const FALL_SAME_MS = 1000;
/** Give-up bounds: safety nets, not measurements. */
const FLOW_GIVE_UP_MS = 60_000;
const DRAIN_GIVE_UP_MS = 60_000;
const REFERENCE_GIVE_UP_MS = 300_000;

/** Options of {@link run}. */
export interface AlertsOptions extends ScaleOptions {
  /** Worker kills (default 20, `quick` 3). */
  kills?: number;
  /** A file to write what was recorded to (JSON), for looking into a result. */
  dump?: string;
  /** Seconds the room runs on after the last kill (default 0): how long a difference from the reference lasts. */
  tail?: number;
}

/** Copies beyond the first of each value. */
function extraCopies(values: Iterable<string>): { copies: number; ids: string[] } {
  const count = new Map<string, number>();
  for (const v of values) count.set(v, (count.get(v) ?? 0) + 1);
  let copies = 0;
  const ids: string[] = [];
  for (const [id, c] of count)
    if (c > 1) {
      copies += c - 1;
      ids.push(id);
    }
  return { copies, ids };
}

/** A `/ws/pose` client of the api node subscribed to every alert; records each alert id it gets. */
async function alertClient(base: string, got: string[]): Promise<{ ws: WebSocket; filters: unknown }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/pose?token=${encodeURIComponent(KEY)}`, { perMessageDeflate: false });
  let filters: unknown;
  await new Promise<void>((ok, fail) => {
    const t = setTimeout(() => fail(new Error('the alerts client was not subscribed within 20 s')), 20_000);
    ws.on('error', fail);
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { type: string; alert_id?: string; filters_applied?: unknown };
      if (m.type === 'alert') got.push(m.alert_id!);
      else if (m.type === 'connection_established') ws.send(JSON.stringify({ type: 'subscribe', channel: 'alerts' }));
      else if (m.type === 'subscription_confirmed') {
        filters = m.filters_applied;
        clearTimeout(t);
        ok();
      } else if (m.type === 'error') fail(new Error(data.toString().slice(0, 300)));
    });
  });
  return { ws, filters };
}

/** Rows of the store node's DuckDB, read with `csipose query` while it runs. */
function query<T>(dataDir: string, sql: string): T[] {
  const r = spawnSync(process.execPath, [cliPath, 'query', '--data-dir', dataDir, '--format', 'json', sql], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`csipose query failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as T[];
}

/** Sorted integers as ranges: `3-7, 12`. */
function ranges(v: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < v.length;) {
    let j = i;
    while (j + 1 < v.length && v[j + 1]! <= v[j]! + 3) j++;
    out.push(i === j ? `${v[i]}` : `${v[i]}-${v[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/** Seconds from the latest handover at or before an alert's frame time to it; Infinity before any. */
function sinceHandover(a: AlertKey, moments: readonly number[]): number {
  let last = -Infinity;
  for (const t of moments) if (t <= a.time) last = t;
  return (a.time - last) / 1000;
}

/**
 * The benchmark.
 * @returns `scale.alerts_lost`, `scale.alerts_duplicated`, `scale.alerts_vs_uninterrupted_missing`
 *   and `..._extra`
 */
export async function run(opts: AlertsOptions = {}): Promise<BenchResult[]> {
  const kills = opts.kills ?? (opts.quick ? 3 : 20);
  const log = opts.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-alerts-'));
  const nodes = new Nodes();
  let nats: NatsCluster | undefined;
  let watch: BusWatch | undefined;
  let client: WebSocket | undefined;
  const refs: Child[] = [];
  try {
    nats = await startNats(1);
    const bus = nats.url;
    const common = overlay(dir, 'node', { cluster: CLUSTER });
    const http = { CSIPOSE_ADMIN_PASSWORD: PASSWORD, CSIPOSE_API_KEYS: `${KEY}:viewer` };
    log(`alerts: nats-server ${bus}; store and api nodes...`);
    // The store node first: it creates the streams with the CSI retention the reference needs.
    const storeDir = join(dir, 'store');
    const store = await nodes.start({ role: 'store', bus, dataDir: storeDir, name: 's1', config: common, env: http });
    const api = await nodes.start({ role: 'api', bus, dataDir: join(dir, 'api'), config: common, env: http });
    watch = await BusWatch.connect(bus);
    const w = watch;
    await w.follow('pose.>');
    await w.follow('alerts.>');
    const published: string[] = [];
    const sub = w.nc.subscribe('alerts.>', {
      callback: (_e, m) => published.push((JSON.parse(new TextDecoder().decode(m.data)) as PoseAlert).alertId),
    });
    const received: string[] = [];
    const ac = await alertClient(api.base, received);
    client = ac.ws;
    for (const [i, room] of ROOMS.entries()) {
      const config = overlay(dir, room, { environment: { id: room, zones: ZONES }, cluster: CLUSTER });
      await nodes.start({ role: 'ingest', bus, dataDir: join(dir, `ingest-${room}`), config, source: `sim?seed=${SEEDS[i]}&realism=room&fall=20` });
    }
    const worker = (name: string) => nodes.start({ role: 'worker', bus, dataDir: join(dir, name), name, config: common });
    // A killed worker is replaced at once, as a supervisor would, under a new name (w3, w4, ...).
    let incarnation = 2;
    const replace = () => worker(`w${++incarnation}`);
    const workers = new Map<string, NodeProc>();
    log(`alerts: ingest of ${ROOMS.join(', ')}; workers w1, w2...`);
    for (const name of ['w1', 'w2']) workers.set(name, await worker(name));
    const poses = w.stored.get('pose.>')!;
    const framesOf = (room: string) => poses.filter((m) => m.subject === `pose.${room}`).length;
    const flowing = async () => {
      const before = ROOMS.map(framesOf);
      await until(() => ROOMS.every((r, i) => framesOf(r) >= before[i]! + 5), FLOW_GIVE_UP_MS, 'pose frames of every room');
    };
    await until(() => ROOMS.every((r) => w.holders.has(r)), FLOW_GIVE_UP_MS, 'the rooms to be held');
    await flowing();
    const handovers: Handover[] = [];
    // A room that does not come back within a give-up bound ends the kills; what was recorded is still counted.
    let stopped = '';
    let done = 0;
    for (let k = 0; k < kills; k++) {
      try {
        await flowing();
        await sleep(1000);
        const victim = w.holders.get(ROOMS[k % ROOMS.length]!);
        if (!victim) throw new Error(`nobody holds ${ROOMS[k % ROOMS.length]}`);
        const hs = await killWorker(w, victim, workers, replace, true);
        handovers.push(...hs);
        done++;
        log(
          `alerts: kill ${k + 1}/${kills}: ${victim} (${hs.map((h) => `${h.room} in ${h.total.toFixed(2)} s`).join(', ')}); ${published.length} alerts published so far`,
        );
      } catch (e) {
        stopped = `STOPPED after ${done} of ${kills} kills: ${(e as Error).message.split('\n')[0]}`;
        log(`alerts: ${stopped}`);
        break;
      }
    }
    if (!stopped) await flowing();
    if (opts.tail) await sleep(opts.tail * 1000);
    // The end: no more CSI; the workers' last frames out; the store node's consumer with nothing pending.
    for (const n of nodes.all) if (n.options.role === 'ingest') await n.stop();
    let count = poses.length;
    let quietSince = Date.now();
    await until(
      () => {
        if (poses.length !== count) {
          count = poses.length;
          quietSince = Date.now();
        }
        return Date.now() - quietSince > 3000;
      },
      DRAIN_GIVE_UP_MS,
      'the workers to publish their last frames',
    );
    for (const n of workers.values()) await n.stop();
    await until(
      async () => {
        for (const room of ROOMS) {
          const ci = await w.jsm.consumers.info(POSE_STREAM, roomConsumer(room));
          if (ci.num_pending !== 0 || ci.num_ack_pending !== 0) return false;
        }
        return true;
      },
      DRAIN_GIVE_UP_MS,
      'the store node to write every frame',
    );
    await sleep(1000);
    const inStore = query<{ alert_id: string }>(storeDir, 'SELECT alert_id FROM alerts').map((r) => r.alert_id);
    // The frames themselves, as the store keeps their times (to the millisecond), against the stream's.
    const storeFrames = new Set(query<{ k: string }>(storeDir, "SELECT environment_id || ' ' || epoch_ms(ts) AS k FROM pose_frames").map((r) => r.k));
    sub.unsubscribe();
    client.close();
    client = undefined;
    await store.stop();
    await api.stop();

    // What the bus holds.
    const inFrames: string[] = [];
    const keys = new Map<string, AlertKey>();
    // Pose frames of the stream the store does not hold (its times to the millisecond: either rounding).
    const framesNotStored: number[] = [];
    for (const m of poses) {
      const f = decodePoseFrame(m.data);
      if (!storeFrames.has(`${f.environmentId} ${Math.floor(f.time)}`) && !storeFrames.has(`${f.environmentId} ${Math.round(f.time)}`))
        framesNotStored.push(m.seq);
      for (const a of f.alerts ?? []) {
        inFrames.push(a.alertId);
        keys.set(a.alertId, alertKey(a));
      }
    }
    const inAlertStream: string[] = [];
    for (const m of w.stored.get('alerts.>')!) {
      const a = JSON.parse(new TextDecoder().decode(m.data)) as PoseAlert;
      inAlertStream.push(a.alertId);
      if (!keys.has(a.alertId)) keys.set(a.alertId, alertKey(a));
    }
    const pub = new Set([...published, ...inFrames]);
    const storeSet = new Set(inStore);
    const wsSet = new Set(received);
    const lostIds = [...pub].filter((id) => !storeSet.has(id) || !wsSet.has(id));
    const notStored = [...pub].filter((id) => !storeSet.has(id)).length;
    const notReceived = [...pub].filter((id) => !wsSet.has(id)).length;
    const pubOnly = [...new Set(published)].filter((id) => !new Set(inFrames).has(id)).length;
    const framesOnly = [...new Set(inFrames)].filter((id) => !new Set(published).has(id)).length;
    const unknown = [...new Set([...inStore, ...received])].filter((id) => !pub.has(id)).length;

    const dupStore = extraCopies(inStore);
    const dupWs = extraCopies(received);
    const dupStream = extraCopies(inAlertStream);
    const dupFrames = extraCopies(inFrames);
    // Falls: more than one alert id of one severity for one fall.
    const falls = [...pub].map((id) => keys.get(id)!).filter((a) => a.type === 'fall_detection');
    let fallDup = 0;
    const fallSeen: AlertKey[] = [];
    for (const a of falls.sort((x, y) => x.fallTime - y.fallTime)) {
      if (fallSeen.some((b) => b.env === a.env && b.severity === a.severity && Math.abs(b.fallTime - a.fallTime) <= FALL_SAME_MS)) fallDup++;
      else fallSeen.push(a);
    }
    const duplicated = dupStore.copies + dupWs.copies + dupStream.copies + dupFrames.copies + fallDup;
    const republished = extraCopies(published).copies;

    // The uninterrupted reference, one child per room, side by side.
    log(`alerts: ${pub.size} alerts published; the uninterrupted reference over each room's CSI...`);
    const results: ReferenceResult[] = await Promise.all(
      ROOMS.map(async (room) => {
        const c = new Child(`reference ${room}`, join(here, 'reference.js'));
        refs.push(c);
        await c.ready;
        return c.call<ReferenceResult>('replay', { bus, env: room }, REFERENCE_GIVE_UP_MS);
      }),
    );
    const lastCsi = Math.min(...results.map((r) => r.lastCsiTime));
    // Alerts of frames after the CSI every room had (the ends differ by a frame or two) are left out of both sides.
    const reference = results.flatMap((r) => r.alerts).filter((a) => a.time <= lastCsi);
    const got = [...pub].map((id) => keys.get(id)!).filter((a) => a.time <= lastCsi);
    const match = matchAlerts(reference, got, MATCH_TOL_MS);
    // Handovers: the kills, and every lease changing hands (a worker started again taking nothing, one lost under load).
    const moments = [...handovers.map((h) => h.kill), ...w.leaseChanges.map((c) => c.at)].sort((a, b) => a - b);
    const near = (list: AlertKey[]) => {
      if (list.length === 0) return 'none';
      const after = list.map((a) => sinceHandover(a, moments)).sort((a, b) => a - b);
      const close = after.filter((x) => x <= NEAR_S);
      return `${close.length} within ${NEAR_S} s after a handover (${close.map((x) => x.toFixed(1)).join(', ')} s after), ${after.length - close.length} later or before any`;
    };
    const firstKill = handovers[0]?.kill ?? Infinity;
    const refBefore = reference.filter((a) => a.time < firstKill);
    const pairedBefore = refBefore.filter((a) => !match.missing.includes(a)).length;

    if (opts.dump) {
      writeFileSync(
        opts.dump,
        JSON.stringify({
          handovers,
          leaseChanges: w.leaseChanges,
          poses: poses.map((m) => {
            const f = decodePoseFrame(m.data);
            return { subject: m.subject, seq: m.seq, at: m.at, time: f.time, alerts: (f.alerts ?? []).map((a) => a.alertId) };
          }),
          published,
          received,
          inStore,
          storeFrames: [...storeFrames],
          framesNotStored,
          reference,
          got,
          missing: match.missing,
          extra: match.extra,
          logs: Object.fromEntries(nodes.all.map((n, i) => [`${i} ${n.options.role} ${n.options.name ?? ''}`, n.log()])),
        }),
      );
    }
    const moved = handovers.length;
    const median = moved ? [...handovers.map((h) => h.total)].sort((a, b) => a - b)[moved >> 1]! : NaN;
    const orders = ROOMS.map((r) => ({ room: r, ...frameOrder(w, r) }));
    const takes = w.leaseChanges.filter((c) => c.holder !== null).length;
    const setting =
      `${stopped ? `${stopped}; ` : ''}${done} SIGKILLs of the worker holding the room (median ${median.toFixed(2)} s to the other worker's first frame); ` +
      `lease changes not caused by a kill ${takes - ROOMS.length - moved}; ` +
      `pose frames stored ${orders.map((o) => `${o.room} ${o.frames}, ${o.repeats} not after the one before, largest gap ${(o.maxGapMs / 1000).toFixed(2)} s`).join('; ')}; ` +
      `real processes: nats-server, store, api, ingest (sim?seed=${SEEDS.join('|')}&realism=room&fall=20, 6 intrusion zones), 2 workers (a killed one replaced at once); load average at the end ${loadavg()[0]!.toFixed(1)} (2 cores shared)` +
      (opts.quick ? '; --quick' : '');
    const counts =
      `${pub.size} alert ids published (${new Set(published).size} on alerts.<env>, ${new Set(inFrames).size} in pose frames, ${pubOnly} only on alerts.<env>, ${framesOnly} only in frames; ` +
      `${republished} publishes repeated an id), ${storeSet.size} in the store, ${wsSet.size} received by the /ws/pose alerts client (filters ${JSON.stringify(ac.filters)}), ` +
      `${unknown} stored or received that were never published; ${falls.length} fall alerts`;
    log(
      `alerts: lost ${lostIds.length}, duplicated ${duplicated}; against the reference: ${match.matched} paired, ${match.missing.length} missing, ${match.extra.length} extra`,
    );
    return [
      {
        name: 'scale.alerts_lost',
        value: lostIds.length,
        unit: 'alerts',
        n: pub.size,
        note:
          `published alert ids not in the store node's DuckDB (${notStored}) or not received by the api node's /ws/pose client (${notReceived}), counted once each` +
          ` [the store holds ${poses.length - framesNotStored.length} of the ${poses.length} pose frames the stream holds${framesNotStored.length ? `, not those of stream sequences ${ranges(framesNotStored)}` : ''}]` +
          `${lostIds.length ? ` (${lostIds.slice(0, 5).join(', ')})` : ''}; ${counts}; ${setting}`,
      },
      {
        name: 'scale.alerts_duplicated',
        value: duplicated,
        unit: 'alerts',
        n: pub.size,
        note:
          `copies beyond the first of one alert id: in the store ${dupStore.copies}, received by the client ${dupWs.copies}, stored on alerts.<env> ${dupStream.copies}, ` +
          `in stored pose frames ${dupFrames.copies}; fall alerts of one severity beyond the first for one fall (fall_time within 1 s) ${fallDup}` +
          `${[...dupStore.ids, ...dupWs.ids].length ? ` (${[...dupStore.ids, ...dupWs.ids].slice(0, 5).join(', ')})` : ''}; ${setting}`,
      },
      {
        name: 'scale.alerts_vs_uninterrupted_missing',
        value: match.missing.length,
        unit: 'alerts',
        n: reference.length,
        note:
          `alerts of one uninterrupted pass over the same CSI (${reference.length}; ${results.map((r) => `${r.csiFrames} CSI frames, ${r.poseFrames} pose frames`).join('; ')}) ` +
          `with no published alert of the same room, type, severity and zone within ${MATCH_TOL_MS / 1000} s: ${near(match.missing)}; ${match.matched} paired (largest shift ${match.maxShiftMs.toFixed(0)} ms); ` +
          `before the first kill ${pairedBefore} of the reference's ${refBefore.length} alerts paired (the reference and the workers agree while nobody is killed); ${setting}`,
      },
      {
        name: 'scale.alerts_vs_uninterrupted_extra',
        value: match.extra.length,
        unit: 'alerts',
        n: got.length,
        note: `published alerts with no counterpart in the uninterrupted pass: ${near(match.extra)}; ${setting}`,
      },
    ];
  } catch (e) {
    throw nodes.withLogs(e);
  } finally {
    client?.terminate();
    for (const c of refs) await c.stop().catch(() => undefined);
    await watch?.close().catch(() => undefined);
    await nodes.stopAll();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const kills = argValue('--kills');
  const dump = argValue('--dump');
  const tail = argValue('--tail');
  run({
    quick: process.argv.includes('--quick'),
    log: (s) => process.stderr.write(`${s}\n`),
    ...(kills ? { kills: Number(kills) } : {}),
    ...(dump ? { dump } : {}),
    ...(tail ? { tail: Number(tail) } : {}),
  })
    .then((results) => printResults(results, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
