import { describe, expect, it } from 'vitest';
import { ChannelModel, SPEED_OF_LIGHT, SUBCARRIER_SPACING_HZ } from '../../src/sim/channel.js';
import { CsiSimulator, SUBCARRIERS } from '../../src/sim/simulator.js';

const C = 299_792_458;

function dist(a: Float64Array, i: number, x: number, y: number, z: number): number {
  return Math.sqrt((a[3 * i]! - x) ** 2 + (a[3 * i + 1]! - y) ** 2 + (a[3 * i + 2]! - z) ** 2);
}

describe('line of sight', () => {
  it('equals lambda/(4 pi d) exp(-j 2 pi f d / c) at every subcarrier and antenna pair (simulator, float32)', () => {
    for (const nSub of [30, 114] as const) {
      const sim = new CsiSimulator({
        nSub,
        people: 0,
        impairments: false,
        scenario: { room: { wallReflection: 0, floorReflection: 0, ceilingReflection: 0 } },
      });
      const { frame } = sim.next();
      const tx = sim.scenario.txPositions;
      const rx = sim.scenario.rxPositions;
      const lambda = C / sim.centreHz;
      let checked = 0;
      for (let k = 0; k < nSub; k++) {
        const f = sim.centreHz + frame.subcarriers[k]! * 312_500;
        for (let m = 0; m < 3; m++) {
          for (let n = 0; n < 3; n++) {
            const d = dist(rx, m, tx[3 * n]!, tx[3 * n + 1]!, tx[3 * n + 2]!);
            const a = lambda / (4 * Math.PI * d);
            const ph = (-2 * Math.PI * f * d) / C;
            const c = ((k * 3 + m) * 3 + n) * 2;
            const re = frame.csi[c]!;
            const im = frame.csi[c + 1]!;
            // Float32 output: relative error of a few 1e-8.
            expect(Math.hypot(re - a * Math.cos(ph), im - a * Math.sin(ph))).toBeLessThan(3e-7 * a);
            checked++;
          }
        }
      }
      expect(checked).toBe(nSub * 9);
    }
  });

  it('phasor stepping is exact to double precision across non-uniform index steps (channel model)', () => {
    // Antenna pairs at very different distances, including one > 30 m (Math.sin/cos branch).
    const tx = new Float64Array([0, 0, 1, 0.03, 0, 1]);
    const rx = new Float64Array([4, 3, 1.5, 40, 5, 2, 0.5, 0.2, 1]);
    for (const sc of [SUBCARRIERS[30], SUBCARRIERS[56], SUBCARRIERS[114]]) {
      const fc = 2.437e9;
      const ch = new ChannelModel({ centreHz: fc, subcarriers: sc, tx, rx });
      const H = ch.staticH;
      const lambda = C / fc;
      let worst = 0;
      for (let k = 0; k < sc.length; k++) {
        const f = fc + sc[k]! * SUBCARRIER_SPACING_HZ;
        for (let m = 0; m < 3; m++) {
          for (let n = 0; n < 2; n++) {
            const d = dist(rx, m, tx[3 * n]!, tx[3 * n + 1]!, tx[3 * n + 2]!);
            const a = lambda / (4 * Math.PI * d);
            const ph = (-2 * Math.PI * f * d) / C;
            const c = ((k * 3 + m) * 2 + n) * 2;
            worst = Math.max(worst, Math.hypot(H[c]! - a * Math.cos(ph), H[c + 1]! - a * Math.sin(ph)) / a);
          }
        }
      }
      // Math.cos of a ~1000 rad argument itself carries ~1e-13 of argument rounding.
      expect(worst).toBeLessThan(1e-11);
    }
  });

  it('adds one image path per surface with the surface coefficient', () => {
    const sc = SUBCARRIERS[56];
    const tx = new Float64Array([1, 1, 1]);
    const rx = new Float64Array([3, 2, 1.4]);
    const room = { width: 5, depth: 4, height: 3, wall: 0, floor: -0.5, ceiling: 0 };
    const both = new ChannelModel({ centreHz: 5.18e9, subcarriers: sc, tx, rx, room });
    const los = new ChannelModel({ centreHz: 5.18e9, subcarriers: sc, tx, rx });
    const lambda = C / 5.18e9;
    const d = Math.hypot(2, 1, 2.4); // image of tx in the floor at z = -1
    for (let k = 0; k < sc.length; k += 11) {
      const f = 5.18e9 + sc[k]! * 312_500;
      const a = (-0.5 * lambda) / (4 * Math.PI * d);
      const ph = (-2 * Math.PI * f * d) / C;
      expect(both.staticH[2 * k]! - los.staticH[2 * k]!).toBeCloseTo(a * Math.cos(ph), 15);
      expect(both.staticH[2 * k + 1]! - los.staticH[2 * k + 1]!).toBeCloseTo(a * Math.sin(ph), 15);
    }
  });
});

