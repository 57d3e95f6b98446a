import type { CsiFrame } from '../src/csi/frame.js';
import { CsiSimulator } from '../src/sim/simulator.js';

/** `n` consecutive simulator frames (seeded, two people walking), the benchmarks' common input. */
export function simFrames(n: number, nSub = 30, nRx = 3, nTx = 3): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 42, people: 2, nSub: nSub as 30 | 56 | 114, nRx, nTx });
  const out: CsiFrame[] = [];
  for (let i = 0; i < n; i++) out.push(sim.next().frame);
  return out;
}
