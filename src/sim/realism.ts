/**
 * How much of a real room the simulator reproduces: the `realism` option of SimOptions.
 *
 * Two named presets:
 * - `ideal` (the default, today's stream bit for bit): an empty box with flat walls, floor and
 *   ceiling reflecting once, isotropic antennas, a static channel that never changes, bodies that
 *   only scatter.
 * - `room`: what a real room adds (docs/simulator.md gives the physics and sources of each figure):
 *   furniture along the walls and clutter on them as static scatterers placed from the seed;
 *   second-order reflections; bodies shadowing the paths that cross them; vertical half-wave dipole
 *   antennas; per-chain phase and gain offsets that drift, and a per-link device clock with an
 *   offset and a skew; a static channel that wanders (scatterer reflectivities drifting over
 *   minutes, small clutter moved by air, a door opening and closing as events).
 *
 * Every effect is one field below; an object takes its unset fields from its `preset` (default
 * `ideal`), so `{ shadowLossDb: 12 }` is the ideal room with shadowing only, and
 * `{ preset: 'room', door: false }` the room without its door. Everything is drawn from the
 * simulator's seed, from streams of its own, so the same seed and options give the same stream and
 * people move exactly as in the ideal room.
 */

import type { AntennaPatternKind } from './antenna.js';

/** Named realism presets. */
export type RealismPreset = 'ideal' | 'room';

export interface RealismOptions {
  /** Preset the unset fields come from; default 'ideal'. */
  preset?: RealismPreset;
  /** Highest order of wall, floor and ceiling reflections (image method): 1 or 2. Ideal 1, room 2. */
  reflectionOrder?: 1 | 2;
  /**
   * Furniture items (sofa, wardrobe, shelves, desk...) standing along the walls, each a static
   * point scatterer 0.1-0.35 m from its wall, 0.3-1.2 m high, cross-section log-uniform in
   * 0.2-2 m^2; 0..24. Ideal 0, room 8.
   */
  furniture?: number;
  /** Clutter on the walls (frames, lamps, sockets, plants), cross-section 0.01-0.1 m^2; 0..48. Ideal 0, room 12. */
  clutter?: number;
  /** A door in one wall (0.85 m leaf opening into the room) that opens and closes as events. Ideal false, room true. */
  door?: boolean;
  /** Mean time between door movements (exponential), seconds, 10..86400. Room 300. */
  doorMeanIntervalS?: number;
  /**
   * Loss of a path passing through the axis of a body, dB, 0..40 (0 = no shadowing). Ideal 0,
   * room 12 (measured human blockage at 3-11 GHz reaches 15 dB and more; knife-edge diffraction
   * gives 6 dB at the shadow's edge, where the profile puts half of this).
   */
  shadowLossDb?: number;
  /** Element pattern of both arrays (antenna.ts). Ideal 'isotropic', room 'dipole' (vertical). */
  antennaPattern?: AntennaPatternKind;
  /** A random phase per RF chain, fixed for the session (each power-up of the PLL). Ideal false, room true. */
  chainPhaseRandom?: boolean;
  /** Stationary sd of the per-chain phase drift, radians, 0..1. Ideal 0, room 0.1. */
  chainPhaseSdRad?: number;
  /** Stationary sd of the per-chain gain drift, dB, 0..6. Ideal 0, room 0.5. */
  chainGainSdDb?: number;
  /** Time constant of the per-chain drifts, seconds, 1..86400. Room 600. */
  chainTauS?: number;
  /**
   * Largest clock skew of the link, ppm, 0..100: the device clock (`deviceTime`, `clockUs`) runs at
   * (1 + skew) with a skew uniform in +-clockPpm and starts at a random offset. 0 = the ideal clock
   * (0 at tick 0, exact). Ideal 0, room 20 (the 802.11 tolerance at 5 GHz).
   */
  clockPpm?: number;
  /** Stationary sd of the complex relative drift of every static scatterer's reflectivity, 0..1. Ideal 0, room 0.2. */
  wanderSd?: number;
  /** Time constant of the reflectivity drift, seconds, 1..86400. Room 300. */
  wanderTauS?: number;
  /** Stationary sd of the clutter's position jitter per axis, metres, 0..0.1. Ideal 0, room 0.005. */
  clutterJitterM?: number;
  /** Time constant of the clutter jitter, seconds, 0.5..86400. Room 30. */
  clutterTauS?: number;
}

