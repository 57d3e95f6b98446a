/**
 * Scripted people for scoring fall detection: who falls, and who does something that a careless
 * detector would take for a fall (sitting down, lying down on purpose) or should never take for
 * one (walking). The negatives matter as much as the falls: precision is measured on them.
 *
 * Roles (times in seconds from the start of the scenario; a scenario should run >= 25 s):
 * - `walk_fall` (positive): walks at 0.7-1.3 m/s towards a spot 1.5-3.5 m away and falls forward
 *   mid-walk (at cruising speed or still speeding up), then lies.
 * - `stand_fall` (positive): walks to a spot, stands, then falls (forward, backward or sideways)
 *   and lies.
 * - `fall_get_up` (positive): as `walk_fall`, but gets up 7-9 s after landing (after the service's
 *   default 2 s notification delay, so an alert is due).
 * - `walk_sit` (negative): walks to a spot and sits down (stays seated).
 * - `walk_lie` (negative): walks to a spot and lies down deliberately, on the floor or a bed.
 * - `walk` (negative): walks between waypoints for the whole scenario.
 * - `sit_stand` (negative): walks, sits for 4-6 s, stands up and walks on.
 * - `walk_bend` (negative): walks to a spot and bends down for 1.5-3 s (to pick something up),
 *   then stands; the simulator's `bend` step. Not among the companions' default roles (older
 *   scenario sets keep their people); the benchmark asks for it by name.
 *
 * Hard negatives are the deliberate moves that end low or fast like a fall: lying down, sitting
 * down and bending (`HARD_NEGATIVE_ROLES`); each scripted person of such a role has the time the
 * move begins (`negativeAt`), so that a false fall alert can be laid at its door.
 *
 * Every fall and lie-down is planned with room for the body (inside the walls, clear of the
 * others' paths): the simulator takes scripts as given and does not check that.
 *
 * With a camera given, everything a person does also happens where the reference camera sees the
 * whole body: walks (feet and head at every point), and the floor area a fall or a lie-down ends
 * on. Poses are keypoints in that camera's view and the fall detector works on them, so a fall
 * the camera cannot see is a question of coverage, not of detection; these scenarios measure
 * detection.
 */
import type { Camera } from '../../../src/pose/camera.js';
import type { PersonSpec, ScriptStep } from '../../../src/sim/scenario.js';
import { bodyDims, fallTravel, lyingReach, type BodyDims, type FallDirection } from '../../../src/sim/skeleton.js';
import type { Rng } from '../../../src/sim/rng.js';

/** What a scripted person does (see the module comment). */
export type FallRole = 'walk_fall' | 'stand_fall' | 'fall_get_up' | 'walk_sit' | 'walk_lie' | 'walk' | 'sit_stand' | 'walk_bend';
/** Roles with a true fall. */
export const FALL_ROLES: readonly FallRole[] = ['walk_fall', 'stand_fall', 'fall_get_up'];
/** Roles without one. */
export const NEGATIVE_ROLES: readonly FallRole[] = ['walk_sit', 'walk_lie', 'walk', 'sit_stand'];
/** Deliberate moves a careless detector takes for a fall (see the module comment). */
export const HARD_NEGATIVE_ROLES: readonly FallRole[] = ['walk_lie', 'walk_sit', 'sit_stand', 'walk_bend'];
/** Main roles of consecutive scenarios: half falls, half look-alikes, in a fixed rotation. */
export const ROLE_ROTATION: readonly FallRole[] = ['walk_fall', 'walk_lie', 'stand_fall', 'walk_sit', 'fall_get_up', 'walk', 'walk_fall', 'sit_stand'];

/** One scripted person and what the script makes them do. */
export interface ScriptedPerson {
  role: FallRole;
  spec: PersonSpec;
  /** Scheduled fall time, s (null for negatives). */
  fallAt: number | null;
  /** When the hard negative move (lie, sit or bend down) is scheduled, s; null for other roles. */
  negativeAt: number | null;
}

/** Seconds a bend lasts, bent down and back up (`walk_bend`), drawn from this range. */
export const BEND_SECONDS: readonly [number, number] = [1.5, 3];

/** The simulator's bend step (`{ at, action: 'bend', duration? }`, src/sim/scenario.ts). */
interface BendStep {
  at: number;
  action: 'bend';
  duration?: number;
}

