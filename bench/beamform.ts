/**
 * The physics front end's floor beamformer (src/physics/beamform.ts): milliseconds per window per
 * link, and the fusion and candidate search over the three links of DEFAULT_RADIOS.
 *
 * One person walks across the default room (ideal simulator, impairments off); each link's 64
 * packets become a MovingWindow by taking each complex entry's window mean away. The grid is the
 * default room, 6 x 5 m at 0.2 m with heights 0.5, 1.0 and 1.4 m (2418 points); 30 subcarriers,
 * 3 x 3 antennas. Each figure is the median of `--rounds` timed samples (default 31) after warm-up,
 * each sample as many calls as take about 20 ms, in CPU time of this process (one core: everything
 * is synchronous; CPU rather than wall time because the build machine is shared), with the spread
 * (max - min) / median.
 *
 * Run: `npm run bench -- --only beamform` (a suite of bench/run.ts), or after a build
 * `node dist/bench/beamform.js [--rounds N] [--json]`.
 */
import { pathToFileURL } from 'node:url';
import { DEFAULT_RADIOS, siteLinks } from '../src/csi/radios.js';
import { FloorBeamformer, floorGrid, fuseMaps } from '../src/physics/beamform.js';
import { findCandidates } from '../src/physics/candidates.js';
import { centreFrequencyHz, linkGeometry } from '../src/physics/geometry.js';
import type { MovingWindow } from '../src/physics/types.js';
import { CsiSimulator } from '../src/sim/simulator.js';
import { argValue, consume, printResults, type BenchResult } from './lib.js';

const WINDOW = 64;

/** Each link's window of `WINDOW` ticks, window mean removed per complex entry. */
function windows(sim: CsiSimulator): MovingWindow[] {
  const links = sim.links.length;
  const frames: Float32Array[][] = Array.from({ length: links }, () => []);
  let time = 0;
  for (let t = 0; t < WINDOW; t++) {
    const tick = sim.nextTick();
    tick.frames.forEach((f, l) => frames[l]!.push(f.csi));
    time = tick.truth.time;
  }
  const first = sim.links[0]!;
  const nSub = sim.subcarriers.length;
  return frames.map((fs) => {
    const len = fs[0]!.length;
    const data = new Float32Array(WINDOW * len);
    const mean = new Float64Array(len);
    for (const f of fs) for (let i = 0; i < len; i++) mean[i] = mean[i]! + f[i]! / WINDOW;
    fs.forEach((f, s) => {
      for (let i = 0; i < len; i++) data[s * len + i] = f[i]! - mean[i]!;
    });
    return { nSub, nRx: first.nRx, nTx: first.nTx, snapshots: WINDOW, data, time };
  });
}

/**
 * Median and spread of `rounds` samples, CPU milliseconds per call of this process (one core: all
 * synchronous). A sample times as many calls as make it last about 20 ms, since the CPU clock of
 * `process.cpuUsage` ticks too coarsely for a single call of a millisecond.
 */
function timeMs(fn: () => unknown, rounds: number): { median: number; spread: number } {
  for (let i = 0; i < 3; i++) consume(fn());
  const t0 = performance.now();
  consume(fn());
  const batch = Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 1e-3)));
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const c0 = process.cpuUsage();
    for (let b = 0; b < batch; b++) consume(fn());
    const d = process.cpuUsage(c0);
    ms.push((d.user + d.system) / 1000 / batch);
  }
  ms.sort((a, b) => a - b);
  const median = ms[ms.length >> 1]!;
  return { median, spread: (ms[ms.length - 1]! - ms[0]!) / median };
}

/**
 * Times the beamformer (module comment).
 * @param rounds timed calls per figure
 * @returns the `beamform.*` results
 */
