import type { PipelineDef } from '../src/engine/pipeline.js';
import { HOP, WINDOW_FRAMES } from '../src/model/features.js';

/**
 * `process`: one CSI submission (POST /pose/process) to poses: sanitise -> window -> features ->
 * infer -> track -> activity, the last two switched on per request (`enable_tracking`; the
 * tracker reports a track from its first frame). Every submission runs with fresh operator
 * state: nothing leaks between requests.
 */
export const processDef: PipelineDef = {
  name: 'process',
  summary: 'one CSI submission to poses: sanitise, window, features, infer (+ track, activity when asked)',
  stages: [
    ['sanitize', { method: 'phasor', scope: 'packet' }],
    ['window', { size: WINDOW_FRAMES, hop: HOP }],
    ['features', {}],
    ['infer', { maxWaitMs: 0 }],
    ['track', { minHits: 1 }],
    ['activity', {}],
  ],
};
