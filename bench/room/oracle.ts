/**
 * The live-room benchmark's oracle (`room.oracle.*`): the same sessions with a perfect pose model,
 * the ceiling that the tracker, activity rules and fall alert rules reach with these scripts.
 *
 * Per session, in-process and unpaced:
 * - the session's capture file is read as the service's file source reads it (`CaptureReader`
 *   with the Intel 5300 stream decoder, each frame stamped with the replay's start plus its media
 *   time, no link id: the primary link);
 * - the session's simulator runs again beside it (seeded: the same packets in the same order, as
 *   `captureSession` wrote them), so each frame comes with its full ground truth;
 * - both go through `runLive` (bench/accuracy/live.ts): the service's own live pipeline
 *   (`livePipeline`: links, sanitise, window, features, infer, track, activity, alerts) with the
 *   live parameters of the configuration the service would hold (defaults, then the room's
 *   `roomConfig` overlay, loaded by `ConfigStore` as `csipose serve --config` loads it) and the
 *   site's radios, the oracle runner (`liveOracle`, bench/oracle.ts) in place of the ONNX model:
 *   it answers each window with the ground truth of the window's last frame;
 * - each pose frame and its alerts are rendered as the WebSocket sends them to the benchmark's
 *   subscriber (`PoseFrameView` in Form A with the subscription's filters, `renderAlert` for the
 *   alerts that pass the alert filters), parsed as the subscriber parses them and put on the
 *   session's clock by the same `placeOnClock`, so that `scoreSession` scores them exactly as it
 *   scores the model's.
 * What differs from the model's run is the transport (no process, no socket, no pacing) and the
 * model: nothing is dropped (`runLive` feeds with back-pressure and fails on a dropped window).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigStore } from '../../src/config/store.js';
import { createStreamDecoder } from '../../src/decoders/index.js';
import { anonymize } from '../../src/pose/anonymize.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { renderAlert } from '../../src/render/events.js';
import { PoseFrameView, type FrameShape } from '../../src/render/view.js';
import { alertMatches, poseShape, readMessage, type AlertFilters } from '../../src/server/ws/protocol.js';
import { CsiSimulator, type SimSample } from '../../src/sim/simulator.js';
import { CaptureReader } from '../../src/sources/replayFile.js';
import { liveParams } from '../../pipelines/settings.js';
import { runLive } from '../accuracy/live.js';
import type { BenchStream, OpenStream } from '../accuracy/plan.js';
import { liveOracle } from '../oracle.js';
import type { SessionCapture } from './capture.js';
import { roomConfig } from './config.js';
import type { SessionSpec } from './plan.js';
import {
  ALERT_SUBSCRIPTION,
  POSE_SUBSCRIPTION,
  placeOnClock,
  receivedAlert,
  receivedPose,
  type ReceivedAlert,
  type ReceivedPose,
  type SessionSeen,
} from './session.js';

/** The subscription id the oracle's rendered messages carry (the scores never read it). */
const SUBSCRIPTION_ID = 'sub_oracle';

/** The pose shape and alert filters of the benchmark's subscriber, read by the service's own protocol reader. */
function subscriberFilters(): { shape: FrameShape; alerts: AlertFilters } {
  const pose = readMessage(POSE_SUBSCRIPTION);
  const alert = readMessage(ALERT_SUBSCRIPTION);
  if (pose.type !== 'subscribe' || pose.request.channel !== 'pose_updates') throw new Error('the pose subscription is not a pose_updates subscription');
  if (alert.type !== 'subscribe' || alert.request.channel !== 'alerts') throw new Error('the alert subscription is not an alerts subscription');
  return { shape: poseShape(pose.request.filters, 'a'), alerts: alert.request.filters };
}

/**
 * Runs one session's capture through the live pipeline with the oracle for a model and records
 * what a subscriber would have seen (see the module comment).
 * @param s the session
 * @param cap its capture (file and truth)
 * @returns what the subscriber saw, on the session's clock (`speed` 0: unpaced)
 * @throws Error when the capture and the re-run simulator disagree, or the pipeline drops a window
 */
