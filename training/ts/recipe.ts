/**
 * The data recipe of the pose model: which simulated scenarios make up the TRAIN, VALIDATION and
 * TEST splits. Everything is drawn from a seeded generator, so a master seed gives the same
 * scenarios on every machine.
 *
 * Conventions (what the model learns, and so what a deployment must resemble):
 * - The receive array hangs on the "front" wall (y ~ 0.2 m, 0.8-2.0 m high) and the reference
 *   camera is on the same wall at the same place across the room (within 0.15 m), 1.5-1.7 m high,
 *   looking into the room across its depth, tilted ~11 degrees down, 90 degree field of view (the
 *   simulator's default layout is one of these). The model never sees the camera: it learns
 *   keypoints in the view of a camera at that place, and cannot know a camera placed elsewhere.
 * - The transmit array is on the back wall (60 %) or a side wall (20 % each), anywhere from 15 %
 *   to 85 % along it, 0.8-2.2 m high. Arrays are half-wavelength spaced along their wall.
 *
 * Held out for TEST (never drawn for TRAIN or VALIDATION):
 * - room widths in [4.4, 5.0) or [7.2, 7.8) m and depths in [3.6, 4.2) or [6.4, 7.0) m: a test
 *   room has both its width and its depth in these bands, a training room neither;
 * - transmitter positions 30-40 % or 60-70 % along its wall and transmitter heights 1.4-1.6 m;
 * - receiver heights 1.4-1.6 m;
 * - seeds (separate generator streams per split).
 * TEST therefore measures interpolation to unseen rooms and antenna layouts of the same family
 * (same walls, same camera convention), not a different kind of installation, and it is simulated:
 * real CSI will score lower.
 */
import type { SiteGeometry } from '../../src/model/contract.js';
import { HALF_WAVELENGTH_5G_M, type RadioConfig } from '../../src/csi/radios.js';
import type { CameraSpec } from '../../src/pose/camera.js';
import { deriveSeed, Rng } from '../../src/sim/rng.js';
import type { SubcarrierLayout } from '../../src/sim/simulator.js';

export type Split = 'train' | 'val' | 'test';
export type TxWall = 'back' | 'left' | 'right';

/** One simulated scenario, fully specified. */
export interface ScenarioRecipe {
  id: number;
  split: Split;
  seed: number;
  room: { width: number; depth: number; height: number; wallReflection: number; floorReflection: number; ceilingReflection: number };
  rx: { x: number; y: number; z: number };
  tx: { wall: TxWall; x: number; y: number; z: number };
  camera: CameraSpec;
  nSub: SubcarrierLayout;
  nRx: number;
  nTx: number;
  people: number;
  snrDb: number;
  lossRate: number;
  quantizeBits: number | null;
  fallProbability: number;
  /** Simulated seconds. */
  seconds: number;
}

/** How many scenarios of each split, and how long each runs. */
export interface RecipeCounts {
  train: number;
  val: number;
  test: number;
  seconds: number;
  /** Test scenarios per person count 0..4 (fractions, normalised); the others use PEOPLE_WEIGHTS. */
  testPeople?: readonly number[];
}

/** Person count weights (0..4 people) of TRAIN and VALIDATION. */
export const PEOPLE_WEIGHTS: readonly number[] = [0.08, 0.27, 0.2, 0.27, 0.18];
/** TEST person counts are stratified so that one and three people have enough windows to score. */
export const TEST_PEOPLE_WEIGHTS: readonly number[] = [0.1, 0.3, 0.15, 0.3, 0.15];

const HELD_OUT_WIDTH: readonly (readonly [number, number])[] = [
  [4.4, 5.0],
  [7.2, 7.8],
];
const HELD_OUT_DEPTH: readonly (readonly [number, number])[] = [
  [3.6, 4.2],
  [6.4, 7.0],
];
const HELD_OUT_TX_FRACTION: readonly (readonly [number, number])[] = [
  [0.3, 0.4],
  [0.6, 0.7],
];
const HELD_OUT_TX_HEIGHT: readonly (readonly [number, number])[] = [[1.4, 1.6]];
const HELD_OUT_RX_HEIGHT: readonly (readonly [number, number])[] = [[1.4, 1.6]];

const inBands = (v: number, bands: readonly (readonly [number, number])[]) => bands.some(([a, b]) => v >= a && v < b);

/** A value from [lo, hi) inside the held-out bands (test) or outside them (train/val). */
function draw(rng: Rng, lo: number, hi: number, bands: readonly (readonly [number, number])[], test: boolean): number {
  if (test) {
    // Pick a band in proportion to its width, then a value in it.
    let total = 0;
    for (const [a, b] of bands) total += b - a;
    let u = rng.uniform(0, total);
    for (const [a, b] of bands) {
      if (u < b - a) return a + u;
      u -= b - a;
    }
    return bands[bands.length - 1]![0];
  }
  for (;;) {
    const v = rng.uniform(lo, hi);
    if (!inBands(v, bands)) return v;
  }
}