/** Room extent, metres. */
export interface RoomExtent {
  width: number;
  depth: number;
}

/** Distance kept from the walls by every planned body part, metres. */
const WALL_CLEARANCE = 0.15;
/** Start and end points of walks keep this far from the walls (the simulator's walkers keep 0.4). */
const POINT_MARGIN = 0.6;
/** Planned spots of different people keep this far apart, metres. */
const PERSON_SPACING = 1.0;

interface Plan {
  /** Points this person occupies at some time (start, end, landing). */
  spots: Array<[number, number]>;
}

const inside = (room: RoomExtent, x: number, y: number, clearance: number) =>
  x > clearance && x < room.width - clearance && y > clearance && y < room.depth - clearance;

/**
 * True when a body stretched from `back` metres behind (x, y) to `ahead` metres in front of it
 * along direction `dir`, `halfWidth` to either side, stays inside the room.
 */
function corridorFits(room: RoomExtent, sees: Sees, x: number, y: number, dir: number, back: number, ahead: number, halfWidth: number): boolean {
  const c = Math.cos(dir);
  const s = Math.sin(dir);
  for (const f of [-back, ahead]) {
    for (const side of [-halfWidth, 0, halfWidth]) {
      const px = x + f * c - side * s;
      const py = y + f * s + side * c;
      if (!inside(room, px, py, WALL_CLEARANCE) || !sees(px, py, 0.1)) return false;
    }
  }
  return true;
}

/** Whether the camera sees a room point (always true without a camera). */
type Sees = (x: number, y: number, z: number) => boolean;

/** Pixels a point must keep from the image border to count as seen. */
const VIEW_MARGIN_PX = 8;

function seesWith(camera: Camera | undefined): Sees {
  if (!camera) return () => true;
  const px = new Float64Array(2);
  return (x, y, z) =>
    camera.project(x, y, z, px, 0) &&
    px[0]! >= VIEW_MARGIN_PX &&
    px[0]! < camera.width - VIEW_MARGIN_PX &&
    px[1]! >= VIEW_MARGIN_PX &&
    px[1]! < camera.height - VIEW_MARGIN_PX;
}

/** True when a person of `height` standing anywhere on the segment is seen from feet to head. */
function walkSeen(sees: Sees, ax: number, ay: number, bx: number, by: number, height: number): boolean {
  const steps = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / 0.25));
  for (let i = 0; i <= steps; i++) {
    const x = ax + ((bx - ax) * i) / steps;
    const y = ay + ((by - ay) * i) / steps;
    if (!sees(x, y, 0.05) || !sees(x, y, height + 0.05)) return false;
  }
  return true;
}

/** How far a fall carries the body: the pelvis travels, then the arms reach past the head. */
export function fallReach(d: BodyDims): { ahead: number; back: number; halfWidth: number } {
  return {
    ahead: fallTravel(d) + Math.max(lyingReach(d), d.torso + d.upperArm + d.forearm + d.hand),
    back: d.shin + 0.1,
    halfWidth: d.shoulderHalf + 0.8 * (d.upperArm + d.forearm),
  };
}

/** The direction a fall carries the body, radians, for a person facing `heading`. */
export const dirAngle = (heading: number, dir: FallDirection) =>
  dir === 'forward' ? heading : dir === 'backward' ? heading + Math.PI : dir === 'left' ? heading + Math.PI / 2 : heading - Math.PI / 2;

function farFromOthers(plans: readonly Plan[], pts: ReadonlyArray<readonly [number, number]>): boolean {
  for (const p of plans) for (const [ax, ay] of p.spots) for (const [bx, by] of pts) if (Math.hypot(ax - bx, ay - by) < PERSON_SPACING) return false;
  return true;
}

/** A straight walk A -> B of length in [minL, maxL] inside the room, or null. */
function drawWalk(
  rng: Rng,
  room: RoomExtent,
  minL: number,
  maxL: number,
): { ax: number; ay: number; bx: number; by: number; heading: number; length: number } | null {
  const ax = rng.uniform(POINT_MARGIN, room.width - POINT_MARGIN);
  const ay = rng.uniform(POINT_MARGIN, room.depth - POINT_MARGIN);
  const heading = rng.uniform(-Math.PI, Math.PI);
  const length = rng.uniform(minL, maxL);
  const bx = ax + length * Math.cos(heading);
  const by = ay + length * Math.sin(heading);
  if (!inside(room, bx, by, POINT_MARGIN)) return null;
  return { ax, ay, bx, by, heading, length };
}

