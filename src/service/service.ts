import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tap, type Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { PoseFrame } from '../pose/types.js';
import { ConfigStore, type ConfigSnapshot } from '../config/store.js';
import { siteGeometry } from '../config/site.js';
import { Authenticator } from '../auth/authenticator.js';
import { Store } from '../store/store.js';
import { PoseSink, sinkOperator } from '../store/poseSink.js';
import { PoseModel } from '../model/runtime.js';
import type { InferStats } from '../../operators/infer.js';
import type { MultiPersonTracker } from '../pose/tracker.js';
import { livePipeline, type LiveSettings } from '../../pipelines/live.js';
import { parseSource } from '../sources/uri.js';
import { SystemController } from './system.js';
import { CpuMeter, DiskIoMeter, Ewma, RateMeter, memoryPercent } from './metrics.js';
import { RateLimits, type Category, type Limit } from '../server/rateLimits.js';
import { HttpCore } from '../server/core.js';
import { listenUws, type UwsServer } from '../server/uws.js';
import { listenNodeHttp } from '../server/nodeHttp.js';
import { buildRoutes } from '../server/routes.js';
import type { Form } from '../server/forms.js';

export const VERSION = '0.1.0';

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
  log?: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

/** One sample of the metrics history (`/metrics` `historical`). */
export interface MetricsSample {
  timestamp: string;
  frames_per_second: number;
  average_latency_ms: number;
  cpu_usage: number;
  memory_usage: number;
  active_persons: number;
}

/**
 * The service's composition root: configuration, authentication, the store, the system
 * lifecycle with the live pipeline, and the HTTP server. Handlers read from here; the pipeline
 * logic stays in `pipelines/` and `operators/`.
 */
export class PoseService {
  config!: ConfigStore;
  auth!: Authenticator;
  store: Store | undefined;
  sink: PoseSink | undefined;
  model: PoseModel | undefined;
  system!: SystemController;
  limits!: RateLimits;
  server: UwsServer | undefined;
  readonly startedAt = Date.now();

