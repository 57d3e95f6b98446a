/**
 * ESP32 CSI as text lines, in the two layouts found in the wild (detected per line):
 *
 * - Espressif esp-csi (`layout: 'esp-csi'`): 25 CSV columns
 *   `type,id,mac,rssi,rate,sig_mode,mcs,bandwidth,smoothing,not_sounding,aggregation,stbc,
 *   fec_coding,sgi,noise_floor,ampdu_cnt,channel,secondary_channel,local_timestamp,ant,sig_len,
 *   rx_state,len,first_word,data`, where `data` is a quoted JSON array `"[v,v,...]"` of exactly
 *   `len` int8 values. Files written by Python's csv module use CRLF and may start with that
 *   header line, which is skipped without being counted.
 * - ESP32-CSI-Tool (`layout: 'esp32-csi-tool'`): 25 comma fields
 *   `type,role,mac,rssi,rate,sig_mode,mcs,bandwidth,smoothing,not_sounding,aggregation,stbc,
 *   fec_coding,sgi,noise_floor,ampdu_cnt,channel,secondary_channel,local_timestamp,ant,sig_len,
 *   rx_state,real_time_set,real_timestamp,len` then `,[v v ... ]` space-separated. Its writer
 *   prints 128 values whatever `len` says, so the count is not checked against `len`.
 *
 * Values come in (imaginary, real) pairs (esp-csi README and csi_data_read_parse.py, CSI-Tool
 * parse_csi.py); frames hold them as (re, im). Values are as recorded: no scaling.
 */
import type { CsiFrame } from '../csi/frame.js';
import type { CsiDecoder, DecodeResult, DecodeStats, DecoderOptions } from '../csi/decoder.js';
import { decodeAll } from '../csi/decoder.js';

/** Longest line kept (bytes, without its line ending); longer lines are discarded and counted. */
export const ESP32_MAX_LINE = 64 * 1024;

/** Options of {@link Esp32Decoder}. */
export interface Esp32Options extends DecoderOptions {
  /**
   * Each `push` is a whole datagram of complete lines (UDP): a last line without a newline is
   * decoded at the end of the push instead of waiting for more bytes. Default false (a byte stream).
   */
  datagrams?: boolean;
}

export type Esp32Layout = 'esp-csi' | 'esp32-csi-tool';

/** Why a line produced no frame. */
export type Esp32SkipReason =
  /** Wrong column count, unparseable number, bad value list, value outside int8, odd count. */
  | 'malformed'
  /** esp-csi line whose value count differs from its `len`. */
  | 'length'
  /** A line longer than {@link ESP32_MAX_LINE}. */
  | 'too-long';

const ESP_CSI_COLUMNS = [
  'type',
  'id',
  'mac',
  'rssi',
  'rate',
  'sig_mode',
  'mcs',
  'bandwidth',
  'smoothing',
  'not_sounding',
  'aggregation',
  'stbc',
  'fec_coding',
  'sgi',
  'noise_floor',
  'ampdu_cnt',
  'channel',
  'secondary_channel',
  'local_timestamp',
  'ant',
  'sig_len',
  'rx_state',
  'len',
  'first_word',
] as const;

const CSI_TOOL_COLUMNS = [
  'type',
  'role',
  'mac',
  'rssi',
  'rate',
  'sig_mode',
  'mcs',
  'bandwidth',
  'smoothing',
  'not_sounding',
  'aggregation',
  'stbc',
  'fec_coding',
  'sgi',
  'noise_floor',
  'ampdu_cnt',
  'channel',
  'secondary_channel',
  'local_timestamp',
  'ant',
  'sig_len',
  'rx_state',
  'real_time_set',
  'real_timestamp',
  'len',
] as const;

/** Columns kept as text; every other column must be a number. */
const TEXT_COLUMNS = new Set(['type', 'mac', 'role']);

const NUMBER_RE = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const COMMA = 0x2c;
const QUOTE = 0x22;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const ZERO = 0x30;
const NINE = 0x39;

