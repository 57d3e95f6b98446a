/**
 * `csipose run --pipeline physics` on the simulator's default site (three links): the built
 * command line writes one floor map per primary window as a JSON line (operators/floorMap.ts,
 * the ndjson sink's floorMapToJson).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { cliMain, ensureBuilt, ndjson, runCli } from '../helpers/cli.js';
import { DEFAULT_MAX_CANDIDATES } from '../../operators/floorMap.js';

beforeAll(() => ensureBuilt(), 120_000);

interface FloorMapLine {
  kind: string;
  environment_id: string;
  time: string;
  grid: { x0: number; y0: number; cell: number; nx: number; ny: number; heights: number[] };
  links: string[];
  candidates: Array<{ x: number; y: number; z: number; power: number; index: number }>;
  map: number[];
}

describe('csipose run --pipeline physics', () => {
  it('writes one floor map per window of the simulated site, --limit of them', async () => {
    expect(cliMain).toMatch(/main\.js$/);
    const r = await runCli(['run', '--pipeline', 'physics', '--source', 'sim?people=1&seed=3&links=3', '--sink', 'ndjson', '--fast', '--limit', '12'], {
      timeoutMs: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = ndjson<FloorMapLine>(r.stdout);
    expect(lines.length).toBe(12);
    for (const m of lines) {
      expect(Object.keys(m)).toEqual(['kind', 'environment_id', 'time', 'grid', 'links', 'candidates', 'map']);
      expect(m.kind).toBe('floormap');
      expect(m.environment_id).toBe('default');
      expect(m.grid).toEqual({ x0: 0, y0: 0, cell: 0.2, nx: 31, ny: 26, heights: [0.5, 1, 1.4] });
      expect(m.map.length).toBe(31 * 26 * 3);
      expect(m.map.every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
      expect(m.candidates.length).toBeGreaterThan(0);
      expect(m.candidates.length).toBeLessThanOrEqual(DEFAULT_MAX_CANDIDATES);
      for (const c of m.candidates) expect(c.x >= 0 && c.x <= 6 && c.y >= 0 && c.y <= 5).toBe(true);
    }
    // Every link of the default site from the second window on.
    expect(lines.slice(1).every((m) => m.links.join() === 'tx-rx1,tx-rx2,tx-rx3')).toBe(true);
    // One window every 16 packets at 100 Hz.
    const t = lines.map((m) => Date.parse(m.time));
    for (let i = 1; i < t.length; i++) expect(t[i]! - t[i - 1]!).toBeGreaterThanOrEqual(150);
  }, 90_000);

  it('the pipeline parameters pass through: maxCandidates', async () => {
    const r = await runCli(['run', '--pipeline', 'physics floorMap.maxCandidates=2', '--source', 'sim?people=2&seed=3&links=3', '--fast', '--limit', '3'], {
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(0);
    const lines = ndjson<FloorMapLine>(r.stdout);
    expect(lines.length).toBe(3);
    expect(lines.every((m) => m.candidates.length >= 1 && m.candidates.length <= 2)).toBe(true);
  }, 90_000);

  it('is listed by csipose pipelines', async () => {
    const r = await runCli(['pipelines']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^physics {2}.*\n {4}floorMap\n/m);
  });
});
