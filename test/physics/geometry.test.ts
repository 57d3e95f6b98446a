/**
 * Link geometry of the physics front end (src/physics/geometry.ts): antenna positions and
 * frequencies exactly as the simulator places and uses them.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { centreFrequencyHz, linkGeometry } from '../../src/physics/geometry.js';
import { CsiSimulator, SUBCARRIERS } from '../../src/sim/simulator.js';

function expectClose(a: Float64Array, b: Float64Array, tol: number): void {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!), `index ${i}: ${a[i]} vs ${b[i]}`).toBeLessThanOrEqual(tol);
}

describe('linkGeometry', () => {
  it("places every link's antennas of DEFAULT_RADIOS where the simulator does, to 1e-9 m", () => {
    const sim = new CsiSimulator({ seed: 1, radios: DEFAULT_RADIOS, people: 0, impairments: false });
    const links = siteLinks(DEFAULT_RADIOS);
    expect(sim.links.length).toBe(3);
    links.forEach((l, i) => {
      const g = linkGeometry(l.tx, l.rx, sim.subcarriers, sim.centreHz);
      expect(sim.links[i]!.id).toBe(l.id);
      expectClose(g.txPositions, sim.links[i]!.txPositions, 1e-9);
      expectClose(g.rxPositions, sim.links[i]!.rxPositions, 1e-9);
      expect([g.nTx, g.nRx]).toEqual([3, 3]);
    });
    // Not trivially equal: the three receivers' arrays differ (rx2 and rx3 lie along y).
    const g2 = linkGeometry(links[1]!.tx, links[1]!.rx, sim.subcarriers, sim.centreHz);
    expect(g2.rxPositions[4]! - g2.rxPositions[1]!).toBeCloseTo(-DEFAULT_RADIOS[2]!.spacing_m, 12);
  });

  it('places a receiver at yaw 45 degrees with 4 antennas and a transmitter with 2 where the simulator does', () => {
    const tx: RadioConfig = { ...DEFAULT_RADIOS[0]!, antennas: 2, yaw_deg: 250 };
    const rx: RadioConfig = { ...DEFAULT_RADIOS[1]!, id: 'diag', x: 1, y: 1, yaw_deg: 45, antennas: 4, spacing_m: 0.03 };
    const sim = new CsiSimulator({ seed: 1, radios: [tx, rx], people: 0, impairments: false });
    const g = linkGeometry(tx, rx, sim.subcarriers, sim.centreHz);
    expectClose(g.txPositions, sim.links[0]!.txPositions, 1e-9);
    expectClose(g.rxPositions, sim.links[0]!.rxPositions, 1e-9);
    // Antenna 0 of the diagonal array is 1.5 spacings back along (sin 45, -cos 45).
    expect(g.rxPositions[0]).toBeCloseTo(1 - 1.5 * 0.03 * Math.SQRT1_2, 12);
    expect(g.rxPositions[1]).toBeCloseTo(1 + 1.5 * 0.03 * Math.SQRT1_2, 12);
  });

  it('gives each subcarrier its frequency and copies the index table', () => {
    const subs = SUBCARRIERS[30];
    const g = linkGeometry(DEFAULT_RADIOS[0]!, DEFAULT_RADIOS[1]!, subs, 5.18e9);
    expect(g.frequencies[0]).toBe(5.18e9 - 28 * 312_500);
    expect(g.frequencies[14]).toBe(5.18e9 - 312_500);
    expect(g.frequencies[29]).toBe(5.18e9 + 28 * 312_500);
    expect(g.subcarriers).not.toBe(subs);
    expect(Array.from(g.subcarriers)).toEqual(Array.from(subs));
  });
});

describe('centreFrequencyHz', () => {
  it.each([
    [36, 20, undefined, 5.18e9],
    [36, 40, undefined, 5.19e9],
    [6, 20, undefined, 2.437e9],
    [6, 40, undefined, 2.447e9],
    [1, 20, undefined, 2.412e9],
    [149, 20, undefined, 5.745e9],
    [36, NaN, 114, 5.19e9],
    [36, NaN, 30, 5.18e9],
  ])('channel %d, %d MHz (nSub %s): %d Hz', (ch, bw, nSub, hz) => {
    expect(centreFrequencyHz(ch, bw, nSub)).toBe(hz);
  });

  it.each([
    ['5', 30],
    ['5', 56],
    ['5', 114],
    ['2.4', 30],
    ['2.4', 114],
  ] as const)("matches the simulator's centre on band %s GHz with %d subcarriers", (band, nSub) => {
    const sim = new CsiSimulator({ seed: 1, band, nSub, people: 0, impairments: false });
    const { frame } = sim.next();
    expect(centreFrequencyHz(frame.channel, frame.bandwidthMhz, frame.nSub)).toBe(sim.centreHz);
  });

  it('refuses what it cannot place', () => {
    expect(() => centreFrequencyHz(36, 80)).toThrow(RangeError);
    expect(() => centreFrequencyHz(NaN, 20)).toThrow(RangeError);
  });
});
