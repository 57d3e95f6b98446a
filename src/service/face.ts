import type { Observable } from 'rxjs';
import type { ActivityEvent, PoseAlert } from '../pose/types.js';
import type { UntrainedLink } from '../../operators/infer.js';
import type { LinkReport } from '../csi/linkMonitor.js';
import type { PoseFrameView } from '../render/view.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { ConfigChangeEvent, ConfigSnapshot, UpdateResult } from '../config/store.js';
import type { ConfigChange } from '../config/validate.js';
import type { Store, StoreHealth } from '../store/store.js';
import type { Step, SystemState, Transition } from './system.js';
import type { FloorMapReader } from './floorMaps.js';

/** What an outlet or a component reports about itself (in `/health/detailed` and `/metrics`). */
export type ComponentReport = Readonly<Record<string, unknown>> & { readonly status: string };

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
 * The running system at one moment, as plain figures: every one measured from the process, the
 * pipeline or the store. Routes render it in a response form; `status$` pushes it.
 */
export interface ServiceSnapshot {
  /** Epoch ms of the snapshot. */
  at: number;
  version: string;
  /** Seconds since the process opened the service. */
  processUptimeSeconds: number;
  system: {
    state: SystemState;
    sessionId: string | null;
    startedAt: number | null;
    uptimeSeconds: number;
    everRan: boolean;
    error: { code: string; message: string } | null;
    steps: readonly Step[];
  };
  csi: {
    /** active (frames in the last 5 s), idle, stopped or error. */
    status: string;
    rateHz: number;
    frames: number;
    lastFrameAt: number | null;
    /** Distinct CSI sources that sent a frame in the last 10 s. */
    routers: number;
    /** Mean CSI quality (0..1) behind the latest frames; 0 without frames. */
    quality: number;
    /**
     * The running session's links: every link of the site (the primary first), then links not in
     * the site still sending; empty while no session runs (docs/service.md "Links").
     */
    links: readonly LinkReport[];
  };
  pose: {
    rateHz: number;
    frames: number;
    /** EWMA of the time from the last CSI frame's arrival to a pose frame, ms. */
    latencyMs: number;
    lastPoseAt: number | null;
    activePersons: number;
    activeTracks: number;
    /** Mean person confidence of the latest frames. */
    trackQuality: number;
    detectionsPerMinute: number;
  };
  model: {
    status: string;
    loaded: boolean;
    version: string | null;
    siteInput: boolean;
    siteKnown: boolean;
    queue: number;
    /** CSI windows inferred; with `dropped`, the pipeline's error rate (the share dropped under lag). */
    inferred: number;
    dropped: number;
    avgBatchMs: number;
    /** Links of the running session whose CSI layout the model was not trained on (their windows are dropped). */
    untrainedLinks: readonly UntrainedLink[];
  };
  tracker: { status: string };
  store: StoreHealth | { status: 'closed' };
  resources: {
    cpuPercent: number;
    memoryPercent: number;
    memoryMiB: number;
    diskPercent: number;
    diskIo: { read_mb_per_sec: number; write_mb_per_sec: number } | null;
  };
  /** Outlets and other attached components (`ws`, `mqtt`, ...) by name. */
  components: Readonly<Record<string, ComponentReport>>;
}

/** A CSI submission of `POST /pose/process`, validated by the server. */
export interface CsiSubmission {
  packets: ReadonlyArray<{ nRx: number; nSub: number; csi: Float32Array; time?: number }>;
  /** Epoch ms of the first packet when packets carry no time. */
  startMs: number;
  rateHz: number;
  routerId: string;
  /** Overrides of the configuration for this submission. */
  confidenceThreshold?: number;
  maxPersons?: number;
  tracking: boolean;
  densePose: boolean;
}

/** What a submission produced. */
export interface ProcessResult {
  frames: PoseFrameView[];
  /** Packets submitted. */
  received: number;
  /** Packets repeated to fill the model's window. */
  padded: number;
  processingMs: number;
}

