/**
 * Doppler spectra steered to candidate people (issue 19 item 1: each candidate has "a position,
 * height, power, and a Doppler spectrum steered to it over the last seconds").
 *
 * Steering in time. For one link's {@link MovingWindow} and a room point g, the steered series is
 * y_s = a(g)^H h_s / |a(g)|^2 for every snapshot s, with a(g) the exact bistatic steering of
 * src/physics/beamform.ts: a[k,m,n] = exp(-j 2 pi f_k (|t_n - g| + |g - r_m|) / c), the phase the
 * simulator (src/sim/channel.ts) and a real channel give a point scatterer at g. A scatterer that
 * stays at g (h_s = alpha_s a(g)) gives y_s = alpha_s exactly, so its |y_s| is constant when its
 * amplitude is; motion at g shows as the phase of y_s turning, and what is elsewhere is suppressed
 * by the array and bandwidth gain (the same beam as the floor map's). Here a(g) is computed from the
 * link geometry at any point (candidates are refined between grid points), in float64, not taken
 * from a {@link FloorBeamformer}'s grid; at grid points the two agree to float32 rounding
 * (test/physics/doppler.test.ts).
 *
 * Spectrum. The last N snapshots (N = `bins`, a power of two, 64 for the short view; a shorter
 * window is zero-padded), Hann-tapered over the snapshots present, through an N-point FFT
 * (fft.js, F[b] = sum_s y_s exp(-j 2 pi b s / N)), power per bin |F[b]|^2 / (N sum_s w_s^2), so
 * that the bins sum to the taper-weighted mean of |y_s|^2 (Parseval). Bins are fftshifted: index
 * i is the frequency (i - N/2) rate / N, from -rate/2 (the Nyquist bin) up to rate/2 - rate/N.
 *
 * Sign. With the phase exp(-j 2 pi f L / c) of a path of length L, a path that shortens turns the
 * phase forward, so f_D = -(1 / lambda) dL/dt with lambda = c / centreHz: a shortening bistatic
 * path (a person closing on the transmitter-receiver pair) gives a positive frequency, a
 * lengthening one a negative frequency. Each bin's bistatic path-length rate is dL/dt = -f lambda
 * (m/s; {@link DopplerSteerer.pathRates}, decreasing with the bin index). That rate is not yet the
 * person's speed: a body moving at v along direction u changes L at v u . (unit(g - t) + unit(g - r)),
 * between 0 (moving along the ellipse of constant L) and 2 v (straight away from both ends).
 *
 * Fusion over links ({@link steerCandidates}). Each link's spectrum is divided by the link's own
 * moving power in the window (the taper-weighted mean of |h_s|^2 / |a|^2, 'window', the default)
 * and the links summed. By Cauchy-Schwarz |y_s|^2 <= |h_s|^2 / |a|^2, so each link's normalised
 * row sums to the share of its moving power that the steering to the candidate captures, in [0, 1]:
 * like fuseMaps, every link gets at most one unit of "vote" whatever its path loss (the moving
 * power of a link varies by orders of magnitude with how close a person is to its radios, so raw
 * spectra, 'none', would let the nearest link decide alone), and unlike normalising each spectrum
 * by its own total ('spectrum', which makes every row sum to one per link), a link that sees little
 * at the candidate (the person is off its beam or behind another) contributes little instead of a
 * full unit of its noise or of a neighbour's sidelobe.
 *
 * Cost: per candidate and link, one steering vector (nSub (nTx + nRx) sin/cos pairs), one
 * contraction per snapshot (nSub nRx nTx complex multiply-adds) and one N-point FFT; no
 * allocation ({@link DopplerSteerer} holds every buffer). {@link DopplerSteerer.spectra} (what
 * {@link steerCandidates} uses) reads each snapshot once for four candidates and takes the window's
 * moving power once per link. Measured (one core of the shared 2-core machine): 6 candidates on the
 * default site's 3 links (30 subcarriers, 3 x 3 antennas, 64 packets) 1.0-1.3 ms per window, 1.4-1.7x
 * faster than one candidate at a time (0.16-0.17 ms per candidate per link then).
 *
 * Measured on the simulator (default site, ideal room, impairments off, link tx-rx1, 64 packets at
 * 100 Hz, test/physics/doppler.test.ts): a person walking at 1 m/s toward rx1 peaks at -0.723 m/s
 * against the pelvis's true path rate -0.678 m/s, walking away at +0.452 against +0.414 (one bin is
 * 0.090 m/s); a person standing still has 100 % of the spectrum within +-1 bin of 0 Hz with the
 * empty room's channel removed (94 % with the window mean removed), a walker 4-8 %; an empty spot
 * 2 m from the walker gets 14-75 times less power on tx-rx1, and 7.7 times less fused over three
 * links ('window' rows: 2.91 at the walker, 0.38 at the spot).
 */

