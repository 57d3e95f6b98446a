/**
 * The CSI frame model shared by every source, decoder and operator.
 *
 * One frame is one CSI measurement (one received packet): an nSub x nRx x nTx matrix of complex
 * channel gains plus the radio metadata that came with it. Samples live in one interleaved
 * Float32Array (re, im) ordered subcarrier first, then receive antenna, then transmit antenna:
 *
 *     complex index c = (sc * nRx + rx) * nTx + tx;  re = csi[2c], im = csi[2c + 1]
 *
 * (DECISIONS "Decoding captures".) Operators never mutate a frame they receive: they emit a new
 * frame object (usually `{ ...frame, csi: out }`), so a frame may be shared by several subscribers.
 */

/**
 * Formats a frame can come from: the name of the decoder that read it (`DECODERS`,
 * src/decoders/registry.ts, where a format is added, at build time or with `registerDecoder`),
 * `sim` the built-in simulator, or `submission` a packet of a CSI submission (`POST
 * /pose/process`, src/csi/submission.ts). A string, not a union: the decoders sit above this
 * module, and a registered format is known only when the process runs.
 */
export type CsiFormat = string;

/** OFDM subcarrier spacing of 802.11n/ac, Hz: `CsiFrame.subcarriers` count in these steps. */
export const SUBCARRIER_SPACING_HZ = 312_500;

export interface CsiFrame {
  /** Where the frame was decoded from. */
  readonly format: CsiFormat;
  /** Identifies the sender (file path, `udp://host:port`, `sim`, ...). */
  readonly sourceId: string;
  /** The environment (room) this frame belongs to; config `environment.id`. */
  readonly environmentId: string;
  /**
   * The link (transmitter-receiver pair, `<tx>-<rx>`, src/csi/radios.ts) the frame was received on;
   * `link_id` in JSON. Absent when the source does not say: the frame then belongs to the
   * environment's primary link (its first receiver).
   */
  readonly linkId?: string;
  /** Zero-based position of the record in its source, in arrival/file order. */
  readonly index: number;
  /**
   * Wall-clock time of the measurement, Unix epoch milliseconds (may be fractional).
   * From the record when the format carries wall time (pcap), else stamped by the source on
   * arrival (or derived from the device clock during replay). 0 when not yet known.
   */
  readonly time: number;
  /** The record's own timestamp exactly as recorded, in the format's units (printed by `decode`). */
  readonly deviceTime: number;
  /**
   * The device clock in microseconds when the format has one that can pace a replay
   * (Intel 5300 timestamp_low, Atheros TSF, pcap time, ESP32 local_timestamp); NaN otherwise.
   */
  readonly clockUs: number;
  /** Sequence number as recorded (Intel bfee_count, 802.11 sequence number, ...), else the index. */
  readonly seq: number;
  /** RSSI per receive antenna as recorded (dB or dBm depending on hardware); NaN where absent. */
  readonly rssi: readonly number[];
  /** Noise floor as recorded (dBm); NaN where the format does not carry it. */
  readonly noise: number;
  /** 802.11 channel number; NaN where unknown. */
  readonly channel: number;
  /** Channel bandwidth in MHz (20, 40, 80, 160); NaN where unknown. */
  readonly bandwidthMhz: number;
  readonly nRx: number;
  readonly nTx: number;
  readonly nSub: number;
  /** Subcarrier indices (relative to the centre, in 312.5 kHz steps), length nSub, in sample order. */
  readonly subcarriers: Int16Array;
  /** Interleaved complex samples, length nSub * nRx * nTx * 2; see the module comment for order. */
  readonly csi: Float32Array;
  /** Format-specific fields printed by `csipose decode` (snake_case keys), e.g. `bfee_count`, `perm`. */
  readonly meta?: Readonly<Record<string, unknown>>;
}

/** Index of the real part of (sc, rx, tx) in `frame.csi`. */
export function csiOffset(nRx: number, nTx: number, sc: number, rx: number, tx: number): number {
  return ((sc * nRx + rx) * nTx + tx) * 2;
}

/** ISO 8601 UTC string with millisecond precision for a frame's wall-clock time. */
export function isoTime(ms: number): string {
  return new Date(Math.round(ms)).toISOString();
}

/** Number of complex streams (links x subcarriers) in a frame. */
export function streamCount(f: Pick<CsiFrame, 'nSub' | 'nRx' | 'nTx'>): number {
  return f.nSub * f.nRx * f.nTx;
}

