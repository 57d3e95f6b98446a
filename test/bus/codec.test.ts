/**
 * What crosses the bus decodes to exactly what was encoded: real capture records and simulator
 * frames of a multi-link site (CSI), and pose frames of the shipped refiner's live pipeline, alerts
 * and events included (pose). A frame through the codec runs the pipeline to the same result.
 */
import { describe, expect, it } from 'vitest';
import { firstValueFrom, from, toArray } from 'rxjs';
import { BusCodecError, decodeCsiFrame, decodeCsiFrames, decodePoseFrame, encodeCsiFrame, encodeCsiFrames, encodePoseFrame } from '../../src/bus/codec.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { DEFAULT_RADIOS } from '../../src/csi/radios.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { PoseModel } from '../../src/model/runtime.js';
import { resolveInstalled } from '../../src/packageRoot.js';
import { livePipeline } from '../../pipelines/build.js';
import { defaultLiveParams } from '../../bench/accuracy/plan.js';
import { haveSamples, sampleBytes } from '../helpers/samples.js';
import { makeFrame } from '../helpers/frames.js';

function simFrames(ticks: number): CsiFrame[] {
  const sim = new CsiSimulator({ seed: 21, people: 2, radios: DEFAULT_RADIOS });
  const out: CsiFrame[] = [];
  for (let i = 0; i < ticks; i++) out.push(...sim.nextTick().frames);
  return out;
}

describe('CSI frames on the bus', () => {
  it('decode to the frame that was encoded, field for field and sample for sample (simulator, three links)', () => {
    const frames = simFrames(20);
    expect(new Set(frames.map((f) => f.linkId)).size).toBe(3);
    for (const f of frames) expect(decodeCsiFrame(encodeCsiFrame(f))).toEqual(f);
  });

  it.skipIf(!haveSamples)('decode to the frame that was encoded for real Intel 5300 records, their meta included', () => {
    const { frames } = decodeIntel5300(sampleBytes('intel5300/log.all_csi.6.7.6'));
    expect(frames.length).toBeGreaterThan(20);
    for (const f of frames) {
      expect(f.meta).toBeDefined();
      expect(decodeCsiFrame(encodeCsiFrame(f))).toEqual(f);
    }
  });

  it('keeps NaN, a missing link and the bytes of every sample', () => {
    const f: CsiFrame = { ...makeFrame({ value: (sc, rx) => [sc + 0.1, -rx * 1e-7] }), noise: NaN, channel: NaN, rssi: [NaN, -40, -41.5] };
    expect(f.linkId).toBeUndefined();
    const back = decodeCsiFrame(encodeCsiFrame(f));
    expect(back).toEqual(f);
    expect('linkId' in back).toBe(false);
    expect(Array.from(new Uint8Array(back.csi.buffer))).toEqual(Array.from(new Uint8Array(f.csi.buffer)));
  });

  it("carries a batch of one link's frames in one message, in order, and one frame as it always was", () => {
    const frames = simFrames(30).filter((f) => f.linkId === simFrames(1)[0]!.linkId);
    expect(frames.length).toBe(30);
    expect(decodeCsiFrames(encodeCsiFrames(frames))).toEqual(frames);
    // One frame: the single-frame message, readable by either decoder.
    const one = encodeCsiFrames(frames.slice(0, 1));
    expect(one).toEqual(encodeCsiFrame(frames[0]!));
    expect(decodeCsiFrames(one)).toEqual([frames[0]]);
  });

  it("writes a batch as its frames' own encodings one after the other, whatever strings change from frame to frame", () => {
    const base = simFrames(6);
    const frames: CsiFrame[] = base.map((f, i) => ({
      ...f,
      sourceId: i % 3 === 0 ? 'rx-a' : 'rx-b',
      format: i === 4 ? 'intel5300' : f.format,
      environmentId: i < 9 ? 'ward-a' : 'ward-b',
      ...(i % 4 === 1 ? { linkId: undefined, meta: { agc: i, perm: [i, 2, 3] } } : {}),
    }));
    const bytes = encodeCsiFrames(frames);
    const own = frames.map(encodeCsiFrame);
    const expected = new Uint8Array(8 + own.reduce((n, b) => n + 4 + b.length, 0));
    const dv = new DataView(expected.buffer);
    expected.set([0x43, 0x42, 1, 0]);
    dv.setUint32(4, frames.length, true);
    let o = 8;
    for (const b of own) {
      dv.setUint32(o, b.length, true);
      expected.set(b, o + 4);
      o += 4 + b.length;
    }
    expect(bytes).toEqual(expected);
    expect(decodeCsiFrames(bytes)).toEqual(frames);
  });

  it.each([
    ['cut inside a frame', (b: Uint8Array) => b.subarray(0, b.length - 10)],
    ['cut between frames', (b: Uint8Array) => b.subarray(0, 8 + 2 * (4 + encodeCsiFrame(simFrames(1)[0]!).length))],
    ['with bytes left over', (b: Uint8Array) => Uint8Array.from([...b, 0, 0])],
    ['of another version', (b: Uint8Array) => Uint8Array.from(b, (x, i) => (i === 2 ? 9 : x))],
  ])('refuses a batch %s with a codec error', (_what, spoil) => {
    const frames = simFrames(3).filter((f) => f.linkId === simFrames(1)[0]!.linkId);
    expect(() => decodeCsiFrames(spoil(encodeCsiFrames(frames)))).toThrow(BusCodecError);
  });

  it('reads a frame out of a larger buffer at any offset (a message in a batch)', () => {
    const bytes = encodeCsiFrame(simFrames(1)[0]!);
    const big = new Uint8Array(bytes.length + 3);
    big.set(bytes, 3);
    expect(decodeCsiFrame(big.subarray(3))).toEqual(decodeCsiFrame(bytes));
  });

  it.each([
    ['empty', new Uint8Array(0)],
    ['another magic', Uint8Array.from({ length: 200 }, (_, i) => i)],
    [
      'a later version',
      (() => {
        const b = encodeCsiFrame(makeFrame());
        b[2] = 9;
        return b;
      })(),
    ],
    ['cut short', encodeCsiFrame(makeFrame()).subarray(0, 300)],
    [
      'trailing bytes',
      (() => {
        const b = encodeCsiFrame(makeFrame());
        const c = new Uint8Array(b.length + 1);
        c.set(b);
        return c;
      })(),
    ],
  ])('refuses bytes that are not a frame (%s) with BusCodecError', (_name, bytes) => {
    expect(() => decodeCsiFrame(bytes)).toThrow(BusCodecError);
  });
});

