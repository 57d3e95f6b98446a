import { cpus } from 'node:os';

/** One measured figure, as DECISIONS "Benchmark output" defines it. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** Sample count behind the figure (items processed per round x rounds). */
  n: number;
  /** Relative spread of the rounds: (max - min) / median. */
  spread?: number;
  note?: string;
  /** 95 % interval of the figure, [lo, hi], where the benchmark gives one (its note says how). */
  ci95?: [number, number];
}

export interface MeasureOptions {
  /** Items processed by one call of `fn`. */
  items: number;
  /** Rounds after warm-up; the median is reported. Default 7. */
  rounds?: number;
  /** Warm-up calls. Default 2. */
  warmup?: number;
}

/** Keeps results observable so the optimiser cannot drop the work. */
export let sink: unknown;
export function consume(v: unknown): void {
  sink = v;
}

/**
 * Runs `fn` repeatedly and reports the median throughput in items per second.
 * @param name result name (e.g. `decode.intel5300`)
 * @param unit e.g. `records/s`
 * @param fn processes `opts.items` items per call (may be async)
 */
export async function throughput(name: string, unit: string, fn: () => unknown | Promise<unknown>, opts: MeasureOptions): Promise<BenchResult> {
  const rounds = opts.rounds ?? 7;
  for (let i = 0; i < (opts.warmup ?? 2); i++) consume(await fn());
  const rates: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    consume(await fn());
    const ns = Number(process.hrtime.bigint() - t0);
    rates.push((opts.items * 1e9) / ns);
  }
  rates.sort((a, b) => a - b);
  const median = rates[rates.length >> 1]!;
  return { name, value: median, unit, n: opts.items * rounds, spread: (rates[rates.length - 1]! - rates[0]!) / median };
}

/**
 * The p-quantile of sorted values by nearest rank (p99 of 1,000 values is the 990th).
 * @param sorted ascending
 * @param p in (0, 1]
 */
export function quantile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** Node version and CPU model, recorded with every set of figures. */
export function machine(): { node: string; cpu: string } {
  const c = cpus();
  return { node: process.version, cpu: `${c[0]?.model ?? 'unknown'} (${c.length} cores)` };
}

/**
 * A number with fixed digits for a report table; `n/a` when it is not finite.
 * @example fixed(0.51234) // '0.512'
 */
export const fixed = (v: number, digits = 3): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

/**
 * A fraction as a percentage with one decimal; `n/a` when it is not finite.
 * @example percent(0.376) // '37.6%'
 */
export const percent = (v: number): string => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : 'n/a');

/**
 * The value after a command-line flag (`--model PATH` -> 'PATH'), or undefined without the flag.
 * @example argValue('--split') // 'val' for `node bench/accuracy.js --split val`
 */
export function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function fmt(v: number): string {
  if (v >= 1000) return Math.round(v).toLocaleString('en-US');
  if (v >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/** The results as a Markdown table. */
export function table(results: readonly BenchResult[]): string {
  const rows = results.map(
    (r) => `| ${r.name} | ${fmt(r.value)} | ${r.unit} | ${r.n} | ${r.spread !== undefined ? (r.spread * 100).toFixed(1) + '%' : ''} | ${r.note ?? ''} |`,
  );
  return ['| benchmark | median | unit | n | spread | note |', '|---|---:|---|---:|---:|---|', ...rows].join('\n');
}

/**
 * Prints results as DECISIONS "Benchmark output" has them: one JSON document with `--json`
 * (non-finite values as null), a Markdown table otherwise; both with the Node version and CPU.
 */
export function printResults(results: readonly BenchResult[], json: boolean): void {
  const m = machine();
  if (json) {
    const clean = results.map((r) => ({ ...r, value: Number.isFinite(r.value) ? r.value : null }));
    process.stdout.write(JSON.stringify({ node: m.node, cpu: m.cpu, results: clean }, null, 2) + '\n');
  } else {
    process.stdout.write(`node ${m.node}, ${m.cpu}\n\n${table(results)}\n`);
  }
}