import type { Point3 } from './types.js';
import FFT from 'fft.js';
import { SPEED_OF_LIGHT } from '../csi/radios.js';
import type { PrincipalComponents } from './beamform.js';
import type { LinkGeometry } from './geometry.js';
import type { MovingWindow } from './types.js';

/** Default FFT size: the short view's 64 packets (src/physics/window.ts). */
export const DEFAULT_DOPPLER_BINS = 64;
/** Default packet rate, Hz (the simulator's and the recorder's default). */
export const DEFAULT_PACKET_RATE_HZ = 100;

/** A room point, metres; a {@link Candidate} (src/physics/candidates.ts) is one. */
/** Options of {@link DopplerSteerer}. */
export interface DopplerOptions {
  /** FFT size, a power of two >= 2; default DEFAULT_DOPPLER_BINS (64). Longer windows use their last `bins` snapshots. */
  readonly bins?: number;
  /** Packet rate, Hz; default DEFAULT_PACKET_RATE_HZ (100). */
  readonly rateHz?: number;
}

/**
 * One link's Doppler steering: built once from the link's geometry, it steers a window to any
 * point and takes the Doppler power spectrum there, with every buffer (steering factors, series,
 * FFT input and output, taper, spectrum) allocated up front, so that one candidate in one window
 * allocates nothing.
 *
 * @example
 * const geom = linkGeometry(link.tx, link.rx, frame.subcarriers, centreFrequencyHz(frame.channel, frame.bandwidthMhz));
 * const dop = new DopplerSteerer(geom);
 * const row = new Float32Array(dop.bins);
 * dop.spectrum(window, { x: 2.4, y: 1.8, z: 1.0 }, row); // row[i]: power at dop.frequencies[i] Hz
 * dop.pathRates[dop.peakBin()]; // the dominant bistatic path-length rate, m/s
 */
export class DopplerSteerer {
  readonly geometry: LinkGeometry;
  readonly nSub: number;
  readonly nRx: number;
  readonly nTx: number;
  /** FFT size: the number of spectrum bins. */
  readonly bins: number;
  /** Packet rate, Hz. */
  readonly rateHz: number;
  /** Centre wavelength c / centreHz, metres. */
  readonly wavelength: number;
  /** Frequency of each (fftshifted) bin, Hz: (i - bins / 2) rateHz / bins. */
  readonly frequencies: Float64Array;
  /** Bistatic path-length rate of each bin, m/s: -frequencies[i] wavelength (negative: the path shortens). */
  readonly pathRates: Float64Array;
  private readonly fft: FFT;
  /** conj(T[k, n]) = exp(+j 2 pi f_k |t_n - g| / c), complex, (k * nTx + n). */
  private readonly txConj: Float64Array;
  /** conj(R[k, m]) = exp(+j 2 pi f_k |g - r_m| / c), complex, (k * nRx + m). */
  private readonly rxConj: Float64Array;
  private readonly txLen: Float64Array;
  private readonly rxLen: Float64Array;
  private readonly seriesBuf: Float64Array;
  private readonly fftIn: Float64Array;
  private readonly fftOut: Float64Array;
  private readonly taper: Float64Array;
  private taperCount = -1;
  private taperSum2 = 0;
  private readonly power: Float64Array;
  private count = 0;
  private windowPower = 0;
  private total = 0;
  /** {@link spectra}: conj(a(g)) of each point, D complex each, and each point's series (bins complex each); grown on demand. */
  private steers = new Float64Array(0);
  private series = new Float64Array(0);
  private rows = new Float64Array(0);

