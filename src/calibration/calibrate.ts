/**
 * `csipose calibrate`: fine-tunes a v2 pose model for one room from sessions recorded there, each a
 * CSI capture and the keypoints a camera's pose detector wrote for the same minutes.
 *
 * Labels (one JSON object per line, docs/calibration.md):
 *   {"t": 12.3, "people": [{"keypoints": [x0, y0, s0, ..., x16, y16, s16]}, ...]}
 * `t` is seconds since the capture's first record (or `time`: epoch ms or ISO 8601, matched to the
 * frames' wall-clock times); keypoints are COCO-17 pixels of `environment.view` with a score (0 =
 * not detected); `people` lists everyone the detector found (an empty list: nobody in view).
 *
 * What is learnt from them, per window matched to a label (the nearest within LABEL_TOLERANCE_S):
 * - how many people are in the room (the number of labelled people);
 * - where each stands: the floor point under the ankles, found by casting the camera ray through
 *   the mid-ankle pixel down to the ankle plane (ANKLE_HEIGHT_M above the floor);
 * - the skeleton: its 17 joints projected through the view must land on the labelled pixels
 *   (re-projection loss, keypoints with score >= MIN_SCORE).
 * What the labels cannot say (height above the floor, depth of each joint, activity, falls) is
 * kept where the shipped model had it: the loss pulls those outputs towards the shipped model's own
 * answers on the same windows (distillation), so the room model does not forget them.
 *
 * The room's geometry comes from the configuration: `environment.view` (where the camera is) and
 * `environment.site` (where the receiver is: the model's skeletons are relative to it).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Subject } from 'rxjs';
import onnxProto from 'onnx-proto';
import type { CsiFrame } from '../csi/frame.js';
import type { CaptureFormat } from '../decoders/registry.js';
import { createStreamDecoder, formatFromFileName, formatList } from '../decoders/index.js';
import { CONTRACT_V2, FALL_WINDOW_S, MODEL_ACTIVITIES, SITE_DIM, siteVector, type ModelMetadata, type SiteGeometry } from '../model/contract.js';
import { FEATURE_DIM, FeatureExtractor, WINDOW_FRAMES } from '../model/features.js';
import { frameMsOf, HISTORY_DIM, HISTORY_STEPS, HISTORY_STRIDE_FRAMES, HISTORY_WIDTH, HistoryRing } from '../model/history.js';
import { buildPoseModelV2, readPoseWeightsV2 } from './onnxWriter.js';
import { countFromProbabilities } from '../model/runtime.js';
import { viewCamera, type Camera, type ViewSettings } from '../pose/camera.js';
import { N_KEYPOINTS } from '../pose/types.js';
import { floorFromLabel, LABEL_TOLERANCE_S, LabelIndex, MIN_SCORE, parseLabels, type Label } from '../pose/labels.js';

export { ANKLE_HEIGHT_M, floorFromLabel, LABEL_TOLERANCE_S, MIN_SCORE, parseLabels, type Label, type LabelPerson } from '../pose/labels.js';
import { replayFile } from '../sources/replayFile.js';
import { sanitizePhase } from '../../operators/sanitizePhase.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import type { LossParts } from './loss.js';
import type { Mlp } from './mlp.js';
import { bar, formatSeconds, Progress, type ProgressStream } from './progress.js';
import { MAX_PERSONS, N_ACTIVITIES, OUT, OUTPUT_DIM } from './targets.js';
import {
  fitNormalizer,
  fromPoseWeights,
  standardise,
  toPoseWeights,
  train,
  type Normalizer,
  type Objective,
  type RowSource,
  type TrainSettings,
} from './trainer.js';

const { onnx } = onnxProto;

/** Window hop of the calibration rows, frames (a divisor of the history stride). */
const CAL_HOP = 16;
/**
 * Passes over the sessions by default. Chosen on a VALIDATION room (docs/model.md, "Calibration"):
 * on later sessions with other people more epochs only fit the recorded people better.
 */
export const CALIBRATION_EPOCHS = 3;
/** Share of each session (its end) kept apart to choose the epoch and to report on. */
const HOLD_OUT = 0.15;

const P = MAX_PERSONS;
const J = N_KEYPOINTS;
const A = N_ACTIVITIES;

