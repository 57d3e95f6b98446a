import type { PersonSpec } from '../../src/sim/scenario.js';

/** Seconds of empty room a floor map learns from before {@link WALKER} enters. */
export const LEARN = 3;

/**
 * The floor-map walker: a simulated person who enters once the room has been learned
 * ({@link LEARN} s) and walks a loop through it (test/operators/floorMap.test.ts,
 * test/physics/search.test.ts).
 */
export const WALKER: PersonSpec = {
  x: 1.5,
  y: 1.5,
  height: 1.75,
  enterAt: LEARN,
  script: [
    { at: LEARN + 3, action: 'walk', to: { x: 4.5, y: 3.5 }, speed: 0.8 },
    { at: LEARN + 8, action: 'walk', to: { x: 1.5, y: 3.5 }, speed: 0.8 },
    { at: LEARN + 12, action: 'walk', to: { x: 4.0, y: 1.2 }, speed: 0.8 },
  ],
};