/**
 * A run of consecutive frames of one shape, as emitted by the sliding window operator.
 * `data` is time-major: frame t's interleaved CSI occupies data[t*frameLen, (t+1)*frameLen),
 * with frameLen = nSub*nRx*nTx*2 laid out as in CsiFrame.
 */
export interface CsiWindow {
  readonly sourceId: string;
  readonly environmentId: string;
  /** The link of its frames (`CsiFrame.linkId`); absent = the environment's primary link. */
  readonly linkId?: string;
  /** Number of frames in the window. */
  readonly size: number;
  readonly nRx: number;
  readonly nTx: number;
  readonly nSub: number;
  readonly subcarriers: Int16Array;
  /** Wall-clock time (epoch ms) of each frame, length `size`. */
  readonly times: Float64Array;
  /** Sampling rate in Hz: nominal when frames were resampled, else estimated from `times`. */
  readonly rateHz: number;
  /** Sequence number of the first frame. */
  readonly seq: number;
  /** Count of windows emitted before this one by the same window operator subscription. */
  readonly windowIndex: number;
  readonly data: Float32Array;
  /** 802.11 channel number of the newest frame (its band tells the model's layout check); NaN or absent when unknown. */
  readonly channel?: number;
}

/**
 * How many frames `w` moved on from `prev` when `w` continues `prev` (consecutive overlapping
 * windows of one stream, hop < size), else 0. Checked on the times of the whole overlap and on
 * every sample of `w`'s first frame (NaN matching NaN), so frames of another stream, or rewritten
 * data, are never taken for shared ones. Callers that keep per-frame state across windows (the
 * features and doppler operators) reuse the overlap's share of it; they check first that the
 * windows come from the same source and have the same shape.
 * @param prev the previous window, if any
 * @param w the new window (same frameLen as `prev`)
 * @param frameLen values per frame (nSub x nRx x nTx x 2)
 * @returns frames shifted, 1..size-1, or 0 when the windows do not overlap
 */
export function windowShift(prev: CsiWindow | undefined, w: CsiWindow, frameLen: number): number {
  if (!prev || prev.size !== w.size) return 0;
  const size = w.size;
  const t0 = w.times[0]!;
  let k = 1;
  while (k < size && prev.times[k] !== t0) k++;
  if (k >= size) return 0;
  for (let t = 0; t < size - k; t++) if (prev.times[t + k] !== w.times[t]) return 0;
  const off = k * frameLen;
  for (let i = 0; i < frameLen; i++) {
    const a = prev.data[off + i]!;
    const b = w.data[i]!;
    if (a !== b && !(a !== a && b !== b)) return 0;
  }
  return k;
}

/**
 * A Doppler spectrum: power per (stream, frequency bin) over one window.
 * `power` is stream-major: power[s * nBins + b]; bins run from -rateHz/2 up (fftshifted),
 * bin b has frequency (b - nBins/2) * binHz.
 */
export interface DopplerSpectrum {
  readonly sourceId: string;
  readonly environmentId: string;
  /** Wall-clock time (epoch ms) of the window's last frame. */
  readonly time: number;
  readonly windowIndex: number;
  readonly nStreams: number;
  readonly nBins: number;
  readonly binHz: number;
  readonly rateHz: number;
  /** What each stream is, e.g. `rx0-tx0 sc[-28..-20]`; length nStreams. */
  readonly streams: readonly string[];
  readonly power: Float32Array;
}

/**
 * Checks that a frame's declared shape and its sample array agree (and, with `subcarriers`, that
 * it lists one index per subcarrier); operators call it before touching samples.
 * @param frame the frame
 * @param op operator name for the message
 * @throws RangeError naming the operator, the frame and what disagrees
 */
export function assertFrameShape(frame: CsiFrame, op: string, subcarriers = false): void {
  const { nRx, nTx, nSub } = frame;
  if (!(Number.isInteger(nRx) && nRx > 0 && Number.isInteger(nTx) && nTx > 0 && Number.isInteger(nSub) && nSub > 0))
    throw new RangeError(`${op}: frame ${frame.index} has an invalid shape ${nRx}x${nTx}x${nSub}`);
  if (frame.csi.length !== nSub * nRx * nTx * 2)
    throw new RangeError(`${op}: frame ${frame.index} has ${frame.csi.length} csi values, expected ${nSub * nRx * nTx * 2} for ${nRx}x${nTx}x${nSub}`);
  if (subcarriers && frame.subcarriers.length !== nSub)
    throw new RangeError(`${op}: frame ${frame.index} lists ${frame.subcarriers.length} subcarriers, expected ${nSub}`);
}
