import type { Writable } from 'node:stream';
import { createReadStream } from 'node:fs';
import { isCaptureFormat, createStreamDecoder } from '../decoders/index.js';
import { DecodeError } from '../csi/decoder.js';
import type { CsiFrame } from '../csi/frame.js';
import { frameToJson } from '../csi/json.js';

/** Output is written in blocks of about this many characters. */
const BLOCK = 1 << 16;

/**
 * `csipose decode --format F FILE`: one JSON object per CSI record, in file order, values exactly as
 * recorded. The count of skipped records goes to stderr.
 * @returns the exit status: 0 when the file was read to its end, 1 when it could not be (the
 *   message names the byte offset), 2 for a bad format name
 */
export async function runDecode(format: string, file: string, out: Writable, err: Writable): Promise<number> {
  if (!isCaptureFormat(format)) {
    err.write(`csipose decode: unknown format "${format}" (intel5300, atheros, nexmon, esp32)\n`);
    return 2;
  }
  const decoder = createStreamDecoder(format, { sourceId: `file:${file}` });
  let block = '';
  const emit = (f: CsiFrame) => {
    block += JSON.stringify(frameToJson(f)) + '\n';
    if (block.length >= BLOCK) {
      out.write(block);
      block = '';
    }
  };
  let status = 0;
  try {
    const stream = createReadStream(file, { highWaterMark: 1 << 16 });
    for await (const chunk of stream) decoder.push(chunk as Buffer, emit);
    decoder.end(emit);
  } catch (e) {
    status = 1;
    if (e instanceof DecodeError) err.write(`csipose decode: ${e.message}\n`);
    else err.write(`csipose decode: cannot read ${file} at byte offset ${decoder.stats.bytes}: ${(e as Error).message}\n`);
  }
  if (block) out.write(block);
  err.write(`skipped ${decoder.stats.skipped} records\n`);
  return status;
}
