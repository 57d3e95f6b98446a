import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/**
 * Rates and averages over a sliding time window, measured from the running process: no figure
 * here is estimated or made up.
 */
export class RateMeter {
  private readonly times: Float64Array;
  private head = 0;
  private n = 0;
  total = 0;

  /** @param capacity events remembered (the rate covers at most this many) */
  constructor(
    capacity = 4096,
    private readonly windowMs = 5000,
  ) {
    this.times = new Float64Array(capacity);
  }

  mark(now = performance.now(), count = 1): void {
    this.total += count;
    for (let i = 0; i < count; i++) {
      this.times[this.head] = now;
      this.head = (this.head + 1) % this.times.length;
      if (this.n < this.times.length) this.n++;
    }
  }

  /** Events per second over the last `windowMs` (or the span the ring holds). */
  rate(now = performance.now()): number {
    if (this.n === 0) return 0;
    const cap = this.times.length;
    let count = 0;
    let oldest = now;
    for (let i = 1; i <= this.n; i++) {
      const t = this.times[(this.head - i + cap) % cap]!;
      if (now - t > this.windowMs) break;
      count++;
      oldest = t;
    }
    if (count === 0) return 0;
    const span = count === this.n && this.n === cap ? Math.max(now - oldest, 1) : this.windowMs;
    return (count * 1000) / span;
  }
}

/** Exponentially weighted mean (alpha per sample). */
export class Ewma {
  value = NaN;
  constructor(private readonly alpha = 0.1) {}
  add(v: number): void {
    if (!Number.isFinite(v)) return;
    this.value = Number.isNaN(this.value) ? v : this.value + this.alpha * (v - this.value);
  }
}

/** CPU use of this process in percent of one core's capacity times the cores (0-100 of the machine). */
export class CpuMeter {
  private last = process.cpuUsage();
  private lastT = performance.now();
  private value = 0;

  /** Percent of the whole machine's CPU used by this process since the previous call (>= 250 ms apart). */
  sample(): number {
    const now = performance.now();
    const dt = now - this.lastT;
    if (dt < 250) return this.value;
    const u = process.cpuUsage(this.last);
    this.last = process.cpuUsage();
    this.lastT = now;
    this.value = Math.min(100, ((u.user + u.system) / 1000 / dt / cpus().length) * 100);
    return this.value;
  }
}

/** Resident memory of this process in percent of the machine's memory. */
export function memoryPercent(): number {
  return (process.memoryUsage().rss / totalmem()) * 100;
}

/** Resident memory in MiB. */
export function memoryMiB(): number {
  return process.memoryUsage().rss / 1048576;
}

/**
 * Disk throughput of this process from /proc/self/io (Linux): MB/s read and written since the
 * previous sample. Null where /proc is not available.
 */
export class DiskIoMeter {
  private last: { t: number; r: number; w: number } | undefined;
  private value: { read_mb_per_sec: number; write_mb_per_sec: number } | null = null;

  sample(): { read_mb_per_sec: number; write_mb_per_sec: number } | null {
    let text: string;
    try {
      text = readFileSync('/proc/self/io', 'utf8');
    } catch {
      return null;
    }
    const r = Number(/read_bytes:\s*(\d+)/.exec(text)?.[1] ?? NaN);
    const w = Number(/write_bytes:\s*(\d+)/.exec(text)?.[1] ?? NaN);
    const t = performance.now();
    if (!Number.isFinite(r) || !Number.isFinite(w)) return null;
    if (this.last && t - this.last.t >= 250) {
      const dt = (t - this.last.t) / 1000;
      this.value = {
        read_mb_per_sec: Math.round(((r - this.last.r) / 1048576 / dt) * 1000) / 1000,
        write_mb_per_sec: Math.round(((w - this.last.w) / 1048576 / dt) * 1000) / 1000,
      };
      this.last = { t, r, w };
    } else if (!this.last) {
      this.last = { t, r, w };
      this.value = { read_mb_per_sec: 0, write_mb_per_sec: 0 };
    }
    return this.value;
  }
}

/** A logger that also counts what it logs at level `error`. */
export type CountingLogger<L extends string> = ((level: L, msg: string) => void) & { readonly errors: number };

/**
 * Wraps a logger so that every message at level `error` is counted: the count goes into each
 * metrics sample (`system_metrics.error_count`), the summary's `error_count` of a period.
 * @param log the logger to pass every message on to
 * @returns the counting logger
 * @example const log = countErrors(console.log); log('error', 'x'); log.errors // 1
 */
export function countErrors<L extends string>(log: (level: L, msg: string) => void): CountingLogger<L> {
  let errors = 0;
  const counting = (level: L, msg: string): void => {
    if (level === 'error') errors++;
    log(level, msg);
  };
  return Object.defineProperty(counting, 'errors', { get: () => errors, enumerable: true }) as CountingLogger<L>;
}
