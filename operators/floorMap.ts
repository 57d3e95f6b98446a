import { Observable, tap, type OperatorFunction } from 'rxjs';
import type { CsiFrame } from '../src/csi/frame.js';
import { isoTime } from '../src/csi/frame.js';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig, type SiteLink } from '../src/csi/radios.js';
import { configParam } from '../src/config/params.js';
import type { OperatorContext, OperatorSpec } from '../src/engine/spec.js';
import { DEFAULT_CELL_M, DEFAULT_COMPONENTS, FloorBeamformer, floorGrid, type BeamformerOptions, type FloorGrid } from '../src/physics/beamform.js';
import { CandidateSearch, type Candidate } from '../src/physics/candidates.js';
import type { RoomCalibration } from '../src/physics/calibration.js';
import { DEFAULT_DOPPLER_BINS, DopplerSteerer, steerCandidates } from '../src/physics/doppler.js';
import { DEFAULT_CHANNEL, GAP_MS, LinkFrontEnd, STALE_MS, type LinkFrontEndOptions } from '../src/physics/linkFrontEnd.js';
import type { MovingWindow } from '../src/physics/types.js';

/** Default seconds of each link taken as the empty room (the static channel is learned from them, then frozen). */
export const DEFAULT_LEARN_SECONDS = 10;
/**
 * Default coarse step of the candidate search: 1, every grid point beamformed. Coarse-to-fine (2:
 * a 0.4 m grid, then the cells around its peaks) beamforms 30-40 % of the default grid's points
 * (672 nodes and about 48 points per candidate) but moves 13 % of the candidates of at least 0.3 of
 * the first by more than a cell (1.5 % of those of at least 0.8) on the simulator, for 1.09x on the
 * whole front end, and the shipped refiner was trained on full maps (docs/physics.md "Speed").
 */
export const DEFAULT_SEARCH_STEP = 1;
/** Default of the blind chain-phase fit (`chainCalibration`): on. */
export const DEFAULT_CHAIN_CALIBRATION = true;
/**
 * Each link's beamformer unless `beamformer` says otherwise: every window's subspace iteration
 * starts from the link's previous window's components and makes no pass beyond the first (2
 * products with the window instead of 4: the principal components 1.7x; as close to the converged
 * components as the cold start with one extra pass, docs/physics.md "Speed").
 */
export const DEFAULT_BEAMFORMER: BeamformerOptions = Object.freeze({ warmStart: true, iterations: 0 });
/**
 * Default of FloorMapOptions.dopplerFrom: 'components', each candidate's Doppler from the link
 * window's principal components (Doppler 2.4x; the rows lose what lies outside the components,
 * the shipped refiner's figures on four simulator scenarios unchanged: docs/physics.md "Speed").
 */
export const DEFAULT_DOPPLER_FROM = 'components';
/** Default candidates per map: max_persons (4) + 2. */
export const DEFAULT_MAX_CANDIDATES = 6;
/** The room's width and depth as parameters: type, default and range from `environment.site` in the config schema. */
const ROOM_WIDTH = configParam('environment.site.room_width');
const ROOM_DEPTH = configParam('environment.site.room_depth');
/** The default room, metres: `environment.site`'s defaults. */
export const DEFAULT_ROOM_WIDTH = ROOM_WIDTH.default as number;
export const DEFAULT_ROOM_DEPTH = ROOM_DEPTH.default as number;
// The channel rule, the gap and the staleness of a link, as the front end (src/physics/linkFrontEnd.ts) has them.
export { DEFAULT_CHANNEL, GAP_MS, STALE_MS };
const LEARN_MAX = 3600;
const CELL_MIN = 0.05;
const CELL_MAX = 1;
const COARSE_MAX = 4;
/** Most grid points a map may have (the default room has 2418): beamforming cost grows with it. */
const MAX_GRID_POINTS = 200_000;

