/**
 * A simulated room: its geometry and surfaces, the transmit and receive antenna arrays, the camera
 * that defines the ground-truth view, and the people in it with their behaviour.
 *
 * Behaviour is either generated from the seed (walk between random waypoints at 0.3-1.5 m/s, stand,
 * sit, lie, fall and maybe get up again) or an explicit script of timed actions per person, for
 * tests and scoring. Both run through the same action executor, so a script and a generated
 * decision with the same action produce the same motion.
 *
 * Activity labels (ground truth) follow the motion exactly:
 * - `walking` from the tick a walk starts until the person stops at the waypoint (or gives up);
 * - a transition carries its target's label from its first tick: sitting down is `sitting`,
 *   standing up and getting up are `standing`, lying down is `lying`;
 * - `falling` from the fall's first tick until the body reaches the floor (fall_end), then `lying`
 *   until the person starts to get up; `fallOnset` is set from fall_start until then;
 * - a `bend` (a scripted hard negative) is `standing` throughout.
 *
 * People who come and go (PersonSpec.enterAt, leaveAt) are in `persons` all along with `present`
 * false while out of the room: they then have no scatterers, shadow nothing, are ignored by the
 * others and are left out of the truth; `enter` and `leave` events mark the ticks they appear and
 * disappear at the room's entry.
 */

import { linePositions } from '../csi/radios.js';
import { Camera, DEFAULT_VIEW, viewSpec, type CameraSpec, type Vec3 } from '../pose/camera.js';
import type { RoomSurfaces } from './channel.js';
import { deriveSeed, Rng } from './rng.js';
import { Body, fallTravel, KP, lyingReach, MAX_HEIGHT, MIN_HEIGHT, SCATTERERS_PER_BODY, wrapAngle, type FallDirection } from './skeleton.js';

/** Activity labels (DECISIONS "Data"). */
export type Activity = 'standing' | 'sitting' | 'lying' | 'walking' | 'falling';
export const ACTIVITIES: readonly Activity[] = ['standing', 'sitting', 'lying', 'walking', 'falling'];

/** Most people a scenario holds. */
export const MAX_PEOPLE = 4;
/** People are kept at least this far apart (pelvis to the other's head-feet footprint), metres. */
export const MIN_SEPARATION = 0.4;

export interface RoomSpec {
  /** Extent along x, metres. */
  width: number;
  /** Extent along y, metres. */
  depth: number;
  /** Ceiling height, metres. */
  height: number;
  /** Amplitude reflection coefficient of the four walls (0 = no wall paths). */
  wallReflection: number;
  floorReflection: number;
  ceilingReflection: number;
}

/** An antenna array: antennas spaced half a wavelength apart (or `spacing`) along `axis`, centred on `position`. */
export interface ArraySpec {
  position: Vec3;
  /** Direction of the array line; default +x. Normalised internally. */
  axis?: Vec3;
  /** Distance between neighbouring antennas, metres; default half the centre wavelength. */
  spacing?: number;
}

/** One timed action of an explicit script; `at` is seconds from the start of the simulation. */
export type ScriptStep =
  | { at: number; action: 'walk'; to: { x: number; y: number }; speed?: number }
  | { at: number; action: 'stand' }
  | { at: number; action: 'sit'; seat?: number }
  | { at: number; action: 'lie'; surface?: number }
  | { at: number; action: 'fall'; direction?: FallDirection; duration?: number }
  /**
   * A hard negative for fall detection: standing, the trunk pitches forward `angle` degrees (30-90,
   * default BEND_ANGLE_DEG) as to pick something up, holds, and straightens, over `duration`
   * seconds (1.5-10, default BEND_DURATION_S: 0.9 s down, 1 s held, 0.9 s up). The activity stays
   * `standing` throughout and nothing in the truth is a fall. Walking, the person stops first;
   * seated or lying, stands up first.
   */
  | { at: number; action: 'bend'; duration?: number; angle?: number };

/** One person placed explicitly. Without `script` the person behaves as generated from the seed. */
export interface PersonSpec {
  /** Standing height, metres (1.5-1.95); default drawn from the seed. */
  height?: number;
  x: number;
  y: number;
  /** Facing direction, radians from +x; default pi/2 (facing +y). */
  heading?: number;
  /** Initial activity; default standing. */
  activity?: 'standing' | 'sitting' | 'lying';
  /** Seat height when starting seated; default 0.45. */
  seat?: number;
  /** Surface height when starting lying; default 0 (floor). */
  surface?: number;
  /**
   * Seconds: the person is not in the room before this (no body, not in the truth). At the first
   * tick at or after it they appear standing at the room's entry (`ScenarioOptions.entry`) and walk
   * to x, y at ENTRY_SPEED (their `activity` and start pose are not used); script steps due by then
   * are skipped, and one due during the walk in takes over from it as any step does. Default: in
   * the room from the start.
   */
  enterAt?: number;
  /**
   * Seconds: at the first tick at or after this the person walks back to the entry (standing up
   * first if seated or lying, finishing a fall first) at ENTRY_SPEED and disappears there (no body,
   * not in the truth, for good); script steps after it are ignored. Must be after enterAt. Default:
   * never leaves.
   */
  leaveAt?: number;
  /**
   * Timed actions. Each starts at the first tick at or after `at`, replacing any action still
   * waiting; an action the body cannot start yet (mid-transition, or a sit while walking) waits,
   * and one that needs standing first stands up (or stops) first. After the last action the
   * person holds the last state. An empty script holds the initial state for ever.
   *
   * Explicit people are taken as given: walkers still steer around others, keep the wall margin
   * (targets are clamped into it) and give up a waypoint after 1.5 s without progress, but the
   * start positions, falls and lying down are not checked for room.
   */
  script?: ScriptStep[];
}

