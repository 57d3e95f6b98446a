import { describe, expect, it } from 'vitest';
import { NO_IMPAIRMENTS, type ImpairmentOptions } from '../../src/sim/impairments.js';
import { CsiSimulator, type SimOptions } from '../../src/sim/simulator.js';

/** Runs a clean and an impaired simulator side by side (same seed: same people, same channel). */
function pair(imp: ImpairmentOptions, extra: SimOptions = {}): { clean: CsiSimulator; dirty: CsiSimulator } {
  const base: SimOptions = { seed: 11, people: 2, ...extra };
  return {
    clean: new CsiSimulator({ ...base, impairments: false }),
    dirty: new CsiSimulator({ ...base, impairments: { ...NO_IMPAIRMENTS, ...imp } }),
  };
}

const at = (csi: Float32Array, k: number, m: number, n: number): [number, number] => {
  const c = ((k * 3 + m) * 3 + n) * 2;
  return [csi[c]!, csi[c + 1]!];
};

describe('impairments', () => {
  it('common phase (CFO) leaves H[k,0,n] conj(H[k,1,n]) unchanged and rotates every sample alike', () => {
    const { clean, dirty } = pair({ commonPhase: true });
    const phases: number[] = [];
    for (let t = 0; t < 50; t++) {
      const a = clean.next().frame;
      const b = dirty.next().frame;
      expect(b.seq).toBe(a.seq);
      let ref = NaN;
      for (let k = 0; k < 30; k++) {
        for (let n = 0; n < 3; n++) {
          const [a0r, a0i] = at(a.csi, k, 0, n);
          const [a1r, a1i] = at(a.csi, k, 1, n);
          const [b0r, b0i] = at(b.csi, k, 0, n);
          const [b1r, b1i] = at(b.csi, k, 1, n);
          const pr = a0r * a1r + a0i * a1i;
          const pi = a0i * a1r - a0r * a1i;
          const qr = b0r * b1r + b0i * b1i;
          const qi = b0i * b1r - b0r * b1i;
          const mag = Math.hypot(pr, pi);
          expect(Math.hypot(qr - pr, qi - pi)).toBeLessThan(1e-5 * mag);
          // Same rotation on every subcarrier and antenna.
          const rot = Math.atan2(b0i * a0r - b0r * a0i, b0r * a0r + b0i * a0i);
          if (Number.isNaN(ref)) ref = rot;
          expect(Math.abs(Math.atan2(Math.sin(rot - ref), Math.cos(rot - ref)))).toBeLessThan(1e-5);
        }
      }
      phases.push(ref);
    }
    // Random per packet, not a constant.
    expect(new Set(phases.map((p) => p.toFixed(3))).size).toBeGreaterThan(45);
  });

  it('sampling time offset adds a phase linear in the subcarrier index, the same on every antenna', () => {
    for (const nSub of [30, 114] as const) {
      const { clean, dirty } = pair({ stoNs: 50 }, { nSub });
      const slopes: number[] = [];
      for (let t = 0; t < 20; t++) {
        const a = clean.next().frame;
        const b = dirty.next().frame;
        const sc = a.subcarriers;
        let slope = NaN;
        for (let m = 0; m < 3; m++) {
          for (let n = 0; n < 3; n++) {
            // Phase of impaired / clean at each subcarrier, relative to the first: must equal
            // slope * (s_k - s_0) with one slope for the whole packet.
            const ph = (k: number): number => {
              const [ar, ai] = at(a.csi, k, m, n);
              const [br, bi] = at(b.csi, k, m, n);
              return Math.atan2(bi * ar - br * ai, br * ar + bi * ai);
            };
            // The zero-offset phase: no common phase is configured, so the line passes through 0
            // at index 0; fit slope from the neighbouring indices (small steps, no wrapping).
            const s = (ph(1) - ph(0)) / (sc[1]! - sc[0]!);
            if (Number.isNaN(slope)) slope = s;
            expect(Math.abs(s - slope)).toBeLessThan(1e-4);
            for (let k = 0; k < nSub; k++) {
              const want = slope * sc[k]!;
              const d = ph(k) - want;
              expect(Math.abs(Math.atan2(Math.sin(d), Math.cos(d)))).toBeLessThan(2e-4);
            }
          }
        }
        slopes.push(slope);
        // |slope| <= 2 pi * 312.5 kHz * 50 ns
        expect(Math.abs(slope)).toBeLessThanOrEqual(2 * Math.PI * 312_500 * 50e-9 + 1e-4);
      }
      expect(Math.max(...slopes) - Math.min(...slopes)).toBeGreaterThan(0.02);
    }
  });

  it('loses the configured fraction of 20,000 packets in bursts, and lost seqs never appear', () => {
    const rate = 0.05;
    const burst = 3;
    const sim = new CsiSimulator({ seed: 3, people: 0, impairments: { ...NO_IMPAIRMENTS, lossRate: rate, lossBurst: burst } });
    const seen = new Set<number>();
    let prevSeq = -1;
    let bursts = 0;
    let lost = 0;
    let index = 0;
    while (sim.packets < 20_000) {
      const { frame, truth } = sim.next();
      expect(frame.index).toBe(index++);
      expect(frame.seq).toBeGreaterThan(prevSeq);
      expect(truth.seq).toBe(frame.seq);
      // The truth clock advanced through the lost packets.
      expect(truth.time).toBe(Date.UTC(2026, 0, 1) + frame.seq * 10);
      const gap = frame.seq - prevSeq - 1;
      if (gap > 0) {
        bursts++;
        lost += gap;
      }
      seen.add(frame.seq);
      prevSeq = frame.seq;
    }
    const total = prevSeq + 1;
    expect(lost).toBe(total - seen.size);
    expect(Math.abs(lost / total - rate)).toBeLessThan(0.01);
    expect(lost / bursts).toBeGreaterThan(burst - 0.6);
    expect(lost / bursts).toBeLessThan(burst + 0.6);
  });

  it('adds noise at the configured SNR relative to the empty-room channel', () => {
    const { clean, dirty } = pair({ snrDb: 20 }, { people: 0 });
    let sig = 0;
    let noise = 0;
    let nsamp = 0;
    let re = 0;
    for (let t = 0; t < 200; t++) {
      const a = clean.next().frame.csi;
      const b = dirty.next().frame.csi;
      for (let i = 0; i < a.length; i += 2) {
        sig += a[i]! ** 2 + a[i + 1]! ** 2;
        const nr = b[i]! - a[i]!;
        const ni = b[i + 1]! - a[i + 1]!;
        noise += nr * nr + ni * ni;
        re += nr;
        nsamp++;
      }
    }
    const snr = 10 * Math.log10(sig / noise);
    expect(Math.abs(snr - 20)).toBeLessThan(1);
    // Zero-mean.
    expect(Math.abs(re / nsamp)).toBeLessThan(0.05 * Math.sqrt(noise / nsamp));
    expect(dirty.next().frame.noise).toBeCloseTo(dirty.next().frame.rssi[0]! - 20, -1);
  });

  it('AGC steps change the whole packet by one gain that persists', () => {
    const { clean, dirty } = pair({ agcStepProbability: 0.02, agcStepDb: 4 });
    const gains: number[] = [];
    let worst = 0;
    for (let t = 0; t < 600; t++) {
      const a = clean.next().frame.csi;
      const b = dirty.next().frame.csi;
      const g = Math.hypot(b[0]!, b[1]!) / Math.hypot(a[0]!, a[1]!);
      for (let i = 0; i < a.length; i += 2) {
        worst = Math.max(worst, Math.abs(Math.hypot(b[i]!, b[i + 1]!) / Math.hypot(a[i]!, a[i + 1]!) - g) / g);
      }
      gains.push(20 * Math.log10(g));
    }
    expect(worst).toBeLessThan(1e-5);
    let jumps = 0;
    for (let i = 1; i < gains.length; i++) {
      const d = Math.abs(gains[i]! - gains[i - 1]!);
      if (d > 1e-4) {
        jumps++;
        expect(d).toBeGreaterThanOrEqual(1 - 1e-4);
        expect(d).toBeLessThanOrEqual(4 + 1e-4);
      }
    }
    expect(jumps).toBeGreaterThan(3);
    expect(jumps).toBeLessThan(30);
    for (const g of gains) expect(Math.abs(g)).toBeLessThanOrEqual(6 + 1e-4);
  });

  it('outliers scale single samples; quantisation gives int8 values; jitter stays small and ordered', () => {
    const { clean, dirty } = pair({ outlierProbability: 0.2, outlierScale: [5, 8] });
    let packetsWithOutlier = 0;
    for (let t = 0; t < 200; t++) {
      const a = clean.next().frame.csi;
      const b = dirty.next().frame.csi;
      let changed = 0;
      for (let i = 0; i < a.length; i += 2) {
        const r = Math.hypot(b[i]!, b[i + 1]!) / Math.hypot(a[i]!, a[i + 1]!);
        if (Math.abs(r - 1) > 1e-6) {
          changed++;
          expect(r).toBeGreaterThanOrEqual(5 - 1e-4);
          expect(r).toBeLessThanOrEqual(8 + 1e-4);
        }
      }
      expect(changed).toBeLessThanOrEqual(1);
      packetsWithOutlier += changed;
    }
    expect(packetsWithOutlier).toBeGreaterThan(20);
    expect(packetsWithOutlier).toBeLessThan(60);

    const q = new CsiSimulator({ seed: 2, impairments: { quantizeBits: 8 } });
    for (let t = 0; t < 50; t++) {
      for (const v of q.next().frame.csi) {
        expect(Number.isInteger(v)).toBe(true);
        expect(v).toBeGreaterThanOrEqual(-128);
        expect(v).toBeLessThanOrEqual(127);
      }
    }

    const j = new CsiSimulator({ seed: 2, impairments: { ...NO_IMPAIRMENTS, jitterMs: 1 } });
    let prev = -Infinity;
    let sum2 = 0;
    const n = 2000;
    for (let t = 0; t < n; t++) {
      const { frame, truth } = j.next();
      const d = frame.time - truth.time;
      expect(Math.abs(d)).toBeLessThanOrEqual(4);
      expect(frame.time).toBeGreaterThan(prev);
      prev = frame.time;
      sum2 += d * d;
    }
    expect(Math.sqrt(sum2 / n)).toBeGreaterThan(0.85);
    expect(Math.sqrt(sum2 / n)).toBeLessThan(1.15);
  });
});