/** The grid of a {@link FloorMapItem}: `map[(h * ny + iy) * nx + ix]` is the point (x0 + ix cell, y0 + iy cell, heights[h]). */
export interface FloorMapGrid {
  readonly x0: number;
  readonly y0: number;
  readonly cell: number;
  readonly nx: number;
  readonly ny: number;
  /** Heights of the layers, metres. */
  readonly heights: readonly number[];
}

/** One window of an environment's links on the floor: what `floorMap` emits. */
export interface FloorMapItem {
  readonly environmentId: string;
  /** The primary link's `sourceId`. */
  readonly sourceId: string;
  /** Share of the site's links in the map (0..1): the pose frame's `csiQuality`. */
  readonly quality: number;
  /** Epoch ms of the primary link's last packet in the window. */
  readonly time: number;
  readonly grid: FloorMapGrid;
  /** The fused map (fuseMaps: each link's beam power over its own total, summed), layer-major over `grid`. A new array per item. */
  readonly map: Float32Array;
  /** Candidate people, strongest first (findCandidates). */
  readonly candidates: Candidate[];
  /** The links in the map, site order (the primary first). */
  readonly links: string[];
  /**
   * Each candidate's Doppler spectrum fused over the map's links (steerCandidates, 'window'
   * normalisation: a row sums to the links' captured shares, each in [0, 1]): row i is
   * `doppler[i * dopplerBins ..]`, fftshifted. A new array per item.
   */
  readonly doppler: Float32Array;
  /** Bins per Doppler row (DEFAULT_DOPPLER_BINS, 64). */
  readonly dopplerBins: number;
  /** Bistatic path-length rate of each bin, m/s (DopplerSteerer.pathRates; shared by every item of a link layout). */
  readonly dopplerRates: Float64Array;
}

/** The room the grid covers, metres from the front-left corner. */
export interface FloorRoom {
  readonly width: number;
  readonly depth: number;
}

export interface FloorMapOptions {
  /** The site's radios (`environment.site.radios`), read at subscription; default DEFAULT_RADIOS. */
  radios?: () => readonly RadioConfig[];
  /** The room, read at subscription; default {@link DEFAULT_ROOM_WIDTH} x {@link DEFAULT_ROOM_DEPTH}. */
  room?: () => FloorRoom;
  /** Seconds from each link's first packet taken as the empty room; default {@link DEFAULT_LEARN_SECONDS}. 0: no static channel. */
  learnSeconds?: number;
  /** Most candidates per map; default {@link DEFAULT_MAX_CANDIDATES}. */
  maxCandidates?: number;
  /** A peak below this fraction of the map's first is not a candidate; default DEFAULT_MIN_FRACTION (findCandidates). */
  minFraction?: number;
  /** Floor radius suppressed around each candidate, metres; default DEFAULT_SUPPRESS_RADIUS_M (findCandidates). */
  suppressRadius?: number;
  /** Grid cell, metres; default DEFAULT_CELL_M (0.2). */
  cell?: number;
  /**
   * Fit each link's chain phases blindly from its learned static channel, against the line of
   * sight and the room's walls (chains.ts); default {@link DEFAULT_CHAIN_CALIBRATION} (true). In
   * `npm start`'s room it takes the people with a candidate within 0.6 m from 13 % to 46 % (77 % in
   * the ideal room either way). A link of the room calibration keeps the calibration's phases.
   */
  chainCalibration?: boolean;
  /**
   * The room's calibration (`csipose calibrate` with a v3 refiner: a room model's
   * `room_calibration`), read at subscription. A link it was fitted for (same id, antennas and
   * subcarriers) starts from its recorded empty room (no learning) and has its chain phases
   * corrected in every window; other links run as without it.
   */
  calibration?: () => RoomCalibration | null;
  /**
   * Grid points between the coarse nodes of the candidate search along x and y (CandidateSearch):
   * each link is beamformed on that coarse grid, then exactly in the cells around each peak; 1
   * beamforms every point. Default {@link DEFAULT_SEARCH_STEP} (1).
   */
  coarseStep?: number;
  /**
   * Each link's beamformer, over {@link DEFAULT_BEAMFORMER}: principal components (default
   * DEFAULT_COMPONENTS, 4), warm start (true) and subspace iterations after the first (0), method
   * ('delay'). Fewer components or iterations are faster and move some candidates (docs/physics.md
   * "Speed").
   */
  beamformer?: BeamformerOptions;
  /**
   * What each candidate's Doppler is steered over: 'components' (default {@link DEFAULT_DOPPLER_FROM}),
   * each link's window projected on the principal components its beamformer found
   * (DopplerSteerer.spectraFromComponents, 2.4x faster), or 'snapshots', every snapshot
   * (DopplerSteerer.spectra, exact). docs/physics.md "Speed".
   */
  dopplerFrom?: 'components' | 'snapshots';
  /** Time spent per stage is added here when given (bench/physics.ts); nothing is timed without it. */
  profile?: FloorMapProfile;
}

