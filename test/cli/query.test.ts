import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoseFrame } from '../../src/pose/types.js';
import { Store } from '../../src/store/store.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import { seededDataDir, storedFrame, tempDirs } from '../helpers/dataDir.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Lake } from '../../src/store/lake.js';
import { nodeFolder } from '../../src/store/lakeRoot.js';
import { dataDirLakeId, NodeLake } from '../../src/store/nodeLake.js';

/** Seconds-aligned, three hours ago: inside the service's 30-day retention. */
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3 * 3_600_000;

const tempDir = tempDirs('csipose-query-');

/** Frame `k`, a second after frame k - 1, with one person; odd frames in `lab`, even ones in `ward`. */
function frame(k: number): PoseFrame {
  const person = {
    slot: 0,
    confidence: 0.5 + k / 100,
    keypoints: Float32Array.from({ length: 51 }, (_, j) => k + j),
    bbox: Float32Array.of(1, 2, 3, 4),
    trackId: k,
  };
  return storedFrame(k, T0 + k * 1000, [person], { environmentId: k % 2 ? 'lab' : 'ward' });
}

/** A data directory with a store of 3 frames (one person each) and 2 alerts. */
function seeded(): Promise<string> {
  return seededDataDir(
    tempDir,
    Array.from({ length: 3 }, (_, k) => frame(k)),
    async (store) => {
      for (const k of [0, 1]) {
        await store.execute(
          `INSERT INTO alerts (ts, alert_id, type, severity, environment_id, confidence, metadata, actions_required) VALUES (?, ?, 'fall_detected', 'high', 'lab', 0.9, '{"k":1}', ['call, now', 'say "hi"'])`,
          [new Date(T0 + k * 1000), `al-${k}`],
        );
      }
    },
  );
}

