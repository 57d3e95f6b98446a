import { describe, expect, it } from 'vitest';
import { CsiSimulator, SUBCARRIERS, type SubcarrierLayout } from '../../src/sim/simulator.js';

function span(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i += step) out.push(i);
  return out;
}

const EXPECTED: Record<SubcarrierLayout, number[]> = {
  30: [-28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28],
  56: [...span(-28, -1, 1), ...span(1, 28, 1)],
  114: [...span(-58, -2, 1), ...span(2, 58, 1)],
};

describe('frame shapes and subcarrier tables', () => {
  for (const nSub of [30, 56, 114] as const) {
    for (const band of ['2.4', '5'] as const) {
      it(`3x3x${nSub} at ${band} GHz`, () => {
        const sim = new CsiSimulator({ seed: 1, nSub, band, people: 1 });
        const { frame } = sim.next();
        expect(frame.format).toBe('sim');
        expect(frame.sourceId).toBe('sim');
        expect(frame.nSub).toBe(nSub);
        expect(frame.nRx).toBe(3);
        expect(frame.nTx).toBe(3);
        expect(frame.csi).toBeInstanceOf(Float32Array);
        expect(frame.csi.length).toBe(nSub * 3 * 3 * 2);
        expect(Array.from(frame.subcarriers)).toEqual(EXPECTED[nSub]);
        expect(frame.subcarriers).toBe(SUBCARRIERS[nSub]);
        expect(frame.rssi).toHaveLength(3);
        const bw = nSub === 114 ? 40 : 20;
        expect(frame.bandwidthMhz).toBe(bw);
        expect(frame.channel).toBe(band === '5' ? 36 : 6);
        const primary = band === '5' ? 5180e6 : 2437e6;
        expect(sim.centreHz).toBe(bw === 40 ? primary + 10e6 : primary);
        for (const v of frame.csi) expect(Number.isFinite(v)).toBe(true);
        // Plausible received power across a 6 x 5 m room.
        for (const r of frame.rssi) {
          expect(r).toBeGreaterThanOrEqual(-70);
          expect(r).toBeLessThanOrEqual(-30);
        }
        expect(frame.noise).toBeLessThan(Math.min(...frame.rssi));
        // A new buffer per frame.
        expect(sim.next().frame.csi).not.toBe(frame.csi);
      });
    }
  }

  it('supports other antenna counts', () => {
    const { frame } = new CsiSimulator({ nRx: 2, nTx: 1, nSub: 56 }).next();
    expect(frame.csi.length).toBe(56 * 2 * 1 * 2);
    expect(frame.rssi).toHaveLength(2);
  });

  it('rejects invalid options at construction', () => {
    expect(() => new CsiSimulator({ nSub: 64 as SubcarrierLayout })).toThrow(RangeError);
    expect(() => new CsiSimulator({ people: 5 })).toThrow(RangeError);
    expect(() => new CsiSimulator({ rateHz: 0 })).toThrow(RangeError);
    expect(() => new CsiSimulator({ nRx: 0 })).toThrow(RangeError);
    expect(() => new CsiSimulator({ impairments: { lossRate: 0.9 } })).toThrow(RangeError);
    expect(() => new CsiSimulator({ scenario: { room: { width: 1 } } })).toThrow(RangeError);
    expect(() => new CsiSimulator({ people: [{ x: 30, y: 1 }] })).toThrow(RangeError);
  });
});
