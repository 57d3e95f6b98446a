/**
 * One session through the real service: `csipose serve` (its own process, the shipped model, the
 * room's configuration) replays the session's capture (`file:PATH?speed=N`) while a `/ws/pose`
 * client, subscribed before the system starts, records every pose update (Form A: track ids,
 * floor positions, velocities, activities) and every `high` fall alert.
 *
 * What the client saw is put on the session's own clock: a pose frame's `timestamp` is the replay's
 * start plus the media time of its window's last CSI frame; the start is found from the first
 * frames (`replayStart`), and each frame and alert is then the window whose media time its
 * timestamp names (within 2 ms). The service may drop windows (inference
 * falling behind: `dropped_windows` in `/system/status`) and pose frames for a slow WebSocket
 * client (`pose_frames_dropped` in `/health/detailed`); both are read back and reported, and a
 * window the client never saw is missing from the scores, never invented.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startServe, stopServe } from '../serve.js';
import type { SessionCapture, SessionTruth } from './capture.js';
import { roomConfig } from './config.js';
import type { SessionSpec } from './plan.js';

const PASSWORD = 'bench-room-password-1';

/** What the benchmark's subscriber asks for (the same subscriptions for the oracle, bench/room/oracle.ts): every pose update without keypoints ... */
export const POSE_SUBSCRIPTION = { type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: false } } as const;
/** ... and every `high` fall alert. */
export const ALERT_SUBSCRIPTION = { type: 'subscribe', channel: 'alerts', filters: { alert_types: ['fall_detection'], severity: ['high'] } } as const;

/** One reported person, as the scores need it. */
export interface SeenPerson {
  track: number;
  x: number;
  y: number;
  /** |velocity|, m/s. */
  speed: number;
  activity: string | undefined;
}

/** What the subscriber saw of a session, on the session's clock. */
export interface SessionSeen {
  id: string;
  /** Per window index (the truth's), the persons reported; undefined where no pose frame came. */
  frames: Array<SeenPerson[] | undefined>;
  /** High fall alerts: the window each was raised at, and the window of its `fall_time`. */
  alerts: Array<{ window: number; fallWindow: number }>;
  /** Pose updates received. */
  received: number;
  /** Received pose updates and alerts whose timestamp named no window. */
  unmapped: number;
  /** Windows inference dropped (`/system/status`), pose frames dropped for this client (`/health/detailed`). */
  droppedWindows: number;
  wsDropped: number;
  /** CSI frames the service processed, of `truth.frames`. */
  framesProcessed: number;
  /** Wall seconds from the system start to the last pose frame. */
  wallSeconds: number;
  /** The replay speed it ran at. */
  speed: number;
}

/** Whether the subscriber saw every window of the session: nothing dropped, nothing unplaced. */
export function complete(seen: SessionSeen, windows: number): boolean {
  return seen.received === windows && seen.droppedWindows === 0 && seen.wsDropped === 0 && seen.unmapped === 0;
}

export interface Json {
  [k: string]: unknown;
}

/** The window whose media time is `ms` (within 2 ms), by binary search; -1 when none. */
export function windowAt(media: Float64Array, ms: number): number {
  let lo = 0;
  let hi = media.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (media[mid]! < ms) lo = mid + 1;
    else hi = mid;
  }
  let best = lo;
  if (lo > 0 && Math.abs(media[lo - 1]! - ms) < Math.abs(media[lo]! - ms)) best = lo - 1;
  return Math.abs(media[best]! - ms) <= 2 ? best : -1;
}

/**
 * Runs one session through `csipose serve` and records what a subscriber sees.
 * @param s the session
 * @param cap its capture (file and truth)
 * @param speed replay speed (1 = real time)
 * @param log progress lines (stderr)
 * @param opts `abortOnDrop`: stop as soon as inference drops a window (the caller replays slower)
 * @returns what the client saw, on the session's clock
 */
