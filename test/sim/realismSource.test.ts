/**
 * `sim?realism=ideal|room`: the source URI selects the simulator's realism (docs/simulator.md).
 */
import { lastValueFrom, take, toArray, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { parseSimParams } from '../../src/sources/sim.js';
import { parseSource } from '../../src/sources/uri.js';
import { parseError } from '../helpers/sources.js';

const frames = (uri: string, n: number): Promise<CsiFrame[]> =>
  lastValueFrom((parseSource(uri).open('frame', { speed: 0 }) as Observable<CsiFrame>).pipe(take(n), toArray()));

describe('sim?realism=', () => {
  it('parses ideal and room, and refuses anything else with a clear message', () => {
    expect(parseSimParams(new URLSearchParams('realism=room'))).toEqual({ realism: 'room' });
    expect(parseSimParams(new URLSearchParams('seed=3&realism=ideal'))).toEqual({ seed: 3, realism: 'ideal' });
    expect(parseSimParams(new URLSearchParams('seed=3'))).toEqual({ seed: 3 });
    expect(parseError('sim?realism=office').message).toBe('sim: realism must be ideal or room, got "office"');
    expect(parseError('sim?realism=').message).toMatch(/realism must be ideal or room, got ""/);
  });

  it('realism=room streams the room (its own device clock, another channel); realism=ideal is the default stream', async () => {
    const [plain, ideal, room, room2] = await Promise.all([
      frames('sim?seed=4&people=1', 50),
      frames('sim?seed=4&people=1&realism=ideal', 50),
      frames('sim?seed=4&people=1&realism=room', 50),
      frames('sim?seed=4&people=1&realism=room', 50),
    ]);
    ideal.forEach((f, i) => expect(Buffer.from(f.csi.buffer).equals(Buffer.from(plain[i]!.csi.buffer))).toBe(true));
    room.forEach((f, i) => expect(Buffer.from(f.csi.buffer).equals(Buffer.from(room2[i]!.csi.buffer))).toBe(true));
    expect(Buffer.from(room[0]!.csi.buffer).equals(Buffer.from(ideal[0]!.csi.buffer))).toBe(false);
    expect(ideal[0]!.clockUs).toBe(0);
    expect(room[0]!.clockUs).toBeGreaterThan(0);
    expect(room.map((f) => f.seq)).toEqual(ideal.map((f) => f.seq));
  });
});
