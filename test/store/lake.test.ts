import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { PoseFrame } from '../../src/pose/types.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Lake, partitionFile, partitionValue } from '../../src/store/lake.js';
import { Store } from '../../src/store/store.js';
import { startServer, until } from '../helpers/server.js';
import { tempDirs } from '../helpers/dataDir.js';

const HOUR = 3_600_000;
/** A closed hour: 09:00-10:00 UTC, with 10:00-11:00 as a second one. */
const H9 = Date.UTC(2026, 0, 5, 9);
const H10 = H9 + HOUR;
/** The clock of the lake: 11:30, so 09 and 10 are closed and 11 is still open. */
const NOW = H10 + HOUR + 30 * 60_000;

const tempDir = tempDirs('csipose-lake-', 'each');

function frame(k: number, time: number, env: string, persons = 2): PoseFrame {
  return {
    frameId: k,
    time,
    sourceId: 'sim-1',
    environmentId: env,
    persons: Array.from({ length: persons }, (_, i) => ({
      slot: i,
      confidence: 0.5 + i / 10 + k / 1000,
      keypoints: Float32Array.from({ length: 51 }, (_, j) => k + j / 4 + i),
      bbox: Float32Array.of(10 * i, 20, 30.5, 40.25),
      trackId: i + 1,
    })),
    processingMs: 3.5,
    modelVersion: 'test-1',
    csiQuality: 0.75,
  };
}

/** Stores frames (with persons), an alert and metrics at the given times through the real sink. */
async function seed(store: Store, rows: Array<{ t: number; env: string }>, k0 = 0): Promise<void> {
  const sink = new PoseSink(store);
  rows.forEach((r, i) => sink.write(frame(k0 + i, r.t, r.env)));
  await sink.flush();
  await sink.close();
  for (const r of rows) {
    await store.execute(
      `INSERT INTO alerts (ts, alert_id, type, severity, environment_id, confidence, metadata, actions_required) VALUES (?, ?, 'fall_detected', 'high', ?, 0.9, '{"a":1}', ['call'])`,
      [new Date(r.t), `al-${r.t}-${r.env}`, r.env],
    );
    await store.recordMetrics({
      time: r.t,
      framesPerSecond: 10,
      averageLatencyMs: 5,
      cpuUsage: 0.1,
      memoryUsage: 0.2,
      processingQueueSize: 0,
      errorRate: 0,
      activePersons: 2,
    });
  }
}

const SEED = [
  { t: H9 + 60_000, env: 'lab' },
  { t: H9 + 120_000, env: 'lab' },
  { t: H9 + 30 * 60_000, env: 'ward 2/b' },
  { t: H10 + 5 * 60_000, env: 'lab' },
  // The open hour (11:00-12:00 at NOW): never written while it is open.
  { t: H10 + HOUR + 60_000, env: 'lab' },
];