/**
 * Calibration targets of one window, flat:
 * [count 1][presence P][floor P x 2 (m, relative to the receiver)][floor known P]
 * [keypoints P x 17 x 3 (u, v, weight)][base: activity logits P x A, fall logit 1, root z P,
 * offsets P x 51]: the last block is the shipped model's own answer (distillation).
 */
export const CAL = Object.freeze({
  count: 0,
  presence: 1,
  floor: 1 + P,
  floorKnown: 1 + 3 * P,
  keypoints: 1 + 4 * P,
  baseActivity: 1 + 4 * P + J * 3 * P,
  baseFall: 1 + 4 * P + J * 3 * P + A * P,
  baseRootZ: 2 + 4 * P + J * 3 * P + A * P,
  baseOffsets: 2 + 5 * P + J * 3 * P + A * P,
});
export const CAL_DIM = CAL.baseOffsets + P * J * 3;

/** Loss weights of calibration. */
export const CAL_WEIGHTS = Object.freeze({
  count: 1,
  presence: 1,
  floor: 4,
  reprojection: 8,
  /** Re-projection error (metres at the joint's depth) below which its loss is quadratic. */
  reprojectionBetaM: 0.05,
  keepActivity: 1,
  keepFall: 1,
  keepHeight: 2,
  keepShape: 8,
});

/** A recorded session: a capture and its labels. */
export interface CalibrationSession {
  csi: string;
  /** Capture format; from the file name when absent. */
  format?: CaptureFormat;
  keypoints: string;
}

/** The windows of one session, with their labels. */
interface SessionRows {
  n: number;
  features: Float32Array;
  history: Float32Array;
  /** The matched label of each row. */
  labels: Label[];
  /** Seconds of each row's end since the session's first frame. */
  seconds: Float64Array;
  /** Frames decoded. */
  frames: number;
}

/**
 * Decodes a capture, windows it as the service does and pairs each window with its label.
 * @returns the rows that have a label
 */
async function sessionRows(s: CalibrationSession, labels: Label[]): Promise<SessionRows> {
  const format = s.format ?? formatFromFileName(s.csi);
  if (!format) throw new Error(`cannot tell the format of ${s.csi}: give it (${formatList(', ')})`);
  const index = new LabelIndex(labels);
  const fx = new FeatureExtractor();
  let ring: HistoryRing | undefined;
  let first = NaN;
  let frames = 0;
  const rows: { f: Float32Array; h: Float32Array; label: Label; seconds: number }[] = [];
  await new Promise<void>((resolve, reject) => {
    const input = new Subject<CsiFrame>();
    input.pipe(sanitizePhase({ method: 'phasor', scope: 'packet' }), slidingWindow({ size: WINDOW_FRAMES, hop: CAL_HOP })).subscribe({
      next(w) {
        ring ??= new HistoryRing(frameMsOf(w.rateHz));
        ring.setFrameMs(frameMsOf(w.rateHz));
        const end = w.times[w.size - 1]!;
        const f = fx.extract(w);
        const seconds = (end - first) / 1000;
        const label = index.nearest(seconds, end);
        if (label) {
          const h = new Float32Array(HISTORY_WIDTH);
          ring.historyFor(end, h);
          rows.push({ f, h, label, seconds });
        }
        ring.push(end, f);
      },
      error: reject,
      complete: resolve,
    });
    replayFile(s.csi, () => createStreamDecoder(format), { speed: 0, startTime: 0 }).subscribe({
      next(frame) {
        if (Number.isNaN(first)) first = frame.time;
        frames++;
        input.next(frame);
      },
      error: (e: unknown) => input.error(e),
      complete: () => input.complete(),
    });
  });
  const n = rows.length;
  const out: SessionRows = {
    n,
    features: new Float32Array(n * FEATURE_DIM),
    history: new Float32Array(n * HISTORY_WIDTH),
    labels: rows.map((r) => r.label),
    seconds: Float64Array.from(rows, (r) => r.seconds),
    frames,
  };
  rows.forEach((r, i) => {
    out.features.set(r.f, i * FEATURE_DIM);
    out.history.set(r.h, i * HISTORY_WIDTH);
  });
  return out;
}

