/**
 * The command line's sinks, the last stage of a `csipose pipe` string: ndjson, stats, null,
 * capture. The service's outlets (src/outlets/) are its counterpart; these write to standard
 * output and files, with the backpressure of src/cli/sinks/output.ts.
 */
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Observable, Subscription } from 'rxjs';
import type { ParamSpec, ParamValues } from '../../engine/spec.js';
import { toJsonLine } from '../../render/json.js';
import type { CsiFrame } from '../../csi/frame.js';
import { encodeIntel5300Into, intel5300RecordLength } from '../../encoders/intel5300.js';
import { ReplayClock } from '../../decoders/replayClock.js';
import { floorMapToJson, isFloorMap } from '../../../operators/floorMap.js';
import { OutputDemand, SinkOutput } from './output.js';

export { OutputDemand };

/** Where a sink writes and reports. */
export interface SinkIO {
  stdout: Writable;
  stderr: Writable;
  /**
   * Backpressure for the source: the sink registers every stream it writes to, and a source
   * opened with the same object (`SourceContext.demand`) waits while any of them is full.
   */
  demand?: OutputDemand;
}

/** What a finished sink reports. */
export interface SinkSummary {
  items: number;
  seconds: number;
}

/** A running sink: `done` settles when the stream ends (rejects on a stream error). */
export interface RunningSink {
  readonly done: Promise<SinkSummary>;
  /** Stops consuming (on SIGINT) and flushes; `done` then resolves. */
  stop(): void;
}

export interface SinkSpec {
  readonly name: string;
  readonly summary: string;
  readonly params: readonly ParamSpec[];
  run(source: Observable<unknown>, params: ParamValues, io: SinkIO): RunningSink;
}

/** Subscribes `onItem` to the source and settles once, on completion, error or stop. */
function consume(source: Observable<unknown>, onItem: (v: unknown) => void, finish: (s: SinkSummary) => Promise<void> | void): RunningSink {
  const t0 = performance.now();
  let items = 0;
  let settle!: (e?: unknown) => void;
  const done = new Promise<SinkSummary>((resolve, reject) => {
    let settled = false;
    settle = (e?: unknown) => {
      if (settled) return;
      settled = true;
      const s = { items, seconds: (performance.now() - t0) / 1000 };
      Promise.resolve(finish(s)).then(() => (e === undefined ? resolve(s) : reject(e)), reject);
    };
  });
  const sub: Subscription = source.subscribe({
    next(v) {
      items++;
      onItem(v);
    },
    error: (e) => settle(e ?? new Error('stream failed')),
    complete: () => settle(),
  });
  return {
    done,
    stop() {
      sub.unsubscribe();
      settle();
    },
  };
}

/** Standard output for path "-", else a new file; either way watched for backpressure and errors. */
function openOutput(path: string, sink: string, io: SinkIO, onClosed: () => void): SinkOutput {
  return path === '-'
    ? new SinkOutput(io.stdout, 'standard output', sink, io.demand, onClosed)
    : new SinkOutput(createWriteStream(path), path, sink, io.demand, onClosed);
}

const ndjson: SinkSpec = {
  name: 'ndjson',
  summary: 'One JSON object per line per item (frames as `csipose decode` prints them plus time and ids; floor maps with values to 4 digits)',
  params: [{ name: 'path', type: 'string', default: '-', description: 'file to write; - is standard output' }],
  run(source, params, io) {
    const path = String(params.path);
    // A reader that went away (`| head`) ends the run quietly; a failed write ends it with an error.
    const out = openOutput(path, 'ndjson', io, () => running.stop());
    const running = consume(
      source,
      (v) => out.write((isFloorMap(v) ? JSON.stringify(floorMapToJson(v)) : toJsonLine(v)) + '\n'),
      async () => {
        await out.finish(path !== '-');
        if (out.failure) throw out.failure;
      },
    );
    return running;
  },
};

