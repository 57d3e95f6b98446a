/**
 * Candidate people on a fused floor map (src/physics/beamform.ts) by successive peak removal: take
 * the strongest point of the map (over every layer), record it, suppress every point within a
 * radius of it on the floor (all layers), and repeat, up to a maximum count (max_persons + 2 is
 * the intended setting) or until the strongest point left is below a fraction of the first peak.
 *
 * Only local maxima of the map (in their layer, over the 3 x 3 neighbourhood) are taken, so that
 * the slope of a suppressed peak just outside its radius is never a candidate.
 *
 * Suppression is by radius on the map, not by projecting each candidate's steering vector out of
 * every link's window and beamforming again: that would be the better (it also takes away a
 * person's sidelobes beyond the radius), but it costs one full beamforming per candidate per link;
 * the radius is the cheap approximation used here.
 *
 * Each peak is refined within its cell by a parabola through it and its two neighbours along x and
 * along y (in its layer), by at most half a cell.
 */

import { fuseMaps, type FloorGrid } from './beamform.js';

/**
 * Default radius of suppression around a candidate, metres. Measured on the fused map of the
 * default site (one or two people walking, 64-packet windows): a person's strongest sidelobes lie
 * 0.7-1.1 m from the peak at 0.6-0.85 of its power, so 0.8 m let them outrank a second person
 * 3 m away in 3 of 6 windows and 1.0 m (with the local-maximum rule) in none. Two people closer
 * than about 1 m give one candidate.
 */
export const DEFAULT_SUPPRESS_RADIUS_M = 1.0;
/** Default stop: a peak below this fraction of the first is not a candidate. */
export const DEFAULT_MIN_FRACTION = 0.1;

/** One candidate person: where the fused map peaks. */
export interface Candidate {
  /** Floor position, metres (refined within the cell). */
  readonly x: number;
  readonly y: number;
  /** Height of the layer where the peak is, metres. */
  readonly z: number;
  /** Map value at the peak's grid point. */
  readonly power: number;
  /** Index of the peak's grid point in the map. */
  readonly index: number;
}

/** Options of {@link findCandidates}. */
export interface CandidateOptions {
  /** Most candidates to return (max_persons + 2 is the intended setting); default 6. */
  readonly maxCandidates?: number;
  /** Stop below this fraction of the first peak; default DEFAULT_MIN_FRACTION (0.1). */
  readonly minFraction?: number;
  /** Floor radius suppressed around each candidate, metres; default DEFAULT_SUPPRESS_RADIUS_M (1.0). */
  readonly suppressRadius?: number;
  /** Work buffer of grid.size bytes, reused between calls (allocated when omitted). */
  readonly scratch?: Uint8Array;
}

/**
 * Vertex offset of the parabola through (-1, a), (0, b), (1, c), clamped to half a cell; 0 when b
 * is not a strict maximum of the three.
 */
function parabolic(a: number, b: number, c: number): number {
  const den = a - 2 * b + c;
  if (!(den < 0)) return 0;
  const o = (0.5 * (a - c)) / den;
  return Math.max(-0.5, Math.min(0.5, o));
}

/** Whether map[i] is at least every neighbour of its 3 x 3 neighbourhood in its layer. */
function isLocalMax(map: Float32Array, grid: FloorGrid, i: number): boolean {
  const { nx, ny, cells } = grid;
  const layer = Math.floor(i / cells);
  const c = i - layer * cells;
  const iy = Math.floor(c / nx);
  const ix = c - iy * nx;
  const v = map[i]!;
  for (let y = Math.max(0, iy - 1); y <= Math.min(ny - 1, iy + 1); y++) {
    for (let x = Math.max(0, ix - 1); x <= Math.min(nx - 1, ix + 1); x++) {
      if (map[layer * cells + y * nx + x]! > v) return false;
    }
  }
  return true;
}

/**
 * Finds candidate people on a map by successive peak removal (module comment).
 * @param map a map over `grid` (layer-major, FloorGrid), e.g. fuseMaps' output; not modified
 * @param grid the map's grid
 * @param options maximum count, stop fraction, suppression radius, scratch buffer
 * @returns candidates, strongest first (empty for a map with no positive value)
 * @example
 * const found = findCandidates(fused, grid, { maxCandidates: maxPersons + 2 });
 * found[0]; // { x: 2.93, y: 2.41, z: 1, power: 0.0012, index: 1270 }
 */
