import { statfsSync } from 'node:fs';
import { ApiError } from './errors.js';
import type { Ctx, Reply, Route } from './core.js';
import { Checker } from './validate.js';
import { renderFrame } from './render.js';
import { StateConflict, type Transition } from '../service/system.js';
import type { PoseService } from '../service/service.js';
import { VERSION } from '../service/service.js';
import { memoryMiB, memoryPercent } from '../service/metrics.js';
import { toForm, formPaths, parseUpdate } from '../config/forms.js';
import { schemaDocument, type FieldError } from '../config/validate.js';
import { ConfigUpdateError } from '../config/store.js';
import { defaults } from '../config/schema.js';
import { isRole, type Role } from '../auth/roles.js';
import { processCsi } from '../service/process.js';
import type { PoseFrame } from '../pose/types.js';

const MIB = 1024 * 1024;

function iso(ms: number | undefined): string | null {
  return ms ? new Date(ms).toISOString() : null;
}
function r2(v: number): number {
  return Math.round(v * 100) / 100;
}

function conflict(e: unknown): never {
  if (e instanceof StateConflict) {
    throw new ApiError('SYSTEM_STATE_CONFLICT', e.message, { current_status: e.state, action: e.action });
  }
  throw e;
}

function diskPercent(path: string): number {
  try {
    const s = statfsSync(path);
    return r2(((s.blocks - s.bavail) / s.blocks) * 100);
  } catch {
    return 0;
  }
}

/**
 * Every REST endpoint of this service, thin: each reads service state or calls one service
 * method, validates its input field by field, and shapes the answer for the request's form.
 */
