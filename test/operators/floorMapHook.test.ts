/**
 * The `floorMap` stage's `onMap` hook (FloorMapContext, what the service's floor-map cache reads):
 * called once with each emitted map, before it goes on; a throw in it goes to the subscriber as an
 * error, never up the stack; without the hook the stage is the bare operator. Real simulator frames
 * of the default site.
 */
import { describe, expect, it } from 'vitest';
import { firstValueFrom, from, lastValueFrom, tap, toArray } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS } from '../../src/csi/radios.js';
import { spec, type FloorMapContext, type FloorMapItem } from '../../operators/floorMap.js';
import { CsiSimulator } from '../../src/sim/simulator.js';

/** 100 ticks of the default site (1 s at 100 Hz): a few maps (the first after 64 primary packets, then one per 16). */
function frames(): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 5, radios: DEFAULT_RADIOS, realism: 'ideal', people: [{ x: 2, y: 2.5, height: 1.7 }] });
  const out: CsiFrame[] = [];
  for (let i = 0; i < 100; i++) out.push(...sim.nextTick().frames);
  return out;
}

const params = { learnSeconds: 0, maxCandidates: 6, cell: 0.2 };

/** The stage as the engine builds it, with a context that lends `onMap` (or not). */
const stage = (ctx: FloorMapContext) => spec.create(params, ctx);

describe('floorMap onMap hook', () => {
  it('is called once with each emitted map, before the map goes on', async () => {
    const seen: FloorMapItem[] = [];
    const order: string[] = [];
    const op = stage({
      onMap: (m: FloorMapItem) => {
        seen.push(m);
        order.push(`hook ${m.time}`);
      },
    });
    const out = (await lastValueFrom(
      from(frames()).pipe(
        op,
        tap((m: FloorMapItem) => order.push(`next ${m.time}`)),
        toArray(),
      ),
    )) as FloorMapItem[];
    expect(out.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual(out);
    for (let i = 0; i < out.length; i++) expect(seen[i]).toBe(out[i]);
    expect(order).toEqual(out.flatMap((m) => [`hook ${m.time}`, `next ${m.time}`]));
  });

  it('sends a throw in the hook to the subscriber as an error', async () => {
    const boom = new Error('display failed');
    const op = stage({
      onMap: () => {
        throw boom;
      },
    });
    await expect(firstValueFrom(from(frames()).pipe(op))).rejects.toBe(boom);
  });

  it('without a hook the stage emits the same maps', async () => {
    const a = (await lastValueFrom(from(frames()).pipe(stage({}), toArray()))) as FloorMapItem[];
    const b = (await lastValueFrom(from(frames()).pipe(stage({ onMap: () => undefined }), toArray()))) as FloorMapItem[];
    expect(b.map((m) => m.time)).toEqual(a.map((m) => m.time));
    expect(b.map((m) => Array.from(m.map))).toEqual(a.map((m) => Array.from(m.map)));
  });
});
