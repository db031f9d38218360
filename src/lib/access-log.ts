import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import type { RequestHandler } from 'express';
import { type Logger, redactRequest, requestLineLogger } from './logger.ts';
import { requestIdsOf } from './request-context.ts';

declare module 'node:http' {
  interface IncomingMessage {
    /** The request id: the caller's X-Request-Id when it is a plain token, else a new UUID. */
    id?: string;
  }
}

// One line per request, with its id sent back as X-Request-Id. pino-http did this, but it builds two child
// loggers with the whole request serialized and redacted on every request, before it knows whether the line
// will be written at all: about 7% of a REST read's CPU, even with request logging off. This writes the same
// line ("request completed", or "request errored" at error level for a 5xx) only when its level is on, and
// "request aborted" (warn) for one whose answer was never sent whole: the client went away, Node's request
// timeout cut a slow body off with its own 408, or a shutdown ran out of time. Such a request has no status of
// ours, and used to be logged as a 200 completed.

const REQUEST_ID = /^[\w.-]{1,100}$/;

/**
 * Response headers left out of the line: the security headers helmet puts on every answer (src/app.ts),
 * the same on each, and the request id, which the line has as `req.id`. They said nothing about the request
 * and made up about 600 of a line's 1,000 bytes, which every line paid to copy, redact and serialise.
 */
const UNLOGGED_RESPONSE_HEADERS = new Set([
  'content-security-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'strict-transport-security',
  'x-content-type-options',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-frame-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
  'x-request-id',
]);

function loggedResponseHeaders(res: ServerResponse): Record<string, unknown> {
  // By name: getHeaders() would copy the values of all of them first.
  const logged: Record<string, unknown> = {};
  for (const name of res.getHeaderNames()) {
    if (!UNLOGGED_RESPONSE_HEADERS.has(name)) logged[name] = res.getHeader(name);
  }
  return logged;
}

export function accessLog(
  logger: Logger,
  options: { ignore(req: IncomingMessage): boolean },
): RequestHandler {
  const lineLogger = requestLineLogger(logger);
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    if (options.ignore(req)) return next();
    const started = performance.now();
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      const aborted = !res.writableFinished;
      const failed = res.statusCode >= 500;
      const level = aborted ? 'warn' : failed ? 'error' : 'info';
      if (!lineLogger.isLevelEnabled(level)) return;
      lineLogger[level](
        {
          // The socket's close runs outside the request's context, where the logger finds no ids.
          ...(aborted && requestIdsOf(req)),
          // A credential sent in a query string (refused, but logged as the request line) never reaches the log;
          // the Authorization and Cookie headers are redacted by the logger itself.
          req: redactRequest({
            id: req.id,
            method: req.method,
            url: req.originalUrl,
            // As sent: express reads req.query from req.url, which a door may have rewritten on the way
            // (the authorization request's scopes, src/oauth/normalize.ts). Parsed as express's own
            // parser does, with node:querystring.
            query: querystring.parse(queryOf(req.originalUrl)),
            headers: req.headers,
            remoteAddress: req.socket.remoteAddress,
            remotePort: req.socket.remotePort,
          }),
          // An aborted request has no status the client is known to have read: the one set is what the
          // service would have answered (after Node's 408 on a stalled body, say, the body reader's 400).
          res: { statusCode: aborted ? null : res.statusCode, headers: loggedResponseHeaders(res) },
          responseTime: Math.round(performance.now() - started),
        },
        aborted ? 'request aborted' : failed ? 'request errored' : 'request completed',
      );
    };
    // `close` alone for a request the client gave up on before the answer was sent.
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}

/** The query string of a request target (what follows the first `?`), or nothing. */
function queryOf(target: string): string {
  const at = target.indexOf('?');
  return at < 0 ? '' : target.slice(at + 1);
}