  /**
   * @param geometry the link's antennas and subcarriers ({@link linkGeometry})
   * @param options FFT size and packet rate
   * @throws RangeError for a size that is not a power of two >= 2, a bad rate or no subcarriers
   */
  constructor(geometry: LinkGeometry, options: DopplerOptions = {}) {
    const bins = options.bins ?? DEFAULT_DOPPLER_BINS;
    const rateHz = options.rateHz ?? DEFAULT_PACKET_RATE_HZ;
    if (!(Number.isInteger(bins) && bins >= 2 && (bins & (bins - 1)) === 0)) throw new RangeError('DopplerSteerer: bins must be a power of two >= 2');
    if (!(rateHz > 0 && Number.isFinite(rateHz))) throw new RangeError('DopplerSteerer: rateHz must be positive');
    if (geometry.subcarriers.length < 1) throw new RangeError('DopplerSteerer: no subcarriers');
    this.geometry = geometry;
    this.nSub = geometry.subcarriers.length;
    this.nRx = geometry.nRx;
    this.nTx = geometry.nTx;
    this.bins = bins;
    this.rateHz = rateHz;
    this.wavelength = SPEED_OF_LIGHT / geometry.centreHz;
    this.frequencies = new Float64Array(bins);
    this.pathRates = new Float64Array(bins);
    for (let i = 0; i < bins; i++) {
      const f = ((i - bins / 2) * rateHz) / bins;
      this.frequencies[i] = f;
      // -0 for the 0 Hz bin would print oddly; + 0 normalises it.
      this.pathRates[i] = -f * this.wavelength + 0;
    }
    this.fft = new FFT(bins);
    this.txConj = new Float64Array(2 * this.nSub * this.nTx);
    this.rxConj = new Float64Array(2 * this.nSub * this.nRx);
    this.txLen = new Float64Array(this.nTx);
    this.rxLen = new Float64Array(this.nRx);
    this.seriesBuf = new Float64Array(2 * bins);
    this.fftIn = new Float64Array(2 * bins);
    this.fftOut = new Float64Array(2 * bins);
    this.taper = new Float64Array(bins);
    this.power = new Float64Array(bins);
  }

  /** Snapshots used by the last {@link steer} or {@link spectrum}: min(window snapshots, bins). */
  get snapshots(): number {
    return this.count;
  }

  /** The last spectrum, fftshifted (bins values; the steerer's own buffer, overwritten by the next call). */
  get lastSpectrum(): Float64Array {
    return this.power;
  }

  /** Sum of the last spectrum's bins: the taper-weighted mean of |y_s|^2. */
  get lastPower(): number {
    return this.total;
  }

  /**
   * The link's moving power in the last window steered: the taper-weighted mean over the snapshots
   * used of |h_s|^2 / |a|^2 (|a|^2 = nSub nRx nTx), the most that {@link lastPower} can be.
   */
  get lastWindowPower(): number {
    return this.windowPower;
  }

  /** lastPower / lastWindowPower: the share of the window's moving power that the steering captured (0 for an empty window). */
  get capturedFraction(): number {
    return this.windowPower > 0 ? this.total / this.windowPower : 0;
  }

  /** Fills the conjugated leg factors for g (one sin/cos per subcarrier and antenna). */
  private prepare(g: Point3): void {
    const { nSub, nRx, nTx, geometry } = this;
    const tp = geometry.txPositions;
    const rp = geometry.rxPositions;
    for (let n = 0; n < nTx; n++) this.txLen[n] = Math.hypot(tp[3 * n]! - g.x, tp[3 * n + 1]! - g.y, tp[3 * n + 2]! - g.z);
    for (let m = 0; m < nRx; m++) this.rxLen[m] = Math.hypot(rp[3 * m]! - g.x, rp[3 * m + 1]! - g.y, rp[3 * m + 2]! - g.z);
    const freqs = geometry.frequencies;
    for (let k = 0; k < nSub; k++) {
      const fc = freqs[k]! / SPEED_OF_LIGHT;
      for (let n = 0; n < nTx; n++) legConj(this.txLen[n]! * fc, this.txConj, 2 * (k * nTx + n));
      for (let m = 0; m < nRx; m++) legConj(this.rxLen[m]! * fc, this.rxConj, 2 * (k * nRx + m));
    }
  }

