/**
 * The static part of a room that is not ideal, and what the receiver chains and clock add: the
 * machinery behind `realism` (realism.ts) other than 'ideal'. docs/simulator.md describes the model.
 *
 * Static paths, built once from the array geometry and the room box:
 * - the line of sight and the surface reflections up to `reflectionOrder` by the image method
 *   (Allen & Berkley 1979): an image of the transmitter mirrored in one surface (6 first-order
 *   images) or in two in turn (18 distinct second-order images of a box; every image of a box is
 *   visible, so none is tested). Amplitude Gamma_1 (Gamma_2) * lambda / (4 pi d_image) times the
 *   element gains towards the departure and arrival directions (antenna.ts).
 *
 * Static scatterers placed from the seed, and what makes them wander:
 * - furniture along the walls and clutter on them, each a point scatterer with a radar
 *   cross-section (the same bistatic path as a body scatterer, channel.ts);
 * - every static scatterer's reflectivity is multiplied by (1 + e(t)), e a complex
 *   Ornstein-Uhlenbeck process (a random walk pulled back to 0 with time constant wanderTauS and
 *   stationary sd wanderSd): temperature and humidity change the dielectric properties and the
 *   fine geometry of what reflects;
 * - clutter positions jitter (OU per axis, clutterJitterM over clutterTauS): air moves curtains,
 *   leaves and hanging things by millimetres, a sizeable phase at 5.8 cm wavelength;
 * - a door (0.85 m leaf opening into the room, four point scatterers) opens and closes as events,
 *   exponential dwell times of mean doorMeanIntervalS, each swing 1-2.5 s.
 * These change over seconds to minutes, so the static scatterers are computed on a grid of
 * SNAPSHOT_S and interpolated linearly in between (the error is far below the noise); the door,
 * while it swings, is a moving scatterer computed every packet like a body.
 *
 * Bodies shadow every static path, the door and each other's paths (shadow.ts). Per-chain phase
 * and gain offsets (a random phase per chain for the session, plus OU drifts) multiply the
 * channel of every antenna pair by c_rx[m] * c_tx[n]. The link's device clock has a random
 * offset and a skew.
 *
 * Randomness: layout, scatterer drift, door and chains and the clock each have a stream of their
 * own derived from the simulator's seed (tags 3 to 7), and the drifts advance on the snapshot grid
 * of the truth clock, not per received packet: the stream is the same whichever packets are lost,
 * however many people are in the room, and people move as in the ideal room.
 *
 * A site with several links (SimOptions.radios) has one RoomScene per link, each seeing the room
 * through its own arrays: every link's scene is built from the same layout, drift and door streams
 * and keeps the same points (all the site's arrays) clear, so they hold the same furniture, clutter,
 * reflectivities and door at every tick, one room; each link has its own chain offsets and clock
 * (streams `linkStreamTag(link, 6)` and `(link, 7)`).
 */

import { elementGain, elementPattern, type ElementPattern } from './antenna.js';
import type { ChannelModel } from './channel.js';
import type { RealismSettings } from './realism.js';
import { deriveSeed, Rng } from './rng.js';
import type { Scenario } from './scenario.js';
import { BODY_LEN, bodyVolume, lossFactor, noBody, pathLossDb } from './shadow.js';
import { KP, SCATTERERS_PER_BODY } from './skeleton.js';

/** Interval of the static scatterers' and chains' snapshots, seconds. */
export const SNAPSHOT_S = 0.2;
/** Door leaf width, metres. */
export const DOOR_WIDTH = 0.85;
/** Scatterers on the door leaf: (fraction of the width from the hinge, height). */
const DOOR_POINTS: ReadonlyArray<readonly [number, number]> = [
  [0.3, 0.6],
  [0.8, 0.6],
  [0.3, 1.5],
  [0.8, 1.5],
];
/** Extra scatterers the door adds while it swings. */
export const DOOR_SCATTERERS = DOOR_POINTS.length;
/** Radar cross-section per door point, m^2 (a wooden leaf of 1.7 m^2 seen off-specular). */
const DOOR_RCS = 0.4;
/** Furniture cross-section range, m^2 (log-uniform). */
const FURNITURE_RCS: readonly [number, number] = [0.2, 2];
/** Clutter cross-section range, m^2 (log-uniform). */
const CLUTTER_RCS: readonly [number, number] = [0.01, 0.1];

/** A static scatterer of the layout (for tests and documentation). */
export interface StaticScatterer {
  kind: 'furniture' | 'clutter';
  /** Nominal position, metres. */
  x: number;
  y: number;
  z: number;
  /** Radar cross-section, m^2. */
  rcs: number;
}

/** One image of the transmitter: p' = sign * p + offset per axis, and its reflection coefficient product. */
interface Image {
  sx: number;
  sy: number;
  sz: number;
  ox: number;
  oy: number;
  oz: number;
  gain: number;
  order: number;
}

