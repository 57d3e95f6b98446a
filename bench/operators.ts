import { from, type OperatorFunction } from 'rxjs';
import { registry } from '../pipelines/index.js';
import { resolveParams } from '../src/engine/params.js';
import type { CsiFrame } from '../src/csi/frame.js';
import { simFrames } from './frames.js';
import { throughput, consume, type BenchResult } from './lib.js';

/** Runs `items` through `op` synchronously; returns the number of outputs. */
function drive(items: readonly unknown[], op: OperatorFunction<unknown, unknown>): number {
  let n = 0;
  let last: unknown;
  from(items)
    .pipe(op)
    .subscribe((v) => {
      n++;
      last = v;
    });
  consume(last);
  return n;
}

function op(name: string, params: Record<string, unknown> = {}): OperatorFunction<unknown, unknown> {
  const spec = registry.operators.get(name)!;
  return spec.create(resolveParams(spec.params, params), {});
}

/**
 * Per-operator throughput on 3x3x30 simulator frames, in frames per second (doppler: windows in,
 * reported per input frame at hop 8 as well as per window).
 */
export async function run(): Promise<BenchResult[]> {
  const N = 20_000;
  const frames: CsiFrame[] = simFrames(N);
  const out: BenchResult[] = [];
  const perFrame: Array<[string, string, Record<string, unknown>]> = [
    ['op.sanitize.phasor', 'sanitize', { method: 'phasor' }],
    ['op.sanitize.fit', 'sanitize', { method: 'fit' }],
    ['op.hampel', 'hampel', {}],
    ['op.normalize', 'normalize', {}],
    ['op.conj', 'conj', {}],
    ['op.resample', 'resample', {}],
    ['op.window', 'window', { size: 64, hop: 8 }],
  ];
  for (const [name, opName, params] of perFrame) {
    out.push(await throughput(name, 'frames/s', () => drive(frames, op(opName, params)), { items: N, rounds: 5 }));
  }
  // Doppler consumes windows: measure it on prebuilt windows, then express per frame at hop 8.
  const windows: unknown[] = [];
  from(frames.slice(0, 64 + 8 * 999))
    .pipe(op('window', { size: 64, hop: 8 }))
    .subscribe((w) => windows.push(w));
  for (const groups of [3, 0]) {
    const r = await throughput(`op.doppler.groups${groups}`, 'windows/s', () => drive(windows, op('doppler', { groups })), {
      items: windows.length,
      rounds: 5,
    });
    r.note = `64-frame windows of 3x3x30; ${groups === 0 ? 270 : 27} streams; = ${Math.round(r.value * 8).toLocaleString('en-US')} frames/s at hop 8`;
    out.push(r);
  }
  return out;
}
