import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Observable, VirtualTimeScheduler, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { DecodeError, type DecodeStats } from '../../src/csi/decoder.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import { createStreamDecoder } from '../../src/decoders/index.js';
import { frameToJson } from '../../src/render/json.js';
import { encodeIntel5300 } from '../../src/encoders/intel5300.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { OutputDemand } from '../../src/cli/sinks/output.js';
import { mergeReplays } from '../../src/sources/merge.js';
import { parseSource, type SourceContext } from '../../src/sources/uri.js';

/** Safety net so a stalled replay fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 10_000;

const SITE: RadioConfig[] = [
  { id: 'ap', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
  { id: 'rx1', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
  { id: 'rx2', role: 'rx', x: 0.2, y: 2.5, z: 1.2, yaw_deg: 0, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
];

/** One file of the test: its records' device clocks (µs) and `bfee_count`s. */
interface Recording {
  path: string;
  clocks: number[];
  seqs: number[];
}

/**
 * Writes an Intel 5300 log of simulated frames whose device clock (timestamp_low) starts at
 * `clock0` µs and steps by `stepUs`; `bfee_count` = `seqBase + i` names each record.
 */
function record(path: string, n: number, clock0: number, stepUs: number, seqBase: number, seed: number): Recording {
  const sim = new CsiSimulator({ seed, people: 1 });
  const clocks = Array.from({ length: n }, (_, i) => clock0 + i * stepUs);
  const seqs = Array.from({ length: n }, (_, i) => seqBase + i);
  writeFileSync(path, Buffer.concat(clocks.map((c, i) => encodeIntel5300({ ...sim.next().frame, clockUs: c, seq: seqs[i]! }))));
  return { path, clocks, seqs };
}

/**
 * The merged order computed independently of the merge: every record with its time since its
 * file's first record (the files start together), sorted by that time, ties to the file listed first.
 */
function expectedOrder(files: readonly Recording[]): Array<{ seq: number; file: number; ms: number }> {
  const all = files.flatMap((f, file) => f.clocks.map((c, i) => ({ seq: f.seqs[i]!, file, ms: (c - f.clocks[0]!) / 1000 })));
  return all.sort((a, b) => a.ms - b.ms || a.file - b.file);
}

let tmp: string;
let a: Recording;
let b: Recording;
let uriA: string;
let uriB: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'csipose-merge-'));
  // rx1 at 100 Hz, rx2 at 40 Hz with another clock base: the two cards' clocks are unrelated.
  a = record(join(tmp, 'rx1.dat'), 12, 1_000_000, 10_000, 1000, 1);
  b = record(join(tmp, 'rx2.dat'), 5, 70_000_000, 25_000, 2000, 2);
  uriA = `file:${a.path}?format=intel5300&link=rx1`;
  uriB = `file:${b.path}?format=intel5300&link=rx2`;
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const open = (uri: string, ctx: SourceContext) => parseSource(uri).open('frame', ctx) as Observable<CsiFrame>;

