import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors.js';
import { errorBody, pickForm, successBody, type Form } from './forms.js';
import type { Category, LimitState, RateLimits } from './rateLimits.js';
import type { AuthResult, Credentials, Principal } from '../auth/authenticator.js';
import type { Role } from '../auth/roles.js';
import { RateMeter } from '../service/metrics.js';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json.js';

/**
 * The transport-independent HTTP core: routing, request ids, response forms, authentication,
 * roles, rate limits, body limits and error rendering. The uWebSockets.js server (`uws.ts`) and,
 * for the side-by-side benchmark, Node's own `http` (`nodeHttp.ts`) both feed it plain request
 * data and write back what it returns. Handlers stay thin: they read services, never run
 * pipeline steps themselves.
 */

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export type { Principal, Credentials, AuthResult, Role };

/** What the core needs of authentication (the Authenticator in src/auth). */
export interface AuthProvider {
  authenticate(c: Credentials): AuthResult | Promise<AuthResult>;
}

/** The request as the core sees it: everything copied out of the transport's request object. */
export interface RawRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: string;
  headers: {
    authorization: string;
    apiKey: string;
    form: string;
    contentType: string;
    contentLength: string;
    requestId: string;
  };
  ip: string;
  /**
   * Set by the transport when the request's framing is ambiguous (two different Content-Length
   * headers, or Content-Length with Transfer-Encoding: the shape of request smuggling behind a
   * proxy); the request is answered 400 without running anything.
   */
  framingError?: string;
  /** The body, up to `limit` bytes; rejects with PAYLOAD_TOO_LARGE beyond it. */
  readBody(limit: number): Promise<Buffer>;
}

export interface RawResponse {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

/** What a handler sees. */
export interface Ctx {
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly ip: string;
  readonly requestId: string;
  readonly form: Form;
  readonly principal: Principal | undefined;
  /** Parsed JSON body (undefined when empty). */
  readonly body: unknown;
}

/** What a handler returns. */
export interface Reply {
  status?: number;
  data?: unknown;
  /** `data` already serialised (hot paths cache it); used instead of `data`. */
  json?: string;
  /** Form B siblings of `data` (e.g. `pagination`). */
  extra?: Record<string, unknown>;
  /** Send `data` as is in both forms (GET /health). */
  bare?: boolean;
  headers?: Record<string, string>;
}

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path under the API prefix, with `:name` segments, e.g. `/pose/tracking/:track_id`. */
  pattern: string;
  category: Category;
  /** Minimum role, or null for a public endpoint. */
  role: Role | null;
  /** Largest accepted body in bytes (default 64 KiB). */
  bodyLimit?: number;
  /**
   * Parses this route's non-empty JSON body in place of {@link parseJsonBody}, after the core's
   * size and Content-Type checks (`/pose/process` parses large bodies off the event loop). Must
   * refuse what parseJsonBody refuses, with the same errors.
   */
  readJson?: (body: Buffer) => Promise<unknown>;
  handler(ctx: Ctx): Reply | Promise<Reply>;
}

export const DEFAULT_BODY_LIMIT = 64 * 1024;
export const API_PREFIX = '/api/v1';

interface Compiled {
  route: Route;
  segments: string[];
}

/** Traffic figures of the core, measured per request. */
export class CoreStats {
  requests = 0;
  /** Unexpected failures (answered 500). */
  errors = 0;
  /** Request body bytes read. */
  bytesIn = 0;
  /** Response body bytes written. */
  bytesOut = 0;
  /** Exponentially weighted mean of the time from dispatch to response, ms. */
  avgResponseMs = 0;
  private readonly rate = new RateMeter(65536);

  /** Counts one answered request that took `ms`. */
  answered(ms: number, bytesOut: number): void {
    this.requests++;
    this.bytesOut += bytesOut;
    this.avgResponseMs = this.requests === 1 ? ms : this.avgResponseMs + 0.02 * (ms - this.avgResponseMs);
    this.rate.mark();
  }

  /** Requests per second over the last seconds. */
  requestRate(): number {
    return this.rate.rate();
  }
}

export interface CoreOptions {
  routes: Route[];
  /** Where the core counts its traffic (the routes of health and metrics read it); a new one when absent. */
  stats?: CoreStats;
  auth: AuthProvider;
  limits: RateLimits;
  /** Deployment default form. */
  form: () => Form;
  /** Called for unexpected (non-ApiError) failures. */
  onError?: (e: unknown, req: Pick<RawRequest, 'method' | 'path'>) => void;
}

