/**
 * The refiner's input (issue 19 item 2): each candidate person of the front end's floor maps
 * (operators/floorMap.ts) followed over time, and the features of its last ~6 s, one row per step.
 *
 * A candidate of one map is only a peak; whether it is a person, where exactly, how high, which
 * way they face, what they do and whether they just fell shows over seconds: a peak that persists
 * and drifts at walking speed with Doppler spread over the body's rates is a walker; one that
 * stays put with its power low and Doppler at 0 Hz is someone sitting or lying; a burst of Doppler
 * that ends low in the room is a fall. So the candidates of successive maps are chained into
 * tracks (nearest candidate within {@link TRACK_GATE_M}, strongest first), each track keeps a ring
 * of per-map feature rows, and for every candidate of a map the refiner gets its track's last
 * {@link REFINER_STEPS} rows, {@link REFINER_STRIDE} maps apart (0.32 s at the default hop of 16
 * packets at 100 Hz: 6.4 s), oldest first, with positions relative to the candidate's current one.
 *
 * These tracks are not the service's person tracks (src/pose/tracker.ts gives identities to the
 * refiner's accepted people): they only carry each peak's past into its features, and they are
 * cheap (a few per room, matched greedily).
 *
 * One implementation for the service (operators/refine.ts) and for training (training/ts/
 * refinerData.ts): the training sets are written from exactly these rows.
 */

import type { Candidate } from './candidates.js';

/** What the builder reads of a floor map (operators/floorMap.ts's FloorMapItem is one). */
export interface RefinerMap {
  readonly environmentId: string;
  /** Epoch ms. */
  readonly time: number;
  readonly grid: { readonly nx: number; readonly ny: number; readonly heights: readonly number[] };
  /** The fused map, layer-major. */
  readonly map: Float32Array;
  /** Strongest first. */
  readonly candidates: readonly Candidate[];
  readonly links: readonly string[];
  /** candidates x dopplerBins, fftshifted, 'window'-normalised and summed over links. */
  readonly doppler: Float32Array;
  readonly dopplerBins: number;
  /** Path-length rate of each bin, m/s. */
  readonly dopplerRates: ArrayLike<number>;
}

/** Steps of history the refiner sees per candidate. */
export const REFINER_STEPS = 20;
/** Maps between two steps (2 maps of 16 packets: 0.32 s at 100 Hz). */
export const REFINER_STRIDE = 2;
/** A candidate continues the nearest track within this floor distance, metres. */
export const TRACK_GATE_M = 0.75;
/** A track not continued for this long is dropped, ms. */
export const TRACK_DROP_MS = 1500;
/** Doppler bands: the fused spectrum's bins summed in this many equal bands of path rate. */
export const DOPPLER_BANDS = 8;
/** Patch around the candidate's grid point: (2 PATCH + 1)^2 cells in each layer. */
export const PATCH = 1;

/** Names of a step row's features, in order (the refiner's `feature_names`). */
export const REFINER_FEATURES: readonly string[] = Object.freeze([
  'present',
  'dx',
  'dy',
  'z',
  'log_power',
  'relative_power',
  'rank',
  'links',
  'speed',
  ...Array.from({ length: 3 * (2 * PATCH + 1) ** 2 }, (_, i) => `patch_${i}`),
  ...Array.from({ length: DOPPLER_BANDS }, (_, i) => `doppler_band_${i}`),
  'doppler_total',
  'doppler_still',
  'doppler_mean_rate',
]);
/** Features per step. */
export const REFINER_FEATURE_DIM = REFINER_FEATURES.length;
/** Most layers of the patch (the front end's grid has 3 heights). */
const PATCH_LAYERS = 3;
const F = Object.freeze({
  present: 0,
  dx: 1,
  dy: 2,
  z: 3,
  logPower: 4,
  relativePower: 5,
  rank: 6,
  links: 7,
  speed: 8,
  patch: 9,
  doppler: 9 + PATCH_LAYERS * (2 * PATCH + 1) ** 2,
});
const D_TOTAL = F.doppler + DOPPLER_BANDS;
const D_STILL = D_TOTAL + 1;
const D_RATE = D_TOTAL + 2;
/** Floor of log10 of a power (the fused map's values are shares of each link's total, so > 0 but may be tiny). */
const LOG_FLOOR = -12;
/** Links a step's `links` feature is divided by (the most a default site has plus one). */
const LINKS_SCALE = 4;

/** One followed candidate. */
class Track {
  /** Ring of per-map rows: (REFINER_STEPS * REFINER_STRIDE) x REFINER_FEATURE_DIM. */
  readonly rows: Float32Array;
  /** Absolute floor position of each ring row (x, y); NaN where the track was not seen. */
  readonly pos: Float64Array;
  x: number;
  y: number;
  lastTime: number;
  /** Map count of the environment when the track was last continued. */
  seenAt = -1;

  constructor(
    readonly capacity: number,
    x: number,
    y: number,
    time: number,
  ) {
    this.rows = new Float32Array(capacity * REFINER_FEATURE_DIM);
    this.pos = new Float64Array(capacity * 2).fill(NaN);
    this.x = x;
    this.y = y;
    this.lastTime = time;
  }
}

