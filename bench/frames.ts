import type { CsiFrame } from '../src/csi/frame.js';
import { CsiSimulator } from '../src/sim/simulator.js';
import { DEFAULT_RADIOS } from '../src/csi/radios.js';

/** `n` consecutive simulator frames (seeded, two people walking), the benchmarks' common input. */
export function simFrames(n: number, nSub = 30, nRx = 3, nTx = 3): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 42, people: 2, nSub: nSub as 30 | 56 | 114, nRx, nTx });
  const out: CsiFrame[] = [];
  for (let i = 0; i < n; i++) out.push(sim.next().frame);
  return out;
}

/**
 * `ticks` ticks of the default site's three links (DEFAULT_RADIOS: 1 TX + 3 RX), every frame in
 * tick order as the `sim` source delivers them (seeded, two people with generated behaviour,
 * default impairments): the physics front end's benchmark input.
 */
export function siteFrames(ticks: number, seed = 42): CsiFrame[] {
  const sim = new CsiSimulator({ seed, people: 2, radios: DEFAULT_RADIOS });
  const out: CsiFrame[] = [];
  for (let i = 0; i < ticks; i++) out.push(...sim.nextTick().frames);
  return out;
}