const stats: SinkSpec = {
  name: 'stats',
  summary: 'Counts items and prints the rate to stderr every interval, then a summary',
  params: [{ name: 'interval', type: 'number', default: 1, min: 0.1, max: 3600, description: 'seconds between reports' }],
  run(source, params, io) {
    let count = 0;
    let last = 0;
    let lastT = performance.now();
    const timer = setInterval(
      () => {
        const now = performance.now();
        const rate = ((count - last) * 1000) / (now - lastT);
        io.stderr.write(`items=${count} rate=${rate.toFixed(1)}/s\n`);
        last = count;
        lastT = now;
      },
      Number(params.interval) * 1000,
    );
    timer.unref();
    return consume(
      source,
      () => {
        count++;
      },
      (s) => {
        clearInterval(timer);
        io.stderr.write(`done: ${s.items} items in ${s.seconds.toFixed(3)} s (${(s.items / Math.max(s.seconds, 1e-9)).toFixed(1)}/s)\n`);
      },
    );
  },
};

const nullSink: SinkSpec = {
  name: 'null',
  summary: 'Discards items (for measuring a pipeline); prints the count at the end',
  params: [],
  run(source, _params, io) {
    return consume(
      source,
      () => undefined,
      (s) => {
        io.stderr.write(`done: ${s.items} items in ${s.seconds.toFixed(3)} s\n`);
      },
    );
  },
};

/** Bytes of records gathered before one write to the capture file. */
const CAPTURE_CHUNK = 64 * 1024;
/** The largest Intel 5300 record (3x3). */
const CAPTURE_MAX_RECORD = intel5300RecordLength(3, 3);

function isCsiFrame(v: unknown): v is CsiFrame {
  if (v === null || typeof v !== 'object') return false;
  const f = v as Partial<CsiFrame>;
  return f.csi instanceof Float32Array && typeof f.nRx === 'number' && typeof f.nTx === 'number' && typeof f.nSub === 'number';
}

/** Names a stream item that is not a CSI frame, for the capture sink's error. */
function describeItem(v: unknown): string {
  if (v instanceof Uint8Array) return `raw bytes (a ${v.length}-byte chunk: put a decoder stage such as intel5300 first)`;
  if (v === null || typeof v !== 'object') return v === null ? 'null' : `a ${typeof v}`;
  if ('persons' in v && 'frameId' in v) return 'a pose frame';
  if ('data' in v && 'times' in v) return 'a CSI window';
  if ('power' in v && 'nBins' in v) return 'a Doppler spectrum';
  const keys = Object.keys(v);
  return `an object with keys ${keys.slice(0, 6).join(', ')}${keys.length > 6 ? ', ...' : ''}`;
}

/**
 * The persons of a frame's `meta.truth` (src/sources/sim.ts `truthToJson`) as a COCO-17 camera
 * detector reports them: [x, y, score] per keypoint, score 1 where the keypoint is visible in the
 * view, and 0, 0, 0 where it is not (outside the image or behind the camera).
 */
function truthPeople(truth: unknown): Array<{ keypoints: number[] }> {
  const persons = (truth as { persons?: unknown } | null)?.persons;
  if (!Array.isArray(persons)) throw new Error('capture: meta.truth carries no persons array');
  return persons.map((p: { keypoints?: ArrayLike<number>; visible?: ArrayLike<number | boolean> } | null, i) => {
    const kp = p?.keypoints;
    const vis = p?.visible;
    if (!kp || kp.length !== 34 || !vis || vis.length !== 17)
      throw new Error(`capture: meta.truth person ${i} needs 34 keypoint coordinates and 17 visible flags`);
    const out = new Array<number>(51);
    for (let j = 0; j < 17; j++) {
      const x = kp[2 * j]!;
      const y = kp[2 * j + 1]!;
      const seen = Number(vis[j]) === 1 && Number.isFinite(x) && Number.isFinite(y);
      out[3 * j] = seen ? x : 0;
      out[3 * j + 1] = seen ? y : 0;
      out[3 * j + 2] = seen ? 1 : 0;
    }
    return { keypoints: out };
  });
}

