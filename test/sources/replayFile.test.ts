import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualTimeScheduler, firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { CaptureFormat } from '../../src/decoders/registry.js';
import { DecodeError, type DecodeResult, type DecodeStats } from '../../src/csi/decoder.js';
import { createStreamDecoder } from '../../src/decoders/index.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { decodeAtheros } from '../../src/decoders/atheros.js';
import { decodeNexmon } from '../../src/decoders/nexmon.js';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { replayFile, type ReplayOptions } from '../../src/sources/replayFile.js';
import { describeWithSamples, sample, sampleBytes } from '../helpers/samples.js';

interface Capture {
  format: CaptureFormat;
  file: string;
  records: number;
  decode: (b: Uint8Array) => DecodeResult;
}

const CAPTURES: Capture[] = [
  { format: 'intel5300', file: 'intel5300/log.all_csi.6.7.6', records: 29, decode: (b) => decodeIntel5300(b) },
  { format: 'atheros', file: 'atheros/ath_csi_1.dat', records: 401, decode: (b) => decodeAtheros(b) },
  { format: 'nexmon', file: 'nexmon/example_43455c0.pcap', records: 548, decode: (b) => decodeNexmon(b) },
  { format: 'esp32', file: 'esp32/example_csi.csv', records: 13, decode: (b) => decodeEsp32(b) },
];

const INTEL = CAPTURES[0]!;
const NEXMON = CAPTURES[2]!;
/** An arbitrary fixed wall-clock start: 2025-01-01T00:00:00Z. */
const START = 1_735_689_600_000;

function replay(c: Capture, opts: ReplayOptions): ReturnType<typeof replayFile> {
  return replayFile(sample(c.file), () => createStreamDecoder(c.format, { sourceId: c.file }), opts);
}

/** Subscribes on a VirtualTimeScheduler and records each frame with the virtual time it came out. */
function runVirtual(c: Capture, opts: Omit<ReplayOptions, 'scheduler'>): { at: number[]; frames: CsiFrame[]; done: boolean } {
  const scheduler = new VirtualTimeScheduler();
  const at: number[] = [];
  const frames: CsiFrame[] = [];
  let done = false;
  replay(c, { ...opts, scheduler }).subscribe({
    next: (f) => {
      at.push(scheduler.now());
      frames.push(f);
    },
    complete: () => (done = true),
  });
  scheduler.flush();
  return { at, frames, done };
}

/** Paths this process holds open (Linux /proc); undefined where /proc is not available. */
function openPaths(): string[] | undefined {
  if (!existsSync('/proc/self/fd')) return undefined;
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      out.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the fd of the readdir itself is gone by now
    }
  }
  return out;
}

function expectSameFrame(got: CsiFrame, want: CsiFrame): void {
  expect(got.format).toBe(want.format);
  expect(got.index).toBe(want.index);
  expect(got.seq).toBe(want.seq);
  expect(Object.is(got.deviceTime, want.deviceTime)).toBe(true);
  expect([got.nSub, got.nRx, got.nTx]).toEqual([want.nSub, want.nRx, want.nTx]);
  expect(got.rssi).toEqual(want.rssi);
  expect(got.csi).toEqual(want.csi);
}

