import { mkdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import {
  concat,
  distinctUntilChanged,
  firstValueFrom,
  map,
  merge,
  mergeMap,
  of,
  share,
  Subject,
  switchMap,
  tap,
  timer,
  toArray,
  Observable,
  type Subscription,
} from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import { submissionFrames } from '../csi/submission.js';
import type { ActivityEvent, PoseAlert, PoseFrame } from '../pose/types.js';
import { ApiError } from '../errors.js';
import { ConfigStore, ConfigUpdateError, type ConfigSnapshot, type UpdateResult } from '../config/store.js';
import type { ConfigChange } from '../config/validate.js';
import { siteGeometry } from '../config/site.js';
import { Authenticator } from '../auth/authenticator.js';
import { Store, type StoreOptions } from '../store/store.js';
import { resolveInstalled } from '../packageRoot.js';
import { PoseModel } from '../model/runtime.js';
import { WINDOW_FRAMES } from '../model/features.js';
import { parseSource } from '../sources/uri.js';
import { PoseFrameView } from '../render/view.js';
import { anonymize } from '../pose/anonymize.js';
import { liveDef, livePipeline, processPipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import { LatestFrames } from './latest.js';
import { FloorMaps } from './floorMaps.js';
import { SystemController, type SystemState } from './system.js';
import { PipelineFigures } from './figures.js';
import { countErrors, CpuMeter, DiskIoMeter, memoryMiB, memoryPercent, type CountingLogger } from './metrics.js';
import { MetricsRecorder } from '../store/metricsRecorder.js';
import type { ComponentReport, CsiSubmission, MetricsSample, ProcessResult, ServiceFace, ServiceSnapshot } from './face.js';

export const VERSION = '0.1.0';

/** Frames a submission feeds its pipeline per turn of the event loop (see {@link inSlices}). */
const PROCESS_SLICE = 32;

/**
 * `items` emitted `size` at a time, one slice per turn of the event loop: the synchronous part of
 * a large submission's pipeline (features of 4 MiB of CSI, hundreds of ms) is cut into short
 * stretches, so the server answers other requests meanwhile.
 */
function inSlices<T>(items: readonly T[], size: number): Observable<T> {
  return new Observable<T>((sub) => {
    let i = 0;
    let pending: NodeJS.Immediate | undefined;
    const run = (): void => {
      const end = Math.min(items.length, i + size);
      while (i < end && !sub.closed) sub.next(items[i++]!);
      if (sub.closed) return;
      if (i < items.length) pending = setImmediate(run);
      else sub.complete();
    };
    run();
    return () => {
      if (pending) clearImmediate(pending);
    };
  });
}

export type LogLevel = 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, msg: string) => void;

export interface ServiceOptions {
  dataDir: string;
  configFile?: string;
  /** Overrides config `hardware.source`. */
  source?: string;
  env?: Record<string, string | undefined>;
  log?: Logger;
  /** How to open the store, from the configuration read at open (its allowed folders). Default: no file access. */
  storeOptions?: (config: ConfigSnapshot) => StoreOptions;
}

/** Metrics history: one sample every 10 s, an hour of them. */
const METRICS_EVERY_MS = 10_000;
const METRICS_KEPT = 360;
/** Retention runs at open and then this often. */
const RETENTION_EVERY_MS = 3_600_000;
/** A source with no frame for this long makes the CSI component `idle`. */
const IDLE_AFTER_MS = 5000;

function round2(v: number): number {
  return Math.round(v * 100) / 100;
}

function diskPercent(path: string): number {
  try {
    const s = statfsSync(path);
    return round2(((s.blocks - s.bavail) / s.blocks) * 100);
  } catch {
    return 0;
  }
}

/**
 * The running system: configuration, authentication, the store, the lifecycle with the live
 * pipeline, and its public face ({@link ServiceFace}): the hot streams `pose$`, `alerts$`,
 * `events$`, `status$` and a small read interface. The pipeline runs once per session and
 * publishes each pose frame once; the latest-frame cache behind `latest()` is a subscriber of its
 * own, as are the outlets the application attaches (`src/app.ts`: the DuckDB sink, the HTTP and
 * WebSocket server, the MQTT publisher). Nothing here knows HTTP.
 *
 * @example
 * const svc = await PoseService.open({ dataDir: './data' });
 * svc.pose$.subscribe((v) => console.log(v.json({ form: 'b', minConfidence: 0, includeKeypoints: true, includeDensePose: false })));
 * svc.system.start();
 */
export class PoseService implements ServiceFace {
  readonly version = VERSION;
  readonly pose$: Observable<PoseFrameView>;
  readonly alerts$: Observable<PoseAlert>;
  readonly events$: Observable<ActivityEvent>;
  readonly status$: Observable<ServiceSnapshot>;
  readonly system: SystemController;
  readonly startedAt = Date.now();
  /** The admin password generated at first start (shown once), when CSIPOSE_ADMIN_PASSWORD was unset. */
  readonly generatedAdminPassword: string | undefined;

  private readonly poseSubject = new Subject<PoseFrameView>();
  private readonly stateChanges = new Subject<SystemState>();
  private readonly figures = new PipelineFigures();
  private readonly latestFrames: LatestFrames;
  /** The latest floor map of each environment, reduced for display (`GET /pose/floor-map`). */
  readonly floorMaps: FloorMaps;
  /** What the stop step `flush_sinks` flushes (the DuckDB sink, attached by the application). */
  private readonly flushers = new Set<() => Promise<void>>();
  private readonly cpu = new CpuMeter();
  private readonly diskIo = new DiskIoMeter();
  private readonly history: MetricsSample[] = [];
  private readonly components = new Map<string, () => ComponentReport>();
  private readonly metricsTimer: NodeJS.Timeout;
  private model: PoseModel | undefined;
  private closing: Promise<void> | undefined;
  /** One past the largest track id stored: the next session's first track (ids never repeat). */
  private firstTrackId = 1;
  private readonly retentionTimer: NodeJS.Timeout;
  private readonly metricsRecorder: MetricsRecorder;
  /** Errors logged up to the last metrics sample. */
  private errorsSampled = 0;

  private constructor(
    readonly opts: ServiceOptions,
    readonly config: ConfigStore,
    readonly auth: Authenticator,
    readonly store: Store,
    generatedAdminPassword: string | undefined,
    /**
     * The service's logger, counting what it logs at level `error` (each metrics sample stores
     * the count since the previous one). The application logs through it too.
     */
    readonly log: CountingLogger<LogLevel>,
  ) {
    this.generatedAdminPassword = generatedAdminPassword;
    // system_metrics samples, kept and retried while the store cannot take them.
    this.metricsRecorder = new MetricsRecorder(store, {
      onError: (e) => {
        if (!store.closed) log('error', `metrics: ${e.message}`);
      },
    });
    this.pose$ = this.poseSubject.asObservable();
    this.alerts$ = this.pose$.pipe(
      mergeMap((v) => v.frame.alerts ?? []),
      share(),
    );
    this.events$ = this.pose$.pipe(
      mergeMap((v) => v.frame.events ?? []),
      share(),
    );
    const interval$ = concat(of(config.get()), config.changes$.pipe(map((e) => e.config))).pipe(
      map((c) => c.streaming.status_interval_seconds * 1000),
      distinctUntilChanged(),
      switchMap((ms) => timer(ms, ms)),
    );
    this.status$ = merge(interval$, this.stateChanges).pipe(
      map(() => this.snapshot()),
      share(),
    );
    this.latestFrames = new LatestFrames(this.pose$, (e) => this.log('error', `latest-frame cache: ${(e as Error)?.stack ?? String(e)}`));
    this.floorMaps = new FloorMaps((e) => this.log('error', `floor maps: ${(e as Error)?.stack ?? String(e)}`));
    this.system = new SystemController(
      {
        loadModel: () => this.loadModel(),
        openStore: () => this.checkStore(),
        openSource: () => this.openSource(),
        startPipeline: (frames, onPose, onFault) => this.startPipeline(frames, onPose, onFault),
        flushSinks: async () => {
          await Promise.all([...this.flushers].map((f) => f()));
        },
        releaseModel: () => this.releaseModel(),
      },
      (f) => this.publish(f),
      (s) => {
        this.log('info', `system ${s}`);
        this.stateChanges.next(s);
      },
    );
    this.metricsTimer = setInterval(() => this.sampleMetrics(), METRICS_EVERY_MS);
    this.metricsTimer.unref();
    void this.prune();
    this.retentionTimer = setInterval(() => void this.prune(), RETENTION_EVERY_MS);
    this.retentionTimer.unref();
  }

  /** Retention: stored rows older than `privacy.data_retention_days` go. */
  private async prune(): Promise<void> {
    try {
      const days = this.config.get().privacy.data_retention_days;
      const deleted = await this.store.pruneOlderThan(days);
      const n = Object.values(deleted).reduce((a, b) => a + b, 0);
      if (n > 0) this.log('info', `retention: ${n} row(s) older than ${days} days deleted (${JSON.stringify(deleted)})`);
    } catch (e) {
      if (!this.store.closed) this.log('error', `retention: ${(e as Error).message}`);
    }
  }

  /**
   * Opens the configuration, authentication and the store (history stays readable while the
   * system is stopped). The system is not started.
   * @param opts data directory, config overlay, source override, environment, logger
   * @returns the service
   * @throws ConfigStartupError for a bad `--config` file, StoreError when the store cannot open
   */
  static async open(opts: ServiceOptions): Promise<PoseService> {
    const log = countErrors<LogLevel>(opts.log ?? ((level, msg) => process.stderr.write(`[${level}] ${msg}\n`)));
    mkdirSync(opts.dataDir, { recursive: true });
    const config = await ConfigStore.open({ dataDir: opts.dataDir, ...(opts.configFile ? { configFile: opts.configFile } : {}) });
    for (const w of config.warnings) log('warn', w);
    const auth = new Authenticator();
    let store: Store | undefined;
    try {
      const init = await auth.init({ dataDir: opts.dataDir, env: opts.env ?? process.env });
      store = await Store.open(join(opts.dataDir, 'csipose.duckdb'), opts.storeOptions?.(config.get()) ?? {});
      return new PoseService(opts, config, auth, store, init.generatedAdminPassword, log);
    } catch (e) {
      await store?.close().catch(() => undefined);
      auth.close();
      config.close();
      throw e;
    }
  }

  get dataDir(): string {
    return this.opts.dataDir;
  }

  latest(environmentId = this.config.get().environment.id): PoseFrameView | undefined {
    return this.latestFrames.get(environmentId);
  }

  environments(): string[] {
    return this.latestFrames.environments();
  }

  modelVersion(): string | null {
    return this.model?.metadata.model_version ?? null;
  }

  metricsHistory(): readonly MetricsSample[] {
    return this.history;
  }

  flushOnStop(flush: () => Promise<void>): () => void {
    this.flushers.add(flush);
    return () => this.flushers.delete(flush);
  }

  report(name: string, fn: () => ComponentReport): () => void {
    this.components.set(name, fn);
    return () => {
      if (this.components.get(name) === fn) this.components.delete(name);
    };
  }

  // ---- the session --------------------------------------------------------------------------

  private async loadModel(): Promise<void> {
    // The session runs on the configuration as it is now: nothing is pending a restart after it.
    this.config.markStarted();
    const model = await PoseModel.load(resolveInstalled(this.config.get().neural_network.model_path));
    await this.model?.release();
    this.model = model;
    if (model.warning) this.log('warn', `model: ${model.warning}`);
  }

  private async releaseModel(): Promise<void> {
    await this.model?.release();
    this.model = undefined;
  }

  private async checkStore(): Promise<void> {
    const [row] = await this.store.query<{ max_track: number | null }>('SELECT max(track_id) AS max_track FROM pose_persons');
    this.firstTrackId = (row?.max_track ?? 0) + 1;
  }

  private openSource(): Observable<CsiFrame> {
    const c = this.config.get();
    const uri = this.opts.source ?? c.hardware.source;
    // The simulator projects its ground truth through the configured reference view, live.
    const view = () => this.config.get().environment.view;
    // The site's radios, as the session starts: the simulator simulates every link of it, and the
    // other sources name their links after its transmitter and receivers (`link=RX`).
    const radios = c.environment.site.radios;
    return parseSource(uri).open('frame', { environmentId: c.environment.id, view, radios: () => radios }) as Observable<CsiFrame>;
  }

  private startPipeline(frames: Observable<CsiFrame>, onPose: (f: PoseFrame) => void, onFault: (e: unknown) => void): Subscription {
    const figures = this.figures;
    const model = this.model!;
    // Whether this session makes floor maps: the pipeline livePipeline runs for the model has the stage.
    this.floorMaps.begin(liveDef(model).stages.some(([op]) => op === 'floorMap'));
    return frames
      .pipe(
        tap((f) => figures.csi(f)),
        livePipeline(
          {
            model,
            inferStats: figures.inferStats,
            // A link the model was not trained for must not stop the others: its windows are dropped and /system/status names it.
            untrained: 'drop',
            onTracker: (env, t) => figures.trackers.set(env, t),
            firstTrackId: this.firstTrackId,
            // The site's links, joined by time; the primary's frames go on to the model. Read at subscription: a new site takes a restart.
            radios: () => this.config.get().environment.site.radios,
            linkStats: figures.links,
            // Each floor map, reduced once for GET /pose/floor-map (physics-live only).
            onMap: this.floorMaps.take,
          },
          () => liveParams(this.config.get()),
        ),
      )
      .subscribe({ next: onPose, error: onFault, complete: () => onFault(new Error('the source ended')) });
  }

  /** Each pose frame once to every outlet (anonymised first when `privacy.anonymize_data` says so). */
  private publish(f: PoseFrame): void {
    this.figures.pose(f);
    const frame = this.config.get().privacy.anonymize_data ? anonymize(f) : f;
    this.poseSubject.next(new PoseFrameView(frame, this.figures.routerCount(), 'live'));
  }

  // ---- requests -----------------------------------------------------------------------------

  async process(s: CsiSubmission): Promise<ProcessResult> {
    const t0 = performance.now();
    const model = this.model;
    if (!model) throw new ApiError('SYSTEM_NOT_READY', 'no model is loaded: start the system first (POST /system/start)', { status: this.system.state });
    const cfg = this.config.get();
    const infer = liveParams(cfg).infer;
    const frames = submissionFrames(s, cfg.environment.id, WINDOW_FRAMES);
    let poses: PoseFrame[];
    try {
      poses = await firstValueFrom(
        inSlices(frames, PROCESS_SLICE).pipe(
          processPipeline(
            { model },
            {
              confidenceThreshold: s.confidenceThreshold ?? Number(infer.confidenceThreshold),
              maxPersons: s.maxPersons ?? Number(infer.maxPersons),
              viewWidth: Number(infer.viewWidth),
              viewHeight: Number(infer.viewHeight),
              site: String(infer.site),
              includeDensePose: s.densePose,
              tracking: s.tracking,
            },
          ),
          toArray(),
        ),
      );
    } catch (e) {
      if ((e as { code?: string }).code === 'MODEL_ERROR') throw new ApiError('MODEL_ERROR', (e as Error).message);
      throw e;
    }
    return {
      frames: poses.map((f) => new PoseFrameView(f, 1, 'process')),
      received: s.packets.length,
      padded: frames.length - s.packets.length,
      processingMs: round2(performance.now() - t0),
    };
  }

  async updateConfig(changes: readonly ConfigChange[]): Promise<UpdateResult> {
    const model = changes.find((c) => c.path === 'neural_network.model_path');
    if (model && model.value !== this.config.get().neural_network.model_path) {
      // A model that cannot load would only fail at the next start: try it now.
      try {
        await (await PoseModel.load(resolveInstalled(String(model.value)))).release();
      } catch (e) {
        throw new ConfigUpdateError([
          {
            field: 'neural_network.model_path',
            message: `neural_network.model_path does not load as a pose model: ${(e as Error).message}`,
            received_value: model.value,
          },
        ]);
      }
    }
    return this.config.update(changes);
  }

  // ---- figures ------------------------------------------------------------------------------

  snapshot(): ServiceSnapshot {
    const now = Date.now();
    const sys = this.system;
    const state = sys.state;
    const running = state === 'running';
    const f = this.figures;
    const latest = this.latestFrames.all();
    let persons = 0;
    let confSum = 0;
    let quality = 0;
    for (const v of latest) {
      persons += v.frame.persons.length;
      quality += v.frame.csiQuality;
      for (const p of v.frame.persons) confSum += p.confidence;
    }
    const storeHealth = this.store.closed ? ({ status: 'closed' } as const) : this.store.health();
    const components: Record<string, ComponentReport> = {};
    for (const [name, fn] of this.components) {
      try {
        components[name] = fn();
      } catch (e) {
        components[name] = { status: 'error', error: (e as Error).message };
      }
    }
    const latency = f.latency.value;
    return {
      at: now,
      version: VERSION,
      processUptimeSeconds: Math.round((now - this.startedAt) / 1000),
      system: {
        state,
        sessionId: sys.sessionId ?? null,
        startedAt: sys.startedAt ?? null,
        uptimeSeconds: Math.round(sys.uptimeSeconds()),
        everRan: sys.everRan,
        error: sys.error ?? null,
        steps: sys.steps,
      },
      csi: {
        status: running ? (now - f.lastFrameAt < IDLE_AFTER_MS ? 'active' : 'idle') : state === 'error' ? 'error' : 'stopped',
        rateHz: round2(f.csiRate.rate()),
        frames: f.csiRate.total,
        lastFrameAt: f.lastFrameAt || null,
        routers: f.routerCount(now),
        quality: latest.length ? quality / latest.length : 0,
        links: running ? f.linkReports() : [],
      },
      pose: {
        rateHz: round2(f.poseRate.rate()),
        frames: f.poseRate.total,
        latencyMs: Number.isFinite(latency) ? round2(latency) : 0,
        lastPoseAt: f.lastPoseAt || null,
        activePersons: persons,
        activeTracks: f.activeTracks(),
        trackQuality: persons ? confSum / persons : 0,
        detectionsPerMinute: round2(f.detections.rate() * 60),
      },
      model: {
        status: this.model ? (running ? 'active' : 'loaded') : state === 'error' && sys.error?.code === 'MODEL_ERROR' ? 'error' : 'not_loaded',
        loaded: !!this.model,
        version: this.modelVersion(),
        siteInput: (this.model?.siteDim ?? 0) > 0,
        siteKnown: siteGeometry(this.config.get()) !== null,
        queue: f.inferStats.queue,
        dropped: f.inferStats.dropped,
        avgBatchMs: round2(f.inferStats.avgBatchMs),
        untrainedLinks: running ? (f.inferStats.untrained ?? []) : [],
      },
      tracker: { status: running ? 'active' : 'stopped' },
      store: storeHealth,
      resources: {
        cpuPercent: round2(this.cpu.sample()),
        memoryPercent: round2(memoryPercent()),
        memoryMiB: round2(memoryMiB()),
        diskPercent: diskPercent(this.opts.dataDir),
        diskIo: this.diskIo.sample(),
      },
      components,
    };
  }

  private sampleMetrics(): void {
    const s = this.snapshot();
    const errors = this.log.errors;
    // The same sample into the store (system_metrics), for the summary's uptime and error count
    // and for analysts; kept for a retry while the store cannot take it. Never rejects.
    void this.metricsRecorder.record({
      time: s.at,
      framesPerSecond: s.csi.rateHz,
      averageLatencyMs: s.pose.latencyMs,
      cpuUsage: s.resources.cpuPercent,
      memoryUsage: s.resources.memoryPercent,
      processingQueueSize: s.model.queue,
      // The pipeline's error rate: the share of CSI windows inference dropped under lag.
      errorRate: this.figures.inferStats.dropped / Math.max(1, this.figures.inferStats.rows + this.figures.inferStats.dropped),
      activePersons: s.pose.activePersons,
      errorCount: errors - this.errorsSampled,
    });
    this.errorsSampled = errors;
    this.history.push({
      timestamp: new Date(s.at).toISOString(),
      frames_per_second: s.csi.rateHz,
      average_latency_ms: s.pose.latencyMs,
      cpu_usage: s.resources.cpuPercent,
      memory_usage: s.resources.memoryPercent,
      active_persons: s.pose.activePersons,
    });
    if (this.history.length > METRICS_KEPT) this.history.shift();
  }

  /** Graceful shutdown: stop the pipeline, flush and close the store, release the model. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.metricsTimer);
      clearInterval(this.retentionTimer);
      await this.system.settled();
      if (this.system.state === 'running') {
        this.system.stop();
        await this.system.settled();
      }
      this.latestFrames.close();
      this.poseSubject.complete();
      this.stateChanges.complete();
      await this.store.close();
      await this.model?.release();
      this.config.close();
      this.auth.close();
    })();
    return this.closing;
  }
}
