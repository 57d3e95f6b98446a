import { Subscription } from 'rxjs';

/**
 * A consumer's say in how fast a source emits: backpressure for pipelines whose source can wait.
 *
 * An Observable cannot be paused from downstream, so a sink that writes to a slow pipe or file
 * would otherwise buffer without bound (a `--fast` simulator run piped into a slow reader grew to
 * 1.1 GB and lost its tail). Sources that can wait without losing anything (the simulator, file
 * replay, file and stdin bytes) read `paused` before each item and, while it is set, wait for
 * `whenReady` instead of emitting. Live sources (UDP, MQTT) cannot hold their senders back and
 * ignore it; sinks bound what they buffer for those.
 */
export interface Demand {
  /** True while the consumer wants no more items. Read once per item: keep it cheap. */
  readonly paused: boolean;
  /**
   * Calls `fn` once, when the consumer takes items again (or cannot take any more at all, so that
   * the source runs on to be unsubscribed); never synchronously.
   * @returns a function that cancels the wait
   */
  whenReady(fn: () => void): () => void;
}

/**
 * Waits for `demand` as a Subscription, so a source can keep it where it keeps its pending timer.
 * @param demand the consumer's demand
 * @param fn what to run once it is ready
 * @returns a subscription whose unsubscription cancels the wait
 */
export function whenReady(demand: Demand, fn: () => void): Subscription {
  return new Subscription(demand.whenReady(fn));
}
