/**
 * The model contract: what any pose model dropped in through config `neural_network.model_path`
 * must accept and return. Models are ONNX files run by onnxruntime-node (CPU).
 *
 * Inputs:
 *   `features`  float32 [N, FEATURE_DIM]  one row per CSI window, built by `src/model/features.ts`
 *               (layout, order and normalisation documented there and in docs/model.md).
 *   `site`      float32 [N, SITE_DIM]     optional: the installation's geometry (`siteVector`), the
 *               same row repeated for every window. A model declares this input or not; the
 *               service feeds it to models that do (an unknown site is the all-zero row).
 * Outputs (all float32; P = the model's person slots, metadata `max_persons`):
 *   `presence`  [N, P]            probability that slot p holds a person (0..1)
 *   `keypoints` [N, P, 17, 3]     COCO-17 x, y normalised to the reference view (0..1, x / width,
 *                                 y / height) and a per-keypoint confidence (0..1)
 *   `boxes`     [N, P, 4]         x, y, width, height normalised to the view (0..1)
 *   `floor`     [N, P, 2]         floor position in metres (x across the room, y in depth)
 *   `densepose` [N, P, 24, 3]     per DensePose part: confidence (0..1), u, v (0..1)
 * Slots are ordered by the model's own rule (ours: by floor x, left to right); the tracker, not
 * the slot order, gives identities.
 *
 * ONNX metadata_props the service reads (all strings): `csipose_contract` (= CONTRACT_VERSION),
 * `model_version`, `feature_dim`, `max_persons`, `window_frames`, `trained_on`, `site_dim` on
 * models with the `site` input, and optionally `trained_layouts` (the CSI layouts it was trained
 * on, `formatLayouts`; rows of other layouts are refused, see `PoseModel.trainedLayouts`).
 */
import { ACTIVITIES } from '../pose/types.js';

export const CONTRACT_VERSION = 'csipose-pose-v1';

/**
 * Contract v2: a model with memory, whose skeletons are in metres and whose count, activity and
 * fall answers are its own (docs/model.md "Contract v2"). Inputs:
 *   `features`    float32 [N, FEATURE_DIM]                    the window's row, as in v1
 *   `history`     float32 [N, HISTORY_STEPS, HISTORY_DIM]      summaries of the stream's earlier
 *                 windows, oldest first (`src/model/history.ts`); zeros where unknown
 *   `site`        float32 [N, SITE_DIM]                        optional, as in v1
 * Outputs (P = person slots):
 *   `count`       [N, P + 1]          probability of 0, 1, ..., P people in the room (sums to 1)
 *   `presence`    [N, P]              probability that slot p holds a person
 *   `keypoints3d` [N, P, 17, 3]       COCO-17 joints in metres: x, y on the floor plan RELATIVE TO
 *                                     THE RECEIVER (x - receiver_x, y - receiver_y), z above the floor
 *   `activity`    [N, P, 5]           probabilities of MODEL_ACTIVITIES per slot (sum to 1)
 *   `fall`        [N, 1]              probability that someone began to fall in the last FALL_WINDOW_S
 * Metadata: as v1 (`csipose_contract` = CONTRACT_V2) plus `history_steps`, `history_dim`,
 * `history_stride_frames` and `fall_window_s`. Keypoints in pixels, boxes, floor positions and
 * DensePose part locations are the service's: the skeleton projected through `environment.view`.
 */
export const CONTRACT_V2 = 'csipose-pose-v2';
export const INPUT_HISTORY = 'history';
export const OUTPUT_COUNT = 'count';
export const OUTPUT_KEYPOINTS3D = 'keypoints3d';
export const OUTPUT_ACTIVITY = 'activity';
export const OUTPUT_FALL = 'fall';
/** The activity classes of the v2 `activity` output, in order (the service's activities). */
export const MODEL_ACTIVITIES = ACTIVITIES;
/** The `fall` output looks this many seconds back from the window's end. */
export const FALL_WINDOW_S = 3;

