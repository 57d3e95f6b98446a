import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoseFrame } from '../../src/pose/types.js';
import { seededDataDir, storedFrame, tempDirs } from '../helpers/dataDir.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * `POST /store/query` against the real service: the byte cap on results (issue 17 item 18) and
 * the files a query may read, relative paths taken from the data directory (item 13). The
 * service runs in this process with the test runner's working directory (the repository), never
 * the data directory, so a relative path that works here works from any working directory.
 */

const HOUR = 3_600_000;
/** Whole seconds, three hours ago: a closed hour for the lake, inside the 30-day retention. */
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3 * HOUR;

const tempDir = tempDirs('csipose-storeq-');

/** Frame `k`, a second after frame k - 1, with one person. */
function frame(k: number): PoseFrame {
  const person = { slot: 0, confidence: 0.9, keypoints: new Float32Array(51), bbox: Float32Array.of(1, 2, 3, 4), trackId: k };
  return storedFrame(k, T0 + k * 1000, [person], { processingMs: 2 });
}

/** `<scratch>/data` holding a store of `n` frames. */
function seeded(n: number): Promise<string> {
  return seededDataDir(
    tempDir,
    Array.from({ length: n }, (_, k) => frame(k)),
  );
}

describe('POST /store/query: results are capped in bytes (storage.query_max_bytes)', () => {
  let s: TestServer;
  let admin: string;
  beforeAll(async () => {
    // DuckDB builds a chunk's 2,048 rows before it hands over any, and is interrupted only between
    // chunks: range(450)'s one chunk of 4.5 GB took 28 s on a quiet machine, and on CI's loaded run
    // the default 30 s timeout (storage.query_timeout_seconds) fired first and the answer was
    // 'timeout'. These cases are about the byte cap, so the timeout is set out of their way.
    s = await startServer({ config: { storage: { query_timeout_seconds: 170 } } });
    admin = await s.login();
  });
  afterAll(async () => {
    await s?.close();
  });

  // Each of these once took the service down: range(60) answered 500 (RangeError: Invalid string
  // length in JSON.stringify) and range(450) aborted the process (JavaScript heap out of memory).
  // (DuckDB itself builds 2,048 rows at a time, so the second holds about 4.5 GB for a moment.)
  for (const [n, form] of [
    [60, 'a'],
    [450, 'b'],
  ] as const) {
    it(`refuses SELECT repeat('x', 10000000) FROM range(${n}) with 422 naming the cap, and keeps serving`, async () => {
      const sql = `SELECT repeat('x', 10000000) AS s FROM range(${n})`;
      const r = await s.api('POST', '/store/query', { token: admin, form, body: { sql } });
      expect(r.status, r.text.slice(0, 300)).toBe(422);
      expect(r.text.length).toBeLessThan(10_000);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(r.body.error.details.query_error).toBe('too_large');
      expect(r.body.error.details.max_bytes).toBe(67_108_864);
      expect(r.body.error.message).toMatch(/larger than 67108864 bytes.*storage\.query_max_bytes/);
      expect((await s.api('GET', '/health')).status).toBe(200);
      const next = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: 'SELECT 42 AS answer' } });
      expect(next.status).toBe(200);
      expect(next.body).toMatchObject({ rows: [[42]], max_bytes: 67_108_864 });
    }, 180_000);
  }
});

describe('POST /store/query: the byte cap counts the rows exactly as they are sent', () => {
  let s: TestServer;
  let admin: string;
  beforeAll(async () => {
    s = await startServer({ config: { storage: { query_max_bytes: 1024 } } });
    admin = await s.login();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers rows whose JSON fits, refuses one row more, and the row cap still cuts first', async () => {
    // Each row is ["x...x"]: 104 bytes; the rows array of k rows is 2 + 104k + (k - 1) bytes.
    const sql = (k: number) => `SELECT repeat('x', 100) AS s FROM range(${k})`;
    const fits = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: sql(9) } });
    expect(fits.status, fits.text.slice(0, 300)).toBe(200);
    expect(JSON.stringify(fits.body.rows).length).toBe(946);
    expect(fits.body).toMatchObject({ row_count: 9, truncated: false, max_bytes: 1024 });

    const over = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: sql(10) } });
    expect(over.status).toBe(422);
    expect(over.body.error.details).toMatchObject({ query_error: 'too_large', max_bytes: 1024 });
    expect(over.body.error.message).toMatch(/larger than 1024 bytes/);

    // Multi-byte characters count as the UTF-8 bytes they are sent as: 9 rows of 100 'é' (200 bytes each) do not fit.
    const utf8 = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: `SELECT repeat('é', 100) AS s FROM range(9)` } });
    expect(utf8.status).toBe(422);

    const cut = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: sql(10), max_rows: 9 } });
    expect(cut.status).toBe(200);
    expect(cut.body).toMatchObject({ row_count: 9, truncated: true, max_rows: 9 });
  });
});

