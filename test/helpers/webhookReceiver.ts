/**
 * A real webhook receiver for tests: a Node HTTP server on 127.0.0.1 port 0 that keeps every
 * request it gets and verifies its signature the way docs/service.md "Webhooks" tells a receiver
 * to (HMAC-SHA256 over `t.body`, constant-time comparison, a timestamp tolerance), with its own
 * code, not the service's. Its answer is set by the test: 2xx, a failure, a redirect, or none.
 *
 * @example
 * const r = await WebhookReceiver.start();
 * r.secret = created.secret;
 * const got = await r.next((m) => m.json.type === 'ping', 'the ping');
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from './server.js';

/** One request as the receiver got it. */
export interface ReceivedHook {
  headers: IncomingHttpHeaders;
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the payload as sent; tests read its fields
  json: any;
  /** Whether the signature verified with the receiver's secret when it came. */
  verified: boolean;
  /** The status the receiver answered (0: none, `hang`). */
  answered: number;
}

/** How the receiver answers: 204, 500, a 302 to `redirectTo`, or never (the connection stays open). */
export type ReceiverMode = 'ok' | 'fail' | 'redirect' | 'hang';

/**
 * Verifies `X-Csipose-Signature: t=<unix s>,v1=<hex>[,v1=<hex>]` as a receiver should.
 * @param header the header's value
 * @param body the raw body
 * @param secret the webhook's secret
 * @param nowS the receiver's clock, Unix seconds
 * @param toleranceS how far `t` may be from the clock (replays older than this are refused)
 */
export function verifySignature(header: string | undefined, body: string, secret: string, nowS = Date.now() / 1000, toleranceS = 300): boolean {
  if (!header) return false;
  const parts = header.split(',').map((p) => p.split('=') as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowS - t) > toleranceS) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return parts.some(([k, v]) => {
    if (k !== 'v1' || !/^[0-9a-f]{64}$/.test(v)) return false;
    return timingSafeEqual(Buffer.from(v, 'hex'), want);
  });
}

export class WebhookReceiver {
  /** Every request, in order of arrival. */
  readonly got: ReceivedHook[] = [];
  mode: ReceiverMode = 'ok';
  /** The secret requests are verified with, unless `secrets` has one for their `X-Csipose-Webhook-Id`. */
  secret = '';
  readonly secrets = new Map<string, string>();
  /** Where a `redirect` answer points. */
  redirectTo = '';
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  /** A receiver listening on 127.0.0.1, port 0 (or `port`, to come back on the same address). */
  static async start(port = 0): Promise<WebhookReceiver> {
    const holder: { self?: WebhookReceiver } = {};
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => holder.self!.answer(req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    holder.self = new WebhookReceiver(server, (server.address() as AddressInfo).port);
    return holder.self;
  }

  /** The URL to register. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  private answer(headers: IncomingHttpHeaders, body: string, res: http.ServerResponse): void {
    let json: unknown = undefined;
    try {
      json = JSON.parse(body);
    } catch {
      /* kept as text */
    }
    const secret = this.secrets.get(headers['x-csipose-webhook-id'] as string) ?? this.secret;
    const verified = secret !== '' && verifySignature(headers['x-csipose-signature'] as string | undefined, body, secret);
    const hook: ReceivedHook = { headers, body, json, verified, answered: 0 };
    this.got.push(hook);
    switch (this.mode) {
      case 'hang':
        this.hanging.add(res);
        return;
      case 'fail':
        hook.answered = 500;
        res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver is down');
        return;
      case 'redirect':
        hook.answered = 302;
        res.writeHead(302, { location: this.redirectTo }).end();
        return;
      case 'ok':
        // A receiver refuses what it cannot verify.
        hook.answered = verified ? 204 : 401;
        res.writeHead(hook.answered).end();
    }
  }

  /** Requests whose body has this delivery id. */
  byId(id: string): ReceivedHook[] {
    return this.got.filter((h) => h.json?.id === id);
  }

  /** The first request (from the start) that matches, waiting for it (a bound against hanging, not a timing). */
  next(match: (h: ReceivedHook) => boolean, what: string, attempts = 600): Promise<ReceivedHook> {
    return until(async () => this.got.find(match), what, attempts);
  }

  /** Stops listening and drops open connections (a `hang` request's included). */
  async close(): Promise<void> {
    for (const r of this.hanging) r.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
