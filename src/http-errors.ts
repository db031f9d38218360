// The app's last error handler: whatever error reaches express (a body parser refusing a body, a path
// that is not valid percent-encoding, a database outage, a bug) is answered in the format of the door it
// came through, never with express's default HTML page and stack trace:
//   /api and other non-browser requests: RFC 9457 problem+json;
//   /mcp: a JSON-RPC error object;
//   /oauth/* and /.well-known/*: an RFC 6749 error body {error, error_description};
//   pages asked for by a browser: a short HTML page.
// Client errors are logged at debug level without a stack; anything else at error level.
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, Request, Response } from 'express';
import { type Problem, problems } from './api/problem.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DATABASE_UNAVAILABLE_DETAIL,
  isDatabaseUnavailable,
} from './db/unavailable.ts';
import type { Logger } from './lib/logger.ts';
import { html, page } from './web/html.ts';

type Door = 'api' | 'mcp' | 'oauth' | 'web';

interface HttpFailure {
  status: number;
  /** Safe to show the client. */
  detail: string;
  /**
   * What was wrong with a JSON body: not JSON at all (a JSON-RPC parse error on /mcp), or JSON that is
   * neither an object nor an array (a number, a string, null: an invalid request on /mcp).
   */
  json?: 'unparsable' | 'not-a-container';
  headers?: Record<string, string>;
}

function doorOf(path: string): Door {
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  if (under('/api')) return 'api';
  if (under('/mcp')) return 'mcp';
  if (under('/oauth') || under('/.well-known')) return 'oauth';
  return 'web';
}

/** What went wrong, for the client: a 4xx the request caused, a 503 while the database is away, or a 500. */
function describeFailure(error: unknown): HttpFailure {
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      detail: DATABASE_UNAVAILABLE_DETAIL,
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
    };
  }
  const e = (error ?? {}) as {
    status?: unknown;
    statusCode?: unknown;
    type?: unknown;
    expose?: unknown;
    message?: unknown;
    code?: unknown;
    limit?: unknown;
    charset?: unknown;
    encoding?: unknown;
    headers?: unknown;
    body?: unknown;
  };
  // express's router marks an undecodable path parameter with status 400; other decoders throw a bare URIError.
  if (error instanceof URIError) return { status: 400, detail: 'The path is not valid percent-encoding.' };
  const status = Number(e.status ?? e.statusCode);
  if (!Number.isInteger(status) || status < 400 || status > 499) {
    return { status: 500, detail: 'Something went wrong on our side.' };
  }
  // Errors of body-parser (raw-body, http-errors), by their `type`.
  switch (e.type) {
    case 'entity.parse.failed':
      // The parser accepts only an object or an array at the top; anything else that parses is JSON still.
      return parsesAsJson(e.body)
        ? {
            status: 400,
            detail: 'The body is JSON but neither an object nor an array.',
            json: 'not-a-container',
          }
        : { status: 400, detail: 'The body is not valid JSON.', json: 'unparsable' };
    case 'entity.too.large':
      return {
        status: 413,
        detail: `The body is larger than ${typeof e.limit === 'number' ? formatBytes(e.limit) : 'the limit'}.`,
      };
    case 'parameters.too.many':
      return { status: 413, detail: 'The body has too many parameters.' };
    case 'charset.unsupported':
      return {
        status: 415,
        detail: `The charset ${JSON.stringify(String(e.charset ?? '')).toUpperCase()} is not supported; send UTF-8.`,
      };
    case 'encoding.unsupported':
      return {
        status: 415,
        detail: `The Content-Encoding ${JSON.stringify(String(e.encoding ?? ''))} is not supported; send identity, gzip, deflate, br or zstd.`,
      };
    case 'request.aborted':
      return { status: 400, detail: 'The request body ended before its Content-Length.' };
    case 'request.size.invalid':
      return { status: 400, detail: 'The body does not match its Content-Length.' };
    case 'encoding.invalid':
      // src/lib/utf8-body.ts: bytes that are not UTF-8 (JSON text that is not JSON, on /mcp a parse error).
      return { status: 400, detail: 'The body is not valid UTF-8.', json: 'unparsable' };
  }
  // zlib's codes (gzip, deflate, br) start with Z_, zstd's with ZSTD_ (e.g. ZSTD_error_prefix_unknown).
  if (typeof e.code === 'string' && /^(Z|ZSTD)_/.test(e.code)) {
    return { status: 400, detail: 'The body could not be decoded with its Content-Encoding.' };
  }
  if (typeof e.message === 'string' && e.message.startsWith('Failed to decode param')) {
    return { status: 400, detail: 'The path is not valid percent-encoding.' };
  }
  return {
    status,
    detail: e.expose === true && typeof e.message === 'string' ? e.message : 'The request is not valid.',
    // Headers the error names for its answer (the convention of the http-errors package): `Allow` on a 405.
    ...(isHeaderRecord(e.headers) ? { headers: e.headers } : {}),
  };
}

function isHeaderRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.values(value).every((header) => typeof header === 'string')
  );
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} kB`;
  return `${bytes} bytes`;
}

/** The failure as a problem (RFC 9457), for the API and for non-browser clients elsewhere. */
function failureProblem(failure: HttpFailure): Problem {
  switch (failure.status) {
    case 405:
      return problems.methodNotAllowed(UNSERVED_ALLOW, failure.detail);
    case 408:
      return problems.requestTimeout(failure.detail);
    case 417:
      return problems.expectationFailed(failure.detail);
    case 431:
      return problems.headersTooLarge(failure.detail);
    case 413:
      return problems.payloadTooLarge(failure.detail);
    case 415:
      return problems.unsupportedMediaType(failure.detail);
    case 500:
      return problems.internal();
    case 503:
      return problems.serviceUnavailable(failure.detail, DATABASE_RETRY_AFTER_SECONDS);
    default:
      return problems.badRequest(failure.detail, failure.json ? '/body' : undefined);
  }
}

/** The RFC 6749 error code that fits a status: the OAuth endpoints' own vocabulary. */
function oauthErrorCode(status: number): string {
  if (status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}

const JSON_RPC = { parse: -32700, invalidRequest: -32600, internal: -32603, unavailable: -32000 } as const;

interface FailureAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answer to a failure in the door's format; `wantsHtml` when a browser asked for a page. */
function failureAnswer(door: Door, wantsHtml: boolean, failure: HttpFailure): FailureAnswer {
  const json = (body: unknown, type = 'application/json; charset=utf-8') => ({
    status: failure.status,
    headers: { ...failure.headers, 'Content-Type': type },
    body: JSON.stringify(body),
  });
  if (door === 'mcp') {
    const code =
      failure.json === 'unparsable'
        ? JSON_RPC.parse
        : failure.status === 503
          ? JSON_RPC.unavailable
          : failure.status >= 500
            ? JSON_RPC.internal
            : JSON_RPC.invalidRequest;
    return json({ jsonrpc: '2.0', error: { code, message: failure.detail }, id: null });
  }
  if (door === 'oauth') {
    return json({ error: oauthErrorCode(failure.status), error_description: failure.detail });
  }
  if (door === 'web' && wantsHtml) {
    return {
      status: failure.status,
      headers: { ...failure.headers, 'Content-Type': 'text/html; charset=utf-8' },
      body: page(
        'Error',
        html`<h1>${failure.status === 503 ? 'Unavailable' : 'Error'}</h1><p>${failure.detail}</p>
