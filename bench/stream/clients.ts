/**
 * A client process of the fan-out benchmarks (forked by `bench/stream.ts` and
 * `bench/scale/fanout.ts`): a fleet of `ws`
 * clients that connect to one server, subscribe to `pose_updates` and record, per pose_update,
 * the frame it carries and the wall time it arrived. The message is never parsed: the frame id is
 * read from the bytes after `"frame_id":`, so the client's cost per message stays a fraction of
 * the server's (JSON.parse of ~100k messages/s would measure the client instead).
 *
 * Commands: `connect`, `report`, `count`, `cpu`, `close`, `stop`.
 */
import WebSocket from 'ws';
import { announce, now, serve } from './ipc.js';

/** What `connect` takes. */
export interface ConnectArgs {
  /** ws://... of the server (`/ws/pose` or the plain broadcast). */
  url: string;
  /** Global index of this process's first client, and how many it opens. */
  offset: number;
  count: number;
  /** Credentials (API keys), client i uses keys[i % keys.length]. */
  keys: string[];
  /** Distinct filter sets: client i subscribes with min_confidence (i % sets) / 100. */
  sets: number;
  /** Connection attempts in flight at once. */
  concurrency: number;
  /** Local addresses to connect from, client i from localAddresses[i % length] (spreads ephemeral ports). */
  localAddresses: string[];
}

/** What `report` returns: every pose_update received since `connect`. */
export interface Received {
  ids: Int32Array;
  times: Float64Array;
  /** Their sizes, bytes. */
  sizes: Int32Array;
  /** Connections that closed unasked since `connect`. */
  unexpectedCloses: number;
}

/** Safety net for one connection's handshake and subscription; not a measurement. */
const GIVE_UP_MS = 60_000;
const FRAME_ID = Buffer.from('"frame_id":');

const sockets: WebSocket[] = [];
let recIds: number[] = [];
let recTimes: number[] = [];
let recSizes: number[] = [];
let unexpectedCloses = 0;
let closing = false;

/** `{"type":"pos`: a pose_update (the check Fanout uses for dropped messages). */
function isPoseUpdate(b: Buffer): boolean {
  return b.length > 12 && b[9] === 0x70 && b[10] === 0x6f && b[11] === 0x73;
}

/** The integer after `"frame_id":`, or -1. */
function frameIdOf(b: Buffer): number {
  let i = b.indexOf(FRAME_ID);
  if (i < 0) return -1;
  i += FRAME_ID.length;
  let v = 0;
  let digits = 0;
  for (; i < b.length; i++, digits++) {
    const c = b[i]! - 0x30;
    if (c < 0 || c > 9) break;
    v = v * 10 + c;
  }
  return digits > 0 ? v : -1;
}

/** Records one received pose_update: its frame id and arrival time. */
function record(b: Buffer, t: number): void {
  const id = frameIdOf(b);
  if (id < 0) return;
  recIds.push(id);
  recTimes.push(t);
  recSizes.push(b.length);
}

/**
 * Opens client i: waits for `connection_established`, subscribes, waits for the confirmation.
 * From then on every pose_update it receives is recorded.
 */
function connectOne(a: ConnectArgs, i: number): Promise<void> {
  const key = a.keys[i % a.keys.length]!;
  const filters = { min_confidence: (i % a.sets) / 100, include_keypoints: true };
  const ws = new WebSocket(`${a.url}?token=${encodeURIComponent(key)}`, {
    perMessageDeflate: false,
    skipUTF8Validation: true,
    handshakeTimeout: GIVE_UP_MS,
    localAddress: a.localAddresses[i % a.localAddresses.length]!,
  });
  sockets.push(ws);
  return new Promise((ok, fail) => {
    let state: 'opening' | 'subscribing' | 'live' = 'opening';
    const timer = setTimeout(() => fail(new Error(`client ${i} not subscribed within ${GIVE_UP_MS} ms (${state})`)), GIVE_UP_MS);
    ws.on('message', (data: Buffer) => {
      const t = now();
      if (state === 'live') {
        if (isPoseUpdate(data)) record(data, t);
        return;
      }
      if (isPoseUpdate(data)) return; // a frame racing the confirmation: before the measurement anyway
      const text = data.toString();
      if (state === 'opening' && text.startsWith('{"type":"connection_established"')) {
        state = 'subscribing';
        ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters }));
      } else if (state === 'subscribing' && text.startsWith('{"type":"subscription_confirmed"')) {
        state = 'live';
        clearTimeout(timer);
        ok();
      } else if (text.startsWith('{"type":"error"')) {
        clearTimeout(timer);
        fail(new Error(`client ${i}: ${text.slice(0, 300)}`));
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      fail(new Error(`client ${i}: upgrade refused with ${res.statusCode}`));
    });
    ws.on('error', (e) => {
      clearTimeout(timer);
      fail(new Error(`client ${i}: ${e.message}`));
    });
    ws.on('close', () => {
      if (!closing) unexpectedCloses++;
    });
  });
}

serve({
  /** Opens this process's share of the clients, `concurrency` handshakes at a time. */
  async connect(a: ConnectArgs): Promise<{ ms: number }> {
    closing = false;
    unexpectedCloses = 0;
    recIds = [];
    recTimes = [];
    recSizes = [];
    const t0 = now();
    let next = 0;
    const worker = async () => {
      while (next < a.count) await connectOne(a, a.offset + next++);
    };
    await Promise.all(Array.from({ length: Math.min(a.concurrency, a.count) }, worker));
    return { ms: now() - t0 };
  },
  /**
   * Every pose_update received since `connect` (the window is cut out of it by frame id later);
   * with `clear`, since the last report so cleared (bench/scale/fanout.ts keeps its clients
   * connected and reports phase by phase).
   */
  report(a: { clear?: boolean } = {}): Received {
    const r = { ids: Int32Array.from(recIds), times: Float64Array.from(recTimes), sizes: Int32Array.from(recSizes), unexpectedCloses };
    if (a.clear) {
      recIds = [];
      recTimes = [];
      recSizes = [];
    }
    return r;
  },
  /** This process's CPU time so far (process.cpuUsage(), µs). */
  cpu: () => process.cpuUsage(),
  /** pose_updates recorded since the last report that cleared (cheap: no copy). */
  count: () => ({ count: recIds.length }),
  /** Closes every client (close handshake; connections still open after 30 s are dropped). */
  async close(): Promise<{ ms: number }> {
    closing = true;
    const t0 = now();
    const open = sockets.splice(0);
    await Promise.all(
      open.map(
        (ws) =>
          new Promise<void>((done) => {
            if (ws.readyState === WebSocket.CLOSED) return done();
            const t = setTimeout(() => {
              ws.terminate();
              done();
            }, 30_000);
            ws.once('close', () => {
              clearTimeout(t);
              done();
            });
            if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
            else ws.close(1000);
          }),
      ),
    );
    return { ms: now() - t0 };
  },
  stop() {
    for (const ws of sockets) ws.terminate();
    setTimeout(() => process.exit(0), 20);
    return {};
  },
});
announce({ pid: process.pid });
