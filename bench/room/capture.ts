/**
 * A session simulated once: its CSI written as an Intel 5300 capture file (what a real card's
 * `log_to_file` would have recorded), its ground truth kept in memory, compactly, at the instants
 * the service reports: the last CSI frame of every window.
 *
 * The service replays the file (`file:PATH?speed=N`) and stamps each frame with the replay's start
 * plus its media time, which it takes from the record's device clock (`timestamp_low`, src/decoders/
 * replayClock.ts). `mediaOf` repeats that computation, so a pose frame's timestamp, less the
 * replay's start, names the CSI frame its window ended on.
 *
 * One link per session for now: a site of several receivers would write one file per link (the
 * service merges a source list in time order) and its windows would no longer be every HOP frames
 * of one file; `files` is a list for that day.
 */
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { encodeIntel5300 } from '../../src/encoders/intel5300.js';
import { HOP, WINDOW_FRAMES } from '../../src/model/features.js';
import { ACTIVITIES, type Activity } from '../../src/sim/scenario.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { ReplayClock } from '../../src/decoders/replayClock.js';
import type { LifeCounts } from './life.js';
import type { SessionSpec } from './plan.js';

/** True speed is the pelvis' floor displacement over this many seconds (as the speed study, training/ts/study/speed.ts). */
export const TRUE_SPEED_WINDOW_S = 1;
/** The replay clock's nominal rate where the device clock cannot be used, Hz (the file source's default). */
const NOMINAL_RATE_HZ = 100;

/** A session's ground truth at the end of every window (person slots are the simulator's person ids). */
export interface SessionTruth {
  id: string;
  room: string;
  people: number;
  /** Simulated seconds. */
  seconds: number;
  /** CSI frames written (packets received). */
  frames: number;
  /** Windows the pipeline cuts from them: window k ends on frame WINDOW_FRAMES - 1 + HOP k. */
  windows: number;
  /** Per window: media time of its last frame, ms from the first frame, as the replay computes it. */
  media: Float64Array;
  /** Per window: truth time of its last frame, ms from the first frame. */
  time: Float64Array;
  /** Per window: people in the room. */
  count: Uint8Array;
  /** Per window and person slot (windows x people): floor position (m), true speed (m/s), activity (ACTIVITIES index), present (1/0). */
  x: Float32Array;
  y: Float32Array;
  speed: Float32Array;
  activity: Uint8Array;
  present: Uint8Array;
  /** True fall starts, ms from the first frame (truth clock). */
  falls: Float64Array;
  /** Activity changes of the ground truth (every person, every change, falls' `falling` and `lying` included). */
  activityChanges: number;
  /** People coming in: ms from the first frame, the true count before and after (everyone present comes in at 0). */
  entries: Array<{ time: number; before: number; after: number }>;
  /** Hard negatives begun: deliberate lie-downs and sit-downs (truth), bends (scripted: the truth has no bend label). */
  lieDowns: number;
  sitDowns: number;
  bends: number;
  /** What the scripts planned. */
  planned: LifeCounts;
}

/** What {@link captureSession} wrote. */
export interface SessionCapture {
  /** One file per link; `link` is the link id (undefined for a one-link simulator). */
  files: Array<{ link: string | undefined; path: string }>;
  truth: SessionTruth;
}

/**
 * Simulates a session and writes its capture.
 * @param s the session
 * @param dir where the capture file goes
 * @returns the file and the ground truth
 */
