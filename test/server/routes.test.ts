import { describe, expect, it } from 'vitest';
import { buildRoutes } from '../../src/server/routes/index.js';
import { CoreStats } from '../../src/server/core.js';
import { requiredRole } from '../../src/auth/roles.js';
import type { RoutesFace } from '../../src/server/routes/index.js';

describe('route table', () => {
  // Handlers only touch the service when called, so the table can be built without one.
  const routes = buildRoutes({} as RoutesFace, new CoreStats());

  it('gives every route the role of the access table in src/auth/roles.ts (one policy, two views)', () => {
    for (const r of routes) {
      const expected = requiredRole(r.method, `/api/v1${r.pattern}`);
      expect(expected, `${r.method} ${r.pattern}`).toBeDefined();
      expect(r.role ?? 'public', `${r.method} ${r.pattern}`).toBe(expected);
    }
  });

  it('has no two routes with the same method and pattern, and the larger body only on /pose/process', () => {
    const keys = routes.map((r) => `${r.method} ${r.pattern}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const r of routes) expect(r.bodyLimit === undefined || r.pattern === '/pose/process', r.pattern).toBe(true);
  });
});