/** Everything calibration needs to know about the room. */
export interface CalibrateOptions {
  sessions: CalibrationSession[];
  /** The model to start from (a v2 ONNX file). */
  model: string;
  /** Where to write the room model; its report goes beside it (`.json`). */
  out: string;
  view: ViewSettings;
  /** The room's site; `known` false feeds the model an unknown site (the receiver position is still used). */
  site: SiteGeometry;
  siteKnown: boolean;
  epochs?: number;
  seed?: number;
  progress?: ProgressStream;
  /** Other fine-tuning settings than the defaults below (studies of the recipe). */
  tune?: Partial<Omit<TrainSettings, 'hidden' | 'seed' | 'epochs'>>;
  /** Other loss weights than CAL_WEIGHTS (studies of the recipe). */
  lossWeights?: Partial<typeof CAL_WEIGHTS>;
}

/** What `calibrate` reports. */
export interface CalibrateResult {
  out: string;
  reportPath: string;
  metadata: ModelMetadata;
  rows: { train: number; held_out: number };
  /** On the held-out end of each session, before (shipped model) and after (room model). */
  before: CalibrationScores;
  after: CalibrationScores;
  seconds: number;
}

/** How well a model agrees with held-out labels. */
export interface CalibrationScores {
  /** Median distance between projected and labelled keypoints, pixels (matched persons). */
  reprojectionMedianPx: number;
  /** Median floor distance to the label's ankle point, metres. */
  floorMedianM: number;
  /** Share of windows whose count equals the labelled count. */
  countExact: number;
}

const sig = (z: number): number => (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));
const bce = (z: number, y: number): number => Math.max(z, 0) - z * y + Math.log1p(Math.exp(-Math.abs(z)));
const huber = (e: number, beta: number): number => (Math.abs(e) < beta ? (0.5 * e * e) / beta : Math.abs(e) - 0.5 * beta);
const dHuber = (e: number, beta: number): number => Math.max(-1, Math.min(1, e / beta));

/**
 * The calibration objective (see the module comment); `targets` are CAL rows.
 */
