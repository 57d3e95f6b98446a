/**
 * The simulator source on a site: `SourceContext.radios` (the service's `environment.site.radios`)
 * and `sim?links=N` (docs/simulator.md "Sites: several receivers").
 */
import { firstValueFrom, lastValueFrom, take, toArray, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS, type RadioConfig } from '../../src/csi/radios.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { parseSimParams } from '../../src/sources/sim.js';
import { parseSource, SourceError, type SourceContext } from '../../src/sources/uri.js';
import { parseError } from '../helpers/sources.js';

const frames = (uri: string, n: number, ctx: SourceContext = {}): Promise<CsiFrame[]> =>
  lastValueFrom((parseSource(uri).open('frame', { speed: 0, ...ctx }) as Observable<CsiFrame>).pipe(take(n), toArray()));

const site = (): readonly RadioConfig[] => DEFAULT_RADIOS;

describe('sim?links=', () => {
  it('parses 1..8 and refuses anything else as a source error', () => {
    expect(parseSimParams(new URLSearchParams('links=1'))).toEqual({ links: 1 });
    expect(parseSimParams(new URLSearchParams('seed=2&links=8'))).toEqual({ seed: 2, links: 8 });
    for (const bad of ['0', '9', '1.5', 'x', '', '-1']) {
      expect(parseError(`sim?links=${bad}`).message).toBe(`sim: links must be an integer in 1..8, got "${bad}"`);
    }
  });

  it('more links than the site has receivers is a source error when the source opens', async () => {
    const err = await firstValueFrom(parseSource('sim?links=4').open('frame', { speed: 0, radios: site }) as Observable<CsiFrame>).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceError);
    expect((err as Error).message).toBe('sim: links=4 but the site has 3 receivers');
  });
});

describe('the sim source on a site', () => {
  it('emits every link of the context’s site, interleaved tick by tick in site order', async () => {
    const got = await frames('sim?seed=3', 60, { radios: site });
    const ticks = new Map<number, string[]>();
    for (const f of got) ticks.set(f.seq, [...(ticks.get(f.seq) ?? []), f.linkId!]);
    // Time order: seq never goes back; within a tick, the site's order (a lost packet leaves a gap).
    got.forEach((f, i) => i > 0 && expect(f.seq).toBeGreaterThanOrEqual(got[i - 1]!.seq));
    const order = ['tx-rx1', 'tx-rx2', 'tx-rx3'];
    for (const ids of ticks.values()) expect(ids).toEqual(order.filter((id) => ids.includes(id)));
    expect(new Set(got.map((f) => f.linkId))).toEqual(new Set(order));
    expect(new Set(got.map((f) => f.sourceId))).toEqual(new Set(order.map((id) => `sim#${id}`)));
    // The same frames as the simulator's own, byte for byte.
    const sim = new CsiSimulator({ seed: 3, radios: DEFAULT_RADIOS });
    for (const f of got) expect(Buffer.from(sim.next().frame.csi.buffer).equals(Buffer.from(f.csi.buffer))).toBe(true);
  });

  it('links=N keeps the first N receivers; links=1 is the one-link case', async () => {
    const [two, one] = await Promise.all([frames('sim?seed=3&links=2', 40, { radios: site }), frames('sim?seed=3&links=1', 20, { radios: site })]);
    expect(new Set(two.map((f) => f.linkId))).toEqual(new Set(['tx-rx1', 'tx-rx2']));
    expect(new Set(one.map((f) => f.linkId))).toEqual(new Set(['tx-rx1']));
    // Each tick has at most one frame of the one link.
    expect(new Set(one.map((f) => f.seq)).size).toBe(one.length);
    // The first link is the same whichever others are simulated.
    const first = two.filter((f) => f.linkId === 'tx-rx1');
    first.forEach((f, i) => expect(Buffer.from(f.csi.buffer).equals(Buffer.from(one[i]!.csi.buffer))).toBe(true));
  });

  it('without a site the source is the one-link simulator; links= without one takes DEFAULT_RADIOS', async () => {
    const [plain, defaultSite] = await Promise.all([frames('sim?seed=3', 5), frames('sim?seed=3&links=3', 6)]);
    for (const f of plain) {
      expect(f.linkId).toBeUndefined();
      expect(f.sourceId).toBe('sim');
    }
    expect(defaultSite.slice(0, 3).map((f) => f.linkId)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
  });

  it('reads the site when the source opens, and nrx / ntx set the antennas of every receiver / the transmitter', async () => {
    let reads = 0;
    const radios = (): readonly RadioConfig[] => {
      reads++;
      return DEFAULT_RADIOS.map((r) => (r.id === 'rx2' ? { ...r, antennas: 2 } : r));
    };
    const def = parseSource('sim?seed=1');
    const obs = def.open('frame', { speed: 0, radios }) as Observable<CsiFrame>;
    expect(reads).toBe(0);
    const got = await lastValueFrom(obs.pipe(take(6), toArray()));
    expect(reads).toBe(1);
    expect(got.slice(0, 3).map((f) => [f.linkId, f.nRx, f.nTx])).toEqual([
      ['tx-rx1', 3, 3],
      ['tx-rx2', 2, 3],
      ['tx-rx3', 3, 3],
    ]);
    const small = await frames('sim?seed=1&nrx=1&ntx=2', 3, { radios });
    expect(small.map((f) => [f.linkId, f.nRx, f.nTx])).toEqual([
      ['tx-rx1', 1, 2],
      ['tx-rx2', 1, 2],
      ['tx-rx3', 1, 2],
    ]);
  });

  it('attaches one truth per tick: every link’s frame carries its people, the events ride on the first', async () => {
    const got = await frames('sim?seed=5&people=2&fall=0.2&truth=1', 600, { radios: site });
    const bySeq = new Map<number, CsiFrame[]>();
    for (const f of got) bySeq.set(f.seq, [...(bySeq.get(f.seq) ?? []), f]);
    let events = 0;
    for (const fs of bySeq.values()) {
      const truths = fs.map((f) => f.meta!.truth as { seq: number; persons: unknown[]; events: unknown[] });
      for (const t of truths) {
        expect(t.seq).toBe(fs[0]!.seq);
        expect(t.persons).toEqual(truths[0]!.persons);
      }
      truths.slice(1).forEach((t) => expect(t.events).toEqual([]));
      events += truths[0]!.events.length;
    }
    expect(events).toBeGreaterThan(0);
  });
});
