/**
 * `npm run bench:room [-- --json] [-- --small | --hours H] [-- --speed N] [-- --jobs J]
 * [-- --realism room|ideal] [-- --split test|val] [-- --no-oracle | --oracle-only] [-- --watch M] [-- --model PATH]`
 * or `npm run bench:room -- --default-room M [--model PATH] [--source URI]` (npm start's room
 * in-process with any model, alone, or another source in its place: bench/room/defaultRoom.ts): what a subscriber of the
 * real service sees over hours of simulated life (issue 18 item 4; DECISIONS "Benchmark output", `room.*`).
 * `--split val` runs VALIDATION rooms (the training distribution) with sessions of their own seeds,
 * named `room.val.*`: the split on which tracking, activity and alert rules are chosen.
 *
 * What runs (bench/room/*):
 * - plan.ts: sessions of 10 minutes going round four rooms (the default room as `npm start`
 *   simulates it and three held-out TEST rooms of other sizes and antenna layouts, Intel 5300
 *   3 x 3 x 30) and 1, 2 and 3 people; 12 sessions, 2 simulated hours, by default. The simulator's
 *   realism is `room` (clutter, drifting chains, a wandering static channel: docs/simulator.md).
 * - life.ts: every person lives a script: walks, pauses, sit-downs, deliberate lie-downs, bends
 *   (when the simulator has them), falls from standing and forward mid-walk, getting up again.
 * - capture.ts: each session simulated once (worker threads), written as an Intel 5300 capture,
 *   its ground truth kept at the end of every window.
 * - session.ts: per session the real `csipose serve` (its own process, the shipped window model
 *   or `--model` (v1 or v2: a capture holds one link, which a v3 refiner cannot read), the room's
 *   view and site as its configuration) replays the capture (`file:PATH?speed=N`) while a
 *   `/ws/pose` client subscribed before the start records every pose update (Form A) and every
 *   `high` fall alert; `--jobs` sessions at a time.
 * - oracle.ts: the same captures with the oracle for a model (the ground truth of every window as
 *   the model's outputs, bench/oracle.ts) through the service's own live pipeline in-process, its
 *   pose frames and alerts rendered as the WebSocket sends them: the same figures as
 *   `room.oracle.*`, the ceiling that tracking, activity and alert rules reach. Part of every run
 *   (cheap: no replay pacing, no process); `--no-oracle` skips it, `--oracle-only` runs only it.
 * - score.ts and report.ts: the figures and their 95 % intervals.
 *
 * `--speed N` replays at N times real time (default 10). The service must keep up: windows that
 * inference dropped and pose frames the WebSocket dropped are read back from the service; a session
 * that lost any is replayed at half the speed (down to 1x), and what is finally missing is printed
 * (`room.service.windows_seen`), never filled in.
 *
 * `--watch M` (minutes) adds one run of the default room exactly as `npm start` makes it (`sim`,
 * nothing scripted), watched for M minutes: its true falls come from the simulator's own ground
 * truth (the same stream, simulated apart at full speed), each `high` fall alert is matched to a
 * true fall starting within 1 s before to 5 s after its `fall_time`, once; every other one is a
 * false alarm. Names `live_room.watch.*`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { CsiSimulator } from '../src/sim/simulator.js';
import { argValue, printResults, type BenchResult } from './lib.js';
import { captureInWorker, type SessionCapture } from './room/capture.js';
import { FULL_ROOM_PLAN, planSessions, SMALL_ROOM_PLAN, type RoomBenchPlan, type SessionSpec } from './room/plan.js';
import { roomResults } from './room/report.js';
import { runOracleSession } from './room/oracle.js';
import { defaultRoomResults, runDefaultRoom } from './room/defaultRoom.js';
import { defaults } from '../src/config/schema.js';
import { resolveInstalled } from '../src/packageRoot.js';
import { PoseModel } from '../src/model/runtime.js';
import { scoreSession, type SessionScore } from './room/score.js';
import { complete, runSession } from './room/session.js';
import { startServe, stopServe, type ServeProcess } from './serve.js';

/** Default replay speed (x real time); a session the service does not keep up with is replayed at half the speed, down to MIN_SPEED. */
export const DEFAULT_SPEED = 10;
export const MIN_SPEED = 1;

