/**
 * Beamforms the moving part of a link's channel onto a floor grid in room coordinates (issue 19
 * item 1, src/physics/types.ts), with the exact bistatic near-field steering, and fuses the maps of
 * several links.
 *
 * Steering. A point scatterer at g puts on subcarrier k, receive antenna m and transmit antenna n
 * the phase exp(-j 2 pi f_k (|t_n - g| + |g - r_m|) / c). That factors exactly into a transmit part
 * T[k,n](g) = exp(-j 2 pi f_k |t_n - g| / c) and a receive part R[k,m](g) = exp(-j 2 pi f_k |g - r_m| / c),
 * and each of those into a carrier part exp(-j 2 pi f_c d / c) times a delay part
 * (exp(-j 2 pi 312.5 kHz d / c))^idx_k. The beamformer stores, per grid point, the conjugates of T
 * and R over every subcarrier (computed once per geometry, one sin/cos per antenna and point, the
 * subcarriers by recurrence on the delay part) in one Float32Array. Two ways to contract a vector h
 * (method option):
 *
 * - 'factored': a(g)^H h = sum_k sum_m conj(R[k,m]) sum_n conj(T[k,n]) h[k,m,n], transmit antennas
 *   first, then receive antennas, then subcarriers: (nTx + 1) nRx nSub complex multiply-adds per
 *   point and vector. Exact to float32; the reference.
 * - 'delay' (default): per antenna pair q = (m, n) the steering is the carrier part of the pair's
 *   bistatic length L = |t_n - g| + |g - r_m| times the delay part exp(+j b idx_k L),
 *   b = 2 pi 312.5 kHz / c, which is smooth in L (b idx L changes by under 0.2 rad per metre at
 *   idx 28). So per window each vector's subcarrier sum S_q(L) = sum_k h[k,q] exp(+j b idx_k L) is
 *   tabulated with its first three derivatives on nodes 0.25 m apart spanning the grid's lengths,
 *   and per point a(g)^H h = sum_q exp(+j 2 pi f_c L_q / c) S_q(L_q), S_q by its third-order Taylor
 *   expansion at the nearest node (remainder (b idx 0.125 m)^4 / 24 < 2e-7 for 114 subcarriers).
 *   Measured against 'factored' on the default site, 30 and 114 subcarriers: maps agree to 1.1e-7
 *   of their peak and 2.4e-7 relative at every point (float32 rounding); 5-8 times faster. The
 *   tables are taken through N Chebyshev samples of each S_q (10-14 points instead of 72 nodes x
 *   orders, {@link chebyshevTables}): the same tables to 1e-11, the scan 1.3x, maps identical.
 *
 * Its power, over |a|^2 = nSub nRx nTx (the steering has unit entries), summed over the window is
 * the beam power P(g).
 *
 * Window reduction. Summing |a^H h_s|^2 over every one of 64 snapshots costs 64 contractions per
 * grid point; the beamformer instead takes the window's top r principal components (default 4).
 * With the snapshots as the columns of H (D x W), the top-r eigen-subspace Q (W x r, orthonormal)
 * of the Gram matrix G = H^H H is found by subspace iteration, Q <- orthonormalise(H^H (H Q)),
 * from the unit vectors of the r strongest snapshots (deterministic, no random start; G itself is
 * never formed: 2 W D r per pass instead of W^2 D / 2), and the r vectors w_i = H q_i are
 * beamformed: sum_i |a^H w_i|^2 = a^H H Q Q^H H^H a, which is P(g) restricted to the window's r
 * strongest directions of motion (equal to P(g) when the window's rank is at most r). Measured on
 * the simulator, two people walking, 64 packets: the top 4 components keep 99.91-99.97 % of each
 * link's moving power after one pass beyond the first, and more passes change that by under 1e-4
 * ({@link FloorBeamformer.capturedFraction} says how much each window kept).
 *
 * Warm start (BeamformerOptions.warmStart, what `floorMap` uses): a link's windows overlap (64
 * packets every 16), so its last window's components H_prev q_i already span most of this window's
 * directions of motion; the first pass starts from them (orthonormalise(H^H Y_prev)) instead of
 * from the strongest snapshots, and no pass follows: 2 products with the window instead of 4.
 * Measured on the simulator (default site, 2 and 3 people, default impairments), the share of the
 * converged (30 passes) top-4 power that a window misses: median 9e-4 warm without an extra pass,
 * 8e-4 cold with one, 8e-3 cold without; "moved" candidates (docs/physics.md "Speed") against the
 * converged components 0.51 %, 0.38 % and 2.44 %.
 * */

import type { MovingWindow } from './types.js';
import { SUBCARRIER_SPACING_HZ } from '../csi/frame.js';
import { SPEED_OF_LIGHT } from '../csi/radios.js';
import type { LinkGeometry } from './geometry.js';

/** Default grid cell, metres. */
export const DEFAULT_CELL_M = 0.2;
/** Default heights of the grid's layers, metres above the floor (legs, pelvis, chest). */
export const DEFAULT_HEIGHTS_M: readonly number[] = Object.freeze([0.5, 1.0, 1.4]);
/** Default number of principal components of a window that are beamformed. */
export const DEFAULT_COMPONENTS = 4;

/** Where to beamform: a floor rectangle sampled every `cell` metres at a few heights. */
export interface GridSpec {
  /** First and last x of the grid, metres (points at x0, x0 + cell, ... up to x1). */
  readonly x0: number;
  readonly x1: number;
  /** First and last y of the grid, metres. */
  readonly y0: number;
  readonly y1: number;
  /** Spacing of the points, metres; default DEFAULT_CELL_M (0.2). */
  readonly cell?: number;
  /** Heights of the layers, metres; default DEFAULT_HEIGHTS_M. */
  readonly heights?: readonly number[];
}

/**
 * A resolved grid. A map over it is a Float32Array of `size` values, layer-major:
 * `map[(h * ny + iy) * nx + ix]` is the point (x0 + ix cell, y0 + iy cell, heights[h]).
 */
export interface FloorGrid {
  readonly x0: number;
  readonly y0: number;
  readonly cell: number;
  readonly nx: number;
  readonly ny: number;
  readonly heights: Float64Array;
  /** Floor cells per layer: nx * ny. */
  readonly cells: number;
  /** Values of a map: cells * heights.length. */
  readonly size: number;
}

/**
 * Resolves a grid spec: the number of points along x and y (x1 and y1 included when they fall on
 * the cell pitch, to 1e-6 of a cell) and the layers.
 * @param spec the rectangle, cell and heights
 * @returns the grid
 * @throws RangeError for an empty or inverted rectangle, a non-positive cell or no heights
 * @example
 * const g = floorGrid({ x0: 0, x1: 6, y0: 0, y1: 5 });
 * [g.nx, g.ny, g.size]; // [31, 26, 2418]
 */
export function floorGrid(spec: GridSpec): FloorGrid {
  const cell = spec.cell ?? DEFAULT_CELL_M;
  const heights = Float64Array.from(spec.heights ?? DEFAULT_HEIGHTS_M);
  if (!(cell > 0)) throw new RangeError('floorGrid: cell must be positive');
  if (!(spec.x1 >= spec.x0 && spec.y1 >= spec.y0)) throw new RangeError('floorGrid: need x0 <= x1 and y0 <= y1');
  if (heights.length === 0 || !heights.every(Number.isFinite)) throw new RangeError('floorGrid: need at least one finite height');
  const nx = Math.floor((spec.x1 - spec.x0) / cell + 1e-6) + 1;
  const ny = Math.floor((spec.y1 - spec.y0) / cell + 1e-6) + 1;
  return { x0: spec.x0, y0: spec.y0, cell, nx, ny, heights, cells: nx * ny, size: nx * ny * heights.length };
}

