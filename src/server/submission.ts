import type { CsiSubmission } from '../service/face.js';
import { configParam } from '../config/params.js';
import type { ConfigSnapshot } from '../config/store.js';
import { Checker } from './validate.js';

/** Receive antennas, subcarriers and packets one submission may hold. */
export const MAX_ANTENNAS = 9;
export const MAX_SAMPLES = 256;
export const MAX_FRAMES = 4096;
/** Errors reported per packet before giving up on it (one bad packet can hold thousands). */
const MAX_PACKET_ERRORS = 20;

type Packet = CsiSubmission['packets'][number];

/**
 * Reads one packet's `antenna_data`: an array per receive antenna of complex samples
 * `{real, imag}`, one per subcarrier, every antenna with the same count.
 */
function readPacket(c: Checker, v: unknown, field: string): Packet | undefined {
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
