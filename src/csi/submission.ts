import type { CsiFrame } from './frame.js';
import { subcarriersFor } from './subcarriers.js';

/** One packet of a CSI submission: nSub x nRx x 1 interleaved samples (src/csi/frame.ts order). */
export interface SubmittedPacket {
  readonly nRx: number;
  readonly nSub: number;
  readonly csi: Float32Array;
  /** Epoch ms of the measurement; absent = placed by the submission's start and rate. */
  readonly time?: number;
}

/** What {@link submissionFrames} reads of a submission (`CsiSubmission` of `POST /pose/process`). */
export interface PacketSubmission {
  readonly packets: readonly SubmittedPacket[];
  /** Epoch ms of the first packet when packets carry no time. */
  readonly startMs: number;
  readonly rateHz: number;
  readonly routerId: string;
}

/**
 * The frames of a submission: one per packet, the last packet repeated until there are at least
 * `minFrames` (the model's window), so a short submission still fills one window. A packet
 * without a time is placed at `startMs + i / rateHz`; the frames are `format: 'submission'`, from
 * source `process:<routerId>`, with the subcarrier table of their layout.
 *
 * @param s a validated submission (at least one packet, rateHz > 0)
 * @param environmentId stamped into every frame
 * @param minFrames the least number of frames to return
 * @returns `max(packets, minFrames)` frames; the padding is `frames.length - s.packets.length`
 * @example
 * const frames = submissionFrames(s, 'lab', WINDOW_FRAMES);
 */
export function submissionFrames(s: PacketSubmission, environmentId: string, minFrames: number): CsiFrame[] {
  const packets = [...s.packets];
  while (packets.length < minFrames) packets.push(packets[packets.length - 1]!);
  const period = 1000 / s.rateHz;
  const sourceId = `process:${s.routerId}`;
  return packets.map((p, i) => ({
    format: 'submission',
    sourceId,
    environmentId,
    index: i,
    time: p.time ?? s.startMs + i * period,
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
}