export async function runOracleSession(s: SessionSpec, cap: SessionCapture): Promise<SessionSeen> {
  const truth = cap.truth;
  const file = cap.files[0]!.path;
  const dir = mkdtempSync(join(tmpdir(), `csipose-room-oracle-${s.id}-`));
  const t0 = Date.now();
  try {
    const cfgFile = join(dir, 'room.json');
    writeFileSync(cfgFile, JSON.stringify(roomConfig(s.room.recipe)));
    const c = (await ConfigStore.open({ dataDir: join(dir, 'data'), configFile: cfgFile })).get();

    const reader = new CaptureReader(file, () => createStreamDecoder('intel5300', { sourceId: `file:${file}`, environmentId: c.environment.id }));
    reader.open();
    const sim = new CsiSimulator(s.sim);
    const total = Math.round(s.seconds * sim.rateHz);
    // The replay's start, as the file source takes it at subscription.
    const start = Date.now();
    let fed = 0;
    let ended = false;
    const take = (): SimSample | null => {
      // captureSession's loop: the packets sent up to `total`, those received written in order.
      if (ended || sim.packets >= total) return null;
      const x = sim.next();
      if (sim.packets > total) {
        ended = true;
        return null;
      }
      const f = reader.next();
      if (!f) throw new Error(`${s.id}: the capture ends after ${fed} frames, the simulator goes on`);
      fed++;
      return { frame: reader.stamp(f, start + reader.media, undefined), truth: x.truth };
    };
    const open: OpenStream = { sim, people: s.people, frames: truth.frames, links: 1, primaryLink: null, take };
    // One link (`radios: null`): the recipe's receiver is the site's primary receiver (roomConfig),
    // and the oracle's skeletons are relative to it. The people are the session's scripts, given to
    // the simulator in `s.sim` (the oracle reads only the recipe's receiver).
    const stream: BenchStream = { recipe: s.room.recipe, script: null, intel5300: true, radios: null };
    const oracle = liveOracle();
    const index = oracle.observe(stream, open);

    const { shape, alerts: alertFilters } = subscriberFilters();
    const poses: ReceivedPose[] = [];
    const alerts: ReceivedAlert[] = [];
    const visit = (pose: PoseFrame): void => {
      // The service's publish: anonymised first when the configuration says so, then one view per frame.
      const frame = c.privacy.anonymize_data ? anonymize(pose) : pose;
      const view = new PoseFrameView(frame, 1, 'live');
      const text = view.json(shape, SUBSCRIPTION_ID, (body) => {
        const { timestamp, ...data } = body;
        return { type: 'pose_update', subscription_id: SUBSCRIPTION_ID, timestamp, data };
      });
      poses.push(receivedPose(JSON.parse(text) as Record<string, unknown>));
      for (const a of frame.alerts ?? []) {
        if (!alertMatches(a, alertFilters)) continue;
        alerts.push(
          receivedAlert(JSON.parse(JSON.stringify({ type: 'alert', subscription_id: SUBSCRIPTION_ID, ...renderAlert(a) })) as Record<string, unknown>),
        );
      }
    };
    try {
      await runLive([{ model: oracle, visit }], liveParams(c), open, c.environment.site.radios, undefined, index);
      if (reader.next()) throw new Error(`${s.id}: the capture holds more frames than the simulator sent`);
    } finally {
      reader.close();
    }
    if (fed !== truth.frames) throw new Error(`${s.id}: ${fed} frames fed, the capture's truth counts ${truth.frames}`);
    const seen = placeOnClock(truth, poses, alerts);
    return {
      id: s.id,
      ...seen,
      received: poses.length,
      droppedWindows: 0,
      wsDropped: 0,
      framesProcessed: fed,
      wallSeconds: (Date.now() - t0) / 1000,
      speed: 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