describe('pose frames on the bus', () => {
  it("decode to the frame that was encoded: the shipped refiner's live pipeline, from frames that crossed the bus", async () => {
    const frames = simFrames(900);
    const model = await PoseModel.load(resolveInstalled('models/csipose-refiner.onnx'), { thread: 'inline' });
    let direct: PoseFrame[];
    let viaBus: PoseFrame[];
    try {
      const run = (input: CsiFrame[]) =>
        firstValueFrom(
          from(input).pipe(
            livePipeline({ model, radios: () => DEFAULT_RADIOS }, () => defaultLiveParams()),
            toArray(),
          ),
        );
      direct = await run(frames);
      viaBus = await run(frames.map((f) => decodeCsiFrame(encodeCsiFrame(f))));
    } finally {
      await model.release();
    }
    expect(direct.length).toBeGreaterThan(50);
    expect(direct.some((p) => p.persons.length > 0)).toBe(true);
    // The same CSI, decoded from the bus, gives the same poses (processing time aside: it is measured).
    const timeless = (ps: PoseFrame[]) => ps.map((p) => ({ ...p, processingMs: 0 }));
    expect(timeless(viaBus)).toEqual(timeless(direct));
    for (const p of direct) expect(decodePoseFrame(encodePoseFrame(p))).toEqual(p);
  });

  it('keeps alerts, events, typed arrays and non-finite numbers', () => {
    const person = {
      slot: 0,
      confidence: 0.9,
      keypoints: Float32Array.from({ length: 51 }, (_, i) => (i === 5 ? NaN : i / 7)),
      bbox: Float32Array.of(1, 2, 3, 4),
      floor: { x: 1.5, y: NaN },
      modelActivity: { activity: 'falling' as const, confidence: 0.7, probabilities: Float32Array.of(0.1, 0.1, 0.05, 0.05, 0.7) },
      trackId: 4,
      velocity: { x: Infinity, y: -Infinity },
    };
    const f: PoseFrame = {
      frameId: 7,
      time: 1_767_225_600_123.5,
      sourceId: 'sim',
      environmentId: 'ward-3',
      persons: [person],
      processingMs: 1.25,
      modelVersion: '3.0.0',
      csiQuality: 0.98,
      fallProbability: 0.93,
      fallTrigger: 0.9,
      alerts: [
        {
          alertId: 'alrt_ward-3_4_1767225600123_fall',
          type: 'fall_detection',
          severity: 'high',
          time: 1_767_225_600_123.5,
          environmentId: 'ward-3',
          personId: 4,
          trackId: 4,
          confidence: 0.93,
          location: { x: 1.5, y: 2 },
          metadata: { fall_time: 1_767_225_599_000 },
          actionsRequired: ['check on the person'],
        },
      ],
    };
    expect(decodePoseFrame(encodePoseFrame(f))).toEqual(f);
  });

  it.each([
    ['not JSON', new TextEncoder().encode('{nope')],
    ['not a frame', new TextEncoder().encode('{"a":1}')],
    ['a person without keypoints', new TextEncoder().encode('{"frameId":1,"environmentId":"e","persons":[{"bbox":[1,2,3,4]}]}')],
    ['not UTF-8', Uint8Array.of(0xff, 0xfe, 0x7b)],
  ])('refuses bytes that are not a pose frame (%s) with BusCodecError', (_name, bytes) => {
    expect(() => decodePoseFrame(bytes)).toThrow(BusCodecError);
  });
});