/** One environment's tracks and its map count. */
interface EnvTracks {
  tracks: Track[];
  /** Maps taken (the next ring slot is maps % capacity). */
  maps: number;
  lastTime: number;
  /** Epoch ms of each ring slot's map. */
  times: Float64Array;
}

/** The refiner's input for one floor map: every candidate's step rows. */
export interface RefinerBatch {
  readonly environmentId: string;
  readonly time: number;
  /** Candidates of the map (its order: strongest first). */
  readonly count: number;
  /** count x REFINER_STEPS x REFINER_FEATURE_DIM, oldest step first. A view of the builder's buffer: copy to keep. */
  readonly features: Float32Array;
  /** count x 3: each candidate's x, y, z (room metres). A view of the builder's buffer. */
  readonly positions: Float32Array;
}

/**
 * Chains the candidates of successive floor maps into tracks and writes each candidate's last
 * {@link REFINER_STEPS} steps of features. One per service stage or training stream; environments
 * are kept apart. Buffers are preallocated for `maxCandidates`; a map allocates only the rows of
 * new tracks.
 *
 * @example
 * const input = new RefinerInput(6);
 * floorMaps$.subscribe((m) => { const b = input.push(m); runRefiner(b.features, b.count); });
 */
export class RefinerInput {
  private readonly envs = new Map<string, EnvTracks>();
  private readonly features: Float32Array;
  private readonly positions: Float32Array;
  private readonly capacity = REFINER_STEPS * REFINER_STRIDE;
  private readonly assigned: Int32Array;

  /**
   * @param maxCandidates most candidates per map (the floorMap stage's `maxCandidates`)
   * @throws RangeError for a count outside 1..64
   */
  constructor(readonly maxCandidates: number) {
    if (!(Number.isInteger(maxCandidates) && maxCandidates >= 1 && maxCandidates <= 64))
      throw new RangeError('RefinerInput: maxCandidates must be an integer in [1, 64]');
    this.features = new Float32Array(maxCandidates * REFINER_STEPS * REFINER_FEATURE_DIM);
    this.positions = new Float32Array(maxCandidates * 3);
    this.assigned = new Int32Array(maxCandidates);
  }

  /** Forgets every environment's tracks (e.g. the stream restarted). */
  clear(): void {
    this.envs.clear();
  }