/**
 * The room point of a map index.
 * @param grid the grid
 * @param i index into a map over it
 * @returns x, y, z in metres, and the layer
 * @example
 * gridPoint(floorGrid({ x0: 0, x1: 6, y0: 0, y1: 5 }), 31); // { x: 0, y: 0.2, z: 0.5, layer: 0 }
 */
export function gridPoint(grid: FloorGrid, i: number): { x: number; y: number; z: number; layer: number } {
  const layer = Math.floor(i / grid.cells);
  const c = i - layer * grid.cells;
  const iy = Math.floor(c / grid.nx);
  const ix = c - iy * grid.nx;
  return { x: grid.x0 + ix * grid.cell, y: grid.y0 + iy * grid.cell, z: grid.heights[layer]!, layer };
}

/**
 * Writes exp(+j 2 pi f_k d / c) for every subcarrier k into out (interleaved, stride `stride`
 * complex values from `offset`): the conjugate of one leg's steering. One sin/cos for the first
 * subcarrier, then the delay part's powers by recurrence.
 */
function legPhasors(d: number, centreHz: number, subs: Int16Array, out: Float32Array, offset: number, stride: number): void {
  // Cycles of the first subcarrier, reduced to a fraction before the trig (d f / c is ~100 cycles).
  const cycles = ((centreHz + subs[0]! * SUBCARRIER_SPACING_HZ) * d) / SPEED_OF_LIGHT;
  const frac = cycles - Math.floor(cycles);
  let pr = Math.cos(2 * Math.PI * frac);
  let pi = Math.sin(2 * Math.PI * frac);
  const b = (2 * Math.PI * SUBCARRIER_SPACING_HZ * d) / SPEED_OF_LIGHT;
  const zr = Math.cos(b);
  const zi = Math.sin(b);
  let o = offset;
  out[o] = pr;
  out[o + 1] = pi;
  for (let k = 1; k < subs.length; k++) {
    let step = subs[k]! - subs[k - 1]!;
    // Multiply by z^step (z or conj(z), |step| times; steps are 1 or 2 in every 802.11 layout).
    const si = step < 0 ? -zi : zi;
    if (step < 0) step = -step;
    for (let s = 0; s < step; s++) {
      const r = pr * zr - pi * si;
      pi = pr * si + pi * zr;
      pr = r;
    }
    o += stride;
    out[o] = pr;
    out[o + 1] = pi;
  }
}

/**
 * A window's top principal components ({@link FloorBeamformer.principalComponents}): the window H
 * (D x W, the snapshots as columns) projected on them is sum_i w_i q_i^H.
 */
export interface PrincipalComponents {
  /** The vectors w_i = H q_i: `count` of D complex values each, interleaved, vector i from 2 i D. */
  readonly vectors: Float32Array;
  /** The unit vectors q_i over the snapshots: W complex values each, vector i from 2 i W. */
  readonly coefficients: Float64Array;
  /** r, the number of components. */
  readonly count: number;
  /** W, the window's snapshots. */
  readonly snapshots: number;
}

/** Options of {@link FloorBeamformer}. */
export interface BeamformerOptions {
  /**
   * Principal components of each window to beamform (default DEFAULT_COMPONENTS, 4); 0 beamforms
   * every snapshot (the plain sum, exact, about W / r times slower).
   */
  readonly components?: number;
  /** Subspace iterations for the components after the first (default 1: a walking person's captured power changes by less than 1e-4 with more). */
  readonly iterations?: number;
  /**
   * Start each window's subspace iteration from the previous window's components (the same
   * beamformer's last {@link FloorBeamformer.reduce}) instead of the strongest snapshots (default
   * false). Windows that overlap (the short view's 64 packets every 16) share most of their
   * directions of motion, so the first pass starts near the answer and `iterations: 0` is about
   * as close to the top components as a cold start with one extra pass (docs/physics.md "Speed").
   * The map then depends on the windows before (a beamformer per link, fed in time order).
   */
  readonly warmStart?: boolean;
  /**
   * How a grid point's steering is contracted (module comment): 'delay' (default) tabulates each
   * antenna pair's subcarrier sum per window on a 1-D grid of path lengths and expands it to third
   * order around the nearest node (relative error below 1e-6, measured against 'factored' in
   * test/physics/beamform.test.ts), then takes the carrier part per point; 'factored' contracts the
   * stored per-point factors over transmit antennas, receive antennas and subcarriers (exact to
   * float32, about 10 times slower).
   */
  readonly method?: 'delay' | 'factored';
}

/** Two points whose distances to every antenna agree to this are beamformed once, metres (a phase of 1e-7 rad at 5 GHz). */
const ALIAS_M = 1e-9;
/** Spacing of the path-length nodes of the 'delay' method, metres. */
const NODE_M = 0.25;
/** Taylor terms (orders 0..3) of the 'delay' method. */
const ORDERS = 4;

/**
 * The floor beamformer of one link: built once from the link's geometry and a grid (the steering
 * factors of every grid point are computed then), it turns each {@link MovingWindow} into a beam
 * power map without allocating (buffers grow only when a window has more snapshots than any before).
 *
 * Measured (bench/beamform.ts, `npm run bench -- --only beamform`, one core, CPU time; the 2-core
 * machine was shared, so the figures to compare are the ratios within one run): default room
 * 6 x 5 m, 0.2 m cells, 3 heights (2418 points), 30 subcarriers, 3 x 3 antennas, a 64-snapshot
 * window of one person walking, 4 components, 'delay' method: 1.2-1.3 ms per window per link, of
 * which 0.65 ms {@link reduce} (the principal components), 0.16 ms the per-window tables and 0.4 ms
 * the scan of the points; before issue 19's speed work 2.6 ms (2.1x in one interleaved run, the
 * maps the same to float32). Every snapshot beamformed ('delay', no reduction) 9-15 ms, the
 * 'factored' method 6-10 ms; building one link's beamformer 15-19 ms (the per-point factors of
 * 'factored' and {@link steering} are built on first use).
 *
 * Points at the same distance from every antenna as a point of a lower layer (the same floor cell
 * mirrored about a height all antennas share: on DEFAULT_RADIOS, all at 1.2 m, the 1.4 m layer is
 * the 1.0 m one) are beamformed once and copied.
 *
 * @example
 * const geom = linkGeometry(link.tx, link.rx, frame.subcarriers, centreFrequencyHz(frame.channel, frame.bandwidthMhz));
 * const bf = new FloorBeamformer(geom, { x0: 0, x1: 6, y0: 0, y1: 5 });
 * const map = new Float32Array(bf.grid.size);
 * bf.beamform(window, map); // map[(h * ny + iy) * nx + ix]: beam power at that point
 */
