import type { PipelineDef } from '../src/engine/pipeline.js';

/**
 * `physics`: the physics front end (src/physics/, docs/physics.md) on the frames of every link of
 * an environment: `floorMap` alone (the source already decodes). Per link each packet is aligned
 * onto the empty room's static channel (the first 10 s of each link taken as the empty room, then
 * frozen) and every 16 packets of the primary link each link's last 64 packets are beamformed onto
 * the floor, fused, and searched for candidate people: one floor map per window.
 * `csipose run --pipeline physics --source "sim?people=1&seed=3&links=3" --fast --limit 20`.
 */
export const physics: PipelineDef = {
  name: 'physics',
  summary: 'floor maps of moving power from every link (aligned, empty room removed, beamformed, fused) with candidate people',
  stages: [['floorMap', {}]],
};