function sha(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Rows as comparable JSON text (BLOBs as hex, times as ISO). */
function canon(rows: Record<string, unknown>[]): string[] {
  return rows
    .map((r) =>
      JSON.stringify(r, (_k, v) =>
        typeof v === 'bigint' ? Number(v) : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v instanceof Date ? v.toISOString() : v,
      ),
    )
    .sort();
}

describe('Parquet lake', () => {
  it('names partitions by table, environment, date and hour, escaping what a path cannot hold', () => {
    expect(partitionFile('pose_frames', 'lab', H9)).toBe('pose_frames/environment_id=lab/date=2026-01-05/hour=09.parquet');
    expect(partitionFile('system_metrics', undefined, H10)).toBe('system_metrics/date=2026-01-05/hour=10.parquet');
    expect(partitionValue('ward 2/b')).toBe('ward%202%2Fb');
    expect(partitionValue('..')).toBe('%2E%2E');
  });

  it('writes every closed hour once, and DuckDB reads the same rows back with hive partitioning', async () => {
    const dir = tempDir();
    const lakeDir = join(dir, 'lake');
    mkdirSync(lakeDir);
    const store = await Store.open(join(dir, 'csipose.duckdb'), { allowedDirectories: [lakeDir] });
    try {
      await seed(store, SEED);
      const lake = new Lake(store, { dir: lakeDir, now: () => NOW });
      const pass = await lake.runOnce();
      // activity_events has no rows: no files.
      expect(pass.written.sort()).toEqual(
        [
          'alerts/environment_id=lab/date=2026-01-05/hour=09.parquet',
          'alerts/environment_id=lab/date=2026-01-05/hour=10.parquet',
          'alerts/environment_id=ward%202%2Fb/date=2026-01-05/hour=09.parquet',
          'pose_frames/environment_id=lab/date=2026-01-05/hour=09.parquet',
          'pose_frames/environment_id=lab/date=2026-01-05/hour=10.parquet',
          'pose_frames/environment_id=ward%202%2Fb/date=2026-01-05/hour=09.parquet',
          'pose_persons/environment_id=lab/date=2026-01-05/hour=09.parquet',
          'pose_persons/environment_id=lab/date=2026-01-05/hour=10.parquet',
          'pose_persons/environment_id=ward%202%2Fb/date=2026-01-05/hour=09.parquet',
          'system_metrics/date=2026-01-05/hour=09.parquet',
          'system_metrics/date=2026-01-05/hour=10.parquet',
        ].sort(),
      );
      for (const f of pass.written) expect(existsSync(join(lakeDir, f)), f).toBe(true);
      expect(lake.report()).toMatchObject({ status: 'healthy', hours_written: 11, files_written: 11, last_error: null });
      // A second pass has nothing left to do.
      expect((await lake.runOnce()).written).toEqual([]);

      // A separate DuckDB reads the lake as analysts would.
      const reader = await (await DuckDBInstance.create(':memory:')).connect();
      const closed = new Date(H10 + HOUR);
      for (const table of ['pose_frames', 'pose_persons', 'alerts'] as const) {
        const fromLake = (
          await reader.runAndReadAll(
            `SELECT * EXCLUDE (date) FROM read_parquet('${lakeDir}/${table}/**/*.parquet', hive_partitioning = true, hive_types = {'environment_id': VARCHAR})`,
          )
        ).getRowObjectsJS();
        const fromStore = await store.query(`SELECT * FROM ${table} WHERE ts < ?`, [closed]);
        // The path's environment id is %-escaped; DuckDB gives it back as written.
        const unescaped = fromLake.map((r) => ({ ...r, environment_id: decodeURIComponent(String(r.environment_id)) }));
        const cols = Object.keys(fromStore[0]!).sort();
        const pick = (r: Record<string, unknown>) => Object.fromEntries(cols.map((c) => [c, r[c]]));
        expect(canon(unescaped.map(pick)), table).toEqual(canon(fromStore.map(pick)));
        expect(fromLake.length, table).toBeGreaterThan(0);
      }
      const metrics = (
        await reader.runAndReadAll(
          `SELECT count(*)::INTEGER AS n, min(date)::VARCHAR AS d FROM read_parquet('${lakeDir}/system_metrics/**/*.parquet', hive_partitioning = true)`,
        )
      ).getRowObjectsJS();
      expect(metrics).toEqual([{ n: 4, d: '2026-01-05' }]);
      // environment_id is in the path, not in the files (Spark refuses a column that is both).
      const cols = (
        await reader.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${lakeDir}/pose_frames/**/*.parquet', hive_partitioning = false)`)
      ).getRowObjectsJS();
      expect(cols.map((c) => c.column_name)).not.toContain('environment_id');
      await lake.close();
    } finally {
      await store.close();
    }
  });

  it('never rewrites a written hour, also after a restart, and writes the next hour once it closes', async () => {
    const dir = tempDir();
    const lakeDir = join(dir, 'lake');
    mkdirSync(lakeDir);
    const dbFile = join(dir, 'csipose.duckdb');
    let store = await Store.open(dbFile, { allowedDirectories: [lakeDir] });
    let lake = new Lake(store, { dir: lakeDir, now: () => NOW });
    await seed(store, SEED);
    const written = (await lake.runOnce()).written;
    expect(written.length).toBe(11);
    const hashes = new Map(written.map((f) => [f, sha(join(lakeDir, f))]));
    // A late row for an hour already written stays in the database only.
    await seed(store, [{ t: H9 + 59 * 60_000, env: 'lab' }], 100);
    // A temporary file left by a crash is cleaned up at start.
    writeFileSync(join(lakeDir, 'pose_frames', 'environment_id=lab', 'date=2026-01-05', '.hour=11.parquet.tmp'), 'junk');
    await lake.close();
    await store.close();

    store = await Store.open(dbFile, { allowedDirectories: [lakeDir] });
    try {
      let now = NOW;
      lake = new Lake(store, { dir: lakeDir, now: () => now });
      expect(lake.files()).toEqual([...written].sort());
      expect(existsSync(join(lakeDir, 'pose_frames', 'environment_id=lab', 'date=2026-01-05', '.hour=11.parquet.tmp'))).toBe(false);
      expect((await lake.runOnce()).written).toEqual([]);
      for (const [f, h] of hashes) expect(sha(join(lakeDir, f)), f).toBe(h);
      // 11:00-12:00 closes (plus the margin): its hour is written, nothing else.
      now = H10 + 2 * HOUR + 3 * 60_000;
      const next = (await lake.runOnce()).written.sort();
      expect(next).toEqual(
        [
          'alerts/environment_id=lab/date=2026-01-05/hour=11.parquet',
          'pose_frames/environment_id=lab/date=2026-01-05/hour=11.parquet',
          'pose_persons/environment_id=lab/date=2026-01-05/hour=11.parquet',
          'system_metrics/date=2026-01-05/hour=11.parquet',
        ].sort(),
      );
      for (const [f, h] of hashes) expect(sha(join(lakeDir, f)), f).toBe(h);
      await lake.close();
    } finally {
      await store.close();
    }
  });

  it('keeps an hour open for the margin after it ends, and neither writes nor keeps hours past the retention', async () => {
    const dir = tempDir();
    const lakeDir = join(dir, 'lake');
    mkdirSync(lakeDir);
    const store = await Store.open(join(dir, 'csipose.duckdb'), { allowedDirectories: [lakeDir] });
    try {
      await seed(store, [
        { t: H9 + 60_000, env: 'lab' },
        { t: H10 + 60_000, env: 'lab' },
      ]);
      let now = H10 + HOUR + 60_000; // 11:01: 10:00-11:00 ended a minute ago, inside the 2 min margin
      let days: number | undefined = undefined;
      const lake = new Lake(store, { dir: lakeDir, now: () => now, retentionDays: () => days });
      expect((await lake.runOnce()).written.filter((f) => f.startsWith('pose_frames/'))).toEqual([
        'pose_frames/environment_id=lab/date=2026-01-05/hour=09.parquet',
      ]);
      now = H10 + HOUR + 5 * 60_000;
      expect((await lake.runOnce()).written.filter((f) => f.startsWith('pose_frames/'))).toEqual([
        'pose_frames/environment_id=lab/date=2026-01-05/hour=10.parquet',
      ]);
      // A retention that starts at 10:30 removes the 09 hour (and the 10 hour, which began before it).
      days = (now - (H10 + 30 * 60_000)) / 86_400_000;
      const pass = await lake.runOnce();
      expect(pass.removed).toBe(8);
      expect(lake.files()).toEqual([]);
      expect(existsSync(join(lakeDir, 'pose_frames', 'environment_id=lab'))).toBe(false);
      expect(existsSync(join(lakeDir, 'pose_frames'))).toBe(true);
      await lake.close();
    } finally {
      await store.close();
    }
  });

  it('runs in the service when storage.parquet_dir is set: partitions under the data dir, reported in health', async () => {
    const scratch = tempDir();
    const dataDir = join(scratch, 'data');
    mkdirSync(dataDir);
    // Rows of two hours ago, stored before the service starts (inside the default 30-day retention).
    const t = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR + 10 * 60_000;
    const pre = await Store.open(join(dataDir, 'csipose.duckdb'));
    await seed(pre, [
      { t, env: 'default' },
      { t: t + 1000, env: 'default' },
    ]);
    await pre.close();
    const s = await startServer({ dataDir, config: { storage: { parquet_dir: 'lake/v1' } } });
    try {
      expect(s.app.lake).toBeDefined();
      const file = join(dataDir, 'lake', 'v1', partitionFile('pose_frames', 'default', Math.floor(t / HOUR) * HOUR));
      await until(async () => (existsSync(file) ? true : (await s.app.lake!.runOnce(), undefined)), 'the lake to write the hour', 100);
      const admin = await s.login();
      const health = await s.api('GET', '/health/detailed', { token: admin, form: 'a' });
      expect(JSON.stringify(health.body)).toContain('"lake"');
      const lake = s.app.lake!.report();
      expect(lake.status).toBe('healthy');
      expect(lake.hours_written).toBeGreaterThanOrEqual(4);
      // The admin query reads the lake (the service's own folder), never files elsewhere.
      const r = await s.api('POST', '/store/query', {
        token: admin,
        form: 'a',
        body: { sql: `SELECT count(*) AS n FROM read_parquet('${join(dataDir, 'lake', 'v1')}/pose_frames/**/*.parquet')` },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.rows).toEqual([[2]]);
    } finally {
      await s.close();
    }
  });

  it('gives the store the lake folder and nothing else: COPY works there only, and the settings are locked', async () => {
    const dir = tempDir();
    const lakeDir = join(dir, 'lake');
    mkdirSync(lakeDir);
    const store = await Store.open(join(dir, 'csipose.duckdb'), { allowedDirectories: [lakeDir] });
    try {
      expect(await store.copyTo('SELECT 1 AS one', undefined, join(lakeDir, 'x.parquet'), 'parquet')).toBe(1);
      expect(existsSync(join(lakeDir, 'x.parquet'))).toBe(true);
      await expect(store.copyTo('SELECT 1 AS one', undefined, join(dir, 'x.parquet'), 'parquet')).rejects.toThrow(/disabled by configuration/);
      await expect(store.copyTo('SELECT 1 AS one', undefined, join(lakeDir, '..', 'x.parquet'), 'parquet')).rejects.toThrow(/disabled by configuration/);
      for (const sql of ['SET enable_external_access = true', `SET allowed_directories = ['/']`, 'SET threads = 1']) {
        await expect(
          store.withWriter((c) => c.run(sql)),
          sql,
        ).rejects.toThrow(/locked/);
      }
      await expect(store.sql(`SELECT * FROM read_text('/etc/hostname')`)).rejects.toMatchObject({ kind: 'permission' });
      expect((await store.sql(`SELECT count(*) AS n FROM read_parquet('${lakeDir}/x.parquet')`)).rows).toEqual([[1]]);
    } finally {
      await store.close();
    }
  });

  it('refuses a parquet_dir outside the data directory', async () => {
    const { lakeDir } = await import('../../src/store/export.js');
    expect(lakeDir('/data', '')).toBeUndefined();
    expect(lakeDir('/data', 'lake')).toBe('/data/lake');
    expect(() => lakeDir('/data', '../elsewhere')).toThrow(/inside the data directory/);
    expect(() => lakeDir('/data', '/abs')).toThrow(/inside the data directory/);
    expect(() => lakeDir('/data', 'exports')).toThrow(/exports/);
  });
});
