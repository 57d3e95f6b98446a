import { PoseService, type Logger } from './service/service.js';
import { ServerOutlet, type HttpServer, type ServerFace } from './server/server.js';
import type { Form } from './server/forms.js';
import type { LatestReads, MetricsReads } from './service/face.js';
import type { Outlet } from './outlets/outlet.js';
import { LatestOutlet } from './outlets/latest.js';
import { MetricsOutlet } from './outlets/metrics.js';
import { MqttOutlet } from './outlets/mqtt.js';
import { StoreOutlet } from './outlets/store.js';
import { LakeOutlet } from './outlets/lake.js';
import { WebhookOutlet, type WebhookCommands } from './outlets/webhooks.js';
import { ApiError } from './errors.js';
import { PoseSink } from './store/poseSink.js';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Lake } from './store/lake.js';
import { Bus } from './bus/bus.js';
import { poseFeed } from './cluster/feeds.js';
import { StoreRooms } from './cluster/storeRooms.js';
import type { Observable } from 'rxjs';
import type { PoseFrame } from './pose/types.js';
import type { Store } from './store/store.js';
import { STORED_FRAMES_KEPT, StoredFrames } from './cluster/storedFrames.js';
import { cleanExports, lakeDir, removeServiceFile, storeDirectories, writeServiceFile } from './store/export.js';
import { LakeRoot, nodeFolder } from './store/lakeRoot.js';
import { dataDirLakeId, NodeLake } from './store/nodeLake.js';
import { LakeCommitter } from './cluster/storeCommit.js';
import { mkdirSync } from 'node:fs';

/** Everything `csipose serve` takes (DECISIONS "Starting the service"). */
export interface ServeOptions {
  host: string;
  port: number;
  dataDir: string;
  configFile?: string;
  /** Overrides config `hardware.source`. */
  source?: string;
  form?: Form;
  autostart: boolean;
  rateLimitScale: number;
  env?: Record<string, string | undefined>;
  /** HTTP transport: uWebSockets.js (the service) or Node's http (only for the side-by-side benchmark). */
  transport?: 'uws' | 'node';
  /** Serve the web dashboard at `/` (default true; `--no-dashboard` turns it off). */
  dashboard?: boolean;
  /** Overrides config `redis.url` (`--redis`): the Redis shared by every api node. */
  redis?: string;
  log?: Logger;
  /**
   * A node of a cluster on this bus (docs/scale.md): `api` follows the workers' pose frames
   * instead of running a pipeline and writes no history; `store` holds its share of the rooms,
   * takes their frames from the rooms' durable consumers, writes the store and the lake, and
   * acknowledges what it wrote.
   */
  bus?: { url: string; role: 'api' | 'store'; name?: string };
  /**
   * The cluster's shared lake root (`--lake DIR`, api and store nodes; docs/scale.md "One
   * history"): a store node writes and commits its partitions under it, and every such node
   * serves history and analytics from it.
   */
  lake?: string;
}

/** A running application: the service, its server and its outlets. */
export interface App {
  readonly svc: PoseService;
  /** The DuckDB sink. */
  readonly store: StoreOutlet;
  readonly server: HttpServer;
  /** The MQTT publisher (idle while `streaming.mqtt_enabled` is false). */
  readonly mqtt: MqttOutlet;
  /** The Parquet lake, when `storage.parquet_dir` was set at start. */
  readonly lake: Lake | undefined;
  /** The shared lake root as read for history and analytics (`--lake`, api and store nodes). */
  readonly lakeRoot: LakeRoot | undefined;
  /** This store node's part of the shared lake (`--lake`, store nodes). */
  readonly nodeLake: NodeLake | undefined;
  /** The metrics history (a sample every 10 s). */
  readonly metrics: MetricsOutlet;
  /** The webhooks outlet (registrations, outbox, deliveries). */
  readonly webhooks: WebhookOutlet;
  /** Every outlet, in start order (they close in reverse). */
  readonly outlets: readonly Outlet[];
  /** Graceful shutdown: the outlets close in reverse order of start (see {@link startApp}). */
  close(): Promise<void>;
}

/**
 * What the server reads of the service: the service's own streams, reads and commands, with the
 * latest frames and the metrics history taken from their outlets. The configuration, the
 * lifecycle and the accounts go out under their narrow types (ConfigReader, SystemCommands, ...).
 * @param svc the open service
 * @param latest the latest-frame cache
 * @param metrics the metrics history
 * @param webhooks the webhooks outlet's commands
 * @returns the server's face
 */
