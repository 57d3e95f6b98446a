import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { PhaseSanitizer, SANITIZE_METHODS, SANITIZE_SCOPES, type SanitizeMethod, type SanitizeScope } from '../../src/csi/phaseSanitizer.js';
import { makeFrame } from '../helpers/frames.js';

/** Intel 5300's 30 grouped subcarriers at 20 MHz: steps of 2 and of 1. */
const INTEL = Int16Array.from([-28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28]);
const UNIFORM = Int16Array.from({ length: 30 }, (_, i) => i - 15);
/** Nexmon's FFT order: the positive half first, then the negative half. */
const FFT_ORDER = Int16Array.from({ length: 32 }, (_, i) => (i < 16 ? i : i - 32));

const BOTH: ReadonlyArray<{ method: SanitizeMethod; scope: SanitizeScope }> = SANITIZE_METHODS.flatMap((method) =>
  SANITIZE_SCOPES.map((scope) => ({ method, scope })),
);

/**
 * A frame whose every link sees the flat channel `amp * exp(j rxPhase * rx)`, turned by the
 * receiver's common phase `theta` and slope `slope` rad per subcarrier index. Only the per-antenna
 * phase should survive sanitisation (exactly, in packet scope).
 */
function ramp(subcarriers: Int16Array, theta: number, slope: number, opts: { nRx?: number; amp?: number; rxPhase?: number } = {}): CsiFrame {
  const amp = opts.amp ?? 1;
  const rxPhase = opts.rxPhase ?? 0;
  return makeFrame({
    nRx: opts.nRx ?? 1,
    nTx: 1,
    nSub: subcarriers.length,
    subcarriers,
    value: (sc, rx) => {
      const ph = theta + slope * subcarriers[sc]! + rxPhase * rx;
      return [amp * Math.cos(ph), amp * Math.sin(ph)];
    },
  });
}

/** Largest |out - expected| over the frame, expected = exp(j rxPhase * rx) per link (1 tx). */
function residual(frame: CsiFrame, out: CsiFrame, rxPhase = 0, amp = 1): number {
  let worst = 0;
  for (let sc = 0; sc < frame.nSub; sc++)
    for (let rx = 0; rx < frame.nRx; rx++) {
      const c = (sc * frame.nRx + rx) * 2;
      worst = Math.max(worst, Math.hypot(out.csi[c]! - amp * Math.cos(rxPhase * rx), out.csi[c + 1]! - amp * Math.sin(rxPhase * rx)));
    }
  return worst;
}

describe('PhaseSanitizer: the receiver’s phase offset and slope are removed', () => {
  const cases: ReadonlyArray<{ name: string; subcarriers: Int16Array; theta: number; slope: number }> = [
    { name: 'a flat channel, untouched', subcarriers: UNIFORM, theta: 0, slope: 0 },
    { name: 'a common offset alone', subcarriers: UNIFORM, theta: 2.5, slope: 0 },
    { name: 'a gentle ramp', subcarriers: UNIFORM, theta: -1, slope: 0.05 },
    // 0.9 rad per index over 30 indices is 27 rad: atan2 wraps it about four times.
    { name: 'a steep ramp that wraps several times', subcarriers: UNIFORM, theta: 0.4, slope: 0.9 },
    { name: 'a falling ramp that wraps', subcarriers: UNIFORM, theta: 3, slope: -1.1 },
    // Steps of 2 must stay under pi: 2 * 1.3 = 2.6.
    { name: "Intel's grouping (steps 2 and 1), wrapping", subcarriers: INTEL, theta: 1.2, slope: 1.3 },
    { name: "Nexmon's FFT order (samples not in index order), wrapping", subcarriers: FFT_ORDER, theta: -2, slope: 0.7 },
  ];
  for (const { name, subcarriers, theta, slope } of cases)
    for (const { method, scope } of BOTH)
      it(`${name}: ${method}, ${scope}`, () => {
        const frame = ramp(subcarriers, theta, slope, { nRx: 2 });
        const out = new PhaseSanitizer(method, scope).apply(frame);
        expect(residual(frame, out)).toBeLessThan(1e-5);
      });
});

