import { describe, expect, it } from 'vitest';
import { submissionFrames, type SubmittedPacket } from '../../src/csi/submission.js';
import { SUBCARRIERS } from '../../src/csi/subcarriers.js';

/** A packet whose samples say which packet it is: every value is `k`. */
function packet(k: number, nSub: number, nRx = 2, time?: number): SubmittedPacket {
  return { nRx, nSub, csi: new Float32Array(nSub * nRx * 2).fill(k), ...(time === undefined ? {} : { time }) };
}

const START = 1_700_000_000_000;

describe('submissionFrames', () => {
  it('repeats the last packet up to the window and places untimed packets by start and rate', () => {
    const s = { packets: [packet(1, 30), packet(2, 30), packet(3, 30)], startMs: START, rateHz: 50, routerId: 'r1' };
    const frames = submissionFrames(s, 'lab', 5);
    expect(frames).toHaveLength(5);
    expect(frames.map((f) => f.time)).toEqual([START, START + 20, START + 40, START + 60, START + 80]);
    expect(frames.map((f) => f.csi[0])).toEqual([1, 2, 3, 3, 3]);
    expect(frames[0]!.csi).toBe(s.packets[0]!.csi);
    expect(frames[4]!.csi).toBe(s.packets[2]!.csi);
    expect(frames.map((f) => [f.index, f.seq])).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
    ]);
  });

  it('keeps every packet when there are more than the window, and a packet time over start and rate', () => {
    const s = { packets: [packet(1, 56, 3), packet(2, 56, 3, START + 7), packet(3, 56, 3)], startMs: START, rateHz: 100, routerId: 'r1' };
    const frames = submissionFrames(s, 'lab', 2);
    expect(frames).toHaveLength(3);
    expect(frames.map((f) => f.time)).toEqual([START, START + 7, START + 20]);
  });

  it('labels the frames as a submission of their router and environment, with the packet shape', () => {
    const [f] = submissionFrames({ packets: [packet(9, 114, 3)], startMs: START, rateHz: 10, routerId: 'hall' }, 'home', 1);
    expect(f).toMatchObject({ format: 'submission', sourceId: 'process:hall', environmentId: 'home', nRx: 3, nTx: 1, nSub: 114, rssi: [] });
    expect([f!.deviceTime, f!.clockUs, f!.noise, f!.channel, f!.bandwidthMhz].every(Number.isNaN)).toBe(true);
  });

  it('gives a standard layout its shared table and any other count centred indices', () => {
    for (const nSub of [30, 56, 114] as const) {
      const [f] = submissionFrames({ packets: [packet(1, nSub)], startMs: START, rateHz: 10, routerId: 'r' }, 'lab', 1);
      expect(f!.subcarriers).toBe(SUBCARRIERS[nSub]);
    }
    expect(Array.from(SUBCARRIERS[30])).toEqual([
      -28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28,
    ]);
    const [odd] = submissionFrames({ packets: [packet(1, 4)], startMs: START, rateHz: 10, routerId: 'r' }, 'lab', 1);
    expect(Array.from(odd!.subcarriers)).toEqual([-2, -1, 0, 1]);
    const [five] = submissionFrames({ packets: [packet(1, 5)], startMs: START, rateHz: 10, routerId: 'r' }, 'lab', 1);
    expect(Array.from(five!.subcarriers)).toEqual([-2, -1, 0, 1, 2]);
  });
});