/**
 * Milliseconds (performance.now(), so wall time: pin the process to one core to read it as CPU
 * time) that `floorMap` spent per stage, summed over the subscription, and the counts behind them.
 */
export interface FloorMapProfile {
  /** Every packet aligned onto its link's static channel (learning it while the room is taken as empty) and pushed into the ring. */
  align: number;
  /** The links' moving windows taken out of their rings (static channel or mean removed). */
  window: number;
  /** Each window's principal components (FloorBeamformer.reduce). */
  components: number;
  /** The beamforming scan over the grid points (FloorBeamformer.scan; its per-window tables included). */
  scan: number;
  /** Fusing the links' maps and finding the candidates. */
  candidates: number;
  /** Each candidate's Doppler spectrum steered over the links (steerCandidates). */
  doppler: number;
  /** The item: the map copied out, the lists. */
  emit: number;
  /** Packets aligned. */
  packets: number;
  /** Maps emitted. */
  maps: number;
  /** Link windows beamformed. */
  windows: number;
}

/** A profile of zeros, for {@link FloorMapOptions.profile}. */
export function floorMapProfile(): FloorMapProfile {
  return { align: 0, window: 0, components: 0, scan: 0, candidates: 0, doppler: 0, emit: 0, packets: 0, maps: 0, windows: 0 };
}

/** One link of one environment in the map: its front end, and its beamformer, Doppler steerer and map on this grid. */
class FloorLink {
  readonly frontEnd: LinkFrontEnd;
  readonly beamformer: FloorBeamformer;
  readonly doppler: DopplerSteerer;
  readonly map: Float32Array;
  /** The `sourceId` of the link's latest frame. */
  sourceId: string;

  constructor(
    readonly link: SiteLink,
    f: CsiFrame,
    grid: FloorGrid,
    frontEnd: LinkFrontEndOptions,
    beamformer: BeamformerOptions = DEFAULT_BEAMFORMER,
  ) {
    this.sourceId = f.sourceId;
    this.frontEnd = new LinkFrontEnd(link, f, frontEnd);
    this.beamformer = new FloorBeamformer(this.frontEnd.geometry, grid, beamformer);
    this.doppler = new DopplerSteerer(this.frontEnd.geometry, { bins: DEFAULT_DOPPLER_BINS });
    this.map = new Float32Array(grid.size);
  }
}

/** One environment: its links by id, site order. */
interface EnvState {
  readonly tracks: Array<FloorLink | undefined>;
}

