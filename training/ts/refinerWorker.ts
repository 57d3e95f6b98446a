/**
 * Worker thread of `writeRefinerData`: simulates the scenarios it is sent through the front end,
 * one message each, and posts their frames back (buffers transferred). Protocol: `workerPool.ts`.
 */
import { parentPort } from 'node:worker_threads';
import { refinerBuffers, runRefinerJob } from './refinerData.js';
import { serveJobs } from './workerPool.js';

if (parentPort) serveJobs(parentPort, runRefinerJob, refinerBuffers);
