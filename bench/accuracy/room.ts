/**
 * The installer's part of the same-room setting: record calibration sessions in the room and
 * fine-tune the model under test for it with `calibrate` (`src/calibration/calibrate.ts`, what
 * `csipose calibrate` runs).
 *
 * Each session is simulated in the room with generated people, and written exactly as the
 * service's own `capture` sink writes a run of `sim?truth=1` (src/cli/sinks/index.ts): an Intel 5300
 * capture (`encodeIntel5300` per frame) and a labels JSON-lines file at 10 Hz whose keypoints are
 * the truth's pixels in the room's camera (the configured view) with score 1 where visible: what
 * a camera's pose detector would have written. The sink itself does the writing, so the benchmark
 * calibrates from the same files a user would have.
 */
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Observable, Subject } from 'rxjs';
import type { CsiSimulator } from '../../src/sim/simulator.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { viewSettings } from '../../src/pose/camera.js';
import { SINKS } from '../../src/cli/sinks/index.js';
import { truthToJson } from '../../src/sources/sim.js';
import { calibrate, type CalibrateResult, type CalibrationSession } from '../../src/calibration/calibrate.js';
import type { ProgressStream } from '../../src/calibration/progress.js';
import { recipeSite, type ScenarioRecipe } from '../../training/ts/recipe.js';
import { calibrateRoom as calibrateRefiner, type RoomCalibrationResult } from '../../src/calibration/roomCalibration.js';
import { recipeRadios, recipeSimulator, type RoomRecipes } from './plan.js';

/** Labels per second written with the captures (the capture sink's default). */
export const LABEL_HZ = 10;

/** One recorded session. */
export interface RecordedSession extends CalibrationSession {
  /** People placed. */
  people: number;
  seconds: number;
  frames: number;
}

const discard = () =>
  new Writable({
    write(_chunk, _enc, cb) {
      cb();
    },
  });

/**
 * Records one calibration session to `dir` (`<name>.dat` and `<name>.labels.jsonl`).
 * @param r the session's recipe (the room with its own seed and people)
 * @param dir where to write
 * @param name file stem
 * @returns the session as `calibrate` takes it
 */
export async function recordSession(r: ScenarioRecipe, dir: string, name: string): Promise<RecordedSession> {
  const { sim, people } = recipeSimulator(r);
  const frames = Math.round(r.seconds * sim.rateHz);
  const csi = join(dir, `${name}.dat`);
  const keypoints = join(dir, `${name}.labels.jsonl`);
  const source = new Observable<CsiFrame>((subscriber) => {
    for (let i = 0; i < frames && !subscriber.closed; i++) {
      const s = sim.next();
      subscriber.next({ ...s.frame, meta: { ...(s.frame.meta ?? {}), truth: truthToJson(s.truth) } });
    }
    subscriber.complete();
  });
  const sink = SINKS.get('capture');
  if (!sink) throw new Error('the capture sink is missing');
  await sink.run(source, { path: csi, labels: keypoints, label_hz: LABEL_HZ }, { stdout: discard(), stderr: discard() }).done;
  return { csi, format: 'intel5300', keypoints, people, seconds: r.seconds, frames };
}

/** A session of a site with several links, recorded as a receiver per capture file. */
export interface SiteRecording {
  /** The capture files as one source list (`file:PATH?format=intel5300&link=ID ...`): what `csipose calibrate --csi` and `csipose serve --source` take. */
  csi: string;
  /** The labels file (the primary link's capture clock), or '' when not written. */
  keypoints: string;
  /** Ticks simulated. */
  ticks: number;
}

/** Ticks simulated between two yields to the event loop while recording (the capture sinks write then). */
const RECORD_CHUNK = 200;

/**
 * Records `seconds` of a site simulator as an installer would: every receiver to its own Intel 5300
 * capture (`<name>-<link>.dat`, the `capture` sink), and, with `labels`, the camera's keypoints from
 * the ground truth beside the primary link's capture (`<name>.labels.jsonl`, 10 per second).
 * @param sim a simulator with `radios` (its frames carry `linkId`)
 * @param seconds how long
 * @param dir where to write
 * @param name file stem
 * @param labels whether to write the labels
 * @returns the source list and labels path
 */
