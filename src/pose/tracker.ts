import { Hungarian } from './hungarian.js';
import { ConstantVelocityKalman, type KalmanNoise } from './kalman.js';
import { ACTIVITIES, N_KEYPOINTS, type PersonPose, type PoseFrame, type TrackStats } from './types.js';

/** Weights of the terms of the assignment cost (see {@link MultiPersonTracker}). */
export interface CostWeights {
  /** Box centre distance over the box diagonal. */
  center: number;
  /** Mean keypoint distance over the box diagonal. */
  keypoints: number;
  /** Floor distance in metres. */
  floor: number;
}

/**
 * Everything a {@link MultiPersonTracker} can be told. The track lifecycle (`minHits`, `maxAge`;
 * {@link TrackerLifecycle}) is the caller's to give, the rest defaults to {@link TRACKER_DEFAULTS}.
 */
export interface TrackerOptions {
  /**
   * Frames a new track must be matched in, one after the other, before it is reported; 1..1000.
   * The service gives config `detection.tracking_min_hits` (its default: the schema's, as
   * `DEFAULT_TRACKER_OPTIONS` in `operators/track.ts`). During the first `minHits` frames of the
   * stream every track is reported at once.
   */
  minHits: number;
  /**
   * Frames an unmatched track is kept and predicted before it is ended; 0..100000. The service
   * gives config `detection.tracking_max_age` (its default: the schema's, as above).
   */
  maxAge: number;
  /** Largest assignment cost at which a detection may continue a track; default 1, (0, 1000]. */
  gate: number;
  /**
   * Second round: detections and confirmed tracks that the first round (`gate`) left apart are
   * paired up to this cost, before any detection starts a new track; default 10, 0..1000 (at or
   * below `gate`: no second round). A model's floor positions can jump a metre between frames
   * while its count stays right; without this round such a jump ends one identity and hides the
   * person for `minHits` frames as a tentative new one. On VALIDATION scenes (with the count
   * hysteresis of the infer operator) the count changed 15.4 times a minute with no second round,
   * 10.9 at 2, 8.4 at 3, 6.3 at 5 and 4.9 at 10, with identity switches 505 -> 442.
   */
  reclaimGate: number;
  /**
   * Frames a lost (unmatched) track's position is still extrapolated at its velocity; after that it
   * stays where it was last predicted until it is matched again or ended (`maxAge`); default
   * {@link COAST_FRAMES}, 0..100000. Without the limit a track lost for seconds is predicted across
   * the room and out of it, so the person, seen again where they were, gets a new identity.
   */
  coastFrames: number;
  /**
   * Frames a lost confirmed track is still reported, as it was last seen (its last person, still,
   * `held: true`); default {@link HOLD_FRAMES}, 0..100000 (0: only persons detected in the frame).
   * A person the model misses for a moment is still in the room: the count holds through the gap.
   */
  holdFrames: number;
  /**
   * Exponential smoothing of reported keypoints: the weight of the previous smoothed value,
   * 0 (default: keypoints are passed through as detected) to 0.99.
   */
  smoothKeypoints: number;
  /** Weights of the cost terms; default 1 each, each 0..1000. */
  weights: CostWeights;
  /** Keypoints below this confidence are left out of the keypoint cost; default 0.1, 0..1. */
  keypointMinConfidence: number;
  /**
   * Kalman noise of the floor filter that predicts where a track will be, for the assignment
   * (m); default q 0.3 m^2/s^3, 0.15 m, 1.5 m/s. The reported velocity and the statistics come
   * from the motion filter (`motionNoise`) instead.
   */
  floorNoise: KalmanNoise;
  /**
   * Kalman noise of the motion filter on the floor plan, whose state is the reported floor
   * velocity and the statistics; default q {@link MOTION_NOISE}. Its measurement noise is the
   * model's floor error, not a detector's: see {@link MOTION_NOISE}.
   */
  motionNoise: KalmanNoise;
  /**
   * For detections without the model's activity probabilities: seconds over which the motion
   * filter's position must have moved `motionDisplacement` before its velocity is believed;
   * default {@link MOTION_SPAN_S}, (0, 3600].
   */
  motionSpan: number;
  /** Metres the smoothed position must move over `motionSpan` to count as motion; default {@link MOTION_DISPLACEMENT_M}, 0..1000 (0: always believed). */
  motionDisplacement: number;
  /**
   * For detections with the model's activity probabilities (`modelActivity`, contract v2): the
   * probability of walking from which the motion filter's velocity is believed, instead of the
   * displacement rule; default {@link MOTION_WALK_PROBABILITY}, 0..1 (0: the displacement rule for
   * every detection).
   */
  motionWalkProbability: number;
  /** Kalman noise in the view (px); default q 3000 px^2/s^3, 15 px, 150 px/s. */
  viewNoise: KalmanNoise;
  /** Speed at and above which a track counts as moving: floor m/s (default 0.2) and view px/s (default 20). */
  movingSpeed: { floor: number; view: number };
  /** Points kept in each track's trajectory ring; default 600, 1..100000. */
  trajectoryLimit: number;
  /** Ended tracks kept for {@link MultiPersonTracker.track}; default 1000, 0..1000000. */
  endedLimit: number;
  /** Detections considered per frame (the rest are dropped); default 64, 1..10000. */
  maxDetections: number;
  /** Live tracks at most; default 128, 1..10000. */
  maxTracks: number;
}

/**
 * The options a tracker has no default for: the track lifecycle, a setting of the service (config
 * `detection.tracking_min_hits`, `tracking_max_age`) whose default is stated once, in the config
 * schema. The constructor takes them; `DEFAULT_TRACKER_OPTIONS` in `operators/track.ts` gives the
 * schema's defaults with {@link TRACKER_DEFAULTS}.
 */
export type TrackerLifecycle = Pick<TrackerOptions, 'minHits' | 'maxAge'>;

/** Options as accepted by `setOptions` (and, with {@link TrackerLifecycle}, the constructor): any subset, nested groups partly. */
export type TrackerOptionsInput = Partial<Omit<TrackerOptions, 'weights' | 'floorNoise' | 'motionNoise' | 'viewNoise' | 'movingSpeed'>> & {
  weights?: Partial<CostWeights>;
  floorNoise?: Partial<KalmanNoise>;
  motionNoise?: Partial<KalmanNoise>;
  viewNoise?: Partial<KalmanNoise>;
  movingSpeed?: Partial<TrackerOptions['movingSpeed']>;
};

