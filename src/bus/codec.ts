/**
 * What crosses the bus between roles (docs/scale.md): CSI frames from ingest to workers, pose
 * frames from workers to the api and store nodes. Both decode to exactly what was encoded: a
 * worker fed from the bus computes what it would have computed in-process.
 *
 * A CSI frame is binary (it is the bulk: 100 frames a second per link, 2 KB each for 3x3x30): a
 * fixed little-endian header, its strings and `meta` as UTF-8 JSON, then the subcarrier indices
 * and the samples byte for byte. A message holds one frame, or several of one link in order (a
 * batch: what a source emitted within one turn of the event loop, e.g. a file replayed fast). A
 * pose frame is JSON (a few a second per environment), with its Float32Arrays as base64 of their
 * bytes, so that NaN and every float survive.
 */
import { endianness } from 'node:os';
import type { CsiFrame } from '../csi/frame.js';
import type { PersonPose, PoseFrame } from '../pose/types.js';

/** First bytes of an encoded CSI frame: 'C', 'F', the layout version. */
const CSI_MAGIC_0 = 0x43;
const CSI_MAGIC_1 = 0x46;
export const CSI_CODEC_VERSION = 1;

/**
 * Header bytes: magic (2), version (1), nRx (1), nTx (1), rssi count (1), nSub (2), then index,
 * time, deviceTime, clockUs, seq, noise, channel, bandwidthMhz as float64 (64), then five string
 * lengths as uint32 (format, sourceId, environmentId, linkId, meta JSON; 20).
 */
const HEADER = 8 + 64 + 20;
/** A string length meaning "absent" (linkId, meta). */
const ABSENT = 0xffffffff;

/** A bus message that is not what its subject says. */
export class BusCodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BusCodecError';
  }
}

// The samples are copied byte for byte; every machine this runs on is little-endian, and a
// big-endian one would need a swap here rather than silently wrong channels.
if (endianness() !== 'LE') throw new Error('src/bus/codec.ts assumes a little-endian machine');

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The UTF-8 bytes of a string a link's frames repeat (format, source, environment, link): encoded
 * again only when the string changes, so a batch of one link encodes each once.
 */
class Utf8Of {
  private last: string | undefined;
  private bytes = new Uint8Array(0);
  of(s: string): Uint8Array {
    if (s !== this.last) {
      this.bytes = utf8.encode(s);
      this.last = s;
    }
    return this.bytes;
  }
}
const FORMAT = new Utf8Of();
const SOURCE = new Utf8Of();
const ENVIRONMENT = new Utf8Of();
const LINK = new Utf8Of();

/** One frame's strings as UTF-8, in the order they are written (linkId and meta may be absent). */
type FrameStrings = [Uint8Array, Uint8Array, Uint8Array, Uint8Array | undefined, Uint8Array | undefined];

function stringsOf(f: CsiFrame): FrameStrings {
  return [
    FORMAT.of(f.format),
    SOURCE.of(f.sourceId),
    ENVIRONMENT.of(f.environmentId),
    f.linkId === undefined ? undefined : LINK.of(f.linkId),
    f.meta === undefined ? undefined : utf8.encode(JSON.stringify(f.meta)),
  ];
}

/** Bytes of a frame's encoding. */
function frameSize(f: CsiFrame, strings: FrameStrings): number {
  let size = HEADER + Math.min(255, f.rssi.length) * 8 + f.subcarriers.byteLength + f.csi.byteLength;
  for (const s of strings) size += s?.length ?? 0;
  return size;
}

/** Writes a frame's encoding into `out` at `at` (`dv` a view of the same bytes); returns its end. */
function writeFrame(f: CsiFrame, strings: FrameStrings, out: Uint8Array, dv: DataView, at: number): number {
  const nRssi = Math.min(255, f.rssi.length);
  out[at] = CSI_MAGIC_0;
  out[at + 1] = CSI_MAGIC_1;
  out[at + 2] = CSI_CODEC_VERSION;
  out[at + 3] = f.nRx;
  out[at + 4] = f.nTx;
  out[at + 5] = nRssi;
  dv.setUint16(at + 6, f.nSub, true);
  dv.setFloat64(at + 8, f.index, true);
  dv.setFloat64(at + 16, f.time, true);
  dv.setFloat64(at + 24, f.deviceTime, true);
  dv.setFloat64(at + 32, f.clockUs, true);
  dv.setFloat64(at + 40, f.seq, true);
  dv.setFloat64(at + 48, f.noise, true);
  dv.setFloat64(at + 56, f.channel, true);
  dv.setFloat64(at + 64, f.bandwidthMhz, true);
  for (let i = 0; i < strings.length; i++) dv.setUint32(at + 72 + i * 4, strings[i]?.length ?? ABSENT, true);
  let o = at + HEADER;
  for (let i = 0; i < nRssi; i++, o += 8) dv.setFloat64(o, f.rssi[i]!, true);
  for (const s of strings) {
    if (!s) continue;
    out.set(s, o);
    o += s.length;
  }
  out.set(new Uint8Array(f.subcarriers.buffer, f.subcarriers.byteOffset, f.subcarriers.byteLength), o);
  o += f.subcarriers.byteLength;
  out.set(new Uint8Array(f.csi.buffer, f.csi.byteOffset, f.csi.byteLength), o);
  return o + f.csi.byteLength;
}

