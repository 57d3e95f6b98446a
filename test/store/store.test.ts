import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, SCHEMA_VERSION, TIME_TABLES } from '../../src/store/schema.js';
import { Store, StoreError } from '../../src/store/store.js';
import { tempDirs } from '../helpers/dataDir.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 123);
const DAY = 86_400_000;

const tempDir = tempDirs('csipose-store-', 'each');

/** Opens a store on a fresh temp file, runs `fn`, closes it. */
async function withStore<T>(fn: (store: Store, path: string) => Promise<T>): Promise<T> {
  const path = join(tempDir(), 'pose.duckdb');
  const store = await Store.open(path);
  try {
    return await fn(store, path);
  } finally {
    await store.close();
  }
}

async function openError(path: string): Promise<StoreError> {
  try {
    const s = await Store.open(path);
    await s.close();
  } catch (e) {
    expect(e).toBeInstanceOf(StoreError);
    return e as StoreError;
  }
  throw new Error(`opening ${path} succeeded`);
}

function metrics(time: number, fps: number) {
  return { time, framesPerSecond: fps, averageLatencyMs: 12.5, cpuUsage: 0.25, memoryUsage: 0.5, processingQueueSize: 3, errorRate: 0.01, activePersons: 2 };
}

describe('Store', () => {
  it('creates every table and records the schema version in a new file', async () => {
    await withStore(async (store) => {
      const tables = await store.query<{ table_name: string }>(`SELECT table_name FROM duckdb_tables() ORDER BY table_name`);
      expect(tables.map((t) => t.table_name)).toEqual(['activity_events', 'alerts', 'pose_frames', 'pose_persons', 'schema_version', 'system_metrics']);
      expect(await store.query(`SELECT version FROM schema_version ORDER BY version`)).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
      expect(MIGRATIONS.at(-1)!.version).toBe(SCHEMA_VERSION);
      const cols = await store.query<{ column_name: string; data_type: string }>(
        `SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index`,
        ['pose_persons'],
      );
      expect(cols.find((c) => c.column_name === 'keypoints')?.data_type).toBe('BLOB');
      expect(cols.find((c) => c.column_name === 'ts')?.data_type).toBe('TIMESTAMP');
      for (const t of TIME_TABLES) {
        const ts = await store.query(`SELECT data_type FROM duckdb_columns() WHERE table_name = ? AND column_name = 'ts'`, [t]);
        expect(ts).toEqual([{ data_type: 'TIMESTAMP' }]);
      }
    });
  });

  it('migrates a version 1 file: frames and persons get their storage order, tracks are computed, metrics count errors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'csipose-migrate-'));
    const path = join(dir, 'v1.duckdb');
    try {
      const inst = await DuckDBInstance.create(path);
      const conn = await inst.connect();
      for (const sql of MIGRATIONS[0]!.statements) await conn.run(sql);
      await conn.run(`INSERT INTO schema_version (version, description) VALUES (1, 'v1')`);
      await conn.run(`INSERT INTO pose_frames VALUES ('2026-11-24 10:00:00', 'lab', 'sim', 7, 1, 5, 'm', 0.9, 0.8, 0.8)`);
      for (const [t, x] of [
        ['10:00:00', 1],
        ['10:00:01', 2],
      ] as const)
        await conn.run(
          `INSERT INTO pose_persons VALUES ('2026-11-24 ${t}', 'lab', 7, 0, 3, 3, 1, 0.8, 1, 2, 3, 4, ${x}, 1, NULL, NULL, 'walking', 0.9, '\\x00'::BLOB, NULL)`,
        );
      conn.closeSync();
      inst.closeSync();
      const store = await Store.open(path);
      try {
        expect(await store.query(`SELECT version FROM schema_version ORDER BY version`)).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }]);
        // Version 3: the errors logged per metrics sample, NULL (none counted) on older rows.
        expect(await store.query(`SELECT data_type FROM duckdb_columns() WHERE table_name = 'system_metrics' AND column_name = 'error_count'`)).toEqual([
          { data_type: 'INTEGER' },
        ]);
        expect(await store.query(`SELECT seq FROM pose_frames`)).toEqual([{ seq: Date.parse('2026-11-24T10:00:00Z') * 1000 }]);
        expect((await store.query(`SELECT seq FROM pose_persons ORDER BY ts`)).map((r) => r.seq)).toEqual([
          Date.parse('2026-11-24T10:00:00Z') * 1000,
          Date.parse('2026-11-24T10:00:01Z') * 1000,
        ]);
        const [track] = await store.query(`SELECT environment_id, track_id, frames, last_activity, last_floor_x FROM tracks`);
        expect(track).toEqual({ environment_id: 'lab', track_id: 3, frames: 2, last_activity: 'walking', last_floor_x: 2 });
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs prepared statements with positional and named parameters and refuses writes in query()', async () => {
    await withStore(async (store) => {
      const r = await store.query(`SELECT ? + 1 AS a, ? || '!' AS b`, [41, 'hi']);
      expect(r).toEqual([{ a: 42, b: 'hi!' }]);
      const n = await store.query(`SELECT $x * 2 AS x2, $when AS w`, { x: 2.5, when: new Date(T0) });
      expect(n).toEqual([{ x2: 5, w: new Date(T0) }]);
      await expect(store.query(`DELETE FROM alerts`)).rejects.toMatchObject({ reason: 'invalid', code: 'SYSTEM_ERROR' });
      await expect(store.query(`SELECT ?`, [])).rejects.toMatchObject({ reason: 'invalid' });
      await expect(store.query(`SELECT 1; SELECT 2`)).rejects.toMatchObject({ reason: 'invalid' });
      await expect(store.query(`PRAGMA enable_checkpoint_on_shutdown`)).rejects.toMatchObject({ reason: 'invalid' });
      // Other files stay out of reach of SQL.
      await expect(store.query(`SELECT * FROM read_csv(?)`, ['/etc/hostname'])).rejects.toThrow(/disabled by configuration/);
      // A value is data, never SQL.
      const inj = await store.query(`SELECT count(*) AS n FROM alerts WHERE alert_id = ?`, [`x' OR 1=1 --`]);
      expect(inj).toEqual([{ n: 0 }]);
    });
  });

  it('gives the right strings from a cached statement prepared while its table was empty', async () => {
    await withStore(async (store) => {
      // Prepared (and cached) on the empty table, run again once it has rows: DuckDB's compressed
      // materialization would plan the strings by the empty table's statistics and give '|'.
      const q = `SELECT environment_id AS env, count(*) AS n FROM alerts GROUP BY 1`;
      expect(await store.query(q)).toEqual([]);
      for (const at of [T0, T0 + 1000])
        await store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, ?, 'fall_detection', 'high', 'ward-1')`, [
          new Date(at),
          `a-${at}`,
        ]);
      expect(await store.query(q)).toEqual([{ env: 'ward-1', n: 2 }]);
    });
  });

  it('writes system metrics that survive close and reopen', async () => {
    const path = join(tempDir(), 'durable.duckdb');
    const a = await Store.open(path);
    await a.recordMetrics(metrics(T0, 9.5));
    await a.recordMetrics(metrics(T0 + 1000, 10.5));
    await a.close();
    const b = await Store.open(path);
    const rows = await b.query(`SELECT epoch_ms(ts) AS t, frames_per_second, processing_queue_size, active_persons FROM system_metrics ORDER BY ts`);
    expect(rows).toEqual([
      { t: T0, frames_per_second: 9.5, processing_queue_size: 3, active_persons: 2 },
      { t: T0 + 1000, frames_per_second: 10.5, processing_queue_size: 3, active_persons: 2 },
    ]);
    await b.close();
  });

  it('refuses a second open of the same file in this process with a clear error', async () => {
    await withStore(async (_store, path) => {
      const e = await openError(path);
      expect(e.reason).toBe('in_use');
      expect(e.code).toBe('SYSTEM_ERROR');
      expect(e.message).toContain(path);
    });
  });

  it('reports a file locked by another process as locked, naming the holder', async () => {
    const path = join(tempDir(), 'locked.duckdb');
    const holder: ChildProcess = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         const i = await DuckDBInstance.create(${JSON.stringify(path)});
         await i.connect();
         process.stdout.write('ready\\n');
         setInterval(() => {}, 1000);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
        holder.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
      });
      const e = await openError(path);
      expect(e.reason).toBe('locked');
      expect(e.message).toMatch(/locked by another process/);
      expect(e.message).toContain(`PID ${holder.pid}`);
    } finally {
      holder.kill();
    }
    // Released with the holder: the file opens now.
    await new Promise((r) => holder.once('exit', r));
    const s = await Store.open(path);
    expect((await s.query(`SELECT count(*) AS n FROM pose_frames`))[0]).toEqual({ n: 0 });
    await s.close();
  });

  it('reports a damaged file as corrupt and leaves it alone', async () => {
    const path = join(tempDir(), 'garbage.duckdb');
    writeFileSync(path, Buffer.alloc(16_384, 0x5a));
    const e = await openError(path);
    expect(e.reason).toBe('corrupt');
    expect(e.message).toContain(path);
    // The failed open must not keep the path marked as open.
    expect((await openError(path)).reason).toBe('corrupt');
  });

  it('refuses a DuckDB file that is not a csipose store, and one from a newer build', async () => {
    const foreign = join(tempDir(), 'foreign.duckdb');
    const inst = await DuckDBInstance.create(foreign);
    const c = await inst.connect();
    await c.run(`CREATE TABLE customers (id INTEGER)`);
    c.closeSync();
    inst.closeSync();
    const e = await openError(foreign);
    expect(e.reason).toBe('schema');
    expect(e.message).toMatch(/not a csipose store/);

    const newer = join(tempDir(), 'newer.duckdb');
    const s = await Store.open(newer);
    await s.execute(`INSERT INTO schema_version (version, description) VALUES (?, ?)`, [SCHEMA_VERSION + 1, 'from the future']);
    await s.close();
    const e2 = await openError(newer);
    expect(e2.reason).toBe('schema');
    expect(e2.message).toMatch(new RegExp(`schema version ${SCHEMA_VERSION + 1}`));
  });

  it('prunes rows older than the retention period from every time table', async () => {
    await withStore(async (store) => {
      const now = T0 + 30 * DAY;
      for (const age of [40, 31, 29, 1]) {
        const t = new Date(now - age * DAY);
        await store.recordMetrics(metrics(t.getTime(), age));
        await store.execute(`INSERT INTO pose_frames (ts, environment_id, source_id, frame_id, person_count) VALUES (?, 'e', 's', ?, 0)`, [t, age]);
        await store.execute(
          `INSERT INTO pose_persons (ts, environment_id, frame_id, slot, person_id, confidence, bbox_x, bbox_y, bbox_w, bbox_h, keypoints)
           VALUES (?, 'e', ?, 0, 0, 1, 0, 0, 1, 1, ?)`,
          [t, age, new Uint8Array(204)],
        );
        await store.execute(`INSERT INTO activity_events (ts, event_id, type, severity, environment_id) VALUES (?, ?, 'fall_detection', 'high', 'e')`, [
          t,
          `ev${age}`,
        ]);
        await store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, ?, 'fall_detection', 'high', 'e')`, [t, `al${age}`]);
      }
      const deleted = await store.pruneOlderThan(30, now);
      expect(deleted).toEqual({ pose_frames: 2, pose_persons: 2, activity_events: 2, alerts: 2, system_metrics: 2 });
      expect(await store.query(`SELECT frame_id FROM pose_frames ORDER BY ts`)).toEqual([{ frame_id: 29 }, { frame_id: 1 }]);
      expect(await store.query(`SELECT frames_per_second AS a FROM system_metrics ORDER BY ts`)).toEqual([{ a: 29 }, { a: 1 }]);
      expect(await store.query(`SELECT event_id FROM activity_events ORDER BY ts`)).toEqual([{ event_id: 'ev29' }, { event_id: 'ev1' }]);
      await expect(store.pruneOlderThan(-1)).rejects.toMatchObject({ reason: 'invalid' });
    });
  });

  it('reports health: status, file size, pool use and last query time', async () => {
    const path = join(tempDir(), 'health.duckdb');
    const store = await Store.open(path);
    const h0 = store.health();
    expect(h0.status).toBe('healthy');
    expect(h0.connection_pool).toBe('0/2');
    expect(h0.query_time_ms).toBeNull();
    expect(h0.file_size_bytes).toBeGreaterThan(0);
    expect(h0.schema_version).toBe(SCHEMA_VERSION);
    await store.query(`SELECT 1 AS x`);
    expect(store.health().query_time_ms).toBeGreaterThanOrEqual(0);
    await store.close();
    const h1 = store.health();
    expect(h1.status).toBe('closed');
    expect(h1.connection_pool).toBe('0/0');
    await expect(store.query(`SELECT 1`)).rejects.toMatchObject({ reason: 'closed' });
    await expect(store.recordMetrics(metrics(T0, 1))).rejects.toMatchObject({ reason: 'closed' });
    // Closing twice is harmless.
    await store.close();
  });

  it('works in memory for tests', async () => {
    const store = await Store.open(':memory:');
    await store.recordMetrics(metrics(T0, 3));
    expect(await store.query(`SELECT count(*) AS n FROM system_metrics`)).toEqual([{ n: 1 }]);
    expect(store.health().file_size_bytes).toBe(0);
    await store.close();
  });
});