describeWithSamples('replayFile', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-replay-'));
  });
  afterAll(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  for (const c of CAPTURES) {
    it(`speed 0 replays every ${c.format} record in order, as the pure decoder decodes it`, async () => {
      const want = c.decode(sampleBytes(c.file));
      expect(want.error).toBeUndefined();
      expect(want.frames).toHaveLength(c.records);
      let stats: DecodeStats | undefined;
      // A small odd read size makes records straddle reads throughout the file.
      const got = await lastValueFrom(replay(c, { speed: 0, startTime: START, chunkSize: 997, onStats: (s) => (stats = s) }).pipe(toArray()));
      expect(got).toHaveLength(c.records);
      got.forEach((f, i) => {
        expect(f.index).toBe(i);
        expectSameFrame(f, want.frames[i]!);
        expect(f.sourceId).toBe(c.file);
      });
      expect(stats).toEqual(want.stats);
    });
  }

  it('paces the Intel 5300 sample (constant timestamp_low) at the nominal rate: frame i at i*10 ms', () => {
    const r = runVirtual(INTEL, { speed: 1, nominalRateHz: 100, startTime: START });
    expect(r.done).toBe(true);
    expect(r.frames).toHaveLength(29);
    r.at.forEach((t, i) => expect(t).toBeCloseTo(i * 10, 6));
    // No recorded wall time in an Intel log: each frame is stamped start + media time.
    r.frames.forEach((f, i) => expect(f.time).toBeCloseTo(START + i * 10, 6));
  });

  it('at speed 2 emits frame i at i*5 ms, still stamping media time (not replay time)', () => {
    const r = runVirtual(INTEL, { speed: 2, nominalRateHz: 100, startTime: START });
    expect(r.frames).toHaveLength(29);
    r.at.forEach((t, i) => expect(t).toBeCloseTo(i * 5, 6));
    r.frames.forEach((f, i) => expect(f.time).toBeCloseTo(START + i * 10, 6));
  });

  it('takes the nominal rate from nominalRateHz', () => {
    const r = runVirtual(INTEL, { speed: 1, nominalRateHz: 50, startTime: START });
    r.at.forEach((t, i) => expect(t).toBeCloseTo(i * 20, 6));
  });

  it('startTime labels the frames; it does not postpone or hurry the replay', () => {
    // The scheduler's clock (0 in virtual time) and the label given to the frames are different things.
    const r = runVirtual(INTEL, { speed: 1, startTime: START - 3_600_000 });
    expect(r.at[0]).toBe(0);
    r.at.forEach((t, i) => expect(t).toBeCloseTo(i * 10, 6));
    expect(r.frames[28]!.time).toBeCloseTo(START - 3_600_000 + 280, 6);
  });

  it('without startTime stamps frames from the scheduler clock at subscribe', () => {
    const scheduler = new VirtualTimeScheduler();
    scheduler.schedule(() => undefined, 1000);
    scheduler.flush();
    const at: number[] = [];
    const times: number[] = [];
    replay(INTEL, { speed: 1, scheduler }).subscribe((f) => {
      at.push(scheduler.now());
      times.push(f.time);
    });
    scheduler.flush();
    expect(times).toHaveLength(29);
    times.forEach((t, i) => expect(t).toBeCloseTo(1000 + i * 10, 6));
    at.forEach((t, i) => expect(t).toBeCloseTo(1000 + i * 10, 6));
  });

  it('paces the Nexmon pcap by its recorded packet times, keeping the recorded wall time', () => {
    const want = decodeNexmon(sampleBytes(NEXMON.file)).frames;
    for (const speed of [1, 4]) {
      const r = runVirtual(NEXMON, { speed, nominalRateHz: 100, startTime: START });
      expect(r.frames).toHaveLength(548);
      const t0 = want[0]!.clockUs;
      r.at.forEach((t, i) => expect(t).toBeCloseTo((want[i]!.clockUs - t0) / 1000 / speed, 3));
      // pcap records carry their own time: 2020-09-24T14:28:10.355509Z for the first packet.
      expect(r.frames[0]!.time).toBeCloseTo(1600957690355.509, 2);
      r.frames.forEach((f, i) => expect(f.time).toBe(want[i]!.time));
    }
    // First and last packets are both CSI; the capture spans 5.211326 s of packet time.
    const r = runVirtual(NEXMON, { speed: 1 });
    expect(r.at[547]).toBeCloseTo(5211.326, 3);
  });

  it('loops: 2 replays the capture twice with continuing indices', async () => {
    const want = decodeIntel5300(sampleBytes(INTEL.file)).frames;
    const got = await lastValueFrom(replay(INTEL, { speed: 0, loops: 2, startTime: START }).pipe(toArray()));
    expect(got).toHaveLength(58);
    got.forEach((f, i) => {
      expect(f.index).toBe(i);
      const w = want[i % 29]!;
      expect(f.seq).toBe(w.seq);
      expect(f.csi).toEqual(w.csi);
      // The replay timeline keeps running through the second pass.
      expect(f.time).toBeCloseTo(START + i * 10, 6);
    });
  });

  it('loops: 0 replays until unsubscribed', async () => {
    const frames = await lastValueFrom(replay(INTEL, { speed: 0, loops: 0 }).pipe(take(100), toArray()));
    expect(frames.map((f) => f.index)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(frames[87]!.seq).toBe(frames[29]!.seq);
    expect(frames[87]!.csi).toEqual(frames[0]!.csi);
  });

  const TRUNCATIONS: Array<{ c: Capture; cut: number; complete: number; offset: number }> = [
    // Cut inside the last record (offset 10880, SOURCES.md): 28 records are complete.
    { c: INTEL, cut: 11_000, complete: 28, offset: 10_880 },
    { c: CAPTURES[1]!, cut: 764_707 - 1000, complete: 400, offset: 762_800 },
    { c: NEXMON, cut: 622_696 - 500, complete: 547, offset: 621_596 },
  ];
  for (const { c, cut, complete, offset } of TRUNCATIONS) {
    it(`a truncated ${c.format} capture emits the complete records, then a DecodeError naming the byte offset`, async () => {
      const path = join(tmp, `truncated-${c.format}`);
      const bytes = sampleBytes(c.file);
      writeFileSync(path, bytes.subarray(0, cut));
      const want = c.decode(bytes).frames;
      const got: CsiFrame[] = [];
      const err = await new Promise<unknown>((resolve, reject) => {
        replayFile(path, () => createStreamDecoder(c.format), { speed: 0, chunkSize: 4096 }).subscribe({
          next: (f) => got.push(f),
          error: resolve,
          complete: () => reject(new Error('completed without an error')),
        });
      });
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).offset).toBe(offset);
      expect((err as DecodeError).message).toContain(`byte offset ${offset}`);
      expect(got).toHaveLength(complete);
      got.forEach((f, i) => expect(f.csi).toEqual(want[i]!.csi));
      const open = openPaths();
      if (open) expect(open).not.toContain(path);
    });
  }

  it('a missing file errors the stream instead of throwing', async () => {
    const err = await firstValueFrom(replayFile(join(tmp, 'does-not-exist'), () => createStreamDecoder('intel5300'))).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('unsubscribing mid-replay stops emissions and closes the file', () => {
    const scheduler = new VirtualTimeScheduler();
    const path = sample(INTEL.file);
    const at: number[] = [];
    const sub = replay(INTEL, { speed: 1, scheduler }).subscribe(() => at.push(scheduler.now()));
    const before = openPaths();
    if (before) expect(before).toContain(path);
    // Run virtual time up to 45 ms: frames 0..4 (at 0, 10, ..., 40) are out.
    scheduler.maxFrames = 45;
    scheduler.flush();
    expect(at).toHaveLength(5);
    sub.unsubscribe();
    const after = openPaths();
    if (after) expect(after).not.toContain(path);
    scheduler.maxFrames = Infinity;
    scheduler.flush();
    expect(at).toHaveLength(5);
    expect(scheduler.actions).toHaveLength(0);
  });

  it('closes the file once the replay completes', async () => {
    const path = sample(INTEL.file);
    await lastValueFrom(replay(INTEL, { speed: 0 }));
    const open = openPaths();
    if (open) expect(open).not.toContain(path);
  });
});
