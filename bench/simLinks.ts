/**
 * The simulator on a site: ticks and frames per second with one link and with DEFAULT_RADIOS (three
 * links), in the ideal room and in `realism: 'room'` (docs/simulator.md "Sites: several receivers").
 *
 * Each setting runs `nextTick()` ROUND times per round (two people, generated behaviour,
 * default impairments, 30 subcarriers, 3 x 3 antennas per link), measured in CPU time of this
 * process (one core: the simulator is synchronous), rounds interleaved across the settings so that
 * the machine's load falls on all of them alike; the median round and the spread are reported, and
 * the real-time factor: simulated seconds per CPU second at the default 100 Hz.
 *
 * Run: npm run build && node dist/bench/simLinks.js [--rounds N] [--json]
 */
import { cpus } from 'node:os';
import { DEFAULT_RADIOS } from '../src/csi/radios.js';
import { CsiSimulator, type SimOptions } from '../src/sim/simulator.js';
import { consume } from './lib.js';

const ROUND = 1000;

interface Setting {
  name: string;
  opts: SimOptions;
}

const SETTINGS: Setting[] = [];
for (const realism of ['ideal', 'room'] as const) {
  SETTINGS.push({ name: `${realism}.1link`, opts: { seed: 42, people: 2, realism, radios: DEFAULT_RADIOS.slice(0, 2) } });
  SETTINGS.push({ name: `${realism}.3links`, opts: { seed: 42, people: 2, realism, radios: DEFAULT_RADIOS } });
}

function main(): void {
  const args = process.argv.slice(2);
  const rounds = Number(args[args.indexOf('--rounds') + 1] ?? '') || 9;
  const sims = SETTINGS.map((s) => new CsiSimulator(s.opts));
  const tickRates: number[][] = SETTINGS.map(() => []);
  const frameRates: number[][] = SETTINGS.map(() => []);
  // Warm-up: a round each.
  for (const sim of sims) for (let i = 0; i < ROUND; i++) consume(sim.nextTick());
  for (let r = 0; r < rounds; r++) {
    sims.forEach((sim, k) => {
      const f0 = sim.emitted;
      const p0 = sim.packets;
      const t0 = process.cpuUsage();
      for (let i = 0; i < ROUND; i++) consume(sim.nextTick());
      const d = process.cpuUsage(t0);
      const s = (d.user + d.system) / 1e6;
      // Simulated ticks (the ones every link lost included).
      tickRates[k]!.push((sim.packets - p0) / s);
      frameRates[k]!.push((sim.emitted - f0) / s);
    });
  }
  const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1]!;
  const spread = (v: number[]): number => (Math.max(...v) - Math.min(...v)) / median(v);
  const rows = SETTINGS.map((s, k) => ({
    name: `sim.${s.name}`,
    ticks_per_s: Math.round(median(tickRates[k]!)),
    frames_per_s: Math.round(median(frameRates[k]!)),
    realtime_x: Math.round(median(tickRates[k]!) / 100),
    spread: Math.round(spread(tickRates[k]!) * 100) / 100,
  }));
  const ratio = (a: string, b: string): number => {
    const i = SETTINGS.findIndex((s) => s.name === a);
    const j = SETTINGS.findIndex((s) => s.name === b);
    // Paired per round: the two settings ran back to back.
    return Math.round(median(tickRates[i]!.map((x, r) => tickRates[j]![r]! / x)) * 100) / 100;
  };
  const env = { node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, rounds, ticks_per_round: ROUND };
  const ratios = { ideal_3_over_1_ticks: ratio('ideal.1link', 'ideal.3links'), room_3_over_1_ticks: ratio('room.1link', 'room.3links') };
  if (args.includes('--json')) {
    process.stdout.write(JSON.stringify({ env, rows, ratios }, null, 2) + '\n');
    return;
  }
  console.log(`Node ${env.node}, ${env.cpu} (${env.cores} cores), ${rounds} rounds of ${ROUND} ticks, CPU time`);
  console.log('setting            ticks/s   frames/s   x real time (100 Hz)   spread');
  for (const r of rows)
    console.log(
      `${r.name.padEnd(18)} ${String(r.ticks_per_s).padStart(7)}   ${String(r.frames_per_s).padStart(8)}   ${String(r.realtime_x).padStart(20)}   ${r.spread}`,
    );
  console.log(`3 links / 1 link, ticks/s (paired per round): ideal ${ratios.ideal_3_over_1_ticks}, room ${ratios.room_3_over_1_ticks}`);
}

main();