let seq = 0;
const prefix = randomBytes(3).toString('hex');
function newRequestId(): string {
  seq = (seq + 1) % 0x7fffffff;
  return `req_${prefix}${seq.toString(36).padStart(6, '0')}`;
}
const GOOD_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function rateHeaders(h: Array<[string, string]>, s: LimitState | undefined): void {
  if (!s) return;
  h.push(
    ['X-RateLimit-Limit', String(s.limit)],
    ['X-RateLimit-Remaining', String(s.remaining)],
    ['X-RateLimit-Reset', String(s.reset)],
    ['X-RateLimit-Window', String(s.window)],
  );
}

/**
 * Headers of every API response, errors included. `nosniff`: a browser must never read a JSON
 * answer (which may echo request text) as HTML or script. `no-store`: API answers are live,
 * per-caller data, and some carry secrets (tokens from /auth/token and /auth/refresh, a new API
 * key): no cache, shared or private, may keep them. A reply may override Cache-Control.
 */
const BASE_HEADERS: ReadonlyArray<[string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
];

/** `Retry-After` of a 429 whose limit has no known reset (a cap on open connections), seconds. */
export const RETRY_AFTER_UNKNOWN_S = 5;

/** The 400 for a body nested deeper than {@link MAX_JSON_DEPTH}. */
export function tooDeep(): ApiError {
  return ApiError.unparseable(`body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`, { max_depth: MAX_JSON_DEPTH });
}

/** The 400 for a body that is not JSON, with the parser's complaint. */
export function notJson(parserMessage: string): ApiError {
  return ApiError.unparseable(`body is not valid JSON: ${parserMessage}`);
}

/**
 * A request body as JSON: refused (400) when nested deeper than {@link MAX_JSON_DEPTH}, found
 * before parsing, or when it does not parse.
 * @param buf the body, UTF-8
 * @returns the parsed value
 */
export function parseJsonBody(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) throw tooDeep();
  try {
    return JSON.parse(text);
  } catch (e) {
    throw notJson((e as Error).message);
  }
}

/** Sets each header of `extra` on `headers`, replacing one of the same name (case-insensitive). */
function setHeaders(headers: Array<[string, string]>, extra: Record<string, string>): void {
  for (const [k, v] of Object.entries(extra)) {
    const lower = k.toLowerCase();
    const i = headers.findIndex(([h]) => h.toLowerCase() === lower);
    if (i >= 0) headers[i] = [k, v];
    else headers.push([k, v]);
  }
}

/** Whole seconds until `resetUnixS`, at least 1 (a 429 must never invite an immediate retry). */
function retryAfter(resetUnixS: number): string {
  return String(Math.max(1, Math.ceil(resetUnixS - Date.now() / 1000)));
}

/**
 * Why a path or query cannot be percent-decoded as UTF-8 (`%` not followed by two hex digits, or
 * escapes that are not UTF-8), or undefined when it decodes. Text without `%` costs one scan.
 * REST requests and WebSocket upgrades both check with it.
 */
export function undecodable(what: 'path' | 'query', text: string): ApiError | undefined {
  if (!text.includes('%')) return undefined;
  try {
    decodeURIComponent(text);
    return undefined;
  } catch {
    return ApiError.unparseable(`the ${what} is not valid percent-encoding: each % must start an escape %XX, and the escapes must spell UTF-8`, {
      [what]: text.length > 256 ? `${text.slice(0, 256)}...` : text,
    });
  }
}

/** Routes requests to handlers. One instance per server. */
export class HttpCore {
  private readonly compiled: Compiled[];
  readonly stats: CoreStats;
  constructor(private readonly opts: CoreOptions) {
    this.stats = opts.stats ?? new CoreStats();
    this.compiled = opts.routes.map((route) => ({ route, segments: (API_PREFIX + route.pattern).split('/') }));
  }

  /** Largest body any route at this path accepts (the transport stops buffering beyond it). */
  bodyLimitFor(method: string, path: string): number {
    const m = this.match(method, path);
    return m && 'route' in m ? (m.route.bodyLimit ?? DEFAULT_BODY_LIMIT) : DEFAULT_BODY_LIMIT;
  }

