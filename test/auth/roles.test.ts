import { describe, expect, it } from 'vitest';
import { ENDPOINT_ACCESS, hasRole, isRole, requiredRole, ROLES, type Access } from '../../src/auth/roles.js';

const allowed = (role: (typeof ROLES)[number], access: Access) => access === 'public' || hasRole(role, access);

describe('roles', () => {
  it('orders viewer < operator < admin', () => {
    expect(ROLES).toEqual(['viewer', 'operator', 'admin']);
    const matrix = ROLES.map((a) => ROLES.map((r) => hasRole(a, r)));
    expect(matrix).toEqual([
      [true, false, false],
      [true, true, false],
      [true, true, true],
    ]);
    expect(isRole('admin')).toBe(true);
    expect(isRole('root')).toBe(false);
    expect(isRole('toString')).toBe(false);
  });

  // Each boundary of DECISIONS "Authentication and roles": [method, path, viewer, operator, admin].
  const boundaries: Array<[string, string, boolean, boolean, boolean]> = [
    ['GET', '/pose/latest', true, true, true],
    ['GET', '/pose/history', true, true, true],
    ['POST', '/pose/query', true, true, true],
    ['GET', '/pose/tracking/track_7', true, true, true],
    ['GET', '/system/status', true, true, true],
    ['GET', '/config', true, true, true],
    ['GET', '/config/schema', true, true, true],
    ['GET', '/analytics/healthcare', true, true, true],
    ['GET', '/analytics/occupancy', true, true, true],
    ['GET', '/health/detailed', true, true, true],
    ['GET', '/metrics', true, true, true],
    ['GET', '/ws/pose', true, true, true],
    ['POST', '/pose/process', false, true, true],
    ['POST', '/system/start', false, true, true],
    ['POST', '/system/stop', false, true, true],
    ['POST', '/system/restart', false, true, true],
    ['PUT', '/config', false, false, true],
    ['GET', '/auth/keys', false, false, true],
    ['POST', '/auth/keys', false, false, true],
    ['DELETE', '/auth/keys/ab12cd34', false, false, true],
  ];

  it.each(boundaries)('%s %s: viewer %s, operator %s, admin %s', (method, path, v, o, a) => {
    const access = requiredRole(method, path);
    expect(access).toBeDefined();
    expect(access).not.toBe('public');
    expect(ROLES.map((r) => allowed(r, access!))).toEqual([v, o, a]);
  });

  it('needs no credentials for GET /health and the token endpoints only', () => {
    const open = ENDPOINT_ACCESS.filter((e) => e.access === 'public').map((e) => `${e.method} ${e.pattern}`);
    expect(open.sort()).toEqual(['GET /health', 'POST /auth/refresh', 'POST /auth/revoke', 'POST /auth/token']);
  });

  it('accepts the /api/v1 prefix, a query string, a trailing slash, HEAD and lower-case methods', () => {
    expect(requiredRole('PUT', '/api/v1/config')).toBe('admin');
    expect(requiredRole('post', '/api/v1/system/start?x=1')).toBe('operator');
    expect(requiredRole('GET', '/api/v1/pose/latest/')).toBe('viewer');
    expect(requiredRole('HEAD', '/api/v1/health')).toBe('public');
  });

  it('knows nothing of paths and methods outside the table', () => {
    expect(requiredRole('GET', '/api/v2/pose/latest')).toBeUndefined();
    expect(requiredRole('DELETE', '/config')).toBeUndefined();
    expect(requiredRole('GET', '/pose/tracking/')).toBeUndefined();
    expect(requiredRole('GET', '/pose/tracking/a/b')).toBeUndefined();
  });

  it('covers every endpoint of the interface', () => {
    const spec = [
      'POST /auth/token',
      'GET /pose/latest',
      'GET /pose/history',
      'POST /pose/query',
      'GET /pose/tracking/:track_id',
      'POST /pose/process',
      'GET /system/status',
      'POST /system/start',
      'POST /system/stop',
      'POST /system/restart',
      'GET /config',
      'PUT /config',
      'GET /config/schema',
      'GET /analytics/healthcare',
      'GET /analytics/retail',
      'GET /analytics/security',
      'GET /analytics/summary',
      'GET /analytics/events',
      'GET /analytics/occupancy',
      'GET /health',
      'GET /health/detailed',
      'GET /metrics',
    ];
    const table = new Set(ENDPOINT_ACCESS.map((e) => `${e.method} ${e.pattern}`));
    for (const e of spec) expect(table.has(e), e).toBe(true);
  });
});
