// Requests on connections of their own, for tests that need requests truly in flight at a given moment
// (graceful shutdown, limiters counting concurrent requests).
import { once } from 'node:events';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { jsonRpcTextOf } from '../mcp/helpers.ts';

/**
 * A request on its own connection, written once the connection is up, so that the order of connections
 * is known. With `hold`, all but the last byte of the body is sent: the request is then in flight for sure
 * when the signal arrives, and `finish()` sends the rest. Resolves with the status and the JSON body.
 */
export async function startRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  hold = false,
) {
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
  const req = request({
    host: '127.0.0.1',
    port,
    method,
    path,
    agent: false,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length) },
  });
  const answered = new Promise<{ status: number; body: unknown }>((done, fail) => {
    req.once('error', fail);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.once('end', () => {
        // /mcp answers 2025-era requests as one SSE message; the REST API as JSON.
        const json = jsonRpcTextOf(text, String(res.headers['content-type'] ?? ''));
        done({ status: res.statusCode ?? 0, body: json ? JSON.parse(json) : undefined });
      });
    });
  });
  const [socket] = (await once(req, 'socket')) as [Socket];
  if (socket.connecting) await once(socket, 'connect');
  if (hold) req.write(payload.subarray(0, -1));
  else req.end(payload);
  return {
    answered,
    finish() {
      if (hold) req.end(payload.subarray(-1));
      return answered;
    },
  };
}