  /**
   * The route for a method and path, with its parameters still percent-encoded (decoded in
   * `answer`, inside its error handling: the transport calls this before any request runs).
   */
  private match(method: string, path: string): { route: Route; params: Record<string, string> } | { allow: string[] } | undefined {
    const parts = path.split('/');
    const allow: string[] = [];
    for (const c of this.compiled) {
      if (c.segments.length !== parts.length) continue;
      let params: Record<string, string> | undefined;
      let ok = true;
      for (let i = 0; i < parts.length; i++) {
        const s = c.segments[i]!;
        if (s.startsWith(':')) {
          if (!parts[i]) {
            ok = false;
            break;
          }
          (params ??= {})[s.slice(1)] = parts[i]!;
        } else if (s !== parts[i]) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (c.route.method === method) return { route: c.route, params: params ?? {} };
      allow.push(c.route.method);
    }
    return allow.length ? { allow } : undefined;
  }

  /**
   * Answers one request. Never throws: every failure becomes an error body.
   * Order: route (404/405), authentication (401), rate limit (429), role (403), body (413/400),
   * handler.
   */
  async dispatch(req: RawRequest): Promise<RawResponse> {
    const t0 = performance.now();
    const out = await this.answer(req);
    this.stats.answered(performance.now() - t0, out.body.length);
    return out;
  }

  private async answer(req: RawRequest): Promise<RawResponse> {
    const requestId = GOOD_ID.test(req.headers.requestId) ? req.headers.requestId : newRequestId();
    const form = pickForm(req.headers.form, this.opts.form());
    const headers: Array<[string, string]> = [['Content-Type', 'application/json'], ['X-Request-Id', requestId], ...BASE_HEADERS];
    let limit: LimitState | undefined;
    try {
      if (req.framingError) throw ApiError.unparseable(req.framingError);
      // Counted like an unknown path: it names no endpoint anyone could serve.
      const undecoded = undecodable('path', req.path) ?? undecodable('query', req.query);
      if (undecoded) {
        limit = await this.opts.limits.consume('api', `ip:${req.ip}`);
        throw undecoded;
      }
      // Paths are matched without a trailing slash.
      const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
      const m = this.match(req.method, path);
      if (!m) {
        limit = await this.opts.limits.consume('api', `ip:${req.ip}`);
        throw new ApiError('RESOURCE_NOT_FOUND', `no such endpoint: ${req.method} ${req.path}`, { path: req.path });
      }
      if ('allow' in m) {
        limit = await this.opts.limits.consume('api', `ip:${req.ip}`);
        throw new ApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}`, { allowed: m.allow }, 405, {
          Allow: m.allow.join(', '),
        });
      }
      const { route } = m;
      // The whole path decoded above, so each segment does.
      const params: Record<string, string> = {};
      for (const k in m.params) params[k] = decodeURIComponent(m.params[k]!);
      let principal: Principal | undefined;
      if (route.role !== null) {
        const creds: Credentials = {};
        if (req.headers.authorization) creds.authorization = req.headers.authorization;
        if (req.headers.apiKey) creds.apiKey = req.headers.apiKey;
        const r = creds.authorization || creds.apiKey ? await this.opts.auth.authenticate(creds) : undefined;
        if (!r || !r.ok) {
          limit = await this.opts.limits.consume(route.category, `ip:${req.ip}`);
          if (!limit.allowed) throw this.tooMany(limit);
          throw new ApiError(
            'AUTHENTICATION_ERROR',
            r ? 'invalid credentials' : 'authentication required: send Authorization: Bearer <token> or X-API-Key',
            r ? { reason: r.reason } : {},
          );
        }
        principal = r.principal;
      }
      limit = await this.opts.limits.consume(route.category, principal ? `${principal.kind}:${principal.id}` : `ip:${req.ip}`);
      if (!limit.allowed) throw this.tooMany(limit);
      if (route.role !== null && RANK[principal!.role] < RANK[route.role]) {
        throw new ApiError('AUTHORIZATION_ERROR', `this needs the ${route.role} role; you have ${principal!.role}`, {
          required_role: route.role,
          role: principal!.role,
        });
      }
      let body: unknown;
      if (req.method === 'POST' || req.method === 'PUT') body = await this.readJson(req, route);
      const ctx: Ctx = {
        method: req.method,
        path,
        params,
        query: new URLSearchParams(req.query),
        ip: req.ip,
        requestId,
        form,
        principal,
        body,
      };
      const reply = await route.handler(ctx);
      rateHeaders(headers, limit);
      if (reply.headers) setHeaders(headers, reply.headers);
      let text: string;
      if (reply.json !== undefined) {
        text =
          reply.bare || form === 'a'
            ? reply.json
            : `{"success":true,"data":${reply.json},"timestamp":"${new Date().toISOString()}","request_id":"${requestId}"}`;
      } else {
        text = JSON.stringify(reply.bare ? reply.data : successBody(form, reply.data, requestId, reply.extra));
      }
      return { status: reply.status ?? 200, headers, body: text };
    } catch (e) {
      let err: ApiError;
      if (e instanceof ApiError) err = e;
      else {
        this.unexpected(e, req);
        err = new ApiError('SYSTEM_ERROR', 'internal error', { request_id: requestId });
      }
      rateHeaders(headers, limit);
      setHeaders(headers, err.headers);
      return { status: err.status, headers, body: JSON.stringify(errorBody(form, err, requestId)) };
    }
  }

  /** A 429 for a spent budget: the body's limit, window and reset, and `Retry-After` until the reset. */
  private tooMany(s: LimitState): ApiError {
    return new ApiError(
      'RATE_LIMIT_EXCEEDED',
      `rate limit of ${s.limit} requests per ${s.window} s exceeded`,
      { limit: s.limit, window: s.window, reset_at: new Date(s.reset * 1000).toISOString() },
      undefined,
      { 'Retry-After': String(s.retryAfter) },
    );
  }

  private async readJson(req: RawRequest, route: Route): Promise<unknown> {
    const limit = route.bodyLimit ?? DEFAULT_BODY_LIMIT;
    const declared = Number(req.headers.contentLength);
    if (Number.isFinite(declared) && declared > limit) throw this.tooLarge(limit, declared);
    const ct = req.headers.contentType.toLowerCase();
    const buf = await req.readBody(limit);
    this.stats.bytesIn += buf.length;
    if (buf.length === 0) return undefined;
    if (ct && !ct.includes('json')) throw ApiError.unparseable(`expected a JSON body (Content-Type: application/json), got ${ct}`);
    return route.readJson ? route.readJson(buf) : parseJsonBody(buf);
  }

  /**
   * An error answer outside routing (the WebSocket upgrade), in the form a header asks for.
   * @param err the error
   * @param formHeader the request's `X-Response-Form` (or `?form=`) value, '' for the default
   */
  errorResponse(err: ApiError, formHeader: string): RawResponse {
    const requestId = newRequestId();
    const headers: Array<[string, string]> = [['Content-Type', 'application/json'], ['X-Request-Id', requestId], ...BASE_HEADERS];
    setHeaders(headers, err.headers);
    // Every 429 says when to come back, whoever built it: from its reset when it has one.
    if (err.status === 429 && !headers.some(([k]) => k.toLowerCase() === 'retry-after')) {
      const reset = typeof err.details.reset_at === 'string' ? Date.parse(err.details.reset_at) / 1000 : NaN;
      headers.push(['Retry-After', Number.isFinite(reset) ? retryAfter(reset) : String(RETRY_AFTER_UNKNOWN_S)]);
    }
    return { status: err.status, headers, body: JSON.stringify(errorBody(pickForm(formHeader, this.opts.form()), err, requestId)) };
  }

  /**
   * The answer to a failure outside `dispatch` (a transport's own code threw): counted and
   * reported like a handler's unexpected failure, answered 500 SYSTEM_ERROR.
   * @param e what was thrown
   * @param req the request's method and path, as far as they were read
   * @param formHeader the request's `X-Response-Form`, '' when unknown
   */
  failure(e: unknown, req: Pick<RawRequest, 'method' | 'path'>, formHeader: string): RawResponse {
    this.unexpected(e, req);
    return this.errorResponse(new ApiError('SYSTEM_ERROR', 'internal error'), formHeader);
  }

  /** Counts and reports an unexpected failure. */
  private unexpected(e: unknown, req: Pick<RawRequest, 'method' | 'path'>): void {
    this.stats.errors++;
    try {
      this.opts.onError?.(e, req);
    } catch {
      // A failing logger must not turn one failed request into an unanswered one.
    }
  }

  tooLarge(limit: number, size?: number): ApiError {
    return new ApiError('PAYLOAD_TOO_LARGE', `body larger than ${limit} bytes`, {
      max_bytes: limit,
      ...(size !== undefined ? { received_bytes: size } : {}),
    });
  }
}
