import type { ServiceSnapshot } from './face.js';
import type { Form } from '../render/frame.js';
import { confidence } from '../precision.js';
import { DEGRADING_LINK_STATES, type LinkReport } from '../csi/linkMonitor.js';

function iso(ms: number | null): string | null {
  return ms ? new Date(ms).toISOString() : null;
}
function r2(v: number): number {
  return Math.round(v * 100) / 100;
}

/**
 * The neural network's status and the links it does not read: `degraded` while a running model
 * drops the windows of a link whose CSI layout it was not trained on (docs/model.md, "Trained layouts").
 */
function network(s: ServiceSnapshot): { status: string; untrained_links: Array<Record<string, unknown>> } {
  const links = s.model.untrainedLinks;
  return {
    status: links.length > 0 && s.model.status === 'active' ? 'degraded' : s.model.status,
    untrained_links: links.map((l) => ({
      source_id: l.sourceId,
      environment_id: l.environmentId,
      layout: l.layout,
      reason: `${l.layout}: the model was not trained on ${l.reason}`,
      windows_dropped: l.windows,
      last_dropped: iso(l.lastAt),
    })),
  };
}

/** True when a link of the running session is stopped, lagging, mismatched or unknown (docs/service.md "Links"). */
function linkTrouble(s: ServiceSnapshot): boolean {
  return s.csi.links.some((l) => DEGRADING_LINK_STATES.has(l.state));
}

/**
 * The links of the session, one entry each (docs/service.md "Links"), and the receiving
 * component's status: `degraded` (instead of `active`) while one of them is stopped, lagging,
 * mismatched or unknown, its entry saying which and why.
 */
function csiLinks(s: ServiceSnapshot): { status: string; links: Array<Record<string, unknown>> } {
  return {
    status: s.csi.status === 'active' && linkTrouble(s) ? 'degraded' : s.csi.status,
    links: s.csi.links.map(renderLink),
  };
}

function renderLink(l: LinkReport): Record<string, unknown> {
  return {
    link_id: l.linkId,
    tx: l.tx,
    rx: l.rx,
    state: l.state,
    primary: l.primary,
    rate_hz: r2(l.rateHz),
    packet_loss_rate: Math.round(l.packetLossRate * 10_000) / 10_000,
    last_packet_time: iso(l.lastPacketAt),
    lag_ms: r2(l.lagMs),
    layout: l.layout,
    frames: l.frames,
    reason: l.reason,
  };
}

/**
 * `healthy` while the system runs or rests without fault, `degraded` while it starts or stops, a
 * link is not read, a link is stopped, lagging, mismatched or unknown, or store writes fail,
 * `unhealthy` in error or while the store gives rows up.
 */
export function systemHealth(s: ServiceSnapshot): 'healthy' | 'degraded' | 'unhealthy' {
  // A store that gives rows up loses data whatever the pipeline does.
  if (s.system.state === 'error' || s.store.status === 'unhealthy') return 'unhealthy';
  if (s.system.state === 'running' || s.system.state === 'stopped')
    return s.store.status === 'degraded' || s.model.untrainedLinks.length > 0 || linkTrouble(s) ? 'degraded' : 'healthy';
  return 'degraded';
}

/**
 * The system status resource (`GET /system/status`) in a form.
 * @param s a snapshot of the service
 * @param form the response form
 */
export function renderSystemStatus(s: ServiceSnapshot, form: Form): Record<string, unknown> {
  const err = s.system.error ? { error: s.system.error } : {};
  const receiving = csiLinks(s);
  const database = { status: s.store.status, connection_pool: 'connection_pool' in s.store ? s.store.connection_pool : '0/0' };
  if (form === 'a') {
    return {
      status: s.system.state,
      uptime_seconds: s.system.uptimeSeconds,
      version: s.version,
      components: {
        csi_receiver: {
          status: receiving.status,
          data_rate_hz: s.csi.rateHz,
          packet_loss_rate: r2(s.csi.routers || s.csi.frames ? Math.max(0, 1 - s.csi.quality) : 0),
          last_packet_time: iso(s.csi.lastFrameAt),
          links: receiving.links,
        },
        neural_network: { ...network(s), model_loaded: s.model.loaded, inference_time_ms: s.model.avgBatchMs, gpu_utilization: 0 },
        tracking: { status: s.tracker.status, active_tracks: s.pose.activeTracks, track_quality: confidence(s.pose.trackQuality) },
      },
      hardware: {
        cpu_usage: s.resources.cpuPercent,
        memory_usage: s.resources.memoryPercent,
        gpu_memory_usage: 0,
        disk_usage: s.resources.diskPercent,
      },
      // The receivers heard from: links of the site in the `live` state.
      network: {
        connected_routers: s.csi.links.filter((l) => l.state === 'live').length,
        signal_strength: r2(s.csi.quality),
        interference_level: r2(1 - s.csi.quality),
      },
      session_id: s.system.sessionId,
      steps: s.system.steps,
      ...err,
    };
  }
  return {
    status: s.system.state,
    session_id: s.system.sessionId,
    uptime_seconds: s.system.uptimeSeconds,
    started_at: iso(s.system.startedAt),
    version: s.version,
    performance: {
      frames_processed: s.csi.frames,
      pose_frames: s.pose.frames,
      average_fps: s.csi.rateHz,
      average_latency_ms: s.pose.latencyMs,
      cpu_usage: s.resources.cpuPercent,
      memory_usage: s.resources.memoryPercent,
      gpu_usage: 0,
    },
    components: {
      csi_processor: { status: receiving.status, last_heartbeat: iso(s.csi.lastFrameAt), links: receiving.links },
      neural_network: {
        ...network(s),
        model_loaded: s.model.loaded,
        model_version: s.model.version,
        // Whether the model takes the site geometry, and whether the configuration gives it one.
        site_input: s.model.siteInput,
        site_known: s.model.siteKnown,
        inference_queue_size: s.model.queue,
        dropped_windows: s.model.dropped,
      },
      tracker: { status: s.tracker.status, active_tracks: s.pose.activeTracks },
      database,
    },
    steps: s.system.steps,
    ...err,
  };
}

/**
 * The `system_status` message of the WebSocket (and the retained MQTT `status`): the spec's
 * `processing_fps`, `active_persons`, `system_health`, `gpu_utilization`, plus the system state,
 * pose frame rate and latency, active tracks and the session.
 * @param s a snapshot of the service
 */
export function renderStatusMessage(s: ServiceSnapshot): Record<string, unknown> {
  return {
    type: 'system_status',
    timestamp: new Date(s.at).toISOString(),
    status: {
      processing_fps: s.csi.rateHz,
      pose_fps: s.pose.rateHz,
      active_persons: s.pose.activePersons,
      active_tracks: s.pose.activeTracks,
      system_health: systemHealth(s),
      state: s.system.state,
      session_id: s.system.sessionId,
      average_latency_ms: s.pose.latencyMs,
      gpu_utilization: 0,
    },
  };
}