export class FloorBeamformer {
  readonly grid: FloorGrid;
  readonly geometry: LinkGeometry;
  readonly nSub: number;
  readonly nRx: number;
  readonly nTx: number;
  /** Principal components beamformed per window (0: every snapshot). */
  readonly components: number;
  /** The steering factors once built ({@link factors}). */
  private factorsBuf: Float32Array | null = null;
  /** Per point: the lower-layer point with the same antenna distances (beamformed once, copied), or -1. */
  private readonly alias: Int32Array;
  /** The points that are not aliases (null: every point). */
  private readonly canonical: Int32Array | null;
  /** Scan work: the points computed, and stamps marking the points of one call. */
  private readonly work: Int32Array;
  private readonly stamp: Uint32Array;
  private calls = 0;
  private readonly iterations: number;
  private readonly warmStart: boolean;
  /** Whether this.y holds the last window's components (the warm start's start). */
  private warm = false;
  /** 'delay' or 'factored' (BeamformerOptions.method). */
  readonly method: 'delay' | 'factored';
  /** 'delay': per point and antenna pair (q = m * nTx + n): offset from the node (m), carrier phasor (re, im). */
  private readonly pairs: Float32Array;
  /** 'delay': per point and pair, where its node's expansion starts in a group's tables: (q * nodes + j) * 8 * ORDERS. */
  private readonly pairNodes: Int32Array;
  /** 'delay': the number of path-length nodes. */
  private readonly nodes: number;
  /** 'delay': E[k, j, o] = exp(+j b idx_k L_j) (j b idx_k)^o / o!, b = 2 pi 312.5 kHz / c; complex, (j * ORDERS + o) * nSub + k (the subcarriers of one node and order together). */
  private readonly expansion: Float64Array;
  /**
   * 'delay', the tables through Chebyshev samples (null: directly from `expansion`): `chebPoints`
   * N, `chebSteer` V[i, k] = exp(+j b idx_k x_i) at the N Chebyshev points x_i of the nodes' span
   * (complex, i * nSub + k), `chebWeights` U[jo, i] (real, jo * N + i): the o-th derivative / o! at
   * node j of the degree N - 1 polynomial through the points, so that E = U V (see {@link chebyshevTables}).
   */
  private readonly chebPoints: number;
  private readonly chebSteer: Float64Array | null;
  private readonly chebWeights: Float64Array | null;
  private chebSums = new Float64Array(0);
  private tables = new Float64Array(0);
  /** One antenna pair's entries of a group of four vectors, per subcarrier: (k * 4 + v), complex. */
  private pairVecs = new Float64Array(0);
  // Work buffers (grown on demand, never per call in steady state).
  private norms = new Float64Array(0);
  private y = new Float64Array(0);
  private q = new Float64Array(0);
  private z = new Float64Array(0);
  private vecs = new Float32Array(0);
  private zero = new Float32Array(0);
  private captured = 1;
  /** The vectors of the last reduce (this.vecs, or the window's data), and how many. */
  private source: Float32Array = new Float32Array(0);
  private count = 0;
  private lastSnapshots = 0;
  /** Bumped by every reduce; the 'delay' tables belong to tablesOf's. */
  private generation = 0;
  private tablesOf = -1;

  /**
   * @param geometry the link's antennas and subcarriers ({@link linkGeometry})
   * @param spec the grid (or a resolved {@link FloorGrid})
   * @param options principal components and iterations
   * @throws RangeError for a bad grid or option
   */
  constructor(geometry: LinkGeometry, spec: GridSpec | FloorGrid, options: BeamformerOptions = {}) {
    this.geometry = geometry;
    this.grid = 'cells' in spec ? spec : floorGrid(spec);
    this.nSub = geometry.subcarriers.length;
    this.nRx = geometry.nRx;
    this.nTx = geometry.nTx;
    this.components = options.components ?? DEFAULT_COMPONENTS;
    this.iterations = options.iterations ?? 1;
    this.warmStart = options.warmStart ?? false;
    this.method = options.method ?? 'delay';
    if (this.method !== 'delay' && this.method !== 'factored') throw new RangeError("FloorBeamformer: method must be 'delay' or 'factored'");
    if (!(Number.isInteger(this.components) && this.components >= 0)) throw new RangeError('FloorBeamformer: components must be an integer >= 0');
    if (!(Number.isInteger(this.iterations) && this.iterations >= 0)) throw new RangeError('FloorBeamformer: iterations must be an integer >= 0');
    if (this.nSub < 1) throw new RangeError('FloorBeamformer: no subcarriers');
    const { nSub, nRx, nTx, grid } = this;
    const tp = geometry.txPositions;
    const rp = geometry.rxPositions;
    // Points whose distance to every antenna equals that of a point of a lower layer (the same floor
    // cell mirrored about a common antenna height, as on a site whose radios all hang at one
    // height) have the same steering: they are beamformed once and copied.
    const per = nTx + nRx;
    const dist = new Float64Array(grid.size * per);
    for (let p = 0; p < grid.size; p++) {
      const g = gridPoint(grid, p);
      for (let n = 0; n < nTx; n++) dist[p * per + n] = Math.hypot(tp[3 * n]! - g.x, tp[3 * n + 1]! - g.y, tp[3 * n + 2]! - g.z);
      for (let m = 0; m < nRx; m++) dist[p * per + nTx + m] = Math.hypot(rp[3 * m]! - g.x, rp[3 * m + 1]! - g.y, rp[3 * m + 2]! - g.z);
    }
    this.alias = new Int32Array(grid.size).fill(-1);
    const canonical: number[] = [];
    for (let p = 0; p < grid.size; p++) {
      const layer = Math.floor(p / grid.cells);
      const c = p - layer * grid.cells;
      for (let h = 0; h < layer && this.alias[p]! < 0; h++) {
        const q = h * grid.cells + c;
        let same = this.alias[q]! < 0;
        for (let a = 0; a < per && same; a++) same = Math.abs(dist[p * per + a]! - dist[q * per + a]!) <= ALIAS_M;
        if (same) this.alias[p] = q;
      }
      if (this.alias[p]! < 0) canonical.push(p);
    }
    this.canonical = canonical.length < grid.size ? Int32Array.from(canonical) : null;
    this.stamp = new Uint32Array(grid.size);
    this.work = new Int32Array(grid.size);
    // The 'delay' method: every pair's bistatic length at every point, its node and carrier phasor.
    const nPair = nRx * nTx;
    const lengths = new Float64Array(grid.size * nPair);
    let lo = Infinity;
    let hi = -Infinity;
    for (let p = 0; p < grid.size; p++) {
      for (let m = 0; m < nRx; m++) {
        const dr = dist[p * per + nTx + m]!;
        for (let n = 0; n < nTx; n++) {
          const L = dr + dist[p * per + n]!;
          lengths[p * nPair + m * nTx + n] = L;
          lo = Math.min(lo, L);
          hi = Math.max(hi, L);
        }
      }
    }
    this.nodes = Math.floor((hi - lo) / NODE_M) + 2;
    this.pairs = new Float32Array(3 * grid.size * nPair);
    this.pairNodes = new Int32Array(grid.size * nPair);
    for (let i = 0; i < lengths.length; i++) {
      const L = lengths[i]!;
      const j = Math.round((L - lo) / NODE_M);
      const cycles = (geometry.centreHz * L) / SPEED_OF_LIGHT;
      const ph = 2 * Math.PI * (cycles - Math.floor(cycles));
      this.pairNodes[i] = ((i % nPair) * this.nodes + j) * 8 * ORDERS;
      this.pairs[3 * i] = L - (lo + j * NODE_M);
      this.pairs[3 * i + 1] = Math.cos(ph);
      this.pairs[3 * i + 2] = Math.sin(ph);
    }
    const b = (2 * Math.PI * SUBCARRIER_SPACING_HZ) / SPEED_OF_LIGHT;
    this.expansion = new Float64Array(2 * nSub * this.nodes * ORDERS);
    for (let k = 0; k < nSub; k++) {
      const x = b * geometry.subcarriers[k]!;
      for (let j = 0; j < this.nodes; j++) {
        const ph = x * (lo + j * NODE_M);
        let er = Math.cos(ph);
        let ei = Math.sin(ph);
        for (let o = 0; o < ORDERS; o++) {
          const e = 2 * ((j * ORDERS + o) * nSub + k);
          this.expansion[e] = er;
          this.expansion[e + 1] = ei;
          // Next order: times j x / (o + 1).
          const f = x / (o + 1);
          const nr = -ei * f;
          ei = er * f;
          er = nr;
        }
      }
    }
    const cheb = chebyshevTables(geometry.subcarriers, b, lo, this.nodes);
    this.chebPoints = cheb ? cheb.points : 0;
    this.chebSteer = cheb ? cheb.steer : null;
    this.chebWeights = cheb ? cheb.weights : null;
  }