/**
 * Encodes a CSI frame for the bus.
 * @param f the frame
 * @returns its bytes (one allocation)
 */
export function encodeCsiFrame(f: CsiFrame): Uint8Array {
  const strings = stringsOf(f);
  const out = new Uint8Array(frameSize(f, strings));
  writeFrame(f, strings, out, new DataView(out.buffer), 0);
  return out;
}

/** First bytes of a batch of encoded CSI frames: 'C', 'B', its layout version, 0, then the count (uint32). */
const BATCH_MAGIC_0 = 0x43;
const BATCH_MAGIC_1 = 0x42;
const BATCH_VERSION = 1;
const BATCH_HEADER = 8;

/**
 * Encodes CSI frames (of one link, in order) as one message: one frame as {@link encodeCsiFrame}
 * writes it, several as a batch (the header, then each frame's length as uint32 and its bytes),
 * written straight into the message's one buffer.
 * @param frames at least one frame
 * @returns the message's bytes
 */
export function encodeCsiFrames(frames: readonly CsiFrame[]): Uint8Array {
  if (frames.length === 1) return encodeCsiFrame(frames[0]!);
  const strings = frames.map(stringsOf);
  let size = BATCH_HEADER;
  for (let i = 0; i < frames.length; i++) size += 4 + frameSize(frames[i]!, strings[i]!);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  out[0] = BATCH_MAGIC_0;
  out[1] = BATCH_MAGIC_1;
  out[2] = BATCH_VERSION;
  dv.setUint32(4, frames.length, true);
  let o = BATCH_HEADER;
  for (let i = 0; i < frames.length; i++) {
    const end = writeFrame(frames[i]!, strings[i]!, out, dv, o + 4);
    dv.setUint32(o, end - o - 4, true);
    o = end;
  }
  return out;
}

/**
 * Decodes a message of CSI frames: one frame or a batch ({@link encodeCsiFrames}).
 * @param bytes the message
 * @returns its frames, in order
 * @throws BusCodecError for bytes that are neither
 */
