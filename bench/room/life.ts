/**
 * Minutes of scripted life for one person of the live-room benchmark: walks, pauses, sit-downs,
 * deliberate lie-downs (on the floor or a bed), falls (from standing, or forward mid-walk) and
 * getting up again, as one explicit simulator script (`PersonSpec.script`).
 *
 * The falls are the positives; the sit-downs and lie-downs are the hard negatives a careless fall
 * detector takes for falls, and they come about as often as the falls. The mix is a benchmark's,
 * not a household's: real people fall far less often. Rates per hour (false alarms) are therefore
 * rates under this mix, stated beside them.
 *
 * Each person keeps to a cell of the room (the room cut into equal strips, one per person), so
 * that a fall or a lie-down planned here has the room it needs and walkers seldom meet: the
 * simulator takes scripts as given and does not check that bodies fit. Every walk, fall and
 * lie-down also happens where the reference camera sees it (feet and head), as in
 * `training/ts/eval/fallScripts.ts`: keypoints are in that camera's view, and a fall it cannot see
 * is a question of coverage, not of detection.
 *
 * The plan only has to be plausible: the benchmark scores against the simulator's own ground truth
 * (its events and positions), never against this plan.
 */
import type { Camera } from '../../src/pose/camera.js';
import type { PersonSpec, ScriptStep } from '../../src/sim/scenario.js';
import type { Rng } from '../../src/sim/rng.js';
import { bodyDims, fallTravel, lyingReach, type FallDirection } from '../../src/sim/skeleton.js';
import { BEND_SECONDS, dirAngle, fallReach, walkDistance, walkSeconds } from '../../training/ts/eval/fallScripts.js';

