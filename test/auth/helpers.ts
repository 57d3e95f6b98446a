import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temp directory under os.tmpdir(); `cleanup()` removes it. */
export function tempDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-auth-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A clock tests move by hand. */
export function fakeClock(start = Date.UTC(2025, 0, 15, 12, 0, 0)): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}
