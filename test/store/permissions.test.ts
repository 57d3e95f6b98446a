/**
 * The data directory and what the service writes there are its owner's only: the folder 0700,
 * the DuckDB file, its WAL (which DuckDB deletes at every checkpoint and creates again), exports,
 * users, keys, configuration and service.json 0600. A data directory and a store file left 0755
 * and 0644 by an earlier build are tightened at open; a shared folder (sticky, like /tmp) is not.
 * Real files, a real DuckDB, the real service on port 0.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { withServer } from '../helpers/server.js';

const scratch = mkdtempSync(join(tmpdir(), 'csipose-perm-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o7777;

/** Every file and folder under `dir`, with its mode. */
function modes(dir: string): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out.push([p, mode(p)]);
    if (statSync(p).isDirectory()) out.push(...modes(p));
  }
  return out;
}

/** A data directory and store file as an earlier build left them: 0755 and 0644. */
async function oldDataDir(name: string): Promise<{ dir: string; file: string }> {
  const dir = join(scratch, name);
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  const file = join(dir, 'csipose.duckdb');
  const inst = await DuckDBInstance.create(file);
  inst.closeSync();
  chmodSync(file, 0o644);
  return { dir, file };
}

// Each test starts from the usual umask, as a fresh `csipose serve` does.
let umask = 0;
beforeEach(() => {
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
});

describe("store files are the owner's only", () => {
  it('tightens the folder and the file at open; the WAL, recreated after each checkpoint, and exports are 0600', async () => {
    const { dir, file } = await oldDataDir('old');
    const exportsDir = join(dir, 'exports');
    mkdirSync(exportsDir);
    const store = await Store.open(file, { allowedDirectories: [exportsDir] });
    try {
      expect(mode(dir)).toBe(0o700);
      expect(mode(file)).toBe(0o600);
      await store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, 'a1', 'intrusion', 'high', 'lab')`, [new Date()]);
      expect(mode(`${file}.wal`)).toBe(0o600);
      await store.execute('CHECKPOINT');
      expect(existsSync(`${file}.wal`)).toBe(false);
      await store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, 'a2', 'intrusion', 'high', 'lab')`, [new Date()]);
      expect(mode(`${file}.wal`)).toBe(0o600);
      const out = join(exportsDir, 'alerts.parquet');
      expect(await store.copyTo('SELECT * FROM alerts', undefined, out, 'parquet')).toBe(2);
      expect(mode(out)).toBe(0o600);
    } finally {
      await store.close();
    }
  });

  it('leaves a shared folder (sticky bit, as /tmp) as it is', async () => {
    const shared = join(scratch, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const store = await Store.open(join(shared, 'csipose.duckdb'));
    try {
      expect(mode(shared)).toBe(0o1777);
      expect(mode(join(shared, 'csipose.duckdb'))).toBe(0o600);
    } finally {
      await store.close();
    }
  });
});

describe("the service's data directory", () => {
  it('is 0700 with every file in it 0600 (store, WAL, users, configuration, service.json, exports)', async () => {
    const { dir } = await oldDataDir('svc');
    await withServer({ dataDir: dir }, async (s) => {
      const token = await s.login();
      // Something of each kind: a configuration change, a stored row, an export.
      expect((await s.api('PUT', '/config', { token, body: { detection: { confidence_threshold: 0.4 } } })).status).toBe(200);
      await s.svc.store.execute(`INSERT INTO alerts (ts, alert_id, type, severity, environment_id) VALUES (?, 'a1', 'intrusion', 'high', 'default')`, [
        new Date(),
      ]);
      const exp = await s.api('POST', '/store/export', { token, body: { format: 'csv', tables: ['alerts'] } });
      expect(exp.status, exp.text).toBe(200);
      expect(mode(dir)).toBe(0o700);
      const found = modes(dir);
      const names = found.map(([p]) => p.slice(dir.length + 1));
      for (const want of ['csipose.duckdb', 'csipose.duckdb.wal', 'users.json', 'config.json', 'service.json']) expect(names).toContain(want);
      expect(names.some((n) => n.startsWith('exports/') && n.endsWith('.csv'))).toBe(true);
      const loose = found.filter(([p, m]) => (statSync(p).isDirectory() ? m !== 0o700 : m !== 0o600));
      expect(loose.map(([p, m]) => `${p} ${m.toString(8)}`)).toEqual([]);
    });
  });
});