export function buildRoutes(svc: PoseService): Route[] {
  const latestCache = new Map<string, { frame: PoseFrame; json: string }>();
  const body = (ctx: Ctx): Record<string, unknown> => {
    const c = new Checker();
    const b = c.object(ctx.body, 'body', true);
    c.done();
    return b!;
  };

  // ---- auth --------------------------------------------------------------------------------
  const tokenReply = (pair: { accessToken: string; tokenType: string; expiresIn: number; refreshToken: string }): Reply => ({
    data: { access_token: pair.accessToken, token_type: pair.tokenType, expires_in: pair.expiresIn, refresh_token: pair.refreshToken },
  });

  const routes: Route[] = [
    {
      method: 'POST',
      pattern: '/auth/token',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = body(ctx);
        const c = new Checker();
        const username = c.string(b.username, 'username', 128, true);
        const password = c.string(b.password, 'password', 1024, true);
        c.only(b, '', ['username', 'password']);
        c.done();
        const pair = await svc.auth.login(username!, password!);
        if (!pair) throw new ApiError('AUTHENTICATION_ERROR', 'wrong username or password');
        return tokenReply(pair);
      },
    },
    {
      method: 'POST',
      pattern: '/auth/refresh',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = body(ctx);
        const c = new Checker();
        const token = c.string(b.refresh_token, 'refresh_token', 512, true);
        c.only(b, '', ['refresh_token']);
        c.done();
        const r = await svc.auth.refresh(token!);
        if (!r.ok) throw new ApiError('AUTHENTICATION_ERROR', 'refresh token is invalid, expired or already used', { reason: r.reason });
        return tokenReply(r.pair);
      },
    },
    {
      method: 'POST',
      pattern: '/auth/revoke',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = body(ctx);
        const c = new Checker();
        const token = c.string(b.token, 'token', 4096, true);
        c.only(b, '', ['token']);
        c.done();
        const kind = await svc.auth.revoke(token!);
        if (kind === 'unknown') throw new ApiError('RESOURCE_NOT_FOUND', 'not a token this service issued');
        return { data: { revoked: true, token_type: kind } };
      },
    },
    {
      method: 'GET',
      pattern: '/auth/keys',
      category: 'configuration',
      role: 'admin',
      handler: () => ({ data: { keys: svc.auth.listApiKeys() } }),
    },
    {
      method: 'POST',
      pattern: '/auth/keys',
      category: 'configuration',
      role: 'admin',
      handler(ctx) {
        const b = body(ctx);
        const c = new Checker();
        const role = c.string(b.role, 'role', 16, true, ['viewer', 'operator', 'admin']);
        const name = c.string(b.name, 'name', 128);
        c.only(b, '', ['role', 'name']);
        c.done();
        if (!isRole(role)) throw ApiError.fields([{ field: 'role', message: 'role must be viewer, operator or admin', received_value: role }]);
        const { key, info } = svc.auth.createApiKey(role as Role, name);
        return { status: 201, data: { ...info, key } };
      },
    },
    {
      method: 'DELETE',
      pattern: '/auth/keys/:key_id',
      category: 'configuration',
      role: 'admin',
      handler(ctx) {
        const id = ctx.params.key_id!;
        const r = svc.auth.revokeApiKey(id);
        if (r === 'not_found') throw new ApiError('RESOURCE_NOT_FOUND', `no API key ${id}`);
        if (r === 'env')
          throw ApiError.fields([{ field: 'key_id', message: `API key ${id} comes from CSIPOSE_API_KEYS: remove it from that variable instead`, received_value: id }]);
        return { data: { id, revoked: true, already_revoked: r === 'already_revoked' } };
      },
    },

    // ---- pose ------------------------------------------------------------------------------
    {
      method: 'GET',
      pattern: '/pose/latest',
      category: 'pose_data',
      role: 'viewer',
      handler(ctx) {
        const c = new Checker();
        c.onlyQuery(ctx.query, ['environment_id', 'min_confidence', 'include_keypoints', 'include_dense_pose']);
        const env = c.queryString(ctx.query, 'environment_id');
        const minConfidence = c.queryNumber(ctx.query, 'min_confidence', 0, 1) ?? 0;
        const includeKeypoints = c.queryBool(ctx.query, 'include_keypoints') ?? true;
        const includeDensePose = c.queryBool(ctx.query, 'include_dense_pose') ?? false;
        c.done();
        if (!svc.system.everRan) throw new ApiError('SYSTEM_NOT_READY', 'the system has not been started yet', { status: svc.system.state });
        const envId = env ?? svc.config.get().environment.id;
        const f = svc.latest.get(envId);
        if (!f) {
          throw new ApiError('POSE_DATA_NOT_FOUND', `no pose data yet for environment ${envId}`, {
            environment_id: envId,
            available_environments: [...svc.latest.keys()],
          });
        }
        // Many clients poll the same frame: its rendering is cached per frame and query.
        const key = `${envId}|${ctx.form}|${minConfidence}|${includeKeypoints}|${includeDensePose}`;
        const hit = latestCache.get(key);
        if (hit && hit.frame === f) return { json: hit.json };
        const json = JSON.stringify(
          renderFrame(f, ctx.form, { minConfidence, includeKeypoints, includeDensePose, routerCount: svc.routerCount(), pipeline: 'live' }),
        );
        if (latestCache.size >= 256) latestCache.clear();
        latestCache.set(key, { frame: f, json });
        return { json };
      },
    },
    {
      method: 'POST',
      pattern: '/pose/process',
      category: 'pose_processing',
      role: 'operator',
      bodyLimit: 4 * MIB,
      async handler(ctx) {
        return { data: await processCsi(svc, ctx.body, ctx.form) };
      },
    },

    // ---- system ----------------------------------------------------------------------------
    {
      method: 'GET',
      pattern: '/system/status',
      category: 'health',
      role: 'viewer',
      handler: (ctx) => ({ data: systemStatus(svc, ctx.form) }),
    },
    {
      method: 'POST',
      pattern: '/system/start',
      category: 'configuration',
      role: 'operator',
      async handler(ctx) {
        const applied = await applyStartConfiguration(svc, ctx);
        let t: Transition;
        try {
          t = svc.system.start();
        } catch (e) {
          conflict(e);
        }
        return { status: 202, data: transitionReply(t, ctx.form, 'start', applied) };
      },
    },
    {
      method: 'POST',
      pattern: '/system/stop',
      category: 'configuration',
      role: 'operator',
      handler(ctx) {
        if (ctx.body !== undefined) {
          const c = new Checker();
          const b = c.object(ctx.body, 'body', false);
          c.bool(b?.force, 'force');
          c.bool(b?.save_state, 'save_state');
          c.only(b, '', ['force', 'save_state']);
          c.done();
        }
        let t: Transition;
        try {
          t = svc.system.stop();
        } catch (e) {
          conflict(e);
        }
        return { status: 202, data: transitionReply(t, ctx.form, 'stop') };
      },
    },
    {
      method: 'POST',
      pattern: '/system/restart',
      category: 'configuration',
      role: 'operator',
      handler(ctx) {
        if (ctx.body !== undefined) {
          const c = new Checker();
          const b = c.object(ctx.body, 'body', false);
          c.only(b, '', []);
          c.done();
        }
        let t: Transition & { previous_session_id: string | undefined };
        try {
          t = svc.system.restart();
        } catch (e) {
          conflict(e);
        }
        return {
          status: 202,
          data: {
            status: t.status,
            previous_session_id: t.previous_session_id ?? null,
            new_session_id: t.session_id,
            estimated_restart_time: Math.ceil(t.estimated_ms / 1000),
            restart_steps: t.steps,
          },
        };
      },
    },

    // ---- config ----------------------------------------------------------------------------
    {
      method: 'GET',
      pattern: '/config',
      category: 'configuration',
      role: 'viewer',
      handler: (ctx) => ({ data: toForm(svc.config.get() as never, ctx.form, { modelVersion: svc.model?.metadata.model_version ?? null }) }),
    },
    {
      method: 'PUT',
      pattern: '/config',
      category: 'configuration',
      role: 'admin',
      async handler(ctx) {
        if (ctx.body === undefined) throw ApiError.unparseable('PUT /config needs a JSON body with the fields to change');
        const parsed = parseUpdate(ctx.body, { modelVersion: svc.model?.metadata.model_version ?? null });
        if (!parsed.ok) throw ApiError.fields(parsed.errors as never, parsed.errors[0]?.message);
        const r = await svc.config.update(parsed.changes);
        const paths = formPaths(r.changes.map((c) => c.path), ctx.form);
        const restart = r.changes.filter((c) => c.restart).map((c) => c.path);
        if (ctx.form === 'a') {
          return {
            data: {
              status: 'updated',
              changes_applied: paths,
              restart_required: r.restartRequired,
              validation_warnings: restart.length ? [`takes effect after a restart: ${formPaths(restart, 'a').join(', ')}`] : [],
            },
          };
        }
        return {
          data: {
            updated_fields: paths,
            requires_restart: r.restartRequired,
            restart_fields: formPaths(restart, 'b'),
            applied_at: r.appliedAt,
            configuration: toForm(r.config as never, 'b', { modelVersion: svc.model?.metadata.model_version ?? null }),
          },
        };
      },
    },
    {
      method: 'GET',
      pattern: '/config/schema',
      category: 'configuration',
      role: 'viewer',
      handler: () => ({ data: { schema: schemaDocument(), defaults: defaults() } }),
    },

    // ---- health and metrics ----------------------------------------------------------------
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
          version: VERSION,
          uptime: Math.round((Date.now() - svc.startedAt) / 1000),
        },
      }),
    },
    {
      method: 'GET',
      pattern: '/health/detailed',
      category: 'health',
      role: 'viewer',
      handler: () => ({ data: detailedHealth(svc) }),
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
        const type = c.queryString(ctx.query, 'metric_type', 32, ['performance', 'resources', 'business', 'all']) ?? 'all';
        c.done();
        if (start > end) throw ApiError.fields([{ field: 'start_time', message: 'start_time must not be after end_time', received_value: ctx.query.get('start_time') }]);
        const m = metrics(svc);
        const current: Record<string, unknown> = { timestamp: m.timestamp };
        if (type === 'all' || type === 'performance') current.performance = m.performance;
        if (type === 'all' || type === 'resources') current.resources = m.resources;
        if (type === 'all' || type === 'business') current.business = m.business;
        const historical = svc.history.filter((h) => {
          const t = Date.parse(h.timestamp);
          return t >= start && t <= end;
        });
        return { data: { current, historical } };
      },
    },
  ];
  return routes;
}

