/**
 * Integration helpers for the service: the real application (service, REST and WebSocket server) on 127.0.0.1 port 0
 * with a real DuckDB file in a temp data directory, and a small `fetch` wrapper that speaks its
 * two response forms. Server logs are kept in memory; set CSIPOSE_TEST_LOGS=1 to print them on close.
 *
 * @example
 * await withServer({}, async (s) => {
 *   const token = await s.login();
 *   const r = await s.api('GET', '/config', { token, form: 'a' });
 *   expect(r.status).toBe(200);
 * });
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import type { PoseService } from '../../src/service/service.js';
import { FEATURE_DIM } from '../../src/model/features.js';
import { contractModel } from './poseModels.js';
import { repoRoot } from './cli.js';

/** The bootstrap admin's password in every test server. */
export const ADMIN_PASSWORD = 'integration-admin-password-7f3a';
/** The HMAC secret tokens are signed with (>= 32 bytes), so tests can forge tokens of their own. */
export const JWT_SECRET = 'integration-test-jwt-secret-0123456789abcdef';

/** The trained model, when the training run has produced it. */
export const TRAINED_MODEL = join(repoRoot, 'models/csipose-pose.onnx');

export interface ServerOptions {
  /** Start the system at launch (default false). */
  autostart?: boolean;
  /** Multiplies every rate limit (default 1: the limits as configured). */
  rateLimitScale?: number;
  /** Deployment default response form (default: config, i.e. Form B). */
  form?: 'a' | 'b';
  /** Reuse this data directory (it is then not removed on close). Default: a new temp dir. */
  dataDir?: string;
  /** A `--config` overlay: written to a JSON file in a temp dir and passed as `configFile`. */
  config?: Record<string, unknown>;
  /**
   * Point `neural_network.model_path` at a usable model through the overlay: the trained model
   * when present, else a small contract model written into the temp dir.
   */
  model?: boolean;
  /** Overrides the CSI source (default: config `hardware.source`, the simulator). */
  source?: string;
  /** Extra environment for the authenticator (CSIPOSE_API_KEYS, ...). */
  env?: Record<string, string | undefined>;
  /** Serve the web dashboard at `/` (default true, as `csipose serve`). */
  dashboard?: boolean;
}

export interface ApiOptions {
  /** `Authorization: Bearer <token>` (a JWT or an API key). */
  token?: string;
  /** `X-API-Key`. */
  apiKey?: string;
  /** `X-Response-Form`. */
  form?: 'a' | 'b';
  /** JSON-serialised body (Content-Type application/json). */
  body?: unknown;
  /** A body sent as is (Content-Type application/json unless `headers` says otherwise). */
  rawBody?: string | Uint8Array<ArrayBuffer>;
  headers?: Record<string, string>;
  /** Query parameters appended to the path. */
  query?: Record<string, string | number | boolean>;
}

/**
 * A response body when the test names no type: the parsed JSON, unchecked. A test that wants the
 * compiler's help names the shape (`s.api<{ data: SystemStatusB }>(...)`) or casts at the point of use.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- ~500 calls in 41 files read bodies untyped; as unknown that is 565 type errors, to type call by call later
export type JsonBody = any;

export interface ApiResponse<T = JsonBody> {
  status: number;
  headers: Headers;
  /** The parsed JSON body (undefined when the body is empty or not JSON). */
  body: T;
  text: string;
}

export interface TestServer {
  app: App;
  svc: PoseService;
  /** `http://127.0.0.1:PORT`. */
  base: string;
  port: number;
  dataDir: string;
  /** The model the overlay points at (when `model` was asked for). */
  modelPath: string | undefined;
  /**
   * One HTTP request. A path starting with `/api/` is sent as given; any other path is relative
   * to `/api/v1` (`/config` -> `/api/v1/config`).
   */
  api<T = JsonBody>(method: string, path: string, opts?: ApiOptions): Promise<ApiResponse<T>>;
  /** A request to a path outside `/api/v1` (unknown paths, `/api/v2/...`). */
  rawPath<T = JsonBody>(method: string, path: string, opts?: ApiOptions): Promise<ApiResponse<T>>;
  /** POST /auth/token as admin (or the given user); returns the access token. Throws on failure. */
  login(username?: string, password?: string): Promise<string>;
  /** POST /auth/keys as `adminToken`: a new API key with `role`. */
  apiKey(adminToken: string, role: 'viewer' | 'operator' | 'admin', name?: string): Promise<{ key: string; id: string }>;
  /** Shuts the service down and removes the temp dirs it made. */
  close(): Promise<void>;
}