/** Element patterns of the two arrays for a pattern kind (dipoles vertical, patches facing each other). */
export function arrayPatterns(kind: RealismSettings['antennaPattern'], tx: Float64Array, rx: Float64Array): { tx: ElementPattern; rx: ElementPattern } {
  if (kind !== 'patch') {
    const p = elementPattern(kind, 0, 0, 1);
    return { tx: p, rx: p };
  }
  const t = centre(tx);
  const r = centre(rx);
  const dx = r[0]! - t[0]!;
  const dy = r[1]! - t[1]!;
  const flat = Math.hypot(dx, dy) > 1e-6;
  return {
    tx: flat ? elementPattern('patch', dx, dy, 0) : elementPattern('patch', 0, 1, 0),
    rx: flat ? elementPattern('patch', -dx, -dy, 0) : elementPattern('patch', 0, -1, 0),
  };
}

function centre(a: Float64Array): Float64Array {
  const c = new Float64Array(3);
  const n = a.length / 3;
  for (let i = 0; i < n; i++) for (let k = 0; k < 3; k++) c[k] += a[3 * i + k]! / n;
  return c;
}

/**
 * The images of a box room up to an order: the line of sight (order 0, when asked for), 6
 * first-order and 18 distinct second-order images.
 * @param room box size and reflection coefficients
 * @param order highest reflection order (1 or 2)
 * @param los include the line of sight
 * @returns the images with a non-zero reflection product
 */
export function boxImages(
  room: { width: number; depth: number; height: number; wall: number; floor: number; ceiling: number },
  order: number,
  los: boolean,
): Image[] {
  // Surfaces as (axis, plane coordinate, reflection coefficient).
  const surfaces: Array<[number, number, number]> = [
    [0, 0, room.wall],
    [0, room.width, room.wall],
    [1, 0, room.wall],
    [1, room.depth, room.wall],
    [2, 0, room.floor],
    [2, room.height, room.ceiling],
  ];
  const out: Image[] = [];
  const seen = new Set<string>();
  const push = (im: Image): void => {
    const key = [im.sx, im.sy, im.sz, im.ox, im.oy, im.oz].map((v) => v.toFixed(9)).join(',');
    if (seen.has(key)) return;
    seen.add(key);
    if (im.gain !== 0) out.push(im);
  };
  const mirror = (im: Image, s: [number, number, number]): Image => {
    const [axis, c, g] = s;
    const r = { ...im, gain: im.gain * g, order: im.order + 1 };
    if (axis === 0) {
      r.sx = -im.sx;
      r.ox = 2 * c - im.ox;
    } else if (axis === 1) {
      r.sy = -im.sy;
      r.oy = 2 * c - im.oy;
    } else {
      r.sz = -im.sz;
      r.oz = 2 * c - im.oz;
    }
    return r;
  };
  const id: Image = { sx: 1, sy: 1, sz: 1, ox: 0, oy: 0, oz: 0, gain: 1, order: 0 };
  seen.add([1, 1, 1, 0, 0, 0].map((v) => v.toFixed(9)).join(','));
  if (los) out.push(id);
  for (let a = 0; a < 6; a++) {
    const first = mirror(id, surfaces[a]!);
    push(first);
    if (order < 2) continue;
    for (let b = 0; b < 6; b++) if (b !== a) push(mirror(first, surfaces[b]!));
  }
  return out;
}

/** Folds an unfolded (image-space) coordinate back into [0, L]. */
function fold(u: number, L: number): number {
  let m = u % (2 * L);
  if (m < 0) m += 2 * L;
  return m <= L ? m : 2 * L - m;
}

interface SceneArgs {
  channel: ChannelModel;
  scenario: Scenario;
  settings: RealismSettings;
  patterns: { tx: ElementPattern; rx: ElementPattern };
  seed: number;
  rateHz: number;
  lineOfSight: boolean;
  /** The link's transmit and receive antenna positions (n * 3); default the scenario's arrays. */
  tx?: Float64Array;
  rx?: Float64Array;
  /**
   * Floor points (array centres) the furniture, clutter and door keep clear of; default this link's
   * two array centres. A site passes every array of the site, so that each link's scene has the
   * same layout.
   */
  keepClear?: ReadonlyArray<{ x: number; y: number }>;
  /** Stream tags of the link's chain offsets and device clock (rng.ts linkStreamTag); default 6 and 7. */
  chainTag?: number;
  clockTag?: number;
}

/**
 * The non-ideal room of one simulator: static paths and scatterers, their drift, the door, body
 * shadowing, chain offsets and the device clock.
 *
 * @example
 * const scene = new RoomScene({ channel, scenario, settings: resolveRealism('room'), patterns, seed: 1, rateHz: 100, lineOfSight: true });
 * const count = scene.prepare(tick, scat, scenario.fillScatterers(scat));
 * channel.compute(scat, count, clean, scene.base);
 * scene.applyChains(clean);
 */