// ---------------------------------------------------------------------------------------------
// Subcarrier indices
//
// ESP-IDF's "Wi-Fi Channel State Information" table (api-guides/wifi.rst, classic MAC: ESP32,
// -S2, -S3, -C3) gives, per secondary channel / signal mode / bandwidth / STBC, the subcarrier
// index ranges of each training field in buffer order (indices relative to the centre of the
// whole channel, so of the 40 MHz channel when a secondary channel exists):
//
//   secondary none,  non-HT 20:  LLTF 0~31,-32~-1                                      128 bytes
//   secondary none,  HT 20:      LLTF 0~31,-32~-1; HT-LTF 0~31,-32~-1 [; STBC same]    256 / 384
//   secondary below, non-HT 20:  LLTF 0~63                                             128
//   secondary below, HT 20:      LLTF 0~63; HT-LTF 0~63 (STBC: 0~62; STBC-HT-LTF 0~62) 256 / 380
//   secondary below, HT 40:      LLTF 0~63; HT-LTF 0~63,-64~-1
//                                (STBC: HT-LTF and STBC-HT-LTF 0~60,-60~-1)           384 / 612
//   secondary above, non-HT 20:  LLTF -64~-1                                           128
//   secondary above, HT 20:      LLTF -64~-1; HT-LTF -64~-1 (STBC: -62~-1 twice)       256 / 376
//   secondary above, HT 40:      LLTF -64~-1; HT-LTF 0~63,-64~-1
//                                (STBC: HT-LTF and STBC-HT-LTF 0~60,-60~-1)           384 / 612
//
// A record's buffer is taken as a prefix of its configuration's column: that is exact when the
// whole buffer is present and for ESP32-CSI-Tool's 128-value (64-entry) truncation, which keeps
// the LLTF. It is not exact when the sender disabled LLTF (`lltf_en = false`), which the record
// does not say. Entries beyond the column (a buffer longer than the table allows) repeat the
// channel's LLTF ranges block by block; that part is a convention, not from the table.
// (SecondaryChannel encoding: 0 none, 1 above, 2 below, ESP-IDF wifi_second_chan_t.)

function span(from: number, to: number): number[] {
  const out: number[] = [];
  for (let k = from; k <= to; k++) out.push(k);
  return out;
}

const LLTF_NONE = [...span(0, 31), ...span(-32, -1)];
const LLTF_BELOW = span(0, 63);
const LLTF_ABOVE = span(-64, -1);
const HT40 = [...span(0, 63), ...span(-64, -1)];
const HT40_STBC = [...span(0, 60), ...span(-60, -1)];

function tableColumn(secondary: number, ht: boolean, cwb40: boolean, stbc: boolean): number[] {
  if (secondary === 1 || secondary === 2) {
    const lltf = secondary === 2 ? LLTF_BELOW : LLTF_ABOVE;
    if (!ht) return lltf;
    if (cwb40) return stbc ? [...lltf, ...HT40_STBC, ...HT40_STBC] : [...lltf, ...HT40];
    if (!stbc) return [...lltf, ...lltf];
    const short = secondary === 2 ? span(0, 62) : span(-62, -1);
    return [...lltf, ...short, ...short];
  }
  if (!ht) return LLTF_NONE;
  return stbc ? [...LLTF_NONE, ...LLTF_NONE, ...LLTF_NONE] : [...LLTF_NONE, ...LLTF_NONE];
}

const layoutCache = new Map<string, Int16Array>();

/**
 * Subcarrier indices for an ESP32 CSI buffer of `nSub` complex entries (see the table above).
 * Tables are shared between frames with the same layout: treat them as read-only.
 *
 * @param secondary `secondary_channel` (0 none, 1 above, 2 below; anything else is taken as none).
 * @param sigMode `sig_mode` (1 = HT; anything else is taken as non-HT).
 * @param cwb `bandwidth` / cwb (1 = 40 MHz).
 * @param stbc `stbc` (1 = STBC).
 * @param nSub Number of complex entries in the buffer.
 * @returns Index of each entry relative to the channel centre.
 * @example
 * esp32Subcarriers(0, 0, 0, 0, 64); // [0..31, -32..-1]
 */
export function esp32Subcarriers(secondary: number, sigMode: number, cwb: number, stbc: number, nSub: number): Int16Array {
  const sec = secondary === 1 || secondary === 2 ? secondary : 0;
  const ht = sigMode === 1;
  const key = `${sec}|${ht ? 1 : 0}|${cwb === 1 ? 1 : 0}|${stbc === 1 ? 1 : 0}|${nSub}`;
  let table = layoutCache.get(key);
  if (table) return table;
  const column = tableColumn(sec, ht, cwb === 1, stbc === 1);
  const lltf = sec === 2 ? LLTF_BELOW : sec === 1 ? LLTF_ABOVE : LLTF_NONE;
  table = new Int16Array(nSub);
  for (let i = 0; i < nSub; i++) {
    table[i] = i < column.length ? column[i]! : lltf[(i - column.length) % 64]!;
  }
  // Hostile input could vary nSub endlessly: keep the cache small.
  if (layoutCache.size >= 256) layoutCache.clear();
  layoutCache.set(key, table);
  return table;
}

// ---------------------------------------------------------------------------------------------

