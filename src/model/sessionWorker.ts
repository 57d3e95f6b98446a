/**
 * The worker thread of `WorkerSession` (runtime.ts): holds one onnxruntime-node session and runs
 * the batches it is sent, so that inference never blocks the main thread's event loop. Protocol:
 * sessionProtocol.ts.
 *
 * Started from the compiled file (`dist/src/model/sessionWorker.js`); runtime.ts finds it.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import { describe, type FromWorker, type RawOutput, type ToWorker } from './sessionProtocol.js';

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Answers `load` and `run` messages on `port` until the thread is terminated.
 * @param port the worker's `parentPort`
 */
function serve(port: MessagePort): void {
  let session: ort.InferenceSession | null = null;
  const reply = (m: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

  const handle = async (m: ToWorker): Promise<void> => {
    if (m.type === 'load') {
      try {
        session = await ort.InferenceSession.create(m.bytes, m.options);
        reply({ type: 'loaded', inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) });
      } catch (e) {
        reply({ type: 'loadError', message: message(e) });
      }
      return;
    }
    let out: ort.InferenceSession.ReturnType;
    try {
      if (!session) throw new Error('no model loaded');
      const inputs: Record<string, ort.Tensor> = {};
      for (const f of m.feeds) inputs[f.name] = new ort.Tensor('float32', f.data, f.dims);
      out = await session.run(inputs);
    } catch (e) {
      reply({ type: 'runError', id: m.id, message: message(e) });
      return;
    }
    const outputs: Record<string, RawOutput> = {};
    const buffers = new Set<ArrayBuffer>();
    for (const [name, t] of Object.entries(out)) {
      outputs[name] = { data: t.data, dims: Array.from(t.dims), type: t.type };
      const buffer = ArrayBuffer.isView(t.data) ? t.data.buffer : undefined;
      if (buffer instanceof ArrayBuffer) buffers.add(buffer);
    }
    try {
      reply({ type: 'result', id: m.id, outputs }, [...buffers]);
    } catch {
      // A buffer that cannot be transferred (one onnxruntime still holds): send copies instead.
      reply({ type: 'result', id: m.id, outputs });
    }
  };
  // A failure the handler did not answer (e.g. posting the reply) still gets an answer, never an unhandled rejection.
  port.on('message', (m: ToWorker) => {
    handle(m).catch((e: unknown) => {
      try {
        reply(m.type === 'load' ? { type: 'loadError', message: message(e) } : { type: 'runError', id: m.id, message: message(e) });
      } catch {
        // The port itself failed: there is no one left to answer.
      }
    });
  });
}

if (parentPort) serve(parentPort);
