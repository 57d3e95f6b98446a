import { beforeAll, describe, expect, it } from 'vitest';
import { SINKS } from '../../src/cli/sinks/index.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';

beforeAll(() => ensureBuilt(), 120_000);

/** Every source scheme `parseSource` (src/sources/uri.ts) accepts, as the help should name it. */
const SCHEMES = ['sim', 'file:PATH', 'udp://', 'mqtt://', 'stdin'];

describe('the --help of run, pipe and serve says what the code accepts', () => {
  it('run --help names every source and sink, and --speed for the simulator as well as files', async () => {
    const r = await runCli(['run', '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    for (const s of SCHEMES) expect(text).toContain(s);
    for (const k of SINKS.keys()) expect(text).toMatch(new RegExp(`Sinks: .*\\b${k}\\b`));
    expect(text).toMatch(/--speed <n> pace of file and simulator sources/);
    expect(text).toMatch(/live udp and mqtt sources ignore it/);
    expect(text).toContain('Ctrl-C (SIGINT) or SIGTERM stops a run cleanly');
  });

  it('pipe --help carries the same flags and notes', async () => {
    const r = await runCli(['pipe', '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    for (const s of SCHEMES) expect(text).toContain(s);
    expect(text).toMatch(/--speed <n> pace of file and simulator sources/);
    expect(text).toContain('a reader that stops (| head) ends the run with status 0');
  });

  it('serve --help lists mqtt:// among the sources it takes', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    const text = r.stdout.replace(/\s+/g, ' ');
    expect(text).toMatch(/--source <uri> sim\S*, udp:\/\/HOST:PORT\?format=F, mqtt:\/\/HOST\[:PORT\]\/TOPIC\?format=F, file:PATH/);
  });
});