/** The service's hot streams, each shared: an outlet subscribes without running the pipeline again. */
export interface ServiceStreams {
  /** Every pose frame of the live pipeline, rendered once per shape (hot, shared; never completes). */
  readonly pose$: Observable<PoseFrameView>;
  /** Every alert raised (hot). */
  readonly alerts$: Observable<PoseAlert>;
  /** Every activity event recorded (hot). */
  readonly events$: Observable<ActivityEvent>;
  /** A snapshot every `streaming.status_interval_seconds` and at each system state change (hot while subscribed). */
  readonly status$: Observable<ServiceSnapshot>;
}

/** Where components put their reports, which snapshots show (`/health/detailed`, `/metrics`). */
export interface ComponentReports {
  /**
   * Adds a component's report to snapshots.
   * @returns a function that removes it
   */
  report(name: string, fn: () => ComponentReport): () => void;
}

/** What the service knows of itself, read-only. */
export interface ServiceReads {
  readonly version: string;
  /** The running system now, as figures. */
  snapshot(): ServiceSnapshot;
  /** Version of the loaded model, null when none is loaded. */
  modelVersion(): string | null;
  /**
   * The latest floor map of each environment, reduced for display (the physics front end's, when
   * the session runs `physics-live`), and whether the session's pipeline makes any.
   */
  readonly floorMaps: FloorMapReader;
}

/** The latest pose frame of each environment (the latest outlet, src/outlets/latest.ts). */
export interface LatestReads {
  /** The latest pose frame of an environment. */
  latest(environmentId: string): PoseFrameView | undefined;
  /** Environments with a latest frame. */
  environments(): string[];
}

/** The last hour of metrics samples (the metrics outlet, src/outlets/metrics.ts). */
export interface MetricsReads {
  metricsHistory(): readonly MetricsSample[];
}

/** The configuration, read-only: what it is now and each change. Updates go through {@link ServiceCommands.updateConfig}. */
export interface ConfigReader {
  get(): ConfigSnapshot;
  readonly changes$: Observable<ConfigChangeEvent>;
}

/** Where the lifecycle stands. */
export interface SystemView {
  readonly state: SystemState;
  /** Whether a session ever reached `running` in this process. */
  readonly everRan: boolean;
}

/** The lifecycle's commands (the SystemController's, without its internals). */
export interface SystemCommands extends SystemView {
  start(): Transition;
  stop(): Transition;
  restart(): Transition & { previous_session_id: string | undefined };
}

/** Requests that change or use the running system. */
export interface ServiceCommands {
  /** Runs one CSI submission through the `process` pipeline with the loaded model. */
  process(s: CsiSubmission): Promise<ProcessResult>;
  /** Applies validated changes; a new `neural_network.model_path` must load as a model first. */
  updateConfig(changes: readonly ConfigChange[]): Promise<UpdateResult>;
}

/** Accounts and keys, as `/auth/*` uses them (the Authenticator's commands, without its stores). */
export type AccountCommands = Pick<Authenticator, 'login' | 'refresh' | 'revoke' | 'listApiKeys' | 'createApiKey' | 'revokeApiKey'>;

/** Small holders, so a route declares the part it reads by name (`svc.config`, `svc.system`, ...). */
export interface HasConfig {
  readonly config: ConfigReader;
}
export interface HasSystemView {
  readonly system: SystemView;
}
export interface HasSystem {
  readonly system: SystemCommands;
}
export interface HasAccounts {
  readonly auth: AccountCommands;
}
/**
 * The DuckDB store, for the history, analytics and store routes. Whole, not a read-only view:
 * the read functions of src/store (history.ts, analytics.ts, export.ts) take the Store class.
 * The routes call only those and `sqlJson`, which refuses anything but a read statement.
 */
export interface HasStore {
  readonly store: Store;
}
/**
 * Where the history and analytics routes read when not the node's own store: a cluster's shared
 * lake root (src/store/lakeRoot.ts), on its api and store nodes started with `--lake`.
 */
export interface HasHistoryStore {
  readonly historyStore?: Store;
  /**
   * Where `POST /store/query` reads when not the node's own store: the lake root, on an api node
   * started with `--lake` (its own store holds no history). A store node's query reads its own
   * store, as `csipose query --data-dir` asks of it.
   */
  readonly queryStore?: Store;
}