/**
 * Contract v3: a refiner of the physics front end's candidate people (docs/model.md "Contract
 * v3"): one row per candidate, not per window. Input:
 *   `candidates`  float32 [N, steps, feature_dim]   each candidate's last `steps` rows of
 *                 src/physics/refinerInput.ts (REFINER_FEATURES, oldest first)
 * Outputs (per candidate):
 *   `person`   [N]         probability that the candidate is a person
 *   `offset`   [N, 2]      metres: the pelvis's floor point minus the candidate's (x, y)
 *   `height`   [N]         pelvis height above the floor, metres
 *   `heading`  [N, 2]      unit vector (cos, sin) of the facing direction in the floor plan
 *   `activity` [N, 5]      MODEL_ACTIVITIES probabilities
 *   `fall`     [N]         probability that this person's fall began in the last fall_window_s
 *   `skeleton` [N, 17, 3]  COCO-17 joints minus the pelvis, metres
 * Metadata: `csipose_contract` = CONTRACT_V3, `model_version`, `trained_on`, `feature_dim`,
 * `steps`, `stride_maps`, `map_window_packets`, `map_hop_packets`, `max_candidates`,
 * `feature_names` (comma-separated; must equal the service's), `fall_window_s`; a room model
 * (`csipose calibrate`) adds ROOM_CALIBRATION_KEY: the room's calibration of the front end
 * (src/physics/calibration.ts), checked at load.
 */
export const CONTRACT_V3 = 'csipose-pose-v3';
/** Metadata key of a v3 room model's calibration (JSON, src/physics/calibration.ts `roomCalibrationToJson`). */
export const ROOM_CALIBRATION_KEY = 'room_calibration';
export const INPUT_CANDIDATES = 'candidates';
/** The v3 outputs and their trailing dimensions (after N). */
export const MODEL_V3_SHAPES = Object.freeze({
  person: [] as readonly number[],
  offset: [2] as readonly number[],
  height: [] as readonly number[],
  heading: [2] as readonly number[],
  activity: [5] as readonly number[],
  fall: [] as readonly number[],
  skeleton: [17, 3] as readonly number[],
});
export type ModelV3Output = keyof typeof MODEL_V3_SHAPES;
export const MODEL_V3_OUTPUTS = Object.keys(MODEL_V3_SHAPES) as ModelV3Output[];

export const INPUT_FEATURES = 'features';
export const INPUT_SITE = 'site';
export const OUTPUT_PRESENCE = 'presence';
export const OUTPUT_KEYPOINTS = 'keypoints';
export const OUTPUT_BOXES = 'boxes';
export const OUTPUT_FLOOR = 'floor';
export const OUTPUT_DENSEPOSE = 'densepose';

export const MODEL_OUTPUTS = [OUTPUT_PRESENCE, OUTPUT_KEYPOINTS, OUTPUT_BOXES, OUTPUT_FLOOR, OUTPUT_DENSEPOSE] as const;
export const MODEL_V2_OUTPUTS = [OUTPUT_COUNT, OUTPUT_PRESENCE, OUTPUT_KEYPOINTS3D, OUTPUT_ACTIVITY, OUTPUT_FALL] as const;

/** Metadata a contract model carries. */
export interface ModelMetadata {
  csipose_contract: string;
  model_version: string;
  feature_dim: number;
  max_persons: number;
  window_frames: number;
  trained_on: string;
  /** Width of the optional `site` input (SITE_DIM); absent on models without it. */
  site_dim?: number;
  /** v2: the `history` input's steps, values per step and frames between steps. */
  history_steps?: number;
  history_dim?: number;
  history_stride_frames?: number;
  /** v2: seconds the `fall` output looks back. */
  fall_window_s?: number;
  /**
   * The probability from which this model's `fall` output and P(falling) mean a fall, in (0, 1]
   * (a pose frame's `fallTrigger`); absent: FALL_TRIGGER. Chosen on validation for the model.
   */
  fall_trigger?: number;
  /** The CSI layouts the model was trained on ({@link formatLayouts}); absent = not declared. */
  trained_layouts?: string;
  /** v3: steps of history per candidate, maps between steps, candidates per map. */
  steps?: number;
  stride_maps?: number;
  max_candidates?: number;
}

/** A point in the room, metres: x across the room, y in depth from the receiver's wall, z height. */
export interface SitePoint {
  x: number;
  y: number;
  z: number;
}

