import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoseFrame } from '../../src/pose/types.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import { seededDataDir, storedFrame, tempDirs } from '../helpers/dataDir.js';
import { startServer, type TestServer } from '../helpers/server.js';

/** Seconds-aligned, three hours ago: inside the service's 30-day retention. */
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3 * 3_600_000;
const TABLES = ['pose_frames', 'pose_persons', 'activity_events', 'alerts', 'system_metrics'];

const tempDir = tempDirs('csipose-export-');

/** Frame `k`, a minute after frame k - 1, with two persons. */
function frame(k: number): PoseFrame {
  return storedFrame(
    k,
    T0 + k * 60_000,
    Array.from({ length: 2 }, (_, i) => ({
      slot: i,
      confidence: 0.5 + i / 10,
      keypoints: Float32Array.from({ length: 51 }, (_, j) => k + j + i),
      bbox: Float32Array.of(1, 2, 3, 4),
      trackId: i + 1,
    })),
  );
}

/** A data directory with 10 frames one minute apart (2 persons each), 10 alerts and 10 metric rows. */
function seeded(): Promise<string> {
  return seededDataDir(
    tempDir,
    Array.from({ length: 10 }, (_, k) => frame(k)),
    async (store) => {
      for (let k = 0; k < 10; k++) {
        const t = T0 + k * 60_000;
        await store.execute(
          `INSERT INTO alerts (ts, alert_id, type, severity, environment_id, confidence, metadata, actions_required) VALUES (?, ?, 'fall_detected', 'high', 'lab', 0.9, '{}', ['call'])`,
          [new Date(t), `al-${k}`],
        );
        await store.recordMetrics({
          time: t,
          framesPerSecond: 10,
          averageLatencyMs: 5,
          cpuUsage: 0.1,
          memoryUsage: 0.2,
          processingQueueSize: 0,
          errorRate: 0,
          activePersons: 2,
        });
      }
    },
  );
}

let reader: DuckDBConnection;
/** Rows of an exported file, read by a separate DuckDB. */
async function readBack(file: string): Promise<Record<string, unknown>[]> {
  const fn = file.endsWith('.parquet') ? 'read_parquet' : 'read_csv';
  return (await reader.runAndReadAll(`SELECT * FROM ${fn}('${file}') ORDER BY ts`)).getRowObjectsJS();
}

/** The `path\tN rows\tB bytes` lines of the command, by file name. */
function listed(stdout: string): Map<string, { path: string; rows: number; bytes: number }> {
  const out = new Map<string, { path: string; rows: number; bytes: number }>();
  for (const line of stdout.trim().split('\n')) {
    const m = /^(.+)\t(\d+) rows\t(\d+) bytes$/.exec(line);
    expect(m, line).not.toBeNull();
    out.set(m![1]!.split('/').at(-1)!, { path: m![1]!, rows: Number(m![2]), bytes: Number(m![3]) });
  }
  return out;
}

beforeAll(async () => {
  ensureBuilt();
  reader = await (await DuckDBInstance.create(':memory:')).connect();
}, 120_000);

