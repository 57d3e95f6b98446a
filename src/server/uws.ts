import uWS from 'uWebSockets.js';
import { ApiError, REASON } from '../errors.js';
import type { HttpCore, RawResponse } from './core.js';

export interface UwsServer {
  app: uWS.TemplatedApp;
  port: number;
  host: string;
  /** Stops accepting connections (open ones finish). */
  close(): void;
}

function ipOf(res: uWS.HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/**
 * What is ambiguous about a request's framing: two Content-Length headers with different values,
 * or Content-Length beside Transfer-Encoding. A proxy in front may read the body one way and this
 * server another (request smuggling), so such a request is refused.
 */
function framing(req: uWS.HttpRequest): string | undefined {
  let length: string | undefined;
  let conflict = false;
  let transfer = false;
  req.forEach((k, v) => {
    if (k === 'content-length') {
      if (length !== undefined && length.trim() !== v.trim()) conflict = true;
      length ??= v;
    } else if (k === 'transfer-encoding') transfer = true;
  });
  if (conflict) return 'two different Content-Length headers: the body length is ambiguous';
  if (transfer && length !== undefined) return 'both Content-Length and Transfer-Encoding: the body length is ambiguous';
  return undefined;
}

/**
 * Serves the HTTP core on uWebSockets.js. Headers are copied out of `req` at once (it dies with
 * the callback); `onAborted` is registered before any await; every write happens inside `cork`.
 * Bodies are buffered only up to the route's limit: beyond it the rest is discarded and the
 * request answered 413.
 *
 * @param core the routes and policies
 * @param host address to bind
 * @param port 0 picks a free port
 * @param configure optional extra routes (the WebSocket) added before the catch-all
 */
export function listenUws(
  core: HttpCore,
  host: string,
  port: number,
  configure?: (app: uWS.TemplatedApp) => void,
): Promise<UwsServer> {
  const app = uWS.App();
  configure?.(app);
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const headers = {
      authorization: req.getHeader('authorization'),
      apiKey: req.getHeader('x-api-key'),
      form: req.getHeader('x-response-form'),
      contentType: req.getHeader('content-type'),
      contentLength: req.getHeader('content-length'),
      requestId: req.getHeader('x-request-id'),
    };
    const ip = ipOf(res);
    const framingError = framing(req);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });

    // The body must be claimed now (uWS delivers it only to a handler attached synchronously).
    let body: Promise<Buffer> = Promise.resolve(Buffer.alloc(0));
    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') {
      const limit = core.bodyLimitFor(method, path);
      body = new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let over = false;
        res.onData((ab, isLast) => {
          if (!over) {
            size += ab.byteLength;
            if (size > limit) over = true;
            // uWS reuses `ab` after the callback: copy it.
            else chunks.push(Buffer.from(ab.slice(0)));
          }
          if (isLast) {
            if (over) reject(core.tooLarge(limit));
            else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
          }
        });
      });
      body.catch(() => undefined);
    }
    core
      .dispatch({
        method,
        path,
        query,
        headers,
        ip,
        ...(framingError ? { framingError } : {}),
        readBody: (limit: number) =>
          body.then((b) => {
            if (b.length > limit) throw core.tooLarge(limit, b.length);
            return b;
          }),
      })
      .then((out: RawResponse) => {
        if (aborted) return;
        res.cork(() => {
          res.writeStatus(`${out.status} ${REASON[out.status] ?? ''}`);
          for (const [k, v] of out.headers) res.writeHeader(k, v);
          res.end(out.body);
        });
      })
      .catch((e: unknown) => {
        // dispatch never rejects; this guards the write itself.
        if (!aborted && !(e instanceof ApiError)) {
          try {
            res.cork(() => res.writeStatus('500 Internal Server Error').end('{"error":"internal"}'));
          } catch {
            // connection already gone
          }
        }
      });
  });
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port}`));
        return;
      }
      resolve({
        app,
        host,
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => uWS.us_listen_socket_close(socket),
      });
    });
  });
}
