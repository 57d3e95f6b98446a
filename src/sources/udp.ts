import { createSocket, type Socket } from 'node:dgram';
import { Observable } from 'rxjs';
import type { CaptureFormat, CsiFrame } from '../csi/frame.js';
import type { DecodeStats } from '../csi/decoder.js';
import { createDatagramDecoder } from '../decoders/index.js';
import { stampTime } from './replayClock.js';

export interface UdpSourceOptions {
  host: string;
  port: number;
  format: CaptureFormat;
  environmentId?: string;
  /** Called with the socket's bound address once listening (port 0 picks a free port). */
  onListening?: (address: { address: string; port: number }) => void;
  /** Live counters: datagrams received and the decoder's records/skipped. */
  stats?: UdpStats;
}

export interface UdpStats extends DecodeStats {
  datagrams: number;
}

/**
 * Live CSI from UDP senders (ESP32 firmware printing CSI lines, Nexmon CSI's UDP packets, or
 * Intel 5300 / Atheros log records relayed over UDP). Each datagram goes through the format's
 * datagram decoder (`createDatagramDecoder`) and is decoded on its own: nothing of one datagram
 * carries over to the next, so a bad one costs only itself. Packets that are not CSI, of the wrong
 * size, truncated or with trailing bytes are skipped and counted, never fatal. Frames are stamped
 * with their arrival time.
 *
 * @param opts host, port (0 = any free port), format
 * @returns frames as they arrive; the socket closes on unsubscribe
 * @example
 * udpSource({ host: '0.0.0.0', port: 5500, format: 'esp32' }).subscribe(f => ...)
 */
export function udpSource(opts: UdpSourceOptions): Observable<CsiFrame> {
  return new Observable<CsiFrame>((subscriber) => {
    // The id names the bound port (port 0 picks one), so the decoder is made once bound.
    let decoder = createDatagramDecoder(opts.format, {
      sourceId: `udp://${opts.host}:${opts.port}`,
      environmentId: opts.environmentId ?? 'default',
    });
    const stats = opts.stats;
    let socket: Socket;
    try {
      socket = createSocket(opts.host.includes(':') ? 'udp6' : 'udp4');
    } catch (e) {
      subscriber.error(e);
      return;
    }
    let arrival = 0;
    const emit = (f: CsiFrame) => subscriber.next(stampTime(f, arrival));
    socket.on('message', (msg) => {
      arrival = Date.now();
      decoder.push(msg, emit);
      if (stats) {
        stats.datagrams++;
        stats.records = decoder.stats.records;
        stats.skipped = decoder.stats.skipped;
        stats.bytes = decoder.stats.bytes;
      }
    });
    socket.on('error', (e) => subscriber.error(e));
    socket.bind(opts.port, opts.host, () => {
      const a = socket.address();
      if (opts.port === 0) {
        decoder = createDatagramDecoder(opts.format, {
          sourceId: `udp://${opts.host}:${a.port}`,
          environmentId: opts.environmentId ?? 'default',
        });
      }
      opts.onListening?.(a);
    });
    return () => {
      try {
        socket.close();
      } catch {
        // already closed
      }
    };
  });
}