export class RoomScene {
  readonly settings: RealismSettings;
  /** The static channel of the current tick (after `prepare`): surfaces, scatterers, door at rest, shadowed. */
  readonly base: Float64Array;
  /** Furniture and clutter, in the order of their paths. */
  readonly scatterers: readonly StaticScatterer[];
  /** The door: hinge on the floor, direction along the wall towards the latch, inward normal; null without a door. */
  readonly door: { hx: number; hy: number; ux: number; uy: number; vx: number; vy: number } | null;
  /** Surface images in use (line of sight first when present). */
  readonly images: readonly Image[];
  private readonly ch: ChannelModel;
  private readonly scenario: Scenario;
  private readonly rate: number;
  private readonly size: number;
  private readonly nRx: number;
  private readonly nTx: number;
  private readonly amp0: number;
  private readonly txC: Float64Array;
  private readonly rxC: Float64Array;
  // Surface paths: one vector each, their sum, and their polylines from the array centres.
  private readonly surfVec: Float64Array[];
  private readonly surfSum: Float64Array;
  private readonly surfPts: Float64Array;
  private readonly surfFrom: Int32Array;
  private readonly surfCount: Int32Array;
  // Static scatterers: nominal positions, weights, kinds, and drift states.
  private readonly nScat: number;
  private readonly scatPos: Float64Array;
  private readonly scatW: Float64Array;
  private readonly scatJitter: Uint8Array;
  private readonly jitter: Float64Array;
  private readonly refl: Float64Array;
  // Snapshots A (at tick jA * K) and B (the next one): per scatterer vectors, their sums, polylines.
  private readonly K: number;
  private jA = 0;
  private vecA: Float64Array[];
  private vecB: Float64Array[];
  private sumA: Float64Array;
  private sumB: Float64Array;
  private ptsA: Float64Array;
  private ptsB: Float64Array;
  private frac = 0;
  // Drift streams and coefficients.
  private readonly wanderRng: Rng;
  private readonly doorRng: Rng;
  private readonly chainRng: Rng;
  private readonly wA: number;
  private readonly wB: number;
  private readonly jA1: number;
  private readonly jB1: number;
  private readonly cA: number;
  private readonly cPhB: number;
  private readonly cGB: number;
  // Chains: rx chains then tx chains.
  private readonly nChains: number;
  private readonly chainPhi0: Float64Array;
  private readonly chainPhi: Float64Array;
  private readonly chainGdb: Float64Array;
  private chainA: Float64Array;
  private chainB: Float64Array;
  private readonly pairF: Float64Array;
  private readonly chainsOn: boolean;
  // Door.
  private doorFrom = 0;
  private doorTo = 0;
  private doorStart = -Infinity;
  private doorDur = 1;
  private doorNext = Infinity;
  private readonly doorVec: Float64Array;
  private doorVecAngle = NaN;
  private readonly doorW: number;
  // Shadowing scratch.
  private readonly bodies: Float64Array;
  /** The bodies the cached path factors were computed for, and the snapshot they belong to. */
  private readonly bodiesSeen: Float64Array;
  /** Shadow amplitude factor per surface path and per static scatterer path (1 = clear). */
  private readonly surfFactor: Float64Array;
  private readonly scatFactor: Float64Array;
  /** Per body: amplitude factor of its scatterers' paths through the other bodies. */
  private readonly bodyFactor: Float64Array;
  /** Surfaces plus the door at rest (at angle fixedAngle; -1 while it swings), shadowed. */
  private readonly fixed: Float64Array;
  private fixedAngle = NaN;
  /** The snapshots' scatterer sums, shadowed. */
  private readonly shA: Float64Array;
  private readonly shB: Float64Array;
  private doorShade = 1;
  private doorShadeAngle = NaN;
  private first = true;
  private readonly legPts = new Float64Array(9);
  // Clock.
  private readonly clockOffsetUs: number;
  private readonly clockSkew: number;

