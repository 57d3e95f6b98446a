/**
 * Worker thread of the live-room benchmark: simulates one session and writes its capture
 * (`captureSession`), so that the main thread stays free to read the service's WebSocket.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { captureSession } from './capture.js';
import type { SessionSpec } from './plan.js';

const { spec, dir } = workerData as { spec: SessionSpec; dir: string };
const c = captureSession(spec, dir);
parentPort!.postMessage(c);
