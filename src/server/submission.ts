import { Worker } from 'node:worker_threads';
import type { CsiSubmission } from '../service/face.js';
import { configParam } from '../config/params.js';
import type { ConfigSnapshot } from '../config/store.js';
import { Checker } from './validate.js';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json.js';
import { notJson, parseJsonBody, tooDeep } from './core.js';

/** Receive antennas, subcarriers and packets one submission may hold. */
export const MAX_ANTENNAS = 9;
export const MAX_SAMPLES = 256;
export const MAX_FRAMES = 4096;
/** Errors reported per packet before giving up on it (one bad packet can hold thousands). */
const MAX_PACKET_ERRORS = 20;

type Packet = CsiSubmission['packets'][number];

/**
 * A packet's `antenna_data` that the parsing worker has already checked (by readPacket's rules)
 * and packed. JSON cannot make a Float32Array, so no client can send one.
 */
interface PackedAntennas {
  packed: Float32Array;
  nRx: number;
  nSub: number;
}

function isPacked(v: unknown): v is PackedAntennas {
  return v !== null && typeof v === 'object' && (v as { packed?: unknown }).packed instanceof Float32Array;
}

/**
 * Reads one packet's `antenna_data`: an array per receive antenna of complex samples
 * `{real, imag}`, one per subcarrier, every antenna with the same count.
 */
function readPacket(c: Checker, v: unknown, field: string): Packet | undefined {
  if (isPacked(v)) return { nRx: v.nRx, nSub: v.nSub, csi: v.packed };
  if (!Array.isArray(v)) {
    if (v === undefined) c.errors.push({ field, message: `${field} is required`, received_value: null });
    else c.errors.push({ field, message: `${field} must be an array of antennas, each an array of {real, imag} samples`, received_value: v });
    return undefined;
  }
  const before = c.errors.length;
  if (v.length < 1 || v.length > MAX_ANTENNAS) {
    c.errors.push({ field, message: `${field} must hold 1 to ${MAX_ANTENNAS} antennas`, received_value: v.length });
    return undefined;
  }
  const nRx = v.length;
  const first = v[0];
  const nSub = Array.isArray(first) ? first.length : 0;
  if (nSub < 1 || nSub > MAX_SAMPLES) {
    c.errors.push({
      field: `${field}[0]`,
      message: `${field}[0] must be an array of 1 to ${MAX_SAMPLES} complex samples`,
      received_value: Array.isArray(first) ? first.length : first,
    });
    return undefined;
  }
  const csi = new Float32Array(nSub * nRx * 2);
  for (let rx = 0; rx < nRx; rx++) {
    const ant = v[rx];
    if (!Array.isArray(ant) || ant.length !== nSub) {
      c.errors.push({
        field: `${field}[${rx}]`,
        message: `${field}[${rx}] must be an array of ${nSub} samples like antenna 0`,
        received_value: Array.isArray(ant) ? ant.length : ant,
      });
      continue;
    }
    for (let sc = 0; sc < nSub; sc++) {
      const s = ant[sc] as { real?: unknown; imag?: unknown } | null;
      const f = `${field}[${rx}][${sc}]`;
      if (s === null || typeof s !== 'object' || Array.isArray(s)) {
        c.errors.push({ field: f, message: `${f} must be an object {real, imag}`, received_value: s });
      } else if (typeof s.real !== 'number' || !Number.isFinite(s.real) || typeof s.imag !== 'number' || !Number.isFinite(s.imag)) {
        c.errors.push({ field: f, message: `${f}.real and .imag must be finite numbers`, received_value: s });
      } else {
        csi[(sc * nRx + rx) * 2] = s.real;
        csi[(sc * nRx + rx) * 2 + 1] = s.imag;
      }
      if (c.errors.length - before >= MAX_PACKET_ERRORS) return undefined;
    }
  }
  return c.errors.length > before ? undefined : { nRx, nSub, csi };
}

/**
 * Validates a `POST /pose/process` body field by field (every bad field in one 422) into a
 * submission the service runs. A submission is either one packet (`csi_data.antenna_data`) or a
 * sequence (`csi_data.frames`, each with `antenna_data` and an optional `timestamp`).
 * `processing_options` override the configuration for this request only; their ranges are the
 * configuration's.
 * @param body the parsed JSON body
 * @param cfg the configuration (defaults of the options)
 * @returns the submission
 * @throws ApiError 422 listing every field that breaks a rule
 */