  /**
   * @param a channel model (with the element patterns), scenario, settings, patterns, seed, packet rate, line of sight
   */
  constructor(a: SceneArgs) {
    const s = a.settings;
    this.settings = s;
    this.ch = a.channel;
    this.scenario = a.scenario;
    this.rate = a.rateHz;
    this.size = a.channel.size;
    this.nRx = a.channel.nRx;
    this.nTx = a.channel.nTx;
    this.amp0 = a.channel.lambda / (4 * Math.PI);
    const tx = a.tx ?? a.scenario.txPositions;
    const rx = a.rx ?? a.scenario.rxPositions;
    this.txC = centre(tx);
    this.rxC = centre(rx);
    this.base = new Float64Array(this.size);
    const room = a.scenario.room;
    const box = {
      width: room.width,
      depth: room.depth,
      height: room.height,
      wall: room.wallReflection,
      floor: room.floorReflection,
      ceiling: room.ceilingReflection,
    };

    // Surface paths.
    this.images = boxImages(box, s.reflectionOrder, a.lineOfSight);
    const nPairs = this.nRx * this.nTx;
    const len = new Float64Array(nPairs);
    const amp = new Float64Array(nPairs);
    this.surfVec = [];
    this.surfSum = new Float64Array(this.size);
    const pts: number[] = [];
    const from: number[] = [];
    const count: number[] = [];
    const L = [room.width, room.depth, room.height];
    for (const im of this.images) {
      for (let m = 0; m < this.nRx; m++) {
        for (let n = 0; n < this.nTx; n++) {
          const ix = im.sx * tx[3 * n]! + im.ox;
          const iy = im.sy * tx[3 * n + 1]! + im.oy;
          const iz = im.sz * tx[3 * n + 2]! + im.oz;
          const ax = ix - rx[3 * m]!;
          const ay = iy - rx[3 * m + 1]!;
          const az = iz - rx[3 * m + 2]!;
          const d = Math.sqrt(ax * ax + ay * ay + az * az);
          if (d === 0) throw new RangeError('room: a transmit and a receive antenna coincide');
          // Arrival: towards the image; departure: the reversed ray mapped back through the mirrors.
          const gr = elementGain(a.patterns.rx, ax, ay, az, d);
          const gt = elementGain(a.patterns.tx, -im.sx * ax, -im.sy * ay, -im.sz * az, d);
          len[m * this.nTx + n] = d;
          amp[m * this.nTx + n] = (im.gain * this.amp0 * gr * gt) / d;
        }
      }
      const v = new Float64Array(this.size);
      a.channel.addPath(len, amp, v);
      this.surfVec.push(v);
      for (let i = 0; i < this.size; i++) this.surfSum[i] += v[i]!;
      // Polyline from the receive array centre through the folded crossings to the transmit centre.
      const u0 = this.rxC;
      const u1 = [im.sx * this.txC[0]! + im.ox, im.sy * this.txC[1]! + im.oy, im.sz * this.txC[2]! + im.oz];
      const ts: number[] = [];
      for (let k = 0; k < 3; k++) {
        const a0 = u0[k]!;
        const a1 = u1[k]!;
        const Lk = L[k]!;
        if (a1 < 0) for (let c = 0; c > a1; c -= Lk) ts.push((c - a0) / (a1 - a0));
        else if (a1 > Lk) for (let c = Lk; c < a1; c += Lk) ts.push((c - a0) / (a1 - a0));
      }
      ts.sort((p, q) => p - q);
      from.push(pts.length / 3);
      pts.push(u0[0]!, u0[1]!, u0[2]!);
      for (const t of ts) for (let k = 0; k < 3; k++) pts.push(fold(u0[k]! + t * (u1[k]! - u0[k]!), L[k]!));
      pts.push(this.txC[0]!, this.txC[1]!, this.txC[2]!);
      count.push(ts.length + 2);
    }
    this.surfPts = Float64Array.from(pts);
    this.surfFrom = Int32Array.from(from);
    this.surfCount = Int32Array.from(count);

    // Layout: furniture along the walls, clutter on them, the door.
    const lay = new Rng(deriveSeed(a.seed, 3));
    const scat: StaticScatterer[] = [];
    const clear = a.keepClear ?? [
      { x: this.txC[0]!, y: this.txC[1]! },
      { x: this.rxC[0]!, y: this.rxC[1]! },
    ];
    const nearArray = (x: number, y: number, r: number): boolean => clear.some((c) => Math.hypot(x - c.x, y - c.y) < r);
    /** A point at `off` metres from a wall chosen by length, `end` metres clear of the corners. */
    const alongWall = (off: number, end: number): { x: number; y: number } => {
      const W = room.width;
      const D = room.depth;
      const u = lay.uniform(0, 2 * (W + D));
      if (u < W) return { x: lay.uniform(end, W - end), y: off };
      if (u < 2 * W) return { x: lay.uniform(end, W - end), y: D - off };
      if (u < 2 * W + D) return { x: off, y: lay.uniform(end, D - end) };
      return { x: W - off, y: lay.uniform(end, D - end) };
    };
    const logUniform = (r: readonly [number, number]): number => Math.exp(lay.uniform(Math.log(r[0]), Math.log(r[1])));
    for (const [kind, n] of [
      ['furniture', s.furniture],
      ['clutter', s.clutter],
    ] as const) {
      for (let i = 0; i < n; i++) {
        let p = { x: 0, y: 0 };
        for (let tries = 0; tries < 50; tries++) {
          p = kind === 'furniture' ? alongWall(lay.uniform(0.1, 0.35), 0.3) : alongWall(lay.uniform(0.02, 0.1), 0.1);
          if (!nearArray(p.x, p.y, kind === 'furniture' ? 0.6 : 0.4)) break;
        }
        const z = kind === 'furniture' ? lay.uniform(0.3, 1.2) : lay.uniform(0.2, room.height - 0.2);
        scat.push({ kind, x: p.x, y: p.y, z, rcs: logUniform(kind === 'furniture' ? FURNITURE_RCS : CLUTTER_RCS) });
      }
    }
    this.scatterers = scat;
    this.nScat = scat.length;
    this.scatPos = new Float64Array(3 * this.nScat);
    this.scatW = new Float64Array(this.nScat);
    this.scatJitter = new Uint8Array(this.nScat);
    scat.forEach((c, i) => {
      this.scatPos[3 * i] = c.x;
      this.scatPos[3 * i + 1] = c.y;
      this.scatPos[3 * i + 2] = c.z;
      this.scatW[i] = Math.sqrt(c.rcs / (4 * Math.PI));
      this.scatJitter[i] = c.kind === 'clutter' && s.clutterJitterM > 0 ? 1 : 0;
    });
    let door: RoomScene['door'] = null;
    if (s.door) {
      // A wall position with the whole leaf clear of the corners and the arrays, if there is one.
      for (let tries = 0; tries < 100 && door === null; tries++) {
        const p = alongWall(0.03, 0.2);
        const W = room.width;
        const D = room.depth;
        // Along-wall direction (hinge to latch) and inward normal of the chosen wall.
        const onX = p.y === 0.03 || p.y === D - 0.03;
        const ux = onX ? 1 : 0;
        const uy = onX ? 0 : 1;
        const vx = onX ? 0 : p.x < W / 2 ? 1 : -1;
        const vy = onX ? (p.y < D / 2 ? 1 : -1) : 0;
        const lx = p.x + DOOR_WIDTH * ux;
        const ly = p.y + DOOR_WIDTH * uy;
        if (lx > W - 0.2 || ly > D - 0.2) continue;
        if (nearArray(p.x, p.y, 0.6) || nearArray(lx, ly, 0.6) || nearArray(p.x + 0.5 * DOOR_WIDTH * ux, p.y + 0.5 * DOOR_WIDTH * uy, 0.6)) continue;
        door = { hx: p.x, hy: p.y, ux, uy, vx, vy };
      }
    }
    this.door = door;
    this.doorW = Math.sqrt(DOOR_RCS / (4 * Math.PI));
    this.doorVec = new Float64Array(this.size);

    // Drift coefficients of the exact OU discretisation x' = a x + b N(0, 1) over one snapshot.
    this.K = Math.max(1, Math.round(SNAPSHOT_S * a.rateHz));
    const dt = this.K / a.rateHz;
    const ou = (tau: number, sd: number): [number, number] => {
      const q = Math.exp(-dt / tau);
      return [q, sd * Math.sqrt(1 - q * q)];
    };
    [this.wA, this.wB] = ou(s.wanderTauS, s.wanderSd / Math.SQRT2);
    [this.jA1, this.jB1] = ou(s.clutterTauS, s.clutterJitterM);
    const [ca, cpb] = ou(s.chainTauS, s.chainPhaseSdRad);
    const [, cgb] = ou(s.chainTauS, s.chainGainSdDb);
    this.cA = ca;
    this.cPhB = cpb;
    this.cGB = cgb;
    this.wanderRng = new Rng(deriveSeed(a.seed, 4));
    this.doorRng = new Rng(deriveSeed(a.seed, 5));
    this.chainRng = new Rng(deriveSeed(a.seed, a.chainTag ?? 6));
    const clockRng = new Rng(deriveSeed(a.seed, a.clockTag ?? 7));
    this.clockOffsetUs = s.clockPpm > 0 ? clockRng.int(0, 2 ** 31 - 1) : 0;
    this.clockSkew = s.clockPpm > 0 ? clockRng.uniform(-s.clockPpm, s.clockPpm) * 1e-6 : 0;

    // Initial drift states from their stationary distributions.
    this.jitter = new Float64Array(3 * this.nScat);
    this.refl = new Float64Array(2 * this.nScat);
    for (let i = 0; i < this.nScat; i++) {
      if (s.wanderSd > 0) {
        this.refl[2 * i] = this.wanderRng.gaussian(0, s.wanderSd / Math.SQRT2);
        this.refl[2 * i + 1] = this.wanderRng.gaussian(0, s.wanderSd / Math.SQRT2);
      }
      if (this.scatJitter[i]) for (let k = 0; k < 3; k++) this.jitter[3 * i + k] = this.wanderRng.gaussian(0, s.clutterJitterM);
    }
    this.nChains = this.nRx + this.nTx;
    this.chainPhi0 = new Float64Array(this.nChains);
    this.chainPhi = new Float64Array(this.nChains);
    this.chainGdb = new Float64Array(this.nChains);
    this.chainsOn = s.chainPhaseRandom || s.chainPhaseSdRad > 0 || s.chainGainSdDb > 0;
    for (let c = 0; c < this.nChains; c++) {
      if (s.chainPhaseRandom) this.chainPhi0[c] = this.chainRng.uniform(-Math.PI, Math.PI);
      if (s.chainPhaseSdRad > 0) this.chainPhi[c] = this.chainRng.gaussian(0, s.chainPhaseSdRad);
      if (s.chainGainSdDb > 0) this.chainGdb[c] = this.chainRng.gaussian(0, s.chainGainSdDb);
    }
    this.chainA = new Float64Array(2 * this.nChains);
    this.chainB = new Float64Array(2 * this.nChains);
    this.pairF = new Float64Array(2 * nPairs);
    if (door !== null) {
      const open = this.doorRng.chance(0.5);
      this.doorTo = this.doorFrom = open ? this.doorRng.uniform(Math.PI / 6, Math.PI / 2) : 0;
      this.doorNext = exponential(this.doorRng, s.doorMeanIntervalS);
    }
    this.bodies = new Float64Array(BODY_LEN * a.scenario.persons.length);
    this.bodiesSeen = new Float64Array(this.bodies.length);
    this.surfFactor = new Float64Array(this.images.length).fill(1);
    this.scatFactor = new Float64Array(this.nScat).fill(1);
    this.bodyFactor = new Float64Array(a.scenario.persons.length).fill(1);
    this.fixed = new Float64Array(this.size);
    this.shA = new Float64Array(this.size);
    this.shB = new Float64Array(this.size);

    const views = (): Float64Array[] => Array.from({ length: this.nScat }, () => new Float64Array(this.size));
    this.vecA = views();
    this.vecB = views();
    this.sumA = new Float64Array(this.size);
    this.sumB = new Float64Array(this.size);
    this.ptsA = new Float64Array(9 * this.nScat);
    this.ptsB = new Float64Array(9 * this.nScat);
    // Snapshot 0 is A; snapshot 1 is B.
    this.snapshot(this.vecA, this.sumA, this.ptsA, this.chainA);
    this.advance(this.K);
    this.snapshot(this.vecB, this.sumB, this.ptsB, this.chainB);
  }

