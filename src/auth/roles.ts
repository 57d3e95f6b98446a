/**
 * Roles and the table of which endpoint needs which role (DECISIONS "Authentication and roles").
 *
 * Roles are ordered: `viewer` < `operator` < `admin`; a higher role can do everything a lower one
 * can. `viewer` reads everything (config included) but writes nothing; `operator` adds
 * `POST /pose/process` and system start/stop/restart; `admin` adds `PUT /config` and API key
 * management. A request whose principal has a lower role than the endpoint needs gets 403.
 */

/** The roles, lowest first. */
export const ROLES = ['viewer', 'operator', 'admin'] as const;

/** A principal's role. */
export type Role = (typeof ROLES)[number];

const RANK: Readonly<Record<Role, number>> = { viewer: 1, operator: 2, admin: 3 };

/**
 * Whether `value` names a role.
 * @param value any value, e.g. a string from a file, an env var or a JWT claim
 * @returns true for `viewer`, `operator` and `admin` only
 */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(RANK, value);
}

/**
 * Whether a principal with role `actual` may use something that needs `required`.
 * @param actual the principal's role
 * @param required the least role the endpoint needs
 * @returns true when `actual` is `required` or higher
 * @example hasRole('admin', 'operator') // true
 * @example hasRole('viewer', 'operator') // false
 */
export function hasRole(actual: Role, required: Role): boolean {
  return RANK[actual] >= RANK[required];
}

/** `public`: no credentials needed. Otherwise the least role. */
export type Access = Role | 'public';

/** One row of the endpoint table. */
export interface EndpointAccess {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path under `/api/v1`, `:name` marks a path parameter. */
  pattern: string;
  access: Access;
}

/**
 * Which endpoint needs which role. Paths are under `/api/v1` except the WebSocket.
 *
 * - The three `/auth` operations are public: the token endpoint is how one gets credentials, a
 *   refresh token is itself the credential for `/auth/refresh`, and holding a token is proof
 *   enough to revoke it (revoking only ever harms its holder).
 * - `GET /health` is the one public read (DECISIONS); `GET /health/detailed` is not.
 * - `POST /pose/query` only reads, so `viewer`.
 * - `/auth/keys` is the HTTP face of key management (`csipose keys`): the spec shows no such
 *   endpoint, these paths are our choice, admin only.
 * - `GET /pose/floor-map` (the physics front end's map; not in the spec, docs/service.md) only
 *   reads, so `viewer`.
 * - `/webhooks` (the spec shows no registration: docs/service.md "Webhooks") is admin only: a
 *   webhook sends the service's alerts to a URL of its registrant's choosing, and its answers
 *   carry the signing secret.
 * - `GET /ws/pose` is the WebSocket upgrade: any authenticated principal.
 */
