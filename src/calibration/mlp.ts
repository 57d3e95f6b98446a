/**
 * A multi-layer perceptron with hand-written forward and backward passes on Float32Arrays: dense
 * layers with ReLU between them and a linear last layer (the pose heads side by side; their
 * activations live in the loss, see loss.ts). Batches are row-major matrices, one row per sample.
 * Activations and gradients live in buffers sized for the largest batch seen, so a training step
 * allocates nothing.
 */
import { Rng } from '../sim/rng.js';
import { gemm, transpose } from './matmul.js';

/** One dense layer: y = x W + b, W row-major [in][out]. */
export interface Dense {
  readonly in: number;
  readonly out: number;
  readonly w: Float32Array;
  readonly b: Float32Array;
}

/**
 * The network and its gradient buffers.
 *
 * @example
 * const net = new Mlp([480, 256, 256, 520], new Rng(1));
 * const y = net.forward(x, 32);      // 32 x 520 (pre-activation)
 * net.backward(dy, 32);              // fills net.gw / net.gb
 */
export class Mlp {
  readonly sizes: readonly number[];
  readonly layers: Dense[];
  /** Gradients, same shapes as the layers' w and b. */
  readonly gw: Float32Array[];
  readonly gb: Float32Array[];
  /** acts[0] = input batch (a view), acts[i] = output of layer i - 1 (after ReLU except the last). */
  private acts: Float32Array[] = [];
  private grads: Float32Array[] = [];
  private tA = new Float32Array(0);
  private readonly tW: Float32Array[];
  private capacity = 0;
  /** Keep probability of the last forward pass (1 without dropout). */
  private keep = 1;

  /**
   * @param sizes widths from input to output, e.g. [480, 256, 256, 520] (at least two)
   * @param rng seeded generator for the He initialisation (weights N(0, 2 / in); the last layer
   *   N(0, 1 / in) scaled by 0.5 so the heads start near their biases); biases 0
   */
  constructor(sizes: readonly number[], rng: Rng) {
    if (sizes.length < 2 || sizes.some((s) => !Number.isInteger(s) || s < 1)) throw new RangeError('mlp: sizes must be >= 2 positive integers');
    this.sizes = [...sizes];
    this.layers = [];
    this.gw = [];
    this.gb = [];
    this.tW = [];
    for (let i = 0; i + 1 < sizes.length; i++) {
      const fanIn = sizes[i]!;
      const fanOut = sizes[i + 1]!;
      const last = i + 2 === sizes.length;
      const sd = last ? 0.5 * Math.sqrt(1 / fanIn) : Math.sqrt(2 / fanIn);
      const w = new Float32Array(fanIn * fanOut);
      for (let j = 0; j < w.length; j++) w[j] = rng.gaussian(0, sd);
      this.layers.push({ in: fanIn, out: fanOut, w, b: new Float32Array(fanOut) });
      this.gw.push(new Float32Array(fanIn * fanOut));
      this.gb.push(new Float32Array(fanOut));
      this.tW.push(new Float32Array(fanIn * fanOut));
    }
  }

  /** Input width. */
  get inDim(): number {
    return this.sizes[0]!;
  }

  /** Output width. */
  get outDim(): number {
    return this.sizes[this.sizes.length - 1]!;
  }

  private ensure(batch: number): void {
    if (batch <= this.capacity) return;
    this.capacity = batch;
    this.acts = this.sizes.map((s, i) => (i === 0 ? new Float32Array(0) : new Float32Array(batch * s)));
    this.grads = this.sizes.map((s) => new Float32Array(batch * s));
    this.tA = new Float32Array(batch * Math.max(...this.sizes));
  }

  /**
   * Forward pass; keeps the activations for `backward`.
   * @param x batch x inDim inputs
   * @param batch rows
   * @param dropout probability of dropping each hidden unit (training only; needs `rng`)
   * @param rng generator for the dropout masks
   * @returns batch x outDim outputs of the last (linear) layer; a view into a buffer the next call
   *   overwrites
   */
  forward(x: Float32Array, batch: number, dropout = 0, rng?: Rng): Float32Array {
    this.ensure(batch);
    const drop = dropout > 0 && rng !== undefined;
    const keep = 1 - dropout;
    this.keep = drop ? keep : 1;
    let input = x.subarray(0, batch * this.inDim);
    this.acts[0] = input;
    const n = this.layers.length;
    for (let i = 0; i < n; i++) {
      const L = this.layers[i]!;
      const y = this.acts[i + 1]!.subarray(0, batch * L.out);
      gemm(input, L.w, y, batch, L.in, L.out);
      const b = L.b;
      const relu = i + 1 < n;
      for (let r = 0; r < batch; r++) {
        const o = r * L.out;
        if (relu && drop) {
          // Inverted dropout: kept units are scaled by 1 / keep, so inference needs no change.
          for (let j = 0; j < L.out; j++) {
            const v = y[o + j]! + b[j]!;
            // Draw for every unit, so the mask does not depend on the activations.
            const kept = rng.uniform() < keep;
            y[o + j] = v > 0 && kept ? v / keep : 0;
          }
        } else if (relu) {
          for (let j = 0; j < L.out; j++) {
            const v = y[o + j]! + b[j]!;
            y[o + j] = v > 0 ? v : 0;
          }
        } else for (let j = 0; j < L.out; j++) y[o + j] += b[j]!;
      }
      input = y;
    }
    return input;
  }