  /**
   * Mean |H|^2 of the empty room's static channel at time 0 (surfaces, scatterers and door; no
   * chain offsets): the reference of the SNR.
   * @returns the mean power, linear
   */
  staticPower(): number {
    const h = new Float64Array(this.size);
    for (let i = 0; i < this.size; i++) h[i] = this.surfSum[i]! + this.sumA[i]!;
    if (this.door !== null) this.addDoorAtRest(this.doorAngle(0), 1, h);
    let p = 0;
    for (let i = 0; i < h.length; i += 2) p += h[i]! * h[i]! + h[i + 1]! * h[i + 1]!;
    return p / (h.length / 2);
  }

  /**
   * The door's opening angle at a time, radians (0 = closed), or NaN without a door.
   * @param t simulation seconds (at or after the current snapshot)
   * @returns the angle
   */
  doorAngle(t: number): number {
    if (this.door === null) return NaN;
    if (t <= this.doorStart) return this.doorFrom;
    if (t >= this.doorStart + this.doorDur) return this.doorTo;
    const u = (t - this.doorStart) / this.doorDur;
    return this.doorFrom + (this.doorTo - this.doorFrom) * u * u * (3 - 2 * u);
  }

  /**
   * The device clock of a tick, microseconds.
   * @param tick tick number
   * @returns offset + tick time * (1 + skew), rounded
   */
  clockUs(tick: number): number {
    return this.clockOffsetUs + Math.round(((tick * 1e6) / this.rate) * (1 + this.clockSkew));
  }