function calibrationObjective(camera: Camera, receiver: { x: number; y: number }, norm: Normalizer, W: typeof CAL_WEIGHTS): Objective {
  const px = new Float64Array(2);
  const jac = new Float64Array(6);
  const joint = new Float64Array(3);
  const probs = new Float64Array(Math.max(P + 1, A));
  const base = new Float64Array(A);
  const softmax = (y: ArrayLike<number>, at: number, k: number, out: Float64Array) => {
    let m = -Infinity;
    for (let i = 0; i < k; i++) m = Math.max(m, y[at + i]!);
    let s = 0;
    for (let i = 0; i < k; i++) s += out[i] = Math.exp(y[at + i]! - m);
    for (let i = 0; i < k; i++) out[i] = out[i]! / s;
  };
  return {
    targetDim: CAL_DIM,
    prepare: (t) => t,
    loss(y: Float32Array, t: Float32Array, batch: number, dy: Float32Array | null, parts?: LossParts): number {
      const inv = 1 / batch;
      let total = 0;
      if (dy) dy.fill(0, 0, batch * OUTPUT_DIM);
      for (let r = 0; r < batch; r++) {
        const o = r * OUTPUT_DIM;
        const to = r * CAL_DIM;
        // Count: cross-entropy against the labelled count.
        softmax(y, o + OUT.count, P + 1, probs);
        const c = Math.min(P, Math.round(t[to + CAL.count]!));
        total += W.count * -Math.log(Math.max(1e-12, probs[c]!));
        if (dy) for (let i = 0; i <= P; i++) dy[o + OUT.count + i] = W.count * (probs[i]! - (i === c ? 1 : 0)) * inv;
        // Fall: keep the shipped model's answer.
        const zf = y[o + OUT.fall]!;
        const bf = sig(t[to + CAL.baseFall]!);
        total += W.keepFall * (bce(zf, bf) - bce(t[to + CAL.baseFall]!, bf));
        if (dy) dy[o + OUT.fall] = W.keepFall * (sig(zf) - bf) * inv;
        for (let p = 0; p < P; p++) {
          const zp = y[o + OUT.presence + p]!;
          const present = t[to + CAL.presence + p]!;
          total += W.presence * bce(zp, present);
          if (dy) dy[o + OUT.presence + p] = W.presence * (sig(zp) - present) * inv;
          if (present < 0.5) continue;
          // Activity: keep the shipped model's distribution (cross-entropy to its soft answer).
          softmax(y, o + OUT.activity + p * A, A, probs);
          softmax(t, to + CAL.baseActivity + p * A, A, base);
          for (let a = 0; a < A; a++) {
            total -= W.keepActivity * base[a]! * Math.log(Math.max(1e-12, probs[a]!));
            if (dy) dy[o + OUT.activity + p * A + a] = W.keepActivity * (probs[a]! - base[a]!) * inv;
          }
          // The skeleton in room metres from the outputs: root (normalised) and offsets.
          const rootM = [0, 1, 2].map((k) => y[o + OUT.root + p * 3 + k]! * norm.rootStd[k]! + norm.rootMean[k]!);
          const gRoot = [0, 0, 0];
          if (t[to + CAL.floorKnown + p]! > 0.5) {
            for (let k = 0; k < 2; k++) {
              const e = rootM[k]! - t[to + CAL.floor + p * 2 + k]!;
              total += (W.floor / 2) * huber(e, 0.1);
              gRoot[k] += (W.floor / 2) * dHuber(e, 0.1);
            }
          }
          // Height of the pelvis: keep the shipped model's.
          const ez = rootM[2]! - t[to + CAL.baseRootZ + p]!;
          total += W.keepHeight * huber(ez, 0.05);
          gRoot[2] += W.keepHeight * dHuber(ez, 0.05);
          let weights = 0;
          for (let k = 0; k < J; k++) weights += t[to + CAL.keypoints + (p * J + k) * 3 + 2]!;
          for (let k = 0; k < J; k++) {
            const oi = o + OUT.offsets + p * J * 3 + k * 3;
            // Shape: keep the shipped model's offsets, weakly (the labels see two of three dimensions).
            for (let d = 0; d < 3; d++) {
              const e = y[oi + d]! - t[to + CAL.baseOffsets + p * J * 3 + k * 3 + d]!;
              total += (W.keepShape / (J * 3)) * huber(e, 0.05);
              if (dy) dy[oi + d] += (W.keepShape / (J * 3)) * dHuber(e, 0.05) * inv;
            }
            const li = to + CAL.keypoints + (p * J + k) * 3;
            const w = t[li + 2]!;
            if (!(w > 0) || weights === 0) continue;
            joint[0] = rootM[0]! + y[oi]! + receiver.x;
            joint[1] = rootM[1]! + y[oi + 1]! + receiver.y;
            joint[2] = rootM[2]! + y[oi + 2]!;
            if (!camera.projectJacobian(joint[0]!, joint[1]!, joint[2]!, px, jac)) continue;
            // The pixel error measured in metres at the joint's depth (metres per pixel there), so
            // that a far person's few pixels weigh as much as a near one's many and the term is on
            // the scale of the floor and shape terms.
            const mpp = camera.depth(joint[0]!, joint[1]!, joint[2]!) / camera.focalPx;
            const scale = (W.reprojection * w) / weights;
            const eu = (px[0]! - t[li]!) * mpp;
            const ev = (px[1]! - t[li + 1]!) * mpp;
            total += scale * (huber(eu, W.reprojectionBetaM) + huber(ev, W.reprojectionBetaM));
            const gu = scale * dHuber(eu, W.reprojectionBetaM) * mpp;
            const gv = scale * dHuber(ev, W.reprojectionBetaM) * mpp;
            for (let d = 0; d < 3; d++) {
              const g = gu * jac[d]! + gv * jac[3 + d]!;
              if (dy) dy[oi + d] += g * inv;
              gRoot[d] += g;
            }
          }
          if (dy) for (let k = 0; k < 3; k++) dy[o + OUT.root + p * 3 + k] = gRoot[k]! * norm.rootStd[k]! * inv;
        }
      }
      if (parts) parts.total += total;
      return total * inv;
    },
  };
}

/** Rows of one or more sessions as the trainer reads them. */
function calibrationRows(
  sessions: SessionRows[],
  pick: (s: number, i: number) => boolean,
  site: Float32Array,
): { src: RowSource; refs: Array<[number, number]> } {
  const refs: Array<[number, number]> = [];
  sessions.forEach((s, si) => {
    for (let i = 0; i < s.n; i++) if (pick(si, i)) refs.push([si, i]);
  });
  const dim = FEATURE_DIM + HISTORY_WIDTH + SITE_DIM;
  return {
    refs,
    src: {
      n: refs.length,
      dim,
      targets: new Float32Array(refs.length * CAL_DIM),
      fill(rows, from, count, out) {
        for (let k = 0; k < count; k++) {
          const [si, i] = refs[rows[from + k]!]!;
          const s = sessions[si]!;
          const o = k * dim;
          out.set(s.features.subarray(i * FEATURE_DIM, (i + 1) * FEATURE_DIM), o);
          out.set(s.history.subarray(i * HISTORY_WIDTH, (i + 1) * HISTORY_WIDTH), o + FEATURE_DIM);
          out.set(site, o + FEATURE_DIM + HISTORY_WIDTH);
        }
      },
    },
  };
}