/** Options of {@link runRoomBench}. */
export interface RoomBenchOptions {
  plan: RoomBenchPlan;
  speed: number;
  /** Sessions at a time (captures and replays). */
  jobs: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Keep the captures' folder (its path is logged). */
  keep?: boolean;
  /** Replay through the real service with the shipped model (default true). */
  model?: boolean;
  /**
   * The window model (v1 or v2) the service replays each session with: a session is recorded from
   * one link, which a v3 refiner cannot read (it fuses every link of the site). Default: the
   * shipped window model (`neural_network.submission_model_path`'s default).
   */
  modelPath?: string;
  /** Run the oracle on the same captures (default true). */
  oracle?: boolean;
}

/** What {@link runRoomBench} returns. */
export interface RoomBenchRun {
  sessions: SessionSpec[];
  /** The model's, through the real service (empty when `model` is false). */
  scores: SessionScore[];
  /** The oracle's (null when `oracle` is false). */
  oracleScores: SessionScore[] | null;
  /** `room.*` (the model) and `room.oracle.*`. */
  results: BenchResult[];
  /** Wall seconds: simulating and writing the captures, the oracle's pass, replaying them through the service. */
  wall: { capture: number; oracle: number; replay: number };
}

/** Runs `fn` over `items` with at most `jobs` at a time, results in item order. */
async function pool<T, R>(items: readonly T[], jobs: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker));
  return out;
}

/**
 * The live-room benchmark: simulates the plan's sessions, replays each through the real service
 * and scores what its subscriber saw; runs the oracle on the same captures.
 * @param o plan, speed, parallel jobs, which parts
 * @returns the sessions, their scores and the `room.*` and `room.oracle.*` results
 */