export function captureSession(s: SessionSpec, dir: string): SessionCapture {
  const sim = new CsiSimulator(s.sim);
  const P = s.people;
  const total = Math.round(s.seconds * sim.rateHz);
  // Packets lost in the air never reach the file: there are at most `total` frames.
  const maxWindows = Math.max(0, Math.floor((total - WINDOW_FRAMES) / HOP) + 1);
  const media = new Float64Array(maxWindows);
  const time = new Float64Array(maxWindows);
  const count = new Uint8Array(maxWindows);
  const x = new Float32Array(maxWindows * P);
  const y = new Float32Array(maxWindows * P);
  const speed = new Float32Array(maxWindows * P);
  const activity = new Uint8Array(maxWindows * P);
  const present = new Uint8Array(maxWindows * P);
  const falls: number[] = [];
  const entries: Array<{ time: number; before: number; after: number }> = [];
  let activityChanges = 0;
  let lieDowns = 0;
  let sitDowns = 0;

  const path = join(dir, `${s.id}.dat`);
  const fd = openSync(path, 'w');
  const buf = Buffer.allocUnsafe(4 << 20);
  let used = 0;
  // The service's own replay clock, so that pose times map back to windows exactly.
  const clock = new ReplayClock(NOMINAL_RATE_HZ);
  // Floor positions of the last TRUE_SPEED_WINDOW_S per person: (t, x, y) rings.
  const rings: Array<Array<[number, number, number]>> = Array.from({ length: P }, () => []);
  const ids = new Map<number, number>();
  let t0 = NaN;
  let frames = 0;
  let windows = 0;
  let lastCount = 0;
  try {
    while (sim.packets < total) {
      const { frame, truth } = sim.next();
      if (sim.packets > total) break;
      if (Number.isNaN(t0)) t0 = truth.time;
      const rec = encodeIntel5300(frame);
      if (used + rec.length > buf.length) {
        writeSync(fd, buf, 0, used);
        used = 0;
      }
      buf.set(rec, used);
      used += rec.length;
      // timestamp_low as the record holds it (bytes 3-6: the body's first field, little-endian).
      const m = clock.advanceUs((rec[3]! | (rec[4]! << 8) | (rec[5]! << 16) | (rec[6]! << 24)) >>> 0);
      const t = truth.time - t0;
      for (const e of truth.events) {
        if (e.type === 'fall_start') falls.push(e.time - t0);
        if (e.type !== 'activity_change') continue;
        activityChanges++;
        if (e.activity === 'lying' || e.activity === 'sitting') {
          // A deliberate lie-down or sit-down, not the lying that ends a fall.
          const p = truth.persons.find((q) => q.id === e.personId);
          if (p && p.fallOnset === undefined) {
            if (e.activity === 'lying') lieDowns++;
            else sitDowns++;
          }
        }
      }
      if (truth.personCount !== lastCount) {
        if (truth.personCount > lastCount) entries.push({ time: t, before: lastCount, after: truth.personCount });
        lastCount = truth.personCount;
      }
      const speeds = new Map<number, number>();
      for (const p of truth.persons) {
        if (!ids.has(p.id)) ids.set(p.id, ids.size);
        const ring = rings[ids.get(p.id)!]!;
        ring.push([t, p.floor.x, p.floor.y]);
        while (ring.length > 2 && ring[1]![0] <= t - TRUE_SPEED_WINDOW_S * 1000) ring.shift();
        const [ft, fx, fy] = ring[0]!;
        speeds.set(p.id, t > ft ? Math.hypot(p.floor.x - fx, p.floor.y - fy) / ((t - ft) / 1000) : 0);
      }
      const f = frames++;
      if (f >= WINDOW_FRAMES - 1 && (f - (WINDOW_FRAMES - 1)) % HOP === 0) {
        const k = windows++;
        media[k] = m;
        time[k] = t;
        count[k] = truth.personCount;
        for (const p of truth.persons) {
          const i = k * P + ids.get(p.id)!;
          x[i] = p.floor.x;
          y[i] = p.floor.y;
          speed[i] = speeds.get(p.id)!;
          activity[i] = Math.max(0, ACTIVITIES.indexOf(p.activity as Activity));
          present[i] = 1;
        }
      }
    }
    if (used > 0) writeSync(fd, buf, 0, used);
  } finally {
    closeSync(fd);
  }
  const cut = <T extends Float64Array | Float32Array | Uint8Array>(a: T, n: number): T => a.slice(0, n) as T;
  return {
    files: [{ link: undefined, path }],
    truth: {
      id: s.id,
      room: s.room.name,
      people: P,
      seconds: s.seconds,
      frames,
      windows,
      media: cut(media, windows),
      time: cut(time, windows),
      count: cut(count, windows),
      x: cut(x, windows * P),
      y: cut(y, windows * P),
      speed: cut(speed, windows * P),
      activity: cut(activity, windows * P),
      present: cut(present, windows * P),
      falls: Float64Array.from(falls),
      activityChanges,
      entries,
      lieDowns,
      sitDowns,
      bends: s.planned.bends,
      planned: s.planned,
    },
  };
}

/**
 * Simulates a session in a worker thread when the compiled worker is there (`dist/`), else here.
 * @param s the session
 * @param dir where the capture goes
 * @returns the capture
 */
export async function captureInWorker(s: SessionSpec, dir: string): Promise<SessionCapture> {
  const url = new URL('./simWorker.js', import.meta.url);
  if (!existsSync(fileURLToPath(url))) return captureSession(s, dir);
  return new Promise((ok, fail) => {
    const w = new Worker(url, { workerData: { spec: s, dir } });
    w.once('message', (c: SessionCapture) => ok(c));
    w.once('error', fail);
    w.once('exit', (code) => {
      if (code !== 0) fail(new Error(`capture worker of ${s.id} exited with ${code}`));
    });
  });
}