  /**
   * Takes one floor map: continues or starts a track per candidate (strongest first, nearest
   * unclaimed track within {@link TRACK_GATE_M}), records the map's row of each, drops tracks not
   * seen for {@link TRACK_DROP_MS}, and writes every candidate's steps (oldest first; a step whose
   * map did not continue the track is all zeros, `present` 0). Time going back clears the
   * environment's tracks.
   * @param m the floor map (candidates beyond `maxCandidates` are left out)
   * @returns the candidates' features and positions (views of this builder's buffers, valid until the next push)
   */
  push(m: RefinerMap): RefinerBatch {
    let env = this.envs.get(m.environmentId);
    if (!env || m.time < env.lastTime) {
      env = { tracks: [], maps: 0, lastTime: m.time, times: new Float64Array(this.capacity).fill(NaN) };
      this.envs.set(m.environmentId, env);
    }
    env.lastTime = m.time;
    const count = Math.min(m.candidates.length, this.maxCandidates);
    const tracks = env.tracks;
    // Continue tracks: strongest candidate first takes its nearest free track.
    for (let i = 0; i < count; i++) {
      const c = m.candidates[i]!;
      let best = -1;
      let bestD = TRACK_GATE_M;
      for (let t = 0; t < tracks.length; t++) {
        const tr = tracks[t]!;
        if (tr.seenAt === env.maps) continue;
        const d = Math.hypot(tr.x - c.x, tr.y - c.y);
        if (d <= bestD) {
          bestD = d;
          best = t;
        }
      }
      if (best < 0) {
        tracks.push(new Track(this.capacity, c.x, c.y, m.time));
        best = tracks.length - 1;
      }
      tracks[best]!.seenAt = env.maps;
      this.assigned[i] = best;
    }
    // Record this map's row of every track (zeros for those not continued).
    const slot = env.maps % this.capacity;
    const first = count > 0 ? m.candidates[0]!.power : 0;
    for (let t = 0; t < tracks.length; t++) {
      const tr = tracks[t]!;
      const o = slot * REFINER_FEATURE_DIM;
      tr.rows.fill(0, o, o + REFINER_FEATURE_DIM);
      tr.pos[2 * slot] = NaN;
      tr.pos[2 * slot + 1] = NaN;
    }
    for (let i = 0; i < count; i++) {
      const tr = tracks[this.assigned[i]!]!;
      const c = m.candidates[i]!;
      const o = slot * REFINER_FEATURE_DIM;
      const r = tr.rows;
      // Speed over the last step (REFINER_STRIDE maps back), when the track was seen then.
      const back = (env.maps - REFINER_STRIDE + this.capacity * 2) % this.capacity;
      const px = tr.pos[2 * back]!;
      const py = tr.pos[2 * back + 1]!;
      const dt = (m.time - env.times[back]!) / 1000;
      r[o + F.present] = 1;
      r[o + F.z] = c.z;
      r[o + F.logPower] = Math.max(LOG_FLOOR, Math.log10(c.power > 0 ? c.power : 1e-30));
      r[o + F.relativePower] = first > 0 ? c.power / first : 0;
      r[o + F.rank] = i / this.maxCandidates;
      r[o + F.links] = m.links.length / LINKS_SCALE;
      r[o + F.speed] = env.maps >= REFINER_STRIDE && !Number.isNaN(px) && dt > 0 ? Math.hypot(c.x - px, c.y - py) / dt : 0;
      writePatch(m, c.index, c.power, r, o + F.patch);
      writeDoppler(m, i, r, o + F.doppler);
      tr.pos[2 * slot] = c.x;
      tr.pos[2 * slot + 1] = c.y;
      tr.x = c.x;
      tr.y = c.y;
      tr.lastTime = m.time;
    }
    env.times[slot] = m.time;
    env.maps++;
    // Write each candidate's steps, oldest first, positions relative to now.
    const stepSize = REFINER_STEPS * REFINER_FEATURE_DIM;
    for (let i = 0; i < count; i++) {
      const tr = tracks[this.assigned[i]!]!;
      const c = m.candidates[i]!;
      this.positions[3 * i] = c.x;
      this.positions[3 * i + 1] = c.y;
      this.positions[3 * i + 2] = c.z;
      for (let s = 0; s < REFINER_STEPS; s++) {
        const mapsBack = (REFINER_STEPS - 1 - s) * REFINER_STRIDE;
        const out = i * stepSize + s * REFINER_FEATURE_DIM;
        if (mapsBack >= env.maps) {
          this.features.fill(0, out, out + REFINER_FEATURE_DIM);
          continue;
        }
        const sl = (env.maps - 1 - mapsBack) % this.capacity;
        const src = sl * REFINER_FEATURE_DIM;
        for (let f = 0; f < REFINER_FEATURE_DIM; f++) this.features[out + f] = tr.rows[src + f]!;
        if (this.features[out + F.present] === 1) {
          this.features[out + F.dx] = tr.pos[2 * sl]! - c.x;
          this.features[out + F.dy] = tr.pos[2 * sl + 1]! - c.y;
        }
      }
    }
    // Drop tracks gone quiet (after writing: a candidate's own track is never dropped here).
    for (let t = tracks.length - 1; t >= 0; t--) if (m.time - tracks[t]!.lastTime > TRACK_DROP_MS) tracks.splice(t, 1);
    return {
      environmentId: m.environmentId,
      time: m.time,
      count,
      features: this.features.subarray(0, count * stepSize),
      positions: this.positions.subarray(0, count * 3),
    };
  }
}

/** The (2 PATCH + 1)^2 cells around grid point `index` in each layer, over the candidate's power; 0 outside the grid. */
function writePatch(m: RefinerMap, index: number, power: number, out: Float32Array, o: number): void {
  const { nx, ny } = m.grid;
  const cells = nx * ny;
  const layers = Math.min(PATCH_LAYERS, m.grid.heights.length);
  const c = index % cells;
  const iy = Math.floor(c / nx);
  const ix = c - iy * nx;
  const scale = power > 0 ? 1 / power : 0;
  let k = o;
  for (let l = 0; l < PATCH_LAYERS; l++) {
    for (let dy = -PATCH; dy <= PATCH; dy++) {
      for (let dx = -PATCH; dx <= PATCH; dx++, k++) {
        const x = ix + dx;
        const y = iy + dy;
        out[k] = l < layers && x >= 0 && x < nx && y >= 0 && y < ny ? m.map[l * cells + y * nx + x]! * scale : 0;
      }
    }
  }
}

/** The candidate's fused Doppler row in bands, its total, its share within one bin of 0 Hz and its mean |path rate|. */
function writeDoppler(m: RefinerMap, i: number, out: Float32Array, o: number): void {
  const bins = m.dopplerBins;
  const links = Math.max(1, m.links.length);
  const row = i * bins;
  if (row + bins > m.doppler.length) return;
  const per = bins / DOPPLER_BANDS;
  let total = 0;
  let still = 0;
  let rate = 0;
  const zero = bins / 2;
  for (let b = 0; b < bins; b++) {
    const p = m.doppler[row + b]!;
    total += p;
    if (Math.abs(b - zero) <= 1) still += p;
    rate += p * Math.abs(m.dopplerRates[b]!);
    const band = Math.floor(b / per);
    out[o + band] = out[o + band]! + p / links;
  }
  out[D_TOTAL - F.doppler + o] = total / links;
  out[D_STILL - F.doppler + o] = total > 0 ? still / total : 0;
  out[D_RATE - F.doppler + o] = total > 0 ? rate / total : 0;
}
