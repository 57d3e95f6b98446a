/**
 * What the live-room benchmark simulates: rooms, sessions and the people in them.
 *
 * A session is one room with 1, 2 or 3 people living their scripted life (`life.ts`) for
 * `sessionMinutes`, recorded as an Intel 5300 capture and replayed through the real service.
 * Rooms: the default room exactly as `npm start` simulates it (6 x 5 m, router on the back wall,
 * receiver on the front wall) and held-out TEST rooms of the training recipe (sizes and antenna
 * layouts the model never saw), each made an Intel 5300 layout (30 subcarriers, 3 x 3). Sessions
 * go round the rooms and the people counts so that every room holds every count once per round.
 */
import { deepFreeze } from '../../src/config/schema.js';
import { Camera, DEFAULT_VIEW, viewSpec } from '../../src/pose/camera.js';
import { IMPAIRMENT_DEFAULTS } from '../../src/sim/impairments.js';
import type { RealismPreset } from '../../src/sim/realism.js';
import { deriveSeed, Rng } from '../../src/sim/rng.js';
import { DEFAULT_ROOM, Scenario } from '../../src/sim/scenario.js';
import type { SimOptions } from '../../src/sim/simulator.js';
import { simOptions } from '../../training/ts/dataset.js';
import { isHeldOut, makeRecipes, type ScenarioRecipe } from '../../training/ts/recipe.js';
import { cells, lifeScript, type LifeCounts } from './life.js';

/** How much life to simulate. */
export interface RoomBenchPlan {
  seed: number;
  /** Simulated hours in all (sessions of `sessionMinutes`, rounded up to whole sessions). */
  hours: number;
  sessionMinutes: number;
  /** Held-out TEST rooms besides the default room. */
  testRooms: number;
  /** People counts the sessions go round. */
  people: readonly number[];
  /** The simulator's realism: 'room' (clutter, drift, shadowing: docs/simulator.md) or 'ideal'. */
  realism: RealismPreset;
  /**
   * `test` (default): the default room and held-out TEST rooms, the reported scores. `val`:
   * VALIDATION rooms only (the training distribution, seeds of their own), the split on which
   * tracking, activity and alert rules are chosen.
   */
  split?: 'test' | 'val';
}

/** The full run: 2 hours in 12 sessions of 10 minutes, 4 rooms x 1, 2 and 3 people. */
export const FULL_ROOM_PLAN: Readonly<RoomBenchPlan> = deepFreeze({
  seed: 1818,
  hours: 2,
  sessionMinutes: 10,
  testRooms: 3,
  people: [1, 2, 3],
  realism: 'room',
});

/** `--small` (CI): 3 sessions of 2 minutes (1, 2 and 3 people). */
export const SMALL_ROOM_PLAN: Readonly<RoomBenchPlan> = deepFreeze({
  seed: 1818,
  hours: 0.1,
  sessionMinutes: 2,
  testRooms: 3,
  people: [1, 2, 3],
  realism: 'room',
});

/** One room of the benchmark. */
export interface BenchRoom {
  /** `default` or `test-<recipe id>`. */
  name: string;
  recipe: ScenarioRecipe;
}

/** One session: a room, its people and how long. */
export interface SessionSpec {
  /** `s01`, `s02`, ... */
  id: string;
  room: BenchRoom;
  people: number;
  seconds: number;
  /** The simulator's options (explicit scripted people). */
  sim: SimOptions;
  /** What the scripts hold, summed over the people. */
  planned: LifeCounts;
}

/**
 * The default room as `npm start` simulates it, written as a recipe: DEFAULT_ROOM, the simulator's
 * default arrays (transmitter centred on the back wall, receiver centred on the front wall, both at
 * 1.2 m, along x), the default view centred across the room, the default impairments.
 */
export function defaultRoomRecipe(seed: number): ScenarioRecipe {
  const { width, depth } = DEFAULT_ROOM;
  return {
    id: 0,
    split: 'test',
    seed,
    room: { ...DEFAULT_ROOM },
    rx: { x: width / 2, y: 0.2, z: 1.2 },
    tx: { wall: 'back', x: width / 2, y: depth - 0.2, z: 1.2 },
    camera: viewSpec({ ...DEFAULT_VIEW, x: width / 2 }),
    nSub: 30,
    nRx: 3,
    nTx: 3,
    people: 0,
    snrDb: IMPAIRMENT_DEFAULTS.snrDb ?? 25,
    lossRate: IMPAIRMENT_DEFAULTS.lossRate,
    quantizeBits: null,
    fallProbability: 0,
    seconds: 0,
  };
}