export function readSubmission(body: unknown, cfg: ConfigSnapshot): CsiSubmission {
  const c = new Checker();
  const b = c.object(body, 'body', true);
  c.done();
  const csiData = c.object(b!.csi_data, 'csi_data', true);
  const opts = c.object(b!.processing_options, 'processing_options', false);
  c.only(b, '', ['csi_data', 'processing_options']);
  const conf = configParam('detection.confidence_threshold');
  const persons = configParam('detection.max_persons');
  const threshold = c.number(opts?.confidence_threshold, 'processing_options.confidence_threshold', conf.min!, conf.max!);
  const maxPersons = c.int(opts?.max_persons, 'processing_options.max_persons', persons.min!, persons.max!);
  const tracking = c.bool(opts?.enable_tracking, 'processing_options.enable_tracking') ?? false;
  const densePose = c.bool(opts?.return_dense_pose, 'processing_options.return_dense_pose') ?? false;
  c.only(opts, 'processing_options', ['confidence_threshold', 'max_persons', 'enable_tracking', 'return_dense_pose']);
  let startMs = Date.now();
  let rateHz = cfg.hardware.csi_sampling_rate;
  let routerId = 'submission';
  const packets: Packet[] = [];
  if (csiData) {
    c.only(csiData, 'csi_data', ['timestamp', 'antenna_data', 'metadata', 'frames']);
    startMs = c.time(csiData.timestamp, 'csi_data.timestamp') ?? startMs;
    const meta = c.object(csiData.metadata, 'csi_data.metadata', false);
    c.only(meta, 'csi_data.metadata', ['router_id', 'sampling_rate', 'signal_strength']);
    routerId = c.string(meta?.router_id, 'csi_data.metadata.router_id', 128) ?? routerId;
    const rate = configParam('hardware.csi_sampling_rate');
    rateHz = c.number(meta?.sampling_rate, 'csi_data.metadata.sampling_rate', rate.min!, rate.max!) ?? rateHz;
    c.number(meta?.signal_strength, 'csi_data.metadata.signal_strength', -150, 50);
    if (csiData.frames !== undefined) {
      if (!Array.isArray(csiData.frames) || csiData.frames.length < 1 || csiData.frames.length > MAX_FRAMES) {
        c.errors.push({
          field: 'csi_data.frames',
          message: `csi_data.frames must be an array of 1 to ${MAX_FRAMES} packets`,
          received_value: Array.isArray(csiData.frames) ? csiData.frames.length : csiData.frames,
        });
      } else {
        if (csiData.antenna_data !== undefined)
          c.errors.push({ field: 'csi_data.antenna_data', message: 'give either csi_data.antenna_data or csi_data.frames, not both', received_value: null });
        csiData.frames.forEach((fr: unknown, i: number) => {
          const o = c.object(fr, `csi_data.frames[${i}]`, true);
          if (!o) return;
          c.only(o, `csi_data.frames[${i}]`, ['timestamp', 'antenna_data']);
          const time = c.time(o.timestamp, `csi_data.frames[${i}].timestamp`);
          const p = readPacket(c, o.antenna_data, `csi_data.frames[${i}].antenna_data`);
          if (p) packets.push(time !== undefined ? { ...p, time } : p);
        });
      }
    } else {
      const p = readPacket(c, csiData.antenna_data, 'csi_data.antenna_data');
      if (p) packets.push(p);
    }
    if (packets.length > 1 && packets.some((p) => p.nRx !== packets[0]!.nRx || p.nSub !== packets[0]!.nSub))
      c.errors.push({ field: 'csi_data.frames', message: 'every packet must have the same antennas and subcarriers', received_value: null });
  }
  c.done();
  return {
    packets,
    startMs,
    rateHz,
    routerId,
    ...(threshold !== undefined ? { confidenceThreshold: threshold } : {}),
    ...(maxPersons !== undefined ? { maxPersons } : {}),
    tracking,
    densePose,
  };
}

// Parsing large submissions off the event loop -----------------------------------------------

/** Bodies from this size on are parsed by the worker; smaller ones cost less than the hand-off. */
export const OFF_THREAD_MIN_BYTES = 256 * 1024;

/**
 * Replaces each well-formed `antenna_data` of a parsed submission (`csi_data.antenna_data` and
 * `csi_data.frames[i].antenna_data`) by its samples packed as readPacket packs them, so that the
 * main thread neither walks nor copies them. Anything readPacket would refuse is left as written,
 * for readSubmission to report. Runs in the parsing worker, from its source text: it must use
 * nothing from outside itself.
 * @returns the buffers of the packed samples (to transfer)
 */