/**
 * Noise of the motion filter (reported floor velocity, statistics), chosen by measurement
 * (`training/ts/study/speed.ts`: the shipped model on the default room, seeds 2-5, 4 x 5 min;
 * scores are the balanced speed error described at {@link MOTION_WALK_PROBABILITY}):
 * - measurementStd 0.65 m: the model's floor error, 0.65 m rms per axis (of 0.3-1 m, the least
 *   error with either stationary test). It is not white: its autocorrelation is 0.93 after one
 *   frame, 0.70 after 1 s, 0.60 after 2 s and 0.36 after 15 s (a bias that wanders, and jumps).
 *   The association filter's 0.15 m (a detector's error) made a filter chase it: a still person
 *   was reported at a median 0.48 m/s, and at 0.3 m/s or more 75% of the time.
 * - accelerationDensity 0.1 m^2/s^3: the least error of 0.05-1 with the displacement rule, within
 *   0.002 m/s of the least (0.3) with the model's activity; 0.03 under-reads walkers, who walk
 *   2-5 s at a time in the simulated rooms, larger values follow the wandering error.
 * - initialVelocityStd 1.5 m/s: as the floor filter (a new track may be walking).
 */
export const MOTION_NOISE: Readonly<KalmanNoise> = Object.freeze({ accelerationDensity: 0.1, measurementStd: 0.65, initialVelocityStd: 1.5 });
/**
 * When the motion filter's velocity is believed (reported, and counted as movement); otherwise the
 * person is still and the velocity is reported as 0. Smoothing alone cannot tell the model's
 * wandering error from walking: a filter slow enough to hold a still person near 0 m/s reads
 * walkers at half their speed. Two stationary tests, chosen on the same runs by the balanced speed
 * error, the mean of the mean errors of still people and of walkers (weighed equally: still
 * frames outnumber walking ones 4 to 1); the tracker as it was scored 0.47 m/s.
 * - With the model's activity probabilities (every detection of a contract v2 model): believed
 *   while the model gives walking a probability of at least MOTION_WALK_PROBABILITY. Of 0.1-0.5,
 *   0.3 scored least, 0.25 m/s (a still person moving 14% of the time instead of 75%, walkers 63%
 *   instead of 87%), 0.2-0.35 within 0.005 m/s of it; requiring the displacement rule as well
 *   scored worse (0.27 m/s).
 * - Without (v1 models, submitted poses): believed while the motion filter's position has moved at
 *   least MOTION_DISPLACEMENT_M since MOTION_SPAN_S ago: the smoothed position of a still person
 *   drifts and comes back, a walker's keeps going. Over spans of 0.5-3 s and displacements of
 *   0.4-1 m, 1 s and 0.5 m (0.5 m/s held for 1 s) scored least, 0.31 m/s; every choice within
 *   0.5-2 s and 0.4-0.7 m was within 0.01 m/s of it.
 */
export const MOTION_WALK_PROBABILITY = 0.3;
/** See {@link MOTION_WALK_PROBABILITY}. */
export const MOTION_SPAN_S = 1;
/** See {@link MOTION_WALK_PROBABILITY}. */
export const MOTION_DISPLACEMENT_M = 0.5;

/**
 * Frames a lost track is extrapolated (`coastFrames`): 3, about half a second of pose frames.
 * Measured on the default room's validation seeds 2, 3 and 4 (10 simulated minutes each, two
 * people, the v3 refiner, `tracking_max_age` 300): 19 / 17 / 7 track ids with no limit, 6 / 8 / 7
 * with 3, 9 at 10 (seed 2). Chosen there; `npm start`'s own seed is the reported one.
 */
export const COAST_FRAMES = 3;

/**
 * Frames a lost track is still reported ({@link TrackerOptions.holdFrames}): 0, off. Measured on
 * the default room's validation seeds 2-5 (10 simulated minutes each, two people, the v3 refiner),
 * the share of frames with the right count: 0.387 / 0.501 / 0.617 / 0.102 (mean 0.402) reporting
 * only detected persons; 6 frames 0.458; 12 0.485; 25 0.512; 50 0.514, where one more than the
 * truth went from 0.13 of frames (12) to 0.19 (25) and 0.29 (50). On `npm start`'s own seed, the
 * reported one, 25 took the count right from 51.1 % to 32.1 % (one more than the truth in 42 % of
 * frames, two more in 17 %): a held track beside a new one for the same person, or a ghost held,
 * adds a person. Holding only tracks seen at least `holdFrames` times changed validation by a
 * point or two. Not a default until it does not add ghosts.
 */
export const HOLD_FRAMES = 0;

/**
 * The defaults of every option but the track lifecycle ({@link TrackerLifecycle}, whose defaults
 * are the config schema's: `DEFAULT_TRACKER_OPTIONS` in `operators/track.ts` adds them).
 */
export const TRACKER_DEFAULTS: Readonly<Omit<TrackerOptions, keyof TrackerLifecycle>> = Object.freeze({
  gate: 1,
  reclaimGate: 10,
  coastFrames: COAST_FRAMES,
  holdFrames: HOLD_FRAMES,
  smoothKeypoints: 0,
  weights: Object.freeze({ center: 1, keypoints: 1, floor: 1 }),
  keypointMinConfidence: 0.1,
  floorNoise: Object.freeze({ accelerationDensity: 0.3, measurementStd: 0.15, initialVelocityStd: 1.5 }),
  motionNoise: MOTION_NOISE,
  motionSpan: MOTION_SPAN_S,
  motionDisplacement: MOTION_DISPLACEMENT_M,
  motionWalkProbability: MOTION_WALK_PROBABILITY,
  viewNoise: Object.freeze({ accelerationDensity: 3000, measurementStd: 15, initialVelocityStd: 150 }),
  movingSpeed: Object.freeze({ floor: 0.2, view: 20 }),
  trajectoryLimit: 600,
  endedLimit: 1000,
  maxDetections: 64,
  maxTracks: 128,
});

/** A reported track's state: matched in the latest frame, unmatched but kept, or over. */
export type TrackStatus = 'active' | 'lost' | 'ended';