/** A floor rectangle, metres. */
export interface Cell {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

/** What one person's script holds, by kind. */
export interface LifeCounts {
  walks: number;
  falls: number;
  /** Falls forward while walking (part of `falls`). */
  walkFalls: number;
  sits: number;
  lies: number;
  bends: number;
}

export interface LifePlan {
  spec: PersonSpec;
  planned: LifeCounts;
}

export interface LifeOptions {
  room: { width: number; depth: number };
  /** The person's cell. */
  cell: Cell;
  /** Simulated seconds; nothing starts in the last 12 s, and whoever is down then gets up. */
  seconds: number;
  /** When given, everything happens where it sees feet and head. */
  camera?: Camera;
  /**
   * Whether the simulator knows `{ at, action: 'bend' }` (bending down and up again, a hard
   * negative). Default false.
   */
  bend?: boolean;
}

/** Distance every planned body part keeps from the walls, metres. */
const WALL_CLEARANCE = 0.15;
/** Walk end points keep this far from the walls (the simulator's walkers keep 0.4). */
const POINT_MARGIN = 0.6;
/** How far a body may reach out of its own cell, metres. */
const CELL_SLACK = 0.4;
/** The simulator's turning rate, rad/s. */
const TURN_RATE = 4;
/** Pixels a point keeps from the image border to count as seen. */
const VIEW_MARGIN_PX = 8;

type Sees = (x: number, y: number, z: number) => boolean;

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

const round2 = (v: number) => Math.round(v * 100) / 100;
const wrap = (a: number) => Math.atan2(Math.sin(a), Math.cos(a));

/** Action weights from standing (sum 1; `bend` takes its share from `pause` when unavailable). */
const WEIGHTS = { walk: 0.3, pause: 0.06, sit: 0.14, lie: 0.12, fall: 0.14, walkFall: 0.1, bend: 0.14 } as const;

/**
 * One person's scripted life.
 * @param rng the person's generator (advanced)
 * @param o room, cell, duration, camera
 * @returns the person (start place and script) and what the script holds
 * @throws RangeError when the cell has no place to stand in view
 * @example lifeScript(new Rng(7), { room: { width: 6, depth: 5 }, cell: { x0: 0, x1: 6, y0: 0, y1: 5 }, seconds: 600 })
 */
export function lifeScript(rng: Rng, o: LifeOptions): LifePlan {
  const sees = seesWith(o.camera);
  const { room, cell } = o;
  const height = round2(rng.uniform(1.55, 1.9));
  const d = bodyDims(height);
  const inRoom = (x: number, y: number, m: number) => x > m && x < room.width - m && y > m && y < room.depth - m;
  const inCell = (x: number, y: number, slack: number) => x >= cell.x0 - slack && x <= cell.x1 + slack && y >= cell.y0 - slack && y <= cell.y1 + slack;
  const spot = (x: number, y: number) => inRoom(x, y, POINT_MARGIN) && inCell(x, y, 0) && sees(x, y, 0.05) && sees(x, y, height + 0.05);
  /** A body from `back` behind (x, y) to `ahead` in front along `dir`, `half` to either side, fits and is seen. */
  const fits = (x: number, y: number, dir: number, back: number, ahead: number, half: number) => {
    const c = Math.cos(dir);
    const s = Math.sin(dir);
    for (const f of [-back, 0, ahead]) {
      for (const side of [-half, 0, half]) {
        const px = x + f * c - side * s;
        const py = y + f * s + side * c;
        if (!inRoom(px, py, WALL_CLEARANCE) || !inCell(px, py, CELL_SLACK) || !sees(px, py, 0.1)) return false;
      }
    }
    return true;
  };
  const walkSeen = (ax: number, ay: number, bx: number, by: number) => {
    const steps = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / 0.25));
    for (let i = 0; i <= steps; i++) {
      const x = ax + ((bx - ax) * i) / steps;
      const y = ay + ((by - ay) * i) / steps;
      if (!spot(x, y)) return false;
    }
    return true;
  };

  // Start somewhere in the cell, in view.
  let x = NaN;
  let y = NaN;
  for (let i = 0; i < 2000 && Number.isNaN(x); i++) {
    const cx = rng.uniform(cell.x0, cell.x1);
    const cy = rng.uniform(cell.y0, cell.y1);
    if (spot(cx, cy)) [x, y] = [cx, cy];
  }
  if (Number.isNaN(x)) throw new RangeError('lifeScript: no place in view to stand in the cell');
  let heading = rng.uniform(-Math.PI, Math.PI);
  const start = { x: round2(x), y: round2(y), heading: round2(heading) };
  [x, y, heading] = [start.x, start.y, start.heading];

  const script: ScriptStep[] = [];
  const planned: LifeCounts = { walks: 0, falls: 0, walkFalls: 0, sits: 0, lies: 0, bends: 0 };
  const end = o.seconds - 12;
  // Leave the first seconds to the pipeline's warm-up (a 1.28 s window, track confirmation).
  let t = rng.uniform(3, 6);

  const reach = fallReach(d);
  /** A walk target 1-3.5 m away seen all along, or null. */
  const drawWalk = (minL: number, maxL: number): { bx: number; by: number; h: number; l: number } | null => {
    for (let i = 0; i < 60; i++) {
      const h = rng.uniform(-Math.PI, Math.PI);
      const l = rng.uniform(minL, maxL);
      const bx = x + l * Math.cos(h);
      const by = y + l * Math.sin(h);
      if (spot(bx, by) && walkSeen(x, y, bx, by)) return { bx, by, h, l };
    }
    return null;
  };
  const turnTime = (h: number) => Math.abs(wrap(h - heading)) / TURN_RATE;

  /**
   * Where a move that needs room (sit, lie, bend, fall) can happen: here, facing as now, or at the
   * end of a walk (facing along it). `room(x, y, heading)` is the move's own check; for falls it
   * returns the fitting direction. Returns null when nothing fitted.
   */
  const place = <T>(
    room: (px: number, py: number, h: number) => T | null,
  ): { walk: { bx: number; by: number; h: number; l: number } | null; got: T } | null => {
    const here = room(x, y, heading);
    if (here !== null) return { walk: null, got: here };
    for (let i = 0; i < 40; i++) {
      const w = drawWalk(1, 3.5);
      if (!w) continue;
      const got = room(w.bx, w.by, w.h);
      if (got !== null) return { walk: w, got };
    }
    return null;
  };
  /** Walks there first when the move needs it; returns the time the move can start. */
  const goTo = (w: { bx: number; by: number; h: number; l: number } | null, at: number): number => {
    if (!w) return at;
    const speed = round2(rng.uniform(0.4, 1.3));
    script.push({ at, action: 'walk', to: { x: round2(w.bx), y: round2(w.by) }, speed });
    const arrive = at + turnTime(w.h) + walkSeconds(w.l, speed) + 0.3;
    [x, y, heading] = [w.bx, w.by, w.h];
    planned.walks++;
    return round2(arrive + rng.uniform(0.5, 2));
  };
  const ok = <T>(v: T, good: boolean): T | null => (good ? v : null);

  while (t < end) {
    const u = rng.uniform();
    let acc = 0;
    let choice: keyof typeof WEIGHTS = 'pause';
    for (const k of Object.keys(WEIGHTS) as (keyof typeof WEIGHTS)[]) {
      acc += WEIGHTS[k];
      if (u < acc) {
        choice = k;
        break;
      }
    }
    if (choice === 'bend' && !o.bend) choice = 'pause';
    const at = round2(t);
    switch (choice) {
      case 'walk': {
        const w = drawWalk(1, 3.5);
        if (!w) break;
        t = goTo(w, at) + rng.uniform(0, 2);
        continue;
      }
      case 'sit': {
        const p = place((px, py, h) => ok(true, fits(px, py, h, 0.3, 0.7, 0.35)));
        if (!p) break;
        const sitAt = goTo(p.walk, at);
        if (sitAt + 4 > end) return done();
        const up = round2(Math.min(sitAt + 1.4 + rng.uniform(4, 25), end));
        script.push({ at: sitAt, action: 'sit', seat: round2(rng.uniform(0.4, 0.5)) }, { at: up, action: 'stand' });
        t = up + 1.4 + rng.uniform(0.5, 2);
        planned.sits++;
        continue;
      }
      case 'lie': {
        const p = place((px, py, h) => ok(true, fits(px, py, h, lyingReach(d) + 0.1, d.thigh + d.shin + d.ankleH + 0.1, 0.35)));
        if (!p) break;
        const lieAt = goTo(p.walk, at);
        if (lieAt + 6 > end) return done();
        const up = round2(Math.min(lieAt + 3.2 + rng.uniform(5, 30), end));
        script.push({ at: lieAt, action: 'lie', surface: rng.chance(0.5) ? 0 : 0.5 }, { at: up, action: 'stand' });
        t = up + 3.2 + rng.uniform(0.5, 2);
        planned.lies++;
        continue;
      }
      case 'bend': {
        // Down and up again (the simulator's `bend`, as `walk_bend` of fallScripts), then a pause.
        // Bent over, the head and hands reach about a torso ahead.
        const p = place((px, py, h) => ok(true, fits(px, py, h, 0.3, d.torso + 0.3, 0.35)));
        if (!p) break;
        const bendAt = goTo(p.walk, at);
        const duration = round2(rng.uniform(BEND_SECONDS[0], BEND_SECONDS[1]));
        if (bendAt + duration > end) return done();
        script.push({ at: bendAt, action: 'bend', duration } as unknown as ScriptStep);
        t = bendAt + duration + rng.uniform(1, 3);
        planned.bends++;
        continue;
      }
      case 'fall': {
        const first = rng.choice<FallDirection>(['forward', 'forward', 'backward', 'left', 'right']);
        const order = [first, ...(['forward', 'backward', 'left', 'right'] as const).filter((f) => f !== first)];
        const p = place((px, py, h) => order.find((dir) => fits(px, py, dirAngle(h, dir), reach.back, reach.ahead, reach.halfWidth)) ?? null);
        if (!p) break;
        const fallAt = goTo(p.walk, at);
        const dir = p.got;
        const a = dirAngle(heading, dir);
        const duration = round2(rng.uniform(0.6, 1.2));
        // Mostly up again within half a minute; now and then down for longer.
        const down = rng.chance(0.8) ? rng.uniform(4, 25) : rng.uniform(30, 90);
        if (fallAt + duration + 3 > end) return done();
        const up = round2(Math.min(fallAt + duration + down, end));
        script.push({ at: fallAt, action: 'fall', direction: dir, duration }, { at: up, action: 'stand' });
        x += fallTravel(d) * Math.cos(a);
        y += fallTravel(d) * Math.sin(a);
        t = up + 3.2 + rng.uniform(1, 3);
        planned.falls++;
        continue;
      }
      case 'walkFall': {
        let planned_ = false;
        for (let i = 0; i < 40 && !planned_; i++) {
          const w = drawWalk(2, 3.5);
          if (!w) continue;
          const speed = round2(rng.uniform(0.7, 1.3));
          // Fall while still walking: after >= 1.2 s, before braking for the waypoint.
          const tMax = walkTimeTo(w.l - (speed * speed) / (2 * 1.2), speed);
          if (!(tMax > 1.3)) continue;
          const tau = rng.uniform(1.2, tMax);
          const s0 = walkDistance(tau, speed);
          const fx = x + s0 * Math.cos(w.h);
          const fy = y + s0 * Math.sin(w.h);
          let fitsAll = true;
          for (const ds of [-0.3, 0, 0.3]) fitsAll &&= fits(fx + ds * Math.cos(w.h), fy + ds * Math.sin(w.h), w.h, reach.back, reach.ahead, reach.halfWidth);
          if (!fitsAll) continue;
          const fallAt = round2(at + turnTime(w.h) + tau);
          const duration = round2(rng.uniform(0.6, 1.2));
          if (fallAt + duration + 3 > end) return done();
          const up = round2(Math.min(fallAt + duration + rng.uniform(4, 25), end));
          script.push(
            { at, action: 'walk', to: { x: round2(w.bx), y: round2(w.by) }, speed },
            { at: fallAt, action: 'fall', direction: 'forward', duration },
            { at: up, action: 'stand' },
          );
          x = fx + fallTravel(d) * Math.cos(w.h);
          y = fy + fallTravel(d) * Math.sin(w.h);
          heading = w.h;
          t = up + 3.2 + rng.uniform(1, 3);
          planned.falls++;
          planned.walkFalls++;
          planned_ = true;
        }
        if (planned_) continue;
        break;
      }
      case 'pause':
        break;
    }
    // Nothing fitted (or a pause): stand a while.
    t += rng.uniform(1, 5);
  }
  return done();

  function done(): LifePlan {
    return { spec: { height, x: start.x, y: start.y, heading: start.heading, script }, planned };
  }
}

/** Seconds to cover `s` metres from standstill at the simulator's 1.2 m/s^2 (NaN for s < 0). */
function walkTimeTo(s: number, speed: number): number {
  if (!(s >= 0)) return NaN;
  const ramp = speed / 1.2;
  const sRamp = 0.5 * speed * ramp;
  return s <= sRamp ? Math.sqrt((2 * s) / 1.2) : ramp + (s - sRamp) / speed;
}

/**
 * The cells of `n` people: the room cut into `n` equal strips across its longer side.
 * @param room the room
 * @param n people (1..4)
 * @returns one cell per person
 */
export function cells(room: { width: number; depth: number }, n: number): Cell[] {
  const out: Cell[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      room.width >= room.depth
        ? { x0: (room.width * i) / n, x1: (room.width * (i + 1)) / n, y0: 0, y1: room.depth }
        : { x0: 0, x1: room.width, y0: (room.depth * i) / n, y1: (room.depth * (i + 1)) / n },
    );
  }
  return out;
}
