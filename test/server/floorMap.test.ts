/**
 * `GET /pose/floor-map` against the real service on port 0 (the simulator as source): with the
 * shipped v3 refiner the service runs `physics-live` and answers the front end's latest map, on
 * the configured room's grid, in both forms; bad queries are 422, an unknown environment 404; a
 * v2 model's service answers 404 `RESOURCE_NOT_FOUND` (no front end), and one that never ran 503
 * `SYSTEM_NOT_READY`, as every pose endpoint does.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/cli.js';
import { startServer, until, waitForStatus, withServer, type TestServer } from '../helpers/server.js';

const REFINER = join(repoRoot, 'models/csipose-refiner.onnx');
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A room other than the default 6 x 5 m (the default radios lie inside it). */
const ROOM = { width: 7, depth: 5.6 };

describe('GET /pose/floor-map with a v3 refiner', () => {
  let s: TestServer;
  let token: string;

  beforeAll(async () => {
    s = await startServer({
      autostart: true,
      config: { neural_network: { model_path: REFINER }, environment: { site: { room_width: ROOM.width, room_depth: ROOM.depth } } },
    });
    token = await s.login();
    await waitForStatus(s, token, 'running');
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it("answers the front end's latest map on the configured room's grid, the same resource in both forms", async () => {
    const b = await until(async () => {
      const r = await s.api('GET', '/pose/floor-map', { token });
      if (r.status === 404 && r.body?.error?.code === 'POSE_DATA_NOT_FOUND') return undefined;
      return r;
    }, 'the first floor map');
    expect(b.status, b.text).toBe(200);
    expect(b.body.success).toBe(true);
    const m = b.body.data;
    const env = (await s.api('GET', '/config', { token, form: 'a' })).body.environment;
    expect(env.site.room_width).toBe(ROOM.width);
    expect(m.environment_id).toBe(env.id);
    expect(m.timestamp).toMatch(ISO_MS);
    expect(Date.now() - Date.parse(m.timestamp)).toBeLessThan(30_000);
    expect(m.links[0]).toBe('tx-rx1');
    // The links stage runs before the front end: the status lists every link of the site, live.
    const status = (await s.api('GET', '/system/status', { token })).body.data;
    expect(status.components.csi_processor.links.map((l: { link_id: string }) => l.link_id)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
    expect(status.components.csi_processor.links.every((l: { state: string }) => l.state === 'live')).toBe(true);
    expect(m.quality).toBeGreaterThan(0);
    expect(m.quality).toBeLessThanOrEqual(1);

    // The grid covers the configured room: corner at the origin, the far points on the far walls.
    const g = m.grid;
    expect([g.x0, g.y0, g.cell]).toEqual([0, 0, 0.2]);
    expect(g.nx).toBe(Math.floor(ROOM.width / g.cell + 1e-6) + 1);
    expect(g.ny).toBe(Math.floor(ROOM.depth / g.cell + 1e-6) + 1);
    expect((g.nx - 1) * g.cell).toBeCloseTo(ROOM.width, 6);
    expect((g.ny - 1) * g.cell).toBeCloseTo(ROOM.depth, 6);
    expect(g.heights.length).toBeGreaterThan(0);

    // The floor projection: nx * ny bytes, normalised so that the maximum is 255.
    expect(m.max_power).toBeGreaterThan(0);
    const floor = Buffer.from(m.floor, 'base64');
    expect(floor.length).toBe(g.nx * g.ny);
    expect(Math.max(...floor)).toBe(255);
    expect(floor.filter((v) => v > 0).length).toBeGreaterThan(1);

    // Candidates: on the floor, strongest first, power a share of the maximum.
    expect(m.candidates.length).toBeGreaterThan(0);
    let last = 1;
    for (const c of m.candidates) {
      expect(Object.keys(c).sort()).toEqual(['power', 'x', 'y']);
      expect(c.x).toBeGreaterThanOrEqual(0);
      expect(c.x).toBeLessThanOrEqual(ROOM.width);
      expect(c.y).toBeGreaterThanOrEqual(0);
      expect(c.y).toBeLessThanOrEqual(ROOM.depth);
      expect(c.power).toBeGreaterThan(0);
      expect(c.power).toBeLessThanOrEqual(last);
      last = c.power;
    }

    // Form A: the resource itself, with the same fields; a named environment answers the same way.
    const a = await s.api('GET', '/pose/floor-map', { token, form: 'a', query: { environment_id: env.id } });
    expect(a.status).toBe(200);
    expect(Object.keys(a.body)).toEqual(Object.keys(m));
    expect(a.body.grid).toEqual(g);
    // A health-check read (docs/service.md "Floor map"), with its rate-limit headers.
    expect(a.headers.get('x-ratelimit-limit')).toBe('10000');
  });

  it('refuses bad queries (422), answers 404 for an environment without a map and 401 without credentials', async () => {
    const long = await s.api('GET', '/pose/floor-map', { token, form: 'a', query: { environment_id: 'x'.repeat(129) } });
    expect(long.status).toBe(422);
    expect(long.body.error.details.field_errors[0].field).toBe('environment_id');
    const unknown = await s.api('GET', '/pose/floor-map', { token, query: { environment: 'default' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('VALIDATION_ERROR');
    const empty = await s.api('GET', '/pose/floor-map', { token, query: { environment_id: '' } });
    expect(empty.status).toBe(422);

    const none = await s.api('GET', '/pose/floor-map', { token, query: { environment_id: 'no-such-room' } });
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('POSE_DATA_NOT_FOUND');
    expect(none.body.error.details.environment_id).toBe('no-such-room');
    expect(none.body.error.details.available_environments).toContain('default');

    expect((await s.api('GET', '/pose/floor-map')).status).toBe(401);
  });

  it('keeps the last map readable after a stop', async () => {
    const stop = await s.api('POST', '/system/stop', { token });
    expect(stop.status, stop.text).toBeLessThan(300);
    await waitForStatus(s, token, 'stopped');
    const r = await s.api('GET', '/pose/floor-map', { token });
    expect(r.status).toBe(200);
    expect(Buffer.from(r.body.data.floor, 'base64').length).toBe(r.body.data.grid.nx * r.body.data.grid.ny);
  });
});

describe('GET /pose/floor-map without a front end', () => {
  it('answers 503 SYSTEM_NOT_READY before any session, then 404 RESOURCE_NOT_FOUND (no_front_end) with a v2 model', async () => {
    await withServer({ model: true }, async (s) => {
      const token = await s.login();
      const before = await s.api('GET', '/pose/floor-map', { token });
      expect(before.status).toBe(503);
      expect(before.body.error.code).toBe('SYSTEM_NOT_READY');

      expect((await s.api('POST', '/system/start', { token })).status).toBeLessThan(300);
      await waitForStatus(s, token, 'running');
      // A pose frame shows the pipeline has run; still no map, ever.
      await until(async () => ((await s.api('GET', '/pose/latest', { token })).status === 200 ? true : undefined), 'a pose frame');
      for (const form of ['a', 'b'] as const) {
        const r = await s.api('GET', '/pose/floor-map', { token, form });
        expect(r.status, r.text).toBe(404);
        const e = r.body.error;
        expect(e.code).toBe('RESOURCE_NOT_FOUND');
        expect(e.details.reason).toBe('no_front_end');
        expect(e.message).toMatch(/no physics front end/);
      }
    });
  }, 60_000);
});