function pick<T>(rng: Rng, items: readonly T[], weights: readonly number[]): T {
  let total = 0;
  for (const w of weights) total += w;
  let u = rng.uniform(0, total);
  for (let i = 0; i < items.length; i++) {
    if (u < weights[i]!) return items[i]!;
    u -= weights[i]!;
  }
  return items[items.length - 1]!;
}

/** Stratified person counts: round(weight * n) of each, the remainder to the largest weights. */
function stratified(n: number, weights: readonly number[], rng: Rng): number[] {
  let total = 0;
  for (const w of weights) total += w;
  const counts = weights.map((w) => Math.floor((w / total) * n));
  let left = n - counts.reduce((a, b) => a + b, 0);
  const byWeight = weights.map((w, i) => [w, i] as const).sort((a, b) => b[0] - a[0]);
  for (let i = 0; left > 0; i = (i + 1) % byWeight.length, left--) counts[byWeight[i]![1]]!++;
  const out: number[] = [];
  counts.forEach((c, people) => {
    for (let i = 0; i < c; i++) out.push(people);
  });
  // Shuffle (Fisher-Yates) so that splitting the list over workers balances the load.
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * One scenario of a split.
 * @param rng the split's generator (advanced)
 * @param split which split (test draws from the held-out bands)
 * @param id scenario number (unique over all splits)
 * @param people person count
 * @param seconds simulated duration
 * @returns the recipe
 */
function makeRecipe(rng: Rng, split: Split, id: number, people: number, seconds: number): ScenarioRecipe {
  const test = split === 'test';
  const width = draw(rng, 3, 9, HELD_OUT_WIDTH, test);
  const depth = draw(rng, 3, 9, HELD_OUT_DEPTH, test);
  const height = rng.uniform(2.5, 3.2);
  const room = {
    width,
    depth,
    height,
    wallReflection: rng.uniform(0.2, 0.6),
    floorReflection: rng.uniform(0.3, 0.6),
    ceilingReflection: rng.uniform(0.2, 0.4),
  };
  const rx = { x: width * rng.uniform(0.3, 0.7), y: rng.uniform(0.15, 0.3), z: draw(rng, 0.8, 2.0, HELD_OUT_RX_HEIGHT, test) };
  const wall = pick<TxWall>(rng, ['back', 'left', 'right'], [0.6, 0.2, 0.2]);
  const f = draw(rng, 0.15, 0.85, HELD_OUT_TX_FRACTION, test);
  const tz = Math.min(draw(rng, 0.8, 2.2, HELD_OUT_TX_HEIGHT, test), height - 0.15);
  const inset = rng.uniform(0.15, 0.3);
  const tx =
    wall === 'back'
      ? { wall, x: f * width, y: depth - inset, z: tz }
      : wall === 'left'
        ? { wall, x: inset, y: f * depth, z: tz }
        : { wall, x: width - inset, y: f * depth, z: tz };
  const camera: CameraSpec = {
    position: {
      x: Math.max(0.1, Math.min(width - 0.1, rx.x + rng.uniform(-0.15, 0.15))),
      y: 0.05,
      z: rng.uniform(1.5, 1.7),
    },
    yaw: Math.PI / 2 + rng.uniform(-0.03, 0.03),
    pitch: rng.uniform(-0.24, -0.16),
    focalPx: 320,
  };
  // 114 subcarriers cost the simulator ~4x the time of 30: fewer of them, still a quarter.
  const nSub = pick<SubcarrierLayout>(rng, [30, 56, 114], [0.55, 0.2, 0.25]);
  const [nRx, nTx] = pick<readonly [number, number]>(
    rng,
    [
      [3, 3],
      [2, 2],
      [3, 1],
      [1, 1],
    ],
    [0.75, 0.08, 0.09, 0.08],
  );
  return {
    id,
    split,
    seed: 0, // filled by makeRecipes
    room,
    rx,
    tx,
    camera,
    nSub,
    nRx,
    nTx,
    people,
    snrDb: rng.uniform(18, 35),
    lossRate: rng.uniform(0, 0.05),
    quantizeBits: rng.chance(0.25) ? 8 : null,
    fallProbability: rng.uniform(0.05, 0.25),
    seconds,
  };
}

/**
 * The scenarios of all three splits for a master seed. Each split has its own generator stream
 * (derived from the master seed and a split tag), and every scenario a distinct simulator seed.
 *
 * @param masterSeed the training run's seed
 * @param counts scenarios per split and seconds per scenario
 * @returns train, then val, then test recipes (ids 0..total-1)
 * @example makeRecipes(1, { train: 400, val: 30, test: 60, seconds: 20 })
 */
export function makeRecipes(masterSeed: number, counts: RecipeCounts): ScenarioRecipe[] {
  const out: ScenarioRecipe[] = [];
  const seeds = new Set<number>();
  const splits: Array<[Split, number, readonly number[], number]> = [
    ['train', counts.train, PEOPLE_WEIGHTS, 11],
    ['val', counts.val, PEOPLE_WEIGHTS, 12],
    ['test', counts.test, counts.testPeople ?? TEST_PEOPLE_WEIGHTS, 13],
  ];
  for (const [split, n, weights, tag] of splits) {
    const rng = new Rng(deriveSeed(masterSeed, tag));
    const people = stratified(n, weights, rng);
    for (let i = 0; i < n; i++) {
      const r = makeRecipe(rng, split, out.length, people[i]!, counts.seconds);
      let seed = rng.nextUint32();
      while (seeds.has(seed)) seed = rng.nextUint32();
      seeds.add(seed);
      r.seed = seed;
      out.push(r);
    }
  }
  return out;
}

/**
 * The site geometry an installer would enter for a recipe's room (the model's `site` input).
 * @param r the recipe
 * @param mirrored the geometry of the left-right mirrored scene (x -> width - x), for mirrored rows
 * @returns room size and where the receiver and the transmitter hang
 */
export function recipeSite(r: ScenarioRecipe, mirrored = false): SiteGeometry {
  const x = (v: number) => (mirrored ? r.room.width - v : v);
  return {
    roomWidth: r.room.width,
    roomDepth: r.room.depth,
    receiver: { x: x(r.rx.x), y: r.rx.y, z: r.rx.z },
    transmitter: { x: x(r.tx.x), y: r.tx.y, z: r.tx.z },
  };
}

/** True when the recipe's room and layout fall in the held-out bands (the TEST family). */
export function isHeldOut(r: ScenarioRecipe): boolean {
  const f = r.tx.wall === 'back' ? r.tx.x / r.room.width : r.tx.y / r.room.depth;
  return (
    inBands(r.room.width, HELD_OUT_WIDTH) && inBands(r.room.depth, HELD_OUT_DEPTH) && inBands(f, HELD_OUT_TX_FRACTION) && inBands(r.rx.z, HELD_OUT_RX_HEIGHT)
  );
}

/** The held-out bands, for the training report. */
export const HELD_OUT = Object.freeze({
  roomWidthM: HELD_OUT_WIDTH,
  roomDepthM: HELD_OUT_DEPTH,
  txFractionAlongWall: HELD_OUT_TX_FRACTION,
  txHeightM: HELD_OUT_TX_HEIGHT,
  rxHeightM: HELD_OUT_RX_HEIGHT,
});

/** Inset of the side-wall receivers from their wall, metres. */
const SIDE_INSET_M = 0.2;

/**
 * A common installation's site for a recipe (the accuracy benchmark's `unseen` setting, and the
 * refiner's multi-link training sets): the recipe's transmitter and receiver (the primary link,
 * as in `unseen1`) and two more receivers, one on each side wall, at the primary
 * receiver's height and antenna count, facing into the room. A side receiver sits halfway along
 * its wall, or, on the wall that holds the transmitter, at the end of it farther from the
 * transmitter (15 % or 85 % of the depth). Antennas are half a wavelength apart at the recipe's
 * centre frequency, as the simulator spaces the recipe's own arrays.
 *
 * The primary link is the recipe's own, antenna for antenna: the recipe's arrays run along +x
 * (front and back wall) or +y (side walls), so the transmitter's `yaw_deg` is the one whose
 * antenna axis (src/csi/radios.ts) is that direction (90 on the back wall, 180 on a side wall);
 * the simulator reads a radio's yaw for its axis only.
 * @param r the recipe
 * @returns 1 TX + 3 RX, the transmitter first and the primary receiver `rx1`
 */
export function recipeRadios(r: ScenarioRecipe): RadioConfig[] {
  const { width, depth } = r.room;
  // The simulator's centre: channel 36, 10 MHz higher for the 40 MHz layout (HT40+).
  const spacing = (HALF_WAVELENGTH_5G_M * 5.18e9) / (5.18e9 + (r.nSub === 114 ? 10e6 : 0));
  const radio = (id: string, role: 'tx' | 'rx', x: number, y: number, z: number, yaw: number, antennas: number): RadioConfig => ({
    id,
    role,
    x,
    y,
    z,
    yaw_deg: yaw,
    antennas,
    spacing_m: spacing,
    format: 'intel5300',
  });
  const txYaw = r.tx.wall === 'back' ? 90 : 180;
  const sideY = (wall: 'left' | 'right') => (r.tx.wall !== wall ? depth / 2 : r.tx.y > depth / 2 ? 0.15 * depth : 0.85 * depth);
  return [
    radio('tx', 'tx', r.tx.x, r.tx.y, r.tx.z, txYaw, r.nTx),
    radio('rx1', 'rx', r.rx.x, r.rx.y, r.rx.z, 90, r.nRx),
    radio('rx2', 'rx', SIDE_INSET_M, sideY('left'), r.rx.z, 0, r.nRx),
    radio('rx3', 'rx', width - SIDE_INSET_M, sideY('right'), r.rx.z, 180, r.nRx),
  ];
}

/** The recipe's one link as a site: its transmitter and its receiver (`unseen1`, `room`). */
export const oneLinkRadios = (r: ScenarioRecipe): RadioConfig[] => recipeRadios(r).slice(0, 2);