  /**
   * Per grid point, per subcarrier: conj(T[k, 0..nTx-1]) then conj(R[k, 0..nRx-1]), interleaved
   * complex: point p, subcarrier k starts at 2 * (p * nSub + k) * (nTx + nRx). Built on first use
   * (the 'factored' method and {@link steering}; 'delay' does not need them: 3.5 MB per link on
   * the default grid).
   */
  private get factors(): Float32Array {
    if (this.factorsBuf) return this.factorsBuf;
    const { nSub, nRx, nTx, grid, geometry } = this;
    const per = nTx + nRx;
    const F = new Float32Array(2 * grid.size * nSub * per);
    const tp = geometry.txPositions;
    const rp = geometry.rxPositions;
    const stride = 2 * per;
    for (let p = 0; p < grid.size; p++) {
      const g = gridPoint(grid, p);
      const base = 2 * p * nSub * per;
      for (let n = 0; n < nTx; n++) {
        const d = Math.hypot(tp[3 * n]! - g.x, tp[3 * n + 1]! - g.y, tp[3 * n + 2]! - g.z);
        legPhasors(d, geometry.centreHz, geometry.subcarriers, F, base + 2 * n, stride);
      }
      for (let m = 0; m < nRx; m++) {
        const d = Math.hypot(rp[3 * m]! - g.x, rp[3 * m + 1]! - g.y, rp[3 * m + 2]! - g.z);
        legPhasors(d, geometry.centreHz, geometry.subcarriers, F, base + 2 * (nTx + m), stride);
      }
    }
    this.factorsBuf = F;
    return F;
  }

  /**
   * The last {@link reduce}d window's principal components, or null when it beamformed every
   * snapshot (or none): `vectors` the r vectors w_i = H q_i (D complex each, interleaved, vector i
   * from 2 i D), `coefficients` the q_i (W complex each, vector i from 2 i W), so that the window's
   * snapshot s projected on them is sum_i w_i conj(q_i[s]). Valid until the next reduce.
   */
  get principalComponents(): PrincipalComponents | null {
    if (this.source !== this.vecs || this.count === 0) return null;
    return { vectors: this.vecs, coefficients: this.q, count: this.count, snapshots: this.lastSnapshots };
  }

  /**
   * Share of the last window's moving power (trace of its Gram matrix) that its beamformed
   * components kept; 1 when every snapshot was beamformed or the window had no power.
   */
  get capturedFraction(): number {
    return this.captured;
  }

  /**
   * The steering vector of a grid point rebuilt from the stored factors: a[k,m,n] = T[k,n] R[k,m]
   * (not its conjugate), in the frame's complex order, for checking the factoring.
   * @param point index into a map
   * @param out nSub * nRx * nTx complex, interleaved (allocated when omitted)
   * @returns out
   * @example
   * const a = bf.steering(0); // a[2c], a[2c+1]: re, im of complex index c = (k * nRx + m) * nTx + n
   */
  steering(point: number, out?: Float32Array): Float32Array {
    const { nSub, nRx, nTx } = this;
    const per = nTx + nRx;
    const o = out ?? new Float32Array(2 * nSub * nRx * nTx);
    const F = this.factors;
    for (let k = 0; k < nSub; k++) {
      const b = 2 * (point * nSub + k) * per;
      for (let m = 0; m < nRx; m++) {
        const rr = F[b + 2 * (nTx + m)]!;
        const ri = F[b + 2 * (nTx + m) + 1]!;
        for (let n = 0; n < nTx; n++) {
          const tr = F[b + 2 * n]!;
          const ti = F[b + 2 * n + 1]!;
          const c = 2 * ((k * nRx + m) * nTx + n);
          // Stored are the conjugates: conj(conj(T) conj(R)).
          o[c] = tr * rr - ti * ri;
          o[c + 1] = -(tr * ri + ti * rr);
        }
      }
    }
    return o;
  }

  /**
   * Beam power of a window at every grid point: P(g) = sum_i |a(g)^H w_i|^2 / |a|^2 over the
   * window's top `components` principal components w_i (or over every snapshot when components is
   * 0). No allocation per call. The same as {@link reduce} then {@link scan} over every point.
   * @param w the window (its nSub, nRx, nTx must be the geometry's)
   * @param out the map, grid.size values (overwritten)
   * @returns out
   * @throws RangeError when the window's shape is not the link's or out is too short
   * @example
   * bf.beamform(window, map);
   */
  beamform(w: MovingWindow, out: Float32Array): Float32Array {
    this.reduce(w);
    return this.scan(out);
  }

  /**
   * The first half of {@link beamform}: reduces a window to the vectors that are beamformed (its
   * top `components` principal components, or every snapshot), kept until the next call; then
   * {@link scan} takes the beam power at any grid points, e.g. a coarse grid first and the fine
   * cells around its peaks after (coarse-to-fine search, operators/floorMap.ts). With 0 components
   * the vectors are the window's own data, so the window must not change before the scans.
   * @param w the window (its nSub, nRx, nTx must be the geometry's)
   * @returns the number of vectors (0 for an empty window)
   * @throws RangeError when the window's shape is not the link's
   * @example
   * bf.reduce(window);
   * bf.scan(map, coarse, coarse.length); // then bf.scan(map, fine, n) around the peaks
   */
  reduce(w: MovingWindow): number {
    const { nSub, nRx, nTx } = this;
    if (w.nSub !== nSub || w.nRx !== nRx || w.nTx !== nTx) throw new RangeError('FloorBeamformer: window shape differs from the link geometry');
    const D = nSub * nRx * nTx;
    const W = w.snapshots;
    this.generation++;
    this.lastSnapshots = W;
    if (W <= 0) {
      this.count = 0;
      this.captured = 1;
    } else if (this.components === 0 || this.components >= W) {
      this.source = w.data;
      this.count = W;
      this.captured = 1;
    } else {
      this.count = this.principal(w.data, W, D);
      this.source = this.vecs;
    }
    return this.count;
  }

