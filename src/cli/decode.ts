import type { Writable } from 'node:stream';
import { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { isCaptureFormat, createStreamDecoder, formatList } from '../decoders/index.js';
import { DecodeError } from '../csi/decoder.js';
import type { CsiFrame } from '../csi/frame.js';
import { frameToJson } from '../render/json.js';
import { OutputDemand, flushed, readerGone } from './sinks/output.js';

/**
 * `csipose decode -f FORMAT FILE`; the formats its usage names are those of
 * src/decoders/registry.ts.
 */
export function decodeCommand(): Command {
  return new Command('decode')
    .description('print every CSI record of a capture as NDJSON, values exactly as recorded')
    .requiredOption('-f, --format <format>', formatList(' | '))
    .argument('<file>', 'capture file')
    .action(async (file: string, o: { format: string }) => {
      process.exitCode = await runDecode(o.format, file, process.stdout, process.stderr);
    });
}

/** Output is written in blocks of about this many characters. */
const BLOCK = 1 << 16;

/**
 * `csipose decode --format F FILE`: one JSON object per CSI record, in file order, values exactly as
 * recorded. The count of skipped records goes to stderr. Reading waits while `out` is full, so a
 * slow reader holds the decoding back instead of the process buffering the whole file; a reader
 * that goes away (`| head`) ends it quietly.
 * @returns the exit status: 0 when the file was read to its end and held records (or the reader
 *   went away), 1 when it could not be read (the message names the byte offset), held no record
 *   of the format, or the output failed, 2 for a bad format name
 */
export async function runDecode(format: string, file: string, out: Writable, err: Writable): Promise<number> {
  if (!isCaptureFormat(format)) {
    err.write(`csipose decode: unknown format "${format}" (${formatList(', ')})\n`);
    return 2;
  }
  const decoder = createStreamDecoder(format, { sourceId: `file:${file}` });
  const room = new OutputDemand();
  room.watch(out);
  let gone = false;
  let writeError: Error | undefined;
  const onError = (e: NodeJS.ErrnoException) => {
    if (readerGone(e)) gone = true;
    else writeError ??= e;
  };
  out.on('error', onError);
  let block = '';
  const emit = (f: CsiFrame) => {
    block += JSON.stringify(frameToJson(f)) + '\n';
  };
  /** Writes the block once it is big enough (or `all`), then waits while the reader is behind. */
  const write = async (all: boolean) => {
    if (block.length < (all ? 1 : BLOCK) || gone || writeError) return;
    out.write(block);
    block = '';
    if (room.paused) await new Promise<void>((resolve) => room.whenReady(resolve));
  };
  let status = 0;
  const stream = createReadStream(file, { highWaterMark: 1 << 16 });
  try {
    for await (const chunk of stream) {
      decoder.push(chunk as Buffer, emit);
      await write(false);
      if (gone || writeError) break;
    }
    if (!gone && !writeError) decoder.end(emit);
  } catch (e) {
    status = 1;
    if (e instanceof DecodeError) err.write(`csipose decode: ${e.message}\n`);
    else err.write(`csipose decode: cannot read ${file} at byte offset ${decoder.stats.bytes}: ${(e as Error).message}\n`);
  } finally {
    stream.destroy();
  }
  await write(true);
  await flushed(out);
  out.off('error', onError);
  if (writeError) {
    err.write(`csipose decode: cannot write the output: ${writeError.message}\n`);
    return 1;
  }
  // The reader has what it wanted; a count of what was read so far would only mislead.
  if (gone) return 0;
  if (status === 0 && decoder.stats.records === 0) {
    err.write(`csipose decode: no CSI records of format ${format} in ${file}\n`);
    status = 1;
  }
  err.write(`skipped ${decoder.stats.skipped} records\n`);
  return status;
}