/** Applies a start request's `configuration` (either form's fields) before starting. */
async function applyStartConfiguration(svc: PoseService, ctx: Ctx): Promise<string[]> {
  if (ctx.body === undefined) return [];
  const c = new Checker();
  const b = c.object(ctx.body, 'body', false);
  const conf = c.object(b?.configuration, 'configuration', false);
  c.only(b, '', ['configuration']);
  c.done();
  if (!conf) return [];
  const { calibration_required, ...rest } = conf;
  if (calibration_required !== undefined && typeof calibration_required !== 'boolean')
    throw ApiError.fields([{ field: 'configuration.calibration_required', message: 'configuration.calibration_required must be true or false', received_value: calibration_required }]);
  const parsed = parseUpdate(rest, { modelVersion: svc.model?.metadata.model_version ?? null });
  // Errors name the fields as the request does: under `configuration.`.
  const inRequest = (errors: readonly FieldError[]) =>
    ApiError.fields(errors.map((e) => ({ ...e, field: `configuration.${e.field}`, message: `configuration.${e.message}` })) as never);
  if (!parsed.ok) throw inRequest(parsed.errors);
  if (svc.system.state === 'starting' || svc.system.state === 'running' || svc.system.state === 'restarting' || svc.system.state === 'stopping')
    conflict(new StateConflict(svc.system.state, 'start'));
  try {
    const r = await svc.config.update(parsed.changes);
    return r.changes.map((ch) => ch.path);
  } catch (e) {
    // A rule across fields (checked by the store on the merged configuration).
    if (e instanceof ConfigUpdateError) throw inRequest(e.errors);
    throw e;
  }
}