/**
 * Where the radios hang in which room: what an installer measures. The frame is the floor plan of
 * the model's `floor` output and of the zones: x across the room from its left wall as seen from
 * the receiver's (front) wall, y in depth away from that wall, z above the floor.
 */
export interface SiteGeometry {
  roomWidth: number;
  roomDepth: number;
  receiver: SitePoint;
  transmitter: SitePoint;
}

/** Width of the `site` input. */
export const SITE_DIM = 8;

/** The `site` input's columns, in order (metres; `known` is 1 for a known site, else the row is all 0). */
export const SITE_COLUMNS: readonly string[] = Object.freeze([
  'known',
  'room_width',
  'room_depth',
  'receiver_x',
  'receiver_z',
  'transmitter_x - receiver_x',
  'transmitter_y - receiver_y',
  'transmitter_z - receiver_z',
]);

/**
 * The `site` input row of a geometry (SITE_COLUMNS); null, an unknown site, gives the all-zero row.
 * @param site the installation, or null when unknown
 * @param out where to write SITE_DIM values (default a new array)
 * @returns `out`
 * @example siteVector({ roomWidth: 6, roomDepth: 5, receiver: { x: 3, y: 0.2, z: 1.2 }, transmitter: { x: 3, y: 4.8, z: 1.2 } })
 */
export function siteVector(site: SiteGeometry | null, out: Float32Array = new Float32Array(SITE_DIM)): Float32Array {
  if (!site) {
    out.fill(0, 0, SITE_DIM);
    return out;
  }
  const { receiver: r, transmitter: t } = site;
  out[0] = 1;
  out[1] = site.roomWidth;
  out[2] = site.roomDepth;
  out[3] = r.x;
  out[4] = r.z;
  out[5] = t.x - r.x;
  out[6] = t.y - r.y;
  out[7] = t.z - r.z;
  return out;
}

/**
 * What is wrong with a site geometry, or null when it is usable: every value finite, the room at
 * least 1 m each way, both radios on its floor plan (0..width, 0..depth) at a height of 0..20 m.
 * @param site the geometry to check
 * @returns a message naming the first bad value, or null
 */
export function siteProblem(site: SiteGeometry): string | null {
  const { roomWidth: w, roomDepth: d } = site;
  if (!(Number.isFinite(w) && w >= 1)) return `room width must be a number >= 1 m, got ${w}`;
  if (!(Number.isFinite(d) && d >= 1)) return `room depth must be a number >= 1 m, got ${d}`;
  for (const [name, p] of [
    ['receiver', site.receiver],
    ['transmitter', site.transmitter],
  ] as const) {
    if (!(Number.isFinite(p.x) && p.x >= 0 && p.x <= w)) return `${name} x must be in 0..${w} m (the room width), got ${p.x}`;
    if (!(Number.isFinite(p.y) && p.y >= 0 && p.y <= d)) return `${name} y must be in 0..${d} m (the room depth), got ${p.y}`;
    if (!(Number.isFinite(p.z) && p.z >= 0 && p.z <= 20)) return `${name} z must be in 0..20 m, got ${p.z}`;
  }
  return null;
}

/**
 * Parses the compact form of a site, eight comma-separated metres:
 * `width,depth,receiver_x,receiver_y,receiver_z,transmitter_x,transmitter_y,transmitter_z`
 * (the `infer` stage's `site` parameter). An empty string is an unknown site.
 * @param text the eight numbers, or ''
 * @returns the geometry, or null for ''
 * @throws RangeError naming what is wrong
 * @example parseSite('6,5,3,0.2,1.2,3,4.8,1.2')
 */
export function parseSite(text: string): SiteGeometry | null {
  if (text.trim() === '') return null;
  const parts = text.split(',');
  const v = parts.map((p) => (p.trim() === '' ? NaN : Number(p)));
  if (v.length !== 8 || v.some((x) => !Number.isFinite(x)))
    throw new RangeError(`site must be 8 comma-separated numbers (width,depth,rx_x,rx_y,rx_z,tx_x,tx_y,tx_z in metres), got "${text}"`);
  const site: SiteGeometry = {
    roomWidth: v[0]!,
    roomDepth: v[1]!,
    receiver: { x: v[2]!, y: v[3]!, z: v[4]! },
    transmitter: { x: v[5]!, y: v[6]!, z: v[7]! },
  };
  const problem = siteProblem(site);
  if (problem) throw new RangeError(`site: ${problem}`);
  return site;
}