/**
 * Turns the CSI frames of every link of an environment into maps of moving power on the floor,
 * with candidate people: the physics front end (src/physics/, docs/physics.md) as a stage. Per
 * environment and per link of the site (by `linkId`; a frame without one is the primary link's,
 * the site's first receiver; frames of a link the site does not have are dropped), steps 1-2 and the
 * windows of step 3 being the link's `LinkFrontEnd` (src/physics/linkFrontEnd.ts, shared with room calibration):
 *
 * 1. each packet is aligned onto the link's empty-room static channel (`StaticChannel`, anchored
 *    at the line-of-sight delay of the link's radios). For now the first `learnSeconds` of each
 *    link (from its first packet) are taken as the empty room: the channel is learned from them
 *    and then frozen (no presence detection tells the stage yet when the room is empty again);
 * 2. pushed into the link's `MovingWindows`;
 * 3. whenever the primary link's short window is due (64 packets, every 16), each link's latest
 *    64 packets (the primary's window, and every other link's last 64 packets when it has them
 *    and its newest is within {@link STALE_MS} of the primary's) minus the static channel (minus
 *    the window's mean while the link is still learning) are beamformed onto the room's grid
 *    (`FloorBeamformer`, one per link, built from the radios and the link's first frame's
 *    subcarriers and channel: an unknown channel is taken as {@link DEFAULT_CHANNEL}; the frames'
 *    antenna counts win over the radios'), the maps fused (`fuseMaps`) and candidates found
 *    (`findCandidates`; with `coarseStep` > 1 coarse-to-fine, `CandidateSearch`), the Doppler of
 *    each candidate steered, and one {@link FloorMapItem} is emitted.
 *
 * A link whose frames change layout mid-stream (antennas, subcarriers, channel or bandwidth) is
 * reset: its static channel, ring and beamformer are built again from the new frame and it learns
 * again for `learnSeconds`. A silence of more than {@link GAP_MS} (or time going back) empties its
 * ring, keeping the static channel. Nothing is allocated per packet (the aligner, the ring and the
 * maps are preallocated per link); per window, the emitted map and the candidates are new. State
 * lives in the subscription; a failure (e.g. a channel whose centre frequency is not placed) goes
 * to `subscriber.error`.
 *
 * @param options radios, room, learnSeconds, maxCandidates, cell
 * @returns an operator from the frames of all links to one floor map per primary short window
 * @throws RangeError for a parameter out of range (at creation)
 * @example
 * frames$.pipe(floorMap({ radios: () => DEFAULT_RADIOS, learnSeconds: 10 })).subscribe((m) => m.candidates[0]);
 */
