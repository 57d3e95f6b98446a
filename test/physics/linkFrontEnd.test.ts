/**
 * One link's front end (src/physics/linkFrontEnd.ts) on the simulator's frames of the default site:
 * learning then ready, a layout change, a gap, a recorded empty room; its windows against the steps
 * the floorMap stage took itself before the front end was shared (aligner, static channel, ring),
 * and the operator's map against the front end's window beamformed.
 */
import { describe, expect, it } from 'vitest';
import { from, lastValueFrom, toArray } from 'rxjs';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS, siteLinks, type SiteLink } from '../../src/csi/radios.js';
import { DEFAULT_BEAMFORMER, DEFAULT_MAX_CANDIDATES, DEFAULT_ROOM_DEPTH, DEFAULT_ROOM_WIDTH, floorMap } from '../../operators/floorMap.js';
import { DEFAULT_CELL_M, FloorBeamformer, floorGrid } from '../../src/physics/beamform.js';
import { CALIBRATION_VERSION, chainFactors, type RoomCalibration } from '../../src/physics/calibration.js';
import { CandidateSearch } from '../../src/physics/candidates.js';
import { applyChainCorrection } from '../../src/physics/chains.js';
import { centreFrequencyHz, linkGeometry } from '../../src/physics/geometry.js';
import { DEFAULT_CHANNEL, GAP_MS, LinkFrontEnd } from '../../src/physics/linkFrontEnd.js';
import { losDelayS, StaticChannel } from '../../src/physics/static.js';
import type { MovingWindow } from '../../src/physics/types.js';
import { MovingWindows, SHORT_HOP, SHORT_WINDOW } from '../../src/physics/window.js';
import { CsiSimulator, type SimOptions } from '../../src/sim/simulator.js';
import { LEARN, WALKER } from '../helpers/walker.js';

const LINKS = siteLinks(DEFAULT_RADIOS);

/** `ticks` ticks of the default site (one walker after LEARN s), every frame in tick order. */
function simulate(ticks: number, options: SimOptions = {}): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 5, radios: DEFAULT_RADIOS, realism: 'ideal', people: [WALKER], ...options });
  const frames: CsiFrame[] = [];
  for (let i = 0; i < ticks; i++) frames.push(...sim.nextTick().frames);
  return frames;
}

const ofLink = (frames: CsiFrame[], link: SiteLink) => frames.filter((f) => f.linkId === link.id);

