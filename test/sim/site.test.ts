/**
 * Sites with several receivers (SimOptions.radios; docs/simulator.md "Sites: several receivers";
 * DECISIONS "Sites with several radios"): one room, one truth, one frame per link per tick, each
 * link through its own geometry and with its own receiver.
 */
import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { SPEED_OF_LIGHT } from '../../src/sim/channel.js';
import { CsiSimulator, type SimOptions, type SimTick } from '../../src/sim/simulator.js';
import { MAX_SIM_LINKS } from '../../src/sim/site.js';

const F = (f: CsiFrame): Buffer => Buffer.from(f.csi.buffer, f.csi.byteOffset, f.csi.byteLength);
const EMPTY_BOX = { wallReflection: 0, floorReflection: 0, ceilingReflection: 0 };

/** A receiver of DEFAULT_RADIOS with some fields changed. */
function radio(id: string, over: Partial<RadioConfig> = {}): RadioConfig {
  const base = DEFAULT_RADIOS.find((r) => r.id === id) ?? DEFAULT_RADIOS[1]!;
  return { ...base, id, ...over };
}

/** The antenna positions radios.ts states: position + (i - (n - 1) / 2) spacing (sin yaw, -cos yaw, 0). */
function antennas(r: RadioConfig): Array<[number, number, number]> {
  const t = (r.yaw_deg * Math.PI) / 180;
  return Array.from({ length: r.antennas }, (_, i) => {
    const o = (i - (r.antennas - 1) / 2) * r.spacing_m;
    return [r.x + o * Math.sin(t), r.y - o * Math.cos(t), r.z] as [number, number, number];
  });
}

function ticks(sim: CsiSimulator, n: number): SimTick[] {
  return Array.from({ length: n }, () => sim.nextTick());
}

