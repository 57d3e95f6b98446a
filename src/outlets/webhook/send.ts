import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { AddressPolicy, guardedLookup } from './ssrf.js';

/** What one attempt came to. */
export interface AttemptResult {
  ok: boolean;
  /** HTTP status, 0 when no answer came. */
  status: number;
  /** Why it failed ('' when ok): the status and the start of the answer, or the network error. */
  error: string;
  /** Seconds of an answer's `Retry-After` (429, 503), when it gave one. */
  retryAfterS?: number;
}

/** What an attempt sends besides the body. */
export interface AttemptRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

/** Bytes of an answer's body kept for the error message; the rest is read and thrown away. */
const ANSWER_KEPT = 256;
/** Bytes of an answer read at most; a longer one is cut off (the attempt counts by its status). */
const ANSWER_MAX = 64 * 1024;

function retryAfter(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s;
  const t = Date.parse(v);
  return Number.isFinite(t) ? Math.max(0, (t - Date.now()) / 1000) : undefined;
}

/**
 * Sends webhook requests: one POST per attempt, to the registered URL only, never following a
 * redirect (a 3xx is a failed attempt), connecting only to addresses the policy allows (checked
 * on the address resolved for the connection itself: {@link guardedLookup}), each attempt bounded
 * by a timeout. Connections are kept alive per origin between attempts.
 */
export class Sender {
  private readonly policy = new AddressPolicy();
  private readonly lookup;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  /** @param allowPrivate read at each attempt (`webhooks.allow_private_networks`) */
  constructor(private readonly allowPrivate: () => boolean) {
    this.lookup = guardedLookup(this.policy, allowPrivate);
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });
  }

  /** The address rules (registration checks with the same ones). */
  get addresses(): AddressPolicy {
    return this.policy;
  }

  /**
   * One attempt. Never rejects: every failure is a result.
   * @param r the URL, body, headers and timeout
   */
  send(r: AttemptRequest): Promise<AttemptResult> {
    const fail = (error: string): Promise<AttemptResult> => Promise.resolve({ ok: false, status: 0, error });
    let url: URL;
    try {
      url = new URL(r.url);
    } catch {
      return fail('the registered url no longer parses');
    }
    // Node connects to a literal address without a lookup: check it here.
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) && !this.allowPrivate()) {
      const why = this.policy.refusal(host);
      if (why) return fail(`refused: ${host} is a ${why} address (webhooks.allow_private_networks is false)`);
    }
    return new Promise((resolve) => {
      let settled = false;
      const done = (v: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(v);
      };
      const tls = url.protocol === 'https:';
      const req = (tls ? https : http).request(url, {
        method: 'POST',
        agent: tls ? this.httpsAgent : this.httpAgent,
        lookup: this.lookup,
        headers: { ...r.headers, 'Content-Length': String(Buffer.byteLength(r.body)) },
      });
      // Events of the request come after this turn, so `done` never runs before the timer exists.
      const timer = setTimeout(() => {
        req.destroy(new Error(`no whole answer within ${r.timeoutMs / 1000} s`));
      }, r.timeoutMs);
      req.on('error', (e: NodeJS.ErrnoException) => {
        done({ ok: false, status: 0, error: e.code === 'EREFUSEDADDRESS' ? `refused: ${e.message}` : `${e.code ? `${e.code}: ` : ''}${e.message}` });
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        let kept = '';
        let read = 0;
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (kept.length < ANSWER_KEPT) kept += c.slice(0, ANSWER_KEPT - kept.length);
          read += c.length;
          if (read > ANSWER_MAX) res.destroy();
        });
        const finish = () => {
          const ok = status >= 200 && status < 300;
          const ra = status === 429 || status === 503 ? retryAfter(res.headers['retry-after']) : undefined;
          const why = status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
          done({
            ok,
            status,
            error: ok ? '' : `${why}${kept ? `: ${kept.replace(/\s+/g, ' ').trim()}` : ''}`,
            ...(ra !== undefined ? { retryAfterS: ra } : {}),
          });
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', () => finish());
      });
      req.end(r.body);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
