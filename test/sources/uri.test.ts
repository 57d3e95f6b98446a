import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Observable, VirtualTimeScheduler, lastValueFrom, take, tap, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { parseSource } from '../../src/sources/uri.js';
import { truthToJson } from '../../src/sources/sim.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { DEFAULT_VIEW, viewSpec, type ViewSettings } from '../../src/pose/camera.js';
import { describeWithSamples, sample, sampleBytes } from '../helpers/samples.js';
import { parseError } from '../helpers/sources.js';

const haveSimulator = existsSync(new URL('../../src/sim/simulator.ts', import.meta.url));
const describeWithSimulator = haveSimulator ? describe : describe.skip;

describe('parseSource: documented forms', () => {
  it('udp://0.0.0.0:5500?format=esp32 is a live frame source', () => {
    const def = parseSource('udp://0.0.0.0:5500?format=esp32');
    expect(def.uri).toBe('udp://0.0.0.0:5500?format=esp32');
    expect(def.emits).toEqual(['frame']);
  });

  it('udp accepts every capture format and a bracketed IPv6 host', () => {
    for (const f of ['esp32', 'nexmon', 'intel5300', 'atheros']) {
      expect(parseSource(`udp://127.0.0.1:0?format=${f}`).emits).toEqual(['frame']);
    }
    expect(parseSource('udp://[::1]:5500?format=nexmon').emits).toEqual(['frame']);
  });

  it('stdin?format=nexmon gives bytes or decoded frames; stdin and - without a format give bytes only', () => {
    expect(parseSource('stdin?format=nexmon').emits).toEqual(['bytes', 'frame']);
    expect(parseSource('stdin').emits).toEqual(['bytes']);
    expect(parseSource('-').emits).toEqual(['bytes']);
    expect(parseSource('-?format=esp32').emits).toEqual(['bytes', 'frame']);
  });

  it('file:PATH with a name that tells the format gives bytes or frames', () => {
    expect(parseSource('file:/data/log.all_csi.6.7.6').emits).toEqual(['bytes', 'frame']);
    expect(parseSource('file:/data/capture.pcap').emits).toEqual(['bytes', 'frame']);
    expect(parseSource('file:/data/capture.bin?format=atheros').emits).toEqual(['bytes', 'frame']);
  });

  it('file:PATH whose name says nothing and has no format can only feed a decoder stage', () => {
    expect(parseSource('file:/data/capture.bin').emits).toEqual(['bytes']);
  });

  it('sim?seed=1&people=2 parses without building a simulator', () => {
    const def = parseSource('sim?seed=1&people=2');
    expect(def.uri).toBe('sim?seed=1&people=2');
    expect(def.emits).toEqual(['frame']);
    expect(parseSource('sim').emits).toEqual(['frame']);
  });
});

describe('parseSource: malformed forms raise SourceError with a useful message', () => {
  const cases: Array<[string, RegExp]> = [
    ['file:/data/x.dat?format=intel5301', /unknown format "intel5301".*intel5300, atheros, nexmon, esp32/],
    ['udp://0.0.0.0:5500?format=wifi', /unknown format "wifi"/],
    ['stdin?format=csv', /unknown format "csv"/],
    ['udp://0.0.0.0:5500', /needs \?format=/],
    ['udp://0.0.0.0:70000?format=esp32', /udp:\/\/HOST:PORT/],
    ['udp://0.0.0.0:port?format=esp32', /udp:\/\/HOST:PORT/],
    ['udp://0.0.0.0?format=esp32', /udp:\/\/HOST:PORT/],
    ['udp://:5500?format=esp32', /udp:\/\/HOST:PORT/],
    ['file:/data/log.dat?speed=fast', /speed must be a number >= 0, got "fast"/],
    ['file:/data/log.dat?speed=-1', /speed must be a number >= 0, got "-1"/],
    ['sim?speed=-2', /speed must be a number >= 0, got "-2"/],
    ['file:/data/log.dat?loop=-1', /loop must be an integer >= 0/],
    ['file:/data/log.dat?loop=1.5', /loop must be an integer >= 0/],
    ['file:', /needs a path/],
    ['sim?nsub=31', /nsub must be 30, 56 or 114, got 31/],
    ['sim?people=9', /people must be an integer in 0\.\.4, got "9"/],
    ['sim?band=3', /band must be 2\.4 or 5, got "3"/],
    ['sim?seed=abc', /seed must be an integer/],
    ['http://example.com/csi', /unknown source "http:\/\/example\.com\/csi".*sim, file:PATH, udp:\/\/HOST:PORT\?format=F, stdin/],
    ['mqtt://broker:1883', /mqtt source needs a topic/],
    ['', /unknown source/],
  ];
  for (const [uri, message] of cases) {
    it(`"${uri}"`, () => {
      expect(parseError(uri).message).toMatch(message);
    });
  }
});