export interface ScenarioOptions {
  room?: Partial<RoomSpec>;
  /** Transmit array; default centred on the back wall (y = depth - 0.2) at 1.2 m. */
  tx?: ArraySpec;
  /** Receive array; default centred on the front wall (y = 0.2) at 1.2 m. */
  rx?: ArraySpec;
  /**
   * Camera of the ground truth; default the default reference view (DEFAULT_VIEW, environment.view's
   * defaults) centred across the room: on the front wall at 1.6 m looking into the room, pitched 10
   * degrees down, 90 degree field of view, 640x480.
   */
  camera?: CameraSpec;
  /** Activities generated behaviour may choose; default all. */
  activities?: readonly Activity[];
  /**
   * Probability that a behaviour decision taken while standing is a fall (now, or during the walk
   * that follows); default 0.05. A standing person decides every few seconds, so 0.05 gives about
   * 0.3 falls per person-minute (a fall needs room: near walls and people it is postponed).
   */
  fallProbability?: number;
  /** Probability that a person who fell gets up again (after 3-10 s); default 0.7. */
  getUpProbability?: number;
  /**
   * A scripted fall of generated behaviour: the first generated person falls at the first tick at
   * or after this many seconds where they stand or walk and there is room to fall (seated or lying,
   * they stand up first; without room, a little later), then behaves as generated again. Default
   * none.
   */
  fallAt?: number;
  /** Distance kept from the walls, metres; default 0.4. */
  margin?: number;
  /**
   * Where people who come and go (PersonSpec.enterAt, leaveAt) enter and leave: a floor point by a
   * wall, inside the margin people keep from the walls. Default: on the back wall 1 m from the right
   * corner, at the margin: (width - 1, depth - margin).
   */
  entry?: { x: number; y: number };
}

export interface ScenarioEvent {
  /** `enter` and `leave`: a person who comes and goes appears in the room or disappears from it. */
  type: 'fall_start' | 'fall_end' | 'activity_change' | 'enter' | 'leave';
  personId: number;
  /** Simulation time, seconds. */
  time: number;
  activity?: Activity;
}

export const DEFAULT_ROOM: Readonly<RoomSpec> = Object.freeze({
  width: 6,
  depth: 5,
  height: 2.8,
  wallReflection: 0.4,
  floorReflection: 0.5,
  ceilingReflection: 0.3,
});

type Mode = 'standing' | 'walking' | 'sitting' | 'lying' | 'transition' | 'falling';

const WALK_ACCEL = 1.2; // m/s^2, both speeding up and slowing down
const TURN_RATE = 4; // rad/s
const AVOID_RADIUS = 1.2; // m: start steering around someone
const GIVE_UP_S = 1.5; // blocked this long: stop walking
const WALL_FADE = 0.4; // m beyond the margin over which walking into a wall is faded out
const ARRIVE_M = 0.05; // m from the waypoint: brake and stop
const MAX_SUBSTEP = 0.02; // s: longest behaviour step
const DEFAULT_SEAT = 0.45;
const BED_HEIGHT = 0.5;
/** Walking speed into and out of the room (PersonSpec.enterAt, leaveAt), m/s. */
export const ENTRY_SPEED = 1.0;
/** Default trunk pitch of a `bend` step, degrees. */
export const BEND_ANGLE_DEG = 70;
/** Default duration of a `bend` step, seconds. */
export const BEND_DURATION_S = 2.8;
/** A leaving person disappears within this distance of the entry, metres. */
const EXIT_M = 0.1;

/** One person: body, behaviour state and ground-truth labels. */
export class Person {
  readonly id: number;
  readonly body: Body;
  /** Current activity label. */
  activity: Activity;
  /** Simulation time (s) of the current/last fall start while falling or lying after it; else null. */
  fallOnset: number | null = null;
  /** Floor velocity of the pelvis over the last tick, m/s. */
  vx = 0;
  vy = 0;

  /** @internal */ mode: Mode;
  /** @internal label the running transition ends in */ transitionTo: Mode = 'standing';
  /** @internal */ readonly rng: Rng;
  /** @internal */ readonly script: ScriptStep[] | null;
  /** @internal */ scriptIdx = 0;
  /** @internal */ pending: ScriptStep | null = null;
  /** @internal */ holdUntil = 0;
  /** @internal */ walkTx = 0;
  /** @internal */ walkTy = 0;
  /** @internal */ walkCruise = 1;
  /** @internal */ walkV = 0;
  /** @internal */ blocked = 0;
  /** @internal */ stopping = false;
  /** @internal generated: time at which a fall during the current walk happens */ fallAt = Infinity;
  /** @internal generated: gets up after the current fall */ getsUp = true;
  /** @internal generated: time of a fall asked for by `ScenarioOptions.fallAt` (Infinity once started) */ forcedFallAt = Infinity;
  /** @internal floor footprint: head (x, y), feet (x, y) */ readonly footprint = new Float64Array(4);
  /**
   * In the room: false before PersonSpec.enterAt and after the person left (no scatterers, not in
   * the truth, ignored by the others).
   */
  present = true;
  /** @internal seconds; -Infinity: in the room from the start */ enterAt = -Infinity;
  /** @internal seconds; Infinity: never leaves */ leaveAt = Infinity;
  /** @internal walking out */ leaving = false;
  /** @internal has left for good */ gone = false;
  /** @internal where the walk in ends */ homeX = 0;
  /** @internal */ homeY = 0;

  constructor(id: number, body: Body, mode: Mode, rng: Rng, script: ScriptStep[] | null) {
    this.id = id;
    this.body = body;
    this.mode = mode;
    this.activity = mode === 'walking' || mode === 'transition' || mode === 'falling' ? 'standing' : mode;
    this.rng = rng;
    this.script = script;
    this.updateFootprint();
  }

  /** @internal */
  updateFootprint(): void {
    const k = this.body.keypoints;
    const f = this.footprint;
    f[0] = 0.5 * (k[3 * KP.L_EAR]! + k[3 * KP.R_EAR]!);
    f[1] = 0.5 * (k[3 * KP.L_EAR + 1]! + k[3 * KP.R_EAR + 1]!);
    f[2] = 0.5 * (k[3 * KP.L_ANKLE]! + k[3 * KP.R_ANKLE]!);
    f[3] = 0.5 * (k[3 * KP.L_ANKLE + 1]! + k[3 * KP.R_ANKLE + 1]!);
  }

