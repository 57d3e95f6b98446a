import { mkdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import {
  concat,
  EMPTY,
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
import type { ConfigChange, FieldError } from '../config/validate.js';
import { siteGeometry } from '../config/site.js';
import { Authenticator } from '../auth/authenticator.js';
import { RedisLink } from '../redis/connection.js';
import { RedisAuthState } from '../redis/authState.js';
import { Store, type StoreOptions } from '../store/store.js';
import { resolveInstalled } from '../packageRoot.js';
import { ModelError, PoseModel } from '../model/runtime.js';
import { WINDOW_FRAMES } from '../model/features.js';
import { parseSource } from '../sources/uri.js';
import { PoseFrameView } from '../render/view.js';
import { anonymize } from '../pose/anonymize.js';
import { liveDef, livePipeline, processPipeline } from '../../pipelines/build.js';
import { liveParams } from '../../pipelines/settings.js';
import { FloorMaps } from './floorMaps.js';
import { SystemController, type SystemState } from './system.js';
import { PipelineFigures } from './figures.js';
import { countErrors, CpuMeter, DiskIoMeter, memoryMiB, memoryPercent, type CountingLogger } from './metrics.js';
import type {
  ComponentReport,
  ComponentReports,
  CsiSubmission,
  ProcessResult,
  ServiceCommands,
  ServiceReads,
  ServiceSnapshot,
  ServiceStreams,
} from './face.js';

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
  /**
   * Pose frames made elsewhere (a cluster's workers, on the bus: docs/scale.md): a session then
   * follows them instead of loading a model and running a pipeline on a source. Called at each start.
   */
  feed?: () => Observable<PoseFrame>;
  /** Overrides config `redis.url` (`csipose serve --redis`); '' turns Redis off. */
  redisUrl?: string;
}

/** How long a start waits for Redis when the signing secret must come from it. */
const REDIS_START_WAIT_MS = 10_000;

/**
 * The shared state of the api nodes (config `redis.url`), connected; or undefined without Redis.
 * @throws Error when Redis cannot be reached in time and the signing secret must come from it
 */
async function openShared(
  url: string,
  prefix: string,
  env: Record<string, string | undefined>,
  log: (level: LogLevel, msg: string) => void,
): Promise<{ link: RedisLink; state: RedisAuthState } | undefined> {
  if (!url) return undefined;
  const link = new RedisLink({ url, prefix, env, log });
  const ready = await link.waitReady(env.CSIPOSE_JWT_SECRET ? 2000 : REDIS_START_WAIT_MS);
  if (!ready && !env.CSIPOSE_JWT_SECRET) {
    await link.close();
    throw new Error(
      `cannot reach Redis at ${url} within ${REDIS_START_WAIT_MS / 1000} s (${link.report().last_error ?? 'no answer'}): ` +
        'the nodes share their token signing secret there. Start Redis, or give every node the same CSIPOSE_JWT_SECRET',
    );
  }
  if (!ready) log('warn', `redis: ${url} does not answer yet; serving on this node's state until it does`);
  return { link, state: new RedisAuthState(link, { log }) };
}

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
 * Loads a window model for submissions (`neural_network.submission_model_path`, found as
 * `model_path` is): contract v1 or v2, which reads one link's windows.
 * @param path the configured path
 * @returns the loaded model (the caller releases it)
 * @throws ModelError when it does not load, or is a v3 refiner
 */
async function loadWindowModel(path: string): Promise<PoseModel> {
  const m = await PoseModel.load(resolveInstalled(path));
  if (m.contract === 3) {
    await m.release();
    throw new ModelError("it is a v3 refiner, which reads the physics front end's candidates, not a submitted link's windows");
  }
  return m;
}

/**
 * The running system: configuration, authentication, the store (and its retention schedule),
 * the lifecycle with the live pipeline, and its public face (src/service/face.ts): the hot
 * streams `pose$`, `alerts$`, `events$`, `status$` ({@link ServiceStreams}), a few reads
 * ({@link ServiceReads}) and commands ({@link ServiceCommands}). The pipeline runs once per
 * session and publishes each pose frame once; everything that consumes it is an outlet of its
 * own (src/outlets: the latest-frame cache, the metrics history, the DuckDB sink, the Parquet
 * lake, the HTTP and WebSocket server, the MQTT publisher), which the application starts and
 * closes (src/app.ts). Nothing here knows HTTP.
 *
 * @example
 * const svc = await PoseService.open({ dataDir: './data' });
 * svc.pose$.subscribe((v) => console.log(v.json({ form: 'b', minConfidence: 0, includeKeypoints: true, includeDensePose: false })));
 * svc.system.start();
 */
export class PoseService implements ServiceStreams, ServiceReads, ServiceCommands, ComponentReports {
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
  /** The latest floor map of each environment, reduced for display (`GET /pose/floor-map`). */
  readonly floorMaps: FloorMaps;
  /** What the stop step `flush_sinks` flushes (each outlet's `flush`, attached by the application). */
  private readonly flushers = new Set<() => Promise<void>>();
  private readonly cpu = new CpuMeter();
  private readonly diskIo = new DiskIoMeter();
  private readonly components = new Map<string, () => ComponentReport>();
  private model: PoseModel | undefined;
  /**
   * The window model that answers `POST /pose/process` while `model` is a v3 refiner
   * (`neural_network.submission_model_path`), or why it could not be loaded.
   */
  private submissionModel: PoseModel | string | undefined;
  private closing: Promise<void> | undefined;
  /** Following a feed: the model version of the latest frame (the workers hold the model). */
  private remoteModelVersion: string | null = null;
  /** One past the largest track id stored: the next session's first track (ids never repeat). */
  private firstTrackId = 1;
  private readonly retentionTimer: NodeJS.Timeout;

  private constructor(
    readonly opts: ServiceOptions,
    readonly config: ConfigStore,
    readonly auth: Authenticator,
    readonly store: Store,
    generatedAdminPassword: string | undefined,
    /**
     * The service's logger, counting what it logs at level `error` (the metrics outlet stores the
     * count since its previous sample). The application logs through it too.
     */
    readonly log: CountingLogger<LogLevel>,
    /** The link to the Redis the api nodes share (config `redis.url`), when there is one. */
    readonly redis: RedisLink | undefined,
    redisState: RedisAuthState | undefined,
  ) {
    this.generatedAdminPassword = generatedAdminPassword;
    if (redis) this.report('redis', () => ({ ...redis.report(), ...redisState?.report() }));
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
    // Retention is the store's (Store.pruneOlderThan); the service, which opens and closes the
    // store and holds the configuration, only schedules it: at open, then hourly.
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
    const env = opts.env ?? process.env;
    let store: Store | undefined;
    let shared: Awaited<ReturnType<typeof openShared>>;
    try {
      const cfg = config.get().redis;
      shared = await openShared(opts.redisUrl ?? cfg.url, cfg.key_prefix, env, log);
      const init = await auth.init({ dataDir: opts.dataDir, env, ...(shared ? { shared: shared.state } : {}) });
      store = await Store.open(join(opts.dataDir, 'csipose.duckdb'), opts.storeOptions?.(config.get()) ?? {});
      return new PoseService(opts, config, auth, store, init.generatedAdminPassword, log, shared?.link, shared?.state);
    } catch (e) {
      await store?.close().catch(() => undefined);
      auth.close();
      await shared?.link.close();
      config.close();
      throw e;
    }
  }

  get dataDir(): string {
    return this.opts.dataDir;
  }

  modelVersion(): string | null {
    return this.model?.metadata.model_version ?? this.remoteModelVersion;
  }

  /**
   * Adds a sink to flush at the stop step `flush_sinks` (and so at shutdown).
   * @returns a function that removes it
   */
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
    const nn = this.config.get().neural_network;
    // Following a feed, the workers that make the live frames hold the live model; submissions
    // are answered here, by the window model.
    const model = this.opts.feed ? undefined : await PoseModel.load(resolveInstalled(nn.model_path));
    await this.releaseModel();
    this.model = model;
    if (model?.warning) this.log('warn', `model: ${model.warning}`);
    // A refiner cannot read one submitted link: submissions go to a window model. Live poses do
    // not need it, so a failure to load it is the submissions' error, not the session's.
    if (!model || model.contract === 3) {
      try {
        this.submissionModel = await loadWindowModel(nn.submission_model_path);
      } catch (e) {
        this.submissionModel = `neural_network.submission_model_path (${nn.submission_model_path}): ${(e as Error).message}`;
        this.log('warn', `model: POST /pose/process is unavailable: ${this.submissionModel}`);
      }
    }
  }

  private async releaseModel(): Promise<void> {
    await this.model?.release();
    this.model = undefined;
    if (typeof this.submissionModel === 'object') await this.submissionModel.release();
    this.submissionModel = undefined;
  }

  private async checkStore(): Promise<void> {
    const [row] = await this.store.query<{ max_track: number | null }>('SELECT max(track_id) AS max_track FROM pose_persons');
    this.firstTrackId = (row?.max_track ?? 0) + 1;
  }

  private openSource(): Observable<CsiFrame> {
    // Following a feed there is no CSI here: startPipeline subscribes the feed.
    if (this.opts.feed) return EMPTY;
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
    if (this.opts.feed) {
      this.floorMaps.begin(false);
      return this.opts.feed().subscribe({
        next: (f) => {
          this.remoteModelVersion = f.modelVersion;
          onPose(f);
        },
        error: onFault,
        complete: () => onFault(new Error('the feed of pose frames ended')),
      });
    }
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
    if (!this.model && this.submissionModel === undefined)
      throw new ApiError('SYSTEM_NOT_READY', 'no model is loaded: start the system first (POST /system/start)', { status: this.system.state });
    const model = !this.model || this.model.contract === 3 ? this.submissionModel : this.model;
    if (typeof model !== 'object')
      throw new ApiError('MODEL_ERROR', `${this.model ? 'the live model is a v3 refiner and ' : ''}no window model answers submissions: ${model}`);
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
    // A model that cannot load would only fail at the next start: try it now.
    const nn = this.config.get().neural_network;
    const errors: FieldError[] = [];
    const tryLoad = async (field: 'model_path' | 'submission_model_path', as: string, load: (path: string) => Promise<PoseModel>) => {
      const change = changes.find((c) => c.path === `neural_network.${field}`);
      if (!change || change.value === nn[field]) return;
      try {
        await (await load(String(change.value))).release();
      } catch (e) {
        errors.push({
          field: `neural_network.${field}`,
          message: `neural_network.${field} does not load ${as}: ${(e as Error).message}`,
          received_value: change.value,
        });
      }
    };
    await tryLoad('model_path', 'as a pose model', (path) => PoseModel.load(resolveInstalled(path)));
    await tryLoad('submission_model_path', 'as a window model (contract v1 or v2)', loadWindowModel);
    if (errors.length > 0) throw new ConfigUpdateError(errors);
    return this.config.update(changes);
  }

  // ---- figures ------------------------------------------------------------------------------

  snapshot(): ServiceSnapshot {
    const now = Date.now();
    const sys = this.system;
    const state = sys.state;
    const running = state === 'running';
    const f = this.figures;
    // The latest frame of each environment, as the pipeline published it (its own figures).
    const latest = f.latestFigures();
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
        quality: latest.csiQuality,
        links: running ? f.linkReports() : [],
      },
      pose: {
        rateHz: round2(f.poseRate.rate()),
        frames: f.poseRate.total,
        latencyMs: Number.isFinite(latency) ? round2(latency) : 0,
        lastPoseAt: f.lastPoseAt || null,
        activePersons: latest.persons,
        activeTracks: f.activeTracks(),
        trackQuality: latest.trackQuality,
        detectionsPerMinute: round2(f.detections.rate() * 60),
      },
      model: {
        status: this.opts.feed
          ? 'remote'
          : this.model
            ? running
              ? 'active'
              : 'loaded'
            : state === 'error' && sys.error?.code === 'MODEL_ERROR'
              ? 'error'
              : 'not_loaded',
        loaded: !!this.model,
        version: this.modelVersion(),
        siteInput: (this.model?.siteDim ?? 0) > 0,
        siteKnown: siteGeometry(this.config.get()) !== null,
        queue: f.inferStats.queue,
        inferred: f.inferStats.rows,
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

  /** Graceful shutdown: stop the pipeline, flush and close the store, release the model. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.retentionTimer);
      await this.system.settled();
      if (this.system.state === 'running') {
        this.system.stop();
        await this.system.settled();
      }
      this.poseSubject.complete();
      this.stateChanges.complete();
      await this.store.close();
      await this.releaseModel();
      this.config.close();
      this.auth.close();
      await this.redis?.close();
    })();
    return this.closing;
  }
}