  /**
   * Beam power of the last {@link reduce}d window at grid points: out[p] = P(p) for every point
   * (points omitted) or for points[0 .. count - 1]; other entries of out are left as they are.
   * The 'delay' method's per-window tables are built by the first scan after a reduce.
   * @param out a map, grid.size values
   * @param points grid indices (omitted: all)
   * @param count how many of points (default points.length)
   * @returns out
   * @throws RangeError when out is too short or a point is outside the grid
   * @example
   * bf.scan(map, fineCells, n);
   */
  scan(out: Float32Array, points?: Int32Array, count?: number): Float32Array {
    const size = this.grid.size;
    if (out.length < size) throw new RangeError('FloorBeamformer: out is shorter than the grid');
    const n = points ? (count ?? points.length) : size;
    if (points) {
      if (!(n >= 0 && n <= points.length)) throw new RangeError('FloorBeamformer: count exceeds the points');
      for (let i = 0; i < n; i++) if (!(points[i]! >= 0 && points[i]! < size)) throw new RangeError('FloorBeamformer: a point is outside the grid');
    }
    if (this.count === 0) {
      if (points) for (let i = 0; i < n; i++) out[points[i]!] = 0;
      else out.fill(0, 0, size);
      return out;
    }
    // The points to compute: every canonical one, or the listed ones but the aliases of a listed point (copied after).
    let list: Int32Array | null;
    let m: number;
    const alias = this.alias;
    if (!points) {
      list = this.canonical;
      m = list ? list.length : size;
    } else {
      const stamp = this.stamp;
      const call = (this.calls = (this.calls + 1) >>> 0 || 1);
      for (let i = 0; i < n; i++) stamp[points[i]!] = call;
      list = this.work;
      m = 0;
      for (let i = 0; i < n; i++) {
        const p = points[i]!;
        const q = alias[p]!;
        if (q < 0 || stamp[q] !== call) list[m++] = p;
      }
    }
    if (this.method === 'factored') this.scanFactored(this.source, this.count, out, list, m);
    else this.scanDelay(this.source, this.count, out, list, m);
    if (!points) {
      if (this.canonical) for (let p = 0; p < size; p++) if (alias[p]! >= 0) out[p] = out[alias[p]!]!;
    } else {
      const call = this.calls;
      for (let i = 0; i < n; i++) {
        const p = points[i]!;
        const q = alias[p]!;
        if (q >= 0 && this.stamp[q] === call) out[p] = out[q]!;
      }
    }
    return out;
  }

  /**
   * Fills this.vecs with the top-r principal vectors H q_i of the window (H: D x W, the snapshots
   * as columns) by subspace iteration without forming the Gram matrix: Q starts as the unit
   * vectors of the r strongest snapshots (so the first H Q is those snapshots, copied), or with a
   * warm start the first H Q is the last window's vectors (kept in this.y); each pass takes Q to
   * orthonormalise(H^H (H Q)) (cost 2 W D r per pass, against W^2 D / 2 for the Gram matrix);
   * returns r. Both products run four vectors at a time, so that each sample of the window loaded
   * serves four of them.
   */
  private principal(data: Float32Array, W: number, D: number): number {
    const r = this.components;
    if (this.q.length < 2 * W * r) {
      this.q = new Float64Array(2 * W * r);
      this.z = new Float64Array(2 * W * r);
    }
    if (this.norms.length < W) this.norms = new Float64Array(W);
    if (this.y.length < 2 * D * r) {
      this.y = new Float64Array(2 * D * r);
      this.warm = false;
    }
    if (this.vecs.length < 2 * D * r) this.vecs = new Float32Array(2 * D * r);
    const Q = this.q;
    const Z = this.z;
    const Y = this.y;
    const norms = this.norms;
    let trace = 0;
    for (let s = 0; s < W; s++) {
      let e = 0;
      for (let c = 2 * s * D; c < 2 * (s + 1) * D; c++) e += data[c]! * data[c]!;
      norms[s] = e;
      trace += e;
    }
    // Warm start: Y still holds the last window's components H_prev q_i (D-space, so the window's
    // length may differ); the first pass takes them to orthonormalise(H^H Y). Only when each of them
    // has power (a component that came out zero would stay zero).
    let warm = this.warmStart && this.warm;
    for (let i = 0; i < r && warm; i++) {
      let e = 0;
      for (let c = 2 * i * D; c < 2 * (i + 1) * D; c++) e += Y[c]! * Y[c]!;
      warm = e > 0;
    }
    // Cold start: the unit vectors of the r strongest snapshots (deterministic); H Q is those snapshots.
    if (!warm) {
      Q.fill(0, 0, 2 * W * r);
      for (let i = 0; i < r; i++) {
        let best = 0;
        for (let s = 1; s < W; s++) if (norms[s]! > norms[best]!) best = s;
        Q[2 * (i * W + best)] = 1;
        norms[best] = -1;
        const from = 2 * best * D;
        for (let c = 0; c < 2 * D; c++) Y[2 * i * D + c] = data[from + c]!;
      }
    }
    for (let it = 0; it <= this.iterations; it++) {
      if (it > 0) timesQ(data, Q, Y, W, D, r);
      adjointTimes(data, Y, Z, W, D, r);
      orthonormalise(Z, W, r);
      Q.set(Z.subarray(0, 2 * W * r));
    }
    // The vectors: H q_i; their power q_i^H G q_i is what the window kept.
    timesQ(data, Q, Y, W, D, r);
    let kept = 0;
    for (let c = 0; c < 2 * D * r; c++) kept += Y[c]! * Y[c]!;
    const V = this.vecs;
    for (let c = 0; c < 2 * D * r; c++) V[c] = Y[c]!;
    this.captured = trace > 0 ? Math.min(1, kept / trace) : 1;
    this.warm = true;
    return r;
  }