describe('file replays listed in one source merge in time order', () => {
  it('speed 0: every record of both files, in time order, each with its link, sourceId and own index', async () => {
    const frames = await lastValueFrom(open(`${uriA} ${uriB}`, { speed: 0, radios: () => SITE, environmentId: 'lab' }).pipe(toArray()));
    const want = expectedOrder([a, b]);
    expect(frames.map((f) => f.seq)).toEqual(want.map((w) => w.seq));
    // The frame times say the same: since the shared start, in ms.
    const t0 = frames[0]!.time;
    frames.forEach((f, i) => expect(f.time - t0).toBeCloseTo(want[i]!.ms, 6));
    for (const f of frames) {
      const fromA = f.seq < 2000;
      expect(f).toMatchObject({
        linkId: fromA ? 'ap-rx1' : 'ap-rx2',
        sourceId: `file:${(fromA ? a : b).path}`,
        environmentId: 'lab',
        index: f.seq - (fromA ? 1000 : 2000),
      });
    }
    // The streaming sinks print the link; a frame without one (the primary link) has no link_id.
    expect(frameToJson(frames[0]!, true)).toMatchObject({ link_id: 'ap-rx1', source_id: `file:${a.path}` });
    expect('link_id' in frameToJson({ ...frames[0]!, linkId: undefined }, true)).toBe(false);
  });

  it('the order does not depend on the order the files are listed in (except for ties)', async () => {
    const frames = await lastValueFrom(open(`${uriB} ${uriA}`, { speed: 0 }).pipe(toArray()));
    const want = expectedOrder([b, a]);
    expect(frames.map((f) => f.seq)).toEqual(want.map((w) => w.seq));
    expect(new Set(frames.map((f) => f.linkId))).toEqual(new Set(['tx-rx1', 'tx-rx2']));
  });

  it('speed 1: each frame comes out when the shared clock reaches its recorded time; speed 2 twice as fast', () => {
    for (const speed of [1, 2]) {
      const scheduler = new VirtualTimeScheduler();
      const at: number[] = [];
      const seqs: number[] = [];
      let done = false;
      open(`${uriA} ${uriB}&speed=${speed}`, { scheduler, speed: 0 }).subscribe({
        next: (f) => {
          at.push(scheduler.now());
          seqs.push(f.seq);
        },
        complete: () => (done = true),
      });
      scheduler.flush();
      expect(done).toBe(true);
      const want = expectedOrder([a, b]);
      expect(seqs).toEqual(want.map((w) => w.seq));
      at.forEach((t, i) => expect(t).toBeCloseTo(want[i]!.ms / speed, 6));
    }
  });

  it("honours the consumer's demand: nothing is read while the output is full, all of it in order after", async () => {
    // A real output whose writes complete only when the test lets them.
    const held: Array<() => void> = [];
    const out = new Writable({ objectMode: true, highWaterMark: 2, write: (_c, _e, cb) => held.push(cb) });
    const demand = new OutputDemand();
    demand.watch(out);
    const seqs: number[] = [];
    let done = false;
    const sub = open(`${uriA} ${uriB}`, { speed: 0, demand }).subscribe({
      next: (f) => {
        seqs.push(f.seq);
        out.write(f);
      },
      complete: () => (done = true),
    });
    try {
      const deadline = Date.now() + GIVE_UP_MS;
      while (seqs.length < 2) {
        if (Date.now() > deadline) throw new Error('no frames');
        await new Promise((r) => setImmediate(r));
      }
      // Many turns of the event loop (and timers) while the output is full: the replay waits.
      for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 20));
      expect(out.writableNeedDrain).toBe(true);
      const whileFull = seqs.length;
      expect(whileFull).toBeLessThanOrEqual(3);
      // Let the output drain, one write at a time, until the replay ends.
      while (!done) {
        if (Date.now() > deadline) throw new Error(`stuck at ${seqs.length} frames`);
        held.shift()?.();
        await new Promise((r) => setImmediate(r));
      }
      expect(seqs).toEqual(expectedOrder([a, b]).map((w) => w.seq));
    } finally {
      sub.unsubscribe();
    }
  });

  it('loop=2 on one file replays it twice on its own timeline while the other plays once', async () => {
    const frames = await lastValueFrom(open(`${uriA}&loop=2 ${uriB}`, { speed: 0 }).pipe(toArray()));
    const fromA = frames.filter((f) => f.linkId === 'tx-rx1');
    expect(fromA.map((f) => f.index)).toEqual(Array.from({ length: 24 }, (_, i) => i));
    expect(frames.filter((f) => f.linkId === 'tx-rx2')).toHaveLength(5);
    for (let i = 1; i < frames.length; i++) expect(frames[i]!.time).toBeGreaterThanOrEqual(frames[i - 1]!.time);
  });

  it('reports the decode counts summed over the files', async () => {
    const stats: DecodeStats[] = [];
    await lastValueFrom(open(`${uriA} ${uriB}`, { speed: 0, onDecodeStats: (s) => stats.push(s) }).pipe(toArray()));
    expect(stats.at(-1)).toMatchObject({ records: 17, skipped: 0 });
  });

  it('a file that ends inside a record: the frames before it in time order, then its DecodeError', async () => {
    const whole = record(join(tmp, 'cut-src.dat'), 5, 0, 25_000, 3000, 3);
    const bytes = readFileSync(whole.path);
    const cut = join(tmp, 'cut.dat');
    writeFileSync(cut, bytes.subarray(0, bytes.length - 10));
    const frames: CsiFrame[] = [];
    const err = await new Promise<unknown>((resolve) =>
      mergeReplays(
        [
          { path: a.path, createDecoder: () => createStreamDecoder('intel5300') },
          { path: cut, createDecoder: () => createStreamDecoder('intel5300') },
        ],
        { speed: 0 },
      ).subscribe({ next: (f) => frames.push(f), error: resolve, complete: () => resolve(undefined) }),
    );
    expect(err).toBeInstanceOf(DecodeError);
    // The cut file's 4 complete records (0, 25, 50, 75 ms) were merged with rx1's up to 75 ms.
    const want = expectedOrder([a, { ...whole, clocks: whole.clocks.slice(0, 4), seqs: whole.seqs.slice(0, 4) }]);
    expect(frames.map((f) => f.seq)).toEqual(want.slice(0, frames.length).map((w) => w.seq));
    expect(frames.filter((f) => f.seq >= 3000)).toHaveLength(4);
  });

  it('a missing file errors the stream', async () => {
    const err = await lastValueFrom(open(`${uriA} file:${join(tmp, 'nope.dat')}?format=intel5300&link=rx2`, { speed: 0 })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as NodeJS.ErrnoException).code).toBe('ENOENT');
  });
});