describe('PhaseSanitizer: what is kept', () => {
  it.each(BOTH)('amplitudes, sample by sample ($method, $scope)', ({ method, scope }) => {
    const frame = makeFrame({ nRx: 2, nTx: 2, nSub: 30, subcarriers: INTEL, value: (sc, rx, tx) => [1 + sc / 10 + rx, 0.5 - tx + Math.sin(sc)] });
    const out = new PhaseSanitizer(method, scope).apply(frame);
    for (let c = 0; c < frame.csi.length; c += 2) expect(Math.hypot(out.csi[c]!, out.csi[c + 1]!)).toBeCloseTo(Math.hypot(frame.csi[c]!, frame.csi[c + 1]!), 5);
  });

  it.each(SANITIZE_METHODS)('the phase between antennas in packet scope (%s)', (method) => {
    const frame = ramp(UNIFORM, 0.8, 0.6, { nRx: 3, rxPhase: 0.7, amp: 2 });
    const out = new PhaseSanitizer(method, 'packet').apply(frame);
    // The common offset is the circular mean over the antennas: the middle one's phase.
    const shifted = ramp(UNIFORM, 0, 0, { nRx: 3, rxPhase: 0.7, amp: 2 });
    for (let c = 0; c < frame.csi.length; c++) expect(out.csi[c]).toBeCloseTo(rotate(shifted.csi, c, -0.7), 5);
  });

  it.each(SANITIZE_METHODS)('not the phase between antennas in link scope: each link is flattened (%s)', (method) => {
    const frame = ramp(UNIFORM, 0.8, 0.6, { nRx: 3, rxPhase: 0.7 });
    const out = new PhaseSanitizer(method, 'link').apply(frame);
    expect(residual(frame, out, 0)).toBeLessThan(1e-5);
  });

  it('the frame itself: a new frame with new samples and the same metadata; the input is not written', () => {
    const frame = ramp(INTEL, 1, 0.4);
    const before = Float32Array.from(frame.csi);
    const out = new PhaseSanitizer('fit', 'packet').apply(frame);
    expect(out).not.toBe(frame);
    expect(out.csi).not.toBe(frame.csi);
    expect({ ...out, csi: undefined }).toEqual({ ...frame, csi: undefined });
    expect(frame.csi).toEqual(before);
  });
});

describe('PhaseSanitizer: samples without phase, shapes, reuse', () => {
  it.each(BOTH)('a zero sample stays zero and does not disturb the fit of the others ($method, $scope)', ({ method, scope }) => {
    const frame = ramp(UNIFORM, 0.3, 0.8);
    frame.csi[2 * 7] = 0;
    frame.csi[2 * 7 + 1] = 0;
    const out = new PhaseSanitizer(method, scope).apply(frame);
    expect([out.csi[14], out.csi[15]]).toEqual([0, 0]);
    out.csi[14] = 1;
    expect(residual(frame, out)).toBeLessThan(1e-5);
  });

  it('one instance follows frames that change shape, and gives what a fresh one gives', () => {
    const s = new PhaseSanitizer('phasor', 'link');
    const frames = [ramp(UNIFORM, 1, 0.3, { nRx: 2 }), ramp(INTEL, -1, 0.9, { nRx: 3 }), ramp(FFT_ORDER, 0.5, -0.4), ramp(UNIFORM, 2, 0.2, { nRx: 2 })];
    for (const f of frames) expect(s.apply(f).csi).toEqual(new PhaseSanitizer('phasor', 'link').apply(f).csi);
  });

  it.each([
    {
      name: 'more csi values than the shape says',
      frame: { ...makeFrame({ nRx: 1, nSub: 4 }), nSub: 3 },
      message: /sanitize: frame 0 has 8 csi values, expected 6/,
    },
    {
      name: 'a subcarrier list of the wrong length',
      frame: { ...makeFrame({ nRx: 1, nSub: 4 }), subcarriers: Int16Array.of(0, 1) },
      message: /sanitize: frame 0 lists 2 subcarriers, expected 4/,
    },
    { name: 'no receive antenna', frame: { ...makeFrame({ nRx: 1, nSub: 4 }), nRx: 0 }, message: /sanitize: frame 0 has an invalid shape 0x1x4/ },
  ])('a frame with $name is refused', ({ frame, message }) => {
    expect(() => new PhaseSanitizer('fit', 'packet').apply(frame)).toThrow(message);
  });
});

/** Element c of interleaved csi after turning each sample by `angle`. */
function rotate(csi: Float32Array, c: number, angle: number): number {
  const re = csi[c & ~1]!;
  const im = csi[c | 1]!;
  return c % 2 === 0 ? re * Math.cos(angle) - im * Math.sin(angle) : re * Math.sin(angle) + im * Math.cos(angle);
}