describe('body scatterer paths', () => {
  const tx = new Float64Array([0, 0, 1.2, 0.029, 0, 1.2]);
  const rx = new Float64Array([3, 0, 1.2, 3.029, 0, 1.2, 3.058, 0, 1.2]);
  const sc = SUBCARRIERS[30];
  const fc = 5.18e9;

  it('amplitude is (lambda / 4 pi) w / (d1 d2), so it scales as 1/(d1 d2) when the scatterer moves', () => {
    const ch = new ChannelModel({ centreHz: fc, subcarriers: sc, tx, rx, los: false });
    const H = new Float64Array(ch.size);
    const w = 0.2;
    const positions = [
      [1.5, 2, 1],
      [1.5, 4, 1],
      [0.5, 1.2, 0.3],
      [2.5, 6, 1.8],
    ];
    const lambda = C / fc;
    const amps: number[] = [];
    const products: number[] = [];
    for (const [x, y, z] of positions) {
      ch.compute(new Float64Array([x!, y!, z!, w]), 1, H);
      for (let m = 0; m < 3; m++) {
        for (let n = 0; n < 2; n++) {
          const d1 = dist(tx, n, x!, y!, z!);
          const d2 = dist(rx, m, x!, y!, z!);
          for (const k of [0, 14, 15, 29]) {
            const c = ((k * 3 + m) * 2 + n) * 2;
            const amp = Math.hypot(H[c]!, H[c + 1]!);
            const want = (lambda / (4 * Math.PI)) * (w / (d1 * d2));
            expect(amp / want).toBeCloseTo(1, 12);
            // And the phase is that of the path length d1 + d2 at this subcarrier's frequency.
            const ph = (-2 * Math.PI * (fc + sc[k]! * 312_500) * (d1 + d2)) / C;
            expect(Math.hypot(H[c]! - want * Math.cos(ph), H[c + 1]! - want * Math.sin(ph)) / want).toBeLessThan(1e-11);
          }
        }
      }
      amps.push(Math.hypot(H[0]!, H[1]!));
      products.push(dist(tx, 0, x!, y!, z!) * dist(rx, 0, x!, y!, z!));
    }
    for (let i = 1; i < amps.length; i++) expect(amps[i]! / amps[0]!).toBeCloseTo(products[0]! / products[i]!, 12);
  });

  it('a scatterer moving at constant radial speed rotates the phase by f_D = -(1/lambda) dL/dt per second', () => {
    // Transmitter and receiver close together, target receding along the bisector: the path
    // length grows at (almost exactly) twice the speed.
    const t1 = new Float64Array([0, 0, 1]);
    const r1 = new Float64Array([0.2, 0, 1]);
    const ch = new ChannelModel({ centreHz: fc, subcarriers: sc, tx: t1, rx: r1 });
    const rate = 100;
    const v = 1.1; // m/s
    const diffs: Array<Float64Array> = [];
    const H = new Float64Array(ch.size);
    const pos = (i: number): [number, number, number] => [0.1, 3 + (v * i) / rate, 1];
    for (let i = 0; i < 40; i++) {
      ch.compute(new Float64Array([...pos(i), 0.2]), 1, H);
      const d = new Float64Array(ch.size);
      for (let j = 0; j < d.length; j++) d[j] = H[j]! - ch.staticH[j]!;
      diffs.push(d);
    }
    const pathLen = (p: [number, number, number]): number => dist(t1, 0, ...p) + dist(r1, 0, ...p);
    for (const k of [0, 7, 15, 29]) {
      const f = fc + sc[k]! * 312_500;
      const lambda = SPEED_OF_LIGHT / f;
      for (let i = 0; i + 1 < diffs.length; i++) {
        const a = diffs[i]!;
        const b = diffs[i + 1]!;
        // arg(b * conj(a)): the phase advance over one sample.
        const re = b[2 * k]! * a[2 * k]! + b[2 * k + 1]! * a[2 * k + 1]!;
        const im = b[2 * k + 1]! * a[2 * k]! - b[2 * k]! * a[2 * k + 1]!;
        const measured = Math.atan2(im, re);
        // Path-length rate at the midpoint, by central difference of the geometry.
        const h = 1e-4;
        const tMid = (i + 0.5) / rate;
        const at = (t: number): [number, number, number] => [0.1, 3 + v * t, 1];
        const dLdt = (pathLen(at(tMid + h)) - pathLen(at(tMid - h))) / (2 * h);
        const fD = -dLdt / lambda;
        expect(Math.abs(dLdt - 2 * v)).toBeLessThan(0.01 * 2 * v);
        expect(Math.abs(measured - (2 * Math.PI * fD) / rate)).toBeLessThan(0.01 * Math.abs((2 * Math.PI * fD) / rate));
      }
    }
  });

  it('weight 0 scatterers add nothing and the static paths are unchanged by compute', () => {
    const ch = new ChannelModel({ centreHz: fc, subcarriers: sc, tx, rx });
    const before = Float64Array.from(ch.staticH);
    const H = new Float64Array(ch.size);
    ch.compute(new Float64Array([1, 1, 1, 0]), 1, H);
    expect(Array.from(H)).toEqual(Array.from(before));
    ch.compute(new Float64Array([1, 1, 1, 0.3]), 1, H);
    expect(Array.from(ch.staticH)).toEqual(Array.from(before));
  });
});
