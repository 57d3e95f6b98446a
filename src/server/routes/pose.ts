import { randomUUID } from 'node:crypto';
import { ApiError } from '../../errors.js';
import type { Route } from '../core.js';
import { Checker } from '../validate.js';
import { readSubmission, readSubmissionJson } from '../submission.js';
import type { HasConfig, HasSystemView, LatestReads, ServiceCommands, ServiceReads } from '../../service/face.js';

/** What `/pose/latest`, `/pose/floor-map` and `/pose/process` use. */
export type PoseRoutesFace = HasConfig & HasSystemView & LatestReads & Pick<ServiceReads, 'floorMaps' | 'modelVersion'> & Pick<ServiceCommands, 'process'>;

/** Largest `POST /pose/process` body (DECISIONS "Sizes and limits"). */
const PROCESS_BODY_LIMIT = 4 * 1024 * 1024;

/** `GET /pose/latest`, `GET /pose/floor-map` and `POST /pose/process`. */
export function poseRoutes(svc: PoseRoutesFace): Route[] {
  return [
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
        const view = svc.latest(envId);
        if (!view) {
          throw new ApiError('POSE_DATA_NOT_FOUND', `no pose data yet for environment ${envId}`, {
            environment_id: envId,
            available_environments: svc.environments(),
          });
        }
        // Rendered once per frame and query shape, whoever asks.
        return { json: view.json({ form: ctx.form, minConfidence, includeKeypoints, includeDensePose }) };
      },
    },
    {
      // Not in the spec (docs/service.md "Floor map"). A live display read that dashboards poll,
      // answered from a rendering made once per map: counted as a health check, as the status is.
      method: 'GET',
      pattern: '/pose/floor-map',
      category: 'health',
      role: 'viewer',
      handler(ctx) {
        const c = new Checker();
        c.onlyQuery(ctx.query, ['environment_id']);
        const env = c.queryString(ctx.query, 'environment_id');
        c.done();
        if (!svc.system.everRan) throw new ApiError('SYSTEM_NOT_READY', 'the system has not been started yet', { status: svc.system.state });
        const maps = svc.floorMaps;
        if (maps.frontEnd === false) {
          throw new ApiError('RESOURCE_NOT_FOUND', 'no floor maps: the running pipeline has no physics front end (its model is not a v3 refiner)', {
            reason: 'no_front_end',
            model_version: svc.modelVersion(),
          });
        }
        const envId = env ?? svc.config.get().environment.id;
        const map = maps.get(envId);
        if (!map) {
          throw new ApiError('POSE_DATA_NOT_FOUND', `no floor map yet for environment ${envId}`, {
            environment_id: envId,
            available_environments: maps.environments(),
          });
        }
        // Rendered once per map, whoever asks; the resource is the same in both forms.
        return { json: map.json() };
      },
    },
    {
      method: 'POST',
      pattern: '/pose/process',
      category: 'pose_processing',
      role: 'operator',
      bodyLimit: PROCESS_BODY_LIMIT,
      readJson: readSubmissionJson,
      async handler(ctx) {
        const submission = readSubmission(ctx.body, svc.config.get());
        const r = await svc.process(submission);
        const shape = { form: ctx.form, minConfidence: 0, includeKeypoints: true, includeDensePose: submission.densePose };
        return {
          data: {
            processing_id: `proc_${randomUUID()}`,
            status: 'completed',
            processing_time_ms: r.processingMs,
            frames_received: r.received,
            frames_padded: r.padded,
            poses: r.frames.map((v) => v.render(shape)),
          },
        };
      },
    },
  ];
}