/** A pid no process has: a child that has already exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

function staleServiceFile(dataDir: string): void {
  writeFileSync(
    join(dataDir, 'service.json'),
    JSON.stringify({ pid: deadPid(), url: 'http://127.0.0.1:9', started_at: new Date().toISOString(), api_key: 'x'.repeat(40), data_dir: dataDir }),
    { mode: 0o600 },
  );
}

const FRAMES_SQL = 'SELECT frame_id, environment_id, ts, person_count FROM pose_frames ORDER BY frame_id';
const PERSON_SQL = 'SELECT frame_id, keypoints, track_id FROM pose_persons ORDER BY frame_id LIMIT 1';
const ALERTS_SQL = 'SELECT alert_id, actions_required, metadata FROM alerts ORDER BY alert_id';

/** Parses CSV of our output (RFC 4180 quoting). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += ch;
  }
  return rows;
}

beforeAll(() => ensureBuilt(), 120_000);

describe('csipose query', () => {
  let dataDir: string;
  /** Outputs of the direct runs, compared with the runs through the service. */
  const direct = new Map<string, string>();

  beforeAll(async () => {
    dataDir = await seeded();
  });

  describe('with the service stopped: the file read directly', () => {
    it('prints a table, CSV and JSON, values as the store holds them', async () => {
      const table = await runCli(['query', '--data-dir', dataDir, FRAMES_SQL]);
      expect(table.stderr).toBe('');
      expect(table.code).toBe(0);
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^frame_id \| environment_id \| ts\s+\| person_count$/);
      expect(lines[1]).toMatch(/^-+-\+-[-+]+$/);
      expect(lines[2]).toContain(new Date(T0).toISOString());
      expect(lines.at(-1)).toBe('(3 rows)');
      direct.set('table', table.stdout);

      const csv = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', FRAMES_SQL]);
      expect(csv.code).toBe(0);
      expect(parseCsv(csv.stdout)).toEqual([
        ['frame_id', 'environment_id', 'ts', 'person_count'],
        ['0', 'ward', new Date(T0).toISOString(), '1'],
        ['1', 'lab', new Date(T0 + 1000).toISOString(), '1'],
        ['2', 'ward', new Date(T0 + 2000).toISOString(), '1'],
      ]);
      direct.set('csv', csv.stdout);

      const json = await runCli(['query', '--data-dir', dataDir, '--format', 'json', FRAMES_SQL]);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual(
        [0, 1, 2].map((k) => ({ frame_id: k, environment_id: k % 2 ? 'lab' : 'ward', ts: new Date(T0 + k * 1000).toISOString(), person_count: 1 })),
      );
      direct.set('json', json.stdout);

      // BLOBs as base64 (51 float32 little-endian), lists and JSON text, CSV quoting.
      const person = JSON.parse((await runCli(['query', '--data-dir', dataDir, '--format', 'json', PERSON_SQL])).stdout);
      const bytes = Buffer.from(person[0].keypoints, 'base64');
      expect(bytes.length).toBe(204);
      expect(bytes.readFloatLE(4 * 3)).toBe(3);
      const alerts = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', ALERTS_SQL]);
      expect(parseCsv(alerts.stdout)[1]).toEqual(['al-0', JSON.stringify(['call, now', 'say "hi"']), '{"k":1}']);
      direct.set('alerts', alerts.stdout);
      // Repeated column names stay apart in JSON objects.
      expect(JSON.parse((await runCli(['query', '--data-dir', dataDir, '--format', 'json', 'SELECT 1 AS a, 2 AS a'])).stdout)).toEqual([{ a: 1, a_2: 2 }]);
    });

    it('exits 1 with the message on stderr for bad SQL, a write, several statements or a network address', async () => {
      const cases: Array<[string, RegExp]> = [
        ['SELEC frame_id FROM pose_frames', /Parser Error/],
        ['SELECT * FROM no_such_table', /no_such_table/],
        ['DELETE FROM alerts', /only read statements/],
        ["INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (now(), 'x', 't', 'low', 'e')", /only read statements/],
        ['SELECT 1; DROP TABLE alerts', /one statement at a time/],
        [
          "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
          /requires the extension httpfs.*this store loads no extension: queries here read local files only, no network address/,
        ],
        ["SELECT * FROM read_parquet('s3://bucket/x.parquet')", /no network address/],
      ];
      for (const [sql, message] of cases) {
        const r = await runCli(['query', '--data-dir', dataDir, sql]);
        expect(r.code, sql).toBe(1);
        expect(r.stdout, sql).toBe('');
        expect(r.stderr, sql).toMatch(/^csipose query: /);
        expect(r.stderr, sql).toMatch(message);
      }
      const count = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', 'SELECT count(*) AS n FROM alerts']);
      expect(count.stdout).toBe('n\n2\n');
    });

    it('reads any file the user names, relative paths taken from the data directory wherever it runs', async () => {
      const own = join(tempDir(), 'notes.csv');
      writeFileSync(own, 'a,b\n1,x\n2,y\n');
      mkdirSync(join(dataDir, 'exports'), { recursive: true });
      writeFileSync(join(dataDir, 'exports', 'mine.csv'), 'a\n7\n');
      try {
        const abs = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', `SELECT sum(a) AS s FROM read_csv('${own}')`]);
        expect(abs.stderr).toBe('');
        expect(abs.stdout).toBe('s\n3\n');
        // The command runs in the repository: the relative path is the data directory's, also as data/...
        for (const path of ['exports/mine.csv', './exports/mine.csv', 'data/exports/mine.csv']) {
          const rel = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', `SELECT a FROM '${path}'`]);
          expect(rel.stderr, path).toBe('');
          expect(rel.stdout, path).toBe('a\n7\n');
        }
      } finally {
        rmSync(join(dataDir, 'exports'), { recursive: true, force: true });
      }
    });

    it('exits 2 for bad usage', async () => {
      for (const args of [
        ['query', '--data-dir', dataDir],
        ['query', '--data-dir', dataDir, '--format', 'xml', 'SELECT 1'],
        ['query', '--data-dir', dataDir, '--no-such-flag', 'SELECT 1'],
        ['query', '--data-dir', dataDir, 'SELECT 1', 'SELECT 2'],
        ['query', '--data-dir', dataDir, '  '],
      ]) {
        const r = await runCli(args);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.stderr, args.join(' ')).not.toBe('');
      }
    });

    it('exits 1 when there is no store, and ignores a service.json whose process has exited', async () => {
      const none = await runCli(['query', '--data-dir', join(tempDir(), 'nothing'), 'SELECT 1']);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no store at/);
      staleServiceFile(dataDir);
      try {
        const r = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', 'SELECT count(*) AS n FROM pose_frames']);
        expect(r.stderr).toBe('');
        expect(r.stdout).toBe('n\n3\n');
      } finally {
        rmSync(join(dataDir, 'service.json'));
      }
    });

    it('exits 1 when another process holds the file and no live service is found', async () => {
      const store = await Store.open(join(dataDir, 'csipose.duckdb'));
      staleServiceFile(dataDir);
      try {
        const r = await runCli(['query', '--data-dir', dataDir, 'SELECT 1']);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/locked by another process.*no running csipose service/);
      } finally {
        rmSync(join(dataDir, 'service.json'));
        await store.close();
      }
    });
  });

  describe('with the service running: through its admin endpoint', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startServer({ dataDir, config: { storage: { query_max_rows: 5, query_max_bytes: 4096, parquet_dir: 'lake' } } });
      await s.app.lake!.runOnce();
    });
    afterAll(async () => {
      await s?.close();
    });

    it('prints the same table, CSV and JSON as from the file', async () => {
      for (const [format, sql] of [
        ['table', FRAMES_SQL],
        ['csv', FRAMES_SQL],
        ['json', FRAMES_SQL],
        ['csv', ALERTS_SQL],
      ] as const) {
        const key = sql === ALERTS_SQL ? 'alerts' : format;
        const r = await runCli(['query', '--data-dir', dataDir, '--format', format, sql]);
        expect(r.stderr, key).toBe('');
        expect(r.code, key).toBe(0);
        expect(r.stdout, key).toBe(direct.get(key));
      }
    });

    it('went through the service: its row cap applies, and the command says the result was cut', async () => {
      const r = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', 'SELECT range AS i FROM range(10)']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('i\n0\n1\n2\n3\n4\n');
      expect(r.stderr).toMatch(/cut at 5 rows/);
    });

    it('went through the service: a result past its byte cap is refused, naming the cap', async () => {
      const r = await runCli(['query', '--data-dir', dataDir, "SELECT repeat('x', 1000) AS s FROM range(5)"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^csipose query: the result is larger than 4096 bytes as JSON \(limit: storage\.query_max_bytes\)/);
    });

    it('reads the lake and the export folder by paths relative to the data directory, and nothing else', async () => {
      for (const path of ['lake/pose_frames/**/*.parquet', 'data/lake/pose_frames/**/*.parquet']) {
        const r = await runCli(['query', '--data-dir', dataDir, '--format', 'csv', `SELECT count(*) AS n FROM read_parquet('${path}')`]);
        expect(r.stderr, path).toBe('');
        expect(r.stdout, path).toBe('n\n3\n');
      }
      const own = join(tempDir(), 'notes.csv');
      writeFileSync(own, 'a\n1\n');
      const r = await runCli(['query', '--data-dir', dataDir, `SELECT * FROM read_csv('${own}')`]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/disabled by configuration: queries here read the store and files under .*\/exports\/, .*\/lake\/ only/);
    });

    it('exits 1 with the service message for bad SQL, a write, several statements or another file', async () => {
      const cases: Array<[string, RegExp]> = [
        ['SELEC 1', /Parser Error/],
        ['DELETE FROM alerts', /only read statements/],
        ['SELECT 1; DELETE FROM alerts', /one statement at a time/],
        ["SELECT * FROM read_csv('/etc/passwd')", /disabled by configuration/],
        ["SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')", /disabled by configuration/],
      ];
      for (const [sql, message] of cases) {
        const r = await runCli(['query', '--data-dir', dataDir, sql]);
        expect(r.code, sql).toBe(1);
        expect(r.stderr, sql).toMatch(message);
      }
      const bad = await runCli(['query', '--data-dir', dataDir, '--format', 'yaml', 'SELECT 1']);
      expect(bad.code).toBe(2);
    });
  });
});

