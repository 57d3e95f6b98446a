/**
 * Independent jobs (simulated scenarios) spread over worker threads and gathered in job order, so
 * that the result never depends on how many workers made it. Used by the training data generator
 * (`generateAll`, worker `genWorker.ts`) and by the refiner's training sets (`refinerData.ts`, worker
 * `refinerWorker.ts`).
 *
 * Protocol: the pool posts `{ index, job }`; the worker (`serveJobs`) answers `{ index, result }`,
 * with the result's buffers transferred rather than copied, or `{ index, error }`. Each worker gets
 * its next job when it answers, so a slow job never holds up the others.
 */
import type { MessagePort, Worker } from 'node:worker_threads';

/** What the pool posts to a worker. */
export interface PoolJob<J> {
  index: number;
  job: J;
}

/** What a worker posts back. */
export type PoolReply<R> = { index: number; result: R } | { index: number; error: string };

/** How `mapJobs` runs the jobs. */
export interface MapJobsOptions<J, R> {
  /** Worker threads; 0 runs every job in this thread with `run`. */
  workers: number;
  /** The job, in this thread (what the workers' `serveJobs` does too). */
  run: (job: J) => R;
  /** Starts one worker that calls `serveJobs`. */
  spawn: () => Worker;
  /** Names job `index` in an error message, e.g. `scenario 17`. */
  name: (index: number) => string;
  /** Called after each finished job. */
  onResult?: (done: number, total: number) => void;
}

/**
 * Runs every job and returns the results in job order.
 * @param jobs the jobs (structured-clonable)
 * @param o workers, the job in this thread, how to start a worker, names, progress
 * @returns one result per job
 * @throws Error `<name>: <worker error>` when a job fails (that worker is stopped)
 * @example
 * const out = await mapJobs(recipes, { workers: 2, run: simulate, spawn: () => new Worker(url), name: (i) => `scenario ${i}` });
 */
export async function mapJobs<J, R>(jobs: readonly J[], o: MapJobsOptions<J, R>): Promise<R[]> {
  const results: R[] = new Array(jobs.length);
  let done = 0;
  if (o.workers <= 0) {
    jobs.forEach((job, i) => {
      results[i] = o.run(job);
      o.onResult?.(++done, jobs.length);
    });
    return results;
  }
  let next = 0;
  const runWorker = () =>
    new Promise<void>((resolve, reject) => {
      const worker = o.spawn();
      const feed = () => {
        if (next >= jobs.length) {
          void worker.terminate().then(() => resolve());
          return;
        }
        const index = next++;
        worker.postMessage({ index, job: jobs[index]! } satisfies PoolJob<J>);
      };
      worker.on('message', (m: PoolReply<R>) => {
        if ('error' in m) {
          reject(new Error(`${o.name(m.index)}: ${m.error}`));
          void worker.terminate();
          return;
        }
        results[m.index] = m.result;
        o.onResult?.(++done, jobs.length);
        feed();
      });
      worker.on('error', reject);
      feed();
    });
  await Promise.all(Array.from({ length: Math.min(o.workers, jobs.length) }, runWorker));
  return results;
}

/**
 * The worker side: answers every `PoolJob` posted to `port` with `run(job)`.
 * @param port the worker's `parentPort`
 * @param run the job
 * @param transfer the buffers of a result to move to the pool instead of copying them
 * @example
 * if (parentPort) serveJobs(parentPort, (j: Job) => simulate(j), (r) => [r.features.buffer as ArrayBuffer]);
 */
export function serveJobs<J, R>(port: MessagePort, run: (job: J) => R, transfer: (result: R) => ArrayBuffer[] = () => []): void {
  port.on('message', (m: PoolJob<J>) => {
    let result: R;
    try {
      result = run(m.job);
    } catch (e) {
      port.postMessage({ index: m.index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies PoolReply<R>);
      return;
    }
    port.postMessage({ index: m.index, result } satisfies PoolReply<R>, transfer(result));
  });
}