describeWithSamples('parseSource: opening file sources', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-uri-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('file:PATH?format=intel5300&speed=2&loop=0 replays at twice the pace, forever', () => {
    // A name that says nothing about the format, so ?format= must be what picks the decoder.
    const path = join(tmp, 'capture.bin');
    copyFileSync(sample('intel5300/log.all_csi.6.7.6'), path);
    const want = decodeIntel5300(sampleBytes('intel5300/log.all_csi.6.7.6')).frames;
    const scheduler = new VirtualTimeScheduler();
    const def = parseSource(`file:${path}?format=intel5300&speed=2&loop=0`);
    const at: number[] = [];
    const frames: CsiFrame[] = [];
    let done = false;
    (def.open('frame', { scheduler, speed: 1 }) as Observable<CsiFrame>).pipe(take(60)).subscribe({
      next: (f) => {
        at.push(scheduler.now());
        frames.push(f);
      },
      complete: () => (done = true),
    });
    scheduler.flush();
    expect(done).toBe(true);
    expect(frames.map((f) => f.index)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    // The URI's speed=2 wins over the context's speed 1: 100 Hz nominal / 2 = every 5 ms.
    at.forEach((t, i) => expect(t).toBeCloseTo(i * 5, 6));
    frames.forEach((f, i) => expect(f.csi).toEqual(want[i % 29]!.csi));
    expect(frames[0]!.sourceId).toBe(`file:${path}`);
  });

  it('file:PATH takes its speed from the context when the URI has none', async () => {
    const def = parseSource(`file:${sample('intel5300/log.all_csi.6.7.6')}`);
    const frames = (await lastValueFrom((def.open('frame', { speed: 0, environmentId: 'lab-1' }) as Observable<CsiFrame>).pipe(toArray()))) as CsiFrame[];
    expect(frames).toHaveLength(29);
    expect(frames.every((f) => f.environmentId === 'lab-1')).toBe(true);
  });

  it('file:PATH opened for bytes gives the file exactly', async () => {
    const def = parseSource(`file:${sample('esp32/example_csi.csv')}`);
    const chunks = (await lastValueFrom((def.open('bytes', {}) as Observable<Uint8Array>).pipe(toArray()))) as Uint8Array[];
    expect(Buffer.concat(chunks).equals(Buffer.from(sampleBytes('esp32/example_csi.csv')))).toBe(true);
  });
});