export function decodeCsiFrames(bytes: Uint8Array): CsiFrame[] {
  if (bytes.length < BATCH_HEADER || bytes[0] !== BATCH_MAGIC_0 || bytes[1] !== BATCH_MAGIC_1) return [decodeCsiFrame(bytes)];
  if (bytes[2] !== BATCH_VERSION) throw new BusCodecError(`CSI batch codec version ${bytes[2]}, this build reads ${BATCH_VERSION}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = dv.getUint32(4, true);
  const out: CsiFrame[] = [];
  let o = BATCH_HEADER;
  for (let i = 0; i < count; i++) {
    if (o + 4 > bytes.length) throw new BusCodecError(`a CSI batch of ${count} frames ends after ${i}`);
    const n = dv.getUint32(o, true);
    if (o + 4 + n > bytes.length) throw new BusCodecError(`a CSI batch of ${count} frames ends inside frame ${i}`);
    out.push(decodeCsiFrame(bytes.subarray(o + 4, o + 4 + n)));
    o += 4 + n;
  }
  if (o !== bytes.length) throw new BusCodecError(`a CSI batch of ${count} frames has ${bytes.length - o} bytes left over`);
  return out;
}

/**
 * Decodes a CSI frame from the bus.
 * @param bytes what {@link encodeCsiFrame} wrote
 * @returns the frame (its arrays are copies: the message buffer may be reused)
 * @throws BusCodecError for bytes that are not an encoded frame of this version
 */
export function decodeCsiFrame(bytes: Uint8Array): CsiFrame {
  if (bytes.length < HEADER || bytes[0] !== CSI_MAGIC_0 || bytes[1] !== CSI_MAGIC_1) throw new BusCodecError('not an encoded CSI frame');
  if (bytes[2] !== CSI_CODEC_VERSION) throw new BusCodecError(`CSI frame codec version ${bytes[2]}, this build reads ${CSI_CODEC_VERSION}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const nRx = bytes[3]!;
  const nTx = bytes[4]!;
  const nRssi = bytes[5]!;
  const nSub = dv.getUint16(6, true);
  const num = (i: number) => dv.getFloat64(8 + i * 8, true);
  const lens = [0, 1, 2, 3, 4].map((i) => dv.getUint32(72 + i * 4, true));
  const strBytes = lens.reduce((a, n) => a + (n === ABSENT ? 0 : n), 0);
  const samples = nSub * nRx * nTx * 2;
  if (bytes.length !== HEADER + nRssi * 8 + strBytes + nSub * 2 + samples * 4)
    throw new BusCodecError(`an encoded CSI frame of ${bytes.length} bytes does not hold what its header says`);
  let o = HEADER;
  const rssi = new Array<number>(nRssi);
  for (let i = 0; i < nRssi; i++, o += 8) rssi[i] = dv.getFloat64(o, true);
  const text: Array<string | undefined> = lens.map((n) => {
    if (n === ABSENT) return undefined;
    const s = fromUtf8.decode(bytes.subarray(o, o + n));
    o += n;
    return s;
  });
  const subcarriers = new Int16Array(nSub);
  new Uint8Array(subcarriers.buffer).set(bytes.subarray(o, o + nSub * 2));
  o += nSub * 2;
  const csi = new Float32Array(samples);
  new Uint8Array(csi.buffer).set(bytes.subarray(o, o + samples * 4));
  const frame: CsiFrame = {
    format: text[0]!,
    sourceId: text[1]!,
    environmentId: text[2]!,
    ...(text[3] === undefined ? {} : { linkId: text[3] }),
    index: num(0),
    time: num(1),
    deviceTime: num(2),
    clockUs: num(3),
    seq: num(4),
    rssi,
    noise: num(5),
    channel: num(6),
    bandwidthMhz: num(7),
    nRx,
    nTx,
    nSub,
    subcarriers,
    csi,
    ...(text[4] === undefined ? {} : { meta: JSON.parse(text[4]) as Record<string, unknown> }),
  };
  return frame;
}

/** A Float32Array in a pose frame's JSON. */
interface F32 {
  $f32: string;
}

function isF32(v: unknown): v is F32 {
  return typeof v === 'object' && v !== null && typeof (v as F32).$f32 === 'string' && Object.keys(v).length === 1;
}

/** Non-finite numbers in a pose frame's JSON (JSON has none). */
interface NonFinite {
  $num: 'NaN' | 'Infinity' | '-Infinity';
}

function isNonFinite(v: unknown): v is NonFinite {
  return typeof v === 'object' && v !== null && typeof (v as NonFinite).$num === 'string' && Object.keys(v).length === 1;
}

/**
 * Encodes a pose frame for the bus.
 * @param f the frame
 * @returns UTF-8 JSON
 */
export function encodePoseFrame(f: PoseFrame): Uint8Array {
  return utf8.encode(
    JSON.stringify(f, (_k, v: unknown) => {
      if (v instanceof Float32Array) return { $f32: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') } satisfies F32;
      if (typeof v === 'number' && !Number.isFinite(v)) return { $num: String(v) as NonFinite['$num'] } satisfies NonFinite;
      return v;
    }),
  );
}

/** A Float32Array from the base64 of its bytes, decoded straight into it (a whole number of floats). */
function f32FromBase64(b64: string): Float32Array {
  const out = new Float32Array(Buffer.byteLength(b64, 'base64') >> 2);
  const written = Buffer.from(out.buffer).write(b64, 0, out.byteLength, 'base64');
  // Fewer bytes than the length promised only for a malformed string: the floats it did hold.
  return written === out.byteLength ? out : out.slice(0, written >> 2);
}

/**
 * Turns the encoded Float32Arrays and non-finite numbers of parsed JSON back into what they were,
 * in place (what a JSON.parse reviver would do, without calling one for every value).
 * @returns the value, or what replaces it
 */
function revive(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (typeof x === 'object' && x !== null) v[i] = revive(x);
    }
    return v;
  }
  const o = v as Record<string, unknown>;
  if (isF32(o)) return f32FromBase64(o.$f32);
  if (isNonFinite(o)) return Number(o.$num);
  for (const k in o) {
    const x = o[k];
    if (typeof x === 'object' && x !== null) o[k] = revive(x);
  }
  return o;
}

/**
 * Decodes a pose frame from the bus.
 * @param bytes what {@link encodePoseFrame} wrote
 * @returns the frame
 * @throws BusCodecError for bytes that are not a pose frame
 */
export function decodePoseFrame(bytes: Uint8Array): PoseFrame {
  let f: unknown;
  try {
    // Parsed without a reviver, then revived in one walk of the objects: a reviver is called for
    // every value, every number included, and costs the api node more than the parse itself.
    f = revive(JSON.parse(fromUtf8.decode(bytes)));
  } catch (e) {
    throw new BusCodecError(`not an encoded pose frame: ${(e as Error).message}`);
  }
  const p = f as Partial<PoseFrame> | null;
  if (typeof p !== 'object' || p === null || typeof p.frameId !== 'number' || typeof p.environmentId !== 'string' || !Array.isArray(p.persons))
    throw new BusCodecError('not an encoded pose frame: frameId, environmentId or persons missing');
  for (const person of p.persons as Array<Partial<PersonPose>>) {
    if (!(person.keypoints instanceof Float32Array) || !(person.bbox instanceof Float32Array))
      throw new BusCodecError('a person of an encoded pose frame has no keypoints or box');
  }
  return p as PoseFrame;
}