/**
 * Fills the CAL targets of rows from their labels and the base network's answers.
 * @returns nothing; writes `src.targets`
 */
function fillCalibrationTargets(src: RowSource, labels: Label[], base: Mlp, norm: Normalizer, camera: Camera, receiver: { x: number; y: number }): void {
  const rows = Int32Array.from({ length: src.n }, (_, i) => i);
  const chunk = 256;
  const x = new Float32Array(chunk * src.dim);
  for (let s = 0; s < src.n; s += chunk) {
    const b = Math.min(chunk, src.n - s);
    src.fill(rows, s, b, x);
    standardise(x, b, norm);
    const y = base.forward(x, b);
    for (let r = 0; r < b; r++) {
      const t = src.targets.subarray((s + r) * CAL_DIM, (s + r + 1) * CAL_DIM);
      const o = r * OUTPUT_DIM;
      const label = labels[s + r]!;
      for (let p = 0; p < P; p++) {
        for (let a = 0; a < A; a++) t[CAL.baseActivity + p * A + a] = y[o + OUT.activity + p * A + a]!;
        t[CAL.baseRootZ + p] = y[o + OUT.root + p * 3 + 2]! * norm.rootStd[2]! + norm.rootMean[2]!;
        for (let i = 0; i < J * 3; i++) t[CAL.baseOffsets + p * J * 3 + i] = y[o + OUT.offsets + p * J * 3 + i]!;
      }
      t[CAL.baseFall] = y[o + OUT.fall]!;
      // Slots ordered by floor x as in training; people whose ankles were not seen go by image u.
      const people = label.people.map((pp) => {
        const floor = floorFromLabel(pp.keypoints, camera);
        let u = 0;
        let n = 0;
        for (let k = 0; k < J; k++) {
          if (pp.keypoints[3 * k + 2]! < MIN_SCORE) continue;
          u += pp.keypoints[3 * k]!;
          n++;
        }
        return { pp, floor, key: floor ? floor.x : n > 0 ? receiver.x + ((u / n - camera.width / 2) / camera.width) * 4 : receiver.x };
      });
      people.sort((a, b) => a.key - b.key);
      t[CAL.count] = Math.min(P, people.length);
      people.slice(0, P).forEach((q, p) => {
        t[CAL.presence + p] = 1;
        if (q.floor) {
          t[CAL.floor + p * 2] = q.floor.x - receiver.x;
          t[CAL.floor + p * 2 + 1] = q.floor.y - receiver.y;
          t[CAL.floorKnown + p] = 1;
        }
        for (let k = 0; k < J; k++) {
          const sc = q.pp.keypoints[3 * k + 2]!;
          const i = CAL.keypoints + (p * J + k) * 3;
          t[i] = q.pp.keypoints[3 * k]!;
          t[i + 1] = q.pp.keypoints[3 * k + 1]!;
          t[i + 2] = sc >= MIN_SCORE ? 1 : 0;
        }
      });
    }
  }
}

