/**
 * A real WebSocket client for `/ws/pose` tests (the `ws` package: Node 20 has no global
 * WebSocket). It keeps every message it receives, in order, and lets a test wait for the next one
 * that matches, send JSON, stop reading (a client that never reads), and see how it was closed.
 *
 * @example
 * const c = await WsClient.connect(s.port, { token });
 * c.send({ type: 'subscribe', channel: 'pose_updates', filters: {} });
 * const confirmed = await c.next((m) => m.type === 'subscription_confirmed');
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';

/** Safety net so a missing message fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 20_000;

export interface ConnectOptions {
  /** `?token=` (a JWT or an API key). */
  token?: string;
  /** Upgrade headers (Authorization, X-API-Key, X-Response-Form). */
  headers?: Record<string, string>;
  /** Extra query parameters (`form`). */
  query?: Record<string, string>;
}

/** The JSON error body of a refused upgrade as the tests read it (Form B adds `success: false`). */
export interface RefusalBody {
  success?: boolean;
  error: { code: string; message?: string; request_id?: string; details?: Record<string, unknown> };
}

/** An upgrade the server refused: its HTTP status and body (JSON, or the text when it is not JSON). */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`upgrade refused with ${status}: ${JSON.stringify(body)}`);
  }
}

/**
 * The Refused an upgrade ended with; fails the test if it was accepted (any other error is
 * rethrown).
 * @example const r = await refusal(WsClient.connect(s.port, { token: 'not-a-token' })); // r.status 401
 */
export async function refusal(p: Promise<unknown>): Promise<Refused> {
  try {
    await p;
  } catch (e) {
    if (e instanceof Refused) return e;
    throw e;
  }
  throw new Error('the upgrade was accepted');
}

/** Reads an HTTP response's body to the end: parsed JSON, or the text when it is not JSON. */
export function readBody(res: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    let text = '';
    res.on('data', (c: Buffer) => (text += c.toString()));
    res.on('end', () => {
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      resolve(body);
    });
  });
}

/** A received message, its fields unchecked (a test reads `m.type`, `m.data.persons`, ...). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the ws tests read nested fields of every message type; Record<string, unknown> is 60 type errors, to type per message later
export type Message = Record<string, any>;

export class WsClient {
  readonly messages: Message[] = [];
  /** Close code and reason once closed. */
  closed: { code: number; reason: string } | undefined;
  private waiters: Array<{ from: number; match: (m: Message) => boolean; resolve: (m: Message) => void }> = [];
  private closeWaiters: Array<(c: { code: number; reason: string }) => void> = [];
  /** Index of the first message `next` looks at. */
  private cursor = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const m: Message = isBinary ? { type: '<binary>' } : JSON.parse(data.toString());
      this.messages.push(m);
      const i = this.messages.length - 1;
      this.waiters = this.waiters.filter((w) => (i >= w.from && w.match(m) ? (w.resolve(m), false) : true));
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.closeWaiters) w(this.closed);
      this.closeWaiters = [];
    });
    ws.on('error', () => undefined);
  }

  /**
   * Opens a connection and waits for `connection_established`.
   * @throws Refused when the server answers the upgrade with an HTTP error
   */
  static connect(port: number, o: ConnectOptions = {}): Promise<WsClient> {
    const q = new URLSearchParams({ ...(o.token ? { token: o.token } : {}), ...(o.query ?? {}) }).toString();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/pose${q ? `?${q}` : ''}`, { headers: o.headers ?? {} });
    const client = new WsClient(ws);
    return new Promise((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => {
        void readBody(res).then((body) => reject(new Refused(res.statusCode ?? 0, body)));
      });
      ws.once('error', reject);
      client.next((m) => m.type === 'connection_established').then(() => resolve(client), reject);
    });
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  /** Sends raw bytes as a binary message. */
  sendBinary(b: Uint8Array): void {
    this.ws.send(b, { binary: true });
  }

  /**
   * The first message after the last one `next` returned (or already received since) that matches.
   * @param match the predicate
   * @param what described in the failure message
   */
  next(match: (m: Message) => boolean = () => true, what = 'a matching message'): Promise<Message> {
    for (let i = this.cursor; i < this.messages.length; i++) {
      if (match(this.messages[i]!)) {
        this.cursor = i + 1;
        return Promise.resolve(this.messages[i]!);
      }
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`gave up waiting for ${what}; last messages: ${JSON.stringify(this.messages.slice(-3)).slice(0, 600)}`)),
        GIVE_UP_MS,
      );
      this.waiters.push({
        from: this.messages.length,
        match,
        resolve: (m) => {
          clearTimeout(timer);
          this.cursor = this.messages.indexOf(m) + 1;
          resolve(m);
        },
      });
    });
  }

  /** Sends a message and returns the reply that matches. */
  async request(m: unknown, match: (r: Message) => boolean): Promise<Message> {
    const reply = this.next(match);
    this.send(m);
    return reply;
  }

  /** Subscribes and returns the `subscription_confirmed` (or the `error`). */
  subscribe(channel: string, filters?: unknown): Promise<Message> {
    return this.request(
      { type: 'subscribe', channel, ...(filters !== undefined ? { filters } : {}) },
      (r) => r.type === 'subscription_confirmed' || r.type === 'error',
    );
  }

  /** Messages of a type received so far. */
  all(type: string): Message[] {
    return this.messages.filter((m) => m.type === type);
  }

  /** Stops reading from the socket: the server's data piles up in the kernel, then in its buffers. */
  stopReading(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  resumeReading(): void {
    (this.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  }

  /** Resolves with the close code and reason. */
  whenClosed(): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('gave up waiting for the connection to close')), GIVE_UP_MS * 2);
      this.closeWaiters.push((c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const done = this.whenClosed().then(() => undefined);
    this.ws.close();
    return done;
  }

  /** Kills the TCP connection without a close handshake. */
  terminate(): void {
    this.ws.terminate();
  }
}
