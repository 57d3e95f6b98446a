import { ApiError } from '../../errors.js';
import type { CoreStats, Route } from '../core.js';
import { Checker } from '../validate.js';
import type { HasSystemView, MetricsReads, ServiceReads, ServiceSnapshot } from '../../service/face.js';
import { confidence } from '../../precision.js';

/** What `/health/*` and `/metrics` use: the snapshot, the system's state and the metrics history. */
export type HealthRoutesFace = HasSystemView & Pick<ServiceReads, 'version' | 'snapshot'> & MetricsReads;

function r2(v: number): number {
  return Math.round(v * 100) / 100;
}

/**
 * Unhealthy while the system is in error or the store gives rows up; degraded while the store's
 * writes fail (rows kept for a retry) or a component reports an error or a lost connection.
 */
function overall(s: ServiceSnapshot): 'healthy' | 'degraded' | 'unhealthy' {
  if (s.system.state === 'error' || s.store.status === 'unhealthy') return 'unhealthy';
  const degraded = s.store.status === 'degraded' || Object.values(s.components).some((c) => c.status === 'error' || c.status === 'disconnected');
  return degraded ? 'degraded' : 'healthy';
}

function detailedHealth(s: ServiceSnapshot, http: CoreStats): Record<string, unknown> {
  const store = 'connection_pool' in s.store ? s.store : undefined;
  return {
    overall_status: overall(s),
    timestamp: new Date(s.at).toISOString(),
    version: s.version,
    uptime: s.processUptimeSeconds,
    components: {
      api: { status: 'healthy', response_time_ms: r2(http.avgResponseMs), requests_per_second: r2(http.requestRate()) },
      database: {
        status: s.store.status,
        connection_pool: store?.connection_pool ?? '0/0',
        query_time_ms: r2(store?.query_time_ms ?? 0),
        // What the failing writes say, from the first failure until a write of those rows succeeds.
        ...(store?.last_error !== undefined ? { last_error: store.last_error } : {}),
      },
      // No Redis here: the service keeps its state in process and in DuckDB.
      redis: { status: 'not_used', memory_usage: '0MB', connected_clients: 0 },
      neural_network: { status: s.model.status, model_loaded: s.model.loaded, gpu_memory_usage: '0MB', inference_queue: s.model.queue },
      csi_processor: { status: s.csi.status, data_rate: s.csi.rateHz, buffer_usage: `${s.model.queue} windows` },
      // The outlets: the WebSocket fan-out, the MQTT publisher.
      ...s.components,
    },
    metrics: {
      cpu_usage: s.resources.cpuPercent,
      memory_usage: s.resources.memoryPercent,
      memory_mb: s.resources.memoryMiB,
      disk_usage: s.resources.diskPercent,
      // HTTP body bytes this process read and wrote.
      network_io: { bytes_in: http.bytesIn, bytes_out: http.bytesOut },
    },
    system: { status: s.system.state, ...(s.system.error ? { error: s.system.error } : {}) },
  };
}

function currentMetrics(s: ServiceSnapshot, http: CoreStats) {
  return {
    timestamp: new Date(s.at).toISOString(),
    performance: {
      frames_per_second: s.csi.rateHz,
      pose_frames_per_second: s.pose.rateHz,
      average_latency_ms: s.pose.latencyMs,
      processing_queue_size: s.model.queue,
      dropped_windows: s.model.dropped,
      error_rate: r2(http.errors / Math.max(1, http.requests)),
    },
    resources: {
      cpu_usage: s.resources.cpuPercent,
      memory_usage: s.resources.memoryPercent,
      gpu_usage: 0,
      // Without /proc (not Linux) the process's disk throughput is not known: 0, as the docs say.
      disk_io: s.resources.diskIo ?? { read_mb_per_sec: 0, write_mb_per_sec: 0 },
    },
    business: {
      active_persons: s.pose.activePersons,
      detections_per_minute: s.pose.detectionsPerMinute,
      tracking_accuracy: confidence(s.pose.trackQuality),
    },
    // Outlet figures: WebSocket drops and slow-client closes, MQTT publishes and drops.
    streaming: s.components,
  };
}

/** `GET /health` (no credentials), `GET /health/detailed`, `GET /metrics`. */
export function healthRoutes(svc: HealthRoutesFace, http: CoreStats): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/health',
      category: 'health',
      role: null,
      handler: () => ({
        bare: true,
        data: {
          status: svc.system.state === 'error' ? 'unhealthy' : 'healthy',
          timestamp: new Date().toISOString(),
          version: svc.version,
          uptime: svc.snapshot().processUptimeSeconds,
        },
      }),
    },
    {
      method: 'GET',
      pattern: '/health/detailed',
      category: 'health',
      role: 'viewer',
      handler: () => ({ data: detailedHealth(svc.snapshot(), http) }),
    },
    {
      method: 'GET',
      pattern: '/metrics',
      category: 'health',
      role: 'viewer',
      handler(ctx) {
        const c = new Checker();
        c.onlyQuery(ctx.query, ['start_time', 'end_time', 'metric_type']);
        const start = c.queryTime(ctx.query, 'start_time') ?? 0;
        const end = c.queryTime(ctx.query, 'end_time') ?? Number.MAX_SAFE_INTEGER;
        const type = c.queryString(ctx.query, 'metric_type', 32, ['performance', 'resources', 'business', 'streaming', 'all']) ?? 'all';
        c.done();
        if (start > end)
          throw ApiError.fields([{ field: 'start_time', message: 'start_time must not be after end_time', received_value: ctx.query.get('start_time') }]);
        const m = currentMetrics(svc.snapshot(), http);
        const current: Record<string, unknown> = { timestamp: m.timestamp };
        for (const k of ['performance', 'resources', 'business', 'streaming'] as const) if (type === 'all' || type === k) current[k] = m[k];
        const historical = svc.metricsHistory().filter((h) => {
          const t = Date.parse(h.timestamp);
          return t >= start && t <= end;
        });
        return { data: { current, historical } };
      },
    },
  ];
}
