/**
 * What the running service keeps in its store beyond pose frames: track ids that never repeat
 * across sessions, a metrics sample every 10 s, and retention of old rows.
 */
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { startServer, until, waitForStatus } from '../helpers/server.js';
import { join } from 'node:path';

describe('the store of a running service', () => {
  it('gives a new session track ids after every stored one', async () => {
    const s = await startServer({ model: true, autostart: true, rateLimitScale: 100 });
    try {
      const token = await s.login();
      await waitForStatus(s, token, 'running');
      const maxTrack = () => s.svc.store.query<{ m: number | null }>('SELECT max(track_id) AS m FROM pose_persons').then((r) => r[0]!.m);
      const first = await until(async () => (((await maxTrack()) ?? 0) >= 1 ? await maxTrack() : undefined), 'stored tracks');
      await s.api('POST', '/system/stop', { token });
      await waitForStatus(s, token, 'stopped');
      const stored = (await maxTrack())!;
      expect(stored).toBeGreaterThanOrEqual(first!);
      await s.api('POST', '/system/start', { token });
      await waitForStatus(s, token, 'running');
      const session = (await s.api('GET', '/system/status', { token })).body.data.session_id;
      // Every track of the new session is numbered after what the store held.
      const next = await until(async () => {
        const r = await s.svc.store.query<{ m: number | null }>('SELECT min(track_id) AS m FROM pose_persons WHERE track_id > ?', [stored]);
        return r[0]!.m ?? undefined;
      }, 'a track of the new session');
      expect(next).toBe(stored + 1);
      expect(session).toBeTruthy();
    } finally {
      await s.close();
    }
  });

  it('samples system metrics into the store and deletes rows past privacy.data_retention_days', async () => {
    const s = await startServer({ rateLimitScale: 100, config: { privacy: { data_retention_days: 2 } } });
    const dataDir = s.dataDir;
    try {
      s.app.metrics.sample();
      const rows = await until(async () => {
        const r = await s.svc.store.query('SELECT * FROM system_metrics');
        return r.length > 0 ? r : undefined;
      }, 'a metrics row');
      expect(rows[0]).toMatchObject({ frames_per_second: 0, processing_queue_size: 0, active_persons: 0 });
      expect(Number(rows[0]!.memory_usage)).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
    // Old rows in the file: a start prunes them, recent ones stay.
    const store = await Store.open(join(dataDir, 'csipose.duckdb'));
    const old = new Date(Date.now() - 3 * 86_400_000);
    const recent = new Date(Date.now() - 86_400_000);
    for (const ts of [old, recent])
      await store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, ?, 'intrusion', 'low', 'default')`, [
        ts,
        `a${ts.getTime()}`,
      ]);
    await store.close();
    const again = await startServer({ dataDir, rateLimitScale: 100, config: { privacy: { data_retention_days: 2 } } });
    try {
      const left = await until(async () => {
        const r = await again.svc.store.query<{ alert_id: string }>('SELECT alert_id FROM alerts ORDER BY ts');
        return r.length === 1 ? r : undefined;
      }, 'the old alert pruned');
      expect(left).toEqual([{ alert_id: `a${recent.getTime()}` }]);
    } finally {
      await again.close();
    }
  });
});

describe('privacy.anonymize_data', () => {
  it('keeps keypoints and dense pose out of what is served and stored, live; boxes, tracks and activities stay', async () => {
    const s = await startServer({ model: true, autostart: true, rateLimitScale: 100, config: { privacy: { anonymize_data: true } } });
    try {
      const token = await s.login();
      const latest = await until(async () => {
        const r = await s.api('GET', '/pose/latest', { token, query: { include_dense_pose: true } });
        return r.status === 200 && r.body.data.persons.length > 0 ? r.body.data : undefined;
      }, 'a frame with a person');
      for (const p of latest.persons) {
        expect(p.keypoints).toEqual([]);
        expect(p.dense_pose).toBeUndefined();
        if (p.in_view) expect(p.bounding_box.width).toBeGreaterThan(0);
        else expect(p.bounding_box).toBeUndefined();
        expect(p.track_id).toBeGreaterThan(0);
      }
      const a = await s.api('GET', '/pose/latest', { token, form: 'a', query: { include_dense_pose: true } });
      for (const p of a.body.persons) expect(p).toMatchObject({ keypoints: [], dense_pose: { body_parts: [] } });
      const stored = await until(async () => {
        const r = await s.svc.store.query<{ n: number; bytes: number }>('SELECT count(*) AS n, max(octet_length(keypoints)) AS bytes FROM pose_persons');
        return r[0]!.n > 0 ? r[0]! : undefined;
      }, 'stored persons');
      expect(stored.bytes).toBe(0);
      // Switched off: the next frames carry keypoints again, into the store too.
      await s.api('PUT', '/config', { token, body: { privacy: { anonymize_data: false } } });
      await until(async () => {
        const r = await s.svc.store.query<{ bytes: number | null }>('SELECT max(octet_length(keypoints)) AS bytes FROM pose_persons');
        return r[0]!.bytes === 204 ? true : undefined;
      }, 'keypoints stored again');
    } finally {
      await s.close();
    }
  });
});