describe('csipose export', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await seeded();
  });

  describe('with the service stopped: the file read directly', () => {
    it('writes one Parquet file per table that reads back as the stored rows', async () => {
      const out = join(tempDir(), 'out', 'nested');
      const r = await runCli(['export', '--data-dir', dataDir, '--format', 'parquet', '--out', out]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readdirSync(out).sort()).toEqual(TABLES.map((t) => `${t}.parquet`).sort());
      const files = listed(r.stdout);
      expect(files.get('pose_frames.parquet')).toMatchObject({ path: join(out, 'pose_frames.parquet'), rows: 10 });
      expect(files.get('pose_persons.parquet')?.rows).toBe(20);
      expect(files.get('activity_events.parquet')?.rows).toBe(0);
      const frames = await readBack(join(out, 'pose_frames.parquet'));
      expect(frames.map((f) => (f.ts as Date).getTime())).toEqual(Array.from({ length: 10 }, (_, k) => T0 + k * 60_000));
      expect(frames[3]).toMatchObject({ environment_id: 'lab', frame_id: 3n, person_count: 2, model_version: 'test-1' });
      const persons = await readBack(join(out, 'pose_persons.parquet'));
      expect((persons[0]!.keypoints as Uint8Array).length).toBe(204);
    });

    it('writes CSV of the tables asked for, rows of the range only (both ends included)', async () => {
      const out = join(tempDir(), 'csv');
      const from = new Date(T0 + 2 * 60_000).toISOString();
      const to = new Date(T0 + 5 * 60_000).toISOString();
      const r = await runCli([
        'export',
        '--data-dir',
        dataDir,
        '--format',
        'csv',
        '--table',
        'alerts',
        '--table',
        'pose_frames,system_metrics',
        '--from',
        from,
        '--to',
        to,
        '--out',
        out,
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readdirSync(out).sort()).toEqual(['alerts.csv', 'pose_frames.csv', 'system_metrics.csv']);
      const lines = readFileSync(join(out, 'alerts.csv'), 'utf8').trim().split('\n');
      expect(lines[0]!.split(',').slice(0, 3)).toEqual(['ts', 'alert_id', 'type']);
      expect(lines.slice(1).map((l) => l.split(',')[1])).toEqual(['al-2', 'al-3', 'al-4', 'al-5']);
      expect((await readBack(join(out, 'pose_frames.csv'))).length).toBe(4);
    });

    it("writes into the store's export folder <dataDir>/exports without --out, where a query finds them by a relative path", async () => {
      const own = await seeded();
      const r = await runCli(['export', '--data-dir', own, '--format', 'csv', '--table', 'alerts']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(listed(r.stdout).get('alerts.csv')).toMatchObject({ path: join(own, 'exports', 'alerts.csv'), rows: 10 });
      // Run from the repository, not the data directory: the path is taken from the data directory.
      const q = await runCli(['query', '--data-dir', own, '--format', 'csv', "SELECT count(*) AS n FROM read_csv('exports/alerts.csv')"]);
      expect(q.stderr).toBe('');
      expect(q.stdout).toBe('n\n10\n');
    });

    it('exits 2 for bad usage and 1 when the files cannot be written', async () => {
      const out = join(tempDir(), 'x');
      for (const args of [
        ['export', '--data-dir', dataDir, '--out', out],
        ['export', '--data-dir', dataDir, '--format', 'xlsx', '--out', out],
        ['export', '--data-dir', dataDir, '--format', 'csv', '--table', 'users', '--out', out],
        ['export', '--data-dir', dataDir, '--format', 'csv', '--from', 'yesterday', '--out', out],
        ['export', '--data-dir', dataDir, '--format', 'csv', '--from', '2026-02-01T00:00:00Z', '--to', '2026-01-01T00:00:00Z', '--out', out],
      ]) {
        const r = await runCli(args);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.stderr, args.join(' ')).not.toBe('');
      }
      expect(existsSync(out)).toBe(false);
      const file = join(tempDir(), 'a-file');
      writeFileSync(file, 'not a folder');
      const r = await runCli(['export', '--data-dir', dataDir, '--format', 'csv', '--out', file]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^csipose export: /);
      const none = await runCli(['export', '--data-dir', join(tempDir(), 'empty'), '--format', 'csv', '--out', join(tempDir(), 'o')]);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no store at/);
    });
  });

  describe('with the service running: through its admin endpoint', () => {
    let s: TestServer;
    let admin: string;
    beforeAll(async () => {
      s = await startServer({ dataDir });
      admin = await s.login();
    });
    afterAll(async () => {
      await s?.close();
    });

    it('asks the service and moves its files to --out, leaving no export folder behind', async () => {
      const out = join(tempDir(), 'svc');
      const to = new Date(T0 + 4 * 60_000).toISOString();
      const r = await runCli([
        'export',
        '--data-dir',
        dataDir,
        '--format',
        'parquet',
        '--table',
        'pose_frames',
        '--table',
        'pose_persons',
        '--to',
        to,
        '--out',
        out,
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readdirSync(out).sort()).toEqual(['pose_frames.parquet', 'pose_persons.parquet']);
      const files = listed(r.stdout);
      expect(files.get('pose_frames.parquet')).toMatchObject({ path: join(out, 'pose_frames.parquet'), rows: 5 });
      expect(files.get('pose_persons.parquet')?.rows).toBe(10);
      expect((await readBack(join(out, 'pose_frames.parquet'))).map((f) => f.frame_id)).toEqual([0n, 1n, 2n, 3n, 4n]);
      expect(readdirSync(join(dataDir, 'exports'))).toEqual([]);

      const csv = await runCli(['export', '--data-dir', dataDir, '--format', 'csv', '--table', 'alerts', '--out', out]);
      expect(csv.code).toBe(0);
      expect(readFileSync(join(out, 'alerts.csv'), 'utf8').trim().split('\n').length).toBe(11);
      const bad = await runCli(['export', '--data-dir', dataDir, '--format', 'csv', '--table', 'nope', '--out', out]);
      expect(bad.code).toBe(2);
    });

    it('POST /store/export writes one file per table into a fresh folder of <dataDir>/exports, admins only', async () => {
      const r = await s.api('POST', '/store/export', {
        token: admin,
        form: 'a',
        body: { format: 'csv', tables: ['alerts'], from: new Date(T0 + 8 * 60_000).toISOString() },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ format: 'csv', from: new Date(T0 + 8 * 60_000).toISOString(), to: null });
      expect(r.body.export_id).toMatch(/^[a-z0-9]+-[0-9a-f]{12}$/);
      expect(r.body.files).toHaveLength(1);
      const f = r.body.files[0];
      expect(f).toMatchObject({ table: 'alerts', file: 'alerts.csv', rows: 2 });
      expect(f.path).toBe(join(s.dataDir, 'exports', r.body.export_id, 'alerts.csv'));
      expect(readFileSync(f.path, 'utf8').trim().split('\n').length).toBe(3);
      const b = await s.api('POST', '/store/export', { token: admin, body: { format: 'parquet' } });
      expect(b.status).toBe(200);
      expect(b.body.data.files.map((x: { table: string }) => x.table)).toEqual(TABLES);

      const { key } = await s.apiKey(admin, 'operator');
      expect((await s.api('POST', '/store/export', { apiKey: key, body: { format: 'csv' } })).status).toBe(403);
      for (const [body, field] of [
        [{}, 'format'],
        [{ format: 'xlsx' }, 'format'],
        [{ format: 'csv', tables: ['users'] }, 'tables'],
        [{ format: 'csv', tables: 'alerts' }, 'tables'],
        [{ format: 'csv', from: 'soon' }, 'from'],
        [{ format: 'csv', from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'to'],
        [{ format: 'csv', path: '/etc' }, 'path'],
      ] as const) {
        const e = await s.api('POST', '/store/export', { token: admin, body });
        expect(e.status, JSON.stringify(body)).toBe(422);
        expect(e.body.error.details.field, JSON.stringify(body)).toBe(field);
      }
    });

    it('writes into <dataDir>/exports without --out, which queries through the service can read', async () => {
      const before = readdirSync(join(dataDir, 'exports'));
      const r = await runCli(['export', '--data-dir', dataDir, '--format', 'parquet', '--table', 'pose_frames']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(listed(r.stdout).get('pose_frames.parquet')).toMatchObject({ path: join(dataDir, 'exports', 'pose_frames.parquet'), rows: 10 });
      // The service's own folder for this export was moved out of and removed.
      expect(readdirSync(join(dataDir, 'exports')).sort()).toEqual([...before, 'pose_frames.parquet'].sort());
      const q = await s.api('POST', '/store/query', {
        token: admin,
        form: 'a',
        body: { sql: "SELECT count(*) AS n FROM read_parquet('exports/pose_frames.parquet')" },
      });
      expect(q.status, q.text).toBe(200);
      expect(q.body.rows).toEqual([[10]]);
    });
  });
});
