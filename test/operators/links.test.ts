import { describe, expect, it } from 'vitest';
import { from, interval, lastValueFrom, mergeMap, Observable, take, timer, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { CsiFrame, CsiWindow } from '../../src/csi/frame.js';
import { DEFAULT_RADIOS, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { DEFAULT_TOLERANCE_MS, LinkJoin } from '../../src/csi/linkJoin.js';
import { DEFAULT_TIMEOUT_SECONDS, LinkMonitor, type LinkReport, type LinkSet, type LinkStatsHolder } from '../../src/csi/linkMonitor.js';
import { links, spec } from '../../operators/links.js';
import { slidingWindow } from '../../operators/slidingWindow.js';
import { registry } from '../../pipelines/index.js';
import { makeFrame } from '../helpers/frames.js';

const T0 = 1_767_225_600_000;
const testScheduler = () => new TestScheduler((a, e) => expect(a).toEqual(e));

/** A frame of `link` (undefined = no linkId) at T0 + ms, 3x3x30 unless told, values saying which link and packet it is. */
function frame(link: string | undefined, ms: number, seq: number, shape: { nRx?: number; nTx?: number; nSub?: number } = {}): CsiFrame {
  const tag = link === undefined ? 0 : Number(link.slice(-1));
  const f = makeFrame({ nRx: 3, nTx: 3, nSub: 30, ...shape, seq, time: T0 + ms, value: (sc, rx, tx) => [seq + sc / 100, tag * 10 + rx * 3 + tx] });
  return link === undefined ? f : { ...f, linkId: link };
}

/** One tick of the default site: the three links' frames of packet k (100 Hz), in the given order. */
function tick(k: number, order: readonly string[] = ['tx-rx1', 'tx-rx2', 'tx-rx3']): CsiFrame[] {
  return order.map((l) => frame(l, k * 10, k));
}

/** A clock tests move by hand. */
function clock(start = T0) {
  const c = { t: start, now: () => c.t };
  return c;
}

const byId = (reports: LinkReport[], id: string) => reports.find((r) => r.linkId === id)!;

describe('LinkJoin', () => {
  const site = siteLinks(DEFAULT_RADIOS);

  it('joins each link by its nearest frame within the tolerance, edges included, and reports every offset', () => {
    const join = new LinkJoin(site, 5);
    // rx2: 5 ms early (the edge, joined); rx3: 5.5 ms late (just past it, left out).
    join.push(1, frame('tx-rx2', 90, 1));
    join.push(1, frame('tx-rx2', 95, 2));
    join.push(2, frame('tx-rx3', 105.5, 2));
    const reading = frame(undefined, 100, 2);
    const out: Array<CsiFrame | undefined> = [];
    expect(join.join(reading, out)).toBe(2);
    expect(out[0]).toBe(reading);
    expect(out[1]?.time).toBe(T0 + 95);
    expect(out[2]).toBeUndefined();
    expect(Array.from(join.offsets)).toEqual([0, -5, 5.5]);
    // At a tolerance of 5.5 ms the late frame is in.
    const wide = new LinkJoin(site, 5.5);
    wide.push(2, frame('tx-rx3', 105.5, 2));
    expect(wide.join(reading, out)).toBe(2);
    expect(out[2]?.time).toBe(T0 + 105.5);
  });

  it('picks the nearest of several frames (the newer of two as near), and none from a link that holds no frame', () => {
    const join = new LinkJoin(site, 5);
    for (const ms of [96, 98, 102, 104]) join.push(1, frame('tx-rx2', ms, ms));
    const out: Array<CsiFrame | undefined> = [];
    join.join(frame(undefined, 100, 0), out);
    expect(out[1]?.time).toBe(T0 + 102);
    expect(out[2]).toBeUndefined();
    expect(Number.isNaN(join.offsets[2]!)).toBe(true);
    join.join(frame(undefined, 99.5, 0), out);
    expect(out[1]?.time).toBe(T0 + 98);
  });

  it('keeps the last `depth` frames of each link in a ring', () => {
    const join = new LinkJoin(site, 5, 4);
    for (let k = 0; k < 10; k++) join.push(1, frame('tx-rx2', k * 10, k));
    expect(join.count(1)).toBe(4);
    expect(join.newest(1)).toBe(T0 + 90);
    const out: Array<CsiFrame | undefined> = [];
    // Packet 5 is gone from the ring: its nearest is packet 6, 10 ms away.
    join.join(frame(undefined, 50, 5), out);
    expect(out[1]).toBeUndefined();
    expect(join.offsets[1]).toBe(10);
    join.join(frame(undefined, 60, 6), out);
    expect(out[1]?.seq).toBe(6);
  });

  it('names links: no linkId is the primary, an id not in the site is -1', () => {
    const join = new LinkJoin(site, 5);
    expect(join.linkIndex(undefined)).toBe(0);
    expect(join.linkIndex('tx-rx1')).toBe(0);
    expect(join.linkIndex('tx-rx3')).toBe(2);
    expect(join.linkIndex('tx-rx9')).toBe(-1);
    expect(() => new LinkJoin(site, -1)).toThrow(RangeError);
  });
});

describe('links: the primary link goes on, the others are joined to it', () => {
  it('passes on the primary link (with or without linkId) unchanged, drops the others', async () => {
    const frames = [frame(undefined, 0, 0), frame('tx-rx2', 0, 0), frame('tx-rx1', 10, 1), frame('tx-rx3', 10, 1), frame('tx-rx9', 10, 1)];
    const out = await lastValueFrom(from(frames).pipe(links(), toArray()));
    expect(out).toHaveLength(2);
    expect(out[0]).toBe(frames[0]);
    expect(out[1]).toBe(frames[2]);
  });

  it("pass 'site': every site link's frames go on, in order and unchanged; another layout's and unknown links' do not; the figures are the same", async () => {
    const frames = [
      frame(undefined, 0, 0),
      frame('tx-rx2', 0, 0),
      frame('tx-rx3', 0, 0, { nSub: 56 }),
      frame('tx-rx1', 10, 1),
      frame('tx-rx3', 10, 1, { nRx: 1, nTx: 1 }),
      frame('tx-rx2', 10, 1),
      frame('tx-rx9', 10, 1),
    ];
    const [site, primary]: [LinkStatsHolder, LinkStatsHolder] = [{}, {}];
    const out = await lastValueFrom(from(frames).pipe(links({ pass: 'site', stats: site }), toArray()));
    expect(out).toEqual([frames[0], frames[1], frames[3], frames[5]]);
    out.forEach((f, i) => expect(f).toBe([frames[0], frames[1], frames[3], frames[5]][i]));
    await lastValueFrom(from(frames).pipe(links({ stats: primary }), toArray()));
    const figures = (h: LinkStatsHolder) => h.monitor!.report().map(({ linkId, state, frames: n, layout }) => ({ linkId, state, n, layout }));
    expect(figures(site)).toEqual(figures(primary));
    expect(() => links({ pass: 'all' as 'site' })).toThrow(/pass must be primary or site/);
  });

  it('interleaved 3-link frames give the same windows downstream as the primary link alone', async () => {
    const all = Array.from({ length: 200 }, (_, k) => tick(k)).flat();
    const primary = all.filter((f) => f.linkId === 'tx-rx1');
    const opts = { size: 64, hop: 8 };
    const joined = await lastValueFrom(from(all).pipe(links(), slidingWindow(opts), toArray()));
    const alone = await lastValueFrom(from(primary).pipe(slidingWindow(opts), toArray()));
    expect(alone).toHaveLength(18);
    // Field by field, and the samples byte for byte (a deep compare of 18 x 34,560 floats takes seconds).
    const bytes = (a: Float32Array | Float64Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    const meta = ({ data: _d, times: _t, subcarriers: _s, ...rest }: CsiWindow) => rest;
    expect(joined.map(meta)).toEqual(alone.map(meta));
    joined.forEach((w, i) => {
      expect(bytes(w.data).equals(bytes(alone[i]!.data))).toBe(true);
      expect(bytes(w.times).equals(bytes(alone[i]!.times))).toBe(true);
      expect(w.subcarriers).toBe(alone[i]!.subcarriers);
    });
    expect(joined.every((w: CsiWindow) => w.linkId === 'tx-rx1')).toBe(true);
    // Without the stage the window never mixes links: every change of link empties it (30 frames would make 6 windows of 8).
    expect(await lastValueFrom(from(all.slice(0, 30)).pipe(slidingWindow({ size: 8, hop: 4 }), toArray()))).toEqual([]);
  });

  it('forms each reading frame its set as soon as every link caught up, whatever order a tick comes in', async () => {
    for (const order of [
      ['tx-rx1', 'tx-rx2', 'tx-rx3'],
      ['tx-rx3', 'tx-rx2', 'tx-rx1'],
      ['tx-rx2', 'tx-rx1', 'tx-rx3'],
    ]) {
      const seen: Array<{ seq: number; joined: number; seqs: Array<number | undefined>; after: number }> = [];
      let arrived = 0;
      const frames = Array.from({ length: 20 }, (_, k) => tick(k, order)).flat();
      const counted = new Observable<CsiFrame>((s) => {
        for (const f of frames) {
          arrived++;
          s.next(f);
        }
        s.complete();
      });
      await lastValueFrom(
        counted.pipe(
          links({ onSet: (set: LinkSet) => seen.push({ seq: set.reading.seq, joined: set.joined, seqs: set.frames.map((f) => f?.seq), after: arrived }) }),
          toArray(),
        ),
      );
      expect(
        seen.map((s) => s.seq),
        order.join(),
      ).toEqual(Array.from({ length: 20 }, (_, k) => k));
      // From the second tick on (a link that never sent is not waited for: the first tick forms with the links seen so far).
      for (const s of seen.slice(1)) {
        expect(s.joined, order.join()).toBe(3);
        expect(s.seqs).toEqual([s.seq, s.seq, s.seq]);
        // Formed with the tick's last frame: nothing waited for the next tick.
        expect(s.after).toBe((s.seq + 1) * 3);
      }
    }
  });

  it('a frame of the same packet arriving after the reading frame, before the next, is still in its set', async () => {
    // rx2's frame of packet k arrives after rx1's frame of packet k + 1 would be too late; just after rx1's k is in time.
    const frames: CsiFrame[] = [];
    for (let k = 0; k < 10; k++) frames.push(frame('tx-rx1', k * 10, k), frame('tx-rx2', k * 10 + 1, k));
    // A 1-link-late sender: rx3's packet k comes after rx1's k + 1.
    const late: CsiFrame[] = [];
    for (let k = 0; k < 10; k++) late.push(frame('tx-rx1', k * 10, k), ...(k > 0 ? [frame('tx-rx3', (k - 1) * 10, k - 1)] : []));
    const sets: Array<Array<number | undefined>> = [];
    const onSet = (s: LinkSet) => sets.push(s.frames.map((f) => f?.seq));
    await lastValueFrom(from(frames).pipe(links({ onSet }), toArray()));
    // The first set forms before rx2 ever sent.
    expect(sets).toEqual([[0, undefined, undefined], ...Array.from({ length: 9 }, (_, k) => [k + 1, k + 1, undefined])]);
    sets.length = 0;
    await lastValueFrom(from(late).pipe(links({ onSet }), toArray()));
    // Each set forms when the next reading frame comes: rx3's frame of that packet has not come yet (its previous is 10 ms away).
    expect(sets.slice(1)).toEqual(Array.from({ length: 9 }, (_, k) => [k + 1, undefined, undefined]));
  });
});

describe('links: per-link figures and states', () => {
  it('rate, packet loss from sequence gaps (wrapping counters too), last packet, layout, frames', () => {
    const c = clock();
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: c.now });
    // 100 Hz for 1 s; rx2 loses every 10th packet; rx3's 16-bit counter wraps without loss.
    for (let k = 0; k < 100; k++) {
      c.t = T0 + k * 10;
      m.accept(frame(undefined, k * 10, k));
      if (k % 10 !== 5) m.accept(frame('tx-rx2', k * 10, k));
      m.accept(frame('tx-rx3', k * 10, (65_486 + k) % 65_536));
    }
    const r = m.report();
    const p = byId(r, 'tx-rx1');
    expect(p).toMatchObject({
      tx: 'tx',
      rx: 'rx1',
      state: 'live',
      primary: true,
      rateHz: 100,
      packetLossRate: 0,
      lastPacketAt: T0 + 990,
      lagMs: 0,
      layout: '3x3x30',
      frames: 100,
      reason: '',
    });
    const rx2 = byId(r, 'tx-rx2');
    expect(rx2).toMatchObject({ state: 'live', primary: false, frames: 90, lagMs: 0 });
    expect(rx2.packetLossRate).toBeCloseTo(10 / 100, 12);
    expect(byId(r, 'tx-rx3')).toMatchObject({ state: 'live', packetLossRate: 0, rateHz: 100, frames: 100 });
    // Once the link is 5 s old the rate covers the last 5 s: 4.5 s after the last packet, the 51 packets since T0 + 490 ms.
    c.t = T0 + 990 + 4500;
    expect(byId(m.report(), 'tx-rx1').rateHz).toBeCloseTo(51 / 5, 9);
  });

  it('a link behind the reading link by more than the tolerance is lagging and left out; within it, live with its lag', () => {
    const c = clock();
    const sets: number[] = [];
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: c.now, onSet: (s) => sets.push(s.joined) });
    for (let k = 0; k < 100; k++) {
      c.t = T0 + k * 10;
      m.accept(frame('tx-rx1', k * 10, k));
      // rx2's clock reads 40 ms behind; rx3's 2 ms ahead.
      m.accept(frame('tx-rx2', k * 10 - 40, k));
      m.accept(frame('tx-rx3', k * 10 + 2, k));
    }
    m.finish();
    const r = m.report();
    expect(byId(r, 'tx-rx2')).toMatchObject({ state: 'lagging', lagMs: -40 });
    expect(byId(r, 'tx-rx2').reason).toBe(
      "tx-rx2 lagging: its frames are 40 ms behind tx-rx1's (tolerance 5 ms); poses go on from tx-rx1, this link is left out of the join",
    );
    expect(byId(r, 'tx-rx3')).toMatchObject({ state: 'live', lagMs: 2 });
    // The first set forms before the others ever sent; then rx3 is in every set and rx2 in none.
    expect(sets).toEqual([1, ...new Array(99).fill(2)]);
  });

  it('a link that stops is stopped after timeoutSeconds, read without any frame arriving; the primary stopping says no poses', () => {
    const c = clock();
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: c.now });
    for (let k = 0; k < 50; k++) {
      c.t = T0 + k * 10;
      m.accept(frame('tx-rx1', k * 10, k));
      m.accept(frame('tx-rx2', k * 10, k));
    }
    // rx3 never sent; 2 s after the last packet, everything is still live.
    c.t = T0 + 490 + 2000;
    let r = m.report();
    expect(r.map((l) => l.state)).toEqual(['live', 'live', 'waiting']);
    expect(byId(r, 'tx-rx3')).toMatchObject({
      rateHz: 0,
      packetLossRate: 0,
      lastPacketAt: null,
      lagMs: 0,
      layout: null,
      frames: 0,
      reason: 'tx-rx3 waiting: no packet yet',
    });
    c.t += 1;
    r = m.report();
    expect(r.map((l) => l.state)).toEqual(['stopped', 'stopped', 'waiting']);
    expect(byId(r, 'tx-rx1').reason).toBe('tx-rx1 stopped: no packet for 2.0 s (timeout 2.0 s); the model reads this link: no poses while it is stopped');
    expect(byId(r, 'tx-rx2').reason).toBe(
      'tx-rx2 stopped: no packet for 2.0 s (timeout 2.0 s); poses go on from tx-rx1, this link is left out of the join while it is stopped',
    );
    // A secondary stopping changes nothing for the primary, and it is live again with its next packet.
    for (let k = 300; k < 310; k++) {
      c.t = T0 + k * 10;
      m.accept(frame('tx-rx1', k * 10, k));
    }
    r = m.report();
    expect(r.map((l) => l.state)).toEqual(['live', 'stopped', 'waiting']);
    c.t += 10;
    m.accept(frame('tx-rx2', 3100, 310));
    m.accept(frame('tx-rx1', 3100, 310));
    expect(m.report().map((l) => l.state)).toEqual(['live', 'live', 'waiting']);
  });

  it('a link whose antennas, or subcarriers beside the primary, differ from the site is mismatched and not joined; the primary still goes on', async () => {
    const c = clock();
    const sets: Array<Array<number | undefined>> = [];
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: c.now, onSet: (s) => sets.push(s.frames.map((f) => f?.seq)) });
    for (let k = 0; k < 10; k++) {
      c.t = T0 + k * 10;
      expect(m.accept(frame('tx-rx1', k * 10, k))).toBe(true);
      m.accept(frame('tx-rx2', k * 10, k, { nRx: 1, nTx: 1 }));
      m.accept(frame('tx-rx3', k * 10, k, { nSub: 56 }));
    }
    m.finish();
    expect(sets.every((s) => s[1] === undefined && s[2] === undefined)).toBe(true);
    const r = m.report();
    expect(byId(r, 'tx-rx2')).toMatchObject({ state: 'mismatched', layout: '1x1x30', frames: 10 });
    expect(byId(r, 'tx-rx2').reason).toBe(
      'tx-rx2 mismatched: it sends 1x1x30 (rx x tx x subcarriers), the site says 3x3 antennas and 30 subcarriers as tx-rx1; poses go on from tx-rx1, this link is not joined',
    );
    expect(byId(r, 'tx-rx3')).toMatchObject({ state: 'mismatched', layout: '3x3x56' });

    // The primary's own layout differs from its radios': it is mismatched and still read.
    const primary = await lastValueFrom(from([frame(undefined, 0, 0, { nTx: 1 }), frame(undefined, 10, 1, { nTx: 1 })]).pipe(links(), toArray()));
    expect(primary).toHaveLength(2);
    const one = new LinkMonitor(DEFAULT_RADIOS, { now: c.now });
    one.accept(frame(undefined, 0, 0, { nTx: 1 }));
    expect(one.report()[0]).toMatchObject({ state: 'mismatched', layout: '3x1x30' });
    expect(one.report()[0]!.reason).toMatch(/the site says 3x3 antennas; the model reads it as it comes$/);
  });

  it('frames of a link not in the site are counted, dropped and listed while they come', () => {
    const c = clock();
    const m = new LinkMonitor(DEFAULT_RADIOS, { now: c.now });
    for (let k = 0; k < 5; k++) {
      c.t = T0 + k * 10;
      expect(m.accept(frame('tx-rx9', k * 10, k))).toBe(false);
      m.accept(frame(undefined, k * 10, k));
    }
    c.t = T0 + 50;
    expect(m.accept({ ...frame(undefined, 50, 5), linkId: 'other' })).toBe(false);
    const r = m.report();
    expect(r.map((l) => [l.linkId, l.state])).toEqual([
      ['tx-rx1', 'live'],
      ['tx-rx2', 'waiting'],
      ['tx-rx3', 'waiting'],
      ['tx-rx9', 'unknown'],
      ['other', 'unknown'],
    ]);
    expect(byId(r, 'tx-rx9')).toMatchObject({ tx: 'tx', rx: 'rx9', primary: false, frames: 5, layout: '3x3x30', lastPacketAt: T0 + 40 });
    expect(byId(r, 'tx-rx9').reason).toBe('tx-rx9 unknown: not a link of the site (tx-rx1, tx-rx2, tx-rx3); its 5 frame(s) were dropped');
    expect(byId(r, 'other')).toMatchObject({ tx: null, rx: null });
    // Silent for the timeout, an unknown link is forgotten.
    c.t = T0 + 40 + DEFAULT_TIMEOUT_SECONDS * 1000 + 1;
    expect(m.report().map((l) => l.linkId)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3', 'other']);
  });

  it('a one-link site: every set is the primary alone, formed at once', async () => {
    const radios: RadioConfig[] = [DEFAULT_RADIOS[0]!, { ...DEFAULT_RADIOS[1]!, id: 'front' }];
    const joined: number[] = [];
    const stats: LinkStatsHolder = {};
    const out = await lastValueFrom(
      from([frame(undefined, 0, 0), frame('tx-front', 10, 1)]).pipe(links({ radios: () => radios, stats, onSet: (s) => joined.push(s.joined) }), toArray()),
    );
    expect(out).toHaveLength(2);
    expect(joined).toEqual([1, 1]);
    expect(stats.monitor!.report().map((l) => [l.linkId, l.state, l.frames])).toEqual([['tx-front', 'live', 2]]);
  });
});