  /**
   * Floor distance from a point to this person's footprint (head-feet segment, pelvis included).
   * @param x metres
   * @param y metres
   * @returns metres
   */
  distanceTo(x: number, y: number): number {
    const f = this.footprint;
    return Math.min(segmentDistance(x, y, f[0]!, f[1]!, f[2]!, f[3]!), Math.hypot(x - this.body.floorX, y - this.body.floorY));
  }
}

function segmentDistance(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax;
  const dy = by - ay;
  const l2 = dx * dx + dy * dy;
  const t = l2 > 0 ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / l2)) : 0;
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

/** Resolved scenario settings. */
interface Settings {
  room: RoomSpec;
  activities: Set<Activity>;
  fallProbability: number;
  getUpProbability: number;
  margin: number;
  entry: { x: number; y: number };
}

/**
 * Antenna positions of an array: n antennas at `spacing` along the normalised axis, centred on the
 * array position.
 * @param spec array centre and axis
 * @param n number of antennas
 * @param spacing metres between neighbours (lambda / 2 in the simulator)
 * @returns n * 3 coordinates
 */
export function arrayPositions(spec: ArraySpec, n: number, spacing: number): Float64Array {
  return linePositions(spec.position, spec.axis ?? { x: 1, y: 0, z: 0 }, n, spacing);
}

/**
 * The room, antennas, camera and people, advanced one tick at a time.
 *
 * @example
 * const sc = new Scenario({}, 2, 42, 0.0579, 3, 3);
 * sc.step(0.01);
 * sc.persons[0].activity; // 'walking', ...
 */
export class Scenario {
  readonly room: Readonly<RoomSpec>;
  /** The ground truth's camera; may be replaced between ticks (the service's live reference view). */
  camera: Camera;
  /** Transmit antenna positions, nTx * 3. */
  readonly txPositions: Float64Array;
  /** Receive antenna positions, nRx * 3. */
  readonly rxPositions: Float64Array;
  readonly persons: Person[] = [];
  /** Simulation time, seconds. */
  time = 0;
  private readonly settings: Settings;
  private events: ScenarioEvent[] = [];
  /** Floor positions at the start of a tick, for the velocities. */
  private readonly startPos = new Float64Array(2 * MAX_PEOPLE);
  /** Who was in the room at the start of a tick. */
  private readonly wasPresent = new Uint8Array(MAX_PEOPLE);

  /**
   * @param opts room, antennas, camera and behaviour options
   * @param people number of generated people (0-MAX_PEOPLE) or explicit specs
   * @param seed behaviour seed
   * @param lambda centre wavelength (antenna spacing is lambda / 2), metres
   * @param nTx transmit antennas
   * @param nRx receive antennas
   * @throws RangeError on invalid options
   */
  constructor(opts: ScenarioOptions, people: number | readonly PersonSpec[], seed: number, lambda: number, nTx: number, nRx: number) {
    const room: RoomSpec = { ...DEFAULT_ROOM, ...stripUndefined(opts.room ?? {}) };
    if (!(room.width >= 2 && room.depth >= 2 && room.height >= 2 && room.width <= 50 && room.depth <= 50 && room.height <= 10)) {
      throw new RangeError('scenario: room width and depth must be 2..50 m, height 2..10 m');
    }
    for (const k of ['wallReflection', 'floorReflection', 'ceilingReflection'] as const) {
      if (!(Math.abs(room[k]) <= 1)) throw new RangeError(`scenario: ${k} must be in -1..1`);
    }
    const margin = opts.margin ?? 0.4;
    if (!(margin >= 0.2 && 2 * margin < Math.min(room.width, room.depth) - 0.5))
      throw new RangeError('scenario: margin must be >= 0.2 m and leave room to move');
    const activities = new Set(opts.activities ?? ACTIVITIES);
    for (const a of activities) if (!ACTIVITIES.includes(a)) throw new RangeError(`scenario: unknown activity ${String(a)}`);
    if (activities.size === 0) throw new RangeError('scenario: activities must not be empty');
    const fallProbability = opts.fallProbability ?? 0.05;
    const getUpProbability = opts.getUpProbability ?? 0.7;
    if (!(fallProbability >= 0 && fallProbability <= 1)) throw new RangeError('scenario: fallProbability must be in 0..1');
    if (!(getUpProbability >= 0 && getUpProbability <= 1)) throw new RangeError('scenario: getUpProbability must be in 0..1');
    const entry = opts.entry ?? { x: room.width - 1, y: room.depth - margin };
    if (!(entry.x >= margin && entry.x <= room.width - margin && entry.y >= margin && entry.y <= room.depth - margin)) {
      throw new RangeError("scenario: entry must be inside the walls' margin");
    }
    this.room = room;
    this.settings = { room, activities, fallProbability, getUpProbability, margin, entry };

    const inside = (p: Vec3, what: string): void => {
      if (!(p.x >= 0 && p.x <= room.width && p.y >= 0 && p.y <= room.depth && p.z >= 0 && p.z <= room.height)) {
        throw new RangeError(`scenario: ${what} must be inside the room`);
      }
    };
    const tx = opts.tx ?? { position: { x: room.width / 2, y: room.depth - 0.2, z: 1.2 } };
    const rx = opts.rx ?? { position: { x: room.width / 2, y: 0.2, z: 1.2 } };
    for (const a of [tx, rx])
      if (a.spacing !== undefined && !(a.spacing > 0 && a.spacing <= 1)) throw new RangeError('scenario: array spacing must be in (0, 1] m');
    this.txPositions = arrayPositions(tx, nTx, tx.spacing ?? lambda / 2);
    this.rxPositions = arrayPositions(rx, nRx, rx.spacing ?? lambda / 2);
    for (let i = 0; i < nTx; i++) inside({ x: this.txPositions[3 * i]!, y: this.txPositions[3 * i + 1]!, z: this.txPositions[3 * i + 2]! }, 'every tx antenna');
    for (let i = 0; i < nRx; i++) inside({ x: this.rxPositions[3 * i]!, y: this.rxPositions[3 * i + 1]!, z: this.rxPositions[3 * i + 2]! }, 'every rx antenna');
    // The default reference view (environment.view's defaults), centred across this room.
    this.camera = new Camera(opts.camera ?? viewSpec({ ...DEFAULT_VIEW, x: room.width / 2 }));

    if (typeof people === 'number') {
      if (!(Number.isInteger(people) && people >= 0 && people <= MAX_PEOPLE)) throw new RangeError(`scenario: people must be an integer 0..${MAX_PEOPLE}`);
      const place = new Rng(deriveSeed(seed, 99));
      for (let i = 0; i < people; i++) this.persons.push(this.generatePerson(i, seed, place));
    } else {
      if (people.length > MAX_PEOPLE) throw new RangeError(`scenario: at most ${MAX_PEOPLE} people`);
      people.forEach((spec, i) => this.persons.push(this.explicitPerson(i, spec, seed)));
    }
    for (const p of this.persons) if (p.script === null) p.holdUntil = p.rng.uniform(0, 1.5);
    if (opts.fallAt !== undefined) {
      if (!(opts.fallAt >= 0 && Number.isFinite(opts.fallAt))) throw new RangeError('scenario: fallAt must be a number of seconds >= 0');
      const first = this.persons.find((p) => p.script === null);
      if (first) first.forcedFallAt = opts.fallAt;
    }
  }

