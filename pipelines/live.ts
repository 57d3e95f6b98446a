import type { PipelineDef } from '../src/engine/pipeline.js';
import { HOP, WINDOW_FRAMES } from '../src/model/features.js';

/**
 * `live`: CSI frames to tracked poses with activities and alerts, the default of `csipose serve`.
 * links (the environment's links joined by time; the primary link's frames go on) -> sanitise ->
 * window (the model's WINDOW_FRAMES, every HOP frames) -> features -> infer -> track -> activity
 * -> alerts. The service runs exactly these stages (`pipelines/build.ts`), with its configuration
 * as their live parameters (`pipelines/settings.ts`) and its site's radios for `links`.
 */
export const live: PipelineDef = {
  name: 'live',
  summary: 'links, sanitise, window, features, infer (ONNX), track, activity, alerts: CSI to tracked poses',
  stages: [
    ['links', {}],
    ['sanitize', { method: 'phasor', scope: 'packet' }],
    ['window', { size: WINDOW_FRAMES, hop: HOP }],
    ['features', {}],
    ['infer', {}],
    ['track', {}],
    ['activity', {}],
    ['alerts', {}],
  ],
};