describe('links: an operator', () => {
  const f = { a: frame('tx-rx1', 0, 0), b: frame('tx-rx2', 0, 0), c: frame('tx-rx1', 10, 1), x: frame('tx-rx9', 10, 1) };

  it('passes the primary frames on at once and completes; states are read on the scheduler clock', () => {
    const stats: LinkStatsHolder = {};
    const reports: LinkReport[][] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('a b c x 3000ms |', f);
      const subs = '    ^ 3003ms !';
      expectObservable(src.pipe(links({ stats }))).toBe('a - c - 3000ms |', f);
      expectSubscriptions(src.subscriptions).toBe(subs);
      for (const at of [5, 2002, 2004]) timer(at).subscribe(() => reports.push(stats.monitor!.report()));
    });
    // rx1's last packet at 2 ms, rx2's at 1 ms, tx-rx9's at 3 ms: each is stopped (or forgotten) 2 s on.
    expect(reports.map((r) => r.map((l) => `${l.linkId} ${l.state}`))).toEqual([
      ['tx-rx1 live', 'tx-rx2 live', 'tx-rx3 waiting', 'tx-rx9 unknown'],
      ['tx-rx1 live', 'tx-rx2 stopped', 'tx-rx3 waiting', 'tx-rx9 unknown'],
      ['tx-rx1 stopped', 'tx-rx2 stopped', 'tx-rx3 waiting'],
    ]);
  });

  it('stopped is read from the scheduler clock: no frame, no sleep', () => {
    const scheduler = testScheduler();
    const reports: LinkReport[][] = [];
    scheduler.run(() => {
      const stats: LinkStatsHolder = {};
      // 100 Hz: both links for 1 s, then the primary alone for 3 s.
      const src = interval(10).pipe(
        take(400),
        mergeMap((k) => (k < 100 ? [frame('tx-rx1', k * 10, k), frame('tx-rx2', k * 10, k)] : [frame('tx-rx1', k * 10, k)])),
      );
      src.pipe(links({ stats })).subscribe();
      for (const at of [500, 1000 + 2000, 1000 + 2020]) timer(at).subscribe(() => reports.push(stats.monitor!.report()));
    });
    // interval(10)'s k-th value comes at (k + 1) * 10 ms: rx2's last at 1000 ms. Fallen silent, it is
    // behind the primary by more than the tolerance (lagging) until the timeout says it stopped.
    expect(reports.map((r) => r.map((l) => l.state))).toEqual([
      ['live', 'live', 'waiting'],
      ['live', 'lagging', 'waiting'],
      ['live', 'stopped', 'waiting'],
    ]);
    expect(reports[2]![1]!.lastPacketAt).toBe(1000);
    expect(reports[0]![0]!.rateHz).toBe(100);
  });

  it('propagates errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const src = cold('a b #', f, new Error('boom'));
      expectObservable(src.pipe(links())).toBe('a - #', f, new Error('boom'));
    });
  });

  it('unsubscribes early and does not break the unsubscription chain', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('a b c x |', f);
      const subs = '    ^---!';
      expectObservable(src.pipe(links()), '^---!').toBe('a - c', f);
      expectSubscriptions(src.subscriptions).toBe(subs);
    });
  });

  it('an exception in onSet goes to the subscriber; a site without a link errors at subscription', async () => {
    await expect(
      lastValueFrom(
        from([f.a, f.c]).pipe(
          links({
            onSet: () => {
              throw new Error('set hook');
            },
          }),
        ),
      ),
    ).rejects.toThrow('set hook');
    await expect(lastValueFrom(from([f.a]).pipe(links({ radios: () => [DEFAULT_RADIOS[0]!] })))).rejects.toThrow(/no link/);
    expect(() => links({ toleranceMs: -1 })).toThrow(RangeError);
    expect(() => links({ timeoutSeconds: 0 })).toThrow(RangeError);
  });

  it('is in the registry with its parameters, defaults stated once', () => {
    expect(registry.operators.get('links')).toBe(spec);
    expect(spec).toMatchObject({ input: 'frame', output: 'frame' });
    expect(spec.params.map((p) => [p.name, p.default])).toEqual([
      ['toleranceMs', DEFAULT_TOLERANCE_MS],
      ['timeoutSeconds', DEFAULT_TIMEOUT_SECONDS],
      ['pass', 'primary'],
    ]);
    expect(DEFAULT_TOLERANCE_MS).toBe(1000 / 100 / 2);
  });
});
