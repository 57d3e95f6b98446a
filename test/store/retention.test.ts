import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TIME_TABLES, type TimeTable } from '../../src/store/schema.js';
import { Store } from '../../src/store/store.js';
import { tempDirs } from '../helpers/dataDir.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 1, 12, 0, 0, 500);

const tempDir = tempDirs('csipose-retention-', 'each');

/** Opens a store on a fresh temp file, runs `fn`, closes it. */
async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const dir = tempDir();
  const store = await Store.open(join(dir, 'pose.duckdb'));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * One row per time table, tagged with `tag` so the survivors can be named. A `Record` over
 * `TimeTable`, so a time table added to the schema fails to compile here until it is covered.
 */
const INSERT: Record<TimeTable, (store: Store, ts: Date, tag: number) => Promise<number>> = {
  pose_frames: (s, ts, tag) =>
    s.execute(`INSERT INTO pose_frames (ts, environment_id, source_id, frame_id, person_count) VALUES (?, 'e', 's', ?, 0)`, [ts, tag]),
  pose_persons: (s, ts, tag) =>
    s.execute(
      `INSERT INTO pose_persons (ts, environment_id, frame_id, slot, person_id, confidence, bbox_x, bbox_y, bbox_w, bbox_h, keypoints)
       VALUES (?, 'e', ?, 0, 0, 1, 0, 0, 1, 1, ?)`,
      [ts, tag, new Uint8Array(204)],
    ),
  activity_events: (s, ts, tag) =>
    s.execute(`INSERT INTO activity_events (ts, event_id, type, severity, environment_id) VALUES (?, ?, 'fall_detection', 'high', 'e')`, [ts, String(tag)]),
  alerts: (s, ts, tag) =>
    s.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, ?, 'fall_detection', 'high', 'e')`, [ts, String(tag)]),
  system_metrics: (s, ts, tag) => s.execute(`INSERT INTO system_metrics (ts, frames_per_second) VALUES (?, ?)`, [ts, tag]),
};

/** The tag column of each table, read back as a number. */
const TAG: Record<TimeTable, string> = {
  pose_frames: 'frame_id',
  pose_persons: 'frame_id',
  activity_events: 'CAST(event_id AS BIGINT)',
  alerts: 'CAST(alert_id AS BIGINT)',
  system_metrics: 'CAST(frames_per_second AS BIGINT)',
};

async function tags(store: Store, table: TimeTable): Promise<number[]> {
  const rows = await store.query<{ tag: number | bigint }>(`SELECT ${TAG[table]} AS tag FROM ${table} ORDER BY ts`);
  return rows.map((r) => Number(r.tag));
}

describe('Store retention (pruneOlderThan)', () => {
  it('deletes from every time table exactly the rows before now - days, and keeps the rest', async () => {
    await withStore(async (store) => {
      const days = 7;
      const cutoff = NOW - days * DAY;
      // Tag = ms relative to the cutoff: negative rows are older and go; the cutoff itself stays.
      const offsets = [-30 * DAY, -1, 0, 1, 6 * DAY];
      for (const table of TIME_TABLES) {
        for (const off of offsets) await INSERT[table](store, new Date(cutoff + off), off);
      }

      const deleted = await store.pruneOlderThan(days, NOW);

      expect(Object.keys(deleted).sort()).toEqual([...TIME_TABLES].sort());
      for (const table of TIME_TABLES) {
        expect(deleted[table], table).toBe(2);
        expect(await tags(store, table), table).toEqual([0, 1, 6 * DAY]);
      }
      // Nothing left to delete: a second pass changes nothing.
      const again = await store.pruneOlderThan(days, NOW);
      for (const table of TIME_TABLES) expect(again[table], table).toBe(0);
    });
  });

  it('takes fractional days and counts back from the given clock', async () => {
    await withStore(async (store) => {
      // Half a day back from NOW: a row 13 h old goes, one 11 h old stays.
      for (const table of TIME_TABLES) {
        await INSERT[table](store, new Date(NOW - 13 * 3_600_000), 13);
        await INSERT[table](store, new Date(NOW - 11 * 3_600_000), 11);
      }
      const deleted = await store.pruneOlderThan(0.5, NOW);
      for (const table of TIME_TABLES) {
        expect(deleted[table], table).toBe(1);
        expect(await tags(store, table), table).toEqual([11]);
      }
    });
  });

  it('with 0 days deletes everything before now, and refuses a negative or non-finite period untouched', async () => {
    await withStore(async (store) => {
      for (const table of TIME_TABLES) {
        await INSERT[table](store, new Date(NOW - 1), 1);
        await INSERT[table](store, new Date(NOW), 0);
      }
      await expect(store.pruneOlderThan(-1, NOW)).rejects.toMatchObject({ reason: 'invalid' });
      await expect(store.pruneOlderThan(Number.NaN, NOW)).rejects.toMatchObject({ reason: 'invalid' });
      await expect(store.pruneOlderThan(Number.POSITIVE_INFINITY, NOW)).rejects.toMatchObject({ reason: 'invalid' });
      for (const table of TIME_TABLES) expect(await tags(store, table), table).toEqual([1, 0]);

      const deleted = await store.pruneOlderThan(0, NOW);
      for (const table of TIME_TABLES) {
        expect(deleted[table], table).toBe(1);
        expect(await tags(store, table), table).toEqual([0]);
      }
    });
  });
});