/** One trajectory point (spec Track `trajectory` item). */
export interface TrajectoryPoint {
  /** Epoch ms. */
  time: number;
  /** Detected box centre, view pixels. */
  centerX: number;
  centerY: number;
  confidence: number;
}

const FIRST_TRAJECTORY_CAPACITY = 16;
/** First size of a track's ring of smoothed positions (`MotionSupport`): 2 s at 12.5 frames/s fits. */
const FIRST_SUPPORT_CAPACITY = 32;
/** Most points that ring holds; at higher frame rates the span is shortened (a stricter test). */
const MAX_SUPPORT_CAPACITY = 4096;

/**
 * The smoothed floor positions of one track over the last `span` seconds, plus the newest one at
 * or before `span` ago (the anchor the displacement is measured from), in a ring of typed arrays.
 */
class MotionSupport {
  private t = new Float64Array(FIRST_SUPPORT_CAPACITY);
  private x = new Float64Array(FIRST_SUPPORT_CAPACITY);
  private y = new Float64Array(FIRST_SUPPORT_CAPACITY);
  private start = 0;
  private count = 0;

  /**
   * Adds the position at `time` and tells whether the track moved `displacement` since `span` ago
   * (from its first position when it is younger than that).
   * @param time epoch ms
   * @param x smoothed floor x, m
   * @param y smoothed floor y, m
   * @param spanMs the span, ms
   * @param displacement metres
   * @returns whether the displacement supports motion
   */
  push(time: number, x: number, y: number, spanMs: number, displacement: number): boolean {
    let cap = this.t.length;
    if (this.count === cap) {
      if (cap < MAX_SUPPORT_CAPACITY) this.grow((cap = cap * 2));
      else {
        this.start = (this.start + 1) % cap;
        this.count--;
      }
    }
    const k = (this.start + this.count) % cap;
    this.t[k] = time;
    this.x[k] = x;
    this.y[k] = y;
    this.count++;
    // Keep one point at or before `time - span`: drop the oldest while the next one is also old enough.
    while (this.count > 1 && this.t[(this.start + 1) % cap]! <= time - spanMs) {
      this.start = (this.start + 1) % cap;
      this.count--;
    }
    const a = this.start;
    return Math.hypot(x - this.x[a]!, y - this.y[a]!) >= displacement;
  }

  private grow(cap: number): void {
    const old = this.t.length;
    const t = new Float64Array(cap);
    const x = new Float64Array(cap);
    const y = new Float64Array(cap);
    for (let i = 0; i < this.count; i++) {
      const k = (this.start + i) % old;
      t[i] = this.t[k]!;
      x[i] = this.x[k]!;
      y[i] = this.y[k]!;
    }
    this.t = t;
    this.x = x;
    this.y = y;
    this.start = 0;
  }
}
/** Time constant (ms) with which a track forgets a larger size it had (see `Track.sizeDiag`). */
const SIZE_MEMORY_MS = 2000;

/**
 * The last `limit` points of a track, oldest first, in a ring of typed arrays. The ring starts
 * small and doubles up to the limit, so a short-lived track does not pay for 600 points.
 */
export class Trajectory {
  private times: Float64Array;
  private xs: Float32Array;
  private ys: Float32Array;
  private confs: Float32Array;
  /** Index of the oldest point. */
  private start = 0;
  private count = 0;
  private cap: number;

  /** @param limit most points kept (>= 1) */
  constructor(private limit: number) {
    this.cap = Math.min(limit, FIRST_TRAJECTORY_CAPACITY);
    this.times = new Float64Array(this.cap);
    this.xs = new Float32Array(this.cap);
    this.ys = new Float32Array(this.cap);
    this.confs = new Float32Array(this.cap);
  }

  /** Points held. */
  get length(): number {
    return this.count;
  }

  /** Most points kept. */
  get capacity(): number {
    return this.limit;
  }

  /**
   * Appends a point, dropping the oldest when full.
   * @param time epoch ms
   * @param cx box centre x, px
   * @param cy box centre y, px
   * @param confidence detection confidence
   */
  push(time: number, cx: number, cy: number, confidence: number): void {
    if (this.count === this.cap && this.cap < this.limit) this.realloc(Math.min(this.limit, this.cap * 2));
    let slot: number;
    if (this.count < this.cap) {
      slot = (this.start + this.count) % this.cap;
      this.count++;
    } else {
      slot = this.start;
      this.start = (this.start + 1) % this.cap;
    }
    this.times[slot] = time;
    this.xs[slot] = cx;
    this.ys[slot] = cy;
    this.confs[slot] = confidence;
  }

  /**
   * One point, oldest first.
   * @param i 0..length-1
   * @returns a new object, or undefined out of range
   */
  at(i: number): TrajectoryPoint | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.count) return undefined;
    const k = (this.start + i) % this.cap;
    return { time: this.times[k]!, centerX: this.xs[k]!, centerY: this.ys[k]!, confidence: this.confs[k]! };
  }

  /**
   * All points, oldest first, optionally limited to a time range.
   * @param from earliest epoch ms (inclusive), default -Infinity
   * @param to latest epoch ms (inclusive), default Infinity
   * @returns new point objects
   */
  toArray(from = -Infinity, to = Infinity): TrajectoryPoint[] {
    const out: TrajectoryPoint[] = [];
    for (let i = 0; i < this.count; i++) {
      const k = (this.start + i) % this.cap;
      const t = this.times[k]!;
      if (t >= from && t <= to) out.push({ time: t, centerX: this.xs[k]!, centerY: this.ys[k]!, confidence: this.confs[k]! });
    }
    return out;
  }

  /**
   * Changes the limit, keeping the newest points.
   * @param limit most points kept (>= 1)
   */
  setLimit(limit: number): void {
    if (limit === this.limit) return;
    this.limit = limit;
    if (this.cap > limit || this.count > limit) this.realloc(Math.min(limit, Math.max(this.count, FIRST_TRAJECTORY_CAPACITY)));
  }

  /** Copies the newest min(count, cap) points, oldest first, into arrays of `cap` slots. */
  private realloc(cap: number): void {
    const keep = Math.min(this.count, cap);
    const times = new Float64Array(cap);
    const xs = new Float32Array(cap);
    const ys = new Float32Array(cap);
    const confs = new Float32Array(cap);
    for (let i = 0; i < keep; i++) {
      const k = (this.start + this.count - keep + i) % this.cap;
      times[i] = this.times[k]!;
      xs[i] = this.xs[k]!;
      ys[i] = this.ys[k]!;
      confs[i] = this.confs[k]!;
    }
    this.times = times;
    this.xs = xs;
    this.ys = ys;
    this.confs = confs;
    this.cap = cap;
    this.start = 0;
    this.count = keep;
  }
}

