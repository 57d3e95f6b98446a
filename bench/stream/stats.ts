/**
 * Figures of the stream benchmark: percentiles of measured latencies, medians of rounds.
 * Nothing here estimates: every figure is computed from recorded timestamps.
 */
import type { Received } from './clients.js';
import type { Published } from './server.js';

import { quantile } from '../lib.js';

export { quantile };

/** The median of a few values (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

/** (max - min) / median of the rounds; undefined for one round. */
export function spread(values: readonly number[]): number | undefined {
  if (values.length < 2) return undefined;
  const m = median(values);
  return m ? (Math.max(...values) - Math.min(...values)) / Math.abs(m) : undefined;
}

/** One phase of the fan-out benchmark: one server, N clients, one measurement window. */
export interface PhaseFigures {
  p50: number;
  p99: number;
  max: number;
  /** pose_updates received per second over all clients. */
  msgsPerS: number;
  /** Frames published in the window x clients. */
  expected: number;
  received: number;
  lost: number;
  /** Mean size of the messages received, bytes. */
  meanBytes: number;
  frames: number;
  /** Pose frames per second over the window (measured from their publish times). */
  fps: number;
}

/**
 * Latency of every message of the window: client receive time minus the frame's publish time
 * (both `performance.timeOrigin + performance.now()`, in two processes of one machine). Only the
 * window's frames count (warm-up frames are left out), and every client subscribed before the
 * first of them, so each client should receive each of them once: what is missing is lost.
 * @param pub publish times of the frames of the window
 * @param recs what each client process received (frames outside the window are ignored)
 * @param clients clients connected
 * @param seconds length of the window
 */
export function phaseFigures(pub: Published, recs: readonly Received[], clients: number, seconds: number): PhaseFigures {
  const published = new Map<number, number>();
  for (let i = 0; i < pub.ids.length; i++) published.set(pub.ids[i]!, pub.times[i]!);
  let n = 0;
  let bytes = 0;
  let total = 0;
  for (const r of recs) total += r.ids.length;
  const lat = new Float64Array(total);
  for (const r of recs) {
    for (let i = 0; i < r.ids.length; i++) {
      const t = published.get(r.ids[i]!);
      if (t === undefined) continue;
      lat[n++] = r.times[i]! - t;
      bytes += r.sizes[i]!;
    }
  }
  const sorted = lat.subarray(0, n).sort();
  const expected = published.size * clients;
  return {
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: n ? sorted[n - 1]! : NaN,
    msgsPerS: n / seconds,
    expected,
    received: n,
    lost: expected - n,
    meanBytes: n ? bytes / n : NaN,
    frames: published.size,
    fps: published.size / seconds,
  };
}

/** Formats ms for notes: 12.3. */
export const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : 1) : 'n/a');
