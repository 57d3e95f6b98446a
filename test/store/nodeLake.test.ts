/**
 * A cluster's shared lake without the bus: store nodes' real DuckDB stores writing their parts of
 * one root (src/store/nodeLake.ts), read back as one store (src/store/lakeRoot.ts): each node's
 * rows count up to its commit marks, a room moved between nodes within an hour is counted once,
 * rows a node stored but did not commit are deleted when it next starts or loses the room, and
 * the open hour is rewritten at each commit.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PoseFrame } from '../../src/pose/types.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Store } from '../../src/store/store.js';
import { LakeRoot, lakeLayout, MANIFEST_FILE, nodeFolder } from '../../src/store/lakeRoot.js';
import { dataDirLakeId, NodeLake, RETIRED_GRACE_MS } from '../../src/store/nodeLake.js';
import { Lake } from '../../src/store/lake.js';
import { tempDirs } from '../helpers/dataDir.js';

const tempDir = tempDirs('csipose-nodelake-', 'each');
const HOUR = 3_600_000;
const H9 = Date.UTC(2026, 0, 5, 9);

function frame(k: number, time: number, env: string): PoseFrame {
  return {
    frameId: k,
    time,
    sourceId: 'sim-1',
    environmentId: env,
    persons: [
      {
        slot: 0,
        confidence: 0.8,
        keypoints: Float32Array.from({ length: 51 }, (_, j) => k + j),
        bbox: Float32Array.of(1, 2, 3, 4),
        trackId: 1,
      },
    ],
    alerts: k % 10 === 0 ? [{ alertId: `a-${env}-${time}`, type: 'fall_detection', severity: 'high', time, environmentId: env, confidence: 0.9 } as never] : [],
    processingMs: 1,
    modelVersion: 't',
    csiQuality: 1,
  };
}

/** A store node's data directory with its store open (allowed to write its folder of the root). */
async function node(root: string, name: string) {
  const dataDir = join(tempDir(), name);
  mkdirSync(dataDir, { recursive: true });
  const folder = nodeFolder(root, name);
  mkdirSync(folder, { recursive: true });
  const store = await Store.open(join(dataDir, 'csipose.duckdb'), { allowedDirectories: [folder] });
  const sink = new PoseSink(store);
  const write = async (frames: PoseFrame[]) => {
    for (const f of frames) sink.write(f);
    await sink.flush();
  };
  return { dataDir, store, sink, write, owner: dataDirLakeId(dataDir) };
}

const times = (from: number, n: number, step = 100) => Array.from({ length: n }, (_, i) => from + i * step);