/**
 * What the tracker keeps about one reported track (spec Track). The object is owned by the
 * tracker and updated in place as frames arrive: copy what you need to keep a snapshot.
 */
export interface TrackRecord {
  readonly trackId: number;
  /** Equal to `trackId`: one person per track. */
  readonly personId: number;
  /** Epoch ms of the first and the last matched detection. */
  readonly firstSeen: number;
  readonly lastSeen: number;
  /** Frames in which the track was matched. */
  readonly totalFrames: number;
  readonly averageConfidence: number;
  /** `active` when matched in the latest frame, `lost` while unmatched but kept, then `ended`. */
  readonly status: TrackStatus;
  readonly trajectory: Trajectory;
  readonly statistics: Readonly<TrackStats>;
  /** Unit of `statistics`: metres on the floor plan, or view pixels when the track had no floor position at birth. */
  readonly statisticsUnit: 'm' | 'px';
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const KP_LEN = N_KEYPOINTS * 3;

/** Internal state of one track, confirmed or not. */
class Track {
  /** 0 until confirmed. */
  id = 0;
  confirmed = false;
  hits = 0;
  /** Consecutive frames without a match. */
  missed = 0;
  /** The person last reported for this track (held while it is lost: `holdFrames`). */
  last: PersonPose | null = null;
  floor: ConstantVelocityKalman | null = null;
  /** Motion filter on the floor plan (`motionNoise`): the reported velocity and the statistics. */
  motion: ConstantVelocityKalman | null = null;
  support: MotionSupport | null = null;
  /** Whether the motion filter's velocity is believed at the latest match (`MOTION_WALK_PROBABILITY`). */
  moving = false;
  readonly view: ConstantVelocityKalman;
  /** Last matched detection: box centre (px), keypoints. */
  lastCx = 0;
  lastCy = 0;
  /**
   * Size of the person (px, box diagonal) that the cost is normalised by: the largest recent
   * detected diagonal, forgotten with a time constant of SIZE_MEMORY_MS. A person walking out of
   * the view keeps only a sliver of a box (one keypoint: 8 x 8 px) whose centre jumps; measured
   * against the sliver's own size that jump would cost many times the gate and end the track.
   */
  sizeDiag = 0;
  readonly keypoints = new Float32Array(KP_LEN);
  hasKeypoints = false;
  smoothed: Float32Array | null = null;
  smoothedValid = false;
  /** Statistics state: the time of the last match. */
  prevTime = 0;
  confidenceSum = 0;
  readonly record: Mutable<TrackRecord>;
  readonly stats: TrackStats;

  constructor(
    readonly birthFrame: number,
    time: number,
    statsOnFloor: boolean,
    trajectoryLimit: number,
    viewNoise: KalmanNoise,
  ) {
    this.view = new ConstantVelocityKalman(viewNoise);
    this.stats = { movementDistance: 0, averageSpeed: 0, timeStationary: 0, timeMoving: 0 };
    this.record = {
      trackId: 0,
      personId: 0,
      firstSeen: time,
      lastSeen: time,
      totalFrames: 0,
      averageConfidence: 0,
      status: 'active',
      trajectory: new Trajectory(trajectoryLimit),
      statistics: this.stats,
      statisticsUnit: statsOnFloor ? 'm' : 'px',
    };
  }
}

/**
 * Multi-person tracker for one environment: gives each detected person a stable track id across
 * pose frames, a velocity, and keeps a record per track (spec Track).
 *
 * Each frame, every live track is predicted to the frame's time (`frame.time`, never the wall
 * clock) by constant-velocity Kalman filters: one on the box centre in view pixels, one on the
 * floor position in metres once the track has had one. Detections are assigned to tracks by the
 * Hungarian method on a cost that is the weighted mean of
 * - the distance between predicted and detected box centres, over the person's size (the mean of
 *   the detected box diagonal and the largest diagonal the track had lately, so that a person
 *   walking out of the view, left with a sliver of a box, is not measured against the sliver),
 * - the mean distance between the track's last keypoints (moved with the predicted centre) and
 *   the detected ones, over the same diagonal (keypoints confident on both sides only),
 * - the floor distance in metres, when both have a floor position.
 * A weighted mean rather than a sum, so that one gate means the same whether or not floor
 * positions and keypoints are present. Pairs costing more than `gate` are never matched in the
 * first round; a second round pairs the confirmed tracks and detections it left over up to
 * `reclaimGate` (a model whose floor positions jump keeps its identities and its count).
 *
 * Lifecycle (SORT, with DeepSORT's tentative-track rule): an unmatched detection starts a
 * tentative track; it is confirmed, given the next id (1, 2, ... per tracker, never reused) and
 * reported once it has been matched in `minHits` consecutive frames; a tentative track that
 * misses a frame is dropped without a trace. During the first `minHits` frames of the stream
 * tracks are confirmed at birth, so that people present from the start are reported at once (and
 * stay reported: unlike SORT, a track born in frame minHits does not vanish in frame minHits+1).
 * A confirmed track left unmatched is kept and predicted for `maxAge` frames (status `lost`),
 * so its id survives a brief dropout, then ended.
 *
 * Velocity and statistics (physical figures, issue 18): a track with floor positions has a second
 * floor filter, the motion filter, whose measurement noise is the model's floor error
 * (`motionNoise`, {@link MOTION_NOISE}) rather than the association filter's. Its velocity is
 * believed only while the model gives walking a probability of at least `motionWalkProbability`,
 * or for detections without activity probabilities while its position has moved
 * `motionDisplacement` over the last `motionSpan` seconds ({@link MOTION_WALK_PROBABILITY});
 * otherwise the person is still and the reported velocity is 0.
 * The statistics integrate that speed: time moving where it reaches `movingSpeed`, distance as
 * speed times time, so a still person's jittering detections add neither distance nor time moving.
 * Without floor positions the view filter's velocity (px/s) is used as is.
 *
 * Output persons are new objects with `trackId`, `trackAge` (frames since first seen) and
 * `velocity` (floor m/s as above when the detection has a floor position, else view px/s);
 * persons of unconfirmed tracks, and persons without a finite box, are left out. Input frames are
 * never modified; keypoint arrays are shared unless `smoothKeypoints` is on.
 *
 * @example
 * const tracker = new MultiPersonTracker({ minHits: 3, maxAge: 30 });
 * const tracked = tracker.update(poseFrame); // persons now carry trackId, trackAge, velocity
 * tracker.tracks(); // records of the confirmed live tracks
 */
export class MultiPersonTracker {
  private opts: TrackerOptions;
  private pending: TrackerOptions | null = null;
  private readonly hungarian = new Hungarian();
  private live: Track[] = [];
  /** Confirmed live tracks by id. */
  private readonly byId = new Map<number, Track>();
  private readonly ended = new Map<number, TrackRecord>();
  private nextId = 1;
  private frameCount = 0;
  private lastTime = NaN;
  // Per-frame scratch, grown as needed.
  private cost = new Float64Array(64);
  /** Detections already paired in the first round (`reclaim`). */
  private taken = new Uint8Array(64);
  private detCx = new Float64Array(8);
  private detCy = new Float64Array(8);
  private detDiag = new Float64Array(8);
  private detFx = new Float64Array(8);
  private detFy = new Float64Array(8);
  private detHasFloor = new Uint8Array(8);
  private detHasKp = new Uint8Array(8);
  private detPerson: Array<PersonPose | undefined> = [];
  private detTrack: Array<Track | null> = [];