export function serverFace(svc: PoseService, latest: LatestReads, metrics: MetricsReads, webhooks: WebhookCommands): ServerFace {
  return {
    version: svc.version,
    dataDir: svc.dataDir,
    config: svc.config,
    auth: svc.auth,
    store: svc.store,
    system: svc.system,
    floorMaps: svc.floorMaps,
    snapshot: () => svc.snapshot(),
    modelVersion: () => svc.modelVersion(),
    process: (s) => svc.process(s),
    updateConfig: (changes) => svc.updateConfig(changes),
    latest: (environmentId) => latest.latest(environmentId),
    environments: () => latest.environments(),
    metricsHistory: () => metrics.metricsHistory(),
    webhooks,
    ...(svc.redis ? { sharedCounters: svc.redis.rateLimitCounters() } : {}),
  };
}

/**
 * Closes outlets in reverse order of the list, each after its `flush` when it has one. A failure
 * is logged and the rest still close.
 */
async function closeInReverse(outlets: readonly Outlet[], log: Logger): Promise<void> {
  for (const o of [...outlets].reverse()) {
    try {
      await o.flush?.();
    } catch (e) {
      log('error', `${o.name}: flush at shutdown failed: ${(e as Error)?.stack ?? String(e)}`);
    }
    try {
      await o.close();
    } catch (e) {
      log('error', `${o.name}: close failed: ${(e as Error)?.stack ?? String(e)}`);
    }
  }
}

/**
 * The composition root: opens the service, starts its outlets (one list, below) as subscribers
 * of its streams, and starts the system when asked.
 * @param o flags and environment
 * @returns the running application
 * @example const app = await startApp({ host: '127.0.0.1', port: 0, dataDir: './data', autostart: true, rateLimitScale: 1 });
 */
