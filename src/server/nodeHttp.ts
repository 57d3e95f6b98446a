import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { HttpCore, RawResponse } from './core.js';

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

/**
 * Serves the same HTTP core on Node's own `http` module. Used by the benchmark to compare
 * transports with identical handlers; the service itself runs on uWebSockets.js.
 */
export function listenNodeHttp(core: HttpCore, host: string, port: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const method = (req.method ?? 'GET').toUpperCase();
    const path = q < 0 ? url : url.slice(0, q);
    const form = header(req, 'x-response-form');
    const send = (out: RawResponse): void => {
      res.writeHead(out.status, Object.fromEntries(out.headers));
      res.end(out.body);
    };
    // Nothing thrown here may escape: an exception out of a request listener ends the process.
    const fail = (e: unknown): void => {
      try {
        if (!res.headersSent) send(core.failure(e, { method, path }, form));
        else res.destroy();
      } catch {
        res.destroy();
      }
    };
    try {
      const limit = core.bodyLimitFor(method, path);
      const body = new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let over = false;
        req.on('data', (c: Buffer) => {
          size += c.length;
          if (size > limit) over = true;
          else if (!over) chunks.push(c);
        });
        req.on('end', () => (over ? reject(core.tooLarge(limit)) : resolve(Buffer.concat(chunks, size))));
        req.on('error', reject);
      });
      body.catch(() => undefined);
      core
        .dispatch({
          method,
          path,
          query: q < 0 ? '' : url.slice(q + 1),
          headers: {
            authorization: header(req, 'authorization'),
            apiKey: header(req, 'x-api-key'),
            form,
            contentType: header(req, 'content-type'),
            contentLength: header(req, 'content-length'),
            requestId: header(req, 'x-request-id'),
          },
          ip: req.socket.remoteAddress ?? '',
          readBody: () => body,
        })
        .then(send)
        .catch(fail);
    } catch (e) {
      fail(e);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const a = server.address();
      resolve({ server, port: typeof a === 'object' && a ? a.port : port });
    });
  });
}
