import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A small tmpfs a test can fill to the last byte, so that real writes fail with ENOSPC. */
export interface SmallDisk {
  /** Where it is mounted (a new temp directory). */
  dir: string;
  /** False where mounting was refused (no root): skip the tests then. */
  mounted: boolean;
  /** Why mounting was refused ('' when mounted). */
  why: string;
  /** Fills the file system to its last byte; returns the filler's path (remove it to make room). */
  fill(): string;
}

/**
 * Mounts a tmpfs of `size` on a new temp directory for the test file (call it at the top level:
 * it registers the `afterAll` that unmounts and removes it). Mounting needs root
 * (CAP_SYS_ADMIN), as CI has; without it `mounted` is false and a warning names `testFile` and why.
 * @param size the tmpfs size option, e.g. `4m`
 * @param testFile the test file's path, for the warning
 * @param opts `lazy`: unmount with `umount -l` (for a disk a server may still hold open)
 * @example
 * const disk = smallDisk('4m', 'test/store/storeFull.test.ts');
 * describe.skipIf(!disk.mounted)('a full disk', () => { ... const filler = disk.fill(); ... });
 */
export function smallDisk(size: string, testFile: string, opts: { lazy?: boolean; prefix?: string } = {}): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), opts.prefix ?? 'csipose-full-'));
  let mounted = false;
  let why = '';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    mounted = true;
  } catch (e) {
    why = String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim();
    console.warn(`${testFile} skipped: cannot mount a tmpfs to fill (needs root): ${why}`);
  }
  afterAll(() => {
    if (mounted) execFileSync('umount', opts.lazy ? ['-l', dir] : [dir]);
    rmdirSync(dir);
  });
  return {
    dir,
    mounted,
    why,
    fill() {
      const path = join(dir, `filler-${Math.random().toString(36).slice(2)}`);
      const fd = openSync(path, 'w');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (let size = chunk.length; size >= 1; size >>= 1) {
          for (;;) {
            try {
              writeSync(fd, chunk, 0, size);
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw e;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
      return path;
    },
  };
}