describe('a site: one frame per link per tick', () => {
  it('emits each link in site order with its linkId and sourceId, on the one seq and time grid, with one truth', () => {
    const sim = new CsiSimulator({ seed: 3, people: 2, radios: DEFAULT_RADIOS, impairments: { lossRate: 0 } });
    const ids = siteLinks(DEFAULT_RADIOS).map((l) => l.id);
    expect(ids).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
    expect(sim.links.map((l) => [l.id, l.sourceId])).toEqual(ids.map((id) => [id, `sim#${id}`]));
    for (const [s, t] of ticks(sim, 50).entries()) {
      expect(t.frames.map((f) => f.linkId)).toEqual(ids);
      expect(t.frames.map((f) => f.sourceId)).toEqual(ids.map((id) => `sim#${id}`));
      for (const f of t.frames) {
        expect(f.seq).toBe(s);
        expect(f.index).toBe(s);
        expect(Math.abs(f.time - t.truth.time)).toBeLessThan(5);
        expect([f.nRx, f.nTx, f.nSub]).toEqual([3, 3, 30]);
      }
      expect(t.truth.seq).toBe(s);
      expect(t.truth.personCount).toBe(2);
    }
  });

  it('next() returns the frames of a tick one by one with that tick’s truth, its events on the first only', () => {
    const opts: SimOptions = { seed: 5, people: 2, radios: DEFAULT_RADIOS, scenario: { fallAt: 0.5 } };
    const byTick = ticks(new CsiSimulator(opts), 200);
    const sim = new CsiSimulator(opts);
    let events = 0;
    for (const t of byTick) {
      t.frames.forEach((f, i) => {
        const s = sim.next();
        expect(F(s.frame).equals(F(f))).toBe(true);
        expect(s.frame.linkId).toBe(f.linkId);
        expect(s.truth.seq).toBe(t.truth.seq);
        expect(s.truth.persons).toEqual(t.truth.persons);
        expect(s.truth.events).toEqual(i === 0 ? t.truth.events : []);
        events += s.truth.events.length;
      });
    }
    // The scripted fall's events came through once.
    expect(events).toBe(byTick.reduce((n, t) => n + t.truth.events.length, 0));
    expect(byTick.some((t) => t.truth.events.some((e) => e.type === 'fall_start'))).toBe(true);
    expect(() => {
      sim.next();
      sim.nextTick();
    }).toThrow(/finish them/);
  });

  it('places each link from its radios: the line of sight of an empty box has the delay of every tx-rx antenna distance', () => {
    // Receivers on three walls at odd angles and heights, 1, 2 and 4 antennas, wide spacing.
    const tx: RadioConfig = { ...DEFAULT_RADIOS[0]!, x: 4.1, y: 4.7, z: 2.0, yaw_deg: 250, antennas: 2, spacing_m: 0.06 };
    const rxs: RadioConfig[] = [
      radio('a', { x: 1.3, y: 0.3, z: 0.9, yaw_deg: 75, antennas: 1 }),
      radio('b', { x: 0.25, y: 3.2, z: 1.5, yaw_deg: 350, antennas: 2, spacing_m: 0.05 }),
      radio('c', { x: 5.7, y: 1.0, z: 1.1, yaw_deg: 160, antennas: 4, spacing_m: 0.04 }),
    ];
    const sim = new CsiSimulator({ seed: 1, people: 0, radios: [tx, ...rxs], impairments: false, scenario: { room: EMPTY_BOX } });
    const { frames } = sim.nextTick();
    const ta = antennas(tx);
    const sub = sim.subcarriers;
    const lambda = SPEED_OF_LIGHT / sim.centreHz;
    let pairs = 0;
    frames.forEach((f, l) => {
      const ra = antennas(rxs[l]!);
      expect([f.nRx, f.nTx]).toEqual([ra.length, ta.length]);
      for (let m = 0; m < f.nRx; m++) {
        for (let n = 0; n < f.nTx; n++) {
          const d = Math.hypot(ra[m]![0] - ta[n]![0], ra[m]![1] - ta[n]![1], ra[m]![2] - ta[n]![2]);
          // Least-squares slope of the unwrapped phase across subcarrier indices: -2 pi 312.5 kHz d / c.
          const ph: number[] = [];
          for (let k = 0; k < f.nSub; k++) {
            const c = 2 * ((k * f.nRx + m) * f.nTx + n);
            let p = Math.atan2(f.csi[c + 1]!, f.csi[c]!);
            if (k > 0) while (p - ph[k - 1]! > Math.PI) p -= 2 * Math.PI;
            if (k > 0) while (p - ph[k - 1]! < -Math.PI) p += 2 * Math.PI;
            ph.push(p);
            // The line of sight alone: |H| = lambda / (4 pi d) (float32 precision).
            expect(Math.hypot(f.csi[c]!, f.csi[c + 1]!) / (lambda / (4 * Math.PI * d))).toBeCloseTo(1, 5);
          }
          const xs = Array.from(sub);
          const mx = xs.reduce((a, b) => a + b) / xs.length;
          const my = ph.reduce((a, b) => a + b) / ph.length;
          let sxy = 0;
          let sxx = 0;
          xs.forEach((x, k) => {
            sxy += (x - mx) * (ph[k]! - my);
            sxx += (x - mx) ** 2;
          });
          const delayM = (-(sxy / sxx) / (2 * Math.PI * 312_500)) * SPEED_OF_LIGHT;
          expect(Math.abs(delayM - d)).toBeLessThan(0.01);
          // The carrier phase pins it to a fraction of a wavelength: -2 pi f_0 d / c at index 0's frequency.
          const k0 = xs.indexOf(1);
          const want = (-2 * Math.PI * (sim.centreHz + 312_500) * d) / SPEED_OF_LIGHT;
          const diff = Math.atan2(Math.sin(ph[k0]! - want), Math.cos(ph[k0]! - want));
          expect(Math.abs(diff)).toBeLessThan(1e-3);
          pairs++;
        }
      }
    });
    expect(pairs).toBe(2 * (1 + 2 + 4));
  });

  it('checks the site: one tx, 1..8 rx, antennas 1..4, inside the room, no nRx/nTx/arrays beside it', () => {
    const rx = (i: number): RadioConfig => radio(`r${i}`, { x: 0.5 + 0.5 * i, y: 0.2 });
    const tx = DEFAULT_RADIOS[0]!;
    expect(new CsiSimulator({ radios: [tx, ...Array.from({ length: MAX_SIM_LINKS }, (_, i) => rx(i))] }).links).toHaveLength(MAX_SIM_LINKS);
    expect(() => new CsiSimulator({ radios: [tx, ...Array.from({ length: MAX_SIM_LINKS + 1 }, (_, i) => rx(i))] })).toThrow(/1\.\.8 rx, got 9/);
    expect(() => new CsiSimulator({ radios: [tx] })).toThrow(/1\.\.8 rx, got 0/);
    expect(() => new CsiSimulator({ radios: [rx(1), rx(2)] })).toThrow(/exactly one tx, got 0/);
    expect(() => new CsiSimulator({ radios: [tx, { ...tx, id: 'tx2' }, rx(1)] })).toThrow(/exactly one tx, got 2/);
    expect(() => new CsiSimulator({ radios: [tx, rx(1), rx(1)] })).toThrow(/"r1" is used twice/);
    expect(() => new CsiSimulator({ radios: [tx, radio('r', { antennas: 5 })] })).toThrow(/antennas must be an integer 1\.\.4/);
    expect(() => new CsiSimulator({ radios: [tx, radio('r', { spacing_m: 0 })] })).toThrow(/spacing_m/);
    expect(() => new CsiSimulator({ radios: [tx, radio('r1'), radio('r2', { x: 6.5 })] })).toThrow(/every antenna of r2 must be inside the room/);
    expect(() => new CsiSimulator({ radios: DEFAULT_RADIOS, nRx: 2 })).toThrow(/leave nRx, nTx/);
    expect(() => new CsiSimulator({ radios: DEFAULT_RADIOS, scenario: { rx: { position: { x: 1, y: 1, z: 1 } } } })).toThrow(/leave nRx, nTx/);
  });
});