export function findCandidates(map: Float32Array, grid: FloorGrid, options: CandidateOptions = {}): Candidate[] {
  const max = options.maxCandidates ?? 6;
  const frac = options.minFraction ?? DEFAULT_MIN_FRACTION;
  const radius = options.suppressRadius ?? DEFAULT_SUPPRESS_RADIUS_M;
  const { nx, ny, cells, cell } = grid;
  const layers = grid.heights.length;
  const size = grid.size;
  if (map.length < size) throw new RangeError('findCandidates: map is shorter than the grid');
  const gone = options.scratch ?? new Uint8Array(size);
  if (gone.length < size) throw new RangeError('findCandidates: scratch is shorter than the grid');
  gone.fill(0, 0, size);
  const out: Candidate[] = [];
  let first = 0;
  const reach = Math.ceil(radius / cell);
  while (out.length < max) {
    let best = -1;
    let bestP = 0;
    for (let i = 0; i < size; i++) {
      const v = map[i]!;
      if (gone[i] === 0 && v > bestP && isLocalMax(map, grid, i)) {
        bestP = v;
        best = i;
      }
    }
    if (best < 0) break;
    if (out.length === 0) first = bestP;
    else if (bestP < frac * first) break;
    const layer = Math.floor(best / cells);
    const c = best - layer * cells;
    const iy = Math.floor(c / nx);
    const ix = c - iy * nx;
    const base = layer * cells;
    const at = (x: number, y: number): number => map[base + y * nx + x]!;
    const ox = ix > 0 && ix < nx - 1 ? parabolic(at(ix - 1, iy), bestP, at(ix + 1, iy)) : 0;
    const oy = iy > 0 && iy < ny - 1 ? parabolic(at(ix, iy - 1), bestP, at(ix, iy + 1)) : 0;
    const x = grid.x0 + (ix + ox) * cell;
    const y = grid.y0 + (iy + oy) * cell;
    out.push({ x, y, z: grid.heights[layer]!, power: bestP, index: best });
    // Suppress the floor disc around the refined peak on every layer.
    const r2 = radius * radius;
    for (let yy = Math.max(0, iy - reach - 1); yy <= Math.min(ny - 1, iy + reach + 1); yy++) {
      const dy = grid.y0 + yy * cell - y;
      for (let xx = Math.max(0, ix - reach - 1); xx <= Math.min(nx - 1, ix + reach + 1); xx++) {
        const dx = grid.x0 + xx * cell - x;
        if (dx * dx + dy * dy <= r2) for (let h = 0; h < layers; h++) gone[h * cells + yy * nx + xx] = 1;
      }
    }
    // The peak's own cell always goes, whatever the radius.
    for (let h = 0; h < layers; h++) gone[h * cells + c] = 1;
  }
  return out;
}

/** Default coarse step of {@link CandidateSearch}: every 2nd grid point along x and y (0.4 m on the default 0.2 m grid). */
export const DEFAULT_COARSE_STEP = 2;
/**
 * Fine cells around each coarse peak that {@link CandidateSearch} beamforms exactly, along x and y:
 * the true peak is within one cell of the coarse node at a step of 2, and the candidate search
 * (its local-maximum test and its parabola) and the refiner's 3 x 3 patch need one more around it.
 */
export const DEFAULT_COARSE_REACH = 2;

/** Options of {@link CandidateSearch}. */
export interface SearchOptions {
  /** Grid points between coarse nodes along x and y; 1 beamforms every point (the plain search). Default DEFAULT_COARSE_STEP (2). */
  readonly step?: number;
  /** Fine cells beamformed around each coarse peak along x and y (all layers); default DEFAULT_COARSE_REACH (2). */
  readonly reach?: number;
}

/** What a {@link CandidateSearch} beamforms: a link's reduced window (FloorBeamformer.reduce done). */
export interface PointScanner {
  scan(out: Float32Array, points?: Int32Array, count?: number): Float32Array;
}

/** Where {@link CandidateSearch.run} adds its time, ms (performance.now()). */
export interface SearchClock {
  scan: number;
  candidates: number;
}

/**
 * Candidates over several links' beam maps by coarse-to-fine search (issue 19, speed): each link's
 * reduced window is beamformed on a coarse grid (every `step`-th point along x and y, the last row
 * and column always, every layer), the rest of each link's map filled by bilinear interpolation
 * within its layer, the maps fused (fuseMaps) and candidates found (findCandidates); then the fine
 * cells within `reach` cells of each candidate's point are beamformed exactly on every layer, the
 * maps fused and the candidates found again, and once more around any final candidate whose 3 x 3
 * neighbourhood (the local-maximum test, the parabola and the refiner's patch) is not all exact yet.
 * So every candidate's own point and neighbours are the exact beam power; what is interpolated is
 * the map away from the candidates, and each link's total (fuseMaps' normalisation) over it.
 *
 * With `step` 1 it is the plain search: every point beamformed, fused, searched.
 *
 * @example
 * const search = new CandidateSearch(grid);
 * links.forEach((l) => l.beamformer.reduce(l.window));
 * const found = search.run(links.map((l) => l.beamformer), links.map((l) => l.map), fused, { maxCandidates: 6 });
 */
