/**
 * Form B pages (`personPage`) against their definition: the rows matching the filter sorted by
 * (`seq`, `slot`), the page starting at the row `offset` places in, `limit` rows from there.
 * Checked for every offset over rows stored in key order (the sink's), stored out of it, and
 * with repeated keys; by the page index of a store on a file (counted once per filter, brought up
 * to date with rows appended since, made again after other writes) and without one
 * (`personPageByPosition`, for stores in memory: found by position, or by sorting when the rows
 * are out of key order).
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { personPage, personPageByPosition, type HistoryFilter } from '../../src/store/history.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Store } from '../../src/store/store.js';
import { tempDirs } from '../helpers/dataDir.js';

const T0 = Date.parse('2026-11-20T10:00:00.000Z');
const tempDir = tempDirs('csipose-history-page-', 'each');

/** One stored person: its key, environment, confidence and frame id (which names it). */
interface Row {
  seq: number;
  slot: number;
  env: string;
  conf: number;
  frame: number;
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await Store.open(join(tempDir(), 'pose.duckdb'));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Stores `rows` in the order given (their storage order), one statement each. */
async function insert(store: Store, rows: readonly Row[]): Promise<void> {
  for (const r of rows) {
    await store.execute(
      `INSERT INTO pose_persons (ts, environment_id, frame_id, slot, person_id, confidence, bbox_x, bbox_y, bbox_w, bbox_h, keypoints, seq)
       VALUES (?, ?, ?, ?, ?, ?, 0, 0, 1, 1, ?, ?)`,
      [new Date(T0 + r.frame * 80), r.env, r.frame, r.slot, r.slot, r.conf, new Uint8Array(204).fill(r.frame & 255), r.seq],
    );
  }
}

/** The page by definition, as (seq, slot, frame) triples, and the total. */
async function expected(store: Store, f: HistoryFilter, offset: number, limit: number): Promise<{ total: number; keys: string[] }> {
  const rows = await store.query<{ seq: bigint; slot: number; frame_id: bigint }>(
    `SELECT seq, slot, frame_id FROM pose_persons WHERE environment_id = ? AND ts BETWEEN ? AND ? AND confidence >= ? ORDER BY seq, slot`,
    [f.environmentId, new Date(f.from), new Date(f.to), f.minConfidence],
  );
  const key = (r: { seq: bigint; slot: number }) => [Number(r.seq), r.slot] as const;
  const first = rows[offset];
  if (!first) return { total: rows.length, keys: [] };
  const [s, l] = key(first);
  const page = rows.filter((r) => key(r)[0] > s || (key(r)[0] === s && key(r)[1] >= l)).slice(0, limit);
  return { total: rows.length, keys: page.map((r) => `${r.seq}|${r.slot}|${r.frame_id}`) };
}

/** Every offset (and one past the end) at several page sizes gives the page by definition. */
async function checkAllPages(store: Store, f: HistoryFilter, keysOnly = false, page = personPage): Promise<void> {
  const [{ n }] = await store.query<{ n: bigint }>(`SELECT count(*) AS n FROM pose_persons`);
  for (const limit of [1, 3, 50]) {
    for (let offset = 0; offset <= Number(n) + 1; offset++) {
      const want = await expected(store, f, offset, limit);
      const got = await page(store, f, offset, limit);
      expect(got.total, `total at offset ${offset}, limit ${limit}`).toBe(want.total);
      const keys = got.persons.map((p) => `${p.seq}|${p.person.slot}|${p.frameId}`);
      // With repeated keys the rows of one key come in no defined order: compare keys only.
      const strip = (k: string) => k.split('|').slice(0, 2).join('|');
      if (keysOnly) expect(keys.map(strip), `offset ${offset}, limit ${limit}`).toEqual(want.keys.map(strip));
      else expect(keys, `offset ${offset}, limit ${limit}`).toEqual(want.keys);
    }
  }
}

const ALL: HistoryFilter = { environmentId: 'a', from: T0, to: T0 + 3_600_000, minConfidence: 0 };

/** Frames `from` to `to - 1` through a sink: two environments interleaved, two persons a frame, some below the confidence floor. */
function writeFrames(sink: PoseSink, from: number, to: number): void {
  for (let k = from; k < to; k++) {
    const kp = new Float32Array(51).fill(k);
    const person = (slot: number, confidence: number) => ({ slot, confidence, keypoints: kp, bbox: Float32Array.of(0, 0, 1, 1) });
    sink.write({
      frameId: k,
      time: T0 + k * 80,
      sourceId: 's',
      environmentId: k % 3 === 0 ? 'b' : 'a',
      persons: [person(0, 0.9), person(1, k % 4 === 0 ? 0.2 : 0.8)],
      processingMs: 1,
      modelVersion: 'm',
      csiQuality: 1,
    });
  }
}

/** A store holding frames 0-23 written through a sink, which `fn` may write more through. */
async function withFrames(fn: (store: Store, sink: PoseSink) => Promise<void>): Promise<void> {
  await withStore(async (store) => {
    const sink = new PoseSink(store);
    try {
      writeFrames(sink, 0, 24);
      await sink.flush();
      await fn(store, sink);
    } finally {
      await sink.close();
    }
  });
}

/** The statements `store.query` ran while `fn` ran. */
async function statements(store: Store, fn: () => Promise<void>): Promise<string[]> {
  const query = vi.spyOn(store, 'query');
  try {
    await fn();
    return query.mock.calls.map(([sql]) => sql);
  } finally {
    query.mockRestore();
  }
}

/** The passes that count a filter's rows by ranges (a page index made). */
const passes = (sqls: readonly string[]) => sqls.filter((sql) => /GROUP BY r ORDER BY r/.test(sql)).length;
/** Pages found by sorting every matching key before them (personPageSorted). */
const fullSorts = (sqls: readonly string[]) =>
  sqls.filter((sql) => /ORDER BY p\.seq, p\.slot LIMIT 1 OFFSET/.test(sql) && !/p\.seq BETWEEN \$lo AND \$hi/.test(sql));

const PART: HistoryFilter = { ...ALL, minConfidence: 0.5, from: T0 + 5 * 80, to: T0 + 18 * 80 };

describe('personPage (Form B history pages)', () => {
  it('counts each filter once, reads every page of it from that index, and answers as the definition does', async () => {
    await withFrames(async (store) => {
      const sqls = await statements(store, async () => {
        await checkAllPages(store, ALL);
        await checkAllPages(store, PART);
      });
      // Hundreds of pages, two filters: two passes over the rows, no page found by sorting.
      expect(passes(sqls)).toBe(2);
      expect(fullSorts(sqls)).toEqual([]);
    });
  });

  it('keeps the index while rows are appended in storage order, counting them in at the next read', async () => {
    await withFrames(async (store, sink) => {
      const sqls = await statements(store, async () => {
        await checkAllPages(store, ALL);
        writeFrames(sink, 24, 40);
        await sink.flush();
        await checkAllPages(store, ALL);
        writeFrames(sink, 40, 41);
        await sink.flush();
        await checkAllPages(store, { ...ALL });
      });
      expect(passes(sqls)).toBe(1);
      // The rows appended since were counted alone, twice.
      expect(sqls.filter((sql) => /p\.seq > \$after AND p\.seq <= \$through/.test(sql))).toHaveLength(2);
    });
  });

  it('makes the index again after rows are deleted or stored by SQL, and answers as the definition does', async () => {
    await withFrames(async (store) => {
      const sqls = await statements(store, async () => {
        await checkAllPages(store, ALL);
        await store.execute(`DELETE FROM pose_persons WHERE frame_id IN (4, 5, 11)`);
        await checkAllPages(store, ALL);
        // A row stored below the keys already there (an import, a merged file).
        await insert(store, [{ seq: 5, slot: 0, env: 'a', conf: 0.9, frame: 1 }]);
        await checkAllPages(store, ALL);
      });
      expect(passes(sqls)).toBe(3);
    });
  });

  it('gives the same pages for rows stored out of key order (a clock set back, a merged file)', async () => {
    await withStore(async (store) => {
      const rows: Row[] = [];
      for (let k = 0; k < 15; k++) for (const slot of [0, 1]) rows.push({ seq: 1000 + 10 * k, slot, env: 'a', conf: 0.9, frame: k });
      // Stored as three runs: the middle run first, then the last, then the first, and the last run backwards.
      const order = [...rows.slice(10, 20), ...rows.slice(20).reverse(), ...rows.slice(0, 10)];
      await insert(store, order);
      await checkAllPages(store, ALL);
      await checkAllPages(store, ALL, false, personPageByPosition);
    });
  });

  it('gives the same pages when keys repeat (two persons in one slot of a frame)', async () => {
    await withStore(async (store) => {
      const rows: Row[] = [];
      for (let k = 0; k < 12; k++) {
        rows.push({ seq: 1000 + 10 * k, slot: 0, env: 'a', conf: 0.9, frame: k });
        rows.push({ seq: 1000 + 10 * k, slot: k % 3 === 0 ? 0 : 1, env: 'a', conf: 0.9, frame: 100 + k });
      }
      await insert(store, rows);
      await checkAllPages(store, ALL, true);
      await checkAllPages(store, ALL, true, personPageByPosition);
    });
  });
});

describe('personPageByPosition (pages without an index: stores in memory, over lake files)', () => {
  it('pages rows stored in key order by position, without sorting them, and answers as the definition does', async () => {
    await withFrames(async (store) => {
      const sqls = await statements(store, async () => {
        await checkAllPages(store, ALL, false, personPageByPosition);
        await checkAllPages(store, PART, false, personPageByPosition);
      });
      expect(sqls.length).toBeGreaterThan(0);
      expect(fullSorts(sqls)).toEqual([]);
    });
  });
});

describe('Store.poseMark (what a reader that keeps counts checks)', () => {
  it('stays through appends above every key, and moves with any other write', async () => {
    await withStore(async (store) => {
      const m0 = store.poseMark()!;
      expect(m0).toEqual({ writes: 0, seq: 0 });
      const sink = new PoseSink(store);
      writeFrames(sink, 0, 3);
      await sink.flush();
      // A metrics sample is an append to another table: the mark stays.
      await store.recordMetrics({
        time: T0,
        framesPerSecond: 10,
        averageLatencyMs: 5,
        cpuUsage: 1,
        memoryUsage: 1,
        processingQueueSize: 0,
        errorRate: 0,
        activePersons: 2,
      });
      const m1 = store.poseMark()!;
      expect(m1.writes).toBe(0);
      const [{ hi }] = await store.query<{ hi: bigint }>(`SELECT max(seq) AS hi FROM pose_persons`);
      expect(m1.seq).toBe(Number(hi));
      // An append that says it adds keys below the highest: counted as another write.
      await store.withWriter(() => undefined, { personSeq: [m1.seq - 10, m1.seq + 5] });
      expect(store.poseMark()).toEqual({ writes: 1, seq: m1.seq });
      await store.execute(`DELETE FROM pose_persons WHERE frame_id = 2`);
      const m2 = store.poseMark()!;
      expect(m2.writes).toBe(2);
      expect(m2.seq).toBeLessThan(m1.seq);
      await sink.close();
    });
  });

  it('is undefined for a store in memory (its tables may be views over files)', async () => {
    const store = await Store.open(':memory:');
    try {
      expect(store.poseMark()).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