  /**
   * The exact bistatic steering vector of a point (not its conjugate): a[k,m,n] =
   * exp(-j 2 pi f_k (|t_n - g| + |g - r_m|) / c), in the frame's complex order.
   * @param point room metres
   * @param out nSub * nRx * nTx complex, interleaved (allocated when omitted)
   * @returns out
   * @example
   * const a = dop.steering({ x: 2, y: 2, z: 1 }); // a[2c], a[2c+1]: re, im of c = (k * nRx + m) * nTx + n
   */
  steering(point: Point3, out?: Float64Array | Float32Array): Float64Array | Float32Array {
    const { nSub, nRx, nTx } = this;
    const o = out ?? new Float64Array(2 * nSub * nRx * nTx);
    if (o.length < 2 * nSub * nRx * nTx) throw new RangeError('DopplerSteerer.steering: out is too short');
    this.writeSteering(point, o, 0, -1);
    return o;
  }

  /**
   * Writes a point's steering in the frame's complex order from `at`: conj(a) = conj(T) conj(R)
   * (imSign 1), or a itself (imSign -1). No allocation.
   */
  private writeSteering(point: Point3, o: Float64Array | Float32Array, at: number, imSign: 1 | -1): void {
    const { nSub, nRx, nTx } = this;
    this.prepare(point);
    const T = this.txConj;
    const R = this.rxConj;
    let c = at;
    for (let k = 0; k < nSub; k++) {
      for (let m = 0; m < nRx; m++) {
        const rr = R[2 * (k * nRx + m)]!;
        const ri = R[2 * (k * nRx + m) + 1]!;
        for (let n = 0; n < nTx; n++) {
          const tr = T[2 * (k * nTx + n)]!;
          const ti = T[2 * (k * nTx + n) + 1]!;
          o[c] = tr * rr - ti * ri;
          o[c + 1] = imSign * (tr * ri + ti * rr);
          c += 2;
        }
      }
    }
  }

  /**
   * The steered series of a window: y_s = a(g)^H h_s / |a(g)|^2 for its last min(snapshots, bins)
   * snapshots, oldest first. Also takes the window's moving power over those snapshots (for
   * {@link lastWindowPower}). No allocation when out is omitted.
   * @param w the window (its nSub, nRx, nTx must be the geometry's)
   * @param point room metres
   * @param out 2 * bins values at least (interleaved complex; the steerer's own buffer when omitted)
   * @returns out; the number of snapshots written is {@link snapshots}
   * @throws RangeError when the window's shape is not the link's or out is too short
   * @example
   * const y = dop.steer(window, candidate); // y[2s], y[2s+1] for s < dop.snapshots
   */
  steer(w: MovingWindow, point: Point3, out?: Float64Array): Float64Array {
    const { nSub, nRx, nTx, bins } = this;
    if (w.nSub !== nSub || w.nRx !== nRx || w.nTx !== nTx) throw new RangeError('DopplerSteerer: window shape differs from the link geometry');
    const y = out ?? this.seriesBuf;
    if (y.length < 2 * bins) throw new RangeError('DopplerSteerer.steer: out is shorter than 2 * bins');
    const D = nSub * nRx * nTx;
    const count = Math.min(w.snapshots, bins);
    const first = w.snapshots - count;
    this.count = count;
    this.setTaper(count);
    this.prepare(point);
    const T = this.txConj;
    const R = this.rxConj;
    const data = w.data;
    const norm = 1 / D;
    const taper = this.taper;
    let energy = 0;
    for (let s = 0; s < count; s++) {
      let base = 2 * (first + s) * D;
      let sr = 0;
      let si = 0;
      let e = 0;
      for (let k = 0; k < nSub; k++) {
        for (let m = 0; m < nRx; m++) {
          // u = sum_n conj(T[k,n]) h[k,m,n], then s += conj(R[k,m]) u.
          let ur = 0;
          let ui = 0;
          let t = 2 * k * nTx;
          for (let n = 0; n < nTx; n++) {
            const hr = data[base]!;
            const hi = data[base + 1]!;
            const tr = T[t]!;
            const ti = T[t + 1]!;
            ur += tr * hr - ti * hi;
            ui += tr * hi + ti * hr;
            e += hr * hr + hi * hi;
            base += 2;
            t += 2;
          }
          const rr = R[2 * (k * nRx + m)]!;
          const ri = R[2 * (k * nRx + m) + 1]!;
          sr += rr * ur - ri * ui;
          si += rr * ui + ri * ur;
        }
      }
      y[2 * s] = sr * norm;
      y[2 * s + 1] = si * norm;
      const ws = taper[s]!;
      energy += ws * ws * e * norm;
    }
    this.windowPower = this.taperSum2 > 0 ? energy / this.taperSum2 : 0;
    return y;
  }