  /**
   * @param options `minHits` and `maxAge` ({@link TrackerLifecycle}) and any subset of the other
   *   {@link TrackerOptions} (the rest from {@link TRACKER_DEFAULTS})
   * @param firstId the id of the first track (default 1); a service passes one past the ids it
   *   stored, so track ids never repeat across restarts
   * @throws RangeError when an option is out of range
   */
  constructor(options: TrackerOptionsInput & TrackerLifecycle, firstId = 1) {
    this.opts = mergeOptions({ minHits: options.minHits, maxAge: options.maxAge, ...TRACKER_DEFAULTS }, options);
    if (!Number.isSafeInteger(firstId) || firstId < 1) throw new RangeError(`tracker: firstId must be a positive integer, got ${firstId}`);
    this.nextId = firstId;
  }

  /** The options in force (the latest `setOptions` applies from the next frame). */
  get options(): Readonly<TrackerOptions> {
    return this.opts;
  }

  /**
   * Changes options; they take effect at the next frame. Validated at once.
   * @param options any subset of {@link TrackerOptions}
   * @throws RangeError when an option is out of range (nothing is changed then)
   */
  setOptions(options: TrackerOptionsInput): void {
    this.pending = mergeOptions(this.pending ?? this.opts, options);
  }

  /**
   * Records of the confirmed tracks not yet ended (status `active` or `lost`), in id order.
   * @returns live record objects (see {@link TrackRecord})
   */
  tracks(): TrackRecord[] {
    const out: TrackRecord[] = [];
    for (const t of this.byId.values()) out.push(t.record);
    return out.sort((a, b) => a.trackId - b.trackId);
  }

  /**
   * One track's record, live or among the last `endedLimit` ended ones.
   * @param id track id
   * @returns the record, or undefined when unknown or dropped
   */
  track(id: number): TrackRecord | undefined {
    return this.byId.get(id)?.record ?? this.ended.get(id);
  }

  /**
   * Records of ended tracks still kept, oldest ended first.
   * @returns the records
   */
  endedTracks(): TrackRecord[] {
    return [...this.ended.values()];
  }

  /**
   * Tracks one pose frame.
   * @param frame detections of one environment at one time; not modified
   * @returns a new frame whose persons carry track ids (see the class description)
   */
  update(frame: PoseFrame): PoseFrame {
    if (this.pending) this.applyOptions(this.pending);
    const o = this.opts;
    this.frameCount++;
    const frameTime = frame.time;
    const timeOk = typeof frameTime === 'number' && Number.isFinite(frameTime);
    let dt = 0;
    if (timeOk && Number.isFinite(this.lastTime)) dt = Math.max(0, (frameTime - this.lastTime) / 1000);
    if (timeOk) this.lastTime = frameTime;
    const now = timeOk ? frameTime : Number.isFinite(this.lastTime) ? this.lastTime : 0;

    const nDet = this.collect(Array.isArray(frame.persons) ? frame.persons : []);
    const live = this.live;
    for (const t of live) {
      // A track lost for longer than coastFrames holds its place (see TrackerOptions.coastFrames).
      const h = t.missed >= o.coastFrames ? 0 : dt;
      t.view.predict(h);
      t.floor?.predict(h);
      t.motion?.predict(dt);
    }
    const rows = live.length;
    if (this.cost.length < rows * nDet) this.cost = new Float64Array(Math.max(rows * nDet, this.cost.length * 2));
    for (let r = 0; r < rows; r++) this.costRow(live[r]!, nDet, r * nDet);
    const assign = this.hungarian.solve(this.cost, rows, nDet, o.gate);
    if (o.reclaimGate > o.gate) this.reclaim(assign, rows, nDet, o.reclaimGate);

    const detTrack = this.detTrack;
    for (let d = 0; d < nDet; d++) detTrack[d] = null;
    // Survivors are compacted to the front of `live` in place.
    let kept = 0;
    for (let r = 0; r < rows; r++) {
      const t = live[r]!;
      const d = assign[r]!;
      if (d >= 0) {
        detTrack[d] = t;
        this.match(t, d, now);
        if (!t.confirmed && t.hits >= o.minHits) this.confirm(t);
      } else {
        t.missed++;
        if (!t.confirmed) continue;
        if (t.missed > o.maxAge) {
          this.end(t);
          continue;
        }
        t.record.status = 'lost';
      }
      live[kept++] = t;
    }
    live.length = kept;

    const warmUp = this.frameCount <= o.minHits;
    for (let d = 0; d < nDet; d++) {
      if (detTrack[d] !== null) continue;
      if (this.live.length >= o.maxTracks && !this.evictLost()) continue;
      const t = new Track(this.frameCount, now, this.detHasFloor[d] === 1, o.trajectoryLimit, o.viewNoise);
      t.view.reset(this.detCx[d]!, this.detCy[d]!);
      this.match(t, d, now);
      if (warmUp || t.hits >= o.minHits) this.confirm(t);
      this.live.push(t);
      detTrack[d] = t;
    }

    const persons: PersonPose[] = [];
    for (let d = 0; d < nDet; d++) {
      const t = detTrack[d];
      if (t && t.confirmed) persons.push((t.last = this.output(t, d)));
    }
    if (o.holdFrames > 0)
      for (const t of live)
        if (t.confirmed && t.missed > 0 && t.missed <= o.holdFrames && t.last)
          persons.push({ ...t.last, trackAge: this.frameCount - t.birthFrame, velocity: { x: 0, y: 0 }, held: true });
    // Let go of this frame's objects.
    for (let d = 0; d < nDet; d++) {
      detTrack[d] = null;
      this.detPerson[d] = undefined;
    }
    return { ...frame, persons };
  }

