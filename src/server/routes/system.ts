import { ApiError } from '../../errors.js';
import type { Ctx, Route } from '../core.js';
import { Checker } from '../validate.js';
import { StateConflict, type Transition } from '../../service/system.js';
import type { HasConfig, HasSystem, ServiceCommands, ServiceReads } from '../../service/face.js';
import { renderSystemStatus } from '../../service/status.js';
import { formPaths, parseUpdate, toForm } from '../../config/forms.js';
import type { FieldError } from '../../config/validate.js';
import { ConfigUpdateError } from '../../config/store.js';
import type { Form } from '../forms.js';

/** What `/system/*` uses: the lifecycle's commands, the snapshot, and the update a start may carry. */
export type SystemRoutesFace = HasConfig & HasSystem & Pick<ServiceReads, 'snapshot' | 'modelVersion'> & Pick<ServiceCommands, 'updateConfig'>;

function conflict(e: unknown): never {
  if (e instanceof StateConflict) {
    throw new ApiError('SYSTEM_STATE_CONFLICT', e.message, { current_status: e.state, action: e.action });
  }
  throw e;
}

/** Begins a transition; a state that does not allow it is 409 SYSTEM_STATE_CONFLICT. */
function transition<T extends Transition>(begin: () => T): T {
  try {
    return begin();
  } catch (e) {
    conflict(e);
  }
}

/** Checks an optional body: an object with at most these boolean fields. */
function optionalFlags(ctx: Ctx, flags: readonly string[]): void {
  if (ctx.body === undefined) return;
  const c = new Checker();
  const b = c.object(ctx.body, 'body', false);
  for (const f of flags) c.bool(b?.[f], f);
  c.only(b, '', flags);
  c.done();
}

/** States in which a start is refused (409). */
const BUSY = new Set(['starting', 'running', 'restarting', 'stopping']);

/**
 * Applies a start request's `configuration` (either form's fields) before starting.
 * @returns the dotted paths that changed, in the request's form
 */
async function applyStartConfiguration(svc: SystemRoutesFace, ctx: Ctx): Promise<string[]> {
  if (ctx.body === undefined) return [];
  const c = new Checker();
  const b = c.object(ctx.body, 'body', false);
  const conf = c.object(b?.configuration, 'configuration', false);
  c.only(b, '', ['configuration']);
  c.done();
  if (!conf) return [];
  const { calibration_required, ...rest } = conf;
  if (calibration_required !== undefined && typeof calibration_required !== 'boolean')
    throw ApiError.fields([
      {
        field: 'configuration.calibration_required',
        message: 'configuration.calibration_required must be true or false',
        received_value: calibration_required,
      },
    ]);
  const parsed = parseUpdate(rest, { modelVersion: svc.modelVersion() });
  // Errors name the fields as the request does: under `configuration.`.
  const inRequest = (errors: readonly FieldError[]) =>
    ApiError.fields(errors.map((e) => ({ ...e, field: `configuration.${e.field}`, message: `configuration.${e.message}` })));
  if (!parsed.ok) throw inRequest(parsed.errors);
  if (BUSY.has(svc.system.state)) conflict(new StateConflict(svc.system.state, 'start'));
  try {
    const r = await svc.updateConfig(parsed.changes);
    return formPaths(
      r.changes.map((ch) => ch.path),
      ctx.form,
    );
  } catch (e) {
    // A rule across fields (checked by the store on the merged configuration), or a model that does not load.
    if (e instanceof ConfigUpdateError) throw inRequest(e.errors);
    throw e;
  }
}

function startReply(svc: SystemRoutesFace, t: Transition, form: Form, updated: string[]): Record<string, unknown> {
  if (form === 'a') {
    return {
      status: t.status,
      estimated_ready_time: new Date(t.started + t.estimated_ms).toISOString(),
      initialization_steps: t.steps,
      session_id: t.session_id,
    };
  }
  return {
    status: t.status,
    session_id: t.session_id,
    estimated_startup_time: Math.ceil(t.estimated_ms / 1000),
    // The configuration this session starts with, and which of its fields the request changed.
    configuration_applied: toForm(svc.config.get(), 'b', { modelVersion: svc.modelVersion() }),
    updated_fields: updated,
    steps: t.steps,
  };
}

function stopReply(t: Transition, form: Form): Record<string, unknown> {
  return form === 'a'
    ? { status: t.status, estimated_stop_time: new Date(t.started + t.estimated_ms).toISOString(), shutdown_steps: t.steps, session_id: t.session_id }
    : { status: t.status, session_id: t.session_id, shutdown_initiated: new Date(t.started).toISOString(), steps: t.steps };
}

/** `GET /system/status` and `POST /system/start`, `/stop`, `/restart`. */
export function systemRoutes(svc: SystemRoutesFace): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/system/status',
      category: 'health',
      role: 'viewer',
      handler: (ctx) => ({ data: renderSystemStatus(svc.snapshot(), ctx.form) }),
    },
    {
      method: 'POST',
      pattern: '/system/start',
      category: 'configuration',
      role: 'operator',
      async handler(ctx) {
        const updated = await applyStartConfiguration(svc, ctx);
        const t = transition(() => svc.system.start());
        return { status: 202, data: startReply(svc, t, ctx.form, updated) };
      },
    },
    {
      method: 'POST',
      pattern: '/system/stop',
      category: 'configuration',
      role: 'operator',
      handler(ctx) {
        // Form A's stop body; a stop is always graceful and the store keeps everything.
        optionalFlags(ctx, ['force', 'save_state']);
        const t = transition(() => svc.system.stop());
        return { status: 202, data: stopReply(t, ctx.form) };
      },
    },
    {
      method: 'POST',
      pattern: '/system/restart',
      category: 'configuration',
      role: 'operator',
      handler(ctx) {
        optionalFlags(ctx, []);
        const t = transition(() => svc.system.restart());
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
  ];
}
