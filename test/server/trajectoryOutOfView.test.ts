/**
 * A track's trajectory (`GET /pose/tracking/{id}?include_trajectory=true`) across frames where the
 * person was outside the reference view (docs/service.md "Reference view"). The store keeps such a
 * person's empty box [0, 0, 0, 0]; its "centre" (0, 0) is the view's top-left corner, no place at
 * all. So those points carry no `center_x`/`center_y` and `in_view: false`, every other point
 * `in_view: true` with its centre; the floor position stays on every point.
 *
 * First a scripted store (real DuckDB file through the real PoseSink, read by the real server),
 * whose answers are known; then the live service with a view that looks away from the room.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_VIEW } from '../../src/pose/camera.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { seededDataDir, tempDirs } from '../helpers/dataDir.js';
import { startServer, until, type TestServer } from '../helpers/server.js';

/** One point of a tracking answer's `trajectory` (both forms). */
interface WireTrajectoryPoint {
  timestamp: string;
  /** Absent out of view. */
  center_x?: number;
  center_y?: number;
  in_view: boolean;
  confidence: number;
  floor_x?: number;
  floor_y?: number;
}

const T0 = Date.parse('2026-11-20T10:00:00.000Z');
const DT = 80;
const N = 30;
const TRACK = 5;
const iso = (ms: number) => new Date(ms).toISOString();
const tempDir = tempDirs('csipose-trajectory-');
/** Frames [OUT_FROM, OUT_TO) see the person outside the view. */
const OUT_FROM = 10;
const OUT_TO = 20;

/** The person of frame `i`: in view with a 60 x 160 box at x = 100 + 10 i, or out of view with the empty box. */
function person(i: number): PersonPose {
  const out = i >= OUT_FROM && i < OUT_TO;
  const kp = new Float32Array(51);
  for (let k = 0; k < 17; k++) kp.set([out ? -500 : 110 + 10 * i + k, 200 + k, out ? 0 : 0.9], 3 * k);
  return {
    slot: 0,
    trackId: TRACK,
    trackAge: i + 1,
    confidence: 0.8,
    keypoints: kp,
    bbox: out ? Float32Array.of(0, 0, 0, 0) : Float32Array.of(100 + 10 * i, 100, 60, 160),
    floor: { x: 1 + 0.1 * i, y: 2 },
    activity: 'walking',
  };
}

describe('trajectory over a scripted store with out-of-view frames', () => {
  let s: TestServer;
  let token: string;

  beforeAll(async () => {
    const frames = Array.from({ length: N }, (_, i): PoseFrame => ({
      frameId: i,
      time: T0 + i * DT,
      sourceId: 'scripted',
      environmentId: 'lab',
      persons: [person(i)],
      processingMs: 5,
      modelVersion: 'scripted',
      csiQuality: 1,
    }));
    const dataDir = await seededDataDir(tempDir, frames);
    s = await startServer({ dataDir, rateLimitScale: 100, config: { environment: { id: 'lab' } } });
    token = await s.login();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('leaves out the centre of out-of-view points and says in_view, in both forms; the floor position stays', async () => {
    for (const form of ['a', 'b'] as const) {
      const r = await s.api('GET', `/pose/tracking/${TRACK}`, { token, form, query: { include_trajectory: true } });
      expect(r.status, r.text).toBe(200);
      const t = form === 'a' ? r.body : r.body.data;
      expect(t.trajectory_points).toBe(N);
      expect(t.trajectory).toHaveLength(N);
      t.trajectory.forEach((p: WireTrajectoryPoint, i: number) => {
        const floor = { floor_x: Math.round((1 + 0.1 * i) * 1000) / 1000, floor_y: 2 };
        if (i >= OUT_FROM && i < OUT_TO) {
          expect(p, `${form} point ${i}`).toEqual({ timestamp: iso(T0 + i * DT), in_view: false, confidence: 0.8, ...floor });
        } else {
          expect(p, `${form} point ${i}`).toEqual({
            timestamp: iso(T0 + i * DT),
            center_x: 130 + 10 * i,
            center_y: 180,
            in_view: true,
            confidence: 0.8,
            ...floor,
          });
        }
      });
    }
    // Spread evenly over the track, out-of-view points keep their shape.
    const few = await s.api('GET', `/pose/tracking/${TRACK}`, { token, query: { include_trajectory: true, max_points: 3 } });
    expect(few.body.data.trajectory.map((p: WireTrajectoryPoint) => p.in_view)).toEqual([true, false, true]);
    expect(few.body.data.trajectory[1].center_x).toBeUndefined();
  });
});

describe('trajectory of the live service with a view that sees nobody', () => {
  let s: TestServer;
  let token: string;
  const started = Date.now();
  // The view looks out of the room through the receiver's wall: everyone is behind the camera.
  const away = { ...DEFAULT_VIEW, yaw_deg: 180 };

  beforeAll(async () => {
    s = await startServer({ model: true, autostart: true, rateLimitScale: 100, config: { environment: { view: away } } });
    token = await s.login();
  });
  afterAll(() => s?.close());

  it('gives out-of-view points no centre, never the empty box centre (0, 0)', async () => {
    const range = { start_time: iso(started - 60_000), end_time: iso(Date.now() + 600_000) };
    // A track with a few stored points.
    const trackId = await until(async () => {
      const r = await s.api('GET', '/pose/history', { token, query: { ...range, per_page: 500 } });
      if (r.status !== 200) return undefined;
      const counts = new Map<number, number>();
      for (const p of r.body.data) if (typeof p.track_id === 'number') counts.set(p.track_id, (counts.get(p.track_id) ?? 0) + 1);
      return [...counts].find(([, n]) => n >= 10)?.[0];
    }, 'a stored track with 10 points');
    const r = await s.api('GET', `/pose/tracking/${trackId}`, { token, query: { ...range, include_trajectory: true } });
    expect(r.status, r.text).toBe(200);
    const points: WireTrajectoryPoint[] = r.body.data.trajectory;
    expect(points.length).toBeGreaterThanOrEqual(10);
    for (const p of points) {
      expect(typeof p.in_view).toBe('boolean');
      if (p.in_view) {
        expect(typeof p.center_x).toBe('number');
        expect(typeof p.center_y).toBe('number');
      } else {
        expect(p.center_x).toBeUndefined();
        expect(p.center_y).toBeUndefined();
      }
      expect(p.center_x === 0 && p.center_y === 0, JSON.stringify(p)).toBe(false);
    }
    // Behind the camera: most of the track was out of view.
    expect(points.filter((p) => !p.in_view).length).toBeGreaterThan(points.length / 2);
  });
});
