import { ApiError } from '../../errors.js';
import type { Route } from '../core.js';
import type { HasConfig, ServiceCommands, ServiceReads } from '../../service/face.js';
import { formPaths, parseUpdate, toForm } from '../../config/forms.js';
import { schemaDocument } from '../../config/validate.js';
import { defaults } from '../../config/schema.js';

/** What `/config` uses: the configuration read-only, the model version, and the update command. */
export type ConfigRoutesFace = HasConfig & Pick<ServiceReads, 'modelVersion'> & Pick<ServiceCommands, 'updateConfig'>;

/**
 * `GET /config`, `PUT /config`, `GET /config/schema`.
 *
 * Reads count as Health checks, not Configuration: the Form B table's 50 per hour is a budget for
 * changes, and DECISIONS already files the system's reads (status, metrics) under Health checks
 * and its changes (start, stop, restart) under Configuration. Otherwise every screen that shows
 * the configuration would spend the budget its saves need.
 *
 * Passwords inside values (`hardware.source`) are masked for every reader (config/secrets.ts).
 */
export function configRoutes(svc: ConfigRoutesFace): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/config',
      category: 'health',
      role: 'viewer',
      handler: (ctx) => ({ data: toForm(svc.config.get(), ctx.form, { modelVersion: svc.modelVersion() }) }),
    },
    {
      method: 'PUT',
      pattern: '/config',
      category: 'configuration',
      role: 'admin',
      async handler(ctx) {
        if (ctx.body === undefined) throw ApiError.unparseable('PUT /config needs a JSON body with the fields to change');
        const parsed = parseUpdate(ctx.body, { modelVersion: svc.modelVersion() });
        if (!parsed.ok) throw ApiError.fields(parsed.errors, parsed.errors[0]?.message);
        const r = await svc.updateConfig(parsed.changes);
        const paths = formPaths(
          r.changes.map((c) => c.path),
          ctx.form,
        );
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
            configuration: toForm(r.config, 'b', { modelVersion: svc.modelVersion() }),
          },
        };
      },
    },
    {
      method: 'GET',
      pattern: '/config/schema',
      category: 'health',
      role: 'viewer',
      handler: () => ({ data: { schema: schemaDocument(), defaults: defaults() } }),
    },
  ];
}