  /** The room as the channel model sees it (null when no surface reflects). */
  surfaces(): RoomSurfaces | null {
    const r = this.room;
    if (r.wallReflection === 0 && r.floorReflection === 0 && r.ceilingReflection === 0) return null;
    return { width: r.width, depth: r.depth, height: r.height, wall: r.wallReflection, floor: r.floorReflection, ceiling: r.ceilingReflection };
  }

  /**
   * Starts the actions due at time 0 (call once, before the first step); later ticks use `step`.
   */
  begin(): void {
    for (const p of this.persons) {
      this.act(p, this.time);
      p.updateFootprint();
    }
  }

  /**
   * Advances every person by dt seconds: running motions first, then actions due at the new time
   * (in sub-steps of at most 20 ms; velocities are over the whole of dt).
   * @param dt tick length, seconds
   * @param time the new simulation time (default time + dt); pass it exactly (tick / rate) to keep
   *   event times free of accumulated rounding
   */
  step(dt: number, time = this.time + dt): void {
    const persons = this.persons;
    const start = this.startPos;
    const was = this.wasPresent;
    for (let i = 0; i < persons.length; i++) {
      start[2 * i] = persons[i]!.body.floorX;
      start[2 * i + 1] = persons[i]!.body.floorY;
      was[i] = persons[i]!.present ? 1 : 0;
    }
    // Behaviour runs in sub-steps of at most MAX_SUBSTEP so that slow packet rates do not let
    // walkers skip past each other or falls outrun their own ticks.
    const n = Math.max(1, Math.ceil(dt / MAX_SUBSTEP - 1e-9));
    const h = dt / n;
    const t0 = time - dt;
    for (let k = 1; k <= n; k++) {
      const t = k === n ? time : t0 + k * h;
      this.time = t;
      for (const p of persons) {
        if (p.present) this.move(p, t, h);
        this.act(p, t);
        p.updateFootprint();
      }
    }
    for (let i = 0; i < persons.length; i++) {
      const p = persons[i]!;
      // Someone who appeared in this tick stood at the entry: no velocity from where they waited.
      const moved = p.present && was[i] === 1;
      p.vx = moved ? (p.body.floorX - start[2 * i]!) / dt : 0;
      p.vy = moved ? (p.body.floorY - start[2 * i + 1]!) / dt : 0;
    }
  }

  /**
   * Events since the last call, in order.
   * @returns the events (times in simulation seconds)
   */
  drainEvents(): ScenarioEvent[] {
    const e = this.events;
    this.events = [];
    return e;
  }

  /**
   * Writes every person's scatterers (x, y, z, weight).
   * @param out at least persons.length * SCATTERERS_PER_BODY * 4 values
   * @returns the number of scatterers written
   */
  fillScatterers(out: Float64Array): number {
    let o = 0;
    for (const p of this.persons) {
      p.body.fillScatterers(out, o, this.time);
      // Someone not in the room keeps their place in the buffer with weights 0 (no paths).
      if (!p.present) for (let i = 0; i < SCATTERERS_PER_BODY; i++) out[o + 4 * i + 3] = 0;
      o += SCATTERERS_PER_BODY * 4;
    }
    return o / 4;
  }

  // ---------------------------------------------------------------------------------------------
  // Construction

  private generatePerson(id: number, seed: number, place: Rng): Person {
    const rng = new Rng(deriveSeed(seed, 100 + id));
    const body = new Body(rng.uniform(1.55, 1.9), rng.uniform(0.2, 0.33), rng.uniform(0, 2 * Math.PI));
    const stable = (['standing', 'sitting', 'lying'] as const).filter((a) => this.settings.activities.has(a));
    let start = stable.length > 0 ? rng.choice(stable) : 'standing';
    const { room, margin } = this.settings;
    let best: { x: number; y: number; h: number } | null = null;
    // Roomy placement first; in a cramped room fall back to standing, then to the minimum spacing.
    for (const [activity, spacing] of [
      [start, 0.8],
      ['standing', 0.8],
      ['standing', MIN_SEPARATION + 0.05],
    ] as const) {
      for (let tries = 0; tries < 300 && best === null; tries++) {
        const x = place.uniform(margin + 0.1, room.width - margin - 0.1);
        const y = place.uniform(margin + 0.1, room.depth - margin - 0.1);
        const h = place.uniform(-Math.PI, Math.PI);
        if (this.persons.some((o) => o.distanceTo(x, y) < spacing)) continue;
        if (activity === 'lying' && !this.lyingFits(body, x, y, h, id)) continue;
        if (activity === 'sitting' && !this.bodyFits(x, y, 0.6, h, id)) continue;
        best = { x, y, h };
        start = activity;
      }
      if (best !== null) break;
    }
    if (best === null) throw new RangeError('scenario: could not place the people apart; use a larger room or fewer people');
    const mode = this.placeBody(body, start, best.x, best.y, best.h, DEFAULT_SEAT, rng.chance(0.5) ? 0 : BED_HEIGHT);
    return new Person(id, body, mode, rng, null);
  }