/** Agreement of a network with held-out labels (see CalibrationScores). */
function agreement(net: Mlp, norm: Normalizer, src: RowSource, camera: Camera, receiver: { x: number; y: number }): CalibrationScores {
  const rows = Int32Array.from({ length: src.n }, (_, i) => i);
  const chunk = 256;
  const x = new Float32Array(chunk * src.dim);
  const reproj: number[] = [];
  const floor: number[] = [];
  let exact = 0;
  const px = new Float64Array(2);
  const countProbs = new Float32Array(P + 1);
  for (let s = 0; s < src.n; s += chunk) {
    const b = Math.min(chunk, src.n - s);
    src.fill(rows, s, b, x);
    standardise(x, b, norm);
    const y = net.forward(x, b);
    for (let r = 0; r < b; r++) {
      const o = r * OUTPUT_DIM;
      const t = src.targets.subarray((s + r) * CAL_DIM, (s + r + 1) * CAL_DIM);
      // The count rule of the service at its default threshold: the median of the distribution.
      let m = -Infinity;
      for (let i = 0; i <= P; i++) m = Math.max(m, y[o + OUT.count + i]!);
      let sum = 0;
      for (let i = 0; i <= P; i++) {
        countProbs[i] = Math.exp(y[o + OUT.count + i]! - m);
        sum += countProbs[i]!;
      }
      for (let i = 0; i <= P; i++) countProbs[i] = countProbs[i]! / sum;
      if (countFromProbabilities(countProbs, 0, P, 0.5) === Math.round(t[CAL.count]!)) exact++;
      for (let p = 0; p < P; p++) {
        if (t[CAL.presence + p]! < 0.5) continue;
        const root = [0, 1, 2].map((k) => y[o + OUT.root + p * 3 + k]! * norm.rootStd[k]! + norm.rootMean[k]!);
        if (t[CAL.floorKnown + p]! > 0.5) floor.push(Math.hypot(root[0]! - t[CAL.floor + p * 2]!, root[1]! - t[CAL.floor + p * 2 + 1]!));
        for (let k = 0; k < J; k++) {
          const li = CAL.keypoints + (p * J + k) * 3;
          if (!(t[li + 2]! > 0)) continue;
          const oi = o + OUT.offsets + p * J * 3 + k * 3;
          if (!camera.project(root[0]! + y[oi]! + receiver.x, root[1]! + y[oi + 1]! + receiver.y, root[2]! + y[oi + 2]!, px, 0)) continue;
          reproj.push(Math.hypot(px[0]! - t[li]!, px[1]! - t[li + 1]!));
        }
      }
    }
  }
  const med = (v: number[]) => (v.length ? [...v].sort((a, b) => a - b)[v.length >> 1]! : NaN);
  return { reprojectionMedianPx: med(reproj), floorMedianM: med(floor), countExact: src.n > 0 ? exact / src.n : NaN };
}

/**
 * Fine-tunes a v2 model for a room (see the module comment) and writes the room model and its
 * report (`<out without .onnx>.json`).
 * @param opts sessions, base model, output, the room's view and site, epochs, seed, progress stream
 * @returns what was written and how the room model agrees with held-out labels, before and after
 * @throws Error when the base model is not a v2 model, a file cannot be read, or no window has a label
 */
