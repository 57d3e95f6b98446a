import { from, type OperatorFunction } from 'rxjs';
import { registry } from '../pipelines/index.js';
import { pipelineOperator } from '../src/engine/pipeline.js';
import { decode } from '../operators/decode.js';
import { Intel5300Decoder } from '../src/decoders/intel5300.js';
import { intelRecords, readSample, repeatBytes } from './captures.js';
import { simFrames } from './frames.js';
import { throughput, consume, type BenchResult } from './lib.js';

function count(src: ReturnType<typeof from<unknown[]>>, op: OperatorFunction<unknown, unknown>): number {
  let n = 0;
  let last: unknown;
  src.pipe(op).subscribe((v) => {
    n++;
    last = v;
  });
  consume(last);
  return n;
}

/**
 * The whole `sense` pipeline on 3x3x30 frames, in input frames per second on one core:
 * - `sense.pipeline`: raw Intel 5300 log bytes (the 3x3 records of the real capture, repeated) ->
 *   decode -> sanitize -> window 64/8 -> Doppler, i.e. decode included;
 * - `sense.pipeline.frames`: the same stages from already-decoded simulator frames.
 */
export async function run(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const sense = registry.pipelines.get('sense')!;
  const log = readSample('intel5300/log.all_csi.6.7.6');
  if (log) {
    const rec3x3 = intelRecords(log, (body, code) => code === 0xbb && body[8] === 3 && body[9] === 3);
    const bytes = repeatBytes(rec3x3, 12 << 20);
    const chunks: Uint8Array[] = [];
    for (let o = 0; o < bytes.length; o += 65536) chunks.push(bytes.subarray(o, o + 65536));
    let frames = 0;
    new Intel5300Decoder().push(bytes, () => frames++);
    const op = (s: ReturnType<typeof from<Uint8Array[]>>) =>
      s.pipe(
        decode(() => new Intel5300Decoder()),
        pipelineOperator(sense, registry, 'frame'),
      );
    const r = await throughput('sense.pipeline', 'frames/s', () => count(from(chunks) as never, op as never), {
      items: frames,
      rounds: 5,
    });
    r.note = `Intel 5300 3x3x30 log bytes in 64 KiB chunks -> decode, sanitize, window 64/8, doppler; ${frames} frames per round`;
    out.push(r);
  } else {
    out.push({ name: 'sense.pipeline', value: NaN, unit: 'frames/s', n: 0, note: 'skipped: ../shared/csi-samples not found' });
  }
  const N = 40_000;
  const frames = simFrames(N);
  const r2 = await throughput('sense.pipeline.frames', 'frames/s', () => count(from(frames), pipelineOperator(sense, registry)), {
    items: N,
    rounds: 5,
  });
  r2.note = 'decoded 3x3x30 simulator frames -> sanitize, window 64/8, doppler';
  out.push(r2);
  return out;
}
