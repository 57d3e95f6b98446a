/** Noise settings of a {@link ConstantVelocityKalman}. */
export interface KalmanNoise {
  /**
   * Spectral density of the white-noise acceleration, in unit^2/s^3 (m^2/s^3 on the floor plan,
   * px^2/s^3 in the view): how quickly the filter lets the velocity change. Must be >= 0.
   */
  accelerationDensity: number;
  /** Standard deviation of a position measurement, in units (m or px). Must be > 0. */
  measurementStd: number;
  /** Standard deviation of the velocity before any evidence, in units/s. Must be > 0. */
  initialVelocityStd: number;
}

/**
 * Constant-velocity Kalman filter on a 2-D position.
 *
 * State `[x, y, vx, vy]`, covariance a row-major 4x4 Float64Array. The motion model is the
 * continuous white-noise acceleration model: over a step of `dt` seconds the position moves by
 * `v * dt` and each axis gains process noise `q * [[dt^3/3, dt^2/2], [dt^2/2, dt]]`, where `q` is
 * the acceleration spectral density. That form (rather than a per-step constant) keeps the filter
 * consistent when frames arrive at uneven intervals. Measurements are positions with independent
 * noise of standard deviation `measurementStd` on each axis.
 *
 * Everything is written out by hand on preallocated arrays: a predict or update allocates
 * nothing. The covariance update uses the Joseph form and is symmetrised after each step, so it
 * stays symmetric positive definite however long the filter runs.
 *
 * @example
 * const kf = new ConstantVelocityKalman({ accelerationDensity: 0.5, measurementStd: 0.1, initialVelocityStd: 2 });
 * kf.reset(1.0, 2.0);
 * kf.predict(0.1);
 * kf.update(1.1, 2.0);
 * kf.velocity; // { x: ~1, y: ~0 } after a few steps of a 1 m/s walk along x
 */
export class ConstantVelocityKalman {
  /** `[x, y, vx, vy]`; read freely, do not write. */
  readonly state = new Float64Array(4);
  /** Row-major 4x4 covariance of `state`; read freely, do not write. */
  readonly covariance = new Float64Array(16);
  private q: number;
  private r: number;
  private v0: number;
  private readonly scratch = new Float64Array(16);
  private readonly gain = new Float64Array(8);
  private readonly a = new Float64Array(16);

  /**
   * @param noise process and measurement noise (see {@link KalmanNoise})
   * @throws RangeError when a noise figure is out of range
   */
  constructor(noise: KalmanNoise) {
    checkNoise(noise);
    this.q = noise.accelerationDensity;
    this.r = noise.measurementStd * noise.measurementStd;
    this.v0 = noise.initialVelocityStd * noise.initialVelocityStd;
    this.reset(0, 0);
  }

  /**
   * Changes the noise settings; they apply from the next predict or update.
   * @param noise new settings
   * @throws RangeError when a noise figure is out of range
   */
  setNoise(noise: KalmanNoise): void {
    checkNoise(noise);
    this.q = noise.accelerationDensity;
    this.r = noise.measurementStd * noise.measurementStd;
    this.v0 = noise.initialVelocityStd * noise.initialVelocityStd;
  }

  /**
   * Starts over at a measured position with zero velocity: position variance is the measurement
   * variance, velocity variance `initialVelocityStd^2`, no correlation.
   * @param x measured x
   * @param y measured y
   */
  reset(x: number, y: number): void {
    const s = this.state;
    s[0] = x;
    s[1] = y;
    s[2] = 0;
    s[3] = 0;
    const P = this.covariance;
    P.fill(0);
    P[0] = this.r;
    P[5] = this.r;
    P[10] = this.v0;
    P[15] = this.v0;
  }

  /**
   * Advances the state by `dt` seconds: x += vx dt, y += vy dt, P = F P F' + Q.
   * @param dt seconds since the last predict; 0 leaves the filter unchanged, negative or
   *   non-finite values are treated as 0
   */
  predict(dt: number): void {
    if (!(dt > 0) || dt === Infinity) return;
    const s = this.state;
    s[0] += s[2] * dt;
    s[1] += s[3] * dt;
    const P = this.covariance;
    // A = F P: rows 0 and 1 gain dt times rows 2 and 3 (rows 2 and 3 are unchanged).
    for (let c = 0; c < 4; c++) {
      P[c] += dt * P[8 + c];
      P[4 + c] += dt * P[12 + c];
    }
    // A F': columns 0 and 1 gain dt times columns 2 and 3.
    for (let r = 0; r < 16; r += 4) {
      P[r] += dt * P[r + 2];
      P[r + 1] += dt * P[r + 3];
    }
    const q = this.q;
    const q3 = (q * dt * dt * dt) / 3;
    const q2 = (q * dt * dt) / 2;
    const q1 = q * dt;
    P[0] += q3;
    P[2] += q2;
    P[8] += q2;
    P[10] += q1;
    P[5] += q3;
    P[7] += q2;
    P[13] += q2;
    P[15] += q1;
    symmetrise(P);
  }