export async function startApp(o: ServeOptions): Promise<App> {
  let log: Logger = o.log ?? ((level, msg) => process.stderr.write(`[${level}] ${msg}\n`));
  // An admin key for this start only, for the local tools (csipose query / export) that find the
  // service through <dataDir>/service.json; added like a CSIPOSE_API_KEYS key, never stored.
  const localKey = `csipose-local-${randomBytes(32).toString('base64url')}`;
  const env = o.env ?? process.env;
  const keys = env.CSIPOSE_API_KEYS?.trim();
  let parquetDir = '';
  // A node of a cluster follows the bus, connected once the configuration (its cluster settings)
  // is read; the feed is subscribed at each start of the system.
  let bus: Bus | undefined;
  let feed: (() => Observable<PoseFrame>) | undefined;
  // A store node's rooms: held by lease and read from the bus while its system runs.
  let rooms: StoreRooms | undefined;
  const storeName = o.bus?.role === 'store' ? (o.bus.name ?? 'store') : undefined;
  const sharedLake = o.bus && o.lake ? resolve(o.lake) : undefined;
  if (o.bus?.role === 'api') feed = () => poseFeed(bus!, log);
  else if (o.bus?.role === 'store') feed = () => rooms!.feed();
  const svc = await PoseService.open({
    ...(feed ? { feed } : {}),
    dataDir: o.dataDir,
    ...(o.configFile ? { configFile: o.configFile } : {}),
    ...(o.source ? { source: o.source } : {}),
    ...(o.redis !== undefined ? { redisUrl: o.redis } : {}),
    env: { ...env, CSIPOSE_API_KEYS: keys ? `${keys},${localKey}:admin` : `${localKey}:admin` },
    // SQL of the store may write only its export folder and the lake; nothing else, no network.
    storeOptions: (cfg) => {
      parquetDir = cfg.storage.parquet_dir;
      const dirs = storeDirectories(o.dataDir, parquetDir);
      // A store node writes its own folder of the shared lake, nothing else of it.
      if (sharedLake && storeName !== undefined) {
        const own = nodeFolder(sharedLake, storeName);
        mkdirSync(own, { recursive: true, mode: 0o700 });
        dirs.push(own);
      }
      return { allowedDirectories: dirs };
    },
    log,
  });
  // From here on through the service's logger, which counts the errors (the summary's error_count).
  log = svc.log;
  if (o.bus) {
    try {
      bus = await Bus.connect(o.bus.url, svc.config.get().cluster, `csipose-${o.bus.role}-${o.bus.name ?? process.pid}`);
    } catch (e) {
      await svc.close();
      throw e;
    }
  }
  cleanExports(o.dataDir);
  // The shared lake: read by api and store nodes, written by store nodes (their own folder).
  let lakeRoot: LakeRoot | undefined;
  let nodeLake: NodeLake | undefined;
  let committer: LakeCommitter | undefined;
  const cluster = svc.config.get().cluster;
  if (sharedLake) {
    try {
      // The manifests are read twice per commit interval: a commit is readable here within half of one.
      lakeRoot = await LakeRoot.open(sharedLake, {
        create: true,
        refreshMs: (cluster.lake_commit_seconds * 1000) / 2,
        onError: (e) => log('warn', `lake: ${e.message}`),
      });
      if (storeName !== undefined) {
        nodeLake = await NodeLake.open(svc.store, {
          root: sharedLake,
          node: storeName,
          owner: dataDirLakeId(o.dataDir),
          retentionDays: () => svc.config.get().privacy.data_retention_days,
        });
      }
    } catch (e) {
      await lakeRoot?.close();
      await bus?.close();
      await svc.close();
      throw e;
    }
  }
  // Flushes the store sink (declared below; used once rooms are read).
  const flushStore = () => store.flush();
  if (nodeLake) {
    committer = new LakeCommitter({
      lake: nodeLake,
      intervalMs: cluster.lake_commit_seconds * 1000,
      leaseTtlMs: cluster.lease_ttl_seconds * 1000,
      validFor: (env) => rooms?.validFor(env) ?? 0,
      holds: (env) => rooms?.holds(env) ?? false,
      flush: flushStore,
      log,
    });
  }
  if (bus && storeName !== undefined) {
    const reader = lakeRoot;
    rooms = new StoreRooms({
      bus,
      name: storeName,
      leaseTtlMs: cluster.lease_ttl_seconds * 1000,
      sink: { flush: flushStore, pending: () => store.sink.stats.pending, failing: () => store.sink.writeFailure() !== undefined },
      // What this node stored lately, and with a shared lake what every node committed.
      storedFrames: (env) => storedFrames(svc.store, env),
      committedUpTo: async (env) => (reader ? reader.committedUpTo(env) : -Infinity),
      ...(committer ? { commits: committer } : {}),
      log,
    });
    // A stop (and the shutdown) waits for the rooms to be written, acknowledged and given back.
    const r = rooms;
    svc.flushOnStop(() => r.stopped());
  }

  const mqtt = new MqttOutlet(svc.config, svc.version, env, log);
  // Alerts and events POSTed to registered endpoints, through an outbox in the data dir.
  const webhooks = new WebhookOutlet(svc.config, o.dataDir, svc.version, log);
  // The DuckDB sink: every pose frame, its persons, events and alerts, batched into the store.
  const store = new StoreOutlet(new PoseSink(svc.store, { onError: (e) => log('error', `store: ${e.message}`) }), (e) =>
    log('error', `store outlet: ${(e as Error)?.stack ?? String(e)}`),
  );
  // The service holds a place in the list too: closing it stops the pipeline (its stop step
  // flush_sinks flushes every outlet's flush, i.e. the store sink) and closes the store.
  const service: Outlet = { name: 'service', start: () => undefined, close: () => svc.close() };
  // The Parquet lake, when asked for at start (the store's allowed folders are fixed at open).
  const lakeFolder = lakeDir(o.dataDir, parquetDir);
  const lake = lakeFolder
    ? new LakeOutlet(svc.store, {
        dir: lakeFolder,
        retentionDays: () => svc.config.get().privacy.data_retention_days,
        onError: (e) => log('error', `lake: ${e.message}`),
      })
    : undefined;
  const metrics = new MetricsOutlet(svc.store, svc.log);
  const latest = new LatestOutlet((e) => log('error', `latest-frame cache: ${(e as Error)?.stack ?? String(e)}`));
  const face = serverFace(svc, latest, metrics, o.bus?.role === 'api' ? webhooksElsewhere : webhooks);
  // History and analytics of a node on a shared lake: every store node's committed partitions;
  // an api node's SQL queries too (it stores nothing of its own).
  const server = new ServerOutlet(
    lakeRoot ? { ...face, historyStore: lakeRoot.store, ...(o.bus?.role === 'api' ? { queryStore: lakeRoot.store } : {}) } : face,
    {
      host: o.host,
      port: o.port,
      rateLimitScale: o.rateLimitScale,
      log,
      ...(o.form ? { form: o.form } : {}),
      ...(o.transport ? { transport: o.transport } : {}),
      ...(o.dashboard === false ? { dashboard: false as const } : {}),
    },
  );

  // The outlets, started in this order and closed in reverse. Shutdown therefore runs:
  //   ws       stop listening, close every WebSocket (1001);
  //   latest, metrics, lake   detach; the lake's running pass ends before the store closes;
  //   service  stop the pipeline, flush the store sink (the stop step flush_sinks), close the store;
  //   store    detach the sink's outlet (the store has closed the sink, writing what it held);
  //   webhooks after the pipeline, so its last alerts are queued; what is pending stays in the outbox;
  //   mqtt     last, so the final `stopped` status goes out before the offline mark.
  // A new outlet: one file in src/outlets implementing Outlet, one entry here.
  // A node of a cluster closes its bus last. An api node writes no history and sends no MQTT or
  // webhooks: the store nodes do (each for its rooms, where api nodes are many).
  // With a shared lake the reader closes after the server, the commits (their timer; a store node's
  // last commit runs as its rooms are given back, in the service's stop) before the service.
  const busOutlet: Outlet[] = bus ? [{ name: 'bus', start: () => undefined, close: () => bus!.close() }] : [];
  const reader = lakeRoot;
  const readerOutlet: Outlet[] = reader
    ? [
        {
          name: 'lake_root',
          start: (streams) => {
            if (!nodeLake) streams.report('lake', () => ({ status: 'healthy', root: reader.root, layout: reader.layout() }));
          },
          close: () => reader.close(),
        },
      ]
    : [];
  const commits = committer;
  const commitsOutlet: Outlet[] =
    commits && nodeLake
      ? [
          {
            name: 'lake_commits',
            start: (streams) => {
              const nl = nodeLake;
              streams.report('lake', () => ({ ...nl.report(), root: sharedLake }));
              commits.start();
            },
            close: () => commits.close(),
          },
        ]
      : [];
  const outlets: Outlet[] =
    o.bus?.role === 'api'
      ? [...busOutlet, ...readerOutlet, service, metrics, latest, server]
      : [...busOutlet, ...readerOutlet, mqtt, webhooks, store, service, ...(lake ? [lake] : []), ...commitsOutlet, metrics, latest, server];
  for (const out of outlets) if (out.flush) svc.flushOnStop(() => out.flush!());
  try {
    for (const out of outlets) await out.start(svc);
  } catch (e) {
    await closeInReverse(outlets, log);
    throw e;
  }

  // How local tools find this service: pid, address and this start's admin key (mode 0600).
  const wildcard = o.host === '0.0.0.0' || o.host === '::' || o.host === '';
  const host = wildcard ? (o.host === '::' ? '[::1]' : '127.0.0.1') : o.host.includes(':') ? `[${o.host}]` : o.host;
  try {
    writeServiceFile(o.dataDir, {
      pid: process.pid,
      url: `http://${host}:${server.server.port}`,
      started_at: new Date().toISOString(),
      api_key: localKey,
      data_dir: resolve(o.dataDir),
    });
  } catch (e) {
    log('warn', `cannot write service.json (csipose query and export will not find this service): ${(e as Error).message}`);
  }
  if (o.autostart) svc.system.start();
  let closing: Promise<void> | undefined;
  return {
    svc,
    store,
    server: server.server,
    mqtt,
    lake: lake?.lake,
    lakeRoot,
    nodeLake,
    metrics,
    webhooks,
    outlets,
    close() {
      closing ??= (async () => {
        removeServiceFile(o.dataDir, localKey);
        await closeInReverse(outlets, log);
      })();
      return closing;
    },
  };
}