  /**
   * The 'delay' method: per window, each vector's and antenna pair's subcarrier sum expanded at
   * every node, S_o[i,q,j] = sum_k w_i[k,q] E[k,j,o]; per point and pair, the expansion evaluated at
   * the point's offset from its node (Horner) times the carrier phasor, summed over pairs. The
   * vectors go in groups of four (a group short of four is padded with zeros): the tables of a
   * group hold, per pair, node and order, the four vectors' values side by side, so a point reads
   * one run of 32 numbers per pair.
   */
  private scanDelay(vecs: Float32Array, r: number, out: Float32Array, points: Int32Array | null, n: number): void {
    const { nSub, nRx, nTx, nodes } = this;
    const nPair = nRx * nTx;
    const D2 = 2 * nSub * nPair;
    const groups = Math.ceil(r / 4);
    const block = 8 * ORDERS;
    const need = groups * nPair * nodes * block;
    if (this.tables.length < need) this.tables = new Float64Array(need);
    if (this.pairVecs.length < 8 * nSub) this.pairVecs = new Float64Array(8 * nSub);
    const S = this.tables;
    const E = this.expansion;
    if (this.tablesOf !== this.generation) {
      this.tablesOf = this.generation;
      const wq = this.pairVecs;
      for (let g = 0; g < groups; g++) {
        const m = Math.min(4, r - 4 * g);
        for (let q = 0; q < nPair; q++) {
          wq.fill(0);
          for (let v = 0; v < m; v++) {
            const base = (4 * g + v) * D2 + 2 * q;
            for (let k = 0; k < nSub; k++) {
              wq[8 * k + 2 * v] = vecs[base + k * 2 * nPair]!;
              wq[8 * k + 2 * v + 1] = vecs[base + k * 2 * nPair + 1]!;
            }
          }
          let sb = (g * nPair + q) * nodes * block;
          if (this.chebWeights !== null) {
            this.tablesByChebyshev(wq, S, sb);
            continue;
          }
          for (let jo = 0; jo < nodes * ORDERS; jo++) {
            const eb = 2 * jo * nSub;
            let a0r = 0,
              a0i = 0,
              a1r = 0,
              a1i = 0,
              a2r = 0,
              a2i = 0,
              a3r = 0,
              a3i = 0;
            for (let k = 0; k < nSub; k++) {
              const er = E[eb + 2 * k]!;
              const ei = E[eb + 2 * k + 1]!;
              const w = 8 * k;
              let wr = wq[w]!;
              let wi = wq[w + 1]!;
              a0r += wr * er - wi * ei;
              a0i += wr * ei + wi * er;
              if (m > 1) {
                wr = wq[w + 2]!;
                wi = wq[w + 3]!;
                a1r += wr * er - wi * ei;
                a1i += wr * ei + wi * er;
                if (m > 2) {
                  wr = wq[w + 4]!;
                  wi = wq[w + 5]!;
                  a2r += wr * er - wi * ei;
                  a2i += wr * ei + wi * er;
                  if (m > 3) {
                    wr = wq[w + 6]!;
                    wi = wq[w + 7]!;
                    a3r += wr * er - wi * ei;
                    a3i += wr * ei + wi * er;
                  }
                }
              }
            }
            S[sb] = a0r;
            S[sb + 1] = a0i;
            S[sb + 2] = a1r;
            S[sb + 3] = a1i;
            S[sb + 4] = a2r;
            S[sb + 5] = a2i;
            S[sb + 6] = a3r;
            S[sb + 7] = a3i;
            sb += 8;
          }
        }
      }
    }
    const P = this.pairs;
    const J = this.pairNodes;
    const norm = 1 / (nSub * nPair);
    for (let g = 0; g < groups; g++) {
      const gb = g * nPair * nodes * block;
      // Vectors in this group (the padding's are zero: the last two are skipped when absent).
      const m = Math.min(4, r - 4 * g);
      for (let t = 0; t < n; t++) {
        const p = points === null ? t : points[t]!;
        let a0r = 0,
          a0i = 0,
          a1r = 0,
          a1i = 0,
          a2r = 0,
          a2i = 0,
          a3r = 0,
          a3i = 0;
        const q0 = p * nPair;
        for (let q = q0; q < q0 + nPair; q++) {
          const d = P[3 * q]!;
          const cr = P[3 * q + 1]!;
          const ci = P[3 * q + 2]!;
          // Orders 0..3 of the four vectors at offsets 0, 8, 16, 24; Horner from order 3 down.
          const sb = gb + J[q]!;
          let vr = ((S[sb + 24]! * d + S[sb + 16]!) * d + S[sb + 8]!) * d + S[sb]!;
          let vi = ((S[sb + 25]! * d + S[sb + 17]!) * d + S[sb + 9]!) * d + S[sb + 1]!;
          a0r += cr * vr - ci * vi;
          a0i += cr * vi + ci * vr;
          vr = ((S[sb + 26]! * d + S[sb + 18]!) * d + S[sb + 10]!) * d + S[sb + 2]!;
          vi = ((S[sb + 27]! * d + S[sb + 19]!) * d + S[sb + 11]!) * d + S[sb + 3]!;
          a1r += cr * vr - ci * vi;
          a1i += cr * vi + ci * vr;
          if (m > 2) {
            vr = ((S[sb + 28]! * d + S[sb + 20]!) * d + S[sb + 12]!) * d + S[sb + 4]!;
            vi = ((S[sb + 29]! * d + S[sb + 21]!) * d + S[sb + 13]!) * d + S[sb + 5]!;
            a2r += cr * vr - ci * vi;
            a2i += cr * vi + ci * vr;
            if (m > 3) {
              vr = ((S[sb + 30]! * d + S[sb + 22]!) * d + S[sb + 14]!) * d + S[sb + 6]!;
              vi = ((S[sb + 31]! * d + S[sb + 23]!) * d + S[sb + 15]!) * d + S[sb + 7]!;
              a3r += cr * vr - ci * vi;
              a3i += cr * vi + ci * vr;
            }
          }
        }
        const power = (a0r * a0r + a0i * a0i + a1r * a1r + a1i * a1i + a2r * a2r + a2i * a2i + a3r * a3r + a3i * a3i) * norm;
        out[p] = g === 0 ? power : out[p]! + power;
      }
    }
  }

  /**
   * One antenna pair's tables for a group of four vectors (wq: per subcarrier the four vectors'
   * entries, (k * 4 + v) complex) into S from sb, through the Chebyshev samples: first
   * F[i, v] = sum_k V[i, k] wq[k, v] (the pair's subcarrier sum of each vector at the N Chebyshev
   * points, N nSub complex multiply-adds per vector), then S[j, o, v] = sum_i U[jo, i] F[i, v]
   * (real weights): the same tables as sum_k E[k, j, o] wq[k, v] (E = U V to the polynomial's
   * error, below 1e-13 of the sum) for N nSub + nodes ORDERS N / 4 instead of nodes ORDERS nSub
   * complex multiply-adds per vector (30 subcarriers, 18 nodes, N = 11: 528 against 2160).
   */
  private tablesByChebyshev(wq: Float64Array, S: Float64Array, sb: number): void {
    const { nSub, nodes } = this;
    const N = this.chebPoints;
    const V = this.chebSteer!;
    const U = this.chebWeights!;
    if (this.chebSums.length < 8 * N) this.chebSums = new Float64Array(8 * N);
    const F = this.chebSums;
    for (let i = 0; i < N; i++) {
      let a0r = 0,
        a0i = 0,
        a1r = 0,
        a1i = 0,
        a2r = 0,
        a2i = 0,
        a3r = 0,
        a3i = 0;
      const vb = 2 * i * nSub;
      for (let k = 0; k < nSub; k++) {
        const er = V[vb + 2 * k]!;
        const ei = V[vb + 2 * k + 1]!;
        const w = 8 * k;
        let wr = wq[w]!;
        let wi = wq[w + 1]!;
        a0r += wr * er - wi * ei;
        a0i += wr * ei + wi * er;
        wr = wq[w + 2]!;
        wi = wq[w + 3]!;
        a1r += wr * er - wi * ei;
        a1i += wr * ei + wi * er;
        wr = wq[w + 4]!;
        wi = wq[w + 5]!;
        a2r += wr * er - wi * ei;
        a2i += wr * ei + wi * er;
        wr = wq[w + 6]!;
        wi = wq[w + 7]!;
        a3r += wr * er - wi * ei;
        a3i += wr * ei + wi * er;
      }
      const f = 8 * i;
      F[f] = a0r;
      F[f + 1] = a0i;
      F[f + 2] = a1r;
      F[f + 3] = a1i;
      F[f + 4] = a2r;
      F[f + 5] = a2i;
      F[f + 6] = a3r;
      F[f + 7] = a3i;
    }
    let o = sb;
    for (let jo = 0; jo < nodes * ORDERS; jo++) {
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0,
        s4 = 0,
        s5 = 0,
        s6 = 0,
        s7 = 0;
      const ub = jo * N;
      for (let i = 0; i < N; i++) {
        const u = U[ub + i]!;
        const f = 8 * i;
        s0 += u * F[f]!;
        s1 += u * F[f + 1]!;
        s2 += u * F[f + 2]!;
        s3 += u * F[f + 3]!;
        s4 += u * F[f + 4]!;
        s5 += u * F[f + 5]!;
        s6 += u * F[f + 6]!;
        s7 += u * F[f + 7]!;
      }
      S[o] = s0;
      S[o + 1] = s1;
      S[o + 2] = s2;
      S[o + 3] = s3;
      S[o + 4] = s4;
      S[o + 5] = s5;
      S[o + 6] = s6;
      S[o + 7] = s7;
      o += 8;
    }
  }