  /** Latest pose frame per environment. */
  readonly latest = new Map<string, PoseFrame>();
  readonly trackers = new Map<string, MultiPersonTracker>();
  readonly inferStats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 } as InferStats;
  /** CSI frames into the live pipeline. */
  readonly csiRate = new RateMeter(8192);
  /** Pose frames out of it. */
  readonly poseRate = new RateMeter(2048);
  readonly latency = new Ewma(0.05);
  readonly cpu = new CpuMeter();
  readonly diskIo = new DiskIoMeter();
  core: HttpCore | undefined;
  readonly requests = new RateMeter(65536);
  readonly sources = new Map<string, number>();
  lastFrameAt = 0;
  lastPoseAt = 0;
  errors = 0;
  detections = new RateMeter(8192, 60_000);
  readonly history: MetricsSample[] = [];
  private metricsTimer: NodeJS.Timeout | undefined;
  private configSub: Subscription | undefined;
  private log: NonNullable<ServeOptions['log']>;
  generatedAdminPassword: string | undefined;

  constructor(readonly opts: ServeOptions) {
    this.log = opts.log ?? ((level, msg) => process.stderr.write(`[${level}] ${msg}\n`));
  }

  get dbPath(): string {
    return join(this.opts.dataDir, 'csipose.duckdb');
  }

  /** Default response form: the flag, else config `server.response_form`. */
  form(): Form {
    return this.opts.form ?? this.config.get().server.response_form;
  }

  /** Opens everything (config, auth, store), listens, and autostarts the system. */
  async start(): Promise<void> {
    mkdirSync(this.opts.dataDir, { recursive: true });
    this.config = await ConfigStore.open({ dataDir: this.opts.dataDir, ...(this.opts.configFile ? { configFile: this.opts.configFile } : {}) });
    for (const w of this.config.warnings) this.log('warn', w);
    this.auth = new Authenticator();
    const init = await this.auth.init({ dataDir: this.opts.dataDir, env: this.opts.env ?? process.env });
    this.generatedAdminPassword = init.generatedAdminPassword;
    this.limits = new RateLimits(this.rateLimitConfig(this.config.get()), this.opts.rateLimitScale);
    this.configSub = this.config.changes$.subscribe((ev) => {
      this.limits.configure(this.rateLimitConfig(ev.config), this.opts.rateLimitScale);
    });
    // The store opens with the process so that history stays readable while the system is stopped.
    await this.openStore();
    this.system = new SystemController(
      {
        loadModel: () => this.loadModel(),
        openStore: () => this.openStore(),
        openSource: () => this.openSource(),
        startPipeline: (frames, onPose, onFault) => this.startPipeline(frames, onPose, onFault),
        flushSinks: async () => {
          await this.sink?.flush();
        },
        releaseModel: async () => {
          await this.model?.release();
          this.model = undefined;
        },
      },
      (f) => this.onPose(f),
      (s) => this.log('info', `system ${s}`),
    );
    const core = (this.core = new HttpCore({
      routes: buildRoutes(this),
      auth: this.auth,
      limits: this.limits,
      form: () => this.form(),
      onError: (e, req) => {
        this.errors++;
        this.log('error', `${req.method} ${req.path}: ${(e as Error).stack ?? String(e)}`);
      },
      onRequest: () => this.requests.mark(),
    }));
    if (this.opts.transport === 'node') {
      const { server, port } = await listenNodeHttp(core, this.opts.host, this.opts.port);
      this.server = { app: undefined as never, host: this.opts.host, port, close: () => server.close() };
    } else {
      this.server = await listenUws(core, this.opts.host, this.opts.port);
    }
    this.metricsTimer = setInterval(() => this.sampleMetrics(), 10_000);
    this.metricsTimer.unref();
    if (this.opts.autostart) this.system.start();
  }

  private rateLimitConfig(c: ConfigSnapshot): Partial<Record<Category, Limit>> {
    return c.rate_limits as unknown as Partial<Record<Category, Limit>>;
  }

  private async openStore(): Promise<void> {
    if (!this.store) {
      this.store = await Store.open(this.dbPath);
      this.sink = new PoseSink(this.store, { onError: (e: unknown) => this.log('error', `store: ${(e as Error).message}`) });
    }
    await this.store.query('SELECT 1');
  }

  private async loadModel(): Promise<void> {
    const path = resolve(this.config.get().neural_network.model_path);
    const model = await PoseModel.load(path);
    await this.model?.release();
    this.model = model;
    if (model.warning) this.log('warn', `model: ${model.warning}`);
  }

  private openSource() {
    const c = this.config.get();
    const uri = this.opts.source ?? c.hardware.source;
    return parseSource(uri).open('frame', { environmentId: c.environment.id }) as import('rxjs').Observable<CsiFrame>;
  }

  /** Live settings, read per batch and per frame: configuration changes apply on the next one. */
  settings(): LiveSettings {
    return liveSettings(this.config.get());
  }

  private startPipeline(frames: import('rxjs').Observable<CsiFrame>, onPose: (f: PoseFrame) => void, onFault: (e: unknown) => void): Subscription {
    const model = this.model!;
    return frames
      .pipe(
        tap((f) => {
          this.csiRate.mark();
          this.lastFrameAt = Date.now();
          this.sources.set(f.sourceId, this.lastFrameAt);
        }),
        livePipeline({
          model,
          settings: () => this.settings(),
          inferStats: this.inferStats,
          onTracker: (env, t) => this.trackers.set(env, t),
        }),
        sinkOperator(this.sink!),
      )
      .subscribe({ next: onPose, error: onFault, complete: () => onFault(new Error('the source ended')) });
  }

  private onPose(f: PoseFrame): void {
    this.latest.set(f.environmentId, f);
    this.poseRate.mark();
    this.latency.add(f.processingMs);
    this.lastPoseAt = Date.now();
    if (f.persons.length) this.detections.mark(performance.now(), f.persons.length);
  }

  /** Distinct CSI sources that sent a frame in the last 10 s. */
  routerCount(): number {
    const now = Date.now();
    let n = 0;
    for (const t of this.sources.values()) if (now - t < 10_000) n++;
    return n;
  }

  activeTracks(): number {
    let n = 0;
    for (const t of this.trackers.values()) n += t.tracks().filter((r) => r.status === 'active').length;
    return n;
  }

  private sampleMetrics(): void {
    const s: MetricsSample = {
      timestamp: new Date().toISOString(),
      frames_per_second: this.csiRate.rate(),
      average_latency_ms: Number.isFinite(this.latency.value) ? this.latency.value : 0,
      cpu_usage: this.cpu.sample(),
      memory_usage: memoryPercent(),
      active_persons: [...this.latest.values()].reduce((a, f) => a + f.persons.length, 0),
    };
    this.history.push(s);
    if (this.history.length > 360) this.history.shift();
  }

  /** Graceful shutdown: stop listening, stop the pipeline, flush every sink, close the store. */
  async shutdown(): Promise<void> {
    this.server?.close();
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    this.configSub?.unsubscribe();
    await this.system?.settled();
    if (this.system && (this.system.state === 'running' || this.system.state === 'error')) {
      if (this.system.state === 'running') {
        this.system.stop();
        await this.system.settled();
      }
    }
    await this.sink?.close();
    await this.store?.close();
    await this.model?.release();
    this.config?.close();
    this.auth?.close();
  }
}

/**
 * The live pipeline's settings from a configuration: the one mapping the service and the
 * accuracy benchmark both use.
 */
export function liveSettings(c: ConfigSnapshot): LiveSettings {
  return {
    confidenceThreshold: c.detection.confidence_threshold,
    maxPersons: c.detection.max_persons,
    batchSize: c.neural_network.batch_size,
    maxWaitMs: c.neural_network.max_wait_ms,
    viewWidth: c.environment.view.width,
    viewHeight: c.environment.view.height,
    site: siteGeometry(c),
    minHits: c.detection.tracking_min_hits,
    maxAge: c.detection.tracking_max_age,
    alerts: {
      fallDetection: {
        enabled: c.alerts.fall_detection.enabled,
        sensitivity: c.alerts.fall_detection.sensitivity,
        notificationDelaySeconds: c.alerts.fall_detection.notification_delay_seconds,
      },
      inactivity: {
        enabled: c.alerts.inactivity_detection.enabled,
        thresholdMinutes: c.alerts.inactivity_detection.threshold_minutes,
      },
      zones: c.environment.zones as never,
    },
  };
}
