/**
 * The baseline of `bench/scale/fanout.ts` (forked by it): a plain `ws` WebSocketServer that
 * follows one subject of the bus with a plain NATS subscription and broadcasts each message's
 * bytes to its clients with a loop of `client.send`. The messages on that subject are the very
 * `pose_update`s the api node sent for the same frames (recorded from it), so the baseline sends
 * the same bytes and does nothing else: no decoding, no rendering, no auth, limits or slow-client
 * handling. It speaks just enough of the `/ws/pose` protocol for the benchmark's clients
 * (`connection_established`, `subscribe` -> `subscription_confirmed`).
 *
 * A bus message for it holds one pose_update per filter set, in the order `setup` gave the
 * filter sets: u32 count, u32 length of each, then the messages (little-endian); each goes to the
 * clients subscribed with that set's filters (read and normalised by the real protocol code).
 *
 * argv: NATS_URL SUBJECT. Commands: `setup`, `connections`, `stop`.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { connect } from 'nats';
import { WebSocketServer, type WebSocket } from 'ws';
import { readMessage } from '../../src/server/ws/protocol.js';
import { announce, serve } from '../stream/ipc.js';

/** What the baseline announces when it is up. */
export interface PlainReady {
  pid: number;
  url: string;
}

/** The key of a pose_updates filter set: its normalised filters as JSON. */
export function filterKey(filters: unknown): string {
  const m = readMessage({ type: 'subscribe', channel: 'pose_updates', filters });
  if (m.type !== 'subscribe') throw new Error('not a subscription');
  return JSON.stringify(m.request.filters);
}

/**
 * Packs one frame's pose_updates, one per filter set in `setup` order, into a bus message for
 * the baseline.
 */
export function packPlain(messages: readonly Buffer[]): Buffer {
  const head = Buffer.alloc(4 + 4 * messages.length);
  head.writeUInt32LE(messages.length, 0);
  messages.forEach((m, i) => head.writeUInt32LE(m.length, 4 + 4 * i));
  return Buffer.concat([head, ...messages]);
}

async function main(): Promise<void> {
  const [natsUrl, subject] = process.argv.slice(2);
  if (!natsUrl || !subject) throw new Error('usage: fanoutPlain.js NATS_URL SUBJECT');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 1024 * 1024, backlog: 4096 });
  await new Promise<void>((ok, fail) => {
    wss.once('listening', ok);
    wss.once('error', fail);
  });
  /** Filter set key -> its index in a bus message. */
  let keys = new Map<string, number>();
  /** Members of each filter set, by index. */
  let groups: Array<Set<WebSocket>> = [];
  const sockets = new Set<WebSocket>();
  let seq = 0;

  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('error', () => undefined);
    ws.on('close', () => {
      sockets.delete(ws);
      for (const g of groups) g.delete(ws);
    });
    ws.on('message', (data: Buffer) => {
      try {
        const parsed = JSON.parse(data.toString()) as { filters?: unknown };
        const key = filterKey(parsed.filters);
        const i = keys.get(key);
        if (i === undefined) throw new Error(`no filter set ${key} in this run`);
        groups[i]!.add(ws);
        ws.send(JSON.stringify({ type: 'subscription_confirmed', channel: 'pose_updates', subscription_id: `plain_${i}`, filters_applied: JSON.parse(key) }));
      } catch (e) {
        ws.send(JSON.stringify({ type: 'error', code: 'VALIDATION_ERROR', message: (e as Error).message }));
      }
    });
    ws.send(JSON.stringify({ type: 'connection_established', client_id: `plain_${++seq}`, server_time: new Date().toISOString() }));
  });

  const nc = await connect({ servers: natsUrl, name: 'csipose-bench-plain' });
  nc.subscribe(subject, {
    callback: (err, m) => {
      if (err) return;
      const b = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      const n = b.readUInt32LE(0);
      let o = 4 + 4 * n;
      for (let i = 0; i < n && i < groups.length; i++) {
        const len = b.readUInt32LE(4 + 4 * i);
        const msg = b.subarray(o, o + len);
        o += len;
        for (const ws of groups[i]!) ws.send(msg, { binary: false });
      }
    },
  });
  await nc.flush();

  serve({
    /** The filter sets of the run, in the order of the messages in each bus message. */
    setup(a: { keys: string[] }) {
      keys = new Map(a.keys.map((k, i) => [k, i]));
      groups = a.keys.map(() => new Set());
      return {};
    },
    connections: () => ({ connections: sockets.size }),
    async stop() {
      for (const ws of sockets) ws.terminate();
      await nc.close().catch(() => undefined);
      wss.close();
      setTimeout(() => process.exit(0), 20);
      return {};
    },
  });
  announce({ pid: process.pid, url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/` } satisfies PlainReady);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`fan-out baseline failed: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  });
}
