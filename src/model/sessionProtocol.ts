/**
 * What `WorkerSession` (runtime.ts) and its worker thread (sessionWorker.ts) say to each other, and
 * the descriptions of inputs and outputs both sides of a session share.
 *
 * Protocol: the main thread posts one `load` (the model's bytes transferred) and waits for `loaded`
 * or `loadError`; then any number of `run`s, each with an id, answered by `result` (the outputs'
 * buffers transferred) or `runError` with the same id, in any order. A session is released by
 * terminating the worker.
 */
import type { InferenceSession } from 'onnxruntime-node';

/** Input or output description, as onnxruntime reports it. */
export interface ValueInfo {
  name: string;
  isTensor: boolean;
  type?: string;
  /** Sizes and symbolic dimensions; empty when the model does not declare a shape. */
  shape?: ReadonlyArray<number | string>;
}

/** One output tensor of a run, as onnxruntime gives it. */
export interface RawOutput {
  data: unknown;
  dims: readonly number[];
  type: string;
}

/** One float32 input tensor as it crosses to the worker. */
export interface WireFeed {
  name: string;
  data: Float32Array;
  dims: number[];
}

/** Main thread to worker. */
export type ToWorker = { type: 'load'; bytes: Uint8Array; options: InferenceSession.SessionOptions } | { type: 'run'; id: number; feeds: WireFeed[] };

/** Worker to main thread. */
export type FromWorker =
  | { type: 'loaded'; inputs: ValueInfo[]; outputs: ValueInfo[] }
  | { type: 'loadError'; message: string }
  | { type: 'result'; id: number; outputs: Record<string, RawOutput> }
  | { type: 'runError'; id: number; message: string };

/**
 * A session's inputs or outputs as plain, structured-clonable descriptions.
 * @param list `session.inputMetadata` or `session.outputMetadata`
 * @returns one ValueInfo per entry, shapes copied
 */
export function describe(list: readonly InferenceSession.ValueMetadata[]): ValueInfo[] {
  return list.map((m) => (m.isTensor ? { name: m.name, isTensor: true, type: m.type, shape: [...m.shape] } : { name: m.name, isTensor: false }));
}