function transitionReply(t: Transition, form: 'a' | 'b', kind: 'start' | 'stop', applied: string[] = []): Record<string, unknown> {
  const eta = new Date(t.started + t.estimated_ms).toISOString();
  if (kind === 'start') {
    return form === 'a'
      ? { status: t.status, estimated_ready_time: eta, initialization_steps: t.steps, session_id: t.session_id }
      : { status: t.status, session_id: t.session_id, estimated_startup_time: Math.ceil(t.estimated_ms / 1000), configuration_applied: applied, steps: t.steps };
  }
  return form === 'a'
    ? { status: t.status, estimated_stop_time: eta, shutdown_steps: t.steps, session_id: t.session_id }
    : { status: t.status, session_id: t.session_id, shutdown_initiated: new Date(t.started).toISOString(), steps: t.steps };
}

function componentState(svc: PoseService): { csi: string; nn: string; tracker: string; db: string } {
  const s = svc.system.state;
  const running = s === 'running';
  const recent = Date.now() - svc.lastFrameAt < 5000;
  return {
    csi: running ? (recent ? 'active' : 'idle') : s === 'error' ? 'error' : 'stopped',
    nn: svc.model ? (running ? 'active' : 'loaded') : s === 'error' && svc.system.error?.code === 'MODEL_ERROR' ? 'error' : 'not_loaded',
    tracker: running ? 'active' : 'stopped',
    db: svc.store ? svc.store.health().status : 'closed',
  };
}

export function systemStatus(svc: PoseService, form: 'a' | 'b'): Record<string, unknown> {
  const comp = componentState(svc);
  const cpu = r2(svc.cpu.sample());
  const mem = r2(memoryPercent());
  const fps = r2(svc.csiRate.rate());
  const base = { status: svc.system.state, uptime_seconds: Math.round(svc.system.uptimeSeconds()), version: VERSION };
  const err = svc.system.error ? { error: svc.system.error } : {};
  if (form === 'a') {
    return {
      ...base,
      components: {
        csi_receiver: {
          status: comp.csi,
          data_rate_hz: fps,
          packet_loss_rate: r2(packetLoss(svc)),
          last_packet_time: iso(svc.lastFrameAt),
        },
        neural_network: {
          status: comp.nn,
          model_loaded: !!svc.model,
          inference_time_ms: r2(svc.inferStats.avgBatchMs ?? 0),
          gpu_utilization: 0,
        },
        tracking: { status: comp.tracker, active_tracks: svc.activeTracks(), track_quality: r2(trackQuality(svc)) },
      },
      hardware: { cpu_usage: cpu, memory_usage: mem, gpu_memory_usage: 0, disk_usage: diskPercent(svc.opts.dataDir) },
      network: { connected_routers: svc.routerCount(), signal_strength: r2(signalQuality(svc)), interference_level: r2(1 - signalQuality(svc)) },
      session_id: svc.system.sessionId ?? null,
      steps: svc.system.steps,
      ...err,
    };
  }
  return {
    status: svc.system.state,
    session_id: svc.system.sessionId ?? null,
    uptime_seconds: base.uptime_seconds,
    started_at: iso(svc.system.startedAt),
    version: VERSION,
    performance: {
      frames_processed: svc.csiRate.total,
      pose_frames: svc.poseRate.total,
      average_fps: fps,
      average_latency_ms: r2(Number.isFinite(svc.latency.value) ? svc.latency.value : 0),
      cpu_usage: cpu,
      memory_usage: mem,
      gpu_usage: 0,
    },
    components: {
      csi_processor: { status: comp.csi, last_heartbeat: iso(svc.lastFrameAt) },
      neural_network: {
        status: comp.nn,
        model_loaded: !!svc.model,
        model_version: svc.model?.metadata.model_version ?? null,
        // Whether the model takes the site geometry, and whether the configuration gives it one.
        site_input: (svc.model?.siteDim ?? 0) > 0,
        site_known: svc.settings().site !== null,
        inference_queue_size: svc.inferStats.queue ?? 0,
        dropped_windows: svc.inferStats.dropped ?? 0,
      },
      tracker: { status: comp.tracker, active_tracks: svc.activeTracks() },
      database: { status: comp.db, connection_pool: svc.store?.health().connection_pool ?? '0/0' },
    },
    steps: svc.system.steps,
    ...err,
  };
}

