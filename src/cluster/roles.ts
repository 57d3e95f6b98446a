/**
 * A node of a cluster (`csipose serve --role R --bus nats://...`; docs/scale.md): the role's
 * configuration read from the data directory and `--config` as `csipose serve` reads it, the bus
 * connected, and the role started. `all` (the default) is the single process of src/app.ts and
 * needs no bus.
 */
import { ConfigStore } from '../config/store.js';
import { Bus } from '../bus/bus.js';
import type { Logger } from '../service/service.js';
import { IngestNode } from './ingest.js';
import { WorkerNode } from './worker.js';

/** The roles of a cluster's nodes without an HTTP server (`api` and `store` are src/app.ts on the bus). */
export const BUS_ROLES = ['ingest', 'worker'] as const;
export type BusRole = (typeof BUS_ROLES)[number];
export const ROLES = ['all', ...BUS_ROLES, 'api', 'store'] as const;
export type Role = (typeof ROLES)[number];

export interface RoleOptions {
  role: BusRole;
  /** `nats://host:port[,nats://...]`. */
  bus: string;
  dataDir: string;
  configFile?: string;
  /** `--source` (ingest). */
  source?: string;
  /** The node's name on the bus (workers; default a random one). */
  name?: string;
  log: Logger;
}

/** A running node of a role. */
export interface RoleNode {
  readonly role: BusRole;
  /** What the node says once it runs (scripts and tests wait for it). */
  readonly ready: string;
  close(): Promise<void>;
}

/**
 * Starts a node of a role on the bus.
 * @param o role, bus, data directory, configuration overlay, source, name, logger
 * @returns the node
 * @throws Error when the configuration or the bus cannot be opened
 */
export async function startRole(o: RoleOptions): Promise<RoleNode> {
  const config = await ConfigStore.open({ dataDir: o.dataDir, ...(o.configFile ? { configFile: o.configFile } : {}) });
  for (const w of config.warnings) o.log('warn', w);
  const cfg = config.get();
  const name = o.name ?? `${o.role}-${process.pid}`;
  let bus: Bus | undefined;
  try {
    bus = await Bus.connect(o.bus, cfg.cluster, `csipose-${name}`);
    const b = bus;
    if (o.role === 'ingest') {
      const node = await IngestNode.start(b, cfg, o.source, o.log);
      return {
        role: 'ingest',
        ready: `ingest of environment ${cfg.environment.id} on the bus`,
        close: async () => {
          await node.close();
          await b.close();
          config.close();
        },
      };
    }
    const node = await WorkerNode.start(b, cfg.cluster, o.log, o.name);
    return {
      role: 'worker',
      ready: `worker ${node.id} on the bus`,
      close: async () => {
        await node.close();
        await b.close();
        config.close();
      },
    };
  } catch (e) {
    await bus?.close();
    config.close();
    throw e;
  }
}