export async function run(rounds = Number(argValue('--rounds') ?? '') || 31): Promise<BenchResult[]> {
  const sim = new CsiSimulator({
    seed: 3,
    radios: DEFAULT_RADIOS,
    impairments: false,
    realism: 'ideal',
    people: [{ x: 1.5, y: 1.5, height: 1.75, heading: 0, script: [{ at: 0, action: 'walk', to: { x: 4.5, y: 3.5 }, speed: 1 }] }],
  });
  // Skip the start of the walk (speeding up), then one window.
  for (let i = 0; i < 50; i++) sim.nextTick();
  const wins = windows(sim);
  const centre = centreFrequencyHz(sim.channelNumber, sim.bandwidthMhz, sim.subcarriers.length);
  const links = siteLinks(DEFAULT_RADIOS);
  const spec = { x0: 0, x1: 6, y0: 0, y1: 5 };
  const grid = floorGrid(spec);
  const t0 = process.hrtime.bigint();
  const bfs = links.map((l) => new FloorBeamformer(linkGeometry(l.tx, l.rx, sim.subcarriers, centre), grid));
  const buildMs = Number(process.hrtime.bigint() - t0) / 1e6 / links.length;
  const plain = new FloorBeamformer(linkGeometry(links[0]!.tx, links[0]!.rx, sim.subcarriers, centre), grid, { components: 0 });
  const maps = bfs.map(() => new Float32Array(grid.size));
  const fused = new Float32Array(grid.size);

  const results: BenchResult[] = [];
  const r4 = timeMs(() => bfs[0]!.beamform(wins[0]!, maps[0]!), rounds);
  results.push({
    name: 'beamform.window.r4',
    value: r4.median,
    unit: 'ms/window/link',
    n: rounds,
    spread: r4.spread,
    note: `64 snapshots, top 4 components (kept ${(bfs[0]!.capturedFraction * 100).toFixed(2)}% of the power), ${grid.size} points`,
  });
  const red = timeMs(() => bfs[0]!.reduce(wins[0]!), rounds);
  results.push({
    name: 'beamform.window.reduce',
    value: red.median,
    unit: 'ms/window/link',
    n: rounds,
    spread: red.spread,
    note: 'of which the top 4 principal components (FloorBeamformer.reduce)',
  });
  const scan = timeMs(() => bfs[0]!.scan(maps[0]!), rounds);
  results.push({
    name: 'beamform.window.scan',
    value: scan.median,
    unit: 'ms/window/link',
    n: rounds,
    spread: scan.spread,
    note: `of which the scan of the ${grid.size} points, the per-window tables already built (the 1.4 m layer is the 1.0 m one mirrored about the radios' 1.2 m and is copied)`,
  });
  const all = timeMs(() => plain.beamform(wins[0]!, maps[0]!), Math.max(5, rounds >> 2));
  results.push({
    name: 'beamform.window.plain',
    value: all.median,
    unit: 'ms/window/link',
    n: Math.max(5, rounds >> 2),
    spread: all.spread,
    note: "every one of 64 snapshots beamformed, 'delay' method",
  });
  const exact = new FloorBeamformer(linkGeometry(links[0]!.tx, links[0]!.rx, sim.subcarriers, centre), grid, { method: 'factored' });
  const fac = timeMs(() => exact.beamform(wins[0]!, maps[0]!), Math.max(5, rounds >> 2));
  results.push({
    name: 'beamform.window.factored.r4',
    value: fac.median,
    unit: 'ms/window/link',
    n: Math.max(5, rounds >> 2),
    spread: fac.spread,
    note: "top 4 components, 'factored' method (per-point T and R factors)",
  });
  const fuse = timeMs(() => {
    bfs.forEach((b, l) => b.beamform(wins[l]!, maps[l]!));
    fuseMaps(maps, fused);
    return findCandidates(fused, grid, { maxCandidates: 4 });
  }, rounds);
  results.push({
    name: 'beamform.site.3links',
    value: fuse.median,
    unit: 'ms/window',
    n: rounds,
    spread: fuse.spread,
    note: 'beamform 3 links + fuse + candidates',
  });
  results.push({ name: 'beamform.build', value: buildMs, unit: 'ms/link', n: links.length, note: 'steering factors of every grid point, once per geometry' });
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  run()
    .then((r) => printResults(r, process.argv.includes('--json')))
    .catch((e: unknown) => {
      process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}
