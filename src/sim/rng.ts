/**
 * A small seeded pseudo-random number generator for the simulator.
 *
 * xoshiro128** (Blackman & Vigna, 2018): 128 bits of state, period 2^128 - 1, passes BigCrush, and
 * needs only 32-bit integer operations, which V8 runs without boxing. The state is seeded from a
 * 32-bit seed with splitmix32 so that neighbouring seeds (1, 2, 3, ...) give unrelated streams.
 *
 * Determinism is the point: the same seed gives the same sequence on every machine and Node
 * version (only `Math.imul`, shifts and IEEE double arithmetic are involved; `gaussian` uses
 * `Math.log`, `Math.sqrt`, `Math.cos`, `Math.sin`, which V8 implements with fdlibm ports whose
 * results do not depend on the CPU).
 */

/** splitmix32 step: a well-mixed 32-bit value from a 32-bit counter. */
function splitmix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  let z = x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * A 32-bit seed for an independent sub-stream, derived from a parent seed and a stream tag.
 * The simulator gives behaviour, impairments and packet loss their own streams so that switching
 * one impairment on or off does not change how people move.
 *
 * @param seed parent seed (any integer; taken modulo 2^32)
 * @param tag stream number
 * @returns the derived 32-bit unsigned seed
 * @example new Rng(deriveSeed(42, 3)) // stream 3 of seed 42
 */
export function deriveSeed(seed: number, tag: number): number {
  const a = splitmix32((seed >>> 0) ^ 0x5bd1e995);
  return splitmix32((a + Math.imul(tag + 1, 0x27d4eb2f)) | 0);
}

/**
 * The stream tag of a per-link random stream: link 0 (the one-link simulator, and the first link of
 * a site) keeps the plain tag, so a one-link site draws exactly what the one-link simulator always
 * drew; link l > 0 gets 1000 l + tag, clear of every other tag the simulator uses (1-7, 99,
 * 100 + person).
 *
 * @param link the link's place in the site (0-based, siteLinks order)
 * @param tag the stream's tag in the one-link simulator
 * @returns the tag to derive the link's stream from
 * @example new Rng(deriveSeed(seed, linkStreamTag(2, 1))) // the impairments of the third link
 */
export function linkStreamTag(link: number, tag: number): number {
  return link === 0 ? tag : 1000 * link + tag;
}

/**
 * Seeded PRNG: uniform, gaussian, integer range and choice.
 *
 * @example
 * const rng = new Rng(7);
 * rng.uniform(0.3, 1.5); // a walking speed
 * rng.gaussian(0, 1e-3); // 1 ms of timestamp jitter, in seconds
 */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  /** Second value of the last Box-Muller pair, waiting to be returned. */
  private spare = 0;
  private hasSpare = false;

  /**
   * @param seed any number; its low 32 bits select the stream
   */
  constructor(seed: number) {
    let x = seed >>> 0;
    this.s0 = splitmix32(x);
    x = (x + 0x9e3779b9) | 0;
    this.s1 = splitmix32(x);
    x = (x + 0x9e3779b9) | 0;
    this.s2 = splitmix32(x);
    x = (x + 0x9e3779b9) | 0;
    this.s3 = splitmix32(x);
    // An all-zero state would be a fixed point of xoshiro; splitmix32 never gives four zeros in a
    // row, but keep the guard so the invariant is local.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /**
   * Next raw 32-bit output.
   * @returns an unsigned integer in [0, 2^32)
   */
  nextUint32(): number {
    const s0 = this.s0;
    const s1 = this.s1;
    const s2 = this.s2;
    const s3 = this.s3;
    const m = Math.imul(s1, 5);
    const r = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    let n2 = s2 ^ s0;
    let n3 = s3 ^ s1;
    const n1 = s1 ^ n2;
    const n0 = s0 ^ n3;
    n2 ^= t;
    n3 = (n3 << 11) | (n3 >>> 21);
    this.s0 = n0;
    this.s1 = n1;
    this.s2 = n2;
    this.s3 = n3;
    return r;
  }

  /**
   * Uniform double in [lo, hi) with 53 random bits.
   * @param lo lower bound (default 0)
   * @param hi upper bound (default 1)
   * @returns a value in [lo, hi)
   */
  uniform(lo = 0, hi = 1): number {
    const a = this.nextUint32() >>> 5; // 27 bits
    const b = this.nextUint32() >>> 6; // 26 bits
    const u = (a * 67108864 + b) / 9007199254740992;
    return lo + (hi - lo) * u;
  }

  /**
   * Normal deviate by the Box-Muller transform; each pair of uniforms gives two deviates, the
   * second is cached for the next call.
   * @param mean mean (default 0)
   * @param sd standard deviation (default 1)
   * @returns a normally distributed value
   */
  gaussian(mean = 0, sd = 1): number {
    if (this.hasSpare) {
      this.hasSpare = false;
      return mean + sd * this.spare;
    }
    // 1 - uniform() is in (0, 1], so the log is finite.
    const r = Math.sqrt(-2 * Math.log(1 - this.uniform()));
    const phi = 2 * Math.PI * this.uniform();
    this.spare = r * Math.sin(phi);
    this.hasSpare = true;
    return mean + sd * r * Math.cos(phi);
  }

  /**
   * Uniform integer in [lo, hi], both ends included.
   * @param lo smallest value
   * @param hi largest value (>= lo)
   * @returns an integer in [lo, hi]
   */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.uniform() * (hi - lo + 1));
  }

  /**
   * One element of a non-empty array, each with equal probability.
   * @param items the candidates
   * @returns one of them
   */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.choice: empty array');
    return items[Math.floor(this.uniform() * items.length)]!;
  }

  /**
   * True with probability p.
   * @param p probability in [0, 1]
   * @returns the outcome of one Bernoulli trial
   */
  chance(p: number): boolean {
    return this.uniform() < p;
  }
}
