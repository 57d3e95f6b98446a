/**
 * The table of capture formats: every format csipose can decode, with what the rest of the code
 * needs to know of it. It is the one place a format is written down (issue 20): the format names
 * of src/csi/frame.ts (`CaptureFormat`, `CAPTURE_FORMATS`), the decoder stages of pipeline strings
 * (operators/decode.ts), the `?format=` of source URIs and its messages (src/sources/uri.ts,
 * src/sources/mqtt.ts), the guess from a file name, and the command line's choices, usage and help
 * (src/cli/) are all read from here. Adding a format is one entry in `BUILTIN` below (its decoder
 * lives in a file of its own beside this one).
 *
 * Lookups read the live table, so a format added with `registerDecoder` (tests, or a build that
 * brings its own decoders) is known everywhere that asks after it was added; the operator registry
 * (operators/index.ts) makes its decoder stages when it loads, so register before loading it.
 */
import type { CsiDecoder, DecoderOptions } from '../csi/decoder.js';
import { Intel5300Decoder } from './intel5300.js';
import { AtherosDecoder } from './atheros.js';
import { NexmonPcapDecoder, NexmonUdpDecoder } from './nexmon.js';
import { Esp32Decoder } from './esp32.js';

/**
 * One hint that a file holds a format, tested against the lower-cased path. Hints are tried from
 * the strongest down, then in table order: a distinctive extension (`.pcap`) outranks a word in the
 * name (`ath`), which outranks an extension several formats share (`.dat`).
 */
export interface FileHint {
  /** Tested against the lower-cased path. */
  readonly pattern: RegExp;
  /** Higher is tried first. */
  readonly strength: number;
}

/** One capture format: its name, what it is, how to read it, and how its files are recognised. */
export interface DecoderEntry<Name extends string = string> {
  /** The name in `?format=`, in pipeline strings (the decoder stage) and on the command line. */
  readonly name: Name;
  /** What the format is, e.g. `Intel 5300 CSI Tool log_to_file logs` (the decoder stage's summary). */
  readonly description: string;
  /**
   * A fresh decoder for a file or byte stream of the format (records may span chunks).
   * @param opts source and environment ids stamped into every frame
   */
  readonly stream: (opts: DecoderOptions) => CsiDecoder;
  /**
   * A fresh decoder for datagrams (UDP, MQTT): each `push` is one datagram, decoded on its own, so
   * a bad one never affects the next.
   * @param opts source and environment ids stamped into every frame
   */
  readonly datagram: (opts: DecoderOptions) => CsiDecoder;
  /** How a file name gives the format away (src/sources/uri.ts guesses `file:PATH` from them). */
  readonly fileHints: readonly FileHint[];
  /**
   * What one MQTT message holds when one record fits a message (`line`, `payload`); absent for
   * formats whose records cannot come over MQTT (src/sources/mqtt.ts).
   */
  readonly message?: string;
}

/** The formats csipose ships, in the order lists and help show them. */
const BUILTIN = [
  {
    name: 'intel5300',
    description: 'Intel 5300 CSI Tool log_to_file logs',
    stream: (opts: DecoderOptions) => new Intel5300Decoder(opts),
    // Whole log records; what a datagram does not hold completely is skipped.
    datagram: (opts: DecoderOptions) => new Intel5300Decoder({ ...opts, datagrams: true }),
    // The weakest hints: Atheros logs are .dat files too, and `ath` in the name wins.
    fileHints: [
      { pattern: /\.dat$/, strength: 1 },
      { pattern: /csi/, strength: 1 },
    ],
  },
  {
    name: 'atheros',
    description: 'Atheros CSI Tool recv_csi logs (either byte order)',
    stream: (opts: DecoderOptions) => new AtherosDecoder(opts),
    datagram: (opts: DecoderOptions) => new AtherosDecoder({ ...opts, datagrams: true }),
    fileHints: [{ pattern: /ath/, strength: 2 }],
  },
  {
    name: 'nexmon',
    description: 'Nexmon CSI pcap captures',
    // A file is a pcap capture; a datagram is one Nexmon CSI UDP payload.
    stream: (opts: DecoderOptions) => new NexmonPcapDecoder(opts),
    datagram: (opts: DecoderOptions) => new NexmonUdpDecoder(opts),
    fileHints: [{ pattern: /\.pcap(ng)?$/, strength: 3 }],
    message: 'payload',
  },
  {
    name: 'esp32',
    description: 'ESP32 CSI text lines (esp-csi CSI_DATA or ESP32-CSI-Tool)',
    stream: (opts: DecoderOptions) => new Esp32Decoder(opts),
    // Whole text lines: a missing final newline does not glue a datagram to the next one.
    datagram: (opts: DecoderOptions) => new Esp32Decoder({ ...opts, datagrams: true }),
    fileHints: [{ pattern: /\.(csv|txt|log)$/, strength: 3 }],
    message: 'line',
  },
] as const;
// Checked apart from the initializer: CsiDecoder's format is a CsiFormat, which is made of the
// names above, so a `satisfies` on the initializer would make the table's type depend on itself.
const CHECKED: readonly DecoderEntry[] = BUILTIN;

