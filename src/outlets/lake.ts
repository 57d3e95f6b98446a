import { Lake, type LakeOptions } from '../store/lake.js';
import type { Store } from '../store/store.js';
import type { Outlet, OutletStreams } from './outlet.js';

/**
 * The Parquet lake's lifecycle as an outlet: it reads the store rather than a stream, but starts
 * and stops with the others, and must stop (its running pass finished) before the store closes.
 * The lake itself, which writes each closed hour of the time tables once, is src/store/lake.ts.
 */
export class LakeOutlet implements Outlet {
  readonly name = 'lake';
  readonly lake: Lake;
  private unreport: (() => void) | undefined;

  /**
   * @param store the service's store; `options.dir` must be among its allowed folders
   * @param options the lake's folder, retention and error callback
   */
  constructor(store: Store, options: LakeOptions) {
    // Finds the hour files already written; no pass runs before `start`.
    this.lake = new Lake(store, options);
  }

  start(streams: OutletStreams): void {
    this.unreport = streams.report('lake', () => ({ ...this.lake.report() }));
    this.lake.start();
  }

  /** Stops the passes and waits for a running one. */
  async close(): Promise<void> {
    this.unreport?.();
    this.unreport = undefined;
    await this.lake.close();
  }
}