  private explicitPerson(id: number, spec: PersonSpec, seed: number): Person {
    const rng = new Rng(deriveSeed(seed, 100 + id));
    const height = spec.height ?? rng.uniform(1.55, 1.9);
    if (!(height >= MIN_HEIGHT && height <= MAX_HEIGHT)) throw new RangeError(`scenario: person ${id} height must be ${MIN_HEIGHT}..${MAX_HEIGHT} m`);
    const body = new Body(height, rng.uniform(0.2, 0.33), rng.uniform(0, 2 * Math.PI));
    const { room } = this.settings;
    if (!(spec.x > 0 && spec.x < room.width && spec.y > 0 && spec.y < room.depth)) throw new RangeError(`scenario: person ${id} must start inside the room`);
    const script = spec.script ? [...spec.script].sort((a, b) => a.at - b.at) : null;
    for (const s of script ?? []) {
      if (!(s.at >= 0 && Number.isFinite(s.at))) throw new RangeError(`scenario: person ${id} script times must be finite and >= 0`);
      if (s.action === 'walk' && !(s.to.x > 0 && s.to.x < room.width && s.to.y > 0 && s.to.y < room.depth)) {
        throw new RangeError(`scenario: person ${id} walks to a point outside the room`);
      }
      if (s.action === 'walk' && s.speed !== undefined && !(s.speed > 0 && s.speed <= 3))
        throw new RangeError(`scenario: person ${id} walking speed must be in (0, 3] m/s`);
      if (s.action === 'fall' && s.duration !== undefined && !(s.duration >= 0.2 && s.duration <= 3))
        throw new RangeError(`scenario: person ${id} fall duration must be 0.2..3 s`);
      if (s.action === 'bend' && s.duration !== undefined && !(s.duration >= 1.5 && s.duration <= 10))
        throw new RangeError(`scenario: person ${id} bend duration must be 1.5..10 s`);
      if (s.action === 'bend' && s.angle !== undefined && !(s.angle >= 30 && s.angle <= 90))
        throw new RangeError(`scenario: person ${id} bend angle must be 30..90 degrees`);
    }
    const { enterAt, leaveAt } = spec;
    if (enterAt !== undefined && !(enterAt >= 0 && Number.isFinite(enterAt)))
      throw new RangeError(`scenario: person ${id} enterAt must be a number of seconds >= 0`);
    if (leaveAt !== undefined && !(leaveAt >= 0 && Number.isFinite(leaveAt) && leaveAt > (enterAt ?? -Infinity))) {
      throw new RangeError(`scenario: person ${id} leaveAt must be a number of seconds >= 0, after enterAt`);
    }
    const mode = this.placeBody(body, spec.activity ?? 'standing', spec.x, spec.y, spec.heading ?? Math.PI / 2, spec.seat ?? DEFAULT_SEAT, spec.surface ?? 0);
    const p = new Person(id, body, mode, rng, script);
    p.homeX = spec.x;
    p.homeY = spec.y;
    if (enterAt !== undefined) {
      p.enterAt = enterAt;
      p.present = false;
    }
    if (leaveAt !== undefined) p.leaveAt = leaveAt;
    return p;
  }

  private placeBody(body: Body, activity: 'standing' | 'sitting' | 'lying', x: number, y: number, h: number, seat: number, surface: number): Mode {
    switch (activity) {
      case 'standing':
        body.setStanding(x, y, h);
        return 'standing';
      case 'sitting':
        body.setSitting(x, y, h, seat);
        return 'sitting';
      case 'lying':
        body.setLying(x, y, h, surface, 'supine');
        return 'lying';
    }
  }

  /**
   * True when a body reaching `reach` metres from (x, y) in direction `dir`, `halfWidth` metres to
   * either side of that line (arms) and `tail` metres behind (x, y) (feet swinging back in a fall),
   * stays inside the room and clear of others.
   */
  private bodyFits(x: number, y: number, reach: number, dir: number, selfId: number, halfWidth = 0.3, tail = 0): boolean {
    const { room, margin } = this.settings;
    if (!(x > margin && x < room.width - margin && y > margin && y < room.depth - margin)) return false;
    const c = Math.cos(dir);
    const s = Math.sin(dir);
    const hx = x + reach * c;
    const hy = y + reach * s;
    const wall = 0.05;
    const tx = x - tail * c;
    const ty = y - tail * s;
    if (!(tx > wall && tx < room.width - wall && ty > wall && ty < room.depth - wall)) return false;
    if (!(hx > margin * 0.5 && hx < room.width - margin * 0.5 && hy > margin * 0.5 && hy < room.depth - margin * 0.5)) return false;
    for (const [px, py] of [
      [x, y],
      [hx, hy],
    ] as const) {
      for (const side of [-1, 1]) {
        const qx = px - side * halfWidth * s;
        const qy = py + side * halfWidth * c;
        if (!(qx > wall && qx < room.width - wall && qy > wall && qy < room.depth - wall)) return false;
      }
    }
    // Clear of everyone else along the whole body line, sampled every 0.2 m.
    const steps = Math.max(1, Math.ceil((reach + tail) / 0.2));
    for (const o of this.persons) {
      if (o.id === selfId || !o.present) continue;
      for (let i = 0; i <= steps; i++) {
        const f = -tail + ((reach + tail) * i) / steps;
        if (o.distanceTo(x + f * c, y + f * s) < MIN_SEPARATION + 0.2) return false;
      }
    }
    return true;
  }