/** The simulator's walking acceleration and braking, m/s^2. */
const WALK_ACCEL = 1.2;

/** Seconds a scripted walk of `length` at `speed` takes, with the simulator's acceleration ramps. */
export function walkSeconds(length: number, speed: number): number {
  return length / speed + speed / WALK_ACCEL;
}

/**
 * Metres covered `t` seconds into a walk from standstill (straight ahead, before braking).
 * @param t seconds since the walk started
 * @param speed cruising speed, m/s
 * @returns metres
 */
export function walkDistance(t: number, speed: number): number {
  const ramp = speed / WALK_ACCEL;
  return t <= ramp ? 0.5 * WALK_ACCEL * t * t : 0.5 * speed * ramp + speed * (t - ramp);
}

/** Inverse of walkDistance: seconds to cover `s` metres (NaN for s < 0). */
function walkTimeTo(s: number, speed: number): number {
  if (!(s >= 0)) return NaN;
  const ramp = speed / WALK_ACCEL;
  const sRamp = 0.5 * speed * ramp;
  return s <= sRamp ? Math.sqrt((2 * s) / WALK_ACCEL) : ramp + (s - sRamp) / speed;
}

const TRIES = 400;

/**
 * Plans one person of a role, clear of the already planned ones.
 * @returns the person, or null when the room has no place for the role
 */
