/**
 * The pose model's memory (contract v2 input `history`): what the stream's earlier windows looked
 * like over the last seconds, so that the model sees several seconds rather than one window. A fall
 * is a burst of Doppler and motion energy followed by stillness low in the room; a person who sat
 * down a minute ago still breathes in the same place; two people who crossed are still two. One
 * window (1.28 s) cannot tell these apart, a few seconds can.
 *
 * Each window is reduced to a SUMMARY of HISTORY_DIM values taken from its feature row:
 *
 * | column | content (offsets into the feature row, see features.ts) |
 * |---|---|
 * | 0 | 1: the step is present (0 for steps before the stream began or after a gap) |
 * | 1, 2 | ln motion power of the slow and fast views (totals, 444-445) |
 * | 3..10 | Doppler: the share of motion power in each of the 8 signed bands, mean over present links (223..294) |
 * | 11..26 | derived geometry: bearings, coherences and extra path lengths (428..443) |
 * | 27..30 | fast-view eigenvalue shares (461..464) |
 *
 * The `history` input of a window is HISTORY_STEPS summaries, oldest first: step k (0-based) is
 * the summary of the stream's window that ended (HISTORY_STEPS - k) * HISTORY_STRIDE_FRAMES frames
 * before this one (HISTORY_STEPS x HISTORY_STRIDE_FRAMES = 512 frames, 5.12 s at 100 Hz; with
 * the current window the model sees 6.4 s). A step whose window is not known is all zeros.
 *
 * Frames are counted by the windows' own ends: the ring keeps the summaries of the last windows
 * with the time of their last frame and picks, for each step, the window whose end is nearest to
 * the step's time (within half a stride), so lost packets, any window hop that divides the stride
 * and restarts of the stream are all handled the same way: a step without a window near its time
 * is absent.
 */
import { FEATURE_DIM, N_DOPPLER_BANDS, N_LINKS, OFFSETS } from './features.js';

/** Summaries per `history` input. */
export const HISTORY_STEPS = 16;
/** Frames between consecutive history steps (0.32 s at 100 Hz). */
export const HISTORY_STRIDE_FRAMES = 32;
/** Values per summary. */
export const HISTORY_DIM = 31;
/** Width of one window's `history` input. */
export const HISTORY_WIDTH = HISTORY_STEPS * HISTORY_DIM;

/** Offsets of a summary's columns. */
export const SUMMARY = Object.freeze({ present: 0, totals: 1, doppler: 3, geometry: 11, eigen: 27 });

/**
 * Writes the summary of one feature row.
 * @param row FEATURE_DIM values (features.ts layout)
 * @param out receives HISTORY_DIM values at `at`
 * @param at offset in `out`
 */
export function summarise(row: Float32Array, out: Float32Array, at = 0): void {
  if (row.length < FEATURE_DIM) throw new RangeError(`summarise: row has ${row.length} values, need ${FEATURE_DIM}`);
  out[at + SUMMARY.present] = 1;
  out[at + SUMMARY.totals] = row[OFFSETS.totals]!;
  out[at + SUMMARY.totals + 1] = row[OFFSETS.totals + 1]!;
  let links = 0;
  for (let l = 0; l < N_LINKS; l++) links += row[OFFSETS.linkMask + l]! > 0.5 ? 1 : 0;
  for (let b = 0; b < N_DOPPLER_BANDS; b++) {
    let s = 0;
    for (let l = 0; l < N_LINKS; l++) s += row[OFFSETS.fastDoppler + l * N_DOPPLER_BANDS + b]!;
    out[at + SUMMARY.doppler + b] = links > 0 ? s / links : 0;
  }
  for (let i = 0; i < 16; i++) out[at + SUMMARY.geometry + i] = row[OFFSETS.geometry + i]!;
  for (let i = 0; i < 4; i++) out[at + SUMMARY.eigen + i] = row[OFFSETS.fastEigen + i]!;
}

/**
 * Milliseconds per frame of a stream for its HistoryRing: the window's rate rounded to a whole
 * hertz (the window operator estimates the rate from the frame intervals, so it wobbles a little
 * from window to window; `setFrameMs` ignores wobbles under 10 %), 100 Hz when the rate is unknown.
 * @param rateHz the window's rate estimate
 * @returns ms per frame
 */
