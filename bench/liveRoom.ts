/**
 * `npm run bench:room [-- --json] [-- --falls 10,20,30]`: the default room as a subscriber sees it.
 *
 * For each scripted fall time S (default 10, 15, ..., 45 s) the real service runs in its own
 * process (`csipose serve --port 0 --source "sim?fall=S"`, the embedded defaults and the shipped
 * model), and a `/ws/pose` client subscribed to `pose_updates` and `alerts` records, for S + 14 s:
 * - the reported count of every frame (changes per minute; nobody enters or leaves the room),
 * - the distinct track ids,
 * - every `high` fall alert: the one whose `fall_time` lies in [S - 1, S + 5] s is the scripted
 *   fall's, its delay measured from S; the others are false alarms.
 * S counts from the service's `system running` log line, when the simulated source starts (to
 * about 0.1 s). The runs go in parallel (each paced by the simulator's clock, not by the CPU).
 *
 * `--watch M` (minutes) adds one run of the default room exactly as `npm start` makes it (`sim`,
 * nothing scripted), watched for M minutes: its true falls come from the simulator's own ground
 * truth (the same stream, simulated apart at full speed), each `high` fall alert is matched to a
 * true fall starting within 1 s before to 5 s after its `fall_time`, once; every other one is a
 * false alarm. That is the false-alarm rate a subscriber lives with.
 *
 * Names (DECISIONS "Benchmark output", more names welcome): `live_room.falls_within_3s`,
 * `live_room.falls_alerted`, `live_room.falls_scripted`, `live_room.fall_alert_delay_s` (mean over
 * alerted falls), `live_room.false_fall_alerts_per_min`, `live_room.count_changes_per_min`,
 * `live_room.track_ids_per_min`.
 */
import WebSocket from 'ws';
import { CsiSimulator } from '../src/sim/simulator.js';
import { argValue, printResults, type BenchResult } from './lib.js';
import { startServe, stopServe, type ServeProcess } from './serve.js';

const PASSWORD = 'bench-room-password-1';
/** Observation after the scripted fall, s. */
const AFTER_S = 14;
/** A fall alert belongs to the scripted fall when its fall_time lies this close to it, s. */
const OWN_FALL = { before: 1, after: 5 };

interface RoomRun {
  fallAt: number;
  /** Seconds from the scripted fall to its high alert; null when none came. */
  delay: number | null;
  falseAlerts: number;
  frames: number;
  countChanges: number;
  trackIds: number;
  seconds: number;
}

/** Epoch ms of the service's `system running` log line (its own timestamp), read from its stderr. */
function runningSince(svc: ServeProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    svc.proc.stderr!.on('data', (c: Buffer) => {
      out += c.toString();
      const t = /^(\S+) info system running/m.exec(out)?.[1];
      if (t) resolve(Date.parse(t));
    });
    svc.proc.once('exit', (code) => reject(new Error(`csipose serve exited (${code}) before running:\n${out}`)));
  });
}

/** A message of /ws/pose as the room runs read it. */
interface RoomMessage {
  type: string;
  /** Its `timestamp`, epoch ms. */
  t: number;
  persons: Array<{ person_id: number }>;
  /** A fall alert's `fall_time` (epoch ms), else `t`. */
  fallTime: number;
}

/**
 * Runs `csipose serve --source SOURCE` (the embedded defaults and the shipped model) and reads it
 * as a subscriber: pose updates without keypoints and `high` fall alerts over /ws/pose, each handed
 * to `on` with the epoch ms at which the system started running, until `seconds` after that.
 */