function planPerson(role: FallRole, room: RoomExtent, sees: Sees, rng: Rng, plans: Plan[]): ScriptedPerson | null {
  const height = rng.uniform(1.55, 1.9);
  const d = bodyDims(height);
  const reach = fallReach(d);
  // Start after the pipeline has warmed up (a 1.28 s window, 3 frames to confirm a track, 2 s of activity history).
  const t0 = rng.uniform(2, 3.5);
  const speed = rng.uniform(0.7, 1.3);
  for (let tries = 0; tries < TRIES; tries++) {
    switch (role) {
      case 'walk_fall':
      case 'fall_get_up': {
        const w = drawWalk(rng, room, 1.5, 3.5);
        if (!w) continue;
        // Fall while still walking: after >= 1.2 s, before the walker brakes for the waypoint.
        const tMax = walkTimeTo(w.length - (speed * speed) / (2 * WALK_ACCEL), speed);
        if (!(tMax > 1.3)) continue;
        const tau = rng.uniform(1.2, tMax);
        const s0 = walkDistance(tau, speed);
        const fx = w.ax + s0 * Math.cos(w.heading);
        const fy = w.ay + s0 * Math.sin(w.heading);
        if (!walkSeen(sees, w.ax, w.ay, fx, fy, height)) continue;
        // Room to fall forward wherever, within 0.3 m, the walker really is at that time.
        let ok = true;
        for (const ds of [-0.3, 0, 0.3]) {
          ok &&= corridorFits(room, sees, fx + ds * Math.cos(w.heading), fy + ds * Math.sin(w.heading), w.heading, reach.back, reach.ahead, reach.halfWidth);
        }
        const land: [number, number] = [fx + fallTravel(d) * Math.cos(w.heading), fy + fallTravel(d) * Math.sin(w.heading)];
        if (!ok || !farFromOthers(plans, [[w.ax, w.ay], [fx, fy], land])) continue;
        const fallAt = round2(t0 + tau);
        const duration = round2(rng.uniform(0.6, 1.2));
        const script: ScriptStep[] = [
          { at: t0, action: 'walk', to: { x: w.bx, y: w.by }, speed },
          { at: fallAt, action: 'fall', direction: 'forward', duration },
        ];
        if (role === 'fall_get_up') script.push({ at: round2(fallAt + duration + rng.uniform(7, 9)), action: 'stand' });
        plans.push({ spots: [[w.ax, w.ay], [fx, fy], land] });
        return { role, fallAt, negativeAt: null, spec: { height, x: w.ax, y: w.ay, heading: w.heading, script } };
      }
      case 'stand_fall': {
        const w = drawWalk(rng, room, 1.0, 2.5);
        if (!w || !walkSeen(sees, w.ax, w.ay, w.bx, w.by, height)) continue;
        const dir = rng.choice<FallDirection>(['forward', 'backward', 'left', 'right']);
        const a = dirAngle(w.heading, dir);
        if (!corridorFits(room, sees, w.bx, w.by, a, reach.back, reach.ahead, reach.halfWidth)) continue;
        const land: [number, number] = [w.bx + fallTravel(d) * Math.cos(a), w.by + fallTravel(d) * Math.sin(a)];
        if (!farFromOthers(plans, [[w.ax, w.ay], [w.bx, w.by], land])) continue;
        const fallAt = round2(t0 + walkSeconds(w.length, speed) + rng.uniform(1, 3));
        const script: ScriptStep[] = [
          { at: t0, action: 'walk', to: { x: w.bx, y: w.by }, speed },
          { at: fallAt, action: 'fall', direction: dir, duration: round2(rng.uniform(0.6, 1.2)) },
        ];
        plans.push({ spots: [[w.ax, w.ay], [w.bx, w.by], land] });
        return { role, fallAt, negativeAt: null, spec: { height, x: w.ax, y: w.ay, heading: w.heading, script } };
      }
      case 'walk_sit':
      case 'sit_stand':
      case 'walk_lie': {
        const w = drawWalk(rng, room, 1.5, 3.5);
        if (!w || !walkSeen(sees, w.ax, w.ay, w.bx, w.by, height)) continue;
        // Seated feet reach ~0.6 m ahead; lying on the back puts the head behind the pelvis.
        const fits =
          role === 'walk_lie'
            ? corridorFits(room, sees, w.bx, w.by, w.heading, lyingReach(d) + 0.1, d.thigh + d.shin + d.ankleH + 0.1, 0.35)
            : corridorFits(room, sees, w.bx, w.by, w.heading, 0.3, 0.7, 0.35);
        if (
          !fits ||
          !farFromOthers(plans, [
            [w.ax, w.ay],
            [w.bx, w.by],
          ])
        )
          continue;
        const at = round2(t0 + walkSeconds(w.length, speed) + rng.uniform(0.5, 2));
        const script: ScriptStep[] = [{ at: t0, action: 'walk', to: { x: w.bx, y: w.by }, speed }];
        const spots: Array<[number, number]> = [
          [w.ax, w.ay],
          [w.bx, w.by],
        ];
        if (role === 'walk_lie') script.push({ at, action: 'lie', surface: rng.chance(0.5) ? 0 : 0.5 });
        else script.push({ at, action: 'sit', seat: round2(rng.uniform(0.4, 0.5)) });
        if (role === 'sit_stand') {
          const back = drawBack(rng, room, sees, height, w.bx, w.by);
          if (!back || !farFromOthers(plans, [back])) continue;
          const up = round2(at + rng.uniform(4, 6));
          script.push({ at: up, action: 'stand' }, { at: round2(up + 2.5), action: 'walk', to: { x: back[0], y: back[1] }, speed });
          spots.push(back);
        }
        plans.push({ spots });
        return { role, fallAt: null, negativeAt: at, spec: { height, x: w.ax, y: w.ay, heading: w.heading, script } };
      }
      case 'walk_bend': {
        const w = drawWalk(rng, room, 1.5, 3.5);
        if (!w || !walkSeen(sees, w.ax, w.ay, w.bx, w.by, height)) continue;
        // Bent over, the head and hands reach about a torso ahead.
        if (
          !corridorFits(room, sees, w.bx, w.by, w.heading, 0.3, d.torso + 0.3, 0.35) ||
          !farFromOthers(plans, [
            [w.ax, w.ay],
            [w.bx, w.by],
          ])
        )
          continue;
        const at = round2(t0 + walkSeconds(w.length, speed) + rng.uniform(0.5, 2));
        const bend: BendStep = { at, action: 'bend', duration: round2(rng.uniform(BEND_SECONDS[0], BEND_SECONDS[1])) };
        // A step of the simulator's script (its ScriptStep union gains `bend` with it).
        const script: ScriptStep[] = [{ at: t0, action: 'walk', to: { x: w.bx, y: w.by }, speed }, bend as unknown as ScriptStep];
        plans.push({
          spots: [
            [w.ax, w.ay],
            [w.bx, w.by],
          ],
        });
        return { role, fallAt: null, negativeAt: at, spec: { height, x: w.ax, y: w.ay, heading: w.heading, script } };
      }
      case 'walk': {
        const w = drawWalk(rng, room, 1.5, 3.5);
        if (!w || !walkSeen(sees, w.ax, w.ay, w.bx, w.by, height)) continue;
        const pts: Array<[number, number]> = [
          [w.ax, w.ay],
          [w.bx, w.by],
        ];
        const script: ScriptStep[] = [{ at: t0, action: 'walk', to: { x: w.bx, y: w.by }, speed }];
        let at = t0 + walkSeconds(w.length, speed) + 1;
        let ok = true;
        // Keep walking back and forth for ~30 s.
        while (at < 30 && ok) {
          const [px, py] = pts[pts.length - 1]!;
          const next = drawBack(rng, room, sees, height, px, py);
          if (!next) {
            ok = false;
            break;
          }
          script.push({ at: round2(at), action: 'walk', to: { x: next[0], y: next[1] }, speed });
          at += walkSeconds(Math.hypot(next[0] - px, next[1] - py), speed) + rng.uniform(0.5, 2);
          pts.push(next);
        }
        if (!ok || !farFromOthers(plans, pts.slice(0, 2))) continue;
        plans.push({ spots: pts.slice(0, 2) });
        return { role, fallAt: null, negativeAt: null, spec: { height, x: w.ax, y: w.ay, heading: w.heading, script } };
      }
    }
  }
  return null;
}

