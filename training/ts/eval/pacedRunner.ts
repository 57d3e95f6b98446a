import type { ModelOutputs, PoseRunner, RunOptions } from '../../../src/model/runtime.js';

/**
 * A model wrapper that knows when a batch is in flight, so the feeder can wait for it instead of
 * letting the infer operator's queue overflow (it drops the oldest rows when it does). Used by
 * offline runs of the live pipeline: the accuracy benchmark and the studies.
 */
export class PacedRunner implements PoseRunner {
  inFlight = 0;
  pending: Promise<unknown> = Promise.resolve();
  constructor(private readonly inner: PoseRunner) {}
  get metadata() {
    return this.inner.metadata;
  }
  get featureDim() {
    return this.inner.featureDim;
  }
  get maxPersons() {
    return this.inner.maxPersons;
  }
  get contract() {
    return this.inner.contract;
  }
  run(features: Float32Array, n: number, opts?: RunOptions): Promise<ModelOutputs> {
    const p = this.inner.run(features, n, opts);
    this.inFlight++;
    const settle = () => {
      this.inFlight--;
    };
    // Registered before the operator's own handler, so the count is right when that one runs.
    p.then(settle, settle);
    this.pending = p.catch(() => undefined);
    return p;
  }
}