  /** Copies the usable detections into the scratch arrays; returns how many. */
  private collect(persons: readonly PersonPose[]): number {
    const limit = this.opts.maxDetections;
    this.ensureDetections(Math.min(persons.length, limit));
    let n = 0;
    for (let i = 0; i < persons.length && n < limit; i++) {
      const p = persons[i];
      if (p === null || typeof p !== 'object') continue;
      const box = p.bbox;
      if (!box || typeof box.length !== 'number' || box.length < 4) continue;
      const w = box[2]!;
      const h = box[3]!;
      const cx = box[0]! + w / 2;
      const cy = box[1]! + h / 2;
      if (!Number.isFinite(cx) || !Number.isFinite(cy) || !(w >= 0) || !(h >= 0)) continue;
      this.detPerson[n] = p;
      this.detCx[n] = cx;
      this.detCy[n] = cy;
      this.detDiag[n] = Math.sqrt(w * w + h * h);
      const f = p.floor;
      const hasFloor = f != null && Number.isFinite(f.x) && Number.isFinite(f.y);
      this.detHasFloor[n] = hasFloor ? 1 : 0;
      if (hasFloor) {
        this.detFx[n] = f.x;
        this.detFy[n] = f.y;
      }
      const kp = p.keypoints;
      this.detHasKp[n] = kp && typeof kp.length === 'number' && kp.length >= KP_LEN ? 1 : 0;
      n++;
    }
    return n;
  }

  private ensureDetections(n: number): void {
    if (this.detCx.length >= n) return;
    const size = Math.max(n, this.detCx.length * 2);
    this.detCx = new Float64Array(size);
    this.detCy = new Float64Array(size);
    this.detDiag = new Float64Array(size);
    this.detFx = new Float64Array(size);
    this.detFy = new Float64Array(size);
    this.detHasFloor = new Uint8Array(size);
    this.detHasKp = new Uint8Array(size);
  }

  /** Costs of one (predicted) track against every detection, into `cost[base ..]`. */
  /**
   * The second round (`reclaimGate`): confirmed tracks and detections left unpaired by `assign`
   * are paired by the Hungarian method on their first-round costs up to `gate`; `assign` is
   * updated in place.
   */
  private reclaim(assign: Int32Array, rows: number, nDet: number, gate: number): void {
    // Most frames pair every confirmed track in the first round: nothing to build then.
    let unpaired = 0;
    for (let r = 0; r < rows; r++) if (assign[r]! < 0 && this.live[r]!.confirmed) unpaired++;
    if (unpaired === 0) return;
    const tr: number[] = [];
    for (let r = 0; r < rows; r++) if (assign[r]! < 0 && this.live[r]!.confirmed) tr.push(r);
    const taken = this.taken.length >= nDet ? this.taken : (this.taken = new Uint8Array(Math.max(nDet, this.taken.length * 2)));
    taken.fill(0, 0, nDet);
    for (let r = 0; r < rows; r++) if (assign[r]! >= 0) taken[assign[r]!] = 1;
    const dc: number[] = [];
    for (let d = 0; d < nDet; d++) if (!taken[d]) dc.push(d);
    if (dc.length === 0) return;
    // `assign` is the solver's own array, which the second solve overwrites: keep the first round.
    const first = Int32Array.from(assign.subarray(0, rows));
    const sub = new Float64Array(tr.length * dc.length);
    for (let i = 0; i < tr.length; i++) for (let j = 0; j < dc.length; j++) sub[i * dc.length + j] = this.cost[tr[i]! * nDet + dc[j]!]!;
    const second = this.hungarian.solve(sub, tr.length, dc.length, gate);
    for (let i = 0; i < tr.length; i++) if (second[i]! >= 0) first[tr[i]!] = dc[second[i]!]!;
    assign.set(first);
  }

  private costRow(t: Track, nDet: number, base: number): void {
    const { center: wc, keypoints: wk, floor: wf } = this.opts.weights;
    const minConf = this.opts.keypointMinConfidence;
    const px = t.view.state[0]!;
    const py = t.view.state[1]!;
    // Keypoints move with the box centre between the last match and now.
    const ox = px - t.lastCx;
    const oy = py - t.lastCy;
    const tk = t.keypoints;
    const useKp = wk > 0 && t.hasKeypoints;
    const floor = wf > 0 ? t.floor : null;
    for (let d = 0; d < nDet; d++) {
      const norm = Math.max(1, 0.5 * (t.sizeDiag + this.detDiag[d]!));
      const dc = Math.hypot(px - this.detCx[d]!, py - this.detCy[d]!) / norm;
      let sum = wc * dc;
      let wsum = wc;
      if (useKp && this.detHasKp[d] === 1) {
        const dk = this.detPerson[d]!.keypoints;
        let acc = 0;
        let count = 0;
        for (let k = 0; k < KP_LEN; k += 3) {
          if (!(tk[k + 2]! >= minConf) || !(dk[k + 2]! >= minConf)) continue;
          const ex = tk[k]! + ox - dk[k]!;
          const ey = tk[k + 1]! + oy - dk[k + 1]!;
          const dist = Math.sqrt(ex * ex + ey * ey);
          if (dist === dist) {
            acc += dist;
            count++;
          }
        }
        if (count > 0) {
          sum += (wk * acc) / (count * norm);
          wsum += wk;
        }
      }
      if (floor !== null && this.detHasFloor[d] === 1) {
        sum += wf * Math.hypot(floor.state[0]! - this.detFx[d]!, floor.state[1]! - this.detFy[d]!);
        wsum += wf;
      }
      this.cost[base + d] = wsum > 0 ? sum / wsum : dc;
    }
  }