/** Resolved realism settings. */
export type RealismSettings = Required<Omit<RealismOptions, 'preset'>>;

/** The presets' settings. */
export const REALISM_PRESETS: Readonly<Record<RealismPreset, Readonly<RealismSettings>>> = Object.freeze({
  ideal: Object.freeze({
    reflectionOrder: 1,
    furniture: 0,
    clutter: 0,
    door: false,
    doorMeanIntervalS: 300,
    shadowLossDb: 0,
    antennaPattern: 'isotropic',
    chainPhaseRandom: false,
    chainPhaseSdRad: 0,
    chainGainSdDb: 0,
    chainTauS: 600,
    clockPpm: 0,
    wanderSd: 0,
    wanderTauS: 300,
    clutterJitterM: 0,
    clutterTauS: 30,
  } as RealismSettings),
  room: Object.freeze({
    reflectionOrder: 2,
    furniture: 8,
    clutter: 12,
    door: true,
    doorMeanIntervalS: 300,
    shadowLossDb: 12,
    antennaPattern: 'dipole',
    chainPhaseRandom: true,
    chainPhaseSdRad: 0.1,
    chainGainSdDb: 0.5,
    chainTauS: 600,
    clockPpm: 20,
    wanderSd: 0.2,
    wanderTauS: 300,
    clutterJitterM: 0.005,
    clutterTauS: 30,
  } as RealismSettings),
});

/**
 * Fills in a preset and checks ranges.
 * @param o a preset name, or options (unset fields from `o.preset`, default 'ideal'); undefined = ideal
 * @returns complete settings
 * @throws RangeError on an unknown preset or an out-of-range value
 */
export function resolveRealism(o: RealismPreset | RealismOptions | undefined): RealismSettings {
  const opts: RealismOptions = typeof o === 'string' ? { preset: o } : (o ?? {});
  const preset = opts.preset ?? 'ideal';
  if (preset !== 'ideal' && preset !== 'room') throw new RangeError(`realism: preset must be 'ideal' or 'room', got ${String(preset)}`);
  const s: RealismSettings = { ...REALISM_PRESETS[preset] };
  for (const [k, v] of Object.entries(opts)) if (k !== 'preset' && v !== undefined) (s as Record<string, unknown>)[k] = v;
  const bad = (what: string): never => {
    throw new RangeError(`realism: ${what}`);
  };
  const within = (k: keyof RealismSettings, lo: number, hi: number, integer = false): void => {
    const v = s[k] as number;
    if (!(typeof v === 'number' && v >= lo && v <= hi && (!integer || Number.isInteger(v))))
      bad(`${k} must be ${integer ? 'an integer' : 'a number'} in ${lo}..${hi}`);
  };
  if (s.reflectionOrder !== 1 && s.reflectionOrder !== 2) bad('reflectionOrder must be 1 or 2');
  within('furniture', 0, 24, true);
  within('clutter', 0, 48, true);
  if (typeof s.door !== 'boolean') bad('door must be true or false');
  within('doorMeanIntervalS', 10, 86_400);
  within('shadowLossDb', 0, 40);
  if (!['isotropic', 'dipole', 'patch'].includes(s.antennaPattern)) bad("antennaPattern must be 'isotropic', 'dipole' or 'patch'");
  if (typeof s.chainPhaseRandom !== 'boolean') bad('chainPhaseRandom must be true or false');
  within('chainPhaseSdRad', 0, 1);
  within('chainGainSdDb', 0, 6);
  within('chainTauS', 1, 86_400);
  within('clockPpm', 0, 100);
  within('wanderSd', 0, 1);
  within('wanderTauS', 1, 86_400);
  within('clutterJitterM', 0, 0.1);
  within('clutterTauS', 0.5, 86_400);
  return s;
}

/**
 * True when the settings are the ideal room's (the simulator then runs exactly today's code path).
 * @param s resolved settings
 * @returns whether every effect is off
 */
export function isIdeal(s: RealismSettings): boolean {
  return (
    s.reflectionOrder === 1 &&
    s.furniture === 0 &&
    s.clutter === 0 &&
    !s.door &&
    s.shadowLossDb === 0 &&
    s.antennaPattern === 'isotropic' &&
    !s.chainPhaseRandom &&
    s.chainPhaseSdRad === 0 &&
    s.chainGainSdDb === 0 &&
    s.clockPpm === 0 &&
    s.wanderSd === 0 &&
    s.clutterJitterM === 0
  );
}