export function floorMap(options: FloorMapOptions = {}): OperatorFunction<CsiFrame, FloorMapItem> {
  const learnSeconds = options.learnSeconds ?? DEFAULT_LEARN_SECONDS;
  const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
  const cell = options.cell ?? DEFAULT_CELL_M;
  const chainCalibration = options.chainCalibration ?? DEFAULT_CHAIN_CALIBRATION;
  const coarseStep = options.coarseStep ?? DEFAULT_SEARCH_STEP;
  if (!(Number.isInteger(coarseStep) && coarseStep >= 1 && coarseStep <= COARSE_MAX))
    throw new RangeError(`floorMap: coarseStep must be an integer in [1, ${COARSE_MAX}], got ${coarseStep}`);
  if (!(learnSeconds >= 0 && learnSeconds <= LEARN_MAX)) throw new RangeError(`floorMap: learnSeconds must be in [0, ${LEARN_MAX}], got ${learnSeconds}`);
  if (!(Number.isInteger(maxCandidates) && maxCandidates >= 1 && maxCandidates <= 64))
    throw new RangeError(`floorMap: maxCandidates must be an integer in [1, 64], got ${maxCandidates}`);
  if (!(cell >= CELL_MIN && cell <= CELL_MAX)) throw new RangeError(`floorMap: cell must be in [${CELL_MIN}, ${CELL_MAX}], got ${cell}`);
  const learnMs = learnSeconds * 1000;
  const beamformer: BeamformerOptions = { ...DEFAULT_BEAMFORMER, ...options.beamformer };
  const dopplerFromComponents = (options.dopplerFrom ?? DEFAULT_DOPPLER_FROM) === 'components';
  if (options.dopplerFrom !== undefined && options.dopplerFrom !== 'components' && options.dopplerFrom !== 'snapshots')
    throw new RangeError(`floorMap: dopplerFrom must be 'components' or 'snapshots', got ${String(options.dopplerFrom)}`);
  return (source) =>
    new Observable<FloorMapItem>((subscriber) => {
      let links: SiteLink[];
      let grid: FloorGrid;
      let calibration: RoomCalibration | null;
      let room: FloorRoom;
      try {
        links = siteLinks((options.radios ?? (() => DEFAULT_RADIOS))());
        calibration = options.calibration?.() ?? null;
        if (links.length === 0) throw new RangeError('floorMap: the site has no link (its radios need one tx and at least one rx)');
        room = options.room?.() ?? { width: DEFAULT_ROOM_WIDTH, depth: DEFAULT_ROOM_DEPTH };
        if (!(room.width >= ROOM_WIDTH.min! && room.width <= ROOM_WIDTH.max! && room.depth >= ROOM_DEPTH.min! && room.depth <= ROOM_DEPTH.max!))
          throw new RangeError(
            `floorMap: the room must be ${ROOM_WIDTH.min}..${ROOM_WIDTH.max} m wide and ${ROOM_DEPTH.min}..${ROOM_DEPTH.max} m deep, got ${room.width} x ${room.depth}`,
          );
        grid = floorGrid({ x0: 0, x1: room.width, y0: 0, y1: room.depth, cell });
        if (grid.size > MAX_GRID_POINTS) throw new RangeError(`floorMap: the grid has ${grid.size} points (most ${MAX_GRID_POINTS}): use a larger cell`);
      } catch (e) {
        subscriber.error(e);
        return;
      }
      const index = new Map(links.map((l, i) => [l.id, i]));
      const envs = new Map<string, EnvState>();
      const fused = new Float32Array(grid.size);
      const search = new CandidateSearch(grid, { step: coarseStep });
      const candidateOptions = {
        maxCandidates,
        ...(options.minFraction !== undefined ? { minFraction: options.minFraction } : {}),
        ...(options.suppressRadius !== undefined ? { suppressRadius: options.suppressRadius } : {}),
      };
      const maps: Float32Array[] = [];
      const ids: string[] = [];
      const steerers: DopplerSteerer[] = [];
      const steerBfs: FloorBeamformer[] = [];
      const windows: MovingWindow[] = [];
      const beamformers: FloorBeamformer[] = [];
      const linkWindows = new Array<MovingWindow | undefined>(links.length).fill(undefined);
      const gridOut: FloorMapGrid = Object.freeze({
        x0: grid.x0,
        y0: grid.y0,
        cell: grid.cell,
        nx: grid.nx,
        ny: grid.ny,
        heights: Object.freeze(Array.from(grid.heights)),
      });

      const frontEnd: LinkFrontEndOptions = { learnMs, chainCalibration, calibration, room };

      const profile = options.profile;
      const now = (): number => (profile ? performance.now() : 0);

      const emit = (env: string, state: EnvState, primary: FloorLink, w: MovingWindow): void => {
        let t0 = now();
        maps.length = 0;
        ids.length = 0;
        steerers.length = 0;
        windows.length = 0;
        maps.push(primary.map);
        ids.push(primary.link.id);
        steerers.push(primary.doppler);
        steerBfs.length = 0;
        steerBfs.push(primary.beamformer);
        windows.push(w);
        beamformers.length = 0;
        beamformers.push(primary.beamformer);
        for (let i = 1; i < state.tracks.length; i++) {
          const t = state.tracks[i];
          if (!t || !(w.time - t.frontEnd.lastTime <= STALE_MS)) continue;
          const win = t.frontEnd.latest();
          if (!win) continue;
          maps.push(t.map);
          ids.push(t.link.id);
          beamformers.push(t.beamformer);
          // Links of other channels cannot share the primary's Doppler bins (steerCandidates needs one centre frequency).
          if (t.doppler.geometry.centreHz === primary.doppler.geometry.centreHz) {
            steerers.push(t.doppler);
            steerBfs.push(t.beamformer);
            windows.push(win);
          }
          linkWindows[beamformers.length - 1] = win;
        }
        linkWindows[0] = w;
        let t1 = now();
        if (profile) {
          profile.window += t1 - t0;
          profile.windows += beamformers.length;
        }
        for (let l = 0; l < beamformers.length; l++) beamformers[l]!.reduce(linkWindows[l]!);
        t0 = now();
        if (profile) profile.components += t0 - t1;
        const candidates = search.run(beamformers, maps, fused, candidateOptions, profile);
        t0 = now();
        const bins = primary.doppler.bins;
        const comps = dopplerFromComponents ? steerBfs.map((b) => b.principalComponents) : undefined;
        const doppler = steerCandidates(steerers, windows, candidates, new Float32Array(candidates.length * bins), comps ? { components: comps } : {});
        t1 = now();
        if (profile) profile.doppler += t1 - t0;
        linkWindows.fill(undefined);
        subscriber.next({
          environmentId: env,
          sourceId: primary.sourceId,
          quality: ids.length / links.length,
          time: w.time,
          grid: gridOut,
          map: fused.slice(),
          candidates,
          links: ids.slice(),
          doppler,
          dopplerBins: bins,
          dopplerRates: primary.doppler.pathRates,
        });
        if (profile) {
          profile.emit += now() - t1;
          profile.maps++;
        }
      };

      const sub = source.subscribe({
        next(f) {
          try {
            const i = f.linkId === undefined ? 0 : (index.get(f.linkId) ?? -1);
            if (i < 0) return;
            const env = f.environmentId;
            let state = envs.get(env);
            if (!state) {
              state = { tracks: new Array<FloorLink | undefined>(links.length).fill(undefined) };
              envs.set(env, state);
            }
            let t = state.tracks[i];
            if (!t || !t.frontEnd.fits(f)) {
              t = new FloorLink(links[i]!, f, grid, frontEnd, beamformer);
              state.tracks[i] = t;
            }
            t.sourceId = f.sourceId;
            const t0 = now();
            t.frontEnd.push(f.csi, f.time);
            if (profile) {
              profile.align += now() - t0;
              profile.packets++;
            }
            if (i !== 0) return;
            const t1 = now();
            const w = t.frontEnd.take();
            if (profile) profile.window += now() - t1;
            if (w) emit(env, state, t, w);
          } catch (e) {
            subscriber.error(e);
          }
        },
        error: (e) => subscriber.error(e),
        complete: () => subscriber.complete(),
      });
      return () => sub.unsubscribe();
    });
}

