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

import type { FloorGrid } from './beamform.js';

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