  /**
   * Corrects the state with a measured position. Non-finite measurements are ignored.
   *
   * Gain K = P H' S^-1 with S = H P H' + R (2x2, inverted in closed form); then
   * P = (I - K H) P (I - K H)' + K R K' (Joseph form).
   * @param zx measured x
   * @param zy measured y
   */
  update(zx: number, zy: number): void {
    if (!Number.isFinite(zx) || !Number.isFinite(zy)) return;
    const s = this.state;
    const P = this.covariance;
    const r = this.r;
    const s00 = P[0]! + r;
    const s01 = P[1]!;
    const s10 = P[4]!;
    const s11 = P[5]! + r;
    const det = s00 * s11 - s01 * s10;
    if (!(det > 0)) return;
    const i00 = s11 / det;
    const i01 = -s01 / det;
    const i10 = -s10 / det;
    const i11 = s00 / det;
    // K (4x2) = P[:, 0:2] S^-1.
    const K = this.gain;
    for (let row = 0; row < 4; row++) {
      const p0 = P[row * 4]!;
      const p1 = P[row * 4 + 1]!;
      K[row * 2] = p0 * i00 + p1 * i10;
      K[row * 2 + 1] = p0 * i01 + p1 * i11;
    }
    const y0 = zx - s[0]!;
    const y1 = zy - s[1]!;
    for (let row = 0; row < 4; row++) s[row] += K[row * 2]! * y0 + K[row * 2 + 1]! * y1;

    // A = I - K H: identity minus K in the first two columns.
    const A = this.a;
    A.fill(0);
    A[0] = 1;
    A[5] = 1;
    A[10] = 1;
    A[15] = 1;
    for (let row = 0; row < 4; row++) {
      A[row * 4] -= K[row * 2]!;
      A[row * 4 + 1] -= K[row * 2 + 1]!;
    }
    // T = A P.
    const T = this.scratch;
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++) {
        let acc = 0;
        for (let k = 0; k < 4; k++) acc += A[i * 4 + k]! * P[k * 4 + j]!;
        T[i * 4 + j] = acc;
      }
    // P = T A' + r K K'.
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++) {
        let acc = 0;
        for (let k = 0; k < 4; k++) acc += T[i * 4 + k]! * A[j * 4 + k]!;
        P[i * 4 + j] = acc + r * (K[i * 2]! * K[j * 2]! + K[i * 2 + 1]! * K[j * 2 + 1]!);
      }
    symmetrise(P);
  }

  /** Estimated position (a new object). */
  get position(): { x: number; y: number } {
    return { x: this.state[0]!, y: this.state[1]! };
  }

  /** Estimated velocity in units per second (a new object). */
  get velocity(): { x: number; y: number } {
    return { x: this.state[2]!, y: this.state[3]! };
  }
}

function checkNoise(noise: KalmanNoise): void {
  if (!(noise.accelerationDensity >= 0) || noise.accelerationDensity === Infinity)
    throw new RangeError(`Kalman: accelerationDensity must be finite and >= 0, got ${noise.accelerationDensity}`);
  if (!(noise.measurementStd > 0) || noise.measurementStd === Infinity)
    throw new RangeError(`Kalman: measurementStd must be finite and > 0, got ${noise.measurementStd}`);
  if (!(noise.initialVelocityStd > 0) || noise.initialVelocityStd === Infinity)
    throw new RangeError(`Kalman: initialVelocityStd must be finite and > 0, got ${noise.initialVelocityStd}`);
}

/** Rounding makes P[i][j] and P[j][i] drift apart; average them back together. */
function symmetrise(P: Float64Array): void {
  for (let i = 0; i < 4; i++)
    for (let j = i + 1; j < 4; j++) {
      const m = 0.5 * (P[i * 4 + j]! + P[j * 4 + i]!);
      P[i * 4 + j] = m;
      P[j * 4 + i] = m;
    }
}
