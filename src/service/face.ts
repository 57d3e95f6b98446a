import type { Observable } from 'rxjs';
import type { ActivityEvent, PoseAlert } from '../pose/types.js';
import type { UntrainedLink } from '../../operators/infer.js';
import type { LinkReport } from '../../operators/links.js';
import type { PoseFrameView } from '../render/view.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { ConfigStore, UpdateResult } from '../config/store.js';
import type { ConfigChange } from '../config/validate.js';
import type { Store, StoreHealth } from '../store/store.js';
import type { Step, SystemController, SystemState } from './system.js';
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

/**
 * The service's public face: hot streams every outlet subscribes to on its own, and a small
 * read interface. Routes and outlets take what they need from here and keep no pipeline state.
 */
export interface ServiceFace {
  readonly version: string;
  readonly dataDir: string;
  readonly config: ConfigStore;
  readonly auth: Authenticator;
  /** The DuckDB store: history and analytics read it (parameters bound, read statements only). */
  readonly store: Store;
  /** The lifecycle: start, stop, restart and their states. */
  readonly system: SystemController;
  /** Every pose frame of the live pipeline, rendered once per shape (hot, shared; never completes). */
  readonly pose$: Observable<PoseFrameView>;
  /** Every alert raised (hot). */
  readonly alerts$: Observable<PoseAlert>;
  /** Every activity event recorded (hot). */
  readonly events$: Observable<ActivityEvent>;
  /** A snapshot every `streaming.status_interval_seconds` and at each system state change (hot while subscribed). */
  readonly status$: Observable<ServiceSnapshot>;
  /** The latest pose frame of an environment (default: the configured one). */
  latest(environmentId?: string): PoseFrameView | undefined;
  /** Environments with a latest frame. */
  environments(): string[];
  /**
   * The latest floor map of each environment, reduced for display (the physics front end's, when
   * the session runs `physics-live`), and whether the session's pipeline makes any.
   */
  readonly floorMaps: FloorMapReader;
  snapshot(): ServiceSnapshot;
  metricsHistory(): readonly MetricsSample[];
  /** Version of the loaded model, null when none is loaded. */
  modelVersion(): string | null;
  /** Runs one CSI submission through the `process` pipeline with the loaded model. */
  process(s: CsiSubmission): Promise<ProcessResult>;
  /** Applies validated changes; a new `neural_network.model_path` must load as a model first. */
  updateConfig(changes: readonly ConfigChange[]): Promise<UpdateResult>;
  /**
   * Adds a sink to flush at the stop step `flush_sinks` (and so at shutdown).
   * @returns a function that removes it
   */
  flushOnStop(flush: () => Promise<void>): () => void;
  /**
   * Adds a component's report to snapshots (`/health/detailed`, `/metrics`).
   * @returns a function that removes it
   */
  report(name: string, fn: () => ComponentReport): () => void;
}