/**
 * Incremental decoder for ESP32 CSI text (a serial log, a CSV file, or UDP datagrams of lines).
 * Chunks may split lines and UTF-8 sequences anywhere; LF and CRLF endings both work. Lines that
 * are not CSI records or are malformed are skipped and counted (`stats.skipped`, `skipReasons`);
 * blank lines and an esp-csi header line (`type,...`) are skipped without being counted. Memory
 * stays bounded: a line longer than {@link ESP32_MAX_LINE} bytes is dropped. Nothing throws, not
 * even `end`: text has no structure that can be lost beyond one line.
 *
 * Frames: nRx = nTx = 1, nSub = values/2; deviceTime and clockUs = local_timestamp (µs), time 0
 * (stamped by the source); seq = index = count of records emitted; rssi [rssi]; noise =
 * noise_floor; bandwidthMhz 40 when the bandwidth (cwb) column is 1 else 20; meta holds every
 * named column as recorded (numbers as numbers) plus `layout` and, for esp-csi,
 * `first_word_invalid`.
 *
 * @example
 * const dec = new Esp32Decoder({ sourceId: 'serial:/dev/ttyUSB0' });
 * port.on('data', (chunk) => dec.push(chunk, emit));
 */
export class Esp32Decoder implements CsiDecoder {
  readonly format = 'esp32' as const;
  readonly stats: DecodeStats = { records: 0, skipped: 0, bytes: 0 };
  /** Skipped lines per reason. */
  readonly skipReasons: Record<Esp32SkipReason, number> = { malformed: 0, length: 0, 'too-long': 0 };

  private readonly opts: Esp32Options;
  private readonly text = new TextDecoder('utf-8');
  /** The partial line carried between chunks. */
  private readonly line = new Uint8Array(ESP32_MAX_LINE);
  private lineLen = 0;
  /** Inside an over-long line: drop bytes until the next LF. */
  private discarding = false;
  /** Parsed values of the current line; a value takes at least 2 bytes, so this always suffices. */
  private readonly values = new Int16Array(ESP32_MAX_LINE / 2 + 1);

  /** @param opts Source/environment ids and the datagram mode. */
  constructor(opts: Esp32Options = {}) {
    this.opts = opts;
  }

  /**
   * @param chunk Next bytes of text (any size, any split).
   * @param emit Receives each decoded frame.
   */
  push(chunk: Uint8Array, emit: (frame: CsiFrame) => void): void {
    this.stats.bytes += chunk.length;
    let p = 0;
    const n = chunk.length;
    while (p < n) {
      const lf = chunk.indexOf(LF, p);
      const stop = lf < 0 ? n : lf;
      if (this.discarding) {
        if (lf >= 0) this.discarding = false;
      } else if (this.lineLen + (stop - p) > ESP32_MAX_LINE) {
        this.skip('too-long');
        this.lineLen = 0;
        this.discarding = lf < 0;
      } else if (lf >= 0 && this.lineLen === 0) {
        // Whole line inside this chunk: parse it in place.
        this.parseLine(chunk, p, stop, emit);
      } else {
        this.line.set(chunk.subarray(p, stop), this.lineLen);
        this.lineLen += stop - p;
        if (lf >= 0) {
          const len = this.lineLen;
          this.lineLen = 0;
          this.parseLine(this.line, 0, len, emit);
        }
      }
      p = lf < 0 ? n : lf + 1;
    }
    if (this.opts.datagrams) this.flush(emit);
  }

  /**
   * Decodes a final line that has no line ending (counted as skipped if it is incomplete).
   *
   * @param emit Receives the last frame, if any.
   */
  end(emit: (frame: CsiFrame) => void): void {
    this.flush(emit);
  }

  private flush(emit: (frame: CsiFrame) => void): void {
    this.discarding = false;
    if (this.lineLen === 0) return;
    const len = this.lineLen;
    this.lineLen = 0;
    this.parseLine(this.line, 0, len, emit);
  }

  private skip(reason: Esp32SkipReason): void {
    this.stats.skipped++;
    this.skipReasons[reason]++;
  }

