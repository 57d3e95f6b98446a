import uWS from 'uWebSockets.js';
import { REASON } from '../errors.js';
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
 * Content-Length beside Transfer-Encoding, or a Transfer-Encoding other than one `chunked`. A
 * proxy in front may read the body one way and this server another (request smuggling), so such a
 * request is refused and its connection closed. (uWebSockets.js itself refuses most unknown
 * transfer codings, e.g. `xchunked`, with its own 400 before any handler runs; this catches what it
 * lets through, such as `chunked` given twice.)
 */
function framing(req: uWS.HttpRequest): string | undefined {
  let length: string | undefined;
  let conflict = false;
  let transfer: string | undefined;
  let transfers = 0;
  req.forEach((k, v) => {
    if (k === 'content-length') {
      if (length !== undefined && length.trim() !== v.trim()) conflict = true;
      length ??= v;
    } else if (k === 'transfer-encoding') {
      transfers++;
      transfer = v;
    }
  });
  if (conflict) return 'two different Content-Length headers: the body length is ambiguous';
  if (transfers > 0 && length !== undefined) return 'both Content-Length and Transfer-Encoding: the body length is ambiguous';
  if (transfers > 1 || (transfer !== undefined && transfer.trim().toLowerCase() !== 'chunked'))
    return 'Transfer-Encoding must be exactly one "chunked": the body length is ambiguous';
  return undefined;
}

/** Writes a core answer; `close` ends the connection after it. */
function write(res: uWS.HttpResponse, out: RawResponse, close = false): void {
  res.cork(() => {
    res.writeStatus(`${out.status} ${REASON[out.status] ?? ''}`);
    for (const [k, v] of out.headers) res.writeHeader(k, v);
    res.end(out.body, close);
  });
}

/**
 * Serves the HTTP core on uWebSockets.js. Headers are copied out of `req` at once (it dies with
 * the callback); `onAborted` is registered first, before any await; every write happens inside
 * `cork`. Bodies are buffered only up to the route's limit: beyond it the rest is discarded and
 * the request answered 413. An exception that escaped a uWS handler would end the process, so the
 * handler's own code is guarded too: whatever it throws is answered 500 and reported.
 *
 * @param core the routes and policies
 * @param host address to bind
 * @param port 0 picks a free port
 * @param configure optional extra routes (the WebSocket) added before the catch-all
 */
export function listenUws(core: HttpCore, host: string, port: number, configure?: (app: uWS.TemplatedApp) => void): Promise<UwsServer> {
  const app = uWS.App();
  configure?.(app);
  app.any('/*', (res, req) => {
    let aborted = false;
    let method = '';
    let path = '';
    let form = '';
    // Nothing thrown here may reach uWebSockets.js: an exception out of a handler ends the process.
    try {
      res.onAborted(() => {
        aborted = true;
      });
      method = req.getCaseSensitiveMethod().toUpperCase();
      path = req.getUrl();
      const query = req.getQuery() ?? '';
      const headers = {
        authorization: req.getHeader('authorization'),
        apiKey: req.getHeader('x-api-key'),
        form: req.getHeader('x-response-form'),
        contentType: req.getHeader('content-type'),
        contentLength: req.getHeader('content-length'),
        requestId: req.getHeader('x-request-id'),
      };
      form = headers.form;
      const ip = ipOf(res);
      const framingError = framing(req);

      // The body must be claimed now (uWS delivers it only to a handler attached synchronously).
      // A request with ambiguous framing has no trustworthy body: nothing of it is read.
      let body: Promise<Buffer> = Promise.resolve(Buffer.alloc(0));
      if (!framingError && (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE')) {
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
      const run = (): void => {
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
            if (!aborted) write(res, out, framingError !== undefined);
          })
          .catch((e: unknown) => {
            // dispatch never rejects; this guards the write itself.
            if (aborted) return;
            try {
              write(res, core.failure(e, { method, path }, form));
            } catch {
              // connection already gone, or the response half written: nothing more to say
            }
          });
      };
      // A framing error is answered from the next turn of the loop, after uWS has parsed what
      // follows it in the same packet: uWS drops a connection that pipelines a request behind an
      // unanswered one, so bytes smuggled after the refused request are never run or answered.
      // Answered at once, uWS would go on to serve them even on a connection it is closing.
      if (framingError) setImmediate(run);
      else run();
    } catch (e) {
      if (aborted) return;
      try {
        write(res, core.failure(e, { method, path }, form));
      } catch {
        // the response was already (partly) written: nothing more can be sent
      }
    }
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