/** Whether two arrays hold the same bits (fast: per packet). */
const sameBits = (a: Float32Array, b: Float32Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** A copy of a window (its data is the front end's buffer, overwritten by the next). */
const copy = (w: MovingWindow) => ({ ...w, data: w.data.slice() });

/**
 * The floorMap stage's own per-link steps before LinkFrontEnd (operators/floorMap.ts, LinkTrack and
 * its `next`): the reference the front end must match bit for bit.
 */
class Reference {
  readonly st: StaticChannel;
  readonly windows: MovingWindows;
  readonly aligned: Float32Array;
  readonly buffer: Float32Array;
  firstTime = NaN;
  lastTime = NaN;

  constructor(
    link: SiteLink,
    f: CsiFrame,
    readonly learnMs: number,
  ) {
    const subcarriers = Int16Array.from(f.subcarriers);
    this.st = new StaticChannel({ subcarriers, nRx: f.nRx, nTx: f.nTx, losDelayS: losDelayS(link.tx, link.rx) });
    this.windows = new MovingWindows({ nSub: f.nSub, nRx: f.nRx, nTx: f.nTx });
    this.aligned = new Float32Array(f.csi.length);
    this.buffer = new Float32Array(SHORT_WINDOW * f.csi.length);
  }

  learning(): boolean {
    return this.learnMs > 0 && this.lastTime - this.firstTime < this.learnMs;
  }

  push(f: CsiFrame): void {
    if (Number.isNaN(this.firstTime)) this.firstTime = f.time;
    else if (f.time < this.lastTime || f.time - this.lastTime > GAP_MS) this.windows.clear();
    this.lastTime = f.time;
    this.st.process(f.csi, f.time, this.learning(), this.aligned);
    this.windows.push(this.aligned, f.time);
  }

  private sub(): Float32Array | null {
    return this.learning() || !this.st.ready ? null : this.st.channel;
  }

  take(): MovingWindow | null {
    return this.windows.take('short', this.sub());
  }

  latest(): MovingWindow | null {
    return this.windows.count < SHORT_WINDOW ? null : this.windows.window(SHORT_WINDOW, this.sub(), this.buffer);
  }
}

describe('LinkFrontEnd', () => {
  const frames = simulate(700);
  const primary = ofLink(frames, LINKS[0]!);

  it('learns the empty room for learnMs from its first packet (windows minus their mean), then is ready (minus the frozen static channel)', () => {
    const fe = new LinkFrontEnd(LINKS[0]!, primary[0]!, { learnMs: 1000 });
    expect(fe.learning).toBe(false);
    expect(fe.ready).toBe(false);
    expect(fe.geometry.centreHz).toBe(centreFrequencyHz(primary[0]!.channel, primary[0]!.bandwidthMhz));
    let learned = 0;
    let windows = 0;
    for (const f of primary) {
      fe.push(f.csi, f.time);
      const inLearning = f.time - primary[0]!.time < 1000;
      expect(fe.learning).toBe(inLearning);
      expect(fe.ready).toBe(!inLearning);
      if (inLearning) learned = fe.staticChannel.packets;
      const w = fe.take();
      if (!w) continue;
      windows++;
      // While learning the window's mean is taken away: every column sums to ~0.
      if (inLearning) {
        const size = w.data.length / w.snapshots;
        for (const i of [0, 1, size >> 1, size - 1]) {
          let s = 0;
          for (let k = 0; k < w.snapshots; k++) s += w.data[k * size + i]!;
          expect(Math.abs(s / w.snapshots)).toBeLessThan(1e-3);
        }
      }
    }
    expect(learned).toBeGreaterThan(80);
    // Frozen once learned.
    expect(fe.staticChannel.packets).toBe(learned);
    expect(fe.packets).toBe(primary.length);
    expect(windows).toBe(Math.floor((primary.length - SHORT_WINDOW) / SHORT_HOP) + 1);
  });

  it('learnMs 0: never learns; the window mean is taken away (no static channel)', () => {
    const fe = new LinkFrontEnd(LINKS[0]!, primary[0]!);
    for (const f of primary.slice(0, 100)) fe.push(f.csi, f.time);
    expect(fe.learning).toBe(false);
    expect(fe.ready).toBe(false);
    expect(fe.staticChannel.ready).toBe(false);
    expect(fe.latest()).not.toBeNull();
  });

  it('fits only frames of its layout; a new front end from a changed frame starts again (learning, empty ring)', () => {
    const f0 = primary[0]!;
    const fe = new LinkFrontEnd(LINKS[0]!, f0, { learnMs: 1000 });
    for (const f of primary.slice(0, 300)) fe.push(f.csi, f.time);
    expect(fe.ready).toBe(true);
    expect(fe.fits(primary[300]!)).toBe(true);
    const changed: CsiFrame[] = [
      { ...f0, channel: 40 },
      { ...f0, bandwidthMhz: 40 },
      { ...f0, channel: NaN },
      { ...f0, subcarriers: Int16Array.from(f0.subcarriers, (s) => s + 1) },
      { ...f0, nRx: 2, csi: new Float32Array((f0.csi.length / 3) * 2) },
      { ...f0, csi: new Float32Array(f0.csi.length + 2) },
    ];
    for (const f of changed) expect(fe.fits(f)).toBe(false);
    // An unknown channel is taken as DEFAULT_CHANNEL; a channel that cannot be placed throws.
    const unknown = new LinkFrontEnd(LINKS[0]!, changed[2]!);
    expect(unknown.fits(changed[2]!)).toBe(true);
    expect(unknown.geometry.centreHz).toBe(centreFrequencyHz(DEFAULT_CHANNEL, f0.bandwidthMhz));
    expect(() => new LinkFrontEnd(LINKS[0]!, { ...f0, channel: 999 })).toThrow(RangeError);
    // The frames' antenna counts win over the radios'.
    const two = primary.slice(300, 350).map((f) => ({ ...f, nRx: 2, csi: f.csi.slice(0, (f.csi.length / 3) * 2) }));
    const again = new LinkFrontEnd(LINKS[0]!, two[0]!, { learnMs: 1000 });
    expect(again.geometry.nRx).toBe(2);
    expect(again.windows.count).toBe(0);
    for (const f of two) again.push(f.csi, f.time);
    expect(again.learning).toBe(true);
    expect(again.staticChannel.packets).toBe(two.length);
  });

  it('a gap (or time going back) empties the ring and keeps the static channel; gapMs null never empties it', () => {
    const fe = new LinkFrontEnd(LINKS[0]!, primary[0]!, { learnMs: 500 });
    const keep = new LinkFrontEnd(LINKS[0]!, primary[0]!, { learnMs: 500, gapMs: null });
    for (const f of primary.slice(0, 200)) {
      fe.push(f.csi, f.time);
      keep.push(f.csi, f.time);
    }
    expect(fe.ready).toBe(true);
    expect(fe.windows.count).toBe(200);
    const channel = fe.staticChannel.channel.slice();
    const learned = fe.staticChannel.packets;
    const late = primary[200]!;
    fe.push(late.csi, late.time + GAP_MS + 1);
    keep.push(late.csi, late.time + GAP_MS + 1);
    expect(fe.windows.count).toBe(1);
    expect(keep.windows.count).toBe(201);
    expect(fe.ready).toBe(true);
    expect(fe.staticChannel.packets).toBe(learned);
    expect(fe.staticChannel.channel).toEqual(channel);
    expect(fe.latest()).toBeNull();
    expect(fe.take()).toBeNull();
    // A silence of GAP_MS exactly is no gap.
    const next = primary[201]!;
    fe.push(next.csi, late.time + 2 * GAP_MS + 1);
    expect(fe.windows.count).toBe(2);
    // Time going back.
    fe.push(next.csi, late.time);
    expect(fe.windows.count).toBe(1);
    expect(fe.staticChannel.channel).toEqual(channel);
  });

  it("hands out, packet for packet, the windows floorMap took itself before (take: the primary's; latest: the others')", () => {
    const gappy = frames.filter((f) => !(f.time - frames[0]!.time > 4000 && f.time - frames[0]!.time < 5200));
    const learnMs = LEARN * 1000;
    const fes = new Map<string, LinkFrontEnd>();
    const refs = new Map<string, Reference>();
    let compared = 0;
    for (const f of gappy) {
      const link = LINKS.find((l) => l.id === f.linkId)!;
      if (!fes.has(link.id)) {
        fes.set(link.id, new LinkFrontEnd(link, f, { learnMs }));
        refs.set(link.id, new Reference(link, f, learnMs));
      }
      const fe = fes.get(link.id)!;
      const ref = refs.get(link.id)!;
      fe.push(f.csi, f.time);
      ref.push(f);
      expect(sameBits(fe.aligned, ref.aligned)).toBe(true);
      expect(fe.learning).toBe(ref.learning());
      if (link !== LINKS[0]) continue;
      const w = fe.take();
      const r = ref.take();
      expect(w === null).toBe(r === null);
      if (!w || !r) continue;
      expect({ ...w, data: null }).toEqual({ ...r, data: null });
      expect(sameBits(w.data, r.data)).toBe(true);
      for (const other of LINKS.slice(1)) {
        const ow = fes.get(other.id)?.latest() ?? null;
        const or = refs.get(other.id)?.latest() ?? null;
        expect(ow === null).toBe(or === null);
        if (ow && or) {
          expect(sameBits(ow.data, or.data)).toBe(true);
          expect(ow.time).toBe(or.time);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(40);
  });

  it('from a recorded empty room: not learning from the first packet; the calibration chain phases are applied to every window', () => {
    const f0 = primary[0]!;
    const st = new StaticChannel({ subcarriers: Int16Array.from(f0.subcarriers), nRx: f0.nRx, nTx: f0.nTx, losDelayS: losDelayS(LINKS[0]!.tx, LINKS[0]!.rx) });
    st.learn(primary.slice(0, 100));
    const phases = Float64Array.from({ length: f0.nRx * f0.nTx }, (_, q) => 0.3 * q);
    const calibration: RoomCalibration = {
      version: CALIBRATION_VERSION,
      created: '2024-01-01T00:00:00.000Z',
      links: [
        {
          id: LINKS[0]!.id,
          subcarriers: Int16Array.from(f0.subcarriers),
          nRx: f0.nRx,
          nTx: f0.nTx,
          chainPhases: phases,
          staticChannel: st.channel.slice(),
          windows: 20,
          focusBefore: 0.1,
          focusAfter: 0.2,
        },
      ],
    };
    const cal = new LinkFrontEnd(LINKS[0]!, f0, { learnMs: 10_000, calibration });
    const plain = new LinkFrontEnd(LINKS[0]!, f0, { learnMs: 10_000, emptyRoom: st.channel.slice() });
    expect(cal.recordedEmpty && cal.calibratedChains && plain.recordedEmpty && !plain.calibratedChains).toBe(true);
    expect(plain.chains).toBeNull();
    // Another link's entry, or a layout it was not fitted for: as without it.
    expect(new LinkFrontEnd(LINKS[1]!, f0, { learnMs: 10_000, calibration }).recordedEmpty).toBe(false);
    expect(new LinkFrontEnd(LINKS[0]!, { ...f0, subcarriers: Int16Array.from(f0.subcarriers, (s) => s + 1) }, { calibration }).calibratedChains).toBe(false);
    for (const f of primary.slice(0, SHORT_WINDOW)) {
      cal.push(f.csi, f.time);
      plain.push(f.csi, f.time);
      expect(cal.learning).toBe(false);
      expect(cal.ready).toBe(true);
    }
    const w = copy(plain.take()!);
    expect(cal.take()!.data).toEqual(applyChainCorrection(w, chainFactors(phases)).data);
  });

  it("gives the floorMap operator's map and candidates when its windows are beamformed as the stage does (one link, chain phases fitted)", async () => {
    const radios = DEFAULT_RADIOS.filter((r) => r.id === 'tx' || r.id === 'rx1');
    const [link] = siteLinks(radios);
    const sim = new CsiSimulator({ seed: 7, radios, realism: 'room', people: [WALKER] });
    const fs: CsiFrame[] = [];
    for (let i = 0; i < 500; i++) fs.push(...sim.nextTick().frames);
    const items = await lastValueFrom(from(fs).pipe(floorMap({ radios: () => radios, learnSeconds: 2, chainCalibration: true }), toArray()));

    const grid = floorGrid({ x0: 0, x1: DEFAULT_ROOM_WIDTH, y0: 0, y1: DEFAULT_ROOM_DEPTH, cell: DEFAULT_CELL_M });
    const fe = new LinkFrontEnd(link!, fs[0]!, { learnMs: 2000, chainCalibration: true, room: { width: DEFAULT_ROOM_WIDTH, depth: DEFAULT_ROOM_DEPTH } });
    const geometry = linkGeometry(link!.tx, link!.rx, Int16Array.from(fs[0]!.subcarriers), centreFrequencyHz(fs[0]!.channel, fs[0]!.bandwidthMhz));
    expect(fe.geometry).toEqual(geometry);
    const bf = new FloorBeamformer(fe.geometry, grid, DEFAULT_BEAMFORMER);
    const search = new CandidateSearch(grid, { step: 1 });
    const map = new Float32Array(grid.size);
    const fused = new Float32Array(grid.size);
    let n = 0;
    for (const f of fs) {
      fe.push(f.csi, f.time);
      const w = fe.take();
      if (!w) continue;
      bf.reduce(w);
      const candidates = search.run([bf], [map], fused, { maxCandidates: DEFAULT_MAX_CANDIDATES });
      const item = items[n++]!;
      expect(item.time).toBe(w.time);
      expect(item.map).toEqual(fused);
      expect(item.candidates).toEqual(candidates);
    }
    expect(n).toBe(items.length);
    expect(n).toBeGreaterThan(20);
    expect(fe.chains).not.toBeNull();
  });
});
