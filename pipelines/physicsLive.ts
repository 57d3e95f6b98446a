import type { PipelineDef } from '../src/engine/pipeline.js';

/**
 * `physics-live`: CSI frames to tracked poses through the physics front end and a v3 refiner:
 * links (every site link's frames go on; per-link rate, loss, lag and state for the status and
 * the dashboard) -> floorMap (every link of the site aligned, the empty room removed, beamformed onto the floor,
 * fused, candidates with Doppler) -> refine (each candidate's last 6.4 s through the refiner:
 * person or not, pelvis, skeleton, activity, fall) -> track -> activity -> alerts. The service runs
 * it in place of `live` when its model (`neural_network.model_path`) is a csipose-pose-v3 refiner
 * (`pipelines/build.ts`), with the site's radios and room from its configuration.
 */
export const physicsLive: PipelineDef = {
  name: 'physics-live',
  summary: 'links, floorMap, refine (ONNX v3), track, activity, alerts: CSI to tracked poses through the physics front end',
  stages: [
    ['links', { pass: 'site' }],
    ['floorMap', {}],
    ['refine', {}],
    ['track', {}],
    ['activity', {}],
    ['alerts', {}],
  ],
};
