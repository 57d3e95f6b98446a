import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CsiSimulator, type SimOptions } from '../../src/sim/simulator.js';

/** SHA-256 over every frame field and the truth of the first n samples. */
function streamHash(opts: SimOptions, n: number): string {
  const sim = new CsiSimulator(opts);
  const h = createHash('sha256');
  for (let i = 0; i < n; i++) {
    const { frame, truth } = sim.next();
    h.update(Buffer.from(frame.csi.buffer, frame.csi.byteOffset, frame.csi.byteLength));
    h.update(JSON.stringify([frame.index, frame.time, frame.deviceTime, frame.clockUs, frame.seq, frame.rssi, frame.noise, frame.channel, frame.bandwidthMhz]));
    for (const p of truth.persons) {
      h.update(Buffer.from(p.keypoints3d.buffer, p.keypoints3d.byteOffset, p.keypoints3d.byteLength));
      h.update(JSON.stringify([p.id, p.activity, p.floor, p.velocity, p.fallOnset ?? null]));
    }
    h.update(JSON.stringify(truth.events));
  }
  return h.digest('hex');
}

/**
 * Hashes of the stream as the simulator gave it before `realism` existed (commit b326895), computed
 * then with this same function: 'ideal' must reproduce them bit for bit (the golden files and the
 * shipped model's benchmarks depend on it).
 */
const CASES: Array<[string, SimOptions, number, string]> = [
  ['defaults', {}, 3000, '289bbbf1a8825087dc1fd96d2e7e1976c04af71c49a9d4488f2217d2abf79e80'],
  ['seed 7, 2 people', { seed: 7, people: 2 }, 3000, '391d1d26ec6c4cbe31314b0ecee197343cf8697d58d701b309b6e5bc7c45058c'],
  [
    '114 subcarriers, 2.4 GHz, 3 people, 4x2',
    { seed: 11, people: 3, nSub: 114, band: '2.4', nRx: 4, nTx: 2 },
    1500,
    '27e10a593a14f73013778884fd89b83de3bec3ddc5d0d5d9a1acb4daff8d58b0',
  ],
  [
    '56 subcarriers, no impairments, quantised',
    { seed: 5, people: 1, nSub: 56, impairments: { quantizeBits: 8 } },
    1500,
    'f0ebb673b52464ec5a759d5a625d07d47908f21c27a0736108ae376d0f6005bf',
  ],
  [
    'clean, no line of sight',
    { seed: 3, people: 4, impairments: false, lineOfSight: false },
    1500,
    'd84804b3785f34da329cb8b51a347863be7c41225e7e7e4c520520b1864b8e24',
  ],
];

describe("realism 'ideal' is today's stream, bit for bit", () => {
  it.each(CASES)('%s: unset and explicit ideal give the recorded hash', (_name, opts, n, hash) => {
    expect(streamHash(opts, n)).toBe(hash);
    expect(streamHash({ ...opts, realism: 'ideal' }, n)).toBe(hash);
  });

  it('an ideal preset with every effect explicitly off is the same stream', () => {
    const [, opts, n, hash] = CASES[1]!;
    const off = {
      preset: 'room',
      reflectionOrder: 1,
      furniture: 0,
      clutter: 0,
      door: false,
      shadowLossDb: 0,
      antennaPattern: 'isotropic',
      chainPhaseRandom: false,
      chainPhaseSdRad: 0,
      chainGainSdDb: 0,
      clockPpm: 0,
      wanderSd: 0,
      clutterJitterM: 0,
    } as const;
    expect(streamHash({ ...opts, realism: off }, n)).toBe(hash);
  });
});