  /**
   * out[p] = sum over the r vectors of |a(p)^H v|^2 / |a|^2: four vectors at a time, so that each
   * steering factor loaded serves four contractions (a group short of four points its missing
   * vectors at a zero vector).
   */
  private scanFactored(vecs: Float32Array, r: number, out: Float32Array, points: Int32Array | null, n: number): void {
    const { nSub, nRx, nTx } = this;
    const per2 = 2 * (nTx + nRx);
    const F = this.factors;
    const D2 = 2 * nSub * nRx * nTx;
    const norm = 1 / (nSub * nRx * nTx);
    const pointStride = nSub * per2;
    const tx2 = 2 * nTx;
    for (let t = 0; t < n; t++) out[points === null ? t : points[t]!] = 0;
    if (this.zero.length < D2) this.zero = new Float32Array(D2);
    for (let g = 0; g < r; g += 4) {
      const V0 = vecs;
      const V1 = g + 1 < r ? vecs : this.zero;
      const V2 = g + 2 < r ? vecs : this.zero;
      const V3 = g + 3 < r ? vecs : this.zero;
      const o0 = g * D2;
      const o1 = g + 1 < r ? (g + 1) * D2 : 0;
      const o2 = g + 2 < r ? (g + 2) * D2 : 0;
      const o3 = g + 3 < r ? (g + 3) * D2 : 0;
      for (let t = 0; t < n; t++) {
        const p = points === null ? t : points[t]!;
        let f = p * pointStride;
        let v = 0;
        let s0r = 0,
          s0i = 0,
          s1r = 0,
          s1i = 0,
          s2r = 0,
          s2i = 0,
          s3r = 0,
          s3i = 0;
        for (let k = 0; k < nSub; k++) {
          const fr = f + tx2;
          for (let m = 0; m < nRx; m++) {
            // Transmit antennas first: u = sum_n conj(T[k,n]) h[k,m,n], for the four vectors.
            let u0r = 0,
              u0i = 0,
              u1r = 0,
              u1i = 0,
              u2r = 0,
              u2i = 0,
              u3r = 0,
              u3i = 0;
            for (let n = 0; n < tx2; n += 2) {
              const tr = F[f + n]!;
              const ti = F[f + n + 1]!;
              let hr = V0[o0 + v]!;
              let hi = V0[o0 + v + 1]!;
              u0r += tr * hr - ti * hi;
              u0i += tr * hi + ti * hr;
              hr = V1[o1 + v]!;
              hi = V1[o1 + v + 1]!;
              u1r += tr * hr - ti * hi;
              u1i += tr * hi + ti * hr;
              hr = V2[o2 + v]!;
              hi = V2[o2 + v + 1]!;
              u2r += tr * hr - ti * hi;
              u2i += tr * hi + ti * hr;
              hr = V3[o3 + v]!;
              hi = V3[o3 + v + 1]!;
              u3r += tr * hr - ti * hi;
              u3i += tr * hi + ti * hr;
              v += 2;
            }
            // Then the receive antenna: s += conj(R[k,m]) u; the subcarriers by accumulation.
            const rr = F[fr + 2 * m]!;
            const ri = F[fr + 2 * m + 1]!;
            s0r += rr * u0r - ri * u0i;
            s0i += rr * u0i + ri * u0r;
            s1r += rr * u1r - ri * u1i;
            s1i += rr * u1i + ri * u1r;
            s2r += rr * u2r - ri * u2i;
            s2i += rr * u2i + ri * u2r;
            s3r += rr * u3r - ri * u3i;
            s3i += rr * u3i + ri * u3r;
          }
          f += per2;
        }
        out[p] = out[p]! + (s0r * s0r + s0i * s0i + s1r * s1r + s1i * s1i + s2r * s2r + s2i * s2i + s3r * s3r + s3i * s3i) * norm;
      }
    }
  }
}

/**
 * The 'delay' method's tables through Chebyshev samples (FloorBeamformer.tablesByChebyshev). Each
 * pair's subcarrier sum S(L) = sum_k h_k exp(+j b idx_k L) is a sum of exponentials of frequency
 * at most b max|idx| (0.18 rad/m for 30 subcarriers), so over the nodes' span [lo, lo + (nodes - 1)
 * NODE_M] (centre c, half-width R) it is a polynomial of low degree to within float64: the
 * interpolant through the N Chebyshev points x_i = c + R cos(pi (i + 1/2) / N) misses it by at most
 * 2 (b max|idx| R / 2)^N / N! of sum |h_k|, and N is the least with that below 1e-15 (11 on the
 * default room with 30 subcarriers, 14 with 114). Returns V[i, k] = exp(+j b idx_k x_i) (complex,
 * i * nSub + k) and U[jo, i] (real, (j * ORDERS + o) * N + i): the o-th derivative in L over o! at
 * node j of the Lagrange basis polynomial of x_i (its Chebyshev coefficients 2 T_n(t_i) / N,
 * differentiated by the Chebyshev derivative recurrence, summed by Clenshaw), so that
 * sum_i U[jo, i] S(x_i) is the interpolant's o-th Taylor coefficient at node j. Null when that
 * would not be cheaper than the direct sums (N nSub + nodes ORDERS N / 4 >= nodes ORDERS nSub).
 */
function chebyshevTables(subs: Int16Array, b: number, lo: number, nodes: number): { points: number; steer: Float64Array; weights: Float64Array } | null {
  const nSub = subs.length;
  let maxIdx = 0;
  for (let k = 0; k < nSub; k++) maxIdx = Math.max(maxIdx, Math.abs(subs[k]!));
  const R = ((nodes - 1) * NODE_M) / 2;
  const c = lo + R;
  const x = (b * maxIdx * R) / 2;
  // Least N with 2 x^N / N! < 1e-15 (at least ORDERS + 1 points).
  let N = ORDERS + 1;
  let bound = 2;
  for (let n = 1; n <= N; n++) bound *= x / n;
  while (bound >= 1e-15 && N < 64) {
    N++;
    bound *= x / N;
  }
  if (N * nSub + (nodes * ORDERS * N) / 4 >= nodes * ORDERS * nSub) return null;
  const steer = new Float64Array(2 * N * nSub);
  for (let i = 0; i < N; i++) {
    const xi = c + R * Math.cos((Math.PI * (i + 0.5)) / N);
    for (let k = 0; k < nSub; k++) {
      const ph = b * subs[k]! * xi;
      steer[2 * (i * nSub + k)] = Math.cos(ph);
      steer[2 * (i * nSub + k) + 1] = Math.sin(ph);
    }
  }
  const weights = new Float64Array(nodes * ORDERS * N);
  const coef = new Float64Array(N);
  const der = new Float64Array(N);
  let factorial = 1;
  for (let i = 0; i < N; i++) {
    // Chebyshev coefficients of the basis polynomial of point i (f = sum_n c_n T_n - c_0 / 2).
    for (let n = 0; n < N; n++) coef[n] = (2 / N) * Math.cos((n * Math.PI * (i + 0.5)) / N);
    for (let o = 0; o < ORDERS; o++) {
      if (o > 0) {
        // Derivative in t (Chebyshev recurrence, same convention), then in L: 1 / R.
        der.fill(0);
        if (N > 1) der[N - 2] = 2 * (N - 1) * coef[N - 1]!;
        for (let n = N - 2; n >= 1; n--) der[n - 1] = (n + 1 < N ? der[n + 1]! : 0) + 2 * n * coef[n]!;
        for (let n = 0; n < N; n++) coef[n] = der[n]! / R;
      }
      factorial = o === 0 ? 1 : factorial * o;
      for (let j = 0; j < nodes; j++) {
        const t = (lo + j * NODE_M - c) / R;
        // Clenshaw: sum c_n T_n(t) - c_0 / 2.
        let b1 = 0;
        let b2 = 0;
        for (let n = N - 1; n >= 1; n--) {
          const b0 = 2 * t * b1 - b2 + coef[n]!;
          b2 = b1;
          b1 = b0;
        }
        weights[(j * ORDERS + o) * N + i] = (t * b1 - b2 + coef[0]! / 2) / factorial;
      }
    }
  }
  return { points: N, steer, weights };
}

/**
 * Y = H Q: y_i = sum_s q_i[s] h_s (H: the W snapshots of D complex values as columns; Q: r
 * columns of W; Y: r columns of D), four columns of Q at a time with the sums in registers.
 */
