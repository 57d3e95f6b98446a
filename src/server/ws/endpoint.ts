import { randomBytes } from 'node:crypto';
import uWS from 'uWebSockets.js';
import type { Subscription } from 'rxjs';
import { ApiError, REASON } from '../../errors.js';
import type { Authenticator, Credentials, Principal } from '../../auth/authenticator.js';
import type { HasConfig } from '../../service/face.js';
import { renderStatusMessage } from '../../service/status.js';
import { attachOutlet, type OutletStreams } from '../../outlets/outlet.js';
import type { Form } from '../../render/frame.js';
import { undecodable, type HttpCore, type RawResponse } from '../core.js';
import { pickForm } from '../forms.js';
import type { LimitState, RateLimits } from '../rateLimits.js';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../json.js';
import { Fanout, MAX_BACKPRESSURE, type Client, type Socket } from './fanout.js';
import { PROTOCOLS, ProtocolError, readMessage } from './protocol.js';

export const WS_PATH = '/ws/pose';
/** uWS drops a connection sending a larger message; up to it, `streaming.ws_max_message_bytes` answers an error. */
const HARD_MAX_PAYLOAD = 1024 * 1024;
/** How often open connections' credentials are checked again (revoked or expired tokens close them). */
const AUTH_RECHECK_MS = 2000;
const SWEEP_MS = 1000;
/** Close codes: the token stopped being valid; the service stopped streaming. */
export const AUTH_CLOSE_CODE = 4401;
export const GOING_AWAY = 1001;

export interface PoseSocketOptions {
  /** Deployment default response form. */
  form: () => Form;
  log: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /**
   * The server's rate limits, shared with REST: a failed upgrade spends a point of the client
   * address's `authentication` budget, as a failed REST login does.
   */
  limits: RateLimits;
}

/** What the endpoint reads of the service: the configuration (`streaming.*`) and credentials checks, at upgrade and again while open. */
export interface PoseSocketFace extends HasConfig {
  readonly auth: Pick<Authenticator, 'authenticate'>;
}

/** Counters of refused upgrades and closed connections. */
interface EndpointStats {
  accepted: number;
  refusedAuth: number;
  /** Failed upgrades refused with 429: the address spent its authentication budget. */
  refusedAuthLimit: number;
  refusedLimit: number;
  refusedDisabled: number;
  authCloses: number;
  badMessages: number;
}

/** The four X-RateLimit-* headers of a limiter state, as REST sends them. */
function rateLimitHeaders(s: LimitState): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(s.limit),
    'X-RateLimit-Remaining': String(s.remaining),
    'X-RateLimit-Reset': String(s.reset),
    'X-RateLimit-Window': String(s.window),
  };
}