/** A waypoint 1.5-3.5 m from (x, y) inside the room, reached by a walk the camera sees, or null. */
function drawBack(rng: Rng, room: RoomExtent, sees: Sees, height: number, x: number, y: number): [number, number] | null {
  for (let i = 0; i < 100; i++) {
    const h = rng.uniform(-Math.PI, Math.PI);
    const l = rng.uniform(1.5, 3.5);
    const bx = x + l * Math.cos(h);
    const by = y + l * Math.sin(h);
    if (inside(room, bx, by, POINT_MARGIN) && walkSeen(sees, x, y, bx, by, height)) return [bx, by];
  }
  return null;
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * The people of one scripted fall scenario: the main role first, then companions with negative
 * roles. A main fall role that finds no room for its walk falls back to `stand_fall`, then to a
 * negative; companions that find no room are left out.
 * @param room the room
 * @param rng the scenario's generator (advanced)
 * @param main the main person's role
 * @param companions number of extra people (0..3)
 * @param camera when given, everything happens in its view (see the module comment)
 * @param companionRoles roles the companions are drawn from (default NEGATIVE_ROLES)
 * @returns the scripted people (at least one)
 * @throws RangeError when not even one person fits the room
 * @example fallScenarioPeople({ width: 4.6, depth: 6.6 }, new Rng(5), 'walk_fall', 1, new Camera(recipe.camera))
 */
export function fallScenarioPeople(
  room: RoomExtent,
  rng: Rng,
  main: FallRole,
  companions: number,
  camera?: Camera,
  companionRoles: readonly FallRole[] = NEGATIVE_ROLES,
): ScriptedPerson[] {
  if (!(Number.isInteger(companions) && companions >= 0 && companions <= 3))
    throw new RangeError(`fallScenarioPeople: companions must be 0..3, got ${companions}`);
  const plans: Plan[] = [];
  const out: ScriptedPerson[] = [];
  const sees = seesWith(camera);
  const fallbacks: FallRole[] = FALL_ROLES.includes(main) ? [main, 'stand_fall', 'walk'] : [main, 'walk'];
  for (const role of fallbacks) {
    const p = planPerson(role, room, sees, rng, plans);
    if (p) {
      out.push(p);
      break;
    }
  }
  if (out.length === 0) throw new RangeError('fallScenarioPeople: the room has no place for a scripted person');
  for (let i = 0; i < companions; i++) {
    const p = planPerson(rng.choice(companionRoles), room, sees, rng, plans);
    if (p) out.push(p);
  }
  return out;
}
