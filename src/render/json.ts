/**
 * Stream items as JSON: CSI frames, windows and Doppler spectra (as `csipose decode` and the
 * streaming sinks print them) and pose frames (the Form B frame of `./frame.ts` with the alerts and
 * events of `./events.ts`). It lives with the renderers, above `src/csi/` and `src/pose/`, whose
 * types it reads.
 */
import type { CsiFrame, CsiWindow, DopplerSpectrum } from '../csi/frame.js';
import { isoTime } from '../csi/frame.js';
import type { PoseFrame } from '../pose/types.js';
import { renderFrame } from './frame.js';
import { renderAlert, renderEvent } from './events.js';

/** NaN and infinities are not JSON: they print as null. */
function num(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

/** `csi` as an array of [re, im] pairs in frame order. */
export function csiPairs(csi: Float32Array): Array<[number, number]> {
  const n = csi.length >> 1;
  const out = new Array<[number, number]>(n);
  for (let i = 0; i < n; i++) out[i] = [csi[2 * i]!, csi[2 * i + 1]!];
  return out;
}

/**
 * The JSON object `csipose decode` prints for a record (DECISIONS "Decoding captures"):
 * the common fields, then the format-specific fields of `meta`. `timestamp` is the record's own
 * timestamp exactly as recorded. With `withTime`, the frame's wall-clock time is added as `time`
 * (ISO 8601), which the streaming sinks print and `decode` does not.
 */
export function frameToJson(f: CsiFrame, withTime = false): Record<string, unknown> {
  const o: Record<string, unknown> = {
    format: f.format,
    index: f.index,
    timestamp: num(f.deviceTime),
    seq: num(f.seq),
    rssi: f.rssi.map(num),
    noise: num(f.noise),
    channel: num(f.channel),
    bandwidth_mhz: num(f.bandwidthMhz),
    n_rx: f.nRx,
    n_tx: f.nTx,
    n_sub: f.nSub,
  };
  if (withTime) {
    o.time = f.time > 0 ? isoTime(f.time) : null;
    o.source_id = f.sourceId;
    o.environment_id = f.environmentId;
    // Only where the source says (DECISIONS "Sites with several radios"): absent = the primary link.
    if (f.linkId !== undefined) o.link_id = f.linkId;
  }
  if (f.meta) {
    for (const [k, v] of Object.entries(f.meta)) if (!(k in o)) o[k] = v;
  }
  o.csi = csiPairs(f.csi);
  return o;
}

/** A sliding window as JSON: shape, times and the samples as a flat array (time-major). */
export function windowToJson(w: CsiWindow): Record<string, unknown> {
  return {
    kind: 'window',
    source_id: w.sourceId,
    environment_id: w.environmentId,
    window_index: w.windowIndex,
    seq: w.seq,
    start: isoTime(w.times[0]!),
    end: isoTime(w.times[w.size - 1]!),
    rate_hz: num(w.rateHz),
    size: w.size,
    n_rx: w.nRx,
    n_tx: w.nTx,
    n_sub: w.nSub,
    data: Array.from(w.data),
  };
}

/** A Doppler spectrum as JSON: one power row per stream, bins from -rate/2 upwards. */
export function spectrumToJson(s: DopplerSpectrum): Record<string, unknown> {
  const rows: number[][] = [];
  for (let i = 0; i < s.nStreams; i++) {
    rows.push(Array.from(s.power.subarray(i * s.nBins, (i + 1) * s.nBins)));
  }
  return {
    kind: 'doppler',
    source_id: s.sourceId,
    environment_id: s.environmentId,
    window_index: s.windowIndex,
    time: isoTime(s.time),
    rate_hz: num(s.rateHz),
    bin_hz: num(s.binHz),
    n_streams: s.nStreams,
    n_bins: s.nBins,
    streams: s.streams,
    power: rows,
  };
}

function isPose(v: object): v is PoseFrame {
  return 'persons' in v && 'frameId' in v;
}

/**
 * A pose frame as NDJSON: the Form B pose frame, plus the alerts (as the WebSocket `alert`
 * message) and activity events (as `/analytics/events` items) raised with it, all snake_case.
 */
export function poseToJson(f: PoseFrame): Record<string, unknown> {
  const o: Record<string, unknown> = renderFrame(f, 'b', {
    minConfidence: 0,
    includeKeypoints: true,
    includeDensePose: false,
    routerCount: 1,
    pipeline: 'live',
  });
  if (f.alerts?.length) o.alerts = f.alerts.map(renderAlert);
  if (f.events?.length) o.events = f.events.map(renderEvent);
  return o;
}

function isFrame(v: object): v is CsiFrame {
  return 'csi' in v && 'nSub' in v;
}
function isWindow(v: object): v is CsiWindow {
  return 'data' in v && 'times' in v;
}
function isSpectrum(v: object): v is DopplerSpectrum {
  return 'power' in v && 'nBins' in v;
}

/** Any stream item as one JSON line (no trailing newline). */
export function toJsonLine(v: unknown): string {
  if (v instanceof Uint8Array) return JSON.stringify({ kind: 'bytes', length: v.length });
  if (v !== null && typeof v === 'object') {
    if (isFrame(v)) return JSON.stringify(frameToJson(v, true));
    if (isWindow(v)) return JSON.stringify(windowToJson(v));
    if (isSpectrum(v)) return JSON.stringify(spectrumToJson(v));
    if (isPose(v)) return JSON.stringify(poseToJson(v));
  }
  return JSON.stringify(v, (_k, x) => (ArrayBuffer.isView(x) ? Array.from(x as Float32Array) : x));
}
