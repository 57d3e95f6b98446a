/**
 * The room calibration of the physics front end (src/physics/calibration.ts): the chain phase fit
 * on windows made from the steering model itself (a point scatterer at a known place, each pair
 * turned by its chains' phase), the correction factors, and the JSON form a room model carries.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS, siteLinks, SPEED_OF_LIGHT } from '../../src/csi/radios.js';
import { SUBCARRIERS } from '../../src/sim/simulator.js';
import {
  CALIBRATION_VERSION,
  calibrationFits,
  ChainPhaseFit,
  chainFactors,
  parseRoomCalibration,
  roomCalibrationToJson,
  type RoomCalibration,
} from '../../src/physics/calibration.js';
import { applyChainCorrection } from '../../src/physics/chains.js';
import { centreFrequencyHz, linkGeometry, type LinkGeometry } from '../../src/physics/geometry.js';
import type { MovingWindow } from '../../src/physics/types.js';

const [LINK] = siteLinks(DEFAULT_RADIOS);
const GEOM = linkGeometry(LINK!.tx, LINK!.rx, SUBCARRIERS[30], centreFrequencyHz(36, 20));
const P = GEOM.nRx * GEOM.nTx;

/** Deterministic numbers in [-1, 1). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  };
}

/**
 * A window of `snapshots` packets of one point scatterer at (x, y, z) whose reflection changes from
 * packet to packet, every pair turned by exp(j chains[q]).
 */
function pointWindow(g: LinkGeometry, x: number, y: number, z: number, chains: Float64Array, snapshots: number, seed: number): MovingWindow {
  const { nRx, nTx, frequencies: fr, txPositions: tp, rxPositions: rp } = g;
  const K = fr.length;
  const rnd = lcg(seed);
  const data = new Float32Array(2 * snapshots * K * P);
  for (let s = 0; s < snapshots; s++) {
    const gr = rnd();
    const gi = rnd();
    for (let k = 0; k < K; k++) {
      for (let m = 0; m < nRx; m++) {
        for (let n = 0; n < nTx; n++) {
          const q = m * nTx + n;
          const L = Math.hypot(tp[3 * n]! - x, tp[3 * n + 1]! - y, tp[3 * n + 2]! - z) + Math.hypot(rp[3 * m]! - x, rp[3 * m + 1]! - y, rp[3 * m + 2]! - z);
          const a = (-2 * Math.PI * fr[k]! * L) / SPEED_OF_LIGHT + chains[q]!;
          const i = 2 * (s * K * P + k * P + q);
          data[i] = gr * Math.cos(a) - gi * Math.sin(a);
          data[i + 1] = gr * Math.sin(a) + gi * Math.cos(a);
        }
      }
    }
  }
  return { nSub: K, nRx, nTx, snapshots, data, time: 0 };
}

const wrap = (a: number) => a - 2 * Math.PI * Math.round(a / (2 * Math.PI));

describe('ChainPhaseFit', () => {
  const rnd = lcg(7);
  const chains = Float64Array.from({ length: P }, () => Math.PI * rnd());
  const points = [
    [1.2, 1.5],
    [4.5, 3.2],
    [2.8, 4.1],
    [3.3, 2.0],
  ] as const;

  it('finds every pair chain phase (relative to pair 0) from people at known places', () => {
    const fit = new ChainPhaseFit(GEOM);
    points.forEach(([x, y], i) => fit.add(pointWindow(GEOM, x, y, 1.0, chains, 16, i + 1), x, y));
    expect(fit.windows).toBe(points.length);
    const r = fit.fit();
    expect(r.phases[0]).toBe(0);
    for (let q = 0; q < P; q++) expect(Math.abs(wrap(r.phases[q]! - (chains[q]! - chains[0]!)))).toBeLessThan(1e-3);
    // One steering with the fitted phases explains the labelled windows; without them it does not.
    expect(r.focusAfter).toBeGreaterThan(0.999);
    expect(r.focusBefore).toBeLessThan(0.5);
  });

  it('its factors undo the chains: a corrected window fits with no phase left', () => {
    const fit = new ChainPhaseFit(GEOM);
    points.forEach(([x, y], i) => fit.add(pointWindow(GEOM, x, y, 1.0, chains, 16, i + 1), x, y));
    const factors = chainFactors(fit.fit().phases);
    const again = new ChainPhaseFit(GEOM);
    points.forEach(([x, y], i) => again.add(applyChainCorrection(pointWindow(GEOM, x, y, 1.0, chains, 16, i + 11), factors), x, y));
    const r = again.fit();
    for (let q = 0; q < P; q++) expect(Math.abs(r.phases[q]!)).toBeLessThan(1e-3);
    expect(r.focusBefore).toBeGreaterThan(0.999);
  });

  it('without chain phases, finds none', () => {
    const fit = new ChainPhaseFit(GEOM);
    points.forEach(([x, y], i) => fit.add(pointWindow(GEOM, x, y, 1.0, new Float64Array(P), 16, i + 1), x, y));
    const r = fit.fit();
    for (let q = 0; q < P; q++) expect(Math.abs(r.phases[q]!)).toBeLessThan(1e-3);
  });

  it('refuses a window of another layout, and a fit of nothing', () => {
    const fit = new ChainPhaseFit(GEOM);
    expect(() => fit.add({ nSub: 30, nRx: 2, nTx: 3, snapshots: 1, data: new Float32Array(2 * 30 * 6), time: 0 }, 1, 1)).toThrow(
      /a 30 x 2 x 3 window for a 30 x 3 x 3 link/,
    );
    expect(() => fit.fit()).toThrow(/no labelled window/);
    fit.add({ nSub: 30, nRx: 3, nTx: 3, snapshots: 2, data: new Float32Array(2 * 2 * 30 * 9), time: 0 }, 1, 1);
    expect(() => fit.fit()).toThrow(/no labelled window with moving power/);
  });
});