  /**
   * Per-chain offsets of a snapshot as complex factors (a copy, for tests and diagnostics).
   * @param which 'A': the snapshot at or before the last prepared tick; 'B': the next one
   * @returns re, im per chain: receive chains, then transmit chains
   */
  chainFactors(which: 'A' | 'B' = 'A'): Float64Array {
    return Float64Array.from(which === 'A' ? this.chainA : this.chainB);
  }

  /**
   * Prepares one tick: advances the drifts to it, builds `base` (static scatterers interpolated,
   * the door at rest, shadowing by the bodies) and shadows the bodies' own scatterers by the other
   * bodies. While the door swings its points are appended to the scatterers.
   * @param tick tick number (non-decreasing between calls)
   * @param scat the bodies' scatterers (x, y, z, weight), room for DOOR_SCATTERERS more
   * @param count scatterers in `scat`
   * @returns the scatterer count to compute
   */
  prepare(tick: number, scat: Float64Array, count: number): number {
    const K = this.K;
    let snapped = false;
    while (tick >= (this.jA + 1) * K) {
      const vec = this.vecA;
      this.vecA = this.vecB;
      this.vecB = vec;
      const sum = this.sumA;
      this.sumA = this.sumB;
      this.sumB = sum;
      const pts = this.ptsA;
      this.ptsA = this.ptsB;
      this.ptsB = pts;
      const chain = this.chainA;
      this.chainA = this.chainB;
      this.chainB = chain;
      this.jA++;
      this.advance((this.jA + 1) * K);
      this.snapshot(this.vecB, this.sumB, this.ptsB, this.chainB);
      snapped = true;
    }
    const t = tick / this.rate;
    const lmax = this.settings.shadowLossDb;
    const persons = this.scenario.persons;
    const nb = lmax > 0 ? persons.length : 0;
    // Shadow factors change only when a body moved or a snapshot moved the static scatterers:
    // still people (the common case) cost one comparison per tick.
    let moved = false;
    if (nb > 0) {
      for (let b = 0; b < nb; b++) {
        const p = persons[b]!;
        if (p.present) bodyVolume(p.body.keypoints, p.body.dims.scale, this.bodies, b * BODY_LEN);
        else noBody(this.bodies, b * BODY_LEN);
      }
      moved = !sameValues(this.bodies, this.bodiesSeen);
      if (moved) this.bodiesSeen.set(this.bodies);
      if (moved || snapped || this.first) this.shadowFactors(nb, lmax);
    }
    const d = this.door;
    const swinging = d !== null && t > this.doorStart && t < this.doorStart + this.doorDur;
    const angle = d !== null ? this.doorAngle(t) : 0;
    if (d !== null && nb > 0 && (moved || swinging || angle !== this.doorShadeAngle)) {
      const lp = this.legPts;
      const c = 0.55 * DOOR_WIDTH;
      lp[3] = d.hx + c * (Math.cos(angle) * d.ux + Math.sin(angle) * d.vx);
      lp[4] = d.hy + c * (Math.cos(angle) * d.uy + Math.sin(angle) * d.vy);
      lp[5] = 1.05;
      this.setLegEnds();
      this.doorShade = lossFactor(pathLossDb(lp, 0, 3, this.bodies, nb, -1, lmax));
      this.doorShadeAngle = angle;
    }
    // The fixed part (surfaces, the door at rest) and the two snapshots, each with its shadows.
    const restAngle = swinging ? -1 : angle;
    if (moved || this.first || (d !== null && restAngle !== this.fixedAngle)) {
      this.fixed.set(this.surfSum);
      if (nb > 0) for (let p = 0; p < this.surfVec.length; p++) if (this.surfFactor[p] !== 1) axpy(this.surfFactor[p]! - 1, this.surfVec[p]!, this.fixed);
      if (d !== null && !swinging) this.addDoorAtRest(angle, this.doorShade, this.fixed);
      this.fixedAngle = restAngle;
    }
    if (moved || snapped || this.first) {
      this.shade(this.sumA, this.vecA, this.shA, nb);
      this.shade(this.sumB, this.vecB, this.shB, nb);
    }
    this.first = false;
    const f = (tick - this.jA * K) / K;
    this.frac = f;
    const g = 1 - f;
    const base = this.base;
    const fx = this.fixed;
    const sA = this.shA;
    const sB = this.shB;
    for (let i = 0; i < this.size; i++) base[i] = fx[i]! + g * sA[i]! + f * sB[i]!;

    // Each body's own paths through the others (the weights are rewritten every tick).
    for (let b = 0; nb > 1 && b < nb; b++) {
      const c = this.bodyFactor[b]!;
      if (c === 1) continue;
      for (let i = b * SCATTERERS_PER_BODY; i < (b + 1) * SCATTERERS_PER_BODY; i++) scat[4 * i + 3] *= c;
    }
    if (swinging) count = this.doorPoints(angle, this.doorW * this.doorShade, scat, count);
    return count;
  }

