/**
 * The floor maps the service keeps for display: the reduction of a hand-made FloorMapItem (max
 * over the height layers, normalised by the map's maximum to bytes, candidates as shares of it),
 * its JSON rendered once, and the per-environment cache with its session rule.
 */
import { describe, expect, it } from 'vitest';
import type { FloorMapItem } from '../../operators/floorMap.js';
import { FloorMaps, reduceFloorMap } from '../../src/service/floorMaps.js';

/** A 3 x 2 grid of two layers: `layers[h][iy * 3 + ix]`. */
function item(layers: number[][], over: Partial<FloorMapItem> = {}): FloorMapItem {
  return {
    environmentId: 'lab',
    sourceId: 'sim',
    quality: 2 / 3,
    time: Date.UTC(2026, 0, 5, 10, 0, 0, 160),
    grid: { x0: 0, y0: 0, cell: 0.2, nx: 3, ny: 2, heights: [0.5, 1.5] },
    map: Float32Array.from(layers.flat()),
    candidates: [
      { x: 0.21234, y: 0.2, z: 1.5, power: 8, index: 6 + 4 },
      { x: 0.4, y: 0, z: 0.5, power: 2, index: 2 },
    ],
    links: ['tx-rx1', 'tx-rx2'],
    doppler: new Float32Array(0),
    dopplerBins: 64,
    dopplerRates: new Float64Array(0),
    ...over,
  };
}

describe('reduceFloorMap', () => {
  it('takes the largest value over the layers at each floor point, normalised by the map maximum to 0..255', () => {
    // Floor point 4 (ix 1, iy 1) peaks in the upper layer (8); point 2 in the lower (2, upper 1).
    const d = reduceFloorMap(
      item([
        [1, 0, 2, 0, 4, 0],
        [0.5, 0, 1, 0, 8, 6],
      ]),
    );
    expect(d.maxPower).toBe(8);
    expect([...d.floor]).toEqual([32, 0, 64, 0, 255, 191]); // round(255 * [1, 0, 2, 0, 8, 6] / 8)
    expect(d.floor).toBeInstanceOf(Uint8Array);
    expect(d.candidates).toEqual([
      { x: 0.212, y: 0.2, power: 1 },
      { x: 0.4, y: 0, power: 0.25 },
    ]);
    expect(d.grid).toEqual({ x0: 0, y0: 0, cell: 0.2, nx: 3, ny: 2, heights: [0.5, 1.5] });
  });

  it('counts values that are not finite or below 0 as 0, and reduces a map with nothing above 0 to zeros', () => {
    const d = reduceFloorMap(
      item([
        [NaN, -3, Infinity, 0, 2, 0],
        [0, 0, 1, -Infinity, 0, 0],
      ]),
    );
    expect(d.maxPower).toBe(2);
    expect([...d.floor]).toEqual([0, 0, 128, 0, 255, 0]);

    const empty = reduceFloorMap(
      item([
        [0, 0, 0, 0, 0, 0],
        [0, -1, 0, NaN, 0, 0],
      ]),
    );
    expect(empty.maxPower).toBe(0);
    expect([...empty.floor]).toEqual([0, 0, 0, 0, 0, 0]);
    expect(empty.candidates.map((c) => c.power)).toEqual([0, 0]);
    expect(JSON.parse(empty.json()).max_power).toBe(0);
  });

  it('refuses a map whose length is not the grid', () => {
    expect(() => reduceFloorMap(item([[1, 2, 3, 4, 5, 6]]))).toThrow(RangeError);
  });

  it('renders the resource once: the documented fields, the floor as base64 bytes', () => {
    const d = reduceFloorMap(
      item([
        [1, 0, 2, 0, 4, 0],
        [0.5, 0, 1, 0, 8, 6],
      ]),
    );
    const text = d.json();
    expect(d.json()).toBe(text);
    const r = JSON.parse(text);
    expect(Object.keys(r)).toEqual(['environment_id', 'timestamp', 'source_id', 'links', 'quality', 'grid', 'max_power', 'floor', 'candidates']);
    expect(r.environment_id).toBe('lab');
    expect(r.timestamp).toBe('2026-01-05T10:00:00.160Z');
    expect(r.quality).toBe(0.6667);
    expect(r.links).toEqual(['tx-rx1', 'tx-rx2']);
    expect([...Buffer.from(r.floor, 'base64')]).toEqual([32, 0, 64, 0, 255, 191]);
    expect(r.candidates[0]).toEqual({ x: 0.212, y: 0.2, power: 1 });
  });
});

describe('FloorMaps', () => {
  it('keeps the latest map of each environment; a new session forgets them and says whether it makes any', () => {
    const errors: unknown[] = [];
    const maps = new FloorMaps((e) => errors.push(e));
    expect(maps.frontEnd).toBeUndefined();
    maps.begin(true);
    expect(maps.frontEnd).toBe(true);
    maps.take(
      item([
        [1, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
      ]),
    );
    maps.take(
      item(
        [
          [0, 0, 0, 0, 0, 2],
          [0, 0, 0, 0, 0, 0],
        ],
        { time: Date.UTC(2026, 0, 5, 10, 0, 1) },
      ),
    );
    maps.take(
      item(
        [
          [0, 0, 3, 0, 0, 0],
          [0, 0, 0, 0, 0, 0],
        ],
        { environmentId: 'hall' },
      ),
    );
    expect(maps.environments().sort()).toEqual(['hall', 'lab']);
    expect([...maps.get('lab')!.floor]).toEqual([0, 0, 0, 0, 0, 255]);
    expect(maps.get('lab')!.time).toBe(Date.UTC(2026, 0, 5, 10, 0, 1));
    expect(maps.get('nowhere')).toBeUndefined();

    // A map that cannot be reduced goes to onError, not up the pipeline; the last good one stays.
    expect(() => maps.take(item([[1]]))).not.toThrow();
    expect(errors).toHaveLength(1);
    expect(maps.get('lab')!.time).toBe(Date.UTC(2026, 0, 5, 10, 0, 1));

    maps.begin(false);
    expect(maps.frontEnd).toBe(false);
    expect(maps.environments()).toEqual([]);
  });
});
