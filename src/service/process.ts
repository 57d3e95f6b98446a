import { randomUUID } from 'node:crypto';
import { firstValueFrom, from, toArray } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import { SUBCARRIERS } from '../sim/simulator.js';
import { WINDOW_FRAMES } from '../model/features.js';
import { processPipeline } from '../../pipelines/process.js';
import { siteGeometry } from '../config/site.js';
import { ApiError } from '../server/errors.js';
import { Checker } from '../server/validate.js';
import { renderFrame } from '../server/render.js';
import type { Form } from '../server/forms.js';
import type { PoseService } from './service.js';

const MAX_ANTENNAS = 9;
const MAX_SAMPLES = 256;
const MAX_FRAMES = 4096;

function subcarriersFor(n: number): Int16Array {
  if (n === 30 || n === 56 || n === 114) return SUBCARRIERS[n];
  return Int16Array.from({ length: n }, (_, i) => i - (n >> 1));
}

/**
 * Reads one packet's `antenna_data`: an array per receive antenna of complex samples
 * `{real, imag}`, one per subcarrier, every antenna with the same count.
 */
function readPacket(c: Checker, v: unknown, field: string): { nRx: number; nSub: number; csi: Float32Array } | undefined {
  if (!Array.isArray(v)) {
    c.object(v === undefined ? undefined : null, field, true);
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
    c.errors.push({ field: `${field}[0]`, message: `${field}[0] must be an array of 1 to ${MAX_SAMPLES} complex samples`, received_value: Array.isArray(first) ? first.length : first });
    return undefined;
  }
  const csi = new Float32Array(nSub * nRx * 2);
  for (let rx = 0; rx < nRx; rx++) {
    const ant = v[rx];
    if (!Array.isArray(ant) || ant.length !== nSub) {
      c.errors.push({ field: `${field}[${rx}]`, message: `${field}[${rx}] must be an array of ${nSub} samples like antenna 0`, received_value: Array.isArray(ant) ? ant.length : ant });
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
      if (c.errors.length - before >= 20) return undefined;
    }
  }
  return c.errors.length > before ? undefined : { nRx, nSub, csi };
}

/**
 * POST /pose/process: validates a CSI submission field by field, runs it through the `process`
 * pipeline with the loaded model, and returns the poses. A submission is either one packet
 * (`csi_data.antenna_data`) or a sequence (`csi_data.frames`, each with `antenna_data` and an
 * optional `timestamp`). The model reads windows of WINDOW_FRAMES packets: a shorter submission
 * is padded by repeating its last packet, which makes it a static snapshot (no motion); the
 * response says how many packets were real (`frames_received`) and padded (`frames_padded`).
 */
export async function processCsi(svc: PoseService, body: unknown, form: Form): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const c = new Checker();
  const b = c.object(body, 'body', true);
  c.done();
  const csiData = c.object(b!.csi_data, 'csi_data', true);
  const opts = c.object(b!.processing_options, 'processing_options', false);
  c.only(b, '', ['csi_data', 'processing_options']);
  const cfg = svc.config.get();
  const threshold = c.number(opts?.confidence_threshold, 'processing_options.confidence_threshold', 0, 1) ?? cfg.detection.confidence_threshold;
  const maxPersons = c.int(opts?.max_persons, 'processing_options.max_persons', 1, 10) ?? cfg.detection.max_persons;
  const tracking = c.bool(opts?.enable_tracking, 'processing_options.enable_tracking') ?? false;
  const dense = c.bool(opts?.return_dense_pose, 'processing_options.return_dense_pose') ?? false;
  c.only(opts, 'processing_options', ['confidence_threshold', 'max_persons', 'enable_tracking', 'return_dense_pose']);
  let startMs = Date.now();
  let rate = 100;
  let routerId = 'submission';
  const packets: Array<{ nRx: number; nSub: number; csi: Float32Array; time?: number }> = [];
  if (csiData) {
    c.only(csiData, 'csi_data', ['timestamp', 'antenna_data', 'metadata', 'frames']);
    startMs = c.time(csiData.timestamp, 'csi_data.timestamp') ?? startMs;
    const meta = c.object(csiData.metadata, 'csi_data.metadata', false);
    c.only(meta, 'csi_data.metadata', ['router_id', 'sampling_rate', 'signal_strength']);
    routerId = c.string(meta?.router_id, 'csi_data.metadata.router_id', 128) ?? routerId;
    rate = c.number(meta?.sampling_rate, 'csi_data.metadata.sampling_rate', 1, 5000) ?? rate;
    c.number(meta?.signal_strength, 'csi_data.metadata.signal_strength', -150, 50);
    if (csiData.frames !== undefined) {
      if (!Array.isArray(csiData.frames) || csiData.frames.length < 1 || csiData.frames.length > MAX_FRAMES) {
        c.errors.push({ field: 'csi_data.frames', message: `csi_data.frames must be an array of 1 to ${MAX_FRAMES} packets`, received_value: Array.isArray(csiData.frames) ? csiData.frames.length : csiData.frames });
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
  if (!svc.model) {
    throw new ApiError('SYSTEM_NOT_READY', 'no model is loaded: start the system first (POST /system/start)', { status: svc.system.state });
  }
  const received = packets.length;
  while (packets.length < WINDOW_FRAMES) packets.push(packets[packets.length - 1]!);
  const period = 1000 / rate;
  const sourceId = `process:${routerId}`;
  const frames: CsiFrame[] = packets.map((p, i) => ({
    format: 'sim',
    sourceId,
    environmentId: cfg.environment.id,
    index: i,
    time: p.time ?? startMs + i * period,
    deviceTime: NaN,
    clockUs: NaN,
    seq: i,
    rssi: [],
    noise: NaN,
    channel: NaN,
    bandwidthMhz: NaN,
    nRx: p.nRx,
    nTx: 1,
    nSub: p.nSub,
    subcarriers: subcarriersFor(p.nSub),
    csi: p.csi,
  }));
  let poses;
  try {
    poses = await firstValueFrom(
      from(frames).pipe(
        processPipeline({
          model: svc.model,
          confidenceThreshold: threshold,
          maxPersons,
          viewWidth: cfg.environment.view.width,
          viewHeight: cfg.environment.view.height,
          includeDensePose: dense,
          tracking,
          // The configured site, as the live pipeline has it.
          site: siteGeometry(cfg),
        }),
        toArray(),
      ),
    );
  } catch (e) {
    if ((e as { code?: string }).code === 'MODEL_ERROR') throw new ApiError('MODEL_ERROR', (e as Error).message);
    throw e;
  }
  return {
    processing_id: `proc_${randomUUID()}`,
    status: 'completed',
    processing_time_ms: Math.round((performance.now() - t0) * 100) / 100,
    frames_received: received,
    frames_padded: frames.length - received,
    poses: poses.map((f) =>
      renderFrame(f, form, { minConfidence: 0, includeKeypoints: true, includeDensePose: dense, routerCount: 1, pipeline: 'process' }),
    ),
  };
}