  /** Shadow factors of every static path and of each body's paths through the others. */
  private shadowFactors(nb: number, lmax: number): void {
    for (let p = 0; p < this.surfVec.length; p++) {
      this.surfFactor[p] = lossFactor(pathLossDb(this.surfPts, this.surfFrom[p]!, this.surfCount[p]!, this.bodies, nb, -1, lmax));
    }
    for (let q = 0; q < this.nScat; q++) this.scatFactor[q] = lossFactor(pathLossDb(this.ptsA, 3 * q, 3, this.bodies, nb, -1, lmax));
    // A body's paths through the others, from its torso centre.
    const persons = this.scenario.persons;
    const lp = this.legPts;
    for (let b = 0; b < nb; b++) {
      if (nb < 2) {
        this.bodyFactor[b] = 1;
        continue;
      }
      const k = persons[b]!.body.keypoints;
      lp[3] = 0.25 * (k[3 * KP.L_HIP]! + k[3 * KP.R_HIP]! + k[3 * KP.L_SHOULDER]! + k[3 * KP.R_SHOULDER]!);
      lp[4] = 0.25 * (k[3 * KP.L_HIP + 1]! + k[3 * KP.R_HIP + 1]! + k[3 * KP.L_SHOULDER + 1]! + k[3 * KP.R_SHOULDER + 1]!);
      lp[5] = 0.25 * (k[3 * KP.L_HIP + 2]! + k[3 * KP.R_HIP + 2]! + k[3 * KP.L_SHOULDER + 2]! + k[3 * KP.R_SHOULDER + 2]!);
      this.setLegEnds();
      this.bodyFactor[b] = lossFactor(pathLossDb(lp, 0, 3, this.bodies, nb, b, lmax));
    }
  }

  /** out = sum + the shadow corrections of the scatterer paths in vec (factors of the A snapshot's geometry). */
  private shade(sum: Float64Array, vec: Float64Array[], out: Float64Array, nb: number): void {
    out.set(sum);
    if (nb === 0) return;
    for (let q = 0; q < this.nScat; q++) if (this.scatFactor[q] !== 1) axpy(this.scatFactor[q]! - 1, vec[q]!, out);
  }

  /**
   * Multiplies the channel of antenna pair (m, n) by the chain factors c_rx[m] c_tx[n] of this tick
   * (interpolated between snapshots). Call after `prepare` for the same tick.
   * @param h channel, CsiFrame layout
   */
  applyChains(h: Float64Array): void {
    if (!this.chainsOn) return;
    const f = this.frac;
    const g = 1 - f;
    const A = this.chainA;
    const B = this.chainB;
    const pf = this.pairF;
    const nRx = this.nRx;
    const nTx = this.nTx;
    for (let m = 0; m < nRx; m++) {
      const mr = g * A[2 * m]! + f * B[2 * m]!;
      const mi = g * A[2 * m + 1]! + f * B[2 * m + 1]!;
      for (let n = 0; n < nTx; n++) {
        const c = nRx + n;
        const nr = g * A[2 * c]! + f * B[2 * c]!;
        const ni = g * A[2 * c + 1]! + f * B[2 * c + 1]!;
        const p = m * nTx + n;
        pf[2 * p] = mr * nr - mi * ni;
        pf[2 * p + 1] = mr * ni + mi * nr;
      }
    }
    const np = nRx * nTx;
    for (let i = 0; i < h.length; i += 2 * np) {
      for (let p = 0; p < np; p++) {
        const j = i + 2 * p;
        const hr = h[j]!;
        const hi = h[j + 1]!;
        const fr = pf[2 * p]!;
        const fi = pf[2 * p + 1]!;
        h[j] = hr * fr - hi * fi;
        h[j + 1] = hr * fi + hi * fr;
      }
    }
  }

  /** legPts: transmit centre, (point already set at 3..5), receive centre. */
  private setLegEnds(): void {
    const lp = this.legPts;
    lp[0] = this.txC[0]!;
    lp[1] = this.txC[1]!;
    lp[2] = this.txC[2]!;
    lp[6] = this.rxC[0]!;
    lp[7] = this.rxC[1]!;
    lp[8] = this.rxC[2]!;
  }

