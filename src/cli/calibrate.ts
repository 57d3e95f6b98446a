import { Command, InvalidArgumentError, Option } from 'commander';
import { resolveInstalled } from '../packageRoot.js';
import { ConfigStore } from '../config/store.js';
import { primaryLinkRadios } from '../config/site.js';
import type { CaptureFormat } from '../decoders/registry.js';
import { CAPTURE_FORMATS, isCaptureFormat } from '../decoders/index.js';

/**
 * `csipose calibrate --csi CAPTURE --keypoints LABELS.jsonl [--csi ... --keypoints ...] --out room.onnx`:
 * makes a room model from sessions recorded there (docs/calibration.md). For a v3 refiner (the
 * physics front end) it learns the room (`src/calibration/roomCalibration.ts`: the empty room's static
 * channel from `--empty`, every link's chain phases from the camera's one-person windows); for a v2
 * model it fine-tunes the model (`src/calibration/calibrate.ts`).
 *
 * The room's reference view and site come from the configuration the service would use (the data
 * directory's saved configuration and the `--config` overlay), as does the model to start from
 * (`neural_network.model_path`, or `--model`). Progress goes to stderr, the summary to stdout.
 * Exit status 0 when the room model was written, 1 when it could not be (a file, the model, the
 * labels), 2 for bad usage.
 *
 * The calibration code is loaded only when the command runs, so `csipose serve` never loads it.
 */
