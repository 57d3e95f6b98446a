/**
 * The store on a full disk: a real DuckDB file on a small tmpfs filled to the last byte, so
 * DuckDB's own writes fail with ENOSPC as they would on a full data disk (no injected failure).
 * Mounting needs root (CAP_SYS_ADMIN), as CI has; without it the tests are skipped, saying why.
 *
 * - `system_metrics` samples are kept and written once there is room again, in order, none lost
 *   up to the recorder's bound (beyond it the oldest are given up, counted and reported).
 * - The store's health reports the failure from the first failed write until the rows that
 *   failed are written, whatever other writes succeed meanwhile, and says `unhealthy` once rows
 *   are given up.
 */
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsRecorder } from '../../src/store/metricsRecorder.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Store, StoreError, type SystemMetricsSample } from '../../src/store/store.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { smallDisk } from '../helpers/fullDisk.js';

const T0 = Date.UTC(2026, 0, 5, 12);
const { dir: mnt, mounted, fill } = smallDisk('4m', 'test/store/storeFull.test.ts', { prefix: 'csipose-full-' });

function sample(i: number): SystemMetricsSample {
  return {
    time: T0 + i * 10_000,
    framesPerSecond: 100,
    averageLatencyMs: 20,
    cpuUsage: 10,
    memoryUsage: 5,
    processingQueueSize: 0,
    errorRate: 0,
    activePersons: 1,
    errorCount: i,
  };
}

function frame(k: number): PoseFrame {
  const keypoints = new Float32Array(51).fill(k);
  return {
    frameId: k,
    time: T0 + k * 80,
    sourceId: 'sim',
    environmentId: 'lab',
    persons: [0, 1, 2].map((slot) => ({ slot, trackId: slot + 1, confidence: 0.9, keypoints, bbox: Float32Array.of(1, 2, 3, 4) })),
    processingMs: 5,
    modelVersion: 'm',
    csiQuality: 1,
  };
}

describe.skipIf(!mounted)('a full disk (tmpfs filled to the last byte)', () => {
  let store: Store;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(mnt, 'store-'));
    store = await Store.open(join(dir, 'csipose.duckdb'));
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const stored = async () =>
    (await store.query<{ ts: Date; error_count: number }>('SELECT ts, error_count FROM system_metrics ORDER BY ts')).map((r) => [
      r.ts.getTime(),
      r.error_count,
    ]);

  it('keeps system_metrics samples while writes fail and writes them all, in order, once there is room', async () => {
    const errors: StoreError[] = [];
    const recorder = new MetricsRecorder(store, { onError: (e) => void errors.push(e) });
    await recorder.record(sample(0));
    expect(await stored()).toEqual([[T0, 0]]);
    // No WAL to write into (a checkpoint removes it), and not a byte free: every write fails.
    await store.execute('CHECKPOINT');
    const filler = fill();
    try {
      for (const i of [1, 2, 3]) await recorder.record(sample(i));
      expect(recorder.stats).toMatchObject({ written: 1, pending: 3, dropped: 0, failedWrites: 3 });
      expect(errors.map((e) => e.message)).toEqual(
        Array(3).fill(expect.stringMatching(/metrics sample not written, \d kept for retry: .*No space left on device/)),
      );
      const h = store.health();
      expect(h.status).toBe('degraded');
      expect(h.last_error).toMatch(/^metrics: .*No space left on device/);
      // Another write succeeding (one that writes nothing) does not make the waiting samples healthy.
      await store.execute('DELETE FROM alerts WHERE ts < ?', [new Date(0)]);
      expect(store.health()).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/No space left on device/) });
    } finally {
      unlinkSync(filler);
    }
    await recorder.record(sample(4));
    expect(recorder.stats).toMatchObject({ written: 5, pending: 0, dropped: 0 });
    expect(await stored()).toEqual([0, 1, 2, 3, 4].map((i) => [T0 + i * 10_000, i]));
    expect(store.health().status).toBe('healthy');
    expect(store.health().last_error).toBeUndefined();
    await recorder.close();
  });

  it('gives the oldest samples up beyond its bound, reports them, and the store says unhealthy until a write succeeds', async () => {
    await store.execute('DELETE FROM system_metrics');
    const errors: StoreError[] = [];
    const recorder = new MetricsRecorder(store, { maxPending: 2, onError: (e) => void errors.push(e) });
    await store.execute('CHECKPOINT');
    const filler = fill();
    try {
      for (const i of [10, 11, 12]) await recorder.record(sample(i));
      expect(recorder.stats).toMatchObject({ written: 0, pending: 2, dropped: 1 });
      expect(errors.some((e) => /1 metrics sample\(s\) from .* given up: 2 already wait/.test(e.message))).toBe(true);
      expect(store.health().status).toBe('unhealthy');
    } finally {
      unlinkSync(filler);
    }
    await recorder.record(sample(13));
    expect(await stored()).toEqual([11, 12, 13].map((i) => [T0 + i * 10_000, i]));
    expect(store.health().status).toBe('healthy');
    await recorder.close();
  });

  it('a failing pose sink keeps the store degraded while its rows wait, although other writes succeed', async () => {
    const sink = new PoseSink(store, { maxDelayMs: 0, retryDelayMs: 60_000 });
    for (let k = 0; k < 5; k++) sink.write(frame(k));
    await sink.flush();
    expect(sink.stats.frames).toBe(5);
    await store.execute('CHECKPOINT');
    const filler = fill();
    try {
      for (let k = 5; k < 10; k++) sink.write(frame(k));
      await sink.flush();
      expect(sink.stats).toMatchObject({ frames: 5, pending: 20, failedFlushes: 1 });
      expect(store.health()).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/^pose sink: .*No space left on device/) });
      // Before: the empty DELETE committing cleared the store's last error, and health said healthy.
      await store.execute('DELETE FROM alerts WHERE ts < ?', [new Date(0)]);
      expect(store.health()).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/^pose sink: .*No space left on device/) });
    } finally {
      unlinkSync(filler);
    }
    await sink.flush();
    expect(sink.stats).toMatchObject({ frames: 10, pending: 0, dropped: 0 });
    expect(store.health().status).toBe('healthy');
    await sink.close();
  });
});
