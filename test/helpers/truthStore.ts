/**
 * Stores of known content for the analytics tests: scripted people from the simulator's scenario
 * engine (src/sim/scenario.ts), seen through its camera as a perfect detector would see them (the
 * GROUND-TRUTH keypoints, boxes and floor positions: no CSI, no model), at the live pipeline's
 * cadence of 12.5 pose frames per second, through the real `track -> activity -> alerts`
 * operators and the service's store outlet (its real PoseSink) into a real DuckDB file.
 *
 * Each run returns what happened in truth (per frame: who was present where, doing what), so a
 * test can state the expected figure from the script and check the SQL against it.
 *
 * @example
 * const { store, close } = await tempStore();
 * const run = await writeTruthRun(store, { people: shop.people, seconds: 300, startMs: T0, environmentId: 'shop', alerts: { zones } });
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import { track } from '../../operators/track.js';
import { activity } from '../../operators/activity.js';
import { alerts, type AlertsConfig } from '../../operators/alerts.js';
import { storeOutlet } from './storeOutlet.js';
import { startServer, type ServerOptions, type TestServer } from './server.js';
import { Store } from '../../src/store/store.js';
import { Scenario, type PersonSpec, type RoomSpec } from '../../src/sim/scenario.js';
import type { CameraSpec } from '../../src/pose/camera.js';
import { ACTIVITIES, type ActivityEvent, type PersonPose, type PoseAlert, type PoseFrame } from '../../src/pose/types.js';
import type { ZoneConfig } from '../../src/pose/zones.js';
import type { Activity } from '../../src/sim/scenario.js';
import { fallScenarioPeople, type FallRole } from '../../training/ts/eval/fallScripts.js';
import { Camera } from '../../src/pose/camera.js';
import { Rng } from '../../src/sim/rng.js';

/** The live pipeline's pose rate: 100 Hz CSI, one estimate every 8 frames. */
export const POSE_RATE_HZ = 12.5;
/** ms between two pose frames at that rate. */
export const FRAME_MS = 1000 / POSE_RATE_HZ;

/** The room and camera of the scripted fall scenarios (as test/operators/golden.test.ts). */
export const ROOM: RoomSpec = { width: 7.4, depth: 6.6, height: 2.8, wallReflection: 0.4, floorReflection: 0.5, ceilingReflection: 0.3 };
export const CAMERA: CameraSpec = { position: { x: 3.7, y: 0.05, z: 1.9 }, yaw: Math.PI / 2, pitch: -0.2, focalPx: 320 };

/** A scripted person, shown to the pipeline only while present ([from, to) seconds; default always). */
export interface ScriptedPerson {
  spec: PersonSpec;
  present?: [number, number];
}

export interface TruthRunOptions {
  people: ReadonlyArray<ScriptedPerson>;
  seconds: number;
  /** Epoch ms of the first frame. */
  startMs: number;
  environmentId: string;
  /**
   * The alerts operator's settings (zones, fall, inactivity); default the operator's defaults
   * without zones and with a 5 s fall notification delay, which the analytics fixtures are written
   * for (a person who gets up 7-9 s after a fall had one high alert, then recovered).
   */
  alerts?: AlertsConfig;
  seed?: number;
  /** `processingMs` stamped on every frame (default 5). */
  processingMs?: number;
  /**
   * Per scripted person, an error added to its floor position in every frame it is shown (called
   * with the frame interval, s): a model's floor error instead of the truth's exact position.
   */
  floorError?: ReadonlyArray<((dtS: number) => { x: number; y: number }) | undefined>;
  /** Give every person a v2 model's activity answer (`modelActivity`), right: 0.9 on its true activity. */
  modelActivity?: boolean;
}

/** One person in one frame, in truth. */
export interface TruthSighting {
  /** Index of the scripted person. */
  person: number;
  activity: Activity;
  x: number;
  y: number;
}

export interface TruthRun {
  /** Epoch ms of each frame. */
  times: number[];
  /** Who was shown to the pipeline in each frame (present and seen by the camera). */
  sightings: TruthSighting[][];
  /** The scenario's own events (fall_start, fall_end, activity_change), epoch ms. */
  truthEvents: Array<{ type: string; person: number; time: number; activity?: string }>;
  /** What the operators raised. */
  events: ActivityEvent[];
  alerts: PoseAlert[];
  /** Track ids per scripted person (the tracker's, in order of first appearance). */
  tracksOf: Map<number, Set<number>>;
  /** Persons stored per frame (tracked: a new track is reported once confirmed). */
  tracked: number[];
}