describe('csipose query --lake', () => {
  /** A cluster's lake root written by two store nodes' real stores: `lab` by a, `ward` by b, one frame of b past its mark. */
  async function sharedLake(): Promise<string> {
    const root = join(tempDir(), 'lake');
    for (const [node, env, n] of [
      ['a', 'lab', 3],
      ['b', 'ward', 4],
    ] as const) {
      const dataDir = join(tempDir(), node);
      mkdirSync(dataDir, { recursive: true });
      mkdirSync(nodeFolder(root, node), { recursive: true });
      const store = await Store.open(join(dataDir, 'csipose.duckdb'), { allowedDirectories: [nodeFolder(root, node)] });
      try {
        const sink = new PoseSink(store);
        const lake = await NodeLake.open(store, { root, node, owner: dataDirLakeId(dataDir) });
        for (let k = 0; k < n; k++) sink.write({ ...frame(k), environmentId: env });
        await sink.flush();
        await lake.commit(() => 'held');
        // One more stored and written, but its commit's lease ran short: not counted.
        sink.write({ ...frame(n), environmentId: env });
        await sink.flush();
        let asked = 0;
        await lake.commit(() => (asked++ === 0 ? 'held' : 'late'));
        await sink.close();
      } finally {
        await store.close();
      }
    }
    return root;
  }

  it("reads every store node's committed partitions, without a store or a service", async () => {
    const root = await sharedLake();
    const r = await runCli([
      'query',
      '--lake',
      root,
      '--format',
      'json',
      'SELECT store, environment_id, count(*) AS n, count(DISTINCT frame_id) AS d FROM pose_frames GROUP BY ALL ORDER BY 1',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { store: 'a', environment_id: 'lab', n: 3, d: 3 },
      { store: 'b', environment_id: 'ward', n: 4, d: 4 },
    ]);
    const persons = await runCli(['query', '--lake', root, '--format', 'csv', 'SELECT count(*) AS n FROM pose_persons']);
    expect(persons.stdout).toBe('n\n7\n');
    const marks = await runCli(['query', '--lake', root, '--format', 'csv', 'SELECT store, environment_id FROM lake_commits ORDER BY 1']);
    expect(marks.stdout).toBe('store,environment_id\na,lab\nb,ward\n');
    // Relative paths are taken from the lake root.
    const rel = await runCli(['query', '--lake', root, '--format', 'csv', "SELECT node FROM read_json('store=a/committed.json')"]);
    expect(rel.stdout).toBe('node\na\n');
  });

  it('reads one process’s own lake, and says what is wrong with a missing folder or a bad query', async () => {
    const none = await runCli(['query', '--lake', join(tempDir(), 'nothing'), 'SELECT 1']);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no lake at/);
    const empty = tempDir();
    const r = await runCli(['query', '--lake', empty, '--format', 'csv', 'SELECT count(*) AS n FROM alerts']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('n\n0\n');
    expect(r.stderr).toMatch(/no lake partitions yet/);
    const bad = await runCli(['query', '--lake', empty, 'SELECT * FROM nowhere']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/nowhere/);
    const write = await runCli(['query', '--lake', empty, 'DROP VIEW pose_frames']);
    expect(write.code).toBe(1);
    expect((await runCli(['query', '--lake', '', 'SELECT 1'])).code).toBe(2);
    // A single process's parquet_dir: closed hours of one node, no marks.
    const dataDir = await seeded();
    const lakeDir = join(dataDir, 'lake');
    mkdirSync(lakeDir);
    const store = await Store.open(join(dataDir, 'csipose.duckdb'), { allowedDirectories: [lakeDir] });
    try {
      await new Lake(store, { dir: lakeDir }).runOnce();
    } finally {
      await store.close();
    }
    const own = await runCli(['query', '--lake', lakeDir, '--format', 'csv', 'SELECT environment_id, count(*) AS n FROM pose_frames GROUP BY 1 ORDER BY 1']);
    expect(own.stdout).toBe('environment_id,n\nlab,1\nward,2\n');
  });
});