  /** Folds detection `d` into track `t` (filters, keypoints, record, statistics). */
  private match(t: Track, d: number, now: number): void {
    const o = this.opts;
    const p = this.detPerson[d]!;
    const cx = this.detCx[d]!;
    const cy = this.detCy[d]!;
    if (t.hits > 0) t.view.update(cx, cy);
    if (this.detHasFloor[d] === 1) {
      const fx = this.detFx[d]!;
      const fy = this.detFy[d]!;
      if (t.floor === null) {
        t.floor = new ConstantVelocityKalman(o.floorNoise);
        t.floor.reset(fx, fy);
        t.motion = new ConstantVelocityKalman(o.motionNoise);
        t.motion.reset(fx, fy);
        t.support = new MotionSupport();
      } else {
        t.floor.update(fx, fy);
        t.motion!.update(fx, fy);
      }
      const m = t.motion!;
      // The ring is kept up even while the model's activity decides, so the rule can take over.
      const displaced = t.support!.push(now, m.state[0]!, m.state[1]!, o.motionSpan * 1000, o.motionDisplacement);
      const walk = o.motionWalkProbability > 0 ? walkProbability(p) : NaN;
      t.moving = walk === walk ? walk >= o.motionWalkProbability : displaced;
    }
    t.hits++;
    t.missed = 0;
    t.lastCx = cx;
    t.lastCy = cy;
    const diag = this.detDiag[d]!;
    // record.lastSeen is still the previous match's time here (it is moved to now below).
    const kept = t.hits > 1 ? t.sizeDiag * Math.exp(-Math.max(0, now - t.record.lastSeen) / SIZE_MEMORY_MS) : 0;
    t.sizeDiag = diag > kept ? diag : kept;
    if (this.detHasKp[d] === 1) {
      const kp = p.keypoints;
      const tk = t.keypoints;
      for (let k = 0; k < KP_LEN; k++) tk[k] = kp[k]!;
      t.hasKeypoints = true;
      if (o.smoothKeypoints > 0) this.smooth(t, kp, o.smoothKeypoints);
      else t.smoothedValid = false;
    } else {
      t.hasKeypoints = false;
      t.smoothedValid = false;
    }

    const conf = Number.isFinite(p.confidence) ? p.confidence : 0;
    const rec = t.record;
    rec.lastSeen = now;
    rec.totalFrames++;
    t.confidenceSum += conf;
    rec.averageConfidence = t.confidenceSum / rec.totalFrames;
    rec.status = 'active';
    rec.trajectory.push(now, cx, cy, conf);

    // Statistics follow the smoothed state, never the raw detections: on the floor the motion
    // filter, whose velocity counts only while it is believed (MOTION_WALK_PROBABILITY: a still
    // person's wandering floor error adds no distance and no time moving); in the view the view
    // filter.
    const onFloor = rec.statisticsUnit === 'm' && t.motion !== null;
    const kf = onFloor ? t.motion! : t.view;
    if (t.hits > 1) {
      const s = t.stats;
      const span = Math.max(0, (now - t.prevTime) / 1000);
      const speed = onFloor && !t.moving ? 0 : Math.hypot(kf.state[2]!, kf.state[3]!);
      if (speed >= (onFloor ? o.movingSpeed.floor : o.movingSpeed.view)) {
        // The smoothed speed over the step, not the smoothed position's step: the position still
        // shakes sideways a little, and those shakes would add up (with the displacement rule,
        // 2.07 against 3.04 m per true metre walked on the runs of MOTION_NOISE).
        s.movementDistance += speed * span;
        s.timeMoving += span;
      } else {
        s.timeStationary += span;
      }
      const life = (rec.lastSeen - rec.firstSeen) / 1000;
      s.averageSpeed = life > 0 ? s.movementDistance / life : 0;
    }
    t.prevTime = now;
  }

  private smooth(t: Track, kp: Float32Array, alpha: number): void {
    let s = t.smoothed;
    if (s === null) s = t.smoothed = new Float32Array(KP_LEN);
    if (!t.smoothedValid) {
      for (let k = 0; k < KP_LEN; k++) s[k] = kp[k]!;
      t.smoothedValid = true;
      return;
    }
    const minConf = this.opts.keypointMinConfidence;
    for (let k = 0; k < KP_LEN; k += 3) {
      // A keypoint that was or is unreliable restarts from the detection instead of dragging a
      // stale position along.
      if (s[k + 2]! >= minConf && kp[k + 2]! >= minConf) {
        s[k] = alpha * s[k]! + (1 - alpha) * kp[k]!;
        s[k + 1] = alpha * s[k + 1]! + (1 - alpha) * kp[k + 1]!;
      } else {
        s[k] = kp[k]!;
        s[k + 1] = kp[k + 1]!;
      }
      s[k + 2] = kp[k + 2]!;
    }
  }

  private confirm(t: Track): void {
    t.confirmed = true;
    t.id = this.nextId++;
    t.record.trackId = t.id;
    t.record.personId = t.id;
    this.byId.set(t.id, t);
  }

  private end(t: Track): void {
    t.record.status = 'ended';
    this.byId.delete(t.id);
    this.ended.set(t.id, t.record);
    this.trimEnded();
  }

  private trimEnded(): void {
    const limit = this.opts.endedLimit;
    while (this.ended.size > limit) this.ended.delete(this.ended.keys().next().value!);
  }

  /** Makes room for a new track by ending the lost track missing longest; false when none is lost. */
  private evictLost(): boolean {
    let worst = -1;
    for (let i = 0; i < this.live.length; i++) {
      const t = this.live[i]!;
      if (t.missed > 0 && (worst < 0 || t.missed > this.live[worst]!.missed)) worst = i;
    }
    if (worst < 0) return false;
    const t = this.live[worst]!;
    if (t.confirmed) this.end(t);
    this.live.splice(worst, 1);
    return true;
  }