export class CandidateSearch {
  readonly grid: FloorGrid;
  readonly step: number;
  readonly reach: number;
  /** Grid indices of the coarse nodes, every layer. */
  readonly coarse: Int32Array;
  /** Per layer, the cells that are not coarse nodes: their cell, and the four nodes (cells) and two weights they are interpolated from. */
  private readonly fillCount: number;
  private readonly fillCells: Int32Array;
  private readonly fillWeights: Float32Array;
  /** 1 where the current window's maps hold exact beam power. */
  private readonly exact: Uint8Array;
  private readonly list: Int32Array;
  private readonly scratch: Uint8Array;
  private scanned = 0;
  /** findCandidates' options with the search's scratch, for the last options object run with. */
  private lastOptions: CandidateOptions | null = null;
  private opts: CandidateOptions = {};

  /**
   * @param grid the maps' grid
   * @param options coarse step and reach
   * @throws RangeError for a step or reach that is not a positive integer
   */
  constructor(grid: FloorGrid, options: SearchOptions = {}) {
    this.grid = grid;
    this.step = options.step ?? DEFAULT_COARSE_STEP;
    this.reach = options.reach ?? DEFAULT_COARSE_REACH;
    if (!(Number.isInteger(this.step) && this.step >= 1)) throw new RangeError('CandidateSearch: step must be an integer >= 1');
    if (!(Number.isInteger(this.reach) && this.reach >= 1)) throw new RangeError('CandidateSearch: reach must be an integer >= 1');
    const { nx, ny, cells } = grid;
    const layers = grid.heights.length;
    const xs = axisNodes(nx, this.step);
    const ys = axisNodes(ny, this.step);
    const nodeCells: number[] = [];
    for (const iy of ys) for (const ix of xs) nodeCells.push(iy * nx + ix);
    this.coarse = new Int32Array(nodeCells.length * layers);
    for (let h = 0; h < layers; h++) for (let i = 0; i < nodeCells.length; i++) this.coarse[h * nodeCells.length + i] = h * cells + nodeCells[i]!;
    // Bilinear interpolation of every other cell from its bracketing nodes.
    const bx = brackets(nx, xs);
    const by = brackets(ny, ys);
    const isNode = new Uint8Array(cells);
    for (const c of nodeCells) isNode[c] = 1;
    const fill = cells - nodeCells.length;
    this.fillCount = fill;
    this.fillCells = new Int32Array(5 * fill);
    this.fillWeights = new Float32Array(2 * fill);
    let f = 0;
    for (let iy = 0; iy < ny; iy++) {
      for (let ix = 0; ix < nx; ix++) {
        if (isNode[iy * nx + ix]) continue;
        const [x0, x1, tx] = bx[ix]!;
        const [y0, y1, ty] = by[iy]!;
        this.fillCells.set([iy * nx + ix, y0 * nx + x0, y0 * nx + x1, y1 * nx + x0, y1 * nx + x1], 5 * f);
        this.fillWeights[2 * f] = tx;
        this.fillWeights[2 * f + 1] = ty;
        f++;
      }
    }
    this.exact = new Uint8Array(grid.size);
    this.list = new Int32Array(grid.size);
    this.scratch = new Uint8Array(grid.size);
  }

  /**
   * Whether the last {@link run} beamformed a grid point exactly (not interpolated).
   * @param index a grid index
   * @returns true for a coarse node or a cell beamformed around a peak (every point with step 1)
   */
  computed(index: number): boolean {
    return this.step === 1 || this.exact[index] === 1;
  }

  /** Grid points beamformed per link by the last {@link run}. */
  get lastScanned(): number {
    return this.scanned;
  }