export function calibrateCommand(): Command {
  const collect = (v: string, prev: string[]) => [...prev, v];
  const positive = (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('must be an integer 1-1000');
    return n;
  };
  return new Command('calibrate')
    .description('fine-tune the pose model for one room from recorded sessions: a CSI capture and its camera keypoints each')
    .requiredOption(
      '--csi <capture>',
      "CSI of a session: a capture file, or a site's receivers as one list of file:PATH?link=RX URIs (repeat for more sessions)",
      collect,
      [],
    )
    .requiredOption('--keypoints <labels.jsonl>', "the session's camera keypoints, one JSON line per camera frame (repeat, in the order of --csi)", collect, [])
    .requiredOption('--out <room.onnx>', 'where to write the room model (its report goes beside it as .json)')
    .addOption(new Option('--format <format>', 'capture format (default: from the file name)').choices(CAPTURE_FORMATS))
    .option('--empty <capture>', 'v3 refiners: a recording of the empty room, 1-2 minutes (a capture file or a list of file:PATH?link=RX URIs)')
    .option('--model <path>', 'model to start from (default: neural_network.model_path)')
    .addOption(new Option('--data-dir <dir>', 'data directory whose saved configuration applies').env('CSIPOSE_DATA_DIR').default('./data'))
    .addOption(new Option('--config <file>', 'JSON configuration overlay (environment.view, environment.site)').env('CSIPOSE_CONFIG'))
    .option('--epochs <n>', 'passes over the sessions (default 3)', positive)
    .option('--seed <n>', 'seed of the batch order (default 1)', positive)
    .action(
      async (o: {
        csi: string[];
        keypoints: string[];
        out: string;
        format?: string;
        empty?: string;
        model?: string;
        dataDir: string;
        config?: string;
        epochs?: number;
        seed?: number;
      }) => {
        if (o.csi.length !== o.keypoints.length) {
          process.stderr.write(`csipose calibrate: ${o.csi.length} --csi but ${o.keypoints.length} --keypoints: give one labels file per capture\n`);
          process.exitCode = 2;
          return;
        }
        const format = o.format !== undefined && isCaptureFormat(o.format) ? (o.format as CaptureFormat) : undefined;
        try {
          const store = await ConfigStore.open({ dataDir: o.dataDir, ...(o.config ? { configFile: o.config } : {}) });
          const c = store.get();
          const s = c.environment.site;
          const model = resolveInstalled(o.model ?? c.neural_network.model_path);
          if ((await modelContract(model)) === 3) {
            if (o.epochs !== undefined || o.seed !== undefined) {
              process.stderr.write('csipose calibrate: --epochs and --seed fine-tune v2 models; a v3 refiner is calibrated in closed form\n');
              process.exitCode = 2;
              return;
            }
            const { calibrateRoom } = await import('../calibration/roomCalibration.js');
            const r = await calibrateRoom({
              model,
              out: o.out,
              ...(o.empty ? { empty: o.empty } : {}),
              sessions: o.csi.map((csi, i) => ({ csi, keypoints: o.keypoints[i]! })),
              ...(format ? { format } : {}),
              view: { ...c.environment.view },
              radios: s.radios,
              room: { width: s.room_width, depth: s.room_depth },
              progress: process.stderr,
            });
            const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
            process.stdout.write(
              [
                `room model -> ${r.out} (${r.links.map((l) => `${l.id}: ${l.windows} windows${l.emptyPackets ? `, ${l.emptyPackets} empty-room packets` : ''}`).join('; ')})`,
                `chain phases ${r.check.applied ? 'kept' : 'not kept (the chains are taken as right)'}: on the check part (${r.check.windows} windows) the first candidate ${f(r.check.before)} -> ${f(r.check.after)} m from the labelled person`,
                `held-out end of each session (${r.heldOut.windows} windows with one person): first candidate ${f(r.heldOut.before)} -> ${f(r.heldOut.after)} m from the labelled person (median)`,
                `report -> ${r.reportPath}`,
                `use it: set neural_network.model_path to ${r.out} and restart the service`,
                '',
              ].join('\n'),
            );
            return;
          }
          if (o.empty !== undefined) {
            process.stderr.write(`csipose calibrate: --empty calibrates v3 refiners; ${model} is a v2 model\n`);
            process.exitCode = 2;
            return;
          }
          const { calibrate } = await import('../calibration/calibrate.js');
          const r = await calibrate({
            sessions: o.csi.map((csi, i) => ({ csi, keypoints: o.keypoints[i]!, ...(format ? { format } : {}) })),
            model,
            out: o.out,
            view: { ...c.environment.view },
            // The shipped model reads one link: the site's primary (its tx and first rx).
            site: (() => {
              const { tx, rx } = primaryLinkRadios(c);
              return { roomWidth: s.room_width, roomDepth: s.room_depth, receiver: { x: rx.x, y: rx.y, z: rx.z }, transmitter: { x: tx.x, y: tx.y, z: tx.z } };
            })(),
            siteKnown: s.known,
            ...(o.epochs ? { epochs: o.epochs } : {}),
            ...(o.seed ? { seed: o.seed } : {}),
          });
          const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
          process.stdout.write(
            [
              `room model ${r.metadata.model_version} -> ${r.out} (${r.rows.train} windows, ${Math.round(r.seconds)} s)`,
              `held-out end of each session: re-projection ${f(r.before.reprojectionMedianPx, 1)} -> ${f(r.after.reprojectionMedianPx, 1)} px, floor ${f(r.before.floorMedianM, 2)} -> ${f(r.after.floorMedianM, 2)} m, count exact ${f(r.before.countExact, 3)} -> ${f(r.after.countExact, 3)}`,
              `report -> ${r.reportPath}`,
              `use it: set neural_network.model_path to ${r.out} and restart the service`,
              '',
            ].join('\n'),
          );
        } catch (e) {
          process.stderr.write(`csipose calibrate: ${e instanceof Error ? e.message : String(e)}\n`);
          process.exitCode = 1;
        }
      },
    );
}

/** The contract of a model file (1, 2 or 3); loading errors propagate with their message. */
async function modelContract(path: string): Promise<1 | 2 | 3> {
  const { PoseModel } = await import('../model/runtime.js');
  const m = await PoseModel.load(path, { thread: 'inline' });
  await m.release();
  return m.contract;
}