  private output(t: Track, d: number): PersonPose {
    const p = this.detPerson[d]!;
    const useFloor = this.detHasFloor[d] === 1 && t.motion !== null;
    // On the floor: the motion filter's velocity while it is believed, else still (0).
    const kf = useFloor ? t.motion! : t.view;
    const still = useFloor && !t.moving;
    const out: PersonPose = {
      ...p,
      trackId: t.id,
      trackAge: this.frameCount - t.birthFrame,
      velocity: still ? { x: 0, y: 0 } : { x: kf.state[2]!, y: kf.state[3]! },
    };
    if (t.smoothedValid && t.smoothed !== null && this.opts.smoothKeypoints > 0) out.keypoints = t.smoothed.slice();
    return out;
  }

  private applyOptions(next: TrackerOptions): void {
    const prev = this.opts;
    this.opts = next;
    this.pending = null;
    if (next.viewNoise !== prev.viewNoise || next.floorNoise !== prev.floorNoise || next.motionNoise !== prev.motionNoise) {
      for (const t of this.live) {
        t.view.setNoise(next.viewNoise);
        t.floor?.setNoise(next.floorNoise);
        t.motion?.setNoise(next.motionNoise);
      }
    }
    if (next.trajectoryLimit !== prev.trajectoryLimit) for (const t of this.live) t.record.trajectory.setLimit(next.trajectoryLimit);
    if (next.endedLimit !== prev.endedLimit) this.trimEnded();
  }
}

const WALKING = ACTIVITIES.indexOf('walking');

/** The model's probability that the person walks (`modelActivity`), or NaN when it gives none. */
function walkProbability(p: PersonPose): number {
  const probs = p.modelActivity?.probabilities;
  const w = probs && probs.length > WALKING ? probs[WALKING]! : NaN;
  return w >= 0 && w <= 1 ? w : NaN;
}

/**
 * Merges a partial options object over complete ones and validates the result.
 * @param base complete options
 * @param input overrides
 * @returns new complete options (nested groups are new objects only when overridden)
 * @throws RangeError naming the first option out of range
 */
export function mergeOptions(base: Readonly<TrackerOptions>, input: TrackerOptionsInput): TrackerOptions {
  const o: TrackerOptions = {
    minHits: input.minHits ?? base.minHits,
    maxAge: input.maxAge ?? base.maxAge,
    gate: input.gate ?? base.gate,
    reclaimGate: input.reclaimGate ?? base.reclaimGate,
    coastFrames: input.coastFrames ?? base.coastFrames,
    holdFrames: input.holdFrames ?? base.holdFrames,
    smoothKeypoints: input.smoothKeypoints ?? base.smoothKeypoints,
    weights: input.weights ? over(base.weights, input.weights) : base.weights,
    keypointMinConfidence: input.keypointMinConfidence ?? base.keypointMinConfidence,
    floorNoise: input.floorNoise ? over(base.floorNoise, input.floorNoise) : base.floorNoise,
    motionNoise: input.motionNoise ? over(base.motionNoise, input.motionNoise) : base.motionNoise,
    motionSpan: input.motionSpan ?? base.motionSpan,
    motionDisplacement: input.motionDisplacement ?? base.motionDisplacement,
    motionWalkProbability: input.motionWalkProbability ?? base.motionWalkProbability,
    viewNoise: input.viewNoise ? over(base.viewNoise, input.viewNoise) : base.viewNoise,
    movingSpeed: input.movingSpeed ? over(base.movingSpeed, input.movingSpeed) : base.movingSpeed,
    trajectoryLimit: input.trajectoryLimit ?? base.trajectoryLimit,
    endedLimit: input.endedLimit ?? base.endedLimit,
    maxDetections: input.maxDetections ?? base.maxDetections,
    maxTracks: input.maxTracks ?? base.maxTracks,
  };
  int('minHits', o.minHits, 1, 1000);
  int('maxAge', o.maxAge, 0, 100_000);
  num('gate', o.gate, 0, 1000, true);
  num('reclaimGate', o.reclaimGate, 0, 1000);
  int('coastFrames', o.coastFrames, 0, 100_000);
  int('holdFrames', o.holdFrames, 0, 100_000);
  num('smoothKeypoints', o.smoothKeypoints, 0, 0.99);
  num('weights.center', o.weights.center, 0, 1000);
  num('weights.keypoints', o.weights.keypoints, 0, 1000);
  num('weights.floor', o.weights.floor, 0, 1000);
  num('keypointMinConfidence', o.keypointMinConfidence, 0, 1);
  for (const [group, noise] of [
    ['floorNoise', o.floorNoise],
    ['motionNoise', o.motionNoise],
    ['viewNoise', o.viewNoise],
  ] as const) {
    num(`${group}.accelerationDensity`, noise.accelerationDensity, 0, 1e12);
    num(`${group}.measurementStd`, noise.measurementStd, 0, 1e6, true);
    num(`${group}.initialVelocityStd`, noise.initialVelocityStd, 0, 1e6, true);
  }
  num('motionSpan', o.motionSpan, 0, 3600, true);
  num('motionDisplacement', o.motionDisplacement, 0, 1000);
  num('motionWalkProbability', o.motionWalkProbability, 0, 1);
  num('movingSpeed.floor', o.movingSpeed.floor, 0, 1000);
  num('movingSpeed.view', o.movingSpeed.view, 0, 1e6);
  int('trajectoryLimit', o.trajectoryLimit, 1, 100_000);
  int('endedLimit', o.endedLimit, 0, 1_000_000);
  int('maxDetections', o.maxDetections, 1, 10_000);
  int('maxTracks', o.maxTracks, 1, 10_000);
  return o;
}

/** `{...base, ...input}` except that undefined fields of `input` keep the base value. */
function over<T extends object>(base: T, input: Partial<T>): T {
  const out = { ...base };
  for (const k of Object.keys(input) as Array<keyof T>) if (input[k] !== undefined) out[k] = input[k] as T[keyof T];
  return out;
}

function int(name: string, v: number, min: number, max: number): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new RangeError(`track: ${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
}

function num(name: string, v: number, min: number, max: number, exclusiveMin = false): void {
  if (typeof v !== 'number' || !(exclusiveMin ? v > min : v >= min) || !(v <= max))
    throw new RangeError(`track: ${name} must be a number in ${exclusiveMin ? '(' : '['}${min}, ${max}], got ${String(v)}`);
}