export const ENDPOINT_ACCESS: readonly EndpointAccess[] = Object.freeze([
  { method: 'POST', pattern: '/auth/token', access: 'public' },
  { method: 'POST', pattern: '/auth/refresh', access: 'public' },
  { method: 'POST', pattern: '/auth/revoke', access: 'public' },
  { method: 'GET', pattern: '/auth/keys', access: 'admin' },
  { method: 'POST', pattern: '/auth/keys', access: 'admin' },
  { method: 'DELETE', pattern: '/auth/keys/:key_id', access: 'admin' },

  { method: 'GET', pattern: '/health', access: 'public' },
  { method: 'GET', pattern: '/health/detailed', access: 'viewer' },
  { method: 'GET', pattern: '/metrics', access: 'viewer' },

  { method: 'GET', pattern: '/pose/latest', access: 'viewer' },
  { method: 'GET', pattern: '/pose/history', access: 'viewer' },
  { method: 'POST', pattern: '/pose/query', access: 'viewer' },
  { method: 'GET', pattern: '/pose/tracking/:track_id', access: 'viewer' },
  { method: 'GET', pattern: '/pose/floor-map', access: 'viewer' },
  { method: 'POST', pattern: '/pose/process', access: 'operator' },

  { method: 'GET', pattern: '/system/status', access: 'viewer' },
  { method: 'POST', pattern: '/system/start', access: 'operator' },
  { method: 'POST', pattern: '/system/stop', access: 'operator' },
  { method: 'POST', pattern: '/system/restart', access: 'operator' },

  { method: 'GET', pattern: '/config', access: 'viewer' },
  { method: 'GET', pattern: '/config/schema', access: 'viewer' },
  { method: 'PUT', pattern: '/config', access: 'admin' },

  { method: 'GET', pattern: '/analytics/healthcare', access: 'viewer' },
  { method: 'GET', pattern: '/analytics/retail', access: 'viewer' },
  { method: 'GET', pattern: '/analytics/security', access: 'viewer' },
  { method: 'GET', pattern: '/analytics/summary', access: 'viewer' },
  { method: 'GET', pattern: '/analytics/events', access: 'viewer' },
  { method: 'GET', pattern: '/analytics/occupancy', access: 'viewer' },

  // Analysts' tools: read-only SQL and exports of the store while the service holds its file.
  { method: 'POST', pattern: '/store/query', access: 'admin' },
  { method: 'POST', pattern: '/store/export', access: 'admin' },

  // Webhooks: registrations, their secrets and their dead letters.
  { method: 'GET', pattern: '/webhooks', access: 'admin' },
  { method: 'POST', pattern: '/webhooks', access: 'admin' },
  { method: 'GET', pattern: '/webhooks/:webhook_id', access: 'admin' },
  { method: 'PUT', pattern: '/webhooks/:webhook_id', access: 'admin' },
  { method: 'DELETE', pattern: '/webhooks/:webhook_id', access: 'admin' },
  { method: 'POST', pattern: '/webhooks/:webhook_id/rotate-secret', access: 'admin' },
  { method: 'POST', pattern: '/webhooks/:webhook_id/ping', access: 'admin' },
  { method: 'GET', pattern: '/webhooks/:webhook_id/dead-letters', access: 'admin' },
  { method: 'POST', pattern: '/webhooks/:webhook_id/dead-letters/redrive', access: 'admin' },
  { method: 'DELETE', pattern: '/webhooks/:webhook_id/dead-letters', access: 'admin' },
  { method: 'DELETE', pattern: '/webhooks/:webhook_id/dead-letters/:delivery_id', access: 'admin' },

  { method: 'GET', pattern: '/ws/pose', access: 'viewer' },
] satisfies EndpointAccess[]);

const API_PREFIX = '/api/v1';

function segmentsMatch(pattern: string[], path: string[]): boolean {
  if (pattern.length !== path.length) return false;
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.startsWith(':') ? path[i] === '' : p !== path[i]) return false;
  }
  return true;
}

const COMPILED = ENDPOINT_ACCESS.map((e) => ({ ...e, segments: e.pattern.split('/') }));

/**
 * The access an endpoint needs, from {@link ENDPOINT_ACCESS}.
 * @param method HTTP method (case-insensitive; HEAD is treated as GET)
 * @param path request path, with or without the `/api/v1` prefix, query string and trailing slash
 *   ignored
 * @returns `'public'`, the least role, or undefined when the method and path are not in the table
 * @example requiredRole('PUT', '/api/v1/config') // 'admin'
 * @example requiredRole('GET', '/health') // 'public'
 */
export function requiredRole(method: string, path: string): Access | undefined {
  let m = method.toUpperCase();
  if (m === 'HEAD') m = 'GET';
  let p = path;
  const q = p.indexOf('?');
  if (q >= 0) p = p.slice(0, q);
  if (p === API_PREFIX || p.startsWith(API_PREFIX + '/')) p = p.slice(API_PREFIX.length);
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  const parts = p.split('/');
  for (const e of COMPILED) if (e.method === m && segmentsMatch(e.segments, parts)) return e.access;
  return undefined;
}
