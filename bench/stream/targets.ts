/**
 * The targets of the streaming outlet, checked against what was measured (never against an
 * estimate): a target whose figure is missing is reported as not measured, not as met.
 */
import type { BenchResult } from '../lib.js';

interface Target {
  what: string;
  /** The result names the target reads. */
  names: (results: readonly BenchResult[]) => string[];
  met: (v: number) => boolean;
  bound: string;
}

const TARGETS: Target[] = [
  {
    what: 'at 1,000 clients (1 filter set) our p99 no worse than the plain ws broadcast',
    names: () => ['ws.ratio_p99_1000'],
    met: (v) => v <= 1,
    bound: '<= 1',
  },
  { what: 'at 100 clients our p99 under 10 ms', names: () => ['ws.p99_ms_100'], met: (v) => v < 10, bound: '< 10 ms' },
  {
    what: '10 filter sets within 1.25x of one (our p99)',
    names: (rs) => rs.filter((r) => r.name.startsWith('ws.ratio_f10_over_f1_')).map((r) => r.name),
    met: (v) => v <= 1.25,
    bound: '<= 1.25',
  },
];

/**
 * One line per target and figure: MET, MISSED or not measured.
 * @param results what the run measured
 */
export function verdict(results: readonly BenchResult[]): string {
  const lines = ['targets:'];
  for (const t of TARGETS) {
    const names = t.names(results);
    if (names.length === 0) lines.push(`  not measured  ${t.what}`);
    for (const n of names) {
      const r = results.find((x) => x.name === n);
      if (!r || !Number.isFinite(r.value)) lines.push(`  not measured  ${t.what} (${n})`);
      else
        lines.push(
          `  ${t.met(r.value) ? 'MET   ' : 'MISSED'}        ${t.what}: ${n} = ${r.value.toFixed(3)} (target ${t.bound})${r.spread !== undefined ? `, spread ${(r.spread * 100).toFixed(0)}%` : ''}`,
        );
    }
  }
  return lines.join('\n');
}
