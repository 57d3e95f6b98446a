/**
 * The worker pool of the training data generator and of the refiner's training sets: results in job order
 * whatever the workers and job times, buffers transferred, a failing job named in the error.
 * The workers run the compiled `serveJobs` (dist/training/ts, built by ensureBuilt('training')), as the real ones do.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { beforeAll, describe, expect, it } from 'vitest';
import { mapJobs } from '../../training/ts/workerPool.js';
import { ensureBuilt, repoRoot } from '../helpers/cli.js';

interface Job {
  x: number;
  /** Milliseconds the worker sleeps first, so that later jobs can finish earlier. */
  sleep: number;
  fail?: boolean;
}

/** The job: [x, x^2] in a Float64Array (its buffer is transferred back). */
const square = (j: Job): Float64Array => {
  if (j.fail) throw new Error(`cannot do ${j.x}`);
  return Float64Array.of(j.x, j.x * j.x);
};

/** A worker serving `square` through the compiled serveJobs. */
function spawn(): Worker {
  const pool = pathToFileURL(join(repoRoot, 'dist/training/ts/workerPool.js')).href;
  const source = `
    const { parentPort } = require('node:worker_threads');
    import(${JSON.stringify(pool)}).then(({ serveJobs }) => {
      serveJobs(parentPort, (j) => {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, j.sleep);
        if (j.fail) throw new Error('cannot do ' + j.x);
        return Float64Array.of(j.x, j.x * j.x);
      }, (r) => [r.buffer]);
    });`;
  return new Worker(source, { eval: true });
}

const jobs: Job[] = Array.from({ length: 9 }, (_, i) => ({ x: i + 1, sleep: (9 - i) * 5 }));
const expected = jobs.map((j) => [j.x, j.x * j.x]);

describe('worker pool', () => {
  beforeAll(() => ensureBuilt('training'), 120_000);

  it('in this thread: every job in order, progress after each', async () => {
    const seen: number[] = [];
    const out = await mapJobs(jobs, { workers: 0, run: square, spawn, name: (i) => `job ${i}`, onResult: (d, t) => seen.push(d / t) });
    expect(out.map((a) => Array.from(a))).toEqual(expected);
    expect(seen).toEqual(jobs.map((_, i) => (i + 1) / jobs.length));
  });

  it('on 1 and 3 workers: the same results in job order although later jobs finish first', async () => {
    for (const workers of [1, 3]) {
      let done = 0;
      const out = await mapJobs(jobs, { workers, run: square, spawn, name: (i) => `job ${i}`, onResult: (d) => (done = d) });
      expect(out.every((a) => a instanceof Float64Array)).toBe(true);
      expect(out.map((a) => Array.from(a))).toEqual(expected);
      expect(done).toBe(jobs.length);
    }
  });

  it('a failing job rejects with its name and the worker error', async () => {
    const bad = jobs.map((j, i) => (i === 4 ? { ...j, fail: true } : j));
    await expect(mapJobs(bad, { workers: 2, run: square, spawn, name: (i) => `job ${i}` })).rejects.toThrow(/^job 4: Error: cannot do 5/);
    await expect(mapJobs(bad, { workers: 0, run: square, spawn, name: (i) => `job ${i}` })).rejects.toThrow('cannot do 5');
  });
});