  /**
   * The Doppler power spectrum of a window steered to a point (module comment): Hann taper, N-point
   * FFT, power per bin normalised so that the bins sum to the taper-weighted mean of |y_s|^2,
   * fftshifted (index i is {@link frequencies}[i], from -rate/2 upwards). Kept in
   * {@link lastSpectrum}; copied into out when given. No allocation.
   * @param w the window
   * @param point room metres
   * @param out receives the bins values from `offset` (optional)
   * @param offset where in out, default 0
   * @returns the sum of the bins ({@link lastPower})
   * @throws RangeError when the window's shape is not the link's or out is too short
   * @example
   * const p = dop.spectrum(window, candidate, rows, i * dop.bins); // row i of a candidates x bins matrix
   */
  spectrum(w: MovingWindow, point: Point3, out?: Float32Array | Float64Array, offset = 0): number {
    const { bins } = this;
    if (out && out.length < offset + bins) throw new RangeError('DopplerSteerer.spectrum: out is too short');
    this.steer(w, point, this.seriesBuf);
    const total = this.transform(this.seriesBuf, 0);
    if (out) for (let i = 0; i < bins; i++) out[offset + i] = this.power[i]!;
    return total;
  }

  /**
   * The Doppler power spectra of a window steered to several points at once: the same as
   * {@link spectrum} for each point (row i of out from offset + i * bins), but each snapshot of the
   * window is read once for all of them (four points at a time) and the window's moving power
   * ({@link lastWindowPower}) is taken once. {@link lastSpectrum} and {@link lastPower} are the last
   * point's. No allocation once the buffers have grown to the number of points.
   * @param w the window
   * @param points room metres
   * @param out receives points.length rows of bins values from `offset` (the steerer's own
   *   buffer when omitted, overwritten by the next call)
   * @param offset where in out, default 0
   * @returns out
   * @throws RangeError when the window's shape is not the link's or out is too short
   * @example
   * dop.spectra(window, candidates, rows); // rows[i * dop.bins + b]: candidate i's power in bin b
   */
  spectra(w: MovingWindow, points: readonly Point3[], out?: Float32Array | Float64Array, offset = 0): Float32Array | Float64Array {
    const { nSub, nRx, nTx, bins } = this;
    if (w.nSub !== nSub || w.nRx !== nRx || w.nTx !== nTx) throw new RangeError('DopplerSteerer: window shape differs from the link geometry');
    const np = points.length;
    if (!out) {
      if (this.rows.length < np * bins) this.rows = new Float64Array(np * bins);
      out = this.rows;
      offset = 0;
    }
    if (out.length < offset + np * bins) throw new RangeError('DopplerSteerer.spectra: out is too short');
    const D = nSub * nRx * nTx;
    const D2 = 2 * D;
    const first = this.beginWindow(w);
    const count = this.count;
    const data = w.data;
    const norm = 1 / D;
    if (np === 0) return out;
    const groups = Math.ceil(np / 4);
    if (this.steers.length < groups * 4 * D2) this.steers = new Float64Array(groups * 4 * D2);
    if (this.series.length < groups * 4 * 2 * bins) this.series = new Float64Array(groups * 4 * 2 * bins);
    const A = this.steers;
    const Y = this.series;
    // conj(a(g)) = conj(T) conj(R) per point, frame order; a group short of four is padded with zeros.
    A.fill(0, np * D2, groups * 4 * D2);
    for (let i = 0; i < np; i++) this.writeSteering(points[i]!, A, i * D2, 1);
    // y_i[s] = conj(a_i) . h_s / D, four points per pass over a snapshot.
    for (let g = 0; g < groups; g++) {
      const a0 = 4 * g * D2;
      const a1 = a0 + D2;
      const a2 = a1 + D2;
      const a3 = a2 + D2;
      const y0 = 4 * g * 2 * bins;
      // Points in this group (a short last group skips its padding).
      const m = Math.min(4, np - 4 * g);
      for (let s = 0; s < count; s++) {
        const base = 2 * (first + s) * D;
        let s0r = 0,
          s0i = 0,
          s1r = 0,
          s1i = 0,
          s2r = 0,
          s2i = 0,
          s3r = 0,
          s3i = 0;
        for (let c = 0; c < D2; c += 2) {
          const hr = data[base + c]!;
          const hi = data[base + c + 1]!;
          let ar = A[a0 + c]!;
          let ai = A[a0 + c + 1]!;
          s0r += ar * hr - ai * hi;
          s0i += ar * hi + ai * hr;
          if (m > 1) {
            ar = A[a1 + c]!;
            ai = A[a1 + c + 1]!;
            s1r += ar * hr - ai * hi;
            s1i += ar * hi + ai * hr;
            if (m > 2) {
              ar = A[a2 + c]!;
              ai = A[a2 + c + 1]!;
              s2r += ar * hr - ai * hi;
              s2i += ar * hi + ai * hr;
              if (m > 3) {
                ar = A[a3 + c]!;
                ai = A[a3 + c + 1]!;
                s3r += ar * hr - ai * hi;
                s3i += ar * hi + ai * hr;
              }
            }
          }
        }
        Y[y0 + 2 * s] = s0r * norm;
        Y[y0 + 2 * s + 1] = s0i * norm;
        Y[y0 + 2 * bins + 2 * s] = s1r * norm;
        Y[y0 + 2 * bins + 2 * s + 1] = s1i * norm;
        Y[y0 + 4 * bins + 2 * s] = s2r * norm;
        Y[y0 + 4 * bins + 2 * s + 1] = s2i * norm;
        Y[y0 + 6 * bins + 2 * s] = s3r * norm;
        Y[y0 + 6 * bins + 2 * s + 1] = s3i * norm;
      }
    }
    for (let i = 0; i < np; i++) {
      this.transform(Y, 2 * i * bins);
      const o = offset + i * bins;
      for (let b = 0; b < bins; b++) out[o + b] = this.power[b]!;
    }
    return out;
  }