export async function runRoomBench(o: RoomBenchOptions): Promise<RoomBenchRun> {
  const log = o.log ?? (() => undefined);
  const withModel = o.model ?? true;
  const withOracle = o.oracle ?? true;
  if (!withModel && !withOracle) throw new Error('runRoomBench: neither the model nor the oracle to run');
  const sessions = planSessions(o.plan);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-room-captures-'));
  try {
    let t0 = Date.now();
    const caps: SessionCapture[] = await pool(sessions, o.jobs, async (s) => {
      const c = await captureInWorker(s, dir);
      log(
        `${s.id} ${s.room.name} ${s.people} people: ${c.truth.frames} frames, ${c.truth.falls.length} falls, ${c.truth.lieDowns} lie-downs, ${c.truth.sitDowns} sit-downs, ${c.truth.bends} bends`,
      );
      return c;
    });
    const capture = (Date.now() - t0) / 1000;
    t0 = Date.now();
    // Before the replays: the oracle's pass runs on this thread, which must be free to read the service's sockets.
    let oracleScores: SessionScore[] | null = null;
    if (withOracle) {
      oracleScores = [];
      for (const [i, s] of sessions.entries()) {
        const seen = await runOracleSession(s, caps[i]!);
        const sc = scoreSession(caps[i]!.truth, seen);
        log(
          `${s.id} oracle: ${sc.countRight}/${sc.framesScored} count right, ${sc.trackIds} ids, falls ${sc.fallsAlerted3s}/${sc.fallsScored} in 3 s, ` +
            `${sc.falseFallAlerts} false alerts, ${seen.received}/${caps[i]!.truth.windows} windows in ${seen.wallSeconds.toFixed(0)} s`,
        );
        oracleScores.push(sc);
      }
    }
    const oracle = (Date.now() - t0) / 1000;
    t0 = Date.now();
    const modelPath = o.modelPath ?? shippedWindowModel();
    const scores = await pool(withModel ? sessions : [], o.jobs, async (s, i) => {
      const windows = caps[i]!.truth.windows;
      let speed = o.speed;
      let seen = await runSession(s, caps[i]!, speed, log, { abortOnDrop: speed > MIN_SPEED, modelPath });
      // A service that fell behind dropped windows: replay slower until it keeps up.
      while (!complete(seen, windows) && speed > MIN_SPEED) {
        log(
          `${s.id}: ${seen.received} of ${windows} windows seen at ${speed}x (${seen.droppedWindows} dropped by inference, ${seen.wsDropped} by the WebSocket): again at ${speed / 2}x`,
        );
        speed = Math.max(MIN_SPEED, speed / 2);
        seen = await runSession(s, caps[i]!, speed, log, { abortOnDrop: speed > MIN_SPEED, modelPath });
      }
      const sc = scoreSession(caps[i]!.truth, seen);
      log(
        `${s.id} scored: ${sc.countRight}/${sc.framesScored} count right, ${sc.trackIds} ids, falls ${sc.fallsAlerted3s}/${sc.fallsScored} in 3 s, ` +
          `${sc.falseFallAlerts} false alerts, ${seen.received}/${caps[i]!.truth.windows} windows seen (${seen.droppedWindows} dropped by inference, ${seen.wsDropped} by the WebSocket) in ${seen.wallSeconds.toFixed(0)} s`,
      );
      return sc;
    });
    const replay = (Date.now() - t0) / 1000;
    const rooms = [...new Set(sessions.map((s) => `${s.room.name} ${s.room.recipe.room.width.toFixed(1)} x ${s.room.recipe.room.depth.toFixed(1)} m`))].join(
      ', ',
    );
    const base = o.plan.split === 'val' ? 'room.val' : 'room';
    const what = `${o.plan.split === 'val' ? 'VALIDATION (for choosing rules, not the reported scores): ' : ''}${sessions.length} sessions of ${o.plan.sessionMinutes} min in ${rooms}; people ${o.plan.people.join(', ')}; realism ${o.plan.realism}`;
    const results: BenchResult[] = [];
    if (withModel) {
      const context =
        `real csipose serve over /ws/pose, ${what}; ` +
        `replayed at ${[...new Set(scores.map((x) => x.service.speed))].sort((a, b) => b - a).join(' / ')}x, ${o.jobs} at a time; wall ${(capture + replay).toFixed(0)} s (simulate ${capture.toFixed(0)} s, replay ${replay.toFixed(0)} s)`;
      results.push(...roomResults(scores, context, { prefix: base }));
    }
    if (oracleScores) {
      const context =
        `the oracle (each window's ground truth as the model's outputs, bench/oracle.ts) through the service's live pipeline in-process on the same captures, ` +
        `rendered as /ws/pose sends them, ${what}; wall ${oracle.toFixed(0)} s`;
      results.push(...roomResults(oracleScores, context, { prefix: `${base}.oracle`, inProcess: true }));
    }
    return { sessions, scores, oracleScores, results, wall: { capture, oracle, replay } };
  } finally {
    if (o.keep) log(`captures kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// --watch: the default room as npm start makes it

const PASSWORD = 'bench-room-password-1';
/** A fall alert belongs to a true fall when its fall_time lies this close to it, s. */
const OWN_FALL = { before: 1, after: 5 };

/** Epoch ms of the service's `system running` log line (its own timestamp), read from its stderr. */
function runningSince(svc: ServeProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    svc.proc.stderr!.on('data', (c: Buffer) => {
      out = (out + c.toString()).slice(-20_000);
      const t = /^(\S+) info system running/m.exec(out)?.[1];
      if (t) resolve(Date.parse(t));
    });
    svc.proc.once('exit', (code) => reject(new Error(`csipose serve exited (${code}) before running:\n${out}`)));
  });
}

/**
 * When the default room's people fall: `fall_start` events of the simulator's ground truth, in
 * seconds from the stream's first sample, for the first `minutes` of the stream. The service's
 * source is the same simulator with the same defaults, so the same events happen at the same
 * offsets from its start.
 */
function trueFalls(minutes: number): number[] {
  const sim = new CsiSimulator({});
  const first = sim.next();
  const t0 = first.truth.time;
  const falls: number[] = [];
  const take = (events: readonly { type: string; time: number }[]): void => {
    for (const e of events) if (e.type === 'fall_start') falls.push((e.time - t0) / 1000);
  };
  take(first.truth.events);
  for (;;) {
    const s = sim.next();
    if (s.truth.time - t0 > minutes * 60_000) return falls;
    take(s.truth.events);
  }
}

interface WatchRun {
  minutes: number;
  trueFalls: number;
  alerted: number;
  within3s: number;
  falseAlerts: number;
  countRight: number;
  frames: number;
  trackIds: number;
  fallTimes: number[];
  alertTimes: number[];
}

/** The default room as `npm start` makes it, watched for `minutes` over /ws/pose (see the file comment). */
async function watchRoom(minutes: number): Promise<WatchRun> {
  const falls = trueFalls(minutes);
  const matched = new Set<number>();
  const out: WatchRun = {
    minutes,
    trueFalls: falls.length,
    alerted: 0,
    within3s: 0,
    falseAlerts: 0,
    countRight: 0,
    frames: 0,
    trackIds: 0,
    fallTimes: falls,
    alertTimes: [],
  };
  const ids = new Set<number>();
  const svc = await startServe(() => ['--source', 'sim'], { CSIPOSE_ADMIN_PASSWORD: PASSWORD }, 'csipose-watch-', 'pipe');
  try {
    const running = await runningSince(svc);
    const r = await fetch(`${svc.base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const token = ((await r.json()) as { data: { access_token: string } }).data.access_token;
    const ws = new WebSocket(`${svc.base.replace(/^http/, 'ws')}/ws/pose?token=${token}`);
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: false } }));
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'alerts', filters: { alert_types: ['fall_detection'], severity: ['high'] } }));
    });
    ws.on('message', (m) => {
      const o = JSON.parse(String(m)) as {
        type: string;
        timestamp: string;
        data?: { persons?: Array<{ person_id: number }>; metadata?: { fall_time?: number } };
      };
      const t = Date.parse(o.timestamp);
      if (o.type === 'pose_update') {
        const persons = o.data?.persons ?? [];
        out.frames++;
        // Nobody enters or leaves the default room: 2 people throughout.
        if (persons.length === 2) out.countRight++;
        for (const p of persons) ids.add(p.person_id);
      } else if (o.type === 'alert') {
        const ft = ((o.data?.metadata?.fall_time ?? t) - running) / 1000;
        out.alertTimes.push(ft);
        const i = falls.findIndex((f, k) => !matched.has(k) && ft >= f - OWN_FALL.before && ft <= f + OWN_FALL.after);
        if (i < 0) {
          out.falseAlerts++;
          return;
        }
        matched.add(i);
        out.alerted++;
        if ((t - running) / 1000 - falls[i]! <= 3) out.within3s++;
      }
    });
    await new Promise((res) => setTimeout(res, Math.max(0, running + minutes * 60_000 - Date.now())));
    ws.close();
  } finally {
    await stopServe(svc);
  }
  out.trackIds = ids.size;
  return out;
}

