import type { CoreStats, Route } from '../core.js';
import type { ServiceFace } from '../../service/face.js';
import { authRoutes } from './auth.js';
import { poseRoutes } from './pose.js';
import { historyRoutes } from './history.js';
import { systemRoutes } from './system.js';
import { configRoutes } from './config.js';
import { healthRoutes } from './health.js';
import { analyticsRoutes } from './analytics.js';
import { storeRoutes } from './store.js';

/**
 * Every REST endpoint, by resource. Each route is thin: it validates its input, reads the
 * service's face or calls one of its methods, and shapes the answer for the request's form.
 * @param svc the service's face
 * @param http the HTTP core's own figures (for health and metrics)
 */
export function buildRoutes(svc: ServiceFace, http: CoreStats): Route[] {
  return [...authRoutes(svc), ...poseRoutes(svc), ...historyRoutes(svc), ...systemRoutes(svc), ...configRoutes(svc), ...storeRoutes(svc), ...analyticsRoutes(svc), ...healthRoutes(svc, http)];
}
