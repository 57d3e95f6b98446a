import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type uWS from 'uWebSockets.js';
import { ApiError, REASON } from '../errors.js';
import { packageRoot } from '../packageRoot.js';
import type { HttpCore } from './core.js';

/**
 * The web dashboard's static files (issue 12, docs/dashboard.md): the bundle `npm run build`
 * writes to `dist/web` (web/build.mjs), read once at start into memory and served by the same
 * uWebSockets.js app as the API: `index.html` at `/`, everything else at `/assets/<name>`.
 *
 * - No path ever reaches the file system: a request names an entry of the in-memory table, looked
 *   up as sent (never decoded or joined to a directory), so `..`, `%2e%2e`, absolute paths,
 *   backslashes and NUL are simply names that are not there (404).
 * - Asset names carry a content hash (the build's): cached for a year, `immutable`; `index.html`
 *   is `no-cache` (revalidated each load, so a new build is picked up at once).
 * - Compression: the build writes `NAME.br` and `NAME.gz` beside a file when they pay (at least
 *   1 KiB and 10 % smaller); they are sent to clients that accept them, with `Vary`.
 * - Strong ETags from the content; `If-None-Match` answers 304.
 */

/** What a static request is answered with. */
export interface StaticAnswer {
  status: 200 | 304;
  headers: Array<[string, string]>;
  /** The bytes to send (absent for 304); HEAD sends only its length. */
  body: Buffer | undefined;
}

type Coding = 'br' | 'gzip';

interface Asset {
  type: string;
  cacheControl: string;
  /** The content's hash; each encoding's ETag derives from it. */
  hash: string;
  identity: Buffer;
  encoded: Partial<Record<Coding, Buffer>>;
  headers: ReadonlyArray<[string, string]>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/** Names the table holds: one path segment of safe characters. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const SUFFIX: Record<Coding, string> = { br: '.br', gzip: '.gz' };
const ETAG_SUFFIX: Record<Coding, string> = { br: '-br', gzip: '-gz' };

/** The page may load its own script and style only, and talk only to this service. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";
const PAGE_HEADERS: ReadonlyArray<[string, string]> = [
  ['Content-Security-Policy', CSP],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Frame-Options', 'DENY'],
];
export const ASSET_PREFIX = '/assets/';

/**
 * The folder `npm run build` writes the dashboard to: `dist/web` of this package, found from
 * this module whether it runs from `src/` (tests) or `dist/src/` (the service).
 */
export function defaultDashboardDir(): string {
  return join(packageRoot(), 'dist', 'web');
}

/**
 * The codings a client accepts, from `Accept-Encoding` (`q=0` refuses one; `*` accepts all).
 * @param header the request's Accept-Encoding
 * @returns which of br and gzip may be sent
 */
export function acceptedCodings(header: string): Set<Coding> {
  const out = new Set<Coding>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (name === 'br' || name === 'gzip') out.add(name);
    else if (name === '*') {
      out.add('br');
      out.add('gzip');
    }
  }
  return out;
}

/** Whether an `If-None-Match` value names one of the asset's ETags (weak comparison, as RFC 9110 asks). */
function matches(ifNoneMatch: string, a: Asset): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  for (const raw of ifNoneMatch.split(',')) {
    const tag = raw.trim().replace(/^W\//, '');
    if (tag === `"${a.hash}"` || tag === `"${a.hash}${ETAG_SUFFIX.br}"` || tag === `"${a.hash}${ETAG_SUFFIX.gzip}"`) return true;
  }
  return false;
}

function readAsset(dir: string, name: string, cacheControl: string, headers: ReadonlyArray<[string, string]>): Asset {
  const identity = readFileSync(join(dir, name));
  const encoded: Partial<Record<Coding, Buffer>> = {};
  for (const c of ['br', 'gzip'] as const) {
    const p = join(dir, name + SUFFIX[c]);
    if (existsSync(p)) encoded[c] = readFileSync(p);
  }
  return {
    type: TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream',
    cacheControl,
    hash: createHash('sha256').update(identity).digest('base64url').slice(0, 22),
    identity,
    encoded,
    headers,
  };
}

/** The dashboard's files, in memory. */
export class Dashboard {
  private constructor(
    private readonly index: Asset,
    private readonly assets: ReadonlyMap<string, Asset>,
  ) {}