/**
 * A floor map as one JSON object (the ndjson sink's line): snake_case keys, the time as ISO 8601,
 * the map's values to 4 significant digits and candidate positions to the millimetre.
 * @param m the item
 * @returns a plain object for JSON.stringify
 * @example
 * JSON.stringify(floorMapToJson(item)) // {"kind":"floormap","environment_id":"default",...}
 */
export function floorMapToJson(m: FloorMapItem): Record<string, unknown> {
  const map = new Array<number>(m.map.length);
  for (let i = 0; i < m.map.length; i++) {
    const v = m.map[i]!;
    map[i] = Number.isFinite(v) ? Number(v.toPrecision(4)) : 0;
  }
  const mm = (v: number) => Math.round(v * 1000) / 1000;
  return {
    kind: 'floormap',
    environment_id: m.environmentId,
    time: isoTime(m.time),
    grid: m.grid,
    links: m.links,
    candidates: m.candidates.map((c) => ({ x: mm(c.x), y: mm(c.y), z: c.z, power: Number(c.power.toPrecision(4)), index: c.index })),
    map,
  };
}

/** Whether a stream item is a {@link FloorMapItem}. */
export function isFloorMap(v: unknown): v is FloorMapItem {
  return v !== null && typeof v === 'object' && 'map' in v && 'candidates' in v && 'grid' in v && (v as { map: unknown }).map instanceof Float32Array;
}