/** A format csipose can decode: the name of an entry of the table. */
export type CaptureFormat = (typeof BUILTIN)[number]['name'];

/** A built-in format whose records fit one MQTT message each (an entry with a `message`). */
export type MessageFormat = Extract<(typeof BUILTIN)[number], { readonly message: string }>['name'];

/** The table, by name, in registration order (the built-in formats first). */
export const DECODERS: ReadonlyMap<string, DecoderEntry> = new Map(CHECKED.map((e) => [e.name, e]));

/**
 * Every format name in table order; the same array for the life of the process, kept up to date
 * by `registerDecoder` (src/config/validate.ts checks radios against it).
 */
export const CAPTURE_FORMATS: readonly CaptureFormat[] = BUILTIN.map((e) => e.name);

/**
 * Adds a format to the table (what a test, or a build with decoders of its own, uses instead of
 * editing `BUILTIN`). Every list, message and lookup that reads the table then knows it; the
 * operator registry only when it is loaded afterwards.
 * @param entry the format; its name must be new
 * @returns a function that takes the format out again
 * @throws Error when a format of that name exists
 * @example const unregister = registerDecoder({ name: 'fake', description: 'test bytes', stream, datagram: stream, fileHints: [] })
 */
export function registerDecoder(entry: DecoderEntry): () => void {
  if (DECODERS.has(entry.name)) throw new Error(`capture format "${entry.name}" is already registered`);
  (DECODERS as Map<string, DecoderEntry>).set(entry.name, entry);
  (CAPTURE_FORMATS as string[]).push(entry.name);
  return () => {
    if (DECODERS.get(entry.name) !== entry) return;
    (DECODERS as Map<string, DecoderEntry>).delete(entry.name);
    (CAPTURE_FORMATS as string[]).splice(CAPTURE_FORMATS.indexOf(entry.name as CaptureFormat), 1);
  };
}

/** True when `s` names a capture format. */
export function isCaptureFormat(s: string): s is CaptureFormat {
  return DECODERS.has(s);
}

/** The entry of a known format (a name that passed `isCaptureFormat`). */
function entryOf(format: CaptureFormat): DecoderEntry {
  const e = DECODERS.get(format);
  if (!e) throw new Error(`unknown capture format "${format}" (formats: ${formatList(', ')})`);
  return e;
}

/**
 * A decoder for a file or byte stream of the given format (Nexmon: a pcap file).
 * @param format a name of the table, e.g. intel5300
 * @param opts source and environment ids stamped into every frame
 * @returns a fresh incremental decoder
 */
export function createStreamDecoder(format: CaptureFormat, opts: DecoderOptions = {}): CsiDecoder {
  return entryOf(format).stream(opts);
}

/**
 * A decoder for datagrams as a UDP listener (or an MQTT subscriber) receives them: each `push` is
 * one datagram, decoded on its own, so a bad one never affects the next. Nexmon: one payload each;
 * ESP32: whole text lines; Intel 5300 and Atheros: whole log records, what a datagram does not hold
 * completely is skipped.
 * @param format a name of the table, e.g. esp32
 * @param opts source and environment ids stamped into every frame
 * @returns a fresh datagram decoder
 */
export function createDatagramDecoder(format: CaptureFormat, opts: DecoderOptions = {}): CsiDecoder {
  return entryOf(format).datagram(opts);
}

/**
 * Guesses a capture format from a file name by the table's file hints; undefined when the name
 * says nothing.
 * @example formatFromFileName('rx1.pcap') // 'nexmon'; formatFromFileName('ath_csi.dat') // 'atheros'
 */
export function formatFromFileName(path: string): CaptureFormat | undefined {
  const p = path.toLowerCase();
  let best: { format: string; strength: number } | undefined;
  for (const e of DECODERS.values())
    for (const h of e.fileHints) if ((best === undefined || h.strength > best.strength) && h.pattern.test(p)) best = { format: e.name, strength: h.strength };
  return best?.format as CaptureFormat | undefined;
}

/**
 * The format names joined for a message or usage line.
 * @param sep e.g. `', '` (`intel5300, atheros, nexmon, esp32`) or `'|'` (`intel5300|atheros|nexmon|esp32`)
 * @param formats which formats (default every one)
 */
export function formatList(sep: string, formats: Iterable<string> = DECODERS.keys()): string {
  return [...formats].join(sep);
}

/** The formats whose records fit one MQTT message each (an entry with a `message`). */
export function mqttFormats(): DecoderEntry[] {
  return [...DECODERS.values()].filter((e) => e.message !== undefined);
}