const capture: SinkSpec = {
  name: 'capture',
  summary:
    "Writes CSI frames as an Intel 5300 capture (log_to_file 0xBB records, src/encoders/intel5300.ts); with labels=, the frames' ground truth (sim?truth=1) as camera-style COCO-17 keypoint lines",
  params: [
    {
      name: 'path',
      type: 'string',
      default: '',
      description: 'capture file to write (required; - is standard output); read it back with format intel5300',
    },
    {
      name: 'labels',
      type: 'string',
      default: '',
      description: 'JSON-lines file of {"t", "people": [{"keypoints": [x, y, score] x 17}]} from frames carrying meta.truth; empty = none',
    },
    {
      name: 'label_hz',
      type: 'number',
      default: 10,
      min: 0.001,
      max: 100000,
      description: 'at most one label per 1/label_hz s of capture time: the first truth frame in each slot, slots counted from the first record',
    },
    {
      name: 'link',
      type: 'string',
      default: '',
      description:
        "only the frames of this link (e.g. tx-rx2): a site's receivers each to their own capture, as real receivers write them; empty = every frame",
    },
  ],
  run(source, params, io) {
    const path = String(params.path);
    const labelsPath = String(params.labels);
    const labelHz = Number(params.label_hz);
    const link = String(params.link ?? '');
    if (!path) return { done: Promise.reject(new Error('capture: path= is required, e.g. "capture path=cap.dat"')), stop() {} };
    if (path === '-' && labelsPath === '-')
      return { done: Promise.reject(new Error('capture: path and labels cannot both be standard output (-)')), stop() {} };
    const stop = () => running.stop();
    const out = openOutput(path, 'capture', io, stop);
    const labelsOut = labelsPath ? openOutput(labelsPath, 'capture', io, stop) : undefined;
    let failure: Error | undefined;
    const fail = (e: Error) => {
      if (failure) return;
      failure = e;
      // Deferred: a source may emit while it is being subscribed, before `running` exists.
      queueMicrotask(stop);
    };

    let records = 0;
    let labels = 0;
    let chunk = Buffer.allocUnsafe(CAPTURE_CHUNK);
    let used = 0;
    const flush = () => {
      if (used === 0) return;
      out.write(chunk.subarray(0, used));
      chunk = Buffer.allocUnsafe(CAPTURE_CHUNK);
      used = 0;
    };
    // Label times come from the capture's own clock (timestamp_low as written), read the way a
    // replay of the capture reads it, so a label's t is its record's replay time to the bit.
    const clock = new ReplayClock(100);
    let nextSlot = 0;

    const running = consume(
      source,
      (v) => {
        if (failure || out.closed || labelsOut?.closed) return;
        if (!isCsiFrame(v)) {
          fail(new Error(`capture: expected CSI frames, got ${describeItem(v)}`));
          return;
        }
        if (link !== '' && v.linkId !== link) return;
        try {
          if (used + CAPTURE_MAX_RECORD > CAPTURE_CHUNK) flush();
          const at = used;
          used += encodeIntel5300Into(v, chunk, at);
          records++;
          const mediaMs = clock.advance({ clockUs: chunk.readUInt32LE(at + 3) } as CsiFrame);
          const truth = v.meta?.truth;
          if (labelsOut && truth !== undefined && truth !== null) {
            const t = mediaMs / 1000;
            // The epsilon keeps a time on a slot boundary (0.3 s * 10 = 2.9999...) in its slot.
            const slot = Math.floor(t * labelHz + 1e-9);
            if (slot >= nextSlot) {
              labelsOut.write(JSON.stringify({ t, people: truthPeople(truth) }) + '\n');
              labels++;
              nextSlot = slot + 1;
            }
          }
        } catch (e) {
          const m = (e as Error).message ?? String(e);
          fail(new Error(m.startsWith('capture:') ? m : `capture: ${m}`));
        }
      },
      async () => {
        if (!failure && !out.closed) flush();
        await Promise.all([out.finish(path !== '-'), labelsOut?.finish(labelsPath !== '-')]);
        const failed = failure ?? out.failure ?? labelsOut?.failure;
        // A reader that went away (`| head -c`) ends the run quietly, like the end of a file.
        const readerGone = !failed && (out.closed || !!labelsOut?.closed);
        if (!readerGone) io.stderr.write(`capture: ${records} records -> ${out.name}${labelsOut ? ` (${labels} labels -> ${labelsOut.name})` : ''}\n`);
        if (failed) throw failed;
      },
    );
    return running;
  },
};

export const SINKS: ReadonlyMap<string, SinkSpec> = new Map([ndjson, stats, nullSink, capture].map((s) => [s.name, s]));
