import { Command, InvalidArgumentError, Option } from 'commander';
import { startApp, type App } from '../app.js';
import { ROLES, startRole, type BusRole, type Role, type RoleNode } from '../cluster/roles.js';
import { fieldAt } from '../config/schema.js';

const LEVELS = ['error', 'warn', 'info', 'debug'] as const;
type Level = (typeof LEVELS)[number];

/** `csipose serve`: flags, each also an env var CSIPOSE_<NAME> (DECISIONS "Starting the service"). */
export function serveCommand(): Command {
  const port = (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
    return n;
  };
  // The same rule as config redis.url: no credentials on a command line (ps shows it).
  const redisUrl = (v: string) => {
    const f = fieldAt('redis.url');
    if (f?.type === 'string' && f.pattern && !new RegExp(f.pattern).test(v)) throw new InvalidArgumentError(`must be ${f.patternHint}`);
    return v;
  };
  const scale = (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number > 0');
    return n;
  };
  return new Command('serve')
    .description('run the live pipeline behind the REST API (the default of npm start)')
    .addOption(new Option('--host <host>', 'address to bind').env('CSIPOSE_HOST').default('127.0.0.1'))
    .addOption(new Option('--port <port>', 'port; 0 picks a free one').env('CSIPOSE_PORT').default(8000).argParser(port))
    .addOption(new Option('--data-dir <dir>', 'DuckDB, config, users and keys').env('CSIPOSE_DATA_DIR').default('./data'))
    .addOption(new Option('--config <file>', 'JSON configuration overlay').env('CSIPOSE_CONFIG'))
    .addOption(
      new Option('--source <uri>', 'sim[?...], udp://HOST:PORT?format=F, mqtt://HOST[:PORT]/TOPIC?format=F, file:PATH (overrides config hardware.source)').env(
        'CSIPOSE_SOURCE',
      ),
    )
    .addOption(new Option('--form <form>', 'default response form').choices(['a', 'b']).env('CSIPOSE_FORM'))
    .addOption(new Option('--no-autostart', 'do not start the system at launch').env('CSIPOSE_NO_AUTOSTART'))
    .addOption(new Option('--no-dashboard', 'do not serve the web dashboard at /').env('CSIPOSE_NO_DASHBOARD'))
    .addOption(
      new Option('--log-level <level>', 'error | warn | info | debug')
        .choices([...LEVELS])
        .env('CSIPOSE_LOG_LEVEL')
        .default('info'),
    )
    .addOption(new Option('--rate-limit-scale <f>', 'multiplies every rate limit (load tests)').env('CSIPOSE_RATE_LIMIT_SCALE').default(1).argParser(scale))
    .addOption(
      new Option('--role <role>', 'all (one process), or a role of a cluster on --bus: ingest | worker | api | store (docs/scale.md)')
        .choices([...ROLES])
        .env('CSIPOSE_ROLE')
        .default('all'),
    )
    .addOption(new Option('--bus <url>', 'the NATS JetStream bus of a cluster: nats://HOST:PORT[,nats://...]').env('CSIPOSE_BUS'))
    .addOption(new Option('--name <name>', "this node's name on the bus (workers: default ROLE-PID; store nodes: default store)").env('CSIPOSE_NAME'))
    .addOption(
      new Option(
        '--lake <dir>',
        "the cluster's shared lake root (api and store nodes): store nodes write and commit their partitions under it; history and analytics read it (docs/scale.md)",
      ).env('CSIPOSE_LAKE'),
    )
    .addOption(
      new Option(
        '--redis <url>',
        "Redis shared by every api node: rate limits, revocations, refresh tokens, API keys, users (overrides config redis.url; '' off)",
      )
        .env('CSIPOSE_REDIS')
        .argParser(redisUrl),
    )
    .addOption(new Option('--http <transport>', 'HTTP transport (node only for the benchmark)').choices(['uws', 'node']).default('uws').hideHelp())
    .action(
      async (o: {
        http: 'uws' | 'node';
        host: string;
        port: number;
        dataDir: string;
        config?: string;
        source?: string;
        form?: 'a' | 'b';
        autostart: boolean;
        dashboard: boolean;
        logLevel: Level;
        rateLimitScale: number;
        role: Role;
        bus?: string;
        name?: string;
        lake?: string;
        redis?: string;
      }) => {
        const rank = LEVELS.indexOf(o.logLevel);
        const log = (level: 'info' | 'warn' | 'error', msg: string) => {
          if (LEVELS.indexOf(level) <= rank) process.stderr.write(`${new Date().toISOString()} ${level} ${msg}\n`);
        };
        if (o.lake !== undefined && o.role !== 'api' && o.role !== 'store') {
          process.stderr.write('csipose serve: --lake is for --role api or store (a cluster on --bus)\n');
          process.exitCode = 2;
          return;
        }
        if (o.lake !== undefined && o.lake.trim() === '') {
          process.stderr.write('csipose serve: --lake needs a folder\n');
          process.exitCode = 2;
          return;
        }
        if (o.role === 'ingest' || o.role === 'worker' || (o.role === 'all' && o.bus !== undefined)) {
          await serveRole({ ...o, role: o.role }, log);
          return;
        }
        if ((o.role === 'api' || o.role === 'store') && o.bus === undefined) {
          process.stderr.write(`csipose serve: --role ${o.role} needs --bus nats://HOST:PORT\n`);
          process.exitCode = 2;
          return;
        }
        let app: App;
        try {
          app = await startApp({
            host: o.host,
            port: o.port,
            dataDir: o.dataDir,
            ...(o.config ? { configFile: o.config } : {}),
            ...(o.source ? { source: o.source } : {}),
            ...(o.form ? { form: o.form } : {}),
            autostart: o.autostart,
            dashboard: o.dashboard,
            rateLimitScale: o.rateLimitScale,
            ...(o.redis !== undefined ? { redis: o.redis } : {}),
            transport: o.http,
            log,
            ...(o.role === 'api' || o.role === 'store' ? { bus: { url: o.bus!, role: o.role, ...(o.name ? { name: o.name } : {}) } } : {}),
            ...(o.lake !== undefined ? { lake: o.lake } : {}),
          });
        } catch (e) {
          process.stderr.write(`csipose serve: ${(e as Error).message}\n`);
          process.exitCode = 1;
          return;
        }
        if (app.svc.generatedAdminPassword) {
          process.stdout.write(`admin password (generated, shown once): ${app.svc.generatedAdminPassword}\n`);
        }
        process.stdout.write(`pose stream on ws://${o.host}:${app.server.port}/ws/pose\n`);
        if (app.server.dashboard) {
          // An address a browser on this machine can open, also when bound to every interface.
          const host = o.host === '0.0.0.0' || o.host === '' ? '127.0.0.1' : o.host === '::' ? '[::1]' : o.host.includes(':') ? `[${o.host}]` : o.host;
          const who = app.svc.generatedAdminPassword ? 'as admin with the password above' : 'as admin or with an API key';
          process.stdout.write(`dashboard on http://${host}:${app.server.port}/ (sign in ${who})\n`);
        }
        // Last, as DECISIONS has it: scripts wait for this line.
        process.stdout.write(`listening on http://${o.host}:${app.server.port}\n`);
        let stopping = false;
        const stop = (sig: string) => {
          if (stopping) return;
          stopping = true;
          log('info', `${sig}: shutting down`);
          app.close().then(
            () => {
              log('info', 'stopped');
              process.exit(0);
            },
            (e: unknown) => {
              log('error', `shutdown: ${(e as Error).message}`);
              process.exit(1);
            },
          );
        };
        process.on('SIGINT', () => stop('SIGINT'));
        process.on('SIGTERM', () => stop('SIGTERM'));
      },
    );
}