async function watchServe(source: string, prefix: string, seconds: number, on: (m: RoomMessage, running: number) => void): Promise<number> {
  const svc = await startServe(() => ['--source', source], { CSIPOSE_ADMIN_PASSWORD: PASSWORD }, prefix, 'pipe');
  try {
    const running = await runningSince(svc);
    const r = await fetch(`${svc.base}/api/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: PASSWORD }) });
    const token = ((await r.json()) as { data: { access_token: string } }).data.access_token;
    const ws = new WebSocket(`${svc.base.replace(/^http/, 'ws')}/ws/pose?token=${token}`);
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: false } }));
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'alerts', filters: { alert_types: ['fall_detection'], severity: ['high'] } }));
    });
    ws.on('message', (m) => {
      const o = JSON.parse(String(m)) as { type: string; timestamp: string; data?: { persons?: Array<{ person_id: number }>; metadata?: { fall_time?: number } } };
      const t = Date.parse(o.timestamp);
      on({ type: o.type, t, persons: o.data?.persons ?? [], fallTime: o.data?.metadata?.fall_time ?? t }, running);
    });
    await new Promise((res) => setTimeout(res, Math.max(0, running + seconds * 1000 - Date.now())));
    ws.close();
    return running;
  } finally {
    await stopServe(svc);
  }
}

async function runRoom(fallAt: number): Promise<RoomRun> {
  const run: RoomRun = { fallAt, delay: null, falseAlerts: 0, frames: 0, countChanges: 0, trackIds: 0, seconds: 0 };
  const ids = new Set<number>();
  let last = -1;
  let first = 0;
  let lastT = 0;
  await watchServe(`sim?fall=${fallAt}`, 'csipose-room-', fallAt + AFTER_S, (m, running) => {
    const fall = running + fallAt * 1000;
    if (m.type === 'pose_update') {
      run.frames++;
      if (last >= 0 && m.persons.length !== last) run.countChanges++;
      last = m.persons.length;
      for (const p of m.persons) ids.add(p.person_id);
      first ||= m.t;
      lastT = m.t;
    } else if (m.type === 'alert') {
      if (run.delay === null && m.fallTime >= fall - OWN_FALL.before * 1000 && m.fallTime <= fall + OWN_FALL.after * 1000) run.delay = (m.t - fall) / 1000;
      else run.falseAlerts++;
    }
  });
  run.trackIds = ids.size;
  run.seconds = (lastT - first) / 1000;
  return run;
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
  /** Seconds from the start: the true falls, and the fall_time of every high fall alert. */
  fallTimes: number[];
  alertTimes: number[];
}

/** The default room as `npm start` makes it, watched for `minutes` over /ws/pose (see the file comment). */
async function watchRoom(minutes: number): Promise<WatchRun> {
  const falls = trueFalls(minutes);
  const matched = new Set<number>();
  const out: WatchRun = { minutes, trueFalls: falls.length, alerted: 0, within3s: 0, falseAlerts: 0, countRight: 0, frames: 0, trackIds: 0, fallTimes: falls, alertTimes: [] };
  const ids = new Set<number>();
  await watchServe('sim', 'csipose-watch-', minutes * 60, (m, running) => {
    if (m.type === 'pose_update') {
      out.frames++;
      // Nobody enters or leaves the default room: 2 people throughout.
      if (m.persons.length === 2) out.countRight++;
      for (const p of m.persons) ids.add(p.person_id);
    } else if (m.type === 'alert') {
      const ft = (m.fallTime - running) / 1000;
      out.alertTimes.push(ft);
      const i = falls.findIndex((f, k) => !matched.has(k) && ft >= f - OWN_FALL.before && ft <= f + OWN_FALL.after);
      if (i < 0) {
        out.falseAlerts++;
        return;
      }
      matched.add(i);
      out.alerted++;
      if ((m.t - running) / 1000 - falls[i]! <= 3) out.within3s++;
    }
  });
  out.trackIds = ids.size;
  return out;
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const at = process.argv.indexOf('--falls');
  const falls = at >= 0 ? process.argv[at + 1]!.split(',').map(Number) : [10, 15, 20, 25, 30, 35, 40, 45];
  if (falls.some((s) => !(s >= 5 && s <= 600))) throw new Error('--falls: seconds between 5 and 600, comma-separated');
  const watchMin = argValue('--watch') === undefined ? 0 : Number(argValue('--watch'));
  if (!(watchMin >= 0 && watchMin <= 600)) throw new Error('--watch: minutes between 0 and 600');
  const [runs, watch] = await Promise.all([Promise.all(falls.map((s) => runRoom(s))), watchMin > 0 ? watchRoom(watchMin) : undefined]);
  if (!json) {
    process.stderr.write('| fall at s | alert after s | false fall alerts | count changes | track ids | frames |\n|---:|---:|---:|---:|---:|---:|\n');
    for (const r of runs) process.stderr.write(`| ${r.fallAt} | ${r.delay === null ? 'none' : r.delay.toFixed(2)} | ${r.falseAlerts} | ${r.countChanges} | ${r.trackIds} | ${r.frames} |\n`);
  }
  const minutes = runs.reduce((a, r) => a + r.seconds, 0) / 60;
  const alerted = runs.filter((r) => r.delay !== null);
  const note = `the default room (sim, 2 people), ${runs.length} runs with the fall at ${falls.join(', ')} s, each watched to 14 s after it over /ws/pose`;
  const out: BenchResult[] = [
    { name: 'live_room.falls_scripted', value: runs.length, unit: 'falls', n: runs.length, note },
    { name: 'live_room.falls_alerted', value: alerted.length, unit: 'falls', n: runs.length, note: 'a high fall alert whose fall_time is within 1 s before to 5 s after the scripted fall' },
    { name: 'live_room.falls_within_3s', value: alerted.filter((r) => r.delay! <= 3).length, unit: 'falls', n: runs.length, note: 'alert at most 3 s after the fall began (issue 11)' },
    { name: 'live_room.fall_alert_delay_s', value: alerted.length ? alerted.reduce((a, r) => a + r.delay!, 0) / alerted.length : NaN, unit: 's', n: alerted.length, note: 'mean over alerted falls, from the scripted fall' },
    { name: 'live_room.false_fall_alerts_per_min', value: runs.reduce((a, r) => a + r.falseAlerts, 0) / minutes, unit: 'per min', n: runs.length, note: `${runs.reduce((a, r) => a + r.falseAlerts, 0)} other high fall alerts in ${minutes.toFixed(1)} min` },
    { name: 'live_room.count_changes_per_min', value: runs.reduce((a, r) => a + r.countChanges, 0) / minutes, unit: 'per min', n: runs.reduce((a, r) => a + r.frames, 0), note: 'the room always holds 2 people' },
    { name: 'live_room.track_ids_per_min', value: runs.reduce((a, r) => a + r.trackIds, 0) / minutes, unit: 'per min', n: runs.length, note: 'distinct track ids seen, per minute of stream' },
  ];
  if (watch && !json) {
    const s = (v: number[]): string => v.map((x) => x.toFixed(1)).join(', ') || 'none';
    process.stderr.write(`watch: true falls at ${s(watch.fallTimes)} s; high fall alerts at ${s(watch.alertTimes)} s (fall_time, from the start)\n`);
  }
  if (watch) {
    const wnote = `the default room as npm start makes it (sim, 2 people, nothing scripted), watched ${watch.minutes} min over /ws/pose; true falls from the simulator's ground truth`;
    out.push(
      { name: 'live_room.watch.true_falls', value: watch.trueFalls, unit: 'falls', n: watch.trueFalls, note: wnote },
      { name: 'live_room.watch.falls_alerted', value: watch.alerted, unit: 'falls', n: watch.trueFalls, note: 'true falls with a high fall alert whose fall_time is within 1 s before to 5 s after the fall' },
      { name: 'live_room.watch.falls_within_3s', value: watch.within3s, unit: 'falls', n: watch.trueFalls, note: 'alert at most 3 s after the true fall began' },
      { name: 'live_room.watch.false_fall_alerts', value: watch.falseAlerts, unit: 'alerts', n: watch.alerted + watch.falseAlerts, note: 'high fall alerts matching no true fall' },
      { name: 'live_room.watch.false_fall_alerts_per_hour', value: (watch.falseAlerts * 60) / watch.minutes, unit: 'per hour', n: watch.alerted + watch.falseAlerts, note: wnote },
      { name: 'live_room.watch.count_right_share', value: watch.frames ? watch.countRight / watch.frames : NaN, unit: 'fraction', n: watch.frames, note: 'pose frames reporting exactly the 2 people in the room' },
      { name: 'live_room.watch.track_ids', value: watch.trackIds, unit: 'ids', n: watch.frames, note: `distinct track ids for 2 people in ${watch.minutes} min` },
    );
  }
  printResults(out, json);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:room failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
