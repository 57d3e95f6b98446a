import type { CaptureFormat } from '../csi/frame.js';
import { CAPTURE_FORMATS } from '../csi/frame.js';
import type { CsiDecoder, DecoderOptions } from '../csi/decoder.js';
import { Intel5300Decoder } from './intel5300.js';
import { AtherosDecoder } from './atheros.js';
import { NexmonPcapDecoder, NexmonUdpDecoder } from './nexmon.js';
import { Esp32Decoder } from './esp32.js';

/** True when `s` names a capture format. */
export function isCaptureFormat(s: string): s is CaptureFormat {
  return (CAPTURE_FORMATS as readonly string[]).includes(s);
}

/**
 * A decoder for a file or byte stream of the given format (Nexmon: a pcap file).
 * @param format one of intel5300, atheros, nexmon, esp32
 * @param opts source and environment ids stamped into every frame
 * @returns a fresh incremental decoder
 */
export function createStreamDecoder(format: CaptureFormat, opts: DecoderOptions = {}): CsiDecoder {
  switch (format) {
    case 'intel5300':
      return new Intel5300Decoder(opts);
    case 'atheros':
      return new AtherosDecoder(opts);
    case 'nexmon':
      return new NexmonPcapDecoder(opts);
    case 'esp32':
      return new Esp32Decoder(opts);
  }
}

/**
 * A decoder for datagrams as a UDP listener (or an MQTT subscriber) receives them: each `push` is
 * one datagram, decoded on its own, so a bad one never affects the next. Nexmon: one payload each;
 * ESP32: whole text lines (a missing final newline does not glue a datagram to the next one);
 * Intel 5300 and Atheros: whole log records, what a datagram does not hold completely is skipped.
 * @param format one of intel5300, atheros, nexmon, esp32
 * @param opts source and environment ids stamped into every frame
 * @returns a fresh datagram decoder
 */
export function createDatagramDecoder(format: CaptureFormat, opts: DecoderOptions = {}): CsiDecoder {
  switch (format) {
    case 'intel5300':
      return new Intel5300Decoder({ ...opts, datagrams: true });
    case 'atheros':
      return new AtherosDecoder({ ...opts, datagrams: true });
    case 'nexmon':
      return new NexmonUdpDecoder(opts);
    case 'esp32':
      return new Esp32Decoder({ ...opts, datagrams: true });
  }
}

/** Guesses a capture format from a file name; undefined when the name says nothing. */
export function formatFromFileName(path: string): CaptureFormat | undefined {
  const p = path.toLowerCase();
  if (p.endsWith('.pcap') || p.endsWith('.pcapng')) return 'nexmon';
  if (p.endsWith('.csv') || p.endsWith('.txt') || p.endsWith('.log')) return 'esp32';
  if (p.includes('ath')) return 'atheros';
  if (p.endsWith('.dat') || p.includes('csi')) return 'intel5300';
  return undefined;
}