/**
 * Runs scripted people through track -> activity -> alerts into `store` at 12.5 frames/s. Track
 * ids continue after the largest stored one (as the service does across restarts), so several runs
 * can share a store and an environment.
 * @param store an open store
 * @param o the people, length, start time, environment and alert settings
 * @returns the truth of the run and what the operators raised
 */
export async function writeTruthRun(store: Store, o: TruthRunOptions): Promise<TruthRun> {
  const [row] = await store.query<{ m: number }>('SELECT coalesce(max(track_id), 0) AS m FROM pose_persons');
  const firstTrackId = Number(row?.m ?? 0) + 1;
  const scenario = new Scenario(
    { room: ROOM, camera: CAMERA },
    o.people.map((p) => p.spec),
    o.seed ?? 1,
    0.123,
    1,
    1,
  );
  const cam = scenario.camera;
  const sinkErrors: Error[] = [];
  const out = storeOutlet(store, { maxPendingRows: 10_000_000, onError: (e) => void sinkErrors.push(e) });
  const input = new Subject<PoseFrame>();
  const run: TruthRun = { times: [], sightings: [], truthEvents: [], events: [], alerts: [], tracksOf: new Map(), tracked: [] };
  const ownerOfSlot: number[][] = [];
  let failure: unknown;
  input.pipe(track({ firstTrackId }), activity(), alerts(o.alerts ?? { zones: [], fallDetection: { notificationDelaySeconds: 5 } })).subscribe({
    next(f) {
      out.push(f);
      run.tracked.push(f.persons.length);
      run.events.push(...(f.events ?? []));
      run.alerts.push(...(f.alerts ?? []));
      const owners = ownerOfSlot[f.frameId] ?? [];
      for (const p of f.persons) {
        const who = owners[p.slot];
        if (who === undefined || p.trackId === undefined) continue;
        let set = run.tracksOf.get(who);
        if (!set) run.tracksOf.set(who, (set = new Set()));
        set.add(p.trackId);
      }
    },
    error(e) {
      failure = e;
    },
  });

  const dt = 1 / POSE_RATE_HZ;
  const n = Math.round(o.seconds * POSE_RATE_HZ);
  for (let k = 0; k < n; k++) {
    if (k === 0) scenario.begin();
    else scenario.step(dt, k * dt);
    const t = o.startMs + k * FRAME_MS;
    for (const e of scenario.drainEvents()) {
      run.truthEvents.push({ type: e.type, person: e.personId, time: o.startMs + e.time * 1000, ...(e.activity ? { activity: e.activity } : {}) });
    }
    const persons: PersonPose[] = [];
    const sightings: TruthSighting[] = [];
    const owners: number[] = [];
    scenario.persons.forEach((sp, i) => {
      const window = o.people[i]!.present;
      const sec = k * dt;
      if (window && !(sec >= window[0] && sec < window[1])) return;
      const kp3 = Float32Array.from(sp.body.keypoints);
      const px = new Float32Array(34);
      const visible = new Uint8Array(17);
      cam.projectKeypoints(kp3, px, visible);
      const box = cam.bbox(px, visible);
      if (!(box[2] > 0 && box[3] > 0)) return;
      const keypoints = new Float32Array(51);
      for (let j = 0; j < 17; j++) {
        if (!visible[j]) continue;
        keypoints[3 * j] = px[2 * j]!;
        keypoints[3 * j + 1] = px[2 * j + 1]!;
        keypoints[3 * j + 2] = 1;
      }
      const slot = persons.length;
      owners[slot] = i;
      const e = o.floorError?.[i]?.(dt) ?? { x: 0, y: 0 };
      const p: PersonPose = { slot, confidence: 0.9, keypoints, bbox: Float32Array.from(box), floor: { x: sp.body.floorX + e.x, y: sp.body.floorY + e.y } };
      if (o.modelActivity) {
        const probabilities = Float32Array.from(ACTIVITIES, (a) => (a === sp.activity ? 0.9 : 0.025));
        p.modelActivity = { activity: sp.activity, confidence: 0.9, probabilities };
      }
      persons.push(p);
      sightings.push({ person: i, activity: sp.activity, x: sp.body.floorX, y: sp.body.floorY });
    });
    ownerOfSlot[k] = owners;
    run.times.push(t);
    run.sightings.push(sightings);
    input.next({
      frameId: k,
      time: t,
      sourceId: 'truth',
      environmentId: o.environmentId,
      persons,
      processingMs: o.processingMs ?? 5,
      modelVersion: 'ground-truth',
      csiQuality: 1,
    });
    if (failure) throw failure;
    // Let the sink write as it goes (its timers need the event loop).
    if (k % 2000 === 1999) await out.sink.flush();
  }
  input.complete();
  // As the service's stop step flush_sinks: everything the outlet took is written.
  await out.flushSinks();
  out.close();
  if (failure) throw failure;
  if (out.outletErrors.length > 0) throw out.outletErrors[0];
  if (sinkErrors.length > 0) throw sinkErrors[0];
  return run;
}