/** Mean CSI quality of the latest frames (packet loss and SNR as the features operator measures them). */
function signalQuality(svc: PoseService): number {
  const fs = [...svc.latest.values()];
  return fs.length ? fs.reduce((a, f) => a + f.csiQuality, 0) / fs.length : 0;
}
function packetLoss(svc: PoseService): number {
  const q = signalQuality(svc);
  return svc.latest.size ? Math.max(0, 1 - q) : 0;
}
function trackQuality(svc: PoseService): number {
  const fs = [...svc.latest.values()];
  const ps = fs.flatMap((f) => f.persons);
  return ps.length ? ps.reduce((a, p) => a + p.confidence, 0) / ps.length : 0;
}

function detailedHealth(svc: PoseService): Record<string, unknown> {
  const comp = componentState(svc);
  const store = svc.store?.health();
  const healthy = svc.system.state !== 'error' && comp.db !== 'error';
  return {
    overall_status: healthy ? 'healthy' : 'unhealthy',
    timestamp: new Date().toISOString(),
    version: VERSION,
    uptime: Math.round((Date.now() - svc.startedAt) / 1000),
    components: {
      api: { status: 'healthy', response_time_ms: r2(svc.core?.stats.avgResponseMs ?? 0), requests_per_second: r2(svc.requests.rate()) },
      database: { status: comp.db, connection_pool: store?.connection_pool ?? '0/0', query_time_ms: r2(store?.query_time_ms ?? 0) },
      // No Redis here: the service keeps its state in process and in DuckDB.
      redis: { status: 'not_used', memory_usage: '0MB', connected_clients: 0 },
      neural_network: {
        status: comp.nn,
        model_loaded: !!svc.model,
        gpu_memory_usage: '0MB',
        inference_queue: svc.inferStats.queue ?? 0,
      },
      csi_processor: { status: comp.csi, data_rate: r2(svc.csiRate.rate()), buffer_usage: `${svc.inferStats.queue ?? 0} windows` },
    },
    metrics: {
      cpu_usage: r2(svc.cpu.sample()),
      memory_usage: r2(memoryPercent()),
      memory_mb: r2(memoryMiB()),
      disk_usage: diskPercent(svc.opts.dataDir),
      // HTTP body bytes this process read and wrote.
      network_io: { bytes_in: svc.core?.stats.bytesIn ?? 0, bytes_out: svc.core?.stats.bytesOut ?? 0 },
    },
    system: { status: svc.system.state, ...(svc.system.error ? { error: svc.system.error } : {}) },
  };
}

function metrics(svc: PoseService) {
  const persons = [...svc.latest.values()].reduce((a, f) => a + f.persons.length, 0);
  return {
    timestamp: new Date().toISOString(),
    performance: {
      frames_per_second: r2(svc.csiRate.rate()),
      pose_frames_per_second: r2(svc.poseRate.rate()),
      average_latency_ms: r2(Number.isFinite(svc.latency.value) ? svc.latency.value : 0),
      processing_queue_size: svc.inferStats.queue ?? 0,
      dropped_windows: svc.inferStats.dropped ?? 0,
      error_rate: r2(svc.errors / Math.max(1, svc.requests.total)),
    },
    resources: {
      cpu_usage: r2(svc.cpu.sample()),
      memory_usage: r2(memoryPercent()),
      gpu_usage: 0,
      disk_io: svc.diskIo.sample(),
    },
    business: {
      active_persons: persons,
      detections_per_minute: r2(svc.detections.rate() * 60),
      tracking_accuracy: r2(trackQuality(svc)),
    },
  };
}