describe('one room, one set of people, a receiver per link', () => {
  /** Two receivers at the very same place: whatever differs between their frames is the receivers'. */
  const TWINS: RadioConfig[] = [DEFAULT_RADIOS[0]!, radio('rx1'), radio('twin', { x: 3, y: 0.2 })];

  it('two receivers at one place see one room: with the receivers ideal, the same bytes, door, furniture, bodies and all', () => {
    const still = { preset: 'room', chainPhaseRandom: false, chainPhaseSdRad: 0, chainGainSdDb: 0, clockPpm: 0, doorMeanIntervalS: 10 } as const;
    const sim = new CsiSimulator({ seed: 8, people: 2, radios: TWINS, impairments: false, realism: still });
    const [a, b] = sim.links.map((l) => l.room!);
    expect(b!.scatterers).toEqual(a!.scatterers);
    expect(b!.door).toEqual(a!.door);
    let swings = 0;
    for (const t of ticks(sim, 2000)) {
      expect(t.frames).toHaveLength(2);
      expect(F(t.frames[1]!).equals(F(t.frames[0]!))).toBe(true);
      expect(t.frames[1]!.clockUs).toBe(t.frames[0]!.clockUs);
      const s = t.truth.time / 1000 - Date.UTC(2026, 0, 1) / 1000;
      expect(b!.doorAngle(s)).toBe(a!.doorAngle(s));
      if (a!.doorAngle(s) !== a!.doorAngle(s - 0.01)) swings++;
    }
    // The door did move in these 20 s (the comparison covered a swing).
    expect(swings).toBeGreaterThan(0);
  });

  it('links through different arrays share the room’s one layout: furniture, clutter, door, drift', () => {
    const sim = new CsiSimulator({ seed: 12, people: 1, radios: DEFAULT_RADIOS, realism: { preset: 'room', doorMeanIntervalS: 10 } });
    const [a, ...others] = sim.links.map((l) => l.room!);
    expect(a!.scatterers.length).toBeGreaterThan(0);
    for (const o of others) {
      expect(o!.scatterers).toEqual(a!.scatterers);
      expect(o!.door).toEqual(a!.door);
    }
    // Every array is kept clear of (0.6 m for furniture), not only the link's own two.
    for (const s of a!.scatterers.filter((x) => x.kind === 'furniture')) {
      for (const r of DEFAULT_RADIOS) expect(Math.hypot(s.x - r.x, s.y - r.y)).toBeGreaterThan(0.6);
    }
    for (let i = 0; i < 30; i++) {
      ticks(sim, 100);
      const t = i + 1;
      for (const o of others) expect(o!.doorAngle(t)).toBe(a!.doorAngle(t));
    }
  });

  it('each link draws its own noise, common phase, AGC, chain offsets and clock', () => {
    const sim = new CsiSimulator({
      seed: 8,
      people: 1,
      radios: TWINS,
      realism: 'room',
      impairments: { lossRate: 0, outlierProbability: 0, agcStepProbability: 0.05 },
    });
    const ts = ticks(sim, 400);
    // Device clocks: each link its own offset and skew.
    const [c0, c1] = [ts[0]!.frames[0]!.clockUs, ts[0]!.frames[1]!.clockUs];
    expect(c0).not.toBe(c1);
    const rate = (l: number): number => (ts[399]!.frames[l]!.clockUs - ts[0]!.frames[l]!.clockUs) / (399 * 1e4);
    expect(rate(0)).not.toBe(rate(1));
    for (const l of [0, 1]) expect(Math.abs(rate(l) - 1)).toBeLessThan(25e-6);
    // Chain offsets: the links' session phases differ.
    const [ca, cb] = sim.links.map((l) => l.room!.chainFactors('A'));
    expect(Array.from(ca!)).not.toEqual(Array.from(cb!));
    // Per-packet phase and noise: the ratio of the twins' channels changes from packet to packet,
    // and their common phases are uncorrelated.
    const rot: number[] = [];
    for (const t of ts) {
      const [x, y] = t.frames;
      let re = 0;
      let im = 0;
      for (let i = 0; i < x!.csi.length; i += 2) {
        re += x!.csi[i]! * y!.csi[i]! + x!.csi[i + 1]! * y!.csi[i + 1]!;
        im += x!.csi[i + 1]! * y!.csi[i]! - x!.csi[i]! * y!.csi[i + 1]!;
      }
      rot.push(Math.atan2(im, re));
    }
    const mean =
      Math.hypot(
        rot.reduce((s, r) => s + Math.cos(r), 0),
        rot.reduce((s, r) => s + Math.sin(r), 0),
      ) / rot.length;
    // Independent uniform phase differences: the mean resultant length of 400 is ~1/sqrt(400).
    expect(mean).toBeLessThan(0.15);
    // AGC: the links' gains step at different ticks.
    const power = (f: CsiFrame): number => f.csi.reduce((s, v) => s + v * v, 0);
    const ratio = ts.map((t) => 10 * Math.log10(power(t.frames[0]!) / power(t.frames[1]!)));
    expect(Math.max(...ratio) - Math.min(...ratio)).toBeGreaterThan(1);
  });

  it('loses packets link by link, independently, on the one tick grid', () => {
    const n = 6000;
    const sim = new CsiSimulator({ seed: 2, people: 0, radios: DEFAULT_RADIOS, impairments: { lossRate: 0.3, lossBurst: 1 } });
    const got = [new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)];
    let ticksSeen = 0;
    while (sim.packets < n) {
      const t = sim.nextTick();
      expect(t.frames.length).toBeGreaterThan(0);
      for (const f of t.frames) {
        const l = Number(f.linkId!.slice(-1)) - 1;
        if (f.seq < n) got[l]![f.seq] = 1;
      }
      ticksSeen++;
    }
    const share = got.map((g) => g.reduce((a, b) => a + b, 0) / n);
    for (const s of share) expect(Math.abs(s - 0.7)).toBeLessThan(0.03);
    // Independent: both received as often as the product says; all three lost (no tick at all) ~2.7 %.
    for (const [a, b] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      let both = 0;
      for (let i = 0; i < n; i++) both += got[a]![i]! & got[b]![i]!;
      expect(Math.abs(both / n - share[a]! * share[b]!)).toBeLessThan(0.03);
    }
    expect(Math.abs(1 - ticksSeen / n - 0.3 ** 3)).toBeLessThan(0.01);
  });

  it('bodies shadow each link’s own paths', () => {
    // A person standing on the line between tx and rx1, far off the others' lines of sight.
    const person = [{ x: 3, y: 2.5, script: [] }];
    const opts = (realism: SimOptions['realism']): SimOptions => ({
      seed: 1,
      people: person,
      radios: DEFAULT_RADIOS,
      impairments: false,
      realism,
      scenario: { room: EMPTY_BOX },
    });
    const shade = { shadowLossDb: 12 };
    const power = (f: CsiFrame): number => f.csi.reduce((s, v) => s + v * v, 0);
    const [plain, shaded] = [new CsiSimulator(opts('ideal')).nextTick(), new CsiSimulator(opts(shade)).nextTick()];
    const db = plain.frames.map((f, l) => 10 * Math.log10(power(shaded.frames[l]!) / power(f)));
    // tx-rx1 through the body: several dB down; tx-rx2 and tx-rx3 pass clear of the body's 0.32 m width.
    expect(db[0]).toBeLessThan(-4);
    expect(Math.abs(db[1]!)).toBeLessThan(0.5);
    expect(Math.abs(db[2]!)).toBeLessThan(0.5);
  });
});