describe('POST /store/query', () => {
  let s: TestServer;
  let admin: string;
  beforeAll(async () => {
    s = await startServer({ dataDir: await seeded(), config: { storage: { query_max_rows: 50, query_timeout_seconds: 2 } } });
    admin = await s.login();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers admins in both forms: columns with DuckDB types, rows as arrays, counts and time', async () => {
    const b = await s.api('POST', '/store/query', { token: admin, body: { sql: 'SELECT frame_id, ts, keypoints FROM pose_persons ORDER BY frame_id' } });
    expect(b.status, b.text).toBe(200);
    expect(b.body.success).toBe(true);
    const d = b.body.data;
    expect(d.columns).toEqual([
      { name: 'frame_id', type: 'BIGINT' },
      { name: 'ts', type: 'TIMESTAMP' },
      { name: 'keypoints', type: 'BLOB' },
    ]);
    expect(d.rows.length).toBe(3);
    expect(d.rows[1][0]).toBe(1);
    expect(d.rows[1][1]).toBe(new Date(T0 + 1000).toISOString());
    expect(Buffer.from(d.rows[1][2], 'base64').length).toBe(204);
    expect(d).toMatchObject({ row_count: 3, truncated: false, max_rows: 50 });
    expect(typeof d.execution_time_ms).toBe('number');
    const a = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: 'SELECT 42 AS answer' } });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ columns: [{ name: 'answer', type: 'INTEGER' }], rows: [[42]], row_count: 1, truncated: false });
  });

  it('refuses anyone but an admin', async () => {
    for (const role of ['viewer', 'operator'] as const) {
      const { key } = await s.apiKey(admin, role);
      const r = await s.api('POST', '/store/query', { apiKey: key, body: { sql: 'SELECT 1' } });
      expect(r.status, role).toBe(403);
      expect(r.body.error.code).toBe('AUTHORIZATION_ERROR');
    }
    expect((await s.api('POST', '/store/query', { body: { sql: 'SELECT 1' } })).status).toBe(401);
    const { key } = await s.apiKey(admin, 'admin');
    expect((await s.api('POST', '/store/query', { apiKey: key, body: { sql: 'SELECT 1' } })).status).toBe(200);
  });

  it('refuses writes, several statements and every other file or address with a clear 422, never a 500', async () => {
    const exportsDir = join(s.dataDir, 'exports');
    const cases: Array<[string, string, RegExp]> = [
      ['DELETE FROM alerts', 'not_read_only', /only read statements/],
      ["UPDATE alerts SET severity = 'low'", 'not_read_only', /only read statements/],
      ['CREATE TABLE x AS SELECT 1', 'not_read_only', /only read statements/],
      ['DROP TABLE alerts', 'not_read_only', /only read statements/],
      [`COPY alerts TO '${exportsDir}/leak.csv'`, 'not_read_only', /only read statements/],
      [`ATTACH '${exportsDir}/other.duckdb' AS other`, 'not_read_only', /only read statements/],
      ['SET enable_external_access = true', 'not_read_only', /only read statements/],
      [`EXPORT DATABASE '${exportsDir}/db'`, 'not_read_only', /only read statements/],
      ['EXPLAIN ANALYZE DELETE FROM alerts', 'not_read_only', /only read statements/],
      [`EXPLAIN ANALYZE COPY alerts TO '${exportsDir}/leak.csv'`, 'not_read_only', /only read statements/],
      ['SELECT 1; DELETE FROM alerts', 'multiple_statements', /one statement at a time: the text holds 2 statements/],
      ["SELECT * FROM read_text('/etc/passwd')", 'permission', /Cannot access file "\/etc\/passwd".*disabled by configuration/],
      ["SELECT * FROM read_csv('/etc/passwd')", 'permission', /disabled by configuration/],
      ["SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')", 'permission', /disabled by configuration/],
      ["SELECT * FROM read_parquet('/tmp/*.parquet')", 'permission', /disabled by configuration/],
      ['SELEC 1', 'syntax', /Parser Error/],
      ['SELECT * FROM no_such_table', 'query', /Table with name no_such_table does not exist/],
      ['SELECT ?::INTEGER', 'query', /parameters/],
    ];
    for (const [sql, kind, message] of cases) {
      for (const form of ['a', 'b'] as const) {
        const r = await s.api('POST', '/store/query', { token: admin, form, body: { sql } });
        expect(r.status, `${sql} (${form})`).toBe(422);
        expect(r.body.error.code).toBe('VALIDATION_ERROR');
        expect(r.body.error.message, sql).toMatch(message);
        expect(r.body.error.details.query_error, sql).toBe(kind);
        if (form === 'b') expect(r.body.error.details.field).toBe('sql');
      }
    }
    const count = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: 'SELECT count(*) FROM alerts' } });
    expect(count.body.rows).toEqual([[2]]);
    // Refused before DuckDB binds anything: nothing appeared in the folder the store may write.
    expect(readdirSync(exportsDir)).toEqual([]);
    // EXPLAIN of a read is a read; the lake and export folders are the service's own and readable.
    expect((await s.api('POST', '/store/query', { token: admin, body: { sql: 'EXPLAIN SELECT * FROM alerts' } })).status).toBe(200);
    expect((await s.api('POST', '/store/query', { token: admin, body: { sql: `SELECT * FROM glob('${exportsDir}/*')` } })).status).toBe(200);
  });

  it('checks the body', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'sql'],
      [{ sql: 7 }, 'sql'],
      [{ sql: 'SELECT 1', max_rows: 0 }, 'max_rows'],
      [{ sql: 'SELECT 1', max_rows: 1.5 }, 'max_rows'],
      [{ sql: 'SELECT 1', params: [] }, 'params'],
    ];
    for (const [body, field] of cases) {
      const r = await s.api('POST', '/store/query', { token: admin, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.error.details.field).toBe(field);
    }
    expect((await s.api('POST', '/store/query', { token: admin, rawBody: '{"sql":' })).status).toBe(400);
    expect((await s.api('POST', '/store/query', { token: admin, rawBody: JSON.stringify({ sql: `SELECT '${'x'.repeat(70_000)}'` }) })).status).toBe(413);
  });

  it('cuts the rows at max_rows, and never beyond storage.query_max_rows', async () => {
    const ask = async (body: Record<string, unknown>) => (await s.api('POST', '/store/query', { token: admin, form: 'a', body })).body;
    expect(await ask({ sql: 'SELECT range AS i FROM range(10)', max_rows: 3 })).toMatchObject({
      rows: [[0], [1], [2]],
      row_count: 3,
      truncated: true,
      max_rows: 3,
    });
    expect(await ask({ sql: 'SELECT range AS i FROM range(3)', max_rows: 3 })).toMatchObject({ row_count: 3, truncated: false });
    const big = await ask({ sql: 'SELECT range AS i FROM range(100000)', max_rows: 1_000_000 });
    expect(big).toMatchObject({ row_count: 50, truncated: true, max_rows: 50 });
    expect(big.rows.at(-1)).toEqual([49]);
    expect(await ask({ sql: 'SELECT range AS i FROM range(50)' })).toMatchObject({ row_count: 50, truncated: false });
  });

  it('interrupts a query that runs past storage.query_timeout_seconds, and the next one runs', async () => {
    const r = await s.api('POST', '/store/query', {
      token: admin,
      form: 'a',
      body: { sql: 'SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1' },
    });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.details.query_error).toBe('timeout');
    expect(r.body.error.message).toMatch(/ran longer than 2 s and was interrupted/);
    const next = await s.api('POST', '/store/query', { token: admin, form: 'a', body: { sql: 'SELECT count(*) AS n FROM pose_frames' } });
    expect(next.status).toBe(200);
    expect(next.body.rows).toEqual([[3]]);
  });
});
