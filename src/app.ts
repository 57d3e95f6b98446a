import { PoseService, type Logger } from './service/service.js';
import { startServer, type HttpServer } from './server/server.js';
import type { Form } from './server/forms.js';
import { MqttOutlet } from './outlets/mqtt.js';
import { StoreOutlet } from './outlets/store.js';
import { PoseSink } from './store/poseSink.js';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Lake } from './store/lake.js';
import { cleanExports, lakeDir, removeServiceFile, storeDirectories, writeServiceFile } from './store/export.js';

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
  log?: Logger;
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
  /** Graceful shutdown: stop listening and close sockets, detach outlets, stop the pipeline, flush and close the store. */
  close(): Promise<void>;
}

/**
 * The composition root: opens the service, attaches its outlets (the HTTP and WebSocket server,
 * the MQTT publisher) as subscribers of its streams, and starts the system when asked.
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
  const svc = await PoseService.open({
    dataDir: o.dataDir,
    ...(o.configFile ? { configFile: o.configFile } : {}),
    ...(o.source ? { source: o.source } : {}),
    env: { ...env, CSIPOSE_API_KEYS: keys ? `${keys},${localKey}:admin` : `${localKey}:admin` },
    // SQL of the store may write only its export folder and the lake; nothing else, no network.
    storeOptions: (cfg) => {
      parquetDir = cfg.storage.parquet_dir;
      return { allowedDirectories: storeDirectories(o.dataDir, parquetDir) };
    },
    log,
  });
  // From here on through the service's logger, which counts the errors (the summary's error_count).
  log = svc.log;
  cleanExports(o.dataDir);
  // The DuckDB sink: every pose frame, its persons, events and alerts, batched into the store.
  const store = new StoreOutlet(svc, new PoseSink(svc.store, { onError: (e) => log('error', `store: ${e.message}`) }), (e) =>
    log('error', `store outlet: ${(e as Error)?.stack ?? String(e)}`),
  );
  let server: HttpServer;
  try {
    server = await startServer(svc, {
      host: o.host,
      port: o.port,
      rateLimitScale: o.rateLimitScale,
      log,
      ...(o.form ? { form: o.form } : {}),
      ...(o.transport ? { transport: o.transport } : {}),
      ...(o.dashboard === false ? { dashboard: false as const } : {}),
    });
  } catch (e) {
    store.close();
    await svc.close();
    throw e;
  }
  const mqtt = new MqttOutlet(svc, o.env ?? process.env, log);
  // The Parquet lake, when asked for at start (the store's allowed folders are fixed at open).
  const lakeFolder = lakeDir(o.dataDir, parquetDir);
  let lake: Lake | undefined;
  let unreportLake: (() => void) | undefined;
  if (lakeFolder) {
    lake = new Lake(svc.store, {
      dir: lakeFolder,
      retentionDays: () => svc.config.get().privacy.data_retention_days,
      onError: (e) => log('error', `lake: ${e.message}`),
    });
    unreportLake = svc.report('lake', () => ({ ...lake!.report() }));
    lake.start();
  }
  // How local tools find this service: pid, address and this start's admin key (mode 0600).
  const wildcard = o.host === '0.0.0.0' || o.host === '::' || o.host === '';
  const host = wildcard ? (o.host === '::' ? '[::1]' : '127.0.0.1') : o.host.includes(':') ? `[${o.host}]` : o.host;
  try {
    writeServiceFile(o.dataDir, {
      pid: process.pid,
      url: `http://${host}:${server.port}`,
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
    server,
    mqtt,
    lake,
    close() {
      closing ??= (async () => {
        removeServiceFile(o.dataDir, localKey);
        server.close();
        unreportLake?.();
        await lake?.close();
        // The service stops the pipeline and flushes the sink (flush_sinks), then closes the store.
        await svc.close();
        store.close();
        // Last: the final status (stopped) goes out before the offline mark.
        await mqtt.close();
      })();
      return closing;
    },
  };
}