describe('determinism and the one-link case', () => {
  it('gives the same bytes for the same seed and site', () => {
    const opts: SimOptions = { seed: 21, people: 3, radios: DEFAULT_RADIOS, realism: 'room' };
    const [a, b] = [ticks(new CsiSimulator(opts), 300), ticks(new CsiSimulator(opts), 300)];
    a.forEach((t, i) => {
      expect(t.frames.map((f) => [f.linkId, f.seq, f.time, f.clockUs, f.rssi])).toEqual(b[i]!.frames.map((f) => [f.linkId, f.seq, f.time, f.clockUs, f.rssi]));
      t.frames.forEach((f, l) => expect(F(f).equals(F(b[i]!.frames[l]!))).toBe(true));
      expect(t.truth.persons.map((p) => Array.from(p.keypoints3d))).toEqual(b[i]!.truth.persons.map((p) => Array.from(p.keypoints3d)));
    });
    const c = ticks(new CsiSimulator({ ...opts, seed: 22 }), 1)[0]!;
    expect(F(c.frames[0]!).equals(F(a[0]!.frames[0]!))).toBe(false);
  });

  /** The one-link simulator's default arrays as radios: tx on the back wall facing in, rx on the front wall. */
  const HALF = SPEED_OF_LIGHT / 5.18e9 / 2;
  const ONE: RadioConfig[] = [
    { ...DEFAULT_RADIOS[0]!, spacing_m: HALF },
    { ...DEFAULT_RADIOS[1]!, spacing_m: HALF },
  ];
  /** The same arrays without radios (the tx facing -y has its antenna line along -x). */
  const OLD: SimOptions = { scenario: { tx: { position: { x: 3, y: 4.8, z: 1.2 }, axis: { x: -1, y: 0, z: 0 } }, rx: { position: { x: 3, y: 0.2, z: 1.2 } } } };

  it.each([['ideal'], ['room']] as const)('a one-link site is the one-link simulator with the same arrays (%s)', (realism) => {
    const base: SimOptions = { seed: 4, people: 2, realism, scenario: { fallAt: 1 } };
    const site = new CsiSimulator({ ...base, radios: ONE });
    const old = new CsiSimulator({ ...base, ...OLD, scenario: { ...OLD.scenario, ...base.scenario } });
    for (let i = 0; i < 600; i++) {
      const [s, o] = [site.next(), old.next()];
      expect(s.frame.linkId).toBe('tx-rx1');
      expect(s.frame.sourceId).toBe('sim#tx-rx1');
      expect(o.frame.linkId).toBeUndefined();
      const { linkId: _l, sourceId: _s, csi: sc, ...sf } = s.frame;
      const { sourceId: _o, csi: oc, ...of } = o.frame;
      expect(sf).toEqual(of);
      expect(Buffer.from(sc.buffer).equals(Buffer.from(oc.buffer))).toBe(true);
      expect(s.truth).toEqual(o.truth);
    }
  });

  it('adding receivers leaves the first link’s stream as it was (ideal room)', () => {
    const base: SimOptions = { seed: 6, people: 2 };
    const one = new CsiSimulator({ ...base, radios: DEFAULT_RADIOS.slice(0, 2) });
    const three = new CsiSimulator({ ...base, radios: DEFAULT_RADIOS });
    let compared = 0;
    while (one.packets < 1000) {
      const { frame } = one.next();
      let t: SimTick;
      do t = three.nextTick();
      while (t.frames[0]!.seq < frame.seq);
      const f = t.frames.find((x) => x.linkId === 'tx-rx1');
      if (f === undefined) continue;
      expect(f.seq).toBe(frame.seq);
      expect(F(f).equals(F(frame))).toBe(true);
      expect(f.time).toBe(frame.time);
      compared++;
    }
    expect(compared).toBeGreaterThan(900);
  });
});
