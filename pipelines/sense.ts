import type { PipelineDef } from '../src/engine/pipeline.js';

/**
 * The sensing front end: clean the phase of each packet, gather 64-frame windows every 8 frames
 * (0.64 s at 100 Hz, a new window every 80 ms) and take a Doppler spectrum of each link in three
 * subcarrier groups. Decoding happens in the source (or a decoder stage before it).
 */
export const sense: PipelineDef = {
  name: 'sense',
  summary: 'sanitise phase, slide a window, Doppler spectrum per link and subcarrier group',
  stages: [
    ['sanitize', { method: 'phasor', scope: 'packet' }],
    ['window', { size: 64, hop: 8 }],
    ['doppler', { groups: 3 }],
  ],
};