  /** Appends the door's points at an angle with a weight; returns the new count. */
  private doorPoints(angle: number, w: number, scat: Float64Array, count: number): number {
    const d = this.door!;
    const c = Math.cos(angle);
    const s = Math.sin(angle);
    const dx = c * d.ux + s * d.vx;
    const dy = c * d.uy + s * d.vy;
    for (const [fr, z] of DOOR_POINTS) {
      const o = 4 * count++;
      scat[o] = d.hx + fr * DOOR_WIDTH * dx;
      scat[o + 1] = d.hy + fr * DOOR_WIDTH * dy;
      scat[o + 2] = z;
      scat[o + 3] = w;
    }
    return count;
  }

  /** Adds the resting door's paths (cached per angle) times a factor. */
  private addDoorAtRest(angle: number, factor: number, out: Float64Array): void {
    if (angle !== this.doorVecAngle) {
      this.doorVec.fill(0);
      const d = this.door!;
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      for (const [fr, z] of DOOR_POINTS) {
        this.ch.addScatterer(
          d.hx + fr * DOOR_WIDTH * (c * d.ux + s * d.vx),
          d.hy + fr * DOOR_WIDTH * (c * d.uy + s * d.vy),
          z,
          this.amp0 * this.doorW,
          this.doorVec,
        );
      }
      this.doorVecAngle = angle;
    }
    axpy(factor, this.doorVec, out);
  }

  /** Advances the drifts and the door's events to the snapshot at `tick`. */
  private advance(tick: number): void {
    const s = this.settings;
    const r = this.wanderRng;
    for (let i = 0; i < this.nScat; i++) {
      if (s.wanderSd > 0) {
        this.refl[2 * i] = this.wA * this.refl[2 * i]! + this.wB * r.gaussian();
        this.refl[2 * i + 1] = this.wA * this.refl[2 * i + 1]! + this.wB * r.gaussian();
      }
      if (this.scatJitter[i]) for (let k = 0; k < 3; k++) this.jitter[3 * i + k] = this.jA1 * this.jitter[3 * i + k]! + this.jB1 * r.gaussian();
    }
    for (let c = 0; c < this.nChains; c++) {
      if (s.chainPhaseSdRad > 0) this.chainPhi[c] = this.cA * this.chainPhi[c]! + this.cPhB * this.chainRng.gaussian();
      if (s.chainGainSdDb > 0) this.chainGdb[c] = this.cA * this.chainGdb[c]! + this.cGB * this.chainRng.gaussian();
    }
    const T = tick / this.rate;
    if (this.door !== null && this.doorNext <= T) {
      // One swing per event; the next event waits for this swing to end.
      const dr = this.doorRng;
      this.doorFrom = this.doorTo;
      this.doorTo = this.doorFrom > 0 ? 0 : dr.uniform(Math.PI / 6, Math.PI / 2);
      this.doorStart = this.doorNext;
      this.doorDur = dr.uniform(1, 2.5);
      this.doorNext = this.doorStart + this.doorDur + exponential(dr, s.doorMeanIntervalS);
    }
  }

  /** Computes the static scatterers' vectors, their sum, their polylines and the chain factors at the current drift state. */
  private snapshot(vec: Float64Array[], sum: Float64Array, pts: Float64Array, chain: Float64Array): void {
    sum.fill(0);
    for (let q = 0; q < this.nScat; q++) {
      const x = this.scatPos[3 * q]! + this.jitter[3 * q]!;
      const y = this.scatPos[3 * q + 1]! + this.jitter[3 * q + 1]!;
      const z = this.scatPos[3 * q + 2]! + this.jitter[3 * q + 2]!;
      const v = vec[q]!;
      v.fill(0);
      this.ch.addScatterer(x, y, z, this.amp0 * this.scatW[q]!, v);
      const rr = 1 + this.refl[2 * q]!;
      const ri = this.refl[2 * q + 1]!;
      for (let i = 0; i < v.length; i += 2) {
        const a = v[i]!;
        const b = v[i + 1]!;
        v[i] = a * rr - b * ri;
        v[i + 1] = a * ri + b * rr;
        sum[i] += v[i]!;
        sum[i + 1] += v[i + 1]!;
      }
      const o = 9 * q;
      pts[o] = this.txC[0]!;
      pts[o + 1] = this.txC[1]!;
      pts[o + 2] = this.txC[2]!;
      pts[o + 3] = x;
      pts[o + 4] = y;
      pts[o + 5] = z;
      pts[o + 6] = this.rxC[0]!;
      pts[o + 7] = this.rxC[1]!;
      pts[o + 8] = this.rxC[2]!;
    }
    for (let c = 0; c < this.nChains; c++) {
      const phi = this.chainPhi0[c]! + this.chainPhi[c]!;
      const gain = Math.pow(10, this.chainGdb[c]! / 20);
      chain[2 * c] = gain * Math.cos(phi);
      chain[2 * c + 1] = gain * Math.sin(phi);
    }
  }
}

/** True when two arrays of the same length hold the same values. */
function sameValues(a: Float64Array, b: Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** out += a * x. */
function axpy(a: number, x: Float64Array, out: Float64Array): void {
  for (let i = 0; i < out.length; i++) out[i] += a * x[i]!;
}

/** An exponential deviate of a mean. */
function exponential(r: Rng, mean: number): number {
  return -mean * Math.log(1 - r.uniform());
}