export function frameMsOf(rateHz: number): number {
  const r = Math.round(rateHz);
  return r >= 1 && r < Infinity ? 1000 / r : 10;
}

/**
 * The summaries of one stream's recent windows, and the `history` input of its next window.
 * Keeps a fixed ring (no allocation per window).
 *
 * @example
 * const ring = new HistoryRing(10);            // 10 ms per frame (100 Hz)
 * const h = new Float32Array(HISTORY_WIDTH);
 * ring.historyFor(window.endTime, h);          // what the model gets beside this window's row
 * ring.push(window.endTime, row);              // then remember this window
 */
export class HistoryRing {
  /** Windows remembered: enough for a hop of one frame would be too many; 8 per stride covers hop >= 4. */
  private readonly capacity: number;
  private readonly times: Float64Array;
  private readonly values: Float32Array;
  private head = 0;
  private size = 0;

  /**
   * @param frameMs milliseconds per frame of the stream (10 at 100 Hz): the stride in time
   * @param windowsPerStride windows the ring keeps per stride (default 8: any hop >= stride / 8)
   */
  constructor(
    private frameMs: number,
    windowsPerStride = 8,
  ) {
    if (!(frameMs > 0 && frameMs < Infinity)) throw new RangeError(`history: frameMs must be positive, got ${frameMs}`);
    this.capacity = HISTORY_STEPS * windowsPerStride + 1;
    this.times = new Float64Array(this.capacity);
    this.values = new Float32Array(this.capacity * HISTORY_DIM);
  }

  /**
   * Milliseconds per frame (`frameMsOf`). A change of more than 10 % (another rate) forgets what
   * was kept; a smaller one (the estimate wobbling) is ignored.
   */
  setFrameMs(frameMs: number): void {
    if (!(frameMs > 0 && frameMs < Infinity) || Math.abs(frameMs - this.frameMs) <= 0.1 * this.frameMs) return;
    this.frameMs = frameMs;
    this.clear();
  }

  /** Forgets every window. */
  clear(): void {
    this.head = 0;
    this.size = 0;
  }

  /**
   * Remembers a window. Windows must come in time order; one that does not (a restarted stream)
   * clears the ring first.
   * @param endTime epoch ms of the window's last frame
   * @param row its feature row
   */
  push(endTime: number, row: Float32Array): void {
    if (this.size > 0) {
      const last = this.times[(this.head + this.capacity - 1) % this.capacity]!;
      if (!(endTime > last)) this.clear();
    }
    const i = this.head;
    this.times[i] = endTime;
    summarise(row, this.values, i * HISTORY_DIM);
    this.head = (i + 1) % this.capacity;
    if (this.size < this.capacity) this.size++;
  }

  /**
   * The `history` input of a window ending at `endTime` (layout in the module comment).
   * @param endTime epoch ms of the window's last frame
   * @param out receives HISTORY_WIDTH values at `at`
   * @param at offset in `out`
   */
  historyFor(endTime: number, out: Float32Array, at = 0): void {
    out.fill(0, at, at + HISTORY_WIDTH);
    if (this.size === 0) return;
    const stride = HISTORY_STRIDE_FRAMES * this.frameMs;
    const tolerance = stride / 2;
    // Walk back from the newest window; steps are visited newest first.
    let j = 0;
    let idx = (this.head + this.capacity - 1) % this.capacity;
    for (let k = HISTORY_STEPS - 1; k >= 0; k--) {
      const target = endTime - (HISTORY_STEPS - k) * stride;
      // Skip windows newer than the target's tolerance band, then take the nearest in it.
      while (j < this.size && this.times[idx]! > target + tolerance) {
        j++;
        idx = (idx + this.capacity - 1) % this.capacity;
      }
      if (j >= this.size) break;
      let best = -1;
      let bestD = tolerance;
      let jj = j;
      let ii = idx;
      while (jj < this.size && this.times[ii]! >= target - tolerance) {
        const d = Math.abs(this.times[ii]! - target);
        if (d <= bestD) {
          bestD = d;
          best = ii;
        }
        jj++;
        ii = (ii + this.capacity - 1) % this.capacity;
      }
      if (best >= 0) out.set(this.values.subarray(best * HISTORY_DIM, (best + 1) * HISTORY_DIM), at + k * HISTORY_DIM);
    }
  }
}