function watchResults(watch: WatchRun): BenchResult[] {
  const wnote = `the default room as npm start makes it (sim, 2 people, nothing scripted), watched ${watch.minutes} min over /ws/pose; true falls from the simulator's ground truth`;
  return [
    { name: 'live_room.watch.true_falls', value: watch.trueFalls, unit: 'falls', n: watch.trueFalls, note: wnote },
    {
      name: 'live_room.watch.falls_alerted',
      value: watch.alerted,
      unit: 'falls',
      n: watch.trueFalls,
      note: 'true falls with a high fall alert whose fall_time is within 1 s before to 5 s after the fall',
    },
    { name: 'live_room.watch.falls_within_3s', value: watch.within3s, unit: 'falls', n: watch.trueFalls, note: 'alert at most 3 s after the true fall began' },
    {
      name: 'live_room.watch.false_fall_alerts',
      value: watch.falseAlerts,
      unit: 'alerts',
      n: watch.alerted + watch.falseAlerts,
      note: 'high fall alerts matching no true fall',
    },
    {
      name: 'live_room.watch.false_fall_alerts_per_hour',
      value: (watch.falseAlerts * 60) / watch.minutes,
      unit: 'per hour',
      n: watch.alerted + watch.falseAlerts,
      note: wnote,
    },
    {
      name: 'live_room.watch.count_right_share',
      value: watch.frames ? watch.countRight / watch.frames : NaN,
      unit: 'fraction',
      n: watch.frames,
      note: 'pose frames reporting exactly the 2 people in the room',
    },
    { name: 'live_room.watch.track_ids', value: watch.trackIds, unit: 'ids', n: watch.frames, note: `distinct track ids for 2 people in ${watch.minutes} min` },
  ];
}

// ---------------------------------------------------------------------------------------------

/** The plan the command line asks for. */
function planFromArgs(): RoomBenchPlan {
  const small = process.argv.includes('--small');
  const base = small ? SMALL_ROOM_PLAN : FULL_ROOM_PLAN;
  const plan: RoomBenchPlan = { ...base };
  const hours = argValue('--hours');
  if (hours !== undefined) {
    const h = Number(hours);
    if (!(h > 0 && h <= 24)) throw new Error('--hours: simulated hours, more than 0 and at most 24');
    plan.hours = h;
    // Short runs get shorter sessions, so that every people count still gets one.
    plan.sessionMinutes = Math.min(FULL_ROOM_PLAN.sessionMinutes, Math.max(1, Math.round((h * 60) / 3)));
  }
  const split = argValue('--split');
  if (split !== undefined) {
    if (split !== 'test' && split !== 'val') throw new Error('--split: test or val');
    plan.split = split;
  }
  const realism = argValue('--realism');
  if (realism !== undefined) {
    if (realism !== 'room' && realism !== 'ideal') throw new Error('--realism: room or ideal');
    plan.realism = realism;
  }
  return plan;
}