describe('chainFactors', () => {
  it('is exp(-j phase) per pair', () => {
    const f = chainFactors(Float64Array.from([0, Math.PI / 2, -Math.PI / 4]));
    const want = [1, 0, 0, -1, Math.SQRT1_2, Math.SQRT1_2];
    want.forEach((v, i) => expect(f[i]).toBeCloseTo(v, 6));
  });
});

describe('room calibration JSON', () => {
  const cal: RoomCalibration = {
    version: CALIBRATION_VERSION,
    created: '2026-11-27T10:00:00.000Z',
    links: [
      {
        id: 'tx-rx1',
        subcarriers: Int16Array.from([-2, -1, 1, 2]),
        nRx: 1,
        nTx: 2,
        chainPhases: Float64Array.from([0, 1.25]),
        staticChannel: Float32Array.from({ length: 16 }, (_, i) => i / 8),
        windows: 40,
        focusBefore: 0.1,
        focusAfter: 0.7,
      },
      {
        id: 'tx-rx2',
        subcarriers: Int16Array.from([1]),
        nRx: 1,
        nTx: 1,
        chainPhases: Float64Array.from([0]),
        staticChannel: null,
        windows: 20,
        focusBefore: 0.5,
        focusAfter: 0.5,
      },
    ],
  };

  it('reads back what it writes', () => {
    const back = parseRoomCalibration(roomCalibrationToJson(cal));
    expect(back.links.map((l) => l.id)).toEqual(['tx-rx1', 'tx-rx2']);
    expect(Array.from(back.links[0]!.chainPhases)).toEqual([0, 1.25]);
    expect(Array.from(back.links[0]!.staticChannel!)).toEqual(Array.from(cal.links[0]!.staticChannel!));
    expect(back.links[1]!.staticChannel).toBeNull();
    expect(calibrationFits(back.links[0]!, [-2, -1, 1, 2], 1, 2)).toBe(true);
    expect(calibrationFits(back.links[0]!, [-2, -1, 1, 3], 1, 2)).toBe(false);
    expect(calibrationFits(back.links[0]!, [-2, -1, 1, 2], 2, 1)).toBe(false);
  });

  /** The calibration file's JSON, the fields these cases change. */
  interface CalibrationJson {
    version: number;
    links: Array<Record<string, unknown>>;
  }
  const edit = (f: (o: CalibrationJson) => void): string => {
    const o = JSON.parse(roomCalibrationToJson(cal)) as CalibrationJson;
    f(o);
    return JSON.stringify(o);
  };
  it.each([
    ['not JSON', '{', /not JSON/],
    ['another version', edit((o) => (o.version = 2)), /version 2, this service reads 1/],
    ['no links', edit((o) => (o.links = [])), /links must be a list of 1-64 links/],
    ['a link twice', edit((o) => (o.links[1].id = 'tx-rx1')), /links\[1\]\.id "tx-rx1" is listed twice/],
    ['phases of another layout', edit((o) => (o.links[0].chain_phases_rad = [0])), /links\[0\]\.chain_phases_rad must be 2 finite numbers/],
    ['a static channel of another layout', edit((o) => (o.links[0].static_channel = [1, 2])), /links\[0\]\.static_channel must be 16 finite numbers/],
    ['a focus out of range', edit((o) => (o.links[0].focus_after = 3)), /links\[0\]\.focus_after must be in \[0, 1\]/],
    ['bad antennas', edit((o) => (o.links[0].nrx = 0)), /links\[0\]\.nrx must be an integer 1-8/],
  ])('refuses %s, naming the field', (_name, text, why) => {
    expect(() => parseRoomCalibration(text)).toThrow(why);
  });
});