function packAntennas(body: unknown, maxAntennas: number, maxSamples: number): ArrayBuffer[] {
  const transfer: ArrayBuffer[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return transfer;
  const csiData = (body as Record<string, unknown>).csi_data;
  if (csiData === null || typeof csiData !== 'object' || Array.isArray(csiData)) return transfer;
  const holders: Array<Record<string, unknown>> = [csiData as Record<string, unknown>];
  const frames = (csiData as Record<string, unknown>).frames;
  if (Array.isArray(frames)) for (const f of frames) if (f !== null && typeof f === 'object' && !Array.isArray(f)) holders.push(f as Record<string, unknown>);
  for (const h of holders) {
    const v = h.antenna_data;
    if (!Array.isArray(v) || v.length < 1 || v.length > maxAntennas || !Array.isArray(v[0])) continue;
    const nRx = v.length;
    const nSub = (v[0] as unknown[]).length;
    if (nSub < 1 || nSub > maxSamples) continue;
    const csi = new Float32Array(nSub * nRx * 2);
    let ok = true;
    for (let rx = 0; rx < nRx && ok; rx++) {
      const ant = v[rx] as unknown;
      if (!Array.isArray(ant) || ant.length !== nSub) {
        ok = false;
        break;
      }
      for (let sc = 0; sc < nSub; sc++) {
        const smp = ant[sc] as { real?: unknown; imag?: unknown } | null;
        if (smp === null || typeof smp !== 'object' || Array.isArray(smp)) {
          ok = false;
          break;
        }
        const re = smp.real;
        const im = smp.imag;
        if (typeof re !== 'number' || !Number.isFinite(re) || typeof im !== 'number' || !Number.isFinite(im)) {
          ok = false;
          break;
        }
        csi[(sc * nRx + rx) * 2] = re;
        csi[(sc * nRx + rx) * 2 + 1] = im;
      }
    }
    if (!ok) continue;
    h.antenna_data = { packed: csi, nRx, nSub };
    transfer.push(csi.buffer);
  }
  return transfer;
}

/**
 * The parsing worker's program: CommonJS run with `eval: true`, built from the source text of the
 * functions it runs, so it needs no file of its own and runs the same code from the TypeScript
 * sources under vitest and from `dist/`.
 */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
// Compilers may name functions with this helper; the functions below need no names.
const __name = (f) => f;
const jsonDepthExceeds = ${jsonDepthExceeds.toString()};
const packAntennas = ${packAntennas.toString()};
parentPort.on('message', (m) => {
  try {
    const text = Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('utf8');
    if (jsonDepthExceeds(text, workerData.maxDepth)) return parentPort.postMessage({ id: m.id, error: 'depth' });
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      return parentPort.postMessage({ id: m.id, error: 'syntax', message: e.message });
    }
    const transfer = packAntennas(body, workerData.maxAntennas, workerData.maxSamples);
    parentPort.postMessage({ id: m.id, body }, transfer);
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: 'internal', message: String((e && e.stack) || e) });
  }
});
`;

type WorkerReply = { id: number; body: unknown } | { id: number; error: 'depth' | 'syntax' | 'internal'; message?: string };

/**
 * One worker thread that parses large submission bodies, one at a time, in arrival order. It is
 * started on first use, does not keep the process alive, and is started afresh after a failure.
 */
class SubmissionParser {
  private worker: Worker | undefined;
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();

  parse(buf: Buffer): Promise<unknown> {
    const w = this.worker ?? this.start();
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // A body that owns its whole buffer moves to the worker; a slice of a shared one is copied.
      const whole = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength && !(buf.buffer instanceof SharedArrayBuffer);
      w.postMessage({ id, bytes: buf }, whole ? [buf.buffer as ArrayBuffer] : []);
    });
  }

  private start(): Worker {
    const w = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { maxDepth: MAX_JSON_DEPTH, maxAntennas: MAX_ANTENNAS, maxSamples: MAX_SAMPLES },
    });
    w.unref();
    w.on('message', (m: WorkerReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (!('error' in m)) p.resolve(m.body);
      else if (m.error === 'depth') p.reject(tooDeep());
      else if (m.error === 'syntax') p.reject(notJson(m.message ?? ''));
      else p.reject(new Error(`submission parser: ${m.message ?? 'failed'}`));
    });
    const fail = (e: unknown) => {
      if (this.worker === w) this.worker = undefined;
      for (const p of this.pending.values()) p.reject(e instanceof Error ? e : new Error(`submission parser stopped: ${String(e)}`));
      this.pending.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`submission parser exited with ${code}`)));
    this.worker = w;
    return w;
  }
}

const parser = new SubmissionParser();

/**
 * Reads a `POST /pose/process` body as JSON. A large one (4 MiB of samples blocks the event loop
 * for about a second on the main thread) is depth-checked, parsed and its samples checked and
 * packed in a worker thread; the loop only receives the packed result, so other requests go on
 * being answered meanwhile. Errors are the core's: 400 for a body too deep or not JSON.
 * @param buf the body
 * @returns the parsed body, with well-formed `antenna_data` packed for {@link readSubmission}
 */
export function readSubmissionJson(buf: Buffer): Promise<unknown> {
  if (buf.length < OFF_THREAD_MIN_BYTES) {
    try {
      return Promise.resolve(parseJsonBody(buf));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  return parser.parse(buf);
}
