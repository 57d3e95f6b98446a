/**
 * The REST client of the dashboard: the service's public interface under `api/v1/` (relative to
 * the page, so the dashboard also works behind a proxy that mounts the service under a path).
 * Every request names its response form (`X-Response-Form`), so the deployment's default does not
 * matter: Form B everywhere, except the configuration, read and written in Form A, whose names are
 * the canonical ones of `GET /config/schema` and whose validation errors list every bad field.
 */
import type { Role } from './types.js';

export type Form = 'a' | 'b';

/** A field the server refused (422 `VALIDATION_ERROR`). */
export interface FieldError {
  field: string;
  message: string;
  received_value?: unknown;
}

/** An error answer of the service, read from either form's error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The refused fields: Form A `details.field_errors`, Form B `details.errors`. */
  get fieldErrors(): FieldError[] {
    const list = this.details.field_errors ?? this.details.errors;
    return Array.isArray(list) ? (list as FieldError[]) : [];
  }
}

/** What the client needs of a signed-in session. */
export interface Credentials {
  /** `Authorization: Bearer ...` or `X-API-Key: ...`. */
  headers(): Record<string, string>;
  /** After a 401: tries to get fresh credentials; true when the request may be retried. */
  renew(): Promise<boolean>;
  /** The credentials no longer work (a 401 that renewing did not cure). */
  expired(): void;
  /** A 403 named the caller's role: the server is the authority on it. */
  learnRole(role: Role): void;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Default Form B. */
  form?: Form;
}

export interface Result<T> {
  data: T;
  /** Form B `pagination` beside `data`, when the endpoint pages. */
  pagination?: Record<string, unknown>;
  /** Form B `timestamp`: when the service answered, on its clock. */
  timestamp?: string;
}

const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

/** The service's REST interface, with or without credentials. */
export class Api {
  constructor(private readonly credentials?: Credentials) {}

  /**
   * One request. A 401 with credentials renews them once and retries; a second 401 ends the
   * session.
   * @param method HTTP method
   * @param path path under `api/v1/`, without a leading slash (`system/status`)
   * @param o query, JSON body and response form
   * @returns the resource (`data` of Form B, the body of Form A)
   * @throws ApiError for an error answer; TypeError when the service cannot be reached
   */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<Result<T>> {
    let res = await this.send(method, path, o);
    if (res.status === 401 && this.credentials && (await this.credentials.renew())) res = await this.send(method, path, o);
    const text = await res.text();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the service's JSON: either form's envelope or an error, read field by field below
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const e = body?.error ?? {};
      const err = new ApiError(res.status, String(e.code ?? `HTTP_${res.status}`), String(e.message ?? res.statusText), e.details ?? {});
      if (res.status === 401) this.credentials?.expired();
      const role = err.details.role;
      if (res.status === 403 && ROLES.includes(role as Role)) this.credentials?.learnRole(role as Role);
      throw err;
    }
    const form = o.form ?? 'b';
    return form === 'b' && body && typeof body === 'object' && 'success' in body
      ? {
          data: body.data as T,
          ...(body.pagination ? { pagination: body.pagination } : {}),
          ...(typeof body.timestamp === 'string' ? { timestamp: body.timestamp } : {}),
        }
      : { data: body as T };
  }

  private send(method: string, path: string, o: RequestOptions): Promise<Response> {
    const url = new URL(`api/v1/${path}`, document.baseURI);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', 'x-response-form': o.form ?? 'b', ...(this.credentials?.headers() ?? {}) };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    return fetch(url, { method, headers, cache: 'no-store', ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
  }
}

/**
 * A sentence for a user about a failed request: what happened and what to do. 401, 403 and 429
 * say who, what role and until when; a network failure says the service cannot be reached.
 * @param e what the request threw
 * @param context what was being done ("Sign-in", "Saving the configuration")
 * @returns the message
 */
export function describeError(e: unknown, context = 'The request'): string {
  if (!(e instanceof ApiError)) return `${context} failed: the service cannot be reached (${(e as Error)?.message ?? String(e)}).`;
  const d = e.details;
  switch (e.status) {
    case 401:
      return d.reason === undefined && /username or password/.test(e.message)
        ? 'Wrong username or password.'
        : `${context} failed: not signed in, or the credentials are no longer valid (${String(d.reason ?? e.message)}). Sign in again.`;
    case 403:
      return `${context} is not allowed: it needs the ${String(d.required_role ?? 'a higher')} role and you are ${String(d.role ?? 'not')}.`;
    case 429: {
      const reset = Date.parse(String(d.reset_at ?? d.reset_time ?? ''));
      const when = Number.isFinite(reset)
        ? ` Try again in ${Math.max(1, Math.ceil((reset - Date.now()) / 1000))} s (at ${new Date(reset).toLocaleTimeString()}).`
        : ' Try again later.';
      const limit = d.limit !== undefined ? ` (${String(d.limit)} requests per ${String(d.window ?? d.window_seconds)} s)` : '';
      return `${context}: too many requests${limit}.${when}`;
    }
    case 409:
      return `${context} was refused: ${e.message}.`;
    default:
      return `${context} failed: ${e.message} (${e.code}, HTTP ${e.status}).`;
  }
}