describe('a shared lake of store nodes', () => {
  it('counts every frame once across two nodes that held a room in turn within an hour, up to each node’s commit', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    const b = await node(root, 'b');
    const lakeA = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    const lakeB = await NodeLake.open(b.store, { root, node: 'b', owner: b.owner });
    const reader = await LakeRoot.open(root);
    try {
      // a holds ward-1 for 100 frames, commits, stores 20 more it never commits (it dies).
      const first = times(H9 + 60_000, 120);
      await a.write(first.slice(0, 100).map((t, i) => frame(i, t, 'ward-1')));
      const ca = await lakeA.commit(() => 'held');
      expect(ca.committed.has('ward-1')).toBe(true);
      expect(ca.upTo.get('ward-1')).toBe(first[99]);
      await a.write(first.slice(100).map((t, i) => frame(100 + i, t, 'ward-1')));
      // A commit whose lease runs short while it writes: its files of ward-1 hold the 20 but are
      // not listed (as after a crash before the manifest), and readers count 100.
      let asked = 0;
      const cut = await lakeA.commit(() => (asked++ === 0 ? 'held' : 'late'));
      expect(cut.committed.has('ward-1')).toBe(false);
      expect(cut.written.filter((f) => f.includes('ward-1'))).toEqual([]);
      await reader.refresh();
      // A reader sees commits from its next refresh on (a serving node refreshes on a timer).
      const count = async (table: string, env = 'ward-1') => {
        await reader.refresh();
        return Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE environment_id = ?`, [env]))[0]!.n);
      };
      expect(await count('pose_frames')).toBe(100);
      expect(await count('pose_persons')).toBe(100);
      expect(await count('alerts')).toBe(10);
      // b takes the room over: the stream delivers from a's last acknowledged frame on; what
      // every node committed is skipped.
      expect(reader.committedUpTo('ward-1')).toBe(first[99]);
      const rest = times(first[100]!, 200);
      await b.write(rest.map((t, i) => frame(100 + i, t, 'ward-1')));
      await lakeB.commit(() => 'held');
      expect(await count('pose_frames')).toBe(300);
      await reader.refresh();
      const all = await reader.store.query<{ ms: number }>(`SELECT epoch_ms(ts) AS ms FROM pose_frames WHERE environment_id = 'ward-1' ORDER BY ts`);
      expect(all.map((r) => Number(r.ms))).toEqual([...first.slice(0, 100), ...rest]);
      // Both nodes have a file of that hour.
      const hour = /^pose_frames\/environment_id=ward-1\/date=2026-01-05\/hour=09\.c\d+\.parquet$/;
      expect(lakeA.listed().filter((f) => hour.test(f))).toHaveLength(1);
      expect(lakeB.listed().filter((f) => hour.test(f))).toHaveLength(1);
      for (const f of lakeB.listed()) expect(existsSync(join(nodeFolder(root, 'b'), f)), f).toBe(true);
      expect(new Set((await reader.store.query<{ store: string }>(`SELECT DISTINCT store FROM pose_frames`)).map((r) => r.store))).toEqual(new Set(['a', 'b']));

      // a starts again: its 20 uncommitted rows go from its store and its files.
      await lakeA.close();
      const again = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
      expect(Number((await a.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(100);
      const c = await again.commit(() => 'held');
      // Its hour is written again, as a new file: files are never replaced in place.
      const before = lakeA.listed().find((f) => hour.test(f))!;
      expect(c.written.filter((f) => hour.test(f))).toHaveLength(1);
      expect(c.written).not.toContain(before);
      expect(existsSync(join(nodeFolder(root, 'a'), before))).toBe(true); // kept for readers a while
      expect(await count('pose_frames')).toBe(300);
      expect(layoutOf(root)).toBe('nodes');
    } finally {
      await reader.close();
      for (const n of [a, b]) {
        await n.sink.close();
        await n.store.close();
      }
    }
  });

  it('deletes the rows of a room it no longer holds after its mark, leaves a late one for later, and writes the open hour at each commit', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    const lake = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    const reader = await LakeRoot.open(root);
    try {
      const now = Date.now();
      await a.write(times(now - 2000, 10).map((t, i) => frame(i, t, 'r1')));
      await a.write(times(now - 2000, 10).map((t, i) => frame(i, t, 'ward 2/b')));
      let held = new Set(['r1', 'ward 2/b']);
      await lake.commit((env) => (held.has(env) ? 'held' : 'gone'));
      await reader.refresh();
      const n = async (env: string) => {
        await reader.refresh();
        return Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames WHERE environment_id = ?`, [env]))[0]!.n);
      };
      expect([await n('r1'), await n('ward 2/b')]).toEqual([10, 10]);
      // More of both; the lease of 'ward 2/b' (an id a path must escape) is lost before the next commit.
      await a.write(times(now - 900, 5).map((t, i) => frame(10 + i, t, 'r1')));
      await a.write(times(now - 900, 5).map((t, i) => frame(10 + i, t, 'ward 2/b')));
      held = new Set(['r1']);
      const c = await lake.commit((env) => (held.has(env) ? 'held' : 'gone'));
      expect(c.committed.has('r1')).toBe(true);
      // Its rows past its mark are deleted: none of the frames waiting for this commit is committed
      // (acknowledging them would lose them: its next holder must store them).
      expect(c.committed.has('ward 2/b')).toBe(false);
      expect(c.trimmed).toBe(5 + 5 + 1); // frames, persons, the alert of frame 10
      expect([await n('r1'), await n('ward 2/b')]).toEqual([15, 10]);
      expect(Number((await a.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames WHERE environment_id = 'ward 2/b'`))[0]!.n)).toBe(10);
      // A room still held whose lease's renewal is late is left as it is for the next commit.
      await a.write(times(now - 300, 3).map((t, i) => frame(15 + i, t, 'r1')));
      const late = await lake.commit(() => 'late');
      expect(late.committed.has('r1')).toBe(false);
      expect(late.trimmed).toBe(0);
      expect(await n('r1')).toBe(15);
      expect((await lake.commit(() => 'held')).committed.has('r1')).toBe(true);
      expect(await n('r1')).toBe(18);
      const marks = (JSON.parse(readFileSync(join(nodeFolder(root, 'a'), MANIFEST_FILE), 'utf8')) as { marks: Array<{ environment_id: string }> }).marks;
      expect(marks.map((m) => m.environment_id)).toEqual(['r1', 'ward 2/b']);
    } finally {
      await reader.close();
      await a.sink.close();
      await a.store.close();
    }
  });

  it('reads every commit whole while a node commits many times a second, and deletes replaced files after their grace', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    let clock = Date.now();
    const lake = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner, now: () => clock });
    const reader = await LakeRoot.open(root);
    try {
      const t0 = Date.now() - 600_000;
      let k = 0;
      const add = (n: number) => a.write(Array.from({ length: n }, () => frame(k, t0 + 100 * k++, 'lab')));
      await add(2000);
      await lake.commit(() => 'held');
      const first = lake.listed();
      let stop = false;
      let commits = 0;
      const writer = (async () => {
        while (!stop) {
          await add(20);
          await lake.commit(() => 'held');
          commits++;
        }
      })();
      // A reader refreshes and counts meanwhile: every count is a whole commit's, never a file half
      // replaced (DuckDB read files replaced in place inconsistently: a third of these failed).
      const errors: string[] = [];
      let last = 0;
      let reads = 0;
      for (const end = Date.now() + 4000; Date.now() < end; reads++) {
        try {
          await reader.refresh();
          const [r] = await reader.store.query<{ n: number; d: number; p: number }>(
            `SELECT count(*) AS n, count(DISTINCT ts) AS d, (SELECT count(*) FROM pose_persons WHERE environment_id = 'lab') AS p FROM pose_frames WHERE environment_id = 'lab'`,
          );
          expect(Number(r!.n)).toBe(Number(r!.d));
          expect(Number(r!.n)).toBeGreaterThanOrEqual(last);
          last = Number(r!.n);
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      stop = true;
      await writer;
      expect(errors).toEqual([]);
      expect(commits).toBeGreaterThan(5);
      expect(reads).toBeGreaterThan(5);
      // The first commit's files were replaced, and stay for readers that listed them...
      const folder = nodeFolder(root, 'a');
      for (const f of first) expect(existsSync(join(folder, f)), f).toBe(true);
      // ...until the grace has passed.
      clock += RETIRED_GRACE_MS + 1000;
      await add(1);
      await lake.commit(() => 'held');
      for (const f of first) if (!lake.listed().includes(f)) expect(existsSync(join(folder, f)), f).toBe(false);
      for (const f of lake.listed()) expect(existsSync(join(folder, f)), f).toBe(true);
      await reader.refresh();
      expect(Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(k);
    } finally {
      await reader.close();
      await a.sink.close();
      await a.store.close();
    }
  }, 60_000);

  it('refuses a node folder that another data directory owns, and adopts a store’s rows at its first start', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    await a.write(times(H9, 5).map((t, i) => frame(i, t, 'r1')));
    const lake = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    // Adopted: committed at once, written at the first commit.
    expect(lake.committed('r1')).toBe(H9 + 400);
    await lake.commit(() => 'gone');
    const other = await node(join(tempDir(), 'elsewhere'), 'x');
    await expect(NodeLake.open(other.store, { root, node: 'a', owner: other.owner })).rejects.toThrow(/belongs to another store node's data directory/);
    const reader = await LakeRoot.open(root);
    try {
      expect(Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(5);
    } finally {
      await reader.close();
      for (const n of [a, other]) {
        await n.sink.close();
        await n.store.close();
      }
    }
  });

  it('reads an empty or missing root as empty tables, one node’s own lake as it is, and leaves out a node whose manifest is broken', async () => {
    const missing = join(tempDir(), 'none');
    const empty = await LakeRoot.open(missing);
    try {
      expect(Number((await empty.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(0);
      expect(empty.committedUpTo('r1')).toBe(-Infinity);
    } finally {
      await empty.close();
    }
    // A single process's lake (storage.parquet_dir): closed hours, no marks.
    const dir = tempDir();
    const lakeDir = join(dir, 'lake');
    mkdirSync(lakeDir);
    const store = await Store.open(join(dir, 'csipose.duckdb'), { allowedDirectories: [lakeDir] });
    const sink = new PoseSink(store);
    for (const [i, t] of times(H9, 7).entries()) sink.write(frame(i, t, 'lab'));
    await sink.flush();
    await new Lake(store, { dir: lakeDir, now: () => H9 + 3 * HOUR }).runOnce();
    await sink.close();
    await store.close();
    expect(lakeLayout(lakeDir)).toBe('single');
    const single = await LakeRoot.open(lakeDir);
    try {
      expect(Number((await single.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames WHERE environment_id = 'lab'`))[0]!.n)).toBe(7);
      expect(Number((await single.store.query<{ n: number }>(`SELECT count(*) AS n FROM tracks`))[0]!.n)).toBe(1);
    } finally {
      await single.close();
    }
    // A manifest that is not one refuses the node's start rather than guessing; readers leave that
    // node out and say so once.
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    const good = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    await a.write(times(H9, 4).map((t, i) => frame(i, t, 'lab')));
    await good.commit(() => 'held');
    const b = await node(root, 'b');
    writeFileSync(join(nodeFolder(root, 'b'), MANIFEST_FILE), 'not json\n');
    await expect(NodeLake.open(b.store, { root, node: 'b', owner: b.owner })).rejects.toThrow(/not a manifest/);
    const said: string[] = [];
    const reader = await LakeRoot.open(root, { onError: (e) => said.push(e.message) });
    try {
      await reader.refresh();
      expect(Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(4);
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/store=b.*not a manifest/);
    } finally {
      await reader.close();
      for (const n of [a, b]) {
        await n.sink.close();
        await n.store.close();
      }
    }
  });
});

const layoutOf = (root: string) => lakeLayout(root);