  /** True when a body lying on its back at (x, y) in heading frame h fits: head behind, feet ahead. */
  private lyingFits(b: Body, x: number, y: number, h: number, selfId: number): boolean {
    const d = b.dims;
    return this.bodyFits(x, y, lyingReach(d) + 0.1, h + Math.PI, selfId) && this.bodyFits(x, y, d.thigh + d.shin + d.ankleH + 0.1, h, selfId);
  }

  // ---------------------------------------------------------------------------------------------
  // Labels and events

  private label(p: Person, a: Activity, t: number): void {
    if (p.activity === a) return;
    p.activity = a;
    this.events.push({ type: 'activity_change', personId: p.id, time: t, activity: a });
  }

  // ---------------------------------------------------------------------------------------------
  // Motion

  private move(p: Person, t: number, dt: number): void {
    switch (p.mode) {
      case 'walking':
        this.steer(p, t, dt);
        break;
      case 'transition':
        if (p.body.advance(dt)) {
          p.mode = p.transitionTo;
          this.settled(p, t);
        }
        break;
      case 'falling':
        if (p.body.advance(dt)) {
          p.mode = 'lying';
          this.events.push({ type: 'fall_end', personId: p.id, time: t });
          this.label(p, 'lying', t);
          if (p.script === null) {
            p.getsUp = p.rng.chance(this.settings.getUpProbability);
            p.holdUntil = p.getsUp ? t + p.rng.uniform(3, 10) : Infinity;
          }
        }
        break;
      default:
        break;
    }
  }

  /** A motion ended in a stable state: set the hold time of generated behaviour. */
  private settled(p: Person, t: number): void {
    if (p.script !== null) return;
    const r = p.rng;
    switch (p.mode) {
      case 'standing':
        p.holdUntil = t + (this.settings.activities.has('standing') ? r.uniform(1, 4) : 0);
        break;
      case 'sitting':
      case 'lying':
        p.holdUntil = t + r.uniform(5, 15);
        break;
      default:
        break;
    }
  }

  private steer(p: Person, t: number, dt: number): void {
    const b = p.body;
    const { room, margin } = this.settings;
    const x = b.floorX;
    const y = b.floorY;
    const dx = p.walkTx - x;
    const dy = p.walkTy - y;
    const dist = Math.hypot(dx, dy);
    // Arrived: brake to a standstill (the gait amplitude follows the speed down to the standing
    // pose, so nothing jumps), then stand.
    const arriving = dist < ARRIVE_M;
    if (arriving && p.walkV === 0) {
      this.stopWalking(p, t, dt);
      return;
    }
    // Unit direction to the target plus repulsion from nearby people, with a tangential part so
    // that two people meeting head-on both pass on their right instead of stalling.
    let ux = dist > 0 ? dx / dist : 0;
    let uy = dist > 0 ? dy / dist : 0;
    for (const o of this.persons) {
      if (o === p || !o.present) continue;
      const d = o.distanceTo(x, y);
      if (d >= AVOID_RADIUS) continue;
      const ox = x - o.body.floorX;
      const oy = y - o.body.floorY;
      const on = Math.hypot(ox, oy) || 1;
      const push = (AVOID_RADIUS - d) / AVOID_RADIUS;
      ux += (1.5 * push * ox) / on + (push * oy) / on;
      uy += (1.5 * push * oy) / on - (push * ox) / on;
    }
    // Near a wall, fade out the part of the direction that points into it, so people walk along
    // walls rather than into them (arms swing ahead of the pelvis).
    const fade = (dw: number): number => Math.max(0, Math.min(1, (dw - margin) / WALL_FADE));
    if (ux < 0) ux *= fade(x);
    else ux *= fade(room.width - x);
    if (uy < 0) uy *= fade(y);
    else uy *= fade(room.depth - y);
    if (ux === 0 && uy === 0) {
      ux = room.width / 2 - x;
      uy = room.depth / 2 - y;
    }
    const want = Math.atan2(uy, ux);
    const err = wrapAngle(want - b.heading);
    const turn = Math.max(-TURN_RATE * dt, Math.min(TURN_RATE * dt, err));
    const heading = wrapAngle(b.heading + turn);
    // Slow down to stop at the target; turn on the spot when facing away.
    const vStop = Math.sqrt(2 * WALK_ACCEL * Math.max(0, dist - 0.02));
    const vWant = arriving ? 0 : Math.min(p.walkCruise, vStop) * Math.max(0, Math.cos(wrapAngle(want - heading)));
    let v = p.walkV;
    v = vWant > v ? Math.min(vWant, v + WALK_ACCEL * dt) : Math.max(vWant, v - WALK_ACCEL * dt);
    let nx = x + v * dt * Math.cos(heading);
    let ny = y + v * dt * Math.sin(heading);
    nx = Math.max(margin, Math.min(room.width - margin, nx));
    ny = Math.max(margin, Math.min(room.depth - margin, ny));
    let blocked = false;
    for (const o of this.persons) {
      if (o === p || !o.present) continue;
      const dNew = o.distanceTo(nx, ny);
      if (dNew < MIN_SEPARATION && dNew <= o.distanceTo(x, y)) {
        blocked = true;
        break;
      }
    }
    if (blocked) {
      // Held up: the pelvis stays, the legs brake to a standstill over the next ticks.
      nx = x;
      ny = y;
      v = Math.max(0, p.walkV - WALK_ACCEL * dt);
    }
    // Progress is what counts: a walker held by a person or pressed against the wall margin is
    // blocked whatever speed it wants.
    if (Math.hypot(nx - x, ny - y) > 0.02 * dt) p.blocked = 0;
    else p.blocked += dt;
    p.walkV = v;
    b.walk(nx, ny, heading, v, dt);
    if (p.blocked > GIVE_UP_S && v === 0) {
      // Give up this waypoint (generated behaviour picks another after a short wait).
      this.stopWalking(p, t, dt);
      return;
    }
    if (p.script === null && t >= p.fallAt) this.tryGeneratedFall(p, t);
  }