/**
 * A node of a cluster: `--role` other than `all`, on `--bus`. Prints its ready line (scripts wait
 * for it) and closes on SIGINT or SIGTERM, giving back what it holds.
 */
async function serveRole(
  o: { role: 'all' | BusRole; bus?: string; name?: string; dataDir: string; config?: string; source?: string },
  log: (level: 'info' | 'warn' | 'error', msg: string) => void,
): Promise<void> {
  if (o.role === 'all' || o.bus === undefined) {
    process.stderr.write(
      o.role === 'all'
        ? 'csipose serve: --bus is for a role of a cluster (--role ingest | worker)\n'
        : `csipose serve: --role ${o.role} needs --bus nats://HOST:PORT\n`,
    );
    process.exitCode = 2;
    return;
  }
  let node: RoleNode;
  try {
    node = await startRole({
      role: o.role,
      bus: o.bus,
      dataDir: o.dataDir,
      log,
      ...(o.config ? { configFile: o.config } : {}),
      ...(o.source ? { source: o.source } : {}),
      ...(o.name ? { name: o.name } : {}),
    });
  } catch (e) {
    process.stderr.write(`csipose serve: ${(e as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`${node.ready}\n`);
  let stopping = false;
  const stop = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log('info', `${sig}: shutting down`);
    node.close().then(
      () => process.exit(0),
      (e: unknown) => {
        log('error', `shutdown: ${(e as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