describe('POST /store/query: files of the data directory, relative paths taken from it', () => {
  let s: TestServer;
  let admin: string;
  let dataDir: string;
  const ask = async (sql: string) => await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql } });

  beforeAll(async () => {
    dataDir = await seeded(3);
    s = await startServer({ dataDir, config: { storage: { parquet_dir: 'lake' } } });
    admin = await s.login();
    await s.app.lake!.runOnce();
    expect(s.app.lake!.files().some((f) => f.startsWith('pose_frames/'))).toBe(true);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('reads the lake by the path relative to the data directory, and by the documented data/lake/... path', async () => {
    expect(process.cwd()).not.toBe(dataDir);
    for (const path of ['lake/pose_frames/**/*.parquet', './lake/pose_frames/**/*.parquet', 'data/lake/pose_frames/**/*.parquet']) {
      const r = await ask(
        `SELECT environment_id, count(*) AS n FROM read_parquet('${path}', hive_partitioning = true, hive_types = {'environment_id': VARCHAR}) GROUP BY ALL`,
      );
      expect(r.status, `${path}: ${r.text}`).toBe(200);
      expect(r.body.rows, path).toEqual([['lab', 3]]);
    }
    // FROM 'file' (DuckDB's replacement scan) and a list of files resolve alike.
    const file = s.app.lake!.files().find((f) => f.startsWith('pose_frames/'))!;
    expect((await ask(`SELECT count(*) FROM 'lake/${file}'`)).body.rows).toEqual([[3]]);
    expect((await ask(`SELECT count(*) FROM read_parquet(['lake/${file}', 'lake/${file}'])`)).body.rows).toEqual([[6]]);
    // A string that is not a file argument is left alone.
    expect((await ask(`SELECT 'lake/x' AS s`)).body.rows).toEqual([['lake/x']]);
  });

  it('reads what POST /store/export wrote, by its path relative to the data directory', async () => {
    const e = await s.api('POST', '/store/export', { token: admin, form: 'a', body: { format: 'parquet', tables: ['pose_frames'] } });
    expect(e.status, e.text).toBe(200);
    const r = await ask(`SELECT count(*) AS n FROM read_parquet('exports/${e.body.export_id}/pose_frames.parquet')`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.rows).toEqual([[3]]);
  });

  it('refuses every other file, relative or absolute, saying which folders a query may read', async () => {
    const outside = join(dataDir, '..', 'notes.csv');
    writeFileSync(outside, 'a,b\n1,2\n');
    // service.json holds this start's admin key: next to the store, yet out of reach.
    expect(existsSync(join(dataDir, 'service.json'))).toBe(true);
    for (const sql of [
      `SELECT * FROM read_csv('${outside}')`,
      `SELECT * FROM read_csv('../notes.csv')`,
      `SELECT * FROM read_text('service.json')`,
      `SELECT * FROM read_text('lake/../service.json')`,
      `SELECT * FROM read_text('data/service.json')`,
      `SELECT * FROM read_text('/etc/hostname')`,
    ]) {
      const r = await ask(sql);
      expect(r.status, sql).toBe(422);
      expect(r.body.error.details.query_error, sql).toBe('permission');
      expect(r.body.error.message, sql).toMatch(/disabled by configuration/);
      expect(r.body.error.message, sql).toContain(`${join(dataDir, 'exports')}/`);
      expect(r.body.error.message, sql).toContain(`${join(dataDir, 'lake')}/`);
      expect(r.body.error.message, sql).toContain(`relative paths are taken from the data directory ${dataDir}`);
    }
  });
});