  private stopWalking(p: Person, t: number, dt: number): void {
    const b = p.body;
    p.walkV = 0;
    p.stopping = false;
    p.fallAt = Infinity;
    b.walk(b.floorX, b.floorY, b.heading, 0, dt);
    p.mode = 'standing';
    this.label(p, 'standing', t);
    if (p.script === null) p.holdUntil = t + p.rng.uniform(0.5, 2.5);
  }

  private startFall(p: Person, t: number, direction: FallDirection, duration: number): void {
    p.walkV = 0;
    p.stopping = false;
    p.fallAt = Infinity;
    p.body.startFall(direction, duration);
    p.mode = 'falling';
    p.fallOnset = t;
    this.events.push({ type: 'fall_start', personId: p.id, time: t });
    this.label(p, 'falling', t);
  }

  /** A fall in a direction that keeps the body inside the room and clear of others, if there is one. */
  private tryGeneratedFall(p: Person, t: number): boolean {
    const r = p.rng;
    const dirs: FallDirection[] = ['forward', 'backward', 'left', 'right'];
    // Forward falls are the most common, sideways the least.
    const first = r.uniform() < 0.45 ? 0 : r.uniform() < 0.6 ? 1 : r.int(2, 3);
    const order = [dirs[first]!, ...dirs.filter((_, i) => i !== first)];
    const h = p.body.heading;
    // A forward fall ends with the arms stretched past the head: the hands reach furthest.
    const d = p.body.dims;
    const reach = fallTravel(d) + Math.max(lyingReach(d), d.torso + d.upperArm + d.forearm + d.hand);
    for (const dir of order) {
      const a = dir === 'forward' ? h : dir === 'backward' ? h + Math.PI : dir === 'left' ? h + Math.PI / 2 : h - Math.PI / 2;
      // Arms may end up spread to the side: shoulder plus most of an arm.
      if (this.bodyFits(p.body.floorX, p.body.floorY, reach, a, p.id, d.shoulderHalf + 0.8 * (d.upperArm + d.forearm), d.shin + 0.1)) {
        this.startFall(p, t, dir, r.uniform(0.6, 1.2));
        return true;
      }
    }
    p.fallAt = t + 0.5; // no room to fall here: try again a little later
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // Actions

  private act(p: Person, t: number): void {
    if (!p.present) {
      if (p.gone || t + 1e-9 < p.enterAt) return;
      this.enter(p, t);
    }
    if (p.leaving || t + 1e-9 >= p.leaveAt) {
      this.leave(p, t);
      return;
    }
    if (t >= p.forcedFallAt) {
      // Seated or lying, the person stands up first (generated behaviour goes on meanwhile).
      if (p.mode === 'standing' || p.mode === 'walking') {
        if (this.tryGeneratedFall(p, t)) p.forcedFallAt = Infinity;
      } else if ((p.mode === 'sitting' || p.mode === 'lying') && p.pending === null) {
        p.pending = { at: t, action: 'stand' };
      }
    }
    if (p.script !== null) {
      while (p.scriptIdx < p.script.length && p.script[p.scriptIdx]!.at <= t + 1e-9) p.pending = p.script[p.scriptIdx++]!;
    } else if (p.pending === null && (p.mode === 'standing' || p.mode === 'sitting' || p.mode === 'lying') && t >= p.holdUntil) {
      this.decide(p, t);
    }
    if (p.pending !== null && this.tryStart(p, p.pending, t)) p.pending = null;
  }

  /** A person who comes in appears at the entry, standing, and sets off for their place. */
  private enter(p: Person, t: number): void {
    const { x, y } = this.settings.entry;
    p.body.setStanding(x, y, Math.atan2(p.homeY - y, p.homeX - x));
    p.mode = 'standing';
    p.activity = 'standing';
    p.fallOnset = null;
    p.present = true;
    p.updateFootprint();
    // Steps due before the person came in do not happen.
    if (p.script !== null) while (p.scriptIdx < p.script.length && p.script[p.scriptIdx]!.at <= t + 1e-9) p.scriptIdx++;
    p.pending = { at: t, action: 'walk', to: { x: p.homeX, y: p.homeY }, speed: ENTRY_SPEED };
    this.events.push({ type: 'enter', personId: p.id, time: t });
  }

  /** A person on the way out: to the entry (standing up or finishing a fall first), then gone. */
  private leave(p: Person, t: number): void {
    const { x, y } = this.settings.entry;
    const out: ScriptStep = { at: t, action: 'walk', to: { x, y }, speed: ENTRY_SPEED };
    if (!p.leaving) {
      // Whatever was waiting is dropped; a walk in progress turns towards the entry.
      p.leaving = true;
      p.pending = out;
      p.fallAt = Infinity;
      p.forcedFallAt = Infinity;
    }
    if (p.mode === 'standing' && Math.hypot(p.body.floorX - x, p.body.floorY - y) < EXIT_M) {
      p.present = false;
      p.gone = true;
      p.leaving = false;
      p.vx = 0;
      p.vy = 0;
      this.events.push({ type: 'leave', personId: p.id, time: t });
      return;
    }
    // Walk out, again after being held up on the way.
    if (p.pending === null && p.mode !== 'walking') p.pending = out;
    if (p.pending !== null && this.tryStart(p, p.pending, t)) p.pending = null;
  }

  /**
   * Starts an action, or prepares for it (stand up, stop) and leaves it waiting.
   * @returns true when the action is done with (started, or pointless in the current state)
   */
  private tryStart(p: Person, a: ScriptStep, t: number): boolean {
    const b = p.body;
    const busy = p.mode === 'transition' || p.mode === 'falling';
    switch (a.action) {
      case 'fall': {
        if (busy) return false;
        if (p.mode === 'lying') return true;
        this.startFall(p, t, a.direction ?? 'forward', a.duration ?? 0.9);
        return true;
      }
      case 'walk': {
        if (busy) return false;
        if (p.mode === 'sitting' || p.mode === 'lying') {
          this.standUp(p, t);
          return false;
        }
        const { room, margin } = this.settings;
        p.walkTx = Math.max(margin, Math.min(room.width - margin, a.to.x));
        p.walkTy = Math.max(margin, Math.min(room.depth - margin, a.to.y));
        p.walkCruise = a.speed ?? 1.0;
        p.blocked = 0;
        p.stopping = false;
        if (p.mode !== 'walking') {
          p.walkV = 0;
          p.mode = 'walking';
        }
        this.label(p, 'walking', t);
        return true;
      }
      case 'stand': {
        if (busy) return false;
        if (p.mode === 'walking') this.stop(p);
        else if (p.mode === 'sitting' || p.mode === 'lying') this.standUp(p, t);
        return true;
      }
      case 'bend': {
        if (busy) return false;
        if (p.mode === 'walking') {
          this.stop(p);
          return false;
        }
        if (p.mode === 'sitting' || p.mode === 'lying') {
          this.standUp(p, t);
          return false;
        }
        b.startBend(((a.angle ?? BEND_ANGLE_DEG) * Math.PI) / 180, a.duration ?? BEND_DURATION_S);
        p.mode = 'transition';
        p.transitionTo = 'standing';
        this.label(p, 'standing', t);
        return true;
      }
      case 'sit':
      case 'lie': {
        if (busy) return false;
        const target: Mode = a.action === 'sit' ? 'sitting' : 'lying';
        if (p.mode === target) return true;
        if (p.mode === 'walking') {
          this.stop(p);
          return false;
        }
        if (a.action === 'sit' && p.mode === 'lying') {
          this.standUp(p, t);
          return false;
        }
        if (a.action === 'sit') b.startSitDown(a.seat ?? DEFAULT_SEAT);
        else b.startLieDown(a.surface ?? 0);
        p.mode = 'transition';
        p.transitionTo = target;
        p.fallOnset = null;
        this.label(p, target, t);
        return true;
      }
    }
  }

  private standUp(p: Person, t: number): void {
    p.body.startStandUp();
    p.mode = 'transition';
    p.transitionTo = 'standing';
    p.fallOnset = null;
    this.label(p, 'standing', t);
  }

  /** Retarget a walk to where the person can stop comfortably ahead. */
  private stop(p: Person): void {
    if (p.stopping) return;
    const b = p.body;
    const ahead = (p.walkV * p.walkV) / (2 * WALK_ACCEL) + 0.03;
    const { room, margin } = this.settings;
    p.walkTx = Math.max(margin, Math.min(room.width - margin, b.floorX + ahead * Math.cos(b.heading)));
    p.walkTy = Math.max(margin, Math.min(room.depth - margin, b.floorY + ahead * Math.sin(b.heading)));
    p.stopping = true;
  }

  /** Generated behaviour: choose the next action from a settled state. */
  private decide(p: Person, t: number): void {
    const r = p.rng;
    const act = this.settings.activities;
    if (p.mode === 'lying' && p.fallOnset !== null && !p.getsUp) {
      p.holdUntil = Infinity;
      return;
    }
    if (p.mode === 'sitting' || p.mode === 'lying') {
      const stay = !act.has('standing') && !act.has('walking') && !act.has('falling') && !(p.mode === 'sitting' ? act.has('lying') : act.has('sitting'));
      if (stay) {
        p.holdUntil = t + r.uniform(5, 15);
        return;
      }
      p.pending = { at: t, action: 'stand' };
      return;
    }
    // Standing.
    const canWalk = act.has('walking');
    if (act.has('falling') && r.chance(this.settings.fallProbability)) {
      if (canWalk && r.chance(0.5) && this.planWalk(p, t)) {
        p.fallAt = t + r.uniform(0.8, 3);
        return;
      }
      if (this.tryGeneratedFall(p, t)) return;
    }
    const options: Array<[Activity, number]> = [];
    if (canWalk) options.push(['walking', 0.5]);
    if (act.has('standing')) options.push(['standing', 0.15]);
    if (act.has('sitting')) options.push(['sitting', 0.2]);
    if (act.has('lying')) options.push(['lying', 0.1]);
    let total = 0;
    for (const [, w] of options) total += w;
    let u = r.uniform(0, total);
    let choice: Activity = 'standing';
    for (const [a, w] of options) {
      if (u < w) {
        choice = a;
        break;
      }
      u -= w;
    }
    const b = p.body;
    switch (choice) {
      case 'walking':
        if (this.planWalk(p, t)) return;
        break;
      case 'sitting':
        // Feet go ~0.6 m forward of the pelvis.
        if (this.bodyFits(b.floorX, b.floorY, 0.6, b.heading, p.id)) {
          p.pending = { at: t, action: 'sit', seat: r.uniform(0.4, 0.5) };
          return;
        }
        break;
      case 'lying': {
        // Lying on the back puts the head behind the pelvis.
        if (this.lyingFits(b, b.floorX, b.floorY, b.heading, p.id)) {
          p.pending = { at: t, action: 'lie', surface: r.chance(0.5) ? 0 : BED_HEIGHT };
          return;
        }
        break;
      }
      default:
        break;
    }
    // Standing still (or nothing else fitted here): hold, then decide again.
    p.holdUntil = t + (act.has('standing') ? r.uniform(1, 4) : 0.5);
  }

  /** Queue a walk to a random waypoint in free space; false when none was found. */
  private planWalk(p: Person, t: number): boolean {
    const r = p.rng;
    const { room, margin } = this.settings;
    const b = p.body;
    for (let tries = 0; tries < 30; tries++) {
      const x = r.uniform(margin + 0.1, room.width - margin - 0.1);
      const y = r.uniform(margin + 0.1, room.depth - margin - 0.1);
      if (Math.hypot(x - b.floorX, y - b.floorY) < 1) continue;
      if (this.persons.some((o) => o !== p && o.present && o.distanceTo(x, y) < MIN_SEPARATION + 0.4)) continue;
      p.pending = { at: t, action: 'walk', to: { x, y }, speed: r.uniform(0.3, 1.5) };
      return true;
    }
    return false;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