function timesQ(data: Float32Array, Q: Float64Array, Y: Float64Array, W: number, D: number, r: number): void {
  const D2 = 2 * D;
  for (let g = 0; g < r; g += 4) {
    const m = Math.min(4, r - g);
    const q0 = 2 * g * W;
    const q1 = q0 + 2 * W;
    const q2 = q1 + 2 * W;
    const q3 = q2 + 2 * W;
    for (let c = 0; c < D2; c += 2) {
      let a0r = 0,
        a0i = 0,
        a1r = 0,
        a1i = 0,
        a2r = 0,
        a2i = 0,
        a3r = 0,
        a3i = 0;
      let h = c;
      for (let s2 = 0; s2 < 2 * W; s2 += 2) {
        const hr = data[h]!;
        const hi = data[h + 1]!;
        h += D2;
        let qr = Q[q0 + s2]!;
        let qi = Q[q0 + s2 + 1]!;
        a0r += hr * qr - hi * qi;
        a0i += hr * qi + hi * qr;
        if (m > 1) {
          qr = Q[q1 + s2]!;
          qi = Q[q1 + s2 + 1]!;
          a1r += hr * qr - hi * qi;
          a1i += hr * qi + hi * qr;
          if (m > 2) {
            qr = Q[q2 + s2]!;
            qi = Q[q2 + s2 + 1]!;
            a2r += hr * qr - hi * qi;
            a2i += hr * qi + hi * qr;
            if (m > 3) {
              qr = Q[q3 + s2]!;
              qi = Q[q3 + s2 + 1]!;
              a3r += hr * qr - hi * qi;
              a3i += hr * qi + hi * qr;
            }
          }
        }
      }
      const y = g * D2 + c;
      Y[y] = a0r;
      Y[y + 1] = a0i;
      if (m > 1) {
        Y[y + D2] = a1r;
        Y[y + D2 + 1] = a1i;
      }
      if (m > 2) {
        Y[y + 2 * D2] = a2r;
        Y[y + 2 * D2 + 1] = a2i;
      }
      if (m > 3) {
        Y[y + 3 * D2] = a3r;
        Y[y + 3 * D2 + 1] = a3i;
      }
    }
  }
}

/** Z = H^H Y: z_i[s] = h_s^H y_i, four columns of Y at a time. */
function adjointTimes(data: Float32Array, Y: Float64Array, Z: Float64Array, W: number, D: number, r: number): void {
  const D2 = 2 * D;
  for (let g = 0; g < r; g += 4) {
    const m = Math.min(4, r - g);
    const y0 = g * D2;
    const y1 = y0 + D2;
    const y2 = y1 + D2;
    const y3 = y2 + D2;
    for (let s = 0; s < W; s++) {
      const hs = s * D2;
      let a0r = 0,
        a0i = 0,
        a1r = 0,
        a1i = 0,
        a2r = 0,
        a2i = 0,
        a3r = 0,
        a3i = 0;
      for (let c = 0; c < D2; c += 2) {
        const hr = data[hs + c]!;
        const hi = data[hs + c + 1]!;
        let ur = Y[y0 + c]!;
        let ui = Y[y0 + c + 1]!;
        a0r += hr * ur + hi * ui;
        a0i += hr * ui - hi * ur;
        if (m > 1) {
          ur = Y[y1 + c]!;
          ui = Y[y1 + c + 1]!;
          a1r += hr * ur + hi * ui;
          a1i += hr * ui - hi * ur;
          if (m > 2) {
            ur = Y[y2 + c]!;
            ui = Y[y2 + c + 1]!;
            a2r += hr * ur + hi * ui;
            a2i += hr * ui - hi * ur;
            if (m > 3) {
              ur = Y[y3 + c]!;
              ui = Y[y3 + c + 1]!;
              a3r += hr * ur + hi * ui;
              a3i += hr * ui - hi * ur;
            }
          }
        }
      }
      const z = 2 * (g * W + s);
      Z[z] = a0r;
      Z[z + 1] = a0i;
      if (m > 1) {
        Z[z + 2 * W] = a1r;
        Z[z + 2 * W + 1] = a1i;
      }
      if (m > 2) {
        Z[z + 4 * W] = a2r;
        Z[z + 4 * W + 1] = a2i;
      }
      if (m > 3) {
        Z[z + 6 * W] = a3r;
        Z[z + 6 * W + 1] = a3i;
      }
    }
  }
}

/**
 * Gram-Schmidt on the r complex columns (length W, column-major) of Z, each projected twice
 * ("twice is enough") for orthogonality to rounding; a column with less than 1e-10 of its norm left
 * (the window has fewer independent directions than r) becomes zero rather than normalised noise.
 */
function orthonormalise(Z: Float64Array, W: number, r: number): void {
  for (let i = 0; i < r; i++) {
    const zi = 2 * i * W;
    let n0 = 0;
    for (let s = 0; s < 2 * W; s++) n0 += Z[zi + s]! * Z[zi + s]!;
    for (let pass = 0; pass < 2; pass++) {
      for (let j = 0; j < i; j++) {
        const zj = 2 * j * W;
        // c = z_j^H z_i
        let cr = 0;
        let ci = 0;
        for (let s = 0; s < 2 * W; s += 2) {
          cr += Z[zj + s]! * Z[zi + s]! + Z[zj + s + 1]! * Z[zi + s + 1]!;
          ci += Z[zj + s]! * Z[zi + s + 1]! - Z[zj + s + 1]! * Z[zi + s]!;
        }
        for (let s = 0; s < 2 * W; s += 2) {
          const ar = Z[zj + s]!;
          const ai = Z[zj + s + 1]!;
          Z[zi + s] = Z[zi + s]! - (cr * ar - ci * ai);
          Z[zi + s + 1] = Z[zi + s + 1]! - (cr * ai + ci * ar);
        }
      }
    }
    let nn = 0;
    for (let s = 0; s < 2 * W; s++) nn += Z[zi + s]! * Z[zi + s]!;
    const scale = n0 > 0 && nn > 1e-20 * n0 ? 1 / Math.sqrt(nn) : 0;
    for (let s = 0; s < 2 * W; s++) Z[zi + s] = Z[zi + s]! * scale;
  }
}

/**
 * Fuses the beam maps of several links over one grid: each link's map divided by its own total
 * power (sum over the grid), then summed. Why the total and not the max: the moving power of a link
 * varies by orders of magnitude with how close a person is to its radios, so raw maps would let
 * the nearest link decide alone; dividing by the total gives every link one unit of "vote" spread
 * over where it sees motion, so a link with a sharp peak contributes a high peak and a link whose
 * map is flat (ambiguous, or no motion in its view) contributes little anywhere, whereas dividing
 * by the max would give an ambiguous link's spurious maximum the same weight as a sharp one's.
 * A link whose map has no power is left out.
 * @param maps one map per link, each grid.size values
 * @param out the fused map (overwritten; may be the first of maps, not another one)
 * @returns out
 * @example
 * fuseMaps(links.map((l) => l.map), fused);
 */
export function fuseMaps(maps: readonly Float32Array[], out: Float32Array): Float32Array {
  const size = out.length;
  for (const m of maps) if (m.length < size) throw new RangeError('fuseMaps: a map is shorter than out');
  for (let l = 0; l < maps.length; l++) {
    const m = maps[l]!;
    let t = 0;
    for (let i = 0; i < size; i++) t += m[i]!;
    const s = t > 0 ? 1 / t : 0;
    if (l === 0) for (let i = 0; i < size; i++) out[i] = m[i]! * s;
    else for (let i = 0; i < size; i++) out[i] = out[i]! + m[i]! * s;
  }
  if (maps.length === 0) out.fill(0);
  return out;
}