/** The shipped window model the replays run by default (`neural_network.submission_model_path`'s default), resolved. */
function shippedWindowModel(): string {
  return resolveInstalled(defaults().neural_network.submission_model_path);
}

/**
 * The model the replays run (`--model`): a window model, as each session is recorded from one link,
 * which a v3 refiner cannot read (it fuses every link of the site).
 * @param path the model file; default the shipped window model (`neural_network.submission_model_path`'s default)
 * @returns its resolved path
 * @throws Error when it is a v3 refiner, naming `--default-room`, where a refiner is scored
 */
export async function replayModel(path?: string): Promise<string> {
  const modelPath = path === undefined ? shippedWindowModel() : resolveInstalled(path);
  const m = await PoseModel.load(modelPath, { thread: 'inline' });
  await m.release();
  if (m.contract === 3)
    throw new Error(
      `--model ${modelPath} is a v3 refiner: the sessions are replayed from one link, which it cannot read; score it in npm start's room with --default-room M --model PATH`,
    );
  return modelPath;
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const defaultRoom = argValue('--default-room');
  if (defaultRoom !== undefined) {
    // npm start's room in-process, alone (bench/room/defaultRoom.ts).
    const minutes = Number(defaultRoom);
    if (!(minutes > 0 && minutes <= 600)) throw new Error('--default-room: simulated minutes, more than 0 and at most 600');
    const model = resolveInstalled(argValue('--model') ?? defaults().neural_network.model_path);
    printResults(defaultRoomResults(await runDefaultRoom(model, minutes, argValue('--source'))), json);
    return;
  }
  const speed = argValue('--speed') === undefined ? DEFAULT_SPEED : Number(argValue('--speed'));
  if (!(speed > 0 && speed <= 1000)) throw new Error('--speed: replay speed, more than 0 and at most 1000');
  const jobs = argValue('--jobs') === undefined ? 2 : Number(argValue('--jobs'));
  if (!(Number.isInteger(jobs) && jobs >= 1 && jobs <= 16)) throw new Error('--jobs: 1 to 16');
  const watchMin = argValue('--watch') === undefined ? 0 : Number(argValue('--watch'));
  if (!(watchMin >= 0 && watchMin <= 600)) throw new Error('--watch: minutes between 0 and 600');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const noOracle = process.argv.includes('--no-oracle');
  const oracleOnly = process.argv.includes('--oracle-only');
  if (noOracle && oracleOnly) throw new Error('--no-oracle and --oracle-only: one or the other');
  const modelPath = oracleOnly ? undefined : await replayModel(argValue('--model'));
  const [run, watch] = await Promise.all([
    runRoomBench({ plan: planFromArgs(), speed, jobs, log, keep: process.argv.includes('--keep'), model: !oracleOnly, oracle: !noOracle, modelPath }),
    watchMin > 0 ? watchRoom(watchMin) : undefined,
  ]);
  if (!json) {
    const parts: Array<[string, SessionScore[]]> = [];
    if (run.scores.length) parts.push(['model', run.scores]);
    if (run.oracleScores) parts.push(['oracle', run.oracleScores]);
    for (const [who, scores] of parts) {
      process.stderr.write(
        `\n${who}:\n| session | room | people | count right | track ids | falls alerted in 3 s | false fall alerts | activity events / true | windows seen |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n`,
      );
      for (const s of scores) {
        process.stderr.write(
          `| ${s.id} | ${s.room} | ${s.people} | ${((100 * s.countRight) / s.framesScored).toFixed(1)} % | ${s.trackIds} | ${s.fallsAlerted3s} / ${s.fallsScored} | ${s.falseFallAlerts} | ${s.activityEvents} / ${s.trueActivityChanges} | ${s.service.received} / ${s.service.windows} |\n`,
        );
      }
    }
    if (watch) {
      const f = (v: number[]): string => v.map((x) => x.toFixed(1)).join(', ') || 'none';
      process.stderr.write(`watch: true falls at ${f(watch.fallTimes)} s; high fall alerts at ${f(watch.alertTimes)} s (fall_time, from the start)\n`);
    }
  }
  printResults([...run.results, ...(watch ? watchResults(watch) : [])], json);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`bench:room failed: ${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  });
}