/**
 * The pose frames of an environment a store node wrote lately (see StoredFrames): what the pose
 * stream can still deliver again, which keeps an hour, at most the newest STORED_FRAMES_KEPT.
 */
async function storedFrames(store: Store, env: string): Promise<StoredFrames> {
  const rows = await store.query<{ us: bigint | number }>(
    `SELECT epoch_us(ts) AS us FROM pose_frames
      WHERE environment_id = ? AND ts >= (SELECT max(ts) FROM pose_frames WHERE environment_id = ?) - INTERVAL 1 HOUR
      ORDER BY ts DESC LIMIT ${STORED_FRAMES_KEPT}`,
    [env, env],
  );
  return StoredFrames.from(
    rows.map((r) => ({ environment_id: env, ms: Number(r.us) / 1000 })),
    false,
  );
}

/**
 * The webhook routes of an api node: webhooks are kept and sent by the cluster's store nodes (each
 * for the rooms it holds, where api nodes are many), so every request here is refused, saying
 * where to go.
 */
function refuseWebhooks(): never {
  throw new ApiError('SYSTEM_STATE_CONFLICT', "webhooks are kept and sent by the cluster's store node: register and manage them there (docs/scale.md)", {
    role: 'api',
  });
}
const webhooksElsewhere: WebhookCommands = {
  list: refuseWebhooks,
  get: refuseWebhooks,
  create: refuseWebhooks,
  update: refuseWebhooks,
  remove: refuseWebhooks,
  rotateSecret: refuseWebhooks,
  ping: refuseWebhooks,
  deadLetters: refuseWebhooks,
  redrive: refuseWebhooks,
  clearDeadLetters: refuseWebhooks,
};
