import type { CoreStats, Route } from '../core.js';
import { authRoutes, type AuthRoutesFace } from './auth.js';
import { poseRoutes, type PoseRoutesFace } from './pose.js';
import { historyRoutes, type HistoryRoutesFace } from './history.js';
import { systemRoutes, type SystemRoutesFace } from './system.js';
import { configRoutes, type ConfigRoutesFace } from './config.js';
import { healthRoutes, type HealthRoutesFace } from './health.js';
import { analyticsRoutes, type AnalyticsRoutesFace } from './analytics.js';
import { storeRoutes, type StoreRoutesFace } from './store.js';
import { webhookRoutes, type WebhookRoutesFace } from './webhooks.js';
import type { HasHistoryStore } from '../../service/face.js';

/**
 * What the routes use of the service, all together: each module declares its own part (the
 * small interfaces of src/service/face.ts) and gets only that.
 */
export type RoutesFace = AuthRoutesFace &
  PoseRoutesFace &
  HistoryRoutesFace &
  SystemRoutesFace &
  ConfigRoutesFace &
  StoreRoutesFace &
  AnalyticsRoutesFace &
  HealthRoutesFace &
  WebhookRoutesFace &
  HasHistoryStore;

/**
 * Every REST endpoint, by resource. Each route is thin: it validates its input, reads the
 * service's face or calls one of its commands, and shapes the answer for the request's form.
 * @param svc what the routes use of the service
 * @param http the HTTP core's own figures (for health and metrics)
 */
export function buildRoutes(svc: RoutesFace, http: CoreStats): Route[] {
  // History and analytics read the shared lake of a cluster's node when it has one.
  const history = svc.historyStore ? { config: svc.config, system: svc.system, store: svc.historyStore } : svc;
  return [
    ...authRoutes(svc),
    ...poseRoutes(svc),
    ...historyRoutes(history),
    ...systemRoutes(svc),
    ...configRoutes(svc),
    ...storeRoutes(svc),
    ...analyticsRoutes(history),
    ...healthRoutes(svc, http),
    ...webhookRoutes(svc),
  ];
}