/**
 * Writes the model the system tests run: the trained model when it exists, otherwise a contract
 * model of FEATURE_DIM features and 4 person slots.
 * @param dir where to write the contract model
 * @returns the model's absolute path
 */
export function testModel(dir: string): string {
  if (existsSync(TRAINED_MODEL)) return TRAINED_MODEL;
  const path = join(dir, 'contract-model.onnx');
  writeFileSync(path, contractModel(FEATURE_DIM, 4));
  return path;
}

/**
 * Starts the application on 127.0.0.1 port 0 with a temp data dir (or `opts.dataDir`), the admin
 * password {@link ADMIN_PASSWORD} and the JWT secret {@link JWT_SECRET}.
 * @param opts see {@link ServerOptions}
 * @returns the running server and its request helpers; call `close()` when done
 */
export async function startServer(opts: ServerOptions = {}): Promise<TestServer> {
  const scratch = mkdtempSync(join(tmpdir(), 'csipose-svc-'));
  const dataDir = opts.dataDir ?? join(scratch, 'data');
  let modelPath: string | undefined;
  let configFile: string | undefined;
  if (opts.config || opts.model) {
    const overlay: Record<string, unknown> = structuredClone(opts.config ?? {});
    if (opts.model) {
      modelPath = testModel(scratch);
      overlay.neural_network = { ...((overlay.neural_network as Record<string, unknown> | undefined) ?? {}), model_path: modelPath };
    }
    configFile = join(scratch, 'overlay.json');
    writeFileSync(configFile, JSON.stringify(overlay));
  }
  const env: Record<string, string | undefined> = {
    CSIPOSE_JWT_SECRET: JWT_SECRET,
    CSIPOSE_ADMIN_PASSWORD: ADMIN_PASSWORD,
    ...(opts.env ?? {}),
  };
  const logs: string[] = [];
  let app: App;
  try {
    app = await startApp({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      autostart: opts.autostart ?? false,
      rateLimitScale: opts.rateLimitScale ?? 1,
      env,
      ...(configFile ? { configFile } : {}),
      ...(opts.source ? { source: opts.source } : {}),
      ...(opts.form ? { form: opts.form } : {}),
      ...(opts.dashboard === false ? { dashboard: false } : {}),
      // Kept in memory: a failing test can print them, a passing one stays quiet.
      log: (level, msg) => void logs.push(`${level} ${msg}`),
    });
  } catch (e) {
    rmSync(scratch, { recursive: true, force: true });
    throw e;
  }
  const svc = app.svc;
  const port = app.server.port;
  const base = `http://127.0.0.1:${port}`;

  async function request<T>(method: string, url: string, o: ApiOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {};
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    if (o.apiKey !== undefined) headers['x-api-key'] = o.apiKey;
    if (o.form) headers['x-response-form'] = o.form;
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (o.body !== undefined) body = JSON.stringify(o.body);
    if (o.rawBody !== undefined) body = o.rawBody;
    if (body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, o.headers ?? {});
    const q = o.query ? `?${new URLSearchParams(Object.entries(o.query).map(([k, v]): [string, string] => [k, String(v)]))}` : '';
    const res = await fetch(base + url + q, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  const server: TestServer = {
    app,
    svc,
    base,
    port,
    dataDir,
    modelPath,
    api: (method, path, o) => request(method, path.startsWith('/api/') ? path : `/api/v1${path}`, o),
    rawPath: (method, path, o) => request(method, path, o),
    async login(username = 'admin', password = ADMIN_PASSWORD) {
      const r = await server.api('POST', '/auth/token', { body: { username, password }, form: 'a' });
      if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
      return r.body.access_token as string;
    },
    async apiKey(adminToken, role, name) {
      const r = await server.api('POST', '/auth/keys', { token: adminToken, form: 'a', body: { role, ...(name ? { name } : {}) } });
      if (r.status !== 201) throw new Error(`key creation failed: ${r.status} ${r.text}`);
      return { key: r.body.key as string, id: r.body.id as string };
    },
    async close() {
      try {
        await app.close();
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
      if (process.env.CSIPOSE_TEST_LOGS) process.stderr.write(logs.join('\n') + '\n');
    },
  };
  return server;
}

/**
 * Runs `fn` against a fresh server and always shuts it down afterwards.
 * @param opts see {@link ServerOptions}
 * @param fn the test body
 * @returns what `fn` returns
 */
export async function withServer<T>(opts: ServerOptions, fn: (s: TestServer) => Promise<T>): Promise<T> {
  const s = await startServer(opts);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

/**
 * Whether `token` is still good on `s`: `{ status: 200 }` when GET /system/status accepts it,
 * otherwise the status and the refusal's `error.details.reason` (e.g. `password_changed`).
 */
export async function probeToken(s: TestServer, token: string): Promise<{ status: number; reason?: string }> {
  const r = await s.api('GET', '/system/status', { token });
  return r.status === 200 ? { status: 200 } : { status: r.status, reason: r.body?.error?.details?.reason };
}

/**
 * One server for the enclosing `describe`: started (startServer(opts)) with the admin signed in
 * before its tests, closed after them. Read `.s` and `.token` inside the tests.
 * @example
 * const srv = suiteServer();
 * it('...', async () => expect((await srv.s.api('GET', '/config', { token: srv.token })).status).toBe(200));
 */
export function suiteServer(opts: ServerOptions = {}): { readonly s: TestServer; readonly token: string } {
  let s: TestServer | undefined;
  let token = '';
  beforeAll(async () => {
    s = await startServer(opts);
    token = await s.login();
  });
  afterAll(() => s?.close());
  return {
    get s(): TestServer {
      if (!s) throw new Error('the suite server has not started');
      return s;
    },
    get token(): string {
      return token;
    },
  };
}

/**
 * Polls `probe` until it returns a value other than undefined; fails after `attempts` tries
 * `everyMs` apart (a bound against hanging, not a timing assertion), or at once when `probe`
 * throws.
 * @param probe returns the awaited value, or undefined to try again
 * @param what described in the failure message
 * @returns the first defined value
 */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, attempts = 400, everyMs = 50): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** The Form B status resource (`GET /system/status` data), the fields the tests read. */
export interface SystemStatusB {
  status: string;
  session_id: string;
  started_at: string | null;
  /** Present in `error` only. */
  error?: { code: string; message: string };
  steps: Array<{ step: string; status: string }>;
  components: Record<string, { status: string; model_loaded?: boolean; model_version?: string | null; [k: string]: unknown }>;
  performance: { frames_processed: number; average_fps: number; [k: string]: unknown };
  [k: string]: unknown;
}

/**
 * Polls `GET /system/status` (Form B) until the system reaches `want`. Fails at once when it
 * lands in `error` instead (unless `error` is what is awaited), with the system's error.
 * @param s the server
 * @param token any credential with the viewer role
 * @param want the awaited state
 * @returns the Form B status resource in that state
 */
export function waitForStatus(s: TestServer, token: string, want: string): Promise<SystemStatusB> {
  return until(async () => {
    const r = await s.api('GET', '/system/status', { token });
    const d = r.body?.data;
    if (d?.status === want) return d;
    if (d?.status === 'error' && want !== 'error') throw new Error(`system in error: ${JSON.stringify(d.error)}`);
    return undefined;
  }, `system status ${want}`);
}

/** The four rate-limit headers of a response, as numbers (NaN when a header is missing). */
export function rateHeaders(h: Headers): { limit: number; remaining: number; reset: number; window: number } {
  const n = (k: string) => (h.get(k) === null ? NaN : Number(h.get(k)));
  return {
    limit: n('x-ratelimit-limit'),
    remaining: n('x-ratelimit-remaining'),
    reset: n('x-ratelimit-reset'),
    window: n('x-ratelimit-window'),
  };
}
