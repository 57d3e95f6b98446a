import { createSocket, type Socket } from 'node:dgram';
import { Observable } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CaptureFormat } from '../decoders/registry.js';
import type { CsiDecoder, DecodeStats } from '../csi/decoder.js';
import { createDatagramDecoder } from '../decoders/index.js';
import { normaliseAddress } from './links.js';

/** One sender of a shared port: datagrams from `address` are on link `linkId`. */
export interface UdpSender {
  /** The sender's IP address (IPv4-mapped IPv6 is matched as IPv4). */
  address: string;
  /** The link its frames are on, `<tx>-<rx>`. */
  linkId: string;
  /** Short name put after `#` in its frames' `sourceId` (the receiver id). */
  name: string;
}

export interface UdpSourceOptions {
  host: string;
  port: number;
  format: CaptureFormat;
  environmentId?: string;
  /** The link every frame of this port is on (`<tx>-<rx>`); absent = the environment's primary link. */
  linkId?: string;
  /**
   * Several senders on this one port, each its own link and decoder, told apart by source address;
   * datagrams from any other address are dropped and counted in `stats.unlisted`. Excludes `linkId`.
   */
  senders?: readonly UdpSender[];
  /** Called with the socket's bound address once listening (port 0 picks a free port). */
  onListening?: (address: { address: string; port: number }) => void;
  /** Live counters: datagrams received and the decoders' records/skipped/bytes (summed over senders). */
  stats?: UdpStats;
}

export interface UdpStats extends DecodeStats {
  datagrams: number;
  /** Datagrams dropped because their sender is not in `senders` (only counted when senders are given). */
  unlisted?: number;
}

/** One decoder and the link its frames are on. */
interface Lane {
  decoder: CsiDecoder;
  linkId: string | undefined;
}

/**
 * Live CSI from UDP senders (ESP32 firmware printing CSI lines, Nexmon CSI's UDP packets, or
 * Intel 5300 / Atheros log records relayed over UDP). Each datagram goes through the format's
 * datagram decoder (`createDatagramDecoder`) and is decoded on its own: nothing of one datagram
 * carries over to the next, so a bad one costs only itself. Packets that are not CSI, of the wrong
 * size, truncated or with trailing bytes are skipped and counted, never fatal. Frames are stamped
 * with their arrival time.
 *
 * Links (DECISIONS "Sites with several radios"): with `linkId` every frame carries that link and
 * `sourceId` is `udp://HOST:PORT`; with `senders` each listed address has its own decoder, its
 * frames carry its link and `sourceId` is `udp://HOST:PORT#NAME`, and datagrams from unlisted
 * addresses are dropped (counted in `stats.unlisted`) before any decoding.
 *
 * @param opts host, port (0 = any free port), format, link or senders
 * @returns frames as they arrive; the socket closes on unsubscribe
 * @example
 * udpSource({ host: '0.0.0.0', port: 5500, format: 'esp32', linkId: 'tx-rx1' }).subscribe(f => ...)
 */
export function udpSource(opts: UdpSourceOptions): Observable<CsiFrame> {
  return new Observable<CsiFrame>((subscriber) => {
    const environmentId = opts.environmentId ?? 'default';
    const stats = opts.stats;
    // The ids name the bound port (port 0 picks one), so the decoders are made once bound.
    const lanesFor = (port: number) => {
      const base = `udp://${opts.host}:${port}`;
      const bySender = new Map<string, Lane>();
      for (const s of opts.senders ?? [])
        bySender.set(normaliseAddress(s.address), {
          decoder: createDatagramDecoder(opts.format, { sourceId: `${base}#${s.name}`, environmentId }),
          linkId: s.linkId,
        });
      const only: Lane = { decoder: createDatagramDecoder(opts.format, { sourceId: base, environmentId }), linkId: opts.linkId };
      return { bySender, only };
    };
    let lanes = lanesFor(opts.port);
    const bySenders = opts.senders !== undefined;
    let socket: Socket;
    try {
      socket = createSocket(opts.host.includes(':') ? 'udp6' : 'udp4');
    } catch (e) {
      subscriber.error(e);
      return;
    }
    let arrival = 0;
    let lane: Lane = lanes.only;
    // One copy per frame: the arrival time (where the record has no wall time) and the link.
    const emit = (f: CsiFrame) => {
      const linkId = lane.linkId;
      if (linkId === undefined) subscriber.next(f.time > 0 ? f : { ...f, time: arrival });
      else subscriber.next({ ...f, time: f.time > 0 ? f.time : arrival, linkId });
    };
    socket.on('message', (msg, rinfo) => {
      arrival = Date.now();
      if (stats) stats.datagrams++;
      if (bySenders) {
        const l = lanes.bySender.get(normaliseAddress(rinfo.address));
        if (!l) {
          if (stats) stats.unlisted = (stats.unlisted ?? 0) + 1;
          return;
        }
        lane = l;
      }
      const d = lane.decoder.stats;
      const records = d.records;
      const skipped = d.skipped;
      const bytes = d.bytes;
      lane.decoder.push(msg, emit);
      if (stats) {
        stats.records += d.records - records;
        stats.skipped += d.skipped - skipped;
        stats.bytes += d.bytes - bytes;
      }
    });
    socket.on('error', (e) => subscriber.error(e));
    socket.bind(opts.port, opts.host, () => {
      const a = socket.address();
      if (opts.port === 0) {
        lanes = lanesFor(a.port);
        lane = lanes.only;
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