  /**
   * Reads a built dashboard: `index.html` and the files of `assets/` (with their `.br` and `.gz`
   * variants).
   * @param dir the build's folder (default {@link defaultDashboardDir})
   * @returns the dashboard
   * @throws Error when `dir/index.html` is missing (the dashboard was not built)
   */
  static load(dir = defaultDashboardDir()): Dashboard {
    if (!existsSync(join(dir, 'index.html'))) throw new Error(`${join(dir, 'index.html')} is missing: run npm run build`);
    const index = readAsset(dir, 'index.html', 'no-cache', PAGE_HEADERS);
    const assets = new Map<string, Asset>();
    const assetDir = join(dir, 'assets');
    if (existsSync(assetDir)) {
      for (const name of readdirSync(assetDir)) {
        if (!SAFE_NAME.test(name) || name.endsWith('.br') || name.endsWith('.gz') || !statSync(join(assetDir, name)).isFile()) continue;
        assets.set(name, readAsset(assetDir, name, 'public, max-age=31536000, immutable', []));
      }
    }
    return new Dashboard(index, assets);
  }

  /** Names under `/assets/`. */
  assetNames(): string[] {
    return [...this.assets.keys()];
  }

  /**
   * Answers a GET or HEAD of a dashboard path.
   * @param path the request path as sent (not decoded)
   * @param acceptEncoding the request's Accept-Encoding
   * @param ifNoneMatch the request's If-None-Match
   * @returns the answer, or undefined when the path names nothing of the dashboard
   */
  answer(path: string, acceptEncoding: string, ifNoneMatch: string): StaticAnswer | undefined {
    const a = path === '/' ? this.index : path.startsWith(ASSET_PREFIX) ? this.assets.get(path.slice(ASSET_PREFIX.length)) : undefined;
    if (!a) return undefined;
    const accepted = acceptedCodings(acceptEncoding);
    const coding = (['br', 'gzip'] as const).find((c) => a.encoded[c] && accepted.has(c));
    const etag = `"${a.hash}${coding ? ETAG_SUFFIX[coding] : ''}"`;
    const headers: Array<[string, string]> = [['Cache-Control', a.cacheControl], ['ETag', etag], ['X-Content-Type-Options', 'nosniff'], ...a.headers];
    if (a.encoded.br || a.encoded.gzip) headers.push(['Vary', 'Accept-Encoding']);
    if (matches(ifNoneMatch, a)) return { status: 304, headers, body: undefined };
    headers.push(['Content-Type', a.type]);
    if (coding) headers.push(['Content-Encoding', coding]);
    return { status: 200, headers, body: coding ? a.encoded[coding]! : a.identity };
  }
}

/**
 * Adds the dashboard's routes (`GET`/`HEAD` of `/` and `/assets/*`) to a uWebSockets.js app,
 * before its catch-all. Other methods on these paths, and every other path, stay with the API's
 * catch-all; an unknown asset answers the API's 404 `RESOURCE_NOT_FOUND`.
 * @param app the app
 * @param dashboard the files
 * @param core renders the 404 in the request's (or the deployment's) response form
 */
export function serveDashboard(app: uWS.TemplatedApp, dashboard: Dashboard, core: HttpCore): void {
  const handler = (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
    const head = req.getCaseSensitiveMethod().toUpperCase() === 'HEAD';
    const path = req.getUrl();
    const form = req.getHeader('x-response-form');
    const out = dashboard.answer(path, req.getHeader('accept-encoding'), req.getHeader('if-none-match'));
    res.cork(() => {
      if (!out) {
        const nf = core.errorResponse(new ApiError('RESOURCE_NOT_FOUND', 'no such file in the dashboard', { path: path.slice(0, 256) }), form);
        res.writeStatus(`404 ${REASON[404]}`);
        for (const [k, v] of nf.headers) res.writeHeader(k, v);
        if (head) res.writeHeader('Content-Length', String(Buffer.byteLength(nf.body))).endWithoutBody();
        else res.end(nf.body);
        return;
      }
      res.writeStatus(out.status === 304 ? '304 Not Modified' : '200 OK');
      for (const [k, v] of out.headers) res.writeHeader(k, v);
      // endWithoutBody(length) aborts this uWS build ("returning without responding"): the
      // length of a HEAD answer goes in as a header instead.
      if (out.status === 304) res.endWithoutBody();
      else if (head) res.writeHeader('Content-Length', String(out.body!.length)).endWithoutBody();
      else res.end(out.body!);
    });
  };
  for (const pattern of ['/', `${ASSET_PREFIX}*`]) app.get(pattern, handler).head(pattern, handler);
}