/**
 * The compact form {@link parseSite} reads: eight comma-separated metres ('' for an unknown site).
 * @param site the geometry, or null
 * @returns e.g. '6,5,3,0.2,1.2,3,4.8,1.2'
 */
export function formatSite(site: SiteGeometry | null): string {
  if (!site) return '';
  const { roomWidth, roomDepth, receiver: r, transmitter: t } = site;
  return [roomWidth, roomDepth, r.x, r.y, r.z, t.x, t.y, t.z].join(',');
}

// ---------------------------------------------------------------------------------------------
// CSI layouts: what a model was trained on, and whether a link's CSI is one of them.

/** A frequency band, from the channel number (GHz). */
export type Band = '2.4' | '5';

/**
 * The CSI layout of a link as the features see it: antennas, subcarriers and the bandwidth they
 * span, and the band. The features resample any subcarrier layout onto the same grid and have
 * room for up to 3 x 3 antennas, so any layout gives a row; a model only reads the rows of the
 * layouts it was trained on.
 */
export interface CsiLayout {
  nRx: number;
  nTx: number;
  nSub: number;
  /**
   * The bandwidth the subcarrier indices span, in FFT bins of 312.5 kHz: up to 64 bins is 20 MHz,
   * 128 is 40, 256 is 80, more is 160. (An ESP32 buffer holding only the LLTF of a 40 MHz channel
   * spans 20 MHz: that is what the model would see.)
   */
  bandwidthMhz: 20 | 40 | 80 | 160;
  /** The band of the channel number; undefined when the source gives none (Intel 5300, POST /pose/process). */
  band?: Band;
}

/**
 * The layouts a model was trained on, as independent choices (every antenna pair with every
 * subcarrier layout in every band). Metadata `trained_layouts`, as {@link formatLayouts} writes it.
 */
export interface TrainedLayouts {
  /** [nRx, nTx] pairs. */
  antennas: ReadonlyArray<readonly [number, number]>;
  /** [nSub, bandwidth MHz spanned] pairs. */
  subcarriers: ReadonlyArray<readonly [number, number]>;
  bands: readonly Band[];
}

/**
 * What `npm run train:v2` draws (`training/ts/recipe.ts`, the simulator's 5 GHz default): the layouts
 * of the shipped model and of every model trained by it (model_version `csipose-pose-...`).
 */
export const RECIPE_LAYOUTS: TrainedLayouts = Object.freeze({
  antennas: Object.freeze([
    [3, 3],
    [2, 2],
    [3, 1],
    [1, 1],
  ] as const),
  subcarriers: Object.freeze([
    [30, 20],
    [56, 20],
    [114, 40],
  ] as const),
  bands: Object.freeze(['5'] as const),
});

/**
 * The band of an 802.11 channel number: 1-14 are 2.4 GHz, 32-196 are 5 GHz.
 * @param channel the channel number (NaN when unknown)
 * @returns the band, or undefined when the number says none
 */
export function bandOfChannel(channel: number | undefined): Band | undefined {
  if (channel === undefined || !Number.isInteger(channel)) return undefined;
  if (channel >= 1 && channel <= 14) return '2.4';
  if (channel >= 32 && channel <= 196) return '5';
  return undefined;
}

/**
 * The layout of a window's CSI (a link's, as the features read it).
 * @param w antennas, subcarriers (their index span gives the bandwidth) and the channel number
 *   (NaN or absent when unknown) of a window or frame
 * @returns the layout
 * @example csiLayout(esp32Window) // { nRx: 1, nTx: 1, nSub: 64, bandwidthMhz: 20, band: '2.4' }
 */
export function csiLayout(w: { nRx: number; nTx: number; nSub: number; subcarriers: ArrayLike<number>; channel?: number }): CsiLayout {
  const subs = w.subcarriers;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < subs.length; i++) {
    const k = subs[i]!;
    if (k < lo) lo = k;
    if (k > hi) hi = k;
  }
  const band = bandOfChannel(w.channel);
  const span = hi - lo;
  const bandwidthMhz = span < 64 ? 20 : span < 128 ? 40 : span < 256 ? 80 : 160;
  return { nRx: w.nRx, nTx: w.nTx, nSub: w.nSub, bandwidthMhz, ...(band ? { band } : {}) };
}

