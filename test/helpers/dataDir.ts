import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { Store } from '../../src/store/store.js';

/**
 * New temp directories for a test file, removed after its last test, or after each test with
 * `each` (call it at the top level of the file: it registers that `afterAll` or `afterEach`).
 * @param prefix the directories' name prefix, e.g. `csipose-export-`
 * @param when `each` to remove them after every test instead of after the last
 * @returns a function making one more directory and returning its path
 * @example
 * const tempDir = tempDirs('csipose-export-');
 * const out = join(tempDir(), 'csv');
 */
export function tempDirs(prefix: string, when: 'all' | 'each' = 'all'): () => string {
  const dirs: string[] = [];
  (when === 'each' ? afterEach : afterAll)(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}

/**
 * A service data directory (`<new temp dir>/data`) holding a real DuckDB store under the
 * service's file name `csipose.duckdb`: `frames` written through the real PoseSink and flushed,
 * then `more(store)` for the test's other rows (alerts, metrics), then the store closed.
 * @param tempDir makes the temp directory (see {@link tempDirs})
 * @returns the data directory's path, for `--data-dir` or `startServer({ dataDir })`
 * @example
 * const dataDir = await seededDataDir(tempDir, frames, (store) => store.recordMetrics(sample));
 */
export async function seededDataDir(tempDir: () => string, frames: Iterable<PoseFrame>, more?: (store: Store) => Promise<void>): Promise<string> {
  const dataDir = join(tempDir(), 'data');
  mkdirSync(dataDir);
  const store = await Store.open(join(dataDir, 'csipose.duckdb'));
  const sink = new PoseSink(store);
  for (const f of frames) sink.write(f);
  await sink.flush();
  await more?.(store);
  await store.close();
  return dataDir;
}

/**
 * A pose frame as the store and CLI tests write it: frame `k` at `time` from source `sim-1` in
 * environment `lab`, model `test-1`, CSI quality 0.5, 2.5 ms of processing; `init` overrides any
 * field.
 * @example seededDataDir(tempDir, [0, 1, 2].map((k) => storedFrame(k, T0 + k * 1000, [person(k)])))
 */
export function storedFrame(k: number, time: number, persons: PersonPose[], init: Partial<PoseFrame> = {}): PoseFrame {
  return { frameId: k, time, sourceId: 'sim-1', environmentId: 'lab', persons, processingMs: 2.5, modelVersion: 'test-1', csiQuality: 0.5, ...init };
}