  /**
   * Beamforms, fuses and finds candidates (class comment).
   * @param scanners each link's beamformer, its window reduced
   * @param maps each link's map (overwritten: exact at the scanned points, interpolated elsewhere)
   * @param fused the fused map (overwritten)
   * @param options findCandidates' count, stop fraction and radius (its scratch is the search's own)
   * @param clock where to add the time of the scans and of fusion and candidates, when given
   * @returns the candidates, strongest first
   * @example
   * const found = search.run(beamformers, maps, fused, { maxCandidates: 6 });
   */
  run(scanners: readonly PointScanner[], maps: readonly Float32Array[], fused: Float32Array, options: CandidateOptions = {}, clock?: SearchClock): Candidate[] {
    if (options !== this.lastOptions) {
      this.lastOptions = options;
      this.opts = { ...options, scratch: this.scratch };
    }
    const opts = this.opts;
    let t = clock ? performance.now() : 0;
    const lap = (what: keyof SearchClock): void => {
      if (!clock) return;
      const now = performance.now();
      clock[what] += now - t;
      t = now;
    };
    if (this.step === 1) {
      for (let l = 0; l < scanners.length; l++) scanners[l]!.scan(maps[l]!);
      this.scanned = this.grid.size;
      lap('scan');
      fuseMaps(maps, fused);
      const found = findCandidates(fused, this.grid, opts);
      lap('candidates');
      return found;
    }
    const exact = this.exact;
    exact.fill(0);
    const coarse = this.coarse;
    for (let i = 0; i < coarse.length; i++) exact[coarse[i]!] = 1;
    for (let l = 0; l < scanners.length; l++) {
      scanners[l]!.scan(maps[l]!, coarse, coarse.length);
      this.interpolate(maps[l]!);
    }
    this.scanned = coarse.length;
    lap('scan');
    fuseMaps(maps, fused);
    let found = findCandidates(fused, this.grid, opts);
    lap('candidates');
    let reach = this.reach;
    // Around the coarse peaks, then (at most twice) around final candidates whose neighbourhood is not exact yet.
    for (let pass = 0; pass < 3; pass++) {
      let n = 0;
      for (const c of found) n = this.around(c.index, reach, n);
      if (n === 0) break;
      for (let l = 0; l < scanners.length; l++) scanners[l]!.scan(maps[l]!, this.list, n);
      this.scanned += n;
      lap('scan');
      fuseMaps(maps, fused);
      found = findCandidates(fused, this.grid, opts);
      lap('candidates');
      reach = 1;
    }
    return found;
  }

  /** Appends to this.list, from n, the points within `reach` cells of `index` (every layer) not exact yet, marking them; returns the new n. */
  private around(index: number, reach: number, n: number): number {
    const { nx, ny, cells } = this.grid;
    const layers = this.grid.heights.length;
    const c = index % cells;
    const iy = Math.floor(c / nx);
    const ix = c - iy * nx;
    for (let y = Math.max(0, iy - reach); y <= Math.min(ny - 1, iy + reach); y++) {
      for (let x = Math.max(0, ix - reach); x <= Math.min(nx - 1, ix + reach); x++) {
        for (let h = 0; h < layers; h++) {
          const p = h * cells + y * nx + x;
          if (this.exact[p]) continue;
          this.exact[p] = 1;
          this.list[n++] = p;
        }
      }
    }
    return n;
  }

  /** Every non-node cell of every layer of map from its four bracketing nodes (bilinear). */
  private interpolate(map: Float32Array): void {
    const { cells } = this.grid;
    const layers = this.grid.heights.length;
    const fill = this.fillCount;
    const fc = this.fillCells;
    const fw = this.fillWeights;
    for (let h = 0; h < layers; h++) {
      const o = h * cells;
      for (let f = 0; f < fill; f++) {
        const tx = fw[2 * f]!;
        const ty = fw[2 * f + 1]!;
        const b = 5 * f;
        const top = map[o + fc[b + 1]!]! * (1 - tx) + map[o + fc[b + 2]!]! * tx;
        const bottom = map[o + fc[b + 3]!]! * (1 - tx) + map[o + fc[b + 4]!]! * tx;
        map[o + fc[b]!] = top * (1 - ty) + bottom * ty;
      }
    }
  }
}

/** Node positions along an axis of n points: 0, step, 2 step, ... and always n - 1. */
function axisNodes(n: number, step: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i += step) out.push(i);
  if (out[out.length - 1] !== n - 1) out.push(n - 1);
  return out;
}

/** For each index 0..n-1 along an axis, the nodes below and above it and its weight towards the upper one. */
function brackets(n: number, nodes: readonly number[]): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    while (k + 1 < nodes.length && nodes[k + 1]! <= i) k++;
    const a = nodes[k]!;
    const b = k + 1 < nodes.length ? nodes[k + 1]! : a;
    out.push([a, b, b > a ? (i - a) / (b - a) : 0]);
  }
  return out;
}