/**
 * A layout in words, for messages and `/system/status`.
 * @example layoutText({ nRx: 1, nTx: 1, nSub: 64, bandwidthMhz: 20, band: '2.4' }) // '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz'
 */
export function layoutText(l: CsiLayout): string {
  return `${l.nRx}x${l.nTx} antennas, ${l.nSub} subcarriers spanning ${l.bandwidthMhz} MHz, ${l.band ? `${l.band} GHz` : 'band unknown'}`;
}

/**
 * The metadata form of trained layouts: `antennas=3x3,2x2;subcarriers=30/20,114/40;bands=5`.
 * @param t the layouts
 * @returns the text {@link parseLayouts} reads
 */
export function formatLayouts(t: TrainedLayouts): string {
  return [
    `antennas=${t.antennas.map(([r, x]) => `${r}x${x}`).join(',')}`,
    `subcarriers=${t.subcarriers.map(([n, bw]) => `${n}/${bw}`).join(',')}`,
    `bands=${t.bands.join(',')}`,
  ].join(';');
}

/**
 * Reads metadata `trained_layouts` ({@link formatLayouts}'s form; the three parts in any order,
 * each required).
 * @param text the metadata value
 * @returns the layouts
 * @throws RangeError naming what is wrong
 */
export function parseLayouts(text: string): TrainedLayouts {
  const parts = new Map<string, string[]>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new RangeError(`trained_layouts: "${part}" is not NAME=VALUES`);
    parts.set(
      part.slice(0, eq).trim(),
      part
        .slice(eq + 1)
        .split(',')
        .map((v) => v.trim()),
    );
  }
  const list = (name: string) => {
    const v = parts.get(name);
    if (!v || v.length === 0 || v.some((x) => x === '')) throw new RangeError(`trained_layouts: ${name}= is missing or empty in "${text}"`);
    return v;
  };
  const pair = (name: string, sep: string, ok: (a: number, b: number) => boolean) =>
    list(name).map((v): readonly [number, number] => {
      const [a, b, more] = v.split(sep).map(Number);
      if (more !== undefined || !Number.isInteger(a) || !Number.isInteger(b) || !ok(a!, b!)) throw new RangeError(`trained_layouts: bad ${name} entry "${v}"`);
      return [a!, b!];
    });
  const antennas = pair('antennas', 'x', (r, x) => r >= 1 && r <= 3 && x >= 1 && x <= 3);
  const subcarriers = pair('subcarriers', '/', (n, bw) => n >= 1 && (bw === 20 || bw === 40 || bw === 80 || bw === 160));
  const bands = list('bands').map((b) => {
    if (b !== '2.4' && b !== '5') throw new RangeError(`trained_layouts: bad band "${b}" (2.4 or 5)`);
    return b;
  });
  return { antennas, subcarriers, bands };
}

/**
 * What of a layout a model was not trained on, or null when it was trained on all of it. A band
 * the source does not give is not held against it.
 * @param t the model's trained layouts
 * @param l the link's layout
 * @returns e.g. '3x2 antennas (trained: 3x3, 2x2, 3x1, 1x1)', or null
 */
export function untrainedPart(t: TrainedLayouts, l: CsiLayout): string | null {
  const why: string[] = [];
  if (!t.antennas.some(([r, x]) => r === l.nRx && x === l.nTx))
    why.push(`${l.nRx}x${l.nTx} antennas (trained: ${t.antennas.map(([r, x]) => `${r}x${x}`).join(', ')})`);
  if (!t.subcarriers.some(([n, bw]) => n === l.nSub && bw === l.bandwidthMhz))
    why.push(`${l.nSub} subcarriers spanning ${l.bandwidthMhz} MHz (trained: ${t.subcarriers.map(([n, bw]) => `${n} spanning ${bw} MHz`).join(', ')})`);
  if (l.band && !t.bands.includes(l.band)) why.push(`${l.band} GHz (trained: ${t.bands.map((b) => `${b} GHz`).join(', ')})`);
  return why.length ? why.join('; ') : null;
}
