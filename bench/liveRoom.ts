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
 * Names (DECISIONS "Benchmark output", more names welcome): `live_room.falls_within_3s`,
 * `live_room.falls_alerted`, `live_room.falls_scripted`, `live_room.fall_alert_delay_s` (mean over
 * alerted falls), `live_room.false_fall_alerts_per_min`, `live_room.count_changes_per_min`,
 * `live_room.track_ids_per_min`.
 */
import WebSocket from 'ws';
import { printResults, type BenchResult } from './lib.js';
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

async function runRoom(fallAt: number): Promise<RoomRun> {
  const svc = await startServe(() => ['--source', `sim?fall=${fallAt}`], { CSIPOSE_ADMIN_PASSWORD: PASSWORD }, 'csipose-room-', 'pipe');
  try {
    const running = await runningSince(svc);
    const r = await fetch(`${svc.base}/api/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: PASSWORD }) });
    const token = ((await r.json()) as { data: { access_token: string } }).data.access_token;
    const ws = new WebSocket(`${svc.base.replace(/^http/, 'ws')}/ws/pose?token=${token}`);
    const fall = running + fallAt * 1000;
    const run: RoomRun = { fallAt, delay: null, falseAlerts: 0, frames: 0, countChanges: 0, trackIds: 0, seconds: 0 };
    const ids = new Set<number>();
    let last = -1;
    let first = 0;
    let lastT = 0;
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: false } }));
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'alerts', filters: { alert_types: ['fall_detection'], severity: ['high'] } }));
    });
    ws.on('message', (m) => {
      const o = JSON.parse(String(m)) as { type: string; timestamp: string; data?: { persons?: Array<{ person_id: number }>; metadata?: { fall_time?: number } } };
      const t = Date.parse(o.timestamp);
      if (o.type === 'pose_update') {
        const persons = o.data?.persons ?? [];
        run.frames++;
        if (last >= 0 && persons.length !== last) run.countChanges++;
        last = persons.length;
        for (const p of persons) ids.add(p.person_id);
        first ||= t;
        lastT = t;
      } else if (o.type === 'alert') {
        const ft = o.data?.metadata?.fall_time ?? t;
        if (run.delay === null && ft >= fall - OWN_FALL.before * 1000 && ft <= fall + OWN_FALL.after * 1000) run.delay = (t - fall) / 1000;
        else run.falseAlerts++;
      }
    });
    await new Promise((r) => setTimeout(r, Math.max(0, fall + AFTER_S * 1000 - Date.now())));
    ws.close();
    run.trackIds = ids.size;
    run.seconds = (lastT - first) / 1000;
    return run;
  } finally {
    await stopServe(svc);
  }
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const at = process.argv.indexOf('--falls');
  const falls = at >= 0 ? process.argv[at + 1]!.split(',').map(Number) : [10, 15, 20, 25, 30, 35, 40, 45];
  if (falls.some((s) => !(s >= 5 && s <= 600))) throw new Error('--falls: seconds between 5 and 600, comma-separated');
  const runs = await Promise.all(falls.map((s) => runRoom(s)));
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
  printResults(out, json);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:room failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