export async function recordSiteSession(sim: CsiSimulator, seconds: number, dir: string, name: string, labels = true): Promise<SiteRecording> {
  const sink = SINKS.get('capture');
  if (!sink) throw new Error('the capture sink is missing');
  const ticks = Math.round(seconds * sim.rateHz);
  const subjects = new Map<string, Subject<CsiFrame>>();
  const runs: Promise<unknown>[] = [];
  const uris: string[] = [];
  const keypoints = labels ? join(dir, `${name}.labels.jsonl`) : '';
  let primary: string | undefined;
  for (let i = 0; i < ticks; i++) {
    const t = sim.nextTick();
    for (const f of t.frames) {
      const id = f.linkId ?? 'primary';
      primary ??= id;
      let sub = subjects.get(id);
      if (!sub) {
        sub = new Subject<CsiFrame>();
        subjects.set(id, sub);
        const path = join(dir, `${name}-${id}.dat`);
        uris.push(`file:${path}?format=intel5300${f.linkId !== undefined ? `&link=${f.linkId}` : ''}`);
        const params = { path, labels: id === primary ? keypoints : '', label_hz: LABEL_HZ };
        runs.push(sink.run(sub, params, { stdout: discard(), stderr: discard() }).done);
      }
      sub.next(id === primary && labels ? { ...f, meta: { ...(f.meta ?? {}), truth: truthToJson(t.truth) } } : f);
    }
    if (i % RECORD_CHUNK === RECORD_CHUNK - 1) await new Promise((r) => setImmediate(r));
  }
  for (const s of subjects.values()) s.complete();
  await Promise.all(runs);
  return { csi: uris.join(' '), keypoints, ticks };
}

/** What the calibration step did: a v2 model fine-tuned for the room. */
export interface Calibration {
  kind: 'fine-tune';
  sessions: RecordedSession[];
  result: CalibrateResult;
}

/** What the calibration step did for a v3 refiner: the room's front end calibrated. */
export interface RefinerCalibration {
  kind: 'front-end';
  /** Each recorded session: people, seconds and its captures (one per receiver). */
  sessions: Array<{ people: number; seconds: number; recording: SiteRecording }>;
  result: RoomCalibrationResult;
}

/**
 * Records the room's calibration sessions and calibrates the model under test for the room.
 * @param model the model file under test (a v2 ONNX file)
 * @param rooms the room and its calibration sessions
 * @param dir a temp dir for the captures and `room.onnx`
 * @param epochs calibration epochs (default calibrate's)
 * @param progress calibrate's progress stream
 * @param say progress lines of the benchmark
 * @returns the sessions and calibrate's result (`result.out` is the room model)
 */
export async function calibrateRoom(
  model: string,
  rooms: RoomRecipes,
  dir: string,
  epochs: number | undefined,
  progress: ProgressStream,
  say: (msg: string) => void,
): Promise<Calibration> {
  const sessions: RecordedSession[] = [];
  for (const [i, r] of rooms.calibration.entries()) {
    sessions.push(await recordSession(r, dir, `session${i + 1}`));
    say(`room: recorded calibration session ${i + 1}/${rooms.calibration.length}: ${sessions[i]!.people} people, ${r.seconds.toFixed(0)} s`);
  }
  const result = await calibrate({
    sessions: sessions.map(({ csi, format, keypoints }) => ({ csi, format, keypoints })),
    model,
    out: join(dir, 'room.onnx'),
    view: viewSettings(rooms.room.camera),
    site: recipeSite(rooms.room),
    siteKnown: true,
    ...(epochs !== undefined ? { epochs } : {}),
    seed: 1,
    progress,
  });
  return { kind: 'fine-tune', sessions, result };
}

/**
 * Records the room's calibration sessions on its whole site (1 TX + 3 RX, each receiver to its own
 * Intel 5300 capture) and calibrates a v3 refiner's front end for the room (`csipose calibrate`'s
 * v3 path): the session without people is the empty-room recording, the others give the chain
 * phases from their one-person windows.
 * @param model the refiner under test
 * @param rooms the room and its calibration sessions
 * @param dir a temp dir for the captures and `room.onnx`
 * @param progress calibrate's progress stream
 * @param say progress lines of the benchmark
 * @returns the sessions and the calibration (`result.out` is the room model)
 */
export async function calibrateRefinerRoom(
  model: string,
  rooms: RoomRecipes,
  dir: string,
  progress: ProgressStream,
  say: (msg: string) => void,
): Promise<RefinerCalibration> {
  const radios = recipeRadios(rooms.room);
  const sessions: RefinerCalibration['sessions'] = [];
  for (const [i, r] of rooms.calibration.entries()) {
    const { sim, people } = recipeSimulator(r, radios);
    const recording = await recordSiteSession(sim, r.seconds, dir, `session${i + 1}`, people > 0);
    sessions.push({ people, seconds: r.seconds, recording });
    say(
      `room: recorded calibration session ${i + 1}/${rooms.calibration.length} on ${radios.length - 1} receivers: ${people} people, ${r.seconds.toFixed(0)} s`,
    );
  }
  const empty = sessions.find((x) => x.people === 0);
  const result = await calibrateRefiner({
    model,
    out: join(dir, 'room.onnx'),
    ...(empty ? { empty: empty.recording.csi } : {}),
    sessions: sessions.filter((x) => x.people > 0).map((x) => ({ csi: x.recording.csi, keypoints: x.recording.keypoints })),
    view: viewSettings(rooms.room.camera),
    radios,
    room: { width: rooms.room.room.width, depth: rooms.room.room.depth },
    progress,
  });
  return { kind: 'front-end', sessions, result };
}