export async function calibrate(opts: CalibrateOptions): Promise<CalibrateResult> {
  const t0 = performance.now();
  const progress = new Progress(opts.progress ?? process.stderr);
  const bytes = await readFile(opts.model);
  const props = new Map((onnx.ModelProto.decode(bytes).metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? '']));
  if (props.get('csipose_contract') !== CONTRACT_V2)
    throw new Error(`${opts.model} is not a ${CONTRACT_V2} model (csipose_contract ${props.get('csipose_contract') ?? 'missing'}); calibration needs one`);
  const baseWeights = readPoseWeightsV2(bytes);
  const camera = viewCamera(opts.view);
  const receiver = { x: opts.site.receiver.x, y: opts.site.receiver.y };
  const site = siteVector(opts.siteKnown ? opts.site : null);

  // 1. Windows and labels of every session.
  const sessions: SessionRows[] = [];
  for (const [i, s] of opts.sessions.entries()) {
    progress.update(`reading session ${i + 1}/${opts.sessions.length}: ${basename(s.csi)}`);
    const labels = parseLabels(await readFile(s.keypoints, 'utf8'), s.keypoints);
    const rows = await sessionRows(s, labels);
    if (rows.n === 0)
      throw new Error(`${s.csi}: no window has a label within ${LABEL_TOLERANCE_S} s (${rows.frames} frames, ${labels.length} labels): check the label times`);
    sessions.push(rows);
  }
  const windows = sessions.reduce((a, s) => a + s.n, 0);
  progress.done(`read ${sessions.length} session(s): ${windows} labelled windows from ${sessions.reduce((a, s) => a + s.frames, 0)} CSI frames`);

  // 2. Rows: the last HOLD_OUT of each session is held out.
  const cut = sessions.map((s) => Math.floor(s.n * (1 - HOLD_OUT)));
  const trainRows = calibrationRows(sessions, (si, i) => i < cut[si]!, site);
  const heldRows = calibrationRows(sessions, (si, i) => i >= cut[si]!, site);
  const norm = fitNormalizer(trainRows.src, { mean: [0, 2.5, 0.9], std: [1.5, 1.5, 0.3] });
  const base = fromPoseWeights(baseWeights, norm);
  const labelsOf = (refs: Array<[number, number]>) => refs.map(([si, i]) => sessions[si]!.labels[i]!);
  fillCalibrationTargets(trainRows.src, labelsOf(trainRows.refs), base, norm, camera, receiver);
  fillCalibrationTargets(heldRows.src, labelsOf(heldRows.refs), base, norm, camera, receiver);
  const before = agreement(base, norm, heldRows.src, camera, receiver);

  // 3. Fine-tuning from the shipped weights.
  const weightsUsed = { ...CAL_WEIGHTS, ...opts.lossWeights };
  const hidden = baseWeights.layers.map((l) => l.out);
  const settings: TrainSettings = {
    hidden,
    epochs: opts.epochs ?? CALIBRATION_EPOCHS,
    batch: 64,
    lr: 3e-4,
    lrMin: 1e-5,
    warmupSteps: 50,
    weightDecay: 1e-4,
    dropout: 0,
    ...opts.tune,
    seed: opts.seed ?? 1,
  };
  const result = train(trainRows.src, heldRows.src, norm, settings, {
    init: fromPoseWeights(baseWeights, norm),
    objective: calibrationObjective(camera, receiver, norm, weightsUsed),
    onProgress: (p) => {
      const frac = ((p.epoch - 1) * p.batches + p.batch) / (p.epochs * p.batches);
      progress.update(`calibrating epoch ${p.epoch}/${p.epochs} ${bar(frac)} loss ${p.loss.toFixed(3)} ETA ${formatSeconds(p.etaSeconds)}`);
    },
  });
  const after = agreement(result.net, norm, heldRows.src, camera, receiver);
  progress.done(
    `calibrated ${settings.epochs} epochs in ${formatSeconds(result.seconds)} (best ${result.bestEpoch}): held-out re-projection ${before.reprojectionMedianPx.toFixed(1)} -> ${after.reprojectionMedianPx.toFixed(1)} px, floor ${before.floorMedianM.toFixed(2)} -> ${after.floorMedianM.toFixed(2)} m, count exact ${before.countExact.toFixed(3)} -> ${after.countExact.toFixed(3)}`,
  );

  // 4. The room model.
  const weights = toPoseWeights(result.net, norm);
  const baseVersion = props.get('model_version') ?? 'unknown';
  const metadata: ModelMetadata = {
    csipose_contract: CONTRACT_V2,
    model_version: `${baseVersion}+room`,
    feature_dim: FEATURE_DIM,
    max_persons: P,
    window_frames: WINDOW_FRAMES,
    trained_on: `${baseVersion} calibrated on ${sessions.length} session(s), ${windows} labelled windows (${opts.sessions.map((s) => basename(s.csi)).join(', ')})`,
    site_dim: SITE_DIM,
    history_steps: HISTORY_STEPS,
    history_dim: HISTORY_DIM,
    history_stride_frames: HISTORY_STRIDE_FRAMES,
    fall_window_s: Number(props.get('fall_window_s')) || FALL_WINDOW_S,
  };
  const shape = {
    featureDim: FEATURE_DIM,
    historySteps: HISTORY_STEPS,
    historyDim: HISTORY_DIM,
    siteDim: SITE_DIM,
    maxPersons: P,
    activities: MODEL_ACTIVITIES.length,
  };
  await writeFile(opts.out, buildPoseModelV2(weights, shape, metadata));
  const reportPath = opts.out.replace(/\.onnx$/i, '') + '.json';
  const seconds = (performance.now() - t0) / 1000;
  const out: CalibrateResult = { out: opts.out, reportPath, metadata, rows: { train: trainRows.src.n, held_out: heldRows.src.n }, before, after, seconds };
  await writeFile(
    reportPath,
    `${JSON.stringify({ ...out, base_model: opts.model, sessions: opts.sessions, view: opts.view, site: opts.site, site_known: opts.siteKnown, settings, weights: weightsUsed, epochs: result.history }, null, 2)}\n`,
  );
  return out;
}
