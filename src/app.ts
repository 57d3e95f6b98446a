import { PoseService, type Logger } from './service/service.js';
import { startServer, type HttpServer } from './server/server.js';
import type { Form } from './server/forms.js';
import { MqttOutlet } from './outlets/mqtt.js';
import { StoreOutlet } from './outlets/store.js';
import { PoseSink } from './store/poseSink.js';

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
  const log: Logger = o.log ?? ((level, msg) => process.stderr.write(`[${level}] ${msg}\n`));
  const svc = await PoseService.open({
    dataDir: o.dataDir,
    ...(o.configFile ? { configFile: o.configFile } : {}),
    ...(o.source ? { source: o.source } : {}),
    ...(o.env ? { env: o.env } : {}),
    log,
  });
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
    });
  } catch (e) {
    store.close();
    await svc.close();
    throw e;
  }
  const mqtt = new MqttOutlet(svc, o.env ?? process.env, log);
  if (o.autostart) svc.system.start();
  let closing: Promise<void> | undefined;
  return {
    svc,
    store,
    server,
    mqtt,
    close() {
      closing ??= (async () => {
        server.close();
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
