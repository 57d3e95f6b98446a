/**
 * Form B pages (`personPage`) against their definition: the rows matching the filter sorted by
 * (`seq`, `slot`), the page starting at the row `offset` places in, `limit` rows from there.
 * Checked for every offset over rows stored in key order (the sink's), stored out of it, and
 * with repeated keys, where the page is found by sorting instead of by position.
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { personPage, type HistoryFilter } from '../../src/store/history.js';
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
async function checkAllPages(store: Store, f: HistoryFilter, keysOnly = false): Promise<void> {
  const [{ n }] = await store.query<{ n: bigint }>(`SELECT count(*) AS n FROM pose_persons`);
  for (const limit of [1, 3, 50]) {
    for (let offset = 0; offset <= Number(n) + 1; offset++) {
      const want = await expected(store, f, offset, limit);
      const got = await personPage(store, f, offset, limit);
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

describe('personPage (Form B history pages)', () => {
  it('pages rows stored in key order by position, without sorting them, and answers as the definition does', async () => {
    await withStore(async (store) => {
      // Two environments interleaved, two persons a frame, some below the confidence floor.
      const sink = new PoseSink(store);
      for (let k = 0; k < 24; k++) {
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
      await sink.close();
      const query = vi.spyOn(store, 'query');
      await checkAllPages(store, ALL);
      await checkAllPages(store, { ...ALL, minConfidence: 0.5, from: T0 + 5 * 80, to: T0 + 18 * 80 });
      const sqls = query.mock.calls.map(([sql]) => sql);
      expect(sqls.length).toBeGreaterThan(0);
      // No page of rows in key order was found by sorting every key before it.
      expect(sqls.filter((sql) => /ORDER BY p\.seq, p\.slot LIMIT 1 OFFSET/.test(sql))).toEqual([]);
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
    });
  });
});
