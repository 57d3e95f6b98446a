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
import { COMMITTED_FILE, LakeRoot, lakeLayout, nodeFolder } from '../../src/store/lakeRoot.js';
import { dataDirLakeId, NodeLake } from '../../src/store/nodeLake.js';
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
      const ca = await lakeA.commit(() => true);
      expect(ca.committed.has('ward-1')).toBe(true);
      expect(ca.upTo.get('ward-1')).toBe(first[99]);
      await a.write(first.slice(100).map((t, i) => frame(100 + i, t, 'ward-1')));
      // A commit whose lease runs short while it writes: the files hold the 20, the marks do not
      // (as after a crash between the two), and readers count 100, as the marks say.
      let asked = 0;
      const cut = await lakeA.commit(() => asked++ === 0);
      expect(cut.committed.has('ward-1')).toBe(false);
      expect(cut.written).toContain('pose_frames/environment_id=ward-1/date=2026-01-05/hour=09.parquet');
      await reader.refresh();
      const count = async (table: string, env = 'ward-1') =>
        Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE environment_id = ?`, [env]))[0]!.n);
      expect(await count('pose_frames')).toBe(100);
      expect(await count('pose_persons')).toBe(100);
      expect(await count('alerts')).toBe(10);
      // b takes the room over: the stream delivers from a's last acknowledged frame on; what
      // every node committed is skipped.
      expect(await reader.committedUpTo('ward-1')).toBe(first[99]);
      const rest = times(first[100]!, 200);
      await b.write(rest.map((t, i) => frame(100 + i, t, 'ward-1')));
      await lakeB.commit(() => true);
      expect(await count('pose_frames')).toBe(300);
      const all = await reader.store.query<{ ms: number }>(`SELECT epoch_ms(ts) AS ms FROM pose_frames WHERE environment_id = 'ward-1' ORDER BY ts`);
      expect(all.map((r) => Number(r.ms))).toEqual([...first.slice(0, 100), ...rest]);
      // Both nodes have a file of that hour.
      for (const n of ['a', 'b']) expect(existsSync(join(nodeFolder(root, n), 'pose_frames/environment_id=ward-1/date=2026-01-05/hour=09.parquet'))).toBe(true);
      expect(new Set((await reader.store.query<{ store: string }>(`SELECT DISTINCT store FROM pose_frames`)).map((r) => r.store))).toEqual(new Set(['a', 'b']));

      // a starts again: its 20 uncommitted rows go from its store and its files.
      await lakeA.close();
      const again = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
      expect(Number((await a.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(100);
      const c = await again.commit(() => true);
      expect(c.written).toContain('pose_frames/environment_id=ward-1/date=2026-01-05/hour=09.parquet');
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

  it('deletes the rows of a room it no longer holds after its mark, and writes the open hour at each commit', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    const lake = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    const reader = await LakeRoot.open(root);
    try {
      const now = Date.now();
      await a.write(times(now - 2000, 10).map((t, i) => frame(i, t, 'r1')));
      await a.write(times(now - 2000, 10).map((t, i) => frame(i, t, 'r2')));
      let held = new Set(['r1', 'r2']);
      await lake.commit((env) => held.has(env));
      await reader.refresh();
      const n = async (env: string) =>
        Number((await reader.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames WHERE environment_id = ?`, [env]))[0]!.n);
      expect([await n('r1'), await n('r2')]).toEqual([10, 10]);
      // More of both; r2's lease is lost before the next commit.
      await a.write(times(now - 900, 5).map((t, i) => frame(10 + i, t, 'r1')));
      await a.write(times(now - 900, 5).map((t, i) => frame(10 + i, t, 'r2')));
      held = new Set(['r1']);
      const c = await lake.commit((env) => held.has(env));
      expect(c.committed.has('r1')).toBe(true);
      expect(c.committed.has('r2')).toBe(true); // nothing of it left after its mark
      expect(c.trimmed).toBe(5 + 5 + 1); // frames, persons, the alert of frame 10
      expect([await n('r1'), await n('r2')]).toEqual([15, 10]);
      expect(Number((await a.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames WHERE environment_id = 'r2'`))[0]!.n)).toBe(10);
      const marks = readFileSync(join(nodeFolder(root, 'a'), COMMITTED_FILE), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { environment_id: string });
      expect(marks.map((m) => m.environment_id)).toEqual(['r1', 'r2']);
    } finally {
      await reader.close();
      await a.sink.close();
      await a.store.close();
    }
  });

  it('refuses a node folder that another data directory owns, and adopts a store’s rows at its first start', async () => {
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    await a.write(times(H9, 5).map((t, i) => frame(i, t, 'r1')));
    const lake = await NodeLake.open(a.store, { root, node: 'a', owner: a.owner });
    // Adopted: committed at once, written at the first commit.
    expect(lake.committed('r1')).toBe(H9 + 400);
    await lake.commit(() => false);
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

  it('reads an empty or missing root as empty tables, and one node’s own lake as it is', async () => {
    const missing = join(tempDir(), 'none');
    const empty = await LakeRoot.open(missing);
    try {
      expect(Number((await empty.store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_frames`))[0]!.n)).toBe(0);
      expect(await empty.committedUpTo('r1')).toBe(-Infinity);
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
    // A marks file that is not one refuses the node's start rather than guessing.
    const root = join(tempDir(), 'lake');
    const a = await node(root, 'a');
    writeFileSync(join(nodeFolder(root, 'a'), COMMITTED_FILE), 'not json\n');
    await expect(NodeLake.open(a.store, { root, node: 'a', owner: a.owner })).rejects.toThrow();
    await a.sink.close();
    await a.store.close();
  });
});

const layoutOf = (root: string) => lakeLayout(root);
