/**
 * Progress on stderr: a bar rewritten in place when stderr is a terminal, plain lines every few
 * seconds otherwise (CI logs, pipes), so a log file is not flooded with carriage returns.
 */

/** Where progress goes: process.stderr in practice, anything with write and isTTY in tests. */
export interface ProgressStream {
  write(s: string): unknown;
  isTTY?: boolean;
}

/** Seconds as `1m05s` / `42s`. */
export function formatSeconds(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '?';
  const r = Math.round(s);
  return r >= 60 ? `${Math.floor(r / 60)}m${String(r % 60).padStart(2, '0')}s` : `${r}s`;
}

/** A text bar of `width` cells for a fraction 0..1. */
export function bar(fraction: number, width = 20): string {
  const f = Math.max(0, Math.min(1, fraction));
  const full = Math.round(f * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

/**
 * Reports progress of a long step.
 *
 * @example
 * const p = new Progress(process.stderr);
 * p.update(`epoch 1/8 ${bar(0.5)} loss 3.21`);
 * p.done('trained in 2m10s');
 */
export class Progress {
  private last = 0;
  private live = false;

  /**
   * @param out the stream (stderr)
   * @param intervalMs least time between plain lines when `out` is not a terminal
   * @param now clock, ms
   */
  constructor(
    private readonly out: ProgressStream,
    private readonly intervalMs = 5000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Shows the current state: rewrites the bar on a terminal, else prints a line when the interval
   * has passed since the last one (or `force`).
   * @param text the state
   * @param force print even if the interval has not passed
   */
  update(text: string, force = false): void {
    if (this.out.isTTY) {
      this.out.write(`\r${text}\x1b[K`);
      this.live = true;
      return;
    }
    const t = this.now();
    if (!force && this.last !== 0 && t - this.last < this.intervalMs) return;
    this.last = t;
    this.out.write(`${text}\n`);
  }

  /**
   * Ends the step with a final line.
   * @param text the summary
   */
  done(text: string): void {
    if (this.out.isTTY && this.live) this.out.write('\r\x1b[K');
    this.live = false;
    this.last = 0;
    this.out.write(`${text}\n`);
  }
}