  /**
   * {@link spectra} of the window projected on its principal components (the beamformer's, of this
   * window): with H ~ sum_j w_j q_j^H, each point's series is y[s] = sum_j (a^H w_j / |a|^2)
   * conj(q_j[s]), r contractions of D values per point instead of one per snapshot (64), then the
   * same taper, FFT and power as {@link spectrum}. The window's moving power
   * ({@link lastWindowPower}) is still taken from its snapshots, so a row sums to the share of the
   * whole window's power that the steering captures within the components. Equal to
   * {@link spectra} when the window's rank is at most r; otherwise what lies outside the
   * components (measured on the simulator: rows 2-5 % apart in L1, median, 40-50 % at the 90th
   * percentile, the weak candidates) is left out. No allocation once the buffers have grown.
   * @param w the window the components are of
   * @param points room metres
   * @param comp the window's components ({@link FloorBeamformer.principalComponents})
   * @returns points.length rows of bins values (the steerer's own buffer, overwritten by the next call)
   * @throws RangeError when the window's shape is not the link's or the components are of another window length
   * @example
   * bf.reduce(window);
   * dop.spectraFromComponents(window, candidates, bf.principalComponents!); // rows[i * dop.bins + b]
   */
  spectraFromComponents(w: MovingWindow, points: readonly Point3[], comp: PrincipalComponents): Float64Array {
    const { nSub, nRx, nTx, bins } = this;
    if (w.nSub !== nSub || w.nRx !== nRx || w.nTx !== nTx) throw new RangeError('DopplerSteerer: window shape differs from the link geometry');
    if (comp.snapshots !== w.snapshots) throw new RangeError('DopplerSteerer.spectraFromComponents: the components are of another window');
    const np = points.length;
    if (this.rows.length < np * bins) this.rows = new Float64Array(np * bins);
    const out = this.rows;
    const D = nSub * nRx * nTx;
    const D2 = 2 * D;
    const W = comp.snapshots;
    const first = this.beginWindow(w);
    const count = this.count;
    const norm = 1 / D;
    if (np === 0) return out;
    if (this.steers.length < D2) this.steers = new Float64Array(D2);
    if (this.series.length < 2 * bins) this.series = new Float64Array(2 * bins);
    const A = this.steers;
    const Y = this.series;
    const V = comp.vectors;
    const Q = comp.coefficients;
    const r = comp.count;
    for (let i = 0; i < np; i++) {
      // conj(a) of the point, then u_j = conj(a) . w_j / D and y[s] = sum_j u_j conj(q_j[s]).
      this.writeSteering(points[i]!, A, 0, 1);
      Y.fill(0, 0, 2 * bins);
      for (let j = 0; j < r; j++) {
        let ur = 0;
        let ui = 0;
        const vb = j * D2;
        for (let c = 0; c < D2; c += 2) {
          const ar = A[c]!;
          const ai = A[c + 1]!;
          const hr = V[vb + c]!;
          const hi = V[vb + c + 1]!;
          ur += ar * hr - ai * hi;
          ui += ar * hi + ai * hr;
        }
        ur *= norm;
        ui *= norm;
        const qb = 2 * j * W;
        for (let s = 0; s < count; s++) {
          const qr = Q[qb + 2 * (first + s)]!;
          const qi = -Q[qb + 2 * (first + s) + 1]!;
          Y[2 * s] = Y[2 * s]! + ur * qr - ui * qi;
          Y[2 * s + 1] = Y[2 * s + 1]! + ur * qi + ui * qr;
        }
      }
      this.transform(Y, 0);
      for (let b = 0; b < bins; b++) out[i * bins + b] = this.power[b]!;
    }
    return out;
  }

