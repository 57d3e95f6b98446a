import { describe, expect, it } from 'vitest';
import { DEFAULT_RADIOS } from '../../src/csi/radios.js';
import { SUBCARRIER_SPACING_HZ } from '../../src/csi/frame.js';
import { normalisedResidual, PacketAligner, phaseSlope } from '../../src/physics/align.js';
import type { ImpairmentOptions } from '../../src/sim/impairments.js';
import { CsiSimulator, SUBCARRIERS, type SubcarrierLayout } from '../../src/sim/simulator.js';

// One link (tx - rx1 of the default site), empty room: the channel is static, so what differs
// between packets is the impairments (common phase, timing slope up to +-50 ns, AGC) and noise.
const RADIOS = [DEFAULT_RADIOS[0]!, DEFAULT_RADIOS[1]!];

function sim(nSub: SubcarrierLayout, impairments: ImpairmentOptions | false, seed = 3): CsiSimulator {
  return new CsiSimulator({ seed, radios: RADIOS, people: 0, nSub, impairments });
}

function quantile(x: number[], q: number): number {
  const s = [...x].sort((a, b) => a - b);
  return s[Math.floor(q * (s.length - 1))]!;
}

const N = 300;

describe('PacketAligner', () => {
  for (const nSub of [30, 114] as const) {
    it(`makes the packets of a static channel coincide (${nSub} subcarriers)`, () => {
      // Default impairments (25 dB SNR), outliers off (a Hampel filter's job upstream).
      const s = sim(nSub, { outlierProbability: 0 });
      const first = s.nextTick().frames[0]!;
      const al = new PacketAligner(first.subcarriers, first.nRx, first.nTx);
      const raw: Float32Array[] = [];
      const aligned: Float32Array[] = [];
      for (let i = 0; i < N; i++) {
        const f = s.nextTick().frames[0]!;
        raw.push(f.csi);
        const out = new Float32Array(f.csi.length);
        al.align(f.csi, out);
        aligned.push(out);
      }
      const mean = new Float32Array(aligned[0]!.length);
      for (const a of aligned) for (let i = 0; i < a.length; i++) mean[i] += a[i]! / N;
      const toMean = aligned.map((a) => normalisedResidual(a, mean));
      const consecutive = aligned.slice(1).map((a, i) => normalisedResidual(a, aligned[i]!));
      const rawConsecutive = raw.slice(1).map((a, i) => normalisedResidual(a, raw[i]!));
      console.log(
        `${nSub}: aligned vs mean median ${quantile(toMean, 0.5).toFixed(4)} max ${quantile(toMean, 1).toFixed(4)}, ` +
          `consecutive median ${quantile(consecutive, 0.5).toFixed(4)}; raw consecutive median ${quantile(rawConsecutive, 0.5).toFixed(3)}`,
      );
      // Measured: aligned vs their mean 0.056 median, 0.063 (30) / 0.061 (114) at most: the noise
      // floor (10^(-25/20) = 0.056); consecutive aligned packets 0.080 (two noises); raw 1.40.
      expect(quantile(toMean, 1)).toBeLessThan(0.07);
      expect(quantile(consecutive, 0.95)).toBeLessThan(0.1);
      expect(quantile(rawConsecutive, 0.5)).toBeGreaterThan(0.5);
    });

    it(`leaves only the noise at 45 dB SNR (${nSub} subcarriers)`, () => {
      const s = sim(nSub, { outlierProbability: 0, snrDb: 45, agcStepProbability: 0.05 });
      const first = s.nextTick().frames[0]!;
      const al = new PacketAligner(first.subcarriers, first.nRx, first.nTx, 'rms');
      const ref = new Float32Array(first.csi.length);
      al.align(first.csi, ref);
      const out = new Float32Array(first.csi.length);
      const res: number[] = [];
      for (let i = 0; i < 100; i++) {
        al.align(s.nextTick().frames[0]!.csi, out);
        res.push(normalisedResidual(out, ref));
      }
      console.log(`${nSub}: 45 dB SNR, aligned vs first aligned packet, max ${quantile(res, 1).toFixed(4)}`);
      // Measured: 0.0087 (30) / 0.0084 (114) at most; two packets' noise alone is sqrt(2) x 10^(-45/20) = 0.0080.
      expect(quantile(res, 1)).toBeLessThan(0.012);
    });

    it(`restores the reference's absolute delay (${nSub} subcarriers)`, () => {
      const s = sim(nSub, { outlierProbability: 0 });
      const c = sim(nSub, false);
      const al = new PacketAligner(SUBCARRIERS[nSub], 3, 3);
      // The clean channel (same seed, no impairments): the same static channel as the impaired stream's.
      const clean = c.nextTick().frames[0]!.csi;
      const cleanSlope = phaseSlope(clean, SUBCARRIERS[nSub], 9);
      const out = new Float32Array(clean.length);
      const slopeErr: number[] = [];
      const rawErr: number[] = [];
      const res: number[] = [];
      for (let i = 0; i < N; i++) {
        const f = s.nextTick().frames[0]!;
        al.alignTo(f.csi, clean, out);
        slopeErr.push(Math.abs(phaseSlope(out, SUBCARRIERS[nSub], 9) - cleanSlope));
        rawErr.push(Math.abs(phaseSlope(f.csi, SUBCARRIERS[nSub], 9) - cleanSlope));
        res.push(normalisedResidual(out, clean));
      }
      const ns = (slope: number): number => (slope / (2 * Math.PI * SUBCARRIER_SPACING_HZ)) * 1e9;
      console.log(
        `${nSub}: slope error as delay: aligned max ${ns(quantile(slopeErr, 1)).toFixed(3)} ns, raw median ${ns(quantile(rawErr, 0.5)).toFixed(1)} ns; ` +
          `residual to the clean channel max ${quantile(res, 1).toFixed(4)}`,
      );
      // Measured over 300 packets: the aligned slope is the clean one within 0.48 ns (30) / 0.27 ns
      // (114) of delay, where raw packets are off by their timing offsets (median 25 / 26 ns); the
      // residual to the clean channel is the noise (0.065 / 0.059 at most).
      expect(ns(quantile(slopeErr, 1))).toBeLessThan(1);
      expect(ns(quantile(rawErr, 0.5))).toBeGreaterThan(10);
      expect(quantile(res, 1)).toBeLessThan(0.07);
    });
  }

  it("'median' gain: the aligned packet's median sample amplitude is 1, and a reference's median sets it with alignTo", () => {
    // Against a median computed by sorting, on people moving (270 and 1026 samples: even counts).
    const median = (v: Float32Array): number => {
      const a: number[] = [];
      for (let c = 0; c < v.length / 2; c++) a.push(Math.hypot(v[2 * c]!, v[2 * c + 1]!));
      a.sort((x, y) => x - y);
      const n = a.length;
      return n % 2 ? a[(n - 1) / 2]! : 0.5 * (a[n / 2 - 1]! + a[n / 2]!);
    };
    for (const nSub of [30, 114] as const) {
      const s = new CsiSimulator({ seed: 5, radios: RADIOS, people: 2, nSub });
      const f0 = s.nextTick().frames[0]!;
      const al = new PacketAligner(f0.subcarriers, f0.nRx, f0.nTx);
      const ref = new Float32Array(f0.csi.length);
      al.align(f0.csi, ref);
      for (let i = 0; i < 0.6 * ref.length; i++) ref[i] = ref[i]! * 3;
      const out = new Float32Array(f0.csi.length);
      for (let t = 0; t < 50; t++) {
        const f = s.nextTick().frames[0]!;
        al.align(f.csi, out);
        expect(Math.abs(median(out) - 1)).toBeLessThan(1e-6);
        al.alignTo(f.csi, ref, out);
        expect(Math.abs(median(out) / median(ref) - 1)).toBeLessThan(1e-6);
      }
    }
  });

  it('estimates the slope of one delayed path on the Intel and 114 layouts, and the gain', () => {
    for (const nSub of [30, 114] as const) {
      const sub = SUBCARRIERS[nSub];
      const tau = 37e-9;
      const slope = -2 * Math.PI * SUBCARRIER_SPACING_HZ * tau;
      const h = new Float32Array(sub.length * 2);
      for (let k = 0; k < sub.length; k++) {
        h[2 * k] = 2 * Math.cos(slope * sub[k]! + 1);
        h[2 * k + 1] = 2 * Math.sin(slope * sub[k]! + 1);
      }
      expect(phaseSlope(h, sub, 1)).toBeCloseTo(slope, 6);
      const al = new PacketAligner(sub, 1, 1, 'rms');
      const out = new Float32Array(h.length);
      const e = al.align(h, out);
      expect(e.slope).toBeCloseTo(-slope, 6);
      expect(e.gain).toBeCloseTo(0.5, 6);
      // Aligned: every sample is 1 + 0j.
      for (let k = 0; k < sub.length; k++) {
        expect(out[2 * k]).toBeCloseTo(1, 5);
        expect(out[2 * k + 1]).toBeCloseTo(0, 5);
      }
    }
  });
});
