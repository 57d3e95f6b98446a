/**
 * The named results of the fan-out benchmark (DECISIONS "Benchmark output"), from the phases'
 * figures: medians over rounds, their spread, and the ratios the targets are judged by.
 */
import type { BenchResult } from '../lib.js';
import type { Plan } from './plan.js';
import { median, ms, spread, type PhaseFigures } from './stats.js';

export type Side = 'ours' | 'baseline';

/** One phase's figures with what else it saw. */
export interface Phase extends PhaseFigures {
  connectMs: number;
  /** Pose frames uWS dropped for clients over the backpressure limit (ours only). */
  dropped: number;
  unexpectedCloses: number;
  /** CPU per frame of the window, ms: the server process (pipeline included) and the client processes. */
  serverUser: number;
  serverSys: number;
  clientUser: number;
  clientSys: number;
}

/** Per (clients, sets) key `N/S`: each side's phases, in round order. */
export type Runs = Map<string, Record<Side, Phase[]>>;

/** Result names: `ws.p99_ms_1000`, `ws.baseline.p99_ms_1000_f10`, ... */
function name(side: Side, figure: string, n: number, sets: number): string {
  return `ws.${side === 'baseline' ? 'baseline.' : ''}${figure}_${n}${sets === 10 ? '_f10' : sets === 1 ? '' : `_f${sets}`}`;
}

/** The results of one (clients, sets) configuration from its rounds. */
export function configResults(runs: Record<Side, Phase[]>, n: number, sets: number, plan: Plan): BenchResult[] {
  const out: BenchResult[] = [];
  const rate = median([...runs.ours, ...runs.baseline].map((p) => p.fps));
  const ph0frames = runs.ours[0]?.frames ?? 0;
  const where = `${rate.toFixed(2)} pose frames/s (simulator), ${n} clients, ${sets} filter set${sets > 1 ? 's' : ''}, ${plan.rounds === 1 ? '1 round (ours, plain ws)' : `${plan.rounds} rounds (ours, plain ws, ours, ...)`}, the same ${ph0frames} frames in ${plan.measureMs / 1000} s windows`;
  for (const side of ['ours', 'baseline'] as const) {
    const ph = runs[side];
    const msgs = ph.reduce((s, p) => s + p.received, 0);
    const per = (f: (p: Phase) => number) => ph.map(f);
    const fig = (figure: string, unit: string, f: (p: Phase) => number, note?: string): void => {
      const v = per(f);
      const r: BenchResult = { name: name(side, figure, n, sets), value: median(v), unit, n: msgs };
      const s = spread(v);
      if (s !== undefined) r.spread = s;
      r.note = note ?? `${where}; rounds ${v.map((x) => (unit === 'ms' ? ms(x) : Math.round(x))).join(', ')}`;
      out.push(r);
    };
    const label = side === 'ours' ? 'uWS /ws/pose' : 'plain ws broadcast';
    fig(
      'p50_ms',
      'ms',
      (p) => p.p50,
      `${label}; ${where}; rounds ${per((p) => p.p50)
        .map(ms)
        .join(', ')}`,
    );
    fig(
      'p99_ms',
      'ms',
      (p) => p.p99,
      `${label}; ${where}; rounds ${per((p) => p.p99)
        .map(ms)
        .join(', ')}`,
    );
    fig('max_ms', 'ms', (p) => p.max);
    fig('msgs_per_s', 'messages/s', (p) => p.msgsPerS);
    fig(
      'server_cpu_ms_per_frame',
      'ms',
      (p) => p.serverUser + p.serverSys,
      `${label}: CPU time of the server process per pose frame over the window (the pipeline included, the same in both), ` +
        `user ${per((p) => p.serverUser)
          .map(ms)
          .join(', ')} + system ${per((p) => p.serverSys)
          .map(ms)
          .join(', ')} ms; ` +
        `client processes user ${per((p) => p.clientUser)
          .map(ms)
          .join(', ')} + system ${per((p) => p.clientSys)
          .map(ms)
          .join(', ')} ms; ${where}`,
    );
    const list = (f: (p: Phase) => number) => ph.map((p) => Math.round(f(p))).join(', ');
    const dropped = side === 'ours' ? `, dropped by uWS backpressure ${list((p) => p.dropped)}` : '';
    fig(
      'lost',
      'messages',
      (p) => p.lost,
      `${label}; expected ${list((p) => p.expected)}, received ${list((p) => p.received)}${dropped}, ` +
        `unexpected closes ${list((p) => p.unexpectedCloses)}, connect ms ${list((p) => p.connectMs)}; ${where}`,
    );
  }
  const ratios = runs.ours.map((p, i) => p.p99 / runs.baseline[i]!.p99);
  const ratio: BenchResult = {
    name: `ws.ratio_p99_${n}${sets === 10 ? '_f10' : ''}`,
    value: median(ratios),
    unit: 'ratio',
    n: ratios.length,
    note: `p99 of uWS /ws/pose over p99 of the plain ws broadcast in the same round (< 1: ours faster); ${where}; rounds ${ratios.map((r) => r.toFixed(3)).join(', ')}`,
  };
  const s = spread(ratios);
  if (s !== undefined) ratio.spread = s;
  out.push(ratio);
  return out;
}

/**
 * Results over configurations: 10 filter sets against 1 (ours, per client count) and the mean
 * message size.
 * @param runs every configuration's phases
 * @param rates client count -> pose frames/s of its server
 */
export function summaryResults(runs: Runs, rates: ReadonlyMap<number, number>): BenchResult[] {
  const out: BenchResult[] = [];
  for (const n of rates.keys()) {
    const f1 = runs.get(`${n}/1`);
    const f10 = runs.get(`${n}/10`);
    if (!f1 || !f10) continue;
    const a = median(f1.ours.map((p) => p.p99));
    const b = median(f10.ours.map((p) => p.p99));
    out.push({
      name: `ws.ratio_f10_over_f1_${n}`,
      value: b / a,
      unit: 'ratio',
      n: f1.ours.length + f10.ours.length,
      note: `uWS /ws/pose p99 with 10 filter sets (${ms(b)} ms) over 1 set (${ms(a)} ms), ${n} clients, about ${rates.get(n)!.toFixed(1)} pose frames/s, the same frames`,
    });
  }
  const ours = [...runs.values()].flatMap((r) => r.ours);
  const msgs = ours.reduce((s, p) => s + p.received, 0);
  out.push({
    name: 'ws.msg_bytes',
    value: ours.reduce((s, p) => s + p.meanBytes * p.received, 0) / msgs,
    unit: 'bytes',
    n: msgs,
    note: "mean size of the pose_update messages received from /ws/pose (the simulator's default scene, keypoints, no dense pose)",
  });
  return out;
}