  /**
   * Index of the strongest bin of the last spectrum (the lowest index on a tie; 0 before any).
   * @returns an index into {@link frequencies} and {@link pathRates}
   * @example
   * const v = dop.pathRates[dop.peakBin()]; // m/s, negative when the path shortens
   */
  peakBin(): number {
    let best = 0;
    for (let i = 1; i < this.bins; i++) if (this.power[i]! > this.power[best]!) best = i;
    return best;
  }

  /**
   * The spectrum of the series y[from ..] (this.count snapshots, interleaved complex) into
   * this.power: taper, FFT, power per bin, fftshift; returns and keeps the total.
   */
  private transform(y: Float64Array, from: number): number {
    const { bins } = this;
    const count = this.count;
    const fin = this.fftIn;
    const fout = this.fftOut;
    const taper = this.taper;
    fin.fill(0);
    for (let s = 0; s < count; s++) {
      fin[2 * s] = y[from + 2 * s]! * taper[s]!;
      fin[2 * s + 1] = y[from + 2 * s + 1]! * taper[s]!;
    }
    this.fft.transform(fout, fin);
    const scale = this.taperSum2 > 0 ? 1 / (bins * this.taperSum2) : 0;
    const half = bins / 2;
    let total = 0;
    for (let b = 0; b < bins; b++) {
      const p = (fout[2 * b]! * fout[2 * b]! + fout[2 * b + 1]! * fout[2 * b + 1]!) * scale;
      // fftshift: FFT bin b (frequency b for b < N/2, b - N above) goes to index (b + N/2) mod N.
      this.power[b < half ? b + half : b - half] = p;
      total += p;
    }
    this.total = total;
    return total;
  }

  /**
   * Starts a window's spectra (both {@link spectra} and {@link spectraFromComponents}): the
   * snapshots used (the last `bins`, this.count), their taper, and the window's moving power over
   * them (this.windowPower), once per window.
   * @returns the index of the first snapshot used
   */
  private beginWindow(w: MovingWindow): number {
    const D = this.nSub * this.nRx * this.nTx;
    const D2 = 2 * D;
    const count = Math.min(w.snapshots, this.bins);
    const first = w.snapshots - count;
    this.count = count;
    this.setTaper(count);
    const taper = this.taper;
    const data = w.data;
    const norm = 1 / D;
    let energy = 0;
    for (let s = 0; s < count; s++) {
      const base = 2 * (first + s) * D;
      let e = 0;
      for (let c = base; c < base + D2; c++) e += data[c]! * data[c]!;
      energy += taper[s]! * taper[s]! * e * norm;
    }
    this.windowPower = this.taperSum2 > 0 ? energy / this.taperSum2 : 0;
    return first;
  }

  /** Hann taper over the `count` snapshots present (no zero at either end), and the sum of its squares. */
  private setTaper(count: number): void {
    if (count === this.taperCount) return;
    let s2 = 0;
    for (let s = 0; s < count; s++) {
      const v = 0.5 - 0.5 * Math.cos((2 * Math.PI * (s + 0.5)) / count);
      this.taper[s] = v;
      s2 += v * v;
    }
    this.taperCount = count;
    this.taperSum2 = s2;
  }
}