export async function runSession(
  s: SessionSpec,
  cap: SessionCapture,
  speed: number,
  log: (line: string) => void = () => undefined,
  opts: { abortOnDrop?: boolean; modelPath?: string } = {},
): Promise<SessionSeen> {
  const truth = cap.truth;
  const file = cap.files[0]!.path;
  const svc = await startServe(
    (dir) => {
      const cfg = join(dir, 'room.json');
      writeFileSync(cfg, JSON.stringify(roomConfig(s.room.recipe, opts.modelPath)));
      return ['--config', cfg, '--source', `file:${file}?format=intel5300&speed=${speed}`, '--no-autostart', '--no-dashboard', '--log-level', 'warn'];
    },
    { CSIPOSE_ADMIN_PASSWORD: PASSWORD },
    `csipose-room-${s.id}-`,
    'pipe',
  );
  let stderr = '';
  svc.proc.stderr!.on('data', (c: Buffer) => {
    // Keep the tail only: the pipe must be read, or a chatty service would block on it.
    stderr = (stderr + c.toString()).slice(-20_000);
  });
  try {
    const r = await fetch(`${svc.base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const token = ((await r.json()) as { data: { access_token: string } }).data.access_token;
    const auth = { authorization: `Bearer ${token}` };
    const getJson = async (path: string): Promise<Json> => (await (await fetch(`${svc.base}/api/v1${path}`, { headers: auth })).json()) as Json;

    const poses: ReceivedPose[] = [];
    const alerts: ReceivedAlert[] = [];
    const ws = new WebSocket(`${svc.base.replace(/^http/, 'ws')}/ws/pose?token=${token}&form=a`);
    // When the last pose update or alert came (status pushes do not count).
    let lastMessage = Date.now();
    let confirmed = 0;
    const subscribed = new Promise<void>((ok, fail) => {
      ws.on('error', fail);
      ws.on('message', (m) => {
        const o = JSON.parse(String(m)) as Json;
        if (o.type === 'pose_update' || o.type === 'alert') lastMessage = Date.now();
        if (o.type === 'subscription_confirmed' && ++confirmed === 2) ok();
        else if (o.type === 'pose_update') poses.push(receivedPose(o));
        else if (o.type === 'alert') alerts.push(receivedAlert(o));
        else if (o.type === 'error') fail(new Error(`ws error: ${JSON.stringify(o)}`));
      });
    });
    await new Promise<void>((ok, fail) => {
      ws.once('open', () => ok());
      ws.once('error', fail);
    });
    ws.send(JSON.stringify(POSE_SUBSCRIPTION));
    ws.send(JSON.stringify(ALERT_SUBSCRIPTION));
    await subscribed;
    const started = Date.now();
    const st = await fetch(`${svc.base}/api/v1/system/start`, { method: 'POST', headers: auth });
    if (!st.ok) throw new Error(`system/start: ${st.status} ${await st.text()}`);

    // Done when the last window came, or when the service has read every frame and then nothing
    // more arrives for 3 s (the last windows dropped), or at a generous deadline. (When its file
    // ends the service's system goes to `error`: the source is gone.)
    lastMessage = Date.now();
    const deadline = started + ((truth.seconds / speed) * 3 + 120) * 1000;
    for (;;) {
      await new Promise((res) => setTimeout(res, 1000));
      if (poses.length > 0 && poses[poses.length - 1]!.id >= truth.windows - 1) break;
      const status = await getJson('/system/status');
      const processed = num((status.data as Json | undefined)?.performance, 'frames_processed');
      if (processed >= truth.frames && Date.now() - lastMessage > 3000) break;
      if (opts.abortOnDrop && num(((status.data as Json | undefined)?.components as Json | undefined)?.neural_network, 'dropped_windows') > 0) {
        log(`${s.id}: inference dropped windows at ${speed}x: stopped early`);
        break;
      }
      if (Date.now() > deadline) {
        log(`${s.id}: deadline passed with ${poses.length} of ${truth.windows} pose frames`);
        break;
      }
    }
    const wallSeconds = (lastMessage - started) / 1000;
    await new Promise((res) => setTimeout(res, 300));
    ws.close();
    const status = (await getJson('/system/status')).data as Json;
    const health = (await getJson('/health/detailed')).data as Json;
    const seen = placeOnClock(truth, poses, alerts);
    return {
      id: s.id,
      ...seen,
      received: poses.length,
      droppedWindows: num((status.components as Json | undefined)?.neural_network, 'dropped_windows'),
      wsDropped: findNumber(health, 'pose_frames_dropped'),
      framesProcessed: num(status.performance, 'frames_processed'),
      wallSeconds,
      speed,
    };
  } catch (e) {
    throw new Error(`session ${s.id}: ${(e as Error).message}\n${stderr.slice(-3000)}`);
  } finally {
    await stopServe(svc);
  }
}

function num(o: unknown, key: string): number {
  const v = (o as Json | undefined)?.[key];
  return typeof v === 'number' ? v : NaN;
}

/** The first number under `key` anywhere in a JSON tree (the health document nests it). */
function findNumber(o: unknown, key: string): number {
  if (o === null || typeof o !== 'object') return NaN;
  for (const [k, v] of Object.entries(o as Json)) {
    if (k === key && typeof v === 'number') return v;
    const inner = findNumber(v, key);
    if (!Number.isNaN(inner)) return inner;
  }
  return NaN;
}

/** A received `pose_update` (Form A): its timestamp (epoch ms), frame_id and persons. */
export interface ReceivedPose {
  t: number;
  id: number;
  persons: SeenPerson[];
}

/** A received `alert`: its timestamp and its `metadata.fall_time` (epoch ms; the timestamp when absent). */
export interface ReceivedAlert {
  t: number;
  fallTime: number;
}

/**
 * A `pose_update` message (Form A, parsed) as the scores take it.
 * @param o the message
 * @returns its time, frame id and persons
 */
export function receivedPose(o: Json): ReceivedPose {
  const d = o.data as { frame_id: number; persons: Json[] };
  return { t: Date.parse(o.timestamp as string), id: d.frame_id, persons: d.persons.map(person) };
}

/**
 * An `alert` message (parsed) as the scores take it.
 * @param o the message
 * @returns its time and the time of the fall it reports
 */
export function receivedAlert(o: Json): ReceivedAlert {
  const meta = ((o.data as Json)?.metadata ?? {}) as { fall_time?: number };
  const t = Date.parse(o.timestamp as string);
  return { t, fallTime: meta.fall_time ?? t };
}

/** A Form A person as the scores need it. */
function person(p: Json): SeenPerson {
  const ti = (p.tracking_info ?? {}) as { track_id?: string; velocity?: { x: number; y: number } };
  const loc = (p.location ?? { x: NaN, y: NaN }) as { x: number; y: number };
  const v = ti.velocity ?? { x: NaN, y: NaN };
  return { track: Number(ti.track_id ?? p.id), x: loc.x, y: loc.y, speed: Math.hypot(v.x, v.y), activity: p.activity as string | undefined };
}

/** Pose frames {@link replayStart} checks a candidate start against. */
const START_PROBES = 64;

/**
 * When the service's replay started (epoch ms): the start at which the first received pose frames'
 * timestamps are media times of windows. The first frame's window is its `frame_id` when the
 * service dropped no window before it, else a later one; each candidate is tried on the first
 * {@link START_PROBES} frames and the one that places most of them wins (the earliest on a tie).
 * The windows' media times are irregular (packets lost in bursts never reach the capture), so a
 * wrong candidate places few.
 * @param media per window its media time, ms
 * @param poses received pose frames in arrival order: timestamp (epoch ms) and frame_id
 * @returns the start, epoch ms; NaN without pose frames
 */
export function replayStart(media: Float64Array, poses: ReadonlyArray<{ t: number; id: number }>): number {
  if (poses.length === 0 || media.length === 0) return NaN;
  const first = poses[0]!;
  const probes = poses.slice(0, START_PROBES);
  let best = NaN;
  let bestHits = -1;
  for (let k = Math.max(0, Math.min(first.id, media.length - 1)); k < media.length; k++) {
    const start = first.t - media[k]!;
    let hits = 0;
    for (const p of probes) if (windowAt(media, p.t - start) >= 0) hits++;
    if (hits > bestHits) {
      best = start;
      bestHits = hits;
      if (hits === probes.length) break;
    }
  }
  return best;
}

/**
 * Puts received pose frames and alerts on the session's clock (see the module comment).
 * @param truth the session's truth (window media times)
 * @param poses received pose frames: timestamp (epoch ms), frame_id, persons
 * @param alerts received alerts: timestamp and fall_time (epoch ms)
 * @returns persons per window, alerts by window, and how many named no window
 */
export function placeOnClock(
  truth: Pick<SessionTruth, 'media' | 'windows'>,
  poses: readonly ReceivedPose[],
  alerts: readonly ReceivedAlert[],
): Pick<SessionSeen, 'frames' | 'alerts' | 'unmapped'> {
  const start = replayStart(truth.media, poses);
  const frames: Array<SeenPerson[] | undefined> = new Array(truth.windows).fill(undefined);
  let unmapped = 0;
  for (const p of poses) {
    const k = windowAt(truth.media, p.t - start);
    if (k < 0) unmapped++;
    else frames[k] = p.persons;
  }
  const out: SessionSeen['alerts'] = [];
  for (const a of alerts) {
    const k = windowAt(truth.media, a.t - start);
    if (k < 0) {
      unmapped++;
      continue;
    }
    const f = windowAt(truth.media, a.fallTime - start);
    out.push({ window: k, fallWindow: f < 0 ? k : f });
  }
  return { frames, alerts: out, unmapped };
}
