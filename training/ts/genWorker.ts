/**
 * Worker thread of `generateAll`: simulates the scenarios it is sent, one message each, and posts
 * their windows back (buffers transferred, not copied). Protocol: `workerPool.ts`.
 */
import { parentPort } from 'node:worker_threads';
import { runGenerateJob } from './dataset.js';
import { serveJobs } from './workerPool.js';

if (parentPort)
  serveJobs(parentPort, runGenerateJob, (data) => [
    data.features.buffer as ArrayBuffer,
    data.targets.buffer as ArrayBuffer,
    data.personCounts.buffer as ArrayBuffer,
  ]);