  /**
   * Backward pass after `forward` on the same batch: fills gw and gb with the gradient of the loss
   * whose gradient with respect to the outputs is `dy`.
   * @param dy batch x outDim, dLoss/dOutput (already divided by the batch size for a mean loss)
   * @param batch rows
   */
  backward(dy: Float32Array, batch: number): void {
    const n = this.layers.length;
    let dz = dy.subarray(0, batch * this.outDim);
    for (let i = n - 1; i >= 0; i--) {
      const L = this.layers[i]!;
      const a = this.acts[i]!;
      // gW = A^T dZ
      const at = this.tA.subarray(0, L.in * batch);
      transpose(a, batch, L.in, at);
      gemm(at, dz, this.gw[i]!, L.in, batch, L.out);
      const gb = this.gb[i]!;
      gb.fill(0);
      for (let r = 0; r < batch; r++) {
        const o = r * L.out;
        for (let j = 0; j < L.out; j++) gb[j] += dz[o + j]!;
      }
      if (i === 0) break;
      // dA = dZ W^T, then through the ReLU of layer i - 1 (its output is a).
      const wt = this.tW[i]!;
      transpose(L.w, L.in, L.out, wt);
      const da = this.grads[i]!.subarray(0, batch * L.in);
      gemm(dz, wt, da, batch, L.out, L.in);
      // a = relu(z) * mask / keep: its derivative is 1 / keep where a > 0, else 0.
      const inv = 1 / this.keep;
      for (let j = 0; j < batch * L.in; j++) da[j] = a[j]! > 0 ? da[j]! * inv : 0;
      dz = da;
    }
  }
}

/** Adam with decoupled weight decay (AdamW), bias-corrected. */
export class AdamW {
  private readonly mw: Float32Array[];
  private readonly vw: Float32Array[];
  private readonly mb: Float32Array[];
  private readonly vb: Float32Array[];
  private t = 0;

  /**
   * @param net the network to update
   * @param beta1 first-moment decay (default 0.9)
   * @param beta2 second-moment decay (default 0.999)
   * @param eps denominator guard (default 1e-8)
   */
  constructor(
    private readonly net: Mlp,
    private readonly beta1 = 0.9,
    private readonly beta2 = 0.999,
    private readonly eps = 1e-8,
  ) {
    this.mw = net.layers.map((l) => new Float32Array(l.w.length));
    this.vw = net.layers.map((l) => new Float32Array(l.w.length));
    this.mb = net.layers.map((l) => new Float32Array(l.b.length));
    this.vb = net.layers.map((l) => new Float32Array(l.b.length));
  }

  /**
   * One update from the gradients in net.gw / net.gb.
   * @param lr learning rate
   * @param weightDecay decoupled decay of the weights (not the biases), per unit learning rate
   */
  step(lr: number, weightDecay: number): void {
    this.t++;
    const b1 = this.beta1;
    const b2 = this.beta2;
    const c1 = 1 / (1 - Math.pow(b1, this.t));
    const c2 = 1 / (1 - Math.pow(b2, this.t));
    const eps = this.eps;
    const upd = (p: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, wd: number) => {
      for (let i = 0; i < p.length; i++) {
        const gi = g[i]!;
        const mi = b1 * m[i]! + (1 - b1) * gi;
        const vi = b2 * v[i]! + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i]! - lr * ((mi * c1) / (Math.sqrt(vi * c2) + eps) + wd * p[i]!);
      }
    };
    this.net.layers.forEach((l, i) => {
      upd(l.w, this.net.gw[i]!, this.mw[i]!, this.vw[i]!, weightDecay);
      upd(l.b, this.net.gb[i]!, this.mb[i]!, this.vb[i]!, 0);
    });
  }
}