/** What the service can lend the `floorMap` stage besides its parameters. */
export interface FloorMapContext extends OperatorContext {
  /** The site's radios, read at subscription; default DEFAULT_RADIOS. */
  readonly radios?: () => readonly RadioConfig[];
  /** The room (`environment.site` room_width x room_depth), read at subscription; when given it wins over roomWidth / roomDepth. */
  readonly room?: () => FloorRoom;
  /** The room calibration of the service's model (a v3 room model's `room_calibration`), read at subscription. */
  readonly calibration?: () => RoomCalibration | null;
  /** Called with each map the stage emits, before it goes on (the service keeps the latest for display); a throw errors the stream. */
  readonly onMap?: (item: FloorMapItem) => void;
}

export const spec: OperatorSpec = {
  name: 'floorMap',
  summary: "Beamforms every link's moving channel onto the floor (aligned, static room removed), fuses the maps, finds candidate people",
  input: 'frame',
  output: 'floormap',
  params: [
    {
      name: 'learnSeconds',
      type: 'number',
      default: DEFAULT_LEARN_SECONDS,
      min: 0,
      max: LEARN_MAX,
      description: "Seconds from each link's first packet taken as the empty room (static channel learned, then frozen); 0 = none",
    },
    {
      name: 'chainCalibration',
      type: 'boolean',
      default: DEFAULT_CHAIN_CALIBRATION,
      description: "Fit each link's chain phases blindly from its learned static channel (line of sight and the room's walls); a room calibration's phases win",
    },
    { name: 'maxCandidates', type: 'int', default: DEFAULT_MAX_CANDIDATES, min: 1, max: 64, description: 'Most candidates per map (max_persons + 2)' },
    { name: 'roomWidth', ...ROOM_WIDTH, description: 'Room width (x), metres (environment.site.room_width)' },
    { name: 'roomDepth', ...ROOM_DEPTH, description: 'Room depth (y), metres (environment.site.room_depth)' },
    { name: 'cell', type: 'number', default: DEFAULT_CELL_M, min: CELL_MIN, max: CELL_MAX, description: 'Grid cell, metres' },
    {
      name: 'coarseStep',
      type: 'int',
      default: DEFAULT_SEARCH_STEP,
      min: 1,
      max: COARSE_MAX,
      description: 'Coarse-to-fine search: beamform every coarseStep-th grid point, then the cells around each peak exactly; 1 = every point',
    },
    {
      name: 'components',
      type: 'int',
      default: DEFAULT_COMPONENTS,
      min: 1,
      max: 16,
      description: "Principal components of each link's window that are beamformed",
    },
  ],
  create: (params, ctx: FloorMapContext) => {
    const width = Number(params.roomWidth ?? DEFAULT_ROOM_WIDTH);
    const depth = Number(params.roomDepth ?? DEFAULT_ROOM_DEPTH);
    const op = floorMap({
      learnSeconds: Number(params.learnSeconds ?? DEFAULT_LEARN_SECONDS),
      chainCalibration: params.chainCalibration === undefined ? DEFAULT_CHAIN_CALIBRATION : Boolean(params.chainCalibration),
      maxCandidates: Number(params.maxCandidates ?? DEFAULT_MAX_CANDIDATES),
      cell: Number(params.cell ?? DEFAULT_CELL_M),
      coarseStep: Number(params.coarseStep ?? DEFAULT_SEARCH_STEP),
      beamformer: { components: Number(params.components ?? DEFAULT_COMPONENTS) },
      // The service's live room (environment.site), read at subscription; else the parameters.
      room:
        ctx.room ??
        (() => {
          const v = ctx.live?.('floorMap');
          return { width: Number(v?.roomWidth ?? width), depth: Number(v?.roomDepth ?? depth) };
        }),
      ...(ctx.radios ? { radios: ctx.radios } : {}),
      ...(ctx.calibration ? { calibration: ctx.calibration } : {}),
    });
    // Each emitted map to the hook; a throw in it goes to subscriber.error (tap's contract).
    const onMap = ctx.onMap;
    return onMap ? (source) => op(source).pipe(tap(onMap)) : op;
  },
};
