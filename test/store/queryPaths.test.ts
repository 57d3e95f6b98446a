import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataDirPaths, rewriteFilePaths } from '../../src/store/sqlPaths.js';
import { Store } from '../../src/store/store.js';
import { tempDirs } from '../helpers/dataDir.js';

const tempDir = tempDirs('csipose-qpaths-');

describe('rewriteFilePaths: relative file paths of ad-hoc SQL taken from the data directory', () => {
  const r = (sql: string) => rewriteFilePaths(sql, dataDirPaths('/srv/data'));

  it('rewrites positional arguments of file functions, lists of them, and FROM / JOIN files', () => {
    expect(r("SELECT * FROM read_parquet('lake/pose_frames/**/*.parquet', hive_partitioning = true)")).toBe(
      "SELECT * FROM read_parquet('/srv/data/lake/pose_frames/**/*.parquet', hive_partitioning = true)",
    );
    expect(r("select * from READ_CSV_AUTO('./exports/a.csv')")).toBe("select * from READ_CSV_AUTO('/srv/data/exports/a.csv')");
    expect(r("SELECT * FROM read_parquet(['exports/a.parquet', 'exports/b.parquet'])")).toBe(
      "SELECT * FROM read_parquet(['/srv/data/exports/a.parquet', '/srv/data/exports/b.parquet'])",
    );
    expect(r("SELECT * FROM 'exports/a.parquet' a JOIN 'exports/b.csv' b USING (k)")).toBe(
      "SELECT * FROM '/srv/data/exports/a.parquet' a JOIN '/srv/data/exports/b.csv' b USING (k)",
    );
    expect(r("SELECT * FROM glob('lake/*') UNION ALL SELECT file FROM parquet_metadata('lake/x.parquet')")).toBe(
      "SELECT * FROM glob('/srv/data/lake/*') UNION ALL SELECT file FROM parquet_metadata('/srv/data/lake/x.parquet')",
    );
    // A quote in the name stays escaped; `..` is resolved, so the folder check sees where it leads.
    expect(r("SELECT * FROM read_csv('it''s.csv')")).toBe("SELECT * FROM read_csv('/srv/data/it''s.csv')");
    expect(r("SELECT * FROM read_text('lake/../service.json')")).toBe("SELECT * FROM read_text('/srv/data/service.json')");
  });

  it('takes data/... (the data directory by its own name) from the folder that holds it', () => {
    expect(r("SELECT * FROM read_parquet('data/lake/x.parquet')")).toBe("SELECT * FROM read_parquet('/srv/data/lake/x.parquet')");
    const root = join(tempDir(), 'data');
    mkdirSync(join(root, 'data'), { recursive: true });
    // Unless the data directory has an entry of that name.
    expect(dataDirPaths(root)('data/x.csv')).toBe(join(root, 'data', 'x.csv'));
  });

  it('leaves every other string alone: values, options, other calls, escape and dollar strings, comments', () => {
    for (const sql of [
      "SELECT 'lake/x' AS s",
      "SELECT * FROM pose_frames WHERE environment_id = 'lake/x'",
      "SELECT * FROM read_csv('/abs/a.csv', delim = '/', columns = {'lake/a': 'VARCHAR'})",
      "SELECT * FROM read_parquet(concat('lake/', 'x.parquet'))",
      "SELECT * FROM read_csv(E'lake/a.csv')",
      'SELECT * FROM read_csv($$lake/a.csv$$)',
      "SELECT * FROM read_csv('~/a.csv')",
      "SELECT * FROM read_csv('https://example.com/a.csv')",
      "SELECT * FROM read_parquet('s3://bucket/a.parquet')",
      "-- read_csv('lake/a.csv')\nSELECT 1",
      "/* read_csv('lake/a.csv') /* nested */ read_csv('lake/b.csv') */ SELECT 1",
      'SELECT "read_csv" FROM t',
      "SELECT * FROM read_csv('')",
    ]) {
      expect(r(sql), sql).toBe(sql);
    }
  });
});

describe('Store.sql and Store.sqlJson: byte cap and file paths', () => {
  it('writes the same rows as JSON text as sql gives as values, and counts their bytes exactly', async () => {
    const store = await Store.open(':memory:');
    try {
      const sql = `SELECT range AS i, 'é"\\' || range AS s, [range, NULL] AS l, {'a': range} AS o, NULL AS n FROM range(3000)`;
      const values = await store.sql(sql);
      const json = await store.sqlJson(sql);
      expect(json.rows_json).toBe(JSON.stringify(values.rows));
      expect(json.bytes).toBe(Buffer.byteLength(json.rows_json));
      expect(json).toMatchObject({ row_count: 3000, truncated: false, columns: values.columns });
      // The cap at exactly that size passes; one byte less refuses, in both forms.
      expect((await store.sqlJson(sql, { maxBytes: json.bytes })).bytes).toBe(json.bytes);
      await expect(store.sqlJson(sql, { maxBytes: json.bytes - 1 })).rejects.toMatchObject({ kind: 'too_large' });
      await expect(store.sql(sql, { maxBytes: json.bytes - 1 })).rejects.toMatchObject({ kind: 'too_large' });
      expect((await store.sqlJson('SELECT 1 WHERE false', { maxBytes: 2 })).rows_json).toBe('[]');
      // The store still answers after a refusal.
      expect((await store.sql('SELECT 42 AS x')).rows).toEqual([[42]]);
    } finally {
      await store.close();
    }
  });

  it('takes relative paths from the folder of the database file and says what it may read when it refuses', async () => {
    const dataDir = join(tempDir(), 'data');
    const exports = join(dataDir, 'exports');
    mkdirSync(exports, { recursive: true });
    writeFileSync(join(exports, 'a.csv'), 'x\n5\n');
    writeFileSync(join(dataDir, 'secret.txt'), 'no');
    const store = await Store.open(join(dataDir, 'csipose.duckdb'), { allowedDirectories: [exports] });
    try {
      expect(process.cwd()).not.toBe(dataDir);
      expect((await store.sql("SELECT x FROM read_csv('exports/a.csv')")).rows).toEqual([[5]]);
      const refused = await store.sql("SELECT * FROM read_text('secret.txt')").catch((e: unknown) => e);
      expect(refused).toMatchObject({ kind: 'permission' });
      expect((refused as Error).message).toContain(`disabled by configuration: queries here read the store and files under ${exports}/ only`);
      expect((refused as Error).message).toContain(`relative paths are taken from the data directory ${dataDir}`);
    } finally {
      await store.close();
    }
  });

  it('with the root allowed (csipose query on the file) reads any local file, but no URL and no extension', async () => {
    const dataDir = join(tempDir(), 'data');
    const elsewhere = join(tempDir(), 'b.csv');
    writeFileSync(elsewhere, 'y\n8\n');
    const pre = await Store.open(join(dataDir, 'csipose.duckdb'));
    await pre.close();
    const store = await Store.open(join(dataDir, 'csipose.duckdb'), { readOnly: true, allowedDirectories: ['/'] });
    try {
      expect((await store.sql(`SELECT y FROM read_csv('${elsewhere}')`)).rows).toEqual([[8]]);
      for (const url of ['http://127.0.0.1:9/x.csv', 's3://bucket/x.csv']) {
        const e = await store.sql(`SELECT * FROM read_csv('${url}')`).catch((x: unknown) => x);
        expect(e, url).toMatchObject({ kind: 'permission' });
        expect((e as Error).message, url).toMatch(/this store loads no extension: queries here read local files only, no network address/);
        expect((e as Error).message, url).not.toMatch(/INSTALL/);
      }
    } finally {
      await store.close();
    }
  });
});