/**
 * The rooms of a plan: the default room, then `testRooms` held-out TEST rooms (checked with
 * `isHeldOut`) made Intel 5300 layouts; with `split: 'val'`, `testRooms + 1` VALIDATION rooms
 * (checked not to be held out) instead.
 */
export function benchRooms(plan: RoomBenchPlan): BenchRoom[] {
  if (plan.split === 'val') {
    const val = makeRecipes(deriveSeed(plan.seed, 9), { train: 0, val: plan.testRooms + 1, test: 0, seconds: plan.sessionMinutes * 60 });
    for (const r of val) if (isHeldOut(r)) throw new Error(`room recipe ${r.id} is held out: not a VALIDATION room`);
    return val.map((r) => ({ name: `val-${r.id}`, recipe: { ...r, nSub: 30 as const, nRx: 3, nTx: 3, quantizeBits: null } }));
  }
  const drawn = makeRecipes(deriveSeed(plan.seed, 7), { train: 0, val: 0, test: plan.testRooms, seconds: plan.sessionMinutes * 60 });
  for (const r of drawn) if (!isHeldOut(r)) throw new Error(`room recipe ${r.id} is not held out`);
  return [
    { name: 'default', recipe: defaultRoomRecipe(0) },
    ...drawn.map((r) => ({ name: `test-${r.id}`, recipe: { ...r, nSub: 30 as const, nRx: 3, nTx: 3, quantizeBits: null } })),
  ];
}

/**
 * Whether the simulator knows the `bend` script step: a person told to bend at 0 s has the head
 * lower 1 s later (an unknown step does nothing).
 */
export function simulatorBends(): boolean {
  const sc = new Scenario({}, [{ x: 3, y: 2.5, height: 1.75, script: [{ at: 0, action: 'bend', duration: 2 } as never] }], 1, 0.0579, 1, 1);
  const head = () => sc.persons[0]!.body.keypoints[2]!;
  sc.begin();
  const z0 = head();
  for (let i = 1; i <= 100; i++) sc.step(0.01, i / 100);
  return head() < z0 - 0.2;
}

/**
 * The sessions of a plan, in order. Session i is in room i mod rooms with people[(i + floor(i /
 * rooms)) mod counts]: consecutive sessions change room and count, and each round of rooms shifts
 * the counts, so that 12 sessions give every one of 4 rooms every count of 3 once (and the first 3
 * sessions already hold 1, 2 and 3 people), each with its own simulator seed and scripts.
 * @param plan the plan
 * @param bend whether scripts may use `bend` (see {@link simulatorBends})
 * @returns the sessions
 */
export function planSessions(plan: RoomBenchPlan, bend = simulatorBends()): SessionSpec[] {
  const rooms = benchRooms(plan);
  const seconds = plan.sessionMinutes * 60;
  const n = Math.max(1, Math.ceil((plan.hours * 60) / plan.sessionMinutes - 1e-9));
  const rng = new Rng(deriveSeed(plan.seed, plan.split === 'val' ? 10 : 8));
  const out: SessionSpec[] = [];
  for (let i = 0; i < n; i++) {
    const room = rooms[i % rooms.length]!;
    const people = plan.people[(i + Math.floor(i / rooms.length)) % plan.people.length]!;
    const seed = rng.nextUint32();
    const camera = new Camera(room.recipe.camera);
    const lifeRng = new Rng(deriveSeed(seed, 41));
    const planned: LifeCounts = { walks: 0, falls: 0, walkFalls: 0, sits: 0, lies: 0, bends: 0 };
    const specs = cells(room.recipe.room, people).map((cell) => {
      const l = lifeScript(lifeRng, { room: room.recipe.room, cell, seconds, camera, bend });
      for (const k of Object.keys(planned) as (keyof LifeCounts)[]) planned[k] += l.planned[k];
      return l.spec;
    });
    const base = simOptions({ ...room.recipe, seed }, 0);
    out.push({
      id: `s${String(i + 1).padStart(2, '0')}`,
      room,
      people,
      seconds,
      planned,
      sim: { ...base, people: specs, realism: plan.realism, environmentId: 'default', sourceId: `room-${i + 1}` },
    });
  }
  return out;
}