/**
 * exp(+j 2 pi cycles) into out at o: the conjugate of one leg's phase, the cycle count reduced to
 * its fraction first (d f / c is ~100 cycles).
 */
function legConj(cycles: number, out: Float64Array, o: number): void {
  const a = 2 * Math.PI * (cycles - Math.floor(cycles));
  out[o] = Math.cos(a);
  out[o + 1] = Math.sin(a);
}

/** How {@link steerCandidates} weighs each link's spectrum before summing (module comment). */
export type DopplerNormalisation = 'window' | 'spectrum' | 'none';

/** Options of {@link steerCandidates}. */
export interface SteerCandidatesOptions {
  /**
   * 'window' (default): each link's spectrum over the link's moving power in the window, so a row
   * sums to the captured shares of the links (each in [0, 1]); 'spectrum': each link's spectrum
   * over its own total (each link contributes one unit); 'none': raw powers summed.
   */
  readonly normalise?: DopplerNormalisation;
  /**
   * Per link (the steerers' order), its window's principal components: that link's rows come
   * from them ({@link DopplerSteerer.spectraFromComponents}); a link without (null, or the list
   * omitted) is steered over its snapshots.
   */
  readonly components?: ReadonlyArray<PrincipalComponents | null>;
}

/**
 * Doppler spectra of candidates fused over links: for candidate i, row i of out (out[i * bins ..
 * (i + 1) * bins - 1], fftshifted bins, frequencies and path rates as any steerer's) is the sum
 * over links of that link's spectrum steered to the candidate, normalised per the options. A link
 * whose window is null or undefined (no packets yet) is left out. No allocation.
 * @param steerers one per link, all with the same bins, rate and centre frequency
 * @param windows the links' current windows, in the same order
 * @param candidates where to steer (e.g. findCandidates' output; x, y, z in metres)
 * @param out candidates.length * bins values at least (rows overwritten; the rest untouched)
 * @param options normalisation
 * @returns out
 * @throws RangeError when the steerers disagree on bins, rate or centre frequency, the lists'
 *   lengths differ, or out is too short
 * @example
 * const rows = new Float32Array(maxCandidates * 64);
 * steerCandidates(steerers, windows, findCandidates(fused, grid), rows);
 * // rows[i * 64 + b]: candidate i's fused power at steerers[0].pathRates[b] m/s
 */
export function steerCandidates(
  steerers: readonly DopplerSteerer[],
  windows: readonly (MovingWindow | null | undefined)[],
  candidates: readonly Point3[],
  out: Float32Array,
  options: SteerCandidatesOptions = {},
): Float32Array {
  const mode = options.normalise ?? 'window';
  if (steerers.length !== windows.length) throw new RangeError('steerCandidates: one window per steerer');
  if (steerers.length === 0) {
    if (candidates.length > 0) throw new RangeError('steerCandidates: no links');
    return out;
  }
  const s0 = steerers[0]!;
  const bins = s0.bins;
  for (const s of steerers) {
    if (s.bins !== bins || s.rateHz !== s0.rateHz || s.geometry.centreHz !== s0.geometry.centreHz) {
      throw new RangeError('steerCandidates: the steerers differ in bins, rate or centre frequency');
    }
  }
  if (out.length < candidates.length * bins) throw new RangeError('steerCandidates: out is shorter than candidates x bins');
  out.fill(0, 0, candidates.length * bins);
  if (candidates.length === 0) return out;
  // Each link steered to every candidate in one pass over its window.
  for (let l = 0; l < steerers.length; l++) {
    const w = windows[l];
    if (!w) continue;
    const st = steerers[l]!;
    const comp = options.components?.[l] ?? null;
    const rows = comp ? st.spectraFromComponents(w, candidates, comp) : st.spectra(w, candidates);
    const windowScale = mode === 'window' ? (st.lastWindowPower > 0 ? 1 / st.lastWindowPower : 0) : 1;
    for (let i = 0; i < candidates.length; i++) {
      const base = i * bins;
      let scale = windowScale;
      if (mode === 'spectrum') {
        let total = 0;
        for (let b = 0; b < bins; b++) total += rows[base + b]!;
        scale = total > 0 ? 1 / total : 0;
      }
      for (let b = 0; b < bins; b++) out[base + b] = out[base + b]! + rows[base + b]! * scale;
    }
  }
  return out;
}