/**
 * A store in a new temp directory (`<dir>/csipose.duckdb`, the service's file name).
 * @returns the store, its directory, and `close()` which closes it and removes the directory
 *   unless `keep` is true
 */
export async function tempStore(): Promise<{ store: Store; dir: string; path: string; close: (keep?: boolean) => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'csipose-analytics-'));
  const path = join(dir, 'csipose.duckdb');
  const store = await Store.open(path);
  return {
    store,
    dir,
    path,
    async close(keep = false) {
      await store.close();
      if (!keep) rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The scripted scenarios
// ---------------------------------------------------------------------------------------------

/**
 * A shop: entrance E (front left), shelf A (an L-shaped area at the back: concave, to exercise the
 * even-odd rule) and checkout C (front right). Times in seconds from the start.
 * - Visitors 0 and 1 stand in E from 0 s, walk to A at 10 s (arriving ~3 s later), stand there,
 *   walk to C at 190 s, stand there and leave at 260 s: ~3 minutes in A each.
 * - Visitor 2 stands in C from 200 s (present only from then), walks to E at 205 s, stands
 *   there and leaves at 225 s: in C before E, never in A.
 * - Nobody is present from 260 s to the end (300 s): frames with 0 persons.
 * Zone schedules (for security): E always watched; A watched 22:00-06:00 UTC (not at noon);
 * C watched 08:00-18:00 UTC.
 */
export function shopScenario(): { people: ScriptedPerson[]; zones: ZoneConfig[]; seconds: number } {
  const zones: ZoneConfig[] = [
    {
      id: 'E',
      name: 'Entrance',
      polygon: [
        [1.0, 3.0],
        [2.4, 3.0],
        [2.4, 4.4],
        [1.0, 4.4],
      ],
      severity: 'medium',
    },
    {
      id: 'A',
      name: 'Shelf',
      // An L: the notch (x > 4.0 and y < 5.0) is outside.
      polygon: [
        [3.0, 4.6],
        [4.0, 4.6],
        [4.0, 5.0],
        [4.8, 5.0],
        [4.8, 6.1],
        [3.0, 6.1],
      ],
      schedule: { start: '22:00', end: '06:00' },
      severity: 'low',
    },
    {
      id: 'C',
      name: 'Checkout',
      polygon: [
        [5.0, 3.0],
        [6.8, 3.0],
        [6.8, 4.6],
        [5.0, 4.6],
      ],
      schedule: { start: '08:00', end: '18:00' },
      severity: 'high',
    },
  ];
  const people: ScriptedPerson[] = [
    {
      spec: {
        height: 1.75,
        x: 1.4,
        y: 3.4,
        script: [
          { at: 10, action: 'walk', to: { x: 3.5, y: 5.3 }, speed: 1 },
          { at: 190, action: 'walk', to: { x: 5.5, y: 3.5 }, speed: 1 },
        ],
      },
      present: [0, 260],
    },
    {
      spec: {
        height: 1.65,
        x: 2.0,
        y: 4.0,
        script: [
          { at: 10, action: 'walk', to: { x: 4.3, y: 5.6 }, speed: 1 },
          { at: 190, action: 'walk', to: { x: 6.3, y: 3.8 }, speed: 1 },
        ],
      },
      present: [0, 260],
    },
    {
      spec: { height: 1.8, x: 5.4, y: 4.3, script: [{ at: 205, action: 'walk', to: { x: 1.7, y: 3.5 }, speed: 1 }] },
      present: [200, 225],
    },
  ];
  return { people, zones, seconds: 300 };
}

/**
 * A care room, 26 minutes: person 0 lies still on the floor the whole time; person 1 lies for 12
 * minutes, gets up, stands for a minute and lies down again until the end.
 */
export function careScenario(): { people: ScriptedPerson[]; seconds: number } {
  return {
    seconds: 26 * 60,
    people: [
      { spec: { height: 1.7, x: 1.4, y: 3.6, heading: 0, activity: 'lying', script: [] } },
      {
        spec: {
          height: 1.7,
          x: 4.2,
          y: 5.0,
          heading: 0,
          activity: 'lying',
          script: [
            { at: 12 * 60, action: 'stand' },
            { at: 13 * 60, action: 'lie' },
          ],
        },
      },
    ],
  };
}

/**
 * The scripted fall scenarios of test/operators/golden.test.ts: `main` falls (or not), with
 * `companions` doing look-alikes (sitting, lying down on purpose, walking), planned in ROOM where
 * CAMERA sees them.
 * @example fallPeople(1, 'fall_get_up', 2) // falls, is alerted, gets up; two lie down or sit on purpose
 */
export function fallPeople(seed: number, main: FallRole, companions: number): ScriptedPerson[] {
  return fallScenarioPeople(ROOM, new Rng(seed), main, companions, new Camera(CAMERA)).map((p) => ({ spec: p.spec }));
}

/**
 * The analytics settings that make the shop scenario's zones the retail funnel (entrance E,
 * product A, purchase C) and two people a crowd.
 */
export const SHOP_ANALYTICS = { retail_entrance_zone: 'E', retail_product_zone: 'A', retail_purchase_zone: 'C', crowd_threshold: 2 };

/**
 * Writes the ground truth the analytics endpoints are tested on: `shop` (see shopScenario) in
 * environment `shop` from `startMs`, with its zone alerts; then, 40 minutes later, a fall with a
 * recovery beside two companions (fallPeople(1, 'fall_get_up', 2), 25 s, seed 1) in
 * `fallEnvironment`.
 * @returns the shop's run, whose figures the tests expect
 */
export async function writeShopAndFall(store: Store, shop: ReturnType<typeof shopScenario>, startMs: number, fallEnvironment: string): Promise<TruthRun> {
  const shopRun = await writeTruthRun(store, { people: shop.people, seconds: shop.seconds, startMs, environmentId: 'shop', alerts: { zones: shop.zones } });
  await writeTruthRun(store, { people: fallPeople(1, 'fall_get_up', 2), seconds: 25, startMs: startMs + 40 * 60_000, environmentId: fallEnvironment, seed: 1 });
  return shopRun;
}

/**
 * The real server over a new data directory holding the shop and the fall (writeShopAndFall),
 * configured for the shop: environment `shop` with its zones, and SHOP_ANALYTICS; the admin is
 * signed in.
 * @param dir a new empty directory; `<dir>/data` becomes the data directory
 * @param opts further server options (env, rate-limit scale); `config` is the shop's
 * @returns the server, the admin's token and the shop's run
 */
export async function startShopServer(
  dir: string,
  shop: ReturnType<typeof shopScenario>,
  startMs: number,
  fallEnvironment: string,
  opts: Omit<ServerOptions, 'dataDir' | 'config'> = {},
): Promise<{ s: TestServer; token: string; shopRun: TruthRun }> {
  const dataDir = join(dir, 'data');
  const store = await Store.open(join(dataDir, 'csipose.duckdb'));
  const shopRun = await writeShopAndFall(store, shop, startMs, fallEnvironment);
  await store.close();
  const s = await startServer({ ...opts, dataDir, config: { environment: { id: 'shop', zones: shop.zones }, analytics: SHOP_ANALYTICS } });
  return { s, token: await s.login(), shopRun };
}