function ipOf(res: uWS.HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/** One upgrade request in progress. */
interface Pending {
  res: uWS.HttpResponse;
  ip: string;
  /** `X-Response-Form` or `?form=`; '' until read (the default form). */
  formHeader: string;
  /** The client went away: `res` must not be touched again. */
  aborted: boolean;
  /** It holds one of its address's connection slots (until refused, or handed to the connection). */
  holding: boolean;
}

let clientSeq = 0;
const clientPrefix = randomBytes(3).toString('hex');

/**
 * `/ws/pose`, the real-time outlet of the pose stream (spec "Events", DECISIONS "WebSocket").
 *
 * - Authentication at upgrade: `?token=` (a JWT or an API key), or `Authorization` / `X-API-Key`
 *   headers; bad credentials are refused with HTTP 401 before the upgrade, in the request's form
 *   (`X-Response-Form` or `?form=`, which also picks the form of the persons it is sent). Each
 *   failure spends a point of the address's REST `authentication` budget: 429 beyond it.
 * - Limits: `streaming.ws_max_connections_per_ip` open connections per IP (429 at upgrade),
 *   `streaming.ws_max_subscriptions_per_account` subscriptions per account, messages up to
 *   `streaming.ws_max_message_bytes` (an `error` message beyond; beyond 1 MiB uWS drops the connection).
 * - `streaming.websocket_enabled` false refuses upgrades (503) and closes open connections (1001).
 * - A token that is revoked or expires closes its connections with 4401.
 * The fan-out itself (filter sets, slow clients) is {@link Fanout}.
 */
export class PoseSocket {
  readonly fanout: Fanout;
  private readonly perIp = new Map<string, number>();
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private unreport: (() => void) | undefined;
  private readonly stats: EndpointStats = {
    accepted: 0,
    refusedAuth: 0,
    refusedAuthLimit: 0,
    refusedLimit: 0,
    refusedDisabled: 0,
    authCloses: 0,
    badMessages: 0,
  };
  private closing = false;

  /**
   * Registers `/ws/pose` on the app (before its catch-all route); {@link start} subscribes the
   * fan-out to the service's streams.
   */
  constructor(
    app: uWS.TemplatedApp,
    private readonly svc: PoseSocketFace,
    private readonly core: HttpCore,
    private readonly opts: PoseSocketOptions,
  ) {
    const streaming = () => svc.config.get().streaming;
    this.fanout = new Fanout(app, () => {
      const s = streaming();
      return {
        maxSubscriptionsPerAccount: s.ws_max_subscriptions_per_account,
        slowClientTimeoutMs: s.ws_slow_client_timeout_seconds * 1000,
        maxQueuedAlerts: s.ws_max_queued_alerts,
      };
    });
    app.ws<Client>(WS_PATH, {
      compression: uWS.DISABLED,
      maxPayloadLength: HARD_MAX_PAYLOAD,
      maxBackpressure: MAX_BACKPRESSURE,
      closeOnBackpressureLimit: false,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.open(ws),
      message: (ws, message, isBinary) => this.message(ws, message, isBinary),
      drain: (ws) => this.fanout.drain(ws),
      dropped: (ws, message) => this.fanout.dropped(ws, message),
      close: (ws) => this.closed(ws),
    });
  }

  /**
   * Subscribes the fan-out to the service's streams (pose frames, alerts, status) and to the
   * configuration, starts the sweeps of slow clients and of credentials, and reports as
   * `websocket`. Once, before the first upgrade can be served.
   */
  start(streams: OutletStreams): void {
    if (this.closing || this.unreport) return;
    const fail = (what: string) => (e: unknown) => this.opts.log('error', `websocket ${what}: ${(e as Error)?.stack ?? String(e)}`);
    this.subs.push(
      attachOutlet(streams.pose$, (v) => this.fanout.pose(v), fail('pose fan-out')),
      attachOutlet(streams.alerts$, (a) => this.fanout.alert(a), fail('alert fan-out')),
      attachOutlet(streams.status$, (s) => this.fanout.status(JSON.stringify(renderStatusMessage(s))), fail('status push')),
      attachOutlet(
        this.svc.config.changes$,
        (e) => {
          if (!e.config.streaming.websocket_enabled) this.closeAll(GOING_AWAY, 'streaming.websocket_enabled is false');
        },
        fail('config'),
      ),
    );
    this.timers.push(
      setInterval(() => this.fanout.sweep(), SWEEP_MS),
      setInterval(() => this.recheckAuth(), AUTH_RECHECK_MS),
    );
    for (const t of this.timers) t.unref();
    this.unreport = streams.report('websocket', () => this.report());
  }

  /** Writes an error answer to an upgrade request that is still open. */
  private refuse(u: Pending, err: ApiError): void {
    this.write(u.res, this.core.errorResponse(err, u.formHeader));
  }

  private write(res: uWS.HttpResponse, out: RawResponse): void {
    res.cork(() => {
      res.writeStatus(`${out.status} ${REASON[out.status] ?? ''}`);
      for (const [k, v] of out.headers) res.writeHeader(k, v);
      res.end(out.body);
    });
  }

  /**
   * The upgrade handler. Everything it runs, synchronously or once a refusal's rate limit has
   * answered, is guarded: an unexpected throw is answered 500 SYSTEM_ERROR ({@link fail}) instead of
   * reaching uWS, where it would end the process.
   */
  private upgrade(res: uWS.HttpResponse, req: uWS.HttpRequest, context: uWS.us_socket_context_t): void {
    const u: Pending = { res, ip: '', formHeader: '', aborted: false, holding: false };
    try {
      this.startUpgrade(u, req, context);
    } catch (e) {
      this.fail(u, e);
    }
  }

  /**
   * Reads the upgrade request (`req` dies with the callback), refuses it at once when it must be
   * (undecodable query 400, streaming off 503, too many connections 429), else takes a connection
   * slot of its address, authenticates (synchronously) and hands over to {@link admit} before
   * returning; refused credentials wait for the rate limiter ({@link refuseAuth}).
   */
  private startUpgrade(u: Pending, req: uWS.HttpRequest, context: uWS.us_socket_context_t): void {
    const { res } = u;
    u.ip = ipOf(res);
    res.onAborted(() => {
      u.aborted = true;
      this.letGo(u);
    });
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    const rawQuery = req.getQuery() ?? '';
    const query = new URLSearchParams(rawQuery);
    u.formHeader = req.getHeader('x-response-form') || (query.get('form') ?? '');
    const credentials: Credentials = {};
    const authorization = req.getHeader('authorization');
    const apiKey = req.getHeader('x-api-key');
    const token = query.get('token');
    if (authorization) credentials.authorization = authorization;
    if (apiKey) credentials.apiKey = apiKey;
    if (token) credentials.queryToken = token;
    // As REST answers it: URLSearchParams would read `%ff` as U+FFFD, a token nobody sent.
    const undecoded = undecodable('query', rawQuery);
    if (undecoded) {
      this.refuse(u, undecoded);
      return;
    }
    const s = this.svc.config.get().streaming;
    if (!s.websocket_enabled || this.closing) {
      this.stats.refusedDisabled++;
      this.refuse(
        u,
        new ApiError('SYSTEM_NOT_READY', 'WebSocket streaming is switched off (streaming.websocket_enabled is false)', {
          setting: 'streaming.websocket_enabled',
        }),
      );
      return;
    }
    const open = this.perIp.get(u.ip) ?? 0;
    if (open >= s.ws_max_connections_per_ip) {
      this.stats.refusedLimit++;
      this.refuse(
        u,
        new ApiError('RATE_LIMIT_EXCEEDED', `at most ${s.ws_max_connections_per_ip} WebSocket connections per IP address`, {
          limit: s.ws_max_connections_per_ip,
          window: null,
          reset_at: null,
          scope: 'websocket_connections_per_ip',
        }),
      );
      return;
    }
    // Counted from now: concurrent upgrades from one IP cannot pass the limit together.
    this.perIp.set(u.ip, open + 1);
    u.holding = true;
    const r = credentials.authorization || credentials.apiKey || credentials.queryToken ? this.svc.auth.authenticate(credentials) : undefined;
    if (r?.ok) {
      this.admit(u, r.principal, credentials, { key, protocol, extensions, context });
      return;
    }
    this.stats.refusedAuth++;
    this.refuseAuth(u, r ? r.reason : undefined).catch((e: unknown) => this.fail(u, e));
  }

  /**
   * Upgrades an authenticated request. Only ever from inside the upgrade handler: the
   * uWebSockets.js build we run (v20.51, `@based/uws` 6.0.1) can drop a connection upgraded later.
   * `res.upgrade` inside `res.cork`, as an upgrade made after the handler has returned must be,
   * keeps the socket's address (its memory is shrunk in place), so `cork` takes the WebSocket for the
   * HTTP response it was and runs its connection-close check on it, reading the response state from
   * memory the upgrade has just freed: whatever was written there decides, and one time in four or
   * so the new connection was closed right after `open`, without a close frame (1006). Inside the
   * handler the socket is already corked and uWS's parser is told of the upgrade. (Fixed upstream in
   * uWebSockets v20.79.0: "Fix cork() closing a WebSocket that was upgraded asynchronously".)
   */
  private admit(
    u: Pending,
    principal: Principal,
    credentials: Credentials,
    h: { key: string; protocol: string; extensions: string; context: uWS.us_socket_context_t },
  ): void {
    const client: Client = {
      id: `ws_${clientPrefix}${(++clientSeq).toString(36)}`,
      ip: u.ip,
      account: `${principal.kind}:${principal.id}`,
      form: pickForm(u.formHeader, this.opts.form()),
      credentials,
      subs: new Map(),
      alertQueue: [],
      overSince: 0,
      dropped: 0,
      closing: undefined,
      closed: false,
    };
    u.res.upgrade(client, h.key, h.protocol, h.extensions, h.context);
    // The connection holds the slot now; `closed` gives it back.
    u.holding = false;
  }

  /**
   * Answers an upgrade that failed unexpectedly with 500 SYSTEM_ERROR, counted and logged by the
   * core like a REST handler's failure, and gives back its connection slot. Never throws.
   */
  private fail(u: Pending, e: unknown): void {
    try {
      this.letGo(u);
      const out = this.core.failure(e, { method: 'GET', path: WS_PATH }, u.formHeader);
      if (!u.aborted) this.write(u.res, out);
    } catch (e2) {
      // The answer itself failed (the response was already ended or upgraded): nothing to tell
      // the client any more; a throw from here would end the process.
      try {
        this.opts.log('error', `websocket upgrade: could not answer a failure: ${(e2 as Error)?.stack ?? String(e2)}`);
      } catch {
        // A failing logger must not end the process either.
      }
    }
  }

  /** Gives back the connection slot an upgrade holds, once. */
  private letGo(u: Pending): void {
    if (!u.holding) return;
    u.holding = false;
    this.release(u.ip);
  }

  /**
   * Refuses a failed upgrade: 401, or 429 once the address has spent its `authentication` budget
   * (the key and category REST uses for failed authentication, so guesses over either share one
   * budget). Both carry the X-RateLimit-* headers; the 429 also Retry-After. Gives back the
   * address's connection slot.
   * @param reason why authentication failed; undefined when no credential came
   */
  private async refuseAuth(u: Pending, reason: string | undefined): Promise<void> {
    const limit = await this.opts.limits.consume('authentication', `ip:${u.ip}`);
    if (u.aborted) return;
    this.letGo(u);
    const headers = rateLimitHeaders(limit);
    if (!limit.allowed) {
      this.stats.refusedAuthLimit++;
      // `reset` is rounded up to a whole second; the wait never exceeds the window.
      const retryAfter = Math.min(limit.window, Math.max(1, Math.ceil(limit.reset - Date.now() / 1000)));
      this.refuse(
        u,
        new ApiError(
          'RATE_LIMIT_EXCEEDED',
          `rate limit of ${limit.limit} failed authentications per ${limit.window} s exceeded`,
          { limit: limit.limit, window: limit.window, reset_at: new Date(limit.reset * 1000).toISOString(), scope: 'authentication' },
          undefined,
          { ...headers, 'Retry-After': String(retryAfter) },
        ),
      );
      return;
    }
    this.refuse(
      u,
      new ApiError(
        'AUTHENTICATION_ERROR',
        reason ? 'invalid credentials' : 'authentication required: ?token=<JWT or API key>, Authorization: Bearer <token> or X-API-Key',
        reason ? { reason } : {},
        undefined,
        headers,
      ),
    );
  }

  private release(ip: string): void {
    const n = (this.perIp.get(ip) ?? 1) - 1;
    if (n > 0) this.perIp.set(ip, n);
    else this.perIp.delete(ip);
  }

  private open(ws: Socket): void {
    const c = ws.getUserData();
    this.stats.accepted++;
    this.fanout.opened(ws);
    const s = this.svc.config.get().streaming;
    this.send(ws, {
      type: 'connection_established',
      client_id: c.id,
      server_time: new Date().toISOString(),
      supported_protocols: PROTOCOLS,
      form: c.form,
      limits: { max_message_bytes: s.ws_max_message_bytes, max_subscriptions: s.ws_max_subscriptions_per_account },
    });
  }

  private send(ws: Socket, m: unknown): void {
    ws.send(JSON.stringify(m), false, false);
  }

  private error(ws: Socket, e: ProtocolError): void {
    this.stats.badMessages++;
    this.send(ws, { type: 'error', code: e.code, message: e.message, details: e.details });
  }

  private message(ws: Socket, data: ArrayBuffer, isBinary: boolean): void {
    const max = this.svc.config.get().streaming.ws_max_message_bytes;
    if (data.byteLength > max) {
      this.error(ws, new ProtocolError('PAYLOAD_TOO_LARGE', `message larger than ${max} bytes`, { max_bytes: max, received_bytes: data.byteLength }));
      return;
    }
    if (isBinary) {
      this.error(ws, new ProtocolError('VALIDATION_ERROR', 'messages are JSON text, not binary'));
      return;
    }
    const text = Buffer.from(data).toString('utf8');
    let parsed: unknown;
    try {
      if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) throw new ProtocolError('VALIDATION_ERROR', `message nests deeper than ${MAX_JSON_DEPTH} levels`);
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        throw new ProtocolError('VALIDATION_ERROR', `message is not valid JSON: ${(e as Error).message}`);
      }
      const m = readMessage(parsed);
      switch (m.type) {
        case 'subscribe': {
          const { id, filters } = this.fanout.subscribe(ws, m.request);
          this.send(ws, { type: 'subscription_confirmed', channel: m.request.channel, subscription_id: id, filters_applied: filters });
          break;
        }
        case 'unsubscribe':
          if (!this.fanout.unsubscribe(ws, m.subscriptionId))
            throw new ProtocolError('RESOURCE_NOT_FOUND', `no subscription ${m.subscriptionId} on this connection`, { subscription_id: m.subscriptionId });
          this.send(ws, { type: 'unsubscription_confirmed', subscription_id: m.subscriptionId });
          break;
        case 'ping':
          this.send(ws, { type: 'pong', server_time: new Date().toISOString() });
          break;
      }
    } catch (e) {
      if (e instanceof ProtocolError) this.error(ws, e);
      else {
        this.opts.log('error', `websocket message: ${(e as Error)?.stack ?? String(e)}`);
        this.error(ws, new ProtocolError('SYSTEM_ERROR', 'internal error'));
      }
    }
  }

  private closed(ws: Socket): void {
    const c = ws.getUserData();
    this.fanout.closed(ws);
    this.release(c.ip);
  }

  /** Checks every distinct credential of the open connections again; closes those no longer valid. */
  private recheckAuth(): void {
    const byCredential = new Map<string, { creds: Credentials; sockets: Socket[] }>();
    for (const ws of this.fanout.all()) {
      const c = ws.getUserData();
      const k = `${c.credentials.authorization ?? ''}\n${c.credentials.apiKey ?? ''}\n${c.credentials.queryToken ?? ''}`;
      const e = byCredential.get(k);
      if (e) e.sockets.push(ws);
      else byCredential.set(k, { creds: c.credentials, sockets: [ws] });
    }
    for (const { creds, sockets } of byCredential.values()) {
      const r = this.svc.auth.authenticate(creds);
      if (r.ok) continue;
      for (const ws of sockets) {
        if (ws.getUserData().closed) continue;
        this.stats.authCloses++;
        ws.end(AUTH_CLOSE_CODE, `credentials no longer valid: ${r.reason}`);
      }
    }
  }

  private closeAll(code: number, reason: string): void {
    for (const ws of this.fanout.all()) if (!ws.getUserData().closed) ws.end(code, reason);
  }

  /** The WebSocket component of `/health/detailed` and `/metrics`. */
  report(): { status: string } & Record<string, unknown> {
    const f = this.fanout;
    return {
      status: this.svc.config.get().streaming.websocket_enabled ? 'enabled' : 'disabled',
      connections: f.connections,
      subscriptions: f.subscriptions(),
      filter_sets: f.filterSets(),
      pose_frames: f.stats.poseFrames,
      messages_serialised: f.stats.serialised,
      pose_publishes: f.stats.posePublishes,
      alerts_sent: f.stats.alertsSent,
      alerts_delivered_late: f.stats.alertsDeliveredLate,
      pose_frames_dropped: f.stats.poseFramesDropped,
      slow_clients: f.slowClients(),
      slow_closes: f.stats.slowCloses,
      max_buffered_bytes: f.maxBuffered(),
      backpressure_limit_bytes: MAX_BACKPRESSURE,
      status_pushes: f.stats.statusPushes,
      accepted: this.stats.accepted,
      refused: {
        authentication: this.stats.refusedAuth,
        authentication_rate_limit: this.stats.refusedAuthLimit,
        connection_limit: this.stats.refusedLimit,
        disabled: this.stats.refusedDisabled,
      },
      auth_closes: this.stats.authCloses,
      error_messages: this.stats.badMessages,
    };
  }

  /** Stops the streams and timers and closes every connection (1001). */
  close(): void {
    this.closing = true;
    for (const s of this.subs) s.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    this.unreport?.();
    this.unreport = undefined;
    this.closeAll(GOING_AWAY, 'server shutting down');
  }
}
