import type { MetricsReads, MetricsSample } from '../service/face.js';
import type { CountingLogger } from '../service/metrics.js';
import type { LogLevel } from '../service/service.js';
import { MetricsRecorder } from '../store/metricsRecorder.js';
import type { Store } from '../store/store.js';
import type { Outlet, OutletStreams } from './outlet.js';

/** One sample every 10 s, an hour of them. */
export const METRICS_EVERY_MS = 10_000;
const METRICS_KEPT = 360;

/**
 * The metrics history: every 10 s a sample of the service's snapshot, kept for an hour in memory
 * (`GET /metrics` `historical`) and written to the store's `system_metrics` (the summary's uptime
 * and error count, and analysts), where a sample the store cannot take yet waits for a retry
 * (MetricsRecorder).
 */
export class MetricsOutlet implements Outlet, MetricsReads {
  readonly name = 'metrics';
  private readonly history: MetricsSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: { streams: OutletStreams; recorder: MetricsRecorder } | undefined;
  /** Errors logged up to the last sample. */
  private errorsSampled = 0;

  /**
   * @param store the service's store (`system_metrics`)
   * @param log the service's logger: its error count goes into each sample, write failures into it
   */
  constructor(
    private readonly store: Store,
    private readonly log: CountingLogger<LogLevel>,
  ) {}

  start(streams: OutletStreams): void {
    // Attached to the store, which makes a last attempt at samples still waiting when it closes.
    const recorder = new MetricsRecorder(this.store, {
      onError: (e) => {
        if (!this.store.closed) this.log('error', `metrics: ${e.message}`);
      },
    });
    this.running = { streams, recorder };
    this.timer = setInterval(() => this.sample(), METRICS_EVERY_MS);
    this.timer.unref();
  }

  metricsHistory(): readonly MetricsSample[] {
    return this.history;
  }

  /** Takes one sample now, as the timer does every 10 s (tests take theirs without waiting). Nothing before `start`. */
  sample(): void {
    if (!this.running) return;
    const { streams, recorder } = this.running;
    const s = streams.snapshot();
    const errors = this.log.errors;
    // The same sample into the store, kept for a retry while the store cannot take it. Never rejects.
    void recorder.record({
      time: s.at,
      framesPerSecond: s.csi.rateHz,
      averageLatencyMs: s.pose.latencyMs,
      cpuUsage: s.resources.cpuPercent,
      memoryUsage: s.resources.memoryPercent,
      processingQueueSize: s.model.queue,
      // The pipeline's error rate: the share of CSI windows inference dropped under lag.
      errorRate: s.model.dropped / Math.max(1, s.model.inferred + s.model.dropped),
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

  /** Stops sampling (samples still waiting stay with the store, which tries them once more as it closes). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