  /** Parses bytes [start, end) (no LF); emits a frame or counts a skip. */
  private parseLine(buf: Uint8Array, start: number, end: number, emit: (frame: CsiFrame) => void): void {
    // Trim the CR of CRLF and any surrounding blanks.
    while (end > start && (buf[end - 1] === CR || buf[end - 1] === SPACE || buf[end - 1] === TAB)) end--;
    while (start < end && (buf[start] === SPACE || buf[start] === TAB || buf[start] === CR)) start++;
    if (start === end) return;
    if (end - start >= 5 && buf[start] === 0x74 /* t */ && this.text.decode(buf.subarray(start, start + 5)) === 'type,') {
      return; // esp-csi header line
    }
    const open = buf.indexOf(OPEN, start);
    if (open < 0 || open >= end) return this.skip('malformed');
    // The fields end with `,` (CSI-Tool) or `,"` (esp-csi's quoted data column).
    const quoted = open > start && buf[open - 1] === QUOTE;
    const fieldsEnd = quoted ? open - 2 : open - 1;
    if (fieldsEnd <= start || buf[fieldsEnd] !== COMMA) return this.skip('malformed');
    const fields = this.text.decode(buf.subarray(start, fieldsEnd)).split(',');
    let layout: Esp32Layout;
    let columns: readonly string[];
    if (fields.length === ESP_CSI_COLUMNS.length) {
      layout = 'esp-csi';
      columns = ESP_CSI_COLUMNS;
    } else if (fields.length === CSI_TOOL_COLUMNS.length && !quoted) {
      layout = 'esp32-csi-tool';
      columns = CSI_TOOL_COLUMNS;
    } else return this.skip('malformed');

    const meta: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) {
      const name = columns[i]!;
      const raw = fields[i]!.trim();
      if (TEXT_COLUMNS.has(name)) meta[name] = raw;
      else {
        if (!NUMBER_RE.test(raw)) return this.skip('malformed');
        meta[name] = Number(raw);
      }
    }

    const count = this.parseValues(buf, open + 1, end, quoted);
    if (count < 0 || count === 0 || count % 2 !== 0) return this.skip('malformed');
    if (layout === 'esp-csi' && count !== meta.len) return this.skip('length');

    const v = this.values;
    const nSub = count / 2;
    const csi = new Float32Array(count);
    for (let i = 0; i < nSub; i++) {
      csi[2 * i] = v[2 * i + 1]!;
      csi[2 * i + 1] = v[2 * i]!;
    }
    if (layout === 'esp-csi') meta.first_word_invalid = meta.first_word === 1;
    meta.layout = layout;
    const cwb = meta.bandwidth as number;
    const index = this.stats.records++;
    emit({
      format: 'esp32',
      sourceId: this.opts.sourceId ?? 'unknown',
      environmentId: this.opts.environmentId ?? 'default',
      index,
      time: 0,
      deviceTime: meta.local_timestamp as number,
      clockUs: meta.local_timestamp as number,
      seq: index,
      rssi: [meta.rssi as number],
      noise: meta.noise_floor as number,
      channel: meta.channel as number,
      bandwidthMhz: cwb === 1 ? 40 : 20,
      nRx: 1,
      nTx: 1,
      nSub,
      subcarriers: esp32Subcarriers(meta.secondary_channel as number, meta.sig_mode as number, cwb, meta.stbc as number, nSub),
      csi,
      meta,
    });
  }

  /**
   * Reads int8 values from just after `[` up to `]` into `this.values`. Values are separated by
   * commas and/or blanks; after `]` only the closing quote (when quoted) may follow.
   *
   * @returns The number of values, or -1 when the list is malformed or a value is not an int8.
   */
  private parseValues(buf: Uint8Array, p: number, end: number, quoted: boolean): number {
    const out = this.values;
    let count = 0;
    let needSep = false;
    for (;;) {
      if (p >= end) return -1;
      let c = buf[p]!;
      if (c === SPACE || c === TAB || c === COMMA) {
        needSep = false;
        p++;
        continue;
      }
      if (c === CLOSE) {
        p++;
        break;
      }
      if (needSep) return -1;
      let neg = false;
      if (c === MINUS || c === PLUS) {
        neg = c === MINUS;
        if (++p >= end) return -1;
        c = buf[p]!;
      }
      if (c < ZERO || c > NINE) return -1;
      let val = 0;
      while (p < end && (c = buf[p]!) >= ZERO && c <= NINE) {
        val = val * 10 + (c - ZERO);
        if (val > 128) return -1;
        p++;
      }
      if (neg) val = -val;
      if (val > 127) return -1;
      out[count++] = val;
      needSep = true;
    }
    if (quoted) {
      if (p >= end || buf[p] !== QUOTE) return -1;
      p++;
    }
    return p === end ? count : -1;
  }
}

/**
 * Decodes a whole ESP32 CSI text file.
 *
 * @param bytes The file.
 * @param opts Source/environment ids.
 * @returns Frames and counts (ESP32 text never yields a DecodeError).
 */
export function decodeEsp32(bytes: Uint8Array, opts: Esp32Options = {}): DecodeResult {
  return decodeAll(new Esp32Decoder(opts), bytes);
}