describeWithSimulator('parseSource: opening sim sources', () => {
  it('sim?seed=1&people=2&truth=1 gives a deterministic stream with two people in the truth', async () => {
    const run = (uri: string) => lastValueFrom((parseSource(uri).open('frame', { speed: 0 }) as Observable<CsiFrame>).pipe(take(5), toArray()));
    const a = await run('sim?seed=1&people=2&truth=1');
    const b = await run('sim?seed=1&people=2&truth=1');
    const c = await run('sim?seed=2&people=2&truth=1');
    expect(a).toHaveLength(5);
    expect(a.map((f) => f.format)).toEqual(['sim', 'sim', 'sim', 'sim', 'sim']);
    a.forEach((f, i) => expect(f.csi).toEqual(b[i]!.csi));
    expect(a[0]!.csi).not.toEqual(c[0]!.csi);
    const truth = a[0]!.meta?.truth as { person_count: number; persons: unknown[] };
    expect(truth.person_count).toBe(2);
    expect(truth.persons).toHaveLength(2);
  });

  it('sim?fall=S makes the first person fall at S seconds (a scripted fall in generated behaviour)', async () => {
    const fallsIn = async (uri: string) => {
      const frames = await lastValueFrom((parseSource(uri).open('frame', { speed: 0 }) as Observable<CsiFrame>).pipe(take(1200), toArray()));
      const t0 = frames[0]!.time;
      return frames.flatMap((f) =>
        ((f.meta?.truth as { events: Array<{ type: string; personId: number; time: number }> }).events ?? [])
          .filter((e) => e.type === 'fall_start')
          .map((e) => ({ ...e, at: (e.time - t0) / 1000 })),
      );
    };
    const asked = await fallsIn('sim?seed=1&people=2&truth=1&fall=6');
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(asked[0]!.personId).toBe(0);
    expect(asked[0]!.at).toBeGreaterThanOrEqual(6);
    // Person 0 of seed 1 sits at 6 s: they stand up first (about 1.4 s), then fall.
    expect(asked[0]!.at).toBeLessThan(8);
    // Without it the same seed does not fall in these 12 s: the fall is the parameter's doing.
    expect(await fallsIn('sim?seed=1&people=2&truth=1')).toEqual([]);
    expect(() => parseSource('sim?fall=-1')).toThrow(/fall must be a number in 0\.\.86400/);
  });

  it('projects the truth through the view the context gives, and follows a new view object', async () => {
    const first = { ...DEFAULT_VIEW, yaw_deg: 20, pitch_deg: -25 };
    const second = { ...DEFAULT_VIEW, hfov_deg: 60, x: 2 };
    let current: ViewSettings = first;
    let seen = 0;
    const frames = await lastValueFrom(
      (parseSource('sim?seed=4&people=2&truth=1').open('frame', { speed: 0, view: () => current }) as Observable<CsiFrame>).pipe(
        take(8),
        tap(() => {
          if (seen++ === 2) current = second;
        }),
        toArray(),
      ),
    );
    /** The truth of the same run with a fixed camera, as the source attaches it. */
    const truthWith = (v: ViewSettings): Array<Record<string, unknown>> => {
      const sim = new CsiSimulator({ seed: 4, people: 2, scenario: { camera: viewSpec(v) } });
      return Array.from({ length: 8 }, () => truthToJson(sim.next().truth));
    };
    const [a, b, plain] = [truthWith(first), truthWith(second), truthWith(DEFAULT_VIEW)];
    const got = frames.map((f) => f.meta?.truth);
    // One sample is computed ahead: a view set while sample 2 is handled holds from sample 4 on.
    expect(got.slice(0, 4)).toEqual(a.slice(0, 4));
    expect(got.slice(4)).toEqual(b.slice(4));
    expect(got[5]).not.toEqual(a[5]);
    // Without a view the simulator keeps its own camera, the default view.
    const own = await lastValueFrom((parseSource('sim?seed=4&people=2&truth=1').open('frame', { speed: 0 }) as Observable<CsiFrame>).pipe(take(8), toArray()));
    expect(own.map((f) => f.meta?.truth)).toEqual(plain);
  });

  it('sim?nsub=56 sets the subcarrier layout', async () => {
    const f = await lastValueFrom((parseSource('sim?nsub=56&seed=3').open('frame', { speed: 0 }) as Observable<CsiFrame>).pipe(take(1)));
    expect(f.nSub).toBe(56);
    expect(f.csi).toHaveLength(56 * f.nRx * f.nTx * 2);
  });
});