<p><a href="/">Go to the start page</a></p>`,
      ),
    };
  }
  const problem = failureProblem(failure);
  const answer = json(problem.toJSON(), 'application/problem+json; charset=utf-8');
  return { ...answer, headers: { ...problem.headers, ...answer.headers } };
}

function send(door: Door, req: Request, res: Response, failure: HttpFailure): void {
  const wantsHtml = req.accepts(['application/json', 'text/html']) === 'text/html';
  const answer = failureAnswer(door, wantsHtml, failure);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.status(answer.status).send(answer.body);
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    const failure = describeFailure(error);
    const where = { method: req.method, path: req.path, requestId: String(req.id ?? '') };
    if (failure.status >= 500 && failure.status !== 503)
      logger.error({ err: error, ...where }, 'request failed');
    else if (failure.status === 503)
      logger.warn({ ...where, reason: String((error as Error)?.message ?? '') }, 'database unavailable');
    else logger.debug({ ...where, status: failure.status, detail: failure.detail }, 'client error');
    // An answer already on its way cannot be replaced: end the connection, as express would (without
    // printing the stack to stderr as its default handler does).
    if (res.headersSent) {
      res.destroy();
      return;
    }
    send(doorOf(req.path), req, res, failure);
  };
}

/**
 * A request Node could not parse (headers over its 16 kB limit, a malformed request line or header, a
 * request not sent within HTTP_REQUEST_TIMEOUT_MS) never reaches express: Node's own answer is a bare status
 * line with no body. This answers it in the format of the door the request line names, as any other client
 * mistake: 431, 408 or 400 (Node's choice of status), and closes the connection.
 */
export function clientErrorHandler(logger: Logger) {
  return (error: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): void => {
    // As Node's own handler: nothing to answer on a connection that is gone or already carries an answer.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
      socket.destroy();
      return;
    }
    // Node's own choice of status for each (lib/_http_server.js), the rest a 400.
    const status =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 431
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 408
          : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
            ? 413
            : 400;
    const detail =
      status === 431
        ? 'The request headers (with the URL) are larger than the 16 kB this service reads.'
        : status === 408
          ? 'The request was not sent in time.'
          : status === 413
            ? 'The chunk extensions of the body are too large.'
            : 'The request is not valid HTTP.';
    // What the client sent before the error: its request line names the door, its Accept a browser. A
    // request that timed out after its headers (its body stalled) is the parser's current one; one that
    // timed out before them left nothing Node shows, and is answered as a request to /.
    const incoming = (socket as Duplex & { parser?: { incoming?: IncomingMessage | null } }).parser?.incoming;
    const received = error.rawPacket?.toString('latin1') ?? '';
    const path = incoming?.url ?? /^[A-Z]+ (\S+)/.exec(received)?.[1] ?? '/';
    const wantsHtml = incoming
      ? /text\/html/i.test(incoming.headers.accept ?? '')
      : /\r\naccept:[^\r\n]*text\/html/i.test(received);
    logger.debug({ code: error.code, status, detail }, 'client error');
    answerOnSocket(socket, failureAnswer(doorOf(path.split('?')[0]!), wantsHtml, { status, detail }));
  };
}

/**
 * A request whose `Expect` is not `100-continue` (Node's 'checkExpectation'; Node's own answer is a bare 417)
 * and a CONNECT (Node's 'connect'; nothing here tunnels, and Node's own answer is to drop the connection):
 * a 417 or a 405 in the door's format, and the connection closed.
 */
export function unservedRequestHandler(logger: Logger) {
  return (req: IncomingMessage, socket: Duplex): void => {
    const connect = req.method === 'CONNECT';
    const failure: HttpFailure = connect
      ? {
          status: 405,
          detail: 'CONNECT is not served here: this service is no proxy.',
          headers: { Allow: UNSERVED_ALLOW.join(', ') },
        }
      : { status: 417, detail: 'Only the expectation "100-continue" is understood.' };
    logger.debug({ method: req.method, status: failure.status }, 'client error');
    // A CONNECT's target is an authority (host:port), not a path: it names no door.
    const path = connect ? '/' : (req.url ?? '/').split('?')[0]!;
    answerOnSocket(
      socket,
      failureAnswer(doorOf(path), /text\/html/i.test(req.headers.accept ?? ''), failure),
    );
  };
}

/** The methods the service answers somewhere, for a CONNECT's 405. */
const UNSERVED_ALLOW = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** Writes a whole answer on a connection outside express (with the security headers helmet would add). */
function answerOnSocket(socket: Duplex, answer: FailureAnswer): void {
  const body = Buffer.from(answer.body);
  const head = [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}`,
    ...Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}`),
    `Content-Length: ${body.length}`,
    'X-Content-Type-Options: nosniff',
    "Content-Security-Policy: default-src 'none'; style-src 'self'",
    'Connection: close',
  ].join('\r\n');
  // Closed once the answer is out, whatever the client does: a request it cut short is still open in the
  // app (waiting for its body), and ends, logged, only when its connection closes.
  socket.end(Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), body]), () => socket.destroy());
}

/** A body the strict parser refused for its first character alone (an object or array never gets here). */
function parsesAsJson(text: unknown): boolean {
  if (typeof text !== 'string' || /^[ \t\n\r]*[{[]/.test(text)) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
